/* mdp_world.c: the log bootstrap's world (mdp_world.h, ALGORITHMS.md §14.4). */
#include "mdp/mdp_world.h"

#include <math.h>
#include <string.h>

#include "base/json.h"
#include "dp/noise.h"
#include "mdp/model_internal.h"

/* ---- the world ---------------------------------------------------------------- */

/* A fast generator for the draws of the world's logs (post-processing of
** public numbers: no cryptographic need), xoshiro256**, keyed from the
** seeded stream. */
typedef struct fast_rng {
  uint64_t s[4];
} fast_rng;
static inline uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
static inline uint64_t fast_u64(fast_rng *r) {
  uint64_t *s = r->s, out = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
  s[2] ^= s[0], s[3] ^= s[1], s[1] ^= s[2], s[0] ^= s[3], s[2] ^= t, s[3] = rotl(s[3], 45);
  return out;
}
static inline double fast_unit(fast_rng *r) { return (double)(fast_u64(r) >> 11) * 0x1p-53; }

/* The first j in [0, n) with u < cum[j] (cum rises to cum[n-1] = 1). */
static inline int64_t pick(const double *cum, int64_t n, double u) {
  int64_t lo = 0, hi = n - 1;
  while (lo < hi) {
    int64_t mid = lo + (hi - lo) / 2;
    if (u < cum[mid]) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}

enum { TO_END = -1, TO_CENSORED = -2, TO_SPREAD = -3 };

typedef struct world {
  int64_t S, A;
  int64_t *row;   /* [S*A + 1]: pair sa's outcomes are [row[sa], row[sa+1]) */
  int32_t *to;    /* a next state, or TO_* */
  double *cum;    /* their cumulative probabilities */
  double *act;    /* [S*A]: per state, the behaviour's cumulative probabilities */
  double *start;  /* [S] cumulative */
  double *gain;   /* [S*A]: r(s,a) - reward_center */
  int64_t episodes, steps;
  dprl_mdpv_est truth; /* the world as an MDP, for its values */
} world;

static void world_free(world *w) {
  dprl_free(w->row);
  dprl_free(w->to);
  dprl_free(w->cum);
  dprl_free(w->act);
  dprl_free(w->start);
  dprl_free(w->gain);
  dprl_mdpv_est_free(&w->truth);
}

/* Pair sa's released numbers above the floor t: its kept next states
** (into to/prob from *n, their mass *K), ended *E, censored *C and visits
** *N (sparse: with the unplaced mass *U). */
static void pair_numbers(const dprl_mdpv_model *m, int64_t sa, double t, int32_t *to,
                         double *prob, size_t *n, double *K, double *E, double *C, double *U,
                         double *N) {
  int64_t S = m->S, A = m->A;
  double k = 0;
  if (m->sparse) {
    for (int64_t j = m->cell_row[sa]; j < m->cell_row[sa + 1]; j++)
      if (m->cell_count[j] > t) {
        to[*n] = m->cell_next[j];
        prob[(*n)++] = m->cell_count[j];
        k += m->cell_count[j];
      }
    *E = m->ends[sa / A][sa % A];
  } else {
    const double *c = m->counts[sa];
    for (int64_t j = 0; j < S; j++)
      if (c[j] > t) {
        to[*n] = (int32_t)j;
        prob[(*n)++] = c[j];
        k += c[j];
      }
    *E = c[S];
  }
  *E = *E > t ? *E : 0;
  *C = m->censored ? m->censored[sa / A][sa % A] : 0;
  *C = *C > t ? *C : 0;
  *K = k;
  *N = k + *E + *C;
  *U = 0;
  if (m->sparse) {
    double T = m->totals[sa / A][sa % A];
    if (T > t && T > *N) *U = T - *N, *N = T;
  }
}

/* The world of §14.4 from the release m and the estimate's choices o. */
static int world_build(const dprl_mdpv_model *m, const dprl_mdpv_est_opts *o, world *w,
                       dprl_cancel *cancel, dprl_error *err) {
  int64_t S = m->S, A = m->A, SA = S * A;
  size_t most = m->sparse ? m->n_cells + 3 * (size_t)SA : (size_t)SA * (size_t)(S + 3);
  dprl_mdpv_est *e = &w->truth;
  memset(w, 0, sizeof *w);
  w->S = S, w->A = A;
  w->row = dprl_malloc_array((size_t)SA + 1, sizeof *w->row);
  w->to = dprl_malloc_array(most, sizeof *w->to);
  w->cum = dprl_malloc_array(most, sizeof *w->cum);
  w->act = dprl_malloc_array((size_t)SA, sizeof *w->act);
  w->start = dprl_malloc_array((size_t)S, sizeof *w->start);
  w->gain = dprl_malloc_array((size_t)SA, sizeof *w->gain);
  e->S = S, e->A = A;
  e->row = dprl_malloc_array((size_t)SA + 1, sizeof *e->row);
  e->reward = dprl_malloc_array((size_t)SA, sizeof *e->reward);
  e->start = dprl_malloc_array((size_t)S, sizeof *e->start);
  e->spread = m->sparse ? dprl_calloc((size_t)SA, sizeof *e->spread) : NULL;
  if (!w->row || !w->to || !w->cum || !w->act || !w->start || !w->gain || !e->row ||
      !e->reward || !e->start || (m->sparse && !e->spread))
    return dprl_nomem(err);
  if (dprl_mdpv_grow(e, most, most, err)) return err->code;
  size_t n = 0, nn = 0;
  double visits = 0;
  for (int64_t sa = 0; sa < SA; sa++) {
    if (dprl_cancel_poll(cancel, (uint64_t)(m->sparse ? 8 : S + 8), err)) return err->code;
    double K, E, C, U, N;
    size_t first = n;
    w->row[sa] = (int64_t)n;
    e->row[sa] = (int64_t)nn;
    pair_numbers(m, sa, o->count_floor, w->to, w->cum, &n, &K, &E, &C, &U, &N);
    /* the mass that went on unseen: censored ends (option ends: the ended column) */
    double gone = m->censored ? C : o->censored ? E : 0, seen = K + U;
    int pess = !(N > o->min_count) || (!(seen > 0) && (gone > 0 || o->censored));
    w->act[sa] = pess ? 0 : N;
    if (pess) { /* the estimate's pessimistic pair: the episode ends with rmin */
      n = first;
      w->to[n] = TO_END;
      w->cum[n++] = 1;
      w->gain[sa] = m->rmin - m->center;
      e->reward[sa] = m->rmin;
      e->pessimistic++;
      continue;
    }
    visits += N;
    double f = (seen + gone) / seen / N; /* the world's own moves: the unseen ones go on alike */
    for (size_t j = first; j < n; j++) {
      e->next[nn] = w->to[j];
      e->prob[nn++] = w->cum[j] * f;
    }
    if (U > 0) {
      e->spread[sa] = U * f;
      w->to[n] = TO_SPREAD, w->cum[n++] = U;
    }
    if (E > 0) w->to[n] = TO_END, w->cum[n++] = E;
    if (C > 0) w->to[n] = TO_CENSORED, w->cum[n++] = C;
    double acc = 0;
    for (size_t j = first; j < n; j++) w->cum[j] = (acc += w->cum[j]) / N;
    w->cum[n - 1] = 1;
    int64_t moves = (int64_t)(nn - (size_t)e->row[sa]) + (U > 0 ? S : 0);
    if (moves > e->most_next) e->most_next = moves;
    double x = m->center + m->reward_sums[sa / A][sa % A] / N;
    e->reward[sa] = fmin(fmax(x, m->rmin), m->rmax);
    w->gain[sa] = e->reward[sa] - m->center;
  }
  w->row[SA] = (int64_t)n;
  e->row[SA] = (int64_t)nn;
  for (int64_t i = 0; i < SA; i++) e->rabs = fmax(e->rabs, fabs(e->reward[i]));
  /* the behaviour: pi_b(a|s) proportional to N(s,a) over the pairs that are not pessimistic */
  for (int64_t s = 0; s < S; s++) {
    double *c = w->act + s * A, tot = 0, run = 0;
    for (int64_t a = 0; a < A; a++) tot += c[a];
    for (int64_t a = 0; a < A; a++) c[a] = tot > 0 ? (run += c[a]) / tot : (double)(a + 1) / (double)A;
    c[A - 1] = 1;
  }
  /* the start: the estimate's distribution; the episodes: the start counts' sum */
  dprl_mdpv_estimate_start(m, o->count_floor, NULL, NULL, e);
  double run = 0, released = 0;
  for (int64_t s = 0; s < S; s++) {
    w->start[s] = (run += e->start[s]);
    released += m->start[s];
  }
  w->start[S - 1] = 1;
  released = nearbyint(released);
  if (!(released <= (double)DPRL_MDPV_WORLD_EPISODES_MAX)) {
    char g[32];
    return dprl_fail(err, DPRL_EINVAL,
                     "dp_mdp_value: the model's start counts sum to %s episodes, more than the "
                     "2^31 a log bootstrap draws: option interval \"none\"",
                     dprl_json_num(released, g, sizeof g));
  }
  w->episodes = released >= 1 ? (int64_t)released : 1;
  if (m->horizon) {
    w->steps = m->horizon;
  } else {
    double mean = 50 * visits / (double)w->episodes;
    w->steps = mean > DPRL_MDPV_WORLD_STEPS ? (int64_t)ceil(mean) : DPRL_MDPV_WORLD_STEPS;
    if (w->steps > DPRL_MDPV_WORLD_STEPS_MAX) w->steps = DPRL_MDPV_WORLD_STEPS_MAX;
  }
  return DPRL_OK;
}

/* ---- a log drawn from the world, released as dp_mdp would ------------------------- */

/* A table from keys to sums, open addressing (linear probes); used lists
** the occupied slots so that clearing costs what was used. */
typedef struct table {
  uint64_t *key; /* key + 1; 0: empty */
  double *val;
  uint32_t *used;
  size_t cap, n;
} table;

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

static inline size_t slot_of(const table *t, uint64_t k) {
  size_t i = (size_t)((k * UINT64_C(0x9E3779B97F4A7C15)) >> 17) & (t->cap - 1);
  while (t->key[i] && t->key[i] != k + 1) i = (i + 1) & (t->cap - 1);
  return i;
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

/* The sums of one drawn log, laid out as the release's parts. */
enum { K_START, K_COUNT, K_TOTAL, K_END, K_CELL, K_REWARD, K_CENSORED };
typedef struct sums {
  double *start, *counts, *totals, *ends, *reward, *censored; /* counts dense, totals/ends sparse */
  table cells;  /* sparse: key sa * S + s' */
  table ep;     /* one episode's entries, key kind << 58 | index (a clip applies) */
  double norm2; /* its squared norm, rewards in units of (rmax - rmin) / 2 */
  int64_t clipped;
} sums;

static int sums_init(sums *y, const dprl_mdpv_model *m, int64_t steps, dprl_error *err) {
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

static void sums_free(sums *y) {
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
static int draw_log(const world *w, const dprl_mdpv_model *m, sums *y, fast_rng *r,
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
      int64_t lo = w->row[sa], j = lo + pick(w->cum + lo, w->row[sa + 1] - lo, fast_unit(r));
      int64_t to = w->to[j];
      if (to == TO_SPREAD) to = (int64_t)(fast_u64(r) % (uint64_t)S);
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

/* The release of one drawn log: a model like m whose numbers are the
** log's sums plus the release's noise (the sparse cells above the
** threshold kept).  Its arrays live in r, whose rows point into y. */
typedef struct released {
  dprl_mdpv_model m;
  const double **rows; /* counts [S*A]; reward_sums, totals, ends, censored [S] each */
  uint64_t *keys;      /* sparse: the drawn cells' keys, sorted */
  size_t cap_keys;
  int32_t *next;
  double *count;
  int64_t *cell_row;
} released;

static void released_free(released *r) {
  dprl_free(r->rows);
  dprl_free(r->keys);
  dprl_free(r->next);
  dprl_free(r->count);
  dprl_free(r->cell_row);
}

static void noise(dprl_rng *rng, double *x, size_t n, double sd) {
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

static int release_log(const dprl_mdpv_model *m, sums *y, dprl_rng *rng, released *r,
                       dprl_cancel *cancel, dprl_error *err) {
  int64_t S = m->S, A = m->A, SA = S * A;
  size_t sa_n = (size_t)SA;
  r->m = *m;
  r->m.root = NULL;
  if (!r->rows && !(r->rows = dprl_malloc_array(sa_n + 4 * (size_t)S, sizeof *r->rows)))
    return dprl_nomem(err);
  noise(rng, y->start, (size_t)S, m->sigma);
  r->m.start = y->start;
  const double **rw = r->rows + SA, **tot = rw + S, **ends = tot + S, **cens = ends + S;
  if (m->sparse) {
    noise(rng, y->totals, sa_n, m->sigma);
    noise(rng, y->ends, sa_n, m->sigma);
  } else {
    noise(rng, y->counts, sa_n * (size_t)(S + 1), m->sigma);
  }
  noise(rng, y->reward, sa_n, m->reward_sigma);
  if (y->censored) noise(rng, y->censored, sa_n, m->sigma);
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

/* ---- the handle ------------------------------------------------------------------ */

struct dprl_mdpv_world {
  const dprl_mdpv_model *m;
  world w;
  sums y;
  released r;
  dprl_rng rng; /* the noise */
  fast_rng fr;  /* the logs */
  int64_t draws, clipped;
};

int dprl_mdpv_world_open(const dprl_mdpv_model *m, const dprl_mdpv_est_opts *o, uint64_t seed,
                         dprl_mdpv_world **out, dprl_cancel *cancel, dprl_error *err) {
  dprl_mdpv_world *h = dprl_calloc(1, sizeof *h);
  *out = h;
  if (!h) return dprl_nomem(err);
  h->m = m;
  dprl_rng_init_seeded(&h->rng, seed, DPRL_STREAM_MDP_BOOTSTRAP | 1);
  for (int k = 0; k < 4; k++) h->fr.s[k] = dprl_rng_u64(&h->rng);
  int rc = world_build(m, o, &h->w, cancel, err);
  return rc ? rc : sums_init(&h->y, m, h->w.steps, err);
}

const dprl_mdpv_est *dprl_mdpv_world_truth(const dprl_mdpv_world *w) { return &w->w.truth; }

int dprl_mdpv_world_release(dprl_mdpv_world *h, const dprl_mdpv_model **out, dprl_cancel *cancel,
                            dprl_error *err) {
  int rc = draw_log(&h->w, h->m, &h->y, &h->fr, cancel, err);
  h->draws++;
  h->clipped += h->y.clipped;
  if (!rc) rc = release_log(h->m, &h->y, &h->rng, &h->r, cancel, err);
  *out = rc ? NULL : &h->r.m;
  return rc;
}

void dprl_mdpv_world_describe(const dprl_mdpv_world *h, dprl_mdpv_world_info *info) {
  info->episodes = h->w.episodes;
  info->steps = h->w.steps;
  info->clipped_share =
      h->draws ? (double)h->clipped / ((double)h->draws * (double)h->w.episodes) : 0;
}

void dprl_mdpv_world_close(dprl_mdpv_world *h) {
  if (!h) return;
  dprl_rng_wipe(&h->rng);
  world_free(&h->w);
  sums_free(&h->y);
  released_free(&h->r);
  dprl_free(h);
}
