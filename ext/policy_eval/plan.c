/*
** plan.c: dp_plan, choosing epsilon, delta, the bounds and the perturbation
** before spending any privacy budget (policy_eval.h, ALGORITHMS.md §9).
**
**   SELECT dp_plan('{"n_states": 10, "gamma": 0.9, "rmin": 0, "rmax": 1, "fmax": 9, "epsilon": 1,
**                    "delta": 1e-5, "episodes": 20000,
**                    "visits": [9000, 8000, 7000, 6000, 5000, 4000, 3000, 2000, 1500, 800]}');
**
** From public parameters and hypothetical per-state visit counts only, the
** noise scale and the expected error (first-order standard deviation) of
** every released value under each perturbation:
**   output:      value_s = phi_s theta_hat, theta_hat = theta + N(0, s^2 I):
**                sd_s = s ||phi_s|| with s the applied scale (§2-6);
**   statistics:  theta = A^-1 Phi^T G F_hat, A = Phi^T G Phi + r I (LSW:
**                G = diag(w), r = 0; LSL: G = diag(rho n / m), r =
**                lambda/2m), Var F_hat_t = se_t^2 (the planned standard
**                error at the worst mean), so Var value_s = sum_t
**                (phi_s A^-1 phi_t g_t)^2 se_t^2; the noise in the LSL
**                weights is left out (first order).  A state with no
**                hypothetical visits has no error to plan (null).
** Tabular and aggregated features use closed forms; a dense Phi needs
** n_states^2 d work and is limited to n_states^2 d <= 10^9.
*/
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/json.h"
#include "base/linalg.h"
#include "policy_eval/policy_eval.h"
#include "policy_eval/stats_perturb.h"

/* g_t of the statistics estimator and its ridge r (see above). */
static double plan_weight(const dprl_pe_config *c, const int64_t *v, int64_t t) {
  return c->mech == DPRL_LSW ? c->w[t] : c->w[t] * (double)v[t] / (double)c->episodes;
}

static double plan_ridge(const dprl_pe_config *c) {
  return c->mech == DPRL_LSW ? 0.0 : c->lambda / (2.0 * (double)c->episodes);
}

/* Closed form for disjoint indicator features (tabular k = 1, aggregate). */
static int plan_structured(const dprl_pe_config *c, const int64_t *v, const double *se,
                           double *err_s, dprl_error *err) {
  int64_t k = c->feat.kind == DPRL_FEAT_TABULAR ? 1 : c->feat.k;
  for (int64_t j = 0; j * k < c->n_states; j++) {
    double den = plan_ridge(c), var = 0;
    int64_t hi = (j + 1) * k < c->n_states ? (j + 1) * k : c->n_states;
    if (dprl_cancel_poll(c->cancel, 10 * (uint64_t)(hi - j * k), err)) return err->code;
    for (int64_t t = j * k; t < hi; t++) {
      double g = plan_weight(c, v, t);
      den += g;
      if (v[t] > 0) var += g * g * se[t] * se[t];
    }
    for (int64_t s = j * k; s < hi; s++) err_s[s] = den > 0 ? sqrt(var) / den : NAN;
  }
  return DPRL_OK;
}

static int plan_dense(const dprl_pe_config *c, const int64_t *v, const double *se,
                      double *err_s, dprl_error *err) {
  int64_t n = c->n_states, d = c->feat.d;
  const double *phi = c->feat.phi;
  if ((double)n * (double)n * (double)d > 1e9)
    return dprl_fail(err, DPRL_EINVAL,
                     "dp_plan: a dense feature matrix is planned for n_states^2 d <= 10^9, "
                     "got n_states %lld and d %lld", (long long)n, (long long)d);
  double *A = dprl_calloc((size_t)(d * d), sizeof *A);
  double *P = dprl_calloc((size_t)(n * d), sizeof *P);
  int rc = A && P ? DPRL_OK : dprl_nomem(err);
  for (int64_t t = 0; !rc && t < n; t++) {
    if ((rc = dprl_cancel_poll(c->cancel, (uint64_t)(d * d), err))) break;
    double g = plan_weight(c, v, t);
    for (int64_t i = 0; i < d; i++)
      for (int64_t j = 0; j < d; j++) A[i * d + j] += g * phi[t * d + i] * phi[t * d + j];
  }
  for (int64_t i = 0; !rc && i < d; i++) A[i * d + i] += plan_ridge(c);
  if (!rc) rc = dprl_spd_inverse(A, d, err);
  for (int64_t s = 0; !rc && s < n; s++) /* P = Phi A^-1 */
    for (int64_t j = 0; j < d && !(rc = dprl_cancel_poll(c->cancel, (uint64_t)d, err)); j++) {
      double acc = 0;
      for (int64_t i = 0; i < d; i++) acc += phi[s * d + i] * A[i * d + j];
      P[s * d + j] = acc;
    }
  for (int64_t s = 0; !rc && s < n; s++) {
    double var = 0;
    if ((rc = dprl_cancel_poll(c->cancel, (uint64_t)(n * (d + 4)), err))) break;
    for (int64_t t = 0; t < n; t++) {
      if (v[t] == 0) continue;
      double dot = 0;
      for (int64_t j = 0; j < d; j++) dot += P[s * d + j] * phi[t * d + j];
      double x = dot * plan_weight(c, v, t) * se[t];
      var += x * x;
    }
    err_s[s] = sqrt(var);
  }
  dprl_free(A);
  dprl_free(P);
  return rc;
}

static double row_norm(const dprl_features *f, int64_t s) {
  if (f->kind != DPRL_FEAT_DENSE) return 1.0;
  double acc = 0;
  for (int64_t j = 0; j < f->d; j++) acc += f->phi[s * f->d + j] * f->phi[s * f->d + j];
  return sqrt(acc);
}

static double rms(const double *x, int64_t n) {
  double acc = 0;
  int64_t k = 0;
  for (int64_t s = 0; s < n; s++)
    if (isfinite(x[s])) acc += x[s] * x[s], k++;
  return k ? sqrt(acc / (double)k) : NAN;
}

static int put_part(const dprl_pe_config *c, dprl_buf *b, const char *name, double sigma,
                    const double *e, int64_t n, dprl_error *err) {
  dprl_buf_printf(b, ",\"%s\":{\"sigma\":", name);
  dprl_json_put_double(b, sigma);
  dprl_buf_puts(b, ",\"error\":");
  int rc = dprl_json_put_double_array_polled(b, e, (size_t)n, c->cancel, err);
  dprl_buf_puts(b, ",\"rms_error\":");
  dprl_json_put_double(b, rms(e, n));
  dprl_buf_puts(b, "}");
  return rc;
}

/* The plan's JSON into out; rms[0], rms[1]: the root mean square error of
** the output and statistics parts (rms may be NULL). */
static int plan_core(const dprl_pe_config *c, const int64_t *visits, dprl_buf *out,
                     double *rms_out, dprl_error *err) {
  int64_t n = c->n_states;
  double s_out = 0;
  dprl_sp_params p = {c->epsilon, c->delta, c->rule.fmin, c->rule.fmax, n,
                      c->rule.max_states, c->episodes};
  dprl_sp_noise nz;
  double *mem = dprl_calloc((size_t)(3 * n), sizeof *mem);
  if (!mem) return dprl_nomem(err);
  double *e_out = mem, *e_st = mem + n, *se = mem + 2 * n;
  int rc = dprl_pe_output_scale(c, visits, c->episodes, &s_out, err);
  if (!rc) rc = dprl_sp_calibrate(&p, &nz, err);
  for (int64_t s = 0; !rc && s < n; s++) {
    if ((rc = dprl_cancel_poll(c->cancel, 50 + (uint64_t)c->feat.d, err))) break;
    e_out[s] = s_out * row_norm(&c->feat, s);
    se[s] = visits[s] > 0 ? dprl_sp_planned_se(&p, &nz, (double)visits[s]) : NAN;
  }
  if (!rc)
    rc = c->feat.kind == DPRL_FEAT_DENSE ? plan_dense(c, visits, se, e_st, err)
                                         : plan_structured(c, visits, se, e_st, err);
  for (int64_t s = 0; !rc && s < n; s++)
    if (visits[s] == 0) e_st[s] = NAN; /* unvisited: a bias, not a noise to plan */
  if (!rc) {
    dprl_buf_printf(out, "{\"mechanism\":\"%s%s\"", c->mech == DPRL_LSW ? "dp_lsw" : "dp_lsl",
                    c->from_stats ? "_from_stats" : "");
    dprl_buf_puts(out, ",\"epsilon\":");
    dprl_json_put_double(out, c->epsilon);
    dprl_buf_puts(out, ",\"delta\":");
    dprl_json_put_double(out, c->delta);
    dprl_buf_printf(out, ",\"n_states\":%lld,\"d\":%lld,\"episodes\":%lld", (long long)n,
                    (long long)c->feat.d, (long long)c->episodes);
    rc = put_part(c, out, "output", s_out, e_out, n, err);
    if (!rc) rc = put_part(c, out, "statistics", nz.sigma, e_st, n, err);
    if (rms_out) rms_out[0] = rms(e_out, n), rms_out[1] = rms(e_st, n);
    dprl_buf_puts(out, "}");
    if (!rc && out->oom) rc = dprl_nomem(err);
  }
  dprl_free(mem);
  return rc;
}

int dprl_pe_plan(const dprl_pe_config *c, const int64_t *visits, dprl_buf *out,
                 dprl_error *err) {
  return plan_core(c, visits, out, NULL, err);
}

/* The cost of the planned release (dp/plan.h): statistics perturbation is a
** Gaussian release of rho = dprl_sp_rho (ALGORITHMS.md §12.1), the output
** perturbation a plain (epsilon, delta) one; a _from_stats form is charged
** per group (§12).  It answers nothing useful when the planned error of its
** perturbation is half the range of returns or more: a guess of the
** middle of [fmin, fmax] is as close. */
static void plan_cost(const dprl_pe_config *c, const double *rms_e, dprl_plan_cost *cost) {
  int st = c->perturb == DPRL_PERTURB_STATISTICS;
  double e = rms_e[st], half = dprl_return_bound(&c->rule) / 2;
  memset(cost, 0, sizeof *cost);
  static const char *const names[2][2] = {{"dp_lsw", "dp_lsw_from_stats"},
                                          {"dp_lsl", "dp_lsl_from_stats"}};
  cost->mechanism = names[c->mech == DPRL_LSL][c->from_stats];
  cost->unit = "episode";
  cost->epsilon = c->epsilon;
  cost->delta = c->delta;
  cost->gaussian = st;
  cost->rho = st ? dprl_sp_rho(c->epsilon, c->delta) : 0;
  cost->per_group = c->from_stats;
  cost->useful = isfinite(e) && e < half;
  if (!cost->useful)
    dprl_snprintf(cost->why, sizeof cost->why,
             "perturb \"%s\" has a planned rms error of %.3g at these visits, at least half "
             "the range of returns (fmax - fmin)/2 = %.3g: the values would be mostly noise",
             st ? "statistics" : "output", e, half);
}

int dprl_pe_plan_text(const char *text, size_t len, int64_t length_limit, dprl_cancel *cancel,
                      dprl_buf *out, dprl_plan_cost *cost, dprl_error *err) {
  dprl_pe_config c;
  int64_t *visits = NULL;
  double rms_e[2];
  int rc = dprl_pe_plan_parse(&c, text, len, &visits, length_limit, cancel, err);
  if (rc) return rc;
  c.cancel = cancel;
  rc = plan_core(&c, visits, out, rms_e, err);
  if (!rc) plan_cost(&c, rms_e, cost);
  c.cancel = NULL;
  dprl_pe_config_free(&c);
  dprl_free(visits);
  return rc;
}
