"""dp_mdp_plan's pessimistic plan ("pessimism": level, ALGORITHMS.md
§14.3): the lower bound's recursion, the plan and the logging policy's
value and bound against a computation written here; the bound's
monotonicity in the level; a pair too rare for the bound valued at its
worst; the bound's coverage on fresh logs of a task with a known value;
the errors."""
import json
import math
import os
import random
import subprocess
import sys
from statistics import NormalDist

from harness import check, check_close, check_error, connect, run

S, A, H = 2, 2, 3


def model(counts, rsums, start, sigma, reward_sigma, rmin=0.0, rmax=1.0):
    return json.dumps({
        "mechanism": "dp_mdp", "private": False, "seeded": True, "unit": "episode",
        "n_states": len(counts), "n_actions": len(counts[0]), "gamma": 1, "rmin": rmin,
        "rmax": rmax, "epsilon": 1, "delta": 1e-5, "horizon": H, "clip": None,
        "sensitivity": 2.0, "sigma": sigma, "reward_sigma": reward_sigma,
        "reward_center": (rmin + rmax) / 2, "start": start, "counts": counts,
        "reward_sums": rsums, "features": "tabular"})


# state 0: action 0 stays (reward 0.2), action 1 moves to 1 (reward 0.5);
# state 1: action 0 ends (reward 1), action 1 is almost never taken
COUNTS = [[[300, 0, 100], [50, 150, 0]], [[0, 0, 400], [1, 1, 0]]]
MEANS = [[0.2, 0.5], [1.0, 0.0]]
START = [150, 50]
SIGMA, RSIGMA = 4.0, 2.0


def rsums():
    return [[(MEANS[s][a] - 0.5) * sum(COUNTS[s][a]) for a in range(A)] for s in range(S)]


def lower(level, policy=None):
    """The recursion of §14.3, written out: values, first-step Q, greedy policy."""
    z = NormalDist().inv_cdf(level)
    k = S + 1
    V = [0.0] * S
    for h in range(H):
        lo, hi = min([0.0] + V), max([0.0] + V)
        span = hi - lo
        Q = [[0.0] * A for _ in range(S)]
        for s in range(S):
            for a in range(A):
                c = COUNTS[s][a]
                N = sum(c)
                low = N - z * SIGMA * math.sqrt(k)
                if not low > 1:
                    q = 0.0 + lo  # rmin + gamma lo
                else:
                    P = [x / N for x in c[:S]]
                    pv = sum(p * v for p, v in zip(P, V))
                    dev = sum((v - pv) ** 2 for v in V) + pv ** 2
                    vr = 1 / (4 * low) + (RSIGMA ** 2 + 0.25 * SIGMA ** 2 * k) / low ** 2
                    vp = span ** 2 / (4 * low) + SIGMA ** 2 * dev / low ** 2
                    q = MEANS[s][a] + pv - z * math.sqrt(vr + vp)
                Q[s][a] = max(q, 0.0, 0.0 + lo)  # the public floor (0 here) and rmin + gamma lo
        if policy is None:
            V = [max(Q[s]) for s in range(S)]
            act = [max(range(A), key=lambda a, s=s: (Q[s][a], sum(COUNTS[s][a]))) for s in range(S)]
        else:
            V = [sum(policy[s][a] * Q[s][a] for a in range(A)) for s in range(S)]
            act = None
    n = sum(START)
    st = [x / n for x in START]
    v = sum(p * x for p, x in zip(st, V))
    lo, hi = min(V + [0.0]), max(V + [0.0])
    low = n - z * SIGMA * math.sqrt(S)
    dev = sum((x - v) ** 2 for x in V)
    bound = v - z * math.sqrt((hi - lo) ** 2 / (4 * low) + SIGMA ** 2 * dev / low ** 2)
    return V, Q, act, bound


def plan(con, m, **kw):
    return json.loads(con.execute("SELECT dp_mdp_plan(?, ?)",
                                  (m, json.dumps(dict({"horizon": H}, **kw)))).fetchone()[0])


def test_against_written_recursion():
    con = connect()
    m = model(COUNTS, rsums(), START, SIGMA, RSIGMA)
    for level in (0.6, 0.9, 0.99):
        got = plan(con, m, pessimism=level)
        V, Q, act, bound = lower(level)
        pol = [[1.0 if a == act[s] else 0.0 for a in range(A)] for s in range(S)]
        Vp, _, _, bp = lower(level, pol)
        check(got["policy"] == act, f"level {level}: the plan is greedy on the lower bound", got)
        check_close(got["q"], Q, f"level {level}: the first step's lower Q", rel=1e-9, abs_=1e-9)
        check_close(got["lcb_values"], Vp, f"level {level}: the plan's lower values", rel=1e-9,
                    abs_=1e-9)
        check_close(got["lcb"], bp, f"level {level}: lcb, the start's sd taken off", rel=1e-9,
                    abs_=1e-9)
        # pi_b: N(s, a) over the pairs above min_count (the estimate's pessimistic pairs: none)
        visits = [[sum(COUNTS[s][a]) if sum(COUNTS[s][a]) > got["min_count"] else 0
                   for a in range(A)] for s in range(S)]
        logged = [[visits[s][a] / sum(visits[s]) for a in range(A)] for s in range(S)]
        _, _, _, blcb = lower(level, logged)
        check_close(got["behaviour_lcb"], blcb, f"level {level}: the log's lower bound", rel=1e-9,
                    abs_=1e-9)
        ev = json.loads(con.execute("SELECT dp_mdp_value(?, ?, ?)",
                                    (m, json.dumps(logged), json.dumps({"horizon": H, "bootstrap": 0})
                                     )).fetchone()[0])
        check_close(got["behaviour_value"], ev["value"],
                    f"level {level}: behaviour_value is dp_mdp_value of pi_b", rel=1e-12)
        check(got["pessimism"] == level and got["lcb"] <= got["value"],
              f"level {level}: the bound is below the plan's value on the model", got)
    low, high = plan(con, m, pessimism=0.6), plan(con, m, pessimism=0.99)
    check(high["lcb"] < low["lcb"], "a higher level, a lower bound", (low["lcb"], high["lcb"]))
    plain = plan(con, m)
    check("lcb" not in plain and plain["policy"] == [1, 0],
          "without pessimism, the plain plan (no lcb)", plain)
    check(plan(con, m, pessimism=0.9)["q"][1][1] == 0,
          "a pair of 2 visits against noise sd 4 sqrt(3) is valued at its worst (rmin, then 0)")


def test_coverage():
    """Fresh noiseless logs of one state that ends with probability p a step
    (reward 1 a step, 10 steps): the plan's lcb at level 0.9 is at or below
    the exact value in at least 90% of them (here 40 logs: 33 or more unless
    the coverage is below 0.9 by more than the binomial spread)."""
    con = connect()
    rng = random.Random(5)
    p, Hs, n = 0.2, 10, 300
    exact = sum((1 - p) ** t for t in range(Hs))
    held = 0
    for _ in range(40):
        K = E = 0
        for _e in range(n):
            for _t in range(Hs):
                if rng.random() < p:
                    E += 1
                    break
                K += 1
        m = json.loads(model([[[K, E]]], [[0.5 * (K + E)]], [n], 0.0, 0.0))
        m["horizon"] = Hs
        got = json.loads(con.execute("SELECT dp_mdp_plan(?, ?)",
                                     (json.dumps(m), json.dumps({"horizon": Hs, "pessimism": 0.9}))
                                     ).fetchone()[0])
        held += got["lcb"] <= exact
    check(held >= 33, f"lcb at level 0.9 held in {held} of 40 fresh logs")


def test_discounted():
    """Without a horizon: value iteration, even with a tolerance so large
    that the sweeps of §14.2 would be none (at least one is made)."""
    con = connect()
    m = json.loads(model(COUNTS, rsums(), START, SIGMA, RSIGMA))
    m["gamma"], m["horizon"] = 0.9, None
    for tol in (1e-9, 1e9):
        got = json.loads(con.execute("SELECT dp_mdp_plan(?, ?)", (json.dumps(m), json.dumps(
            {"pessimism": 0.9, "tolerance": tol}))).fetchone()[0])
        check(all(a in (0, 1) for a in got["policy"]) and math.isfinite(got["lcb"])
              and got["iterations"] >= 1 and got["lcb"] <= got["value"],
              f"discounted, tolerance {tol}: a policy, a finite bound below the value", got)


def test_errors():
    con = connect()
    m = model(COUNTS, rsums(), START, SIGMA, RSIGMA)
    for bad, msg in ((0.3, "dp_mdp_plan: option pessimism must be in [0.5, 1), got 0.3"),
                     (1, "dp_mdp_plan: option pessimism must be in [0.5, 1), got 1"),
                     ("high", 'dp_mdp_plan: option pessimism must be a number, got "high"')):
        check_error(con, "SELECT dp_mdp_plan(?, ?)", msg, f"error: pessimism {bad!r}",
                    (m, json.dumps({"horizon": H, "pessimism": bad})))
    check_error(con, "SELECT dp_mdp_value(?, '[0, 0]', ?)",
                    'dp_mdp_value: unknown option "pessimism" (known: horizon, gamma, min_count, '
                    'count_floor, ends, unknown, bootstrap, bootstrap_seed, interval, level, '
                    'tolerance)', "error: pessimism is dp_mdp_plan's",
                    (m, json.dumps({"horizon": H, "pessimism": 0.9})))


def test_utility_quick():
    """tests/utility/pessimism.py --quick (make utility's table) runs."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    p = subprocess.run([sys.executable, os.path.join(root, "tests", "utility", "pessimism.py"),
                        "--quick"], capture_output=True, text=True, timeout=900, env=dict(os.environ))
    rows = [line for line in p.stdout.splitlines() if line.startswith("| ") and "patients" not in line]
    check(p.returncode == 0 and len(rows) == 4 and all("lcb held" in r for r in rows),
          "pessimism.py --quick: its four rows", (p.returncode, p.stdout[-800:], p.stderr[-800:]))


run([test_against_written_recursion, test_coverage, test_discounted, test_errors, test_utility_quick])
