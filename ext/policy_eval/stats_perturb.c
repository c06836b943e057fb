/* stats_perturb.c: noise on the per-state statistics (stats_perturb.h). */
#include "policy_eval/stats_perturb.h"

#include <math.h>

#include "dp/accountant.h" /* the analytic Gaussian requirement (GDP delta) */
#include "dp/zcdp.h"

double dprl_sp_rho(double epsilon, double delta) {
  return dprl_zcdp_rho(1.0, dprl_gdp_sigma(epsilon, delta, 1.0));
}

int dprl_sp_calibrate(const dprl_sp_params *p, dprl_sp_noise *out,
                      dprl_error *err) {
  if (!(p->epsilon > 0 && isfinite(p->epsilon) && p->delta > 0 && p->delta < 1))
    return dprl_fail(err, DPRL_EINVAL,
                     "statistics: needs epsilon > 0 and delta in (0, 1), got %g and %g",
                     p->epsilon, p->delta);
  double B = p->fmax - p->fmin;
  if (!(isfinite(B) && B > 0))
    return dprl_fail(err, DPRL_EINVAL,
                     "statistics: the return range must be finite with fmax > fmin, "
                     "got [%g, %g]", p->fmin, p->fmax);
  if (!(p->n_states >= 1 && p->episodes >= 1 && p->max_states >= 0))
    return dprl_fail(err, DPRL_EINVAL,
                     "statistics: needs n_states >= 1, episodes >= 1, max_states >= 0");
  out->c = B;
  out->n_eff = p->n_states;
  if (p->max_states > 0 && 2 * p->max_states < p->n_states) out->n_eff = 2 * p->max_states;
  out->sens = sqrt((double)out->n_eff * (B * B + out->c * out->c));
  /* Theorem 8 of Balle & Wang for sensitivity 1 is the GDP condition at
  ** mu = 1/sigma1: delta(eps; 1/sigma1) <= delta. */
  out->sigma1 = dprl_gdp_sigma(p->epsilon, p->delta, 1.0);
  out->sigma = out->sens * out->sigma1;
  if (!(isfinite(out->sigma) && out->sigma > 0x1p-900 && out->sigma < 0x1p900))
    return dprl_fail(err, DPRL_EINVAL,
                     "statistics: sigma = %g is outside [2^-900, 2^900], where the noise "
                     "grid is exact; change the return range", out->sigma);
  /* The grid: fine relative to sigma, and coarse enough that every value
  ** (at most m max(B, c) on the centred scale) is exact on it; both are
  ** public, so the grid says nothing about the data. */
  double top = (double)p->episodes * fmax(B, out->c);
  double g = dprl_grid_for(out->sigma);
  while (top / g >= 0x1p51) g *= 2;
  out->grid = g;
  /* Rounding to g moves each of the 2 n_eff entries a neighbour can change
  ** by at most g more (ALGORITHMS.md §9). */
  out->sens += sqrt(2.0 * (double)out->n_eff) * g;
  out->sigma = out->sens * out->sigma1;
  return DPRL_OK;
}

int dprl_sp_perturb(const dprl_sp_params *p, const dprl_sp_noise *nz,
                    const dprl_fv_stats *st, dprl_rng *rng, dprl_cancel *cancel,
                    double *sum, double *visits, dprl_error *err) {
  for (int64_t s = 0; s < p->n_states; s++) {
    if (dprl_cancel_poll(cancel, 2000, err)) return err->code;
    double n = (double)st->visits[s];
    double centred = st->return_sum[s] - p->fmin * n, scaled;
    int rc = dprl_release_gaussian(rng, centred, nz->sigma, nz->grid, &sum[s], err);
    if (!rc) rc = dprl_release_gaussian(rng, nz->c * n, nz->sigma, nz->grid, &scaled, err);
    if (rc) return rc;
    visits[s] = scaled / nz->c;
  }
  return DPRL_OK;
}

static double clampd(double x, double lo, double hi) {
  return x < lo ? lo : x > hi ? hi : x;
}

int dprl_sp_estimate(const dprl_sp_params *p, const dprl_sp_noise *nz, const double *sum,
                     const double *visits, double *mean, double *se, double *count_out,
                     dprl_cancel *cancel, dprl_error *err) {
  for (int64_t s = 0; s < p->n_states; s++) {
    if (dprl_cancel_poll(cancel, 8, err)) return err->code;
    double n = visits[s];
    if (count_out) count_out[s] = n > 0 ? n : 0;
    if (!(n >= 1)) {
      mean[s] = clampd(0.0, p->fmin, p->fmax);
      if (se) se[s] = NAN;
      continue;
    }
    double f = clampd(p->fmin + sum[s] / n, p->fmin, p->fmax);
    double r = (f - p->fmin) / nz->c;
    mean[s] = f;
    if (se) se[s] = nz->sigma * sqrt(1 + r * r) / n;
  }
  return DPRL_OK;
}

double dprl_sp_planned_se(const dprl_sp_params *p, const dprl_sp_noise *nz,
                          double n) {
  double r = (p->fmax - p->fmin) / nz->c;
  return nz->sigma * sqrt(1 + r * r) / n;
}
