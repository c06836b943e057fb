"""dp_lsw / dp_lsl through SQL: exact quantities against reference.py,
the noise, the privacy of the output, and every bad input."""
import json
import math
import random

from harness import (check, check_close, check_error, connect, normal_cdf, opts,
                     run, sql_error)
import reference

BASE = {"n_states": 3, "gamma": 0.5, "epsilon": 1, "delta": 0.1}
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
    # phi(k) = sum 1/max(v-k,1)^2: phi(2) = 3, and e^{-2b} 3 is the max.
    con = connect()
    table(con, HAND_ROWS)
    r = release(con, "dp_lsw", dict(BASE, release="diagnostic", seed=1))
    beta = 1 / (4 * (3 + math.log(20)))
    alpha = 5 * math.sqrt(2 * math.log(20))
    check(r["visits"] == [1, 2, 3], "hand: visits")
    check_close(r["returns"], [1.25, 1.0, 2 / 3], "hand: first-visit returns")
    check_close(r["theta_exact"], [1.25, 1.0, 2 / 3], "hand: tabular theta = F")
    check_close(r["beta"], beta, "hand: beta")
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
    for k in ("alpha", "beta"):
        check_close(got[k], want[k], f"{label}: {k}")
    check_close(got["psi"], want["psi"], f"{label}: psi", rel=1e-12)
    check_close(got["sigma"], want["sigma"], f"{label}: sigma", rel=1e-9)


def test_against_reference():
    rng = random.Random(20261121)
    for case in range(6):
        n = rng.randint(2, 9)
        rows = random_rows(rng, n, rng.randint(1, 40), 12, text_keys=case % 2 == 1)
        con = connect()
        table(con, rows)
        o = dict(n_states=n, gamma=rng.choice([0, 0.5, 0.9, 0.99]),
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
        compare(con, "dp_lsw", dict(o, gamma=1, fmax=3.0), rows, f"case {case} gamma 1 + fmax")


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
    o = dict(n_states=40, gamma=0.9, epsilon=0.5, delta=1e-4)
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
        r = release(con, "dp_lsw", dict(n_states=10, gamma=0.8, epsilon=2, delta=0.01,
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
    allowed = {"mechanism", "private", "epsilon", "delta", "n_states", "d", "episodes",
               "calibration", "theta", "values"}
    check(set(r) == allowed, "private: only public keys and the noisy output", sorted(r))
    check(r["private"] is True and "seeded" not in r, "private: not seeded")
    r = release(con, "dp_lsl", dict(BASE, seed=3, **{"lambda": 4}))
    check(set(r) == allowed | {"seeded"} and r["seeded"] is True, "seeded results say so")
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
    r = release(con, "dp_lsw", dict(BASE, features=[[1, 0], [1, 1], [1, 2]], seed=2))
    want = [r["theta"][0] + s * r["theta"][1] for s in range(3)]
    check_close(r["values"], want, "values = Phi theta_hat (dense)")
    r = release(con, "dp_lsw", dict(BASE, features={"aggregate": 2}, seed=2))
    check(r["d"] == 2 and r["values"] == [r["theta"][0], r["theta"][0], r["theta"][1]],
          "values = Phi theta_hat (aggregate)")


def test_order_grouping_and_streaming():
    rng = random.Random(11)
    rows = random_rows(rng, 6, 50, 10)
    o = dict(n_states=6, gamma=0.9, epsilon=1, delta=1e-3, seed=9, release="diagnostic")
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
    err(dict(B, gamma=1.5), "dp_lsw: option gamma must be in [0, 1], got 1.5", "gamma > 1")
    err(dict(B, gamma=1), "dp_lsw: option gamma = 1 needs option fmax (a public bound on "
        "returns), got gamma 1 without fmax", "gamma 1 without fmax")
    err({"n_states": 3, "gamma": 0.5, "epsilon": 1}, "dp_lsw: option delta is required",
        "delta missing")
    err(dict(B, epsilon_=1), 'dp_lsw: unknown option "epsilon_" (known: n_states, gamma, '
        'epsilon, delta, rmin, rmax, fmin, fmax, features, weights, calibration, seed, release, '
        'grouped, episodes)', "unknown key")
    err(dict(B, rmin=1, rmax=1), "dp_lsw: option rmax must be > rmin = 1, got 1", "rmax <= rmin")
    err(dict(B, fmin=0.5), "dp_lsw: option fmin must be <= 0, got 0.5", "fmin > 0")
    err(dict(B, gamma=1, fmax=3, rmin=-1), "dp_lsw: option gamma = 1 with rmin < 0 needs option "
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
    err(dict(B, seed=-1), "dp_lsw: option seed must be in [0, 9.0072e+15], got -1", "seed < 0")

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


run([test_hand_example, test_against_reference, test_psi_many_episodes,
     test_noise_distribution, test_private_output, test_values_are_phi_theta,
     test_order_grouping_and_streaming, test_clamping, test_empty_and_untouched,
     test_bad_input])
