/*
** util_prefix_stable.h: what the unit tests of prefix_stable/ share: a
** data generator (not privacy noise), policy tables filled from a
** function, trajectories built step by step, count_tau by its definition,
** and an error whose message starts as wanted.
*/

#ifndef DPRL_TEST_UTIL_PREFIX_STABLE_H
#define DPRL_TEST_UTIL_PREFIX_STABLE_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "prefix_stable/prefix_stable.h"

/* Data generation only (not privacy noise): xorshift64*. */
static uint64_t xs_state = 88172645463325252ULL;
static inline uint64_t xs(void) {
  xs_state ^= xs_state >> 12;
  xs_state ^= xs_state << 25;
  xs_state ^= xs_state >> 27;
  return xs_state * 2685821657736338717ULL;
}
static inline double xs_unit(void) { return (double)(xs() >> 11) * 0x1p-53; }
static inline int64_t xs_below(int64_t n) { return (int64_t)(xs() % (uint64_t)n); }

/* Fill a table through dprl_policy_set from f(i, s, a); the largest prob of
** each (i, s) is replaced by 1 - (sum of the others), so rows sum to 1 up to
** rounding while the small probs (p_min) stay exactly as f gives them. */
typedef double (*policy_fn)(int64_t i, int64_t s, int64_t a, void *ctx);
static inline int build_policies(dprl_policy_table *pt, int64_t m, int64_t S,
                          int64_t A, policy_fn f, void *ctx) {
  dprl_error err = {0};
  if (dprl_policy_init(pt, m, S, A, &err)) return 0;
  double *row = malloc((size_t)A * sizeof(double));
  for (int64_t i = 0; i < m; i++)
    for (int64_t s = 0; s < S; s++) {
      int64_t big = 0;
      for (int64_t a = 0; a < A; a++) {
        row[a] = f(i, s, a, ctx);
        if (row[a] > row[big]) big = a;
      }
      double rest = 1.0;
      for (int64_t a = 0; a < A; a++)
        if (a != big) rest -= row[a];
      row[big] = rest;
      for (int64_t a = 0; a < A; a++)
        if (dprl_policy_set(pt, i, s, a, row[a], &err)) {
          free(row);
          return 0;
        }
    }
  free(row);
  return 1;
}

static inline double uniform_policy(int64_t i, int64_t s, int64_t a, void *ctx) {
  (void)i, (void)s, (void)a;
  return 1.0 / (double)*(int64_t *)ctx;
}

/* Flat trajectory storage built step by step. */
typedef struct traj_buf {
  int64_t n, cap_n, len, cap;
  int64_t *offsets, *states, *actions;
} traj_buf;
static inline void tb_begin(traj_buf *b) {
  if (b->n + 2 > b->cap_n) {
    b->cap_n = b->cap_n ? 2 * b->cap_n : 16;
    b->offsets = realloc(b->offsets, (size_t)b->cap_n * sizeof(int64_t));
  }
  b->offsets[b->n] = b->len;
  b->n++;
  b->offsets[b->n] = b->len;
}
static inline void tb_step(traj_buf *b, int64_t s, int64_t a) {
  if (b->len + 1 > b->cap) {
    b->cap = b->cap ? 2 * b->cap : 64;
    b->states = realloc(b->states, (size_t)b->cap * sizeof(int64_t));
    b->actions = realloc(b->actions, (size_t)b->cap * sizeof(int64_t));
  }
  b->states[b->len] = s;
  b->actions[b->len] = a;
  b->len++;
  b->offsets[b->n] = b->len;
}
static inline dprl_trajectories tb_view(const traj_buf *b) {
  dprl_trajectories t = {b->n, b->offsets, b->states, b->actions};
  return t;
}
static inline void tb_free(traj_buf *b) {
  free(b->offsets);
  free(b->states);
  free(b->actions);
  memset(b, 0, sizeof *b);
}

/* count_tau_{1:k} by the definition: a triple loop, nothing incremental. */
static inline double brute_count(const dprl_policy_table *pt, const int64_t *st,
                          const int64_t *ac, int64_t k) {
  double total = 0;
  for (int64_t i = 0; i < pt->n_experts; i++) {
    double prod = 1.0;
    for (int64_t j = 0; j < k; j++)
      prod *= pt->prob[((size_t)st[j] * pt->n_actions + ac[j]) * pt->n_experts +
                       i];
    total += prod;
  }
  return total;
}

/* An error whose message starts with want. */
static inline void expect_prefix(int rc, const dprl_error *err, const char *want, const char *what) {
  int ok = rc == DPRL_EINVAL && strncmp(err->msg, want, strlen(want)) == 0;
  CHECK(ok, what);
  if (!ok) printf("#   got rc %d \"%s\"\n#   want \"%s...\"\n", rc, err->msg, want);
}

#endif
