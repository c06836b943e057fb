/*
** sql_tvf.h: what every dprl table-valued function shares.
**
**   SELECT * FROM dp_first_visit('SELECT episode, t, state, reward FROM steps',
**                                '{"n_states": 5, "gamma": 0.9, "rmin": 0, "rmax": 1}');
**
** A table-valued function here is an eponymous virtual table whose
** arguments are HIDDEN columns (as in SQLite's ext/misc/series.c).  The
** spec names the output columns and the arguments; xFilter hands the
** argument values to a compute callback that appends output rows to a
** compact buffer, which the cursor then walks.  Queries given as text
** arguments run on the caller's connection through dprl_query_*: exactly one
** read-only SELECT with the expected number of columns, always finalized.
**
** Because they run caller SQL, all of them are SQLITE_VTAB_DIRECTONLY:
** usable in top-level statements only, not in views or triggers (SQLite
** answers "unsafe use of virtual table"). Calls nested through the SQL
** text are limited to DPRL_TVF_MAX_DEPTH levels per thread:
**   "dp_first_visit: caller SQL nested too deeply (> 8 levels)".
*/
#ifndef DPRL_SQL_TVF_H
#define DPRL_SQL_TVF_H

#include "sqlite/sql_glue.h"

/* Table-valued function calls running inside one another's caller SQL. */
#define DPRL_TVF_MAX_DEPTH 8

/* ---- output rows ---------------------------------------------------------- */

typedef struct dprl_rows {
  int ncol;
  size_t nrow, cap;       /* rows */
  unsigned char *type;    /* SQLITE_INTEGER / FLOAT / TEXT / NULL per cell */
  int64_t *cell;          /* the integer, the double's bits, or text offset */
  uint32_t *tlen;         /* text length per cell (NULL until a text cell) */
  dprl_buf text;
  int oom;
} dprl_rows;

/* Start a new row; then set each of its ncol cells (unset cells are NULL). */
int dprl_rows_add(dprl_rows *r);
/* Room for nrow rows at once, when the count is known before the rows. */
int dprl_rows_reserve(dprl_rows *r, size_t nrow);
void dprl_rows_int(dprl_rows *r, int col, int64_t v);
void dprl_rows_double(dprl_rows *r, int col, double v);
void dprl_rows_text(dprl_rows *r, int col, const char *s, size_t n);
/* A text cell that reads n bytes at offset at of r->text, written once
** there by the caller: the same value in every row, stored once. */
void dprl_rows_text_ref(dprl_rows *r, int col, size_t at, size_t n);
void dprl_rows_free(dprl_rows *r);

/* ---- running a caller's query ------------------------------------------- */

typedef struct dprl_query {
  sqlite3_stmt *stmt;
  const char *what; /* the argument's name, for messages */
} dprl_query;

/* Prepare sql (argument `what`) on db: one statement, read-only, ncol
** columns.  On failure *pzErr is set and the statement is not left open. */
int dprl_query_open(dprl_query *q, sqlite3 *db, const char *what,
                    sqlite3_value *sql, int ncol, const char *fn, char **pzErr);
/* SQLITE_ROW, SQLITE_DONE, or an error with *pzErr set. */
int dprl_query_step(dprl_query *q, const char *fn, char **pzErr);
void dprl_query_close(dprl_query *q);

/* Wrapping a caller's query, so that its rows go to a function of dprl's as
** an aggregate's arguments in one sqlite3_step (a row handed back per step
** costs more than reading it: the step, and the connection's mutex taken
** by every sqlite3_column_* call).
** dprl_query_body: the text of sql's first statement without what follows
** it (semicolons, blanks); NULL (not an error) if that cannot be had.
** dprl_query_wrap: prepare  with body "\n) " tail  (with opens a CTE, e.g.
** "WITH r(a, b) AS (\n"), read-only with ncol columns; NULL (not an
** error) if SQLite refuses it, and the caller reads the query unwrapped;
** *oom on allocation failure. */
char *dprl_query_body(sqlite3 *db, sqlite3_value *sql);
sqlite3_stmt *dprl_query_wrap(sqlite3 *db, const char *with, const char *body,
                              const char *tail, int ncol, int *oom);

/* Every row of the caller's query sql (argument `what`, ncol columns, at
** most DPRL_QUERY_MAX_COLS) to row(ctx, values).  The text is checked as
** dprl_query_open checks it, then run wrapped,
**   WITH dprl_rows(c0, ...) AS (sql) SELECT count(dprl_row(?1, c0, ...))
**   FROM dprl_rows
** so that its rows reach row() as an aggregate's arguments in one step:
** only the rows the query returns, in its order.  A query with parameters
** (never bound: NULLs), or one SQLite cannot use as a CTE's body (a
** PRAGMA), is stepped row by row instead.  row returns DPRL_OK, or an
** error code with err set, which stops the read.  Returns err->code: the
** query's own failure is DPRL_EINVAL with its message ("fn: what: ..."),
** DPRL_EINTR "interrupted" or DPRL_ENOMEM.  DPRL_ROW_FN is dprl_sql_row,
** registered by dprl.c (SQLITE_DIRECTONLY; NULL when SQL calls it). */
#define DPRL_ROW_FN "dprl_row"
void dprl_sql_row(sqlite3_context *ctx, int argc, sqlite3_value **argv);
#define DPRL_QUERY_MAX_COLS 8
typedef int (*dprl_row_fn)(void *ctx, sqlite3_value **values);
int dprl_query_rows(sqlite3 *db, sqlite3_value *sql, const char *what, int ncol, const char *fn,
                    dprl_row_fn row, void *ctx, dprl_error *err);

/* ---- the virtual table ------------------------------------------------------ */

typedef int (*dprl_tvf_compute)(sqlite3 *db, sqlite3_value **args,
                                dprl_rows *out, char **pzErr);

typedef struct dprl_tvf_spec {
  const char *name;
  const char *schema; /* CREATE TABLE x(out..., arg1 HIDDEN, ...) */
  int n_out;          /* output columns, then the hidden arguments */
  int n_args;
  int n_required;     /* the first n_required arguments are required */
  const char *const *arg_names;
  dprl_tvf_compute compute;
  /* 1 if the function may write (dp_q_noise's path table).  Informative
  ** only: every table-valued function here is SQLITE_VTAB_DIRECTONLY
  ** (above), since each runs caller SQL. */
  int writes;
} dprl_tvf_spec;

int dprl_tvf_register(sqlite3 *db, const dprl_tvf_spec *spec); /* by dprl.c */

#endif
