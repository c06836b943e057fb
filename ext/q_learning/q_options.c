/*
** q_options.c: the options of the dp_q_* functions (see q_options.h).
**
**   SELECT dp_q_learn(s, a, r, s_next,
**     '{"n_actions": 2, "gamma": 0.9, "rmin": 0, "rmax": 1, "lr": 3e-4, "T": 5000, "B": 64,
**       "k": 60, "epsilon": 1, "delta": 1e-5}') FROM transitions;
**   -- the options text -> dprl_q_learn_options -> dprl_q_learn_cfg
*/
#include "q_learning/q_options.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/json.h"

const char *const dprl_q_feature_names[] = {"tent", "rbf", NULL};
static const char *const acc_choices[] = {"proof", "gdp", "paper", NULL};
const char *const dprl_q_neighbour_names[] = {"range", "unit", NULL};
static const char *const units[] = {"reward function", "unit reward change"};
static const char *const relations[] = {
    "two logs of the same transitions (s, a, s') whose rewards, clamped to [rmin, rmax], may "
    "all differ, each by up to rmax - rmin",
    "two logs of the same transitions (s, a, s') whose rewards, clamped to [rmin, rmax], may "
    "all differ, each by at most 1 (||r - r'||_inf <= 1, Wang & Hegde 2019); rewards that "
    "differ by more are not covered"};

const char *const dprl_q_reuse_note =
    "J < T/B reuses a noise path over several batches; the accountant composes T/B "
    "batches with a fresh path each, so this run is not covered";

/* An integer option in [lo, hi], the bounds printed as integers
** ("must be in [1, 1000000000]", never "1e+09"). */
static int opt_count(const dprl_options *o, const char *key, int required, int64_t dflt,
                     int64_t lo, int64_t hi, int64_t *out) {
  int64_t v;
  int rc = dprl_opt_int(o, key, required, dflt, DPRL_ANY, &v);
  if (rc) return rc;
  if (dprl_opt_has(o, key) && (v < lo || v > hi))
    return dprl_fail(o->err, DPRL_EINVAL, "%s: option %s must be in [%lld, %lld], got %lld",
                     o->fn, key, (long long)lo, (long long)hi, (long long)v);
  *out = v;
  return DPRL_OK;
}

/* ---- calibration inputs (shared by the three functions) ---------------- */

int dprl_q_read_schedule(const dprl_options *o, dprl_q_cal *c) {
  int rc = opt_count(o, "T", 1, 0, 1, DPRL_Q_MAX_STEPS, &c->T);
  if (!rc) rc = opt_count(o, "B", 1, 0, 1, DPRL_Q_MAX_STEPS, &c->B);
  if (!rc && c->B > c->T)
    return dprl_fail(o->err, DPRL_EINVAL, "%s: option B must be <= T = %lld, got %lld",
                     o->fn, (long long)c->T, (long long)c->B);
  if (!rc) rc = opt_count(o, "J", 0, c->T / c->B, 1, DPRL_Q_MAX_STEPS, &c->J);
  return rc;
}

int dprl_q_read_approximator(const dprl_options *o, int K_required, dprl_q_cal *c) {
  int kind = 0;
  int64_t K = 21;
  int rc = dprl_opt_choice(o, "features", dprl_q_feature_names, 0, &kind);
  if (!rc) rc = opt_count(o, "K", K_required, 21, 2, DPRL_Q_MAX_K, &K);
  if (!rc) rc = dprl_opt_reward_bounds(o, &c->rmin, &c->rmax);
  c->feat.kind = kind ? DPRL_QFEAT_RBF : DPRL_QFEAT_TENT;
  c->feat.K = (int)K;
  return rc;
}

/* Without dp_q_learn's approximator: L, or K (features, rmin, rmax) to
** compute it, exactly one of the two. */
static int read_L_or_approximator(const dprl_options *o, dprl_q_cal *c) {
  int has_L = dprl_opt_has(o, "L");
  int has_approx = dprl_opt_has(o, "K") || dprl_opt_has(o, "features") ||
                   dprl_opt_has(o, "rmin") || dprl_opt_has(o, "rmax");
  if (has_L && has_approx)
    return dprl_fail(o->err, DPRL_EINVAL,
                     "%s: give option L or the approximator it is computed from "
                     "(K, features, rmin, rmax), not both", o->fn);
  if (!has_L && !has_approx)
    return dprl_fail(o->err, DPRL_EINVAL,
                     "%s: option L is required (or K, to compute L for dp_q_learn's "
                     "approximator)", o->fn);
  if (has_L) return dprl_opt_number(o, "L", 1, 0, DPRL_POSITIVE, &c->L);
  int rc = dprl_q_read_approximator(o, 1, c);
  if (!rc) c->L_computed = 1;
  return rc;
}

int dprl_q_read_privacy(const dprl_options *o, int learn, dprl_q_cal *c) {
  int rc = dprl_opt_number(o, "epsilon", 1, 0, DPRL_POSITIVE, &c->epsilon);
  if (!rc) rc = dprl_opt_number(o, "delta", 1, 0, DPRL_OPEN(0, 1), &c->delta);
  if (!rc) rc = dprl_q_read_schedule(o, c);
  if (!rc) rc = dprl_opt_number(o, "lr", 1, 0, DPRL_POSITIVE, &c->lr);
  if (!rc) rc = dprl_opt_number(o, "k", 1, 0, DPRL_POSITIVE, &c->k);
  if (!rc) rc = dprl_opt_choice(o, "accountant", acc_choices, DPRL_QACC_GDP, &c->acc);
  if (!rc) rc = dprl_opt_choice(o, "neighbours", dprl_q_neighbour_names, DPRL_QNB_RANGE, &c->nb);
  if (rc) return rc;
  if (learn) c->L_computed = 1;
  else if ((rc = read_L_or_approximator(o, c)) || !c->L_computed) return rc;
  /* L is a property of the features on the rescaled interval [0, 1]. */
  dprl_q_features unit = c->feat;
  unit.lo = 0;
  unit.hi = 1;
  return dprl_q_sensitivity_L(&unit, c->lr, c->k, (double)c->B, c->rmin, c->rmax,
                              (dprl_q_neighbours)c->nb, &c->L, o->err);
}

int dprl_q_read_interval(const dprl_options *o, double *lo, double *hi) {
  int rc = dprl_opt_number(o, "lo", 0, 0, DPRL_ANY, lo);
  if (!rc) rc = dprl_opt_number(o, "hi", 0, 1, DPRL_ANY, hi);
  if (!rc && !(*hi > *lo)) {
    char a[32], b[32];
    return dprl_fail(o->err, DPRL_EINVAL, "%s: option hi must be > lo = %s, got %s", o->fn,
                     dprl_json_num(*lo, a, sizeof a), dprl_json_num(*hi, b, sizeof b));
  }
  return rc;
}

int dprl_q_cal_run(const char *fn, dprl_q_cal *c, dprl_error *err) {
  dprl_q_calib_in in = {c->epsilon, c->delta, (double)c->T, (double)c->B, c->lr, c->k,
                        c->L, (double)c->J, (dprl_q_accountant)c->acc};
  int rc = dprl_q_calibrate(&in, &c->out, err);
  if (rc) return rc;
  if (!(c->out.delta_total < 1))
    return dprl_fail(err, DPRL_EINVAL,
                     "%s: no privacy guarantee: delta_total = delta + J exp(-(2k - 8.68 "
                     "sqrt(beta) sigma)^2 / 2) = %g >= 1 (J = %lld, 2k - 8.68 sqrt(beta) "
                     "sigma = %g); raise k",
                     fn, c->out.delta_total, (long long)c->J, c->out.margin);
  return DPRL_OK;
}

int dprl_q_fresh_paths(const dprl_q_cal *c) { return c->J >= c->T / c->B; }

void dprl_q_put_calibration(dprl_buf *b, const dprl_q_cal *c) {
  dprl_json_put_num(b, "sigma", c->out.sigma);
  dprl_json_put_num(b, "beta", c->out.beta);
  dprl_json_put_num(b, "delta_total", c->out.delta_total);
  dprl_json_put_key(b, "accountant");
  dprl_json_put_string(b, c->out.accountant);
  dprl_buf_printf(b, ",\"proven\":%s", c->out.proven ? "true" : "false");
  dprl_json_put_num(b, "epsilon", c->epsilon);
  dprl_json_put_num(b, "delta", c->delta);
  dprl_q_put_schedule(b, c->T, c->B, c->J, c->lr);
  dprl_q_put_constants(b, c);
}

const char *dprl_q_unit(int nb) { return units[nb == DPRL_QNB_UNIT]; }

void dprl_q_put_relation(dprl_buf *b, int nb) {
  dprl_json_put_key(b, "unit");
  dprl_json_put_string(b, dprl_q_unit(nb));
  dprl_json_put_key(b, "neighbours");
  dprl_json_put_string(b, dprl_q_neighbour_names[nb == DPRL_QNB_UNIT]);
  dprl_json_put_key(b, "relation");
  dprl_json_put_string(b, relations[nb == DPRL_QNB_UNIT]);
}

void dprl_q_put_schedule(dprl_buf *b, int64_t T, int64_t B, int64_t J, double lr) {
  dprl_json_put_int(b, "T", T);
  dprl_json_put_int(b, "B", B);
  dprl_json_put_int(b, "J", J);
  dprl_json_put_num(b, "lr", lr);
}

void dprl_q_put_constants(dprl_buf *b, const dprl_q_cal *c) {
  dprl_json_put_num(b, "k", c->k);
  dprl_json_put_num(b, "L", c->L);
  dprl_json_put_num(b, "v", c->out.v);
  dprl_json_put_num(b, "C", c->out.C);
  dprl_json_put_num(b, "mu", c->out.mu);
  dprl_json_put_num(b, "margin", c->out.margin);
}

/* With sigma given, none of keys (calibration inputs) may be. */
static int refuse_calibration(const dprl_options *o, const char *const *keys,
                              const char *advice) {
  for (const char *const *k = keys; *k; k++)
    if (dprl_opt_has(o, *k))
      return dprl_fail(o->err, DPRL_EINVAL, "%s: option %s is a calibration input; %s", o->fn,
                       *k, advice);
  return DPRL_OK;
}

/* Without sigma, beta is calibrated too: giving it alone is an error. */
static int beta_needs_sigma(const dprl_options *o, const char *source) {
  if (!dprl_opt_has(o, "beta")) return DPRL_OK;
  return dprl_fail(o->err, DPRL_EINVAL,
                   "%s: option beta goes with sigma; without sigma both come from the %s",
                   o->fn, source);
}

int dprl_q_check_state(double s, double lo, double hi, const char *what, dprl_error *err) {
  if (s >= lo && s <= hi) return DPRL_OK;
  char a[32], b[32], c[32];
  return dprl_fail(err, DPRL_EINVAL, "%s must be in [lo, hi] = [%s, %s], got %s", what,
                   dprl_json_num(lo, a, sizeof a), dprl_json_num(hi, b, sizeof b),
                   dprl_json_num(s, c, sizeof c));
}

int dprl_q_check_action(int64_t a, int64_t n_actions, const char *what, dprl_error *err) {
  if (a >= 0 && a < n_actions) return DPRL_OK;
  return dprl_fail(err, DPRL_EINVAL, "%s must be in 0..n_actions-1 = 0..%lld, got %lld", what,
                   (long long)n_actions - 1, (long long)a);
}

/* ---- dp_q_calibrate ------------------------------------------------------- */

static const char *const cal_keys[] = {"epsilon", "delta", "T",        "B", "lr",
                                       "k",       "L",     "J",        "accountant",
                                       "K",       "features", "rmin", "rmax", "neighbours",
                                       NULL};

int dprl_q_calibrate_options(const char *text, size_t len, dprl_q_cal *c, dprl_error *err) {
  const char *fn = "dp_q_calibrate";
  dprl_options o;
  memset(c, 0, sizeof *c);
  int rc = dprl_options_open(&o, fn, text, len, cal_keys, err);
  if (!rc) rc = dprl_q_read_privacy(&o, 0, c);
  dprl_options_close(&o);
  if (!rc) rc = dprl_q_cal_run(fn, c, err);
  return rc;
}

/* ---- dp_q_noise ----------------------------------------------------------- */

static const char *const noise_keys[] = {
    "n_actions", "lo", "hi",         "path", "seed", "sigma",    "beta", "epsilon", "delta",
    "T",         "B",  "lr",         "k",    "L",    "J",        "accountant",     "K",
    "features",  "rmin", "rmax",     "neighbours", "budget", NULL};

/* Keys that only calibration reads: refused when sigma and beta are given. */
static const char *const calib_only_keys[] = {"epsilon", "delta", "T", "B", "lr", "k", "L",
                                              "J", "accountant", "K", "features", "rmin",
                                              "rmax", "neighbours", NULL};

static int read_path(const dprl_options *o, dprl_q_noise_cfg *c) {
  if (!dprl_opt_has(o, "path")) return DPRL_OK;
  const dprl_json *p = dprl_opt_get(o, "path");
  if (p->type != DPRL_JSON_STRING || p->n == 0 || strlen(p->str) != p->n) {
    char got[64];
    dprl_json_describe(p, got, sizeof got);
    return dprl_fail(o->err, DPRL_EINVAL, "%s: option path must be a table name, got %s",
                     o->fn, got);
  }
  if (!(c->path = dprl_malloc(p->n + 1))) return dprl_nomem(o->err);
  memcpy(c->path, p->str, p->n + 1);
  return DPRL_OK;
}

/* sigma and beta given: no calibration input may be. */
static int read_noise_level(const dprl_options *o, dprl_q_noise_cfg *c) {
  int rc = refuse_calibration(o, calib_only_keys,
                              "give either sigma and beta, or the calibration inputs, not both");
  if (!rc) rc = dprl_opt_number(o, "sigma", 1, 0, DPRL_POSITIVE, &c->sigma);
  if (!rc) rc = dprl_opt_number(o, "beta", 1, 0, DPRL_POSITIVE, &c->beta);
  return rc;
}

/* sigma and beta from the calibration inputs (Theorem 5). */
static int calibrate_noise(const dprl_options *o, dprl_q_noise_cfg *c) {
  int rc = beta_needs_sigma(o, "calibration inputs");
  if (!rc) rc = dprl_q_read_privacy(o, 0, &c->cal);
  if (!rc && c->cal.acc == DPRL_QACC_PAPER)
    rc = dprl_fail(o->err, DPRL_EINVAL,
                   "%s: accountant \"paper\" has no privacy guarantee (the printed formula "
                   "of Theorem 5); use it with dp_q_calibrate or dp_q_learn to compare", o->fn);
  if (!rc) rc = dprl_q_cal_run(o->fn, &c->cal, o->err);
  if (!rc) {
    c->sigma = c->cal.out.sigma;
    c->beta = c->cal.out.beta;
  }
  return rc;
}

int dprl_q_noise_read(const dprl_options *o, dprl_q_noise_cfg *c) {
  memset(c, 0, sizeof *c);
  int rc = opt_count(o, "n_actions", 1, 0, 1, DPRL_Q_NOISE_MAX_ACTIONS, &c->n_actions);
  if (!rc) rc = dprl_q_read_interval(o, &c->lo, &c->hi);
  if (!rc) rc = dprl_opt_seed(o, &c->has_seed, &c->seed);
  if (!rc) rc = read_path(o, c);
  if (!rc) rc = dprl_opt_name(o, "budget", &c->budget);
  if (!rc) rc = dprl_opt_has(o, "sigma") ? read_noise_level(o, c) : calibrate_noise(o, c);
  if (!rc) c->grid = dprl_grid_for(c->sigma);
  return rc;
}

int dprl_q_noise_options(const char *text, size_t len, dprl_q_noise_cfg *c, dprl_error *err) {
  dprl_options o;
  memset(c, 0, sizeof *c);
  int rc = dprl_options_open(&o, "dp_q_noise", text, len, noise_keys, err);
  if (!rc) rc = dprl_q_noise_read(&o, c);
  dprl_options_close(&o);
  return rc;
}

void dprl_q_noise_cfg_free(dprl_q_noise_cfg *c) {
  dprl_free(c->path);
  dprl_free(c->budget);
  c->path = c->budget = NULL;
}

void dprl_q_learn_cfg_free(dprl_q_learn_cfg *c) {
  dprl_free(c->budget);
  c->budget = NULL;
}

/* ---- dp_q_learn ----------------------------------------------------------- */

static const char *const learn_keys[] = {
    "n_actions", "gamma", "lr",      "T",     "B",          "J",     "K",
    "features",  "lo",    "hi",      "rmin",  "rmax",       "k",     "epsilon",
    "delta",     "accountant", "neighbours", "sigma", "beta", "seed", "budget", NULL};

/* sigma (and beta) given: no calibration, no noise on theta. */
static int learn_explicit(const dprl_options *o, dprl_q_learn_cfg *c) {
  static const char *const calib_keys[] = {"epsilon", "delta", "k", "accountant", "neighbours",
                                           NULL};
  c->explicit_sigma = 1;
  int rc = refuse_calibration(o, calib_keys,
                              "give either sigma (and beta) or epsilon, delta and k, not both");
  if (!rc) rc = dprl_q_read_schedule(o, &c->cal);
  if (!rc) rc = dprl_opt_number(o, "lr", 1, 0, DPRL_POSITIVE, &c->cal.lr);
  if (!rc) rc = dprl_opt_number(o, "sigma", 1, 0, DPRL_NONNEG, &c->lo.sigma);
  if (!rc) rc = dprl_opt_number(o, "beta", c->lo.sigma > 0, 1, DPRL_POSITIVE, &c->lo.beta);
  return rc;
}

/* The paths from Theorem 5; theta's own noise on every update, from public
** values only (Theorem 5 covers Q + g, not theta: ALGORITHMS.md §10). */
static int learn_calibrated(const dprl_options *o, int64_t m, dprl_q_learn_cfg *c) {
  int rc = beta_needs_sigma(o, "calibration");
  if (!rc) rc = dprl_q_read_privacy(o, 1, &c->cal);
  if (!rc) rc = dprl_q_cal_run(o->fn, &c->cal, o->err);
  if (rc) return rc;
  c->lo.sigma = c->cal.out.sigma;
  c->lo.beta = c->cal.out.beta;
  /* the rounding of the rewards' part is relative to rmax - rmin, the
  ** sensitivity to the relation's change dr (q_calibrate.h) */
  double range = c->cal.rmax - c->cal.rmin;
  double dr = dprl_q_reward_change((dprl_q_neighbours)c->cal.nb, c->cal.rmin, c->cal.rmax);
  double sens = dprl_q_theta_sensitivity(&c->cal.feat, c->cal.lr, dr);
  double slack = DPRL_Q_FP_SLACK * fmax(1.0, range / dr);
  dprl_error terr = {0};
  if (dprl_q_theta_calibrate(c->cal.epsilon, c->cal.delta, c->cal.T / c->cal.B, sens, slack,
                             c->cal.lr, (size_t)m * (size_t)c->cal.feat.K, &c->th, &terr))
    return dprl_fail(o->err, terr.code, "%s: %s", o->fn, terr.msg);
  c->lo.sigma_theta = c->th.sigma;
  c->lo.grid_theta = c->th.grid;
  return DPRL_OK;
}

/* What dp_q_learn holds and returns must fit: n_actions * K numbers in
** the result, n_actions * B noise values (8 bytes) and 2B path queries
** (16 bytes) of a batch each in one allocation. */
static int learn_sizes(const dprl_options *o, int64_t m, int64_t K, int64_t B,
                       int64_t max_result) {
  int64_t bytes = max_result < DPRL_Q_MAX_RESULT ? max_result : DPRL_Q_MAX_RESULT;
  int64_t K_max = (bytes - DPRL_Q_RESULT_FIXED - 3 * m) / (DPRL_Q_BYTES_PER_NUMBER * m);
  int64_t B_max = (int64_t)(DPRL_MAX_ALLOC / (8 * (size_t)(m > 4 ? m : 4)));
  if (K > K_max)
    return dprl_fail(o->err, DPRL_EINVAL,
                     "%s: option K must be <= %lld with n_actions = %lld (the result holds "
                     "n_actions * K numbers of up to %d bytes, within %lld bytes: SQLite's "
                     "length limit), got %lld",
                     o->fn, (long long)K_max, (long long)m, DPRL_Q_BYTES_PER_NUMBER,
                     (long long)bytes, (long long)K);
  if (B > B_max)
    return dprl_fail(o->err, DPRL_EINVAL,
                     "%s: option B must be <= %lld with n_actions = %lld (a batch keeps "
                     "n_actions * B noise values of 8 bytes, and 2B queries of 16 bytes, each "
                     "in one allocation of at most %lld bytes), got %lld",
                     o->fn, (long long)B_max, (long long)m, (long long)DPRL_MAX_ALLOC,
                     (long long)B);
  return DPRL_OK;
}

int dprl_q_learn_options(const char *text, size_t len, int64_t max_result, dprl_q_learn_cfg *c,
                         dprl_error *err) {
  dprl_options o;
  memset(c, 0, sizeof *c);
  int rc = dprl_options_open(&o, "dp_q_learn", text, len, learn_keys, err);
  if (!rc) rc = dprl_q_learn_read(&o, max_result, c);
  dprl_options_close(&o);
  return rc;
}

int dprl_q_learn_read(const dprl_options *o, int64_t max_result, dprl_q_learn_cfg *c) {
  int64_t m = 0;
  memset(c, 0, sizeof *c);
  int rc = opt_count(o, "n_actions", 1, 0, 1, DPRL_Q_LEARN_MAX_ACTIONS, &m);
  if (!rc) rc = dprl_opt_number(o, "gamma", 1, 0, DPRL_CLOSED_OPEN(0, 1), &c->lo.gamma);
  if (!rc) rc = dprl_q_read_interval(o, &c->cal.feat.lo, &c->cal.feat.hi);
  if (!rc) rc = dprl_q_read_approximator(o, 0, &c->cal);
  if (!rc) rc = dprl_opt_seed(o, &c->has_seed, &c->seed);
  if (!rc) rc = dprl_opt_name(o, "budget", &c->budget);
  if (!rc) rc = dprl_opt_has(o, "sigma") ? learn_explicit(o, c) : learn_calibrated(o, m, c);
  if (!rc) rc = learn_sizes(o, m, c->cal.feat.K, c->cal.B, max_result);
  c->lo.feat = c->cal.feat;
  c->lo.m = (int)m;
  c->lo.lr = c->cal.lr;
  c->lo.T = c->cal.T;
  c->lo.B = c->cal.B;
  c->lo.J = c->cal.J;
  c->lo.rmin = c->cal.rmin;
  c->lo.rmax = c->cal.rmax;
  return rc;
}
