/* sensitivity.c: calibration constants and psi (see sensitivity.h). */
#include "dp/sensitivity.h"

#include <math.h>
#include <stdlib.h>

int dprl_calibrate(dprl_calibration c, double epsilon, double delta, int64_t d,
                   double *alpha, double *beta, dprl_error *err) {
  if (c == DPRL_CALIB_NRS) { /* Nissim, Raskhodnikova, Smith, as printed */
    /* Lemma 1 is cited without proof; ALGORITHMS.md §4 checks it numerically
    ** and the check holds for epsilon up to about 50: refuse beyond 20. */
    if (epsilon > DPRL_NRS_EPSILON_MAX)
      return dprl_fail(err, DPRL_EINVAL,
                       "option epsilon must be <= %g with calibration \"nrs\" (the range "
                       "where Lemma 1 is verified), got %g",
                       DPRL_NRS_EPSILON_MAX, epsilon);
    *alpha = 5.0 * sqrt(2.0 * log(2.0 / delta)) / epsilon;
    *beta = epsilon / (4.0 * ((double)d + log(2.0 / delta)));
    return DPRL_OK;
  }
  /* The supplement's Lemma 1, proved for epsilon <= 5 and beta <= ln 2. */
  if (epsilon > 5.0)
    return dprl_fail(err, DPRL_EINVAL,
                     "option epsilon must be <= 5 with calibration \"elementary\", got %g",
                     epsilon);
  double r = sqrt((double)d) + sqrt(2.0 * log(4.0 / delta));
  *alpha = 15.0 * sqrt(2.0 * log(4.0 / delta)) / epsilon;
  *beta = 2.0 * log(2.0) * epsilon / (5.0 * r * r);
  if (*beta > log(2.0))
    return dprl_fail(err, DPRL_EINVAL,
                     "calibration \"elementary\" needs beta <= ln 2, got %g", *beta);
  return DPRL_OK;
}

void dprl_grid_reserve(double alpha, double beta, int64_t d, double *c,
                       double *beta_psi) {
  /* ALGORITHMS.md §6: c >= alpha sqrt(d) (the rounding allowance) and
  ** c >= 32 / beta, so that 2 ln(1 + 1/c) <= 2/c <= beta / 16. */
  double a = ceil(alpha * sqrt((double)d)), b = ceil(32.0 / beta);
  *c = a > b ? a : b;
  *beta_psi = beta - 2.0 * log1p(1.0 / *c);
}

/* ---- the maximiser ------------------------------------------------------- */

typedef struct bb_ctx {
  double (*phi)(void *, int64_t);
  void *ctx;
  double beta, best;
  int64_t evals;
} bb_ctx;

static double objective(bb_ctx *b, int64_t k, double phik) {
  return exp(-(double)k * b->beta) * phik;
}

/* Endpoints a < b already evaluated; phi(b) bounds phi on [a, b]. */
static void bb_search(bb_ctx *b, int64_t lo, int64_t hi, double phi_hi) {
  while (hi - lo > 1 && objective(b, lo, phi_hi) > b->best) {
    int64_t mid = lo + (hi - lo) / 2;
    double pm = b->phi(b->ctx, mid);
    b->evals++;
    double h = objective(b, mid, pm);
    if (h > b->best) b->best = h;
    bb_search(b, lo, mid, pm); /* the left half has the larger weights */
    lo = mid;                  /* then continue on the right half */
  }
}

double dprl_smooth_max(double (*phi)(void *ctx, int64_t k), void *ctx,
                       int64_t K, double beta, int64_t *evals) {
  bb_ctx b = {phi, ctx, beta, 0, 0};
  double p0 = phi(ctx, 0);
  b.best = p0;
  b.evals = 1;
  if (K > 0) {
    double pK = phi(ctx, K);
    b.evals++;
    double h = objective(&b, K, pK);
    if (h > b.best) b.best = h;
    bb_search(&b, 0, K, pK);
  }
  if (evals) *evals = b.evals;
  return b.best;
}

/* ---- grouping states by count --------------------------------------------- */

typedef struct group {
  int64_t count;
  double weight; /* sum of w (LSW) or rho (LSL) over states with this count */
} group;

static int by_count_desc(const void *a, const void *b) {
  int64_t x = ((const group *)a)->count, y = ((const group *)b)->count;
  return (x < y) - (x > y);
}

/* Distinct counts, descending, with summed weights, into *G. */
static int make_groups(const int64_t *visits, const double *w, int64_t n, group *g,
                       dprl_cancel *cancel, int64_t *Gout, dprl_error *err) {
  for (int64_t s = 0; s < n; s++) g[s] = (group){visits[s], w[s]};
  int rc = dprl_sort(g, (size_t)n, sizeof *g, by_count_desc, cancel, err);
  if (rc) return rc;
  int64_t G = 0;
  for (int64_t s = 0; s < n; s++) {
    if (G > 0 && g[G - 1].count == g[s].count) g[G - 1].weight += g[s].weight;
    else g[G++] = g[s];
  }
  *Gout = G;
  return DPRL_OK;
}

/* ---- LSW -------------------------------------------------------------------- */

typedef struct lsw_ctx {
  const group *g;
  int64_t G;
  double *tail; /* tail[i] = sum of weights of groups i..G-1 */
  dprl_cancel *cancel;
  dprl_error *err;
} lsw_ctx;

static double phi_lsw(void *vc, int64_t k) {
  const lsw_ctx *c = vc;
  /* groups with count - k > 1 form a prefix (counts descend) */
  int64_t lo = 0, hi = c->G;
  while (lo < hi) {
    int64_t mid = (lo + hi) / 2;
    if (c->g[mid].count - k > 1) lo = mid + 1;
    else hi = mid;
  }
  /* Once stopped, every evaluation returns at once and psi is discarded. */
  if (dprl_cancel_poll(c->cancel, (uint64_t)lo + 20, c->err)) return 0;
  double sum = c->tail[lo];
  for (int64_t i = 0; i < lo; i++) {
    double den = (double)(c->g[i].count - k);
    sum += c->g[i].weight / (den * den);
  }
  return sum;
}

int dprl_psi_lsw(const int64_t *visits, const double *w, int64_t n, double beta,
                 dprl_cancel *cancel, double *psi, dprl_error *err) {
  group *g = dprl_malloc((size_t)n * sizeof *g);
  double *tail = dprl_malloc((size_t)(n + 1) * sizeof *tail);
  if (!g || !tail) {
    dprl_free(g);
    dprl_free(tail);
    return dprl_nomem(err);
  }
  int64_t G = 0;
  int rc = make_groups(visits, w, n, g, cancel, &G, err);
  if (!rc) {
    tail[G] = 0;
    for (int64_t i = G; i-- > 0;) tail[i] = tail[i + 1] + g[i].weight;
    lsw_ctx c = {g, G, tail, cancel, err};
    int64_t K = G ? g[0].count : 0; /* K = max_s |X_s| */
    *psi = dprl_smooth_max(phi_lsw, &c, K, beta, NULL);
    if (cancel && cancel->stopped) rc = err->code ? err->code : DPRL_EINTR;
  }
  dprl_free(g);
  dprl_free(tail);
  return rc;
}

/* ---- LSL -------------------------------------------------------------------- */

typedef struct lsl_ctx {
  const group *g;
  int64_t G, m;
  double c_lambda, rho_norm;
  double *pre_r;  /* pre_r[i]  = sum_{j<i} R_j          */
  double *suf_r;  /* suf_r[i]  = sum_{j>=i} R_j         */
  double *suf_rc; /* suf_rc[i] = sum_{j>=i} R_j count_j */
} lsl_ctx;

static double phi_lsl(void *vc, int64_t k) {
  const lsl_ctx *c = vc;
  /* groups with count + k >= m are capped at m: a prefix */
  int64_t lo = 0, hi = c->G;
  while (lo < hi) {
    int64_t mid = (lo + hi) / 2;
    if (c->g[mid].count + k >= c->m) lo = mid + 1;
    else hi = mid;
  }
  double s = (double)c->m * c->pre_r[lo] + (double)k * c->suf_r[lo] + c->suf_rc[lo];
  double r = c->c_lambda * sqrt(s) + c->rho_norm;
  return r * r;
}

int dprl_psi_lsl(const int64_t *visits, const double *rho, int64_t n, int64_t m,
                 double beta, double c_lambda, dprl_cancel *cancel, double *psi,
                 dprl_error *err) {
  group *g = dprl_malloc((size_t)n * sizeof *g);
  double *arr = dprl_malloc((size_t)(3 * (n + 1)) * sizeof *arr);
  if (!g || !arr) {
    dprl_free(g);
    dprl_free(arr);
    return dprl_nomem(err);
  }
  double rho2 = 0;
  for (int64_t s = 0; s < n; s++) rho2 += rho[s] * rho[s];
  int64_t G = 0;
  int rc = make_groups(visits, rho, n, g, cancel, &G, err);
  if (rc) {
    dprl_free(g);
    dprl_free(arr);
    return rc;
  }
  lsl_ctx c = {g, G, m, c_lambda, sqrt(rho2), arr, arr + n + 1, arr + 2 * (n + 1)};
  c.pre_r[0] = 0;
  for (int64_t i = 0; i < G; i++) c.pre_r[i + 1] = c.pre_r[i] + g[i].weight;
  c.suf_r[G] = c.suf_rc[G] = 0;
  for (int64_t i = G; i-- > 0;) {
    c.suf_r[i] = c.suf_r[i + 1] + g[i].weight;
    c.suf_rc[i] = c.suf_rc[i + 1] + g[i].weight * (double)g[i].count;
  }
  *psi = dprl_smooth_max(phi_lsl, &c, m, beta, NULL);
  dprl_free(g);
  dprl_free(arr);
  return DPRL_OK;
}
