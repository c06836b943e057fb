/*
** mdp_stats.c: episodes -> the model's sums, one episode's contribution
** bounded as ALGORITHMS.md §13 proves (mdp.h).
**
** Two paths.  The exact path (tabular, a horizon the clip does not cut)
** adds whole ticks straight into the sums: every number is an integer, so
** the bound sqrt(1 + 2 H^2) holds exactly and nothing needs clipping.
** The general path (tent features, or a clip that binds) gathers the
** episode's contribution in a scratch vector, scales it down to `limit`
** if its norm is larger, and adds it truncated toward zero to whole ticks
** (which can only shrink it); `limit` sits 2^-20 below the bound, more
** than the floating-point error of the norm (§13).
*/
#include <math.h>
#include <string.h>

#include "mdp/mdp.h"
#include "rows/print.h"

#define TICKS ((int64_t)1 << DPRL_MDP_TICK_BITS)

int dprl_mdp_stats_init(dprl_mdp_stats *st, const dprl_mdp_config *c, dprl_cancel *cancel,
                        dprl_error *err) {
  memset(st, 0, sizeof *st);
  st->v = dprl_calloc_polled(c->dim, sizeof *st->v, cancel, err);
  if (!st->v) return err->code;
  if (c->exact_path) return DPRL_OK;
  st->w = dprl_calloc_polled(c->dim, sizeof *st->w, cancel, err);
  if (!st->w) return err->code;
  st->mark = dprl_calloc_polled(c->dim, 1, cancel, err);
  return st->mark ? DPRL_OK : err->code;
}

void dprl_mdp_stats_free(dprl_mdp_stats *st) {
  dprl_free(st->v);
  dprl_free(st->w);
  dprl_free(st->mark);
  dprl_free(st->list);
  dprl_free(st->cells);
  dprl_free(st->ecells);
  dprl_free(st->tmp);
  memset(st, 0, sizeof *st);
}

/* ---- cells (the sparse layout) --------------------------------------------- */

/* Room for n more in *a (doubling). */
static int cells_room(dprl_mdp_cell **a, size_t *cap, size_t used, size_t more,
                      dprl_error *err) {
  if (used + more <= *cap) return DPRL_OK;
  size_t nc = *cap ? 2 * *cap : 1024;
  while (nc < used + more) nc *= 2;
  if (nc > DPRL_MAX_ALLOC / sizeof **a) {
    nc = DPRL_MAX_ALLOC / sizeof **a;
    if (nc < used + more) return dprl_nomem(err);
  }
  dprl_mdp_cell *p = dprl_realloc(*a, nc * sizeof *p);
  if (!p) return dprl_nomem(err);
  *a = p;
  *cap = nc;
  return DPRL_OK;
}

static inline int before(const dprl_mdp_cell *x, const dprl_mdp_cell *y, int by_value) {
  if (by_value && x->w != y->w) return x->w > y->w;
  return x->key < y->key;
}

int dprl_mdp_cells_sort(dprl_mdp_cell *a, dprl_mdp_cell *tmp, size_t n, int by_value,
                        dprl_cancel *cancel, dprl_error *err) {
  /* bottom-up merge sort, stable; runs of 16 by insertion first */
  enum { RUN = 16 };
  for (size_t lo = 0; lo < n; lo += RUN) {
    size_t hi = lo + RUN < n ? lo + RUN : n;
    for (size_t i = lo + 1; i < hi; i++) {
      dprl_mdp_cell x = a[i];
      size_t j = i;
      for (; j > lo && before(&x, &a[j - 1], by_value); j--) a[j] = a[j - 1];
      a[j] = x;
    }
    if (dprl_cancel_poll(cancel, 4 * RUN, err)) return err->code;
  }
  dprl_mdp_cell *src = a, *dst = tmp;
  for (size_t width = RUN; width < n; width *= 2) {
    for (size_t lo = 0; lo < n; lo += 2 * width) {
      size_t mid = lo + width < n ? lo + width : n, hi = lo + 2 * width < n ? lo + 2 * width : n;
      size_t i = lo, j = mid, k = lo;
      while (i < mid && j < hi) dst[k++] = before(&src[j], &src[i], by_value) ? src[j++] : src[i++];
      while (i < mid) dst[k++] = src[i++];
      while (j < hi) dst[k++] = src[j++];
      if (dprl_cancel_poll(cancel, 2 * (hi - lo) + 8, err)) return err->code;
    }
    dprl_mdp_cell *t = src;
    src = dst;
    dst = t;
  }
  if (src != a) memcpy(a, src, n * sizeof *a);
  return DPRL_OK;
}

/* Sort a[0..n) by key with the stats' scratch and add up equal keys: the
** (smaller) count into *n.  Ticks (sum) or weights (w). */
static int merge_keys(dprl_mdp_stats *st, dprl_mdp_cell *a, size_t *n, int weights,
                      dprl_cancel *cancel, dprl_error *err) {
  if (*n > st->cap_tmp) {
    dprl_free(st->tmp);
    st->tmp = NULL;
    st->cap_tmp = 0;
    if (!(st->tmp = dprl_malloc_array(*n, sizeof *st->tmp))) return dprl_nomem(err);
    st->cap_tmp = *n;
  }
  int rc = dprl_mdp_cells_sort(a, st->tmp, *n, 0, cancel, err);
  if (rc) return rc;
  size_t out = 0;
  for (size_t i = 0; i < *n; i++) {
    if (out && a[out - 1].key == a[i].key) {
      if (weights) a[out - 1].w += a[i].w;
      else a[out - 1].ticks += a[i].ticks;
    } else {
      a[out++] = a[i];
    }
    if ((i & 4095) == 0 && dprl_cancel_poll(cancel, 4096, err)) return err->code;
  }
  *n = out;
  return DPRL_OK;
}

int dprl_mdp_cells_merge(dprl_mdp_stats *st, dprl_cancel *cancel, dprl_error *err) {
  int rc = merge_keys(st, st->cells, &st->n_cells, 0, cancel, err);
  if (rc) return rc;
  size_t out = 0; /* every contribution is >= 0: drop the cells whose sum is 0 */
  for (size_t i = 0; i < st->n_cells; i++)
    if (st->cells[i].ticks > 0) st->cells[out++] = st->cells[i];
  st->n_cells = out;
  st->merged = 1;
  dprl_free(st->tmp); /* the release needs its own */
  st->tmp = NULL;
  st->cap_tmp = 0;
  return DPRL_OK;
}

static inline int push_cell(dprl_mdp_cell **a, size_t *n, size_t *cap, uint64_t key,
                            int64_t ticks, double w, int weights, dprl_error *err) {
  if (*n == *cap && cells_room(a, cap, *n, 1, err)) return err->code;
  (*a)[*n].key = key;
  if (weights) (*a)[*n].w = w;
  else (*a)[*n].ticks = ticks;
  (*n)++;
  return DPRL_OK;
}

/* The first entry of the censored ends (outcome only): the last S A. */
static inline size_t censored_at(const dprl_mdp_config *c) {
  return c->dim - (size_t)c->n_states * (size_t)c->n_actions;
}

/* Tabular, exact, sparse layout: start, totals, ends and reward in v; a
** counted step followed by a state adds its cell; the end of a censored
** episode goes to its censored entry. */
static int add_exact_sparse(dprl_mdp_stats *st, const dprl_mdp_config *c, const dprl_step *steps,
                            size_t n, dprl_error *err) {
  size_t S = (size_t)c->n_states, A = (size_t)c->n_actions, ab = c->abits;
  uint32_t mask = (uint32_t)(((uint64_t)1 << ab) - 1);
  int64_t *start = st->v, *totals = start + S, *ends = totals + S * A, *reward = ends + S * A;
  if (st->censored) ends = st->v + censored_at(c);
  size_t L = n < (size_t)c->horizon ? n : (size_t)c->horizon;
  start[steps[0].state >> ab] += TICKS;
  for (size_t i = 0; i < L; i++) {
    uint32_t p = steps[i].state;
    size_t sa = (size_t)(p >> ab) * A + (p & mask);
    totals[sa] += TICKS;
    reward[sa] += (int64_t)steps[i].reward;
    if (i + 1 < n) {
      if (push_cell(&st->cells, &st->n_cells, &st->cap_cells,
                    (uint64_t)sa * S + (steps[i + 1].state >> ab), TICKS, 0, 0, err))
        return err->code;
    } else {
      ends[sa] += TICKS;
    }
  }
  return DPRL_OK;
}

/* Tabular, exact: start, then each counted step's transition and reward. */
static void add_exact(dprl_mdp_stats *st, const dprl_mdp_config *c, const dprl_step *steps,
                      size_t n) {
  size_t S = (size_t)c->n_states, A = (size_t)c->n_actions, ab = c->abits;
  uint32_t mask = (uint32_t)(((uint64_t)1 << ab) - 1);
  int64_t *start = st->v, *counts = start + S, *reward = counts + S * A * (S + 1);
  size_t L = n < (size_t)c->horizon ? n : (size_t)c->horizon;
  start[steps[0].state >> ab] += TICKS;
  for (size_t i = 0; i < L; i++) {
    uint32_t p = steps[i].state;
    size_t sa = (size_t)(p >> ab) * A + (p & mask);
    size_t next = i + 1 < n ? steps[i + 1].state >> ab : S;
    if (next == S && st->censored) st->v[censored_at(c) + sa] += TICKS;
    else counts[sa * (S + 1) + next] += TICKS;
    reward[sa] += (int64_t)steps[i].reward;
  }
}

static inline void touch(dprl_mdp_stats *st, size_t j, double x) {
  if (!st->mark[j]) {
    st->mark[j] = 1;
    st->list[st->n_list++] = (uint32_t)j;
  }
  st->w[j] += x;
}

/* The anchors around x and the weight of the upper one. */
static void tent_of(const dprl_mdp_config *c, double x, size_t *k, double *f) {
  double top = (double)(c->n_states - 1);
  double pos = (x - c->low) / (c->high - c->low) * top;
  if (!(pos > 0)) pos = 0;
  if (pos > top) pos = top;
  size_t i = (size_t)pos;
  if (i > (size_t)c->n_states - 2) i = (size_t)c->n_states - 2;
  *k = i;
  *f = pos - (double)i;
  if (*f > 1) *f = 1;
}

/* The episode's contribution, in ticks, into the scratch vector. */
static void gather(dprl_mdp_stats *st, const dprl_mdp_config *c, const dprl_step *steps,
                   const dprl_step *xs, size_t n, size_t L) {
  size_t S = (size_t)c->n_states, A = (size_t)c->n_actions, ab = c->abits;
  size_t counts = S, reward = S + S * A * (S + 1);
  const double T = DPRL_MDP_TICK;
  /* where pair sa's end goes: counts' column S, or its censored entry */
#define END(sa) (st->censored ? censored_at(c) + (sa) : counts + (sa) * (S + 1) + S)
  if (!c->tent) {
    uint32_t mask = (uint32_t)(((uint64_t)1 << ab) - 1);
    touch(st, steps[0].state >> ab, T);
    for (size_t i = 0; i < L; i++) {
      uint32_t p = steps[i].state;
      size_t sa = (size_t)(p >> ab) * A + (p & mask);
      touch(st, i + 1 < n ? counts + sa * (S + 1) + (steps[i + 1].state >> ab) : END(sa), T);
      touch(st, reward + sa, steps[i].reward);
    }
    return;
  }
  size_t k, k2 = 0;
  double f, f2 = 0;
  tent_of(c, xs[0].reward, &k, &f);
  touch(st, k, (1 - f) * T);
  touch(st, k + 1, f * T);
  for (size_t i = 0; i < L; i++, k = k2, f = f2) { /* (k, f) of step i, (k2, f2) of i + 1 */
    size_t a = steps[i].state;
    double u = steps[i].reward;
    size_t lo = counts + (k * A + a) * (S + 1), hi = counts + ((k + 1) * A + a) * (S + 1);
    if (i + 1 < n) {
      tent_of(c, xs[i + 1].reward, &k2, &f2);
      touch(st, lo + k2, (1 - f) * (1 - f2) * T);
      touch(st, lo + k2 + 1, (1 - f) * f2 * T);
      touch(st, hi + k2, f * (1 - f2) * T);
      touch(st, hi + k2 + 1, f * f2 * T);
    } else {
      touch(st, END(k * A + a), (1 - f) * T);
      touch(st, END((k + 1) * A + a), f * T);
    }
    touch(st, reward + k * A + a, (1 - f) * u);
    touch(st, reward + (k + 1) * A + a, f * u);
  }
#undef END
}

/* The sparse layout's gather: the dense parts into the scratch vector,
** the cells (key, weight in ticks) into ecells, unmerged. */
static int gather_sparse(dprl_mdp_stats *st, const dprl_mdp_config *c, const dprl_step *steps,
                         const dprl_step *xs, size_t n, size_t L, dprl_error *err) {
  size_t S = (size_t)c->n_states, A = (size_t)c->n_actions, ab = c->abits;
  size_t totals = S, ends = st->censored ? censored_at(c) : S + S * A, reward = S + 2 * S * A;
  const double T = DPRL_MDP_TICK;
#define CELL(sa, next, x) \
  do { \
    if (push_cell(&st->ecells, &st->n_ecells, &st->cap_ecells, (uint64_t)(sa) * S + (next), 0, \
                  (x), 1, err)) \
      return err->code; \
  } while (0)
  if (!c->tent) {
    uint32_t mask = (uint32_t)(((uint64_t)1 << ab) - 1);
    touch(st, steps[0].state >> ab, T);
    for (size_t i = 0; i < L; i++) {
      uint32_t p = steps[i].state;
      size_t sa = (size_t)(p >> ab) * A + (p & mask);
      touch(st, totals + sa, T);
      if (i + 1 < n) CELL(sa, steps[i + 1].state >> ab, T);
      else touch(st, ends + sa, T);
      touch(st, reward + sa, steps[i].reward);
    }
    return DPRL_OK;
  }
  size_t k, k2 = 0;
  double f, f2 = 0;
  tent_of(c, xs[0].reward, &k, &f);
  touch(st, k, (1 - f) * T);
  touch(st, k + 1, f * T);
  for (size_t i = 0; i < L; i++, k = k2, f = f2) { /* (k, f) of step i, (k2, f2) of i + 1 */
    size_t a = steps[i].state, lo = k * A + a, hi = (k + 1) * A + a;
    double u = steps[i].reward;
    touch(st, totals + lo, (1 - f) * T);
    touch(st, totals + hi, f * T);
    if (i + 1 < n) {
      tent_of(c, xs[i + 1].reward, &k2, &f2);
      CELL(lo, k2, (1 - f) * (1 - f2) * T);
      CELL(lo, k2 + 1, (1 - f) * f2 * T);
      CELL(hi, k2, f * (1 - f2) * T);
      CELL(hi, k2 + 1, f * f2 * T);
    } else {
      touch(st, ends + lo, (1 - f) * T);
      touch(st, ends + hi, f * T);
    }
    touch(st, reward + lo, (1 - f) * u);
    touch(st, reward + hi, f * u);
  }
#undef CELL
  return DPRL_OK;
}

/* The general path's end of an episode: its vector (the scratch entries
** and its first n_cells cells) scaled down to limit when its norm is
** above it, the entries added to the sums truncated toward zero (only
** shrinks) and the scratch cleared; returns the scale for the cells. */
static double commit_scaled(dprl_mdp_stats *st, const dprl_mdp_config *c, size_t n_cells) {
  double norm2 = 0, scale = 1;
  for (size_t i = 0; i < st->n_list; i++) norm2 += st->w[st->list[i]] * st->w[st->list[i]];
  for (size_t i = 0; i < n_cells; i++) norm2 += st->ecells[i].w * st->ecells[i].w;
  double norm = sqrt(norm2) / DPRL_MDP_TICK;
  if (norm > c->limit) {
    scale = c->limit / norm;
    st->clipped++;
  }
  for (size_t i = 0; i < st->n_list; i++) {
    uint32_t j = st->list[i];
    st->v[j] += (int64_t)(st->w[j] * scale);
    st->w[j] = 0;
    st->mark[j] = 0;
  }
  return scale;
}

/* The general path in the sparse layout: gather, merge the episode's cells,
** scale the whole vector to limit, truncate toward zero to ticks. */
static int add_general_sparse(dprl_mdp_stats *st, const dprl_mdp_config *c,
                              const dprl_step *steps, const dprl_step *xs, size_t n, size_t L,
                              dprl_error *err) {
  st->n_list = 0;
  st->n_ecells = 0;
  int rc = gather_sparse(st, c, steps, xs, n, L, err);
  if (!rc) rc = merge_keys(st, st->ecells, &st->n_ecells, 1, NULL, err);
  if (rc) {
    for (size_t i = 0; i < st->n_list; i++) st->w[st->list[i]] = 0, st->mark[st->list[i]] = 0;
    return rc;
  }
  double scale = commit_scaled(st, c, st->n_ecells);
  if ((rc = cells_room(&st->cells, &st->cap_cells, st->n_cells, st->n_ecells, err))) return rc;
  for (size_t i = 0; i < st->n_ecells; i++) {
    int64_t t = (int64_t)(st->ecells[i].w * scale);
    if (t > 0) {
      st->cells[st->n_cells].key = st->ecells[i].key;
      st->cells[st->n_cells++].ticks = t;
    }
  }
  return DPRL_OK;
}

/* The general path's scratch list for an episode of L counted steps:
** 2 + 6 entries per step (tent; sparse: 2 + 6 in the dense parts, the
** cells apart), at most dim. */
static int list_room(dprl_mdp_stats *st, const dprl_mdp_config *c, size_t L, dprl_error *err) {
  double most = 2 + 6 * (double)L;
  size_t need = most < (double)c->dim ? (size_t)most : c->dim;
  if (need > st->cap_list) {
    uint32_t *l = dprl_realloc(st->list, need * sizeof *l);
    if (!l) return dprl_nomem(err);
    st->list = l;
    st->cap_list = need;
  }
  return DPRL_OK;
}

int dprl_mdp_episode_norm(dprl_mdp_stats *st, const dprl_mdp_config *c, const dprl_step *steps,
                          const dprl_step *xs, size_t n, double *norm, dprl_error *err) {
  *norm = 0;
  if (!n) return DPRL_OK;
  size_t L = c->horizon && n > (size_t)c->horizon ? (size_t)c->horizon : n;
  int rc = list_room(st, c, L, err);
  if (rc) return rc;
  st->n_list = 0;
  st->n_ecells = 0;
  if (c->sparse) {
    rc = gather_sparse(st, c, steps, xs, n, L, err);
    if (!rc) rc = merge_keys(st, st->ecells, &st->n_ecells, 1, NULL, err);
  } else {
    gather(st, c, steps, xs, n, L);
  }
  double norm2 = 0;
  for (size_t i = 0; i < st->n_list; i++) {
    uint32_t j = st->list[i];
    norm2 += st->w[j] * st->w[j];
    st->w[j] = 0;
    st->mark[j] = 0;
  }
  for (size_t i = 0; !rc && i < st->n_ecells; i++) norm2 += st->ecells[i].w * st->ecells[i].w;
  st->n_ecells = 0;
  *norm = sqrt(norm2) / DPRL_MDP_TICK;
  return rc;
}

int dprl_mdp_add_episode(dprl_mdp_stats *st, const dprl_mdp_config *c, const dprl_step *steps,
                         const dprl_step *xs, size_t n, dprl_error *err) {
  if (!n) return DPRL_OK;
  st->episodes++;
  st->merged = 0;
  if (c->exact_path && c->sparse) return add_exact_sparse(st, c, steps, n, err);
  if (c->exact_path) {
    add_exact(st, c, steps, n);
    return DPRL_OK;
  }
  size_t L = c->horizon && n > (size_t)c->horizon ? (size_t)c->horizon : n;
  int rc = list_room(st, c, L, err);
  if (rc) return rc;
  if (c->sparse) return add_general_sparse(st, c, steps, xs, n, L, err);
  st->n_list = 0;
  gather(st, c, steps, xs, n, L);
  commit_scaled(st, c, 0);
  return DPRL_OK;
}

/* Episode e of the grouped buffers, its rows' outcome words cleared but
** the last one's (only the last row counts). */
static int episode_at(const dprl_mdp_config *c, dprl_step_buffer *buf, dprl_step_buffer *xbuf,
                      size_t e, const dprl_step **steps, size_t *n, const dprl_step **xs,
                      size_t *nx, dprl_cancel *cancel, dprl_error *err) {
  *xs = NULL;
  *nx = 0;
  int rc = dprl_step_buffer_episode(buf, e, steps, n, err);
  if (!rc && xbuf) rc = dprl_step_buffer_episode(xbuf, e, xs, nx, err);
  if (!rc) rc = dprl_cancel_poll(cancel, 8 * (uint64_t)*n + 50, err);
  dprl_step *own = (dprl_step *)*steps; /* the buffer's, read here and freed by collect */
  if (!rc && c->outcome && *n)
    for (size_t i = 0; i + 1 < *n; i++) own[i].state &= ~DPRL_MDP_CENSORED;
  return rc;
}

/* "clip": "auto" (§13.6): every episode's norm into its bin, then the
** noisy histogram chooses C and the calibration follows it. */
static int choose_clip(dprl_mdp_stats *st, dprl_mdp_config *c, dprl_step_buffer *buf,
                       dprl_step_buffer *xbuf, size_t E, dprl_cancel *cancel, dprl_error *err) {
  int64_t bins[DPRL_MDP_EDGES_MAX] = {0};
  int rc = DPRL_OK;
  for (size_t e = 0; e < E && !rc; e++) {
    const dprl_step *steps, *xs;
    size_t n, nx;
    double norm;
    rc = episode_at(c, buf, xbuf, e, &steps, &n, &xs, &nx, cancel, err);
    if (rc || !n) continue;
    dprl_step *own = (dprl_step *)steps;
    uint32_t flag = c->outcome ? own[n - 1].state & DPRL_MDP_CENSORED : 0;
    st->censored = flag != 0;
    own[n - 1].state &= ~DPRL_MDP_CENSORED;
    rc = dprl_mdp_episode_norm(st, c, steps, xs, n, &norm, err);
    own[n - 1].state |= flag; /* the second pass reads it again */
    if (!rc) bins[dprl_mdp_auto_bin(c, norm)]++;
  }
  return rc ? rc : dprl_mdp_auto_choose(c, bins, err);
}

int dprl_mdp_collect(dprl_mdp_stats *st, dprl_mdp_config *c, dprl_step_buffer *buf,
                     dprl_step_buffer *xbuf, dprl_episode_index *keys, dprl_cancel *cancel,
                     dprl_error *err) {
  int rc = DPRL_OK;
  if (buf->n + buf->n_staged >= DPRL_MDP_MAX_STEPS)
    rc = dprl_fail(err, DPRL_EINVAL, "more than 2^39 steps: the sums would not be exact");
  buf->cancel = cancel;
  if (xbuf) xbuf->cancel = cancel;
  if (!rc) rc = dprl_step_buffer_group(buf, err);
  if (!rc && xbuf) rc = dprl_step_buffer_group(xbuf, err);
  size_t E = rc ? 0 : dprl_step_buffer_episodes(buf);
  if (!rc && c->clip_auto) rc = choose_clip(st, c, buf, xbuf, E, cancel, err);
  for (size_t e = 0; e < E && !rc; e++) {
    const dprl_step *steps, *xs;
    size_t n, nx;
    rc = episode_at(c, buf, xbuf, e, &steps, &n, &xs, &nx, cancel, err);
    dprl_step *own = (dprl_step *)steps;
    if (!rc && keys) /* what the release read of the episode (its outcome too), beside its key */
      rc = dprl_key_set_print(&buf->ep, dprl_step_buffer_entry(buf, e),
                              dprl_print_steps_from(dprl_print_steps(steps, n), xs, nx), err);
    if (!rc && c->outcome && n) { /* the episode's outcome, and its flag goes */
      st->censored = (steps[n - 1].state & DPRL_MDP_CENSORED) != 0;
      own[n - 1].state &= ~DPRL_MDP_CENSORED;
    }
    if (!rc) rc = dprl_mdp_add_episode(st, c, steps, xs, n, err);
  }
  buf->cancel = NULL;
  if (xbuf) xbuf->cancel = NULL;
  if (!rc && c->sparse) rc = dprl_mdp_cells_merge(st, cancel, err);
  if (!rc && keys) { /* the units of the release outlive the buffer */
    dprl_key_index_free(keys);
    *keys = buf->ep;
    memset(&buf->ep, 0, sizeof buf->ep);
  }
  dprl_step_buffer_free(buf);
  if (xbuf) dprl_step_buffer_free(xbuf);
  return rc;
}

int64_t dprl_mdp_grid_value(const dprl_mdp_config *c, int64_t ticks) {
  uint64_t a = ticks < 0 ? 0 - (uint64_t)ticks : (uint64_t)ticks, q;
  int m = c->grid_shift; /* >= 12: the grid is at least 2^-12 counts */
  if (m >= 64) {
    q = 0;
  } else {
    q = a >> m;
    if (m > 0 && ((a >> (m - 1)) & 1)) q++; /* the remainder is at least half a step */
  }
  if (q > ((uint64_t)1 << 51)) q = (uint64_t)1 << 51;
  return ticks < 0 ? -(int64_t)q : (int64_t)q;
}
