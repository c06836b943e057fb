/* estimator.c: theta_w and theta_lambda (see estimator.h). */
#include "estimator.h"

#include <math.h>
#include <string.h>

#include "linalg.h"

/* The per-state inputs of an estimator: exact statistics, or (statistics
** perturbation, ALGORITHMS.md §9) noisy means and counts. */
typedef struct est_in {
  const dprl_fv_stats *st; /* exact form, or NULL */
  const double *mean, *count;
  double m;
} est_in;

static double in_mean(const est_in *in, int64_t s) {
  return in->st ? dprl_fv_mean(in->st, s) : in->mean[s];
}
static double in_count(const est_in *in, int64_t s) {
  return in->st ? (double)in->st->visits[s] : in->count[s];
}
/* count x mean: the exact return sum, or its noisy reconstruction. */
static double in_sum(const est_in *in, int64_t s) {
  return in->st ? in->st->return_sum[s] : in->mean[s] * in->count[s];
}

/* Structured features: Phi^T Gamma Phi is diagonal, one entry per feature
** (a group of k consecutive states; k = 1 is tabular). */
static void lsw_structured(const dprl_features *f, const double *w,
                           const est_in *st, double *theta) {
  for (int64_t j = 0; j < f->d; j++) {
    double num = 0, den = 0;
    for (int64_t s = j * f->k; s < (j + 1) * f->k && s < f->n; s++) {
      num += w[s] * in_mean(st, s);
      den += w[s];
    }
    theta[j] = num / den; /* den > 0: full rank was checked */
  }
}

static int lsw_dense(const dprl_features *f, const double *w,
                     const est_in *st, double *theta, dprl_error *err) {
  /* min || Gamma^{1/2} (Phi theta - F) || by QR, better conditioned than
  ** forming the normal equations. */
  int64_t n = f->n, d = f->d;
  double *a = dprl_malloc((size_t)(n * d) * sizeof *a);
  double *y = dprl_malloc((size_t)n * sizeof *y);
  int rc;
  if (!a || !y) {
    rc = dprl_nomem(err);
  } else {
    for (int64_t s = 0; s < n; s++) {
      double r = sqrt(w[s]);
      for (int64_t j = 0; j < d; j++) a[s * d + j] = r * f->phi[s * d + j];
      y[s] = r * in_mean(st, s);
    }
    rc = dprl_least_squares(a, n, d, y, theta, err);
  }
  dprl_free(a);
  dprl_free(y);
  return rc;
}

static int lsw_theta(const dprl_features *f, const double *w, const est_in *in,
                     double *theta, dprl_error *err) {
  if (f->kind != DPRL_FEAT_DENSE) {
    lsw_structured(f, w, in, theta);
    return DPRL_OK;
  }
  return lsw_dense(f, w, in, theta, err);
}

int dprl_lsw_theta(const dprl_features *f, const double *w,
                   const dprl_fv_stats *st, double *theta, dprl_error *err) {
  est_in in = {st, NULL, NULL, (double)st->m};
  return lsw_theta(f, w, &in, theta, err);
}

int dprl_lsw_theta_means(const dprl_features *f, const double *w,
                         const double *mean, double *theta, dprl_error *err) {
  est_in in = {NULL, mean, NULL, 0};
  return lsw_theta(f, w, &in, theta, err);
}

static void lsl_structured(const dprl_features *f, const double *rho, double lambda,
                           const est_in *st, double *theta) {
  /* (sum rho v / m + lambda / 2m)^{-1} sum rho F v / m; the m cancels. */
  for (int64_t j = 0; j < f->d; j++) {
    double num = 0, den = 0;
    for (int64_t s = j * f->k; s < (j + 1) * f->k && s < f->n; s++) {
      num += rho[s] * in_sum(st, s);
      den += rho[s] * in_count(st, s);
    }
    theta[j] = num / (den + lambda / 2.0);
  }
}

static int lsl_dense(const dprl_features *f, const double *rho, double lambda,
                     const est_in *st, double *theta, dprl_error *err) {
  int64_t n = f->n, d = f->d;
  double m = st->m;
  double *A = dprl_calloc((size_t)(d * d), sizeof *A);
  if (!A) return dprl_nomem(err);
  memset(theta, 0, (size_t)d * sizeof *theta);
  for (int64_t s = 0; s < n; s++) {
    const double *phi = f->phi + s * d;
    double g = rho[s] * in_count(st, s) / m;
    double b = rho[s] * in_sum(st, s) / m;
    for (int64_t i = 0; i < d; i++) {
      theta[i] += b * phi[i];
      if (g != 0)
        for (int64_t j = i; j < d; j++) A[i * d + j] += g * phi[i] * phi[j];
    }
  }
  for (int64_t i = 0; i < d; i++) A[i * d + i] += lambda / (2.0 * m);
  int rc = dprl_spd_solve(A, d, theta, err); /* upper triangle is enough */
  dprl_free(A);
  return rc;
}

static int lsl_theta(const dprl_features *f, const double *rho, double lambda,
                     const est_in *in, double *theta, dprl_error *err) {
  if (in->m == 0) { /* no episodes: Gamma_X = 0, theta = 0 */
    memset(theta, 0, (size_t)f->d * sizeof *theta);
    return DPRL_OK;
  }
  if (f->kind != DPRL_FEAT_DENSE) {
    lsl_structured(f, rho, lambda, in, theta);
    return DPRL_OK;
  }
  return lsl_dense(f, rho, lambda, in, theta, err);
}

int dprl_lsl_theta(const dprl_features *f, const double *rho, double lambda,
                   const dprl_fv_stats *st, double *theta, dprl_error *err) {
  est_in in = {st, NULL, NULL, (double)st->m};
  return lsl_theta(f, rho, lambda, &in, theta, err);
}

int dprl_lsl_theta_means(const dprl_features *f, const double *rho, double lambda,
                         const double *mean, const double *count, double m,
                         double *theta, dprl_error *err) {
  est_in in = {NULL, mean, count, m};
  return lsl_theta(f, rho, lambda, &in, theta, err);
}
