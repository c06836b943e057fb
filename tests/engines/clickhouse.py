"""ClickHouse for the scale-out tests: the engine of engines.py, and a
distributed case on 3 servers.

    e = ClickHouse(tmpdir, nodes=3)     # sql/ch_local.sh start: 3 servers
    e.load(table, [(column, "int" | "text" | "real"), ...], rows)
    e.query(sql) -> list of tuples (ints, floats, str, None)   (node 1)
    e.queries([sql, ...]), e.close()
    distributed(e, ...)                 the 3-node checks (see there)

Debian's clickhouse-server 18.16 on 127.0.0.1, queried with
clickhouse-client.  Values go in as RowBinary (a double's 8 bytes, so
exactly: ClickHouse's CSV reader is not correctly rounded) and come back
as TabSeparatedWithNamesAndTypes, parsed by type (ClickHouse prints a
Float64 as the shortest text that reads back as it: exact).

What ClickHouse's types force (the only differences from the other
engines): every loaded column is Nullable (the bad-row cases need NULL
episodes, t, states and rewards; ClickHouse columns are not nullable by
default), "int" is Int64, "text" String, "real" Float64; tables are
ENGINE = Memory.
"""
import json
import math
import os
import struct
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "sql"))
import engines  # noqa: E402
import gen_dialects  # noqa: E402

CH_LOCAL = os.path.join(ROOT, "sql", "ch_local.sh")
TYPES = {"int": "Int64", "text": "String", "real": "Float64"}


def _varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def row_binary(columns, rows, nullable=True):
    """rows as ClickHouse RowBinary for these (column, type) pairs."""
    out = bytearray()
    for r in rows:
        for (_, t), v in zip(columns, r):
            if nullable:
                if v is None:
                    out.append(1)
                    continue
                out.append(0)
            elif v is None:
                raise ValueError("NULL in a non-Nullable column")
            if t == "int":
                out += struct.pack("<q", int(v))
            elif t == "real":
                out += struct.pack("<d", float(v))
            else:
                b = str(v).encode("utf-8")
                out += _varint(len(b)) + b
    return bytes(out)


_UNESCAPE = {"\\": "\\", "t": "\t", "n": "\n", "r": "\r", "0": "\0", "'": "'", "b": "\b",
             "f": "\f", '"': '"'}


def _unescape(s):
    if "\\" not in s:
        return s
    out, i = [], 0
    while i < len(s):
        c = s[i]
        if c == "\\" and i + 1 < len(s):
            out.append(_UNESCAPE.get(s[i + 1], s[i + 1]))
            i += 2
        else:
            out.append(c)
            i += 1
    return "".join(out)


def _value(text, typ):
    if typ.startswith("Nullable("):
        if text == "\\N":
            return None
        typ = typ[len("Nullable("):-1]
    if typ.startswith(("Int", "UInt")):
        return int(text)
    if typ.startswith("Float"):
        return float(text)  # also inf, -inf, nan
    if typ == "Nothing":
        return None
    return _unescape(text)


def parse_tsv(out):
    """TabSeparatedWithNamesAndTypes -> list of tuples."""
    lines = out.split("\n")
    if len(lines) < 2:
        return []
    types = lines[1].split("\t")
    return [tuple(_value(x, t) for x, t in zip(line.split("\t"), types))
            for line in lines[2:] if line != ""]


class ClickHouse(engines.Engine):
    name = "clickhouse"

    def __init__(self, tmp, nodes=3):
        self.dir = os.path.join(tmp, "ch")
        self.started = False
        r = subprocess.run(["sh", CH_LOCAL, "start", self.dir, str(nodes)],
                           capture_output=True, text=True)
        if r.returncode:
            raise engines.EngineError("clickhouse: could not start the servers: "
                                      + r.stderr.strip())
        self.started = True
        self.ports = [int(p) for p in r.stdout.split()]
        if len(self.ports) != nodes:
            raise engines.EngineError(f"clickhouse: {nodes} servers, ports {self.ports}")

    def client(self, sql, node=0, data=None, fmt="TabSeparatedWithNamesAndTypes", settings=()):
        """Run one statement on a node (0-based); data: bytes for an INSERT."""
        args = ["clickhouse-client", "--host", "127.0.0.1", "--port", str(self.ports[node])]
        for k, v in settings:
            args += [f"--{k}={v}"]
        if data is None:
            args += ["--format", fmt]
            r = subprocess.run(args, input=sql.encode(), capture_output=True)
        else:
            r = subprocess.run(args + ["--query", sql], input=data, capture_output=True)
        if r.returncode:
            raise engines.EngineError(f"clickhouse (node {node + 1}): "
                                      + r.stderr.decode(errors="replace").strip())
        return r.stdout.decode()

    def create(self, table, columns, node=0, nullable=True, engine="Memory"):
        def typ(t):
            return f"Nullable({TYPES[t]})" if nullable else TYPES[t]
        cols = ", ".join(f"{c} {typ(t)}" for c, t in columns)
        self.client(f"DROP TABLE IF EXISTS {table}", node)
        self.client(f"CREATE TABLE {table}({cols}) ENGINE = {engine}", node)

    def insert(self, table, columns, rows, node=0, nullable=True):
        if rows:
            self.client(f"INSERT INTO {table} FORMAT RowBinary", node,
                        data=row_binary(columns, rows, nullable))

    def load(self, table, columns, rows, node=0):
        self.create(table, columns, node)
        self.insert(table, columns, rows, node)

    def query(self, sql, node=0, settings=()):
        return parse_tsv(self.client(sql.rstrip().rstrip(";"), node, settings=settings))

    def close(self):
        if self.started:
            subprocess.run(["sh", CH_LOCAL, "stop", self.dir], capture_output=True)
            self.started = False


# ---- the distributed case ---------------------------------------------------

STATS_COLUMNS = ("state Int64, visits Int64, return_sum Nullable(Float64), buckets Int64, "
                 "bucket_lo Int64, bucket_hi Int64, episodes Int64, max_states Nullable(Int64), "
                 "made_with Nullable(String)")


def bucket_key(k, column="episode"):
    """The bucket hash of sql/gen_dialects.py as a ClickHouse expression of
    an episode column, mod k: a Distributed table's sharding key."""
    h = gen_dialects.bucket_hash_sql(ident=f"toString({column})",
                                     length=f"lengthUTF8(toString({column}))", indent=" ")
    return f"toUInt64(({h.replace('length(replace(', 'lengthUTF8(replaceAll(')}) % {k})"


def shard_key(k, ranges):
    """The sharding key of steps_all: the index of the shard whose bucket
    range holds the episode's bucket (ch_local.sh gives every shard weight
    1, so ClickHouse sends key i to shard i + 1)."""
    b = bucket_key(k)
    return "multiIf(" + ", ".join(f"{b} BETWEEN {lo} AND {hi}, {i}"
                                  for i, (lo, hi) in enumerate(ranges)) + f", {len(ranges)})"


def distribute(e, columns, rows, k, ranges):
    """The steps into the nodes through a Distributed table: on each node a
    local table `steps`, on node 1 `steps_all`, Distributed over them with
    the episode's bucket (through shard_key) as sharding key, inserted into
    synchronously.  Returns the number of steps on each node."""
    n = len(e.ports)
    for node in range(n):
        e.create("steps", columns, node, nullable=False)
    cols = ", ".join(f"{c} {TYPES[t]}" for c, t in columns)
    e.client("DROP TABLE IF EXISTS steps_all")
    e.client(f"CREATE TABLE steps_all({cols}) ENGINE = Distributed(dprl, default, steps, "
             f"{shard_key(k, ranges)})")
    e.client("INSERT INTO steps_all FORMAT RowBinary", 0,
             data=row_binary(columns, rows, nullable=False),
             settings=[("insert_distributed_sync", 1)])
    return [e.query("SELECT count() FROM steps", node)[0][0] for node in range(n)]


def set_node_params(e, n_states, opts, k, ranges):
    """Each node's one-row dprl_params: the options, and its bucket range."""
    from cases import PARAMS, OPTION_KEYS
    for node, (lo, hi) in enumerate(ranges):
        e.load("dprl_params", PARAMS,
               [tuple(opts.get(x) for x in OPTION_KEYS) + (n_states, k, lo, hi)], node)


def sql_text(name):
    with open(engines.sql_file("clickhouse", name)) as f:
        return f.read().rstrip().rstrip(";")


def views(e):
    """On each node, views of its statistics and check (the files as they
    are); on node 1, Distributed tables over them: one SELECT computes every
    node's statistics, on that node, all at once."""
    n = len(e.ports)
    for node in range(n):
        for view, name in (("node_stats", "first_visit_stats.sql"),
                           ("node_check", "first_visit_check.sql")):
            e.client(f"DROP TABLE IF EXISTS {view}", node)
            e.client(f"CREATE VIEW {view} AS\n{sql_text(name)}", node)
    check_cols = ", ".join(f"{c} {'UInt8' if c == 'bad_params' else 'UInt64'}"
                           for c in __import__("cases").CHECK_COLUMNS)
    for table, view, cols in (("stats_all", "node_stats", STATS_COLUMNS),
                              ("check_all", "node_check", check_cols)):
        e.client(f"DROP TABLE IF EXISTS {table}")
        e.client(f"CREATE TABLE {table}({cols}) ENGINE = Distributed(dprl, default, {view})")


def distributed(e, label, rows, columns, n_states, param_sets, release_sets=(), k=8,
                ranges=((0, 2), (3, 5), (6, 7))):
    """The distributed case: the steps routed into the nodes by a
    Distributed table (an episode lives on one node, shard i holds bucket
    range i); every node computes its statistics (first_visit_stats.sql,
    unmodified, as a view) in one SELECT over the Distributed table
    stats_all, tagged with its bucket range; the union, read once into
    shard_stats on node 1, passes stats_merge_check.sql; the merged
    statistics equal dprl's (dp_first_visit on all rows in SQLite: visits
    exactly, return sums within 1e-12 of sum |F|); and for release_sets,
    dp_lsw_from_stats on the union equals dp_lsw on all the rows (seeded,
    diagnostic: identical noisy theta)."""
    import cases
    from harness import check
    n = len(e.ports)
    ref = cases.reference(rows)
    counts = distribute(e, columns, rows, k, ranges)
    bucket = {r[0]: gen_dialects.bucket_hash_py(r[0]) % k for r in rows}
    want = [sum(1 for r in rows if lo <= bucket[r[0]] <= hi) for lo, hi in ranges]
    check(counts == want and all(counts),
          f"clickhouse {label}: {n} nodes, the Distributed table routes each episode to the "
          f"node of its bucket range (steps per node {counts})", f"got {counts}, want {want}")
    set_node_params(e, n_states, param_sets[0], k, ranges)  # the views read them when made
    views(e)
    e.client("DROP TABLE IF EXISTS shard_stats")
    e.client(f"CREATE TABLE shard_stats({STATS_COLUMNS}) ENGINE = Memory")
    for opts in param_sets:
        tag = (f"clickhouse {label}, {n} nodes "
               f"{json.dumps({x: v for x, v in opts.items() if v is not None})}")
        set_node_params(e, n_states, opts, k, ranges)
        checks = e.query("SELECT * FROM check_all")
        check(checks == [(0,) * len(cases.CHECK_COLUMNS)] * n,
              f"{tag}: every node's check query all zeros", checks)
        e.client("TRUNCATE TABLE shard_stats")
        t0 = time.time()
        e.client("INSERT INTO shard_stats SELECT * FROM stats_all")
        seconds = time.time() - t0
        got = e.query("SELECT * FROM shard_stats ORDER BY bucket_lo, state")
        shards = sorted({r[3:6] for r in got})
        check(shards == [(k, lo, hi) for lo, hi in ranges]
              and all(any(r[0] == 0 and r[3:6] == s for r in got) for s in shards),
              f"{tag}: each node's rows carry its bucket range, and a row for state 0",
              shards)
        merge = e.query(cases.sql(e, "stats_merge_check.sql"))
        check(merge == [(0,) * (len(cases.MERGE_COLUMNS) - 2) + (ref.m, None)],
              f"{tag}: the union passes stats_merge_check.sql, m = {ref.m}", merge)
        merged = {}
        for r in got:
            v, total = merged.get(r[0], (0, 0.0))
            merged[r[0]] = (v + r[1], total + (r[2] if r[2] is not None else math.nan))
        m_rows = [(s, v, total, k, 0, k - 1, ref.m, opts.get("max_states"), got[0][8])
                  for s, (v, total) in sorted(merged.items())]
        cases.compare_stats(m_rows, ref.stats(n_states, opts), ref.m,
                            f"{tag}: merged statistics ({seconds:.2f} s)", opts.get("max_states"))
        if hasattr(cases, "check_made_with"):
            cases.check_made_with(got, opts, n_states, "clickhouse", tag)
        if opts in release_sets:
            o = dict({x: v for x, v in opts.items() if v is not None}, n_states=n_states,
                     epsilon=1, delta=1e-5, release="diagnostic", seed=20240613)
            if "max_states" in o:
                o["perturb"] = "statistics"
            whole = ref.release("dp_lsw", o)
            moved = ref.release("dp_lsw", o, [(r[0], r[1], r[2], r[8]) for r in got], ref.m)
            same = (moved.get("theta") == whole["theta"] and moved["visits"] == whole["visits"]
                    and moved["episodes"] == whole["episodes"])
            check(same, f"{tag}: dp_lsw_from_stats on the {n} nodes' statistics = dp_lsw on "
                  "all the steps (diagnostic, same seed: identical noisy theta)",
                  f"{moved}\n{whole}")
