/*
** sql_q_path.c: dp_q_noise's path table (see sql_q_path.h).
**
**   SELECT * FROM dp_q_noise('SELECT 0.5, 0, 1.0',
**     '{"n_actions": 1, "sigma": 0.5, "beta": 2, "path": "gp"}');
**   SELECT * FROM gp;          -- action | state | g   (the point drawn)
**   SELECT * FROM gp_params;   -- sigma | beta | lo | hi | seeded
*/
#include "sql_q_path.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "q_options.h"

/* Called before any write: refused when the SAVEPOINT could not be opened
** (the calling statement writes itself, e.g. CREATE TABLE ... AS SELECT). */
static int may_write(dprl_q_store *st, dprl_error *err) {
  if (st->writable) return DPRL_OK;
  return dprl_fail(err, DPRL_EINVAL,
                   "path table \"%s\": cannot store new noise from inside a statement that "
                   "writes (%s); run the same call in a plain SELECT first: once its points "
                   "are stored, it writes nothing",
                   st->name, st->why);
}

static int db_fail(dprl_q_store *st, const char *what, dprl_error *err) {
  int code = sqlite3_errcode(st->db);
  if (code == SQLITE_NOMEM) return dprl_nomem(err);
  if (code == SQLITE_INTERRUPT) return dprl_fail(err, DPRL_EINTR, "interrupted");
  return dprl_fail(err, DPRL_EINVAL, "path table \"%s\": %s: %s", st->name, what,
                   sqlite3_errmsg(st->db));
}

static int exec_fmt(dprl_q_store *st, const char *what, dprl_error *err, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char *sql = sqlite3_vmprintf(fmt, ap);
  va_end(ap);
  if (!sql) return dprl_nomem(err);
  int rc = sqlite3_exec(st->db, sql, NULL, NULL, NULL);
  sqlite3_free(sql);
  return rc == SQLITE_OK ? DPRL_OK : db_fail(st, what, err);
}

/* Prepare the SQL of fmt (sqlite3_mprintf style) into *s. */
static int prepare_fmt(dprl_q_store *st, sqlite3_stmt **s, const char *what, dprl_error *err,
                       const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char *sql = sqlite3_vmprintf(fmt, ap);
  va_end(ap);
  if (!sql) return dprl_nomem(err);
  int rc = sqlite3_prepare_v2(st->db, sql, -1, s, NULL);
  sqlite3_free(sql);
  return rc == SQLITE_OK ? DPRL_OK : db_fail(st, what, err);
}

/* ---- the two tables' schemas ------------------------------------------------ */

typedef struct table_want {
  const char *what;                /* for messages */
  int n;                           /* columns */
  const char *const *names, *const *types;
  const int *pk;                   /* primary key position of each column, 0: none */
  const char *schema;              /* as SQL */
} table_want;

static const char *const path_names[] = {"action", "state", "g"};
static const char *const path_types[] = {"INTEGER", "REAL", "REAL"};
static const int path_pk[] = {1, 2, 0};
#define PATH_SCHEMA "(action INTEGER, state REAL, g REAL, PRIMARY KEY(action, state))"
static const char *const par_names[] = {"sigma", "beta", "lo", "hi", "seeded"};
static const char *const par_types[] = {"REAL", "REAL", "REAL", "REAL", "INTEGER"};
static const int par_pk[] = {0, 0, 0, 0, 0};
#define PARAMS_SCHEMA "(sigma REAL, beta REAL, lo REAL, hi REAL, seeded INTEGER)"

static const table_want path_want = {"", 3, path_names, path_types, path_pk, PATH_SCHEMA};
static const table_want params_want = {"its parameters table", 5, par_names, par_types, par_pk,
                                       PARAMS_SCHEMA};

/* Append to got (printf style); used tracks the length, clamped to gotn. */
static void put(char *got, size_t gotn, size_t *used, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  *used += (size_t)vsnprintf(got + *used, *used < gotn ? gotn - *used : 0, fmt, ap);
  va_end(ap);
  if (*used >= gotn) *used = gotn - 1;
}

/* Columns of table `name` as "(a INTEGER, b REAL, PRIMARY KEY(a))" into
** got; *ncol = 0 when there is no such table.  *ok = the columns are
** exactly those of w. */
static int table_shape(dprl_q_store *st, const char *name, const table_want *w, int *ncol,
                       int *ok, char *got, size_t gotn, dprl_error *err) {
  sqlite3_stmt *s = NULL;
  if (sqlite3_prepare_v2(st->db, "SELECT name, type, pk FROM pragma_table_info(?1)", -1, &s,
                         NULL) != SQLITE_OK)
    return db_fail(st, "reading its schema", err);
  sqlite3_bind_text(s, 1, name, -1, SQLITE_STATIC);
  char pkcols[8][64] = {{0}};
  int npk = 0, n = 0, rc;
  size_t used = 0;
  *ok = 1;
  got[0] = 0;
  while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
    const char *cn = (const char *)sqlite3_column_text(s, 0);
    const char *ct = (const char *)sqlite3_column_text(s, 1);
    int pk = sqlite3_column_int(s, 2);
    if (!cn) cn = "";
    if (!ct) ct = "";
    put(got, gotn, &used, "%s%s%s%s", n ? ", " : "(", cn, *ct ? " " : "", ct);
    if (pk >= 1 && pk <= 8) {
      snprintf(pkcols[pk - 1], sizeof pkcols[0], "%s", cn);
      if (pk > npk) npk = pk;
    }
    if (n >= w->n || sqlite3_stricmp(cn, w->names[n]) != 0 ||
        sqlite3_stricmp(ct, w->types[n]) != 0 || pk != w->pk[n])
      *ok = 0;
    n++;
  }
  sqlite3_finalize(s);
  if (rc != SQLITE_DONE) return db_fail(st, "reading its schema", err);
  if (n != w->n) *ok = 0;
  for (int i = 0; i < npk; i++)
    put(got, gotn, &used, "%s%s", i ? ", " : ", PRIMARY KEY(", pkcols[i]);
  if (n) put(got, gotn, &used, "%s)", npk ? ")" : "");
  *ncol = n;
  return DPRL_OK;
}

/* Check the schema of table `name` if it exists, else create it. */
static int open_table(dprl_q_store *st, const char *name, const table_want *w, int *existed,
                      dprl_error *err) {
  char got[400];
  int ncol = 0, ok = 0, rc = table_shape(st, name, w, &ncol, &ok, got, sizeof got, err);
  if (rc) return rc;
  if (ncol && !ok) {
    if (w == &path_want)
      return dprl_fail(err, DPRL_EINVAL, "path table \"%s\" must have the schema %s, got %s",
                       st->name, w->schema, got);
    return dprl_fail(err, DPRL_EINVAL,
                     "path table \"%s\": %s \"%s\" must have the schema %s, got %s", st->name,
                     w->what, name, w->schema, got);
  }
  *existed = ncol > 0;
  if (ncol) return DPRL_OK;
  if ((rc = may_write(st, err))) return rc;
  return exec_fmt(st, w == &path_want ? "creating it" : "creating its parameters table", err,
                  "CREATE TABLE \"%w\"%s", name, w->schema);
}

/* A trigger on the path table (or its parameters) could skip, change or
** delete stored noise behind our back: a later call would then release q
** with other noise, or none.  Refused, in every schema of the connection. */
static int trigger_in(dprl_q_store *st, const char *schema, const char *table,
                      dprl_error *err) {
  sqlite3_stmt *t = NULL;
  int rc = prepare_fmt(st, &t, "reading its triggers", err,
                       "SELECT name FROM \"%w\".sqlite_schema WHERE type = 'trigger' "
                       "AND tbl_name = ?1 COLLATE NOCASE", schema);
  if (rc) return rc;
  sqlite3_bind_text(t, 1, table, -1, SQLITE_STATIC);
  int r = sqlite3_step(t);
  if (r == SQLITE_ROW)
    rc = dprl_fail(err, DPRL_EINVAL,
                   "path table \"%s\": table \"%s\" has a trigger (\"%s\" in schema %s); "
                   "stored noise must not be changed behind dprl's back: drop the trigger "
                   "or use another path table",
                   st->name, table, (const char *)sqlite3_column_text(t, 0), schema);
  else if (r != SQLITE_DONE)
    rc = db_fail(st, "reading its triggers", err);
  sqlite3_finalize(t);
  return rc;
}

static int no_triggers(dprl_q_store *st, const char *table, dprl_error *err) {
  sqlite3_stmt *dbs = NULL;
  int rc = DPRL_OK, step;
  if (sqlite3_prepare_v2(st->db, "SELECT name FROM pragma_database_list", -1, &dbs, NULL) !=
      SQLITE_OK)
    return db_fail(st, "listing the schemas", err);
  while (!rc && (step = sqlite3_step(dbs)) == SQLITE_ROW) {
    const char *schema = (const char *)sqlite3_column_text(dbs, 0);
    rc = trigger_in(st, schema ? schema : "main", table, err);
  }
  if (!rc && step != SQLITE_DONE) rc = db_fail(st, "listing the schemas", err);
  sqlite3_finalize(dbs);
  return rc;
}

/* ---- the parameters row ----------------------------------------------------- */

static int count_rows(dprl_q_store *st, const char *table, int64_t *n, dprl_error *err) {
  sqlite3_stmt *s = NULL;
  int rc = prepare_fmt(st, &s, "reading it", err, "SELECT count(*) FROM \"%w\"", table);
  if (!rc && sqlite3_step(s) != SQLITE_ROW) rc = db_fail(st, "reading it", err);
  if (!rc) *n = sqlite3_column_int64(s, 0);
  sqlite3_finalize(s);
  return rc;
}

static int record_params(dprl_q_store *st, dprl_error *err) {
  sqlite3_stmt *s = NULL;
  int rc = prepare_fmt(st, &s, "recording its parameters", err,
                       "INSERT INTO \"%w\"(sigma, beta, lo, hi, seeded) "
                       "VALUES (?1, ?2, ?3, ?4, ?5)", st->params);
  if (rc) return rc;
  sqlite3_bind_double(s, 1, st->p->sigma);
  sqlite3_bind_double(s, 2, st->p->beta);
  sqlite3_bind_double(s, 3, st->p->lo);
  sqlite3_bind_double(s, 4, st->p->hi);
  sqlite3_bind_int(s, 5, st->p->seeded);
  if (sqlite3_step(s) != SQLITE_DONE) rc = db_fail(st, "recording its parameters", err);
  sqlite3_finalize(s);
  return rc;
}

/* The one parameters row: sigma, beta, lo, hi into have[], seeded; *ok =
** the first four are numbers and seeded an integer. */
static int read_params(dprl_q_store *st, double have[4], int *seeded, int *ok,
                       dprl_error *err) {
  sqlite3_stmt *s = NULL;
  int rc = prepare_fmt(st, &s, "reading its parameters", err,
                       "SELECT sigma, beta, lo, hi, seeded FROM \"%w\"", st->params);
  if (!rc && sqlite3_step(s) != SQLITE_ROW) rc = db_fail(st, "reading its parameters", err);
  for (int i = 0; i < 5 && !rc; i++) {
    int t = sqlite3_column_type(s, i);
    *ok &= i < 4 ? t == SQLITE_FLOAT || t == SQLITE_INTEGER : t == SQLITE_INTEGER;
    if (i < 4) have[i] = sqlite3_column_double(s, i);
  }
  if (!rc) *seeded = sqlite3_column_int(s, 4);
  sqlite3_finalize(s);
  return rc;
}

/* The stored parameters must be exactly those of this call. */
static int same_params(dprl_q_store *st, const double have[4], int have_seeded,
                       dprl_error *err) {
  const dprl_q_path_params *c = st->p;
  char a[4][32], b[4][32];
  if (have[0] != c->sigma || have[1] != c->beta || have[2] != c->lo || have[3] != c->hi)
    return dprl_fail(err, DPRL_EINVAL,
                     "path table \"%s\" holds a path with sigma = %s, beta = %s, interval "
                     "[%s, %s]; this call has sigma = %s, beta = %s, interval [%s, %s]: use "
                     "another path table",
                     st->name, dprl_json_num(have[0], a[0], 32),
                     dprl_json_num(have[1], a[1], 32), dprl_json_num(have[2], a[2], 32),
                     dprl_json_num(have[3], a[3], 32), dprl_json_num(c->sigma, b[0], 32),
                     dprl_json_num(c->beta, b[1], 32), dprl_json_num(c->lo, b[2], 32),
                     dprl_json_num(c->hi, b[3], 32));
  if ((have_seeded != 0) != (c->seeded != 0))
    return dprl_fail(err, DPRL_EINVAL,
                     have_seeded
                         ? "path table \"%s\" was drawn with a seed (reproducible, not "
                           "private): use another path table for private noise"
                         : "path table \"%s\" holds private noise: a seeded call would add "
                           "reproducible values to it; use another path table",
                     st->name);
  return DPRL_OK;
}

/* The parameters: none yet (a new path: recorded) or exactly this call's. */
static int check_params(dprl_q_store *st, int path_existed, int params_existed,
                        dprl_error *err) {
  int64_t nparams = 0, npoints = 0;
  double have[4] = {0, 0, 0, 0};
  int have_seeded = 0, types_ok = 1, rc;
  if ((params_existed && (rc = count_rows(st, st->params, &nparams, err))) ||
      (path_existed && (rc = count_rows(st, st->name, &npoints, err))))
    return rc;
  if (nparams == 0) {
    if (npoints > 0)
      return dprl_fail(err, DPRL_EINVAL,
                       "path table \"%s\" holds %lld points but \"%s\" has no parameters row: "
                       "its sigma, beta and interval are unknown",
                       st->name, (long long)npoints, st->params);
    return may_write(st, err) ? err->code : record_params(st, err);
  }
  if (nparams == 1 && (rc = read_params(st, have, &have_seeded, &types_ok, err))) return rc;
  if (nparams != 1 || !types_ok)
    return dprl_fail(err, DPRL_EINVAL,
                     "path table \"%s\": \"%s\" must hold exactly one row of numbers, got %lld "
                     "rows",
                     st->name, st->params, (long long)nparams);
  return same_params(st, have, have_seeded, err);
}

/* Create the tables if missing, check their schema, record or compare the
** parameters, prepare the per-action statements.  Inside the SAVEPOINT. */
static int store_open(dprl_q_store *st, dprl_error *err) {
  int path_existed = 0, params_existed = 0, rc;
  if ((rc = no_triggers(st, st->name, err)) || (rc = no_triggers(st, st->params, err)) ||
      (rc = open_table(st, st->name, &path_want, &path_existed, err)) ||
      (rc = open_table(st, st->params, &params_want, &params_existed, err)) ||
      (rc = check_params(st, path_existed, params_existed, err)))
    return rc;
  if ((rc = prepare_fmt(st, &st->load, "loading the stored points", err,
                        "SELECT state, g FROM \"%w\" WHERE action = ?1", st->name)))
    return rc;
  return prepare_fmt(st, &st->ins, "storing new points", err,
                     "INSERT INTO \"%w\"(action, state, g) VALUES (?1, ?2, ?3)", st->name);
}

/* ---- loading and storing points -------------------------------------------- */

static int pt_cmp(const void *pa, const void *pb) {
  const dprl_gp_point *a = pa, *b = pb;
  return (a->x > b->x) - (a->x < b->x);
}

/* A stored row must be a point of this path: a state in [lo, hi] and a
** finite multiple of the grid. */
static int check_row(dprl_q_store *st, int64_t a, dprl_error *err) {
  const dprl_q_path_params *c = st->p;
  int ts = sqlite3_column_type(st->load, 0), tg = sqlite3_column_type(st->load, 1);
  double s = sqlite3_column_double(st->load, 0), g = sqlite3_column_double(st->load, 1);
  double k = g / c->grid;
  if ((ts == SQLITE_FLOAT || ts == SQLITE_INTEGER) && s >= c->lo && s <= c->hi &&
      (tg == SQLITE_FLOAT || tg == SQLITE_INTEGER) && fabs(k) < 0x1p52 && k == floor(k))
    return DPRL_OK;
  char x[32], y[32];
  return dprl_fail(err, DPRL_EINVAL,
                   "path table \"%s\": stored row (action %lld, state %s, g %s) is not a "
                   "point of this path (state in [lo, hi], g a finite multiple of the grid)",
                   st->name, (long long)a, ts == SQLITE_NULL ? "NULL" : dprl_json_num(s, x, 32),
                   tg == SQLITE_NULL ? "NULL" : dprl_json_num(g, y, 32));
}

/* The stored rows of action a, checked, rescaled, unsorted. */
static int read_rows(dprl_q_store *st, int64_t a, dprl_gp_point **out, size_t *nout,
                     dprl_error *err) {
  const dprl_q_path_params *c = st->p;
  size_t n = 0, cap = 0;
  dprl_gp_point *v = NULL;
  int rc = DPRL_OK, step;
  sqlite3_reset(st->load);
  sqlite3_bind_int64(st->load, 1, a);
  while (!rc && (step = sqlite3_step(st->load)) == SQLITE_ROW) {
    if ((rc = check_row(st, a, err))) break;
    if (n == DPRL_Q_PATH_MAX_POINTS) {
      rc = dprl_fail(err, DPRL_EINVAL,
                     "path table \"%s\" holds more than %zu points of action %lld, the most "
                     "one call loads for an action (16 bytes each, with this call's new points, "
                     "in one allocation of at most %zu bytes)",
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
    v[n].x = (sqlite3_column_double(st->load, 0) - c->lo) / (c->hi - c->lo);
    v[n].g = sqlite3_column_double(st->load, 1);
    n++;
  }
  if (!rc && step != SQLITE_DONE) rc = db_fail(st, "loading the stored points", err);
  sqlite3_reset(st->load);
  if (rc) {
    dprl_free(v);
    return rc;
  }
  *out = v;
  *nout = n;
  return DPRL_OK;
}

int dprl_q_store_load(dprl_q_store *st, int64_t a, dprl_gp_path *path, dprl_gp_point **pts,
                      size_t *npts, dprl_error *err) {
  dprl_gp_point *v = NULL;
  size_t n = 0, m = 0;
  int rc = read_rows(st, a, &v, &n, err);
  if (rc) return rc;
  /* Distinct states can rescale to the same x; they were stored with the
  ** same value (a repeated point), so keep one. */
  rc = dprl_sort(v, n, sizeof *v, pt_cmp, st->cancel, err);
  for (size_t i = 0; i < n && !rc; i++) {
    if (m && v[m - 1].x == v[i].x) {
      char x[32];
      if (v[m - 1].g != v[i].g)
        rc = dprl_fail(err, DPRL_EINVAL,
                       "path table \"%s\": two values stored at one point (action %lld, "
                       "rescaled state %s)",
                       st->name, (long long)a, dprl_json_num(v[i].x, x, 32));
      continue;
    }
    v[m++] = v[i];
  }
  if (!rc) rc = dprl_gp_path_load(path, v, m, err);
  if (rc) {
    dprl_free(v);
    return rc;
  }
  *pts = v;
  *npts = m;
  return DPRL_OK;
}

int dprl_q_store_has(const dprl_gp_point *pts, size_t n, double x) {
  size_t lo = 0, hi = n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (pts[mid].x < x) lo = mid + 1;
    else hi = mid;
  }
  return lo < n && pts[lo].x == x;
}

/* A plain INSERT per point: a point that cannot be stored is an error,
** never skipped, since its value is about to be released. */
int dprl_q_store_add(dprl_q_store *st, int64_t a, dprl_gp_point *pts, size_t n,
                     dprl_error *err) {
  int rc = may_write(st, err);
  if (!rc) rc = dprl_sort(pts, n, sizeof *pts, pt_cmp, st->cancel, err);
  for (size_t j = 0; j < n && !rc; j++) {
    if (j && pts[j].x == pts[j - 1].x) continue; /* a state repeated in this call */
    if ((rc = dprl_cancel_poll(st->cancel, 2000, err))) break;
    sqlite3_reset(st->ins);
    sqlite3_bind_int64(st->ins, 1, a);
    sqlite3_bind_double(st->ins, 2, pts[j].x);
    sqlite3_bind_double(st->ins, 3, pts[j].g);
    if (sqlite3_step(st->ins) != SQLITE_DONE) rc = db_fail(st, "storing new points", err);
    else if (sqlite3_changes(st->db) != 1) /* e.g. a trigger's RAISE(IGNORE) */
      rc = dprl_fail(err, DPRL_EINVAL,
                     "path table \"%s\": a new point was not stored (the insert changed %d "
                     "rows); its noise is not released",
                     st->name, sqlite3_changes(st->db));
    sqlite3_reset(st->ins);
  }
  return rc;
}

/* ---- the transaction ---------------------------------------------------------- */

int dprl_q_store_begin(dprl_q_store *st, sqlite3 *db, const char *name,
                       const dprl_q_path_params *p, dprl_cancel *cancel, dprl_error *err) {
  memset(st, 0, sizeof *st);
  st->db = db;
  st->name = name;
  st->p = p;
  st->cancel = cancel;
  /* Fails while another statement of this connection writes; the path can
  ** then still be read, and a call whose points are all stored succeeds.
  ** Outside a transaction our SAVEPOINT opens one, and releasing it
  ** commits: that can fail (a reader holds the lock), and then the
  ** connection must not be left inside it. */
  st->outermost = sqlite3_get_autocommit(db);
  st->writable = sqlite3_exec(db, "SAVEPOINT dprl_q_noise", NULL, NULL, NULL) == SQLITE_OK;
  if (!st->writable) snprintf(st->why, sizeof st->why, "%s", sqlite3_errmsg(db));
  st->params = sqlite3_mprintf("%s_params", name);
  if (!st->params) return dprl_nomem(err);
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
  sqlite3_free(st->params);
  st->load = st->ins = NULL;
  st->params = NULL;
  if (!st->writable) return rc;
  if (!rc && sqlite3_exec(st->db, "RELEASE dprl_q_noise", NULL, NULL, NULL) != SQLITE_OK)
    rc = db_fail(st, "committing", err);
  if (rc) undo_savepoint(st, err);
  return rc;
}
