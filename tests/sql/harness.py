"""Shared helpers for the SQL-level tests: load dprl, print ok / not ok.

Each check prints one line ("ok name" or "not ok name") so tests/run.sh
can count them.  Uses only the standard library (the Python that Debian
ships has sqlite3 with load_extension).
"""
import json
import math
import os
import sqlite3
import sys
import traceback

SO = os.environ.get("DPRL_SO", "./dprl.so")
_failed = 0
# tests/run.sh sets DPRL_TEST_SIZES=small for the sanitized build, where a
# draw costs ten times more: the statistical tests then take fewer draws and
# derive their margins from the count they took (the same assertions).
SMALL = os.environ.get("DPRL_TEST_SIZES") == "small"


def sized(full, small):
    """The number of draws (or rows) of a statistical test: full, or small
    under DPRL_TEST_SIZES=small.  Margins must be computed from it."""
    return small if SMALL else full


def connect(path=":memory:"):
    con = sqlite3.connect(path)
    con.enable_load_extension(True)
    con.load_extension(os.path.abspath(SO))
    con.enable_load_extension(False)
    return con


def check(cond, name, detail=""):
    global _failed
    if cond:
        print("ok", name)
    else:
        _failed += 1
        print("not ok", name)
        if detail:
            for line in str(detail).splitlines():
                print("#  ", line)
    sys.stdout.flush()
    return cond


def close(a, b, rel=1e-12, abs_=1e-12):
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(close(x, y, rel, abs_) for x, y in zip(a, b))
    return abs(a - b) <= abs_ + rel * max(abs(a), abs(b))


def check_close(a, b, name, rel=1e-12, abs_=1e-12):
    return check(close(a, b, rel, abs_), name, f"got  {a}\nwant {b}")


def sql_error(con, sql, params=()):
    """The error message of sql, or None if it ran."""
    try:
        con.execute(sql, params).fetchall()
    except sqlite3.Error as e:
        return str(e)
    return None


def check_error(con, sql, expected, name, params=()):
    msg = sql_error(con, sql, params)
    return check(msg == expected, name, f"got  {msg!r}\nwant {expected!r}")


def opts(**kw):
    return json.dumps(kw)


def run(tests):
    """Run test functions; an exception is a failure, not a crash."""
    for t in tests:
        try:
            t()
        except Exception:  # noqa: BLE001 - report and go on
            check(False, t.__name__ + " raised", traceback.format_exc())
    sys.exit(1 if _failed else 0)


def normal_cdf(x):
    return 0.5 * math.erfc(-x / math.sqrt(2))


def interrupted(con, sql, args, after=0.2):
    """Run sql, con.interrupt() from another thread after `after` seconds:
    (CPU seconds the calling thread spent from the interrupt to the end of
    the call, error or None).  CPU time, not wall time: on a loaded machine
    the thread may wait to be scheduled, which says nothing about dprl; and
    the CPU time of this thread only, because the process's also counts
    threads that are not the query's (OpenBLAS workers spin for a while
    after they start, on every core of the machine).  The work the query's
    thread does after the interrupt is what must be short."""
    import threading
    import time
    mark = {}
    clock = time.pthread_getcpuclockid(threading.get_ident())

    def fire():
        mark["cpu"] = time.clock_gettime(clock)
        con.interrupt()
    timer = threading.Timer(after, fire)
    timer.start()
    try:
        con.execute(sql, args).fetchall()
        err = None
    except sqlite3.Error as e:
        err = (str(e), getattr(e, "sqlite_errorcode", None))
    timer.cancel()
    timer.join()
    end = time.clock_gettime(clock)
    return (end - mark["cpu"] if "cpu" in mark else -1.0), err


def progress_stopped(con, sql, args, after):
    """Run sql with a progress handler that asks to stop `after` seconds in:
    (CPU seconds of the process from the handler's first "stop" to the end
    of the call, or -1 if it never asked; the error message or None)."""
    import time
    stop_cpu, deadline = [], time.monotonic() + after

    def handler():
        if time.monotonic() > deadline:
            if not stop_cpu:
                stop_cpu.append(time.process_time())
            return 1
        return 0
    con.set_progress_handler(handler, 100)
    err = sql_error(con, sql, args)
    con.set_progress_handler(None, 0)
    return (time.process_time() - stop_cpu[0] if stop_cpu else -1), err
