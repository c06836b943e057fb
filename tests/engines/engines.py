"""Three SQL engines behind one small interface, for the scale-out tests.

    e = Sqlite() | Postgres(tmpdir) | DuckDB(tmpdir)
    e.load(table, [(column, "int" | "text" | "real"), ...], rows)
    e.query(sql) -> list of tuples (ints, floats, str, None)
    e.queries([sql, ...]) -> [e.query(sql), ...] (DuckDB: in one process)
    e.close()

SQLite runs in this process (Python's sqlite3 with dprl loaded).
PostgreSQL is a throwaway server on 127.0.0.1 started by sql/pg_local.sh,
queried with psql.  DuckDB runs through the npm package @duckdb/node-api
(tests/engines/duckdb_run.cjs) on a database file.  Values cross as CSV
(doubles in shortest round-trip text, so exactly) and come back as text
(PostgreSQL >= 12 prints doubles exactly) or JSON numbers (DuckDB).
"""
import csv
import json
import math
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "sql"))
import harness  # noqa: E402

TYPES = {
    "sqlite": {"int": "INTEGER", "text": "TEXT", "real": "REAL"},
    "postgres": {"int": "BIGINT", "text": "TEXT", "real": "DOUBLE PRECISION"},
    "duckdb": {"int": "BIGINT", "text": "VARCHAR", "real": "DOUBLE"},
}


class EngineError(Exception):
    pass


def _csv_value(v):
    if v is None:
        return ""
    if isinstance(v, float):
        if math.isnan(v):
            return "NaN"
        if math.isinf(v):
            return "Infinity" if v > 0 else "-Infinity"
        return repr(v)
    return str(v)


def write_csv(path, columns, rows):
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow([c for c, _ in columns])
        for r in rows:
            w.writerow([_csv_value(v) for v in r])


def _parse(text):
    if text == "NULL":
        return None
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)  # also NaN, Infinity, -Infinity
    except ValueError:
        return text


def sql_file(dialect, name):
    """sql/<dialect>/<name>; with DPRL_SQL_DIR set, <DPRL_SQL_DIR>/<dialect>/<name>
    (tests/engines/mutations.py points the checks at mutated copies)."""
    return os.path.join(os.environ.get("DPRL_SQL_DIR") or os.path.join(ROOT, "sql"), dialect,
                        name)


class Engine:
    def queries(self, sqls):
        return [self.query(q) for q in sqls]


class Sqlite(Engine):
    name = "sqlite"

    def __init__(self, tmp=None):
        self.con = harness.connect()

    def load(self, table, columns, rows):
        self.con.execute(f"DROP TABLE IF EXISTS {table}")
        cols = ", ".join(f"{c} {TYPES['sqlite'][t]}" for c, t in columns)
        self.con.execute(f"CREATE TABLE {table}({cols})")
        marks = ",".join("?" * len(columns))
        self.con.executemany(f"INSERT INTO {table} VALUES ({marks})", rows)
        self.con.commit()

    def query(self, sql):
        try:
            return [tuple(r) for r in self.con.execute(sql).fetchall()]
        except Exception as e:  # sqlite3.Error
            raise EngineError(f"sqlite: {e}") from e

    def close(self):
        self.con.close()


class Postgres(Engine):
    name = "postgres"

    def __init__(self, tmp, port=None):
        self.dir = os.path.join(tmp, "pg")
        self.tmp = tmp
        self.port = port or subprocess.check_output(
            ["sh", os.path.join(ROOT, "sql", "pg_local.sh"), "port"], text=True).strip()
        r = subprocess.run(["sh", os.path.join(ROOT, "sql", "pg_local.sh"), "start", self.dir,
                            str(self.port)], capture_output=True, text=True)
        if r.returncode:
            raise EngineError("postgres: could not start a server: " + r.stderr.strip())
        self.started = True
        self.n = 0

    def psql(self, sql):
        self.n += 1
        path = os.path.join(self.tmp, f"pg_{self.n}.sql")
        with open(path, "w") as f:
            f.write(sql)
        r = subprocess.run(["psql", "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres",
                            "-d", "postgres", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-A", "-t",
                            "-F", "\t", "-P", "null=NULL", "-f", path],
                           capture_output=True, text=True)
        if r.returncode:
            raise EngineError("postgres: " + r.stderr.strip())
        return r.stdout

    def load(self, table, columns, rows):
        path = os.path.join(self.tmp, f"{table}.csv")
        write_csv(path, columns, rows)
        cols = ", ".join(f"{c} {TYPES['postgres'][t]}" for c, t in columns)
        self.psql(f"DROP TABLE IF EXISTS {table};\nCREATE TABLE {table}({cols});\n"
                  f"\\copy {table} FROM '{path}' WITH (FORMAT csv, HEADER true)\n"
                  f"ANALYZE {table};\n")

    def query(self, sql):
        out = self.psql(sql)
        return [tuple(_parse(x) for x in line.split("\t")) for line in out.splitlines() if line]

    def close(self):
        if self.started:
            subprocess.run(["sh", os.path.join(ROOT, "sql", "pg_local.sh"), "stop", self.dir],
                           capture_output=True)
            self.started = False


class DuckDB(Engine):
    name = "duckdb"

    def __init__(self, tmp):
        self.tmp = tmp
        self.db = os.path.join(tmp, "duck.db")
        self.node_dir = os.environ.get("DUCKDB_NODE_DIR",
                                       os.path.join(ROOT, "build", "engines", "duckdb"))
        if not os.path.isdir(os.path.join(self.node_dir, "node_modules", "@duckdb", "node-api")):
            raise EngineError(f"duckdb: @duckdb/node-api is not installed in {self.node_dir} "
                              "(make engines-deps installs it)")
        self.pending = []  # loads, run with the next query (one node process)
        self.run(["SELECT 1"])

    def run(self, statements):
        statements, self.pending = self.pending + statements, []
        r = subprocess.run(["node", os.path.join(HERE, "duckdb_run.cjs"), self.db],
                           input=json.dumps({"statements": statements}), capture_output=True,
                           text=True, env=dict(os.environ, DUCKDB_NODE_DIR=self.node_dir))
        if r.returncode:
            raise EngineError("duckdb: " + r.stderr.strip())
        return json.loads(r.stdout)

    def load(self, table, columns, rows):
        cols = ", ".join(f"{c} {TYPES['duckdb'][t]}" for c, t in columns)
        n = len(self.pending)
        path = os.path.join(self.tmp, f"{table}_{n}.csv")  # a later load may reuse the name
        write_csv(path, columns, rows)
        self.pending += [f"CREATE OR REPLACE TABLE {table}({cols})",
                         f"COPY {table} FROM '{path}' (FORMAT csv, HEADER true)"]

    def query(self, sql):
        return self.queries([sql])[0]

    def queries(self, sqls):
        res = self.run(list(sqls))[-len(sqls):]

        def value(v):
            if isinstance(v, str) and v in ("NaN", "Infinity", "-Infinity"):
                return float(v)
            return v
        return [[tuple(value(v) for v in r) for r in x["rows"]] for x in res]

    def close(self):
        pass
