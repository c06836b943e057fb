"""dp_plan for dp_mdp (ALGORITHMS.md section 13.4): the rows' planned L1
error and the planned error of a value against the formulas computed here
from the plan's own sigma, the verdicts against the tolerance, a compact
result at 1,440 x 8, and the ICU-sized model that the noise swamps called
not useful."""
import json
import math

from harness import check, check_error, connect, run

BASE = {"mechanism": "dp_mdp", "n_states": 10, "n_actions": 4, "gamma": 0.95, "rmin": -1,
        "rmax": 1, "horizon": 20, "epsilon": 1, "delta": 1e-5, "episodes": 20000,
        "error": "transitions"}


def plan(con, base=BASE, **kw):
    return json.loads(con.execute("SELECT dp_plan(?)", (json.dumps(dict(base, **kw)),)).fetchone()[0])


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

def value_error(p, visits, episodes, R, outcome=0):
    """The planned error of a value (ALGORITHMS.md 13.4), computed here from
    the plan's public numbers: each visited pair's misplaced mass and noise,
    weighted by its visits per episode d; returns (bias, sd)."""
    sig, half, S = p["sigma"], p["reward_sigma"] / p["sigma"], p["n_states"]
    bias = var = 0.0
    for n in (x for row in visits for x in row if x > 0):
        d = n / episodes
        if p.get("transitions") == "sparse":
            k = p["next_states"]
            keep = 0.5 * math.erfc((p["threshold"] - n / k) / (sig * math.sqrt(2)))
            moved, m, rsd = 1 - keep, k * keep + 2 + outcome, half * sig * math.sqrt(2) / n
        else:
            spur = S * sig / math.sqrt(2 * math.pi)
            rows = S + 1 + outcome
            moved, m, rsd = spur / (n + spur), rows, half * sig * math.sqrt(rows + 1) / n
        bias += d * moved
        var += d * d * (sig ** 2 * m * (R / 2) ** 2 / n ** 2 + rsd ** 2)
    if p.get("transitions") == "sparse":
        bias = R * (1 - math.exp(-bias))
    else:
        bias = min(R, bias * R / 2)
    return bias, math.sqrt(var)


def test_value():
    con = connect()
    base = {k: v for k, v in BASE.items() if k != "error"}
    visits = [[400.0 * (s + 1), 50.0] + [0.0, 10.0] for s in range(10)]
    for how, R, given in (({}, 40, False), ({"value_range": 2}, 2, True)):
        p = plan(con, base, visits=visits, **how)
        b, sd = value_error(p, visits, 20000, R)
        check(p["verdict_on"] == "value_rmse" and p["value_range"] == R and
              p["value_range_from"] == ("given" if given else "from rmin, rmax, gamma and horizon"),
              f"dense, value range {R}: the verdict is on the value's error by default", p)
        check(abs(p["value_bias"] - b) < 1e-12 * b and abs(p["value_sd"] - sd) < 1e-12 * sd and
              abs(p["value_rmse"] - math.hypot(b, sd)) < 1e-12 * math.hypot(b, sd),
              f"dense, value range {R}: bias and sd as computed here", (p["value_bias"], b, p["value_sd"], sd))
        check(p["tolerance"] == 0.025 * R and p["useful"] == (math.hypot(b, sd) <= 0.025 * R),
              f"dense, value range {R}: tolerance 2.5% of the range, useful when the error is within it", p)
    # a sparse release (100 states), with the outcome entry; the bias is the
    # chance of reaching an unknown end times the range
    o = dict(base, n_states=100, n_actions=2, episodes=40000, steps=15, next_states=2, transitions="sparse",
             outcome=True, value_range=2)
    p = plan(con, o)
    even = [[40000 * 15 / 200] * 2] * 100
    b, sd = value_error(p, even, 40000, 2, outcome=1)
    check(p["transitions"] == "sparse" and 0.1 < b < 1.9 and abs(p["value_bias"] - b) < 1e-12 * b and
          abs(p["value_sd"] - sd) < 1e-12 * sd, "sparse with outcome: bias and sd as computed here",
          (p["value_bias"], b, p["value_sd"], sd))
    # the verdict turns exactly at the tolerance
    at = plan(con, o, **dict(tolerance=p["value_rmse"]))
    below = plan(con, o, **dict(tolerance=p["value_rmse"] * (1 - 1e-9)))
    check(at["useful"] is True and below["useful"] is False and below["why"].startswith(
          "the planned error of a value, ") and "unknown mass" in below["why"],
          "value: useful exactly when value_rmse is within the tolerance", below["why"])
    # the errors scale with the range, the noise of the rewards apart
    p2 = plan(con, o, **dict(value_range=4))
    check(abs(p2["value_bias"] - 2 * p["value_bias"]) < 1e-12 and p2["value_sd"] > p["value_sd"],
          "value_range 4: twice the bias, more noise", (p["value_bias"], p2["value_bias"]))
    icu = plan(con, base, **dict(n_states=1440, n_actions=8, steps=15, value_range=2))
    check(icu["useful"] is False and icu["value_bias"] > 1.99,
          "1,440 x 8 from 20,000 stays: almost every stay reaches an unknown end, not useful", icu)
    check(plan(con, base, **dict(steps=15, epsilon=1e4, value_range=2))["useful"] is True,
          "epsilon 10^4: the value is planned within 0.05")
    tiny = plan(con, base, n_states=2, n_actions=1, episodes=1, visits=[[1e300], [1e-300]])
    check(isinstance(tiny["value_sd"], float) and math.isfinite(tiny["value_sd"]) and tiny["value_bias"] == 40,
          "visits of 1e300 and 1e-300: a finite sd (the noise terms do not divide by the visits)", tiny)
    no_h = dict(base, steps=15, gamma=1, clip=5)
    del no_h["horizon"]
    check_error(con, "SELECT dp_plan(?)", "dp_plan: option value_range (the span of a policy's value) "
                "is required for error \"value\" with gamma 1 and no horizon",
                "gamma 1 without a horizon: value_range required", (json.dumps(no_h),))
    check(plan(con, no_h, **dict(value_range=2))["value_range"] == 2, "... and given, planned")
    d = dict(no_h, gamma=0.9)
    check(plan(con, d)["value_range"] == 2 / (1 - 0.9), "gamma 0.9 without a horizon: (rmax - rmin)/(1 - gamma)")
    for bad, msg in ((dict(base, steps=15, error="x"),
                      'dp_plan: option error must be one of "transitions", "value", got "x"'),
                     (dict(BASE, steps=15, value_range=2),
                      'dp_plan: option value_range plans the error of a value: give error "value"'),
                     (dict(base, steps=15, value_range=0), "dp_plan: option value_range must be > 0, got 0"),
                     (dict(base, steps=15, tolerance=-1), "dp_plan: option tolerance must be > 0, got -1")):
        check_error(con, "SELECT dp_plan(?)", msg, msg.split(": ", 1)[1], (json.dumps(bad),))

run([test_formula, test_verdict, test_value, test_errors])
