"""dprl in a Python host that localises: after
locale.setlocale(locale.LC_ALL, "de_DE.UTF-8") (or fr_FR), the C library's
printf writes "0,5" and strtod stops at a '.', in this process and so in
dprl.so.  Every number dprl writes or reads must still be the same bytes:
the whole of REFERENCE.md (every example, error, option and key table of
docs/reference.in.md, run against this build) is generated in the C
locale and again in each host locale, and the two must be equal; a few
results that broke are checked by name.  `make deps` generates both
locales (Debian's locales package, localedef).

Debian 12's SQLite 3.40 reads the reals of JSON text (json_extract,
json_each) with the C library's strtod, so in a German host it reads
dprl's "0.609" as 0; the REFERENCE.md comparison runs in a child process
with build/tests/libstrtod_c.so preloaded, which gives SQLite a strtod in
the "C" locale.  dprl never calls strtod (test_layers.py); what it reads
is checked here without the preload.
"""
import ctypes
import sqlite3
import subprocess
import json
import locale
import os
import sys

from harness import SMALL, SO, check, connect, run

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(ROOT, "docs"))
import gen_reference  # noqa: E402

LOCALES = ["de_DE.UTF-8", "fr_FR.UTF-8"]
TEMPLATE = open(os.path.join(ROOT, "docs", "reference.in.md"), encoding="utf-8").read()

LSW = ("SELECT dp_lsw(episode, t, state, reward, '{\"n_states\": 3, \"gamma\": 0.9, "
       "\"rmin\": 0, \"rmax\": 1, \"epsilon\": %s, \"delta\": 1e-5, \"seed\": 11}') FROM steps")


def libc_printf(x):
    libc = ctypes.CDLL(None)
    buf = ctypes.create_string_buffer(32)
    libc.snprintf(buf, 32, b"%.1f", ctypes.c_double(x))
    return buf.value.decode()


def named_results():
    """Results (or "error: message") of calls whose numbers broke in a host locale."""
    con = connect()
    con.executescript("CREATE TABLE steps(episode INTEGER, t INTEGER, state INTEGER, reward REAL);"
                      "INSERT INTO steps VALUES (1,0,0,0.5),(1,1,1,0.25),(2,0,2,1),(2,1,0,0.75);")

    def q(sql):
        try:
            return con.execute(sql).fetchone()[0]
        except sqlite3.Error as e:
            return f"error: {e}"
    out = {"lsw": q(LSW % "0.5"), "lsw21": q(LSW % "0.50000000000000000001"),
           "error": q(LSW % "-0.75"),
           "plan": q("SELECT dp_plan('{\"mechanism\": \"dp_lsw\", \"n_states\": 3, \"gamma\": 0.9, "
                     "\"rmin\": 0, \"rmax\": 1, \"epsilon\": 0.5, \"delta\": 1e-5, \"episodes\": 100, "
                     "\"visits\": [50, 40, 30]}')")}
    con.close()
    return out


def reference_in(name):
    """REFERENCE.md as generated in a child process in locale `name`."""
    shim = os.path.join(ROOT, "build", "tests", "libstrtod_c.so")
    if not os.path.exists(shim):
        return f"no {shim}: make unit builds it"
    env = dict(os.environ)
    env["LD_PRELOAD"] = ":".join(p for p in (env.get("LD_PRELOAD", ""), shim) if p)
    p = subprocess.run([sys.executable, os.path.abspath(__file__), "--reference", name],
                       capture_output=True, text=True, env=env, timeout=600)
    return p.stdout if p.returncode == 0 else f"exit {p.returncode}: {p.stderr[-2000:]}"


def test_locale(name, want_ref, want):
    try:
        locale.setlocale(locale.LC_ALL, name)
    except locale.Error:
        check(False, f"locale {name} is available", "make deps generates it (localedef)")
        return
    try:
        check(libc_printf(0.5) == "0,5", f"{name}: the C library in this process writes 0,5",
              libc_printf(0.5))
        got = named_results()
        check(got == want, f"{name}: dp_lsw, its error and dp_plan give the C locale's bytes",
              f"C: {want}\n{name}: {got}")
        try:
            check(json.loads(got["lsw"])["epsilon"] == 0.5,
                  f"{name}: dp_lsw's result is JSON with epsilon 0.5", got["lsw"][:200])
        except ValueError as e:
            check(False, f"{name}: dp_lsw's result is JSON with epsilon 0.5", f"{e}: {got['lsw'][:200]}")
        check(got["lsw21"] == got["lsw"], f"{name}: an epsilon of 21 digits reads as 0.5")
        check(got["error"].startswith("error: ") and "-0.75" in got["error"], f"{name}: the error shows -0.75",
              got["error"])
        if SMALL and name != LOCALES[0]:
            return  # the sanitized pass regenerates REFERENCE.md in one locale
        ref = reference_in(name)
        same = ref == want_ref
        detail = ""
        if not same:
            a, b = want_ref.splitlines(), ref.splitlines()
            diff = [(i, x, y) for i, (x, y) in enumerate(zip(a, b)) if x != y][:5]
            detail = "\n".join(f"line {i + 1}:\n  C: {x[:200]}\n  {name}: {y[:200]}" for i, x, y in diff)
            detail = detail or ref[:300]
        check(same, f"{name}: every example, error and table of REFERENCE.md is the same bytes",
              detail)
    finally:
        locale.setlocale(locale.LC_ALL, "C")


def main():
    locale.setlocale(locale.LC_ALL, "C")
    want_ref = gen_reference.generate(TEMPLATE, os.path.abspath(SO))
    want = named_results()
    check(want["error"].startswith("error: ") and "-0.75" in want["error"],
          "C locale: epsilon -0.75 is refused with its value", want["error"])
    for name in LOCALES:
        test_locale(name, want_ref, want)


if len(sys.argv) == 3 and sys.argv[1] == "--reference":
    locale.setlocale(locale.LC_ALL, sys.argv[2])
    assert libc_printf(0.5) == "0,5", libc_printf(0.5)
    sys.stdout.write(gen_reference.generate(TEMPLATE, os.path.abspath(SO)))
else:
    run([main])
