/*
** sql_q_path.c: dp_q_noise's path table (see sql_q_path.h).
**
**   SELECT * FROM dp_q_noise('SELECT 0.5, 0, 1.0',
**     '{"n_actions": 1, "sigma": 0.5, "beta": 2, "path": "gp"}');
**   SELECT * FROM gp;          -- action | state | g | q   (the point drawn,
**                              --   the q on the grid it was released with)
**   SELECT * FROM gp_params;   -- sigma | beta | lo | hi | seeded | budget
*/
#include "q_learning/sql_q_path.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "q_learning/q_options.h"

/* ---- loading and storing points -------------------------------------------- */

/* Column i of the load statement: a number below 2^52 grid steps, on the grid. */
static int on_grid(dprl_q_store *st, int i) {
  int t = sqlite3_column_type(st->load, i);
  double k = sqlite3_column_double(st->load, i) / st->p->grid;
  return (t == SQLITE_FLOAT || t == SQLITE_INTEGER) && fabs(k) < 0x1p52 && k == floor(k);
}

/* A stored row must be a point of this path: a state in [lo, hi], g and q
** finite multiples of the grid. */
static int check_row(dprl_q_store *st, int64_t a, dprl_error *err) {
  const dprl_q_path_params *c = st->p;
  int ts = sqlite3_column_type(st->load, 0);
  double s = sqlite3_column_double(st->load, 0);
  if ((ts == SQLITE_FLOAT || ts == SQLITE_INTEGER) && s >= c->lo && s <= c->hi &&
      on_grid(st, 1) && on_grid(st, 2))
    return DPRL_OK;
  char v[3][32];
  for (int i = 0; i < 3; i++)
    if (sqlite3_column_type(st->load, i) == SQLITE_NULL) dprl_snprintf(v[i], 32, "NULL");
    else dprl_json_num(sqlite3_column_double(st->load, i), v[i], 32);
  return dprl_fail(err, DPRL_EINVAL,
                   "path table \"%s\": stored row (action %lld, state %s, g %s, q %s) is not a "
                   "point of this path (state in [lo, hi], g and q finite multiples of the grid)",
                   st->name, (long long)a, v[0], v[1], v[2]);
}

/* The stored rows of action a, checked, in table order. */
int dprl_q_store_load(dprl_q_store *st, int64_t a, dprl_q_point **out, size_t *nout,
                      dprl_error *err) {
  size_t n = 0, cap = 0;
  dprl_q_point *v = NULL;
  int rc = DPRL_OK, step;
  sqlite3_reset(st->load);
  sqlite3_bind_int64(st->load, 1, a);
  while (!rc && (step = sqlite3_step(st->load)) == SQLITE_ROW) {
    if ((rc = check_row(st, a, err))) break;
    if (n == DPRL_Q_PATH_MAX_POINTS) {
      rc = dprl_fail(err, DPRL_EINVAL,
                     "path table \"%s\" holds more than %zu points of action %lld, the most "
                     "one call loads for an action (24 bytes each, in one allocation of at most "
                     "%zu bytes)",
                     st->name, DPRL_Q_PATH_MAX_POINTS, (long long)a, DPRL_MAX_ALLOC);
      break;
    }
    if (n == cap) {
      size_t nc = cap ? 2 * cap : 256;
      void **arrays[] = {(void **)&v};
      const size_t sizes[] = {sizeof *v};
      if ((rc = dprl_grow_parallel(nc, 1, arrays, sizes, err))) break;
      cap = nc;
    }
    v[n].x = sqlite3_column_double(st->load, 0);
    v[n].g = sqlite3_column_double(st->load, 1);
    v[n].q = sqlite3_column_double(st->load, 2);
    n++;
  }
  if (!rc && step != SQLITE_DONE) rc = dprl_q_path_db_fail(st, "loading the stored points", err);
  sqlite3_reset(st->load);
  if (rc) {
    dprl_free(v);
    return rc;
  }
  *out = v;
  *nout = n;
  return DPRL_OK;
}

/* A plain INSERT per point: a point that cannot be stored is an error,
** never skipped, since its value is about to be released. */
int dprl_q_store_add(dprl_q_store *st, int64_t a, dprl_q_point *pts, size_t n,
                     dprl_error *err) {
  int rc = dprl_q_path_may_write(st, err);
  if (!rc) rc = dprl_sort(pts, n, sizeof *pts, dprl_q_point_cmp, st->cancel, err);
  for (size_t j = 0; j < n && !rc; j++) {
    if (j && pts[j].x == pts[j - 1].x) continue; /* a state repeated in this call */
    if ((rc = dprl_cancel_poll(st->cancel, 2000, err))) break;
    sqlite3_reset(st->ins);
    sqlite3_bind_int64(st->ins, 1, a);
    sqlite3_bind_double(st->ins, 2, pts[j].x);
    sqlite3_bind_double(st->ins, 3, pts[j].g);
    sqlite3_bind_double(st->ins, 4, pts[j].q);
    if (sqlite3_step(st->ins) != SQLITE_DONE)
      rc = dprl_q_path_write_fail(st, "storing new points", err);
    else if (sqlite3_changes(st->db) != 1) /* e.g. a trigger's RAISE(IGNORE) */
      rc = dprl_fail(err, DPRL_EINVAL,
                     "path table \"%s\": a new point was not stored (the insert changed %d "
                     "rows); its noise is not released",
                     st->name, sqlite3_changes(st->db));
    sqlite3_reset(st->ins);
  }
  return rc;
}

/* The tables (sql_q_path_check.c), then the per-action statements. */
static int store_open(dprl_q_store *st, dprl_error *err) {
  int rc = dprl_q_path_open(st, err);
  if (!rc)
    rc = dprl_q_path_prepare_fmt(st, &st->load, "loading the stored points", err,
                                 "SELECT state, g, q FROM \"%w\".\"%w\" WHERE action = ?1",
                                 st->schema, st->table);
  if (!rc)
    rc = dprl_q_path_prepare_fmt(st, &st->ins, "storing new points", err,
                                 "INSERT INTO \"%w\".\"%w\"(action, state, g, q) "
                                 "VALUES (?1, ?2, ?3, ?4)",
                                 st->schema, st->table);
  return rc;
}

/* ---- where the tables are ------------------------------------------------------ */

/* Does schema.table exist (a table or view SQLite would find)?  Preparing
** re-reads a schema SQLite finds out of date, and leaves no lock behind. */
static int exists_in(dprl_q_store *st, const char *schema, const char *table, int *found,
                     dprl_error *err) {
  sqlite3_stmt *s = NULL;
  char *sql = sqlite3_mprintf("SELECT 1 FROM \"%w\".\"%w\"", schema, table);
  if (!sql) return dprl_nomem(err);
  int rc = sqlite3_prepare_v2(st->db, sql, -1, &s, NULL);
  sqlite3_free(sql);
  sqlite3_finalize(s);
  *found = rc == SQLITE_OK;
  if (rc == SQLITE_OK || rc == SQLITE_ERROR) return DPRL_OK; /* no such table */
  return dprl_q_path_db_fail(st, "looking for it", err);
}

/* The attached schema whose name is `want` (any case) into *out (its own
** spelling, sqlite3_malloc'd), or, want NULL, the first schema in SQLite's
** search order (temp, main, then attached) holding `table`, else main. */
static int find_schema(dprl_q_store *st, const char *want, const char *table, char **out,
                       dprl_error *err) {
  sqlite3_stmt *dbs = NULL;
  int rc = dprl_q_path_prepare_fmt(st, &dbs, "listing the schemas", err,
                                   "SELECT name FROM pragma_database_list ORDER BY seq != 1, seq");
  while (!rc && !*out && sqlite3_step(dbs) == SQLITE_ROW) {
    const char *name = (const char *)sqlite3_column_text(dbs, 0);
    int found = 0;
    if (!name) rc = dprl_nomem(err);
    else if (want) found = sqlite3_stricmp(name, want) == 0;
    else rc = exists_in(st, name, table, &found, err);
    if (!rc && found && !(*out = sqlite3_mprintf("%s", name))) rc = dprl_nomem(err);
  }
  sqlite3_finalize(dbs);
  if (!rc && !*out && !want && !(*out = sqlite3_mprintf("main"))) rc = dprl_nomem(err);
  return rc;
}

/* "schema.table" (schema an attached database) or "table" (where SQLite
** would find it, else main); the parameters table in the same schema. */
static int resolve(dprl_q_store *st, dprl_error *err) {
  const char *dot = strchr(st->name, '.');
  char *want = dot ? sqlite3_mprintf("%.*s", (int)(dot - st->name), st->name) : NULL;
  if (dot && !want) return dprl_nomem(err);
  st->table = sqlite3_mprintf("%s", dot ? dot + 1 : st->name);
  int rc = st->table ? DPRL_OK : dprl_nomem(err);
  if (!rc && (!*st->table || (want && !*want)))
    rc = dprl_fail(err, DPRL_EINVAL, "option path must be a table name or schema.table, got \"%s\"",
                   st->name);
  if (!rc) rc = find_schema(st, want, st->table, &st->schema, err);
  if (!rc && !st->schema)
    rc = dprl_fail(err, DPRL_EINVAL,
                   "option path: schema \"%s\" is not a database of this connection (main, temp "
                   "or an attached one), in \"%s\"",
                   want, st->name);
  sqlite3_free(want);
  if (!rc && (!(st->params = sqlite3_mprintf("%s_params", st->table)) ||
              !(st->params_shown = sqlite3_mprintf("%s_params", st->name))))
    rc = dprl_nomem(err);
  return rc;
}

/* ---- the transaction ---------------------------------------------------------- */

/* The result rc of a statement that takes the write lock: DPRL_OK unless
** the lock itself was refused (other failures, say a view or a read-only
** file, are left for the checks that follow to explain). */
#define LOCKING "taking its write lock"

static int try_lock(dprl_q_store *st, int rc, dprl_error *err) {
  if (!rc) return DPRL_OK;
  int code = sqlite3_errcode(st->db) & 0xff;
  if (err->code != DPRL_EINVAL || (code != SQLITE_BUSY && code != SQLITE_LOCKED)) {
    if (err->code == DPRL_EINVAL) dprl_error_clear(err);
    return err->code;
  }
  return DPRL_EINVAL;
}

/* Take the write lock of the tables' schema before anything reads it, so
** that SQLite's busy handler can wait for another writer.  Once this
** connection reads a schema (in autocommit mode, every SELECT reads main
** until it ends) it can no longer wait to write it: then the writes stay
** deferred, and a lock conflict is an error that says so. */
static int lock_schema(dprl_q_store *st, dprl_error *err) {
  if (sqlite3_libversion_number() < 3034000) return DPRL_OK; /* no sqlite3_txn_state */
  int state = sqlite3_txn_state(st->db, st->schema), found = 0, rc;
  st->cannot_wait = state == SQLITE_TXN_READ;
  if (state != SQLITE_TXN_NONE) return DPRL_OK;
  if ((rc = exists_in(st, st->schema, st->table, &found, err))) return rc;
  if (!found && (rc = try_lock(st, dprl_q_path_create(st, 1, LOCKING, err), err))) return rc;
  /* (created by another connection meanwhile, IF NOT EXISTS wrote nothing) */
  if (sqlite3_txn_state(st->db, st->schema) != SQLITE_TXN_WRITE)
    rc = try_lock(st,
                  dprl_q_path_write_fmt(st, LOCKING, err, "DELETE FROM \"%w\".\"%w\" WHERE 0",
                                        st->schema, st->table), /* writes nothing */
                  err);
  return rc;
}

int dprl_q_store_begin(dprl_q_store *st, sqlite3 *db, const char *name,
                       const dprl_q_path_params *p, dprl_cancel *cancel, dprl_error *err) {
  memset(st, 0, sizeof *st);
  st->db = db;
  st->name = name;
  st->p = p;
  st->cancel = cancel;
  int rc = resolve(st, err);
  if (rc) return rc;
  /* Fails while another statement of this connection writes; the path can
  ** then still be read, and a call whose points are all stored succeeds.
  ** Outside a transaction our SAVEPOINT opens one, and releasing it
  ** commits: that can fail (a reader holds the lock), and then the
  ** connection must not be left inside it. */
  st->outermost = sqlite3_get_autocommit(db);
  st->writable = sqlite3_exec(db, "SAVEPOINT dprl_q_noise", NULL, NULL, NULL) == SQLITE_OK;
  if (!st->writable) dprl_snprintf(st->why, sizeof st->why, "%s", sqlite3_errmsg(db));
  if (st->writable && (rc = lock_schema(st, err))) return rc;
  return store_open(st, err);
}

/* After a failure: nothing of this call stays written, and the connection
** is left as it was found.  A transaction our SAVEPOINT opened is rolled
** back whole (a failed commit leaves it open, and later autocommit writes
** would then be lost on close); inside the caller's transaction, ROLLBACK
** TO and RELEASE (which cannot commit there).  SQLite itself may have
** rolled back the whole transaction already (an INSERT interrupted, a
** full disk); and on an interrupted connection no statement runs, so the
** message then says what is left to do. */
static void undo_savepoint(dprl_q_store *st, dprl_error *err) {
  sqlite3 *db = st->db;
  const char *tail;
  if (sqlite3_get_autocommit(db))
    tail = st->outermost ? NULL : "; SQLite rolled back your whole transaction";
  else if (st->outermost ? sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL) == SQLITE_OK
                         : sqlite3_exec(db, "ROLLBACK TO dprl_q_noise", NULL, NULL, NULL) ==
                                   SQLITE_OK &&
                               sqlite3_exec(db, "RELEASE dprl_q_noise", NULL, NULL, NULL) ==
                                   SQLITE_OK)
    return;
  else if (err->code != DPRL_EINTR)
    tail = "; undoing it failed too: roll back the transaction";
  else if (st->outermost)
    tail = "; the transaction dp_q_noise opened for its path table is still open (SQLite runs "
           "no statement, ROLLBACK included, on an interrupted connection until the "
           "interrupted one ends): run ROLLBACK";
  else
    tail = "; dp_q_noise could not roll back its savepoint in your transaction (SQLite runs "
           "no statement on an interrupted connection until the interrupted one ends): run "
           "ROLLBACK TO dprl_q_noise, or roll back";
  if (tail && err->code != DPRL_ENOMEM && strlen(err->msg) + strlen(tail) < sizeof err->msg)
    strcat(err->msg, tail);
}

int dprl_q_store_end(dprl_q_store *st, int rc, dprl_error *err) {
  sqlite3_finalize(st->load);
  sqlite3_finalize(st->ins);
  st->load = st->ins = NULL;
  if (!st->writable) return rc;
  if (!rc && sqlite3_exec(st->db, "RELEASE dprl_q_noise", NULL, NULL, NULL) != SQLITE_OK)
    rc = dprl_q_path_db_fail(st, "committing", err);
  if (rc) undo_savepoint(st, err);
  return rc;
}

/* The ledger row of the path's release is committed: say so in the
** parameters row.  Only a path charged to no budget yet is marked; if this
** write fails, the next budgeted call charges again (never less than the
** release costs, ALGORITHMS.md section 8.1). */
int dprl_q_store_mark_charged(dprl_q_store *st, dprl_error *err) {
  sqlite3_stmt *s = NULL;
  int rc = dprl_q_path_prepare_fmt(st, &s, "recording the budget charged", err,
                                   "UPDATE \"%w\".\"%w\" SET budget = ?1 WHERE budget IS NULL",
                                   st->schema, st->params);
  if (rc) return rc;
  sqlite3_bind_text(s, 1, st->p->budget, -1, SQLITE_STATIC);
  if (sqlite3_step(s) != SQLITE_DONE)
    rc = dprl_q_path_write_fail(st, "recording the budget charged", err);
  sqlite3_finalize(s);
  return rc;
}

void dprl_q_store_close(dprl_q_store *st) {
  sqlite3_finalize(st->load);
  sqlite3_finalize(st->ins);
  sqlite3_free(st->schema);
  sqlite3_free(st->table);
  sqlite3_free(st->params);
  sqlite3_free(st->params_shown);
  st->load = st->ins = NULL;
  st->schema = st->table = st->params = st->params_shown = NULL;
}
