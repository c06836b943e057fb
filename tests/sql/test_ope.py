"""dp_is_value (ext/ope/, ALGORITHMS.md section 15): clipped-weight
importance sampling of a target policy from logged propensities, private
per episode.

- The exact (diagnostic) estimates equal an independent Python computation
  of clipped IS, on the clinical sample and on a small log with text keys,
  rows out of order, discounting, a horizon and rewards outside the range.
- Seeded releases are reproducible and say they are not private.
- Bad rows and options give errors naming the argument and the value.
- A budget is charged once, unit episode, for a GROUP BY over a partition
  of the episodes, with the release's rho.
- A neighbouring-episode attack over seeded draws separates the two logs
  by no more than the claimed mu = sensitivity / sigma."""
import json
import math
import os
import random
import sqlite3
import sys
import tempfile

from harness import check, check_error, connect, normal_cdf, run, sql_error

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SAMPLE = os.path.join(ROOT, "samples", "clinical")

BASE = {"gamma": 1, "rmin": -1, "rmax": 1, "gmin": -1, "gmax": 1, "horizon": 30,
        "weight_max": 10, "epsilon": 1, "delta": 1e-5}
CALL = "SELECT dp_is_value(episode, t, reward, behavior, target, ?) FROM log"


def clinical():
    con = connect()
    for f in ("model.sql", "log.sql", "rules.sql"):
        con.executescript(open(os.path.join(SAMPLE, f)).read())
    return con


def clipped_is(episodes, o):
    """Independent clipped IS: episodes = {key: [(t, r, b, p)]}."""
    lo = o.get("gmin")
    hi = o.get("gmax")
    h, g, W = o["horizon"], o["gamma"], o["weight_max"]
    if lo is None or hi is None:
        sh = h if g == 1 else (1 - g ** h) / (1 - g)
        lo = o["rmin"] * sh if o["rmin"] < 0 else o["rmin"]
        hi = o["rmax"] * sh if o["rmax"] > 0 else o["rmax"]
    swg = sw = 0.0
    for steps in episodes.values():
        steps = sorted(steps)[:h]
        w, ret = 1.0, 0.0
        for k, (_, r, b, p) in enumerate(steps):
            w *= p / b
            ret += g ** k * min(max(r, o["rmin"]), o["rmax"])
        w = min(w, W)
        ret = min(max(ret, lo), hi)
        swg += w * ret
        sw += w
    n = len(episodes)
    return swg / sw if sw > 0 else float("nan"), swg / n, sw, n


def release(con, sql, o, params=()):
    return json.loads(con.execute(sql, (json.dumps(o),) + tuple(params)).fetchone()[0])


def test_exact_on_clinical():
    con = clinical()
    con.execute("CREATE TEMP VIEW log AS SELECT s.episode, s.t, s.reward, "
                "s.propensity AS behavior, p.prob AS target, p.rule FROM steps s "
                "JOIN policies p ON p.state = s.state AND p.action = s.action")
    for rule in ("new_rule", "majority"):
        eps = {}
        for e, t, r, b, p in con.execute(
                "SELECT episode, t, reward, behavior, target FROM log WHERE rule = ?", (rule,)):
            eps.setdefault(e, []).append((t, r, b, p))
        for W in (10, 1000):
            o = dict(BASE, weight_max=W, release="diagnostic")
            got = release(con, CALL + " WHERE rule = ?", o, (rule,))
            wis, ois, sw, n = clipped_is(eps, o)
            ex = got["exact"]
            check(abs(ex["weighted"] - wis) < 1e-9 and abs(ex["ordinary"] - ois) < 1e-9
                  and abs(ex["weight_sum"] - sw) < 1e-9 * sw and ex["episodes"] == n == 20000,
                  f"{rule}, W = {W}: exact weighted {wis:.4f}, ordinary {ois:.4f} = independent",
                  f"{ex}\nwant {wis} {ois} {sw}")
            check(got["private"] is False and got["sigma"] > 0, "diagnostic: not private")
    # the logging clinician's own policy as target: every weight is 1, so
    # both estimators are the mean return of the log
    o = dict(BASE, release="diagnostic")
    got = release(con, "SELECT dp_is_value(episode, t, reward, propensity, propensity, ?) "
                       "FROM steps", o)
    mean = con.execute("SELECT avg(g) FROM (SELECT sum(reward) g FROM steps "
                       "GROUP BY episode)").fetchone()[0]
    ex = got["exact"]
    check(abs(ex["weighted"] - mean) < 1e-12 and abs(ex["ordinary"] - mean) < 1e-12
          and ex["clipped"] == 0 and ex["zero_weight"] == 0,
          "target = behavior: weights 1, the on-policy mean return", ex)


def small_log(seed=3, episodes=40):
    rnd = random.Random(seed)
    rows = []
    for e in range(episodes):
        key = f"patient-{e}" if e % 3 else e
        for t in rnd.sample(range(0, 50, 5), rnd.randint(1, 6)):
            b = rnd.choice([0.2, 0.5, 0.9, 1.0])
            p = rnd.choice([0.0, 0.5, 1.0, 0.3])
            rows.append((key, t, rnd.uniform(-3, 3), b, p))
    rnd.shuffle(rows)
    return rows


def log_con(rows):
    con = connect()
    con.execute("CREATE TABLE log(episode, t, reward, behavior, target)")
    con.executemany("INSERT INTO log VALUES (?, ?, ?, ?, ?)", rows)
    return con


def test_exact_small_log():
    rows = small_log()
    con = log_con(rows)
    eps = {}
    for k, t, r, b, p in rows:
        eps.setdefault(k, []).append((t, r, b, p))
    for o in (dict(gamma=0.9, rmin=-1, rmax=2, horizon=3, weight_max=4),
              dict(gamma=1, rmin=0, rmax=1, horizon=10, weight_max=1e6),
              dict(gamma=0.5, rmin=-2, rmax=2, gmin=-0.5, gmax=0.5, horizon=2, weight_max=2)):
        o.update(epsilon=1, delta=1e-5, release="diagnostic")
        ex = release(con, CALL, o)["exact"]
        wis, ois, sw, n = clipped_is(eps, o)
        check(abs(ex["weighted"] - wis) < 1e-12 and abs(ex["ordinary"] - ois) < 1e-12
              and ex["episodes"] == n,
              f"small log {o['gamma'], o['horizon'], o['weight_max']}: exact = independent "
              "(text keys, rows out of order, horizon, clamping)", f"{ex}\nwant {wis} {ois}")


def test_seeded():
    con = log_con(small_log())
    o = dict(BASE, seed=7)
    a, b = release(con, CALL, o), release(con, CALL, o)
    c = release(con, CALL, dict(BASE, seed=8))
    check(a == b and a != c, "the same seed, the same release; another seed, another")
    check(a["private"] is False and a["seeded"] is True and a["unit"] == "episode"
          and a["mechanism"] == "dp_is_value", "seeded: private false, seeded true", a)
    p = release(con, CALL, BASE)
    check(p["private"] is True and "seeded" not in p and "exact" not in p,
          "unseeded: private, no exact values")
    check(set(p) >= {"value", "values", "stderr", "stderrs", "sigma", "epsilon", "delta",
                     "weight_max", "bias_bound", "estimator", "sensitivity", "rho"},
          "the result's keys", sorted(p))
    check(p["value"] == p["values"]["weighted"] and p["estimator"] == "weighted",
          "weighted by default")
    q = release(con, CALL, dict(BASE, weighted=False, seed=7))
    check(q["value"] == q["values"]["ordinary"] and q["values"] == a["values"],
          "weighted false: the ordinary estimate, from the same draw")
    g = (p["sensitivity"] - 20) / math.sqrt(3)  # the grid: a power of two, about 2^20 below sigma
    check(g > 0 and abs(math.log2(g) - round(math.log2(g))) < 1e-6
          and p["sigma"] / 2 ** 21 < g <= p["sigma"] / 2 ** 19,
          "sensitivity W B + sqrt(3) g = 10 x 2 + the rounding to the grid", p["sensitivity"])
    r = release(con, CALL, dict(BASE, ratio_max=1.05, horizon=10, weight_max=2))
    check(r["bias_bound"] == 0, "ratio_max^H <= W: bias bound 0", r["bias_bound"])
    check(p["bias_bound"] is None, "no ratio_max: no bias bound")


def test_errors():
    con = log_con([(1, 0, 1.0, 0.5, 1.0)])
    o = json.dumps(BASE)

    def err(row, want, name):
        c = log_con([row])
        msg = sql_error(c, CALL, (o,))
        check(msg is not None and want in msg, name, msg)
    err((1, 0, 1.0, 0.0, 1.0), "behavior_prob must be in (0, 1]", "behavior_prob 0")
    err((1, 0, 1.0, 1.5, 1.0), "got 1.5 (row with episode 1, t 0)", "behavior_prob 1.5, where")
    err((1, 0, 1.0, None, 1.0), "behavior_prob must be a number, got NULL", "behavior_prob NULL")
    err((1, 0, 1.0, 0.5, -0.1), "target_prob must be in [0, 1]", "target_prob -0.1")
    err((1, 0, 1.0, 0.5, "x"), "target_prob must be a number, got text 'x'", "target_prob text")
    err((1, 0.5, 1.0, 0.5, 1), "t must be an integer, got 0.5", "t not an integer")
    err((None, 0, 1.0, 0.5, 1), "episode must be an integer or text, got NULL", "episode NULL")
    c = log_con([(1, 0, 1.0, 0.5, 1.0), (1, 0, 0.0, 0.5, 1.0)])
    msg = sql_error(c, CALL, (o,))
    check(msg is not None and "duplicate (episode, t): episode 1 has two rows with t = 0" in msg,
          "a duplicate (episode, t)", msg)
    for key in ("horizon", "gamma", "epsilon", "delta", "rmin"):
        bad = {k: v for k, v in BASE.items() if k != key}
        msg = sql_error(con, CALL, (json.dumps(bad),))
        check(msg is not None and f"option {key} is required" in msg, f"{key} required", msg)
    check_error(con, CALL.replace("?", "'{\"gamma\": 1, \"rmin\": 0, \"rmax\": 1, \"horizon\": 3, "
                                  "\"weight_max\": 10, \"epsilon\": 1, \"delta\": 1e-5, "
                                  "\"epsilon_\": 1}'"),
                'dp_is_value: unknown option "epsilon_" (known: gamma, rmin, rmax, gmin, gmax, '
                "weight_max, horizon, epsilon, delta, weighted, ratio_max, diagnostics, seed, release, "
                "budget, weight_quantile, weight_share)", "an unknown option")
    msg = sql_error(con, CALL, (json.dumps(dict(BASE, gmin=1, gmax=0)),))
    check(msg is not None and "gmax > gmin, got [1, 0]" in msg, "an empty return range", msg)
    msg = sql_error(con, CALL, (json.dumps(dict(BASE, weight_max=0.5)),))
    check(msg is not None and "option weight_max must be in [1, 1e+12], got 0.5" in msg,
          "weight_max below 1", msg)
    check(con.execute("SELECT dp_is_value(episode, t, reward, behavior, target, ?) FROM log "
                      "WHERE 0", (o,)).fetchone()[0] is None, "no rows: NULL")


def test_budget_once():
    f = os.path.join(tempfile.mkdtemp(), "ledger.db")
    con = connect(f)
    con.isolation_level = None
    con.execute("PRAGMA journal_mode = wal")
    rows = small_log(episodes=60)
    con.execute("CREATE TABLE log(episode, t, reward, behavior, target, g)")
    # keys of one type: groups that mix integer and text keys are refused
    con.executemany("INSERT INTO log VALUES (?, ?, ?, ?, ?, ?)",
                    [(str(r[0]),) + r[1:] + (hash(str(r[0])) % 4,) for r in rows])
    con.execute("SELECT dprl_budget('study', 3, 1e-5, '{\"unit\": \"episode\"}')").fetchone()
    o = json.dumps(dict(BASE, budget="study"))
    got = con.execute("SELECT g, dp_is_value(episode, t, reward, behavior, target, ?) "
                      "FROM log GROUP BY g", (o,)).fetchall()
    led = sqlite3.connect(f).execute("SELECT count(*), total(epsilon), max(function), max(rho) "
                                     "FROM dprl_ledger WHERE budget = 'study'").fetchone()
    rho = json.loads(got[0][1])["rho"]
    check(len(got) == 4 and led[0] == 1 and led[1] == 1 and led[2] == "dp_is_value"
          and abs(led[3] - rho) < 1e-12 * rho,
          "GROUP BY over a partition of the episodes: one ledger row, with the release's rho",
          f"{len(got)} {led} {rho}")
    con.execute("SELECT dprl_budget('experts', 3, 1e-5, '{\"unit\": \"expert\"}')").fetchone()
    msg = sql_error(con, "SELECT dp_is_value(episode, t, reward, behavior, target, ?) FROM log",
                    (json.dumps(dict(BASE, budget="experts")),))
    check(msg is not None and "episode" in msg and "expert" in msg,
          "its unit is the episode: an expert-level budget refuses it", msg)
    lo, hi = 0.01, 100.0  # the analytic Gaussian for sensitivity 1 at (1, 1e-5)
    for _ in range(200):
        mid = (lo + hi) / 2
        dl = normal_cdf(1 / (2 * mid) - mid) - math.e * normal_cdf(-1 / (2 * mid) - mid)
        lo, hi = (lo, mid) if dl <= 1e-5 else (mid, hi)
    check(rho <= 1 / (2 * hi ** 2) and rho > 0.999 / (2 * hi ** 2),
          "rho = 1 / (2 sigma1^2), less the rounding up of the scale", f"{rho} {1 / (2 * hi ** 2)}")
    msg = sql_error(con, "SELECT dp_is_value(episode, t, reward, behavior, target, ?) FROM log",
                    (json.dumps(dict(BASE, budget="study", seed=1)),))
    check(msg is not None and "seed" in msg, "a seeded release under a budget: refused", msg)
    msg = sql_error(con, "SELECT t, dp_is_value(episode, t, reward, behavior, target, ?) "
                         "FROM log GROUP BY t", (o,))
    check(msg is not None and "two groups" in msg, "GROUP BY t (not a partition): refused", msg)


def vector(ex, o):
    """The released vector of section 15 from the exact sums."""
    B = o["gmax"] - o["gmin"]
    c = o["gmin"] + B / 2
    W = o["weight_max"]
    return [ex["weighted_return_sum"] - c * ex["weight_sum"], B / math.sqrt(2) * ex["weight_sum"],
            W * B / 2 * ex["episodes"]]


def test_attack():
    # X: 20 episodes; X': X and one episode of weight W and return gmax, the
    # worst case of section 15.2.  The best test for a Gaussian shift
    # projects the release on the difference; its separation over seeded
    # draws must not exceed the claimed mu.
    rows = small_log(seed=5, episodes=20)
    worst = [("intruder", t, 1.0, 0.1, 1.0) for t in (0, 1)]  # w = 100 -> W, G = 2 -> gmax
    o = dict(BASE, epsilon=4, weight_max=5)
    cx, cy = log_con(rows), log_con(rows + worst)
    vx = vector(release(cx, CALL, dict(o, release="diagnostic"))["exact"], o)
    vy = vector(release(cy, CALL, dict(o, release="diagnostic"))["exact"], o)
    d = [b - a for a, b in zip(vx, vy)]
    norm = math.sqrt(sum(x * x for x in d))
    claim = release(cx, CALL, dict(o, seed=0))
    mu_claimed = claim["sensitivity"] / claim["sigma"]
    check(abs(norm - o["weight_max"] * 2) < 1e-9 * norm,
          "the intruder moves the exact vector by W B", f"{norm}")
    n = 300
    zs = {}
    for name, con, base in (("x", cx, 0), ("y", cy, 100000)):
        zs[name] = []
        for s in range(n):
            r = release(con, CALL, dict(o, seed=base + s))["released"]
            zs[name].append(sum((r[i] - vx[i]) * d[i] for i in range(3)) / norm / claim["sigma"])
    mx, my = sum(zs["x"]) / n, sum(zs["y"]) / n
    sd = math.sqrt((sum((z - mx) ** 2 for z in zs["x"]) + sum((z - my) ** 2 for z in zs["y"]))
                   / (2 * n - 2))
    mu_hat = (my - mx) / sd
    margin = 4 * math.sqrt(2 / n)
    check(mu_hat <= mu_claimed + margin,
          f"the attack separates by {mu_hat:.3f}, at most the claimed mu {mu_claimed:.3f} "
          f"(+ {margin:.3f} for {n} draws a side)")
    check(mu_hat >= mu_claimed - margin, "and the attack does find the shift (the test has power)",
          f"{mu_hat} {mu_claimed}")
    check(abs(sd - 1) < 5 / math.sqrt(2 * n), "the noise along the difference has sd sigma", sd)


def test_sensitivity_reported():
    # The reported sensitivity is the calibrated one: W B plus the rounding
    # to the grid (sqrt(3) g), the figure sigma and rho are computed from.
    # Two logs apart by the worst episode, released with one seed, differ by
    # exactly the movement of their rounded vectors: over base logs it goes
    # past W B, and never past the reported figure.
    o = dict(BASE, epsilon=4, weight_max=5)
    worst = [("intruder", t, 1.0, 0.1, 1.0) for t in (0, 1)]
    most, claim = 0.0, None
    for seed in range(40):
        rows = small_log(seed=100 + seed, episodes=20)
        cx, cy = log_con(rows), log_con(rows + worst)
        rx, ry = (release(c, CALL, dict(o, seed=7)) for c in (cx, cy))
        claim = rx
        most = max(most, math.sqrt(sum((b - a) ** 2 for a, b in zip(rx["released"], ry["released"]))))
    wb = o["weight_max"] * 2
    sens = claim["sensitivity"]
    check(most > wb and most <= sens,
          "the rounded vectors move past W B, within the reported sensitivity", f"{most} {wb} {sens}")
    check(abs(claim["rho"] - (sens / claim["sigma"]) ** 2 / 2) <= 1e-12 * claim["rho"],
          "rho = (sensitivity / sigma)^2 / 2: the reported figure is the calibrated one",
          f"{claim['rho']} {sens} {claim['sigma']}")
    plan = json.loads(connect().execute("SELECT dp_plan(?)", (json.dumps(
        {"mechanism": "dp_is_value", "episodes": 1000, **{k: v for k, v in o.items()}}),)).fetchone()[0])
    check(plan.get("sensitivity") == sens, "dp_plan reports the same figure", plan)


run([test_exact_on_clinical, test_exact_small_log, test_seeded, test_errors, test_budget_once,
     test_attack, test_sensitivity_reported])
