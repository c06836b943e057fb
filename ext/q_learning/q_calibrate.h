/*
** q_calibrate.h: the noise level of differentially private Q-learning with
** functional noise (Wang & Hegde 2019, Theorem 5; ALGORITHMS.md §8).
**
** Inputs: (epsilon, delta), T steps in batches of B (T/B SGD steps), the
** learning rate lr, the public bound k on the noise path, the constant L
** of the Q-function approximator (see q_learn.h, dprl_q_sensitivity_L) and
** the number J of noise paths (resets).  Common to all accountants:
**   v = 4 lr (k + 1) / B,  beta = 1 / v,  C = (v^2 + v) L^2 >= ||f||_H^2
** Accountants:
**   "gdp" (default): the smallest sigma with delta(eps) <= delta for one Gaussian
**           mechanism with mu = sqrt(T/B) sqrt(C) / sigma (Gaussian DP
**           composition, Dong-Roth-Su 2019) and
**           delta(eps) = Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2)
**           (Balle & Wang 2018); bisection on log sigma, rounded up;
**   "proof": max(sqrt(2 (T/B) C ln(e + eps/delta)) / eps, the gdp sigma):
**           the last line of the proof of Theorem 5 (C under the root),
**           which falls below the exact requirement for eps >~ 13
**           (ALGORITHMS.md §10), so it is never allowed below gdp's;
**   "paper": the printed sigma = sqrt(2 (T/B) ln(e + eps/delta)) C / eps,
**           NOT a proven bound (under-noises when C < 1), comparison only.
** Refused (no guarantee) unless 2k > 8.68 sqrt(beta) sigma; then
**   delta_total = delta + J exp(-(2k - 8.68 sqrt(beta) sigma)^2 / 2).
*/
#ifndef DPRL_Q_CALIBRATE_H
#define DPRL_Q_CALIBRATE_H

#include "dp/accountant.h"
#include "base/core.h"

typedef enum {
  DPRL_QACC_PROOF = 0,
  DPRL_QACC_GDP = 1,
  DPRL_QACC_PAPER = 2
} dprl_q_accountant;

typedef struct dprl_q_calib_in {
  double epsilon, delta;
  double T, B; /* integers, T >= B >= 1 (doubles: checked here) */
  double lr, k, L;
  double J; /* integer >= 1 */
  dprl_q_accountant accountant;
} dprl_q_calib_in;

typedef struct dprl_q_calib_out {
  double sigma, beta, delta_total;
  double v, C;     /* 4 lr (k+1)/B and (v^2 + v) L^2 */
  double mu;       /* GDP mu = sqrt(T/B) sqrt(C) / sigma at this sigma */
  double margin;   /* 2k - 8.68 sqrt(beta) sigma (> 0) */
  const char *accountant; /* "proof", "gdp" or "paper" */
  int proven;             /* 0 for "paper": no guarantee, comparison only */
  const char *note;       /* one sentence saying where sigma comes from */
} dprl_q_calib_out;

/* "proof" / "gdp" / "paper" (NULL = "gdp"). */
int dprl_q_accountant_parse(const char *name, dprl_q_accountant *out,
                            dprl_error *err);
const char *dprl_q_accountant_name(dprl_q_accountant a);

/* Validate, calibrate, refuse without a guarantee. */
int dprl_q_calibrate(const dprl_q_calib_in *in, dprl_q_calib_out *out,
                     dprl_error *err);

/* The noise that makes theta of Q-learning private (ALGORITHMS.md §10):
** nb noisy SGD updates, each with l2 sensitivity `sens` (public, from
** dprl_q_theta_sensitivity) in d coordinates, released on a grid.  The
** grid g is the power of two for the noise scale without rounding; the
** rounding of each update to g adds at most sqrt(d) g to its sensitivity,
** and computing the update's reward part in doubles (q_learn.c) a factor
** of at most 1 + fp_slack (for B <= 2^30 and lr <= 2^1051 g, else
** refused): fp_slack = DPRL_Q_FP_SLACK * (rmax - rmin) / dr, since the
** rounding error is relative to the rewards' part, up to rmax - rmin,
** and the sensitivity to the change dr of the relation; sigma is then the
** exact Gaussian-DP requirement:
**   mu = sqrt(nb) (sens + sqrt(d) g) (1 + fp_slack) / sigma,
**   delta_GDP(eps; mu) <= delta.
** DPRL_EINVAL (public values only in the message) when the scale is not
** usable (not finite, or too small for an exact grid). */
#define DPRL_Q_FP_SLACK 0x1p-20
typedef struct dprl_q_theta_noise {
  double sigma, grid, mu, sens;
} dprl_q_theta_noise;
int dprl_q_theta_calibrate(double eps, double delta, int64_t nb, double sens,
                           double fp_slack, double lr, size_t d,
                           dprl_q_theta_noise *out, dprl_error *err);

/* Building blocks (no validation; exposed for tests). nb = T/B. */
double dprl_q_v(double lr, double k, double B);
double dprl_q_C(double v, double L);
double dprl_q_sigma_proof(double eps, double delta, double nb, double C);
double dprl_q_sigma_paper(double eps, double delta, double nb, double C);
/* Smallest sigma (to relative 1e-12, rounded up) with
** dprl_gdp_delta(eps, sqrt(nb C) / sigma) <= delta. */
double dprl_q_sigma_gdp(double eps, double delta, double nb, double C);

#endif
