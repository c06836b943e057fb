/* model.c: a dp_mdp release read and checked, and the MDP estimated from it
** (model.h); the sparse layout's parts are model_sparse.c's. */
#include "mdp/model.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/options.h"
#include "mdp/model_internal.h"

/* A required member of the model; "model: key \"sigma\" is missing". */
const dprl_json *dprl_mdpv_member(const dprl_json *root, const char *key, dprl_error *err) {
  const dprl_json *v = dprl_json_get(root, key);
  if (!v)
    dprl_fail(err, DPRL_EINVAL,
              "model: key \"%s\" is missing (a dp_mdp result has every key of the contract)", key);
  return v;
}

void dprl_mdpv_plural(char *out, size_t n, size_t k, const char *noun) {
  dprl_snprintf(out, n, "%zu %s%s", k, noun, k == 1 ? "" : "s");
}

int dprl_mdpv_got(const dprl_json *v, char *out, size_t n) {
  if (v->type == DPRL_JSON_ARRAY && v->nums) {
    char k[48];
    dprl_mdpv_plural(k, sizeof k, v->n, "number");
    dprl_snprintf(out, n, "an array of %s", k);
  } else {
    dprl_json_describe(v, out, n);
  }
  return 0;
}

/* A finite number in r. */
static int number(const dprl_json *root, const char *key, dprl_range r, double *out,
                  dprl_error *err) {
  const dprl_json *v = dprl_mdpv_member(root, key, err);
  if (!v) return DPRL_EINVAL;
  char g[96], want[64];
  dprl_range_describe(r, want, sizeof want);
  if (v->type != DPRL_JSON_NUMBER || !(fabs(v->num) <= DPRL_MDPV_NUMBER_MAX) ||
      !dprl_range_contains(r, v->num)) {
    dprl_mdpv_got(v, g, sizeof g);
    return dprl_fail(err, DPRL_EINVAL,
                     "model: %s must be a finite number and %s, of magnitude at most 10^150, "
                     "got %s", key, want, g);
  }
  *out = v->num;
  return DPRL_OK;
}

/* An integer in [lo, hi]; null allowed (then 0) when nullable. */
static int integer(const dprl_json *root, const char *key, int64_t lo, int64_t hi,
                   int nullable, int64_t *out, dprl_error *err) {
  const dprl_json *v = dprl_mdpv_member(root, key, err);
  if (!v) return DPRL_EINVAL;
  if (nullable && v->type == DPRL_JSON_NULL) {
    *out = 0;
    return DPRL_OK;
  }
  if (v->type != DPRL_JSON_NUMBER || !(v->num >= (double)lo && v->num <= (double)hi) ||
      v->num != floor(v->num)) {
    char g[96];
    dprl_mdpv_got(v, g, sizeof g);
    return dprl_fail(err, DPRL_EINVAL, "model: %s must be an integer in [%lld, %lld]%s, got %s",
                     key, (long long)lo, (long long)hi, nullable ? " or null" : "", g);
  }
  *out = (int64_t)v->num;
  return DPRL_OK;
}

static int boolean(const dprl_json *root, const char *key, int required, dprl_error *err) {
  const dprl_json *v = required ? dprl_mdpv_member(root, key, err) : dprl_json_get(root, key);
  if (!v) return required ? DPRL_EINVAL : DPRL_OK;
  if (v->type != DPRL_JSON_TRUE && v->type != DPRL_JSON_FALSE) {
    char g[96];
    dprl_mdpv_got(v, g, sizeof g);
    return dprl_fail(err, DPRL_EINVAL, "model: %s must be true or false, got %s", key, g);
  }
  return DPRL_OK;
}

/* v (named what) must be an array of exactly n finite numbers; its values. */
const double *dprl_mdpv_numbers(const dprl_json *v, const char *what, size_t n, const char *size,
                             dprl_error *err) {
  char g[96];
  if (v->type != DPRL_JSON_ARRAY || v->n != n) {
    if (v->type == DPRL_JSON_ARRAY) dprl_mdpv_plural(g, sizeof g, v->n, "item");
    else dprl_mdpv_got(v, g, sizeof g);
    dprl_fail(err, DPRL_EINVAL, "model: %s must be an array of %s = %zu numbers, got %s", what,
              size, n, g);
    return NULL;
  }
  for (size_t i = 0; i < n; i++) {
    const dprl_json *item = v->nums ? NULL : v->items[i];
    if (item ? item->type != DPRL_JSON_NUMBER || !(fabs(item->num) <= DPRL_MDPV_NUMBER_MAX)
             : !(fabs(v->nums[i]) <= DPRL_MDPV_NUMBER_MAX)) {
      if (item) dprl_json_describe(item, g, sizeof g);
      else dprl_json_num(v->nums[i], g, sizeof g);
      dprl_fail(err, DPRL_EINVAL,
                "model: %s[%zu] must be a finite number of magnitude at most 10^150, got %s",
                what, i, g);
      return NULL;
    }
  }
  if (n && !v->nums) { /* only numbers, but stored as nodes: an array read as nodes */
    dprl_fail(err, DPRL_EINVAL, "model: %s must be an array of numbers", what);
    return NULL;
  }
  return v->nums;
}

/* v (named what) must be an array of n arrays; "counts must be an array of
** n_states = 3 arrays, got 2 items". */
int dprl_mdpv_arrays(const dprl_json *v, const char *what, size_t n, const char *size,
                  dprl_error *err) {
  char g[96];
  if (v->type == DPRL_JSON_ARRAY && v->n == n && (n == 0 || v->items)) {
    for (size_t i = 0; i < n; i++)
      if (v->items[i]->type != DPRL_JSON_ARRAY) {
        dprl_mdpv_got(v->items[i], g, sizeof g);
        return dprl_fail(err, DPRL_EINVAL, "model: %s[%zu] must be an array, got %s", what, i,
                         g);
      }
    return DPRL_OK;
  }
  if (v->type == DPRL_JSON_ARRAY)
    dprl_mdpv_plural(g, sizeof g, v->n, v->nums ? "number" : "item");
  else dprl_mdpv_got(v, g, sizeof g);
  return dprl_fail(err, DPRL_EINVAL, "model: %s must be an array of %s = %zu arrays, got %s",
                   what, size, n, g);
}

/* {"aggregate": k} or {"map": [...]}: the release counted groups of the
** rows' states, and the model is tabular over its n_states groups. */
static int grouped(const dprl_json *f, dprl_mdpv_model *m, dprl_error *err) {
  const dprl_json *v = f->n == 1 ? f->items[0] : NULL;
  char g[96];
  int agg = strcmp(f->keys[0], "aggregate") == 0;
  if (agg && v && v->type == DPRL_JSON_NUMBER && v->num == floor(v->num) && v->num >= 1)
    return DPRL_OK;
  for (size_t i = 0; !agg && v && v->type == DPRL_JSON_ARRAY && v->nums && i <= v->n; i++) {
    if (i == v->n) return DPRL_OK;
    if (!(v->nums[i] == floor(v->nums[i]) && v->nums[i] >= 0 && v->nums[i] < (double)m->S))
      return dprl_fail(err, DPRL_EINVAL, "model: features.map[%zu] must be a group in "
                       "0..n_states-1 = 0..%lld", i, (long long)m->S - 1);
  }
  dprl_mdpv_got(f, g, sizeof g);
  return dprl_fail(err, DPRL_EINVAL, "model: features must be {\"aggregate\": k >= 1} or "
                   "{\"map\": [g_0, ...]} (integer groups), got %s", g);
}

static int features(const dprl_json *root, dprl_mdpv_model *m, dprl_error *err) {
  const dprl_json *f = dprl_mdpv_member(root, "features", err);
  if (!f) return DPRL_EINVAL;
  if (f->type == DPRL_JSON_STRING && strcmp(f->str, "tabular") == 0) return DPRL_OK;
  if (f->type == DPRL_JSON_OBJECT && f->n >= 1 &&
      (strcmp(f->keys[0], "aggregate") == 0 || strcmp(f->keys[0], "map") == 0))
    return grouped(f, m, err);
  const dprl_json *k = f->type == DPRL_JSON_OBJECT ? dprl_json_get(f, "tent") : NULL;
  const dprl_json *lo = k ? dprl_json_get(f, "low") : NULL, *hi = k ? dprl_json_get(f, "high") : NULL;
  if (!k || !lo || !hi || k->type != DPRL_JSON_NUMBER || lo->type != DPRL_JSON_NUMBER ||
      hi->type != DPRL_JSON_NUMBER || !isfinite(lo->num) || !isfinite(hi->num) ||
      !(lo->num < hi->num)) {
    char g[96];
    dprl_mdpv_got(f, g, sizeof g);
    return dprl_fail(err, DPRL_EINVAL,
                     "model: features must be \"tabular\", {\"aggregate\": k}, {\"map\": [...]} "
                     "or {\"tent\": K, \"low\": lo, \"high\": hi} with finite lo < hi, got %s", g);
  }
  if (k->num != (double)m->S)
    return dprl_fail(err, DPRL_EINVAL,
                     "model: features.tent is %g anchors but n_states is %lld: they must be equal",
                     k->num, (long long)m->S);
  m->tent = 1;
  m->tent_low = lo->num;
  m->tent_high = hi->num;
  return DPRL_OK;
}

/* The scalar keys of the contract. */
static int header(const dprl_json *root, dprl_mdpv_model *m, dprl_error *err) {
  const dprl_json *mech = dprl_mdpv_member(root, "mechanism", err), *unit;
  double eps, delta, sens;
  int rc;
  if (!mech) return DPRL_EINVAL;
  if (mech->type != DPRL_JSON_STRING || strcmp(mech->str, "dp_mdp") != 0) {
    char g[96];
    dprl_mdpv_got(mech, g, sizeof g);
    return dprl_fail(err, DPRL_EINVAL,
                     "model must be a result of dp_mdp: its mechanism is %s, not \"dp_mdp\"", g);
  }
  if (!(unit = dprl_mdpv_member(root, "unit", err))) return DPRL_EINVAL;
  if (unit->type != DPRL_JSON_STRING || strcmp(unit->str, "episode") != 0) {
    char g[96];
    dprl_mdpv_got(unit, g, sizeof g);
    return dprl_fail(err, DPRL_EINVAL, "model: unit must be \"episode\", got %s", g);
  }
  if ((rc = boolean(root, "private", 1, err)) || (rc = boolean(root, "seeded", 0, err)) ||
      (rc = integer(root, "n_states", 1, INT32_MAX - 1, 0, &m->S, err)) ||
      (rc = integer(root, "n_actions", 1, INT32_MAX, 0, &m->A, err)) ||
      (rc = number(root, "gamma", DPRL_CLOSED(0, 1), &m->gamma, err)) ||
      (rc = number(root, "rmin", DPRL_ANY, &m->rmin, err)) ||
      (rc = number(root, "rmax", DPRL_ANY, &m->rmax, err)) ||
      (rc = number(root, "epsilon", DPRL_POSITIVE, &eps, err)) ||
      (rc = number(root, "delta", DPRL_CLOSED_OPEN(0, 1), &delta, err)) ||
      (rc = integer(root, "horizon", 1, INT64_C(1) << 53, 1, &m->horizon, err)) ||
      (rc = number(root, "sensitivity", DPRL_NONNEG, &sens, err)) ||
      (rc = number(root, "sigma", DPRL_NONNEG, &m->sigma, err)) ||
      (rc = number(root, "reward_sigma", DPRL_NONNEG, &m->reward_sigma, err)) ||
      (rc = number(root, "reward_center", DPRL_ANY, &m->center, err)))
    return rc;
  const dprl_json *clip = dprl_mdpv_member(root, "clip", err);
  if (!clip) return DPRL_EINVAL;
  if (clip->type != DPRL_JSON_NULL && (rc = number(root, "clip", DPRL_POSITIVE, &m->clip, err)))
    return rc;
  if (!(m->rmin < m->rmax))
    return dprl_fail(err, DPRL_EINVAL, "model: rmin (%g) must be below rmax (%g)", m->rmin,
                     m->rmax);
  double c = 0.5 * (m->rmin + m->rmax);
  if (fabs(m->center - c) > 1e-12 * fmax(1, fmax(fabs(m->rmin), fabs(m->rmax))))
    return dprl_fail(err, DPRL_EINVAL, "model: reward_center must be (rmin + rmax)/2 = %g, got %g",
                     c, m->center);
  const dprl_json *tr = dprl_json_get(root, "transitions"); /* absent: a dense model */
  if (tr && !(tr->type == DPRL_JSON_STRING &&
              (strcmp(tr->str, "dense") == 0 || strcmp(tr->str, "sparse") == 0))) {
    char g[96];
    dprl_mdpv_got(tr, g, sizeof g);
    return dprl_fail(err, DPRL_EINVAL, "model: transitions must be \"dense\" or \"sparse\", got %s",
                     g);
  }
  m->sparse = tr && strcmp(tr->str, "sparse") == 0;
  int64_t pairs, entries;
  if (m->sparse) {
    double d0, dg, cmax;
    if ((rc = number(root, "threshold", DPRL_NONNEG, &m->threshold, err)) ||
        (rc = number(root, "delta_threshold", DPRL_CLOSED_OPEN(0, 1), &d0, err)) ||
        (rc = number(root, "delta_gaussian", DPRL_CLOSED_OPEN(0, 1), &dg, err)) ||
        (rc = number(root, "cells_max", DPRL_NONNEG, &cmax, err)))
      return rc;
    /* the pairs' arrays, not the S A (S + 1) entries of a dense model */
    if (__builtin_mul_overflow(m->S, m->A, &pairs) || pairs > DPRL_MDPV_MAX_ENTRIES / 4)
      return dprl_fail(err, DPRL_EINVAL,
                       "model: n_states * n_actions = %lld * %lld pairs is more than the %lld "
                       "this function can hold", (long long)m->S, (long long)m->A,
                       (long long)(DPRL_MDPV_MAX_ENTRIES / 4));
    return features(root, m, err);
  }
  if (__builtin_mul_overflow(m->S, m->A, &pairs) ||
      __builtin_mul_overflow(pairs, m->S + 1, &entries) || entries > DPRL_MDPV_MAX_ENTRIES)
    return dprl_fail(err, DPRL_EINVAL,
                     "model: n_states * n_actions * (n_states + 1) = %lld * %lld * %lld count "
                     "entries is more than the %lld this function can hold",
                     (long long)m->S, (long long)m->A, (long long)m->S + 1,
                     (long long)DPRL_MDPV_MAX_ENTRIES);
  return features(root, m, err);
}

int dprl_mdpv_model_read(dprl_mdpv_model *m, const char *text, size_t len,
                         dprl_cancel *cancel, dprl_error *err) {
  memset(m, 0, sizeof *m);
  if (!text) return dprl_fail(err, DPRL_EINVAL, "model must be the JSON text of a dp_mdp result");
  dprl_error perr = {0};
  m->root = dprl_json_parse_compact(text, len, cancel, &perr);
  if (!m->root) {
    if (perr.code != DPRL_EINVAL) {
      *err = perr;
      return perr.code;
    }
    return dprl_fail(err, DPRL_EINVAL, "model: %s", perr.msg);
  }
  const dprl_json *root = m->root, *start, *counts, *rsums;
  int rc = DPRL_OK;
  if (root->type != DPRL_JSON_OBJECT) {
    rc = dprl_fail(err, DPRL_EINVAL, "model must be a JSON object (a dp_mdp result), got %s",
                   dprl_json_type_name(root->type));
    goto done;
  }
  if ((rc = header(root, m, err))) goto done;
  /* per-episode outcomes (dp_mdp's outcome argument): the censored ends */
  if (dprl_json_get(root, "censored") &&
      (rc = dprl_mdpv_pair_rows(root, "censored", m, &m->censored, err)))
    goto done;
  if (m->sparse) {
    rc = dprl_mdpv_read_sparse(root, m, cancel, err);
    goto done;
  }
  size_t S = (size_t)m->S, A = (size_t)m->A;
  if (!(start = dprl_mdpv_member(root, "start", err)) ||
      !(counts = dprl_mdpv_member(root, "counts", err)) ||
      !(rsums = dprl_mdpv_member(root, "reward_sums", err))) {
    rc = DPRL_EINVAL;
    goto done;
  }
  if (!(m->start = dprl_mdpv_numbers(start, "start", S, "n_states", err)) ||
      (rc = dprl_mdpv_arrays(counts, "counts", S, "n_states", err)) ||
      (rc = dprl_mdpv_arrays(rsums, "reward_sums", S, "n_states", err))) {
    if (!rc) rc = DPRL_EINVAL;
    goto done;
  }
  m->counts = dprl_malloc_array(S * A, sizeof *m->counts);
  m->reward_sums = dprl_malloc_array(S, sizeof *m->reward_sums);
  if (!m->counts || !m->reward_sums) {
    rc = dprl_nomem(err);
    goto done;
  }
  char what[64];
  for (size_t s = 0; s < S && !rc; s++) {
    dprl_snprintf(what, sizeof what, "reward_sums[%zu]", s);
    if (!(m->reward_sums[s] = dprl_mdpv_numbers(rsums->items[s], what, A, "n_actions", err))) {
      rc = DPRL_EINVAL;
      break;
    }
    dprl_snprintf(what, sizeof what, "counts[%zu]", s);
    if ((rc = dprl_mdpv_arrays(counts->items[s], what, A, "n_actions", err))) break;
    for (size_t a = 0; a < A; a++) {
      dprl_snprintf(what, sizeof what, "counts[%zu][%zu]", s, a);
      if (!(m->counts[s * A + a] =
                dprl_mdpv_numbers(counts->items[s]->items[a], what, S + 1, "n_states + 1", err))) {
        rc = DPRL_EINVAL;
        break;
      }
      if ((rc = dprl_cancel_poll(cancel, 2 * (S + 1), err))) break;
    }
  }
done:
  if (rc) dprl_mdpv_model_free(m);
  return rc;
}

void dprl_mdpv_model_free(dprl_mdpv_model *m) {
  dprl_free((void *)m->counts);
  dprl_free((void *)m->reward_sums);
  dprl_free((void *)m->totals);
  dprl_free((void *)m->ends);
  dprl_free((void *)m->censored);
  dprl_free(m->cell_row);
  dprl_free(m->cell_next);
  dprl_free(m->cell_count);
  dprl_json_free(m->root);
  memset(m, 0, sizeof *m);
}

/* ---- the estimate ----------------------------------------------------------- */

/* E Y and Var Y for Y = Z 1{Z > t}, Z ~ N(0, sigma^2): E Y = sigma phi(z),
** E Y^2 = sigma^2 (z phi(z) + Q(z)), z = t / sigma. */
static void kept_noise(double sigma, double t, double *mean, double *var) {
  double z = t / sigma, phi = exp(-0.5 * z * z) / sqrt(2 * M_PI), q = 0.5 * erfc(z / M_SQRT2);
  *mean = sigma * phi;
  *var = fmax(sigma * sigma * (z * phi + q) - *mean * *mean, 0);
}

double dprl_mdpv_noise_floor(int64_t floored, int64_t at_zero, double sigma, double count_floor) {
  if (!(sigma > 0)) return 0;
  double m1, v1, m0, v0;
  kept_noise(sigma, count_floor, &m1, &v1);
  kept_noise(sigma, 0, &m0, &v0);
  double a = (double)floored, b = (double)at_zero;
  return a * m1 + b * m0 + 3 * sqrt(a * v1 + b * v0);
}

int dprl_mdpv_grow(dprl_mdpv_est *e, size_t need, size_t most, dprl_error *err) {
  if (need <= e->cap) return DPRL_OK;
  size_t nc = e->cap ? 2 * e->cap : 4096;
  if (nc < need) nc = need;
  if (nc > most) nc = most;
  int32_t *nx = dprl_realloc(e->next, nc * sizeof *nx);
  if (nx) e->next = nx;
  double *np = nx ? dprl_realloc(e->prob, nc * sizeof *np) : NULL;
  if (!np) return dprl_nomem(err);
  e->prob = np;
  e->cap = nc;
  return DPRL_OK;
}

/* A bound on |clamp(x) - clamp(c0 + R/N_exact)| for x = fl(c0 + q), q =
** fl(R / N) and N a sum of n positive doubles (ALGORITHMS.md §14.2):
** N = N_exact (1 + theta_n-1), so |q - R/N_exact| <= 1.01 n u |q|, and the
** addition adds u |x|.  Clamped on the same side either way: 0.  An
** infinite x stands for |R/N_exact| > 10^300, clamped exactly too. */
double dprl_mdpv_reward_rounding(const dprl_mdpv_model *m, int64_t n, double q, double x) {
  if (!isfinite(x)) return 0;
  double u = 0x1p-53, er = 2 * ((double)n + 2) * u * fabs(q) + 2 * u * fabs(x);
  return x - er >= m->rmax || x + er <= m->rmin ? 0 : er;
}

/* The start distribution from the start counts (redrawn when asked). */
void dprl_mdpv_estimate_start(const dprl_mdpv_model *m, double t, dprl_rng *redraw, double *scratch,
                           dprl_mdpv_est *e) {
  int64_t S = m->S;
  const double *st = m->start;
  if (redraw && m->sigma > 0) {
    dprl_rng_normals(redraw, scratch, (size_t)S);
    for (int64_t s = 0; s < S; s++) scratch[s] = m->start[s] + m->sigma * scratch[s];
    st = scratch;
  }
  double total = 0;
  for (int64_t s = 0; s < S; s++) total += st[s] > t ? st[s] : 0;
  e->start_uniform = !(total > 0);
  for (int64_t s = 0; s < S; s++)
    e->start[s] = e->start_uniform ? 1.0 / (double)S : (st[s] > t ? st[s] / total : 0);
}

int dprl_mdpv_estimate(const dprl_mdpv_model *m, const dprl_mdpv_est_opts *o, dprl_rng *redraw,
                       double *scratch, dprl_mdpv_est *e, dprl_cancel *cancel, dprl_error *err) {
  int64_t S = m->S, A = m->A, SA = S * A;
  double t = o->count_floor;
  int draw_counts = redraw && m->sigma > 0, draw_rewards = redraw && m->reward_sigma > 0;
  if (!e->row) {
    e->S = S;
    e->A = A;
    e->row = dprl_malloc_array((size_t)SA + 1, sizeof *e->row);
    e->reward = dprl_malloc_array((size_t)SA, sizeof *e->reward);
    e->start = dprl_malloc_array((size_t)S, sizeof *e->start);
    if (!e->row || !e->reward || !e->start) return dprl_nomem(err);
  }
  e->pessimistic = 0;
  e->rabs = e->reward_err = 0;
  e->most_next = 0;
  e->unknown_mass = 0;
  if (m->sparse) return dprl_mdpv_estimate_sparse(m, o, redraw, scratch, e, cancel, err);
  size_t nnz = 0, most = (size_t)SA * (size_t)S;
  for (int64_t sa = 0; sa < SA; sa++) {
    if (dprl_cancel_poll(cancel, (uint64_t)(S + 1) * (draw_counts ? 30 : 2), err))
      return err->code;
    const double *c = m->counts[sa];
    if (draw_counts) {
      dprl_rng_normals(redraw, scratch, (size_t)S + 1);
      for (int64_t k = 0; k <= S; k++) scratch[k] = c[k] + m->sigma * scratch[k];
      c = scratch;
    }
    /* one pass: the entries above the floor are kept as counts and N summed,
    ** then divided by N (or dropped, for a pessimistic pair) */
    if (dprl_mdpv_grow(e, nnz + (size_t)S, most, err)) return err->code;
    size_t first = nnz;
    double N = 0, R = m->reward_sums[sa / A][sa % A];
    for (int64_t k = 0; k < S; k++)
      if (c[k] > t) {
        N += c[k];
        e->next[nnz] = (int32_t)k;
        e->prob[nnz++] = c[k];
      }
    double NP = N; /* the mass of the observed next states */
    /* the floor is for the next states, over which noise spreads spurious
    ** mass; an end is only cut at 0: a floored end would make a pair that
    ** does end loop for the whole horizon (ALGORITHMS.md §14.1) */
    if (c[S] > 0) N += c[S];
    double C = 0; /* per-episode outcomes: the censored ends went on, unseen */
    if (m->censored) {
      C = m->censored[sa / A][sa % A];
      if (draw_counts) {
        double z;
        dprl_rng_normals(redraw, &z, 1);
        C += m->sigma * z;
      }
      C = C > 0 ? C : 0;
      N += C;
    }
    if (draw_rewards) {
      double z;
      dprl_rng_normals(redraw, &z, 1);
      R += m->reward_sigma * z;
    }
    e->row[sa] = (int64_t)first;
    /* no observed next state: censoring (option ends) leaves nothing to go
    ** to; per-episode outcomes only when no end was seen either */
    int blind = !(NP > 0) && (o->censored || (C > 0 && !(c[S] > 0)));
    if (e->visits) e->visits[sa] = !(N > o->min_count) || blind ? 0 : N;
    if (!(N > o->min_count) || blind) { /* also N = 0 */
      nnz = first;
      e->pessimistic++;
      e->reward[sa] = o->optimistic ? m->rmax : m->rmin;
      e->rabs = fmax(e->rabs, fabs(e->reward[sa]));
      continue;
    }
    int64_t kept = (int64_t)(nnz - first);
    if (kept > e->most_next) e->most_next = kept;
    /* per-episode: P(s') = c(s') / NP times the share N - E of N that went on */
    double norm = o->censored ? NP : m->censored ? NP * N / (NP + C) : N;
    for (size_t j = first; j < nnz; j++) e->prob[j] /= norm;
    double q = R / N, x = m->center + q;
    e->reward[sa] = fmin(fmax(x, m->rmin), m->rmax);
    e->rabs = fmax(e->rabs, fabs(e->reward[sa]));
    e->reward_err = fmax(e->reward_err, dprl_mdpv_reward_rounding(m, kept + 1, q, x));
  }
  e->row[SA] = (int64_t)nnz;
  dprl_mdpv_estimate_start(m, t, redraw, scratch, e);
  return DPRL_OK;
}

void dprl_mdpv_est_free(dprl_mdpv_est *e) {
  dprl_free(e->row);
  dprl_free(e->next);
  dprl_free(e->prob);
  dprl_free(e->reward);
  dprl_free(e->start);
  dprl_free(e->unknown);
  dprl_free(e->spread);
  dprl_free(e->visits);
  memset(e, 0, sizeof *e);
}
