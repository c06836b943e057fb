/*
** q_noise.h: the mechanism of dp_q_noise (ALGORITHMS.md section 8):
** q + g_a(x) at points (x, a, q) the caller supplies, g_a one Ornstein-
** Uhlenbeck noise path per action (gp_path.h), q rounded to the public
** grid of section 6 so that nothing of its low bits survives.
**
** A path may be kept between calls in a path store (dprl_q_path_store;
** dp_q_noise's is the SQL path table of sql_q_path.c): the stored points
** of an action are loaded before new ones are drawn, so new values are
** drawn conditionally on them and stored values come back unchanged, and
** the new points are handed to the store before any value is released.
** A path is the noise of one function (section 8.1): a point has one q,
** within a call and on the stored path, and the path's release is charged
** to a budget once.
**
**   dprl_q_noise_in in = {s, a, q, n, "points_sql"};
**   rc = dprl_q_noise_sample(&cfg, &in, store_or_NULL, cancel, vals, err);
**   noisy_q[i] = dprl_q_on_grid(&cfg, q[i]) + vals[i];
*/
#ifndef DPRL_Q_NOISE_H
#define DPRL_Q_NOISE_H

#include <stddef.h>
#include <stdint.h>

#include "base/core.h"
#include "q_learning/q_options.h"

/* A point of a path: a state (as stored, or rescaled to [0, 1] where the
** sampler says so), its noise g, and the q (on the grid) released with it. */
typedef struct dprl_q_point {
  double x, g, q;
} dprl_q_point;

/* The order of points by x. */
int dprl_q_point_cmp(const void *pa, const void *pb);
/* The index of x among the n points sorted by x, or n. */
size_t dprl_q_point_find(const dprl_q_point *pts, size_t n, double x);

/* Where a path's points live between calls.  Each function returns a
** DPRL_* code with err set. */
typedef struct dprl_q_path_store {
  void *ctx;
  /* The stored points of action a, in any order, x the state as stored:
  ** *pts (dprl_malloc'd, the caller frees it; NULL allowed when *npts is
  ** 0), each a point of this path (state in [lo, hi], g and q on the
  ** grid) as far as the store can tell. */
  int (*load)(void *ctx, int64_t a, dprl_q_point **pts, size_t *npts, dprl_error *err);
  /* Keep n new points of action a (x the state as given, g, q); a state
  ** may repeat, with the same g and q, and is kept once; pts may be
  ** reordered.  A point that cannot be kept is an error, never skipped:
  ** its value is about to be released. */
  int (*add)(void *ctx, int64_t a, dprl_q_point *pts, size_t n, dprl_error *err);
  /* After the ledger row: record that the path's release is charged to
  ** the call's budget. */
  int (*mark_charged)(void *ctx, dprl_error *err);
  int charged; /* the path's release is charged to the call's budget already */
} dprl_q_path_store;

/* The points of one call: state s[i] in [lo, hi], action a[i] in
** 0..n_actions-1, q[i] under 2^52 grid steps (the caller checks them);
** `what` names them in messages, e.g. "points_sql". */
typedef struct dprl_q_noise_in {
  const double *s;
  const int64_t *a;
  const double *q;
  size_t n;
  const char *what;
} dprl_q_noise_in;

/* q on the public grid: the part of noisy_q that is not noise. */
double dprl_q_on_grid(const dprl_q_noise_cfg *c, double q);

/* vals[i] = g_{a_i}(x_i), x_i = s_i rescaled to [0, 1], one path per
** action; kept in st (the path c->path) unless st is NULL.  With a seed,
** one stream per action and per size of its stored path.  Refused: two
** values of q (on the grid) at one point of an action within the call,
** or another q than a stored point's. */
int dprl_q_noise_sample(const dprl_q_noise_cfg *c, const dprl_q_noise_in *p,
                        const dprl_q_path_store *st, dprl_cancel *cancel, double *vals,
                        dprl_error *err);

/* The ledger row of one call (ALGORITHMS.md section 8.1).  Without a
** store every call draws fresh paths: one release, charged.  With one,
** all calls on the path are one release: charged (epsilon, delta_total)
** by the first budgeted call, then marked so; later calls on it log a row
** that spends nothing. */
typedef struct dprl_q_noise_cost {
  double epsilon, delta; /* charged by this call */
  int spends;            /* private: its ledger row counts as spending */
  const char *why_not;   /* when !spends: what makes it not private */
  int mark;              /* mark the path charged once the row is committed */
} dprl_q_noise_cost;

void dprl_q_noise_cost_of(const dprl_q_noise_cfg *c, const dprl_q_path_store *st,
                          dprl_q_noise_cost *out);
/* After the ledger row is committed: the mark, if cost->mark.  Written
** only then, so a failure in between makes a later call charge again,
** never charge less. */
int dprl_q_noise_charged(const dprl_q_noise_cost *cost, const dprl_q_path_store *st,
                         dprl_error *err);

#endif
