/*
** gp_path.c: lazily drawn Ornstein-Uhlenbeck sample paths (gp_path.h).
**
** The conditionals are those of ALGORITHMS.md §8 (the paper's eq. (2) in
** Appendix A is garbled; §8 gives the exact ones).  With a = beta d1,
** b = beta d2, c = a + b = beta D:
**   mean = (sinh b g(x-) + sinh a g(x+)) / sinh c
**   var  = sigma^2 (1 - (e^-a sinh b + e^-b sinh a) / sinh c)
**        = sigma^2 2 sinh a sinh b / sinh c          (*)
** (*) because e^-a sinh b + e^-b sinh a = cosh(a - b) - e^-c and
** sinh c + e^-c - cosh(a - b) = cosh c - cosh(a - b) = 2 sinh a sinh b.
** Written with E(t) = 1 - e^{-2t} = -expm1(-2t):
**   sinh b / sinh c = e^-a E(b) / E(c),  sinh a / sinh c = e^-b E(a) / E(c),
**   var = sigma^2 E(a) E(b) / E(c),
** which has no cancellation for tiny beta d (the printed 1 - (...)/sinh
** loses every digit at beta d ~ 1e-12) and no overflow for large beta d
** (sinh(beta D) overflows beyond ~710).
*/
#include "q_learning/gp_path.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

dprl_gp_path *dprl_gp_path_create(double sigma, double beta, double grid,
                                  dprl_error *err) {
  if (!(sigma >= 0) || !isfinite(sigma)) {
    dprl_fail(err, DPRL_EINVAL, "sigma must be finite and >= 0, got %g", sigma);
    return NULL;
  }
  if (!(beta > 0) || !isfinite(beta)) {
    dprl_fail(err, DPRL_EINVAL, "beta must be finite and > 0, got %g", beta);
    return NULL;
  }
  int e;
  if (!(grid > 0) || !isfinite(grid) || frexp(grid, &e) != 0.5) {
    dprl_fail(err, DPRL_EINVAL, "grid must be a power of two > 0, got %g", grid);
    return NULL;
  }
  if (sigma / grid > 0x1p27) { /* noise.c draws at most 2^27 grid steps */
    dprl_fail(err, DPRL_EINVAL,
              "grid %g is too fine for sigma = %g (over 2^27 steps); use "
              "dprl_grid_for(sigma)",
              grid, sigma);
    return NULL;
  }
  dprl_gp_path *p = dprl_calloc(1, sizeof *p);
  if (!p) {
    dprl_nomem(err);
    return NULL;
  }
  p->sigma = sigma;
  p->beta = beta;
  p->grid = grid;
  return p;
}

void dprl_gp_path_free(dprl_gp_path *p) {
  if (!p) return;
  dprl_free(p->pts);
  dprl_free(p);
}

void dprl_gp_path_reset(dprl_gp_path *p) { p->n = 0; }

/* E(t) = 1 - exp(-2t), accurate for tiny t. */
static double one_minus_exp2(double t) { return -expm1(-2.0 * t); }

void dprl_gp_conditional(double sigma, double beta, const dprl_gp_point *left,
                         const dprl_gp_point *right, double x, double *mean,
                         double *var) {
  double s2 = sigma * sigma;
  if (!left && !right) { /* no neighbour: the marginal N(0, sigma^2) */
    *mean = 0;
    *var = s2;
    return;
  }
  if (!left || !right) { /* one neighbour at distance d (§8) */
    const dprl_gp_point *nb = left ? left : right;
    double a = beta * fabs(x - nb->x);
    *mean = exp(-a) * nb->g;
    *var = s2 * one_minus_exp2(a);
    return;
  }
  double a = beta * (x - left->x), b = beta * (right->x - x);
  double ea = one_minus_exp2(a), eb = one_minus_exp2(b);
  double ec = one_minus_exp2(a + b);
  *mean = (exp(-a) * eb * left->g + exp(-b) * ea * right->g) / ec;
  *var = s2 * (ea * eb / ec);
}

/* One conditional draw on the grid (ALGORITHMS.md §6). */
static int draw(const dprl_gp_path *p, dprl_rng *rng,
                const dprl_gp_point *left, const dprl_gp_point *right,
                double x, double *out, dprl_error *err) {
  if (p->sigma == 0) { /* noise off: the zero path */
    *out = 0;
    return DPRL_OK;
  }
  double mean, var;
  dprl_gp_conditional(p->sigma, p->beta, left, right, x, &mean, &var);
  return dprl_release_gaussian(rng, mean, sqrt(var), p->grid, out, err);
}

static int reserve(dprl_gp_path *p, size_t need, dprl_error *err) {
  if (need <= p->cap) return DPRL_OK;
  size_t cap = p->cap ? p->cap : 16;
  while (cap < need) {
    if (cap > SIZE_MAX / 2 / sizeof *p->pts) return dprl_nomem(err);
    cap *= 2;
  }
  dprl_gp_point *q = dprl_realloc(p->pts, cap * sizeof *q);
  if (!q) return dprl_nomem(err);
  p->pts = q;
  p->cap = cap;
  return DPRL_OK;
}

/* First index i with pts[i].x >= x (binary search). */
static size_t lower_bound(const dprl_gp_path *p, double x) {
  size_t lo = 0, hi = p->n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (p->pts[mid].x < x)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

static int check_x(double x, dprl_error *err) {
  if (!isfinite(x))
    return dprl_fail(err, DPRL_EINVAL, "state must be finite, got %g", x);
  return DPRL_OK;
}

int dprl_gp_path_sample_at(dprl_gp_path *p, dprl_rng *rng, double x,
                           double *out, dprl_error *err) {
  if (check_x(x, err)) return err->code;
  size_t i = lower_bound(p, x);
  if (i < p->n && p->pts[i].x == x) { /* a repeated point keeps its value */
    *out = p->pts[i].g;
    return DPRL_OK;
  }
  if (reserve(p, p->n + 1, err)) return err->code;
  double g;
  if (draw(p, rng, i ? &p->pts[i - 1] : NULL, i < p->n ? &p->pts[i] : NULL,
           x, &g, err))
    return err->code;
  memmove(p->pts + i + 1, p->pts + i, (p->n - i) * sizeof *p->pts);
  p->pts[i].x = x;
  p->pts[i].g = g;
  p->n++;
  *out = g;
  return DPRL_OK;
}

typedef struct query {
  double x;
  size_t i; /* position in the caller's array */
} query;

/* The order of x as an unsigned key: flip every bit of a negative double,
** only the sign bit of a positive one.  -0 is keyed as +0 (they compare
** equal, so their order is by position, as for any tie). */
static uint64_t x_key(double x) {
  uint64_t u;
  if (x == 0) x = 0.0;
  memcpy(&u, &x, sizeof u);
  return u >> 63 ? ~u : u | (uint64_t)1 << 63;
}

/* Sorts q[0..n), given in position order, by x, ties by position: a
** stable LSD radix sort over the 8 bytes of x_key (passes where every key
** has the same byte are skipped), through tmp[0..n).  Returns the sorted
** array (q or tmp); NULL with DPRL_EINTR if interrupted. */
static query *radix_sort_queries(query *q, query *tmp, size_t n, dprl_cancel *cancel,
                                 dprl_error *err) {
  size_t(*count)[256] = dprl_calloc(8, sizeof *count);
  if (!count) {
    dprl_nomem(err);
    return NULL;
  }
  for (size_t i = 0; i < n; i++) {
    uint64_t k = x_key(q[i].x);
    for (int d = 0; d < 8; d++) count[d][k >> (8 * d) & 255]++;
  }
  query *src = q, *dst = tmp;
  for (int d = 0; d < 8; d++) {
    size_t *c = count[d];
    if (c[x_key(src[0].x) >> (8 * d) & 255] == n) continue; /* one digit */
    if (dprl_cancel_poll(cancel, 4 * (uint64_t)n, err)) {
      dprl_free(count);
      return NULL;
    }
    size_t sum = 0;
    for (int b = 0; b < 256; b++) {
      size_t t = c[b];
      c[b] = sum;
      sum += t;
    }
    for (size_t i = 0; i < n; i++) dst[c[x_key(src[i].x) >> (8 * d) & 255]++] = src[i];
    query *t = src;
    src = dst;
    dst = t;
  }
  dprl_free(count);
  return src;
}

/* The same order (by x, ties by position), for many queries: spread over
** about n/4 buckets by value, linearly from the smallest x to the largest,
** then each bucket sorted on its own: by insertion when it holds a few,
** by the radix sort otherwise.  The bucket of x is floor((x - lo) * scale),
** rounded at every step, and each step is monotone (rounding never
** reverses an order), so no bucket holds an x larger than a later one's.
** The spread is stable and so is insertion (it moves only past a larger
** x), so ties keep their positions.  About three passes over the queries
** where the radix sort makes eight; states clustered in a few buckets
** cost one radix sort of those.  Returns the sorted array (q or tmp). */
static query *sort_queries(query *q, query *tmp, size_t n, dprl_cancel *cancel,
                           dprl_error *err) {
  enum { FEW = 24 };
  if (n < 4096) return radix_sort_queries(q, tmp, n, cancel, err);
  double lo = q[0].x, hi = q[0].x;
  for (size_t i = 1; i < n; i++) {
    if (q[i].x < lo) lo = q[i].x;
    if (q[i].x > hi) hi = q[i].x;
  }
  if (hi == lo) return q; /* one value: already in position order */
  size_t nb = n / 4;
  double range = hi - lo, scale = (double)nb / range;
  if (!isfinite(range) || !isfinite(scale)) /* a range too wide, or too narrow */
    return radix_sort_queries(q, tmp, n, cancel, err);
  size_t *start = dprl_calloc(nb + 1, sizeof *start);
  if (!start) {
    dprl_nomem(err);
    return NULL;
  }
#define BUCKET(x) ((size_t)(((x) - lo) * scale) < nb ? (size_t)(((x) - lo) * scale) : nb - 1)
  for (size_t i = 0; i < n; i++) start[BUCKET(q[i].x) + 1]++;
  for (size_t b = 0; b < nb; b++) start[b + 1] += start[b];
  if (dprl_cancel_poll(cancel, 4 * (uint64_t)n, err)) {
    dprl_free(start);
    return NULL;
  }
  for (size_t i = 0; i < n; i++) { /* start[b] walks to the end of bucket b */
    size_t b = BUCKET(q[i].x);
    tmp[start[b]++] = q[i];
  }
#undef BUCKET
  size_t from = 0;
  for (size_t b = 0; b < nb; b++) { /* bucket b is tmp[from .. start[b]) */
    size_t m = start[b] - from;
    query *u = tmp + from;
    if (m <= FEW) {
      for (size_t i = 1; i < m; i++) {
        query v = u[i];
        size_t j = i;
        for (; j > 0 && u[j - 1].x > v.x; j--) u[j] = u[j - 1];
        u[j] = v;
      }
    } else {
      query *sorted = radix_sort_queries(u, q + from, m, cancel, err);
      if (!sorted) {
        dprl_free(start);
        return NULL;
      }
      if (sorted != u) memcpy(u, sorted, m * sizeof *u);
    }
    from = start[b];
  }
  dprl_free(start);
  return tmp;
}

/* Merge sorted queries q[0..n) into the stored points, drawing the new
** ones left to right, into merged[] (room for p->n + n); *m = its size;
** where[i] (if not NULL) = the index in merged[] of query i. */
static int merge_draw(const dprl_gp_path *p, dprl_rng *rng, const query *q,
                      size_t n, double *out, size_t *where, dprl_gp_point *merged,
                      size_t *m, dprl_error *err) {
  size_t j = 0, k = 0;
  for (size_t t = 0; t < n; t++) {
    double x = q[t].x;
    if (dprl_cancel_poll(p->cancel, 20, err)) return err->code;
    while (j < p->n && p->pts[j].x < x) merged[k++] = p->pts[j++];
    if (j < p->n && p->pts[j].x == x) merged[k++] = p->pts[j++];
    if (k && merged[k - 1].x == x) { /* stored, or repeated in this batch */
      out[q[t].i] = merged[k - 1].g;
      if (where) where[q[t].i] = k - 1;
      continue;
    }
    /* Nearest left: the last merged point (stored or just drawn); nearest
    ** right: the next STORED point.  Markov property: exact. */
    double g;
    if (dprl_cancel_poll(p->cancel, 1000, err) ||
        draw(p, rng, k ? &merged[k - 1] : NULL, j < p->n ? &p->pts[j] : NULL,
             x, &g, err))
      return err->code;
    merged[k].x = x;
    merged[k].g = g;
    if (where) where[q[t].i] = k;
    k++;
    out[q[t].i] = g;
  }
  if (j < p->n) memcpy(merged + k, p->pts + j, (p->n - j) * sizeof *merged);
  *m = k + (p->n - j);
  return DPRL_OK;
}

int dprl_gp_path_sample_batch(dprl_gp_path *p, dprl_rng *rng,
                              const double *xs, size_t n, double *out,
                              dprl_error *err) {
  return dprl_gp_path_sample_indexed(p, rng, xs, n, out, NULL, err);
}

int dprl_gp_path_sample_indexed(dprl_gp_path *p, dprl_rng *rng,
                                const double *xs, size_t n, double *out,
                                size_t *where, dprl_error *err) {
  if (n == 0) return DPRL_OK;
  for (size_t i = 0; i < n; i++)
    if (check_x(xs[i], err)) return err->code;
  if (n > SIZE_MAX / sizeof(dprl_gp_point) - p->n) return dprl_nomem(err);
  /* the queries, then room to sort; the merged path: both written before
  ** they are read, so not zeroed */
  query *q = dprl_malloc_array(n, 2 * sizeof *q);
  dprl_gp_point *merged = dprl_malloc_array(p->n + n, sizeof *merged);
  if (!q || !merged) {
    dprl_free(q);
    dprl_free(merged);
    return dprl_nomem(err);
  }
  for (size_t i = 0; i < n; i++) {
    q[i].x = xs[i];
    q[i].i = i;
  }
  size_t m = 0, room = p->n + n;
  query *sorted = sort_queries(q, q + n, n, p->cancel, err);
  int rc = sorted ? merge_draw(p, rng, sorted, n, out, where, merged, &m, err) : err->code;
  dprl_free(q);
  if (rc) {
    dprl_free(merged);
    return rc;
  }
  dprl_free(p->pts);
  p->pts = merged;
  p->n = m;
  p->cap = room;
  return DPRL_OK;
}

static int point_cmp(const void *pa, const void *pb) {
  const dprl_gp_point *a = pa, *b = pb;
  return (a->x > b->x) - (a->x < b->x);
}

int dprl_gp_path_load(dprl_gp_path *p, const dprl_gp_point *pts, size_t n,
                      dprl_error *err) {
  for (size_t i = 0; i < n; i++) {
    if (check_x(pts[i].x, err)) return err->code;
    if (!isfinite(pts[i].g))
      return dprl_fail(err, DPRL_EINVAL,
                       "stored value must be finite, got %g at x = %g",
                       pts[i].g, pts[i].x);
  }
  dprl_gp_point *copy = dprl_calloc(n ? n : 1, sizeof *copy);
  if (!copy) return dprl_nomem(err);
  if (n) memcpy(copy, pts, n * sizeof *copy);
  if (dprl_sort(copy, n, sizeof *copy, point_cmp, p->cancel, err)) {
    dprl_free(copy);
    return err->code;
  }
  for (size_t i = 1; i < n; i++) {
    if (dprl_cancel_poll(p->cancel, 2, err)) {
      dprl_free(copy);
      return err->code;
    }
    if (copy[i].x == copy[i - 1].x) {
      double x = copy[i].x;
      dprl_free(copy);
      return dprl_fail(err, DPRL_EINVAL,
                       "stored points must have distinct states, got %g twice",
                       x);
    }
  }
  dprl_free(p->pts);
  p->pts = copy;
  p->n = n;
  p->cap = n ? n : 1;
  return DPRL_OK;
}
