// Run by tests/packaging/test_node.sh in a fresh project where the packed
// dprl tarball was installed with npm:  node use_node.js VERSION COMMIT
// Prints "ok ..." / "not ok ...".  better-sqlite3 comes from NODE_PATH
// (built once by make node-deps); node:sqlite is used for real where this
// Node has DatabaseSync.prototype.loadExtension (Node >= 22.13 / 23.5), and
// its API is mocked otherwise (Node 20 has no node:sqlite).
'use strict';
const path = require('node:path');
const fs = require('node:fs');

const [version, commit] = process.argv.slice(2);
let failed = 0;
function check(cond, name, detail) {
  console.log((cond ? 'ok ' : 'not ok ') + name);
  if (!cond) {
    failed++;
    if (detail !== undefined) for (const l of String(detail).split('\n')) console.log('#   ' + l);
  }
}
function thrown(f) {
  try { f(); } catch (e) { return e; }
  return null;
}

const installed = path.join(process.cwd(), 'node_modules', 'dprl');
const dprl = require('dprl');
check(require.resolve('dprl').startsWith(installed + path.sep),
      "require('dprl') is the installed package", require.resolve('dprl'));
const so = dprl.getLoadablePath();
check(so === path.join(installed, 'dprl.so') && fs.statSync(so).size > 0,
      'getLoadablePath() is the dprl.so in node_modules/dprl', so);

const STEPS = "CREATE TABLE steps(episode, t, state, reward);" +
  "INSERT INTO steps VALUES (1,0,0,1),(1,1,1,0),(1,2,2,1),(2,0,1,1),(2,1,2,1),(3,0,2,0);";
const RELEASE = "SELECT dp_lsw(episode, t, state, reward, '{\"n_states\": 3, \"gamma\": 0.5, \"rmin\": 0, \"rmax\": 1, " +
  "\"epsilon\": 1, \"delta\": 1e-5, \"perturb\": \"statistics\"}') AS r FROM steps";

// Both bindings: prepare(sql).get() returns the row as an object.
function exercise(db, label) {
  dprl.load(db);
  check(db.prepare('SELECT dprl_version() AS v').get().v === version,
        `[${label}] dprl.load(db): dprl_version() is ${version}`);
  const debug = db.prepare('SELECT dprl_debug() AS d').get().d;
  check(debug.includes(`\ncommit ${commit}\n`), `[${label}] dprl_debug() names commit ${commit}`, debug);
  db.exec(STEPS);
  const r = JSON.parse(db.prepare(RELEASE).get().r);
  check(r.mechanism === 'dp_lsw' && r.private === true && r.values.length === 3 && !('seeded' in r),
        `[${label}] a private dp_lsw release`, JSON.stringify(r));
  // Options passed as a bound parameter take the per-row route of a literal:
  // compared as the bytes they came in, never copied (dprl_debug(options)).
  const opts = JSON.stringify({n_states: 3, gamma: 0.5, rmin: 0, rmax: 1, epsilon: 1, delta: 1e-5,
                               perturb: 'statistics'});
  const b = JSON.parse(db.prepare('SELECT dp_lsw(episode, t, state, reward, ?) AS r FROM steps').get(opts).r);
  const how = db.prepare('SELECT dprl_debug(?) AS d').get(opts).d;
  check(b.private === true && how === 'bytes', `[${label}] bound options: compared as bytes, as a literal`, how);
}

// better-sqlite3, for real.
let Database = null;
try {
  Database = require('better-sqlite3');
} catch (e) {
  check(false, 'better-sqlite3 is available (make node-deps builds it)', e.message);
}
if (Database) {
  const db = new Database(':memory:');
  exercise(db, 'better-sqlite3');
  const e = thrown(() => db.prepare('SELECT load_extension(?)').get(so));
  check(e && /not authorized/.test(e.message),
        "[better-sqlite3] the SQL function load_extension() stays off", e && e.message);
  db.close();
}

// node:sqlite: for real where this Node has it.
let sqlite = null;
try {
  sqlite = require('node:sqlite');
} catch (e) { /* Node < 22.5 */ }
if (sqlite && typeof sqlite.DatabaseSync.prototype.loadExtension === 'function') {
  exercise(new sqlite.DatabaseSync(':memory:', { allowExtension: true }), 'node:sqlite');
  const e = thrown(() => dprl.load(new sqlite.DatabaseSync(':memory:')));
  check(e && /allowExtension: true/.test(e.message),
        '[node:sqlite] without allowExtension: an error saying how to open the database', e && e.message);
} else {
  console.log(`# node ${process.version} has no node:sqlite loadExtension: its API is mocked below`);
}

// The loader's logic against a mock of node:sqlite's DatabaseSync, whose
// loadExtension throws ERR_INVALID_STATE "extension loading is not allowed"
// unless the database was opened with { allowExtension: true } (Node's own
// test/sqlite/test-sqlite-extensions.mjs).
class MockDatabaseSync {
  constructor(file, options = {}) { this.allow = options.allowExtension === true; this.loaded = []; }
  loadExtension(file) {
    if (!this.allow) {
      const err = new Error('extension loading is not allowed');
      err.code = 'ERR_INVALID_STATE';
      throw err;
    }
    this.loaded.push(file);
  }
}
const allowed = new MockDatabaseSync(':memory:', { allowExtension: true });
dprl.load(allowed);
check(allowed.loaded.length === 1 && allowed.loaded[0] === so,
      '[mock node:sqlite] load(db) calls db.loadExtension(getLoadablePath()) once');
const e1 = thrown(() => dprl.load(new MockDatabaseSync(':memory:')));
check(e1 && /allowExtension: true/.test(e1.message) && e1.cause && e1.cause.code === 'ERR_INVALID_STATE',
      '[mock node:sqlite] not allowed: an error saying { allowExtension: true }, the cause kept',
      e1 && e1.message);
for (const bad of [null, undefined, 'trajectories.db', {}]) {
  const e = thrown(() => dprl.load(bad));
  check(e instanceof TypeError && /better-sqlite3/.test(e.message),
        `load(${JSON.stringify(bad)}) is a TypeError naming what it takes`, e && e.message);
}

// The ES module entry exports the same functions.
import('dprl').then((m) => {
  check(m.load === dprl.load && m.getLoadablePath === dprl.getLoadablePath && m.default === dprl,
        "import('dprl') (ESM) exports load and getLoadablePath");
  process.exitCode = failed ? 1 : 0;
}, (e) => {
  check(false, "import('dprl') (ESM)", e.message);
  process.exitCode = 1;
});
