"""dp_is_value's private diagnostics (option diagnostics = s; ALGORITHMS.md
§15.7): the effective sample size and the share of clipped weights, from
the same draw as the value.

- Without it (or s = 0) a seeded release is the same bytes as before.
- With it: the keys; the effective sample size and the clipped share are
  post-processing of the released numbers (recomputed here from them);
  over seeded releases on the clinical sample, the released sum of squared
  weights and clipped count are within 5 of their own stated noise sd of
  the exact ones, and sigma grows by sqrt(1 + s).
- A neighbouring-episode attack (the worst episode: weight W, clipped,
  return gmax) separates seeded draws by no more than the claimed mu =
  sensitivity / sigma, and does find the shift."""
import json
import math
import os
import random

from harness import check, check_error, connect, run, sized

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SAMPLE = os.path.join(ROOT, "samples", "clinical")
BASE = {"gamma": 1, "rmin": -1, "rmax": 1, "gmin": -1, "gmax": 1, "horizon": 30,
        "weight_max": 10, "epsilon": 1, "delta": 1e-5}
CALL = "SELECT dp_is_value(episode, t, reward, behavior, target, ?) FROM log"
KEYS = ["diagnostics", "effective_episodes", "clipped_share", "weight_square_sum", "clipped",
        "sigma_weight_square_sum", "sigma_clipped"]


def clinical():
    con = connect()
    for f in ("model.sql", "log.sql", "rules.sql"):
        con.executescript(open(os.path.join(SAMPLE, f)).read())
    con.execute("CREATE TEMP VIEW log AS SELECT s.episode, s.t, s.reward, s.propensity AS behavior, "
                "p.prob AS target FROM steps s JOIN policies p ON p.state = s.state AND "
                "p.action = s.action AND p.rule = 'new_rule'")
    return con


def release(con, o):
    return json.loads(con.execute(CALL, (json.dumps(o),)).fetchone()[0])


def test_unchanged_and_keys():
    con = clinical()
    a = con.execute(CALL, (json.dumps(dict(BASE, seed=3)),)).fetchone()[0]
    b = con.execute(CALL, (json.dumps(dict(BASE, seed=3, diagnostics=0)),)).fetchone()[0]
    check(a == b and not any(k in json.loads(a) for k in KEYS),
          "diagnostics 0: the same bytes as without the option, no new key")
    d = release(con, dict(BASE, diagnostics=0.25))
    check(all(k in d for k in KEYS) and len(d["released"]) == 5 and d["private"] is True,
          "diagnostics 0.25: its keys, five released numbers, private", sorted(d))
    r = d["released"]
    B, W = BASE["gmax"] - BASE["gmin"], BASE["weight_max"]
    k2, kc = math.sqrt(0.125) * B / W, math.sqrt(0.125) * W * B
    T2, clipped = r[3] / k2, r[4] / kc
    ess = min(max(d["weight_sum"] ** 2 / T2, 0), d["episodes"])
    check(abs(d["weight_square_sum"] - T2) <= 1e-9 * abs(T2) and abs(d["clipped"] - clipped) <= 1e-9 * abs(clipped)
          and abs(d["effective_episodes"] - ess) <= 1e-9 * ess
          and abs(d["clipped_share"] - min(max(clipped / d["episodes"], 0), 1)) <= 1e-12,
          "effective_episodes and clipped_share are computed from the released numbers only")
    plain = release(con, dict(BASE, seed=1))
    check(abs(d["sigma"] / plain["sigma"] - math.sqrt(1.25)) < 1e-3 and
          abs(d["sensitivity"] / plain["sensitivity"] - math.sqrt(1.25)) < 1e-4,
          "sigma and the sensitivity grow by sqrt(1 + s)", (d["sigma"], plain["sigma"]))
    plan = json.loads(con.execute("SELECT dp_plan(?)", (json.dumps(dict(
        BASE, mechanism="dp_is_value", episodes=20000, diagnostics=0.25)),)).fetchone()[0])
    check(plan["sigma"] == d["sigma"], "dp_plan's sigma with the diagnostics is the release's")
    for bad, got in ((1.5, "1.5"), (-0.1, "-0.1")):
        check_error(con, CALL, f"dp_is_value: option diagnostics must be in [0, 1], got {got}",
                    f"diagnostics {bad}", (json.dumps(dict(BASE, diagnostics=bad)),))


def test_accuracy():
    con = clinical()
    ex = release(con, dict(BASE, release="diagnostic"))["exact"]
    exact_t2 = ex["weight_sum"] ** 2 / ex["effective_episodes"]
    worst_t2 = worst_c = 0.0
    errs = []
    for seed in range(sized(20, 6)):
        d = release(con, dict(BASE, seed=seed, diagnostics=0.25))
        worst_t2 = max(worst_t2, abs(d["weight_square_sum"] - exact_t2) / d["sigma_weight_square_sum"])
        worst_c = max(worst_c, abs(d["clipped"] - ex["clipped"]) / d["sigma_clipped"])
        # the delta method: ESS = T^2 / T2 has relative sd sqrt((2 sd_T / T)^2 + (sd_T2 / T2)^2)
        rel = math.hypot(2 * d["sigma_weight_sum"] / ex["weight_sum"], d["sigma_weight_square_sum"] / exact_t2)
        errs.append(abs(d["effective_episodes"] - ex["effective_episodes"]) / ex["effective_episodes"] / rel)
    check(worst_t2 <= 5 and worst_c <= 5,
          "the released sum of squared weights and clipped count: within 5 sd of the exact ones",
          (worst_t2, worst_c))
    check(max(errs) <= 5, "effective_episodes within 5 of its delta-method sd of the exact one "
          f"(largest {max(errs):.2f} sd)", (ex["effective_episodes"], errs))


def small_log(seed, episodes):
    rnd = random.Random(seed)
    rows = []
    for e in range(episodes):
        for t in range(rnd.randint(1, 3)):
            rows.append((e, t, rnd.uniform(-1, 1), rnd.choice([0.5, 0.9, 1.0]), rnd.choice([0.3, 0.5, 1.0])))
    return rows


def test_attack():
    o = dict(BASE, epsilon=4, weight_max=5, diagnostics=1)
    rows = small_log(5, 20)
    worst = [("intruder", t, 1.0, 0.1, 1.0) for t in (0, 1)]  # w = 100 -> W (clipped), G = gmax
    cons = []
    for rs in (rows, rows + worst):
        con = connect()
        con.execute("CREATE TABLE log(episode, t, reward, behavior, target)")
        con.executemany("INSERT INTO log VALUES (?, ?, ?, ?, ?)", rs)
        cons.append(con)
    # the exact vectors: the seeded releases' means, known from the exact sums
    B, W, s = 2.0, 5.0, 1.0
    k2, kc = math.sqrt(s / 2) * B / W, math.sqrt(s / 2) * W * B

    def vec(con):
        e = release(con, dict(o, release="diagnostic"))["exact"]
        t2 = e["weight_sum"] ** 2 / e["effective_episodes"] if e["effective_episodes"] else 0.0
        return [e["weighted_return_sum"] - 0 * e["weight_sum"], B / math.sqrt(2) * e["weight_sum"],
                W * B / 2 * e["episodes"], k2 * t2, kc * e["clipped"]]
    vx, vy = vec(cons[0]), vec(cons[1])
    d = [b - a for a, b in zip(vx, vy)]
    norm = math.sqrt(sum(x * x for x in d))
    claim = release(cons[0], dict(o, seed=0))
    check(abs(norm - W * B * math.sqrt(1 + s)) < 1e-9 * norm,
          "the intruder moves the exact vector by W B sqrt(1 + s)", norm)
    n = sized(300, 150)
    zs = []
    for con, base in ((cons[0], 0), (cons[1], 100000)):
        zs.append([sum((r - v) * di for r, v, di in zip(release(con, dict(o, seed=base + k))["released"], vx, d))
                   / norm / claim["sigma"] for k in range(n)])
    mx, my = sum(zs[0]) / n, sum(zs[1]) / n
    sd = math.sqrt((sum((z - mx) ** 2 for z in zs[0]) + sum((z - my) ** 2 for z in zs[1])) / (2 * n - 2))
    mu_hat, mu = (my - mx) / sd, claim["sensitivity"] / claim["sigma"]
    margin = 4 * math.sqrt(2 / n)
    check(mu_hat <= mu + margin, f"the attack separates by {mu_hat:.3f}, at most the claimed mu "
          f"{mu:.3f} (+ {margin:.3f} for {n} draws a side)")
    check(mu_hat >= mu - margin, "and it finds the shift (the test has power)", (mu_hat, mu))


def test_return_range():
    con = clinical()
    o = {k: v for k, v in BASE.items() if k not in ("gmin", "gmax")}
    d, g = release(con, dict(o, seed=1)), release(con, dict(BASE, seed=1))
    check(d["return_range"] == "from rmin, rmax and horizon" and [d["gmin"], d["gmax"]] == [-30, 30]
          and g["return_range"] == "given", "return_range: given, or from rmin, rmax and horizon")
    plan = lambda x: json.loads(con.execute("SELECT dp_plan(?)", (json.dumps(dict(
        x, mechanism="dp_is_value", episodes=20000)),)).fetchone()[0])
    p, q = plan(o), plan(BASE)
    check(p["note"] == "the return range [-30, 30] allows a reward in [rmin, rmax] at every one of "
          "the 30 steps; if the returns are narrower (a reward only at the end: an outcome), state "
          "gmin and gmax: the noise is proportional to gmax - gmin" and "note" not in q
          and abs(p["predicted_error"] / q["predicted_error"] - 30) < 0.5,
          "dp_plan notes the default range (30 times the noise here), not a given one",
          (p.get("note"), p["predicted_error"], q["predicted_error"]))


run([test_unchanged_and_keys, test_accuracy, test_attack, test_return_range])
