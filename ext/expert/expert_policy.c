/*
** expert_policy.c: dp_expert_policy's options, calibration and release
** (expert_policy.h, ALGORITHMS.md §16).  The tallies come from tally.c.
*/
#include "expert/expert_policy.h"

#include <math.h>
#include <string.h>

#include "base/json.h"
#include "base/options.h"
#include "dp/accountant.h"
#include "dp/noise.h"
#include "dp/zcdp.h"

const char *const dprl_expert_option_names[] = {
    "n_states", "n_actions", "epsilon", "delta", "default_action", "max_states",
    "min_count", "seed", "release", "budget", NULL};
/* dp_plan: the release's options but those of the data side (seed,
** release, budget), and the hypothetical sizes. */
const char *const dprl_expert_plan_option_names[] = {
    "n_states", "n_actions", "epsilon", "delta", "default_action", "max_states",
    "min_count", "experts", "agreement", "coverage", NULL};

#define MAX_STATES ((int64_t)1 << 27)
/* The grid: 2^-b with b at most 25 keeps every tally below 2^51 steps
** (DPRL_EP_MAX_ROWS), and b >= 0 keeps every count exact on it. */
#define MAX_BITS 25
/* The default threshold on the noisy count, in sigmas (§16.4). */
#define MIN_COUNT_SIGMAS 3.0

double dprl_ep_sens_steps(int64_t k, int64_t n_actions, int bits) {
  double u = ldexp(1.0, bits), v = u + sqrt((double)n_actions) / 2;
  /* the factor covers the rounding of this arithmetic (a few ulps) */
  return sqrt((double)k * (v * v + u * u)) * (1 + 0x1p-40);
}

int dprl_ep_calibrate(double epsilon, double delta, int64_t k, int64_t n_actions,
                      dprl_ep_noise *nz, dprl_error *err) {
  memset(nz, 0, sizeof *nz);
  if (!(epsilon > 0 && isfinite(epsilon) && delta > 0 && delta < 1))
    return dprl_fail(err, DPRL_EINVAL,
                     "needs epsilon > 0 and delta in (0, 1), got %g and %g", epsilon, delta);
  if (!(k >= 1 && k <= MAX_STATES && n_actions >= 1 && n_actions <= DPRL_EP_MAX_CELLS))
    return dprl_fail(err, DPRL_EINVAL, "needs 1 <= k <= 2^27 states and 1 <= A <= 2^26 actions");
  nz->k = k;
  nz->sigma1 = dprl_gdp_sigma(epsilon, delta, 1.0);
  if (!(isfinite(nz->sigma1) && nz->sigma1 > 0))
    return dprl_fail(err, DPRL_EINVAL,
                     "epsilon = %g and delta = %g give no finite noise scale", epsilon, delta);
  /* The grid: 2^26 steps below the scale before rounding, within [2^-25, 1]. */
  int e;
  frexp(dprl_grid_for(sqrt(2.0 * (double)k) * nz->sigma1), &e);
  int b = 1 - e; /* the grid is 2^(e - 1) */
  nz->bits = b < 0 ? 0 : b > MAX_BITS ? MAX_BITS : b;
  nz->grid = ldexp(1.0, -nz->bits);
  nz->sens_steps = dprl_ep_sens_steps(k, n_actions, nz->bits);
  double st = nz->sens_steps * nz->sigma1;
  if (!(st <= (double)DPRL_GAUSS_STEPS_MAX))
    return dprl_fail(err, DPRL_EINVAL,
                     "epsilon = %g is too small: with delta %g and %lld states per expert the "
                     "noise would be %.3g votes, more than 2^40 steps of the grid",
                     epsilon, delta, (long long)k, st * nz->grid);
  nz->steps = (uint64_t)ceil(st);
  if (nz->steps < 1) nz->steps = 1;
  nz->sens = nz->sens_steps * nz->grid;
  nz->sigma = (double)nz->steps * nz->grid;
  nz->rho = dprl_zcdp_rho(nz->sens_steps, (double)nz->steps);
  return DPRL_OK;
}

/* ---- options ------------------------------------------------------------- */

/* A result that could never be returned is refused before any row: about
** 2A + 4 numbers per state (A + 1 more when diagnostic), 25 bytes each. */
static int check_result_size(const dprl_ep_config *c, const dprl_options *o) {
  if (c->plan || c->length_limit <= 0) return DPRL_OK;
  int64_t per = 2 * c->n_actions + 4 + (c->diagnostic ? c->n_actions + 1 : 0);
  int64_t most = (c->length_limit - 4096) / (25 * per);
  if (c->n_states > most)
    return dprl_fail(o->err, DPRL_EINVAL,
                     "%s: option n_states = %lld is more than a result can hold: about %lld "
                     "numbers of up to 25 bytes per state, and this connection's "
                     "SQLITE_LIMIT_LENGTH is %lld bytes; at most %lld states",
                     o->fn, (long long)c->n_states, (long long)per,
                     (long long)c->length_limit, (long long)(most > 0 ? most : 0));
  return DPRL_OK;
}

/* default_action: required, a public choice (§16.4). */
static int parse_default_action(dprl_ep_config *c, const dprl_options *o) {
  if (!dprl_opt_has(o, "default_action")) {
    if (c->plan) return DPRL_OK;
    return dprl_fail(o->err, DPRL_EINVAL,
                     "%s: option default_action is required: the public action of a state "
                     "whose noisy count of experts is below min_count (a state no expert "
                     "visited among them), an integer in 0..n_actions-1 = 0..%lld",
                     o->fn, (long long)c->n_actions - 1);
  }
  return dprl_opt_int(o, "default_action", 1, 0, DPRL_CLOSED(0, (double)(c->n_actions - 1)),
                      &c->default_action);
}

/* dp_plan's hypothetical sizes. */
static int parse_plan(dprl_ep_config *c, const dprl_options *o) {
  int rc;
  if ((rc = dprl_opt_number(o, "experts", 1, 0, DPRL_CLOSED(0, 1e15), &c->experts)) ||
      (rc = dprl_opt_number(o, "agreement", 1, 0, DPRL_CLOSED(0, 1), &c->agreement)) ||
      (rc = dprl_opt_number(o, "coverage", 0, 1, ((dprl_range){0, 1, 1, 0}), &c->coverage)))
    return rc;
  if (c->agreement * (double)c->n_actions < 1)
    return dprl_fail(o->err, DPRL_EINVAL,
                     "%s: option agreement must be at least 1/n_actions = %g (the majority "
                     "action's share is at least the mean share), got %g",
                     o->fn, 1.0 / (double)c->n_actions, c->agreement);
  return DPRL_OK;
}

static int parse_all(dprl_ep_config *c, const dprl_options *o) {
  static const char *const releases[] = {"private", "diagnostic", NULL};
  int rc;
  if ((rc = dprl_opt_int(o, "n_states", 1, 0, DPRL_CLOSED(1, (double)MAX_STATES),
                         &c->n_states)) ||
      (rc = dprl_opt_int(o, "n_actions", 1, 0, DPRL_CLOSED(1, (double)DPRL_EP_MAX_CELLS),
                         &c->n_actions)))
    return rc;
  if (c->n_states * c->n_actions > DPRL_EP_MAX_CELLS)
    return dprl_fail(o->err, DPRL_EINVAL,
                     "%s: n_states x n_actions = %lld x %lld is more than 2^26 cells",
                     o->fn, (long long)c->n_states, (long long)c->n_actions);
  if ((rc = dprl_opt_number(o, "epsilon", 1, 0, DPRL_POSITIVE, &c->epsilon)) ||
      (rc = dprl_opt_number(o, "delta", 1, 0, DPRL_OPEN(0, 1), &c->delta)) ||
      (rc = parse_default_action(c, o)) ||
      (rc = dprl_opt_int(o, "max_states", 0, 0, DPRL_CLOSED(1, 2147483647.0), &c->max_states)))
    return rc;
  c->has_min_count = dprl_opt_has(o, "min_count");
  if ((rc = dprl_opt_number(o, "min_count", 0, 0, DPRL_NONNEG, &c->min_count))) return rc;
  if (c->plan) {
    if ((rc = parse_plan(c, o))) return rc;
  } else if ((rc = dprl_opt_choice(o, "release", releases, 0, &c->diagnostic)) ||
             (rc = dprl_opt_seed(o, &c->has_seed, &c->seed)) ||
             (rc = dprl_opt_name(o, "budget", &c->budget))) {
    return rc;
  }
  if ((rc = check_result_size(c, o))) return rc;
  int64_t k = c->max_states > 0 && c->max_states < c->n_states ? c->max_states : c->n_states;
  if ((rc = dprl_ep_calibrate(c->epsilon, c->delta, k, c->n_actions, &c->nz, o->err))) {
    char msg[sizeof o->err->msg];
    memcpy(msg, o->err->msg, sizeof msg);
    o->err->code = DPRL_OK;
    return dprl_fail(o->err, DPRL_EINVAL, "%s: %s", o->fn, msg);
  }
  if (!c->has_min_count) c->min_count = MIN_COUNT_SIGMAS * c->nz.sigma;
  return DPRL_OK;
}

int dprl_ep_config_parse(dprl_ep_config *c, const char *fn, const char *text, size_t len,
                         int plan, int64_t length_limit, dprl_cancel *cancel, dprl_error *err) {
  dprl_options o;
  memset(c, 0, sizeof *c);
  c->fn = fn;
  c->plan = plan;
  c->length_limit = length_limit;
  int rc = dprl_options_open_polled(&o, fn, text, len,
                                    plan ? dprl_expert_plan_option_names
                                         : dprl_expert_option_names,
                                    cancel, err);
  if (!rc) rc = parse_all(c, &o);
  dprl_options_close(&o);
  if (rc) dprl_ep_config_free(c);
  return rc;
}

void dprl_ep_config_free(dprl_ep_config *c) {
  dprl_free(c->budget);
  c->budget = NULL;
}

/* ---- the release --------------------------------------------------------- */

int dprl_ep_post(const dprl_ep_config *c, dprl_ep_release *r, dprl_cancel *cancel,
                 dprl_error *err) {
  int64_t A = c->n_actions;
  for (int64_t s = 0; s < c->n_states; s++) {
    if (dprl_cancel_poll(cancel, 8 * (uint64_t)A + 8, err)) return err->code;
    const double *v = r->votes + s * A;
    double *p = r->distribution + s * A, n = r->counts[s];
    r->defaulted[s] = !(n >= c->min_count);
    if (r->defaulted[s]) { /* the public default, whatever the votes say */
      r->policy[s] = c->default_action;
      for (int64_t a = 0; a < A; a++) p[a] = a == c->default_action;
      r->stderr_[s] = NAN;
      continue;
    }
    int64_t best = 0;
    double total = 0;
    for (int64_t a = 0; a < A; a++) {
      if (v[a] > v[best]) best = a; /* ties to the lowest action */
      total += v[a] > 0 ? v[a] : 0;
    }
    r->policy[s] = best;
    for (int64_t a = 0; a < A; a++)
      p[a] = total > 0 ? (v[a] > 0 ? v[a] / total : 0) : 1.0 / (double)A;
    r->stderr_[s] = c->nz.sigma / (n > 1 ? n : 1);
  }
  return DPRL_OK;
}

/* Noise on every vote and count: per state its A votes, then its count. */
static int add_noise(const dprl_ep_config *c, const dprl_ep_tally *t, dprl_rng *rng,
                     dprl_ep_release *r, dprl_cancel *cancel, dprl_error *err) {
  int64_t A = c->n_actions;
  double g = c->nz.grid;
  for (int64_t s = 0; s < c->n_states; s++) {
    if (dprl_cancel_poll(cancel, 2000 * (uint64_t)(A + 1), err)) return err->code;
    for (int64_t a = 0; a < A; a++) {
      /* steps < 2^51: value is exact, and value / g is the integer */
      int rc = dprl_release_gaussian_steps(rng, g * (double)t->votes[s * A + a], c->nz.steps,
                                           g, &r->votes[s * A + a], err);
      if (rc) return rc;
    }
    int rc = dprl_release_gaussian_steps(rng, (double)t->experts[s], c->nz.steps, g,
                                         &r->counts[s], err);
    if (rc) return rc;
  }
  return DPRL_OK;
}

/* Per-state arrays of A numbers: [[...], ...]. */
static int put_matrix(dprl_buf *b, const char *key, const double *x, int64_t S, int64_t A,
                      dprl_cancel *cancel, dprl_error *err) {
  dprl_json_put_key(b, key);
  dprl_buf_puts(b, "[");
  for (int64_t s = 0; s < S; s++) {
    if (s) dprl_buf_puts(b, ",");
    int rc = dprl_json_put_double_array_polled(b, x + s * A, (size_t)A, cancel, err);
    if (!rc) rc = dprl_cancel_poll(cancel, 16, err);
    if (rc) return rc;
  }
  dprl_buf_puts(b, "]");
  return DPRL_OK;
}

static int put_vector(dprl_buf *b, const char *key, const double *x, int64_t n,
                      dprl_cancel *cancel, dprl_error *err) {
  dprl_json_put_key(b, key);
  return dprl_json_put_double_array_polled(b, x, (size_t)n, cancel, err);
}

static int put_ints(dprl_buf *b, const char *key, const int64_t *x, int64_t n,
                    dprl_cancel *cancel, dprl_error *err) {
  dprl_json_put_key(b, key);
  dprl_buf_puts(b, "[");
  for (int64_t i = 0; i < n; i++) {
    dprl_buf_printf(b, i ? ",%lld" : "%lld", (long long)x[i]);
    if (dprl_cancel_poll(cancel, 100, err)) return err->code;
  }
  dprl_buf_puts(b, "]");
  return DPRL_OK;
}

static int put_json(const dprl_ep_config *c, const dprl_ep_tally *t, const dprl_ep_release *r,
                    double *scratch, dprl_buf *b, dprl_cancel *cancel, dprl_error *err) {
  int64_t S = c->n_states, A = c->n_actions;
  dprl_buf_puts(b, "{\"mechanism\":\"dp_expert_policy\"");
  /* a seeded release is reproducible, hence not private (§6) */
  dprl_buf_printf(b, ",\"private\":%s", c->diagnostic || c->has_seed ? "false" : "true");
  if (c->has_seed) dprl_buf_puts(b, ",\"seeded\":true");
  dprl_buf_puts(b, ",\"unit\":\"expert\"");
  dprl_json_put_num(b, "epsilon", c->epsilon);
  dprl_json_put_num(b, "delta", c->delta);
  dprl_json_put_int(b, "n_states", S);
  dprl_json_put_int(b, "n_actions", A);
  dprl_json_put_int(b, "max_states", c->nz.k);
  dprl_json_put_int(b, "default_action", c->default_action);
  dprl_json_put_num(b, "min_count", c->min_count);
  dprl_json_put_num(b, "sigma", c->nz.sigma);
  dprl_json_put_num(b, "sensitivity", c->nz.sens);
  dprl_json_put_num(b, "rho", c->nz.rho);
  int rc = put_ints(b, "policy", r->policy, S, cancel, err);
  if (!rc) rc = put_matrix(b, "votes", r->votes, S, A, cancel, err);
  if (!rc) rc = put_vector(b, "counts", r->counts, S, cancel, err);
  if (!rc) rc = put_matrix(b, "distribution", r->distribution, S, A, cancel, err);
  if (!rc) rc = put_vector(b, "stderr", r->stderr_, S, cancel, err);
  if (!rc) {
    dprl_json_put_key(b, "defaulted");
    dprl_buf_puts(b, "[");
    for (int64_t s = 0; s < S && !rc; s++) {
      dprl_buf_puts(b, s ? (r->defaulted[s] ? ",true" : ",false")
                         : (r->defaulted[s] ? "true" : "false"));
      rc = dprl_cancel_poll(cancel, 10, err);
    }
    dprl_buf_puts(b, "]");
  }
  if (!rc && c->diagnostic) { /* exact, data-dependent: NOT private */
    dprl_json_put_num(b, "grid", c->nz.grid);
    dprl_json_put_int(b, "grid_steps", (int64_t)c->nz.steps);
    dprl_json_put_int(b, "experts", t->n_experts);
    rc = put_matrix(b, "exact_votes", t->exact, S, A, cancel, err);
    for (int64_t s = 0; !rc && s < S; s++) scratch[s] = (double)t->experts[s];
    if (!rc) rc = put_vector(b, "exact_counts", scratch, S, cancel, err);
  }
  dprl_buf_puts(b, "}");
  return rc;
}

int dprl_ep_release_json(const dprl_ep_config *c, const dprl_ep_tally *t, dprl_buf *out,
                         dprl_cancel *cancel, dprl_error *err) {
  size_t S = (size_t)c->n_states, cells = S * (size_t)c->n_actions;
  dprl_ep_release r;
  dprl_rng rng;
  int rc;
  if (c->diagnostic && !t->exact)
    return dprl_fail(err, DPRL_EINVAL, "%s: a diagnostic release needs the exact votes", c->fn);
  if (c->has_seed) dprl_rng_init_seeded(&rng, c->seed, DPRL_STREAM_EXPERT);
  else if ((rc = dprl_rng_init_secure(&rng, err))) return rc;
  /* every array is written before it is read */
  double *mem = dprl_malloc_array(2 * cells + 3 * S, sizeof *mem);
  int64_t *policy = dprl_malloc_array(S, sizeof *policy);
  unsigned char *def = dprl_malloc_array(S, 1);
  rc = mem && policy && def ? DPRL_OK : dprl_nomem(err);
  if (!rc) {
    r.votes = mem;
    r.distribution = mem + cells;
    r.counts = mem + 2 * cells;
    r.stderr_ = r.counts + S;
    r.policy = policy;
    r.defaulted = def;
    rc = add_noise(c, t, &rng, &r, cancel, err);
  }
  if (!rc) rc = dprl_ep_post(c, &r, cancel, err);
  if (!rc) {
    size_t guess = 4096 + 20 * (2 * cells + 5 * S) + (c->diagnostic ? 20 * (cells + S) : 0);
    if (c->length_limit > 0 && guess > (size_t)c->length_limit) guess = (size_t)c->length_limit;
    dprl_buf_reserve(out, guess);
    rc = put_json(c, t, &r, r.stderr_ + S, out, cancel, err);
    if (!rc && out->oom) rc = dprl_nomem(err);
  }
  dprl_rng_wipe(&rng);
  dprl_free(mem);
  dprl_free(policy);
  dprl_free(def);
  return rc;
}
