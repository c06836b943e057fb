"""dp_plan for dp_mdp (ALGORITHMS.md section 13.4): the rows' planned L1
error against the formula computed here from the plan's own sigma, the
verdict against the tolerance, a compact result at 1,440 x 8, and the
ICU-sized model that the noise swamps called not useful."""
import json
import math

from harness import check, check_error, connect, run

BASE = {"mechanism": "dp_mdp", "n_states": 10, "n_actions": 4, "gamma": 0.95, "rmin": -1,
        "rmax": 1, "horizon": 20, "epsilon": 1, "delta": 1e-5, "episodes": 20000}


def plan(con, **kw):
    return json.loads(con.execute("SELECT dp_plan(?)", (json.dumps(dict(BASE, **kw)),)).fetchone()[0])


def row_l1(S, sigma, n):
    """One row of n counted steps: first-order noise plus twice the share of
    spurious mass S sigma / sqrt(2 pi) (the positive part of the noise of
    S empty entries), at most 2."""
    m = S * sigma / math.sqrt(2 * math.pi)
    first = math.sqrt(2 / math.pi) * sigma * (S + 1 + math.sqrt(S + 1)) / n
    return min(2.0, first + 2 * m / (n + m))


def test_formula():
    con = connect()
    p = plan(con, steps=15)
    n = 20000 * 15 / 40  # spread evenly over 10 x 4 pairs
    want = row_l1(10, p["sigma"], n)
    check(abs(p["transition_l1"] - want) < 1e-12 * want and abs(p["worst_transition_l1"] - want) < 1e-12 * want,
          "even visits: every row's L1 error is the formula's", (p["transition_l1"], want))
    m = 10 * p["sigma"] / math.sqrt(2 * math.pi)
    check(abs(p["noise_mass"] - m / (n + m)) < 1e-12, "noise_mass is M / (N + M)", p["noise_mass"])
    check(p["pairs_visited"] == 40 and p["tolerance"] == 0.5 and p["useful"] is True and p["why"] is None,
          "10 states of 20,000 stays at epsilon 1: useful within the default tolerance 0.5", p)
    # uneven visits: the mean is weighted by the visits, the worst is the rarest row
    visits = [[1000.0 if s == 0 else 10.0] * 4 for s in range(10)]
    q = plan(con, visits=visits)
    ls = [row_l1(10, q["sigma"], v) for row in visits for v in row]
    ws = [v for row in visits for v in row]
    mean = sum(a * w for a, w in zip(ls, ws)) / sum(ws)
    check(abs(q["transition_l1"] - mean) < 1e-12 * mean and q["worst_transition_l1"] == max(ls) == 2.0,
          "uneven visits: the visit-weighted mean, and the rarest rows capped at 2", (q["transition_l1"], mean))
    zero = [[0.0] * 4 for _ in range(10)]
    zero[3][1] = 500.0
    z = plan(con, visits=zero)
    check(z["pairs_visited"] == 1 and abs(z["transition_l1"] - row_l1(10, z["sigma"], 500.0)) < 1e-12,
          "pairs without planned steps are left out", z["pairs_visited"])


def test_verdict():
    con = connect()
    p = plan(con, steps=15)
    at = plan(con, steps=15, tolerance=p["transition_l1"])
    below = plan(con, steps=15, tolerance=p["transition_l1"] * (1 - 1e-9))
    check(at["useful"] is True and below["useful"] is False and "above the tolerance" in below["why"],
          "useful exactly when the mean L1 error is within the tolerance", below["why"])
    icu = plan(con, n_states=1440, n_actions=8, steps=15)
    check(icu["useful"] is False and icu["transition_l1"] == 2.0 and icu["worst_transition_l1"] == 2.0
          and "0.5" in icu["why"],
          "1,440 states x 8 actions from 20,000 stays: every row is noise (L1 2), not useful", icu)
    text = con.execute("SELECT dp_plan(?)", (json.dumps(dict(BASE, n_states=1440, n_actions=8,
                       visits=[[15.0] * 8] * 1440)),)).fetchone()[0]
    check(len(text) < 2000, "the plan of a 1,440 x 8 model is compact (no per-pair arrays)", len(text))
    check(plan(con, steps=15, epsilon=100)["useful"] is True, "more epsilon: useful")


def test_errors():
    con = connect()
    for bad, got in ((0, "0"), (2, "2"), (-1, "-1"), ("x", '"x"')):
        kind = "a number" if bad == "x" else "in (0, 2)"
        check_error(con, "SELECT dp_plan(?)", f"dp_plan: option tolerance must be {kind}, got {got}",
                    f"tolerance {bad!r} refused", (json.dumps(dict(BASE, steps=15, tolerance=bad)),))

run([test_formula, test_verdict, test_errors])
