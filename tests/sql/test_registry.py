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
    "dp_q_calibrate": (1, True),
    "dp_q_learn": (5, False),
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


run([test_registry])
