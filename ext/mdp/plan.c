/*
** plan.c: planning a dp_mdp release before any budget is spent (mdp.h,
** ALGORITHMS.md §13.4).  From dp_mdp's options and hypothetical public
** sizes only: the calibration (sigma, reward_sigma, sensitivity) and the
** first-order error of what the model estimates at those sizes.  With
** N(s,a) counted steps in a pair and count noise z ~ N(0, sigma^2) on each
** of the pair's S + 1 transition entries:
**   P(.|s,a):  dP_j = (z_j - P_j Z) / N, Z the sum of the row's noise, so
**              E ||dP||_1 <= sqrt(2/pi) sigma (S + 1 + sqrt(S + 1)) / N;
**   r(s,a):    dr = b (z_r - m Z) / N with m = (r - c)/b in [-1, 1], so
**              sd(dr) <= b sigma sqrt(S + 2) / N (the worst mean, |m| = 1).
** Negative counts are set to 0 (ALGORITHMS.md §13.3): an empty entry
** gains sigma/sqrt(2 pi) on average, so a row of N steps with its S other
** entries empty gains a share M/(N + M), M = S sigma/sqrt(2 pi), of
** spurious mass, which moves up to 2 M/(N + M) of L1.  The plan is useful
** when the visit-weighted mean of the rows' L1 errors is within a public
** tolerance (default 0.5, of at most 2).
** Sparse (ALGORITHMS.md §13.5): a row's N steps spread evenly over
** next_states cells of N/k each; a cell is kept with probability
** p = Q((tau - N/k) / sigma), so a share 1 - p of the row is unknown, and
** the kept cells, the end and the total carry the noise:
** L1 <= sqrt(2/pi) sigma (k p + 2) / N + (1 - p), capped at 2; the reward's
** sd <= b sigma sqrt(2) / N.  With the outcome argument the censored end is
** one more noisy entry of each row (S + 2 dense, k p + 3 sparse).
*/
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/json.h"
#include "mdp/internal.h"

static const char *const plan_option_names[] = {
    "mechanism", "episodes", "visits", "steps", "n_states", "n_actions", "gamma", "rmin", "rmax",
    "epsilon", "delta", "horizon", "clip", "features", "transitions", "max_cells", "next_states",
    "tolerance", "outcome", "error", "value_range", "clip_quantile", "clip_share", NULL};

/* "visits": S arrays of A numbers >= 0, into v (S A, row-major). */
static int parse_visits(const dprl_mdp_config *c, const dprl_options *o, double *v,
                        dprl_cancel *cancel) {
  const dprl_json *x = dprl_opt_get(o, "visits"), *bad = x;
  size_t S = (size_t)c->n_states, A = (size_t)c->n_actions;
  char got[64], where[64] = "";
  int ok = x->type == DPRL_JSON_ARRAY && x->n == S;
  for (size_t s = 0; ok && s < S; s++) {
    const dprl_json *row = x->items[s];
    ok = row->type == DPRL_JSON_ARRAY && row->n == A;
    if (!ok) {
      bad = row;
      dprl_snprintf(where, sizeof where, " at state %zu", s);
    }
    for (size_t a = 0; ok && a < A; a++) {
      if (dprl_cancel_poll(cancel, 4, o->err)) return o->err->code;
      const dprl_json *n = row->items[a];
      ok = n->type == DPRL_JSON_NUMBER && isfinite(n->num) && n->num >= 0;
      if (ok) {
        v[s * A + a] = n->num;
      } else {
        bad = n;
        dprl_snprintf(where, sizeof where, " at state %zu, action %zu", s, a);
      }
    }
  }
  if (ok) return DPRL_OK;
  dprl_json_describe(bad, got, sizeof got);
  return dprl_fail(o->err, DPRL_EINVAL,
                   "%s: option visits must be n_states = %lld arrays of n_actions = %lld numbers "
                   ">= 0 (planned counted steps per state and action), got %s%s",
                   o->fn, (long long)c->n_states, (long long)c->n_actions, got, where);
}

/* What the plan reports: first-order errors at the planned sizes. */
typedef struct mdp_plan_errors {
  double mean_l1, worst_l1, noise_mass, worst_rsd, tolerance;
  size_t pairs;
  int64_t next_states; /* sparse: the planned next states of a pair */
  int value;           /* "error": "value": the verdict is on value_rmse */
  int range_given;     /* value_range given, else from rmin, rmax, gamma, horizon */
  double range, episodes;           /* the span of a value; the planned episodes */
  double value_bias, value_var;     /* §13.4: the visits' policy; value_var over range^2 */
} mdp_plan_errors;

/* ALGORITHMS.md §13.4: per visited pair, the row's L1 error, first order
** in the noise plus twice the share of the row's mass that the clipped
** noise of its empty entries adds (at most S of its S + 1 entries are
** empty), capped at 2; its mean weighted by the planned visits. */
static int plan_errors(const dprl_mdp_config *c, const double *v, mdp_plan_errors *e,
                       dprl_cancel *cancel, dprl_error *err) {
  size_t S = (size_t)c->n_states, A = (size_t)c->n_actions;
  double rows = (double)S + 1 + c->outcome, sig = c->sigma, total = 0; /* + censored */
  double spurious = sig / sqrt(2 * M_PI) * (double)S; /* E max(z, 0) over S empty entries */
  e->mean_l1 = e->noise_mass = e->value_bias = e->value_var = 0;
  e->worst_l1 = e->worst_rsd = NAN;
  e->pairs = 0;
  for (size_t j = 0; j < S * A; j++) {
    if (dprl_cancel_poll(cancel, 20, err)) return err->code;
    double n = v[j];
    if (!(n > 0)) continue;
    double moved, l1, rsd, rk; /* rk: rsd n / sigma */
    if (c->sparse) { /* moved: the share of the row in cells below the threshold */
      double k = (double)e->next_states, keep = 0.5 * erfc((c->tau - n / k) / (sig * M_SQRT2));
      moved = 1 - keep;
      l1 = fmin(2, sqrt(2 / M_PI) * sig * (k * keep + 2 + c->outcome) / n + moved);
      rk = c->half * M_SQRT2;
      rsd = rk * sig / n;
    } else {
      moved = spurious / (n + spurious);
      l1 = fmin(2, sqrt(2 / M_PI) * sig * (rows + sqrt(rows)) / n + 2 * moved);
      rk = c->half * sqrt(rows + 1);
      rsd = rk * sig / n;
    }
    /* the value of the visits' policy (§13.4): d = n / E visits an episode;
    ** value_bias sums d times the row's misplaced mass (turned into the bias
    ** below), and the noise of the row's m entries and of its reward adds
    ** d^2 Var in quadrature, kept over R^2; d sigma / n = sigma / E, so
    ** the noise terms do not depend on n (no 0 * inf for tiny visits) */
    double d = n / e->episodes, se = sig / e->episodes, rn = rk / e->range;
    double m = c->sparse ? (double)e->next_states * (1 - moved) + 2 + c->outcome : rows;
    e->value_bias += d * moved;
    e->value_var += se * se * (m / 4 + rn * rn);
    e->pairs++;
    total += n;
    e->mean_l1 += n * l1;
    e->noise_mass += n * moved;
    if (!(l1 <= e->worst_l1)) e->worst_l1 = l1;
    if (!(rsd <= e->worst_rsd)) e->worst_rsd = rsd;
  }
  /* sparse: an episode reaches an unknown end with probability at most
  ** 1 - exp(-sum d u) (independent rows), and from there its value is the
  ** worst, at most the span away; dense: the spurious mass moves the value
  ** by half the span on average per unit, at most the span in all */
  e->value_bias = c->sparse ? e->range * -expm1(-e->value_bias)
                            : fmin(e->range, e->value_bias * e->range / 2);
  e->mean_l1 = e->pairs ? e->mean_l1 / total : NAN;
  e->noise_mass = e->pairs ? e->noise_mass / total : NAN;
  return DPRL_OK;
}

static double value_sd(const mdp_plan_errors *e) { return e->range * sqrt(e->value_var); }

static double value_rmse(const mdp_plan_errors *e) { return hypot(e->value_bias, value_sd(e)); }

static void plan_verdict(const dprl_mdp_config *c, const mdp_plan_errors *e,
                         dprl_plan_cost *cost) {
  double planned = e->value ? value_rmse(e) : e->mean_l1;
  cost->useful = e->pairs > 0 && planned <= e->tolerance;
  if (!e->pairs)
    dprl_snprintf(cost->why, sizeof cost->why, "no (state, action) pair has a planned count > 0");
  else if (!cost->useful && e->value)
    dprl_snprintf(cost->why, sizeof cost->why,
                  "the planned error of a value, %.3g (bias %.3g from %s mass, sd %.3g from "
                  "noise, on a value range of %.4g), is above the tolerance %.3g: more "
                  "episodes, a larger epsilon, a smaller horizon or clip, or fewer states",
                  planned, e->value_bias, c->sparse ? "unknown" : "spurious", value_sd(e),
                  e->range, e->tolerance);
  else if (!cost->useful && c->sparse)
    dprl_snprintf(cost->why, sizeof cost->why,
                  "the transition rows' planned L1 error, %.3g on average (of at most 2; "
                  "%.2g of a row's mass in cells below the threshold %.4g), is above the "
                  "tolerance %.3g: more episodes, a larger epsilon, a smaller horizon",
                  e->mean_l1, e->noise_mass, c->tau, e->tolerance);
  else if (!cost->useful)
    dprl_snprintf(cost->why, sizeof cost->why,
                  "the transition rows' planned L1 error, %.3g on average over the visits (of "
                  "at most 2; noise adds %.2g of a row's mass), is above the tolerance %.3g: "
                  "more episodes, a larger epsilon, a smaller horizon or clip, or fewer states",
                  e->mean_l1, e->noise_mass, e->tolerance);
}

static int plan_json(const dprl_mdp_config *c, int64_t episodes, const mdp_plan_errors *e,
                     dprl_plan_cost *cost, dprl_buf *out, dprl_error *err) {
  dprl_buf_puts(out, "{\"mechanism\":\"dp_mdp\",\"unit\":\"episode\"");
  dprl_json_put_num(out, "epsilon", c->epsilon);
  dprl_json_put_num(out, "delta", c->delta);
  dprl_json_put_int(out, "n_states", c->n_states);
  dprl_json_put_int(out, "n_actions", c->n_actions);
  dprl_json_put_key(out, "horizon");
  if (c->horizon) dprl_buf_printf(out, "%lld", (long long)c->horizon);
  else dprl_buf_puts(out, "null");
  dprl_json_put_key(out, "clip");
  if (c->clip_auto) dprl_buf_puts(out, "\"auto\""); /* sigma at the top of its grid */
  else if (c->clip > 0) dprl_json_put_double(out, c->clip);
  else dprl_buf_puts(out, "null");
  dprl_json_put_int(out, "episodes", episodes);
  if (c->outcome) dprl_buf_puts(out, ",\"outcome\":\"per episode\"");
  dprl_json_put_num(out, "sensitivity", c->sens);
  dprl_json_put_num(out, "sigma", c->sigma);
  dprl_json_put_num(out, "reward_sigma", c->sigma * c->half);
  dprl_json_put_num(out, "grid", c->grid);
  dprl_json_put_num(out, "rho", c->rho);
  if (c->sparse) {
    dprl_buf_puts(out, ",\"transitions\":\"sparse\"");
    dprl_json_put_num(out, "threshold", c->tau);
    dprl_json_put_num(out, "delta_threshold", c->delta_thr);
    dprl_json_put_num(out, "delta_gaussian", c->delta_gauss);
    dprl_json_put_int(out, "cells_max", c->cells_max);
    dprl_json_put_int(out, "next_states", e->next_states);
  }
  dprl_json_put_int(out, "pairs_visited", (int64_t)e->pairs);
  dprl_json_put_num(out, "transition_l1", e->mean_l1);
  dprl_json_put_num(out, "worst_transition_l1", e->worst_l1);
  dprl_json_put_num(out, c->sparse ? "unknown_mass" : "noise_mass", e->noise_mass);
  dprl_json_put_num(out, "worst_reward_sd", e->worst_rsd);
  if (e->value) {
    dprl_json_put_num(out, "value_range", e->range);
    dprl_json_put_key(out, "value_range_from");
    dprl_json_put_string(out, e->range_given ? "given" : "from rmin, rmax, gamma and horizon");
    dprl_json_put_num(out, "value_bias", e->value_bias);
    dprl_json_put_num(out, "value_sd", value_sd(e));
    dprl_json_put_num(out, "value_rmse", value_rmse(e));
  }
  dprl_json_put_key(out, "verdict_on");
  dprl_json_put_string(out, e->value ? "value_rmse" : "transition_l1");
  dprl_json_put_num(out, "tolerance", e->tolerance);
  dprl_buf_printf(out, ",\"useful\":%s", cost->useful ? "true" : "false");
  if (!cost->useful) {
    dprl_json_put_key(out, "why");
    dprl_json_put_string(out, cost->why);
  }
  dprl_buf_puts(out, "}");
  return out->oom ? dprl_nomem(err) : DPRL_OK;
}

int dprl_mdp_plan(const char *text, size_t len, int64_t length_limit, dprl_cancel *cancel,
                  dprl_buf *out, dprl_plan_cost *cost, dprl_error *err) {
  static const char *const mechs[] = {"dp_mdp", NULL};
  dprl_options o;
  dprl_mdp_config c;
  int64_t episodes = 0;
  double steps = 0, *v = NULL;
  int mech;
  memset(&c, 0, sizeof c);
  memset(cost, 0, sizeof *cost);
  c.fn = "dp_plan";
  c.length_limit = length_limit;
  int rc = dprl_options_open_polled(&o, c.fn, text, len, plan_option_names, cancel, err);
  if (!rc) rc = dprl_opt_choice(&o, "mechanism", mechs, 0, &mech);
  if (!rc) rc = dprl_opt_bool(&o, "outcome", 0, &c.outcome); /* the argument's calibration */
  if (!rc) rc = dprl_mdp_parse_options(&c, &o, 1, cancel);
  if (!rc) rc = dprl_opt_int(&o, "episodes", 1, 0, DPRL_CLOSED(1, 0x1p53), &episodes);
  if (!rc && dprl_opt_has(&o, "visits") && dprl_opt_has(&o, "steps"))
    rc = dprl_fail(err, DPRL_EINVAL,
                   "%s: options visits and steps are two ways to say the same: give one",
                   c.fn);
  if (!rc && !dprl_opt_has(&o, "visits") && !c.horizon && !dprl_opt_has(&o, "steps"))
    rc = dprl_fail(err, DPRL_EINVAL,
                   "%s: option steps (counted steps per episode) or visits is required "
                   "without a horizon", c.fn);
  if (!rc)
    rc = dprl_opt_number(&o, "steps", 0, (double)c.horizon,
                         c.horizon ? DPRL_CLOSED(1, (double)c.horizon) : DPRL_AT_LEAST(1),
                         &steps);
  size_t SA = (size_t)c.n_states * (size_t)c.n_actions;
  if (!rc && !(v = dprl_malloc_array(SA, sizeof *v))) rc = dprl_nomem(err);
  if (!rc && dprl_opt_has(&o, "visits")) {
    rc = parse_visits(&c, &o, v, cancel);
  } else {
    for (size_t j = 0; !rc && j < SA; j++) {
      v[j] = (double)episodes * steps / (double)SA; /* spread evenly */
      rc = dprl_cancel_poll(cancel, 2, err);
    }
  }
  mdp_plan_errors e;
  memset(&e, 0, sizeof e);
  static const char *const errors[] = {"transitions", "value", NULL};
  if (!rc) rc = dprl_opt_choice(&o, "error", errors, 1, &e.value);
  /* the span of a value: H (rmax - rmin), or (rmax - rmin) / (1 - gamma) */
  double span = c.horizon ? (double)c.horizon * (c.rmax - c.rmin)
                          : c.gamma < 1 ? (c.rmax - c.rmin) / (1 - c.gamma) : INFINITY;
  e.range_given = !rc && dprl_opt_has(&o, "value_range");
  if (!rc && e.value && !e.range_given && !isfinite(span))
    rc = dprl_fail(err, DPRL_EINVAL,
                   "%s: option value_range (the span of a policy's value) is required for "
                   "error \"value\" with gamma 1 and no horizon", c.fn);
  if (!rc && e.range_given && !e.value)
    rc = dprl_fail(err, DPRL_EINVAL,
                   "%s: option value_range plans the error of a value: give error \"value\"",
                   c.fn);
  if (!rc) rc = dprl_opt_number(&o, "value_range", 0, span, DPRL_OPEN(0, INFINITY), &e.range);
  e.episodes = (double)episodes;
  if (!rc)
    rc = e.value ? dprl_opt_number(&o, "tolerance", 0, 0.025 * e.range, DPRL_OPEN(0, INFINITY),
                                   &e.tolerance)
                 : dprl_opt_number(&o, "tolerance", 0, 0.5, DPRL_OPEN(0, 2), &e.tolerance);
  if (!rc && !c.sparse && dprl_opt_has(&o, "next_states"))
    rc = dprl_fail(err, DPRL_EINVAL,
                   "%s: option next_states plans a sparse release, and this one is dense", c.fn);
  if (!rc && c.sparse)
    rc = dprl_opt_int(&o, "next_states", 0, 1, DPRL_CLOSED(1, (double)c.n_states),
                      &e.next_states);
  if (!rc) rc = plan_errors(&c, v, &e, cancel, err);
  if (!rc) {
    plan_verdict(&c, &e, cost);
    cost->mechanism = "dp_mdp";
    cost->unit = "episode";
    cost->epsilon = c.epsilon;
    cost->delta = c.delta;
    cost->gaussian = !c.sparse; /* sparse: a plain (epsilon, delta) release (§13.5) */
    cost->rho = c.sparse ? 0 : c.rho;
    cost->per_group = 0; /* groups that partition the episodes: one release (§12) */
    rc = plan_json(&c, episodes, &e, cost, out, err);
  }
  dprl_free(v);
  dprl_options_close(&o);
  dprl_mdp_config_free(&c);
  return rc;
}
