/*
** test_q_learning_gp_path.c: q_learning/gp_path.c, the Gaussian process
** path of functional noise Q-learning (ALGORITHMS.md §8): bridge
** conditionals against a dense Cholesky, the path object, large batches
** (spread, uniform with ties of both zeros, a range wider than a double,
** one value) drawn bit for bit as one query at a time in sorted order, and
** the path's covariance.  Fixed seeds throughout: every statistical check
** has a bound derived from the distribution (>= 5 standard errors).
*/
#include <lapacke.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "util.h"
#include "dp/noise.h"
#include "q_learning/gp_path.h"

static double test_normal(dprl_rng *r) { /* test data only, not released */
  double u1 = 1.0 - dprl_rng_unit(r), u2 = dprl_rng_unit(r);
  return sqrt(-2 * log(u1)) * cos(2 * M_PI * u2);
}

/* ====================== bridge conditionals ============================= */

/* Exact Gaussian conditional of g(x) given g(xs[i]) = gs[i], dense:
** K w = k by Cholesky (dpotrf/dpotrs) plus one refinement step;
** mean = w.g, var = sigma^2 (1 - k.w). */
static void dense_conditional(const double *xs, const double *gs, int n,
                              double x, double sigma, double beta,
                              double *mean, double *var) {
  double *K = malloc(sizeof(double) * n * n), *L = malloc(sizeof(double) * n * n);
  double *k = malloc(sizeof(double) * n), *w = malloc(sizeof(double) * n);
  double *res = malloc(sizeof(double) * n);
  for (int i = 0; i < n; i++) {
    for (int j = 0; j < n; j++) K[i * n + j] = exp(-beta * fabs(xs[i] - xs[j]));
    k[i] = w[i] = exp(-beta * fabs(x - xs[i]));
  }
  memcpy(L, K, sizeof(double) * n * n);
  int info = LAPACKE_dpotrf(LAPACK_ROW_MAJOR, 'L', n, L, n);
  info |= LAPACKE_dpotrs(LAPACK_ROW_MAJOR, 'L', n, 1, L, n, w, 1);
  for (int i = 0; i < n; i++) { /* residual in long double */
    long double s = k[i];
    for (int j = 0; j < n; j++) s -= (long double)K[i * n + j] * w[j];
    res[i] = (double)s;
  }
  info |= LAPACKE_dpotrs(LAPACK_ROW_MAJOR, 'L', n, 1, L, n, res, 1);
  long double m = 0, kw = 0;
  for (int i = 0; i < n; i++) {
    w[i] += res[i];
    m += (long double)w[i] * gs[i];
    kw += (long double)k[i] * w[i];
  }
  if (info) printf("# LAPACK info %d\n", info);
  *mean = (double)m;
  *var = sigma * sigma * (double)(1.0L - kw);
  free(K), free(L), free(k), free(w), free(res);
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Worst relative errors of the bridge formulas against the dense
** conditional, per case: 0 both neighbours, 1 left only, 2 right only. */
typedef struct cond_errs {
  double mean[3], var[3];
  int count[3];
} cond_errs;

/* One random case: n stored points in [0.05, 0.95] with arbitrary values
** (the conditional is linear algebra, valid for any values), x in [0, 1]
** at least 1e-3 from each point.  The spacing limits keep the DENSE
** reference accurate (the bridge formulas need none: see the 1e-12 test). */
static void conditional_case(dprl_rng *r, int n, cond_errs *e) {
  double xs[64], gs[64], x, sigma = 0.3 + 2 * dprl_rng_unit(r);
  double beta = 0.5 + 10 * dprl_rng_unit(r);
  double gap;
  do { /* stored points >= 1e-4 apart: K stays well conditioned */
    for (int i = 0; i < n; i++) xs[i] = 0.05 + 0.9 * dprl_rng_unit(r);
    qsort(xs, (size_t)n, sizeof *xs, cmp_double);
    gap = 1;
    for (int i = 1; i < n; i++) gap = fmin(gap, xs[i] - xs[i - 1]);
  } while (gap < 1e-4);
  for (int i = 0; i < n; i++) gs[i] = sigma * test_normal(r);
  double dmin;
  do {
    x = dprl_rng_unit(r);
    dmin = 1;
    for (int i = 0; i < n; i++) dmin = fmin(dmin, fabs(x - xs[i]));
  } while (dmin < 1e-3);
  int i = 0;
  while (i < n && xs[i] < x) i++;
  dprl_gp_point left = {i ? xs[i - 1] : 0, i ? gs[i - 1] : 0};
  dprl_gp_point right = {i < n ? xs[i] : 0, i < n ? gs[i] : 0};
  double m1, v1, m2, v2;
  dprl_gp_conditional(sigma, beta, i ? &left : NULL, i < n ? &right : NULL, x,
                      &m1, &v1);
  dense_conditional(xs, gs, n, x, sigma, beta, &m2, &v2);
  int kind = i == 0 ? 2 : i == n ? 1 : 0;
  /* mean relative to max(|mean|, 1e-3 sigma): a mean that happens to be
  ** ~0 has no relative digits to compare. */
  double em = fabs(m1 - m2) / fmax(fabs(m2), 1e-3 * sigma);
  double ev = fabs(v1 - v2) / v2;
  e->mean[kind] = fmax(e->mean[kind], em);
  e->var[kind] = fmax(e->var[kind], ev);
  e->count[kind]++;
}

static void test_conditional_vs_dense(void) {
  dprl_rng r;
  dprl_rng_init_seeded(&r, 101, 0);
  cond_errs e = {{0}, {0}, {0}};
  for (int rep = 0; rep < 6; rep++)
    for (int n = 10; n <= 50; n++) conditional_case(&r, n, &e);
  const char *names[3] = {"two neighbours", "left only", "right only"};
  for (int k = 0; k < 3; k++) {
    printf("# %s: %d cases, worst rel err mean %.2e var %.2e\n", names[k],
           e.count[k], e.mean[k], e.var[k]);
    CHECK(e.count[k] > 0, LABEL("dense comparison covers %s", names[k]));
    CHECK(e.mean[k] <= 1e-9, LABEL("bridge mean = dense Cholesky conditional "
                                   "to 1e-9 (%s)", names[k]));
    CHECK(e.var[k] <= 1e-9, LABEL("bridge variance = dense Cholesky "
                                  "conditional to 1e-9 (%s)", names[k]));
  }
  double m, v;
  dprl_gp_conditional(1.7, 3, NULL, NULL, 0.4, &m, &v);
  CHECK(m == 0 && v == 1.7 * 1.7, "no neighbour: N(0, sigma^2)");
}

/* beta d ~ 1e-12: the printed 1 - (...)/sinh(beta D) would cancel every
** digit; the expm1 form must agree with the Taylor expansion
** 2 sinh a sinh b / sinh(a+b) = 2ab/(a+b) (1 + O(a^2)), rel. error ~1e-24. */
static void test_conditional_tiny_and_huge(void) {
  double beta = 3, xl = 0.25, d1 = 0x1p-40, d2 = 3 * 0x1p-41;
  dprl_gp_point left = {xl, 1}, right = {xl + d1 + d2, 0};
  double m, v, a = beta * d1, b = beta * d2;
  dprl_gp_conditional(1, beta, &left, &right, xl + d1, &m, &v);
  CHECK_REL(v, 2 * a * b / (a + b), 1e-13, "bridge variance at beta d ~ 1e-12");
  CHECK_REL(m, b / (a + b), 1e-13, "bridge mean weight at beta d ~ 1e-12");
  dprl_gp_conditional(1, beta, &left, NULL, xl + d1, &m, &v);
  CHECK_REL(v, 2 * a - 2 * a * a, 1e-13, "one-neighbour variance at beta d ~ 1e-12");
  CHECK_REL(m, 1 - a, 1e-13, "one-neighbour mean at beta d ~ 1e-12");
  /* beta D = 2e4: sinh overflows; the conditional is then ~ unconditional. */
  dprl_gp_point l2 = {0, 5}, r2 = {1, -5};
  dprl_gp_conditional(2, 2e4, &l2, &r2, 0.5, &m, &v);
  CHECK(isfinite(m) && isfinite(v), "bridge finite for beta D = 2e4");
  CHECK_NEAR(v, 4, 1e-12, "bridge variance -> sigma^2 far from both neighbours");
  CHECK_NEAR(m, 0, 1e-12, "bridge mean -> 0 far from both neighbours");
  dprl_gp_conditional(2, 2e4, &l2, &r2, 1e-5, &m, &v); /* near the left one */
  CHECK_REL(m, 5 * exp(-0.2), 1e-14, "bridge = one-neighbour law when the other is far");
  CHECK_REL(v, 4 * -expm1(-0.4), 1e-14, "bridge variance = one-neighbour variance then");
}

/* ====================== the path object ================================= */

static void test_path_basics(void) {
  dprl_error err = {0};
  dprl_rng r;
  dprl_rng_init_seeded(&r, 7, 0);
  CHECK(dprl_gp_path_create(-1, 1, 1, &err) == NULL &&
            msg_is(&err, "sigma must be finite and >= 0, got -1"),
        "create refuses sigma < 0 with a message");
  dprl_error_clear(&err);
  CHECK(dprl_gp_path_create(1, 0, 1, &err) == NULL &&
            msg_is(&err, "beta must be finite and > 0, got 0"),
        "create refuses beta = 0 with a message");
  dprl_error_clear(&err);
  CHECK(dprl_gp_path_create(1, 1, 0.3, &err) == NULL &&
            msg_is(&err, "grid must be a power of two > 0, got 0.3"),
        "create refuses a grid that is not a power of two");
  dprl_error_clear(&err);
  double grid = dprl_grid_for(0.8);
  dprl_gp_path *p = dprl_gp_path_create(0.8, 4, grid, &err);
  double g1, g2, g3;
  int rc = dprl_gp_path_sample_at(p, &r, 0.3, &g1, &err);
  rc |= dprl_gp_path_sample_at(p, &r, 0.7, &g2, &err);
  rc |= dprl_gp_path_sample_at(p, &r, 0.3, &g3, &err);
  CHECK(rc == 0 && g1 == g3, "a repeated point returns its stored value");
  CHECK(dprl_gp_path_count(p) == 2, "two distinct points stored");
  int on_grid = 1;
  for (int i = 0; i < 200; i++) {
    double g;
    dprl_gp_path_sample_at(p, &r, dprl_rng_unit(&r), &g, &err);
    on_grid &= g / grid == nearbyint(g / grid);
  }
  CHECK(on_grid, "every value is a multiple of the grid (ALGORITHMS.md 6)");
  const dprl_gp_point *pts = dprl_gp_path_points(p);
  int sorted = 1;
  for (size_t i = 1; i < dprl_gp_path_count(p); i++) sorted &= pts[i - 1].x < pts[i].x;
  CHECK(sorted, "stored points are strictly sorted");
  CHECK(dprl_gp_path_sample_at(p, &r, NAN, &g1, &err) == DPRL_EINVAL &&
            msg_is(&err, "state must be finite, got nan"),
        "sample_at refuses a NaN state");
  dprl_error_clear(&err);
  dprl_gp_path_reset(p);
  CHECK(dprl_gp_path_count(p) == 0, "reset forgets the stored points");
  dprl_gp_path_free(p);
  dprl_gp_path *z = dprl_gp_path_create(0, 4, 1, &err);
  dprl_gp_path_sample_at(z, &r, 0.5, &g1, &err);
  CHECK(g1 == 0, "sigma = 0 is the zero path");
  dprl_gp_path_free(z);
}

/* A large batch (the sort is a radix sort over the bytes of x): states of
** both signs and many magnitudes, repeated, with -0 and +0 both present.
** The batch must draw exactly what sample_at draws over the queries sorted
** by x, ties by position (so the first of +0 / -0 is the one stored). */
typedef struct pos_x {
  double x;
  int i;
} pos_x;
static int cmp_pos_x(const void *a, const void *b) {
  const pos_x *p = a, *q = b;
  if (p->x != q->x) return p->x < q->x ? -1 : 1;
  return (p->i > q->i) - (p->i < q->i);
}
/* The queries of one case of test_batch_large: 0 spread over 2^-30 ..
** 2^47 with both signs and zeros (most buckets empty, a few crowded:
** radix-sorted buckets); 1 uniform on [0, 1) on a coarse grid, so that
** ties are many (buckets by insertion, which must keep positions: the
** caller turns its later zeros into -0, see test_batch_large); 2 a
** range wider than a double (the radix sort alone); 3 one value. */
static double batch_case(int kind, dprl_rng *rq, int i) {
  uint64_t u = dprl_rng_below(rq, 1000);
  switch (kind) {
    case 0: {
      double x = ldexp((double)(u % 37) + 1, (int)(u % 41) - 30);
      if (u % 3 == 0) x = -x;
      if (u % 50 == 0) x = u % 100 == 0 ? -0.0 : 0.0;
      return x;
    }
    case 1: return i == 5 || i == 17 ? 0.0 : (double)dprl_rng_below(rq, 1u << 12) / 4096.0;
    case 2: return i % 7 == 0 ? (i % 14 ? -1e308 : 1e308) : (double)u;
    default: return 0.375;
  }
}

static void test_batch_large(void) {
  enum { NQ = 20000 };
  static const char *const what[] = {
      "spread over 2^-30 .. 2^47", "uniform with many ties", "a range wider than a double",
      "one value"};
  for (int kind = 0; kind < 4; kind++) {
    dprl_error err = {0};
    static double q[NQ], out[NQ];
    static pos_x sorted[NQ];
    dprl_rng rq;
    dprl_rng_init_seeded(&rq, 91, (uint64_t)kind);
    int zeros = 0;
    for (int i = 0; i < NQ; i++) {
      q[i] = batch_case(kind, &rq, i);
      /* uniform: the first zero +0, the later ones -0, so that the stored
      ** zero shows whether the ties kept their positions */
      if (kind == 1 && q[i] == 0 && zeros++) q[i] = -0.0;
      sorted[i] = (pos_x){q[i], i};
    }
    if (kind == 0) {
      q[0] = sorted[0].x = 0.0; /* +0 before -0: +0 is the zero stored */
      q[1] = sorted[1].x = -0.0;
    }
    dprl_gp_point pre[2] = {{-5.0, 0.25}, {3.0, -0.5}};
    dprl_gp_path *a = dprl_gp_path_create(1.3, 0.01, dprl_grid_for(1.3), &err);
    dprl_gp_path *b = dprl_gp_path_create(1.3, 0.01, dprl_grid_for(1.3), &err);
    int rc = dprl_gp_path_load(a, pre, 2, &err) | dprl_gp_path_load(b, pre, 2, &err);
    dprl_rng ra, rb;
    dprl_rng_init_seeded(&ra, 56, 1);
    dprl_rng_init_seeded(&rb, 56, 1);
    rc |= dprl_gp_path_sample_batch(a, &ra, q, NQ, out, &err);
    qsort(sorted, NQ, sizeof *sorted, cmp_pos_x);
    int same_out = 1;
    for (int i = 0; i < NQ; i++) {
      double g;
      rc |= dprl_gp_path_sample_at(b, &rb, sorted[i].x, &g, &err);
      same_out &= g == out[sorted[i].i];
    }
    int same = rc == 0 && same_out && dprl_gp_path_count(a) == dprl_gp_path_count(b);
    for (size_t i = 0; same && i < dprl_gp_path_count(a); i++)
      same = memcmp(&a->pts[i], &b->pts[i], sizeof a->pts[i]) == 0;
    char label[160];
    snprintf(label, sizeof label,
             "large batch (%s) = sample_at over the queries sorted by x then position, "
             "bit for bit", what[kind]);
    CHECK(same, label);
    if (kind <= 1) {
      int pos_zero = 0;
      for (size_t i = 0; i < dprl_gp_path_count(a); i++)
        pos_zero += a->pts[i].x == 0 && !signbit(a->pts[i].x);
      CHECK(pos_zero == 1, "the first zero of the batch (+0, before a -0) is the one stored");
    }
    dprl_gp_path_free(a), dprl_gp_path_free(b);
  }
}

/* Batch over unsorted queries with repeats and already-stored points draws
** exactly what sample_at draws over the sorted distinct queries (same rng
** stream): both condition on the nearest left (stored or new) and nearest
** right stored point. */
static void test_batch_equals_sequential(void) {
  dprl_error err = {0};
  dprl_gp_point pre[4] = {{0.9, 0.2}, {0.1, -0.4}, {0.5, 1.1}, {0.55, 0.9}};
  double q[12] = {0.7, 0.2, 0.5, 0.95, 0.2, 0.05, 0.52, 0.31, 0.7, 0.9, 0.3, 0.99};
  double out[12], sorted[12];
  dprl_gp_path *a = dprl_gp_path_create(1.3, 2.5, dprl_grid_for(1.3), &err);
  dprl_gp_path *b = dprl_gp_path_create(1.3, 2.5, dprl_grid_for(1.3), &err);
  int rc = dprl_gp_path_load(a, pre, 4, &err) | dprl_gp_path_load(b, pre, 4, &err);
  dprl_rng ra, rb;
  dprl_rng_init_seeded(&ra, 55, 1);
  dprl_rng_init_seeded(&rb, 55, 1);
  rc |= dprl_gp_path_sample_batch(a, &ra, q, 12, out, &err);
  memcpy(sorted, q, sizeof q);
  qsort(sorted, 12, sizeof *sorted, cmp_double);
  for (int i = 0; i < 12; i++) {
    double g;
    rc |= dprl_gp_path_sample_at(b, &rb, sorted[i], &g, &err);
  }
  int same = rc == 0 && dprl_gp_path_count(a) == dprl_gp_path_count(b);
  for (size_t i = 0; same && i < dprl_gp_path_count(a); i++)
    same = memcmp(&a->pts[i], &b->pts[i], sizeof a->pts[i]) == 0;
  CHECK(same, "batch draws = sample_at over the sorted queries, bit for bit");
  CHECK(dprl_gp_path_count(a) == 4 + 8, "batch stores each new distinct point once");
  CHECK(out[1] == out[4] && out[0] == out[8], "repeated queries in a batch agree");
  CHECK(out[2] == 1.1 && out[9] == 0.2, "stored points are returned, not redrawn");
  int match = 1;
  for (int i = 0; i < 12; i++) {
    double g;
    dprl_gp_path_sample_at(a, &ra, q[i], &g, &err);
    match &= g == out[i];
  }
  CHECK(match, "batch output is in the caller's order");
  /* where[i]: the index of query i among the points after the call (what
  ** dp_q_noise binds a point's q to), with the same draws as without it */
  dprl_gp_path *w = dprl_gp_path_create(1.3, 2.5, dprl_grid_for(1.3), &err);
  size_t where[12];
  double outw[12];
  rc = dprl_gp_path_load(w, pre, 4, &err);
  dprl_rng_init_seeded(&rb, 55, 1);
  rc |= dprl_gp_path_sample_indexed(w, &rb, q, 12, outw, where, &err);
  int at = rc == 0 && memcmp(out, outw, sizeof out) == 0;
  for (int i = 0; at && i < 12; i++)
    at = where[i] < dprl_gp_path_count(w) && dprl_gp_path_points(w)[where[i]].x == q[i] &&
         dprl_gp_path_points(w)[where[i]].g == outw[i];
  CHECK(at, "sample_indexed: same draws, where[i] is the point of query i");
  CHECK(where[1] == where[4] && where[0] == where[8] && where[2] != where[6],
        "sample_indexed: a repeated query shares its index, distinct states do not");
  dprl_gp_path_free(w);
  /* iterate -> load round trip */
  dprl_gp_path *c = dprl_gp_path_create(1.3, 2.5, dprl_grid_for(1.3), &err);
  rc = dprl_gp_path_load(c, dprl_gp_path_points(a), dprl_gp_path_count(a), &err);
  CHECK(rc == 0 && dprl_gp_path_count(c) == dprl_gp_path_count(a) &&
            memcmp(c->pts, a->pts, sizeof *c->pts * c->n) == 0,
        "iterate + load restores a path exactly");
  dprl_gp_point dup[2] = {{0.4, 1}, {0.4, 2}};
  CHECK(dprl_gp_path_load(c, dup, 2, &err) == DPRL_EINVAL &&
            msg_is(&err, "stored points must have distinct states, got 0.4 twice") &&
            dprl_gp_path_count(c) == dprl_gp_path_count(a),
        "load refuses duplicate states and leaves the path unchanged");
  dprl_gp_path_free(a), dprl_gp_path_free(b), dprl_gp_path_free(c);
}

/* Over N independent paths the sample covariance at 5 fixed points must
** match sigma^2 exp(-beta |x - y|).  The mean is known (0), so
** c^ = (1/N) sum g_x g_y, and for a zero-mean bivariate normal
** Var(g_x g_y) = sigma_x^2 sigma_y^2 + c_xy^2: SE = sqrt((s^4 + c^2)/N).
** Points are drawn in a shuffled order per path (so every case of the
** conditional occurs), alternately with sample_at and sample_batch. */
static void test_covariance(void) {
  enum { NP = 5, N = 4000 };
  const double x[NP] = {0.1, 0.3, 0.35, 0.7, 0.95}, sigma = 1.5, beta = 2;
  double sum[NP][NP] = {{0}}, mean[NP] = {0};
  dprl_rng r, sh;
  dprl_rng_init_seeded(&r, 2024, 0);
  dprl_rng_init_seeded(&sh, 2024, 1);
  dprl_error err = {0};
  dprl_gp_path *p = dprl_gp_path_create(sigma, beta, dprl_grid_for(sigma), &err);
  int rc = 0;
  for (int n = 0; n < N; n++) {
    uint32_t ord[NP] = {0, 1, 2, 3, 4};
    double q[NP], g[NP], v[NP];
    dprl_rng_shuffle_u32(&sh, ord, NP);
    for (int i = 0; i < NP; i++) q[i] = x[ord[i]];
    dprl_gp_path_reset(p);
    if (n % 2)
      rc |= dprl_gp_path_sample_batch(p, &r, q, NP, v, &err);
    else
      for (int i = 0; i < NP; i++) rc |= dprl_gp_path_sample_at(p, &r, q[i], &v[i], &err);
    for (int i = 0; i < NP; i++) g[ord[i]] = v[i];
    for (int i = 0; i < NP; i++) {
      mean[i] += g[i];
      for (int j = 0; j < NP; j++) sum[i][j] += g[i] * g[j];
    }
  }
  CHECK(rc == 0, "4000 paths drawn without error");
  double worst = 0, s2 = sigma * sigma;
  for (int i = 0; i < NP; i++) {
    worst = fmax(worst, fabs(mean[i] / N) / (sigma / sqrt(N)));
    for (int j = i; j < NP; j++) {
      double c = s2 * exp(-beta * fabs(x[i] - x[j]));
      double se = sqrt((s2 * s2 + c * c) / N);
      worst = fmax(worst, fabs(sum[i][j] / N - c) / se);
    }
  }
  printf("# covariance: worst |c^ - c| = %.2f standard errors\n", worst);
  CHECK(worst <= 5, "means and all 15 covariances within 5 standard errors");
  dprl_gp_path_free(p);
}

int main(void) {
  test_conditional_vs_dense();
  test_conditional_tiny_and_huge();
  test_path_basics();
  test_batch_equals_sequential();
  test_batch_large();
  test_covariance();
  return CHECK_DONE();
}
