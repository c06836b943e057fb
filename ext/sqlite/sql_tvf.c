/* sql_tvf.c: table-valued functions and caller queries (see sql_tvf.h). */
#include "sqlite/sql_tvf.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

/* ---- output rows ------------------------------------------------------------ */

/* Room for nc rows in every cell array; tlen only once a text cell exists. */
static int rows_grow(dprl_rows *r, size_t nc) {
  if (nc > SIZE_MAX / 16 / (size_t)r->ncol) {
    r->oom = 1;
    return SQLITE_NOMEM;
  }
  size_t cells = nc * (size_t)r->ncol;
  unsigned char *t = dprl_realloc(r->type, cells);
  if (t) r->type = t;
  int64_t *c = t ? dprl_realloc(r->cell, cells * sizeof *c) : NULL;
  if (c) r->cell = c;
  uint32_t *l = c && r->tlen ? dprl_realloc(r->tlen, cells * sizeof *l) : NULL;
  if (l) r->tlen = l;
  if (!c || (r->tlen && !l)) {
    r->oom = 1;
    return SQLITE_NOMEM;
  }
  r->cap = nc;
  return SQLITE_OK;
}

int dprl_rows_reserve(dprl_rows *r, size_t nrow) {
  if (r->oom) return SQLITE_NOMEM;
  return nrow <= r->cap ? SQLITE_OK : rows_grow(r, nrow);
}

int dprl_rows_add(dprl_rows *r) {
  if (r->oom) return SQLITE_NOMEM;
  if (r->nrow == r->cap && rows_grow(r, r->cap ? r->cap * 2 : 256)) return SQLITE_NOMEM;
  memset(r->type + r->nrow * (size_t)r->ncol, SQLITE_NULL, (size_t)r->ncol);
  r->nrow++;
  return SQLITE_OK;
}

static size_t cell_at(const dprl_rows *r, int col) {
  return (r->nrow - 1) * (size_t)r->ncol + (size_t)col;
}

void dprl_rows_int(dprl_rows *r, int col, int64_t v) {
  size_t at = cell_at(r, col);
  r->type[at] = SQLITE_INTEGER;
  r->cell[at] = v;
}

void dprl_rows_double(dprl_rows *r, int col, double v) {
  size_t at = cell_at(r, col);
  r->type[at] = SQLITE_FLOAT;
  memcpy(&r->cell[at], &v, sizeof v);
}

void dprl_rows_text_ref(dprl_rows *r, int col, size_t offset, size_t n) {
  size_t at = cell_at(r, col);
  if (!r->tlen && !(r->tlen = dprl_malloc(r->cap * (size_t)r->ncol * sizeof *r->tlen))) {
    r->oom = 1; /* the cell stays NULL; the call fails with SQLITE_NOMEM */
    return;
  }
  r->type[at] = SQLITE_TEXT;
  r->cell[at] = (int64_t)offset;
  r->tlen[at] = (uint32_t)n;
}

void dprl_rows_text(dprl_rows *r, int col, const char *s, size_t n) {
  dprl_rows_text_ref(r, col, r->text.len, n);
  if (r->type[cell_at(r, col)] != SQLITE_TEXT) return;
  dprl_buf_append(&r->text, s, n);
  if (r->text.oom) r->oom = 1;
}

void dprl_rows_free(dprl_rows *r) {
  dprl_free(r->type);
  dprl_free(r->cell);
  dprl_free(r->tlen);
  dprl_buf_free(&r->text);
  memset(r, 0, sizeof *r);
}

/* ---- caller queries --------------------------------------------------------- */

static int query_error(char **pzErr, const char *fn, const char *fmt, const char *what,
                       const char *detail) {
  sqlite3_free(*pzErr);
  *pzErr = sqlite3_mprintf(fmt, fn, what, detail);
  return *pzErr ? SQLITE_ERROR : SQLITE_NOMEM;
}

int dprl_query_open(dprl_query *q, sqlite3 *db, const char *what, sqlite3_value *sql,
                    int ncol, const char *fn, char **pzErr) {
  q->stmt = NULL;
  q->what = what;
  if (sqlite3_value_type(sql) != SQLITE_TEXT) {
    char got[96];
    dprl_sql_describe(sql, got, sizeof got);
    return query_error(pzErr, fn, "%s: %s must be the text of a SELECT, got %s", what, got);
  }
  const char *text = (const char *)sqlite3_value_text(sql), *tail = NULL;
  if (!text) return SQLITE_NOMEM;
  int rc = sqlite3_prepare_v2(db, text, -1, &q->stmt, &tail);
  if (rc != SQLITE_OK)
    return query_error(pzErr, fn, "%s: %s: %s", what, sqlite3_errmsg(db));
  if (!q->stmt) return query_error(pzErr, fn, "%s: %s %s", what, "is empty");
  /* What follows the statement may only be whitespace, semicolons and
  ** comments: SQLite's own tokenizer decides (a prepared empty tail). */
  int more = 0;
  while (!more && tail && *tail) {
    sqlite3_stmt *next = NULL;
    const char *rest = NULL;
    int r = sqlite3_prepare_v2(db, tail, -1, &next, &rest);
    if (r != SQLITE_OK || next) more = 1;
    sqlite3_finalize(next);
    if (rest == tail) break;
    tail = rest;
  }
  const char *problem = NULL;
  char detail[96];
  if (more) problem = "must be a single statement, got more after the first";
  /* nothing binds them (a ? would silently be NULL), and inside a wrapper
  ** ?1 would be dprl's own */
  else if (sqlite3_bind_parameter_count(q->stmt) > 0)
    problem = "must not contain parameters (?, :name)";
  else if (!sqlite3_stmt_readonly(q->stmt)) problem = "must not write (a read-only SELECT)";
  else if (sqlite3_column_count(q->stmt) != ncol) {
    dprl_snprintf(detail, sizeof detail, "must return %d columns, got %d", ncol,
             sqlite3_column_count(q->stmt));
    problem = detail;
  }
  if (problem) {
    dprl_query_close(q);
    return query_error(pzErr, fn, "%s: %s %s", what, problem);
  }
  return SQLITE_OK;
}

int dprl_query_step(dprl_query *q, const char *fn, char **pzErr) {
  int rc = sqlite3_step(q->stmt);
  if (rc == SQLITE_ROW || rc == SQLITE_DONE) return rc;
  if (rc == SQLITE_NOMEM) return rc;
  if (rc == SQLITE_INTERRUPT) { /* sqlite3_interrupt() or a progress handler */
    sqlite3_free(*pzErr);
    *pzErr = sqlite3_mprintf("interrupted");
    return *pzErr ? SQLITE_INTERRUPT : SQLITE_NOMEM;
  }
  return query_error(pzErr, fn, "%s: %s: %s", q->what,
                     sqlite3_errmsg(sqlite3_db_handle(q->stmt)));
}

void dprl_query_close(dprl_query *q) {
  sqlite3_finalize(q->stmt); /* harmless on NULL */
  q->stmt = NULL;
}

char *dprl_query_body(sqlite3 *db, sqlite3_value *sql) {
  const char *text = (const char *)sqlite3_value_text(sql), *tail = NULL;
  sqlite3_stmt *st = NULL;
  if (!text || sqlite3_prepare_v2(db, text, -1, &st, &tail) != SQLITE_OK || !st || !tail) {
    sqlite3_finalize(st);
    return NULL;
  }
  sqlite3_finalize(st);
  size_t n = (size_t)(tail - text);
  while (n && (text[n - 1] == ';' || text[n - 1] == ' ' || text[n - 1] == '\t' ||
               text[n - 1] == '\n' || text[n - 1] == '\r' || text[n - 1] == '\f'))
    n--;
  char *body = dprl_malloc(n + 1);
  if (body) {
    memcpy(body, text, n);
    body[n] = 0;
  }
  return body;
}

sqlite3_stmt *dprl_query_wrap(sqlite3 *db, const char *with, const char *body,
                              const char *tail, int ncol, int *oom) {
  dprl_buf b = {0};
  sqlite3_stmt *st = NULL;
  dprl_buf_puts(&b, with);
  dprl_buf_puts(&b, body);
  dprl_buf_puts(&b, "\n) ");
  dprl_buf_puts(&b, tail);
  if (b.oom) *oom = 1;
  else if (sqlite3_prepare_v2(db, b.data, (int)b.len, &st, NULL) != SQLITE_OK || !st ||
           !sqlite3_stmt_readonly(st) || sqlite3_column_count(st) != ncol) {
    sqlite3_finalize(st);
    st = NULL;
  }
  dprl_buf_free(&b);
  return st;
}

/* ---- every row of a caller's query, in one step ----------------------------- */

#define ROW_PTR "dprl_row_reader"

typedef struct row_reader {
  dprl_row_fn row;
  void *ctx;
  dprl_error *err;
} row_reader;

/* dprl_row(?1, v1, ..., vn): the rows of a wrapped query, as an aggregate's
** arguments.  ?1 is a pointer bound by dprl_query_rows
** (sqlite3_bind_pointer), which SQL cannot make: called from SQL, the
** function is NULL and does nothing. */
void dprl_sql_row(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  /* the pointer's type check is a strcmp: once per statement, then kept as
  ** the argument's auxiliary data */
  row_reader *r = argc > 0 ? sqlite3_get_auxdata(ctx, 0) : NULL;
  if (!r) {
    if (argc < 1 || !(r = sqlite3_value_pointer(argv[0], ROW_PTR))) {
      sqlite3_result_null(ctx);
      return;
    }
    sqlite3_set_auxdata(ctx, 0, r, NULL);
  }
  if (r->row(r->ctx, argv + 1) == DPRL_OK) sqlite3_result_int(ctx, 1);
  else if (r->err->code == DPRL_ENOMEM) sqlite3_result_error_nomem(ctx);
  else sqlite3_result_error(ctx, r->err->msg, -1); /* stops the scan */
}

/* A failure of the query (its message in *pzErr, from dprl_query_*) as a
** dprl_error: stopped by sqlite3_interrupt() or the progress handler, it
** is DPRL_EINTR "interrupted", as for every other loop. */
static int query_failed(sqlite3 *db, int rc, char **pzErr, dprl_error *err) {
  if (rc == SQLITE_NOMEM) dprl_nomem(err);
  else if (rc == SQLITE_INTERRUPT || sqlite3_errcode(db) == SQLITE_INTERRUPT)
    dprl_fail(err, DPRL_EINTR, "interrupted");
  else dprl_fail(err, DPRL_EINVAL, "%s", *pzErr ? *pzErr : sqlite3_errmsg(db));
  sqlite3_free(*pzErr);
  *pzErr = NULL;
  return err->code;
}

/* The wrapped form of body: WITH dprl_rows(c0, ...) AS (body) SELECT
** count(dprl_row(?1, c0, ...)) FROM dprl_rows; NULL if SQLite refuses it. */
static sqlite3_stmt *wrap_rows(sqlite3 *db, const char *body, int ncol, int *oom) {
  dprl_buf with = {0}, tail = {0};
  dprl_buf_puts(&with, "WITH dprl_rows(");
  dprl_buf_puts(&tail, "SELECT count(" DPRL_ROW_FN "(?1");
  for (int i = 0; i < ncol; i++) {
    dprl_buf_printf(&with, "%sc%d", i ? ", " : "", i);
    dprl_buf_printf(&tail, ", c%d", i);
  }
  dprl_buf_puts(&with, ") AS (\n");
  dprl_buf_puts(&tail, ")) FROM dprl_rows");
  sqlite3_stmt *st = NULL;
  if (with.oom || tail.oom) *oom = 1;
  else st = dprl_query_wrap(db, with.data, body, tail.data, 1, oom);
  dprl_buf_free(&with);
  dprl_buf_free(&tail);
  return st;
}

int dprl_query_rows(sqlite3 *db, sqlite3_value *sql, const char *what, int ncol, const char *fn,
                    dprl_row_fn row, void *ctx, dprl_error *err) {
  dprl_query q;
  char *qerr = NULL, *body = NULL;
  sqlite3_stmt *wrapped = NULL;
  int oom = 0;
  if (ncol < 1 || ncol > DPRL_QUERY_MAX_COLS)
    return dprl_fail(err, DPRL_EINVAL, "dprl_query_rows: %d columns (1 to %d)", ncol,
                     DPRL_QUERY_MAX_COLS);
  int rc = dprl_query_open(&q, db, what, sql, ncol, fn, &qerr);
  if (rc) return query_failed(db, rc, &qerr, err);
  if ((body = dprl_query_body(db, sql))) /* no parameters: dprl_query_open refused them */
    wrapped = wrap_rows(db, body, ncol, &oom);
  dprl_free(body);
  if (oom) {
    dprl_query_close(&q);
    return dprl_nomem(err);
  }
  row_reader r = {row, ctx, err};
  if (wrapped) {
    dprl_query_close(&q);
    q.stmt = wrapped;
    if ((rc = sqlite3_bind_pointer(wrapped, 1, &r, ROW_PTR, NULL)) == SQLITE_OK)
      while ((rc = dprl_query_step(&q, fn, &qerr)) == SQLITE_ROW) {
      }
  } else {
    sqlite3_value *v[DPRL_QUERY_MAX_COLS]; /* column_value, then value_*: the column_*
                                           ** accessors take the connection's mutex each */
    while ((rc = dprl_query_step(&q, fn, &qerr)) == SQLITE_ROW) {
      for (int i = 0; i < ncol; i++) v[i] = sqlite3_column_value(q.stmt, i);
      if (row(ctx, v)) break;
    }
  }
  if (err->code) { /* a row's own error (the scan stopped on it) */
    sqlite3_free(qerr);
    qerr = NULL;
  } else if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
    query_failed(db, rc, &qerr, err);
  }
  dprl_query_close(&q);
  return err->code;
}

/* ---- the virtual table ------------------------------------------------------ */

typedef struct tvf_vtab {
  sqlite3_vtab base;
  sqlite3 *db;
  const dprl_tvf_spec *spec;
} tvf_vtab;

typedef struct tvf_cursor {
  sqlite3_vtab_cursor base;
  dprl_rows rows;
  size_t at;
} tvf_cursor;

static int tvf_connect(sqlite3 *db, void *aux, int argc, const char *const *argv,
                       sqlite3_vtab **out, char **pzErr) {
  const dprl_tvf_spec *spec = aux;
  (void)argc;
  (void)argv;
  int rc = sqlite3_declare_vtab(db, spec->schema);
  if (rc != SQLITE_OK) return rc;
  tvf_vtab *v = sqlite3_malloc(sizeof *v);
  if (!v) return SQLITE_NOMEM;
  memset(v, 0, sizeof *v);
  v->db = db;
  v->spec = spec;
  *out = &v->base;
  /* Every dprl table-valued function runs SQL text it is given (and
  ** dp_q_noise may also write): usable only in top-level statements, never
  ** from a view or trigger stored in a database file someone else wrote,
  ** whatever PRAGMA trusted_schema says (SQLite's own eval-style functions
  ** are restricted the same way). Otherwise a view could run, as top-level
  ** SQL, what SQLite forbids it (writefile(), load_extension() in the
  ** shell), and a trigger in an ATTACHed file could copy main's tables. */
  sqlite3_vtab_config(db, SQLITE_VTAB_DIRECTONLY);
  (void)pzErr;
  return SQLITE_OK;
}

static int tvf_disconnect(sqlite3_vtab *v) {
  sqlite3_free(v);
  return SQLITE_OK;
}

/* Equality constraints on the hidden argument columns become xFilter
** arguments, in argument order; idxNum is the bitmask of those present. */
static int tvf_best_index(sqlite3_vtab *vt, sqlite3_index_info *info) {
  const dprl_tvf_spec *spec = ((tvf_vtab *)vt)->spec;
  int where[16], mask = 0, unusable = 0;
  for (int a = 0; a < spec->n_args; a++) where[a] = -1;
  for (int i = 0; i < info->nConstraint; i++) {
    const struct sqlite3_index_constraint *c = &info->aConstraint[i];
    int a = c->iColumn - spec->n_out;
    if (a < 0 || a >= spec->n_args || c->op != SQLITE_INDEX_CONSTRAINT_EQ) continue;
    if (!c->usable) {
      unusable |= 1 << a;
      continue;
    }
    where[a] = i;
    mask |= 1 << a;
  }
  /* An argument that exists but is not usable yet (a join in the other
  ** order): ask the planner for another plan. */
  if (unusable & ~mask) return SQLITE_CONSTRAINT;
  int n = 0;
  for (int a = 0; a < spec->n_args; a++)
    if (where[a] >= 0) {
      info->aConstraintUsage[where[a]].argvIndex = ++n;
      info->aConstraintUsage[where[a]].omit = 1;
    }
  info->idxNum = mask;
  info->estimatedCost = 1e6;
  info->estimatedRows = 100000;
  return SQLITE_OK;
}

static int tvf_open(sqlite3_vtab *vt, sqlite3_vtab_cursor **out) {
  tvf_cursor *c = sqlite3_malloc(sizeof *c);
  if (!c) return SQLITE_NOMEM;
  memset(c, 0, sizeof *c);
  c->rows.ncol = ((tvf_vtab *)vt)->spec->n_out;
  *out = &c->base;
  return SQLITE_OK;
}

static int tvf_close(sqlite3_vtab_cursor *cur) {
  tvf_cursor *c = (tvf_cursor *)cur;
  dprl_rows_free(&c->rows);
  sqlite3_free(c);
  return SQLITE_OK;
}

/* Caller SQL can call a dprl table-valued function again (in its text, or
** a scalar subquery reading its own text from a table), each level a
** nested sqlite3_step on this thread's stack: the depth is limited so that
** such a query fails with a message instead of overflowing the stack. */
static _Thread_local int tvf_depth;

static int tvf_filter(sqlite3_vtab_cursor *cur, int idxNum, const char *idxStr, int argc,
                      sqlite3_value **argv) {
  tvf_cursor *c = (tvf_cursor *)cur;
  tvf_vtab *v = (tvf_vtab *)cur->pVtab;
  const dprl_tvf_spec *spec = v->spec;
  sqlite3_value *args[16] = {0};
  int k = 0;
  (void)idxStr;
  (void)argc;
  for (int a = 0; a < spec->n_args; a++) {
    if (idxNum & (1 << a)) args[a] = argv[k++];
    else if (a < spec->n_required) {
      sqlite3_free(v->base.zErrMsg);
      v->base.zErrMsg = sqlite3_mprintf("%s: argument %s is required", spec->name,
                                        spec->arg_names[a]);
      return SQLITE_ERROR;
    }
  }
  int ncol = c->rows.ncol;
  dprl_rows_free(&c->rows);
  c->rows.ncol = ncol;
  c->at = 0;
  sqlite3_free(v->base.zErrMsg);
  v->base.zErrMsg = NULL;
  if (tvf_depth >= DPRL_TVF_MAX_DEPTH) {
    v->base.zErrMsg = sqlite3_mprintf("%s: caller SQL nested too deeply (> %d levels)",
                                      spec->name, DPRL_TVF_MAX_DEPTH);
    return v->base.zErrMsg ? SQLITE_ERROR : SQLITE_NOMEM;
  }
  tvf_depth++;
  int rc = spec->compute(v->db, args, &c->rows, &v->base.zErrMsg);
  tvf_depth--;
  if (rc == SQLITE_OK && c->rows.oom) rc = SQLITE_NOMEM;
  if (rc != SQLITE_OK) dprl_rows_free(&c->rows), c->rows.ncol = ncol;
  return rc;
}

static int tvf_next(sqlite3_vtab_cursor *cur) {
  ((tvf_cursor *)cur)->at++;
  return SQLITE_OK;
}

static int tvf_eof(sqlite3_vtab_cursor *cur) {
  tvf_cursor *c = (tvf_cursor *)cur;
  return c->at >= c->rows.nrow;
}

static int tvf_column(sqlite3_vtab_cursor *cur, sqlite3_context *ctx, int col) {
  tvf_cursor *c = (tvf_cursor *)cur;
  if (col >= c->rows.ncol) return SQLITE_OK; /* hidden argument: NULL */
  size_t at = c->at * (size_t)c->rows.ncol + (size_t)col;
  switch (c->rows.type[at]) {
    case SQLITE_INTEGER: sqlite3_result_int64(ctx, c->rows.cell[at]); break;
    case SQLITE_FLOAT: {
      double d;
      memcpy(&d, &c->rows.cell[at], sizeof d);
      sqlite3_result_double(ctx, d);
      break;
    }
    case SQLITE_TEXT:
      sqlite3_result_text(ctx, c->rows.text.data + c->rows.cell[at], (int)c->rows.tlen[at],
                          SQLITE_TRANSIENT);
      break;
    default: sqlite3_result_null(ctx); break;
  }
  return SQLITE_OK;
}

static int tvf_rowid(sqlite3_vtab_cursor *cur, sqlite3_int64 *rowid) {
  *rowid = (sqlite3_int64)((tvf_cursor *)cur)->at + 1;
  return SQLITE_OK;
}

/* No xCreate: eponymous only, so CREATE VIRTUAL TABLE cannot make one. */
static const sqlite3_module tvf_module = {
    .iVersion = 0,
    .xConnect = tvf_connect,
    .xBestIndex = tvf_best_index,
    .xDisconnect = tvf_disconnect,
    .xOpen = tvf_open,
    .xClose = tvf_close,
    .xFilter = tvf_filter,
    .xNext = tvf_next,
    .xEof = tvf_eof,
    .xColumn = tvf_column,
    .xRowid = tvf_rowid,
};

int dprl_tvf_register(sqlite3 *db, const dprl_tvf_spec *spec) {
  return sqlite3_create_module_v2(db, spec->name, &tvf_module, (void *)spec, NULL);
}
