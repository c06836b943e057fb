"""dp_mdp's "clip": "auto" (ALGORITHMS.md §13.6): the public grid of clips
and the calibration against formulas computed here; C chosen from the
released histogram by the stated rule; the histogram's counts against the
episodes' norms computed here (its mean over seeded releases) and its
noise scale; the release made at C exactly as a release with that clip;
an attack on neighbouring logs (one added long episode) whose advantage
is that of the histogram's discrete Gaussian; the ledger charged rho*;
the errors."""
import json
import math
import os
import random
import subprocess
import sys

from harness import check, check_error, connect, run, sql_error

MDP = "SELECT dp_mdp(episode, t, state, action, reward, ?) FROM steps"
S, A, H = 5, 2, 12
BASE = {"n_states": S, "n_actions": A, "gamma": 0.9, "rmin": -1, "rmax": 1, "epsilon": 1,
        "delta": 1e-5, "horizon": H, "clip": "auto"}


def episodes(n, seed):
    """n episodes of 1 to 30 steps (rewards in quarters: exact in ticks)."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        L, s, ep = rng.randint(1, 30), rng.randrange(S), []
        for _t in range(L):
            a = rng.randrange(A)
            ep.append((s, a, rng.choice([-1, -0.5, 0, 0.25, 1])))
            s = (s + a) % S if rng.random() < 0.7 else rng.randrange(S)
        out.append(ep)
    return out


def table(con, eps):
    con.execute("DROP TABLE IF EXISTS steps")
    con.execute("CREATE TABLE steps(episode, t, state, action, reward)")
    con.executemany("INSERT INTO steps VALUES (?, ?, ?, ?, ?)",
                    [(e, t, s, a, r) for e, ep in enumerate(eps) for t, (s, a, r) in enumerate(ep)])


def norm(ep, sparse=False):
    """One episode's l2 norm in count units (ALGORITHMS.md §13.1, §13.5):
    its first state, each counted step's next state or end, each counted
    step's reward (r - c)/b in its pair; sparse: the totals too."""
    v = {("start", ep[0][0]): 1.0}
    for i, (s, a, r) in enumerate(ep[:H]):
        nxt = ep[i + 1][0] if i + 1 < len(ep) else "end"
        v[("count", s, a, nxt)] = v.get(("count", s, a, nxt), 0) + 1
        v[("reward", s, a)] = v.get(("reward", s, a), 0) + r  # c = 0, b = 1
        if sparse:
            v[("total", s, a)] = v.get(("total", s, a), 0) + 1
    return math.sqrt(sum(x * x for x in v.values()))


def edges(sparse=False):
    top = math.sqrt(1 + (3 if sparse else 2) * H * H)
    K = math.floor(4 * math.log2(top)) + 1
    return [top * 2 ** ((j + 1 - K) / 4) for j in range(K - 1)] + [top]


def release(con, **kw):
    return json.loads(con.execute(MDP, (json.dumps(dict(BASE, **kw)),)).fetchone()[0])


def pick(hist, q):
    """The stated rule: the smallest edge with at most a noisy 1 - q of the
    noisy total above it, scanning down from the top."""
    n, above, j = sum(hist), 0.0, len(hist) - 1
    if n > 0:
        while j > 0 and above + hist[j] <= (1 - q) * n:
            above += hist[j]
            j -= 1
    return j, (min(1, max(0, above / n)) if n > 0 else None)


def test_grid_and_choice():
    con = connect()
    eps = episodes(400, 1)
    table(con, eps)
    for sparse in (False, True):
        for q in (0.5, 0.9, 1.0):
            m = release(con, seed=2, clip_quantile=q, **({"transitions": "sparse"} if sparse else {}))
            e = edges(sparse)
            check(len(m["clip_edges"]) == len(e) and all(abs(a - b) <= 1e-15 * b for a, b in zip(m["clip_edges"], e)),
                  f"sparse {sparse}: the grid is top 2^((j + 1 - K)/4), top the unclipped bound", m["clip_edges"])
            j, share = pick(m["clip_histogram"], q)
            check(m["clip"] == m["clip_edges"][j] and m["clip_from"] == "auto" and m["clip_quantile"] == q and
                  (share is None and m["clipped_share"] is None or abs(m["clipped_share"] - share) < 1e-12),
                  f"sparse {sparse}, q {q}: C is the rule's edge of the released histogram", (m["clip"], j))
            s = m["clip_sigma"]
            check(s == math.ceil(1 / math.sqrt(0.1 * m["rho"])) and 1 / s ** 2 <= m["clip_rho"] <= (1 + 1e-14) / s ** 2,
                  f"sparse {sparse}: the histogram's scale ceil(1/sqrt(share rho*)) and its rho 2/(2 s^2)", m)
            k, steps = m["sensitivity"] / m["grid"], m["sigma"] / m["grid"]
            used = m["clip_rho"] + k * k / (2 * steps * steps)
            fewer = m["clip_rho"] + k * k / (2 * (steps - 1) ** 2)
            check(used <= m["rho"] * (1 + 1e-15) and fewer > m["rho"],
                  f"sparse {sparse}: the release takes the smallest scale whose rho fits rho* beside the histogram",
                  (used, fewer, m["rho"]))
            bound = (math.sqrt(1 + 3 * H * H) if sparse else math.sqrt(1 + 2 * H * H))
            check(m["clip"] <= bound * (1 + 1e-15), "C is at most the unclipped bound")


def test_histogram_law():
    con = connect()
    eps = episodes(300, 3)
    table(con, eps)
    e = edges()
    exact = [0] * len(e)
    for ep in eps:
        x = norm(ep)
        exact[next((j for j, b in enumerate(e) if x <= b), len(e) - 1)] += 1
    runs = 300
    hs = [release(con, seed=100 + i)["clip_histogram"] for i in range(runs)]
    s = release(con, seed=1)["clip_sigma"]
    worst = max(abs(sum(h[j] for h in hs) / runs - exact[j]) / (s / math.sqrt(runs)) for j in range(len(e)))
    check(worst < 4.5, "the histogram's mean over 300 releases is the bins of the norms computed here "
          "(within 4.5 standard errors in every bin)", (worst, exact))
    var = sum((h[j] - exact[j]) ** 2 for h in hs for j in range(len(e))) / (runs * len(e))
    df = runs * len(e)
    check(abs(var / s ** 2 - 1) < 4.5 * math.sqrt(2 / df), "its noise has variance s^2 (discrete Gaussian of scale s)",
          (var, s * s))


def test_same_as_fixed():
    con = connect()
    table(con, episodes(400, 4))
    for kw in ({}, {"transitions": "sparse"}):
        a = release(con, seed=5, release="diagnostic", clip_quantile=0.5, **kw)
        o = dict(BASE, clip=a["clip"], seed=5, release="diagnostic", **kw)
        b = json.loads(con.execute(MDP, (json.dumps(o),)).fetchone()[0])
        keys = [k for k in a if k.startswith("exact_")] + ["clipped", "episodes"]
        check(all(a[k] == b[k] for k in keys),
              f"{kw or 'dense'}: the statistics under the chosen C are those of a release with that clip", keys)
        check(a["clipped"] > 0, "the clip binds on these episodes (quantile 0.5)", a["clipped"])


def test_attack():
    """Neighbouring logs: D, 60 one-step episodes; D' = D and one long
    episode in one state (norm at the top of the grid).  The test 'the
    top bin's noisy count is > 0.5' tells them apart with advantage
    P[Z = 0] for the discrete Gaussian Z of scale s, no more."""
    con = connect()
    short = [[(0, 0, 0.25)] for _ in range(60)]
    long_ = [[(1, 1, 1)] * H]
    runs = 3000
    o = {"epsilon": 8}
    hits = []
    for log in (short, short + long_):
        table(con, log)
        top = []
        for i in range(runs):
            m = release(con, seed=1000 + i, **o)
            top.append(m["clip_histogram"][-1])
        hits.append(sum(x > 0.5 for x in top) / runs)
        s = m["clip_sigma"]
    adv = hits[1] - hits[0]
    w = [math.exp(-k * k / (2 * s * s)) for k in range(-40 * s, 40 * s + 1)]
    p0 = 1 / sum(w)
    se = math.sqrt(2 * 0.25 / runs)
    check(abs(adv - p0) < 4.5 * se, "the added episode is detected with the advantage the noise allows, "
          f"P[Z = 0] = {p0:.3f} for scale {s}", (adv, p0, se))
    check(norm(long_[0]) > edges()[-2], "the long episode falls in the top bin")


def test_ledger_and_private():
    con = connect()
    table(con, episodes(50, 6))
    con.isolation_level = None
    con.execute("SELECT dprl_budget('b', 10, 1e-3, '{\"unit\": \"episode\", \"accountant\": \"zcdp\", \"in_memory\": true}')")
    m = release(con, budget="b")
    rho = con.execute("SELECT total(rho) FROM dprl_ledger WHERE budget = 'b'").fetchone()[0]
    check(m["clip_quantile"] == 0.5 and m["clip_share"] == 0.1, "defaults: quantile 0.5, share 0.1", m)
    check(m["private"] is True and "seeded" not in m and rho == m["rho"],
          "a private auto-clip release is charged its rho*, whatever C", (rho, m["rho"]))
    p = json.loads(con.execute("SELECT dp_plan(?)", (json.dumps(dict(BASE, mechanism="dp_mdp", episodes=50)),)).fetchone()[0])
    check(p["clip"] == "auto" and p["rho"] == m["rho"], "dp_plan: clip auto, the same rho*", p)


def test_errors():
    con = connect()
    table(con, episodes(5, 7))
    for kw, msg in (({"clip": "big"}, "dp_mdp: option clip must be a number > 0 (a public l2 bound on one episode's "
                     "contribution), \"auto\" (chosen privately) or \"none\", got \"big\""),
                    ({"horizon": None}, None),
                    ({"clip": 3, "clip_share": 0.2}, "dp_mdp: options clip_quantile and clip_share apply to "
                     "\"clip\": \"auto\""),
                    ({"clip_quantile": 0}, "dp_mdp: option clip_quantile must be in (0, 1], got 0"),
                    ({"clip_quantile": 1.5}, "dp_mdp: option clip_quantile must be in (0, 1], got 1.5"),
                    ({"clip_share": 1}, "dp_mdp: option clip_share must be in (0, 1), got 1")):
        o = dict(BASE, **kw)
        if kw == {"horizon": None}:
            del o["horizon"]
            msg = ("dp_mdp: option clip \"auto\" needs option horizon: its grid of clips runs up to the bound "
                   "the horizon sets on one episode's contribution")
        check_error(con, MDP, msg, msg.split(": ", 1)[1][:60], (json.dumps(o),))


def test_length_limit():
    """The grid and histogram of an automatic clip (up to 2 x 176 numbers)
    count in the result's length: a limit too small for them is refused
    from the options, before a row is read (and before any budget is
    charged), not after the release."""
    import sqlite3
    con = connect()
    table(con, episodes(5, 7))
    con.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, 4300)
    o = dict(BASE, n_states=1, n_actions=1, horizon=2 ** 40, transitions="sparse")
    con.execute("DROP TABLE steps")
    con.execute("CREATE TABLE steps(episode, t, state, action, reward)")
    con.executemany("INSERT INTO steps VALUES (?, ?, 0, 0, 0.5)", [(e, t) for e in range(5) for t in range(3)])
    msg = sql_error(con, MDP, (json.dumps(o),))
    check(msg is not None and "leave no room for a cell" in msg and "4300 bytes" in msg,
          "a length limit without room for the automatic clip's header: refused from the options", msg)
    fixed = dict(o, clip=3)
    check(sql_error(con, MDP, (json.dumps(fixed),)) is None,
          "the same limit takes the release with a fixed clip (no grid, no histogram)")


def test_defaults():
    """With a horizon and no clip option the release is the automatic one
    (the same bytes as "clip": "auto" for a seed); "none" is the horizon's
    bound alone; dp_plan plans the automatic clip; dp_mdp_value and
    dp_mdp_plan floor counts at 3 sigma of a clipped model, 0 otherwise,
    and a count_floor given wins."""
    con = connect()
    table(con, episodes(400, 6))
    bare = {k: v for k, v in BASE.items() if k != "clip"}
    text = lambda o: con.execute(MDP, (json.dumps(o),)).fetchone()[0]
    d, a = text(dict(bare, seed=3)), text(dict(BASE, seed=3))
    check(d == a and json.loads(d)["clip_from"] == "auto",
          "no clip option with a horizon: the automatic clip, byte for byte", d[:200])
    n = json.loads(text(dict(bare, seed=3, clip="none")))
    check(n["clip"] is None and "clip_from" not in n and n["sigma"] > json.loads(d)["sigma"],
          "\"clip\": \"none\": no clip, the larger sigma of the horizon's bound", (n["clip"], n["sigma"]))
    f = json.loads(text(dict(bare, seed=3, clip=4)))
    check(f["clip"] == 4 and "clip_from" not in f, "a number still wins")
    plan = lambda o: json.loads(con.execute("SELECT dp_plan(?)", (json.dumps(dict(
        o, mechanism="dp_mdp", episodes=400)),)).fetchone()[0])
    check(plan(bare)["clip"] == "auto" and plan(dict(bare, clip="none"))["clip"] is None,
          "dp_plan: the automatic clip by default, none when asked")
    pol = json.dumps([i % A for i in range(S)])
    for name, m, want in (("automatic clip", d, 3 * json.loads(d)["sigma"]),
                          ("clip 4", json.dumps(f), 3 * f["sigma"]), ("no clip", json.dumps(n), 0)):
        v = json.loads(con.execute("SELECT dp_mdp_value(?, ?, '{\"bootstrap\": 0}')", (m, pol)).fetchone()[0])
        p = json.loads(con.execute("SELECT dp_mdp_plan(?)", (m,)).fetchone()[0])
        g = json.loads(con.execute("SELECT dp_mdp_value(?, ?, '{\"bootstrap\": 0, \"count_floor\": 1.5}')",
                                   (m, pol)).fetchone()[0])
        check(v["count_floor"] == want and p["count_floor"] == want and g["count_floor"] == 1.5,
              f"{name}: the default count_floor is {'3 sigma' if want else '0'}; one given wins",
              (v["count_floor"], p.get("count_floor"), want))


def test_utility_quick():
    """tests/utility/clip_auto.py --quick (make utility's table) runs."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    p = subprocess.run([sys.executable, os.path.join(root, "tests", "utility", "clip_auto.py"), "--quick"],
                       capture_output=True, text=True, timeout=600, env=dict(os.environ))
    rows = [line for line in p.stdout.splitlines() if line.startswith("| ") and "auto q" not in line]
    check(p.returncode == 0 and len(rows) == 3 and all("(C " in r for r in rows),
          "clip_auto.py --quick: three tasks, each with its auto row", (p.returncode, p.stdout[-800:], p.stderr[-800:]))


def test_floors_quick():
    """tests/utility/floors.py --quick (make utility's count_floor table) runs."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    p = subprocess.run([sys.executable, os.path.join(root, "tests", "utility", "floors.py"), "--quick"],
                       capture_output=True, text=True, timeout=600, env=dict(os.environ))
    rows = [line for line in p.stdout.splitlines() if line.startswith("| clinical")]
    check(p.returncode == 0 and len(rows) == 3, "floors.py --quick: the clinical sample's three clips",
          (p.returncode, p.stdout[-800:], p.stderr[-800:]))


run([test_grid_and_choice, test_histogram_law, test_same_as_fixed, test_attack, test_ledger_and_private,
     test_errors, test_length_limit, test_defaults, test_utility_quick, test_floors_quick])
