/*
** sql_q_path_check.c: the lower layer of dp_q_noise's path table (see
** sql_q_path_check.h; the store of sql_q_path.c is built on it): SQL
** statement helpers, both tables created (only here) or their columns
** checked, no trigger on them, and the parameters row.
**
**   CREATE TABLE gp(action INTEGER, state REAL, g REAL);   -- no primary key
**   SELECT * FROM dp_q_noise('SELECT 0.5, 0, 1.0',
**     '{"n_actions": 1, "sigma": 0.5, "beta": 2, "path": "gp"}');
**   -- dp_q_noise: path table "gp" must have the schema (action INTEGER,
**   --   state REAL, g REAL, q REAL, PRIMARY KEY(action, state)), got (...)
*/
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "base/json.h"
#include "q_learning/sql_q_path_check.h"

/* ---- statements -------------------------------------------------------------- */

/* Called before any write: refused when the SAVEPOINT could not be opened
** (the calling statement writes itself, e.g. CREATE TABLE ... AS SELECT). */
int dprl_q_path_may_write(dprl_q_store *st, dprl_error *err) {
  if (st->writable) return DPRL_OK;
  return dprl_fail(err, DPRL_EINVAL,
                   "path table \"%s\": cannot store new noise from inside a statement that "
                   "writes (%s); run the same call in a plain SELECT first: once its points "
                   "are stored, it writes nothing",
                   st->name, st->why);
}

int dprl_q_path_db_fail(dprl_q_store *st, const char *what, dprl_error *err) {
  return dprl_sql_db_error(st->db, err, "path table \"%s\": %s", st->name, what);
}

/* A write refused for a lock.  In autocommit mode every SELECT reads the
** main schema, and a connection that already reads a schema cannot wait
** to write it (SQLite would deadlock): say what works instead. */
int dprl_q_path_write_fail(dprl_q_store *st, const char *what, dprl_error *err) {
  int rc = dprl_q_path_db_fail(st, what, err);
  const char *tail = "; this call cannot wait for another connection's write lock, since its "
                     "statement or your transaction already reads this schema: run it inside "
                     "BEGIN IMMEDIATE ... COMMIT, or keep the path table in an attached database";
  if (rc == DPRL_EBUSY && st->cannot_wait &&
      strlen(err->msg) + strlen(tail) < sizeof err->msg)
    strcat(err->msg, tail);
  return rc;
}

/* Run a write (sqlite3_mprintf style SQL). */
int dprl_q_path_write_fmt(dprl_q_store *st, const char *what, dprl_error *err,
                          const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char *sql = sqlite3_vmprintf(fmt, ap);
  va_end(ap);
  if (!sql) return dprl_nomem(err);
  int rc = sqlite3_exec(st->db, sql, NULL, NULL, NULL);
  sqlite3_free(sql);
  return rc == SQLITE_OK ? DPRL_OK : dprl_q_path_write_fail(st, what, err);
}

/* Prepare the SQL of fmt (sqlite3_mprintf style) into *s. */
int dprl_q_path_prepare_fmt(dprl_q_store *st, sqlite3_stmt **s, const char *what,
                            dprl_error *err, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char *sql = sqlite3_vmprintf(fmt, ap);
  va_end(ap);
  if (!sql) return dprl_nomem(err);
  int rc = sqlite3_prepare_v2(st->db, sql, -1, s, NULL);
  sqlite3_free(sql);
  return rc == SQLITE_OK ? DPRL_OK : dprl_q_path_db_fail(st, what, err);
}

/* ---- the two tables' schemas ------------------------------------------------ */

typedef struct table_want {
  const char *what;                /* for messages */
  int n;                           /* columns */
  const char *const *names, *const *types;
  const int *pk;                   /* primary key position of each column, 0: none */
  const char *schema;              /* as SQL */
} table_want;

#define PATH_SCHEMA "(action INTEGER, state REAL, g REAL, q REAL, PRIMARY KEY(action, state))"
static const char *const path_names[] = {"action", "state", "g", "q"};
static const char *const path_types[] = {"INTEGER", "REAL", "REAL", "REAL"};
static const int path_pk[] = {1, 2, 0, 0};
static const char *const par_names[] = {"sigma", "beta", "lo", "hi", "seeded", "budget"};
static const char *const par_types[] = {"REAL", "REAL", "REAL", "REAL", "INTEGER", "TEXT"};
static const int par_pk[] = {0, 0, 0, 0, 0, 0};
#define PARAMS_SCHEMA \
  "(sigma REAL, beta REAL, lo REAL, hi REAL, seeded INTEGER, budget TEXT)"

static const table_want path_want = {"", 4, path_names, path_types, path_pk, PATH_SCHEMA};
static const table_want params_want = {"its parameters table", 6, par_names, par_types, par_pk,
                                       PARAMS_SCHEMA};

/* Append to got (printf style); used tracks the length, clamped to gotn. */
static void put(char *got, size_t gotn, size_t *used, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  *used += (size_t)dprl_vsnprintf(got + *used, *used < gotn ? gotn - *used : 0, fmt, ap);
  va_end(ap);
  if (*used >= gotn) *used = gotn - 1;
}

/* Columns of table `name` as "(a INTEGER, b REAL, PRIMARY KEY(a))" into
** got; *ncol = 0 when there is no such table.  *ok = the columns are
** exactly those of w. */
static int table_shape(dprl_q_store *st, const char *name, const table_want *w, int *ncol,
                       int *ok, char *got, size_t gotn, dprl_error *err) {
  sqlite3_stmt *s = NULL;
  if (sqlite3_prepare_v2(st->db, "SELECT name, type, pk FROM pragma_table_info(?1, ?2)", -1, &s,
                         NULL) != SQLITE_OK)
    return dprl_q_path_db_fail(st, "reading its schema", err);
  sqlite3_bind_text(s, 1, name, -1, SQLITE_STATIC);
  sqlite3_bind_text(s, 2, st->schema, -1, SQLITE_STATIC);
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
      dprl_snprintf(pkcols[pk - 1], sizeof pkcols[0], "%s", cn);
      if (pk > npk) npk = pk;
    }
    if (n >= w->n || sqlite3_stricmp(cn, w->names[n]) != 0 ||
        sqlite3_stricmp(ct, w->types[n]) != 0 || pk != w->pk[n])
      *ok = 0;
    n++;
  }
  sqlite3_finalize(s);
  if (rc != SQLITE_DONE) return dprl_q_path_db_fail(st, "reading its schema", err);
  if (n != w->n) *ok = 0;
  for (int i = 0; i < npk; i++)
    put(got, gotn, &used, "%s%s", i ? ", " : ", PRIMARY KEY(", pkcols[i]);
  if (n) put(got, gotn, &used, "%s)", npk ? ")" : "");
  *ncol = n;
  return DPRL_OK;
}

/* CREATE TABLE [IF NOT EXISTS] schema.name with the columns of w. */
static int create_table(dprl_q_store *st, const char *name, const table_want *w,
                        int if_not_exists, const char *what, dprl_error *err) {
  return dprl_q_path_write_fmt(st, what, err, "CREATE TABLE %s\"%w\".\"%w\"%s",
                               if_not_exists ? "IF NOT EXISTS " : "", st->schema, name,
                               w->schema);
}

int dprl_q_path_create(dprl_q_store *st, int if_not_exists, const char *what,
                       dprl_error *err) {
  return create_table(st, st->table, &path_want, if_not_exists, what, err);
}

/* Check the schema of table `name` (in st->schema; shown as `shown`) if it
** exists, else create it. */
static int open_table(dprl_q_store *st, const char *name, const char *shown,
                      const table_want *w, int *existed, dprl_error *err) {
  char got[400];
  int ncol = 0, ok = 0, rc = table_shape(st, name, w, &ncol, &ok, got, sizeof got, err);
  if (rc) return rc;
  if (ncol && !ok) {
    if (w == &path_want)
      return dprl_fail(err, DPRL_EINVAL, "path table \"%s\" must have the schema %s, got %s",
                       st->name, w->schema, got);
    return dprl_fail(err, DPRL_EINVAL,
                     "path table \"%s\": %s \"%s\" must have the schema %s, got %s", st->name,
                     w->what, shown, w->schema, got);
  }
  *existed = ncol > 0;
  if (ncol) return DPRL_OK;
  if ((rc = dprl_q_path_may_write(st, err))) return rc;
  if (w == &path_want) return dprl_q_path_create(st, 0, "creating it", err);
  return create_table(st, name, w, 0, "creating its parameters table", err);
}

/* A trigger on the path table (or its parameters) could skip, change or
** delete stored noise behind our back: a later call would then release q
** with other noise, or none.  Refused: in the tables' schema, and in temp
** (a TEMP trigger may be on a table of any schema). */
static int trigger_in(dprl_q_store *st, const char *schema, const char *table,
                      dprl_error *err) {
  sqlite3_stmt *t = NULL;
  int rc = dprl_q_path_prepare_fmt(st, &t, "reading its triggers", err,
                                   "SELECT name FROM \"%w\".sqlite_schema WHERE type = 'trigger' "
                                   "AND tbl_name = ?1 COLLATE NOCASE",
                                   schema);
  if (rc) return rc;
  sqlite3_bind_text(t, 1, table, -1, SQLITE_STATIC);
  int r = sqlite3_step(t);
  if (r == SQLITE_ROW)
    rc = dprl_fail(err, DPRL_EINVAL,
                   "path table \"%s\": table \"%s\" has a trigger (\"%s\" in schema %s); "
                   "stored noise must not be changed behind dprl's back: drop the trigger "
                   "or use another path table",
                   st->name, table == st->table ? st->name : st->params_shown,
                   (const char *)sqlite3_column_text(t, 0), schema);
  else if (r != SQLITE_DONE)
    rc = dprl_q_path_db_fail(st, "reading its triggers", err);
  sqlite3_finalize(t);
  return rc;
}

static int no_triggers(dprl_q_store *st, const char *table, dprl_error *err) {
  int rc = trigger_in(st, st->schema, table, err);
  if (!rc && sqlite3_stricmp(st->schema, "temp") != 0) rc = trigger_in(st, "temp", table, err);
  return rc;
}

/* ---- the parameters row ----------------------------------------------------- */

static int count_rows(dprl_q_store *st, const char *table, int64_t *n, dprl_error *err) {
  sqlite3_stmt *s = NULL;
  int rc = dprl_q_path_prepare_fmt(st, &s, "reading it", err, "SELECT count(*) FROM \"%w\".\"%w\"",
                                   st->schema, table);
  if (!rc && sqlite3_step(s) != SQLITE_ROW) rc = dprl_q_path_db_fail(st, "reading it", err);
  if (!rc) *n = sqlite3_column_int64(s, 0);
  sqlite3_finalize(s);
  return rc;
}

static int record_params(dprl_q_store *st, dprl_error *err) {
  sqlite3_stmt *s = NULL;
  int rc = dprl_q_path_prepare_fmt(st, &s, "recording its parameters", err,
                                   "INSERT INTO \"%w\".\"%w\"(sigma, beta, lo, hi, seeded, "
                                   "budget) VALUES (?1, ?2, ?3, ?4, ?5, NULL)",
                                   st->schema, st->params);
  if (rc) return rc;
  sqlite3_bind_double(s, 1, st->p->sigma);
  sqlite3_bind_double(s, 2, st->p->beta);
  sqlite3_bind_double(s, 3, st->p->lo);
  sqlite3_bind_double(s, 4, st->p->hi);
  sqlite3_bind_int(s, 5, st->p->seeded);
  if (sqlite3_step(s) != SQLITE_DONE)
    rc = dprl_q_path_write_fail(st, "recording its parameters", err);
  sqlite3_finalize(s);
  return rc;
}

/* The one parameters row: sigma, beta, lo, hi into have[], seeded, and
** whether its budget is the call's (*same_budget), NULL (*charged = 0) or
** another (copied into other[]); *ok = the first four are numbers, seeded
** an integer, budget text or NULL. */
static int read_params(dprl_q_store *st, double have[4], int *seeded, int *charged,
                       int *same_budget, char *other, size_t otherlen, int *ok,
                       dprl_error *err) {
  sqlite3_stmt *s = NULL;
  int rc = dprl_q_path_prepare_fmt(st, &s, "reading its parameters", err,
                                   "SELECT sigma, beta, lo, hi, seeded, budget FROM \"%w\".\"%w\"",
                                   st->schema, st->params);
  if (!rc && sqlite3_step(s) != SQLITE_ROW)
    rc = dprl_q_path_db_fail(st, "reading its parameters", err);
  for (int i = 0; i < 6 && !rc; i++) {
    int t = sqlite3_column_type(s, i);
    *ok &= i < 4   ? t == SQLITE_FLOAT || t == SQLITE_INTEGER
           : i < 5 ? t == SQLITE_INTEGER
                   : t == SQLITE_TEXT || t == SQLITE_NULL;
    if (i < 4) have[i] = sqlite3_column_double(s, i);
  }
  if (!rc) {
    const char *b = (const char *)sqlite3_column_text(s, 5);
    *seeded = sqlite3_column_int(s, 4);
    *charged = b != NULL;
    *same_budget = b && st->p->budget && strcmp(b, st->p->budget) == 0;
    dprl_snprintf(other, otherlen, "%s", b ? b : "");
  }
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
  int have_seeded = 0, charged = 0, same_budget = 0, types_ok = 1, rc;
  char other[208];
  if ((params_existed && (rc = count_rows(st, st->params, &nparams, err))) ||
      (path_existed && (rc = count_rows(st, st->table, &npoints, err))))
    return rc;
  if (nparams == 0) {
    if (npoints > 0)
      return dprl_fail(err, DPRL_EINVAL,
                       "path table \"%s\" holds %lld points but \"%s\" has no parameters row: "
                       "its sigma, beta and interval are unknown",
                       st->name, (long long)npoints, st->params_shown);
    return dprl_q_path_may_write(st, err) ? err->code : record_params(st, err);
  }
  if (nparams == 1 && (rc = read_params(st, have, &have_seeded, &charged, &same_budget, other,
                                         sizeof other, &types_ok, err)))
    return rc;
  if (nparams != 1 || !types_ok)
    return dprl_fail(err, DPRL_EINVAL,
                     "path table \"%s\": \"%s\" must hold exactly one row (numbers, and the "
                     "budget as text or NULL), got %lld rows",
                     st->name, st->params_shown, (long long)nparams);
  if ((rc = same_params(st, have, have_seeded, err))) return rc;
  /* One path, one release, one charge (ALGORITHMS.md section 8.1). */
  if (charged && st->p->budget && !same_budget)
    return dprl_fail(err, DPRL_EINVAL,
                     "path table \"%s\": its release is charged to budget \"%s\", where its "
                     "further points cost nothing more; this call names budget \"%s\": name "
                     "\"%s\" (or no budget), or use another path table",
                     st->name, other, st->p->budget, other);
  st->charged = charged && same_budget;
  return DPRL_OK;
}

/* Create the tables if missing, check their schema, record or compare the
** parameters.  Inside the SAVEPOINT. */
int dprl_q_path_open(dprl_q_store *st, dprl_error *err) {
  int path_existed = 0, params_existed = 0, rc;
  if ((rc = no_triggers(st, st->table, err)) || (rc = no_triggers(st, st->params, err)) ||
      (rc = open_table(st, st->table, st->name, &path_want, &path_existed, err)) ||
      (rc = open_table(st, st->params, st->params_shown, &params_want, &params_existed, err)))
    return rc;
  return check_params(st, path_existed, params_existed, err);
}
