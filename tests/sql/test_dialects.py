"""The per-engine SQL of sql/<dialect>/: written by sql/gen_dialects.py from
sql/src/, identical across dialects up to the type names README lists, and
(on SQLite) equal to what dprl computes.  make test-engines runs the same
checks (tests/engines/cases.py) on PostgreSQL and DuckDB too."""
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "engines"))
sys.path.insert(0, os.path.join(ROOT, "sql"))
import cases  # noqa: E402
import engines  # noqa: E402
import gen_dialects  # noqa: E402
import reference  # noqa: E402
import spark_duckdb  # noqa: E402  (sqlglot: make test installs python3-sqlglot)
from harness import check, run  # noqa: E402

# The substitutions from the PostgreSQL file to the Spark SQL one, as
# docs/scaling-out.md documents them.
SPARK = [("AS DOUBLE PRECISION)", "AS DOUBLE)"), ("AS TEXT)", "AS STRING)")]
DIALECTS = ["sqlite", "postgres", "duckdb", "spark"]


def body(dialect, name):
    """The file without its first line (which names the dialect)."""
    with open(os.path.join(ROOT, "sql", dialect, name)) as f:
        first, rest = f.read().split("\n", 1)
    return first, rest


def code(text):
    """SQL without its -- comments."""
    return "\n".join(re.sub(r"--.*$", "", line) for line in text.splitlines())


def test_generated():
    check(gen_dialects.main(["--check"]) == 0,
          "sql/<dialect>/*.sql are what sql/gen_dialects.py writes from sql/src/")
    # ClickHouse has its own sources (sql/src/clickhouse/: no window
    # functions in 18.16): generated and checked above, not the same SQL;
    # make test-engines runs it against dprl.
    check(sorted(gen_dialects.DIALECTS) == sorted(DIALECTS + ["clickhouse"])
          and gen_dialects.OWN_SOURCES == {"clickhouse"},
          "four dialects from sql/src/, and clickhouse from sql/src/clickhouse/",
          sorted(gen_dialects.DIALECTS))
    for name in gen_dialects.SOURCES:
        first, rest = body("clickhouse", name)
        check(first.startswith(f"-- clickhouse: written by sql/gen_dialects.py from "
                               f"sql/src/clickhouse/{name};")
              and "@include" not in rest and "@ID_HASH@" not in rest
              and ("lengthUTF8(replaceAll(h.id, 'Z', ''))" in rest
                   or name == "stats_merge_check.sql"),
              f"sql/clickhouse/{name}: generated from sql/src/clickhouse/, with the bucket hash")


def made_with_neutral(text, dialect):
    """The file with its dialect's name in made_with and (SQLite) its exact
    printing of doubles put back as in PostgreSQL's file."""
    text = text.replace(f'"dialect":"{dialect}"', '"dialect":"postgres"')
    if dialect == "sqlite":
        text = re.sub(r"printf\('%!\.17g', ([^()]*)\)", r"CAST(\1 AS TEXT)", text)
    return text


def test_identical_modulo_types():
    with open(os.path.join(ROOT, "docs", "scaling-out.md")) as f:
        readme = f.read()
    for name in gen_dialects.SOURCES:
        heads, bodies = zip(*(body(d, name) for d in DIALECTS))
        check(all(h.startswith(f"-- {d}: ") for h, d in zip(heads, DIALECTS)),
              f"{name}: each file says its dialect in its first line", heads)
        made = name == "first_visit_stats.sql"
        check(all((f'"dialect":"{d}","version":"{gen_dialects.version()}"' in b) == made
                  for d, b in zip(DIALECTS, bodies)),
              f"{name}: made_with names the dialect and dprl's version"
              + ("" if made else " (none here)"))
        check((bodies[0] != bodies[1]) == made and "CAST(b.gamma AS TEXT)" not in bodies[0],
              f"{name}: the SQLite file prints made_with's doubles with printf('%!.17g')"
              + ("" if made else " (none here)"))
        bodies = tuple(made_with_neutral(b, d) for b, d in zip(bodies, DIALECTS))
        check(bodies[0] == bodies[1] == bodies[2],
              f"{name}: the SQLite, PostgreSQL and DuckDB files are the same SQL "
              "(but for made_with's dialect and SQLite's printing of doubles)")
        spark = bodies[1]
        for a, b in SPARK:
            spark = spark.replace(a, b)
        changed = any(a in bodies[1] for a, _ in SPARK)
        check(bodies[3] == spark and (bodies[3] != bodies[1]) == changed,
              f"{name}: the Spark file = the PostgreSQL one with the documented type names")
        c = code(bodies[3])
        check(not re.search(r"DOUBLE PRECISION|AS TEXT\)|::|\bREAL\b", c),
              f"{name}: no PostgreSQL/SQLite-only type names in the Spark file")
        check(c.count("DOUBLE") + c.count("STRING") > 0 or name == "stats_merge_check.sql",
              f"{name}: the Spark file uses Spark's type names")
    check(gen_dialects.DIALECTS["spark"] == SPARK
          and all(f"`{a}`" in readme and f"`{b}`" in readme for a, b in SPARK),
          "the substitutions are the ones docs/scaling-out.md lists")


def test_spark_parses():
    """Each Spark file is one statement of Spark SQL to sqlglot's Spark reader
    (error level RAISE), calls no function that neither sqlglot nor the list
    of checked Spark built-ins knows, and transpiles to DuckDB with nothing
    sqlglot calls unsupported (make test-engines runs the result)."""
    for name in gen_dialects.SOURCES:
        with open(os.path.join(ROOT, "sql", "spark", name)) as f:
            text = f.read()
        try:
            spark_duckdb.parse_spark(text)
            spark_duckdb.to_duckdb(text)
            err = None
        except engines.EngineError as e:
            err = str(e)
        check(err is None, f"sql/spark/{name}: parses as Spark SQL (sqlglot "
              f"{getattr(spark_duckdb.sqlglot, '__version__', 'missing')}, error level RAISE)",
              err)
    for bad in ("SELECT count(* FROM steps", "SELECT no_such_fn(1) FROM steps",
                "SELECT 1; SELECT 2"):
        try:
            spark_duckdb.parse_spark(bad)
            refused = False
        except engines.EngineError:
            refused = True
        check(refused, f"the Spark parse check refuses {bad!r}")


def test_hash():
    # fixed values: the hash is a contract between shards (changing it moves
    # episodes between buckets), so any change must be deliberate
    w = gen_dialects.hash_weights()
    check(gen_dialects.bucket_hash_py("") == 0 and gen_dialects.bucket_hash_py("a") == w[0] + w[11]
          and gen_dialects.bucket_hash_py(42) == 2 * w[0] + w[5] + w[3]
          and gen_dialects.bucket_hash_py("aa") == 2 * w[0] + 2 * w[11],
          "the bucket hash: n W0 + sum of W_c per occurrence of c")
    check(w[:3] == [48271, 605248, 391013], "the bucket hash weights are the published ones", w[:3])


def test_sqlite():
    e = engines.Sqlite()
    long_rows = cases.adversarial_rows(100_000)
    cases.stats_match(e, "adversarial, a 100,000-step episode", long_rows, cases.STEPS_TEXT, 12,
                      [{"gamma": 0.99, "rmin": 0, "rmax": 1}], [{"gamma": 0.99, "rmin": 0, "rmax": 1}])
    adv = cases.adversarial_rows(2_000, seed=14)
    sets = [{"gamma": 0.9, "rmin": 0, "rmax": 1}, {"gamma": 0.5, "rmin": -1.0, "rmax": 2.0, "fmin": -1.5, "fmax": 3.0},
            {"gamma": 0.0, "rmin": 0, "rmax": 1}, {"gamma": 1.0, "rmin": 0, "rmax": 1, "fmax": 50.0}, {"gamma": 0.3, "rmax": 1, "rmin": -0.25},
            {"gamma": 0.9, "rmin": 0, "rmax": 1, "max_states": 2}, {"gamma": 0.5, "rmax": 1, "rmin": -1.0, "max_states": 1},
            # both return clamps bind (27 returns below fmin, 437 above fmax)
            {"gamma": 0.8, "rmin": -1.0, "rmax": 1.0, "fmin": -0.2, "fmax": 2.0}]
    cases.stats_match(e, "adversarial", adv, cases.STEPS_TEXT, 12, sets, [sets[0], sets[5]])
    ints = cases.int_id_rows()
    cases.stats_match(e, "integer ids", ints, cases.STEPS_INT, 6, [{"gamma": 0.95, "rmin": 0, "rmax": 1}])
    cases.carry_match(e)  # first visits just before block boundaries, gamma 0.5, 0.9, 0.99
    cases.bad_rows_detected(e)
    cases.buckets_and_merge(e, adv, cases.STEPS_TEXT, 12, {"gamma": 0.99, "rmin": 0, "rmax": 1}, k=5,
                            ranges=((0, 1), (2, 2), (3, 4)))
    cases.bucket_query_matches(e, adv, cases.STEPS_TEXT, 7)
    cases.bucket_query_matches(e, ints, cases.STEPS_INT, 3)


def test_max_states_reference():
    """first_visit_stats.sql with max_states against reference.py's first
    visits (direct summation, an episode's first k first-visits in t
    order), and the bound in every row."""
    e = engines.Sqlite()
    rows = cases.adversarial_rows(3_000, seed=15)
    e.load("steps", cases.STEPS_TEXT, rows)
    for k in (1, 3, None):
        opts = {"gamma": 0.8, "rmin": -0.5, "rmax": 1.25, "max_states": k}
        cases.set_params(e, 12, opts)
        got = e.query(cases.sql(e, "first_visit_stats.sql"))
        m, visits, sums = reference.first_visit(rows, 0.8, 1.25, None, -0.5, None, k)
        ok = (all(r[6] == m and r[7] == k for r in got)
              and {r[0]: r[1] for r in got if r[1]} == visits
              and all(abs(r[2] - sums[r[0]]) <= 1e-12 * max(1.0, abs(sums[r[0]]))
                      for r in got if r[1]))
        check(ok, f"sqlite first_visit_stats.sql, max_states {k}: = reference.first_visit "
              f"({sum(visits.values())} first-visits of {m} episodes)",
              f"{sorted((r[0], r[1], r[2]) for r in got)}\n{sorted(visits.items())}")
        if k == 1:
            check(sum(visits.values()) == m, "max_states 1: one first-visit per episode")


run([test_generated, test_identical_modulo_types, test_spark_parses, test_hash, test_sqlite, test_max_states_reference])
