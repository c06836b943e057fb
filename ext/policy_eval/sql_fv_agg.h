/*
** sql_fv_agg.h: rows (episode, t, state, reward) -> first-visit statistics,
** the part every row aggregate shares: dp_lsw and dp_lsl
** (sql_policy_eval.c) and dp_fv_stats (sql_first_visit.c).
**
** Each row is checked (dprl_sql_read_step) and goes to the row buffer
** (steps.c, rows in any order) or, with "grouped": true, to the episode
** stream; dprl_fv_agg_collect then runs first_visit.c over the episodes.
*/
#ifndef DPRL_SQL_FV_AGG_H
#define DPRL_SQL_FV_AGG_H

#include "rows/first_visit.h"
#include "sqlite/sql_glue.h"

typedef struct dprl_fv_agg {
  int64_t n_states;
  dprl_return_rule rule;
  int grouped;
  int64_t rows;
  dprl_step_buffer buf;       /* rows in any order */
  dprl_episode_stream stream; /* grouped: true */
  dprl_fv_stats st;           /* the result of collect */
  dprl_fv_scratch sc;
  /* keep_keys: the episode keys are kept in keys after collect (the units
  ** of a release, for the check that groups of one statement are disjoint) */
  int keep_keys;
  dprl_episode_index keys; /* grouped: true: the keys and their contents' prints */
  uint32_t cur;            /* grouped: true: the current episode's entry in keys */
} dprl_fv_agg;

/* The per-state arrays, zeroed (polls cancel; a is zeroed first). */
int dprl_fv_agg_start(dprl_fv_agg *a, int64_t n_states, const dprl_return_rule *rule,
                      int grouped, dprl_cancel *cancel, dprl_error *err);
/* argv[0..3] = episode, t, state, reward. */
int dprl_fv_agg_row(dprl_fv_agg *a, sqlite3_value **argv, dprl_error *err);
/* All rows seen: a->st holds the statistics; the row buffer is freed. */
int dprl_fv_agg_collect(dprl_fv_agg *a, dprl_cancel *cancel, dprl_error *err);
/* With keep_keys set before the first row: the episodes' keys, after
** collect (NULL otherwise). */
dprl_episode_index *dprl_fv_agg_keys(dprl_fv_agg *a);
void dprl_fv_agg_free(dprl_fv_agg *a);

#endif
