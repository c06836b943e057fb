"""dp_mdp's sparse release (ALGORITHMS.md §13.5) and its evaluation
(§14.1): the keys of the result, the dense release's bytes unchanged
(hashes of releases made before the sparse layout existed), the "auto"
rule on public sizes, the errors with their exact messages, the ledger
charged a plain (epsilon, delta), the model reader's checks, the plan's
keys and its unknown mass from an independent formula, and dp_mdp_value /
dp_mdp_plan on a sparse release against an independent computation of
the same post-processing from the released numbers (pessimistic and
renormalise, discounted and over a horizon, terminal and censored)."""
import hashlib
import json
import math
import os
import random
import tempfile

from harness import check, check_close, check_error, connect, interrupted, run, sized, sql_error

MDP = "SELECT dp_mdp(episode, t, state, action, reward, ?) FROM steps"
BASE = {"n_states": 4, "n_actions": 2, "gamma": 0.9, "rmin": -1, "rmax": 1, "epsilon": 4,
        "delta": 1e-3, "horizon": 3, "transitions": "sparse", "clip": "none"}
HEADER = {"mechanism", "private", "unit", "neighbours", "n_states", "n_actions", "gamma", "rmin",
          "rmax", "epsilon", "delta", "horizon", "clip", "features", "sensitivity", "sigma",
          "reward_sigma", "reward_center", "grid", "rho"}
SPARSE = {"transitions", "threshold", "delta_threshold", "delta_gaussian", "cells_max",
          "cells_cut", "start", "totals", "ends", "reward_sums", "next"}
EXACT = {"episodes", "clipped", "touched_cells", "exact_start", "exact_totals", "exact_ends",
         "exact_reward_sums", "exact_next"}

# A small MDP: from each (s, a) two likely next states and a rare one (its
# cell falls under the threshold), and an end; rewards in [-1, 1].
S, A = 4, 2
TRANS = {}
for s in range(S):
    for a in range(A):
        TRANS[(s, a)] = [((s + 1 + a) % S, 0.55), ((s + 2) % S, 0.3), ((s + 3 + a) % S, 0.03),
                         (None, 0.12)]
REWARD = {(s, a): 0.5 - 0.3 * s + 0.4 * a for s in range(S) for a in range(A)}


def steps_log(n, seed=1):
    rnd = random.Random(seed)
    rows = []
    for e in range(n):
        s = rnd.randrange(2)
        for t in range(6):
            a = rnd.randrange(A) if s != 3 else 0  # (3, 1) is never visited
            r = REWARD[(s, a)] + rnd.uniform(-0.2, 0.2)
            rows.append((e, t, s, a, r))
            u, nxt = rnd.random(), None
            for k, p in TRANS[(s, a)]:
                if u < p:
                    nxt = k
                    break
                u -= p
            if nxt is None:
                break
            s = nxt
    return rows


def table(con, rows):
    con.execute("CREATE TABLE steps(episode, t, state, action, reward)")
    con.executemany("INSERT INTO steps VALUES (?, ?, ?, ?, ?)", rows)


def release(con, o):
    return json.loads(con.execute(MDP, (json.dumps(o),)).fetchone()[0])


def test_keys():
    con = connect()
    table(con, steps_log(400))
    d = release(con, dict(BASE))
    check(set(d) == HEADER | SPARSE and d["private"] is True and d["transitions"] == "sparse",
          "a private sparse release: the header, transitions, threshold, delta_threshold, "
          "delta_gaussian, cells_max, cells_cut, start, totals, ends, reward_sums, next",
          sorted(set(d) ^ (HEADER | SPARSE)))
    s = release(con, dict(BASE, seed=3))
    check(set(s) == HEADER | SPARSE | {"seeded"} and s["private"] is False, "seeded: seeded, not private")
    g = release(con, dict(BASE, seed=3, release="diagnostic"))
    check(set(g) == HEADER | SPARSE | {"seeded"} | EXACT, "diagnostic: the exact parts and touched_cells",
          sorted(set(g) ^ (HEADER | SPARSE | {"seeded"} | EXACT)))
    check(g["next"] == s["next"] and g["totals"] == s["totals"],
          "the diagnostic release's noisy parts are the seeded one's")
    cells = [tuple(c[:3]) for c in s["next"]]
    check(cells == sorted(set(cells)) and all(c[3] > s["threshold"] for c in s["next"]),
          "next: sorted by (s, a, s') without repeats, every count above the threshold")
    exact = {tuple(c[:3]): c[3] for c in g["exact_next"]}
    check(g["touched_cells"] == len(exact) and set(cells) <= set(exact)
          and all(v > 0 for v in exact.values()) and len(cells) < len(exact),
          "the kept cells are touched ones; some touched cells were dropped (below tau)",
          (len(cells), len(exact)))
    # the exact parts from the rows
    tot = [[0] * A for _ in range(S)]
    ends = [[0] * A for _ in range(S)]
    nxt = {}
    eps = {}
    for e, t, st, a, r in steps_log(400):
        eps.setdefault(e, []).append((t, st, a))
    for ep in eps.values():
        ep.sort()
        for i, (_, st, a) in enumerate(ep[:3]):
            tot[st][a] += 1
            if i + 1 < len(ep):
                k = (st, a, ep[i + 1][1])
                nxt[k] = nxt.get(k, 0) + 1
            else:
                ends[st][a] += 1
    check(g["exact_totals"] == tot and g["exact_ends"] == ends and exact == nxt,
          "exact totals, ends and cells: the first H steps of each episode, counted here")
    check(s["cells_max"] == S * A * S and s["cells_cut"] == 0, "cells_max = S A S; none cut")
    cut = release(con, dict(BASE, seed=3, max_cells=2))
    big = sorted(s["next"], key=lambda c: -c[3])[:2]
    check(cut["cells_max"] == 2 and cut["next"] == sorted(big) and
          cut["cells_cut"] == len(s["next"]) - 2,
          "max_cells 2: the two largest noisy counts of the same seed, sorted; cells_cut the rest")


# dp_mdp results of the build before the sparse layout, for these options
# on the rows of dense_rows (sha256 of the text)
DENSE_HASHES = [
    ({"n_states": 4, "n_actions": 2, "gamma": 0.9, "rmin": 0, "rmax": 1, "epsilon": 1, "delta": 1e-5,
      "horizon": 3, "clip": "none", "seed": 5}, "c084635bf495c2727253d8dd2ee5b129cdb54cae9d8a00fc7315b0af3c695a32"),
    ({"n_states": 40, "n_actions": 3, "gamma": 0.9, "rmin": 0, "rmax": 1, "epsilon": 1, "delta": 1e-5,
      "horizon": 3, "clip": "none", "seed": 5, "release": "diagnostic"},
     "b3bb7df3c3326c8f3a182f51815dd0fedad51b4ed8b59a56607b367cd8c5bb33"),
    ({"n_states": 4, "n_actions": 2, "gamma": 0.9, "rmin": 0, "rmax": 1, "epsilon": 1, "delta": 1e-5,
      "clip": 2, "seed": 9}, "01cc09b21fdb59e92036b5c747c4ccc30994902d34dba1ae6daed7760220a353"),
    ({"n_states": 50, "n_actions": 3, "gamma": 0.9, "rmin": 0, "rmax": 1, "epsilon": 1, "delta": 1e-5,
      "horizon": 3, "clip": "none", "seed": 5}, "8b3de16f3110680c914867e1d79432a5ce0997aad29eadb8e1728ad020799dce"),
]


def test_dense_unchanged():
    for o, want in DENSE_HASHES:
        con = connect()
        con.execute("CREATE TABLE steps(episode, t, state, action, reward)")
        con.executemany("INSERT INTO steps VALUES (?, ?, ?, ?, ?)",
                        [(e, t, (e * 7 + t * 3) % o["n_states"], (e + t) % o["n_actions"], (e % 5) / 4)
                         for e in range(200) for t in range(4)])
        for extra in ({}, {"transitions": "dense"}):
            text = con.execute(MDP, (json.dumps(dict(o, **extra)),)).fetchone()[0]
            check(hashlib.sha256(text.encode()).hexdigest() == want,
                  f"dense bytes unchanged: S = {o['n_states']} {sorted(extra) or 'auto'}")


def test_auto():
    con = connect()
    table(con, [(1, 0, 0, 0, 0.5), (1, 1, 1, 1, 0.5)])
    o = {"gamma": 0.9, "rmin": 0, "rmax": 1, "epsilon": 1, "delta": 1e-5, "seed": 1}
    # 31 states: 66 actions make 65472 count entries, 67 make 66464 > 65536
    for A_, more, sparse in ((66, {"horizon": 2}, False), (67, {"horizon": 2}, True),
                             (67, {"clip": 3}, False)):
        d = release(con, dict(o, n_states=31, n_actions=A_, **more))
        check(("transitions" in d) == sparse and ("counts" in d) == (not sparse),
              f"auto: 31 states x {A_} actions {sorted(more)}: {'sparse' if sparse else 'dense'}")


def test_errors():
    con = connect()
    table(con, [(1, 0, 0, 0, 0.5), (1, 1, 1, 1, 0.5)])
    o = {"n_states": 3, "n_actions": 2, "gamma": 0.9, "rmin": 0, "rmax": 1, "epsilon": 1, "delta": 1e-5,
         "clip": "none"}
    cases = [
        (dict(o, clip=2, transitions="sparse"),
         "dp_mdp: option transitions \"sparse\" needs option horizon: the threshold's delta counts "
         "the cells one episode can add, at most one per counted step"),
        (dict(o, horizon=2, transitions="thin"),
         "dp_mdp: option transitions must be one of \"auto\", \"dense\", \"sparse\", got \"thin\""),
        (dict(o, horizon=2, transitions="sparse", max_cells=0),
         "dp_mdp: option max_cells must be in [1, 18], got 0 (at most S A S = 18 cells)"),
        (dict(o, horizon=2, transitions="sparse", max_cells=2.5),
         "dp_mdp: option max_cells must be an integer, got 2.5"),
        (dict(o, horizon=2, max_cells=4),
         "dp_mdp: option max_cells applies to a sparse release, and this one is dense (transitions "
         "\"auto\" with S A (S + 1) at most 65536)"),
    ]
    for opt, want in cases:
        check_error(con, MDP, want, want[8:60], (json.dumps(opt),))
    con.setlimit(0, 1000000)  # SQLITE_LIMIT_LENGTH
    room = (1000000 - 4096 - (100 + 3 * 100 * 20) * 25) // 64  # beside the dense parts
    check_error(con, MDP, f"dp_mdp: option max_cells must be in [1, {room}], got 20000 (at most S A S "
                "= 200000 cells, and what fits this connection's SQLITE_LIMIT_LENGTH)",
                "max_cells above what the connection's length limit holds",
                (json.dumps(dict(o, n_states=100, n_actions=20, horizon=2, max_cells=20000)),))
    d = release(con, dict(o, n_states=100, n_actions=20, horizon=2, seed=1))
    check(d["cells_max"] == room, "the default max_cells: what fits the length limit", d["cells_max"])


def test_ledger():
    f = os.path.join(tempfile.mkdtemp(), "ledger.db")
    con = connect(f)
    con.isolation_level = None
    table(con, steps_log(100))
    con.execute("SELECT dprl_budget('icu', 10, 1e-2, '{\"unit\": \"episode\", \"accountant\": \"zcdp\"}')")
    d = release(con, dict(BASE, budget="icu"))
    row = con.execute("SELECT count(*), total(epsilon), total(delta), total(rho) FROM dprl_ledger "
                      "WHERE budget = 'icu'").fetchone()
    check(d["private"] and row == (1, 4.0, 1e-3, 0.0),
          "a sparse release is charged once as a plain (epsilon, delta), no rho", row)


def noise_floor2(sigma, t):
    """mean + 3 sd of the sum of two entries Z 1{Z > t}, Z ~ N(0, sigma^2)."""
    z = t / sigma
    phi = math.exp(-z * z / 2) / math.sqrt(2 * math.pi)
    q = 0.5 * math.erfc(z / math.sqrt(2))
    mean, var = sigma * phi, sigma * sigma * (z * phi + q) - (sigma * phi) ** 2
    return 2 * mean + 3 * math.sqrt(2 * var)


def estimate(m, renormalise=False, censored=False, t=0.0, min_count=None):
    """The sparse estimate of ALGORITHMS.md §14.1, written here: P[s][a] a
    dict of next states, r, u (the unknown mass), start, pessimistic pairs,
    unknown_mass."""
    S_, A_ = m["n_states"], m["n_actions"]
    if min_count is None:
        min_count = noise_floor2(m["sigma"], t)
    cells = {}
    for s, a, k, c in m["next"]:
        cells.setdefault((s, a), []).append((k, c))
    P = [[{} for _ in range(A_)] for _ in range(S_)]
    r = [[0.0] * A_ for _ in range(S_)]
    u = [[0.0] * A_ for _ in range(S_)]
    pess, weighted, visits = 0, 0.0, 0.0
    for s in range(S_):
        for a in range(A_):
            kept = [(k, c) for k, c in cells.get((s, a), []) if c > t]
            K = sum(c for _, c in kept)
            Tp = m["totals"][s][a] if m["totals"][s][a] > t else 0.0
            Ep = m["ends"][s][a] if m["ends"][s][a] > t else 0.0
            N = max(Tp, K + Ep)
            NP = max(Tp - Ep, K)
            norm = (K if renormalise else NP) if censored else (K + Ep if renormalise else N)
            if not (N > min_count) or not (norm > 0):
                pess += 1
                r[s][a] = m["rmin"]
                continue
            for k, c in kept:
                P[s][a][k] = c / norm
            share = (NP - K) / NP if censored else (N - K - Ep) / N
            weighted += N * share
            visits += N
            if not renormalise:
                u[s][a] = share
            r[s][a] = min(max(m["reward_center"] + m["reward_sums"][s][a] / N, m["rmin"]), m["rmax"])
    st = [x if x > t else 0.0 for x in m["start"]]
    start = [x / sum(st) for x in st] if sum(st) > 0 else [1.0 / S_] * S_
    return P, r, u, start, pess, (weighted / visits if visits else None)


def solve(M, b):
    """M x = b by Gaussian elimination with partial pivoting."""
    n = len(b)
    M = [row[:] + [b[i]] for i, row in enumerate(M)]
    for c in range(n):
        p = max(range(c, n), key=lambda i: abs(M[i][c]))
        M[c], M[p] = M[p], M[c]
        for i in range(c + 1, n):
            f = M[i][c] / M[c][c]
            for j in range(c, n + 1):
                M[i][j] -= f * M[c][j]
    x = [0.0] * n
    for i in reversed(range(n)):
        x[i] = (M[i][n] - sum(M[i][j] * x[j] for j in range(i + 1, n))) / M[i][i]
    return x


def backup(P, r, u, s, a, V, gamma, w):
    return r[s][a] + gamma * (sum(p * V[k] for k, p in P[s][a].items()) + u[s][a] * w)


def value(m, pi, gamma, horizon=None, **kw):
    P, r, u, start, pess, um = estimate(m, **kw)
    S_, rmin = m["n_states"], m["rmin"]
    if horizon is None:
        M = [[(1.0 if i == j else 0.0) - gamma * P[i][pi[i]].get(j, 0.0) for j in range(S_)]
             for i in range(S_)]
        V = solve(M, [r[s][pi[s]] + gamma * u[s][pi[s]] * rmin for s in range(S_)])
    else:
        V = [0.0] * S_
        for h in range(horizon):  # V has h steps to go: the unknown state is worth rmin if h >= 1
            V = [backup(P, r, u, s, pi[s], V, gamma, rmin if h >= 1 else 0.0) for s in range(S_)]
    return sum(p * v for p, v in zip(start, V)), V, pess, um


def test_value():
    con = connect()
    table(con, steps_log(3000, seed=4))
    m = release(con, dict(BASE, seed=11))
    text = json.dumps(m)
    P, r, u, start, pess, um = estimate(m)
    check(pess >= 1 and 0 < um < 0.5 and sum(x > 0 for row in u for x in row) >= 3,
          "the release has pessimistic pairs and pairs with unknown mass", (pess, um))
    pi = [0, 1, 1, 0]
    for kw, opt in (({}, {}), ({"renormalise": True}, {"unknown": "renormalise"}),
                    ({"censored": True}, {"ends": "censored"}),
                    ({"censored": True, "renormalise": True}, {"ends": "censored", "unknown": "renormalise"}),
                    ({"t": 5.0}, {"count_floor": 5})):
        for hz in (None, 4):
            o = dict(opt, bootstrap=0)
            if hz:
                o.update(horizon=hz, gamma=1)
            got = json.loads(con.execute("SELECT dp_mdp_value(?, ?, ?)",
                                         (text, json.dumps(pi), json.dumps(o))).fetchone()[0])
            want, V, wp, wum = value(m, pi, 1.0 if hz else m["gamma"], hz, **kw)
            name = f"dp_mdp_value {opt or 'pessimistic'} {'H = 4' if hz else 'discounted'}"
            check_close(got["value"], want, name + ": value = the independent estimate", 1e-12, 1e-12)
            check_close(got["values"], list(V), name + ": values", 1e-12, 1e-12)
            check(got["pessimistic_pairs"] == wp and abs(got["unknown_mass"] - wum) <= 1e-12 and
                  got["unknown"] == ("renormalise" if kw.get("renormalise") else "pessimistic"),
                  name + ": pessimistic_pairs, unknown, unknown_mass", (got["pessimistic_pairs"], wp,
                                                                      got["unknown_mass"], wum))
    # planning: the greedy policy of the same estimate's optimal values
    got = json.loads(con.execute("SELECT dp_mdp_plan(?)", (text,)).fetchone()[0])
    Q = [[backup(P, r, u, s, a, got["values"], m["gamma"], m["rmin"]) for a in range(A)] for s in range(S)]
    check(got["policy"] == [max(range(A), key=lambda a: (Q[s][a], -a)) for s in range(S)] and
          all(abs(max(Q[s]) - got["values"][s]) <= 1e-9 for s in range(S)),
          "dp_mdp_plan: its values are a fixed point of the pessimistic backup, its policy greedy")
    best, _, _, _ = value(m, got["policy"], m["gamma"])
    others = max(value(m, [a0, a1, a2, a3], m["gamma"])[0]
                 for a0 in range(2) for a1 in range(2) for a2 in range(2) for a3 in range(2))
    check_close(best, others, "dp_mdp_plan: its policy is the best of all 16 on the estimate", 1e-9, 1e-9)
    # the bootstrap: repeatable, noisy, and no error for a sparse model
    b1 = con.execute("SELECT dp_mdp_value(?, ?, '{\"bootstrap\": 50}')", (text, json.dumps(pi))).fetchone()[0]
    b2 = con.execute("SELECT dp_mdp_value(?, ?, '{\"bootstrap\": 50}')", (text, json.dumps(pi))).fetchone()[0]
    check(b1 == b2 and json.loads(b1)["stderr"] > 0, "the bootstrap on a sparse model: repeatable, > 0")


def test_model_errors():
    con = connect()
    table(con, steps_log(3000, seed=4))
    m = release(con, dict(BASE, seed=11))
    v = "SELECT dp_mdp_value(?, '[0, 1, 1, 0]')"
    bad = dict(m, next=[m["next"][1], m["next"][0]] + m["next"][2:])
    c0, c1 = m["next"][1], m["next"][0]
    check_error(con, v, "dp_mdp_value: model: next must be sorted by (s, a, s') without repeats: "
                f"next[1] = [{c1[0]}, {c1[1]}, {c1[2]}, ...] comes after next[0]",
                "next out of order", (json.dumps(bad),))
    bad = dict(m, next=[[0, 2, 1, 50.0]])
    check_error(con, v, "dp_mdp_value: model: next[0] must be [s, a, s', count] with s and s' in "
                "0..n_states-1, a in 0..n_actions-1 and a finite count of magnitude at most 10^150, "
                "got an array of 4 numbers", "a cell's action out of range", (json.dumps(bad),))
    bad = dict(m, transitions="thin")
    check_error(con, v, "dp_mdp_value: model: transitions must be \"dense\" or \"sparse\", got \"thin\"",
                "transitions of another kind", (json.dumps(bad),))
    bad = dict(m)
    del bad["totals"]
    check_error(con, v, "dp_mdp_value: model: key \"totals\" is missing (a dp_mdp result has every key "
                "of the contract)", "totals missing", (json.dumps(bad),))
    dense = release(con, dict(BASE, seed=11, transitions="dense"))
    check_error(con, "SELECT dp_mdp_value(?, '[0, 1, 1, 0]', '{\"unknown\": \"renormalise\"}')",
                "dp_mdp_value: option unknown applies to a sparse model (\"transitions\": \"sparse\"); "
                "this model is dense, every transition count is released",
                "option unknown on a dense model", (json.dumps(dense),))


def test_plan():
    con = connect()
    o = {"mechanism": "dp_mdp", "n_states": 100, "n_actions": 8, "gamma": 0.95, "rmin": -1, "rmax": 1,
         "horizon": 20, "clip": "none", "epsilon": 1, "delta": 1e-5, "episodes": 200000, "steps": 15,
         "next_states": 2}
    p = json.loads(con.execute("SELECT dp_plan(?)", (json.dumps(o),)).fetchone()[0])
    r = release(connect_with_rows(), {k: o[k] for k in ("n_states", "n_actions", "gamma", "rmin", "rmax",
                                                         "horizon", "clip", "epsilon", "delta")})
    for k in ("sigma", "sensitivity", "threshold", "delta_threshold", "delta_gaussian", "cells_max", "rho"):
        check(p[k] == r[k], f"plan: {k} as the release's")
    check(p["transitions"] == "sparse" and p["charged_as"] == "epsilon, delta" and "noise_mass" not in p,
          "plan: sparse by default at 100 states, charged as (epsilon, delta), no spurious mass")
    n = 200000 * 15 / 800
    keep = 0.5 * math.erfc((p["threshold"] - n / 2) / (p["sigma"] * math.sqrt(2)))
    l1 = min(2, math.sqrt(2 / math.pi) * p["sigma"] * (2 * keep + 2) / n + (1 - keep))
    check_close(p["unknown_mass"], 1 - keep, "plan: unknown_mass = Q((tau - N/k)/sigma) missed", 1e-12)
    check_close(p["transition_l1"], l1, "plan: transition_l1 = sqrt(2/pi) sigma (k p + 2)/N + (1 - p)",
                1e-12)
    check_close(p["worst_reward_sd"], p["sigma"] * math.sqrt(2) / n, "plan: worst_reward_sd = b sigma sqrt 2 / N",
                1e-12)
    t = json.loads(con.execute("SELECT dp_plan(?)", (json.dumps(dict(o, error="transitions")),)).fetchone()[0])
    check(t["verdict_on"] == "transition_l1" and t["useful"] == (l1 <= 0.5),
          "plan with error transitions: useful when transition_l1 <= 0.5", t["useful"])
    check_error(con, "SELECT dp_plan(?)", "dp_plan: option next_states plans a sparse release, and this "
                "one is dense", "next_states for a dense plan",
                (json.dumps(dict(o, transitions="dense")),))


def connect_with_rows():
    con = connect()
    table(con, [(1, 0, 0, 0, 0.5)])
    return con


def test_interrupt():
    # 2,000,000 steps in random order over 2,000 states x 4 actions: grouped,
    # gathered, their cells sorted and merged, about a second and a half
    n = sized(2000000, 400000)
    con = connect()
    con.execute("CREATE TABLE steps AS WITH RECURSIVE i(n) AS (SELECT 0 UNION ALL SELECT n + 1 "
                f"FROM i WHERE n < {n - 1}) SELECT n % 100000 AS episode, n / 100000 AS t, "
                "(n * 7919) % 2000 AS state, n % 4 AS action, (n % 3) / 2.0 AS reward FROM i "
                "ORDER BY random()")
    o = {"n_states": 2000, "n_actions": 4, "gamma": 0.9, "rmin": 0, "rmax": 1, "epsilon": 1,
         "delta": 1e-5, "horizon": 20}
    for after in (0.05, 0.3):
        # a release that ends before the interrupt fires says nothing: earlier then
        for at in (after, after / 3, after / 9):
            late, err = interrupted(con, "SELECT length(dp_mdp(episode, t, state, action, reward, "
                                    "?)) FROM steps", (json.dumps(o),), at)
            if late >= 0:
                break
        check(err == ("interrupted", 9) and late < 0.5,
              f"an interrupt {after} s into a sparse release stops it within 0.5 s (CPU)", (late, err))


run([test_keys, test_dense_unchanged, test_auto, test_errors, test_ledger, test_value,
     test_model_errors, test_plan, test_interrupt])
