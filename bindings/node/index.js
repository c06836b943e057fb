// dprl for Node: the dprl SQLite extension (dprl.so, in this package) and
// a loader for better-sqlite3 and node:sqlite.
//
//   const Database = require('better-sqlite3');
//   const dprl = require('dprl');
//   const db = new Database('trajectories.db');
//   dprl.load(db);
//
//   const { DatabaseSync } = require('node:sqlite');         // Node >= 22.13
//   const db2 = new DatabaseSync('trajectories.db', { allowExtension: true });
//   dprl.load(db2);
'use strict';
const fs = require('node:fs');
const path = require('node:path');

/** The absolute path of dprl.so, for any binding's loadExtension. */
function getLoadablePath() {
  if (process.platform !== 'linux' || process.arch !== 'x64') {
    throw new Error(`dprl: this package ships dprl.so for Linux x64 only, not ${process.platform} ` +
                    `${process.arch}; build dprl from source (make) and load that file`);
  }
  const file = path.join(__dirname, 'dprl.so');
  if (!fs.existsSync(file)) {
    throw new Error(`dprl: ${file} is missing; a package made by npm pack has it ` +
                    '(its prepack script runs make)');
  }
  return file;
}

/**
 * Load dprl into db: a better-sqlite3 Database, or a node:sqlite
 * DatabaseSync opened with { allowExtension: true }.  Both have
 * db.loadExtension(file); the connection's own setting for the SQL
 * function load_extension() is left as it was.
 */
function load(db) {
  if (db === null || typeof db !== 'object' || typeof db.loadExtension !== 'function') {
    throw new TypeError('dprl.load(db): db must be a better-sqlite3 Database or a node:sqlite ' +
                        'DatabaseSync (a connection with a loadExtension method), got ' +
                        (db === null ? 'null' : typeof db));
  }
  const file = getLoadablePath();
  try {
    db.loadExtension(file);
  } catch (e) {
    if (e && (e.code === 'ERR_INVALID_STATE' || /not allowed|not authorized/.test(String(e.message)))) {
      const err = new Error(`dprl.load: this connection does not allow extensions (${e.message}); ` +
                            'with node:sqlite open it as new DatabaseSync(file, { allowExtension: true })');
      err.cause = e;
      throw err;
    }
    if (e && /cannot open shared object/.test(String(e.message))) {
      const err = new Error(`dprl.load: ${file} needs Debian's liblapacke and libopenblas at run ` +
                            `time (apt-get install liblapacke libopenblas0): ${e.message}`);
      err.cause = e;
      throw err;
    }
    throw e;
  }
}

module.exports = { load, getLoadablePath };
