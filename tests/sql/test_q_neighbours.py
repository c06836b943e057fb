"""The neighbouring relation of dp_q_calibrate, dp_q_noise and dp_q_learn
(ALGORITHMS.md section 8, "The neighbouring relation"): one per release,
stated in its output and kept apart by the ledger.

"range" (the default): the clamped rewards may all differ, each by up to
rmax - rmin, so the paths' sigma and theta's sigma both scale with the
range.  "unit": the paper's ||r - r'||_inf <= 1.  Expected values are
computed here from the formulas, independently of the C code."""
import json
import math
import os
import subprocess
import sys

from harness import SO, check, check_close, check_error, connect, run

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LEARN = "SELECT dp_q_learn(s, a, r, s_next, ?) FROM transitions"
NOISE = "SELECT * FROM dp_q_noise(?, ?)"
# k = 200 leaves Theorem 5's margin positive at range 10 too
CAL = dict(epsilon=1, delta=1e-5, T=5000, B=64, lr=3e-4, k=200, K=21)

RANGE_RELATION = ("two logs of the same transitions (s, a, s') whose rewards, clamped to "
                  "[rmin, rmax], may all differ, each by up to rmax - rmin")
UNIT_RELATION = ("two logs of the same transitions (s, a, s') whose rewards, clamped to "
                 "[rmin, rmax], may all differ, each by at most 1 (||r - r'||_inf <= 1, "
                 "Wang & Hegde 2019); rewards that differ by more are not covered")


def J(**kw):
    return json.dumps(kw)


def calib(con, **kw):
    return json.loads(con.execute("SELECT dp_q_calibrate(?)", (J(**kw),)).fetchone()[0])


def L_tent(K, lr, k, B, dr):
    """L = dr max(lr D, P B / (4 (k+1))), P = 1, D = K - 1 for tents."""
    return dr * max(lr * (K - 1), B / (4 * (k + 1)))


def gdp_delta(eps, mu):
    p1 = 0.5 * math.erfc((eps / mu - mu / 2) / math.sqrt(2))
    p2 = 0.5 * math.erfc((eps / mu + mu / 2) / math.sqrt(2))
    return p1 - math.exp(eps) * p2


def gdp_sigma(eps, delta, nb, C):
    sens = math.sqrt(nb * C)
    lo, hi = 1e-6 * sens, 1e6 * sens
    for _ in range(400):
        mid = math.sqrt(lo * hi)
        if gdp_delta(eps, sens / mid) <= delta:
            hi = mid
        else:
            lo = mid
    return hi


def paths_sigma(dr, T=5000, B=64, lr=3e-4, k=200, K=21, eps=1, delta=1e-5):
    v = 4 * lr * (k + 1) / B
    L = L_tent(K, lr, k, B, dr)
    return gdp_sigma(eps, delta, T / B, (v * v + v) * L * L)


def grid_for(sigma):
    m, e = math.frexp(sigma)
    return math.ldexp(1.0, (e - 1 if m == 0.5 else e) - 26)


def theta_sigma(sens, slack=2.0 ** -20, nb=78, d=42, eps=1, delta=1e-5):
    """ALGORITHMS.md section 10: (sens + sqrt(d) g)(1 + slack) per update."""
    g = grid_for(gdp_sigma(eps, delta, nb, sens * sens))
    eff = (sens + math.sqrt(d) * g) * (1 + slack)
    return gdp_sigma(eps, delta, nb, eff * eff)


def transitions(con):
    con.execute("CREATE TABLE transitions(s, a, r, s_next)")
    con.executemany("INSERT INTO transitions VALUES (?, ?, ?, ?)",
                    [(i / 100, i % 2, (i % 7) / 7, ((i * 37) % 100) / 100) for i in range(100)])


def test_sigma_scales_with_range():
    """sigma of the paths and of theta at reward ranges 1 and 10: ratio 10
    for both under the default relation; the paths' sigma is the
    independent calibration with dr = rmax - rmin."""
    con = connect()
    transitions(con)
    c1 = calib(con, rmin=0, rmax=1, **CAL)
    c10 = calib(con, rmin=-5, rmax=5, **CAL)
    check_close(c10["sigma"] / c1["sigma"], 10, "dp_q_calibrate: paths' sigma at range 10 = 10 x range 1",
                rel=1e-9)
    check_close(c10["sigma"], paths_sigma(10), "dp_q_calibrate: sigma with dr = rmax - rmin = 10", rel=1e-9)
    check_close(c10["L"], L_tent(21, 3e-4, 200, 64, 10), "dp_q_calibrate: L = (rmax - rmin) max(...)",
                rel=1e-12)
    o = dict(n_actions=2, gamma=0.9, **CAL)
    m1 = json.loads(con.execute(LEARN, (J(rmin=0, rmax=1, **o),)).fetchone()[0])
    m10 = json.loads(con.execute(LEARN, (J(rmin=-5, rmax=5, **o),)).fetchone()[0])
    check_close(m10["paths"]["sigma"] / m1["paths"]["sigma"], 10,
                "dp_q_learn: paths' sigma at range 10 = 10 x range 1", rel=1e-9)
    check(m10["paths"]["sigma"] == c10["sigma"], "dp_q_learn's paths = dp_q_calibrate's sigma")
    # theta: (lr dr sqrt(P) + sqrt(d) g)(1 + 2^-20), the rounding term ~3e-6 of it
    check_close(m10["theta_noise"]["sigma"] / m1["theta_noise"]["sigma"], 10,
                "dp_q_learn: theta's sigma at range 10 = 10 x range 1", rel=1e-4)
    check_close(m10["theta_noise"]["sigma"], theta_sigma(10 * 3e-4), "dp_q_learn: theta's sigma, "
                "independent calibration with dr = 10", rel=1e-9)
    # the paper's relation: the paths as at range 1 (dr = min(1, rmax - rmin))
    u10 = calib(con, rmin=-5, rmax=5, neighbours="unit", **CAL)
    check_close(u10["sigma"], c1["sigma"], "neighbours unit: the paths' sigma of dr = 1", rel=1e-12)
    mu = json.loads(con.execute(LEARN, (J(rmin=-5, rmax=5, neighbours="unit", **o),)).fetchone()[0])
    check_close(mu["paths"]["sigma"], c1["sigma"], "dp_q_learn, neighbours unit: paths' sigma of dr = 1",
                rel=1e-12)
    # theta under "unit": sensitivity lr sqrt(P) = 3e-4, the floating-point allowance
    # 2^-20 (rmax - rmin) (the rewards' part is up to rmax - rmin, its rounding is not)
    check_close(mu["theta_noise"]["sigma"], theta_sigma(3e-4, slack=10 * 2.0 ** -20),
                "dp_q_learn, neighbours unit: theta's sigma for lr sqrt(P), 10 x the fp allowance", rel=1e-9)
    con.close()


def test_relation_stated():
    """Each release says its unit and its relation; the ledger's unit follows."""
    con = connect()
    transitions(con)
    o = dict(n_actions=2, gamma=0.9, rmin=0, rmax=1, **CAL)
    m = json.loads(con.execute(LEARN, (J(**o),)).fetchone()[0])
    check(m["unit"] == "reward function" and m["neighbours"] == "range" and m["relation"] == RANGE_RELATION,
          "dp_q_learn states the default relation", (m.get("unit"), m.get("neighbours"), m.get("relation")))
    m = json.loads(con.execute(LEARN, (J(neighbours="unit", **o),)).fetchone()[0])
    check(m["unit"] == "unit reward change" and m["neighbours"] == "unit" and m["relation"] == UNIT_RELATION,
          "dp_q_learn states the paper's relation", (m.get("unit"), m.get("neighbours"), m.get("relation")))
    c = calib(con, rmin=0, rmax=1, **CAL)
    check(c["unit"] == "reward function" and c["neighbours"] == "range" and c["relation"] == RANGE_RELATION,
          "dp_q_calibrate states the relation", c)
    c = calib(con, neighbours="unit", L=0.25, **{k: v for k, v in CAL.items() if k != "K"})
    check(c["unit"] == "unit reward change" and c["relation"] == UNIT_RELATION,
          "dp_q_calibrate with L given states the relation L is for", c)
    p = json.loads(con.execute("SELECT dp_plan(?)", (J(mechanism="dp_q_learn", neighbours="unit", **o),))
                   .fetchone()[0])
    check(p["unit"] == "unit reward change" and p["neighbours"] == "unit", "dp_plan states the relation", p)
    con.close()


def test_relation_refused():
    con = connect()
    transitions(con)
    o = dict(n_actions=2, gamma=0.9, rmin=0, rmax=1, **CAL)
    check_error(con, LEARN, 'dp_q_learn: option neighbours must be one of "range", "unit", got "paper"',
                "dp_q_learn: a bad neighbours refused", (J(neighbours="paper", **o),))
    check_error(con, "SELECT dp_q_calibrate(?)",
                'dp_q_calibrate: option neighbours must be one of "range", "unit", got 1',
                "dp_q_calibrate: a bad neighbours refused", (J(rmin=0, rmax=1, neighbours=1, **CAL),))
    check_error(con, NOISE, "dp_q_noise: option neighbours is a calibration input; give either sigma "
                "and beta, or the calibration inputs, not both", "dp_q_noise: neighbours with sigma refused",
                ("SELECT 0.5, 0, 1.0", J(n_actions=2, sigma=0.3, beta=800, neighbours="unit")))
    con.close()


def test_ledger_keeps_relations_apart():
    """A budget protects one relation: a release under the other is refused,
    naming both, and nothing is charged."""
    con = connect()
    con.isolation_level = None
    transitions(con)
    con.execute("SELECT dprl_budget('rf', 10, 1e-3, '{\"in_memory\": true, \"unit\": \"reward function\"}')")
    con.execute("SELECT dprl_budget('u1', 10, 1e-3, '{\"in_memory\": true, \"unit\": \"unit reward change\"}')")
    o = dict(n_actions=2, gamma=0.9, rmin=0, rmax=1, **CAL)
    check(con.execute(LEARN, (J(budget="rf", **o),)).fetchone()[0] is not None, "range release, range budget")
    check(con.execute(LEARN, (J(budget="u1", neighbours="unit", **o),)).fetchone()[0] is not None,
          "unit release, unit budget")
    want = ('dp_q_learn: option budget "rf": the budget protects one reward function, and dp_q_learn '
            'protects one unit reward change: epsilons of different units of privacy do not add up to '
            'a guarantee, so they cannot share a budget; declare a budget with \'{"unit": "unit reward '
            'change"}\' for this release')
    check_error(con, LEARN, want, "ledger: a unit release refused by a range budget",
                (J(budget="rf", neighbours="unit", **o),))
    want = ('dp_q_noise: option budget "u1": the budget protects one unit reward change, and dp_q_noise '
            'protects one reward function: epsilons of different units of privacy do not add up to a '
            'guarantee, so they cannot share a budget; declare a budget with \'{"unit": "reward '
            'function"}\' for this release')
    check_error(con, NOISE, want, "ledger: a range release refused by a unit budget",
                ("SELECT 0.5, 0, 1.0", J(n_actions=2, budget="u1", rmin=0, rmax=1, **CAL)))
    rows = con.execute("SELECT budget, count(*) FROM dprl_ledger GROUP BY budget ORDER BY budget").fetchall()
    check(rows == [("rf", 1), ("u1", 1)], "ledger: the refused releases charged nothing", rows)
    con.close()


def test_impossibility_quick():
    """tests/utility/q_impossibility.py --quick runs and prints its tables."""
    p = subprocess.run([sys.executable, os.path.join(ROOT, "tests", "utility", "q_impossibility.py"),
                        "--quick"], env=dict(os.environ, DPRL_SO=SO), capture_output=True, text=True,
                       timeout=600)
    lines = [l for l in p.stdout.splitlines() if l.startswith("| ")]
    header = ("| epsilon | cap (task and mirror) | randomized response | exponential mechanism | dp_q_learn "
              "| beat random |")
    rows = [l.split(" | ") for l in lines[1:]]
    check(p.returncode == 0 and lines[:1] == [header] and [r[0] for r in rows] == ["| 0.9", "| 3", "| 10"],
          "q_impossibility --quick: finishes and prints its table", (p.returncode, p.stdout[-1500:], p.stderr[-1500:]))
    # the cap is the optimum once epsilon is large, and no mechanism beats it
    check(rows and rows[-1][1] == "20.7" and all(float(r[2]) <= float(r[1]) and float(r[3]) <= float(r[1])
                                                 for r in rows),
          "q_impossibility --quick: the selections stay within the cap, which reaches the optimum", rows)

if __name__ == "__main__":
    run([test_sigma_scales_with_range, test_relation_stated, test_relation_refused,
         test_ledger_keeps_relations_apart, test_impossibility_quick])
