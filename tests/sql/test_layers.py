"""The layer rule of ext/ (ARCHITECTURE.md): each folder includes only the
folders below it, only the SQLite glue (sql_*.c, sql_*.h, dprl.c) includes
SQLite, no file grows past 600 lines without saying why at its top, and
no file but base/core.c converts numbers with the C library (printf,
strtod and their kin follow the host's LC_NUMERIC: dprl_snprintf and
dprl_strtod do not).

  base             <- dp, rows <- policy_eval, prefix_stable, q_learning, mdp, ope, expert
                   <- study (plans over every mechanism)
                   <- sqlite (the glue every mechanism shares) <- dprl.c
A mechanism's core may use base, dp and rows; its sql_*.c glue also
sqlite/.  Mechanisms never include one another; study/ may include them
all (it plans each) and, in its glue, sqlite/.  The unit tests follow the
same rule, each named for its folder: tests/unit/test_<folder>_<topic>.c."""
import os
import re

from harness import check, run

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXT = os.path.join(ROOT, "ext")
MECHANISMS = {"policy_eval", "prefix_stable", "q_learning", "mdp", "ope", "expert"}
ALLOWED = {
    "base": {"base"},
    "dp": {"base", "dp"},
    "rows": {"base", "rows"},
    "sqlite": {"base", "dp", "rows", "sqlite"},
}
for m in MECHANISMS:
    ALLOWED[m] = {"base", "dp", "rows", m}
ALLOWED["study"] = {"base", "dp", "rows", "study"} | MECHANISMS
MAX_LINES = 600
LONG_REASON = "Longer than 600 lines because"


def files():
    for folder in sorted(os.listdir(EXT)):
        d = os.path.join(EXT, folder)
        if os.path.isdir(d):
            for f in sorted(os.listdir(d)):
                if f.endswith((".c", ".h")):
                    yield folder, f, os.path.join(d, f)


# C library calls whose numbers follow the host's locale; (?<![\w]) keeps
# dprl_snprintf and sqlite3_snprintf (SQLite's printf ignores the locale).
LOCALE_CALLS = re.compile(r"(?<![\w])(v?s?n?printf|fprintf|strto[dfl]d?|atof|sscanf|scanf|"
                          r"strtod_l|setlocale)\s*\(")


def locale_calls(text):
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)  # comments may name them
    return sorted(set(m.group(1) for m in LOCALE_CALLS.finditer(text)))


def test_locale_calls():
    for folder, name, path in files():
        if (folder, name) == ("base", "core.c"):
            continue
        bad = locale_calls(open(path, encoding="utf-8").read())
        check(not bad, f"{folder}/{name}: numbers only through dprl_snprintf / dprl_strtod", bad)
    check(locale_calls('x = strtod(s, 0); snprintf(b, 8, "%g", x);') == ["snprintf", "strtod"],
          "a bare strtod or snprintf is caught")
    check(locale_calls("dprl_snprintf(b, 8, f); sqlite3_snprintf(8, b, f); /* strtod( */") == [],
          "dprl_snprintf, sqlite3_snprintf and comments pass")


def test_layers():
    seen = 0
    folders = set()
    for folder, name, path in files():
        seen += 1
        folders.add(folder)
        text = open(path, encoding="utf-8").read()
        glue = name.startswith("sql_")
        allowed = ALLOWED.get(folder, set()) | ({"sqlite"} if glue else set())
        bad = [inc for inc in re.findall(r'#include "([a-z_]+)/[a-z_]+\.h"', text)
               if inc not in allowed]
        check(not bad, f"{folder}/{name} includes only {sorted(allowed)}", f"includes {bad}")
        flat = re.findall(r'#include "([a-z_]+\.h)"', text)
        check(not flat or (folder == "" and name.startswith("dprl")),
              f"{folder}/{name}: every include names its folder", flat)
        sqlite = re.findall(r"#include <(sqlite3(?:ext)?\.h)>", text)
        check(glue or not sqlite, f"{folder}/{name}: only the glue includes SQLite", sqlite)
        lines = text.count("\n")
        check(lines <= MAX_LINES or LONG_REASON in "\n".join(text.splitlines()[:40]),
              f"{folder}/{name}: {lines} lines, at most {MAX_LINES} or the reason at its top")
    check(folders == set(ALLOWED), "ext/ has exactly the folders of the layer rule", folders)
    check(seen > 40, "the check saw the sources", seen)
    # the rule can fail: a mechanism including another is caught
    probe = '#include "q_learning/q_calibrate.h"\n'
    bad = [inc for inc in re.findall(r'#include "([a-z_]+)/[a-z_]+\.h"', probe)
           if inc not in ALLOWED["policy_eval"]]
    check(bad == ["q_learning"], "a mechanism's include of another mechanism is caught")


UNIT = os.path.join(ROOT, "tests", "unit")
UNIT_FOLDERS = set(ALLOWED) - {"sqlite"}  # the glue has no unit tests (it needs SQLite)


def unit_folder(name):
    """The ext/ folder of tests/unit/test_<folder>_<topic>.c or util_<folder>.h
    (util.h and check.h: base); None when the name follows neither."""
    if name in ("util.h", "check.h"):
        return "base"
    for folder in sorted(UNIT_FOLDERS, key=len, reverse=True):
        if re.fullmatch(rf"test_{folder}_[a-z0-9_]+\.c|util_{folder}\.h", name):
            return folder
    return None


def test_unit_tests():
    """The unit tests follow ext/: each is test_<folder>_<topic>.c (the
    Makefile links that folder and those it may include), includes only what
    its folder may, and has at most 600 lines, as the headers they share."""
    names = sorted(n for n in os.listdir(UNIT) if n.endswith((".c", ".h")))
    for name in names:
        folder = unit_folder(name)
        check(folder is not None, f"tests/unit/{name} is named for a folder of ext/")
        text = open(os.path.join(UNIT, name), encoding="utf-8").read()
        bad = [inc for inc in re.findall(r'#include "([a-z_]+)/[a-z_]+\.h"', text)
               if inc not in ALLOWED.get(folder, set())]
        check(not bad, f"tests/unit/{name} includes only what {folder}/ may", f"includes {bad}")
        lines = text.count("\n")
        check(lines <= MAX_LINES, f"tests/unit/{name}: {lines} lines, at most {MAX_LINES}")
    check(sum(n.endswith(".c") for n in names) > 30, "the check saw the unit tests", len(names))
    check(unit_folder("test_mdp_eval_solve.c") == "mdp" and unit_folder("test_q_learning_cancel.c")
          == "q_learning" and unit_folder("util_dp.h") == "dp", "names give their folder")
    check(unit_folder("test_gpq.c") is None and unit_folder("test_sqlite_glue.c") is None
          and unit_folder("test_mdp.c") is None, "a name without a folder and topic is caught")


run([test_layers, test_locale_calls, test_unit_tests])
