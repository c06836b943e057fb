/*
** grid_quantile.h: a contribution bound chosen privately (ALGORITHMS.md
** §13.6, §15.8).  A public geometric grid of K edges
**   e_j = top 2^((j + 1 - K) / 4),  j < K,  e_{K-1} = top,
** each unit (an episode) counted in the bin of the smallest edge at or
** above its contribution; the K counts get discrete Gaussian noise (one
** unit moves one count: l2 sensitivity 1 added or removed, sqrt 2
** replaced), and the bound is the edge where the noisy share of units
** above it first falls to 1 - q.  Everything but the counts is public.
*/
#ifndef DPRL_DP_GRID_QUANTILE_H
#define DPRL_DP_GRID_QUANTILE_H

#include <stdint.h>

#include "base/core.h"
#include "dp/noise.h"

#define DPRL_GRIDQ_EDGES_MAX 256

typedef struct dprl_gridq {
  double top;        /* the largest edge (>= 1) */
  int n;             /* K = floor(4 log2 top) + 1, at most DPRL_GRIDQ_EDGES_MAX: e_0 >= 1 */
  double q;          /* the quantile */
  uint64_t steps;    /* the counts' noise scale */
  double rho;        /* its zCDP cost at sensitivity sqrt 2 */
  /* the choice (after dprl_gridq_choose) */
  double hist[DPRL_GRIDQ_EDGES_MAX]; /* the noisy counts */
  double share;      /* the noisy share of units above the chosen edge, in [0, 1]; NaN: none */
  int pick;          /* the chosen edge */
} dprl_gridq;

/* The grid up to top, at quantile q, with counts noise of the smallest
** integer scale whose cost is at most rho_budget: s = ceil(1 / sqrt(rho_budget)).
** 0, or an error naming fn when no scale fits the exact sampler. */
int dprl_gridq_init(dprl_gridq *g, double top, double q, double rho_budget, const char *fn,
                    dprl_error *err);
double dprl_gridq_edge(const dprl_gridq *g, int j);
/* The bin of a contribution x: the smallest j with x <= e_j, K - 1 above the grid. */
int dprl_gridq_bin(const dprl_gridq *g, double x);
/* Noise on the counts bins[K] from rng (in bin order), then the choice:
** the edge returned, g->pick, g->share and g->hist set. */
double dprl_gridq_choose(dprl_gridq *g, const int64_t *bins, dprl_rng *rng);

#endif
