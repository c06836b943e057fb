/*
** q_calibrate.c: sigma for Q-learning with functional noise (see
** q_calibrate.h; ALGORITHMS.md §8, Wang & Hegde 2019 Theorem 5).
*/
#include "q_learning/q_calibrate.h"

#include <math.h>
#include <string.h>

#include "base/json.h"
#include "dp/accountant.h"
#include "dp/noise.h"

#ifndef M_E
#define M_E 2.718281828459045235360287471352662498
#endif
#ifndef M_SQRT2
#define M_SQRT2 1.414213562373095048801688724209698079
#endif

/* Lemma 8 of the paper: E[max g] <= 8.68 sqrt(beta) sigma. */
#define DPRL_Q_LEMMA8 8.68

static const char *const acc_names[] = {"proof", "gdp", "paper"};

const char *dprl_q_accountant_name(dprl_q_accountant a) {
  return (unsigned)a < 3 ? acc_names[a] : "?";
}

int dprl_q_accountant_parse(const char *name, dprl_q_accountant *out,
                            dprl_error *err) {
  if (!name) {
    *out = DPRL_QACC_GDP;
    return DPRL_OK;
  }
  for (int i = 0; i < 3; i++)
    if (strcmp(name, acc_names[i]) == 0) {
      *out = (dprl_q_accountant)i;
      return DPRL_OK;
    }
  return dprl_fail(err, DPRL_EINVAL,
                   "accountant must be one of proof, gdp, paper, got \"%s\"",
                   name);
}

/* v = 4 lr (k + 1) / B: twice the proof's sup-norm bound per unit L. */
double dprl_q_v(double lr, double k, double B) { return 4.0 * lr * (k + 1.0) / B; }

/* ||f||_H^2 <= (1 + beta/2) (vL)^2 + L^2 / (2 beta) = (v^2 + v) L^2 at
** beta = 1/v (proof of Theorem 5 with Lemma 6's inner product). */
double dprl_q_C(double v, double L) { return (v * v + v) * L * L; }

/* The proof's last line (ALGORITHMS.md §8 erratum: C under the root). */
double dprl_q_sigma_proof(double eps, double delta, double nb, double C) {
  return sqrt(2.0 * nb * C * log(M_E + eps / delta)) / eps;
}

/* As printed in Theorem 5 / Algorithm 1 line 5: C outside the root. */
double dprl_q_sigma_paper(double eps, double delta, double nb, double C) {
  return sqrt(2.0 * nb * log(M_E + eps / delta)) * C / eps;
}

/* The smallest sigma for T/B steps of sensitivity sqrt(C) (ALGORITHMS.md
** section 10): one mu-GDP mechanism of sensitivity sqrt(T/B) sqrt(C). */
double dprl_q_sigma_gdp(double eps, double delta, double nb, double C) {
  return dprl_gdp_sigma(eps, delta, sqrt(nb * C));
}

static int is_int_at_least(double x, double min) {
  return isfinite(x) && x >= min && x == floor(x) && x <= 0x1p53;
}

static int validate(const dprl_q_calib_in *in, dprl_error *err) {
  if (!(in->epsilon > 0) || !isfinite(in->epsilon))
    return dprl_fail(err, DPRL_EINVAL, "epsilon must be > 0, got %g",
                     in->epsilon);
  if (!(in->delta > 0 && in->delta < 1))
    return dprl_fail(err, DPRL_EINVAL, "delta must be in (0, 1), got %g",
                     in->delta);
  if (!is_int_at_least(in->T, 1))
    return dprl_fail(err, DPRL_EINVAL, "T must be an integer >= 1, got %g",
                     in->T);
  if (!is_int_at_least(in->B, 1) || in->B > in->T)
    return dprl_fail(err, DPRL_EINVAL,
                     "B must be an integer in [1, T] (T = %g), got %g", in->T,
                     in->B);
  if (!(in->lr > 0) || !isfinite(in->lr))
    return dprl_fail(err, DPRL_EINVAL, "lr must be > 0, got %g", in->lr);
  if (!(in->k > 0) || !isfinite(in->k))
    return dprl_fail(err, DPRL_EINVAL, "k must be > 0, got %g", in->k);
  if (!(in->L > 0) || !isfinite(in->L))
    return dprl_fail(err, DPRL_EINVAL, "L must be > 0, got %g", in->L);
  if (!is_int_at_least(in->J, 1))
    return dprl_fail(err, DPRL_EINVAL, "J must be an integer >= 1, got %g",
                     in->J);
  if ((unsigned)in->accountant > DPRL_QACC_PAPER)
    return dprl_fail(err, DPRL_EINVAL,
                     "accountant must be one of proof, gdp, paper, got %d",
                     (int)in->accountant);
  return DPRL_OK;
}

static const char *const acc_notes[] = {
    "sigma from the proof of Theorem 5 (C under the square root, "
    "ALGORITHMS.md section 8), raised to the exact Gaussian-DP requirement "
    "where that is larger (section 10)",
    "sigma from Gaussian DP composition of T/B Gaussian mechanisms with "
    "sensitivity sqrt(C) (Dong-Roth-Su 2019; delta(eps) of Balle-Wang 2018)",
    "sigma from the formula PRINTED in Theorem 5 (C outside the square "
    "root): NOT the proven bound, no privacy guarantee, for comparison only"};

int dprl_q_calibrate(const dprl_q_calib_in *in, dprl_q_calib_out *out,
                     dprl_error *err) {
  if (validate(in, err)) return err->code;
  double nb = in->T / in->B, v = dprl_q_v(in->lr, in->k, in->B);
  double C = dprl_q_C(v, in->L), beta = 1.0 / v, sigma;
  switch (in->accountant) {
    case DPRL_QACC_GDP: sigma = dprl_q_sigma_gdp(in->epsilon, in->delta, nb, C); break;
    case DPRL_QACC_PAPER: sigma = dprl_q_sigma_paper(in->epsilon, in->delta, nb, C); break;
    default: /* never below the exact requirement (ALGORITHMS.md §10) */
      sigma = fmax(dprl_q_sigma_proof(in->epsilon, in->delta, nb, C),
                   dprl_q_sigma_gdp(in->epsilon, in->delta, nb, C));
      break;
  }
  /* Extreme public inputs (lr = 1e-300, k = 1e300) can underflow C, and
  ** with it sigma, to 0: noise-free output must never pass as private. */
  if (!(isfinite(sigma) && sigma > 0 && isfinite(C) && C > 0 && isfinite(beta)))
    return dprl_fail(err, DPRL_EINVAL,
                     "no usable noise level: lr = %g, k = %g, B = %g, L = %g give "
                     "C = %g and sigma = %g (must be finite and > 0)",
                     in->lr, in->k, in->B, in->L, C, sigma);
  /* Theorem 5 needs 2k > 8.68 sqrt(beta) sigma (Lemma 8's tail bound), and
  ** adds J exp(-(2k - 8.68 sqrt(beta) sigma)^2 / 2) to delta, as §8 states.
  ** (For the linear model of q_learn.c the paths cancel out of the
  ** sensitivity, see dprl_q_sensitivity_L, so there this is conservative.) */
  double reach = DPRL_Q_LEMMA8 * sqrt(beta) * sigma, margin = 2 * in->k - reach;
  if (!(margin > 0))
    return dprl_fail(err, DPRL_EINVAL,
                     "no privacy guarantee: Theorem 5 needs 2k > 8.68 "
                     "sqrt(beta) sigma, got 2k = %g <= %g (sigma = %g, "
                     "beta = %g); raise k",
                     2 * in->k, reach, sigma, beta);
  out->sigma = sigma;
  out->beta = beta;
  out->v = v;
  out->C = C;
  out->mu = sqrt(nb * C) / sigma;
  out->margin = margin;
  out->delta_total = in->delta + in->J * exp(-margin * margin / 2);
  out->accountant = acc_names[in->accountant];
  out->proven = in->accountant != DPRL_QACC_PAPER;
  out->note = acc_notes[in->accountant];
  return DPRL_OK;
}

int dprl_q_theta_calibrate(double eps, double delta, int64_t nb, double sens,
                           double fp_slack, double lr, size_t d,
                           dprl_q_theta_noise *out, dprl_error *err) {
  if (!(eps > 0 && isfinite(eps) && delta > 0 && delta < 1 && nb >= 1 && d >= 1 && lr > 0 &&
        isfinite(lr) && fp_slack >= DPRL_Q_FP_SLACK && isfinite(fp_slack)))
    return dprl_fail(err, DPRL_EINVAL,
                     "theta noise: needs epsilon > 0, delta in (0, 1), lr > 0, at least "
                     "one update and one coordinate, and a finite floating-point allowance");
  if (!(isfinite(sens) && sens > 0))
    return dprl_fail(err, DPRL_EINVAL,
                     "theta noise: the update sensitivity lr dr sqrt(P) = %g must be "
                     "finite and > 0", sens);
  double s0 = dprl_q_sigma_gdp(eps, delta, (double)nb, sens * sens);
  /* The grid must be a normal power of two far above the smallest double,
  ** so that sigma / g and value / g are exact (noise.c). */
  if (!(isfinite(s0) && s0 > 0x1p-900 && s0 < 0x1p900))
    return dprl_fail(err, DPRL_EINVAL,
                     "theta noise: sigma = %g is outside [2^-900, 2^900], where "
                     "the noise grid is exact; change lr or the reward bounds",
                     s0);
  double g = dprl_grid_for(s0);
  /* The rewards' part of an update, computed in doubles, is within a
  ** factor 1 + 2^-21 of its exact sensitivity, plus at most
  ** (2 lr + 1) 2^-1075 per coordinate from underflow, which is below
  ** 2^-22 g when lr <= 2^1051 g (ALGORITHMS.md section 10, "Floating
  ** point"; ldexp is exact, so this check is too). */
  if (!(lr <= ldexp(g, 1051)))
    return dprl_fail(err, DPRL_EINVAL,
                     "theta noise: its grid %g is too fine for lr = %g: an update's reward "
                     "part cannot be computed in doubles to 2^-21 of a grid step (needs lr <= "
                     "2^1051 grid); widen [rmin, rmax] or lower lr", g, lr);
  /* rounding to the grid, and the floating-point factor */
  double eff = (sens + sqrt((double)d) * g) * (1 + fp_slack);
  double sigma = dprl_q_sigma_gdp(eps, delta, (double)nb, eff * eff);
  if (!(isfinite(sigma) && sigma > 0)) {
    char a[32];
    return dprl_fail(err, DPRL_EINVAL,
                     "theta noise: no finite sigma: rewards in [rmin, rmax] span %s times the "
                     "change of the neighbouring relation, too much for the floating-point "
                     "allowance; narrow [rmin, rmax]",
                     dprl_json_num(fp_slack / DPRL_Q_FP_SLACK, a, sizeof a));
  }
  out->sigma = sigma;
  out->grid = g;
  out->sens = eff;
  out->mu = sqrt((double)nb) * eff / sigma;
  return DPRL_OK;
}
