"""spark-via-duckdb: the Spark SQL files of sql/spark/, run in DuckDB.

There is no Spark here.  This engine reads each query as Spark SQL with
sqlglot (Debian's python3-sqlglot, 10.6), transpiles it to DuckDB and runs
it on the DuckDB engine of engines.py, so every check of cases.py runs on
the sql/spark/ files (its name is "spark", which is what cases.sql()
reads).  What this shows: the Spark files parse as Spark SQL, use only
functions Spark has, and compute the right statistics *under the
semantics sqlglot assigns them*.  What it does not show: how Spark itself
runs them (its optimizer, its numerics, its CAST(double AS STRING) text);
see report() and docs/scaling-out.md.

    e = SparkViaDuckDB(tmpdir)      # like engines.DuckDB
    e.query(spark_sql), e.queries([spark_sql, ...])
    parse_spark(text) -> the sqlglot tree (raises SparkSQLError)
    to_duckdb(text)   -> the DuckDB SQL this engine runs

Loads (engine.load) are DuckDB statements of engines.DuckDB, not
transpiled: the tables are typed BIGINT, VARCHAR, DOUBLE, which are
Spark's BIGINT, STRING, DOUBLE.
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import engines  # noqa: E402

try:
    import sqlglot
    from sqlglot import ErrorLevel, exp
except ImportError:  # the engine then fails to start (a failure, not a skip)
    sqlglot = None


class SparkSQLError(engines.EngineError):
    pass


# Functions the Spark files may call that sqlglot 10.6 does not model (it
# parses any name it does not know as exp.Anonymous, silently, whatever the
# dialect).  Each of these is a Spark SQL built-in (Spark SQL function
# reference: nullif, replace, lag, lead, typeof).  A name not listed here
# and not known to sqlglot is refused: add it only after checking that
# Spark has it.
SPARK_BUILTINS_UNKNOWN_TO_SQLGLOT = {"nullif", "replace", "lag", "lead", "typeof"}


def parse_spark(text):
    """The one statement of text, parsed by sqlglot's Spark reader at error
    level RAISE; unknown functions (outside the list above) are errors."""
    if sqlglot is None:
        raise SparkSQLError("sqlglot is not importable (apt-get install python3-sqlglot)")
    try:
        trees = [t for t in sqlglot.parse(text, read="spark", error_level=ErrorLevel.RAISE)
                 if t is not None]
    except sqlglot.errors.SqlglotError as e:
        raise SparkSQLError(f"sqlglot (Spark reader): {e}") from e
    if len(trees) != 1:
        raise SparkSQLError(f"sqlglot (Spark reader): {len(trees)} statements, not 1")
    unknown = sorted({f.name.lower() for f in trees[0].find_all(exp.Anonymous)}
                     - SPARK_BUILTINS_UNKNOWN_TO_SQLGLOT)
    if unknown:
        raise SparkSQLError("functions neither sqlglot nor the list of checked Spark "
                            f"built-ins knows: {', '.join(unknown)}")
    return trees[0]


# Spark's FLOOR and CEIL of a DOUBLE (or an integer) return a BIGINT: the
# double rounded, then Scala's toLong, which saturates at +-(2^63 - 1) and
# takes NaN to 0.  As DuckDB SQL, {0} being DuckDB's FLOOR(x) or CEIL(x):
_SPARK_LONG = ("CASE WHEN isnan(CAST({0} AS DOUBLE)) THEN CAST(0 AS BIGINT) "
               "WHEN {0} >= 9223372036854775807 THEN CAST(9223372036854775807 AS BIGINT) "
               "WHEN {0} <= -9223372036854775808 THEN CAST(-9223372036854775808 AS BIGINT) "
               "ELSE CAST({0} AS BIGINT) END")


def _floor_ceil_to_bigint(tree):
    """Rewrite 2: FLOOR(x), CEIL(x) -> Spark's BIGINT result (deepest first)."""
    for node in reversed(list(tree.find_all(exp.Floor, exp.Ceil))):
        if any(v is not None for k, v in node.args.items() if k != "this"):
            raise SparkSQLError(f"{node.sql('spark')}: FLOOR/CEIL with a scale is not modelled")
        rounded = node.copy().sql(dialect="duckdb")
        node.replace(sqlglot.parse_one(_SPARK_LONG.format(f"({rounded})"), read="duckdb"))
    return tree


def to_duckdb(text):
    """The Spark SQL text as DuckDB SQL.  Two fix-ups of sqlglot 10.6 (the
    generator's null ordering; FLOOR and CEIL), below; anything sqlglot
    flags as unsupported is an error.

    NULL ordering.  sqlglot's Spark reader marks every ORDER BY key with
    Spark's default (ASC: NULLS FIRST, DESC: NULLS LAST), and its DuckDB
    writer writes NULLS FIRST / LAST only where DuckDB's default differs.
    sqlglot 10.6 takes DuckDB's default to be Spark's (null_ordering
    "nulls_are_small", true before DuckDB 0.8); DuckDB 0.8 and later sort
    NULLS LAST both ways, so without the fix an ascending key (window or
    query) would put NULLs last where Spark puts them first.  The fix: write
    with null_ordering = "nulls_are_last", DuckDB's actual default, so
    every ascending key gets an explicit NULLS FIRST.

    FLOOR and CEIL.  In Spark, floor(x) and ceil(x) of a DOUBLE are BIGINT
    (Spark's Floor/Ceil: the rounded double, then toLong, saturating);
    sqlglot writes DuckDB's FLOOR/CEIL, which return a DOUBLE.  The files
    test integrality with "t = floor(t)": for a DOUBLE t of 2^63 or more
    Spark compares t with 9223372036854775807 (false: not an integer)
    where DuckDB's floor(t) = t is true.  The fix: each FLOOR(x)/CEIL(x)
    becomes Spark's BIGINT (_SPARK_LONG).  For BIGINT and DOUBLE arguments
    only (Spark keeps a DECIMAL argument DECIMAL; the tables here have
    none).
    """
    tree = _floor_ceil_to_bigint(parse_spark(text))
    try:
        return tree.sql(dialect="duckdb", unsupported_level=ErrorLevel.RAISE,
                        null_ordering="nulls_are_last")
    except sqlglot.errors.SqlglotError as e:
        raise SparkSQLError(f"sqlglot (DuckDB writer): {e}") from e


class SparkViaDuckDB(engines.DuckDB):
    """engines.DuckDB, its queries read as Spark SQL and transpiled."""
    name = "spark"  # cases.sql() reads sql/spark/
    label = "spark-via-duckdb"

    def __init__(self, tmp):
        if sqlglot is None:
            raise SparkSQLError("spark-via-duckdb: sqlglot is not importable by "
                                f"{sys.executable} (apt-get install python3-sqlglot)")
        super().__init__(tmp)

    def queries(self, sqls):
        return super().queries([to_duckdb(q) for q in sqls])


# ---- Spark semantics that the transpiled SQL must keep -------------------
# Each probe: Spark SQL, the rows Spark returns, and why the files care.
# They run through this engine (so through sqlglot and DuckDB), and fail
# when the transpilation loses the Spark meaning.
PROBES = [
    ("SELECT CAST(7 AS BIGINT) / CAST(2 AS BIGINT)", [(3.5,)],
     "/ on integers is double division (blk = (pos - pos % blen) / blen)"),
    ("SELECT CAST(-7 AS BIGINT) % CAST(3 AS BIGINT), CAST(7 AS BIGINT) % CAST(-3 AS BIGINT)",
     [(-1, 1)], "% takes the sign of the dividend"),
    ("SELECT lower(typeof(power(CAST(2 AS BIGINT), CAST(3 AS BIGINT)))), "
     "power(CAST(2 AS BIGINT), CAST(3 AS BIGINT))", [("double", 8.0)],
     "power of integers is a double"),
    ("SELECT length('\u00e9-\u00fc-\u4e2d-\U0001F600'), length(replace('a\U0001F600b\U0001F600', "
     "'\U0001F600', '')), length('e\u0301')", [(7, 2, 2)],
     "length counts characters (code points, not graphemes), as the hash needs"),
    ("SELECT lower(typeof(floor(CAST(2.5 AS DOUBLE)))), floor(CAST(-2.5 AS DOUBLE)), "
     "ceil(CAST(2.5 AS DOUBLE)), floor(CAST(7 AS BIGINT))", [("bigint", -3, 3, 7)],
     "floor and ceil of a DOUBLE are BIGINT"),
    ("SELECT CAST(1e300 AS DOUBLE) = floor(CAST(1e300 AS DOUBLE)), "
     "floor(CAST(1e300 AS DOUBLE)), ceil(CAST(-1e300 AS DOUBLE)), floor(CAST('NaN' AS DOUBLE))",
     [(False, "9223372036854775807", "-9223372036854775808", 0)],  # beyond 2^53: text
     "floor of a DOUBLE saturates at 2^63 - 1 (so t = floor(t) is false for t >= 2^63), NaN -> 0"),
    ("SELECT x FROM (SELECT 1 AS x UNION ALL SELECT NULL UNION ALL SELECT 2) v ORDER BY x",
     [(None,), (1,), (2,)], "ASC sorts NULLs first"),
    ("SELECT x FROM (SELECT 1 AS x UNION ALL SELECT NULL UNION ALL SELECT 2) v ORDER BY x DESC",
     [(2,), (1,), (None,)], "DESC sorts NULLs last"),
    ("SELECT x, row_number() OVER (ORDER BY x) AS n FROM (SELECT 1 AS x UNION ALL SELECT NULL) v "
     "ORDER BY n", [(None, 1), (1, 2)], "window ORDER BY: NULLs first ascending"),
    ("SELECT CAST(NULL AS STRING) || 'a', coalesce(CAST(NULL AS STRING), 'null')",
     [(None, "null")], "|| with NULL is NULL"),
    ("SELECT CAST(CAST(12345678901 AS BIGINT) AS STRING), CAST(CAST(-7 AS BIGINT) AS STRING)",
     [("12345678901", "-7")], "CAST(BIGINT AS STRING) is the decimal text"),
    ("SELECT CAST('x' AS DOUBLE)", [(None,)],
     "a failing CAST is NULL (Spark with spark.sql.ansi.enabled=false; sqlglot writes TRY_CAST)"),
]

# CAST(DOUBLE AS STRING): Spark prints Java's Double.toString, DuckDB its
# shortest round-trip text; sqlglot writes a plain cast, so the text is
# DuckDB's.  Both read back as the same double, which is what made_with
# needs; the probe checks that, and report() shows the two texts.
DOUBLE_TEXTS = [  # value, Java's Double.toString (what Spark prints)
    (0.9, "0.9"), (1.0, "1.0"), (1e-05, "1.0E-5"), (0.0001, "1.0E-4"), (0.001, "0.001"),
    (1e7, "1.0E7"), (123456.5, "123456.5"), (1 / (1 - 0.99), "99.99999999999991"),
    (-1.5, "-1.5"), (2.0 ** -1074, "4.9E-324"), (1.7976931348623157e308, "1.7976931348623157E308"),
]


def probes(engine):
    """Run PROBES and the CAST(DOUBLE AS STRING) texts; returns a list of
    (ok, label, detail) for the caller's check()."""
    out = []
    for spark_sql, want, why in PROBES:
        try:
            got = engine.query(spark_sql)
        except engines.EngineError as e:
            got = str(e)
        out.append((got == want, f"spark-via-duckdb keeps Spark's semantics: {why}",
                    f"{spark_sql}\n-> {to_duckdb(spark_sql)}\ngot  {got}\nwant {want}"))
    q = " UNION ALL ".join(f"SELECT {i} AS i, CAST(CAST('{v!r}' AS DOUBLE) AS STRING) AS s"
                           for i, (v, _) in enumerate(DOUBLE_TEXTS)) + " ORDER BY i"
    try:
        got = [s for _, s in engine.query(q)]
    except engines.EngineError as e:
        got = [str(e)]
    same = sum(1 for (v, java), s in zip(DOUBLE_TEXTS, got) if s == java)
    exact = len(got) == len(DOUBLE_TEXTS) and all(
        float(s) == v for (v, _), s in zip(DOUBLE_TEXTS, got))
    out.append((exact, "spark-via-duckdb: CAST(DOUBLE AS STRING) reads back as the same double "
                f"(text = Java's Double.toString for {same} of {len(DOUBLE_TEXTS)}: "
                "DuckDB's text, not Spark's)",
                "\n".join(f"{v!r}: got {s!r}, Spark {java!r}"
                          for (v, java), s in zip(DOUBLE_TEXTS, got))))
    return out
