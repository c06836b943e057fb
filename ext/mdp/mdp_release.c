/*
** mdp_release.c: the noise and the JSON of dp_mdp (mdp.h, ALGORITHMS.md
** §13).  One discrete Gaussian of one public scale on one grid for every
** entry, drawn in index order from one stream; everything written is the
** noisy vector, post-processing of it, or public.
*/
#include <stdio.h>
#include <string.h>

#include "base/json.h"
#include "mdp/mdp.h"

int dprl_mdp_perturb(const dprl_mdp_config *c, const dprl_mdp_stats *st, dprl_rng *rng,
                     double *out, dprl_cancel *cancel, dprl_error *err) {
  for (size_t j = 0; j < c->dim; j++) {
    if (dprl_cancel_poll(cancel, 1000, err)) return err->code;
    double k = (double)dprl_mdp_grid_value(c, st->v[j]); /* |k| <= 2^51: exact */
    int rc = dprl_release_gaussian_steps(rng, k * c->grid, c->steps, c->grid, &out[j], err);
    if (rc) return rc;
  }
  return DPRL_OK;
}

int dprl_mdp_perturb_cells(const dprl_mdp_config *c, const dprl_mdp_stats *st, dprl_rng *rng,
                           dprl_mdp_cell *kept, size_t *n_kept, size_t *above,
                           dprl_cancel *cancel, dprl_error *err) {
  size_t n = 0;
  *n_kept = *above = 0;
  for (size_t j = 0; j < st->n_cells; j++) {
    if (dprl_cancel_poll(cancel, 1000, err)) return err->code;
    double k = (double)dprl_mdp_grid_value(c, st->cells[j].ticks), x;
    int rc = dprl_release_gaussian_steps(rng, k * c->grid, c->steps, c->grid, &x, err);
    if (rc) return rc;
    if (x > c->tau) { /* the threshold (§13.5) */
      kept[n].key = st->cells[j].key;
      kept[n++].w = x;
    }
  }
  *above = n;
  if (n > (size_t)c->cells_max) { /* the largest noisy values: post-processing */
    dprl_mdp_cell *tmp = dprl_malloc_array(n, sizeof *tmp);
    if (!tmp) return dprl_nomem(err);
    int rc = dprl_mdp_cells_sort(kept, tmp, n, 1, cancel, err);
    n = (size_t)c->cells_max;
    if (!rc) rc = dprl_mdp_cells_sort(kept, tmp, n, 0, cancel, err);
    dprl_free(tmp);
    if (rc) return rc;
  }
  *n_kept = n;
  return DPRL_OK;
}

/* [x0, x1, ...] times scale. */
static int put_row(dprl_buf *b, const double *x, size_t n, double scale, dprl_cancel *cancel,
                   dprl_error *err) {
  dprl_buf_puts(b, "[");
  for (size_t i = 0; i < n; i++) {
    if (i) dprl_buf_puts(b, ",");
    dprl_json_put_double(b, x[i] * scale);
    if (dprl_cancel_poll(cancel, 150, err)) return err->code;
  }
  dprl_buf_puts(b, "]");
  return DPRL_OK;
}

/* rows x cols, row-major, as [[...], [...]]. */
static int put_matrix(dprl_buf *b, const double *x, size_t rows, size_t cols, double scale,
                      dprl_cancel *cancel, dprl_error *err) {
  int rc = DPRL_OK;
  dprl_buf_puts(b, "[");
  for (size_t r = 0; r < rows && !rc; r++) {
    if (r) dprl_buf_puts(b, ",");
    rc = put_row(b, x + r * cols, cols, scale, cancel, err);
  }
  dprl_buf_puts(b, "]");
  return rc;
}

/* The model's parts, from a vector laid out as mdp.h says: start [S],
** counts [S][A][S+1], reward_sums [S][A] (in reward units), and with an
** outcome censored [S][A]. */
static int put_parts(const dprl_mdp_config *c, dprl_buf *b, const char *prefix,
                     const double *x, dprl_cancel *cancel, dprl_error *err) {
  size_t S = (size_t)c->n_states, A = (size_t)c->n_actions;
  char key[32];
  dprl_snprintf(key, sizeof key, "%sstart", prefix);
  dprl_json_put_key(b, key);
  int rc = put_row(b, x, S, 1.0, cancel, err);
  dprl_snprintf(key, sizeof key, "%scounts", prefix);
  dprl_json_put_key(b, key);
  dprl_buf_puts(b, "[");
  for (size_t s = 0; s < S && !rc; s++) {
    if (s) dprl_buf_puts(b, ",");
    rc = put_matrix(b, x + S + s * A * (S + 1), A, S + 1, 1.0, cancel, err);
  }
  dprl_buf_puts(b, "]");
  dprl_snprintf(key, sizeof key, "%sreward_sums", prefix);
  dprl_json_put_key(b, key);
  if (!rc) rc = put_matrix(b, x + S + S * A * (S + 1), S, A, c->half, cancel, err);
  if (!rc && c->outcome) { /* the censored ends, the vector's last S A entries */
    dprl_snprintf(key, sizeof key, "%scensored", prefix);
    dprl_json_put_key(b, key);
    rc = put_matrix(b, x + c->dim - S * A, S, A, 1.0, cancel, err);
  }
  return rc;
}

/* The sparse layout's dense parts (start [S], totals, ends, reward_sums
** [S][A], and with an outcome censored [S][A]) from a vector laid out as
** the sums are. */
static int put_dense_parts(const dprl_mdp_config *c, dprl_buf *b, const char *prefix,
                           const double *x, dprl_cancel *cancel, dprl_error *err) {
  size_t S = (size_t)c->n_states, A = (size_t)c->n_actions;
  static const char *const names[] = {"totals", "ends", "reward_sums", "censored"};
  char key[32];
  dprl_snprintf(key, sizeof key, "%sstart", prefix);
  dprl_json_put_key(b, key);
  int rc = put_row(b, x, S, 1.0, cancel, err);
  for (int p = 0; p < (c->outcome ? 4 : 3) && !rc; p++) {
    dprl_snprintf(key, sizeof key, "%s%s", prefix, names[p]);
    dprl_json_put_key(b, key);
    rc = put_matrix(b, x + S + (size_t)p * S * A, S, A, p == 2 ? c->half : 1.0, cancel, err);
  }
  return rc;
}

/* [[s, a, s', count], ...]: ticks (exact) or w (noisy). */
static int put_cells(const dprl_mdp_config *c, dprl_buf *b, const char *key,
                     const dprl_mdp_cell *cells, size_t n, int exact, dprl_cancel *cancel,
                     dprl_error *err) {
  uint64_t S = (uint64_t)c->n_states, A = (uint64_t)c->n_actions;
  dprl_json_put_key(b, key);
  dprl_buf_puts(b, "[");
  for (size_t i = 0; i < n; i++) {
    uint64_t k = cells[i].key, sa = k / S;
    dprl_buf_printf(b, i ? ",[%llu,%llu,%llu," : "[%llu,%llu,%llu,", (unsigned long long)(sa / A),
                    (unsigned long long)(sa % A), (unsigned long long)(k % S));
    dprl_json_put_double(b, exact ? (double)cells[i].ticks / DPRL_MDP_TICK : cells[i].w);
    dprl_buf_puts(b, "]");
    if (dprl_cancel_poll(cancel, 200, err)) return err->code;
  }
  dprl_buf_puts(b, "]");
  return DPRL_OK;
}

/* The features as given (public): the map whole. */
static int put_features(const dprl_mdp_config *c, dprl_buf *b, dprl_cancel *cancel,
                        dprl_error *err) {
  dprl_json_put_key(b, "features");
  if (c->tent) {
    dprl_buf_printf(b, "{\"tent\":%lld", (long long)c->n_states);
    dprl_json_put_num(b, "low", c->low);
    dprl_json_put_num(b, "high", c->high);
    dprl_buf_puts(b, "}");
  } else if (c->agg_k) {
    dprl_buf_printf(b, "{\"aggregate\":%lld}", (long long)c->agg_k);
  } else if (c->map) {
    dprl_buf_puts(b, "{\"map\":[");
    for (int64_t s = 0; s < c->raw_states; s++) {
      dprl_buf_printf(b, s ? ",%d" : "%d", (int)c->map[s]);
      if (dprl_cancel_poll(cancel, 20, err)) return err->code;
    }
    dprl_buf_puts(b, "]}");
  } else {
    dprl_buf_puts(b, "\"tabular\"");
  }
  return DPRL_OK;
}

static int put_header(const dprl_mdp_config *c, dprl_buf *b, dprl_cancel *cancel,
                      dprl_error *err) {
  dprl_buf_puts(b, "{\"mechanism\":\"dp_mdp\"");
  /* a seeded release is reproducible, hence not private (§6) */
  dprl_buf_printf(b, ",\"private\":%s", c->diagnostic || c->has_seed ? "false" : "true");
  if (c->has_seed) dprl_buf_puts(b, ",\"seeded\":true");
  dprl_buf_puts(b, ",\"unit\":\"episode\",\"neighbours\":\"add, remove or replace one episode\"");
  dprl_json_put_int(b, "n_states", c->n_states);
  dprl_json_put_int(b, "n_actions", c->n_actions);
  dprl_json_put_num(b, "gamma", c->gamma);
  dprl_json_put_num(b, "rmin", c->rmin);
  dprl_json_put_num(b, "rmax", c->rmax);
  dprl_json_put_num(b, "epsilon", c->epsilon);
  dprl_json_put_num(b, "delta", c->delta);
  dprl_json_put_key(b, "horizon");
  if (c->horizon) dprl_buf_printf(b, "%lld", (long long)c->horizon);
  else dprl_buf_puts(b, "null");
  dprl_json_put_key(b, "clip");
  if (c->clip > 0) dprl_json_put_double(b, c->clip);
  else dprl_buf_puts(b, "null");
  if (c->clip_auto) { /* §13.6: C, its grid and the noisy histogram that chose it */
    double edges[DPRL_MDP_EDGES_MAX];
    for (int j = 0; j < c->gq.n; j++) edges[j] = dprl_mdp_auto_edge(c, j);
    dprl_buf_puts(b, ",\"clip_from\":\"auto\"");
    dprl_json_put_num(b, "clip_quantile", c->gq.q);
    dprl_json_put_num(b, "clip_share", c->clip_share);
    dprl_json_put_num(b, "clip_rho", c->gq.rho);
    dprl_json_put_num(b, "clip_sigma", (double)c->gq.steps);
    dprl_json_put_key(b, "clip_edges");
    dprl_json_put_double_array(b, edges, (size_t)c->gq.n);
    dprl_json_put_key(b, "clip_histogram");
    dprl_json_put_double_array(b, c->gq.hist, (size_t)c->gq.n);
    dprl_json_put_num(b, "clipped_share", c->gq.share);
  }
  int rc = put_features(c, b, cancel, err);
  if (rc) return rc;
  if (c->outcome) dprl_buf_puts(b, ",\"outcome\":\"per episode\"");
  dprl_json_put_num(b, "sensitivity", c->sens);
  dprl_json_put_num(b, "sigma", c->sigma);
  dprl_json_put_num(b, "reward_sigma", c->sigma * c->half);
  dprl_json_put_num(b, "reward_center", c->center);
  dprl_json_put_num(b, "grid", c->grid);
  dprl_json_put_num(b, "rho", c->rho);
  if (!c->sparse) return DPRL_OK;
  dprl_buf_puts(b, ",\"transitions\":\"sparse\"");
  dprl_json_put_num(b, "threshold", c->tau);
  dprl_json_put_num(b, "delta_threshold", c->delta_thr);
  dprl_json_put_num(b, "delta_gaussian", c->delta_gauss);
  dprl_json_put_int(b, "cells_max", c->cells_max);
  return DPRL_OK;
}

/* The sparse release (§13.5): the dense parts' noise, then the cells'. */
static int release_sparse(const dprl_mdp_config *c, const dprl_mdp_stats *st, dprl_rng *rng,
                          dprl_buf *out, dprl_cancel *cancel, dprl_error *err) {
  double *x = dprl_malloc_array(c->dim, sizeof *x);
  dprl_mdp_cell *kept = dprl_malloc_array(st->n_cells ? st->n_cells : 1, sizeof *kept);
  size_t n_kept = 0, above = 0;
  int rc = x && kept ? dprl_mdp_perturb(c, st, rng, x, cancel, err) : dprl_nomem(err);
  if (!rc) rc = dprl_mdp_perturb_cells(c, st, rng, kept, &n_kept, &above, cancel, err);
  dprl_rng_wipe(rng);
  if (!rc) {
    size_t guess = 4096 + c->echo_bytes + (20 * c->dim + 40 * n_kept) * (c->diagnostic ? 2 : 1);
    if (c->length_limit > 0 && guess > (size_t)c->length_limit) guess = (size_t)c->length_limit;
    dprl_buf_reserve(out, guess);
    rc = put_header(c, out, cancel, err);
  }
  if (!rc) {
    /* cells above the threshold that the cap left out: post-processing too */
    dprl_json_put_int(out, "cells_cut", (int64_t)(above - n_kept));
    rc = put_dense_parts(c, out, "", x, cancel, err);
  }
  if (!rc) rc = put_cells(c, out, "next", kept, n_kept, 0, cancel, err);
  if (!rc && c->diagnostic) { /* exact, NOT private */
    dprl_json_put_int(out, "episodes", st->episodes);
    dprl_json_put_int(out, "clipped", st->clipped);
    dprl_json_put_int(out, "touched_cells", (int64_t)st->n_cells);
    for (size_t j = 0; j < c->dim && !rc; j++) {
      x[j] = (double)st->v[j] / DPRL_MDP_TICK;
      rc = dprl_cancel_poll(cancel, 4, err);
    }
    if (!rc) rc = put_dense_parts(c, out, "exact_", x, cancel, err);
    if (!rc) rc = put_cells(c, out, "exact_next", st->cells, st->n_cells, 1, cancel, err);
  }
  if (!rc) dprl_buf_puts(out, "}");
  if (!rc && out->oom) rc = dprl_nomem(err);
  dprl_free(x);
  dprl_free(kept);
  return rc;
}

int dprl_mdp_release(const dprl_mdp_config *c, const dprl_mdp_stats *st, dprl_buf *out,
                     dprl_cancel *cancel, dprl_error *err) {
  dprl_rng rng;
  int rc;
  if (c->has_seed) dprl_rng_init_seeded(&rng, c->seed, DPRL_STREAM_MDP);
  else if ((rc = dprl_rng_init_secure(&rng, err))) return rc;
  if (c->sparse) return release_sparse(c, st, &rng, out, cancel, err);
  /* Every entry is written before it is read: no zeroing. */
  double *x = dprl_malloc_array(c->dim, sizeof *x);
  rc = x ? dprl_mdp_perturb(c, st, &rng, x, cancel, err) : dprl_nomem(err);
  dprl_rng_wipe(&rng);
  if (!rc) {
    /* One allocation for the usual length (most numbers print in 20 bytes
    ** or fewer) instead of a chain of copies; failing is harmless. */
    size_t guess = 4096 + c->echo_bytes + 20 * c->dim * (c->diagnostic ? 2 : 1);
    if (c->length_limit > 0 && guess > (size_t)c->length_limit) guess = (size_t)c->length_limit;
    dprl_buf_reserve(out, guess);
    rc = put_header(c, out, cancel, err);
    if (!rc) rc = put_parts(c, out, "", x, cancel, err);
  }
  if (!rc && c->diagnostic) { /* exact, NOT private */
    dprl_json_put_int(out, "episodes", st->episodes);
    dprl_json_put_int(out, "clipped", st->clipped);
    for (size_t j = 0; j < c->dim && !rc; j++) {
      x[j] = (double)st->v[j] / DPRL_MDP_TICK;
      rc = dprl_cancel_poll(cancel, 4, err);
    }
    if (!rc) rc = put_parts(c, out, "exact_", x, cancel, err);
  }
  if (!rc) dprl_buf_puts(out, "}");
  if (!rc && out->oom) rc = dprl_nomem(err);
  dprl_free(x);
  return rc;
}
