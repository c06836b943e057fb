"""dp_first_visit, dp_fv_stats, dp_lsw_from_stats / dp_lsl_from_stats, the portable SQL
of sql/sqlite/first_visit_stats.sql, and a release from 3 attached shards
(tests/sql/test_dialects.py checks the per-engine SQL further)."""
import json
import os
import random
import tempfile

from harness import check, check_close, check_error, close, connect, run, sql_error
import reference

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
FV = "SELECT * FROM dp_first_visit('SELECT episode, t, state, reward FROM steps', ?)"


def make(con, rows, name="steps"):
    con.execute(f"CREATE TABLE {name}(episode, t, state, reward)")
    con.executemany(f"INSERT INTO {name} VALUES (?,?,?,?)", rows)


def dyadic_rows(rng, n, episodes, length):
    """Rewards in {0, 1/2, 1}, gamma = 1/2 below: every return and every sum
    is exact in binary floating point, so any summation order agrees."""
    return [(e, t, rng.randrange(n), rng.choice([0.0, 0.5, 1.0, 1.5]))
            for e in range(episodes) for t in range(rng.randint(1, length))]


def test_first_visit_rows():
    rng = random.Random(1)
    rows = [(f"p{e}", t, rng.randrange(5), rng.uniform(-0.5, 2))
            for e in range(30) for t in rng.sample(range(40), rng.randint(1, 9))]
    con = connect()
    make(con, rows)
    o = {"n_states": 5, "gamma": 0.8, "rmin": 0, "rmax": 1.5, "fmax": 3}
    got = con.execute(FV, (json.dumps(o),)).fetchall()
    # independent: per episode, first t of each state, return by direct sum
    want = []
    eps = {}
    for e, t, s, r in rows:
        eps.setdefault(e, []).append((t, s, r))
    for e in sorted(eps):
        steps = sorted(eps[e])
        seen = set()
        for i, (t, s, _) in enumerate(steps):
            if s in seen:
                continue
            seen.add(s)
            g = sum(0.8 ** (j - i) * min(max(steps[j][2], 0), 1.5) for j in range(i, len(steps)))
            want.append((e, s, t, min(g, 3.0)))
    check(len(got) == len(want) and all(
        a[:3] == b[:3] and close(a[3], b[3], 1e-12) for a, b in zip(got, want)),
        "dp_first_visit: one row per (episode, first-visited state), exact returns")
    cols = [d[0] for d in con.execute(FV, (json.dumps(o),)).description]
    check(cols == ["episode", "state", "t_first", "first_visit_return", "max_states",
                    "made_with"], "dp_first_visit columns", cols)
    check(all(r[4] is None for r in got), "dp_first_visit: max_states NULL (no bound)")


def test_first_visit_read_path():
    # trajectories_sql runs wrapped (dprl_row inside count(), one step for
    # all rows): only the rows the caller's query returns are read.  A table
    # named dprl_rows collides with the wrapper's CTE, so SQLite refuses the
    # wrapped text and the rows are read one step each: the same result.
    rng = random.Random(3)
    rows = [(e, t, rng.randrange(4), rng.choice([0.0, 0.5, 1.0]))
            for e in range(40) for t in range(rng.randint(1, 12))]
    con = connect()
    make(con, rows)
    make(con, rows, "dprl_rows")
    o = json.dumps({"n_states": 4, "gamma": 0.5, "rmin": 0, "rmax": 1})
    ran = []
    con.set_trace_callback(ran.append)
    a = con.execute(FV, (o,)).fetchall()
    wrapped = any("SELECT count(dprl_row(?1, c0, c1, c2, c3)) FROM dprl_rows" in r for r in ran)
    ran.clear()
    b = con.execute("SELECT * FROM dp_first_visit('SELECT episode, t, state, reward "
                    "FROM dprl_rows', ?)", (o,)).fetchall()
    stepped = not any("dprl_row(" in r for r in ran)
    con.set_trace_callback(None)
    check(wrapped and stepped and a == b and len(a) > 40,
          "dp_first_visit: wrapped read, and row by row when the text cannot be wrapped "
          "(a table named dprl_rows), give the same rows", (wrapped, stepped, len(a), len(b)))
    # a bad row that the caller's WHERE removes is never read
    con.execute("INSERT INTO steps VALUES (7, 99, 9, 0.0)")
    c = con.execute("SELECT * FROM dp_first_visit('SELECT episode, t, state, reward FROM steps "
                    "WHERE state < 4', ?)", (o,)).fetchall()
    check(c == a, "dp_first_visit: only the rows the query returns are read")
    check_error(con, FV, "dp_first_visit: state must be in 0..n_states-1 = 0..3, got 9 "
                "(row with episode 7, t 99)", "and a bad row it returns is refused", (o,))


def portable_stats(con, gamma, rmax, fmax):
    """sql/sqlite/first_visit_stats.sql on the table steps: (state, visits,
    return_sum) of the visited states."""
    with open(os.path.join(ROOT, "sql", "sqlite", "first_visit_stats.sql")) as f:
        sql = f.read()
    con.execute("DROP TABLE IF EXISTS dprl_params")
    con.execute("CREATE TEMP TABLE dprl_params(gamma, rmin, rmax, fmin, fmax, n_states, max_states, "
                "buckets, bucket_lo, bucket_hi)")
    con.execute("INSERT INTO dprl_params VALUES (?, 0, ?, NULL, ?, 1000, NULL, 1, 0, 0)",
                (gamma, rmax, fmax))
    return [r[:3] for r in con.execute(sql).fetchall() if r[1] > 0]


def test_portable_sql_matches():
    rng = random.Random(2)
    for case, (gamma, rmax, fmax) in enumerate([(0.9, 1.0, None), (0.5, 2.0, 1.5),
                                                (0.0, 1.0, None), (0.99, 1.0, 10.0)]):
        rows = [(e, t, rng.randrange(7), rng.uniform(-1, 3))
                for e in range(60) for t in rng.sample(range(100), rng.randint(1, 30))]
        con = connect()
        make(con, rows)
        o = {"n_states": 7, "gamma": gamma, "rmin": 0, "rmax": rmax}
        if fmax is not None:
            o["fmax"] = fmax
        ours = con.execute("SELECT state, count(*), sum(first_visit_return) FROM "
                           "dp_first_visit('SELECT episode, t, state, reward FROM steps', ?) "
                           "GROUP BY state ORDER BY state", (json.dumps(o),)).fetchall()
        theirs = portable_stats(con, gamma, rmax, fmax)
        check(len(ours) == len(theirs) and all(
            a[0] == b[0] and a[1] == b[1] and close(a[2], b[2], 1e-9) for a, b in zip(ours, theirs)),
            f"portable SQL = dp_first_visit (gamma {gamma}, rmax {rmax}, fmax {fmax})",
            f"{ours}\n{theirs}")


def shards(tmp, rows, k=3):
    con = connect()
    make(con, rows)
    for i in range(k):
        con.execute(f"ATTACH ? AS s{i}", (os.path.join(tmp, f"shard{i}.db"),))
        con.execute(f"CREATE TABLE s{i}.steps AS SELECT * FROM main.steps "
                    f"WHERE abs(episode) % {k} = {i}")
    con.commit()  # other connections read the shard files
    return con


def test_three_shards_equal_whole():
    rng = random.Random(3)
    rows = dyadic_rows(rng, 6, 90, 12)
    base = {"n_states": 6, "gamma": 0.5, "rmin": 0, "rmax": 1, "epsilon": 1, "delta": 1e-3,
            "release": "diagnostic", "seed": 42}
    with tempfile.TemporaryDirectory() as tmp:
        con = shards(tmp, rows)
        for fn, extra in (("dp_lsw", {}), ("dp_lsl", {"lambda": 10}),
                          ("dp_lsw", {"features": {"aggregate": 2}, "fmax": 1.5})):
            o = dict(base, **extra)
            fv = json.dumps({k: o[k] for k in ("n_states", "gamma", "rmin", "rmax", "fmax") if k in o})
            whole = json.loads(con.execute(
                f"SELECT {fn}(episode, t, state, reward, ?) FROM steps", (json.dumps(o),)).fetchone()[0])
            union = " UNION ALL ".join(
                f"SELECT state, count(*) AS visits, sum(first_visit_return) AS return_sum "
                f"FROM dp_first_visit('SELECT episode, t, state, reward FROM s{i}.steps', '{fv}') "
                f"GROUP BY state" for i in range(3))
            so = dict(o, episodes=90)
            merged = json.loads(con.execute(
                f"SELECT {fn}_from_stats(state, visits, return_sum, ?) FROM ({union})",
                (json.dumps(so),)).fetchone()[0])
            check(merged == whole, f"{fn}{' ' + str(extra) if extra else ''}: 3 attached shards "
                  "give exactly the whole-table release (same seed, diagnostic)",
                  f"{merged}\n{whole}")
        # portable SQL on each shard, then the same release
        tables = []
        for i in range(3):
            con.execute(f"CREATE TABLE s{i}.stats(state, visits, return_sum)")
            sub = connect()
            sub.execute("ATTACH ? AS src", (os.path.join(tmp, f"shard{i}.db"),))
            sub.execute("CREATE TEMP VIEW steps AS SELECT * FROM src.steps")
            con.executemany(f"INSERT INTO s{i}.stats VALUES (?,?,?)", portable_stats(sub, 0.5, 1.0, None))
            tables.append(f"SELECT * FROM s{i}.stats")
        merged = json.loads(con.execute(
            f"SELECT dp_lsw_from_stats(state, visits, return_sum, ?) FROM ({' UNION ALL '.join(tables)})",
            (json.dumps(dict(base, episodes=90)),)).fetchone()[0])
        whole = json.loads(con.execute("SELECT dp_lsw(episode, t, state, reward, ?) FROM steps",
                                       (json.dumps(base),)).fetchone()[0])
        check(merged == whole, "portable SQL statistics per shard give the same release")


def test_general_data_close():
    rng = random.Random(4)
    rows = [(e, t, rng.randrange(5), rng.random()) for e in range(40) for t in range(rng.randint(1, 15))]
    o = {"n_states": 5, "gamma": 0.93, "rmin": 0, "rmax": 1, "epsilon": 1, "delta": 1e-3, "release": "diagnostic", "seed": 1}
    with tempfile.TemporaryDirectory() as tmp:
        con = shards(tmp, rows)
        whole = json.loads(con.execute("SELECT dp_lsw(episode, t, state, reward, ?) FROM steps",
                                       (json.dumps(o),)).fetchone()[0])
        union = " UNION ALL ".join(
            f"SELECT state, count(*) AS visits, sum(first_visit_return) AS return_sum FROM "
            f"dp_first_visit('SELECT episode, t, state, reward FROM s{i}.steps', "
            f"'{{\"n_states\": 5, \"gamma\": 0.93, \"rmin\": 0, \"rmax\": 1}}') GROUP BY state" for i in range(3))
        merged = json.loads(con.execute(f"SELECT dp_lsw_from_stats(state, visits, return_sum, ?) "
                                        f"FROM ({union})", (json.dumps(dict(o, episodes=40)),)).fetchone()[0])
        check(merged["visits"] == whole["visits"], "general data: shard visits equal")
        check_close(merged["theta_exact"], whole["theta_exact"], "general data: theta equal up to rounding",
                    rel=1e-13)
        check_close(merged["psi"], whole["psi"], "general data: psi equal")

FVS = "SELECT dp_fv_stats(episode, t, state, reward, ?) FROM steps"
# dp_fv_stats's per-state rows, as the README's shard recipe reads them
FVS_ROWS = ("SELECT e.value ->> 0 AS state, e.value ->> 1 AS visits, e.value ->> 2 AS return_sum, "
            "x.j ->> 'max_states' AS max_states "
            "FROM (SELECT dp_fv_stats(episode, t, state, reward, ?) AS j FROM {table}) AS x, "
            "json_each(x.j, '$.states') AS e")


def test_fv_stats():
    """dp_fv_stats against an independent per-state computation (reference.py):
    text and integer ids in random order, rewards and returns clamped at
    both ends, max_states; grouped: true agrees; a release from its output
    is exactly dp_lsw's from the rows."""
    rng = random.Random(11)
    rows = [(f"p{e}" if e % 3 else e, t, rng.randrange(7), rng.uniform(-1.5, 2.5))
            for e in range(120) for t in rng.sample(range(60), rng.randint(1, 14))]
    rng.shuffle(rows)
    con = connect()
    make(con, rows)
    for o in ({"n_states": 7, "gamma": 0.8, "rmin": 0, "rmax": 1},
              {"n_states": 7, "gamma": 0.9, "rmin": -1, "rmax": 2, "fmin": -3, "fmax": 6},
              {"n_states": 9, "gamma": 0.7, "rmin": 0, "rmax": 1.5, "max_states": 2}):
        got = json.loads(con.execute(FVS, (json.dumps(o),)).fetchone()[0])
        m, visits, sums = reference.first_visit(rows, o["gamma"], o.get("rmax", 1.0), o.get("fmax"),
                                                o.get("rmin", 0.0), o.get("fmin"), o.get("max_states"))
        states = got["states"]
        check(got["private"] is False and got["function"] == "dp_fv_stats" and got["episodes"] == m
              and got["n_states"] == o["n_states"] and got["max_states"] == o.get("max_states"),
              f"dp_fv_stats {o}: header (not private, m = {m}, the bound applied)", got)
        check([s[0] for s in states] == sorted(visits) and all(s[1] == visits[s[0]] for s in states),
              f"dp_fv_stats {o}: visited states in order, exact visits", states)
        check(all(close(s[2], sums[s[0]], 1e-12) for s in states),
              f"dp_fv_stats {o}: return sums = the reference's")
        con.execute("CREATE TABLE sorted AS SELECT * FROM steps ORDER BY episode, t")
        g = json.loads(con.execute("SELECT dp_fv_stats(episode, t, state, reward, ?) FROM sorted",
                                   (json.dumps(dict(o, grouped=True)),)).fetchone()[0])
        check(g["episodes"] == m and [s[:2] for s in g["states"]] == [s[:2] for s in states]
              and all(close(a[2], b[2], 1e-12) for a, b in zip(g["states"], states)),
              f"dp_fv_stats {o}: grouped: true on rows stored by episode agrees")
        con.execute("DROP TABLE sorted")
        priv = dict(o, epsilon=1, delta=1e-5, seed=5)
        # max_states is a contribution bound of the statistics perturbation only
        out = {"perturb": "statistics"} if "max_states" in o else {}
        for fn, extra in (("dp_lsw", out), ("dp_lsl", {"lambda": 50, "perturb": "statistics"})):
            direct = con.execute(f"SELECT {fn}(episode, t, state, reward, ?) FROM steps",
                                 (json.dumps(dict(priv, **extra)),)).fetchone()[0]
            merged = con.execute(
                f"SELECT {fn}_from_stats(state, visits, return_sum, max_states, ?) "
                f"FROM ({FVS_ROWS.format(table='steps')})",
                (json.dumps(dict(priv, episodes=m, **extra)), json.dumps(o))).fetchone()[0]
            check(merged == direct, f"{fn}_from_stats on dp_fv_stats = {fn} on the rows {o} (same seed)")
    check(con.execute("SELECT dp_fv_stats(episode, t, state, reward, '{}') FROM steps WHERE 0")
          .fetchone()[0] is None, "dp_fv_stats: no rows, NULL")
    g = con.execute("SELECT json_type(json_object('s', dp_fv_stats(episode, t, state, reward, "
                    "'{\"n_states\": 7, \"gamma\": 0.5, \"rmin\": 0, \"rmax\": 1}'))) FROM steps").fetchone()[0]
    check(g == "object", "dp_fv_stats nests as JSON")


def test_fv_stats_shards():
    """The shard recipe with dp_fv_stats: per-state rows from each attached
    shard, unioned, give exactly the whole-table release."""
    rng = random.Random(12)
    rows = dyadic_rows(rng, 6, 90, 12)
    o = {"n_states": 6, "gamma": 0.5, "rmin": 0, "rmax": 1}
    priv = dict(o, epsilon=1, delta=1e-3, release="diagnostic", seed=42)
    with tempfile.TemporaryDirectory() as tmp:
        con = shards(tmp, rows)
        whole = con.execute("SELECT dp_lsw(episode, t, state, reward, ?) FROM steps",
                            (json.dumps(priv),)).fetchone()[0]
        union = " UNION ALL ".join(FVS_ROWS.format(table=f"s{i}.steps") for i in range(3))
        merged = con.execute(f"SELECT dp_lsw_from_stats(state, visits, return_sum, ?) FROM ({union})",
                             (json.dumps(dict(priv, episodes=90)),) + (json.dumps(o),) * 3).fetchone()[0]
        check(merged == whole, "dp_fv_stats on 3 attached shards: exactly the whole-table release")


def test_fv_stats_errors():
    con = connect()
    make(con, [(1, 0, 0, 1.0), (1, 1, 1, 0.5)])
    o = '{"n_states": 2, "gamma": 0.5, "rmin": 0, "rmax": 1}'

    def err(sql, msg, name):
        check_error(con, sql, msg, name)
    err("SELECT dp_fv_stats(episode, t, state, reward, '{\"n_states\": 1, \"gamma\": 0.5, \"rmin\": 0, \"rmax\": 1}') FROM steps",
        "dp_fv_stats: state must be in 0..n_states-1 = 0..0, got 1 (row with episode 1, t 1)",
        "fv_stats: state out of range")
    err("SELECT dp_fv_stats(episode, t, state, reward, '{\"n_states\": 2}') FROM steps",
        "dp_fv_stats: option gamma is required", "fv_stats: gamma required")
    err("SELECT dp_fv_stats(episode, t, state, reward, '{\"n_states\": 2, \"gamma\": 0.5, \"rmin\": 0, \"rmax\": 1, "
        "\"epsilon\": 1}') FROM steps",
        "dp_fv_stats: unknown option \"epsilon\" (known: n_states, gamma, rmin, rmax, fmin, fmax, "
        "max_states, grouped)", "fv_stats: no privacy options (it is not private)")
    err("SELECT dp_fv_stats(episode, t, state, reward, CASE WHEN t = 0 THEN '" + o + "' ELSE "
        "'{\"n_states\": 2, \"gamma\": 0.6, \"rmin\": 0, \"rmax\": 1}' END) FROM steps",
        "dp_fv_stats: options must be the same for every row", "fv_stats: options change between rows")
    con.execute("INSERT INTO steps VALUES (1, 1, 0, 0)")
    err("SELECT dp_fv_stats(episode, t, state, reward, '" + o + "') FROM steps",
        "dp_fv_stats: duplicate (episode, t) = (1, 1)", "fv_stats: duplicate (episode, t)")


def test_stats_errors():
    con = connect()
    con.execute("CREATE TABLE st(state, visits, return_sum)")
    con.executemany("INSERT INTO st VALUES (?,?,?)", [(0, 3, 2.0), (1, 2, 1.0)])
    o = {"n_states": 2, "gamma": 0.5, "rmin": 0, "rmax": 1, "epsilon": 1, "delta": 0.1, "episodes": 3}
    q = "SELECT dp_lsw_from_stats(state, visits, return_sum, ?) FROM st"

    def err(opts, msg, name, sql=q):
        check_error(con, sql, msg, name, (json.dumps(opts),))
    r = json.loads(con.execute(q, (json.dumps(o),)).fetchone()[0])
    check(r["episodes"] == 3 and r["mechanism"] == "dp_lsw" and r["private"] is True,
          "from_stats: private release with the public m")
    err(dict(o, episodes=2), "dp_lsw_from_stats: visits must be in 0..episodes = 0..2, got 3 (state 0)",
        "from_stats: visits > m")
    oo = dict(o)
    del oo["episodes"]
    err(oo, "dp_lsw_from_stats: option episodes is required", "from_stats: episodes required")
    err(dict(o, grouped=True), "dp_lsw_from_stats: option grouped applies to rows of steps, not to "
        "statistics", "from_stats: grouped refused")
    con.execute("INSERT INTO st VALUES (1, 2, 1.0)")
    err(o, "dp_lsw_from_stats: state 1: visits add up to 4, more than episodes = 3",
        "from_stats: merged visits > m")
    con.execute("DELETE FROM st WHERE rowid = 3")
    con.execute("INSERT INTO st VALUES (0, 0, 100.0)")
    err(o, "dp_lsw_from_stats: state 0: return_sum 102 is outside visits x [fmin, fmax] = 3 x [0, 2]",
        "from_stats: return_sum above visits x fmax")
    con.execute("UPDATE st SET return_sum = -5 WHERE visits = 0")
    err(o, "dp_lsw_from_stats: state 0: return_sum -3 is outside visits x [fmin, fmax] = 3 x [0, 2]",
        "from_stats: negative total with fmin = 0")
    check(sql_error(con, q, (json.dumps(dict(o, rmin=-1)),)) is None,
          "from_stats: the same sum is fine with rmin = -1 (fmin = -2, 3 x -2 <= -3)")
    con.execute("UPDATE st SET return_sum = -1 WHERE visits = 0")
    con.execute("UPDATE st SET state = 5, return_sum = 0 WHERE visits = 0")
    err(o, "dp_lsw_from_stats: state must be in 0..n_states-1 = 0..1, got 5", "from_stats: state range")
    err(dict(o, **{"lambda": 5}), "dp_lsl_from_stats: state must be in 0..n_states-1 = 0..1, got 5",
        "dp_lsl_from_stats checks too", "SELECT dp_lsl_from_stats(state, visits, return_sum, ?) FROM st")


def test_stats_bound():
    """max_states of the statistics perturbation is a bound on how the
    statistics were made: the release refuses counts that no m episodes
    could produce under it (sum of visits > max_states x m), and statistics
    whose own max_states (NULL: none; no column: none) differs from the
    option.  The issue's attack: 20 states x 100 visits, m = 100, k = 1
    claimed sigma 14.9 where these statistics need 47.2."""
    con = connect()
    con.execute("CREATE TABLE st(state, visits, return_sum, max_states)")
    con.executemany("INSERT INTO st VALUES (?, ?, ?, ?)", [(s, 100, 50.0, 1) for s in range(20)])
    o = {"n_states": 20, "gamma": 0.5, "rmin": 0, "rmax": 1, "epsilon": 1, "delta": 1e-5, "episodes": 100,
         "perturb": "statistics"}
    k1 = dict(o, max_states=1)
    q4 = "SELECT {fn}(state, visits, return_sum, ?) FROM st"
    q5 = "SELECT {fn}(state, visits, return_sum, {col}, ?) FROM st"
    for fn, extra in (("dp_lsw_from_stats", {}), ("dp_lsl_from_stats", {"lambda": 10})):
        check_error(con, q5.format(fn=fn, col="max_states"),
                    f"{fn}: the visits of all states add up to 2000, more than option max_states "
                    "x episodes = 1 x 100: no 100 episodes of at most 1 first-visits each could "
                    "produce them", f"{fn}: the attack (2,000 visits where k m = 100) is refused",
                    (json.dumps(dict(k1, **extra)),))
        check_error(con, q4.format(fn=fn),
                    f"{fn}: option max_states = 1 needs the bound the statistics were made with: "
                    "pass their max_states column (state, visits, return_sum, max_states, "
                    "options); statistics without it have no bound",
                    f"{fn}: the attack without a max_states column is refused",
                    (json.dumps(dict(k1, **extra)),))
        # the same statistics, released as made (no bound): sigma for all 20 states
        r = json.loads(con.execute(q5.format(fn=fn, col="NULL"),
                                   (json.dumps(dict(o, **extra)),)).fetchone()[0])
        check(r["private"] is True and abs(r["sigma"] - 47.2) < 0.05,
              f"{fn}: with no bound the same statistics release with sigma 47.2", r["sigma"])
    bound = reference.statistics_noise(dict(k1, n_states=20), 100)
    check(abs(bound["sigma"] - 14.9) < 0.05, "the bound k = 1 would give sigma 14.9", bound["sigma"])

    # the sum rule at its edge: k m exactly is possible, one more is not
    con.execute("UPDATE st SET visits = 5, return_sum = 2.5")  # 20 x 5 = 100 = 1 x 100
    r = json.loads(con.execute(q5.format(fn="dp_lsw_from_stats", col="max_states"),
                               (json.dumps(dict(k1, seed=1)),)).fetchone()[0])
    check(r["max_states"] == 1 and abs(r["sigma"] - bound["sigma"]) < 1e-9 * bound["sigma"],
          "visits adding up to max_states x m exactly: released, with the bound's sigma")
    con.execute("UPDATE st SET visits = 6 WHERE state = 0")
    check_error(con, q5.format(fn="dp_lsw_from_stats", col="max_states"),
                "dp_lsw_from_stats: the visits of all states add up to 101, more than option "
                "max_states x episodes = 1 x 100: no 100 episodes of at most 1 first-visits each "
                "could produce them", "one visit more than max_states x m: refused",
                (json.dumps(k1),))
    con.execute("UPDATE st SET visits = 5")

    # the bound the statistics carry must be the option's, in every row
    def mismatch(col, opts, got, want, name, q=q5):
        check_error(con, q.format(fn="dp_lsw_from_stats", col=col),
                    f"dp_lsw_from_stats: the statistics were made with max_states = {got} but "
                    f"option max_states = {want}: release them with the contribution bound they "
                    "were made with", name, (json.dumps(opts),))
    mismatch("max_states + 1", k1, "2", "1", "statistics made with k = 2, released with k = 1")
    mismatch("NULL", k1, "NULL (no bound)", "1", "statistics made with no bound, released with k = 1")
    mismatch("max_states", o, "1", "NULL (no bound)", "statistics made with k = 1, released with none")
    mismatch("CASE WHEN state = 7 THEN 3 ELSE 1 END", k1, "3", "1", "one row made with another k")
    check_error(con, q5.format(fn="dp_lsw_from_stats", col="0"),
                "dp_lsw_from_stats: max_states must be NULL (no bound) or an integer >= 1, got 0",
                "a max_states column of 0 is refused", (json.dumps(k1),))
    check_error(con, q5.format(fn="dp_lsw_from_stats", col="'x'"),
                "dp_lsw_from_stats: the max_states position takes max_states (NULL or an "
                "integer >= 1) or made_with (a JSON object), got a text of 1 bytes that is "
                "neither", "a max_states column that is neither an integer nor made_with is "
                "refused", (json.dumps(k1),))
    # the forms with the bucket columns: 8 arguments carry the bound too
    q8 = ("SELECT dp_lsw_from_stats(state, visits, return_sum, 1, 0, 0, {col}, ?) FROM st")
    r8 = json.loads(con.execute(q8.format(col="max_states"),
                                (json.dumps(dict(k1, buckets=1, seed=1)),)).fetchone()[0])
    check(r8 == r, "8 arguments (buckets, then max_states): the same release")
    check_error(con, q8.format(col="2"),
                "dp_lsw_from_stats: the statistics were made with max_states = 2 but option "
                "max_states = 1: release them with the contribution bound they were made with",
                "8 arguments: a mismatch is refused", (json.dumps(dict(k1, buckets=1)),))
    check_error(con, "SELECT dp_lsw_from_stats(state, visits, return_sum, 1, 0, 0, ?) FROM st",
                "dp_lsw_from_stats: option max_states = 1 needs the bound the statistics were made "
                "with: pass their max_states column (state, visits, return_sum, buckets, "
                "bucket_lo, bucket_hi, max_states, options); statistics without it have no bound",
                "7 arguments with option max_states: refused", (json.dumps(dict(k1, buckets=1)),))
    check_error(con, q8.format(col="max_states"),
                "dp_lsw_from_stats: the 8-argument form (state, visits, return_sum, buckets, "
                "bucket_lo, bucket_hi, max_states, options) needs option buckets",
                "8 arguments without option buckets", (json.dumps(k1),))
    check_error(con, q5.format(fn="dp_lsw_from_stats", col="max_states"),
                "dp_lsw_from_stats: option buckets needs the 8-argument form (state, visits, "
                "return_sum, buckets, bucket_lo, bucket_hi, max_states, options)",
                "5 arguments with option buckets", (json.dumps(dict(k1, buckets=1)),))


def test_first_visit_bound():
    """dp_first_visit and dp_fv_stats with max_states: the statistics of
    reference.py (an episode's first k first-visits, in t order), the
    bound in their output, and a release from them equal to dp_lsw's."""
    rng = random.Random(21)
    rows = [(e, t, rng.randrange(8), rng.uniform(-1, 2))
            for e in range(80) for t in rng.sample(range(50), rng.randint(1, 20))]
    con = connect()
    make(con, rows)
    for k in (1, 3):
        fv = {"n_states": 8, "gamma": 0.7, "rmin": -1, "rmax": 2, "max_states": k}
        m, visits, sums = reference.first_visit(rows, 0.7, 2, None, -1, None, k)
        got = con.execute("SELECT state, count(*), sum(first_visit_return), min(max_states), "
                          "max(max_states) FROM dp_first_visit('SELECT episode, t, state, reward "
                          "FROM steps', ?) GROUP BY state ORDER BY state",
                          (json.dumps(fv),)).fetchall()
        check([(r[0], r[1]) for r in got] == sorted(visits.items())
              and all(close(r[2], sums[r[0]], 1e-12) and r[3] == r[4] == k for r in got),
              f"dp_first_visit max_states {k}: statistics = reference, max_states {k} in every row",
              (got, sorted(visits.items())))
        j = json.loads(con.execute(FVS, (json.dumps(fv),)).fetchone()[0])
        check(j["max_states"] == k and [s[:2] for s in j["states"]] == sorted(map(list, visits.items()))
              and all(close(s[2], sums[s[0]], 1e-12) for s in j["states"]),
              f"dp_fv_stats max_states {k}: statistics = reference, \"max_states\": {k}", j)
        priv = dict(fv, epsilon=1, delta=1e-5, perturb="statistics", seed=8, release="diagnostic")
        direct = con.execute("SELECT dp_lsw(episode, t, state, reward, ?) FROM steps",
                             (json.dumps(priv),)).fetchone()[0]
        for what, sub in (("dp_first_visit", "SELECT state, count(*) AS visits, sum(first_visit_return) "
                           "AS return_sum, min(max_states) AS max_states FROM dp_first_visit('SELECT "
                           "episode, t, state, reward FROM steps', ?2) GROUP BY state"),
                          ("dp_fv_stats", FVS_ROWS.replace("?", "?2").format(table="steps"))):
            merged = con.execute(f"SELECT dp_lsw_from_stats(state, visits, return_sum, max_states, ?1) "
                                 f"FROM ({sub})", (json.dumps(dict(priv, episodes=m)),
                                                   json.dumps(fv))).fetchone()[0]
            check(merged == direct, f"{what} max_states {k}: dp_lsw_from_stats on its statistics "
                  "= dp_lsw on the rows (same seed, diagnostic)")
            check_error(con, f"SELECT dp_lsw_from_stats(state, visits, return_sum, max_states, ?1) "
                        f"FROM ({sub})",
                        f"dp_lsw_from_stats: the statistics were made with max_states = {k} but "
                        f"option max_states = {k + 1}: release them with the contribution bound "
                        "they were made with", f"{what} max_states {k}, released with {k + 1}: refused",
                        (json.dumps(dict(priv, episodes=m, max_states=k + 1)), json.dumps(fv)))


def test_first_visit_errors():
    con = connect()
    make(con, [(1, 0, 0, 1.0), (1, 1, 1, 0.5)])
    o = '{"n_states": 2, "gamma": 0.5, "rmin": 0, "rmax": 1}'

    def err(sql, msg, name):
        check_error(con, sql, msg, name)
    err("SELECT * FROM dp_first_visit('SELECT episode, t, state FROM steps', '" + o + "')",
        "dp_first_visit: trajectories_sql must return 4 columns, got 3", "fv: wrong column count")
    err("SELECT * FROM dp_first_visit('DELETE FROM steps', '" + o + "')",
        "dp_first_visit: trajectories_sql must not write (a read-only SELECT)", "fv: a write is refused")
    err("SELECT * FROM dp_first_visit('SELECT * FROM nope', '" + o + "')",
        "dp_first_visit: trajectories_sql: no such table: nope", "fv: bad query")
    err("SELECT * FROM dp_first_visit('SELECT * FROM steps; SELECT 1', '" + o + "')",
        "dp_first_visit: trajectories_sql must be a single statement, got more after the first",
        "fv: two statements")
    err("SELECT * FROM dp_first_visit('SELECT * FROM steps')",
        "dp_first_visit: argument options is required", "fv: missing options")
    err("SELECT * FROM dp_first_visit(NULL, '" + o + "')",
        "dp_first_visit: trajectories_sql must be the text of a SELECT, got NULL", "fv: NULL query")
    err("SELECT * FROM dp_first_visit('SELECT * FROM steps', '{\"n_states\": 1, \"gamma\": 0.5, \"rmin\": 0, \"rmax\": 1}')",
        "dp_first_visit: state must be in 0..n_states-1 = 0..0, got 1 (row with episode 1, t 1)",
        "fv: state out of range")
    err("SELECT * FROM dp_first_visit('SELECT * FROM steps', '{\"n_states\": 2}')",
        "dp_first_visit: option gamma is required", "fv: gamma required")
    con.execute("INSERT INTO steps VALUES (1, 1, 0, 0)")
    err("SELECT * FROM dp_first_visit('SELECT * FROM steps', '" + o + "')",
        "dp_first_visit: duplicate (episode, t) = (1, 1)", "fv: duplicate (episode, t)")
    # every statement was finalized: the table can be dropped right away
    con.execute("DROP TABLE steps")
    check(sql_error(con, "SELECT 1") is None, "fv: no statement left open after errors (DROP works)")


def test_python_example():
    import runpy
    import io
    import contextlib
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        runpy.run_path(os.path.join(ROOT, "samples", "python_example.py"), run_name="__main__")
    out = buf.getvalue()
    check("private value" in out and out.count("state") >= 4, "samples/python_example.py runs", out)


def test_buckets():
    """Shards hashed into K buckets: dp_lsw_from_stats with option buckets
    takes each row's (buckets, bucket_lo, bucket_hi) and refuses shards that
    overlap (an episode counted twice breaks the privacy unit), miss a
    bucket, or were unioned twice; the release equals the 4-argument one."""
    con = connect()
    con.execute("CREATE TABLE sh(state, visits, return_sum, buckets, lo, hi)")
    shard_a = [(0, 3, 2.0, 4, 0, 1), (1, 2, 1.5, 4, 0, 1)]
    shard_b = [(0, 1, 0.5, 4, 2, 3), (1, 4, 3.0, 4, 2, 3)]
    con.executemany("INSERT INTO sh VALUES (?, ?, ?, ?, ?, ?)", shard_a + shard_b)
    o = {"n_states": 2, "gamma": 0.5, "rmin": 0, "rmax": 1, "epsilon": 1, "delta": 1e-5, "episodes": 8,
         "perturb": "statistics", "seed": 3}
    q7 = "SELECT dp_lsw_from_stats(state, visits, return_sum, buckets, lo, hi, ?) FROM sh"
    q4 = "SELECT dp_lsw_from_stats(state, visits, return_sum, ?) FROM sh"
    a = json.loads(con.execute(q7, (json.dumps(dict(o, buckets=4)),)).fetchone()[0])
    b = json.loads(con.execute(q4, (json.dumps(o),)).fetchone()[0])
    check(a["theta"] == b["theta"], "buckets 0..1 and 2..3 cover 0..3: the same release")
    def err(rows, msg, name, opts=dict(o, buckets=4), sql=q7):
        con.execute("DELETE FROM sh")
        con.executemany("INSERT INTO sh VALUES (?, ?, ?, ?, ?, ?)", rows)
        check_error(con, sql, msg, name, (json.dumps(opts),))
    err(shard_a + [(0, 1, 0.5, 4, 1, 3), (1, 1, 0.5, 4, 1, 3)],
        "dp_lsw_from_stats: buckets 0..1 and 1..3 overlap: an episode would count twice", "overlap")
    err(shard_a, "dp_lsw_from_stats: bucket 2 is not covered by any shard", "a missing shard")
    err(shard_a + shard_a + shard_b, "dp_lsw_from_stats: the shard of buckets 0..1 gives a state twice "
        "(was it unioned twice?)", "a shard unioned twice")
    err(shard_a + [(0, 1, 0.5, 8, 2, 3)], "dp_lsw_from_stats: buckets must equal option buckets = 4 (the "
        "shard was hashed with another K), got 8", "another K")
    err(shard_a + [(0, 1, 0.5, 4, 3, 2)], "dp_lsw_from_stats: bucket_lo..bucket_hi must be a range within "
        "0..3, got 3..2", "an empty range")
    err(shard_a + shard_b, "dp_lsw_from_stats: the 7-argument form (state, visits, return_sum, buckets, "
        "bucket_lo, bucket_hi, options) needs option buckets", "7 arguments without the option", o)
    err(shard_a + shard_b, "dp_lsw_from_stats: option buckets needs the 7-argument form (state, visits, "
        "return_sum, buckets, bucket_lo, bucket_hi, options)", "the option with 4 arguments",
        dict(o, buckets=4), q4)


run([test_stats_bound, test_first_visit_bound, test_fv_stats, test_fv_stats_shards, test_fv_stats_errors, test_buckets, test_first_visit_rows, test_first_visit_read_path, test_portable_sql_matches, test_three_shards_equal_whole,
     test_general_data_close, test_stats_errors, test_first_visit_errors, test_python_example])
