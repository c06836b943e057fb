/*
** stats_merge.h: per-state first-visit statistics from shards, merged by
** addition and checked before dp_lsw_from_stats / dp_lsl_from_stats
** release them (ALGORITHMS.md §9).  Plain C: the glue reads each row's
** values and hands them here.
**
** Checks (messages name a bucket, a state or a bound, never an episode):
**  - per row: state in 0..n_states-1, visits in 0..episodes, the
**    statistics' max_states equal to the option's, a shard's bucket range
**    within 0..buckets-1 and hashed with the option's bucket count;
**  - at the end: shards' ranges cover 0..buckets-1 exactly once and give
**    each state once; per state |X_s| <= m and |X_s| fmin <= sum <=
**    |X_s| fmax (sums clamped to that range: a shard's own rounding may
**    overshoot by an ulp); with max_states = k, sum_s |X_s| <= k m.
*/
#ifndef DPRL_STATS_MERGE_H
#define DPRL_STATS_MERGE_H

#include "policy_eval/policy_eval.h"

typedef struct dprl_shard_row {
  int64_t lo, hi, state;
} dprl_shard_row;

typedef struct dprl_stats_merge {
  const dprl_pe_config *cfg; /* n_states, episodes, rule, buckets */
  dprl_fv_stats st;          /* the merged statistics */
  dprl_shard_row *rows;      /* with option buckets: one per row */
  size_t n_rows, cap_rows;
} dprl_stats_merge;

/* One row's values.  has_bound: the row carries the statistics' max_states
** (bound 0 = made without one); with_buckets: bucket_k/lo/hi are given. */
typedef struct dprl_stats_row {
  int64_t state, visits;
  double return_sum;
  int has_bound;
  int64_t bound;
  int with_buckets;
  int64_t bucket_k, bucket_lo, bucket_hi;
} dprl_stats_row;

/* Zeroed per-state arrays (polls cancel). */
int dprl_stats_merge_init(dprl_stats_merge *m, const dprl_pe_config *cfg, dprl_cancel *cancel,
                          dprl_error *err);
int dprl_stats_merge_row(dprl_stats_merge *m, const dprl_stats_row *r, dprl_error *err);
/* Every row added: the end checks; m->st is then ready for release. */
int dprl_stats_merge_finish(dprl_stats_merge *m, dprl_cancel *cancel, dprl_error *err);
void dprl_stats_merge_free(dprl_stats_merge *m);

#endif
