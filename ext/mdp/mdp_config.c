/*
** mdp_config.c: dp_mdp's options and its public calibration (mdp.h,
** ALGORITHMS.md §13).  Everything here is computed from the options
** alone, before any row is read, so a refusal cannot depend on the data.
*/
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/json.h"
#include "dp/accountant.h"
#include "dp/zcdp.h"
#include "mdp/internal.h"

const char *const dprl_mdp_option_names[] = {
    "n_states", "n_actions", "gamma", "rmin", "rmax", "epsilon", "delta", "horizon", "clip",
    "features", "seed", "budget", "release", NULL};

/* A result holds at most this many bytes per number (a noisy count in its
** shortest round-trip form and its comma). */
#define BYTES_PER_NUMBER 25

/* The grid is never finer than 2^-12 count units: every entry is clamped
** to 2^51 grid steps (noise.c's exact range), and 2^51 * 2^-12 = 2^39
** counts is as many steps as a release takes (DPRL_MDP_MAX_STEPS). */
#define GRID_FLOOR 0x1p-12

/* {"tent": K, "low": lo, "high": hi}, or "tabular". */
static int parse_features(dprl_mdp_config *c, const dprl_options *o) {
  const dprl_json *f = dprl_opt_get(o, "features");
  char got[64];
  if (!f || (f->type == DPRL_JSON_STRING && strcmp(f->str, "tabular") == 0)) return DPRL_OK;
  if (f->type != DPRL_JSON_OBJECT) {
    dprl_json_describe(f, got, sizeof got);
    return dprl_fail(o->err, DPRL_EINVAL,
                     "%s: option features must be \"tabular\" or {\"tent\": K, \"low\": lo, "
                     "\"high\": hi}, got %s", o->fn, got);
  }
  static const char *const keys[] = {"tent", "low", "high"};
  for (size_t i = 0; i < f->n; i++) {
    int known = 0;
    for (int k = 0; k < 3; k++) known |= strcmp(f->keys[i], keys[k]) == 0;
    if (!known)
      return dprl_fail(o->err, DPRL_EINVAL,
                       "%s: option features has an unknown key \"%s\" (known: tent, low, high)",
                       o->fn, f->keys[i]);
  }
  double v[3];
  for (int k = 0; k < 3; k++) {
    const dprl_json *x = dprl_json_get(f, keys[k]);
    if (!x)
      return dprl_fail(o->err, DPRL_EINVAL,
                       "%s: option features needs \"%s\": {\"tent\": K, \"low\": lo, \"high\": "
                       "hi} (K anchors spread evenly over [lo, hi])", o->fn, keys[k]);
    if (x->type != DPRL_JSON_NUMBER || !isfinite(x->num)) {
      dprl_json_describe(x, got, sizeof got);
      return dprl_fail(o->err, DPRL_EINVAL, "%s: features.%s must be a finite number, got %s",
                       o->fn, keys[k], got);
    }
    v[k] = x->num;
  }
  if (!(v[0] == floor(v[0]) && v[0] >= 2 && v[0] <= 2147483647.0))
    return dprl_fail(o->err, DPRL_EINVAL,
                     "%s: features.tent must be an integer >= 2 (the number of anchors), got %g",
                     o->fn, v[0]);
  if (!(v[2] > v[1] && isfinite(v[2] - v[1])))
    return dprl_fail(o->err, DPRL_EINVAL,
                     "%s: features.high must be > features.low with a finite difference, got "
                     "low %g and high %g", o->fn, v[1], v[2]);
  if ((int64_t)v[0] != c->n_states)
    return dprl_fail(o->err, DPRL_EINVAL,
                     "%s: option n_states = %lld must equal features.tent = %lld (the anchors "
                     "are the model's states)",
                     o->fn, (long long)c->n_states, (long long)v[0]);
  c->tent = 1;
  c->low = v[1];
  c->high = v[2];
  return DPRL_OK;
}

/* The vector's size from the options: a result that could not be
** returned, or sums that could not be allocated, are refused here. */
static int check_size(dprl_mdp_config *c, const dprl_options *o, int per_entry) {
  double S = (double)c->n_states, A = (double)c->n_actions;
  double dim = S + S * A * (S + 1) + S * A;
  double most = (double)(DPRL_MAX_ALLOC / sizeof(int64_t));
  char why[128] = "one allocation can hold";
  if (c->length_limit > 0) {
    double by_length = floor((double)(c->length_limit - 4096) / (BYTES_PER_NUMBER * per_entry));
    if (by_length < most) {
      most = by_length > 0 ? by_length : 0;
      dprl_snprintf(why, sizeof why, "a result can hold within this connection's SQLITE_LIMIT_LENGTH "
               "(%lld bytes)", (long long)c->length_limit);
    }
  }
  if (dim > most)
    return dprl_fail(o->err, DPRL_EINVAL,
                     "%s: options n_states = %lld and n_actions = %lld make a model of S + S A "
                     "(S + 1) + S A = %.17g numbers, more than %s: at most %.17g numbers of up "
                     "to %d bytes", o->fn, (long long)c->n_states, (long long)c->n_actions, dim,
                     why, most, BYTES_PER_NUMBER);
  c->dim = (size_t)dim;
  unsigned ab = 0;
  while (((int64_t)1 << ab) < c->n_actions) ab++;
  c->abits = ab;
  return DPRL_OK;
}

int dprl_mdp_calibrate_grid(dprl_mdp_config *c, double g, dprl_error *err) {
  int e;
  frexp(g, &e); /* g = 2^(e - 1) */
  c->grid = g;
  c->grid_shift = e - 1 + DPRL_MDP_TICK_BITS;
  double add = c->bound + sqrt((double)c->touched) * g;
  double rep = c->bound_rep + sqrt((double)c->touched_rep) * g;
  c->sens = add > rep ? add : rep;
  double target = c->sens * c->sigma1, s = ceil(target / g);
  if (!(isfinite(ldexp(g, 53)) && s <= (double)DPRL_GAUSS_STEPS_MAX))
    return dprl_fail(err, DPRL_EINVAL,
                     "%s: epsilon = %g and delta = %g need a noise scale of %.17g, outside the "
                     "exact sampler's range on a grid of %.17g (ALGORITHMS.md §13)",
                     c->fn, c->epsilon, c->delta, target, g);
  c->steps = s < 1 ? 1 : (uint64_t)s;
  if ((double)c->steps * g < target) c->steps++; /* never round the scale down */
  c->sigma = (double)c->steps * g;
  c->rho = dprl_zcdp_rho(c->sens / g, (double)c->steps);
  return DPRL_OK;
}

/* The bounds on one episode's contribution, on the distance between two,
** and the grid (§13). */
static int calibrate(dprl_mdp_config *c, const dprl_options *o) {
  double H = (double)c->horizon, S = (double)c->n_states, A = (double)c->n_actions;
  double by_h = c->horizon ? sqrt(1 + 2 * H * H) : HUGE_VAL;
  c->bound = c->clip > 0 && c->clip < by_h ? c->clip : by_h;
  /* tabular with a horizon the clip does not cut: the bound holds in exact
  ** integer arithmetic, no clip is applied */
  c->exact_path = !c->tent && c->horizon && !(c->clip > 0 && c->clip < by_h);
  c->limit = c->bound * (1 - 0x1p-20);
  /* Replacing one episode by another (§13.1): every added vector has norm
  ** at most Delta_0, so 2 Delta_0; with a horizon, sqrt(4H^2 + H + 3) for
  ** the exact contributions, and on the general path a relative 2^-10 more
  ** for the floating-point gathering and the truncation to ticks. */
  c->bound_rep = 2 * c->bound;
  if (c->horizon) {
    double by_h_rep = sqrt(4 * H * H + H + 3) * (c->exact_path ? 1 : 1 + 0x1p-10);
    if (by_h_rep < c->bound_rep) c->bound_rep = by_h_rep;
  }
  if (c->horizon) {
    double start = c->tent ? 2 : 1, per_count = c->tent ? 4 : 1, per_reward = c->tent ? 2 : 1;
    double t = start + fmin(per_count * H, A * S * (S + 1)) + fmin(per_reward * H, A * S);
    c->touched = (int64_t)fmin(t, (double)c->dim);
  } else {
    c->touched = (int64_t)c->dim;
  }
  /* the entries where either episode's vector is not zero */
  c->touched_rep = (int64_t)fmin(2 * (double)c->touched, (double)c->dim);
  c->sigma1 = dprl_gdp_sigma(c->epsilon, c->delta, 1.0);
  double first = c->bound_rep * c->sigma1;
  if (!(isfinite(first) && first > 0))
    return dprl_fail(o->err, DPRL_EINVAL,
                     "%s: epsilon = %g and delta = %g give no finite noise scale", o->fn,
                     c->epsilon, c->delta);
  double g = dprl_grid_for(first);
  return dprl_mdp_calibrate_grid(c, g > GRID_FLOOR ? g : GRID_FLOOR, o->err);
}

int dprl_mdp_parse_options(dprl_mdp_config *c, const dprl_options *o, int plan) {
  static const char *const releases[] = {"private", "diagnostic", NULL};
  int rc;
  if ((rc = dprl_opt_int(o, "n_states", 1, 0, DPRL_CLOSED(1, 2147483647.0), &c->n_states)) ||
      (rc = dprl_opt_int(o, "n_actions", 1, 0, DPRL_CLOSED(1, 2147483647.0), &c->n_actions)) ||
      (rc = dprl_opt_number(o, "gamma", 1, 0, DPRL_CLOSED(0, 1), &c->gamma)) ||
      (rc = dprl_opt_reward_bounds(o, &c->rmin, &c->rmax)) ||
      (rc = dprl_opt_number(o, "epsilon", 1, 0, DPRL_POSITIVE, &c->epsilon)) ||
      (rc = dprl_opt_number(o, "delta", 1, 0, DPRL_OPEN(0, 1), &c->delta)) ||
      (rc = dprl_opt_int(o, "horizon", 0, 0, DPRL_CLOSED(1, 0x1p40), &c->horizon)) ||
      (rc = dprl_opt_number(o, "clip", 0, 0, DPRL_OPEN(0, 0x1p500), &c->clip)))
    return rc;
  c->center = c->rmin / 2 + c->rmax / 2;
  c->half = c->rmax / 2 - c->rmin / 2;
  if (!(c->half > 0 && isfinite(c->half) && isfinite(c->epsilon)))
    return dprl_fail(o->err, DPRL_EINVAL,
                     "%s: options rmin = %g, rmax = %g and epsilon = %g must be finite", o->fn,
                     c->rmin, c->rmax, c->epsilon);
  if (!c->horizon && !(c->clip > 0))
    return dprl_fail(o->err, DPRL_EINVAL,
                     "%s: option horizon (only the first H steps of an episode count) or option "
                     "clip (a public l2 bound on one episode's contribution) is required: "
                     "without one, one episode could move the release without bound", o->fn);
  if ((rc = parse_features(c, o))) return rc;
  if (!plan && ((rc = dprl_opt_choice(o, "release", releases, 0, &c->diagnostic)) ||
                (rc = dprl_opt_seed(o, &c->has_seed, &c->seed)) ||
                (rc = dprl_opt_name(o, "budget", &c->budget))))
    return rc;
  if ((rc = check_size(c, o, plan ? 1 : c->diagnostic ? 2 : 1))) return rc;
  return calibrate(c, o);
}

int dprl_mdp_config_parse(dprl_mdp_config *c, const char *fn, const char *text, size_t len,
                          int64_t length_limit, dprl_cancel *cancel, dprl_error *err) {
  dprl_options o;
  memset(c, 0, sizeof *c);
  c->fn = fn;
  c->length_limit = length_limit;
  int rc = dprl_options_open_polled(&o, fn, text, len, dprl_mdp_option_names, cancel, err);
  if (!rc) rc = dprl_mdp_parse_options(c, &o, 0);
  dprl_options_close(&o);
  if (rc) dprl_mdp_config_free(c);
  return rc;
}

void dprl_mdp_config_free(dprl_mdp_config *c) {
  dprl_free(c->budget);
  c->budget = NULL;
}
