/*
** mdp_config.c: dp_mdp's options and its public calibration (mdp.h,
** ALGORITHMS.md §13).  Everything here is computed from the options
** alone, before any row is read, so a refusal cannot depend on the data.
*/
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/json.h"
#include "dp/accountant.h"
#include "dp/zcdp.h"
#include "mdp/internal.h"

const char *const dprl_mdp_option_names[] = {
    "n_states", "n_actions", "gamma", "rmin", "rmax", "epsilon", "delta", "horizon", "clip",
    "features", "transitions", "max_cells", "seed", "budget", "release", "clip_quantile",
    "clip_share", NULL};

/* A result holds at most this many bytes per number (a noisy count in its
** shortest round-trip form and its comma). */
#define BYTES_PER_NUMBER 25
/* A kept cell [s, a, s', count]: three integers of up to 10 digits, a
** number, brackets and commas. */
#define BYTES_PER_CELL 64

/* The grid is never finer than 2^-12 count units: every entry is clamped
** to 2^51 grid steps (noise.c's exact range), and 2^51 * 2^-12 = 2^39
** counts is as many steps as a release takes (DPRL_MDP_MAX_STEPS). */
#define GRID_FLOOR 0x1p-12

#define FEATURES_FORMS                                                                       \
  "\"tabular\", {\"aggregate\": k}, {\"map\": [g_0, ..., g_{R-1}]} or {\"tent\": K, "         \
  "\"low\": lo, \"high\": hi}"

/* {"aggregate": k}: a row's state s counts in group floor(s / k); the
** groups are the model's n_states states, so s is in 0..k n_states - 1. */
static int parse_aggregate(dprl_mdp_config *c, const dprl_options *o, const dprl_json *k) {
  if (!(k->type == DPRL_JSON_NUMBER && k->num == floor(k->num) && k->num >= 1 &&
        k->num <= 2147483647.0)) {
    char got[64];
    dprl_json_describe(k, got, sizeof got);
    return dprl_fail(o->err, DPRL_EINVAL,
                     "%s: features.aggregate must be an integer in [1, 2^31 - 1] (the states a "
                     "group holds: state s counts in group floor(s / k)), got %s", o->fn, got);
  }
  c->agg_k = (int64_t)k->num;
  c->raw_states = c->agg_k * c->n_states; /* < 2^62 */
  return DPRL_OK;
}

/* {"map": [g_0, ..., g_{R-1}]}: a row's state s in 0..R-1 counts in group
** g_s; every g_s is a state of the model, 0..n_states - 1, and every one
** of those is some state's group.  The result echoes the map. */
static int parse_map(dprl_mdp_config *c, const dprl_options *o, const dprl_json *m,
                     dprl_cancel *cancel) {
  char got[64];
  if (m->type != DPRL_JSON_ARRAY || m->n == 0) {
    dprl_json_describe(m, got, sizeof got);
    return dprl_fail(o->err, DPRL_EINVAL,
                     "%s: features.map must be a non-empty array of group numbers, one per "
                     "state (state s counts in group map[s]), got %s", o->fn, got);
  }
  if (m->n > 2147483647u)
    return dprl_fail(o->err, DPRL_EINVAL,
                     "%s: features.map has %zu states, more than 2^31 - 1", o->fn, m->n);
  int64_t S = c->n_states;
  if ((double)S > (double)m->n) /* before a table of S marks */
    return dprl_fail(o->err, DPRL_EINVAL,
                     "%s: features.map has %zu states for n_states = %lld groups: each group "
                     "must be some state's, so n_states is at most the map's length", o->fn,
                     m->n, (long long)S);
  size_t echo = 1; /* [g_0,g_1,...]: the brackets, less the comma the last entry has not */
  unsigned char *hit = dprl_calloc((size_t)S, 1);
  c->map = dprl_malloc_array(m->n, sizeof *c->map);
  if (!hit || !c->map) {
    dprl_free(hit);
    return dprl_nomem(o->err);
  }
  int rc = DPRL_OK;
  int64_t groups = 0;
  for (size_t i = 0; i < m->n && !rc; i++) {
    if ((rc = dprl_cancel_poll(cancel, 100, o->err))) break;
    const dprl_json *g = m->items[i];
    if (!(g->type == DPRL_JSON_NUMBER && g->num == floor(g->num) && g->num >= 0 &&
          g->num < (double)S)) {
      dprl_json_describe(g, got, sizeof got);
      rc = dprl_fail(o->err, DPRL_EINVAL,
                     "%s: features.map[%zu] must be a group, an integer in 0..n_states-1 = "
                     "0..%lld, got %s", o->fn, i, (long long)S - 1, got);
      break;
    }
    int32_t v = (int32_t)g->num;
    c->map[i] = v;
    groups += !hit[v];
    hit[v] = 1;
    char digits[16];
    echo += (size_t)dprl_snprintf(digits, sizeof digits, "%d", (int)v) + 1;
  }
  for (int64_t v = 0; !rc && groups < S && v < S; v++)
    if (!hit[v])
      rc = dprl_fail(o->err, DPRL_EINVAL,
                     "%s: features.map gives group %lld to no state: the groups are the model's "
                     "n_states = %lld states, each some state's group (the map uses %lld of "
                     "them)", o->fn, (long long)v, (long long)S, (long long)groups);
  dprl_free(hit);
  if (rc) return rc;
  c->raw_states = (int64_t)m->n;
  c->echo_bytes = echo;
  if (c->length_limit > 0 && (double)echo > (double)c->length_limit - 4096)
    return dprl_fail(o->err, DPRL_EINVAL,
                     "%s: features.map of %zu states is echoed in the result in %zu bytes, more "
                     "than this connection's SQLITE_LIMIT_LENGTH (%lld bytes) leaves beside the "
                     "model", o->fn, m->n, echo, (long long)c->length_limit);
  return DPRL_OK;
}

/* {"tent": K, "low": lo, "high": hi}. */
static int parse_tent(dprl_mdp_config *c, const dprl_options *o, const dprl_json *f) {
  static const char *const keys[] = {"tent", "low", "high"};
  char got[64];
  for (size_t i = 0; i < f->n; i++) {
    int known = 0;
    for (int k = 0; k < 3; k++) known |= strcmp(f->keys[i], keys[k]) == 0;
    if (!known)
      return dprl_fail(o->err, DPRL_EINVAL,
                       "%s: option features has an unknown key \"%s\" (known: aggregate, map, "
                       "or tent, low, high)", o->fn, f->keys[i]);
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
  c->raw_states = 0;
  c->low = v[1];
  c->high = v[2];
  return DPRL_OK;
}

/* "tabular", {"aggregate": k}, {"map": [...]} or {"tent": K, "low": lo,
** "high": hi}; n_states is the model's states (groups, anchors). */
static int parse_features(dprl_mdp_config *c, const dprl_options *o, dprl_cancel *cancel) {
  const dprl_json *f = dprl_opt_get(o, "features");
  char got[64];
  c->raw_states = c->n_states;
  if (!f || (f->type == DPRL_JSON_STRING && strcmp(f->str, "tabular") == 0)) return DPRL_OK;
  if (f->type != DPRL_JSON_OBJECT) {
    dprl_json_describe(f, got, sizeof got);
    return dprl_fail(o->err, DPRL_EINVAL, "%s: option features must be " FEATURES_FORMS ", got %s",
                     o->fn, got);
  }
  const char *one = dprl_json_get(f, "aggregate") ? "aggregate"
                    : dprl_json_get(f, "map")     ? "map"
                                                  : NULL;
  if (!one) return parse_tent(c, o, f);
  if (f->n != 1)
    return dprl_fail(o->err, DPRL_EINVAL,
                     "%s: option features {\"%s\": ...} takes no other key, got %zu keys (the "
                     "forms: " FEATURES_FORMS ")", o->fn, one, f->n);
  return one[0] == 'a' ? parse_aggregate(c, o, f->items[0])
                       : parse_map(c, o, f->items[0], cancel);
}

/* The bytes of a result besides its arrays: 4,096 for the keys, the echoed
** options, and with the automatic clip its grid and histogram (§13.6). */
static double head_room(const dprl_mdp_config *c) {
  double auto_clip = c->clip_auto ? 2.0 * DPRL_MDP_EDGES_MAX * BYTES_PER_NUMBER + 256 : 0;
  return 4096 + (double)c->echo_bytes + auto_clip;
}

/* The result's length from the options, for a layout: dense, every entry
** of the dense vector; sparse, its dense parts and the cells_max cells. */
static void length_room(const dprl_mdp_config *c, int per_entry, double *most, char *why,
                        size_t n) {
  *most = (double)(DPRL_MAX_ALLOC / sizeof(int64_t));
  dprl_snprintf(why, n, "one allocation can hold");
  if (c->length_limit > 0) {
    double by_length = floor(((double)c->length_limit - head_room(c)) /
                             (BYTES_PER_NUMBER * per_entry));
    if (by_length < *most) {
      *most = by_length > 0 ? by_length : 0;
      dprl_snprintf(why, n, "a result can hold within this connection's SQLITE_LIMIT_LENGTH "
                    "(%lld bytes)", (long long)c->length_limit);
    }
  }
}

/* A step's (s, a) in 32 bits, s << abits | a; with an outcome the top bit
** is the censored flag, so S 2^abits must be at most 2^31. */
static int pack_bits(dprl_mdp_config *c, const dprl_options *o) {
  unsigned ab = 0;
  while (((int64_t)1 << ab) < c->n_actions) ab++;
  c->abits = ab;
  if (c->outcome && !c->tent && (double)c->n_states * ldexp(1, (int)ab) > 0x1p31)
    return dprl_fail(o->err, DPRL_EINVAL,
                     "%s: options n_states = %lld and n_actions = %lld are too many with an "
                     "outcome argument: S 2^ceil(log2 A) must be at most 2^31", o->fn,
                     (long long)c->n_states, (long long)c->n_actions);
  return DPRL_OK;
}

/* The dense vector's size from the options: a result that could not be
** returned, or sums that could not be allocated, are refused here. */
static int check_size(dprl_mdp_config *c, const dprl_options *o, int per_entry) {
  double S = (double)c->n_states, A = (double)c->n_actions;
  double dim = S + S * A * (S + 1) + S * A * (c->outcome ? 2 : 1), most;
  char why[128];
  length_room(c, per_entry, &most, why, sizeof why);
  if (dim > most)
    return dprl_fail(o->err, DPRL_EINVAL,
                     "%s: options n_states = %lld and n_actions = %lld make a model of S + S A "
                     "(S + 1) + %sS A = %.17g numbers, more than %s: at most %.17g numbers of up "
                     "to %d bytes", o->fn, (long long)c->n_states, (long long)c->n_actions,
                     c->outcome ? "2 " : "", dim, why, most, BYTES_PER_NUMBER);
  c->dim = (size_t)dim;
  return pack_bits(c, o);
}

/* The sparse layout's sizes (§13.5): its dense parts S + 3 S A must fit
** beside at least one cell, a cell's key (s A + a) S + s' fits 62 bits and
** a step's (s, a) 32 bits; max_cells defaults to the cells that fit the
** result's length, at most S A S. */
static int check_size_sparse(dprl_mdp_config *c, const dprl_options *o, int per_entry) {
  double S = (double)c->n_states, A = (double)c->n_actions;
  double dense = S + (c->outcome ? 4 : 3) * S * A, cells = S * A * S, most;
  char why[128];
  int rc = pack_bits(c, o);
  if (rc) return rc;
  if (!(cells <= 0x1p62) || S * ldexp(1, (int)c->abits) > 0x1p32)
    return dprl_fail(o->err, DPRL_EINVAL,
                     "%s: options n_states = %lld and n_actions = %lld are too many for the sparse "
                     "layout: S A S must be at most 2^62 and S 2^ceil(log2 A) at most 2^32",
                     o->fn, (long long)c->n_states, (long long)c->n_actions);
  length_room(c, per_entry, &most, why, sizeof why);
  double room = c->length_limit > 0
                    ? floor(((double)c->length_limit - head_room(c) -
                             dense * BYTES_PER_NUMBER * per_entry) / (BYTES_PER_CELL * per_entry))
                    : cells;
  if (dense > most || !(room >= 1))
    return dprl_fail(o->err, DPRL_EINVAL,
                     "%s: options n_states = %lld and n_actions = %lld make a sparse model whose "
                     "dense parts S + %d S A = %.17g numbers leave no room for a cell in what %s "
                     "(numbers of up to %d bytes, cells of up to %d)", o->fn,
                     (long long)c->n_states, (long long)c->n_actions, c->outcome ? 4 : 3, dense, why,
                     BYTES_PER_NUMBER, BYTES_PER_CELL);
  double top = fmin(room, cells);
  if (!dprl_opt_has(o, "max_cells")) {
    c->cells_max = (int64_t)top;
  } else {
    rc = dprl_opt_int(o, "max_cells", 0, 0, DPRL_CLOSED(1, top), &c->cells_max);
    const dprl_json *v = dprl_opt_get(o, "max_cells");
    if (rc && v->type == DPRL_JSON_NUMBER && v->num == floor(v->num)) { /* out of range: why */
      char tail[200];
      dprl_snprintf(tail, sizeof tail, " (at most S A S = %.17g cells%s)", cells,
                    top < cells ? ", and what fits this connection's SQLITE_LIMIT_LENGTH" : "");
      size_t k = strlen(o->err->msg);
      dprl_snprintf(o->err->msg + k, sizeof o->err->msg - k, "%s", tail);
    }
    if (rc) return rc;
  }
  c->dim = (size_t)dense;
  return DPRL_OK;
}

/* Whether a scale of s grid steps for sensitivity k (in steps) fits:
** "clip": "auto" (§13.6), gq.rho + k^2 / (2 s^2) <= rho_cap, the sum
** rounded up, so the charge rho_cap holds whatever C is; sparse (§13.5),
** rho = k^2 / (2 s^2) converts to (epsilon, delta_gauss) (dp/zcdp.c). */
static int scale_fits(const dprl_mdp_config *c, double k, uint64_t s) {
  double rho = dprl_zcdp_rho(k, (double)s);
  if (c->clip_auto) return nextafter(c->gq.rho + rho, INFINITY) <= c->rho_cap;
  return dprl_zcdp_eps(rho, c->delta_gauss) <= c->epsilon;
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
  if (c->clip_auto || c->sparse) {
    /* the smallest s that fits (scale_fits); sigma1 put s within a step
    ** or two of it */
    double k = c->sens / g;
    while (c->steps > 1 && scale_fits(c, k, c->steps - 1)) c->steps--;
    while (!scale_fits(c, k, c->steps)) {
      if (c->steps >= DPRL_GAUSS_STEPS_MAX)
        return dprl_fail(err, DPRL_EINVAL,
                         "%s: epsilon = %g and delta = %g need a noise scale outside the exact "
                         "sampler's range on a grid of %.17g (ALGORITHMS.md %s)", c->fn,
                         c->epsilon, c->delta, g, c->clip_auto ? "§13.6" : "§13.5");
      c->steps++;
    }
  }
  c->sigma = (double)c->steps * g;
  c->rho = c->clip_auto ? c->rho_cap : dprl_zcdp_rho(c->sens / g, (double)c->steps);
  if (c->sparse) /* rounded up: T_c exp(-tau^2 / (2 sigma^2)) <= delta_thr */
    c->tau = c->sigma * sqrt(2 * log((double)c->new_cells / c->delta_thr)) * (1 + 0x1p-40);
  return DPRL_OK;
}

/* The sparse layout (§13.5): the dense parts, the totals N(s, a) among
** them, and the cells; a horizon is required.  Its Gaussian part is
** calibrated by the zCDP conversion at delta_gauss = delta / 2, its
** threshold to delta_thr = delta_gauss / (1 + e^eps). */
static int calibrate_sparse(dprl_mdp_config *c, dprl_error *err) {
  double H = (double)c->horizon, S = (double)c->n_states, A = (double)c->n_actions;
  double by_h = sqrt(1 + 3 * H * H);
  c->bound = c->clip > 0 && c->clip < by_h ? c->clip : by_h;
  c->exact_path = !c->tent && !c->clip_auto && !(c->clip > 0 && c->clip < by_h);
  c->limit = c->bound * (1 - 0x1p-20);
  c->bound_rep = 2 * c->bound;
  double by_h_rep = sqrt(6 * H * H + H + 3) * (c->exact_path ? 1 : 1 + 0x1p-10);
  if (by_h_rep < c->bound_rep) c->bound_rep = by_h_rep;
  /* the whole vector: start, every count cell with the ends, rewards,
  ** totals (and the censored ends); an episode touches at most S A S cells
  ** and one end entry (two with tent), so the cap S A (S + 1) holds with
  ** outcomes too */
  double full = S + S * A * (S + 1) + 2 * S * A + (c->outcome ? S * A : 0);
  double start = c->tent ? 2 : 1, per_count = c->tent ? 4 : 1, per_pair = c->tent ? 2 : 1;
  double t = start + fmin(per_count * H, A * S * (S + 1)) + 2 * fmin(per_pair * H, A * S);
  c->touched = (int64_t)fmin(t, full);
  c->touched_rep = (int64_t)fmin(2 * (double)c->touched, full);
  c->new_cells = (int64_t)fmin(per_count * H, S * A * S);
  c->delta_gauss = c->delta / 2;
  c->delta_thr = c->delta_gauss / (1 + exp(c->epsilon)) * (1 - 0x1p-50);
  if (!(c->delta_thr >= DBL_MIN)) /* then T_c / delta_0 is finite, and so is tau */
    return dprl_fail(err, DPRL_EINVAL,
                     "%s: epsilon = %g is too large for the sparse release: its threshold's "
                     "delta_0 = (delta/2)/(1 + e^epsilon) = %g is below the smallest normal "
                     "double (ALGORITHMS.md §13.5); give a smaller epsilon or \"transitions\": "
                     "\"dense\"", c->fn, c->epsilon, c->delta_thr);
  double rho = c->clip_auto ? c->rho_cap - c->gq.rho
                            : dprl_zcdp_rho_left(0, 0, 0, c->epsilon, c->delta_gauss);
  c->sigma1 = rho > 0 ? 1 / sqrt(2 * rho) : HUGE_VAL;
  double first = c->bound_rep * c->sigma1;
  if (!(isfinite(first) && first > 0))
    return dprl_fail(err, DPRL_EINVAL,
                     "%s: epsilon = %g and delta = %g give no finite noise scale", c->fn,
                     c->epsilon, c->delta);
  double g = dprl_grid_for(first);
  return dprl_mdp_calibrate_grid(c, g > GRID_FLOOR ? g : GRID_FLOOR, err);
}

/* The bounds on one episode's contribution, on the distance between two,
** and the grid (§13). */
int dprl_mdp_calibrate(dprl_mdp_config *c, dprl_error *err) {
  double H = (double)c->horizon, S = (double)c->n_states, A = (double)c->n_actions;
  if (c->sparse) return calibrate_sparse(c, err);
  double by_h = c->horizon ? sqrt(1 + 2 * H * H) : HUGE_VAL;
  c->bound = c->clip > 0 && c->clip < by_h ? c->clip : by_h;
  /* tabular with a horizon the clip does not cut: the bound holds in exact
  ** integer arithmetic, no clip is applied */
  c->exact_path = !c->tent && c->horizon && !c->clip_auto && !(c->clip > 0 && c->clip < by_h);
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
    /* the counts: an end (censored or not) is one of an episode's count
    ** entries, and it touches one end entry at most, so the cap holds */
    double t = start + fmin(per_count * H, A * S * (S + 1)) + fmin(per_reward * H, A * S);
    c->touched = (int64_t)fmin(t, (double)c->dim);
  } else {
    c->touched = (int64_t)c->dim;
  }
  /* the entries where either episode's vector is not zero */
  c->touched_rep = (int64_t)fmin(2 * (double)c->touched, (double)c->dim);
  c->sigma1 = c->clip_auto ? 1 / sqrt(2 * (c->rho_cap - c->gq.rho))
                           : dprl_gdp_sigma(c->epsilon, c->delta, 1.0);
  double first = c->bound_rep * c->sigma1;
  if (!(isfinite(first) && first > 0))
    return dprl_fail(err, DPRL_EINVAL,
                     "%s: epsilon = %g and delta = %g give no finite noise scale", c->fn,
                     c->epsilon, c->delta);
  double g = dprl_grid_for(first);
  return dprl_mdp_calibrate_grid(c, g > GRID_FLOOR ? g : GRID_FLOOR, err);
}

/* "transitions": "auto" (sparse above DPRL_MDP_AUTO_SPARSE count entries
** when a horizon is given), "dense" or "sparse" (needs a horizon). */
static int parse_transitions(dprl_mdp_config *c, const dprl_options *o) {
  static const char *const kinds[] = {"auto", "dense", "sparse", NULL};
  int kind, rc = dprl_opt_choice(o, "transitions", kinds, 0, &kind);
  if (rc) return rc;
  double S = (double)c->n_states, entries = S * (double)c->n_actions * (S + 1);
  if (kind == 2 && !c->horizon)
    return dprl_fail(o->err, DPRL_EINVAL,
                     "%s: option transitions \"sparse\" needs option horizon: the threshold's "
                     "delta counts the cells one episode can add, at most one per counted step",
                     o->fn);
  c->sparse = kind == 2 || (kind == 0 && c->horizon && entries > DPRL_MDP_AUTO_SPARSE);
  if (!c->sparse && dprl_opt_has(o, "max_cells"))
    return dprl_fail(o->err, DPRL_EINVAL,
                     "%s: option max_cells applies to a sparse release, and this one is dense "
                     "(%s)", o->fn,
                     kind == 1 ? "transitions \"dense\""
                               : c->horizon ? "transitions \"auto\" with S A (S + 1) at most 65536"
                                            : "transitions \"auto\" without a horizon");
  return DPRL_OK;
}

int dprl_mdp_parse_options(dprl_mdp_config *c, const dprl_options *o, int plan,
                           dprl_cancel *cancel) {
  static const char *const releases[] = {"private", "diagnostic", NULL};
  int rc;
  if ((rc = dprl_opt_int(o, "n_states", 1, 0, DPRL_CLOSED(1, 2147483647.0), &c->n_states)) ||
      (rc = dprl_opt_int(o, "n_actions", 1, 0, DPRL_CLOSED(1, 2147483647.0), &c->n_actions)) ||
      (rc = dprl_opt_number(o, "gamma", 1, 0, DPRL_CLOSED(0, 1), &c->gamma)) ||
      (rc = dprl_opt_reward_bounds(o, &c->rmin, &c->rmax)) ||
      (rc = dprl_opt_number(o, "epsilon", 1, 0, DPRL_POSITIVE, &c->epsilon)) ||
      (rc = dprl_opt_number(o, "delta", 1, 0, DPRL_OPEN(0, 1), &c->delta)) ||
      (rc = dprl_opt_int(o, "horizon", 0, 0, DPRL_CLOSED(1, 0x1p40), &c->horizon)))
    return rc;
  /* The clip: a number, "none" (needs a horizon) or "auto", the default where a horizon
  ** bounds the episode (the measured evidence of ALGORITHMS.md 13.6: without a clip the
  ** noise of a long horizon swamps the model). */
  const dprl_json *clip = dprl_opt_get(o, "clip");
  int is_str = clip && clip->type == DPRL_JSON_STRING;
  int is_none = is_str && clip->n == 4 && memcmp(clip->str, "none", 4) == 0;
  c->clip_auto = is_str ? clip->n == 4 && memcmp(clip->str, "auto", 4) == 0
                        : !clip && c->horizon;
  if (is_str && !c->clip_auto && !is_none) {
    char got[64];
    dprl_json_describe(clip, got, sizeof got);
    return dprl_fail(o->err, DPRL_EINVAL,
                     "%s: option clip must be a number > 0 (a public l2 bound on one episode's "
                     "contribution), \"auto\" (chosen privately) or \"none\", got %s", o->fn, got);
  }
  if (!is_str && (rc = dprl_opt_number(o, "clip", 0, 0, DPRL_OPEN(0, 0x1p500), &c->clip)))
    return rc;
  c->center = c->rmin / 2 + c->rmax / 2;
  c->half = c->rmax / 2 - c->rmin / 2;
  if (!(c->half > 0 && isfinite(c->half) && isfinite(c->epsilon)))
    return dprl_fail(o->err, DPRL_EINVAL,
                     "%s: options rmin = %g, rmax = %g and epsilon = %g must be finite", o->fn,
                     c->rmin, c->rmax, c->epsilon);
  if (!c->horizon && is_none)
    return dprl_fail(o->err, DPRL_EINVAL,
                     "%s: option clip \"none\" needs option horizon (only the first H steps of "
                     "an episode count): without either bound, one episode could move the release "
                     "without bound", o->fn);
  if (!c->horizon && !(c->clip > 0) && !c->clip_auto)
    return dprl_fail(o->err, DPRL_EINVAL,
                     "%s: option horizon (only the first H steps of an episode count) or option "
                     "clip (a public l2 bound on one episode's contribution) is required: "
                     "without one, one episode could move the release without bound", o->fn);
  if ((rc = parse_features(c, o, cancel))) return rc;
  if (!plan && ((rc = dprl_opt_choice(o, "release", releases, 0, &c->diagnostic)) ||
                (rc = dprl_opt_seed(o, &c->has_seed, &c->seed)) ||
                (rc = dprl_opt_name(o, "budget", &c->budget))))
    return rc;
  if ((rc = parse_transitions(c, o)) || (rc = dprl_mdp_auto_options(c, o))) return rc;
  int per_entry = plan ? 1 : c->diagnostic ? 2 : 1;
  if ((rc = c->sparse ? check_size_sparse(c, o, per_entry) : check_size(c, o, per_entry)))
    return rc;
  rc = dprl_mdp_calibrate(c, o->err);
  return !rc && c->clip_auto ? dprl_mdp_auto_check(c, o->err) : rc;
}

int dprl_mdp_config_parse(dprl_mdp_config *c, const char *fn, const char *text, size_t len,
                          int64_t length_limit, int outcome, dprl_cancel *cancel,
                          dprl_error *err) {
  dprl_options o;
  memset(c, 0, sizeof *c);
  c->fn = fn;
  c->length_limit = length_limit;
  c->outcome = outcome != 0;
  int rc = dprl_options_open_polled(&o, fn, text, len, dprl_mdp_option_names, cancel, err);
  if (!rc) rc = dprl_mdp_parse_options(c, &o, 0, cancel);
  dprl_options_close(&o);
  if (rc) dprl_mdp_config_free(c);
  return rc;
}

void dprl_mdp_config_free(dprl_mdp_config *c) {
  dprl_free(c->budget);
  c->budget = NULL;
  dprl_free(c->map);
  c->map = NULL;
}
