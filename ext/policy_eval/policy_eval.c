/* policy_eval.c: DP-LSW / DP-LSL from statistics to JSON (policy_eval.h). */
#include "policy_eval/policy_eval.h"

#include <math.h>
#include <string.h>

#include "policy_eval/estimator.h"
#include "base/json.h"
#include "base/options.h"
#include "policy_eval/stats_perturb.h"

/* "episodes" is only for the from-statistics form; "grouped" only for rows. */
const char *const dprl_lsw_option_names[] = {
    "n_states", "gamma", "epsilon", "delta", "rmin", "rmax", "fmin", "fmax", "features", "weights",
    "perturb", "max_states", "calibration", "seed", "release", "grouped", "episodes", "budget",
    "buckets", NULL};
const char *const dprl_lsl_option_names[] = {
    "n_states", "gamma", "epsilon", "delta", "rmin", "rmax", "fmin", "fmax", "features", "rho",
    "lambda", "perturb", "max_states", "calibration", "seed", "release", "grouped", "episodes",
    "budget", "buckets", NULL};

/* dp_plan: the options of either mechanism, the hypothetical visits, no
** data-side keys (seed, release, grouped); perturb names the one a study
** charges (the plan covers both). */
const char *const dprl_plan_option_names[] = {
    "mechanism", "visits", "episodes", "n_states", "gamma", "epsilon", "delta", "rmin",
    "rmax", "fmin", "fmax", "features", "weights", "rho", "lambda", "max_states",
    "calibration", "perturb", NULL};

#define MAX_STATES (1 << 27)

/* The grid (ALGORITHMS.md §6): the public bound sigma_hi spans at most
** 2^SIGMA_BITS grid steps, the public bound on |theta_j| at most
** 2^THETA_BITS (noise.c needs < 2^52), and the allowance c at most
** GRID_C_MAX, so the scale s <= 2^39 + c + 1 stays within the sampler's
** 2^40 (DPRL_GAUSS_STEPS_MAX). */
#define SIGMA_BITS 39
#define THETA_BITS 50
#define GRID_C_MAX 0x1p38

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
    for (int64_t s = 0; s < c->n_states; s++) {
      if (dprl_cancel_poll(c->cancel, 2, o->err)) return o->err->code;
      c->w[s] = 1.0;
    }
  }
  if ((rc = dprl_features_norm(&c->feat, &c->phi_norm, o->err))) return rc;
  if (lsw) {
    return dprl_features_min_sv_weighted(&c->feat, c->w, &c->min_sv, c->cancel, o->err);
  }
  for (int64_t s = 0; s < c->n_states; s++) {
    if (dprl_cancel_poll(c->cancel, 4, o->err)) return o->err->code;
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

/* Public: alpha, beta (§4) and the grid allowance c with the beta left for
** psi (§6).  Checked here, before any data, so a refusal depends on the
** options alone. */
static int plan_calibration(dprl_pe_config *c, const dprl_options *o) {
  int rc = dprl_calibrate(c->calib, c->epsilon, c->delta, c->feat.d, &c->alpha, &c->beta,
                          o->err);
  if (rc) return rc;
  dprl_grid_reserve(c->alpha, c->beta, c->feat.d, &c->grid_c, &c->beta_psi);
  if (!(c->grid_c <= GRID_C_MAX))
    return dprl_fail(o->err, DPRL_EINVAL,
                     "%s: option epsilon = %g is too small: with delta %g and d = %lld the "
                     "noise needs a floor of %.17g grid steps, more than 2^38 (ALGORITHMS.md "
                     "§6)",
                     o->fn, c->epsilon, c->delta, (long long)c->feat.d, c->grid_c);
  return DPRL_OK;
}

/* "perturb": output (default) or statistics; what applies to only one. */
static int parse_perturb(dprl_pe_config *c, const dprl_options *o) {
  static const char *const perturbs[] = {"output", "statistics", NULL};
  int p = 0, rc = dprl_opt_choice(o, "perturb", perturbs, 0, &p);
  c->perturb = (dprl_perturb)p;
  if (rc || c->plan) return rc; /* a plan covers both perturbations */
  if (c->perturb == DPRL_PERTURB_STATISTICS && dprl_opt_has(o, "calibration"))
    return dprl_fail(o->err, DPRL_EINVAL,
                     "%s: option calibration applies to perturb \"output\" (the constants of "
                     "Lemma 1), not to \"statistics\"", o->fn);
  if (c->perturb == DPRL_PERTURB_OUTPUT && c->rule.max_states > 0)
    return dprl_fail(o->err, DPRL_EINVAL,
                     "%s: option max_states applies to perturb \"statistics\" (a contribution "
                     "bound), not to \"output\"", o->fn);
  return DPRL_OK;
}

/* A result that could never be returned is refused before anything is
** allocated: the JSON holds about (2 + 2 statistics + 3 diagnostic) numbers
** per state, at most 25 bytes each, within the connection's length limit
** (SQLITE_LIMIT_LENGTH, passed in as c->length_limit; 0 = no limit). */
#define BYTES_PER_NUMBER 25
static int check_result_size(const dprl_pe_config *c, const dprl_options *o) {
  if (c->length_limit <= 0) return DPRL_OK;
  int per = 2 + (c->perturb == DPRL_PERTURB_STATISTICS || c->plan ? 2 : 0) +
            (c->diagnostic ? 3 : 0);
  int64_t most = (c->length_limit - 4096) / (BYTES_PER_NUMBER * per);
  if (c->n_states > most)
    return dprl_fail(o->err, DPRL_EINVAL,
                     "%s: option n_states = %lld is more than a result can hold: about %d "
                     "numbers of up to %d bytes per state, and this connection's "
                     "SQLITE_LIMIT_LENGTH is %lld bytes; at most %lld states",
                     o->fn, (long long)c->n_states, per, BYTES_PER_NUMBER,
                     (long long)c->length_limit, (long long)(most > 0 ? most : 0));
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
      (rc = dprl_opt_seed(o, &c->has_seed, &c->seed)) || (rc = parse_perturb(c, o)) ||
      (rc = dprl_opt_name(o, "budget", &c->budget)))
    return rc;
  c->calib = (dprl_calibration)calib;
  if (from_stats) {
    if (dprl_opt_has(o, "grouped"))
      return dprl_fail(o->err, DPRL_EINVAL,
                       "%s: option grouped applies to rows of steps, not to statistics",
                       o->fn);
    if ((rc = dprl_opt_int(o, "episodes", 1, 0, DPRL_AT_LEAST(1), &c->episodes)) ||
        (rc = dprl_opt_int(o, "buckets", 0, 0, DPRL_CLOSED(1, 2147483647), &c->buckets)))
      return rc;
  } else if (dprl_opt_has(o, "buckets")) {
    return dprl_fail(o->err, DPRL_EINVAL,
                     "%s: option buckets is for the statistics form (shards hashed into K "
                     "buckets)", o->fn);
  } else {
    if (dprl_opt_has(o, "episodes"))
      return dprl_fail(o->err, DPRL_EINVAL,
                       "%s: option episodes is for the statistics form; here m is the "
                       "number of episodes in the rows",
                       o->fn);
    if ((rc = dprl_opt_bool(o, "grouped", 0, &c->grouped))) return rc;
  }
  if ((rc = check_result_size(c, o))) return rc;
  if ((rc = dprl_features_from_options(o, c->n_states, &c->feat))) return rc;
  if ((rc = parse_weights(c, o))) return rc;
  return c->perturb == DPRL_PERTURB_OUTPUT || c->plan ? plan_calibration(c, o) : DPRL_OK;
}

int dprl_pe_config_parse(dprl_pe_config *c, dprl_mechanism mech, const char *fn,
                         const char *text, size_t len, int from_stats,
                         int64_t length_limit, dprl_cancel *cancel, dprl_error *err) {
  dprl_options o;
  memset(c, 0, sizeof *c);
  c->cancel = cancel; /* while parsing only */
  c->length_limit = length_limit;
  c->mech = mech;
  c->fn = fn;
  c->episodes = -1;
  int rc = dprl_options_open_polled(&o, fn, text, len,
                                    mech == DPRL_LSW ? dprl_lsw_option_names
                                                     : dprl_lsl_option_names,
                                    cancel, err);
  if (!rc) rc = parse_all(c, &o, from_stats);
  dprl_options_close(&o);
  c->cancel = NULL;
  if (rc) dprl_pe_config_free(c);
  return rc;
}

int dprl_pe_plan_parse(dprl_pe_config *c, const char *text, size_t len, int64_t **visits,
                       int64_t length_limit, dprl_cancel *cancel, dprl_error *err) {
  static const char *const mechs[] = {"dp_lsw", "dp_lsl", "dp_lsw_from_stats",
                                      "dp_lsl_from_stats", NULL};
  const char *fn = "dp_plan";
  dprl_options o;
  double *v = NULL;
  int mech = 0;
  memset(c, 0, sizeof *c);
  c->length_limit = length_limit;
  c->fn = fn;
  c->plan = 1;
  c->cancel = cancel; /* while parsing only */
  *visits = NULL;
  int rc = dprl_options_open_polled(&o, fn, text, len, dprl_plan_option_names, cancel, err);
  if (!rc) rc = dprl_opt_choice(&o, "mechanism", mechs, 0, &mech);
  if (!rc) {
    c->from_stats = mech >= 2;
    mech %= 2;
    c->mech = (dprl_mechanism)mech;
    const char *other = mech ? "weights" : "rho";
    if (dprl_opt_has(&o, other) || (!mech && dprl_opt_has(&o, "lambda")))
      rc = dprl_fail(err, DPRL_EINVAL, "%s: option %s does not apply to mechanism %s", fn,
                     mech || dprl_opt_has(&o, other) ? other : "lambda", mechs[mech]);
  }
  if (!rc) rc = parse_all(c, &o, 1);
  if (!rc && !dprl_opt_has(&o, "visits"))
    rc = dprl_fail(err, DPRL_EINVAL, "%s: option visits is required (hypothetical episodes "
                   "per state, one number per state)", fn);
  if (!rc)
    rc = dprl_opt_number_array(&o, "visits", (size_t)c->n_states,
                               DPRL_CLOSED(0, (double)c->episodes), &v);
  if (!rc && !(*visits = dprl_malloc((size_t)c->n_states * sizeof **visits))) rc = dprl_nomem(err);
  for (int64_t s = 0; !rc && s < c->n_states; s++) {
    if ((rc = dprl_cancel_poll(c->cancel, 2, err))) break;
    if (v[s] != floor(v[s]))
      rc = dprl_fail(err, DPRL_EINVAL, "%s: option visits must hold integers, got %.17g "
                     "(state %lld)", fn, v[s], (long long)s);
    else (*visits)[s] = (int64_t)v[s];
  }
  dprl_free(v);
  dprl_options_close(&o);
  c->cancel = NULL;
  if (rc) {
    dprl_free(*visits);
    *visits = NULL;
    dprl_pe_config_free(c);
  }
  return rc;
}

void dprl_pe_config_free(dprl_pe_config *c) {
  dprl_free(c->budget);
  c->budget = NULL;
  dprl_features_free(&c->feat);
  dprl_free(c->w);
  c->w = NULL;
}

/* ---- the release ------------------------------------------------------- */

typedef struct pe_result {
  /* public: from the options and m only (§6) */
  double sigma_hi, theta_max, grid;
  /* data-dependent: diagnostics only (§5) */
  double psi, sigma, sigma_applied;
  uint64_t steps;
  double *theta_exact, *theta, *values; /* d, d, n */
  /* statistics perturbation (§9): public noise, noisy statistics and what
  ** is computed from them (n each) */
  dprl_sp_params sp;
  dprl_sp_noise nz;
  double *nsum, *nvisits, *mean, *se, *count;
} pe_result;

/* The public bounds and the grid, from the options and m alone (§6).  Any
** refusal here depends on nothing else, and its text names only those. */
static int pe_public(const dprl_pe_config *c, int64_t m, pe_result *r, dprl_error *err) {
  double B = dprl_return_bound(&c->rule);
  if (c->mech == DPRL_LSW) { /* §2: phi(k) <= sum w */
    double wsum = 0;
    for (int64_t s = 0; s < c->n_states; s++) wsum += c->w[s];
    r->theta_max = B * sqrt(wsum) / c->min_sv; /* ||theta_w|| <= ||pinv|| ||Gamma^1/2 F|| */
    r->sigma_hi = c->alpha * r->theta_max;
  } else { /* §3: phi(k) <= phi(m) */
    double gap = c->lambda - c->phi_norm * c->phi_norm * c->rho_inf;
    double c_lambda = c->phi_norm * c->rho_inf / sqrt(2.0 * c->lambda);
    double top = c_lambda * sqrt((double)m * c->rho_sum) + c->rho_l2;
    double mm = (double)m;
    r->sigma_hi = 2.0 * c->alpha * B * c->phi_norm * top / gap;
    /* ||theta_l|| <= ||A^-1|| ||Phi^T Gamma_X F|| <= (2m/lambda) ||Phi|| B ||rho||_2,
    ** and from the objective at 0: ||theta_l||^2 <= (2m/lambda) B^2 sum rho. */
    double t1 = 2.0 * mm * c->phi_norm * B * c->rho_l2 / c->lambda;
    double t2 = B * sqrt(2.0 * mm * c->rho_sum / c->lambda);
    r->theta_max = t1 < t2 ? t1 : t2;
  }
  if (!(isfinite(r->sigma_hi) && r->sigma_hi > 0 && isfinite(r->theta_max)))
    return dprl_fail(err, DPRL_EINVAL,
                     "%s: the public bound on sigma is not a positive finite number "
                     "(%.17g) for these options and %lld episodes",
                     c->fn, r->sigma_hi, (long long)m);
  r->grid = dprl_grid_bits(r->sigma_hi, SIGMA_BITS);
  if (r->theta_max > 0) {
    double gt = dprl_grid_bits(r->theta_max, THETA_BITS);
    if (gt > r->grid) r->grid = gt;
  }
  /* every released g (k + z), |k + z| < 2^53, must be a finite double */
  if (!isfinite(ldexp(r->grid, 53)))
    return dprl_fail(err, DPRL_EINVAL,
                     "%s: the public bounds on sigma (%.17g) and theta (%.17g) are too "
                     "large for a double grid",
                     c->fn, r->sigma_hi, r->theta_max);
  return DPRL_OK;
}

static double clampd(double x, double lo, double hi) {
  return x < lo ? lo : x > hi ? hi : x;
}

/* Values are post-processing of theta: clamped to the public return range. */
static int pe_values(const dprl_pe_config *c, pe_result *r, dprl_error *err) {
  int rc = dprl_features_apply(&c->feat, r->theta, r->values, c->cancel, err);
  for (int64_t s = 0; s < c->n_states && !rc; s++) {
    rc = dprl_cancel_poll(c->cancel, 2, err);
    r->values[s] = clampd(r->values[s], c->rule.fmin, c->rule.fmax);
  }
  return rc;
}

/* The noise scale of the output perturbation for these counts: the public
** bounds and grid (pe_public), psi, sigma and the whole grid steps s. */
static int pe_scale(const dprl_pe_config *c, const int64_t *visits, int64_t m,
                    pe_result *r, dprl_error *err) {
  double B = dprl_return_bound(&c->rule);
  int rc = pe_public(c, m, r, err);
  if (rc) return rc;
  if (c->mech == DPRL_LSW) { /* §2 */
    rc = dprl_psi_lsw(visits, c->w, c->n_states, c->beta_psi, c->cancel, &r->psi, err);
    if (!rc) r->sigma = c->alpha * B * sqrt(r->psi) / c->min_sv;
  } else { /* §3 */
    double gap = c->lambda - c->phi_norm * c->phi_norm * c->rho_inf;
    double c_lambda = c->phi_norm * c->rho_inf / sqrt(2.0 * c->lambda);
    rc = dprl_psi_lsl(visits, c->w, c->n_states, m, c->beta_psi, c_lambda, c->cancel, &r->psi,
                      err);
    if (!rc) r->sigma = 2.0 * c->alpha * B * c->phi_norm * sqrt(r->psi) / gap;
  }
  if (rc) return rc;
  /* sigma <= sigma_hi holds exactly; the clamp only absorbs rounding (§6).
  ** s = c + ceil(sigma / g) whole grid steps, s g >= sigma + c g; the
  ** allowance c g >= alpha sqrt(d) g covers rounding theta to the grid, and
  ** psi used beta_psi so that the ceiling keeps Lemma 1(b). */
  r->sigma = clampd(r->sigma, 0.0, r->sigma_hi);
  r->steps = (uint64_t)c->grid_c + (uint64_t)ceil(r->sigma / r->grid);
  r->sigma_applied = (double)r->steps * r->grid;
  return DPRL_OK;
}

int dprl_pe_output_scale(const dprl_pe_config *c, const int64_t *visits, int64_t m,
                         double *sigma_applied, dprl_error *err) {
  pe_result r;
  memset(&r, 0, sizeof r);
  int rc = pe_scale(c, visits, m, &r, err);
  if (!rc) *sigma_applied = r.sigma_applied;
  return rc;
}

static int pe_compute(const dprl_pe_config *c, const dprl_fv_stats *st,
                      dprl_rng *rng, pe_result *r, dprl_error *err) {
  int64_t d = c->feat.d;
  /* Any refusal comes from pe_public (options and m only).  After it
  ** nothing may fail because of the data: the estimators and psi fail only
  ** for want of memory, and every quantity handed to the sampler is kept
  ** inside the public bounds checked there. */
  int rc = pe_scale(c, st->visits, st->m, r, err);
  if (rc) return rc;
  if (c->mech == DPRL_LSW)
    rc = dprl_lsw_theta(&c->feat, c->w, st, r->theta_exact, c->cancel, err);
  else
    rc = dprl_lsl_theta(&c->feat, c->w, c->lambda, st, r->theta_exact, c->cancel, err);
  if (rc) return rc;
  /* |theta_j| <= theta_max holds exactly; the clamp only absorbs rounding
  ** (1-Lipschitz, keeps beta-smoothness, §6). */
  for (int64_t j = 0; j < d && !rc; j++) {
    rc = dprl_cancel_poll(c->cancel, 2, err);
    r->theta_exact[j] = clampd(r->theta_exact[j], -r->theta_max, r->theta_max);
  }
  for (int64_t j = 0; j < d && !rc; j++)
    if (!(rc = dprl_cancel_poll(c->cancel, 2000, err)))
      rc = dprl_release_gaussian_steps(rng, r->theta_exact[j], r->steps, r->grid,
                                       &r->theta[j], err);
  if (!rc) rc = pe_values(c, r, err);
  return rc;
}

/* §9: noise on (centred sums, c visits), then the estimator on the noisy
** means and counts.  The noise is public; nothing here can fail on data. */
static int pe_compute_stats(const dprl_pe_config *c, const dprl_fv_stats *st,
                            dprl_rng *rng, pe_result *r, dprl_error *err) {
  dprl_sp_params p = {c->epsilon, c->delta, c->rule.fmin, c->rule.fmax, c->n_states,
                      c->rule.max_states, st->m > 0 ? st->m : 1};
  r->sp = p;
  int rc = dprl_sp_calibrate(&r->sp, &r->nz, err);
  if (!rc) rc = dprl_sp_perturb(&r->sp, &r->nz, st, rng, c->cancel, r->nsum, r->nvisits, err);
  if (!rc) rc = dprl_sp_estimate(&r->sp, &r->nz, r->nsum, r->nvisits, r->mean, r->se,
                                 r->count, c->cancel, err);
  if (rc) return rc;
  dprl_cancel *k = c->cancel;
  if (c->mech == DPRL_LSW) {
    rc = dprl_lsw_theta_means(&c->feat, c->w, r->mean, r->theta, k, err);
    if (!rc && c->diagnostic) rc = dprl_lsw_theta(&c->feat, c->w, st, r->theta_exact, k, err);
  } else {
    rc = dprl_lsl_theta_means(&c->feat, c->w, c->lambda, r->mean, r->count, (double)st->m,
                              r->theta, k, err);
    if (!rc && c->diagnostic)
      rc = dprl_lsl_theta(&c->feat, c->w, c->lambda, st, r->theta_exact, k, err);
  }
  if (!rc) rc = pe_values(c, r, err);
  return rc;
}

static void put_key(dprl_buf *b, const char *k) {
  dprl_buf_puts(b, ",");
  dprl_json_put_string(b, k);
  dprl_buf_puts(b, ":");
}

/* Arrays of n numbers, asking whether to stop every few thousand (a
** result of 2e7 values takes seconds to write). */
static void put_doubles(const dprl_pe_config *c, dprl_buf *b, const double *x, size_t n,
                        dprl_error *err) {
  dprl_json_put_double_array_polled(b, x, n, c->cancel, err);
}

static void put_ints(const dprl_pe_config *c, dprl_buf *b, const int64_t *x, size_t n,
                     dprl_error *err) {
  dprl_buf_puts(b, "[");
  for (size_t i = 0; i < n; i++) {
    dprl_buf_printf(b, i ? ",%lld" : "%lld", (long long)x[i]);
    if (dprl_cancel_poll(c->cancel, 100, err)) break;
  }
  dprl_buf_puts(b, "]");
}

/* The exact mean returns F_X(s) (diagnostic only: not private). */
static void put_returns(const dprl_pe_config *c, const dprl_fv_stats *st, dprl_buf *b,
                        dprl_error *err) {
  put_key(b, "returns");
  dprl_buf_puts(b, "[");
  for (int64_t s = 0; s < c->n_states; s++) {
    if (s) dprl_buf_puts(b, ",");
    dprl_json_put_double(b, dprl_fv_mean(st, s));
    if (dprl_cancel_poll(c->cancel, 150, err)) break;
  }
  dprl_buf_puts(b, "]");
}

static int pe_json(const dprl_pe_config *c, const dprl_fv_stats *st,
                   const pe_result *r, dprl_buf *b, dprl_error *err) {
  static const char *const calibs[] = {"nrs", "elementary"};
  /* The mechanism, not the SQL name: the statistics form releases the same. */
  dprl_buf_puts(b, c->mech == DPRL_LSW ? "{\"mechanism\":\"dp_lsw\""
                                       : "{\"mechanism\":\"dp_lsl\"");
  /* A seeded release is reproducible, hence not private (§6). */
  dprl_buf_printf(b, ",\"private\":%s", c->diagnostic || c->has_seed ? "false" : "true");
  if (c->has_seed) dprl_buf_puts(b, ",\"seeded\":true");
  /* the unit of privacy: neighbours replace one episode (ALGORITHMS.md §1) */
  dprl_buf_puts(b, ",\"unit\":\"episode\"");
  put_key(b, "epsilon");
  dprl_json_put_double(b, c->epsilon);
  put_key(b, "delta");
  dprl_json_put_double(b, c->delta);
  dprl_buf_printf(b, ",\"n_states\":%lld,\"d\":%lld,\"episodes\":%lld",
                  (long long)c->n_states, (long long)c->feat.d, (long long)st->m);
  if (c->perturb == DPRL_PERTURB_STATISTICS) {
    dprl_buf_puts(b, ",\"perturb\":\"statistics\"");
    if (c->rule.max_states > 0)
      dprl_buf_printf(b, ",\"max_states\":%lld", (long long)c->rule.max_states);
  } else {
    dprl_buf_printf(b, ",\"calibration\":\"%s\"", calibs[c->calib]);
  }
  put_key(b, "theta");
  put_doubles(c, b, r->theta, (size_t)c->feat.d, err);
  put_key(b, "values");
  put_doubles(c, b, r->values, (size_t)c->n_states, err);
  if (c->perturb == DPRL_PERTURB_STATISTICS) {
    /* §9: sigma is public here, the noisy visits are the release itself and
    ** the standard errors are computed from them: all private to publish. */
    put_key(b, "sigma");
    dprl_json_put_double(b, r->nz.sigma);
    put_key(b, "visits");
    put_doubles(c, b, r->nvisits, (size_t)c->n_states, err);
    put_key(b, "se");
    put_doubles(c, b, r->se, (size_t)c->n_states, err);
    if (c->diagnostic) {
      put_key(b, "theta_exact");
      put_doubles(c, b, r->theta_exact, (size_t)c->feat.d, err);
      put_key(b, "exact_visits");
      put_ints(c, b, st->visits, (size_t)c->n_states, err);
      put_returns(c, st, b, err);
    }
  } else if (c->diagnostic) { /* data-dependent: NOT covered by the guarantee (§5) */
    put_key(b, "theta_exact");
    put_doubles(c, b, r->theta_exact, (size_t)c->feat.d, err);
    put_key(b, "sigma");
    dprl_json_put_double(b, r->sigma);
    put_key(b, "sigma_applied");
    dprl_json_put_double(b, r->sigma_applied);
    put_key(b, "grid");
    dprl_json_put_double(b, r->grid);
    dprl_buf_printf(b, ",\"grid_steps\":%llu", (unsigned long long)r->steps);
    put_key(b, "grid_allowance");
    dprl_json_put_double(b, c->grid_c);
    put_key(b, "sigma_hi");
    dprl_json_put_double(b, r->sigma_hi);
    put_key(b, "psi");
    dprl_json_put_double(b, r->psi);
    put_key(b, "alpha");
    dprl_json_put_double(b, c->alpha);
    put_key(b, "beta");
    dprl_json_put_double(b, c->beta);
    put_key(b, "beta_psi");
    dprl_json_put_double(b, c->beta_psi);
    put_key(b, "visits");
    put_ints(c, b, st->visits, (size_t)c->n_states, err);
    put_returns(c, st, b, err);
  }
  dprl_buf_puts(b, "}");
  return c->cancel && c->cancel->stopped ? err->code : DPRL_OK;
}

int dprl_pe_release(const dprl_pe_config *c, const dprl_fv_stats *st,
                    dprl_buf *out, dprl_error *err) {
  int64_t d = c->feat.d;
  pe_result r = {0};
  dprl_rng rng;
  int rc;
  if (c->has_seed) dprl_rng_init_seeded(&rng, c->seed, c->mech == DPRL_LSW ? DPRL_STREAM_LSW : DPRL_STREAM_LSL);
  else if ((rc = dprl_rng_init_secure(&rng, err))) return rc;
  int stats = c->perturb == DPRL_PERTURB_STATISTICS;
  size_t n = (size_t)c->n_states;
  /* Every array is written before it is read: no zeroing (at 10^7 states
  ** zeroing is a long loop with no chance to stop). */
  double *mem = dprl_malloc((2 * (size_t)d + (stats ? 6 : 1) * n) * sizeof *mem);
  if (!mem) {
    dprl_rng_wipe(&rng);
    return dprl_nomem(err);
  }
  r.theta_exact = mem;
  r.theta = mem + d;
  r.values = mem + 2 * d;
  if (stats) {
    r.nsum = r.values + n;
    r.nvisits = r.nsum + n;
    r.mean = r.nvisits + n;
    r.se = r.mean + n;
    r.count = r.se + n;
    rc = pe_compute_stats(c, st, &rng, &r, err);
  } else {
    rc = pe_compute(c, st, &rng, &r, err);
  }
  if (!rc) {
    /* Most numbers print in 20 bytes or fewer: one allocation instead of a
    ** doubling chain (whose copies of hundreds of megabytes could not be
    ** interrupted).  The length limit caps the guess; failing is harmless. */
    size_t per = 1 + (stats ? 2 : 0) + (c->diagnostic ? 3 : 0);
    size_t guess = 4096 + 20 * (2 * (size_t)d + per * n);
    if (c->length_limit > 0 && guess > (size_t)c->length_limit) guess = (size_t)c->length_limit;
    dprl_buf_reserve(out, guess);
    rc = pe_json(c, st, &r, out, err);
    if (!rc && out->oom) rc = dprl_nomem(err);
  }
  dprl_rng_wipe(&rng);
  dprl_free(mem);
  return rc;
}
