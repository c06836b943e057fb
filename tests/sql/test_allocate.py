"""dp_plan's study form with "allocate": true (ALGORITHMS.md section 12.3):
the budget divided among the releases by their shares.  Each allocated
study must fit, and be tight: the same releases planned without allocate
at slightly more epsilon do not fit."""
import json

from harness import check, check_error, connect, run

LSW = dict(mechanism="dp_lsw", perturb="statistics", n_states=3, gamma=0.9, rmin=0, rmax=1,
           visits=[100, 100, 100], episodes=100)   # Gaussian: charged rho under zCDP
OUT = dict(LSW, perturb="output")                     # (epsilon, delta)
BUDGET = {"epsilon": 1, "delta": 1e-5, "unit": "episode"}


def plan(con, study):
    return json.loads(con.execute("SELECT dp_plan(?)", (json.dumps(study),)).fetchone()[0])


def replan(con, budget, releases, scale=1.0, which=None):
    """The allocated epsilons and deltas, given explicitly (no allocate), the
    epsilon of release `which` (or all) times scale."""
    rel = []
    for i, (r, a) in enumerate(releases):
        e = a["epsilon"] * (scale if which is None or which == i else 1.0)
        rel.append(dict(r, epsilon=e, delta=a["delta"]))
    return plan(con, {"budget": budget, "releases": rel})


def tight(con, budget, releases, what):
    a = plan(con, {"budget": budget, "allocate": True, "releases": releases})["releases"]
    pairs = [(dict((k, v) for k, v in r.items() if k != "share"), x) for r, x in zip(releases, a)]
    same = replan(con, budget, pairs)
    check(same["fit"] == len(releases) and a and all(x["fits"] for x in a),
          f"{what}: every allocated release fits, and so does the same study given by hand", same["summary"])
    over = replan(con, budget, pairs, 1.001)
    check(over["fit"] < len(releases), f"{what}: 0.1% more epsilon for every release does not fit",
          over["summary"])
    return a


def test_basic():
    con = connect()
    b = dict(BUDGET, accountant="basic")
    a = tight(con, b, [dict(OUT, share=2), OUT, dict(LSW, share=1)], "basic")
    eps = [x["epsilon"] for x in a]
    check(abs(eps[0] - 0.5) < 1e-9 and abs(eps[1] - 0.25) < 1e-9 and abs(eps[2] - 0.25) < 1e-9
          and abs(a[0]["delta"] - 5e-6) < 1e-15, "basic: shares 2, 1, 1 of (1, 1e-5)", eps)


def test_zcdp():
    con = connect()
    # a lone Gaussian release at (1, 1e-5) does not fit a zCDP budget of
    # epsilon 1 at delta 1e-5 (the zCDP conversion is not the analytic
    # Gaussian's); allocated, it gets the largest epsilon that fits
    lone = plan(con, {"budget": BUDGET, "releases": [dict(LSW, epsilon=1, delta=1e-5)]})
    check(lone["fit"] == 0, "zcdp: a lone (1, 1e-5) Gaussian release does not fit epsilon 1", lone["summary"])
    a = tight(con, BUDGET, [LSW], "zcdp, one Gaussian release")
    check(0.5 < a[0]["epsilon"] < 1, "... its epsilon is below 1", a[0]["epsilon"])
    # two Gaussian releases of equal share: the same epsilon, each more than
    # half the lone one's (rho adds, epsilon does not)
    two = tight(con, BUDGET, [LSW, LSW], "zcdp, two Gaussian releases")
    check(abs(two[0]["epsilon"] - two[1]["epsilon"]) < 1e-9 * two[0]["epsilon"]
          and two[0]["epsilon"] > a[0]["epsilon"] / 2 * 1.1,
          "zcdp: equal shares, equal epsilons, each above half of the lone one", [x["epsilon"] for x in two])
    mixed = tight(con, BUDGET, [dict(LSW, share=3), OUT, dict(OUT, mechanism="dp_lsw_from_stats", groups=4)],
                  "zcdp, Gaussian and (epsilon, delta) releases, one charged per group")
    check(abs(mixed[1]["epsilon"] - 0.2) < 1e-9 and abs(mixed[2]["epsilon"] - 0.05) < 1e-9
          and mixed[2]["charges"] == 4,
          "zcdp: the (epsilon, delta) releases get their shares of epsilon, 1/k a charge", mixed)


def test_small_and_other_units():
    con = connect()
    # a tiny epsilon: the Gaussian release's rho at the budget's delta is
    # above its part even at epsilon 1e-9, so its own delta is lowered
    # (the ledger charges it rho only); the study still fits, tightly
    mdp = dict(mechanism="dp_mdp", n_states=300, n_actions=2, gamma=0.9, rmin=0, rmax=1, horizon=5,
               episodes=1000, transitions="sparse")
    a = tight(con, dict(BUDGET, epsilon=1e-6), [LSW, mdp], "zcdp, epsilon 1e-6")
    check(a[0]["delta"] < 1e-5 and a[1]["delta"] < 1e-5, "... the Gaussian release's delta lowered", a)
    msg = "dp_plan: releases[1]: its unit of privacy is one expert, and the budget protects one episode: allocate gives it no share"
    other = dict(mechanism="dp_prefix_stable", p_min=0.02, T=100, L=25, experts=240, agreement=0.9)
    check_error(con, "SELECT dp_plan(?)", msg, "a release of another unit gets no share",
                (json.dumps({"budget": BUDGET, "allocate": True, "releases": [LSW, other]}),))


def test_errors():
    con = connect()
    s = lambda **kw: json.dumps(dict({"budget": BUDGET, "allocate": True, "releases": [LSW]}, **kw))
    cases = [
        (s(releases=[dict(LSW, epsilon=1)]),
         "dp_plan: releases[0]: option epsilon is chosen by allocate: give the release's share instead"),
        (s(releases=[dict(LSW, share=0)]),
         "dp_plan: releases[0]: option share must be a number in (0, 1e12], got 0"),
        (s(allocate=1), "dp_plan: option allocate must be true or false, got a number"),
        (json.dumps({"budget": BUDGET, "releases": [dict(LSW, share=2, epsilon=1, delta=1e-5)]}),
         "dp_plan: releases[0]: option share is for a study with \"allocate\": true"),
        (s(budget=dict(BUDGET, delta=0)), "dp_plan: allocate needs a budget with delta > 0, got 0"),
    ]
    for text, msg in cases:
        check_error(con, "SELECT dp_plan(?)", msg, msg, (text,))


run([test_basic, test_zcdp, test_small_and_other_units, test_errors])
