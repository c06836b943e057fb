"""Every study of docs/clients.md, run as written (make test-clients).

The guide is the test's input: each ```r, ```python or ```sh block is a
study, and the ```text block right after it is its output.  Each study
runs in a fresh directory laid out like the repository root (dprl.so, the
build under test, and samples/), with HOME there too (litecli writes its
configuration), stderr into stdout.  Checks, for each study:
- it runs (R and Python exit 0) and prints exactly the output shown;
- its study.db, read back with Python's sqlite3: the log's 29,627 rows with
  typed columns, one budget (epsilon 1, delta 1e-5, unit episode), and one
  ledger row, dp_lsw's at (0.5, 1e-6) with its zCDP rho, so the release
  at epsilon 1 left none;
- the output has dprl's refusal of that release, naming its budget.
Prints ok / not ok lines, then "N passed, M failed".
  DPRL_SO (default ./dprl.so), PYTHON, RSCRIPT: what to run
  --show: print each study's output instead (to write the guide)
"""
import csv
import os
import re
import sqlite3
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GUIDE = os.path.join(ROOT, "docs", "clients.md")
SO = os.path.abspath(os.environ.get("DPRL_SO", os.path.join(ROOT, "dprl.so")))
PYTHON = os.environ.get("PYTHON", "/usr/bin/python3")
RUNNERS = {"r": [os.environ.get("RSCRIPT", "Rscript"), "study.R"],
           "python": [PYTHON, "study.py"],
           "sh": ["sh", "study.sh"]}
EXT = {"r": "R", "python": "py", "sh": "sh"}


def icu_csv():
    """(rows, episodes, sum of rewards) of samples/icu.csv, read with csv."""
    with open(os.path.join(ROOT, "samples", "icu.csv"), newline="") as f:
        rows = list(csv.DictReader(f))
    return len(rows), len({r["episode"] for r in rows}), sum(float(r["reward"]) for r in rows)


def reference_rho():
    """The rho dp_lsw charges for the guide's release at (0.5, 1e-6), charged
    here through Python's sqlite3 on a budget in memory."""
    con = sqlite3.connect(":memory:", isolation_level=None)
    con.enable_load_extension(True)
    con.load_extension(SO)
    con.execute("CREATE TABLE steps(episode, t, state, reward)")
    con.execute("INSERT INTO steps VALUES (1, 0, 0, 1)")
    con.execute("""SELECT dprl_budget('ref', 1, 1e-5, '{"unit": "episode", "in_memory": true}')""")
    con.execute("""SELECT dp_lsw(episode, t, state, reward, '{"n_states": 10, "gamma": 0.9,
      "rmin": 0, "rmax": 1, "epsilon": 0.5, "delta": 1e-6, "perturb": "statistics",
      "budget": "ref"}') FROM steps""").fetchall()
    (rho,), = con.execute("SELECT rho FROM dprl_ledger").fetchall()
    con.close()
    return rho


# how the sqlite3 shell prints an error of SQL on its command line, and of a
# script on its standard input (the guide's shell study has both)
SHELL_FORMS = [("Error: stepping, ", r'^Error: stepping, dp_lsw: budget "shell" exceeded'),
               ("Runtime error near line N: ",
                r'^Runtime error near line \d+: dp_lsw: budget "shell" exceeded')]

passed = failed = 0


def check(cond, name, detail=""):
    global passed, failed
    if cond:
        passed += 1
        print("ok", name)
    else:
        failed += 1
        print("not ok", name)
        for line in str(detail).splitlines():
            print("#  ", line)
    sys.stdout.flush()
    return cond


def studies(text):
    """[(section, line, language, code, shown output)] of the guide."""
    blocks, section, lang, start, body = [], "", None, 0, []
    for n, line in enumerate(text.splitlines(), 1):
        if lang is None and line.startswith("## "):
            section = line[3:].strip()
        elif line.startswith("```"):
            if lang is None:
                lang, start, body = line[3:].strip(), n + 1, []
            else:
                blocks.append((section, start, lang, "\n".join(body) + "\n"))
                lang = None
        elif lang is not None:
            body.append(line)
    out = []
    for i, (section, start, lang, body) in enumerate(blocks):
        if lang in RUNNERS:
            shown = blocks[i + 1][3] if i + 1 < len(blocks) and blocks[i + 1][2] == "text" else None
            out.append((section, start, lang, body, shown))
    return out


def run_study(lang, code, d):
    os.symlink(SO, os.path.join(d, "dprl.so"))
    os.symlink(os.path.join(ROOT, "samples"), os.path.join(d, "samples"))
    with open(os.path.join(d, "study." + EXT[lang]), "w", encoding="utf-8") as f:
        f.write(code)
    env = dict(os.environ, HOME=d, LC_ALL="C.UTF-8")
    env.pop("XDG_CONFIG_HOME", None)
    t0 = time.time()
    p = subprocess.run(RUNNERS[lang], cwd=d, env=env, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True, timeout=600)
    return p.returncode, p.stdout, time.time() - t0


def lines(text):
    return [l.rstrip() for l in text.rstrip("\n").splitlines()]


def check_database(where, path, out, rho):
    if not check(os.path.exists(path), f"{where}: the study made study.db"):
        return
    con = sqlite3.connect(path)
    try:
        rows, episodes, rewards = icu_csv()
        steps = con.execute("SELECT count(*), sum(typeof(episode) = 'integer'), "
                            "sum(typeof(state) = 'integer'), sum(typeof(reward) = 'real'), "
                            "count(DISTINCT episode), sum(reward) FROM steps").fetchone()
        check(steps == (rows, rows, rows, rows, episodes, rewards),
              f"{where}: steps holds samples/icu.csv, typed (integer episodes and states, real rewards)",
              steps)
        budgets = con.execute("SELECT name, epsilon, delta, unit, accountant FROM dprl_budgets").fetchall()
        check(len(budgets) == 1 and budgets[0][1:] == (1.0, 1e-5, "episode", "zcdp"),
              f"{where}: one budget, epsilon 1 at delta 1e-5 for the episode, zCDP", budgets)
        ledger = con.execute("SELECT budget, function, epsilon, delta, spent, rho FROM dprl_ledger").fetchall()
        name = budgets[0][0] if budgets else None
        ok = (len(ledger) == 1 and ledger[0][:5] == (name, "dp_lsw", 0.5, 1e-6, 1)
              and ledger[0][5] == rho)
        check(ok, f"{where}: the ledger has dp_lsw's one row at (0.5, 1e-6), rho {rho}, "
                  "and none for the release refused", ledger)
    finally:
        con.close()
    refusal = (f'dp_lsw: budget "{name}" exceeded: this release needs rho 0.0280145; with it the '
               "budget's total would be epsilon 1.08867 at delta 1e-05")
    check(refusal in out and "this release was not returned" in out,
          f"{where}: the output has the refusal of the release at epsilon 1", out[-2000:])


def test_guide():
    text = open(GUIDE, encoding="utf-8").read()
    found = studies(text)
    langs = sorted({s[2] for s in found})
    check(len(found) == 6 and langs == ["python", "r", "sh"],
          "docs/clients.md has its six studies (R, Python, sh), each followed by its output",
          [(s[0], s[2]) for s in found])
    flat = " ".join(text.split())
    for rule in ["Load rows in one transaction, release in autocommit.", "`Error: stepping, `",
                 "scripts/install-deps.sh clients"]:
        check(rule in flat, f"docs/clients.md says {rule!r}")
    show = "--show" in sys.argv
    rho = reference_rho()
    check(0 < rho < 0.1, "a release at (0.5, 1e-6) charges a zCDP rho", rho)
    for section, start, lang, code, shown in found:
        where = f"docs/clients.md:{start} ({section})"
        with tempfile.TemporaryDirectory(prefix="dprl-clients-") as d:
            status, out, seconds = run_study(lang, code, d)
            if show:
                print(f"== {where}: exit {status}, {seconds:.1f} s\n{out}")
                continue
            print(f"# {where}: {seconds:.1f} s")
            if lang != "sh":
                check(status == 0, f"{where}: runs", f"exit status {status}\n{out[-3000:]}")
            check(shown is not None and lines(out) == lines(shown),
                  f"{where}: prints exactly the output shown",
                  "got:\n" + out[-3000:] if shown is not None else "no ```text block after it")
            check_database(where, os.path.join(d, "study.db"), out, rho)
            if section.startswith("The sqlite3 shell"):
                for label, form in SHELL_FORMS:
                    check(re.search(form, out, flags=re.M),
                          f"{where}: the shell prints {label!r} and the message", out)


try:
    test_guide()
except Exception:  # noqa: BLE001 - a crash is a failure, reported
    import traceback
    check(False, "test_clients.py raised", traceback.format_exc())
print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
