"""tests/engines/mutations.py (make test-engines): the tests of the tests.

Each mutation below changes one formula of the per-engine SQL in a COPY of
sql/src/.  The dialect files are generated from that copy
(sql/gen_dialects.py's render, src_dir = the copy) into a temporary tree,
and the checks run on them:
  - the SQLite engine checks of cases.py (engines.Sqlite, the files read
    through DPRL_SQL_DIR), on the tables of test_engines.py made smaller
    (the first 2,000 ICU patients, the 5,000-step adversarial table) plus
    the carry tables; their failures are counted, not printed;
  - sql/shard_release.sql (sqlite3 shell), judged by demo_checks.sh;
  - for the review's four mutations (first -> last visits, sums x 1.5,
    sums x (1 + 1e-11), carry removed) also sql/scale_out_pg.sh
    (PostgreSQL, about 20 s a run), judged by demo_checks.sh.
The demos run unmodified in a temporary tree: the script, samples/ and
dprl.so linked, sql/<dialect>/ generated from the copy.

"ok" when a mutation makes at least one check fail; the unmutated copy,
generated and run the same way, must pass every check (so a harness that
cannot see the files, or judges nothing, fails here).  A shard made at
another gamma is not a mutation of the files: it is computed with the
real files and must be flagged by stats_merge_check.sql and refused by
dp_lsw_from_stats.

    python3 tests/engines/mutations.py [--no-pg] [--all-demos] [--table] [KEY ...]

--no-pg: no PostgreSQL; --all-demos: run the demos for every mutation (by
default only for those that must fail them); --table: a Markdown table.
"""
import os
import shutil
import subprocess
import sys
import tempfile
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "sql"))
import cases  # noqa: E402
import engines  # noqa: E402
import gen_dialects  # noqa: E402
import harness  # noqa: E402
from harness import check  # noqa: E402

SQLITE3 = os.environ.get("SQLITE3", "sqlite3")
DIALECTS = ("sqlite", "postgres")

FV = "first_visit_stats.sql"
# key, what, source file (under sql/src/), text in it, its replacement, its
# occurrences, the demos that must fail (those whose data and parameters the
# formula affects: the demos use fmax 9, one K, no max_states, rewards in [0, 1])
MUTATIONS = [
    ("a", "first visits -> last visits (nth_visit ORDER BY t DESC)", "rows.sql",
     "PARTITION BY s.episode, s.state ORDER BY s.t) AS nth_visit",
     "PARTITION BY s.episode, s.state ORDER BY s.t DESC) AS nth_visit", 1, ("shard", "pg")),
    ("b", "return sums x 1.5", FV,
     "sum(f) AS return_sum", "sum(f) * 1.5 AS return_sum", 1, ("shard", "pg")),
    ("c", "return sums x (1 + 1e-11)", FV,
     "sum(f) AS return_sum", "sum(f) * (1 + 1e-11) AS return_sum", 1, ("shard", "pg")),
    ("d", "the carry between blocks removed", FV,
     "u.suffix / power(b.g, u.j) + power(b.g, b.blen - u.j) * u.carried AS ret",
     "u.suffix / power(b.g, u.j) AS ret", 1, ("shard", "pg")),
    ("e", "the Horner carry cut to one block", FV,
     "coalesce(lead(k.total, 1) OVER (PARTITION BY k.episode ORDER BY k.blk), 0) + b.carry * (",
     "coalesce(lead(k.total, 1) OVER (PARTITION BY k.episode ORDER BY k.blk), 0) + 0 * (", 1, ()),
    ("f", "the reward clamp [rmin, rmax] removed", FV,
     "CASE WHEN m.reward < b.rmin THEN b.rmin\n              WHEN m.reward > b.rmax THEN b.rmax\n"
     "              ELSE m.reward END * power", "m.reward * power", 1, ()),
    ("g", "the return clamp [fmin, fmax] removed", FV,
     "CASE WHEN r.ret < b.fmin THEN b.fmin WHEN r.ret > b.fmax THEN b.fmax\n"
     "              ELSE r.ret END AS f", "r.ret AS f", 1, ()),
    ("g1", "the return clamp's lower side (fmin) removed", FV,
     "CASE WHEN r.ret < b.fmin THEN b.fmin WHEN", "CASE WHEN", 1, ()),
    ("g2", "the return clamp's upper side (fmax) removed", FV,
     " WHEN r.ret > b.fmax THEN b.fmax\n", "\n", 1, ()),
    ("h", "gamma^j exponent off by one (the weights gamma^j r)", FV,
     "END * power(b.g, m.pos % b.blen) AS w", "END * power(b.g, m.pos % b.blen + 1) AS w", 1,
     ("shard",)),
    ("h2", "gamma^j exponent off by one (the carry's gamma^(blen - j))", FV,
     "power(b.g, b.blen - u.j) * u.carried", "power(b.g, b.blen - u.j - 1) * u.carried", 1,
     ("shard",)),
    ("i", "blocks of ceil(920 / ln(1/gamma)) steps, not 92 (gamma^j underflows)", "params.sql",
     "ceil(92 / (0 - ln(c.gamma)))", "ceil(920 / (0 - ln(c.gamma)))", 1, ()),
    ("j", "max_states cut-off off by one (< for <=)", FV,
     "r.nth_state <= b.max_states", "r.nth_state < b.max_states", 1, ()),
    ("k", "episodes counted with count(episode), not count(DISTINCT episode)", "rows.sql",
     "count(DISTINCT m.episode) AS episodes", "count(m.episode) AS episodes", 1, ("shard",)),
    ("l", "one weight of the bucket hash changed (W of '0' + 1)", "buckets.sql",
     "ELSE (@ID_HASH@) % b.buckets END",
     "ELSE (@ID_HASH@ + (h.n - length(replace(h.id, '0', '')))) % b.buckets END", 1, ()),
    ("m", "default fmax = rmax/(1-gamma) off by a relative 1e-9", "params.sql",
     "WHEN p.rmax > 0 THEN p.rmax / nullif(1 - p.gamma, 0)",
     "WHEN p.rmax > 0 THEN p.rmax / nullif(1 - p.gamma, 0) * (1 + 1e-9)", 1, ()),
    ("n", "stats_merge_check.sql: the overlap test weakened (<= to <)", "stats_merge_check.sql",
     "WHEN o.bucket_lo <= o.reach THEN 1", "WHEN o.bucket_lo < o.reach THEN 1", 1, ()),
    ("p", "duplicate (episode, t) steps not counted", "rows.sql",
     "THEN 1 ELSE 0 END AS dup", "THEN 0 ELSE 0 END AS dup", 1, ()),
    ("q", "outside_buckets: the upper end of the range not tested", "rows.sql",
     "eb.bucket >= b.bucket_lo AND eb.bucket <= b.bucket_hi", "eb.bucket >= b.bucket_lo", 1, ()),
]

# The tables of test_engines.py, smaller (built once; dprl's results on them
# are memoized by cases.reference, so each mutation only reruns the SQL).
ICU_2000 = cases.icu_rows(2000)
ADV = cases.adversarial_rows(5_000, seed=14)
INTS = cases.int_id_rows()
ICU_SETS, ADV_SETS, ADV_RELEASES, INT_SETS = (cases.ICU_SETS, cases.ADV_SETS, cases.ADV_RELEASES,
                                            cases.INT_SETS)


def sqlite_checks(e):
    """The calls of test_engines.py's engine_tests, on the smaller tables."""
    S = cases.STEPS_INT
    return [
        ("ICU", lambda: cases.stats_match(e, "ICU 2,000", ICU_2000, S, 10, ICU_SETS, ICU_SETS)),
        ("adversarial", lambda: cases.stats_match(e, "adversarial", ADV, cases.STEPS_TEXT, 12,
                                                  ADV_SETS, ADV_RELEASES)),
        ("integer ids", lambda: cases.stats_match(e, "integer ids", INTS, S, 6, INT_SETS,
                                                  INT_SETS[:1])),
        ("carry", lambda: cases.carry_match(e)),
        ("bad rows", lambda: cases.bad_rows_detected(e)),
        ("merge ICU", lambda: cases.buckets_and_merge(e, ICU_2000, S, 10,
                                                      {"gamma": 0.9, "rmin": 0, "rmax": 1})),
        ("merge adversarial", lambda: cases.buckets_and_merge(
            e, ADV, cases.STEPS_TEXT, 12, {"gamma": 0.99, "rmin": 0, "rmax": 1}, k=5,
            ranges=((0, 1), (2, 2), (3, 4)))),
        ("buckets", lambda: (cases.bucket_query_matches(e, ADV, cases.STEPS_TEXT, 7),
                             cases.bucket_query_matches(e, INTS, S, 3))),
    ]


def run_sqlite_checks(sql_dir):
    """Every check of sqlite_checks() on the files under sql_dir: (number
    of checks, {group: [names of failed checks]}).  An exception in a
    group counts as one failed check of it."""
    seen, failed = [], {}

    def record(cond, name, detail=""):
        seen.append(name)
        if not cond:
            failed.setdefault(group, []).append(name)
        return cond
    real = cases.check
    os.environ["DPRL_SQL_DIR"] = sql_dir
    cases.check = record
    e = engines.Sqlite()
    try:
        for group, fn in sqlite_checks(e):
            try:
                fn()
            except Exception as err:  # noqa: BLE001 - a refused release, an SQL error
                seen.append(group + " raised")
                failed.setdefault(group, []).append(
                    f"raised {type(err).__name__}: {str(err).splitlines()[0][:100]}")
    finally:
        cases.check = real
        del os.environ["DPRL_SQL_DIR"]
        e.close()
    return len(seen), failed


def make_tree(tmp, mutation):
    """tmp/src: sql/src with the mutation; tmp/tree: the demos' tree with
    sql/<dialect>/ generated from it.  Returns the tree, or raises
    ValueError when the mutation's text is not in the source or changes
    no generated file."""
    src = os.path.join(tmp, "src")
    shutil.copytree(os.path.join(ROOT, "sql", "src"), src)
    if mutation:
        _, _, name, old, new, times, _ = mutation
        path = os.path.join(src, name)
        with open(path) as f:
            text = f.read()
        if text.count(old) != times:
            raise ValueError(f"sql/src/{name} has {text.count(old)} occurrences of {old!r}, "
                             f"not {times}: update the mutation")
        with open(path, "w") as f:
            f.write(text.replace(old, new))
    tree = os.path.join(tmp, "tree")
    os.makedirs(os.path.join(tree, "build"))
    for d in DIALECTS:
        os.makedirs(os.path.join(tree, "sql", d))
        for name in gen_dialects.SOURCES:
            with open(os.path.join(tree, "sql", d, name), "w") as f:
                f.write(gen_dialects.render(name, d, src_dir=src))
    if mutation and all(gen_dialects.render(name, "sqlite", src_dir=src)
                        == gen_dialects.render(name, "sqlite") for name in gen_dialects.SOURCES):
        raise ValueError("the mutation changes no generated file")
    for link in ("samples", "dprl.so", "sql/shard_release.sql", "sql/scale_out_pg.sh",
                 "sql/pg_local.sh"):
        os.symlink(os.path.join(ROOT, link), os.path.join(tree, link))
    return tree


def start_demo(tree, which):
    """Start a demo in tree (shard: sql/shard_release.sql in the sqlite3
    shell; pg: sql/scale_out_pg.sh); finish_demo judges it."""
    out = os.path.join(tree, f"{which}.out")
    with open(out, "w") as f:
        if which == "shard":
            with open(os.path.join(tree, "sql", "shard_release.sql")) as script:
                proc = subprocess.Popen([SQLITE3, ":memory:"], stdin=script, stdout=f,
                                        stderr=subprocess.STDOUT, cwd=tree)
        else:
            proc = subprocess.Popen(["sh", os.path.join(tree, "sql", "scale_out_pg.sh")],
                                    stdout=f, stderr=subprocess.STDOUT, cwd=tree)
    return proc, which, out


def finish_demo(demo):
    """(passed, why): the demo's output judged by demo_checks.sh."""
    proc, which, out = demo
    status = proc.wait()
    r = subprocess.run(["sh", os.path.join(HERE, "demo_checks.sh"), which, out, str(status)],
                       capture_output=True, text=True)
    return r.returncode == 0, r.stdout.strip()


def run_all(mutation, demos):
    """Generate the copy, run every check: {"sqlite": (checks, failures by
    group), "shard": (passed, why), "pg": (passed, why)}, the demos (those
    in demos) running in the background while the SQLite checks run."""
    with tempfile.TemporaryDirectory() as tmp:
        tree = make_tree(tmp, mutation)
        started = [start_demo(tree, d) for d in ("pg", "shard") if d in demos]
        n, failed = run_sqlite_checks(os.path.join(tree, "sql"))
        result = {"sqlite": (n, failed)}
        for demo in started:
            result[demo[1]] = finish_demo(demo)
        return result


def summary(result):
    n, failed = result["sqlite"]
    parts = [f"SQLite checks: {sum(map(len, failed.values()))} of {n} failed"
             + (" (" + ", ".join(f"{g} {len(v)}" for g, v in failed.items()) + ")" if failed
                else "")]
    if "shard" in result:
        parts.append("shard_release.sql " + ("passed" if result["shard"][0]
                                             else f"FAILED ({result['shard'][1]})"))
    if "pg" in result:
        parts.append("scale_out_pg.sh " + ("passed" if result["pg"][0]
                                           else f"FAILED ({result['pg'][1]})"))
    return "; ".join(parts)


def caught(result):
    return bool(result["sqlite"][1]) or any(not result[d][0] for d in ("shard", "pg")
                                            if d in result)


def other_gamma_shard():
    """(o) A shard computed at gamma 0.95 (with the real files) among shards
    at 0.9: stats_merge_check.sql flags it and names it, and
    dp_lsw_from_stats and dp_lsl_from_stats refuse the union, naming gamma."""
    e = engines.Sqlite()
    k, ranges = 5, ((0, 1), (2, 2), (3, 4))
    bucket = {r[0]: cases.bucket_hash_py(r[0]) % k for r in ADV}
    stats = []
    for lo, hi in ranges:
        e.load("steps", cases.STEPS_TEXT, [r for r in ADV if lo <= bucket[r[0]] <= hi])
        g = 0.95 if (lo, hi) == ranges[-1] else 0.9
        cases.set_params(e, 12, {"gamma": g, "rmin": 0, "rmax": 1}, k, lo, hi)
        stats += e.query(cases.sql(e, FV))
    e.load("shard_stats", [("state", "int"), ("visits", "int"), ("return_sum", "real"),
                           ("buckets", "int"), ("bucket_lo", "int"), ("bucket_hi", "int"),
                           ("episodes", "int"), ("max_states", "int"), ("made_with", "text")],
           stats)
    got = e.query(cases.sql(e, "stats_merge_check.sql"))
    i = cases.MERGE_COLUMNS.index("mixed_made_with")
    check(got and got[0][i] == 1 and got[0][-1].startswith('buckets 3..4: {"gamma":0.9499'),
          "(o) a shard computed at gamma 0.95: stats_merge_check.sql flags it and names "
          "buckets 3..4", got)
    m = len(bucket)
    opts = ('{"n_states": 12, "gamma": 0.9, "rmin": 0, "rmax": 1, "epsilon": 1, '
            f'"delta": 1e-5, "buckets": {k}, "episodes": {m}}}')
    want = ("the statistics of buckets 3..4 (made_with, dialect sqlite) were made with "
            "gamma = 0.95, but option gamma = 0.9")
    for fn, extra in (("dp_lsw_from_stats", ""), ("dp_lsl_from_stats", ', "lambda": 10')):
        err = harness.sql_error(e.con, f"SELECT {fn}(state, visits, return_sum, buckets, "
                                "bucket_lo, bucket_hi, made_with, ?) FROM shard_stats",
                                (opts[:-1] + extra + "}",))
        check(err is not None and want in err,
              f"(o) a shard computed at gamma 0.95: {fn} refuses the union, naming gamma",
              err)
    e.close()


def main(argv):
    pg = "--no-pg" not in argv
    every = "--all-demos" in argv
    keys = [a for a in argv if not a.startswith("--")]
    todo = [m for m in MUTATIONS if not keys or m[0] in keys]
    t0 = time.time()
    table = []
    demos = ("shard", "pg") if pg else ("shard",)
    base = run_all(None, demos)
    check(not base["sqlite"][1] and base["sqlite"][0] > 100
          and all(base[d][0] for d in demos),
          f"mutations: the UNMUTATED copy of sql/src, generated and run the same way, passes "
          f"every check ({summary(base)})", base)
    for m in todo:
        must = [d for d in m[6] if d in demos]
        try:
            r = run_all(m, demos if every else must)
        except ValueError as err:
            check(False, f"mutation ({m[0]}) {m[1]}: applies to sql/src", err)
            continue
        table.append((m[0], m[1], summary(r)))
        missed = [d for d in must if r[d][0]]
        ok = caught(r) and not missed
        check(ok, f"mutation ({m[0]}) {m[1]}: caught ({summary(r)})",
              "no check fails: add one" if not caught(r)
              else f"the demo(s) {missed} should fail and passed")
        if os.environ.get("MUTATIONS_VERBOSE"):
            for g, names in r["sqlite"][1].items():
                for name in names[:3]:
                    print(f"#   {g}: {name}")
    try:
        other_gamma_shard()
    except Exception:  # noqa: BLE001
        check(False, "(o) a shard computed at gamma 0.95 raised", traceback.format_exc())
    if "--table" in argv:
        for key, what, s in table:
            print(f"| ({key}) {what} | {s} |")
    print(f"# mutations: {time.time() - t0:.0f} s")
    return 1 if harness._failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
