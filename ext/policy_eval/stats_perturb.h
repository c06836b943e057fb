/*
** stats_perturb.h: the statistics perturbation of first-visit Monte Carlo
** (ALGORITHMS.md §9): Gaussian noise on the per-state sufficient
** statistics, then any estimator as post-processing.
**
** For each state s: n_s episodes visit it, S_s is the sum of their clamped
** first-visit returns (in [fmin, fmax], width B = fmax - fmin).  Replacing
** one episode changes, for each state it or its replacement touches, the
** centred sum S_s - fmin n_s by at most B and n_s by at most 1; at most
** n_eff states are touched (N, or 2 max_states with a contribution bound).
** With the public count scale c, the vector (S_s - fmin n_s, c n_s) has
** l2 sensitivity Delta = sqrt(n_eff (B^2 + c^2)); each of its 2N entries
** gets N(0, (Delta sigma1)^2), sigma1 from the analytic Gaussian mechanism
** for sensitivity 1 (Balle & Wang 2018, Theorem 8).  Everything about the
** noise is public, so sigma may be released.
**
** c = B minimises the worst-case variance of a mean: Var(mean_s) ~
** sigma^2 (1 + ((F - fmin)/c)^2) / n_s^2 with Delta^2 ~ B^2 + c^2, and
** (B^2 + c^2)(1 + B^2/c^2) is smallest at c = B.
*/
#ifndef DPRL_STATS_PERTURB_H
#define DPRL_STATS_PERTURB_H

#include "rows/first_visit.h"
#include "dp/noise.h"

typedef struct dprl_sp_params {
  double epsilon, delta;
  double fmin, fmax;  /* the public range of first-visit returns */
  int64_t n_states;   /* N */
  int64_t max_states; /* > 0: each episode counts its first max_states
                         first-visits only; 0: no bound */
  int64_t episodes;   /* m (public): bounds the values on the grid */
} dprl_sp_params;

typedef struct dprl_sp_noise {
  double c;      /* count scale (= B) */
  int64_t n_eff; /* min(N, 2 max_states) or N */
  double sens;   /* Delta = sqrt(n_eff (B^2 + c^2)) + sqrt(2 n_eff) grid */
  double sigma1; /* analytic Gaussian scale for sensitivity 1 */
  double sigma;  /* Delta sigma1: the scale on every entry */
  double grid;   /* public power-of-two grid for sigma */
} dprl_sp_noise;

/* Public calibration; DPRL_EINVAL (public values only) when unusable. */
/* The zCDP cost of one statistics release at (epsilon, delta): rho =
** 1/(2 sigma1^2), sigma1 the calibration's (ALGORITHMS.md §12.1). */
double dprl_sp_rho(double epsilon, double delta);
int dprl_sp_calibrate(const dprl_sp_params *p, dprl_sp_noise *out,
                      dprl_error *err);

/* The noisy statistics: sum[s] ~ S_s - fmin n_s + N(0, sigma^2) and
** visits[s] ~ n_s + N(0, (sigma/c)^2), both from grid-valued noise
** (noise.h).  No error depends on the data (the grid check is public). */
int dprl_sp_perturb(const dprl_sp_params *p, const dprl_sp_noise *nz,
                    const dprl_fv_stats *st, dprl_rng *rng, dprl_cancel *cancel,
                    double *sum, double *visits, dprl_error *err);

/* Post-processing of the noisy statistics, per state:
**   visits < 1 (the public rule, fixed before any data): the state counts
**     as unvisited, mean = 0 clamped to [fmin, fmax] (what the exact
**     estimator uses), se = NaN (no information);
**   else mean = clamp(fmin + sum / visits, fmin, fmax) and the delta-method
**     standard error se = sigma sqrt(1 + ((mean - fmin)/c)^2) / visits.
** count_out[s] = max(visits, 0) is the count an LSL Gamma uses.  Polls cancel
** (may be NULL). */
int dprl_sp_estimate(const dprl_sp_params *p, const dprl_sp_noise *nz, const double *sum,
                     const double *visits, double *mean, double *se, double *count_out,
                     dprl_cancel *cancel, dprl_error *err);

/* The planning form of se for a hypothetical count n > 0 at the worst
** mean (fmax): sigma sqrt(1 + (B/c)^2) / n. */
double dprl_sp_planned_se(const dprl_sp_params *p, const dprl_sp_noise *nz,
                          double n);

#endif
