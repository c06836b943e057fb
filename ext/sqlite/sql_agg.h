/*
** sql_agg.h: the one frame of every row aggregate (dp_lsw, dp_lsl, their
** _from_stats forms, dp_fv_stats, dp_q_learn).
**
** The frame owns what every aggregate does the same way: the state of a
** group, allocated on its first row; the options argument (always the
** last), parsed on the first row and pinned so that every later row must
** pass the same text; the cancel probe, opened on the first row and used
** again at the end; the first error, after which the group's rows are
** skipped; at the end, the result as JSON and, for a release naming a
** budget, the ledger row committed before the value is returned.
**
** A mechanism describes itself with a dprl_agg_fn (its registration's
** user data) and four callbacks over its own state.
*/
#ifndef DPRL_SQL_AGG_H
#define DPRL_SQL_AGG_H

#include "sqlite/sql_budget.h"
#include "sqlite/sql_glue.h"

typedef struct dprl_agg dprl_agg;

typedef struct dprl_agg_fn {
  const char *name; /* the SQL function, prefixed to its errors */
  size_t size;      /* bytes of the mechanism's state (zeroed) */
  const void *arg;  /* the mechanism's own constant, e.g. which algorithm */
  /* The first row, before it is read: parse the options (text may be NULL
  ** for SQL NULL) and set up the state.  argc is the call's argument count. */
  int (*start)(dprl_agg *a, const char *text, size_t len, int argc, dprl_error *err);
  /* Every row, the first included. */
  int (*row)(dprl_agg *a, int argc, sqlite3_value **argv, dprl_error *err);
  /* All rows read: the JSON result in *out and, when the result is a
  ** release, what it spends (spend->budget NULL: no budget named). */
  int (*final)(dprl_agg *a, dprl_buf *out, dprl_spend *spend, dprl_error *err);
  void (*free)(void *state);
} dprl_agg_fn;

struct dprl_agg {
  const dprl_agg_fn *fn;
  void *state;             /* fn->size bytes */
  sqlite3 *db;
  int64_t max_length;      /* the connection's SQLITE_LIMIT_LENGTH */
  dprl_sql_cancel cancel;  /* opened on the first row */
  dprl_sql_pinned options; /* the first row's options text */
  int failed;
};

/* The xStep and xFinal of every row aggregate; the registration's user
** data is its const dprl_agg_fn. */
void dprl_agg_step(sqlite3_context *ctx, int argc, sqlite3_value **argv);
void dprl_agg_final(sqlite3_context *ctx);

#endif
