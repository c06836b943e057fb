/* policy_eval.c: DP-LSW / DP-LSL from statistics to JSON (policy_eval.h). */
#include "policy_eval.h"

#include <math.h>
#include <string.h>

#include "estimator.h"
#include "json.h"
#include "options.h"

/* "episodes" is only for the from-statistics form; "grouped" only for rows. */
const char *const dprl_lsw_option_names[] = {
    "n_states", "gamma", "epsilon", "delta", "rmin", "rmax", "fmin", "fmax", "features", "weights",
    "calibration", "seed", "release", "grouped", "episodes", NULL};
const char *const dprl_lsl_option_names[] = {
    "n_states", "gamma", "epsilon", "delta", "rmin", "rmax", "fmin", "fmax", "features", "rho",
    "lambda", "calibration", "seed", "release", "grouped", "episodes", NULL};

#define MAX_STATES (1 << 27)

/* Weights (LSW) or rho (LSL), their public norms, and the rank checks. */
static int parse_weights(dprl_pe_config *c, const dprl_options *o) {
  int lsw = c->mech == DPRL_LSW;
  const char *key = lsw ? "weights" : "rho";
  int rc = dprl_opt_number_array(o, key, (size_t)c->n_states,
                                 lsw ? DPRL_NONNEG : DPRL_CLOSED(0, 1), &c->w);
  if (rc) return rc;
  if (!c->w) {
    c->w = dprl_malloc((size_t)c->n_states * sizeof *c->w);
    if (!c->w) return dprl_nomem(o->err);
    for (int64_t s = 0; s < c->n_states; s++) c->w[s] = 1.0;
  }
  if ((rc = dprl_features_norm(&c->feat, &c->phi_norm, o->err))) return rc;
  if (lsw) {
    return dprl_features_min_sv_weighted(&c->feat, c->w, &c->min_sv, o->err);
  }
  for (int64_t s = 0; s < c->n_states; s++) {
    if (c->w[s] > c->rho_inf) c->rho_inf = c->w[s];
    c->rho_l2 += c->w[s] * c->w[s];
    c->rho_sum += c->w[s];
  }
  c->rho_l2 = sqrt(c->rho_l2);
  if (c->rho_inf == 0)
    return dprl_fail(o->err, DPRL_EINVAL, "%s: option rho must have an entry > 0, got all 0",
                     o->fn);
  if ((rc = dprl_opt_number(o, "lambda", 1, 0, DPRL_POSITIVE, &c->lambda))) return rc;
  double floor_ = c->phi_norm * c->phi_norm * c->rho_inf; /* ALGORITHMS.md §3 */
  if (!(c->lambda > floor_))
    return dprl_fail(o->err, DPRL_EINVAL,
                     "%s: option lambda must be > ||Phi||^2 ||rho||_inf = %.17g, got %.17g",
                     o->fn, floor_, c->lambda);
  return DPRL_OK;
}

static int parse_all(dprl_pe_config *c, const dprl_options *o, int from_stats) {
  static const char *const calibs[] = {"nrs", "elementary", NULL};
  static const char *const releases[] = {"private", "diagnostic", NULL};
  int rc, calib = 0;
  if ((rc = dprl_opt_int(o, "n_states", 1, 0, DPRL_CLOSED(1, MAX_STATES), &c->n_states)) ||
      (rc = dprl_return_rule_parse(o, &c->rule)) ||
      (rc = dprl_opt_number(o, "epsilon", 1, 0, DPRL_POSITIVE, &c->epsilon)) ||
      (rc = dprl_opt_number(o, "delta", 1, 0, DPRL_OPEN(0, 1), &c->delta)) ||
      (rc = dprl_opt_choice(o, "calibration", calibs, 0, &calib)) ||
      (rc = dprl_opt_choice(o, "release", releases, 0, &c->diagnostic)) ||
      (rc = dprl_opt_seed(o, &c->has_seed, &c->seed)))
    return rc;
  c->calib = (dprl_calibration)calib;
  if (from_stats) {
    if (dprl_opt_has(o, "grouped"))
      return dprl_fail(o->err, DPRL_EINVAL,
                       "%s: option grouped applies to rows of steps, not to statistics",
                       o->fn);
    if ((rc = dprl_opt_int(o, "episodes", 1, 0, DPRL_AT_LEAST(1), &c->episodes)))
      return rc;
  } else {
    if (dprl_opt_has(o, "episodes"))
      return dprl_fail(o->err, DPRL_EINVAL,
                       "%s: option episodes is for the statistics form; here m is the "
                       "number of episodes in the rows",
                       o->fn);
    if ((rc = dprl_opt_bool(o, "grouped", 0, &c->grouped))) return rc;
  }
  if ((rc = dprl_features_from_options(o, c->n_states, &c->feat))) return rc;
  return parse_weights(c, o);
}

int dprl_pe_config_parse(dprl_pe_config *c, dprl_mechanism mech, const char *fn,
                         const char *text, size_t len, int from_stats,
                         dprl_error *err) {
  dprl_options o;
  memset(c, 0, sizeof *c);
  c->mech = mech;
  c->fn = fn;
  c->episodes = -1;
  int rc = dprl_options_open(&o, fn,
                             text, len,
                             mech == DPRL_LSW ? dprl_lsw_option_names
                                              : dprl_lsl_option_names,
                             err);
  if (!rc) rc = parse_all(c, &o, from_stats);
  dprl_options_close(&o);
  if (rc) dprl_pe_config_free(c);
  return rc;
}

void dprl_pe_config_free(dprl_pe_config *c) {
  dprl_features_free(&c->feat);
  dprl_free(c->w);
  c->w = NULL;
}

/* ---- the release ------------------------------------------------------- */

typedef struct pe_result {
  double alpha, beta, psi, sigma, sigma_hi, sigma_applied, grid;
  double *theta_exact, *theta, *values; /* d, d, n */
} pe_result;

/* sigma from psi, and its public upper bound (psi at its largest). */
static void pe_sigma(const dprl_pe_config *c, const dprl_fv_stats *st, pe_result *r) {
  double B = dprl_return_bound(&c->rule);
  if (c->mech == DPRL_LSW) { /* ALGORITHMS.md §2 */
    double wsum = 0;
    for (int64_t s = 0; s < c->n_states; s++) wsum += c->w[s];
    r->sigma = r->alpha * B * sqrt(r->psi) / c->min_sv;
    r->sigma_hi = r->alpha * B * sqrt(wsum) / c->min_sv; /* phi(k) <= sum w */
  } else { /* §3 */
    double gap = c->lambda - c->phi_norm * c->phi_norm * c->rho_inf;
    double c_lambda = c->phi_norm * c->rho_inf / sqrt(2.0 * c->lambda);
    double top = c_lambda * sqrt((double)st->m * c->rho_sum) + c->rho_l2; /* k = m */
    r->sigma = 2.0 * r->alpha * B * c->phi_norm * sqrt(r->psi) / gap;
    r->sigma_hi = 2.0 * r->alpha * B * c->phi_norm * top / gap;
  }
}

static int pe_compute(const dprl_pe_config *c, const dprl_fv_stats *st,
                      dprl_rng *rng, pe_result *r, dprl_error *err) {
  int64_t d = c->feat.d;
  int rc;
  if ((rc = dprl_calibrate(c->calib, c->epsilon, c->delta, d, &r->alpha, &r->beta, err)))
    return rc;
  if (c->mech == DPRL_LSW) {
    rc = dprl_lsw_theta(&c->feat, c->w, st, r->theta_exact, err);
    if (!rc) rc = dprl_psi_lsw(st->visits, c->w, c->n_states, r->beta, &r->psi, err);
  } else {
    double c_lambda = c->phi_norm * c->rho_inf / sqrt(2.0 * c->lambda);
    rc = dprl_lsl_theta(&c->feat, c->w, c->lambda, st, r->theta_exact, err);
    if (!rc)
      rc = dprl_psi_lsl(st->visits, c->w, c->n_states, st->m, r->beta, c_lambda,
                        &r->psi, err);
  }
  if (rc) return rc;
  pe_sigma(c, st, r);
  /* The grid comes from the PUBLIC bound sigma_hi, so where the output lies
  ** tells nothing about psi.  Rounding theta to the grid moves it by at most
  ** sqrt(d) g / 2 per input, so sqrt(d) g is added to the smooth bound (a
  ** constant keeps it beta-smooth): sigma_applied = alpha (S + sqrt(d) g). */
  r->grid = dprl_grid_for(r->sigma_hi);
  r->sigma_applied = r->sigma + r->alpha * sqrt((double)d) * r->grid;
  for (int64_t j = 0; j < d && !rc; j++)
    rc = dprl_release_gaussian(rng, r->theta_exact[j], r->sigma_applied, r->grid,
                               &r->theta[j], err);
  if (!rc) dprl_features_apply(&c->feat, r->theta, r->values);
  return rc;
}

static void put_key(dprl_buf *b, const char *k) {
  dprl_buf_puts(b, ",");
  dprl_json_put_string(b, k);
  dprl_buf_puts(b, ":");
}

static void pe_json(const dprl_pe_config *c, const dprl_fv_stats *st,
                    const pe_result *r, dprl_buf *b) {
  static const char *const calibs[] = {"nrs", "elementary"};
  /* The mechanism, not the SQL name: the statistics form releases the same. */
  dprl_buf_puts(b, c->mech == DPRL_LSW ? "{\"mechanism\":\"dp_lsw\""
                                       : "{\"mechanism\":\"dp_lsl\"");
  dprl_buf_printf(b, ",\"private\":%s", c->diagnostic ? "false" : "true");
  if (c->has_seed) dprl_buf_puts(b, ",\"seeded\":true");
  put_key(b, "epsilon");
  dprl_json_put_double(b, c->epsilon);
  put_key(b, "delta");
  dprl_json_put_double(b, c->delta);
  dprl_buf_printf(b, ",\"n_states\":%lld,\"d\":%lld,\"episodes\":%lld",
                  (long long)c->n_states, (long long)c->feat.d, (long long)st->m);
  dprl_buf_printf(b, ",\"calibration\":\"%s\"", calibs[c->calib]);
  put_key(b, "theta");
  dprl_json_put_double_array(b, r->theta, (size_t)c->feat.d);
  put_key(b, "values");
  dprl_json_put_double_array(b, r->values, (size_t)c->n_states);
  if (c->diagnostic) { /* data-dependent: NOT covered by the guarantee (§5) */
    put_key(b, "theta_exact");
    dprl_json_put_double_array(b, r->theta_exact, (size_t)c->feat.d);
    put_key(b, "sigma");
    dprl_json_put_double(b, r->sigma);
    put_key(b, "sigma_applied");
    dprl_json_put_double(b, r->sigma_applied);
    put_key(b, "grid");
    dprl_json_put_double(b, r->grid);
    put_key(b, "psi");
    dprl_json_put_double(b, r->psi);
    put_key(b, "alpha");
    dprl_json_put_double(b, r->alpha);
    put_key(b, "beta");
    dprl_json_put_double(b, r->beta);
    put_key(b, "visits");
    dprl_json_put_int_array(b, st->visits, (size_t)c->n_states);
    put_key(b, "returns");
    dprl_buf_puts(b, "[");
    for (int64_t s = 0; s < c->n_states; s++) {
      if (s) dprl_buf_puts(b, ",");
      dprl_json_put_double(b, dprl_fv_mean(st, s));
    }
    dprl_buf_puts(b, "]");
  }
  dprl_buf_puts(b, "}");
}

int dprl_pe_release(const dprl_pe_config *c, const dprl_fv_stats *st,
                    dprl_buf *out, dprl_error *err) {
  int64_t d = c->feat.d;
  pe_result r = {0};
  dprl_rng rng;
  int rc;
  if (c->has_seed) dprl_rng_init_seeded(&rng, c->seed, (uint64_t)c->mech);
  else if ((rc = dprl_rng_init_secure(&rng, err))) return rc;
  double *mem = dprl_malloc((size_t)(2 * d + c->n_states) * sizeof *mem);
  if (!mem) {
    dprl_rng_wipe(&rng);
    return dprl_nomem(err);
  }
  r.theta_exact = mem;
  r.theta = mem + d;
  r.values = mem + 2 * d;
  rc = pe_compute(c, st, &rng, &r, err);
  if (!rc) {
    pe_json(c, st, &r, out);
    if (out->oom) rc = dprl_nomem(err);
  }
  dprl_rng_wipe(&rng);
  dprl_free(mem);
  return rc;
}
