/*
** sql_agg.h: the one frame of every row aggregate (dp_lsw, dp_lsl, their
** _from_stats forms, dp_fv_stats, dp_q_learn, dp_expert_policy).
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
**
** Groups of one statement (GROUP BY over a partition of the units: the
** episodes, or the experts) are charged once (parallel composition,
** ALGORITHMS.md §12): the first group's release takes the ledger row
** before its value is returned; a later group of the same statement
** execution and the same call site, with the same options text, is not
** charged again, provided its units are disjoint from every earlier
** group's, which the frame checks (a unit in two groups is an error, and
** that group is not released).  Only mechanisms that give their units (fn->units) share a
** charge; the others are charged once per group.
*/
#ifndef DPRL_SQL_AGG_H
#define DPRL_SQL_AGG_H

#include "rows/steps.h"
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
  /* After final: the keys of the units of privacy the release read (one
  ** per episode; per expert for dp_expert_policy), or NULL when groups
  ** cannot share a charge (dp_q_learn:
  ** its neighbours may change every group at once; the statistics forms:
  ** their rows carry no episode).  The frame may take the index over
  ** (it zeroes it). */
  dprl_episode_index *(*units)(dprl_agg *a);
} dprl_agg_fn;

typedef struct dprl_agg_stmt dprl_agg_stmt;

struct dprl_agg {
  const dprl_agg_fn *fn;
  void *state;             /* fn->size bytes */
  sqlite3 *db;
  int64_t max_length;      /* the connection's SQLITE_LIMIT_LENGTH */
  dprl_sql_cancel cancel;  /* opened on the first row */
  dprl_sql_pinned options; /* the first row's options text */
  dprl_agg_stmt *stmt;     /* the statement's shared charge, or NULL */
  int failed;
};

/* The xStep and xFinal of every row aggregate; the registration's user
** data is its const dprl_agg_fn. */
void dprl_agg_step(sqlite3_context *ctx, int argc, sqlite3_value **argv);
void dprl_agg_final(sqlite3_context *ctx);

#endif
