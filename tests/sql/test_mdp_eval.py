"""dp_mdp_value and dp_mdp_plan from SQL: post-processing of a dp_mdp model.

Models are written here by hand (the contract's JSON), noise-free ones from
exact counts, so values can be checked against solutions computed in
Python (Gaussian elimination of reference.py, every deterministic policy
enumerated, forward sums for a horizon).  Also: the result keys, several
policies at once, errors naming the argument and value, repeatability, a
constant model parsed once per statement, interruption.
"""
import itertools
import json
import random

from harness import check, check_close, connect, run, sql_error
from reference import solve


def model(counts, rsums, start, gamma=0.9, rmin=0.0, rmax=1.0, sigma=0.0, reward_sigma=0.0,
          horizon=None, features="tabular"):
    S, A = len(counts), len(counts[0])
    return json.dumps({
        "mechanism": "dp_mdp", "private": False, "seeded": True, "unit": "episode",
        "n_states": S, "n_actions": A, "gamma": gamma, "rmin": rmin, "rmax": rmax,
        "epsilon": 1, "delta": 1e-5, "horizon": horizon, "clip": None, "sensitivity": 2.0,
        "sigma": sigma, "reward_sigma": reward_sigma, "reward_center": (rmin + rmax) / 2,
        "start": start, "counts": counts, "reward_sums": rsums, "features": features})


def random_model(S, A, seed, gamma=0.9):
    """Exact counts; rewards in [-1, 2]."""
    rng = random.Random(seed)
    counts, rsums = [], []
    for _ in range(S):
        crow, rrow = [], []
        for _ in range(A):
            c = [0 if rng.random() < 0.4 else rng.randint(1, 40) for _ in range(S + 1)]
            if sum(c) == 0:
                c[S] = 5
            crow.append(c)
            rrow.append(sum(c) * (rng.uniform(-1, 2) - 0.5))
        counts.append(crow)
        rsums.append(rrow)
    start = [rng.randint(0, 9) for _ in range(S)]
    start[0] += 1
    return counts, rsums, start, model(counts, rsums, start, gamma, rmin=-1.0, rmax=2.0)


def estimate(counts, rsums, rmin=-1.0, rmax=2.0):
    S, A = len(counts), len(counts[0])
    P = [[[c / sum(counts[s][a]) for c in counts[s][a][:S]] for a in range(A)] for s in range(S)]
    r = [[min(max((rmin + rmax) / 2 + rsums[s][a] / sum(counts[s][a]), rmin), rmax)
          for a in range(A)] for s in range(S)]
    return P, r


def policy_value(P, r, pi, gamma):
    """(I - gamma P_pi) V = r_pi by elimination; pi[s][a]."""
    S, A = len(P), len(P[0])
    M = [[(1.0 if s == k else 0.0) - gamma * sum(pi[s][a] * P[s][a][k] for a in range(A))
          for k in range(S)] for s in range(S)]
    return solve(M, [sum(pi[s][a] * r[s][a] for a in range(A)) for s in range(S)])


def horizon_value(P, r, pi, gamma, H):
    """sum_{t<H} gamma^t P_pi^t r_pi, forwards."""
    S, A = len(P), len(P[0])
    Ppi = [[sum(pi[s][a] * P[s][a][k] for a in range(A)) for k in range(S)] for s in range(S)]
    rpi = [sum(pi[s][a] * r[s][a] for a in range(A)) for s in range(S)]
    D = [[1.0 if s == k else 0.0 for k in range(S)] for s in range(S)]
    V = [0.0] * S
    for t in range(H):
        V = [V[s] + gamma ** t * sum(D[s][k] * rpi[k] for k in range(S)) for s in range(S)]
        D = [[sum(D[s][j] * Ppi[j][k] for j in range(S)) for k in range(S)] for s in range(S)]
    return V


def value_of(con, m, policy, options=None):
    if options is None:
        return json.loads(con.execute("SELECT dp_mdp_value(?, ?)", (m, policy)).fetchone()[0])
    return json.loads(con.execute("SELECT dp_mdp_value(?, ?, ?)",
                                  (m, policy, options)).fetchone()[0])


def test_values():
    con = connect()
    for seed in range(3):
        S, A = 4 + seed, 2 + seed % 2
        counts, rsums, start, m = random_model(S, A, seed)
        P, r = estimate(counts, rsums)
        rng = random.Random(100 + seed)
        pi = []
        for _ in range(S):
            w = [rng.random() for _ in range(A)]
            pi.append([x / sum(w) for x in w])
        want = policy_value(P, r, pi, 0.9)
        got = value_of(con, m, json.dumps(pi), '{"min_count": 0}')
        check_close(got["values"], want, f"{S}x{A}: values equal elimination's", rel=1e-10)
        w0 = [max(x, 0) / sum(start) for x in start]
        check_close(got["value"], sum(a * b for a, b in zip(w0, want)),
                    f"{S}x{A}: value under the released start distribution", rel=1e-10)
        check(got["stderr"] == 0 and got["error_bound"] <= 1e-9 * 2 / 0.1,
              f"{S}x{A}: no noise, no error bar; the bound within the tolerance",
              f"{got['stderr']} {got['error_bound']}")
        acts = [rng.randrange(A) for _ in range(S)]
        onehot = [[1.0 if a == x else 0.0 for a in range(A)] for x in acts]
        got = value_of(con, m, json.dumps(acts), '{"min_count": 0}')
        check_close(got["values"], policy_value(P, r, onehot, 0.9),
                    f"{S}x{A}: a policy as action numbers", rel=1e-10)
        for H, g in ((1, 1.0), (4, 1.0), (6, 0.8)):
            got = value_of(con, m, json.dumps(pi), json.dumps({"horizon": H, "gamma": g,
                                                               "min_count": 0}))
            check_close(got["values"], horizon_value(P, r, pi, g, H),
                        f"{S}x{A}: {H} steps at gamma {g}: backward induction", rel=1e-12,
                        abs_=1e-12)


def test_plan():
    con = connect()
    for seed in range(3):
        S, A = 4, 2 + seed % 2
        counts, rsums, start, m = random_model(S, A, 10 + seed)
        P, r = estimate(counts, rsums)
        best = [-1e300] * S
        for acts in itertools.product(range(A), repeat=S):
            V = policy_value(P, r, [[1.0 if a == x else 0.0 for a in range(A)] for x in acts], 0.9)
            best = [max(b, v) for b, v in zip(best, V)]
        got = json.loads(con.execute("SELECT dp_mdp_plan(?, '{\"min_count\": 0}')",
                                     (m,)).fetchone()[0])
        check_close(got["values"], best, f"plan {S}x{A}: the best of all {A ** S} policies",
                    rel=1e-10)
        onehot = [[1.0 if a == x else 0.0 for a in range(A)] for x in got["policy"]]
        check_close(policy_value(P, r, onehot, 0.9), best,
                    f"plan {S}x{A}: its greedy policy attains them", rel=1e-10)
        q = [[r[s][a] + 0.9 * sum(P[s][a][k] * best[k] for k in range(S)) for a in range(A)]
             for s in range(S)]
        check_close(sum(got["q"], []), sum(q, []), f"plan {S}x{A}: q = r + gamma P V*", rel=1e-10)
        again = con.execute("SELECT dp_mdp_plan(?, '{\"min_count\": 0}')", (m,)).fetchone()[0]
        check(json.loads(again) == got, f"plan {S}x{A}: deterministic")


def hand_model(**kw):
    """State 0: stay (0) or move to 1 (0); state 1: stay with reward 1, or end."""
    return model([[[10, 0, 0], [0, 10, 0]], [[0, 10, 0], [0, 0, 10]]],
                 [[-5, -5], [5, -5]], [10, 30], **kw)


def test_keys_and_policies():
    con = connect()
    m = hand_model()
    one = value_of(con, m, "[1, 0]")
    check(set(one) == {"value", "stderr", "error_bound", "values", "values_stderr", "n_states",
                       "n_actions", "gamma", "horizon", "method", "min_count", "count_floor",
                       "ends", "pessimistic_pairs", "start_uniform", "bootstrap",
                       "bootstrap_seed", "ci_low", "ci_high", "ci_bias", "ci_unknown", "interval"}
          and one["interval"] == "none" and one["ci_low"] is None,
          "value: its keys (no interval unless asked)", sorted(one))
    check_close(one["values"], [9, 10], "value: the hand-made MDP, V = (9, 10)")
    check_close(one["value"], 0.25 * 9 + 0.75 * 10, "value: under start (1/4, 3/4)")
    many = value_of(con, m, json.dumps({"go": [1, 0], "stay": [[1, 0], [1, 0]],
                                        "half": [[0.5, 0.5], [1, 0]]}))
    check(list(many["policies"]) == ["go", "stay", "half"]
          and set(many["policies"]["go"]) == {"value", "stderr", "error_bound", "values",
                                              "values_stderr", "ci_low", "ci_high", "ci_bias",
                                              "ci_unknown"},
          "several policies: one entry each, in the order given", many)
    check_close(many["policies"]["go"]["values"], one["values"],
                "several policies: each as evaluated alone")
    check_close(many["policies"]["stay"]["values"], [0, 10], "several policies: staying")
    plan = json.loads(con.execute("SELECT dp_mdp_plan(?)", (m,)).fetchone()[0])
    check(set(plan) == {"value", "policy", "values", "q", "error_bound", "iterations",
                        "n_states", "n_actions", "gamma", "horizon", "method", "min_count",
                        "count_floor", "ends", "pessimistic_pairs", "start_uniform"}
          and plan["policy"] == [1, 0], "plan: its keys and the policy (1, 0)", plan)
    nested = con.execute("SELECT json_extract(dp_mdp_value(?, '[1, 0]'), '$.values[1]'), "
                         "json_extract(json_object('v', dp_mdp_plan(?)), '$.v.policy[0]')",
                         (m, m)).fetchone()
    check(abs(nested[0] - 10) < 1e-12 and nested[1] == 1, "results are JSON (they nest)", nested)


def test_rows_and_determinism():
    con = connect()
    con.execute("CREATE TABLE release(model)")
    con.execute("INSERT INTO release VALUES (?)", (hand_model(sigma=2.0, reward_sigma=1.0),))
    con.execute("CREATE TABLE rules(name, policy)")
    con.executemany("INSERT INTO rules VALUES (?, ?)",
                    [("go", "[1, 0]"), ("stay", "[0, 0]"), ("mix", "[[0.5, 0.5], [0.9, 0.1]]")])
    rows = con.execute("SELECT name, dp_mdp_value(model, policy, '{\"bootstrap\": 50}') "
                       "FROM release, rules ORDER BY name").fetchall()
    alone = {n: con.execute("SELECT dp_mdp_value(model, ?, '{\"bootstrap\": 50}') FROM release",
                            (p,)).fetchone()[0]
             for n, p in (("go", "[1, 0]"), ("stay", "[0, 0]"),
                          ("mix", "[[0.5, 0.5], [0.9, 0.1]]"))}
    check(all(r == alone[n] for n, r in rows), "one model, many policy rows: as called alone")
    check(all(json.loads(r)["stderr"] > 0 for _, r in rows), "a noisy model has an error bar")
    seeded = con.execute("SELECT dp_mdp_value(model, '[1, 0]', '{\"bootstrap\": 50, "
                         "\"bootstrap_seed\": 3}') FROM release").fetchone()[0]
    check(json.loads(seeded)["stderr"] != json.loads(alone["go"])["stderr"],
          "bootstrap_seed picks other draws")
    a = con.execute("SELECT dp_mdp_plan(model) FROM release").fetchone()[0]
    b = con.execute("WITH x AS (SELECT dp_mdp_plan(model) AS p FROM release) SELECT p FROM x"
                    ).fetchone()[0]
    check(a == b, "the same call, the same result (on one machine)")
    msg = sql_error(con, "CREATE TABLE t(m, p AS (json_extract(dp_mdp_plan(m), '$.value')))")
    check(msg == "non-deterministic functions prohibited in generated columns",
          "not deterministic across machines (LAPACK): no generated column", msg)


def test_estimate_options():
    con = connect()
    # pair (1, 1) barely counted: pessimistic below min_count
    m = model([[[10, 0, 0], [0, 10, 0]], [[0, 10, 0], [0, 0, 3]]],
              [[-5, -5], [5, 1.5]], [10, 0], sigma=0.0)
    got = value_of(con, m, "[1, 1]")
    check(got["pessimistic_pairs"] == 0 and got["min_count"] == 0, "no noise: min_count 0")
    check_close(got["values"][1], 1.0, "the pair (1, 1): reward 0.5 + 1.5/3 = 1, then ends")
    got = value_of(con, m, "[1, 1]", '{"min_count": 3}')
    check(got["pessimistic_pairs"] == 1 and got["values"][1] == 0,
          "N <= min_count: the pair ends with rmin", got)
    got = value_of(con, m, "[1, 1]", '{"count_floor": 3}')
    check(got["pessimistic_pairs"] == 0 and abs(got["values"][1] - 1.0) < 1e-12,
          "count_floor: the end column is not floored (cut at 0 only): (1, 1) still ends", got)
    m2 = model([[[10, 0, 0], [0, 10, 0]], [[0, 10, 0], [0, 3, 0]]],
               [[-5, -5], [5, 1.5]], [10, 0], sigma=0.0)
    got = value_of(con, m2, "[1, 1]", '{"count_floor": 3}')
    check(got["pessimistic_pairs"] == 1, "count_floor: next-state counts at or below it are 0", got)
    noisy = hand_model(sigma=2.0, reward_sigma=1.0)
    got = value_of(con, noisy, "[1, 0]", '{"bootstrap": 0}')
    # the default min_count: mean + 3 sd of N for a pair of 3 pure-noise entries
    check(2.0 * 3 * 0.3989 < got["min_count"] < 2.0 * 3 * 0.3989 + 3 * 2.0 * 1.1,
          "with noise, min_count defaults to the noise floor", got["min_count"])
    check(got["stderr"] is None and got["values_stderr"] is None, "bootstrap 0: no error bar")
    tent = json.loads(hand_model())
    tent["features"] = {"tent": 2, "low": 0, "high": 1}
    got = value_of(con, json.dumps(tent), "[1, 0]")
    check_close(got["values"], [9, 10], "tent features: the same MDP over the anchors")
    # ends: state 1 stays with reward 1 (10 counts) or ends (10 counts)
    m = model([[[10, 0, 0], [0, 10, 0]], [[0, 10, 10], [0, 0, 10]]],
              [[-5, -5], [0, -5]], [10, 0], sigma=0.0)
    got = value_of(con, m, "[1, 0]", '{"gamma": 0.5}')
    check(got["ends"] == "terminal", "ends defaults to terminal", got)
    # terminal: V1 = 0.5 + 0.5 * 0.5 * V1 = 2/3; censored: V1 = 0.5 + 0.5 * V1 = 1
    check_close(got["values"][1], 2 / 3, "terminal: the ended column ends the episode")
    got = value_of(con, m, "[1, 0]", '{"gamma": 0.5, "ends": "censored"}')
    check(got["ends"] == "censored" and got["pessimistic_pairs"] == 1,
          "ends censored; the pair (1, 1), which only ends, is pessimistic", got)
    check_close(got["values"], [0.5, 1.0],
                "censored: P over the observed next states, the reward mean over every step")
    got = value_of(con, m, "[1, 1]", '{"gamma": 0.5, "ends": "censored"}')
    check(got["values"][1] == 0, "censored: a pair with no observed next state ends with rmin",
          got)
    plan = json.loads(con.execute("SELECT dp_mdp_plan(?, '{\"gamma\": 0.5, \"ends\": "
                                  "\"censored\"}')", (m,)).fetchone()[0])
    check(plan["ends"] == "censored" and plan["policy"] == [1, 0], "plan: ends censored", plan)
    empty = json.loads(hand_model())
    empty["start"] = [0, -1]
    got = value_of(con, json.dumps(empty), "[1, 0]")
    check(got["start_uniform"] and abs(got["value"] - 9.5) < 1e-12,
          "no positive start count: a uniform start, said so", got)


def test_errors():
    con = connect()
    m = hand_model()
    V = "dp_mdp_value: "
    cases = [
        ("SELECT dp_mdp_value(?, '[[0.5, 0.4], [1, 0]]')",
         V + "policy: the probabilities of state 0 sum to 0.9; a distribution sums to 1 "
             "(within 1e-9)", "a policy that is not a distribution"),
        ("SELECT dp_mdp_value(?, '[[1.5, -0.5], [1, 0]]')",
         V + "policy[0][1] must be a probability (a finite number >= 0), got -0.5",
         "a negative probability"),
        ("SELECT dp_mdp_value(?, '[0, 2]')",
         V + "policy[1] must be an action: an integer in 0..1 (n_actions - 1), got 2",
         "an action out of range"),
        ("SELECT dp_mdp_value(?, '[0, 1, 0]')",
         V + "policy must be an array with one entry per state (n_states = 2): an action "
             "number or an array of n_actions = 2 probabilities, got 3 items",
         "a policy for 3 states of 2"),
        ("SELECT dp_mdp_value(?, '[[1, 0], [1, 0, 0]]')",
         V + "policy[1] must be an array of n_actions = 2 probabilities (as state 0's), got "
             "3 items", "a policy of the wrong shape"),
        ("SELECT dp_mdp_value(?, '{\"a\": [0, 0], \"b\": [0, 0.5]}')",
         V + "policy \"b\"[1] must be an action: an integer in 0..1 (n_actions - 1), got 0.5",
         "a named policy's error names it"),
        ("SELECT dp_mdp_value(?, NULL)", V + "policy must be JSON text", "a NULL policy"),
        ("SELECT dp_mdp_value(?, '[1, 0]', '{\"gamma\": 1}')",
         V + "gamma is 1, so the value is undiscounted and needs option horizon: the number "
             "of steps H to sum over", "gamma = 1 without a horizon"),
        ("SELECT dp_mdp_value(?, '[1, 0]', '{\"ends\": \"absorbing\"}')",
         V + "option ends must be one of \"terminal\", \"censored\", got \"absorbing\"",
         "ends: an unknown choice"),
        ("SELECT dp_mdp_value(?, '[1, 0]', NULL)", V + "options must be JSON text, got NULL",
         "NULL options"),
        ("SELECT dp_mdp_plan(?, '{\"bootstrap\": 10}')",
         "dp_mdp_plan: unknown option \"bootstrap\" (known: horizon, gamma, min_count, "
         "count_floor, ends, unknown, tolerance, pessimism)", "dp_mdp_plan has no bootstrap"),
    ]
    for sql, want, name in cases:
        got = sql_error(con, sql, (m,))
        check(got == want, name, f"got  {got!r}\nwant {want!r}")
    bad = json.loads(m)
    del bad["sigma"]
    check(sql_error(con, "SELECT dp_mdp_plan(?)", (json.dumps(bad),)) ==
          "dp_mdp_plan: model: key \"sigma\" is missing (a dp_mdp result has every key of the "
          "contract)", "a model without a key of the contract")
    check(sql_error(con, "SELECT dp_mdp_plan(42)") ==
          "dp_mdp_plan: model must be the JSON text of a dp_mdp result, got 42",
          "a model that is not text")
    short = json.loads(m)
    short["counts"][1][0] = [0, 10]
    check(sql_error(con, "SELECT dp_mdp_plan(?)", (json.dumps(short),)) ==
          "dp_mdp_plan: model: counts[1][0] must be an array of n_states + 1 = 3 numbers, "
          "got 2 items", "counts of the wrong shape")
    withh = json.loads(m)
    withh["gamma"], withh["horizon"] = 1, 20
    check(sql_error(con, "SELECT dp_mdp_plan(?)", (json.dumps(withh),)) ==
          "dp_mdp_plan: gamma is 1, so the value is undiscounted and needs option horizon: "
          "the number of steps H to sum over (the release counted the first 20 steps of each "
          "episode)", "gamma = 1: the message names the release's horizon")


def test_interrupt():
    con = connect()
    S, A = 300, 3
    rng = random.Random(5)
    counts = [[[rng.gauss(0, 3) for _ in range(S + 1)] for _ in range(A)] for _ in range(S)]
    rsums = [[rng.gauss(0, 3) for _ in range(A)] for _ in range(S)]
    m = model(counts, rsums, [rng.gauss(5, 3) for _ in range(S)], gamma=0.99, sigma=3.0,
              reward_sigma=3.0)
    con.set_progress_handler(lambda: 1, 1000)
    msg = sql_error(con, "SELECT dp_mdp_value(?, ?)", (m, json.dumps([0] * S)))
    con.set_progress_handler(None, 0)
    check(msg == "interrupted", "an interrupted call stops with \"interrupted\"", msg)
    got = value_of(con, m, json.dumps([0] * S), '{"bootstrap": 3}')
    check(got["stderr"] > 0 and len(got["values"]) == S, "and runs when not interrupted")


run([test_values, test_plan, test_keys_and_policies, test_rows_and_determinism,
     test_estimate_options, test_errors, test_interrupt])
