"""dp_mdp_value and dp_mdp_plan at their limits: the proven error_bound
against exact rational arithmetic near gamma = 1, the gamma and sweep
limits, absurd numbers in a model, many named policies in little text,
seeds beyond 2^53, and what SQLite may do with the functions (their
results go through LAPACK, whose last bits change with the machine and
its thread count: not SQLITE_DETERMINISTIC, and they can run long:
direct-only).
"""
import ctypes
import ctypes.util
import json
from fractions import Fraction as F

from harness import check, connect, run, sql_error

U = 2.0 ** -53


def model(counts, rsums, start, gamma=0.9, rmin=-1.0, rmax=2.0, sigma=0.0, reward_sigma=0.0,
          horizon=None):
    S, A = len(counts), len(counts[0])
    return {
        "mechanism": "dp_mdp", "private": False, "seeded": True, "unit": "episode",
        "n_states": S, "n_actions": A, "gamma": gamma, "rmin": rmin, "rmax": rmax,
        "epsilon": 1, "delta": 1e-5, "horizon": horizon, "clip": None, "sensitivity": 2.0,
        "sigma": sigma, "reward_sigma": reward_sigma, "reward_center": (rmin + rmax) / 2,
        "start": start, "counts": counts, "reward_sums": rsums, "features": "tabular"}


# Counts whose ratios are not dyadic (no P or r is exact in binary), every
# pair visited, no episode ends: values near max|r| / (1 - gamma).
COUNTS = [[[3, 7, 0, 11, 0, 0], [0, 13, 5, 0, 9, 0]],
          [[17, 0, 3, 0, 7, 0], [5, 0, 0, 19, 3, 0]],
          [[0, 11, 13, 0, 3, 0], [7, 3, 0, 0, 17, 0]],
          [[9, 0, 0, 7, 5, 0], [0, 0, 3, 11, 13, 0]],
          [[5, 3, 7, 0, 11, 0], [13, 0, 0, 7, 3, 0]]]
RSUMS = [[3.1, -2.7], [1.3, 7.9], [-4.1, 2.2], [0.7, 5.3], [6.1, -1.9]]
START = [3, 1, 0, 2, 5]


def exact_model(m):
    """P and r of ALGORITHMS.md §14.1 in rational arithmetic (floor 0,
    no pessimistic pair here)."""
    S, A = m["n_states"], m["n_actions"]
    c0, lo, hi = F(m["reward_center"]), F(m["rmin"]), F(m["rmax"])
    P, r = [], []
    for s in range(S):
        Ps, rs = [], []
        for a in range(A):
            c = [F(x) if x > 0 else F(0) for x in m["counts"][s][a]]
            N = sum(c)
            Ps.append([x / N for x in c[:S]])
            rs.append(min(max(c0 + F(m["reward_sums"][s][a]) / N, lo), hi))
        P.append(Ps)
        r.append(rs)
    return P, r


def solve(M, b):
    """Gauss-Jordan elimination in Fractions: exact."""
    n = len(b)
    M = [row[:] + [b[i]] for i, row in enumerate(M)]
    for i in range(n):
        p = next(k for k in range(i, n) if M[k][i] != 0)
        M[i], M[p] = M[p], M[i]
        for k in range(n):
            if k != i and M[k][i] != 0:
                f = M[k][i] / M[i][i]
                M[k] = [x - f * y for x, y in zip(M[k], M[i])]
    return [M[i][n] / M[i][i] for i in range(n)]


def exact_value(P, r, acts, g):
    S = len(P)
    M = [[(1 if s == k else 0) - g * P[s][acts[s]][k] for k in range(S)] for s in range(S)]
    return solve(M, [r[s][acts[s]] for s in range(S)])


def worst(got, exact):
    return max(abs(F(x) - y) for x, y in zip(got, exact))


def test_error_bound_near_one():
    con = connect()
    m = model(COUNTS, RSUMS, START)
    text = json.dumps(m)
    P, r = exact_model(m)
    acts = [1, 0, 1, 1, 0]
    for k in (3, 6):
        g = 1 - 10.0 ** -k
        got = json.loads(con.execute("SELECT dp_mdp_value(?, ?, ?)", (text, json.dumps(acts),
                                                                   json.dumps({"gamma": g}))
                                     ).fetchone()[0])
        err = worst(got["values"], exact_value(P, r, acts, F(g)))
        check(F(got["error_bound"]) >= err and got["error_bound"] < 1e-6 * 2 / (1 - g),
              f"value, gamma = 1 - 1e-{k}: error_bound >= the exact error (rational "
              "arithmetic), and small", f"bound {got['error_bound']} exact {float(err)}")
        # the optimum: the best of all 2^5 deterministic policies, exactly
        Vs = [exact_value(P, r, list(p), F(g)) for p in
              [[(i >> s) & 1 for s in range(5)] for i in range(32)]]
        best = [max(V[s] for V in Vs) for s in range(5)]
        plan = json.loads(con.execute("SELECT dp_mdp_plan(?, ?)",
                                      (text, json.dumps({"gamma": g}))).fetchone()[0])
        q = [[r[s][a] + F(g) * sum(P[s][a][j] * best[j] for j in range(5)) for a in range(2)]
             for s in range(5)]
        err = max(worst(plan["values"], best), worst(sum(plan["q"], []), sum(q, [])))
        check(F(plan["error_bound"]) >= err,
              f"plan, gamma = 1 - 1e-{k}: error_bound >= the exact error of values and q",
              f"bound {plan['error_bound']} exact {float(err)}")
    for k in (8, 10):
        g = 1 - 10.0 ** -k
        for sql, args in (("SELECT dp_mdp_value(?, '[1, 0, 1, 1, 0]', ?)", (text,)),
                          ("SELECT dp_mdp_plan(?, ?)", (text,))):
            fn = sql.split("(")[0].split()[-1]
            msg = sql_error(con, sql, args + (json.dumps({"gamma": g}),))
            check(msg is not None and msg.startswith(f"{fn}: gamma = {g!r} ")
                  and "10^8" in msg and "horizon" in msg,
                  f"{fn}, gamma = 1 - 1e-{k}: refused, naming gamma and the sweep limit", msg)
    # a larger tolerance needs fewer sweeps: within the limit again
    g = 1 - 1e-8
    got = json.loads(con.execute(
        "SELECT dp_mdp_value(?, ?, ?)", (text, json.dumps(acts), json.dumps(
            {"gamma": g, "tolerance": 0.5 * 2 / (1 - g)}))).fetchone()[0])
    err = worst(got["values"], exact_value(P, r, acts, F(g)))
    check(F(got["error_bound"]) >= err, "gamma = 1 - 1e-8 with a large tolerance: "
          "error_bound >= the exact error", f"bound {got['error_bound']} exact {float(err)}")


def test_horizon_bound():
    con = connect()
    m = model(COUNTS, RSUMS, START)
    P, r = exact_model(m)
    acts = [0, 1, 1, 0, 1]
    H = 25
    got = json.loads(con.execute("SELECT dp_mdp_value(?, ?, ?)", (
        json.dumps(m), json.dumps(acts), json.dumps({"gamma": 1, "horizon": H}))).fetchone()[0])
    V = [F(0)] * 5
    for _ in range(H):
        V = [r[s][acts[s]] + sum(P[s][acts[s]][j] * V[j] for j in range(5)) for s in range(5)]
    err = worst(got["values"], V)
    check(F(got["error_bound"]) >= err and got["error_bound"] < 1e-9,
          "backward induction: error_bound covers the rounding of H steps",
          f"bound {got['error_bound']} exact {float(err)}")


def test_absurd_numbers():
    con = connect()
    base = model(COUNTS, RSUMS, START, sigma=1.0, reward_sigma=1.0)
    for key, path, val in (("sigma", ["sigma"], 1e308), ("reward_sigma", ["reward_sigma"], 1e200),
                           ("counts[1][0][3]", ["counts", 1, 0, 3], -1e300),
                           ("reward_sums[2][1]", ["reward_sums", 2, 1], 1e151),
                           ("start[0]", ["start", 0], 1e160)):
        m = json.loads(json.dumps(base))
        x = m
        for p in path[:-1]:
            x = x[p]
        x[path[-1]] = val
        for opts in ("{}", '{"gamma": 1, "horizon": 5}'):
            msg = sql_error(con, "SELECT dp_mdp_value(?, '[0, 0, 0, 0, 0]', ?)",
                            (json.dumps(m), opts))
            check(msg is not None and msg.startswith(f"dp_mdp_value: model: {key} must be ")
                  and "10^150" in msg,
                  f"{key} = {val:g} ({'bootstrap' if opts == '{}' else 'horizon'}): refused "
                  "at read, naming the key", msg)
    m = json.loads(json.dumps(base))
    m["sigma"] = m["reward_sigma"] = 1e149
    got = json.loads(con.execute("SELECT dp_mdp_value(?, '[0, 0, 0, 0, 0]', "
                                 "'{\"bootstrap\": 20}')", (json.dumps(m),)).fetchone()[0])
    check(all(isinstance(got[k], (int, float)) for k in ("value", "stderr", "error_bound")),
          "sigma 1e149, just within: finite value, stderr and bound", got)


def test_many_policies_memory():
    # 6 states and 34,000 actions: a policy of action numbers is 13 bytes
    # of text and was S*A doubles (1.6 MB) in memory, up front for each.
    S, A = 6, 34000
    counts = [[[0] * S + [1] for _ in range(A)] for _ in range(S)]
    m = model(counts, [[0.0] * A for _ in range(S)], [1] * S)
    text = json.dumps(m, separators=(",", ":"))
    pols = json.dumps({f"p{i}": [i % 7] * S for i in range(400)}, separators=(",", ":"))
    con = connect()
    lib = ctypes.CDLL(ctypes.util.find_library("sqlite3"))
    lib.sqlite3_memory_highwater.restype = ctypes.c_int64
    lib.sqlite3_memory_highwater.argtypes = [ctypes.c_int]
    lib.sqlite3_memory_used.restype = ctypes.c_int64
    con.execute("SELECT 1").fetchone()
    base = lib.sqlite3_memory_used()
    lib.sqlite3_memory_highwater(1)
    got = json.loads(con.execute("SELECT dp_mdp_value(?, ?, '{\"min_count\": 0}')",
                                 (text, pols)).fetchone()[0])
    peak = lib.sqlite3_memory_highwater(0) - base
    check(len(got["policies"]) == 400 and got["policies"]["p3"]["values"] == [0.5] * S,
          "400 named policies: evaluated", str(got)[:200])
    # the model's own arrays (its numbers, the estimate, SQLite's copies of
    # the text) are a few bytes per byte of its text; the policies add
    # O(their text), where they were 400 x S x A doubles (697 MB)
    limit = 16 * len(text) + 100 * len(pols)
    check(peak < limit, "400 named policies: memory O(the texts), not 400 x S x A doubles",
          f"peak {peak} bytes, limit {limit}")


def test_seeds_beyond_2_53():
    con = connect()
    opts = ('{"n_states": 1, "gamma": 0.5, "rmin": 0, "rmax": 1, "epsilon": 1, '
            '"delta": 1e-5, "perturb": "statistics", "seed": %s}')
    for seed in ("9007199254740992", "9007199254740993", "1e16"):
        msg = sql_error(con, "SELECT dp_lsw(1, 0, 0, 1.0, ?)", (opts % seed,))
        check(msg is not None and "option seed must be an integer in [0, 2^53 - 1]" in msg,
              f"seed {seed}: refused", msg)
    got = con.execute("SELECT dp_lsw(1, 0, 0, 1.0, ?)", (opts % "9007199254740991",)).fetchone()
    check(got[0] is not None, "seed 2^53 - 1: accepted")
    m = json.dumps(model(COUNTS, RSUMS, START, sigma=1.0))
    for seed in ("9007199254740992", "9007199254740993"):
        msg = sql_error(con, "SELECT dp_mdp_value(?, '[0, 0, 0, 0, 0]', ?)",
                        (m, '{"bootstrap": 2, "bootstrap_seed": %s}' % seed))
        check(msg is not None and "option bootstrap_seed must be an integer in [0, 2^53 - 1]"
              in msg, f"bootstrap_seed {seed}: refused", msg)


def test_sqlite_flags():
    con = connect()
    flags = {(n, a): f for n, a, f in con.execute(
        "SELECT name, narg, flags FROM pragma_function_list WHERE name IN "
        "('dp_mdp_value', 'dp_mdp_plan', 'dp_plan')")}
    check(all(not f & 0x800 for f in flags.values()) and len(flags) == 5,
          "dp_mdp_value, dp_mdp_plan, dp_plan: not SQLITE_DETERMINISTIC (LAPACK)", flags)
    check(all(f & 0x80000 and not f & 0x200000 for (n, _), f in flags.items() if n != "dp_plan"),
          "dp_mdp_value, dp_mdp_plan: direct-only, not innocuous (they can run long)", flags)
    m = json.dumps(model(COUNTS, RSUMS, START))
    con.execute("CREATE TABLE t(m, p)")
    con.execute("INSERT INTO t VALUES (?, '[0, 0, 0, 0, 0]')", (m,))
    for i, expr in enumerate(("dp_mdp_value(m, p)", "dp_mdp_plan(m)", "dp_plan(m)")):
        msg = sql_error(con, f"CREATE INDEX i{i} ON t({expr})")
        check(msg == "non-deterministic functions prohibited in index expressions",
              f"{expr.split('(')[0]}: refused in an index expression", msg)
    for expr in ("dp_mdp_value(m, p)", "dp_mdp_plan(m)"):
        name = expr.split("(")[0]
        con.execute(f"CREATE VIEW v_{name} AS SELECT {expr} AS x FROM t")
        msg = sql_error(con, f"SELECT * FROM v_{name}")
        check(msg is not None and f"unsafe use of {name}()" in msg,
              f"{name}: refused in a view of the schema", msg)
        check(con.execute(f"SELECT {expr} FROM t").fetchone()[0] is not None,
              f"{name}: works in a top-level statement")


run([test_error_bound_near_one, test_horizon_bound, test_absurd_numbers,
     test_many_policies_memory, test_seeds_beyond_2_53, test_sqlite_flags])
