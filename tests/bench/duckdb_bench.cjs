// tests/bench/duckdb_bench.cjs: DuckDB's side of `make bench` (bench.c).
//
//   node duckdb_bench.cjs STEPS.csv FIRST_VISIT_STATS.sql     (DUCKDB_NODE_DIR set)
//
// Loads the benchmark's steps (episode, t, state, reward; the rows of
// SQLite's `steps`, exported by bench.c) into an in-memory DuckDB with 2
// threads, prints "ready <version>", then for each line k on stdin runs
// query k once and prints "<cpu seconds> <wall seconds> <first cell of the
// last row>": query 0 is the window SQL of bench.c's plain-SQL row, query 1
// the project's sql/duckdb/first_visit_stats.sql (its return_sum summed).
// CPU time is this process's (every thread), from process.cpuUsage().
"use strict";
const fs = require("fs");
const path = require("path");
const readline = require("readline");
const { createRequire } = require("module");

const dir = process.env.DUCKDB_NODE_DIR;
if (!dir) {
  console.error("duckdb_bench: DUCKDB_NODE_DIR (where @duckdb/node-api is installed) is not set");
  process.exit(2);
}
const req = createRequire(path.join(path.resolve(dir), "package.json"));
const { DuckDBInstance } = req("@duckdb/node-api");
const version = req("@duckdb/node-api/package.json").version;

const WINDOW_SQL = `
WITH g AS (SELECT episode, t, state,
  sum(least(greatest(reward, 0), 1) * power(0.99, t)) OVER
   (PARTITION BY episode ORDER BY t DESC) / power(0.99, t) AS G,
  row_number() OVER (PARTITION BY episode, state ORDER BY t) AS rn
  FROM steps)
SELECT sum(s) FROM
(SELECT state, count(*) AS v, sum(G) AS s FROM g WHERE rn = 1 GROUP BY state)`;

function cell(v) {
  if (v === null || v === undefined) return "NULL";
  return String(v);
}

async function main() {
  const [csv, statsFile] = process.argv.slice(2);
  const stats = fs.readFileSync(statsFile, "utf8").replace(/;\s*$/, "");
  const queries = [WINDOW_SQL, `SELECT sum(return_sum) FROM (${stats})`];
  const instance = await DuckDBInstance.create(":memory:", { threads: "2" });
  const con = await instance.connect();
  await con.run(
    `CREATE TABLE steps AS SELECT * FROM read_csv('${csv.replace(/'/g, "''")}', header = false,
       columns = {'episode': 'BIGINT', 't': 'BIGINT', 'state': 'BIGINT', 'reward': 'DOUBLE'})`);
  // the public options of the recipe, as dp_lsw's (rewards in [0, 1]): with
  // NULL rmin/rmax the recipe refuses and returns NULL
  await con.run(`CREATE TABLE dprl_params AS SELECT 0.99 AS gamma, 0::DOUBLE AS rmin,
    1::DOUBLE AS rmax, NULL::DOUBLE AS fmin, NULL::DOUBLE AS fmax, 750 AS n_states,
    NULL::BIGINT AS max_states, NULL::BIGINT AS buckets, NULL::BIGINT AS bucket_lo, NULL::BIGINT AS bucket_hi`);
  process.stdout.write(`ready ${version}, 2 threads\n`);
  const rl = readline.createInterface({ input: process.stdin });
  for await (const line of rl) {
    const k = Number(line.trim());
    const c0 = process.cpuUsage();
    const w0 = process.hrtime.bigint();
    const reader = await con.runAndReadAll(queries[k]);
    const rows = reader.getRows();
    const wall = Number(process.hrtime.bigint() - w0) / 1e9;
    const c = process.cpuUsage(c0);
    const last = rows.length ? cell(rows[rows.length - 1][0]) : "NULL";
    process.stdout.write(`${(c.user + c.system) / 1e6} ${wall} ${last}\n`);
  }
  con.closeSync();
  instance.closeSync();
}

main().catch((e) => {
  console.error(String(e && e.message ? e.message : e));
  process.exit(1);
});
