#!/usr/bin/env python3
"""sql/gen_dialects.py: write the per-engine SQL files from one source.

    python3 sql/gen_dialects.py          write sql/<dialect>/<name>.sql
    python3 sql/gen_dialects.py --check  exit 1 if a written file differs

The sources are sql/src/<name>.sql.  A line "@include FILE" is replaced by
sql/src/FILE; @ID_HASH@ by the episode-bucket hash (bucket_hash() below).
The dialects differ only by the type-name substitutions in DIALECTS, which
docs/scaling-out.md lists too; tests/sql/test_dialects.py checks that
the files are exactly the sources with these substitutions.
"""
import os
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
}

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


def expand(name, seen=()):
    if name in seen:
        raise SystemExit(f"gen_dialects: @include loop at {name}")
    out = []
    with open(os.path.join(HERE, "src", name)) as f:
        for line in f:
            if line.startswith("@include "):
                out.append(expand(line.split()[1], seen + (name,)))
            else:
                out.append(line)
    text = "".join(out)
    return text.replace("@ID_HASH@", bucket_hash_sql()).replace("@HASH_DOC@", HASH_DOC)


def render(name, dialect):
    text = expand(name)
    for old, new in DIALECTS[dialect]:
        text = text.replace(old, new)
    header = (f"-- {dialect}: written by sql/gen_dialects.py from sql/src/{name}; "
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
