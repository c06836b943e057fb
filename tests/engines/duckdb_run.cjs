// tests/engines/duckdb_run.cjs: run SQL in DuckDB (the npm package
// @duckdb/node-api, installed by `make engines-deps` under build/), print
// the rows as JSON.
//
//   node duckdb_run.cjs DBFILE < job.json
//   job = {"statements": [sql, ...]}: runs each in order on the database
//   file; prints [{"columns": [...], "rows": [[...], ...]}, ...], one entry
//   per statement.  Doubles print as JSON numbers (shortest round-trip
//   text, so exact), NaN/Infinity as strings, 64-bit integers as numbers
//   when exact and strings otherwise.  An error prints to stderr, exit 1.
"use strict";
const path = require("path");
const { createRequire } = require("module");

const dir = process.env.DUCKDB_NODE_DIR;
if (!dir) {
  console.error("duckdb_run: DUCKDB_NODE_DIR (where @duckdb/node-api is installed) is not set");
  process.exit(2);
}
const { DuckDBInstance } = createRequire(path.join(path.resolve(dir), "package.json"))(
  "@duckdb/node-api");

function plain(v) {
  if (v === null || v === undefined) return null;
  if (typeof v === "bigint") {
    return v >= -9007199254740991n && v <= 9007199254740991n ? Number(v) : v.toString();
  }
  if (typeof v === "number") return Number.isFinite(v) ? v : String(v);
  if (typeof v === "string" || typeof v === "boolean") return v;
  return String(v); // decimals, dates: their text
}

async function main() {
  const chunks = [];
  for await (const c of process.stdin) chunks.push(c);
  const job = JSON.parse(Buffer.concat(chunks).toString("utf8"));
  const instance = await DuckDBInstance.create(process.argv[2] || ":memory:");
  const con = await instance.connect();
  const out = [];
  for (const sql of job.statements) {
    const reader = await con.runAndReadAll(sql);
    out.push({ columns: reader.columnNames(), rows: reader.getRows().map((r) => r.map(plain)) });
  }
  con.closeSync();
  instance.closeSync();
  process.stdout.write(JSON.stringify(out));
}

main().catch((e) => {
  console.error(String(e && e.message ? e.message : e));
  process.exit(1);
});
