/*
** gp_path.h: one sample path of the Ornstein-Uhlenbeck process
** g ~ GP(0, sigma^2 K), K(x, y) = exp(-beta |x - y|)   (ALGORITHMS.md §8;
** Wang & Hegde 2019, Lemma 6 and Appendix A, Proposition 9),
** drawn lazily: the path is known at the points stored so far, and a new
** point is drawn from its exact conditional given them.  The process is
** Markov, so that conditional depends only on the nearest stored
** neighbour on each side (two, one or none).  Points are kept sorted, so
** a path can be persisted (iterate, load) and later queries condition on
** earlier ones.
**
** Released values lie on a power-of-two grid (ALGORITHMS.md §6): each
** draw is g * (round(mean / g) + Z), Z discrete Gaussian with scale
** ceil(sd / g) (dprl_release_gaussian), so sd is rounded UP to at least
** one grid unit.  Take the grid from the public sigma: dprl_grid_for(sigma).
** sigma = 0 gives the zero path (noise off, no draws; tests only).
*/
#ifndef DPRL_GP_PATH_H
#define DPRL_GP_PATH_H

#include <stddef.h>

#include "base/core.h"
#include "dp/noise.h"

typedef struct dprl_gp_point {
  double x, g;
} dprl_gp_point;

typedef struct dprl_gp_path {
  double sigma, beta, grid;
  dprl_gp_point *pts; /* sorted by x, strictly increasing */
  size_t n, cap;
  /* Polled by sample_batch and load (core.h); NULL (the default): never
  ** stopped.  The owner sets it.  On DPRL_EINTR the path is unchanged. */
  dprl_cancel *cancel;
} dprl_gp_path;

/* New empty path; NULL (and err set) if sigma is not finite >= 0, beta not
** finite > 0, grid not a power of two > 0 with sigma <= 2^27 grid, or
** memory runs out. */
dprl_gp_path *dprl_gp_path_create(double sigma, double beta, double grid,
                                  dprl_error *err);
void dprl_gp_path_free(dprl_gp_path *p);
/* Forget every stored point (a fresh, independent path; capacity kept). */
void dprl_gp_path_reset(dprl_gp_path *p);

/* Exact conditional of g(x) given the stored neighbours left (x- < x) and
** right (x+ > x); either may be NULL (missing).  Sets *mean and *var
** (variance, not sd).  Stable for beta*d from 1e-300 to ~700 and beyond. */
void dprl_gp_conditional(double sigma, double beta, const dprl_gp_point *left,
                         const dprl_gp_point *right, double x, double *mean,
                         double *var);

/* g(x): the stored value if x is stored, else a draw from the conditional
** given the neighbours, inserted (O(log n) search + memmove). */
int dprl_gp_path_sample_at(dprl_gp_path *p, dprl_rng *rng, double x,
                           double *out, dprl_error *err);

/* out[i] = g(xs[i]) for n query points in any order (repeats allowed):
** sorts the queries and merges them with the stored points left to right,
** so each new point conditions on its nearest left point (stored or just
** drawn) and its nearest right STORED point: exact by the Markov property.
** O(n log n + stored).  Same draws as sample_at over the sorted queries. */
int dprl_gp_path_sample_batch(dprl_gp_path *p, dprl_rng *rng,
                              const double *xs, size_t n, double *out,
                              dprl_error *err);

/* The same, and where[i] = the index of xs[i] among the stored points
** after the call (dprl_gp_path_points): equal states share an index. */
int dprl_gp_path_sample_indexed(dprl_gp_path *p, dprl_rng *rng,
                                const double *xs, size_t n, double *out,
                                size_t *where, dprl_error *err);

/* Replace the stored points by n (x, g) pairs (any order; x finite and
** distinct), e.g. a persisted path.  On error the path is unchanged. */
int dprl_gp_path_load(dprl_gp_path *p, const dprl_gp_point *pts, size_t n,
                      dprl_error *err);

/* The stored points, sorted by x (valid until the next call that samples,
** loads or resets). */
static inline size_t dprl_gp_path_count(const dprl_gp_path *p) { return p->n; }
static inline const dprl_gp_point *dprl_gp_path_points(const dprl_gp_path *p) {
  return p->pts;
}

#endif
