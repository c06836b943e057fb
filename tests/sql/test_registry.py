"""What loading dprl adds: exactly these functions and modules, noisy ones
not deterministic (sqlite-vec's practice: the test lists them all).  The
table-valued functions run caller SQL, so each is SQLITE_VTAB_DIRECTONLY;
SQLite offers no way to read that flag back, so it is checked by behaviour:
refused in a view or trigger of the schema ("unsafe use of virtual table"),
even with PRAGMA trusted_schema = ON, and working in top-level statements.
Calls nested through the SQL text stop at a fixed depth with a message.
Every function that can write (the privacy ledger) is SQLITE_DIRECTONLY and
not SQLITE_INNOCUOUS, read back from pragma_function_list, and so are
dp_mdp_value and dp_mdp_plan (they can run long).  Functions whose results
go through LAPACK (dp_plan, dp_mdp_value, dp_mdp_plan: the last bits change
with the machine and the BLAS thread count) are not deterministic: an index
on them would miss rows.  tests/sql/test_mdp_limits.py tries the index."""
import os
import sqlite3
import subprocess
import sys
import tempfile

from harness import SO, check, connect, run

FUNCTIONS = {  # name: (number of arguments, deterministic?)
    "dprl_version": (0, True),
    "dprl_debug": (0, False),  # also 1 argument (how options are compared)
    "dp_lsw": (5, False),
    "dp_lsl": (5, False),
    "dp_lsw_from_stats": (4, False),
    "dp_lsl_from_stats": (4, False),
    "dp_fv_stats": (5, True),  # exact statistics, no noise (not private)
    "dp_prefix_calibrate": (1, True),
    "dprl_prefix_key": (2, False),  # dp_prefix_stable's scans; NULL from SQL
    "dprl_row": (-1, False),  # how dp_q_noise and dp_first_visit read; NULL from SQL
    "dp_q_calibrate": (1, True),
    "dp_plan": (1, False),  # dense features go through LAPACK: not bit-reproducible
    "dprl_budget": (3, False),  # also 4 arguments (with options)
    "dprl_budget_remaining": (1, False),
    "dprl_budget_plan": (2, False),  # reads the ledger
    "dprl_ledger_fits": (6, True),  # the budget check inside the ledger's INSERT
    "dprl_ledger_total": (1, True),  # ... and its sums, rounded up
    "dp_q_learn": (5, False),
    "dp_q_value": (3, True),
    "dp_is_value": (6, False),
    "dp_mdp": (6, False),  # also 7 arguments (with the outcome)
    "dp_mdp_value": (2, False),  # also 3 arguments (with options); LAPACK, can run long
    "dp_mdp_plan": (1, False),  # also 2 arguments (with options); LAPACK, can run long
    "dp_expert_policy": (6, False),
}
MODULES = {"dp_first_visit", "dp_prefix_stable", "dp_q_noise"}
DETERMINISTIC = 0x800
DIRECTONLY = 0x80000
INNOCUOUS = 0x200000
# Functions that write the database (the ledger), or that can run long on a
# public input (up to 10^8 sweeps or 10^5 bootstrap draws): direct-only.
WRITERS = {"dp_lsw", "dp_lsl", "dp_lsw_from_stats", "dp_lsl_from_stats", "dp_q_learn", "dp_is_value",
           "dp_mdp", "dp_expert_policy", "dprl_budget", "dprl_budget_remaining", "dprl_budget_plan",
           "dp_mdp_value", "dp_mdp_plan"}
UNSAFE = "unsafe use of virtual table"
FV_OPTS = '{"n_states": 1, "gamma": 0.5, "rmin": 0, "rmax": 1}'
PS_OPTS = '{"epsilon": 1, "delta": 0.1, "p_min": 0.1, "T": 1, "L": 1}'
# One top-level-usable call of each table-valued function.
CALLS = {
    "dp_first_visit": f"dp_first_visit('SELECT * FROM st', '{FV_OPTS}')",
    "dp_prefix_stable": "dp_prefix_stable('SELECT * FROM st', 'SELECT * FROM pol', "
                        f"'{PS_OPTS}')",
    "dp_q_noise": "dp_q_noise('SELECT * FROM pts', "
                  "'{\"sigma\": 1, \"beta\": 1, \"n_actions\": 1}')",
}


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
    # the statistics forms also take the shards' bucket columns (7 arguments),
    # and the statistics' max_states (5, and 8 with the bucket columns)
    want |= {(f, n) for f in ("dp_lsw_from_stats", "dp_lsl_from_stats") for n in (5, 7, 8)}
    # dp_prefix_stable's one pass hands a sampled row over with its values
    want |= {("dprl_prefix_key", 5)}
    want |= {("dprl_budget", 4)}
    want |= {("dp_mdp_value", 3), ("dp_mdp_plan", 2), ("dprl_debug", 1), ("dp_mdp", 7)}
    check(set(added) == want, "loading adds exactly the listed functions",
          f"extra {set(added) - want}, missing {want - set(added)}")
    for (name, narg), flags in added.items():
        if name in FUNCTIONS:
            det = FUNCTIONS[name][1]
            check(bool(flags & DETERMINISTIC) == det,
                  f"{name} is {'' if det else 'not '}SQLITE_DETERMINISTIC")
        if name in WRITERS:
            check(flags & DIRECTONLY and not flags & INNOCUOUS,
                  f"{name}/{narg} writes the ledger or runs long: SQLITE_DIRECTONLY, not "
                  "SQLITE_INNOCUOUS",
                  hex(flags))
    check(m1 - m0 == MODULES, "loading adds exactly the listed table-valued functions",
          f"{m1 - m0}")


def tables(con):
    con.execute("CREATE TABLE st(episode, t, state, reward)")
    con.execute("CREATE TABLE pol(expert, state, action, prob)")
    con.execute("INSERT INTO pol VALUES ('dr1', 0, 0, 1.0)")
    con.execute("CREATE TABLE pts(state, action, q)")
    con.execute("INSERT INTO pts VALUES (0.5, 0, 1.0)")


def error_of(con, sql):
    try:
        con.execute(sql).fetchall()
    except sqlite3.Error as e:
        return str(e)
    return None


def test_direct_only():
    con = connect()
    tables(con)
    con.execute("CREATE TABLE sink(n)")
    con.execute("CREATE TABLE log(x)")
    for name, call in CALLS.items():
        con.execute(f"CREATE VIEW v_{name} AS SELECT * FROM {call}")
        for trusted in ("ON", "OFF"):
            con.execute(f"PRAGMA trusted_schema = {trusted}")
            msg = error_of(con, f"SELECT * FROM v_{name}")
            check(msg is not None and UNSAFE in msg,
                  f"{name} is DIRECTONLY: refused inside a view (trusted_schema {trusted})", msg)
        con.execute("PRAGMA trusted_schema = ON")
        con.execute(f"CREATE TRIGGER tr_{name} AFTER INSERT ON log BEGIN "
                    f"INSERT INTO sink SELECT count(*) FROM {call}; END")
        msg = error_of(con, "INSERT INTO log VALUES (1)")
        check(msg is not None and UNSAFE in msg, f"{name}: refused inside a trigger", msg)
        con.execute(f"DROP TRIGGER tr_{name}")
        # top-level statements: plain, in a CTE, in a subquery
        for sql in (f"SELECT count(*) FROM {call}",
                    f"WITH x AS (SELECT * FROM {call}) SELECT count(*) FROM x",
                    f"SELECT (SELECT count(*) FROM {call})"):
            msg = error_of(con, sql)
            check(msg is None, f"{name} works in a top-level statement: {sql[:40]}...", msg)
    check(con.execute("SELECT count(*) FROM sink").fetchone()[0] == 0,
          "no trigger ever ran a table-valued function")
    # the internal functions the reads call (side effects on a bound
    # pointer) are direct-only too
    for fn, args in (("dprl_row", "NULL, 1"), ("dprl_prefix_key", "NULL, 1")):
        con.execute(f"CREATE VIEW v_{fn} AS SELECT {fn}({args})")
        msg = error_of(con, f"SELECT * FROM v_{fn}")
        check(msg is not None and f"unsafe use of {fn}()" in msg,
              f"{fn} is DIRECTONLY: refused inside a view", msg)


def test_attached_trigger():
    # A database file someone else wrote, ATTACHed: its trigger used to
    # copy main's tables into itself through the SQL text of dp_first_visit.
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "other.db")
        o = sqlite3.connect(path)
        o.execute("CREATE TABLE log(x)")
        o.execute("CREATE TABLE loot(episode, state, t_first, ret)")
        o.execute("CREATE TRIGGER grab AFTER INSERT ON log BEGIN INSERT INTO loot "
                  f"SELECT * FROM dp_first_visit('SELECT name, 0, 0, 0 FROM main.secret', "
                  f"'{FV_OPTS}'); END")
        o.commit()
        o.close()
        con = connect()
        con.execute("CREATE TABLE secret(name)")
        con.execute("INSERT INTO secret VALUES ('alice, HIV+')")
        con.execute("ATTACH ? AS other", (path,))
        msg = error_of(con, "INSERT INTO other.log VALUES (1)")
        loot = con.execute("SELECT * FROM other.loot").fetchall()
        check(msg is not None and UNSAFE in msg and loot == [],
              "a trigger in an ATTACHed file cannot run dp_first_visit (nothing copied)",
              f"{msg} {loot}")
        con.close()


def test_untrusted_trigger_cannot_spend():
    # With trusted_schema OFF, a trigger in an untrusted ATTACHed file used
    # to spend main's budget through dp_lsw (registered SQLITE_INNOCUOUS).
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "other.db")
        o = sqlite3.connect(path)
        o.execute("CREATE TABLE log(x)")
        o.execute("CREATE TABLE loot(v)")
        opts = ('{"n_states": 1, "gamma": 0.5, "rmin": 0, "rmax": 1, "epsilon": 0.9, '
                '"delta": 1e-6, "perturb": "statistics", "budget": "b"}')
        o.execute("CREATE TRIGGER spend AFTER INSERT ON log BEGIN INSERT INTO loot SELECT "
                  f"dp_lsw(1, 0, 0, 1.0, '{opts}'); END")
        o.commit()
        o.close()
        con = connect(os.path.join(d, "main.db"))
        con.isolation_level = None
        con.execute("PRAGMA trusted_schema = OFF")
        con.execute("SELECT dprl_budget('b', 1, 1e-5, '{\"unit\": \"episode\", \"accountant\": \"basic\"}')").fetchone()
        con.execute("ATTACH ? AS other", (path,))
        msg = error_of(con, "INSERT INTO other.log VALUES (1)")
        spent = con.execute("SELECT count(*) FROM dprl_ledger").fetchone()[0]
        check(msg is not None and "unsafe use of dp_lsw()" in msg and spent == 0,
              "trusted_schema OFF: a trigger in an ATTACHed file cannot spend main's budget",
              f"{msg} rows={spent}")
        con.close()


def test_shell_view_attack():
    # In the sqlite3 shell, a view stored in an untrusted file used to run
    # writefile() (forbidden in views) through the caller SQL of dp_*.
    shell = os.environ.get("SQLITE3", "sqlite3")
    with tempfile.TemporaryDirectory() as d:
        db = os.path.join(d, "evil.db")
        target = {n: os.path.join(d, f"pwned_{n}") for n in ("fv", "ps")}
        o = sqlite3.connect(db)
        o.execute("CREATE TABLE st(episode, t, state, reward)")
        o.execute("CREATE VIEW fv AS SELECT * FROM dp_first_visit("
                  f"'SELECT 1, 1, 0, writefile(''{target['fv']}'', ''owned'')', '{FV_OPTS}')")
        o.execute("CREATE VIEW ps AS SELECT * FROM dp_prefix_stable('SELECT * FROM st', "
                  f"'SELECT 1, 0, 0, writefile(''{target['ps']}'', ''owned'')', '{PS_OPTS}')")
        o.commit()
        o.close()
        for n in ("fv", "ps"):
            r = subprocess.run([shell, db, f".load {os.path.abspath(SO)}", f"SELECT * FROM {n}"],
                               capture_output=True, text=True, timeout=60)
            check(UNSAFE in r.stderr and not os.path.exists(target[n]),
                  f"sqlite3 shell: a view cannot make {'dp_first_visit' if n == 'fv' else 'dp_prefix_stable'} "
                  "call writefile()", f"{r.stdout} {r.stderr} exists={os.path.exists(target[n])}")


def nested(depth, inner="SELECT episode, t, state, reward FROM st"):
    """dp_first_visit called depth times, each inside the SQL text of the
    next (quotes doubled at every level)."""
    sql = inner
    for _ in range(depth):
        q = sql.replace("'", "''")
        o = FV_OPTS.replace("'", "''")
        sql = ("SELECT episode, state, t_first, first_visit_return "
               f"FROM dp_first_visit('{q}', '{o}')")
    return sql


def test_nesting():
    con = connect()
    tables(con)
    too_deep = "dp_first_visit: caller SQL nested too deeply (> 8 levels)"
    msg = error_of(con, nested(8))
    check(msg is None, "8 nested calls through the SQL text work", msg)
    for depth in (9, 12):
        msg = error_of(con, nested(depth))
        check(msg is not None and msg.endswith(too_deep) and
              msg.startswith("dp_first_visit: trajectories_sql: dp_first_visit: "),
              f"{depth} nested calls: a clear error", msg)
    check(error_of(con, nested(2)) is None, "the connection works after the error")
    # A query that reads its own text from a table recurses without end:
    # it used to overflow the stack (a crash), so it runs in a child process.
    call = ("SELECT episode, state, t_first, first_visit_return "
            f"FROM dp_first_visit((SELECT s FROM q), '{FV_OPTS}')")
    script = f"""
import sqlite3, sys
con = sqlite3.connect(":memory:")
con.enable_load_extension(True)
con.load_extension({os.path.abspath(SO)!r})
con.execute("CREATE TABLE q(s)")
call = {call!r}
con.execute("INSERT INTO q VALUES (?)", (call,))
try:
    con.execute(call).fetchall()
    print("no error")
except sqlite3.Error as e:
    print(str(e)[-200:])
"""
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                       timeout=120)
    check(r.returncode == 0 and r.stdout.strip().endswith(too_deep),
          "a self-referencing query: a clear error, no crash",
          f"status {r.returncode}: {r.stdout[-300:]} {r.stderr[-500:]}")


run([test_registry, test_direct_only, test_attached_trigger, test_untrusted_trigger_cannot_spend, test_shell_view_attack,
     test_nesting])
