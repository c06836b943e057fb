#!/usr/bin/env python3
"""sql/gen_dialects.py: write the per-engine SQL files from one source.

    python3 sql/gen_dialects.py          write sql/<dialect>/<name>.sql
    python3 sql/gen_dialects.py --check  exit 1 if a written file differs

The sources are sql/src/<name>.sql.  A line "@include FILE" is replaced by
sql/src/FILE; @ID_HASH@ by the episode-bucket hash (bucket_hash() below).
REAL_TEXT(x) (x a column, no parentheses) is a double as text that reads
back as the same double (REAL_TEXT below); @DIALECT@ is the dialect's name
and @VERSION@ dprl's version (ext/dprl.h).  Otherwise the dialects differ
only by the type-name substitutions in DIALECTS, which docs/scaling-out.md
lists too; tests/sql/test_dialects.py checks that the files are exactly
the sources with these substitutions.
"""
import os
import re
import string
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCES = ["first_visit_stats.sql", "first_visit_check.sql", "stats_merge_check.sql",
           "episode_bucket.sql"]

# dialect -> [(text in the source, text in that dialect's file)]
DIALECTS = {
    "sqlite": [],
    "postgres": [],
    "duckdb": [],
    # Spark SQL (and Databricks) spell the types DOUBLE and STRING.
    "spark": [("AS DOUBLE PRECISION)", "AS DOUBLE)"), ("AS TEXT)", "AS STRING)")],
    # ClickHouse: the hash in its function names (lengthUTF8 counts characters)
    "clickhouse": [("length(replace(", "lengthUTF8(replaceAll(")],
}
# Dialects with their own sources, sql/src/<dialect>/<name>.sql (the same
# @include, @ID_HASH@, @DIALECT@, @VERSION@): ClickHouse 18.16 has no window
# functions and no CTEs.  Same inputs, outputs and rules; tests/engines/
# compares them with dprl.
OWN_SOURCES = {"clickhouse"}

# A double as text that parses back to the same double: PostgreSQL (12 and
# later), DuckDB and Spark print the shortest such text; SQLite's CAST keeps
# 15 digits, and printf('%!.17g') keeps 17 (exact below 1e100 in SQLite 3.40,
# which covers any discount and reward bound).
REAL_TEXT = {"sqlite": "printf('%!.17g', {})"}
REAL_TEXT_DEFAULT = "CAST({} AS TEXT)"


def version():
    with open(os.path.join(os.path.dirname(HERE), "ext", "dprl.h")) as f:
        return re.search(r'#define DPRL_VERSION "([^"]+)"', f.read()).group(1)


# The characters the hash counts, and the weights: W[0] for the length, W[1+i]
# for HASH_CHARS[i] (a MINSTD sequence reduced below 10^6 + 3).
HASH_CHARS = string.digits + string.ascii_lowercase + string.ascii_uppercase


def hash_weights():
    x, out = 1, []
    for _ in range(len(HASH_CHARS) + 1):
        x = x * 48271 % 2147483647
        out.append(x % 1000003)
    return out


def bucket_hash_py(episode):
    """The hash in Python (the tests compare the engines with it)."""
    s = str(episode)
    w = hash_weights()
    return len(s) * w[0] + sum(w[1 + i] * s.count(c) for i, c in enumerate(HASH_CHARS))


def bucket_hash_sql(ident="h.id", length="h.n", indent=" " * 12):
    """h = n*W0 + sum_c W_c * (n - length(replace(id, c, ''))): the number of
    times each character occurs, weighted; n = length in characters.  Only
    length, replace and integer arithmetic: every engine gives the same."""
    w = hash_weights()
    terms = [f"{length} * {w[0]}"]
    terms += [f"({length} - length(replace({ident}, '{c}', ''))) * {w[1 + i]}"
              for i, c in enumerate(HASH_CHARS)]
    return ("\n" + indent + "+ ").join(terms)


HASH_DOC = ("n * W0 + sum over the characters c in 0-9, a-z, A-Z of\n"
            "-- W_c * (occurrences of c in the id), n = its length in characters\n"
            "-- (weights in the expression below; sql/gen_dialects.py writes it).")


def expand(name, seen=(), src_dir=None):
    """sql/src/<name> (or src_dir/<name>: tests/engines/mutations.py renders
    mutated copies) with its @include lines and hash placeholders expanded."""
    if name in seen:
        raise SystemExit(f"gen_dialects: @include loop at {name}")
    src_dir = src_dir or os.path.join(HERE, "src")
    out = []
    with open(os.path.join(src_dir, name)) as f:
        for line in f:
            if line.startswith("@include "):
                out.append(expand(line.split()[1], seen + (name,), src_dir))
            else:
                out.append(line)
    text = "".join(out)
    return text.replace("@ID_HASH@", bucket_hash_sql()).replace("@HASH_DOC@", HASH_DOC)


def render(name, dialect, src_dir=None):
    src = f"{dialect}/{name}" if dialect in OWN_SOURCES else name
    text = expand(src, src_dir=src_dir)
    form = REAL_TEXT.get(dialect, REAL_TEXT_DEFAULT)
    text = re.sub(r"REAL_TEXT\(([^()]*)\)", lambda m: form.format(m.group(1)), text)
    text = text.replace("@DIALECT@", dialect).replace("@VERSION@", version())
    for old, new in DIALECTS[dialect]:
        text = text.replace(old, new)
    header = (f"-- {dialect}: written by sql/gen_dialects.py from sql/src/{src}; "
              "edit the source, not this file.\n")
    return header + text


def main(argv):
    check = "--check" in argv
    stale = []
    for dialect in DIALECTS:
        os.makedirs(os.path.join(HERE, dialect), exist_ok=True)
        for name in SOURCES:
            path = os.path.join(HERE, dialect, name)
            text = render(name, dialect)
            old = open(path).read() if os.path.exists(path) else None
            if old == text:
                continue
            if check:
                stale.append(os.path.relpath(path, os.path.dirname(HERE)))
            else:
                with open(path, "w") as f:
                    f.write(text)
    if stale:
        print("gen_dialects: out of date (run python3 sql/gen_dialects.py): " + ", ".join(stale))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
