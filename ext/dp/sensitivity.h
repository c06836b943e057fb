/*
** sensitivity.h: smooth sensitivity of DP-LSW and DP-LSL (Balle et al.
** 2016, Lemma 1 and Algorithms 1-2; ALGORITHMS.md §2-4).
**
** psi = max_{0<=k<=K} e^{-k beta} phi(k), phi non-decreasing in k.  The
** paper's loop costs O(K N).  Here states are grouped by equal visit count
** (phi depends on the counts only through those groups) and the maximum is
** found exactly by branch and bound over k: on [a, b] the objective is at
** most e^{-a beta} phi(b), so an interval whose bound cannot beat the best
** value found so far is discarded whole.
*/
#ifndef DPRL_SENSITIVITY_H
#define DPRL_SENSITIVITY_H

#include "base/core.h"

typedef enum { DPRL_CALIB_NRS, DPRL_CALIB_ELEMENTARY } dprl_calibration;

/* "nrs" is refused above this epsilon (ALGORITHMS.md §4: the numerical
** check of Lemma 1). */
#define DPRL_NRS_EPSILON_MAX 20.0

/* alpha and beta of Lemma 1 for d features (§4). */
int dprl_calibrate(dprl_calibration c, double epsilon, double delta, int64_t d,
                   double *alpha, double *beta, dprl_error *err);

/* The noise is released as a whole number s >= c of grid steps (ALGORITHMS.md
** §6).  c = max(ceil(alpha sqrt(d)), ceil(32 / beta)) covers the rounding of
** theta to the grid; psi must then use beta_psi = beta - 2 ln(1 + 1/c)
** (>= 15 beta / 16) so that rounding s up keeps |ln s^2 - ln s'^2| <= beta. */
void dprl_grid_reserve(double alpha, double beta, int64_t d, double *c,
                       double *beta_psi);

/* psi for DP-LSW: phi(k) = sum_s w_s / max(|X_s| - k, 1)^2, k in [0, K]. */
int dprl_psi_lsw(const int64_t *visits, const double *w, int64_t n, double beta,
                 dprl_cancel *cancel, double *psi, dprl_error *err);

/* psi for DP-LSL: phi(k) = (c_lambda sqrt(sum_s rho_s min(|X_s|+k, m))
** + ||rho||_2)^2, k in [0, m]. */
int dprl_psi_lsl(const int64_t *visits, const double *rho, int64_t n, int64_t m,
                 double beta, double c_lambda, dprl_cancel *cancel, double *psi,
                 dprl_error *err);
/* (cancel: asked while sorting and searching; NULL never stops.) */

/* The generic maximiser, exposed for tests: max over integer k in [0, K]
** of exp(-k beta) phi(k) for non-decreasing phi.  *evals counts calls. */
double dprl_smooth_max(double (*phi)(void *ctx, int64_t k), void *ctx,
                       int64_t K, double beta, int64_t *evals);

#endif
