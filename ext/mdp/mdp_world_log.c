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


int dprl_mdpv_sums_init(sums *y, const dprl_mdpv_model *m, int64_t steps, dprl_error *err) {
  size_t S = (size_t)m->S, SA = S * (size_t)m->A;
  memset(y, 0, sizeof *y);
  y->start = dprl_malloc_array(S, sizeof *y->start);
  y->reward = dprl_malloc_array(SA, sizeof *y->reward);
  int ok = y->start && y->reward;
  if (m->sparse) {
    y->totals = dprl_malloc_array(SA, sizeof *y->totals);
    y->ends = dprl_malloc_array(SA, sizeof *y->ends);
    ok = ok && y->totals && y->ends && !table_init(&y->cells, 4096, err);
  } else {
    ok = ok && (y->counts = dprl_malloc_array(SA * (S + 1), sizeof *y->counts));
  }
  if (m->censored) ok = ok && (y->censored = dprl_malloc_array(SA, sizeof *y->censored));
  if (m->clip > 0) ok = ok && !table_init(&y->ep, 3 * (size_t)steps + 2, err);
  return ok ? DPRL_OK : dprl_nomem(err);
}

void dprl_mdpv_sums_free(sums *y) {
  dprl_free(y->start);
  dprl_free(y->counts);
  dprl_free(y->totals);
  dprl_free(y->ends);
  dprl_free(y->reward);
  dprl_free(y->censored);
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
  if (!y->ep.cap) return put(y, kind, i, x, err);
  double old = 0;
  if (table_add(&y->ep, (uint64_t)kind << 58 | i, x, &old, err)) return err->code;
  double f = kind == K_REWARD ? 1 / (half * half) : 1;
  y->norm2 += f * ((old + x) * (old + x) - old * old);
  return DPRL_OK;
}

/* The episode's entries scaled down to the clip if its norm is above it
** (as the release does, §13.1), into the sums. */
static int commit(sums *y, double clip, dprl_error *err) {
  if (!y->ep.cap) return DPRL_OK;
  double norm = sqrt(fmax(y->norm2, 0)), scale = norm > clip ? clip / norm : 1;
  y->clipped += norm > clip;
  int rc = DPRL_OK;
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

void dprl_mdpv_add_noise(dprl_rng *rng, double *x, size_t n, double sd) {
  double z[64];
  for (size_t i = 0; sd > 0 && i < n; i += 64) {
    size_t k = n - i < 64 ? n - i : 64;
    dprl_rng_normals(rng, z, k);
    for (size_t j = 0; j < k; j++) x[i + j] += sd * z[j];
  }
}

static void rows_of(const double **rows, double *x, int64_t n, int64_t len) {
  for (int64_t i = 0; i < n; i++) rows[i] = x + i * len;
}

int dprl_mdpv_release_log(const dprl_mdpv_model *m, sums *y, dprl_rng *rng, released *r,
                       dprl_cancel *cancel, dprl_error *err) {
  int64_t S = m->S, A = m->A, SA = S * A;
  size_t sa_n = (size_t)SA;
  r->m = *m;
  r->m.root = NULL;
  if (!r->rows && !(r->rows = dprl_malloc_array(sa_n + 4 * (size_t)S, sizeof *r->rows)))
    return dprl_nomem(err);
  dprl_mdpv_add_noise(rng, y->start, (size_t)S, m->sigma);
  r->m.start = y->start;
  const double **rw = r->rows + SA, **tot = rw + S, **ends = tot + S, **cens = ends + S;
  if (m->sparse) {
    dprl_mdpv_add_noise(rng, y->totals, sa_n, m->sigma);
    dprl_mdpv_add_noise(rng, y->ends, sa_n, m->sigma);
  } else {
    dprl_mdpv_add_noise(rng, y->counts, sa_n * (size_t)(S + 1), m->sigma);
  }
  dprl_mdpv_add_noise(rng, y->reward, sa_n, m->reward_sigma);
  if (y->censored) dprl_mdpv_add_noise(rng, y->censored, sa_n, m->sigma);
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
    double z, x = t->val[slot_of(t, r->keys[j])];
    dprl_rng_normals(rng, &z, 1);
    x += m->sigma * z;
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

