"""What loading dprl adds: exactly these functions and modules, noisy ones
not deterministic (sqlite-vec's practice: the test lists them all)."""
import sqlite3

from harness import SO, check, connect, run

FUNCTIONS = {  # name: (number of arguments, deterministic?)
    "dprl_version": (0, True),
    "dprl_debug": (0, False),
    "dp_lsw": (5, False),
    "dp_lsl": (5, False),
    "dp_lsw_from_stats": (4, False),
    "dp_lsl_from_stats": (4, False),
    "dp_prefix_calibrate": (1, True),
    "dp_q_calibrate": (1, True),
    "dp_q_learn": (5, False),
    "dp_q_value": (3, True),
}
MODULES = {"dp_first_visit", "dp_prefix_stable", "dp_q_noise"}
DETERMINISTIC = 0x800


def listing(con):
    f = {(r[0], r[1]): r[2] for r in con.execute(
        "SELECT name, narg, flags FROM pragma_function_list")}
    m = {r[0] for r in con.execute("SELECT name FROM pragma_module_list")}
    return f, m


def test_registry():
    plain = sqlite3.connect(":memory:")
    f0, m0 = listing(plain)
    f1, m1 = listing(connect())
    added = {k: v for k, v in f1.items() if k not in f0}
    want = {(n, a) for n, (a, _) in FUNCTIONS.items()}
    check(set(added) == want, "loading adds exactly the listed functions",
          f"extra {set(added) - want}, missing {want - set(added)}")
    for (name, narg), flags in added.items():
        if name in FUNCTIONS:
            det = FUNCTIONS[name][1]
            check(bool(flags & DETERMINISTIC) == det,
                  f"{name} is {'' if det else 'not '}SQLITE_DETERMINISTIC")
    check(m1 - m0 == MODULES, "loading adds exactly the listed table-valued functions",
          f"{m1 - m0}")


def test_direct_only():
    # dp_q_noise may write (its path table): not usable from a view, so a
    # database someone else wrote cannot make it write; the read-only
    # table-valued functions are.
    con = connect()
    con.execute("CREATE TABLE pts(state, action, q)")
    con.execute("INSERT INTO pts VALUES (0.5, 0, 1.0)")
    con.execute("CREATE VIEW v AS SELECT * FROM dp_q_noise('SELECT * FROM pts', "
                "'{\"sigma\": 1, \"beta\": 1, \"n_actions\": 1}')")
    try:
        con.execute("SELECT * FROM v").fetchall()
        ok = False
    except sqlite3.Error as e:
        ok = "unsafe use of virtual table" in str(e)
    check(ok, "dp_q_noise is DIRECTONLY: refused inside a view")
    con.execute("CREATE TABLE st(episode, t, state, reward)")
    con.execute("CREATE VIEW w AS SELECT * FROM dp_first_visit('SELECT * FROM st', "
                "'{\"n_states\": 1, \"gamma\": 0.5}')")
    check(con.execute("SELECT count(*) FROM w").fetchone()[0] == 0,
          "read-only table-valued functions work inside a view")


run([test_registry, test_direct_only])
