"""Options passed as a bound parameter: every row aggregate gives what the
literal form gives, and compares each row's options as the bytes they came
in (dprl_debug(options) says 'bytes', the route dprl_sql_same_options
takes); in a UTF-16 database they are converted ('converted') and still
checked.  dprl_debug() keeps nothing of the rows it saw."""
import json
import os
import tempfile

from harness import check, connect, run, sql_error

STEPS = [(e, t, (e + t) % 3, (t % 2) * 0.5, e % 2, 0.5, 0.5)
         for e in range(40) for t in range(6)]

# (function, its data arguments, options): seeded, so the two forms can be
# compared exactly
CALLS = [
    ("dp_lsw", "episode, t, state, reward",
     {"n_states": 3, "gamma": 0.9, "rmin": 0, "rmax": 1, "epsilon": 1, "delta": 1e-5,
      "perturb": "statistics", "seed": 3}),
    ("dp_lsl", "episode, t, state, reward",
     {"n_states": 3, "gamma": 0.9, "rmin": 0, "rmax": 1, "epsilon": 1, "delta": 1e-5,
      "lambda": 2, "seed": 3}),
    ("dp_fv_stats", "episode, t, state, reward",
     {"n_states": 3, "gamma": 0.9, "rmin": 0, "rmax": 1}),
    ("dp_mdp", "episode, t, state, action, reward",
     {"n_states": 3, "n_actions": 2, "gamma": 0.9, "rmin": 0, "rmax": 1, "epsilon": 1,
      "delta": 1e-5, "horizon": 6, "seed": 3}),
    ("dp_is_value", "episode, t, reward, behavior, target",
     {"gamma": 0.9, "rmin": 0, "rmax": 1, "weight_max": 4, "horizon": 6, "epsilon": 1,
      "delta": 1e-5, "seed": 3}),
    ("dp_expert_policy", "expert, episode, t, state, action",
     {"n_states": 3, "n_actions": 2, "epsilon": 1, "delta": 1e-5, "default_action": 0,
      "seed": 3}),
    ("dp_q_learn", "state / 2.0, action, reward, state / 2.0",
     {"n_actions": 2, "gamma": 0.9, "rmin": 0, "rmax": 1, "lr": 0.01, "T": 240, "B": 16,
      "K": 5, "k": 200, "epsilon": 1, "delta": 1e-5, "seed": 3}),
]


def route(con, value, literal_sql=None):
    if literal_sql:
        return con.execute(f"SELECT dprl_debug({literal_sql})").fetchone()[0]
    return con.execute("SELECT dprl_debug(?)", (value,)).fetchone()[0]


def fill(con):
    con.execute("CREATE TABLE steps(episode, t, state, reward, action, behavior, target, expert)")
    con.executemany("INSERT INTO steps VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    [(e, t, s, r, a, b, p, e % 5) for e, t, s, r, a, b, p in STEPS])


def literal(o):
    return "'" + json.dumps(o).replace("'", "''") + "'"


def test_same_result_no_conversion():
    con = connect()
    fill(con)
    debug = con.execute("SELECT dprl_debug()").fetchone()[0]
    for fn, args, o in CALLS:
        lit = con.execute(f"SELECT {fn}({args}, {literal(o)}) FROM steps").fetchone()[0]
        bound = con.execute(f"SELECT {fn}({args}, ?) FROM steps", (json.dumps(o),)).fetchone()[0]
        check(lit is not None and bound == lit, f"{fn}: bound options give the literal's result",
              f"{lit!r:.200}\n{bound!r:.200}")
        named = con.execute(f"SELECT {fn}({args}, :o) FROM steps GROUP BY episode % 2",
                            {"o": json.dumps(o)}).fetchall()
        check(len(named) == 2, f"{fn}: a named parameter in a GROUP BY")
    o = json.dumps(CALLS[0][2])
    check(route(con, o) == "bytes" and route(con, None, literal(CALLS[0][2])) == "bytes",
          "UTF-8: bound and literal options are compared as bytes, no copy per row")
    check(route(con, o.encode()) == "converted", "options given as a blob are converted")
    check(con.execute("SELECT dprl_debug()").fetchone()[0] == debug,
          "dprl_debug() is the same after the releases: it keeps nothing of the rows")


def test_utf16_converts_and_checks():
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "u16.db")
        con = connect(path)
        con.execute("PRAGMA encoding = 'UTF-16le'")
        fill(con)
        fn, args, o = CALLS[0]
        lit = con.execute(f"SELECT {fn}({args}, {literal(o)}) FROM steps").fetchone()[0]
        bound = con.execute(f"SELECT {fn}({args}, ?) FROM steps", (json.dumps(o),)).fetchone()[0]
        check(bound == lit, "UTF-16: bound options give the literal's result")
        check(route(con, None, literal(o)) == "converted",
              "UTF-16: the options are compared after conversion")
        # still checked: options that change between rows are refused
        msg = sql_error(con, f"SELECT {fn}({args}, json_set(?, '$.seed', t)) FROM steps",
                        (json.dumps(o),))
        check(msg == f"{fn}: options must be the same for every row",
              "UTF-16: options that change between rows are still refused", msg)
        con.close()


def test_changing_options_refused():
    con = connect()
    fill(con)
    for fn, args, o in CALLS:
        msg = sql_error(con, f"SELECT {fn}({args}, CASE WHEN episode < 20 THEN ?1 ELSE ?2 END) "
                             "FROM steps", (json.dumps(o), json.dumps(o) + " "))
        check(msg == f"{fn}: options must be the same for every row",
              f"{fn}: two bound texts that differ by a space are refused", msg)


run([test_same_result_no_conversion, test_utf16_converts_and_checks,
     test_changing_options_refused])
