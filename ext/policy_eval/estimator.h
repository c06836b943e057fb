/*
** estimator.h: per-state statistics -> the exact (non-private) parameter.
**
** LSW (Balle et al., Algorithm 1; ALGORITHMS.md §2):
**   theta_w = (Phi^T Gamma Phi)^{-1} Phi^T Gamma F_X,  Gamma = diag(w)
** LSL (Algorithm 2; ALGORITHMS.md §3):
**   theta_l = (Phi^T Gamma_X Phi + lambda/(2m) I)^{-1} Phi^T Gamma_X F_X,
**   Gamma_X = diag(rho_s |X_s| / m)
** Structured features use Gamma_X F_X = rho_s * return_sum_s / m; an
** explicit Phi goes through QR of a regularised least-squares problem,
** which cannot fail whatever the counts (estimator.c).
*/
#ifndef DPRL_ESTIMATOR_H
#define DPRL_ESTIMATOR_H

#include "policy_eval/feature_matrix.h"
#include "rows/first_visit.h"

/* Every loop over states polls cancel (may be NULL); LAPACK's part (an
** explicit Phi only) cannot be interrupted. */
int dprl_lsw_theta(const dprl_features *f, const double *w, const dprl_fv_stats *st,
                   double *theta, dprl_cancel *cancel, dprl_error *err);
int dprl_lsl_theta(const dprl_features *f, const double *rho, double lambda,
                   const dprl_fv_stats *st, double *theta, dprl_cancel *cancel,
                   dprl_error *err);

/* The same from per-state means (and, for LSL, counts >= 0 of m
** episodes) instead of exact statistics: the statistics perturbation
** (ALGORITHMS.md §9) passes noisy ones; LSL's Gamma_X F_X is then
** rho_s count_s mean_s / m. */
int dprl_lsw_theta_means(const dprl_features *f, const double *w, const double *mean,
                         double *theta, dprl_cancel *cancel, dprl_error *err);
int dprl_lsl_theta_means(const dprl_features *f, const double *rho, double lambda,
                         const double *mean, const double *count, double m,
                         double *theta, dprl_cancel *cancel, dprl_error *err);

#endif
