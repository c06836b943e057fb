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
** Negative counts set to 0 and pairs below a public min_count only add a
** bias (ALGORITHMS.md §13.3); they are not planned here.
*/
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/json.h"
#include "mdp/internal.h"

static const char *const plan_option_names[] = {
    "mechanism", "episodes", "visits", "steps", "n_states", "n_actions", "gamma", "rmin", "rmax",
    "epsilon", "delta", "horizon", "clip", "features", NULL};

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

static int put_pairs(dprl_buf *b, const char *key, const double *x, size_t S, size_t A,
                     dprl_cancel *cancel, dprl_error *err) {
  dprl_json_put_key(b, key);
  dprl_buf_puts(b, "[");
  for (size_t s = 0; s < S; s++) {
    dprl_buf_puts(b, s ? ",[" : "[");
    for (size_t a = 0; a < A; a++) {
      if (a) dprl_buf_puts(b, ",");
      dprl_json_put_double(b, x[s * A + a]); /* NaN (no visits): null */
      if (dprl_cancel_poll(cancel, 150, err)) return err->code;
    }
    dprl_buf_puts(b, "]");
  }
  dprl_buf_puts(b, "]");
  return DPRL_OK;
}

/* Errors per pair, the worst over visited pairs, and whether the noise
** swamps every pair. */
static int plan_errors(const dprl_mdp_config *c, const double *v, double *l1, double *rsd,
                       dprl_plan_cost *cost, double *worst_l1, double *worst_rsd,
                       dprl_cancel *cancel, dprl_error *err) {
  size_t S = (size_t)c->n_states, A = (size_t)c->n_actions, best = 0;
  double rows = (double)S + 1, top = 0;
  *worst_l1 = *worst_rsd = NAN;
  for (size_t j = 0; j < S * A; j++) {
    if (dprl_cancel_poll(cancel, 20, err)) return err->code;
    if (!(v[j] > 0)) {
      l1[j] = rsd[j] = NAN;
      continue;
    }
    l1[j] = sqrt(2 / M_PI) * c->sigma * (rows + sqrt(rows)) / v[j];
    rsd[j] = c->half * c->sigma * sqrt(rows + 1) / v[j];
    if (!(l1[j] <= *worst_l1)) *worst_l1 = l1[j];
    if (!(rsd[j] <= *worst_rsd)) *worst_rsd = rsd[j];
    if (v[j] > top) top = v[j], best = j;
  }
  cost->useful = top > c->sigma;
  if (!cost->useful && top > 0)
    dprl_snprintf(cost->why, sizeof cost->why,
             "the noise sigma = %.4g is at least the planned count of every (state, action) "
             "pair (largest %.4g, state %zu action %zu): more episodes, a larger epsilon or a "
             "smaller horizon or clip", c->sigma, top, best / A, best % A);
  else if (!cost->useful)
    dprl_snprintf(cost->why, sizeof cost->why, "no (state, action) pair has a planned count > 0");
  return DPRL_OK;
}

static int plan_json(const dprl_mdp_config *c, int64_t episodes, const double *v,
                     dprl_plan_cost *cost, dprl_buf *out, dprl_cancel *cancel,
                     dprl_error *err) {
  size_t S = (size_t)c->n_states, A = (size_t)c->n_actions;
  double *l1 = dprl_malloc_array(2 * S * A, sizeof *l1), wl1, wr;
  if (!l1) return dprl_nomem(err);
  double *rsd = l1 + S * A;
  int rc = plan_errors(c, v, l1, rsd, cost, &wl1, &wr, cancel, err);
  if (!rc) {
    dprl_buf_puts(out, "{\"mechanism\":\"dp_mdp\",\"unit\":\"episode\"");
    dprl_json_put_num(out, "epsilon", c->epsilon);
    dprl_json_put_num(out, "delta", c->delta);
    dprl_json_put_int(out, "n_states", c->n_states);
    dprl_json_put_int(out, "n_actions", c->n_actions);
    dprl_json_put_key(out, "horizon");
    if (c->horizon) dprl_buf_printf(out, "%lld", (long long)c->horizon);
    else dprl_buf_puts(out, "null");
    dprl_json_put_key(out, "clip");
    if (c->clip > 0) dprl_json_put_double(out, c->clip);
    else dprl_buf_puts(out, "null");
    dprl_json_put_int(out, "episodes", episodes);
    dprl_json_put_num(out, "sensitivity", c->sens);
    dprl_json_put_num(out, "sigma", c->sigma);
    dprl_json_put_num(out, "reward_sigma", c->sigma * c->half);
    dprl_json_put_num(out, "grid", c->grid);
    dprl_json_put_num(out, "rho", c->rho);
    rc = put_pairs(out, "visits", v, S, A, cancel, err);
    if (!rc) rc = put_pairs(out, "transition_l1", l1, S, A, cancel, err);
    if (!rc) rc = put_pairs(out, "reward_sd", rsd, S, A, cancel, err);
  }
  if (!rc) {
    dprl_json_put_num(out, "worst_transition_l1", wl1);
    dprl_json_put_num(out, "worst_reward_sd", wr);
    dprl_buf_printf(out, ",\"useful\":%s", cost->useful ? "true" : "false");
    if (!cost->useful) {
      dprl_json_put_key(out, "why");
      dprl_json_put_string(out, cost->why);
    }
    dprl_buf_puts(out, "}");
    if (out->oom) rc = dprl_nomem(err);
  }
  dprl_free(l1);
  return rc;
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
  if (!rc) rc = dprl_mdp_parse_options(&c, &o, 1);
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
  if (!rc) {
    cost->mechanism = "dp_mdp";
    cost->unit = "episode";
    cost->epsilon = c.epsilon;
    cost->delta = c.delta;
    cost->gaussian = 1;
    cost->rho = c.rho;
    cost->per_group = 0; /* groups that partition the episodes: one release (§12) */
    rc = plan_json(&c, episodes, v, cost, out, cancel, err);
  }
  dprl_free(v);
  dprl_options_close(&o);
  dprl_mdp_config_free(&c);
  return rc;
}
