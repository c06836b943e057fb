"""Every make target and sample that README.md, docs/ and samples/*/README.md
name runs in make test, in a quick form (small sizes, seconds).

The documented names are read from the docs (`make X` for every target X
of the Makefile, every path under samples/); each must have an entry in
RUNS below: either a quick run done here (the command, and a line its
output must contain), or the test that runs it (a file that must contain
the command).  A target or sample that the docs name and nothing runs
fails here, as does an entry that names a test which does not run it.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

from harness import SMALL, SO, check, run

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SO_ABS = os.path.abspath(SO)
SO_STEM = SO_ABS[:-3] if SO_ABS.endswith(".so") else SO_ABS
SQLITE3 = os.environ.get("SQLITE3", "sqlite3")
PY = sys.executable
DOCS = (["README.md"] + [os.path.join("docs", f) for f in sorted(os.listdir(os.path.join(ROOT, "docs")))
                         if f.endswith(".md")]
        + [os.path.join("samples", d, "README.md") for d in sorted(os.listdir(os.path.join(ROOT, "samples")))
           if os.path.exists(os.path.join(ROOT, "samples", d, "README.md"))])


def shell_sql(path, cwd):
    """A sample script for the sqlite3 shell, with its .load pointed at this build."""
    text = open(os.path.join(ROOT, path), encoding="utf-8").read()
    text = re.sub(r"^\.load \S+", f".load {SO_STEM}", text, flags=re.M)
    return [SQLITE3, "-bail", ":memory:"], text, cwd


# name -> ("here", argv | (argv, stdin, cwd), a line the output contains, seconds)
#       | ("in", file that runs it, the text that file must contain)
PAPER_ENV = {"RUNS": "2", "SIZES": "100,1000", "SWEEP_SIZES": "1000", "LAMBDAS": "10,1000"}
RUNS = {
    "make demo": ("here", lambda: shell_sql("samples/demo.sql", os.path.join(ROOT, "samples")),
                  "private_value", 60),
    "samples/demo.sql": ("same", "make demo"),
    "samples/clinic.sql": ("same", "make demo"),  # demo.sql .reads it
    "samples/icu.csv": ("in", "tests/sql/test_readme.py", "samples/icu.csv"),
    "samples/lsl.sql": ("here", lambda: shell_sql("samples/lsl.sql", os.path.join(ROOT, "samples")),
                        "", 60),
    "samples/prefix_stable.sql": ("here", lambda: shell_sql("samples/prefix_stable.sql",
                                                            os.path.join(ROOT, "samples")), "", 60),
    "samples/experts.sql": ("same", "samples/prefix_stable.sql"),
    "samples/long_episodes.sql": ("in", "sql/scale_out_pg.sh", "long_episodes.sql"),  # make test-engines
    "samples/python_example.py": ("in", "tests/sql/test_scale_out.py", "python_example.py"),
    "samples/q_learning/run.sql": ("here", lambda: shell_sql("samples/q_learning/run.sql", ROOT),
                                   "", 120),
    "samples/q_learning/task.sql": ("same", "samples/q_learning/run.sql"),
    "make clinical": ("here", [PY, "samples/clinical/run.py", "--so", SO_ABS, "--quick"],
                      "private consensus policy", 300),
    "samples/clinical/run.py": ("same", "make clinical"),
    "samples/clinical/log.sql": ("same", "make clinical"),
    "samples/clinical/model.sql": ("same", "make clinical"),
    "samples/clinical/rules.sql": ("same", "make clinical"),
    "samples/clinical/exact.py": ("same", "make clinical"),
    "samples/icu_model/icu_model.py": ("in", "tests/sql/test_icu_model.py", "icu_model.py"),
    "make paper": ("here", "paper", "run.sh: wrote", 300),
    "make paper-full": ("same", "make paper"),  # the same run.sh at larger SIZES
    "samples/paper/run.sh": ("same", "make paper"),
    "make -C samples/paper": ("same", "make paper"),
    "make install": ("here", "install", "installed", 120),
    "make test": ("in", ".ci/run", "make test"),
    # the same tests/run.sh as make test, on the plain build only
    "make check": ("in", "Makefile", "DPRL_NO_SAN=1 DPRL_NO_PACKAGING=1 T=$(T) sh tests/run.sh"),
    "make test-engines": ("in", ".ci/run", "make test-engines"),
    "make test-clients": ("in", ".ci/run", "make test-clients"),
    "make scale-out-demo": ("in", "tests/engines/run.sh", "sql/scale_out_pg.sh"),
    "make scale-out-ch": ("in", "tests/engines/run.sh", "sh sql/scale_out_ch.sh"),
    "make docs": ("in", "tests/sql/test_reference.py", "gen_reference.py"),
    "make wheel": ("in", "tests/packaging/test_python.sh", "make"),
    "make static": ("in", "tests/packaging/test_embed.c", "libdprl"),
    "make tag": ("in", "tests/packaging/test_release.sh", "make"),
    "make node-deps": ("in", "Makefile", "node-deps dprl.so unit"),
    "make deps": ("in", "Makefile", "test: deps"),
    "make all": ("in", "Makefile", "all: check-deps dprl.so"),
    "make tsan": ("in", "Makefile", "@$(MAKE) --no-print-directory tsan"),
    "make utility": ("here", [PY, "tests/utility/utility.py", "--quick", "icu", "icu_model"], "dp_lsw", 300),
    "make bench": ("here", "bench", "dprl bench", 300),
    # make test replays every harness over its corpus (gcc, plain and sanitized);
    # make fuzz itself needs clang and libFuzzer, which make test does not install
    "make fuzz": ("in", "Makefile", "unit: $(UNIT_BIN) $(FUZZ_REPLAY)"),
}

# Whole programs whose SQL the other tests already run under the sanitizers:
# at DPRL_TEST_SIZES=small (the sanitized pass) they run on the plain build
# only, where they take a minute in all instead of five.
PLAIN_ONLY = {"make paper", "make utility", "make bench", "make clinical", "make install"}


def makefile_targets():
    text = open(os.path.join(ROOT, "Makefile"), encoding="utf-8").read()
    return set(re.findall(r"^([a-z][a-z0-9-]*):", text, flags=re.M))


def documented():
    targets = makefile_targets()
    names = {}
    for doc in DOCS:
        text = open(os.path.join(ROOT, doc), encoding="utf-8").read()
        for m in re.finditer(r"\bmake ([a-z][a-z0-9-]*)", text):
            if m.group(1) in targets:
                names.setdefault("make " + m.group(1), doc)
        for m in re.finditer(r"make -C samples/[a-z]+", text):
            names.setdefault(m.group(0), doc)
        for m in re.finditer(r"samples/[A-Za-z0-9_/.-]+\.(?:sql|py|sh|csv|c)\b", text):
            names.setdefault(m.group(0), doc)
    return names


def argv_of(name, how):
    """(argv, stdin, cwd, env) of a quick run."""
    env = dict(os.environ)
    if how == "paper":
        out = tempfile.mkdtemp(prefix="dprl-paper-")
        env.update(PAPER_ENV, OUT=out)
        return ["sh", "samples/paper/run.sh"], None, ROOT, env, out
    if how == "install":
        dest = tempfile.mkdtemp(prefix="dprl-install-")
        return ["make", "--no-print-directory", "-s", "install", f"DESTDIR={dest}"], None, ROOT, env, dest
    if how == "bench":
        d = tempfile.mkdtemp(prefix="dprl-bench-")
        env.update(DPRL_BENCH_RUNS="1", DPRL_BENCH="bind", DPRL_BENCH_EPISODES="2000")
        env.pop("DUCKDB_NODE_DIR", None)
        bench = os.path.join(ROOT, "build", "dprl_bench")  # make test builds it
        return [bench, os.path.join(d, "bench.db"), SO_STEM], None, ROOT, env, d
    if callable(how):
        argv, stdin, cwd = how()
        return argv, stdin, cwd, env, None
    env["DPRL_SO"] = SO_ABS
    return how, None, ROOT, env, None


def run_here(name, how, want, seconds):
    argv, stdin, cwd, env, tmp = argv_of(name, how)
    try:
        if not os.path.exists(argv[0]) and shutil.which(argv[0]) is None:
            return check(False, f"{name}: {argv[0]} exists", "make test builds it")
        p = subprocess.run(argv, input=stdin, cwd=cwd, env=env, capture_output=True, text=True,
                           timeout=seconds * 4)
        out = p.stdout + p.stderr
        check(p.returncode == 0 and want in out,
              f"{name} runs (quick form) and prints {want!r}" if want else f"{name} runs (quick form)",
              f"exit {p.returncode}\n{out[-3000:]}")
    except subprocess.TimeoutExpired:
        check(False, f"{name} runs (quick form)", f"no end after {seconds * 4} s")
    finally:
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)


def test_documented_commands_run():
    names = documented()
    check(len(names) >= 20 and "make demo" in names and "make paper" in names,
          "the docs' commands and samples are found", sorted(names))
    missing = sorted(n for n in names if n not in RUNS)
    check(not missing, "every make target and sample the docs name has a run",
          "\n".join(f"{n} (named in {names[n]})" for n in missing))
    for name, entry in sorted(RUNS.items()):
        kind = entry[0]
        if kind == "same":
            check(entry[1] in RUNS and RUNS[entry[1]][0] != "same",
                  f"{name}: runs with {entry[1]}")
        elif kind == "in":
            path, needle = entry[1], entry[2]
            text = open(os.path.join(ROOT, path), encoding="utf-8").read() \
                if os.path.exists(os.path.join(ROOT, path)) else ""
            check(needle in text, f"{name}: run by {path}", f"{path} does not contain {needle!r}")
        elif not (SMALL and name in PLAIN_ONLY):
            run_here(name, entry[1], entry[2], entry[3])


def test_bench_checks_fail():
    """make bench checks each row's result: a corrupted one (DPRL_BENCH_CORRUPT)
    stops it with exit 1 and names the row and why."""
    if SMALL:  # the plain build's program, as make bench in PLAIN_ONLY
        return
    bench = os.path.join(ROOT, "build", "dprl_bench")
    if not os.path.exists(bench):
        return check(False, "build/dprl_bench exists", "make test builds it")
    cases = [("bind", "dp_lsw, options in the SQL", 'the release does not say "private":true'),
             ("bind", "dp_mdp, options bound", "the result is NULL"),
             ("bind", "bare scan of steps", "the result is NULL"),
             ("lsw", "SQLite window SQL", "the sum of first-visit returns differs from dp_fv_stats's")]
    d = tempfile.mkdtemp(prefix="dprl-bench-")
    try:
        for section, row, why in cases:
            env = dict(os.environ, DPRL_BENCH_RUNS="1", DPRL_BENCH=section, DPRL_BENCH_EPISODES="2000",
                       DPRL_BENCH_CORRUPT=row)
            env.pop("DUCKDB_NODE_DIR", None)
            p = subprocess.run([bench, os.path.join(d, "bench.db"), SO_STEM], cwd=ROOT, env=env,
                               capture_output=True, text=True, timeout=600)
            out = p.stdout + p.stderr
            check(p.returncode == 1 and f'bench: FAILED: row "{row}' in out and why in out,
                  f"make bench with the row {row!r} corrupted: exit 1, naming the row and why",
                  f"exit {p.returncode}\n{out[-2000:]}")
    finally:
        shutil.rmtree(d, ignore_errors=True)


run([test_documented_commands_run, test_bench_checks_fail])
