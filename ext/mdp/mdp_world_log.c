/* mdp_world_log.c: a log drawn from the log bootstrap's world and released
** as dp_mdp would (mdp_world_internal.h, ALGORITHMS.md §14.4). */
#include <math.h>
#include <string.h>

#include "dp/noise.h"
#include "mdp/mdp_world_internal.h"



static void table_free(table *t) {
  dprl_free(t->key);
  dprl_free(t->val);
  dprl_free(t->used);
  memset(t, 0, sizeof *t);
}

static int table_init(table *t, size_t want, dprl_error *err) {
  size_t cap = 64;
  while (cap < 2 * want) cap *= 2;
  if (cap > UINT32_MAX) return dprl_nomem(err);
  t->key = dprl_calloc(cap, sizeof *t->key);
  t->val = dprl_malloc_array(cap, sizeof *t->val);
  t->used = dprl_malloc_array(cap / 2 + 1, sizeof *t->used);
  t->cap = cap, t->n = 0;
  return t->key && t->val && t->used ? DPRL_OK : dprl_nomem(err);
}


static int table_grow(table *t, dprl_error *err) {
  table b;
  int rc = table_init(&b, t->cap, err);
  for (size_t j = 0; !rc && j < t->n; j++) {
    size_t i = t->used[j], k = slot_of(&b, t->key[i] - 1);
    b.key[k] = t->key[i], b.val[k] = t->val[i], b.used[b.n++] = (uint32_t)k;
  }
  if (rc) {
    table_free(&b);
    return rc;
  }
  table_free(t);
  *t = b;
  return DPRL_OK;
}

/* t[k] += x; the old value in *old. */
static inline int table_add(table *t, uint64_t k, double x, double *old, dprl_error *err) {
  if (2 * (t->n + 1) > t->cap && table_grow(t, err)) return err->code;
  size_t i = slot_of(t, k);
  if (!t->key[i]) {
    t->key[i] = k + 1, t->val[i] = 0, t->used[t->n++] = (uint32_t)i;
  }
  *old = t->val[i];
  t->val[i] += x;
  return DPRL_OK;
}


/* The doubles of a dense model's sums: start, counts, reward, censored. */
static size_t dense_size(const dprl_mdpv_model *m) {
  size_t S = (size_t)m->S, SA = S * (size_t)m->A;
  return S + SA * (S + 1) + SA + (m->censored ? SA : 0);
}

/* Where entry (kind, i) of a dense model's sums is in its block. */
static inline size_t dense_at(const sums *y, int kind, uint64_t i) {
  const double *at = kind == K_START ? y->start : kind == K_COUNT ? y->counts
                     : kind == K_REWARD ? y->reward : y->censored;
  return (size_t)(at - y->block) + (size_t)i;
}

int dprl_mdpv_sums_init(sums *y, const dprl_mdpv_model *m, int64_t steps, dprl_error *err) {
  size_t S = (size_t)m->S, SA = S * (size_t)m->A;
  memset(y, 0, sizeof *y);
  int ok = 1;
  if (m->sparse) {
    y->start = dprl_malloc_array(S, sizeof *y->start);
    y->reward = dprl_malloc_array(SA, sizeof *y->reward);
    y->totals = dprl_malloc_array(SA, sizeof *y->totals);
    y->ends = dprl_malloc_array(SA, sizeof *y->ends);
    if (m->censored) ok = ok && (y->censored = dprl_malloc_array(SA, sizeof *y->censored));
    ok = ok && y->start && y->reward && y->totals && y->ends && !table_init(&y->cells, 4096, err);
    if (m->clip > 0) ok = ok && !table_init(&y->ep, 3 * (size_t)steps + 2, err);
    return ok ? DPRL_OK : dprl_nomem(err);
  }
  if (!(y->block = dprl_malloc_array(dense_size(m), sizeof *y->block))) return dprl_nomem(err);
  y->start = y->block, y->counts = y->start + S, y->reward = y->counts + SA * (S + 1);
  if (m->censored) y->censored = y->reward + SA;
  if (m->clip > 0) { /* an episode adds at most 3 entries a step and its start */
    y->epx = dprl_calloc(dense_size(m), sizeof *y->epx);
    y->touched = dprl_malloc_array(3 * (size_t)steps + 2, sizeof *y->touched);
    ok = y->epx && y->touched;
  }
  return ok ? DPRL_OK : dprl_nomem(err);
}

void dprl_mdpv_sums_free(sums *y) {
  if (y->block) {
    dprl_free(y->block);
  } else {
    dprl_free(y->start);
    dprl_free(y->reward);
    dprl_free(y->censored);
  }
  dprl_free(y->totals);
  dprl_free(y->ends);
  dprl_free(y->epx);
  dprl_free(y->touched);
  table_free(&y->cells);
  table_free(&y->ep);
}

static void sums_clear(sums *y, const dprl_mdpv_model *m) {
  size_t S = (size_t)m->S, SA = S * (size_t)m->A;
  memset(y->start, 0, S * sizeof *y->start);
  memset(y->reward, 0, SA * sizeof *y->reward);
  if (y->counts) memset(y->counts, 0, SA * (S + 1) * sizeof *y->counts);
  if (y->totals) memset(y->totals, 0, SA * sizeof *y->totals);
  if (y->ends) memset(y->ends, 0, SA * sizeof *y->ends);
  if (y->censored) memset(y->censored, 0, SA * sizeof *y->censored);
  for (size_t j = 0; j < y->cells.n; j++) y->cells.key[y->cells.used[j]] = 0;
  y->cells.n = 0;
  y->clipped = 0;
}

/* x into entry (kind, i) of the log's sums. */
static inline int put(sums *y, int kind, uint64_t i, double x, dprl_error *err) {
  double old;
  switch (kind) {
  case K_START: y->start[i] += x; break;
  case K_COUNT: y->counts[i] += x; break;
  case K_TOTAL: y->totals[i] += x; break;
  case K_END: y->ends[i] += x; break;
  case K_REWARD: y->reward[i] += x; break;
  case K_CENSORED: y->censored[i] += x; break;
  default: return table_add(&y->cells, i, x, &old, err);
  }
  return DPRL_OK;
}

/* x into the episode's entry (kind, i): straight into the sums without a
** clip, else into the episode's table, its squared norm kept. */
static inline int add(sums *y, int kind, uint64_t i, double x, double half, dprl_error *err) {
  double old = 0;
  if (y->epx) { /* dense: O(1), the entry's place in the block */
    size_t at = dense_at(y, kind, i);
    old = y->epx[at];
    if (old == 0) y->touched[y->n_touched++] = at;
    y->epx[at] = old + x;
  } else if (!y->ep.cap) {
    return put(y, kind, i, x, err);
  } else if (table_add(&y->ep, (uint64_t)kind << 58 | i, x, &old, err)) {
    return err->code;
  }
  double f = kind == K_REWARD ? 1 / (half * half) : 1;
  y->norm2 += f * ((old + x) * (old + x) - old * old);
  return DPRL_OK;
}

/* The episode's entries scaled down to the clip if its norm is above it
** (as the release does, §13.1), into the sums. */
static int commit(sums *y, double clip, dprl_error *err) {
  if (!y->ep.cap && !y->epx) return DPRL_OK;
  double norm = sqrt(fmax(y->norm2, 0)), scale = norm > clip ? clip / norm : 1;
  y->clipped += norm > clip;
  int rc = DPRL_OK;
  if (y->epx) { /* an entry listed twice adds 0 the second time */
    for (size_t j = 0; j < y->n_touched; j++) {
      size_t at = y->touched[j];
      y->block[at] += y->epx[at] * scale;
      y->epx[at] = 0;
    }
    y->n_touched = 0;
    y->norm2 = 0;
    return DPRL_OK;
  }
  for (size_t j = 0; j < y->ep.n; j++) {
    size_t i = y->ep.used[j];
    uint64_t k = y->ep.key[i] - 1;
    if (!rc) rc = put(y, (int)(k >> 58), k & ((UINT64_C(1) << 58) - 1), y->ep.val[i] * scale, err);
    y->ep.key[i] = 0;
  }
  y->ep.n = 0;
  y->norm2 = 0;
  return rc;
}

/* One log of w->episodes episodes drawn from the world under its behaviour. */
int dprl_mdpv_draw_log(const world *w, const dprl_mdpv_model *m, sums *y, fast_rng *r,
                    dprl_cancel *cancel, dprl_error *err) {
  int64_t S = w->S, A = w->A, L = w->steps;
  double half = m->rmax / 2 - m->rmin / 2;
  int sparse = m->sparse, rc = DPRL_OK;
  sums_clear(y, m);
  for (int64_t n = 0; n < w->episodes && !rc; n++) {
    int64_t s = pick(w->start, S, fast_unit(r)), i;
    rc = add(y, K_START, (uint64_t)s, 1, half, err);
    for (i = 0; i < L && !rc; i++) {
      int64_t a = pick(w->act + s * A, A, fast_unit(r)), sa = s * A + a;
      int64_t lo = w->row[sa], k = w->row[sa + 1] - lo; /* the alias table: O(1) a step */
      double x = fast_unit(r) * (double)k;
      int64_t slot = (int64_t)x < k ? (int64_t)x : k - 1;
      int64_t j = lo + (x - (double)slot < w->aprob[lo + slot] ? slot : w->alias[lo + slot]);
      int64_t to = w->to[j];
      if (to == TO_SPREAD) to = (int64_t)(fast_u64(r) % (uint64_t)S);
      if ((i & 4095) == 4095 && (rc = dprl_cancel_poll(cancel, 4096 * 20, err))) break;
      rc = add(y, K_REWARD, (uint64_t)sa, w->gain[sa], half, err);
      if (!rc && sparse) rc = add(y, K_TOTAL, (uint64_t)sa, 1, half, err);
      if (rc) break;
      if (to >= 0) {
        rc = sparse ? add(y, K_CELL, (uint64_t)(sa * S + to), 1, half, err)
                    : add(y, K_COUNT, (uint64_t)(sa * (S + 1) + to), 1, half, err);
        s = to;
        continue;
      }
      if (to == TO_CENSORED) rc = add(y, K_CENSORED, (uint64_t)sa, 1, half, err);
      else if (sparse) rc = add(y, K_END, (uint64_t)sa, 1, half, err);
      else rc = add(y, K_COUNT, (uint64_t)(sa * (S + 1) + S), 1, half, err);
      break;
    }
    if (!rc) rc = commit(y, m->clip, err);
    if (!rc) rc = dprl_cancel_poll(cancel, 20 * (uint64_t)(i + 1), err);
  }
  return rc;
}

static int by_key(const void *x, const void *y) {
  uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
  return (a > b) - (a < b);
}


void dprl_mdpv_released_free(released *r) {
  dprl_free(r->rows);
  dprl_free(r->keys);
  dprl_free(r->next);
  dprl_free(r->count);
  dprl_free(r->cell_row);
}

/* ---- the ziggurat ---------------------------------------------------------------- */

#define ZIG_R 3.442619855899            /* the base layer's right edge */
#define ZIG_V 9.91256303526217e-3       /* each layer's area */

void dprl_mdpv_normal_init(fast_normal *g, const uint64_t key[4]) {
  memcpy(g->r.s, key, sizeof g->r.s);
  double f = exp(-0.5 * ZIG_R * ZIG_R);
  g->x[0] = ZIG_V / f, g->x[1] = ZIG_R, g->x[DPRL_ZIG_LAYERS] = 0;
  for (int i = 2; i < DPRL_ZIG_LAYERS; i++) {
    g->x[i] = sqrt(-2 * log(ZIG_V / g->x[i - 1] + f));
    f = exp(-0.5 * g->x[i] * g->x[i]);
  }
  for (int i = 0; i < DPRL_ZIG_LAYERS; i++) g->ratio[i] = g->x[i + 1] / g->x[i];
}

/* A uniform in (0, 1]. */
static inline double unit_open(fast_rng *r) {
  return (double)((fast_u64(r) >> 11) + 1) * 0x1p-53;
}

double dprl_mdpv_normal(fast_normal *g) {
  for (;;) {
    uint64_t b = fast_u64(&g->r);
    double u = 2 * ((double)(b >> 11) * 0x1p-53) - 1; /* top 53 bits: (-1, 1) */
    int i = (int)(b & (DPRL_ZIG_LAYERS - 1));         /* low 7 bits: the layer */
    if (fabs(u) < g->ratio[i]) return u * g->x[i];    /* inside the layer's rectangle */
    if (i == 0) { /* the tail beyond R (Marsaglia 1964) */
      double x, y;
      do {
        x = log(unit_open(&g->r)) / ZIG_R;
        y = log(unit_open(&g->r));
      } while (-2 * y < x * x);
      return u < 0 ? x - ZIG_R : ZIG_R - x;
    }
    double x = u * g->x[i];
    double f0 = exp(-0.5 * (g->x[i] * g->x[i] - x * x));
    double f1 = exp(-0.5 * (g->x[i + 1] * g->x[i + 1] - x * x));
    if (f1 + fast_unit(&g->r) * (f0 - f1) < 1.0) return x;
  }
}

void dprl_mdpv_add_noise(fast_normal *g, double *x, size_t n, double sd) {
  for (size_t i = 0; sd > 0 && i < n; i++) x[i] += sd * dprl_mdpv_normal(g);
}

static void rows_of(const double **rows, double *x, int64_t n, int64_t len) {
  for (int64_t i = 0; i < n; i++) rows[i] = x + i * len;
}

int dprl_mdpv_release_log(const dprl_mdpv_model *m, sums *y, fast_normal *g, released *r,
                       dprl_cancel *cancel, dprl_error *err) {
  int64_t S = m->S, A = m->A, SA = S * A;
  size_t sa_n = (size_t)SA;
  r->m = *m;
  r->m.root = NULL;
  if (!r->rows && !(r->rows = dprl_malloc_array(sa_n + 4 * (size_t)S, sizeof *r->rows)))
    return dprl_nomem(err);
  dprl_mdpv_add_noise(g, y->start, (size_t)S, m->sigma);
  r->m.start = y->start;
  const double **rw = r->rows + SA, **tot = rw + S, **ends = tot + S, **cens = ends + S;
  if (m->sparse) {
    dprl_mdpv_add_noise(g, y->totals, sa_n, m->sigma);
    dprl_mdpv_add_noise(g, y->ends, sa_n, m->sigma);
  } else {
    dprl_mdpv_add_noise(g, y->counts, sa_n * (size_t)(S + 1), m->sigma);
  }
  dprl_mdpv_add_noise(g, y->reward, sa_n, m->reward_sigma);
  if (y->censored) dprl_mdpv_add_noise(g, y->censored, sa_n, m->sigma);
  if (dprl_cancel_poll(cancel, (uint64_t)SA * (m->sparse ? 90 : 30 * (uint64_t)(S + 1)), err))
    return err->code;
  rows_of(rw, y->reward, S, A);
  r->m.reward_sums = rw;
  if (y->censored) rows_of(cens, y->censored, S, A), r->m.censored = cens;
  if (!m->sparse) {
    rows_of(r->rows, y->counts, SA, S + 1);
    r->m.counts = r->rows;
    return DPRL_OK;
  }
  rows_of(tot, y->totals, S, A), r->m.totals = tot;
  rows_of(ends, y->ends, S, A), r->m.ends = ends;
  /* the cells: sorted, noised, kept above the threshold */
  table *t = &y->cells;
  if (t->n > r->cap_keys) {
    dprl_free(r->keys), dprl_free(r->next), dprl_free(r->count);
    r->keys = dprl_malloc_array(t->n, sizeof *r->keys);
    r->next = dprl_malloc_array(t->n, sizeof *r->next);
    r->count = dprl_malloc_array(t->n, sizeof *r->count);
    r->cap_keys = t->n;
    if (!r->keys || !r->next || !r->count) return r->cap_keys = 0, dprl_nomem(err);
  }
  if (!r->cell_row && !(r->cell_row = dprl_malloc_array(sa_n + 1, sizeof *r->cell_row)))
    return dprl_nomem(err);
  for (size_t j = 0; j < t->n; j++) r->keys[j] = t->key[t->used[j]] - 1;
  int rc = dprl_sort(r->keys, t->n, sizeof *r->keys, by_key, cancel, err);
  if (rc) return rc;
  memset(r->cell_row, 0, (sa_n + 1) * sizeof *r->cell_row);
  size_t kept = 0;
  for (size_t j = 0; j < t->n; j++) {
    double x = t->val[slot_of(t, r->keys[j])] + m->sigma * dprl_mdpv_normal(g);
    if (!(x > m->threshold)) continue;
    r->next[kept] = (int32_t)(r->keys[j] % (uint64_t)S);
    r->count[kept++] = x;
    r->cell_row[r->keys[j] / (uint64_t)S + 1]++;
    if ((rc = dprl_cancel_poll(cancel, 40, err))) return rc;
  }
  for (size_t sa = 0; sa < sa_n; sa++) r->cell_row[sa + 1] += r->cell_row[sa];
  r->m.cell_row = r->cell_row;
  r->m.cell_next = r->next;
  r->m.cell_count = r->count;
  r->m.n_cells = kept;
  return DPRL_OK;
}

void dprl_mdpv_sums_add(const dprl_mdpv_model *m, const sums *y, double *f) {
  size_t S = (size_t)m->S, SA = S * (size_t)m->A, i = 0;
  for (size_t s = 0; s < S; s++) f[i++] += y->start[s];
  if (m->sparse) {
    for (size_t sa = 0; sa < SA; sa++) f[i++] += y->totals[sa];
    for (size_t sa = 0; sa < SA; sa++) f[i++] += y->ends[sa];
    for (size_t sa = 0; sa < SA; sa++)
      for (int64_t j = m->cell_row[sa]; j < m->cell_row[sa + 1]; j++, i++) {
        uint64_t k = (uint64_t)sa * S + (uint64_t)m->cell_next[j];
        size_t at = slot_of(&y->cells, k);
        if (y->cells.key[at]) f[i] += y->cells.val[at];
      }
  } else {
    for (size_t j = 0; j < SA * (S + 1); j++) f[i++] += y->counts[j];
  }
  for (size_t sa = 0; sa < SA; sa++) f[i++] += y->reward[sa];
  for (size_t sa = 0; y->censored && sa < SA; sa++) f[i++] += y->censored[sa];
}

