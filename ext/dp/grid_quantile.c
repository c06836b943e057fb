/* grid_quantile.c: a bound chosen privately on a public grid (grid_quantile.h). */
#include "dp/grid_quantile.h"

#include <math.h>
#include <string.h>

#include "dp/zcdp.h"

int dprl_gridq_init(dprl_gridq *g, double top, double q, double rho_budget, const char *fn,
                    dprl_error *err) {
  memset(g, 0, sizeof *g);
  g->top = top, g->q = q, g->share = NAN;
  g->n = (int)floor(4 * log2(top)) + 1; /* e_0 in [1, 2^(1/4)) */
  if (g->n > DPRL_GRIDQ_EDGES_MAX) g->n = DPRL_GRIDQ_EDGES_MAX;
  if (g->n < 1) g->n = 1;
  double s = ceil(1 / sqrt(rho_budget)); /* sqrt 2 / sqrt(2 rho) */
  if (!(rho_budget > 0 && s <= (double)DPRL_GAUSS_STEPS_MAX))
    return dprl_fail(err, DPRL_EINVAL,
                     "%s: the share of rho left for the histogram of an automatic bound (%g) "
                     "gives no noise scale within the exact sampler's range", fn, rho_budget);
  g->steps = s < 1 ? 1 : (uint64_t)s;
  g->rho = dprl_zcdp_rho(M_SQRT2, (double)g->steps);
  return DPRL_OK;
}

double dprl_gridq_edge(const dprl_gridq *g, int j) {
  return j >= g->n - 1 ? g->top : g->top * exp2((double)(j + 1 - g->n) / 4);
}

int dprl_gridq_bin(const dprl_gridq *g, double x) {
  int lo = 0, hi = g->n - 1;
  while (lo < hi) {
    int mid = (lo + hi) / 2;
    if (x <= dprl_gridq_edge(g, mid)) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}

double dprl_gridq_choose(dprl_gridq *g, const int64_t *bins, dprl_rng *rng) {
  double n = 0;
  for (int j = 0; j < g->n; j++) {
    g->hist[j] = (double)bins[j] + (double)dprl_discrete_gaussian(rng, g->steps);
    n += g->hist[j];
  }
  /* post-processing: the smallest edge with at most 1 - q of the noisy
  ** total above it, scanning down (the last edge when the total is not
  ** positive) */
  int pick = g->n - 1;
  double above = 0;
  if (n > 0) {
    for (int j = g->n - 1; j > 0; j--) {
      if (above + g->hist[j] > (1 - g->q) * n) break;
      above += g->hist[j];
      pick = j - 1;
    }
  }
  g->share = n > 0 ? fmin(1, fmax(0, above / n)) : NAN;
  g->pick = pick;
  return dprl_gridq_edge(g, pick);
}
