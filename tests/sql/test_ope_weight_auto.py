"""dp_is_value's "weight_max": "auto" (the default; ALGORITHMS.md §15.8):
the public grid of weights against a formula computed here; W chosen from
the released histogram by the stated rule; the histogram's counts against
the episodes' weights computed here (its mean over seeded releases) and
its noise scale; the release at W exactly as one given that W; the
calibration within rho* beside the histogram; an attack on neighbouring
logs (one added heavy episode) whose advantage is that of the histogram's
discrete Gaussian; the ledger charged rho*; dp_plan; the errors."""
import json
import math
import random

from harness import check, check_error, connect, run

CALL = "SELECT dp_is_value(episode, t, reward, behavior, target, ?) FROM log"
BASE = {"gamma": 1, "rmin": 0, "rmax": 1, "gmin": 0, "gmax": 3, "horizon": 3, "epsilon": 1,
        "delta": 1e-5}


def log_rows(n, seed, heavy=0):
    """n episodes of 3 steps, behaviour 1/2 per action, target 0.8 / 0.2:
    weights 1.6^k 0.4^(3-k); heavy extra episodes of weight 2^10 (the top)."""
    rng = random.Random(seed)
    rows = []
    for e in range(n):
        for t in range(3):
            a = rng.random() < 0.5
            rows.append((e, t, rng.choice([0, 0.5, 1]), 0.5, 0.8 if a else 0.2))
    for h in range(heavy):
        rows += [(f"heavy{h}", t, 1.0, 2 ** -10 / 3, 1.0) if t == 0 else (f"heavy{h}", t, 1.0, 1.0, 1.0)
                 for t in range(3)]
    return rows


def log_con(rows):
    con = connect()
    con.execute("CREATE TABLE log(episode, t, reward, behavior, target)")
    con.executemany("INSERT INTO log VALUES (?, ?, ?, ?, ?)", rows)
    return con


def release(con, **kw):
    return json.loads(con.execute(CALL, (json.dumps(dict(BASE, **kw)),)).fetchone()[0])


def edges(top=1024.0):
    K = math.floor(4 * math.log2(top)) + 1
    return [top * 2 ** ((j + 1 - K) / 4) for j in range(K - 1)] + [top]


def weights(rows):
    w = {}
    for e, _t, _r, b, p in rows:
        w[e] = w.get(e, 1.0) * p / b
    return list(w.values())


def pick(hist, q):
    n, above, j = sum(hist), 0.0, len(hist) - 1
    if n > 0:
        while j > 0 and above + hist[j] <= (1 - q) * n:
            above += hist[j]
            j -= 1
    return j, (min(1, max(0, above / n)) if n > 0 else None)


def test_grid_and_choice():
    con = log_con(log_rows(2000, 1))
    for q in (0.5, 0.9, 1.0):
        m = release(con, seed=2, weight_quantile=q)
        e = edges()
        check(m["weight_from"] == "auto" and len(m["weight_edges"]) == len(e)
              and all(abs(a - b) <= 1e-15 * b for a, b in zip(m["weight_edges"], e)),
              "the grid is 2^10 2^((j + 1 - K)/4), K = 41", m["weight_edges"])
        j, share = pick(m["weight_histogram"], q)
        check(m["weight_max"] == e[j] and abs(m["weight_clipped_share"] - share) < 1e-12,
              f"q {q}: W is the rule's edge of the released histogram", (m["weight_max"], j))
        s = m["weight_sigma"]
        check(s == math.ceil(1 / math.sqrt(0.1 * m["rho"])) and 1 / s ** 2 <= m["weight_rho"] <= (1 + 1e-14) / s ** 2,
              "the histogram's scale ceil(1/sqrt(share rho*)) and its rho 2/(2 s^2)", m)
    m = release(con, seed=3, ratio_max=1.6)
    check(abs(m["weight_edges"][-1] - 1.6 ** 3) < 1e-12 and m["weight_max"] <= 1.6 ** 3 * (1 + 1e-15),
          "with ratio_max the grid's top is ratio_max^H", m["weight_edges"][-1])


def test_calibration():
    """The release at W takes the smallest discrete Gaussian scale whose
    rho fits rho* beside the histogram's: the grid read back from sigma and
    the reported sensitivity."""
    con = log_con(log_rows(500, 2))
    m = release(con, seed=4)
    # sensitivity = W B + sqrt(3) g (the three entries' rounding to the grid g)
    g = 2.0 ** round(math.log2((m["sensitivity"] - m["weight_max"] * 3) / math.sqrt(3)))
    k, steps = m["sensitivity"] / g, m["sigma"] / g
    used = m["weight_rho"] + k * k / (2 * steps * steps)
    fewer = m["weight_rho"] + k * k / (2 * (steps - 1) ** 2)
    check(steps == round(steps) and used <= m["rho"] * (1 + 1e-15) and fewer > m["rho"],
          "the smallest scale whose rho fits rho* beside the histogram", (used, fewer, m["rho"], steps))
    check(abs(m["sensitivity"] - m["weight_max"] * 3) < 1e-3 * m["sensitivity"] and m["sensitivity"] >= m["weight_max"] * 3,
          "the sensitivity is W B (plus the grid's rounding) at the chosen W", m)


def test_histogram_law():
    # and 100 episodes of weight 0 (an action the target never takes): in no bin
    rows = log_rows(300, 3) + [(f"zero{i}", t, 1.0, 0.5, 0.0 if t == 1 else 1.0)
                               for i in range(100) for t in range(3)]
    con = log_con(rows)
    e = edges()
    exact = [0] * len(e)
    for w in weights(rows):
        if w > 0:
            exact[next((j for j, b in enumerate(e) if w <= b), len(e) - 1)] += 1
    check(sum(exact) == 300, "300 episodes of positive weight, 100 of weight 0")
    runs = 300
    hs = [release(con, seed=100 + i)["weight_histogram"] for i in range(runs)]
    s = release(con, seed=1)["weight_sigma"]
    worst = max(abs(sum(h[j] for h in hs) / runs - exact[j]) / (s / math.sqrt(runs)) for j in range(len(e)))
    check(worst < 4.5, "the histogram's mean over 300 releases is the bins of the positive weights "
          "computed here (within 4.5 standard errors in every bin)", (worst, exact))
    var = sum((h[j] - exact[j]) ** 2 for h in hs for j in range(len(e))) / (runs * len(e))
    df = runs * len(e)
    check(abs(var / s ** 2 - 1) < 4.5 * math.sqrt(2 / df), "its noise has variance s^2", (var, s * s))


def test_same_as_given():
    con = log_con(log_rows(1000, 4))
    a = release(con, seed=5, release="diagnostic", weight_quantile=0.5)
    b = release(con, seed=5, release="diagnostic", weight_max=a["weight_max"])
    check(a["exact"] == b["exact"] and b["weight_from"] == "given",
          "the exact statistics under the chosen W are those of a release given that W", (a["exact"], b["exact"]))
    ws = weights(log_rows(1000, 4))
    clipped = sum(w > a["weight_max"] for w in ws)
    check(a["exact"]["clipped"] == clipped and clipped > 0,
          "the chosen W clips the episodes above it (counted here)", (a["exact"]["clipped"], clipped))


def test_attack():
    """Neighbouring logs: D, 60 episodes of weight at most 4.1; D' = D and
    one episode of weight 2^10 (the top bin).  'The top bin's noisy count
    is > 0.5' tells them apart with advantage P[Z = 0] for the discrete
    Gaussian Z of scale s, no more."""
    runs = 3000
    hits = []
    for heavy in (0, 1):
        con = log_con(log_rows(60, 6, heavy))
        top = [release(con, seed=1000 + i, epsilon=8)["weight_histogram"][-1] for i in range(runs)]
        hits.append(sum(x > 0.5 for x in top) / runs)
        s = release(con, seed=1, epsilon=8)["weight_sigma"]
    adv = hits[1] - hits[0]
    w = [math.exp(-k * k / (2 * s * s)) for k in range(-40 * s, 40 * s + 1)]
    p0 = 1 / sum(w)
    se = math.sqrt(2 * 0.25 / runs)
    check(abs(adv - p0) < 4.5 * se, "the added episode is detected with the advantage the noise allows, "
          f"P[Z = 0] = {p0:.3f} for scale {s}", (adv, p0, se))


def test_ledger_and_plan():
    con = log_con(log_rows(50, 7))
    con.isolation_level = None
    con.execute("SELECT dprl_budget('b', 10, 1e-3, '{\"unit\": \"episode\", \"accountant\": \"zcdp\", "
                "\"in_memory\": true}')")
    m = release(con, budget="b")
    rho = con.execute("SELECT total(rho) FROM dprl_ledger WHERE budget = 'b'").fetchone()[0]
    check(m["weight_quantile"] == 0.75 and m["weight_share"] == 0.1 and m["weight_from"] == "auto",
          "the default: auto, quantile 0.75, share 0.1", m)
    check(m["private"] is True and "seeded" not in m and rho == m["rho"],
          "a private release is charged its rho*, whatever W", (rho, m["rho"]))
    p = json.loads(con.execute("SELECT dp_plan(?)", (json.dumps(dict(BASE, mechanism="dp_is_value", episodes=50)),)).fetchone()[0])
    check(p["weight_from"] == "auto" and p["weight_max"] == 1024 and p["rho"] == m["rho"]
          and "weight_histogram" not in p,
          "dp_plan: the grid's top (the most noise), the same rho*, no histogram", p)


def test_errors():
    con = log_con(log_rows(5, 8))
    for kw, msg in (({"weight_max": "big"}, "dp_is_value: option weight_max must be a number in [1, 10^12] "
                     "(a public bound on an episode's importance weight) or \"auto\" (chosen privately), got \"big\""),
                    ({"weight_max": 3, "weight_share": 0.2}, "dp_is_value: options weight_quantile and weight_share "
                     "apply to \"weight_max\": \"auto\""),
                    ({"weight_quantile": 0}, "dp_is_value: option weight_quantile must be in (0, 1], got 0"),
                    ({"weight_share": 1}, "dp_is_value: option weight_share must be in (0, 1), got 1")):
        check_error(con, CALL, msg, msg.split(": ", 1)[1][:60], (json.dumps(dict(BASE, **kw)),))
    check(con.execute(CALL + " WHERE 0", (json.dumps(BASE),)).fetchone()[0] is None, "no rows: NULL")


run([test_grid_and_choice, test_calibration, test_histogram_law, test_same_as_given, test_attack,
     test_ledger_and_plan, test_errors])
