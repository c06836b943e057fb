"""Run by tests/packaging/test_python.sh from a fresh directory, with the
Python of a venv the wheel was installed into (or Debian's python3 with
that venv's site-packages on PYTHONPATH, for apsw):

    python use_python.py VERSION COMMIT SITE_PACKAGES [apsw]

Prints "ok ..." / "not ok ..." lines.  Uses only the installed package and
the standard library (no file of the repository)."""
import json
import os
import sqlite3
import sys

version, commit, site = sys.argv[1], sys.argv[2], os.path.realpath(sys.argv[3])
use_apsw = len(sys.argv) > 4 and sys.argv[4] == "apsw"
failed = 0


def check(cond, name, detail=""):
    global failed
    print(("ok " if cond else "not ok ") + name)
    if not cond:
        failed += 1
        for line in str(detail).splitlines():
            print("#  ", line)


import dprl  # noqa: E402  (the installed package, not the repository's)

where = "apsw" if use_apsw else "sqlite3"
check(os.path.realpath(dprl.__file__).startswith(site + os.sep),
      f"[{where}] dprl is imported from the install", dprl.__file__)
check(dprl.__version__ == version, f"[{where}] dprl.__version__ is {version}",
      dprl.__version__)
so = dprl.path()
check(os.path.isabs(so) and os.path.realpath(so).startswith(site + os.sep)
      and os.path.isfile(so), f"[{where}] dprl.path() is the installed dprl.so", so)

if use_apsw:
    import apsw
    con = apsw.Connection(":memory:")
else:
    con = sqlite3.connect(":memory:")
dprl.load(con)


def one(sql, params=()):
    return list(con.execute(sql, params))[0][0]


check(one("SELECT dprl_version()") == version, f"[{where}] dprl.load(con): dprl_version()")
debug = one("SELECT dprl_debug()")
check(f"\ncommit {commit}\n" in debug, f"[{where}] dprl_debug() names commit {commit}", debug)

con.execute("CREATE TABLE steps(episode, t, state, reward)")
con.execute("INSERT INTO steps VALUES (1,0,0,1),(1,1,1,0),(1,2,2,1),(2,0,1,1),(2,1,2,1),(3,0,2,0)")
r = json.loads(one("SELECT dp_lsw(episode, t, state, reward, '{\"n_states\": 3, \"gamma\": 0.5, \"rmin\": 0, \"rmax\": 1, "
                   "\"epsilon\": 1, \"delta\": 1e-5, \"perturb\": \"statistics\"}') FROM steps"))
check(r.get("mechanism") == "dp_lsw" and r.get("private") is True and len(r["values"]) == 3
      and "seeded" not in r, f"[{where}] a private dp_lsw release", r)

# Options passed as a bound parameter take the per-row route of a literal:
# compared as the bytes they came in, never copied (dprl_debug(options)).
opts = json.dumps({"n_states": 3, "gamma": 0.5, "rmin": 0, "rmax": 1, "epsilon": 1,
                   "delta": 1e-5, "perturb": "statistics"})
r = json.loads(one("SELECT dp_lsw(episode, t, state, reward, ?) FROM steps", (opts,)))
check(r.get("private") is True and one("SELECT dprl_debug(?)", (opts,)) == "bytes",
      f"[{where}] bound options: compared as bytes, as a literal", one("SELECT dprl_debug(?)", (opts,)))

# load() switches extension loading off again: SQL cannot load libraries.
try:
    one("SELECT load_extension(?)", (so,))
    err = None
except Exception as e:  # sqlite3.OperationalError or apsw's error
    err = str(e)
check(err is not None and "not authorized" in err,
      f"[{where}] extension loading is off again after dprl.load", err)

if not use_apsw:
    class NoLoadExtension:  # what pyenv's sqlite3.Connection looks like
        def execute(self, sql):
            pass
    try:
        dprl.load(NoLoadExtension())
        msg = None
    except RuntimeError as e:
        msg = str(e)
    check(msg is not None and "apsw" in msg and "/usr/bin/python3" in msg
          and "enable-loadable-sqlite-extensions" in msg,
          "a connection without enable_load_extension: an error pointing to apsw "
          "and Debian's python3", msg)
    try:
        dprl.load("trajectories.db")
        msg = None
    except TypeError as e:
        msg = str(e)
    check(msg is not None and "'str'" in msg, "dprl.load of a non-connection: TypeError", msg)

sys.exit(1 if failed else 0)
