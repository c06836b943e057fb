"""dp_mdp_value's interval (option "interval": "log", ALGORITHMS.md §14.4):
on a one-state task whose world is known in closed form, the interval
against an independent bootstrap written here; its coverage of the exact
value over fresh logs; the world's episodes and clipped share; every
layout (dense, sparse, with outcomes) runs; the draws are reproducible;
the errors."""
import json
import math
import os
import random
import subprocess
import sys

from harness import check, check_error, connect, interrupted, run

H, P = 10, 0.2  # the one-state task: each step ends with probability P, reward 1


def one_state(n, K, E, sigma=0.0):
    """A model of one state, one action: K steps went on, E ended, every
    reward 1 in [0, 1]; n episodes started."""
    N = K + E
    return json.dumps({
        "mechanism": "dp_mdp", "private": False, "seeded": True, "unit": "episode",
        "n_states": 1, "n_actions": 1, "gamma": 1, "rmin": 0.0, "rmax": 1.0,
        "epsilon": 1, "delta": 1e-5, "horizon": H, "clip": None, "sensitivity": 2.0,
        "sigma": sigma, "reward_sigma": sigma / 2, "reward_center": 0.5,
        "start": [n], "counts": [[[K, E]]], "reward_sums": [[0.5 * N]], "features": "tabular"})


def value(p):
    """The exact value of H steps when each ends with probability p."""
    return sum((1 - p) ** t for t in range(H))


def log_counts(n, p, rng):
    """n episodes of the task: (steps that went on, episodes that ended)."""
    K = E = 0
    for _ in range(n):
        for t in range(H):
            if rng.random() < p:
                E += 1
                break
            K += 1
    return K, E


def interval(con, m, policy="[0]", **kw):
    o = dict({"horizon": H, "interval": "log"}, **kw)
    return json.loads(con.execute("SELECT dp_mdp_value(?, ?, ?)",
                                  (m, policy, json.dumps(o))).fetchone()[0])


def test_against_independent_bootstrap():
    con = connect()
    n, K, E = 400, 1428, 357  # p = 357 / 1785 = 0.2
    B = 4000
    got = interval(con, one_state(n, K, E), bootstrap=B, bootstrap_seed=5)
    p_hat = E / (K + E)
    check(abs(got["value"] - value(p_hat)) < 1e-12, "the estimate is the value at p = E / N", got)
    rng = random.Random(11)
    D = []
    for _ in range(B):
        k, e = log_counts(n, p_hat, rng)
        D.append(value(e / (k + e)) - value(p_hat))
    D.sort()

    def q(x):
        h = x * (B - 1)
        i = int(h)
        return D[i] + (h - i) * (D[i + 1] - D[i])

    low, high = value(p_hat) - q(0.975), value(p_hat) - q(0.025)
    width = high - low
    # each endpoint is a 2.5% quantile of B draws: its Monte Carlo sd is about
    # 0.06 sd(D) = 0.015 width, for both bootstraps; 0.1 width is over 4 sd of the difference
    check(abs(got["ci_low"] - low) < 0.1 * width and abs(got["ci_high"] - high) < 0.1 * width,
          "the interval is the estimate minus the quantiles of (re-estimate - world value): "
          "the same as a bootstrap of the world's logs written here",
          (got["ci_low"], got["ci_high"], low, high))
    sd = math.sqrt(sum(d * d for d in D) / B - (sum(D) / B) ** 2)
    check(abs(got["ci_bias"] - sum(D) / B) < 4 * sd * math.sqrt(2 / B),
          "ci_bias is the mean of re-estimate - world value", (got["ci_bias"], sum(D) / B))
    check(got["world_episodes"] == n and got["world_steps"] == H and got["level"] == 0.95
          and got["world_clipped_share"] == 0 and got["interval"] == "log bootstrap",
          "the world: the released episodes, the release's horizon, nothing clipped", got)
    narrow = interval(con, one_state(n, K, E), bootstrap=B, bootstrap_seed=5, level=0.5)
    check(low < narrow["ci_low"] < narrow["ci_high"] < high,
          "a lower level gives a narrower interval inside", narrow)


def test_coverage():
    """Fresh logs of the task (no noise): the 95% interval holds the exact
    value in about 95% of them; with 60 logs, 52 or more unless the
    coverage is below 80% (binomial: P(X <= 51) < 0.05 at 0.95)."""
    con = connect()
    rng = random.Random(3)
    hits, n = 0, 300
    for t in range(60):
        K, E = log_counts(n, P, rng)
        got = interval(con, one_state(n, K, E), bootstrap=400, bootstrap_seed=t)
        hits += got["ci_low"] <= value(P) <= got["ci_high"]
    check(52 <= hits <= 60, f"the interval covers the exact value in {hits} of 60 fresh logs")


def test_clip_calibration():
    """A clip that binds scales long episodes down, so the release's model
    ends episodes too early: at clip 3 (every episode of 2 steps or more
    cut) the estimate is 3.1 for an exact 4.46.  The world is calibrated
    until its clipped logs give the release's numbers, so the interval
    corrects that bias: it covers the exact value, and ci_bias is the
    estimate's error."""
    con = connect()
    rng = random.Random(1)
    rows = []
    for e in range(4000):
        for t in range(H + 5):
            rows.append((e, t, 0, 0, 1.0))
            if rng.random() < P:
                break
    con.execute("CREATE TABLE steps(episode, t, state, action, reward)")
    con.executemany("INSERT INTO steps VALUES (?, ?, ?, ?, ?)", rows)
    for clip in (3, 6, 10):
        o = {"n_states": 1, "n_actions": 1, "gamma": 1, "rmin": 0, "rmax": 1, "epsilon": 1e4,
             "delta": 1e-5, "horizon": H, "seed": 1, "clip": clip}
        m = con.execute("SELECT dp_mdp(episode, t, state, action, reward, ?) FROM steps",
                        (json.dumps(o),)).fetchone()[0]
        got = interval(con, m, bootstrap=400)
        error = got["value"] - value(P)
        check(error < -0.2 and got["ci_low"] <= value(P) <= got["ci_high"]
              and abs(got["ci_bias"] - error) < 0.25 * abs(error) and got["world_clipped_share"] > 0.1,
              f"clip {clip}: the estimate is off by {error:.2f}, the interval still covers the "
              "exact value and ci_bias is that error", got)


def two_states(sparse=False):
    """A model of two states, two actions, without noise: (0, 0) pays 0.5
    and moves to 1, (1, 0) pays 1 and ends; (0, 1) and (1, 1) were never
    visited.  In [0, 1]; 100 episodes start at 0.  Sparse: the same
    numbers as totals, ends and kept cells, plus 25 steps of (1, 0)
    unplaced (its total 125, of which 100 ended)."""
    head = {"mechanism": "dp_mdp", "private": False, "seeded": True, "unit": "episode",
            "n_states": 2, "n_actions": 2, "gamma": 1, "rmin": 0.0, "rmax": 1.0, "epsilon": 1,
            "delta": 1e-5, "horizon": H, "clip": None, "sensitivity": 2.0, "sigma": 0.0,
            "reward_sigma": 0.0, "reward_center": 0.5, "start": [100, 0], "features": "tabular"}
    if not sparse:
        return json.dumps(dict(head, counts=[[[0, 100, 0], [0, 0, 0]], [[0, 0, 100], [0, 0, 0]]],
                               reward_sums=[[0, 0], [50, 0]]))
    return json.dumps(dict(head, transitions="sparse", threshold=0.0, delta_threshold=0,
                           delta_gaussian=0, cells_max=10, totals=[[100, 0], [125, 0]],
                           ends=[[0, 0], [100, 0]], next=[[0, 0, 1, 100]],
                           reward_sums=[[0, 0], [62.5, 0]]))


def test_unknown_pairs():
    """What the release cannot value widens the interval's top: a policy
    through a never-visited pair is valued as if the stay ended there with
    rmin; ci_unknown is its value with rmax instead, less the value, and
    ci_high carries it.  Computed here by hand on a two-state model."""
    con = connect()
    pols = json.dumps({"known": [0, 0], "unvisited": [0, 1]})
    got = interval(con, two_states(), pols, bootstrap=20)["policies"]
    k, u = got["known"], got["unvisited"]
    check(abs(k["value"] - 1.5) < 1e-12 and k["ci_unknown"] == 0
          and abs(k["ci_low"] - 1.5) < 1e-12 and abs(k["ci_high"] - 1.5) < 1e-12,
          "a policy on visited pairs of a deterministic model: value 0.5 + 1, no unknown part", k)
    check(abs(u["value"] - 0.5) < 1e-12 and abs(u["ci_unknown"] - 1.0) < 1e-12
          and abs(u["ci_low"] - 0.5) < 1e-12 and abs(u["ci_high"] - 1.5) < 1e-12,
          "through the unvisited (1, 1): value 0.5 + rmin, ci_unknown rmax - rmin = 1, "
          "the interval [0.5, 1.5]", u)
    # sparse: (1, 0) places 100 of its 125 steps (the end); the other 25
    # (a share 0.2) go to the unknown outcome, worth rmin = 0, or rmax = 1
    # one step later (H = 10 leaves steps)
    got = interval(con, two_states(sparse=True), pols, bootstrap=20)["policies"]["known"]
    check(abs(got["value"] - 1.5) < 1e-12 and abs(got["ci_unknown"] - 0.2) < 1e-12,
          "sparse: the unplaced share 0.2 of (1, 0) is worth rmax - rmin more at the top", got)
    plain = json.loads(con.execute("SELECT dp_mdp_value(?, ?, ?)", (two_states(), pols,
                                                                    json.dumps({"horizon": H}))).fetchone()[0])
    check(plain["policies"]["unvisited"]["ci_unknown"] is None, "no interval, no ci_unknown", plain)


def steps_table(con, n, seed, outcome=False):
    rng = random.Random(seed)
    con.execute("DROP TABLE IF EXISTS steps")
    con.execute("CREATE TABLE steps(episode, t, state, action, reward, outcome)")
    rows = []
    for e in range(n):
        s = rng.randrange(4)
        L = rng.randint(1, 12)
        for t in range(L):
            a = rng.randrange(2)
            last = t == L - 1
            rows.append((e, t, s, a, rng.choice([-1, 0, 0.5, 1]),
                         "censored" if last and outcome and rng.random() < 0.3 else "terminal"))
            s = (s + a) % 4 if rng.random() < 0.8 else rng.randrange(4)
    con.executemany("INSERT INTO steps VALUES (?, ?, ?, ?, ?, ?)", rows)


def release(con, outcome=False, **kw):
    o = dict({"n_states": 4, "n_actions": 2, "gamma": 0.9, "rmin": -1, "rmax": 1,
              "epsilon": 3, "delta": 1e-5, "horizon": 12, "clip": "none", "seed": 1}, **kw)
    sql = ("SELECT dp_mdp(episode, t, state, action, reward, outcome, ?) FROM steps" if outcome
           else "SELECT dp_mdp(episode, t, state, action, reward, ?) FROM steps")
    return con.execute(sql, (json.dumps(o),)).fetchone()[0]


def test_layouts_and_clip():
    con = connect()
    rule = "[1, 0, 1, 0]"
    steps_table(con, 2000, 1)
    for name, kw in (("dense", {}), ("sparse", {"transitions": "sparse"}),
                     ("clip auto", {"clip": "auto"})):
        m = release(con, **kw)
        got = interval(con, m, rule, bootstrap=50)
        head = json.loads(m)
        n = max(1, round(sum(head["start"])))
        if "clip" in kw:  # calibrated: the clip scaled the start counts of long episodes down
            check(n < got["world_episodes"] < 1.5 * n,
                  f"{name}: the calibrated world draws more episodes than the clipped starts "
                  "sum to", (n, got["world_episodes"]))
        check(math.isfinite(got["ci_low"]) and got["ci_low"] < got["ci_high"]
              and ("clip" in kw or got["world_episodes"] == n),
              f"{name}: a finite interval; without a clip the world draws the released start "
              "counts' sum", got)
    steps_table(con, 2000, 2, outcome=True)
    for name, kw in (("outcome, dense", {}), ("outcome, sparse", {"transitions": "sparse"})):
        got = interval(con, release(con, outcome=True, **kw), rule, bootstrap=50)
        check(math.isfinite(got["ci_low"]) and got["ci_low"] < got["ci_high"],
              f"{name}: a finite interval", got)
    every = interval(con, release(con, clip=0.5), rule, bootstrap=20)
    check(every["world_clipped_share"] == 1,
          "a clip below every episode's norm (at least 1, its start) cuts every drawn episode",
          every["world_clipped_share"])
    m = release(con)
    a = interval(con, m, rule, bootstrap=30, bootstrap_seed=4)
    b = interval(con, m, rule, bootstrap=30, bootstrap_seed=4)
    c = interval(con, m, rule, bootstrap=30, bootstrap_seed=5)
    check(a == b and a["ci_low"] != c["ci_low"], "the same bootstrap_seed, the same interval")


def test_interrupt_and_limits():
    """An interrupt while a clipped world is calibrated stops the call
    cleanly; a world without a horizon draws at most 100,000 steps an
    episode, whatever the counts say."""
    con = connect()
    m = json.loads(one_state(2000000, 5600000, 1400000))
    m["clip"] = 3.0
    late, err = interrupted(con, "SELECT dp_mdp_value(?, '[0]', ?)",
                            (json.dumps(m), json.dumps({"horizon": H, "interval": "log"})), 0.05)
    check(err == ("interrupted", 9) and 0 <= late < 0.5,
          "an interrupt during the calibration stops the call within 0.5 s (CPU)", (late, err))
    big = json.loads(one_state(10, 1e20, 10))
    big["gamma"], big["horizon"] = 0.9, None
    got = json.loads(con.execute("SELECT dp_mdp_value(?, '[0]', ?)", (json.dumps(big), json.dumps(
        {"interval": "log", "bootstrap": 2}))).fetchone()[0])
    check(got["world_steps"] == 100000, "without a horizon, at most 100,000 steps an episode", got)


def test_errors():
    con = connect()
    m = one_state(10, 30, 8)
    sql = "SELECT dp_mdp_value(?, '[0]', ?)"
    for bad, msg in (({"level": 1}, "dp_mdp_value: option level must be in (0, 1), got 1"),
                     ({"level": 0}, "dp_mdp_value: option level must be in (0, 1), got 0"),
                     ({"interval": "yes"}, 'dp_mdp_value: option interval must be one of "none", '
                                           '"log", got "yes"'),
                     ({"interval": "log", "bootstrap": 0},
                      'dp_mdp_value: option interval "log" needs bootstrap draws (at least 2), '
                      'got bootstrap 0')):
        check_error(con, sql, msg, f"error: {json.dumps(bad)}", (m, json.dumps(dict(horizon=H, **bad))))
    tent = json.loads(one_state(10, 30, 8))
    tent["features"] = {"tent": 1, "low": 0, "high": 1}
    check_error(con, sql, 'dp_mdp_value: option interval "log" needs a tabular model: this one has '
                'tent features, whose episodes cannot be redrawn from the model (interval "none")',
                "error: tent features", (json.dumps(tent), json.dumps({"horizon": H, "interval": "log"})))
    huge = json.loads(m)
    huge["start"] = [3e9]
    check_error(con, sql, "dp_mdp_value: the model's start counts sum to 3000000000 episodes, more "
                'than the 2^31 a log bootstrap draws: option interval "none"',
                "error: a model claiming too many episodes",
                (json.dumps(huge), json.dumps({"horizon": H, "interval": "log"})))


def test_utility_quick():
    """tests/utility/intervals.py --quick (make utility's table) runs."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    p = subprocess.run([sys.executable, os.path.join(root, "tests", "utility", "intervals.py"),
                        "--quick"], capture_output=True, text=True, timeout=900, env=dict(os.environ))
    rows = [line for line in p.stdout.splitlines() if line.startswith("| ") and "patients" not in line]
    check(p.returncode == 0 and len(rows) == 5 and all("/12 (" in r for r in rows),
          "intervals.py --quick: its five rows, each over 12 intervals",
          (p.returncode, p.stdout[-800:], p.stderr[-800:]))


run([test_against_independent_bootstrap, test_unknown_pairs, test_coverage, test_clip_calibration, test_layouts_and_clip, test_interrupt_and_limits, test_errors,
     test_utility_quick])
