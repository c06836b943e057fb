"""dp_lsw / dp_lsl through SQL: exact quantities against reference.py,
the noise, the privacy of the output, and every bad input."""
import json
import math
import random

from harness import (check, check_close, check_error, connect, normal_cdf, opts,
                     run, sql_error)
import reference

BASE = {"n_states": 3, "gamma": 0.5, "rmin": 0, "rmax": 1, "epsilon": 1, "delta": 0.1}
HAND_ROWS = [(1, 0, 0, 1.0), (1, 1, 1, 0.0), (1, 2, 2, 1.0),
             (2, 0, 1, 1.0), (2, 1, 2, 1.0), (3, 0, 2, 0.0)]


def table(con, rows, name="steps"):
    con.execute(f"CREATE TABLE {name}(episode, t, state, reward)")
    con.executemany(f"INSERT INTO {name} VALUES (?,?,?,?)", rows)


def release(con, fn, o, where="", table_="steps"):
    sql = f"SELECT {fn}(episode, t, state, reward, ?) FROM {table_} {where}"
    return json.loads(con.execute(sql, (json.dumps(o),)).fetchone()[0])


def random_rows(rng, n_states, episodes, max_len, text_keys=False):
    rows = []
    for e in range(episodes):
        key = f"patient-{e}" if text_keys else e * 7 - 50
        ts = rng.sample(range(3 * max_len), rng.randint(1, max_len))
        for t in ts:
            rows.append((key, t, rng.randrange(n_states), rng.uniform(-0.2, 1.3)))
    rng.shuffle(rows)
    return rows


def test_hand_example():
    # Worked by hand (gamma = 1/2): episode 1 visits 0,1,2 with rewards
    # 1,0,1 -> G = 1.25, 0.5, 1; episode 2 visits 1,2 with 1,1 -> 1.5, 1;
    # episode 3 visits 2 with 0 -> 0.  F = (1.25, 2/2, 2/3), |X| = (1,2,3).
    # phi(k) = sum 1/max(v-k,1)^2: phi(2) = 3, and e^{-2b} 3 is the max,
    # with b = beta_psi = beta - 2 ln(1 + 1/c), c = ceil(32/beta) (§6).
    con = connect()
    table(con, HAND_ROWS)
    r = release(con, "dp_lsw", dict(BASE, release="diagnostic", seed=1))
    beta_lemma = 1 / (4 * (3 + math.log(20)))
    c = math.ceil(32 / beta_lemma)  # 768 > alpha sqrt(3) = 21.2
    beta = beta_lemma - 2 * math.log(1 + 1 / c)
    alpha = 5 * math.sqrt(2 * math.log(20))
    check(r["visits"] == [1, 2, 3], "hand: visits")
    check_close(r["returns"], [1.25, 1.0, 2 / 3], "hand: first-visit returns")
    check_close(r["theta_exact"], [1.25, 1.0, 2 / 3], "hand: tabular theta = F")
    check_close(r["beta"], beta_lemma, "hand: beta of Lemma 1")
    check(r["grid_allowance"] == c == 768, "hand: grid allowance c = ceil(32/beta)")
    check_close(r["beta_psi"], beta, "hand: beta_psi = beta - 2 ln(1 + 1/c)")
    check_close(r["alpha"], alpha, "hand: alpha")
    check_close(r["psi"], 3 * math.exp(-2 * beta), "hand: psi = 3 e^{-2 beta}")
    check_close(r["sigma"], alpha * 2 * math.sqrt(3 * math.exp(-2 * beta)),
                "hand: sigma = alpha B sqrt(psi), B = 1/(1-gamma)")
    check(r["private"] is False and r["episodes"] == 3 and r["d"] == 3,
          "hand: diagnostic header")
    # LSL, tabular, lambda = 2: theta_s = rho v F / (rho v + lambda/2).
    r = release(con, "dp_lsl", dict(BASE, release="diagnostic", seed=1, **{"lambda": 2}))
    check_close(r["theta_exact"], [1.25 / 2, 2 / 3, 2 / 4], "hand: LSL tabular theta")


def compare(con, fn, o, rows, label):
    got = release(con, fn, dict(o, release="diagnostic", seed=7))
    want = reference.exact(rows, o, fn)
    check(got["visits"] == want["visits"] and got["episodes"] == want["episodes"],
          f"{label}: visits and m")
    check_close(got["returns"], want["returns"], f"{label}: returns", rel=1e-11)
    check_close(got["theta_exact"], want["theta_exact"], f"{label}: theta", rel=1e-9, abs_=1e-9)
    for k in ("alpha", "beta", "beta_psi"):
        check_close(got[k], want[k], f"{label}: {k}")
    check(got["grid_allowance"] == want["grid_allowance"], f"{label}: grid allowance c")
    check_close(got["psi"], want["psi"], f"{label}: psi", rel=1e-12)
    check_close(got["sigma"], want["sigma"], f"{label}: sigma", rel=1e-9)
    check_close(got["sigma_hi"], want["sigma_hi"], f"{label}: sigma_hi", rel=1e-9)
    check(got["grid"] == want["grid"], f"{label}: grid", (got["grid"], want["grid"]))
    # s = c + ceil(sigma / g): exactly from the released sigma, and within
    # one step of the reference's (sigma agrees to rounding only)
    check(got["grid_steps"] == got["grid_allowance"] + math.ceil(got["sigma"] / got["grid"])
          and abs(got["grid_steps"] - want["grid_steps"]) <= 1
          and got["sigma_applied"] == got["grid_steps"] * got["grid"],
          f"{label}: grid steps s = c + ceil(sigma/g), sigma_applied = s g",
          (got["grid_steps"], want["grid_steps"]))


def test_against_reference():
    rng = random.Random(20261121)
    for case in range(6):
        n = rng.randint(2, 9)
        rows = random_rows(rng, n, rng.randint(1, 40), 12, text_keys=case % 2 == 1)
        con = connect()
        table(con, rows)
        o = dict(n_states=n, rmin=0, gamma=rng.choice([0, 0.5, 0.9, 0.99]),
                 epsilon=rng.choice([0.1, 1, 3]), delta=rng.choice([1e-5, 0.1]),
                 rmax=rng.choice([1, 1.2]))
        k = rng.randint(1, n)
        dense = [[rng.uniform(-1, 1) for _ in range(max(1, n // 2))] for _ in range(n)]
        w = [rng.uniform(0.2, 2) for _ in range(n)]
        rho = [rng.uniform(0.1, 1) for _ in range(n)]
        for feats in (None, {"aggregate": k}, dense):
            fo = dict(o) if feats is None else dict(o, features=feats)
            label = f"case {case} {'tabular' if feats is None else 'aggregate' if isinstance(feats, dict) else 'dense'}"
            compare(con, "dp_lsw", fo, rows, "lsw " + label)
            compare(con, "dp_lsw", dict(fo, weights=w), rows, "lsw weighted " + label)
            Phi = reference.feature_matrix(n, feats)
            norm2 = reference.sym_eigenvalues(reference.gram(Phi))[-1]
            compare(con, "dp_lsl", dict(fo, rho=rho, **{"lambda": 1.5 * norm2 + 3}),
                    rows, "lsl " + label)
        compare(con, "dp_lsw", dict(o, fmax=2.0, calibration="elementary"), rows,
                f"case {case} fmax + elementary")
        compare(con, "dp_lsw", dict(o, rmin=0, rmax=1, gamma=1, fmax=3.0), rows, f"case {case} gamma 1 + fmax")


def test_psi_many_episodes():
    # Long enough that pruning matters: 3000 episodes over 40 states.
    rng = random.Random(5)
    rows = []
    for e in range(3000):
        L = rng.randint(1, 6)
        for t in range(L):
            rows.append((e, t, min(39, int(rng.expovariate(0.15))), rng.random()))
    con = connect()
    table(con, rows)
    o = dict(n_states=40, rmin=0, rmax=1, gamma=0.9, epsilon=0.5, delta=1e-4)
    compare(con, "dp_lsw", o, rows, "3000 episodes lsw")
    compare(con, "dp_lsl", dict(o, **{"lambda": 50}), rows, "3000 episodes lsl")


def test_noise_distribution():
    # 400 seeded releases of a 10-state tabular estimate = 4000 draws of
    # (theta_hat - theta)/sigma_applied.  Mean within 5 standard errors,
    # variance within 5 standard errors of 1 (Var of s^2 is 2/n for a
    # normal), Kolmogorov-Smirnov at level 1e-6: D < sqrt(ln(2/1e-6)/(2n)).
    rng = random.Random(3)
    rows = random_rows(rng, 10, 60, 15)
    con = connect()
    table(con, rows)
    z, on_grid = [], True
    for seed in range(400):
        r = release(con, "dp_lsw", dict(n_states=10, rmin=0, rmax=1, gamma=0.8, epsilon=2, delta=0.01,
                                        release="diagnostic", seed=seed))
        g, s = r["grid"], r["sigma_applied"]
        for th, ex in zip(r["theta"], r["theta_exact"]):
            z.append((th - ex) / s)
            on_grid &= (th / g) == math.floor(th / g)
    n = len(z)
    mean = sum(z) / n
    var = sum((x - mean) ** 2 for x in z) / (n - 1)
    check(abs(mean) < 5 / math.sqrt(n), "noise: mean 0", f"mean {mean}")
    check(abs(var - 1) < 5 * math.sqrt(2 / n), "noise: variance sigma^2", f"var {var}")
    z.sort()
    D = max(max((i + 1) / n - normal_cdf(x), normal_cdf(x) - i / n) for i, x in enumerate(z))
    check(D < math.sqrt(math.log(2 / 1e-6) / (2 * n)), "noise: KS goodness of fit", f"D {D}")
    check(on_grid, "noise: every theta_hat is a multiple of the grid")
    check(var * 1 >= 1 - 5 * math.sqrt(2 / n), "noise: sigma never rounded down")


def test_private_output():
    con = connect()
    table(con, HAND_ROWS)
    r = release(con, "dp_lsw", BASE)
    allowed = {"mechanism", "private", "unit", "epsilon", "delta", "n_states", "d", "episodes",
               "calibration", "theta", "values"}
    check(set(r) == allowed, "private: only public keys and the noisy output", sorted(r))
    check(r["unit"] == "episode", "the release states its unit of privacy: one episode", r["unit"])
    check(r["private"] is True and "seeded" not in r, "private: not seeded")
    r = release(con, "dp_lsl", dict(BASE, seed=3, **{"lambda": 4}))
    check(set(r) == allowed | {"seeded"} and r["seeded"] is True and r["private"] is False,
          "seeded results say so, and are not private", r)
    check(r["mechanism"] == "dp_lsl" and len(r["values"]) == 3, "lsl result shape")
    a = con.execute("SELECT dp_lsw(episode,t,state,reward,?), dp_lsw(episode,t,state,reward,?) "
                    "FROM steps", (json.dumps(BASE),) * 2).fetchone()
    check(json.loads(a[0])["theta"] != json.loads(a[1])["theta"],
          "two calls in one statement draw independent noise")
    f = {row[0]: row[1] for row in con.execute(
        "SELECT name, flags FROM pragma_function_list WHERE name LIKE 'dp%' OR name LIKE 'dprl%'")}
    check(f.get("dp_lsw") is not None and not f["dp_lsw"] & 0x800
          and not f["dp_lsl"] & 0x800, "noisy functions are not SQLITE_DETERMINISTIC")
    check(f.get("dprl_version") is not None and f["dprl_version"] & 0x800,
          "dprl_version is deterministic")


def test_values_are_phi_theta():
    con = connect()
    table(con, HAND_ROWS)
    # values are Phi theta_hat clamped to the public return range [fmin, fmax]
    # (post-processing); BASE has rewards in [0, 1] and gamma 0.5: [0, 2]
    def clamp(v):
        return [min(2.0, max(0.0, x)) for x in v]
    r = release(con, "dp_lsw", dict(BASE, features=[[1, 0], [1, 1], [1, 2]], seed=2))
    raw = [r["theta"][0] + s * r["theta"][1] for s in range(3)]
    check(any(x < 0 or x > 2 for x in raw), "precondition: Phi theta_hat leaves [0, 2] here", raw)
    check_close(r["values"], clamp(raw), "values = Phi theta_hat clamped to [fmin, fmax] (dense)")
    r = release(con, "dp_lsw", dict(BASE, features={"aggregate": 2}, seed=2))
    check(r["d"] == 2 and r["values"] == clamp([r["theta"][0], r["theta"][0], r["theta"][1]]),
          "values = Phi theta_hat clamped (aggregate)")


def test_order_grouping_and_streaming():
    rng = random.Random(11)
    rows = random_rows(rng, 6, 50, 10)
    o = dict(n_states=6, rmin=0, rmax=1, gamma=0.9, epsilon=1, delta=1e-3, seed=9, release="diagnostic")
    con = connect()
    table(con, rows)
    table(con, sorted(rows), "sorted_steps")
    a = release(con, "dp_lsw", o)
    b = release(con, "dp_lsw", o, table_="sorted_steps")
    check(a == b, "row order does not change the release (same seed)")
    c = con.execute("SELECT dp_lsw(episode,t,state,reward,?) FROM "
                    "(SELECT * FROM steps ORDER BY episode)",
                    (json.dumps(dict(o, grouped=True)),)).fetchone()[0]
    check(json.loads(c) == a, "grouped: true streaming gives the same release")
    d = con.execute("SELECT dp_lsw(episode,t,state,reward,?) FROM "
                    "(SELECT * FROM steps ORDER BY episode DESC)",
                    (json.dumps(dict(o, grouped=True)),)).fetchone()[0]
    d = json.loads(d)  # episodes summed in the other order: equal up to rounding
    check(d["visits"] == a["visits"] and all(
        abs(d[k][i] - a[k][i]) <= 1e-12 * max(1, abs(a[k][i]))
        for k in ("returns", "theta_exact") for i in range(6)),
        "grouped: true accepts descending order too")
    msg = sql_error(con, "SELECT dp_lsw(episode,t,state,reward,?) FROM steps",
                    (json.dumps(dict(o, grouped=True)),))
    check(msg is not None and "with grouped: true, rows must come grouped and ordered by "
          "episode (ORDER BY episode); episode" in msg, "grouped: true on unordered rows is an error", msg)
    # GROUP BY: one release per group, equal to the release of that group alone.
    con.execute("CREATE TABLE site_steps AS SELECT abs(episode) % 2 AS site, * FROM steps")
    per = dict(con.execute("SELECT site, dp_lsw(episode,t,state,reward,?) FROM site_steps "
                           "GROUP BY site", (json.dumps(o),)).fetchall())
    alone = release(con, "dp_lsw", o, where="WHERE site = 1", table_="site_steps")
    check(len(per) == 2 and json.loads(per[1]) == alone, "GROUP BY: one release per group")


def test_clamping():
    con = connect()
    rows = [(1, 0, 0, 5.0), (1, 1, 1, -3.0), (2, 0, 1, 0.5)]
    table(con, rows)
    r = release(con, "dp_lsw", dict(BASE, rmax=2, release="diagnostic"))
    # episode 1: rewards clamp to 2, 0 -> G = 2 + 0.5*0 = 2, then 0.
    check_close(r["returns"], [2.0, 0.25, 0.0], "rewards are clamped to [0, rmax]")
    r = release(con, "dp_lsw", dict(BASE, rmax=2, fmax=1.5, release="diagnostic"))
    check_close(r["returns"], [1.5, 0.25, 0.0], "returns are clamped to [0, fmax]")


def test_empty_and_untouched():
    con = connect()
    table(con, HAND_ROWS)
    con.execute("CREATE TABLE empty(episode, t, state, reward)")
    check(con.execute("SELECT dp_lsw(episode,t,state,reward,?) FROM empty",
                      (json.dumps(BASE),)).fetchone()[0] is None, "no rows: NULL")
    before = con.execute("SELECT group_concat(episode||t||state||reward) FROM steps").fetchone()
    changes = con.total_changes
    release(con, "dp_lsw", BASE)
    sql_error(con, "SELECT dp_lsw(episode,t,state,reward,'{') FROM steps")
    after = con.execute("SELECT group_concat(episode||t||state||reward) FROM steps").fetchone()
    check(before == after and con.total_changes == changes, "user tables are never modified")


def test_bad_input():
    con = connect()
    table(con, HAND_ROWS)
    q = "SELECT dp_lsw(episode,t,state,reward,?) FROM steps"
    ql = "SELECT dp_lsl(episode,t,state,reward,?) FROM steps"

    def err(o, expected, name, sql=q):
        check_error(con, sql, expected, name, (o if isinstance(o, str) or o is None
                                               else json.dumps(o),))
    B = BASE
    err(dict(B, epsilon=0), "dp_lsw: option epsilon must be > 0, got 0", "epsilon 0")
    err(dict(B, epsilon=-1), "dp_lsw: option epsilon must be > 0, got -1", "epsilon < 0")
    err(dict(B, delta=1), "dp_lsw: option delta must be in (0, 1), got 1", "delta 1")
    err(dict(B, delta=0), "dp_lsw: option delta must be in (0, 1), got 0", "delta 0")
    err(dict(B, rmin=0, rmax=1, gamma=1.5), "dp_lsw: option gamma must be in [0, 1], got 1.5", "gamma > 1")
    err(dict(B, rmin=0, rmax=1, gamma=1), "dp_lsw: option gamma = 1 needs option fmax (a public bound on "
        "returns), got gamma 1 without fmax", "gamma 1 without fmax")
    err({"n_states": 3, "gamma": 0.5, "rmin": 0, "rmax": 1, "epsilon": 1}, "dp_lsw: option delta is required",
        "delta missing")
    err(dict(B, epsilon_=1), 'dp_lsw: unknown option "epsilon_" (known: n_states, gamma, '
        'epsilon, delta, rmin, rmax, fmin, fmax, features, weights, perturb, max_states, '
        'calibration, seed, release, grouped, episodes, budget, buckets)', "unknown key")
    err(dict(B, rmin=1, rmax=1), "dp_lsw: option rmax must be > rmin = 1, got 1", "rmax <= rmin")
    err(dict(B, fmin=0.5), "dp_lsw: option fmin must be <= 0, got 0.5", "fmin > 0")
    err(dict(B, rmax=1, gamma=1, fmax=3, rmin=-1), "dp_lsw: option gamma = 1 with rmin < 0 needs option "
        "fmin (a public lower bound on returns), got rmin -1 without fmin", "gamma 1, rmin < 0, no fmin")
    err('{"n_states": 3,', "dp_lsw: options: malformed JSON: expected a key string, got end of text",
        "malformed JSON")
    err(None, "dp_lsw: options must be JSON text, got NULL", "NULL options")
    err("[1]", "dp_lsw: options must be a JSON object, got an array", "options not an object")
    err(dict(B, n_states=2.5), "dp_lsw: option n_states must be an integer, got 2.5", "n_states")
    err(dict(B, n_states=2), "dp_lsw: state must be in 0..n_states-1 = 0..1, got 2 "
        "(row with episode 1, t 2)", "state out of range")
    err(dict(B, features=[[1], [1]]), "dp_lsw: option features must have one row per state "
        "(3 rows), got 2 rows", "features wrong number of rows")
    err(dict(B, features=[[1, 0], [1], [0, 1]]), "dp_lsw: option features[1] has 1 columns, "
        "but features[0] has 2", "features ragged")
    msg = sql_error(con, q, (json.dumps(dict(B, features=[[1, 2], [2, 4], [3, 6]])),))
    check(msg is not None and msg.startswith("dp_lsw: features: Gamma^(1/2) Phi is not of full "
          "column rank under the weights"), "rank-deficient Phi", msg)
    err(dict(B, weights=[1, 0, 1], features={"aggregate": 1}), "dp_lsw: features: Gamma^(1/2) "
        "Phi is not of full column rank under the weights (every state of feature 1 has "
        "weight 0)", "zero weight makes tabular rank deficient")
    err(dict(B, weights=[1, -1, 1]), "dp_lsw: option weights[1] must be >= 0, got -1",
        "negative weight")
    err(dict(B, features="bogus"), 'dp_lsw: option features must be "tabular", '
        '{"aggregate": k} or an n_states x d matrix, got "bogus"', "features unknown form")
    err(dict(B, **{"lambda": 0.5}), "dp_lsl: option lambda must be > ||Phi||^2 ||rho||_inf = "
        "1, got 0.5", "lambda too small", ql)
    err(B, "dp_lsl: option lambda is required", "lambda missing", ql)
    err(dict(B, rho=[1, 2, 1], **{"lambda": 5}), "dp_lsl: option rho[1] must be in [0, 1], got 2",
        "rho out of range", ql)
    err(dict(B, calibration="x"), 'dp_lsw: option calibration must be one of "nrs", '
        '"elementary", got "x"', "calibration unknown")
    err(dict(B, seed=-1), "dp_lsw: option seed must be an integer in [0, 2^53 - 1], got -1", "seed < 0")

    def row_err(row, expected, name):
        c = connect()
        table(c, HAND_ROWS + [row])
        check_error(c, q, expected, name, (json.dumps(B),))
    row_err((4, 0, 1, None), "dp_lsw: reward must be a number, got NULL (row with episode 4, t 0)",
            "NULL reward")
    row_err((4, 0, 1, "x"), "dp_lsw: reward must be a number, got text 'x' (row with episode 4, "
            "t 0)", "text reward")
    row_err((4, 0, 1, float("inf")), "dp_lsw: reward must be a finite number, got inf "
            "(row with episode 4, t 0)", "infinite reward")
    row_err((4, 0, None, 1), "dp_lsw: state must be an integer, got NULL (row with episode 4, t 0)",
            "NULL state")
    row_err((4, 0, 1.5, 1), "dp_lsw: state must be an integer, got 1.5 (row with episode 4, t 0)",
            "fractional state")
    row_err((4, 0, -1, 1), "dp_lsw: state must be in 0..n_states-1 = 0..2, got -1 (row with "
            "episode 4, t 0)", "negative state")
    row_err((4.5, 0, 1, 1), "dp_lsw: episode must be an integer or text, got 4.5 (row with "
            "episode 4.5, t 0)", "real episode")
    row_err((4, None, 1, 1), "dp_lsw: t must be an integer, got NULL (row with episode 4, t NULL)",
            "NULL t")
    row_err((2, 1, 0, 1), "dp_lsw: duplicate (episode, t) = (2, 1)", "duplicate (episode, t)")
    c = connect()
    table(c, HAND_ROWS)
    check_error(c, "SELECT dp_lsw(episode,t,state,reward, CASE WHEN t=0 THEN ? ELSE ? END) "
                "FROM steps", "dp_lsw: options must be the same for every row",
                "options differing per row", (json.dumps(B), json.dumps(dict(B, epsilon=2))))


def from_stats(con, fn, stats, o):
    """Release from per-state statistics [(state, visits, return_sum)]:
    the parsed result, or the error message as a string."""
    rows = " UNION ALL ".join("SELECT ? AS s, ? AS v, ? AS r" for _ in stats)
    args = [x for row in stats for x in row]
    msg = sql_error(con, f"SELECT {fn}(s, v, r, ?) FROM ({rows})", [json.dumps(o)] + args)
    if msg is not None:
        return msg
    return json.loads(con.execute(f"SELECT {fn}(s, v, r, ?) FROM ({rows})",
                                  [json.dumps(o)] + args).fetchone()[0])


def outcome(r):
    """What a private caller sees, reduced to what must not depend on data:
    the error text, or the set of keys of a result."""
    return r if isinstance(r, str) else ("ok", tuple(sorted(r)), r["private"])


def test_seeded_is_not_private():
    con = connect()
    table(con, HAND_ROWS)
    stats = [(0, 1, 1.25), (1, 2, 2.0), (2, 3, 2.0)]
    lam = {"lambda": 4}
    for fn, extra in (("dp_lsw", {}), ("dp_lsl", lam)):
        o = dict(BASE, **extra)
        for seeded in (False, True):
            oo = dict(o, seed=5) if seeded else o
            for r, form in ((release(con, fn, oo), "rows"),
                            (from_stats(con, fn + "_from_stats", stats, dict(oo, episodes=3)),
                             "from_stats")):
                ok = (r["private"] is False and r["seeded"] is True if seeded
                      else r["private"] is True and "seeded" not in r)
                check(ok, f"{fn} {form}: seeded {seeded} -> private {not seeded}",
                      {k: r.get(k) for k in ("private", "seeded")})


def test_private_errors_do_not_depend_on_data():
    # The review's example: N = 1, eps = 8.326e-8, delta = 0.5, m = 2e8.
    # 5e7 and 5e7 + 1 visits (one episode replaced) used to fail with two
    # different sigmas in the text.  Now the grid and the noise floor are
    # checked from the options alone: both release.
    con = connect()
    o = {"n_states": 1, "gamma": 0.5, "rmin": 0, "rmax": 1, "epsilon": 8.326e-8, "delta": 0.5, "episodes": 200000000}
    a = from_stats(con, "dp_lsw_from_stats", [(0, 50000000, 0.0)], o)
    b = from_stats(con, "dp_lsw_from_stats", [(0, 50000001, 2.0)], o)
    check(not isinstance(a, str) and not isinstance(b, str) and outcome(a) == outcome(b)
          and a["private"] is True, "review example: both neighbours release, privately",
          (a if isinstance(a, str) else "", b if isinstance(b, str) else ""))

    # A refusal happens before any data: same text for every dataset, and
    # only public numbers in it (here eps, delta, d and c from them).
    tiny = dict(o, epsilon=1e-12)
    alpha, beta = reference.calibrate(1e-12, 0.5, 1)
    c, _ = reference.grid_reserve(alpha, beta, 1)
    want = ("dp_lsw_from_stats: option epsilon = 1e-12 is too small: with delta 0.5 and d = 1 "
            f"the noise needs a floor of {c:.17g} grid steps, more than 2^38 (ALGORITHMS.md §6)")
    got = [from_stats(con, "dp_lsw_from_stats", [(0, v, 0.0)], tiny)
           for v in (0, 1, 50000000, 50000001, 200000000)]
    check(all(g == want for g in got), "tiny epsilon: one public refusal for every dataset",
          "\n".join(map(str, got)) + "\nwant " + want)

    # Cholesky of Phi^T Gamma_X Phi + lambda/(2m) I broke down for some
    # visit counts and not for their neighbours (Gamma_X is singular when a
    # state is unvisited): "dposv failed (info 2)" for one, a release for
    # the other.  The regularised QR cannot fail.
    phi = [[1, 3], [1, 3], [1, 0]]
    top = max(reference.sym_eigenvalues(reference.gram(reference.feature_matrix(3, phi))))
    lsl = {"n_states": 3, "gamma": 0.5, "rmin": 0, "rmax": 1, "epsilon": 1, "delta": 0.1, "episodes": 2 ** 53 - 1,
           "features": phi, "lambda": top * 1.0000001}
    v0, v1 = 8253028069769887, 8306335996430920
    outs = [outcome(from_stats(con, "dp_lsl_from_stats", [(0, v0 + dv, 0.0), (1, v1, 1.0)], lsl))
            for dv in (0, 1, -1, 2)]
    check(len(set(outs)) == 1 and outs[0][0] == "ok",
          "LSL, singular Gamma_X: every neighbour releases (no data-dependent solver failure)",
          outs)

    # A sweep of extreme options: for each, neighbouring statistics (one
    # episode with return B replaced by one that never visits state 0) give
    # the same outcome, error text included.
    cases = [
        ("dp_lsw_from_stats", {"epsilon": 8.326e-8, "delta": 0.5}),
        ("dp_lsw_from_stats", {"epsilon": 1e-9, "delta": 1e-9}),
        ("dp_lsw_from_stats", {"epsilon": 20, "delta": 0.99, "fmax": 1e-300}),
        ("dp_lsw_from_stats", {"epsilon": 1e-3, "delta": 0.5, "fmax": 1e300}),
        ("dp_lsw_from_stats", {"epsilon": 1e-3, "delta": 0.5, "fmax": 1e307}),
        ("dp_lsw_from_stats", {"epsilon": 1, "delta": 0.1, "weights": [1e-300, 1e300]}),
        ("dp_lsw_from_stats", {"epsilon": 1, "delta": 0.1, "features": [[1, 0], [1, 1e-7]]}),
        ("dp_lsw_from_stats", {"epsilon": 25, "delta": 0.1}),
        ("dp_lsw_from_stats", {"epsilon": 6, "delta": 0.1, "calibration": "elementary"}),
        ("dp_lsl_from_stats", {"epsilon": 1e-9, "delta": 1e-9, "lambda": 3}),
        ("dp_lsl_from_stats", {"epsilon": 1, "delta": 0.1, "lambda": 1 + 1e-15}),
        ("dp_lsl_from_stats", {"epsilon": 1, "delta": 0.1, "lambda": 1e300, "fmax": 1e300}),
        ("dp_lsl_from_stats", {"epsilon": 1, "delta": 0.1, "lambda": 2.1,
                               "features": [[1, 1], [1, 1 + 1e-9]]}),
    ]
    for fn, extra in cases:
        for m in (1, 1000, 2 ** 53 - 1):
            o = dict({"n_states": 2, "gamma": 0.5, "rmin": 0, "rmax": 1, "episodes": m}, **extra)
            B = extra.get("fmax", 2.0)
            seen = set()
            for v in sorted({0, m // 2, m - 1}):  # v + 1 <= m
                S = 0.5 * v * B if math.isfinite(0.5 * v * B) else 0.0
                for other in (0, m // 3):
                    x = [(0, v + 1, S + B), (1, other, 0.0)]
                    y = [(0, v, S), (1, other, 0.0)]
                    seen.add(outcome(from_stats(con, fn, x, o)))
                    seen.add(outcome(from_stats(con, fn, y, o)))
            check(len(seen) == 1, f"{fn} {extra} m={m}: one outcome for all neighbours",
                  "\n".join(map(str, seen)))


def test_rounding_keeps_lemma1():
    # ALGORITHMS.md §6.  The released scale is s whole grid steps.  Rounding
    # it up moves ln s^2 by up to 2 ln(1 + 1/s); with few steps that broke
    # Lemma 1(b).  The review's example: eps = 10, delta = 1e-6, d = 1,
    # m = 2e8; one episode with return B = fmax replaced, 122,094,405 vs
    # 122,094,404 visits, fmax tuned so that the old scale crossed 3 grid
    # steps there and theta' sits just below a rounding boundary: the old
    # code released k' + Z(4) against k' + 1 + Z(3), delta(10) = 1.04e-6.
    con = connect()
    eps, delta, m, B = 10.0, 1e-6, 200000000, 0.828455214
    o = {"n_states": 1, "gamma": 0.5, "rmin": 0, "rmax": 1, "fmax": B, "epsilon": eps, "delta": delta,
         "episodes": m, "release": "diagnostic", "seed": 1}
    alpha, beta = reference.calibrate(eps, delta, 1)
    c, beta_psi = reference.grid_reserve(alpha, beta, 1)

    def released(v, S):
        r = from_stats(con, "dp_lsw_from_stats", [(0, v, S)], o)
        g = r["grid"]
        s = r.get("grid_steps") or math.ceil(r["sigma_applied"] / g)  # (old output)
        q = r["theta_exact"][0] / g
        return math.floor(q + 0.5), s, g, r

    def check_pair(v, label):
        g = released(v, 0.0)[2]
        S = 0.45 * g * v                      # theta' = 0.45 g: k' = 0
        k1, s1, _, r1 = released(v, S)        # X': v visits
        k2, s2, _, r2 = released(v + 1, S + B)  # X: the replaced episode visits
        worst = max(reference.discrete_delta(eps, k1, s1, k2, s2),
                    reference.discrete_delta(eps, k2, s2, k1, s1))
        check(worst <= delta, f"{label}: exact delta({eps:g}) of the two releases <= {delta:g}",
              f"k, s = {(k1, s1)} vs {(k2, s2)}: delta = {worst:.4g}")
        # Lemma 1 on the released (k, s) themselves: (a) s >= alpha |k - k'|
        # both ways, (b) |ln s^2 - ln s'^2| <= beta.
        check(min(s1, s2) >= alpha * abs(k1 - k2) and abs(2 * math.log(s1 / s2)) <= beta,
              f"{label}: Lemma 1 (a) and (b) hold for the released scales",
              f"s {s1} {s2}, |k - k'| {abs(k1 - k2)}, alpha {alpha}, beta {beta}")
        return (s1, s2), r1

    (s1, s2), r1 = check_pair(122094404, "review example")
    # The independent computation of s: psi = 1/v^2 (e^{-k b}/(v-k)^2 falls
    # while v - k > 2/b, and v > 1e8), sigma = alpha B / v, sigma_hi =
    # alpha B, theta_max = B.
    g = reference.grid(alpha * B, B)
    want = c + math.ceil(alpha * B / 122094404 / g)
    check(s1 == want and r1["grid"] == g and r1["grid_allowance"] == c,
          "review example: s = c + ceil(sigma/g) from the formulas", (s1, want))
    # Where the new scale does step between neighbours: the first v above
    # the example with c + ceil(alpha B / (v g)) != its value at v + 1.
    def steps(v):
        return c + math.ceil(alpha * B / v / g)
    lo, hi = 122094404, 122094404 + 10 ** 6
    while hi - lo > 1:  # steps(lo) == steps(start) != steps(hi)
        mid = (lo + hi) // 2
        if steps(mid) == steps(122094404):
            lo = mid
        else:
            hi = mid
    (t1, t2), _ = check_pair(lo, f"scale boundary at v = {lo}")
    check(t1 == t2 + 1, "the boundary pair really differs by one grid step", (t1, t2))


def test_lemma1_verified_range():
    # ALGORITHMS.md §4: Lemma 1 ("nrs") is cited, not proved.  Check it
    # directly: the largest delta(eps) over the Gaussian pairs it allows.
    # First the integrator against closed forms: equal variances (the
    # analytic Gaussian mechanism), and a narrower Q in one dimension
    # (the region L > eps is an interval: normal CDFs).
    Phi = normal_cdf
    for e, mu in ((1, 1), (0.5, 0.3), (5, 2)):
        exact = Phi(-e / mu + mu / 2) - math.exp(e) * Phi(-e / mu - mu / 2)
        check_close(reference.gaussian_delta(e, 3, 1.0, mu), exact,
                    f"integrator: equal variances, eps {e}, shift {mu}", rel=1e-4)
    e, r, D = 1.0, 0.8, 0.5
    A, Bq, C = (1 / r ** 2 - 1) / 2, -D / r ** 2, math.log(r) + D * D / (2 * r * r) - e
    x1, x2 = sorted(((-Bq - math.sqrt(Bq * Bq - 4 * A * C)) / (2 * A),
                     (-Bq + math.sqrt(Bq * Bq - 4 * A * C)) / (2 * A)))
    P = 1 - (Phi(x2) - Phi(x1))
    Q = 1 - (Phi((x2 - D) / r) - Phi((x1 - D) / r))
    check_close(reference.gaussian_delta(e, 1, r, D), P - math.exp(e) * Q,
                "integrator: narrower Q, d = 1", rel=1e-4)
    worst = []
    for eps in (0.1, 1, 5, 10, 20):
        for delta in (0.99, 0.5, 0.1, 1e-3, 1e-6, 1e-10):
            for d in (1, 2, 5, 50):
                worst.append((reference.lemma1_delta(eps, delta, d) / delta, eps, delta, d))
    top = max(worst)
    check(top[0] < 0.25, "nrs: delta(eps) <= delta/4 for eps <= 20 (d 1-50, delta 1e-10-0.99)",
          top)
    bad = reference.lemma1_delta(60, 0.3, 1)
    check(bad > 0.3, "nrs: fails at eps = 60, delta = 0.3, d = 1 (why epsilon is capped)", bad)
    con = connect()
    table(con, HAND_ROWS)
    check(release(con, "dp_lsw", dict(BASE, epsilon=20))["private"] is True,
          "nrs: epsilon 20 is accepted")
    check_error(con, "SELECT dp_lsw(episode,t,state,reward,?) FROM steps",
                'dp_lsw: option epsilon must be <= 20 with calibration "nrs" (the range where '
                'Lemma 1 is verified), got 20.5', "nrs: epsilon above 20 is refused",
                (json.dumps(dict(BASE, epsilon=20.5)),))


def test_reward_bounds_required():
    # ICU scores in [-15, 15] with the old default rmin = 0 were clamped
    # silently: the most severe state came out at +12.5 where the truth is
    # negative.  The bounds are now the user's statement, required.
    con = connect()
    con.execute("CREATE TABLE s(episode, t, state, reward)")
    con.executemany("INSERT INTO s VALUES (?, ?, ?, ?)",
                    [(e, 0, e % 2, -15.0 if e % 2 else 12.5) for e in range(40)])
    sql = "SELECT {}(episode, t, state, reward, ?) FROM s"
    o = {"n_states": 2, "gamma": 0.5, "epsilon": 1, "delta": 1e-6}
    fv = {"n_states": 2, "gamma": 0.5}
    for fn in ("dp_lsw", "dp_lsl", "dp_fv_stats"):
        for missing, given in (("rmin", {"rmax": 15}), ("rmax", {"rmin": -15})):
            err = sql_error(con, sql.format(fn),
                            (json.dumps(dict(fv if fn == "dp_fv_stats" else o, **given)),))
            check(err is not None and err.startswith(f"{fn}: option {missing} is required: rewards "
                                                     "are clamped to the public range") and
                  "never from the data" in err, f"{fn} without {missing}: refused, says why", err)
    err = sql_error(con, "SELECT dp_plan(?)", (json.dumps(dict(o, rmax=15)),))
    check(err is not None and "option rmin is required" in err, "dp_plan: rmin required", err)
    err = sql_error(con, "SELECT * FROM dp_first_visit('SELECT * FROM s', ?)",
                    (json.dumps({"n_states": 2, "gamma": 0.5}),))
    check(err is not None and "option rmin is required" in err, "dp_first_visit: rmin required", err)
    err = sql_error(con, "SELECT dp_q_learn(0.5, 0, reward, 0.5, ?) FROM s",
                    (json.dumps({"n_actions": 1, "gamma": 0.5, "lr": 0.1, "T": 64, "B": 64,
                                 "sigma": 0, "seed": 1}),))
    check(err is not None and "dp_q_learn: option rmin is required" in err,
          "dp_q_learn: rmin required", err)
    d = dict(o, rmin=-15, rmax=15, release="diagnostic", seed=1, perturb="statistics")
    r = json.loads(con.execute(sql.format("dp_lsw"), (json.dumps(d),)).fetchone()[0])
    check(r["theta_exact"] == [12.5, -15],
          "with the bounds stated, the severe state's exact value is -15 (not clamped to 0)",
          r["theta_exact"])


run([test_reward_bounds_required, test_hand_example, test_against_reference, test_psi_many_episodes,
     test_noise_distribution, test_private_output, test_values_are_phi_theta,
     test_order_grouping_and_streaming, test_clamping, test_empty_and_untouched,
     test_bad_input, test_seeded_is_not_private, test_private_errors_do_not_depend_on_data,
     test_rounding_keeps_lemma1, test_lemma1_verified_range])
