/* estimator.c: theta_w and theta_lambda (see estimator.h). */
#include "policy_eval/estimator.h"

#include <math.h>
#include <string.h>

#include "base/linalg.h"

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
static int lsw_structured(const dprl_features *f, const double *w, const est_in *st,
                          double *theta, dprl_cancel *cancel, dprl_error *err) {
  for (int64_t j = 0; j < f->d; j++) {
    if (dprl_cancel_poll(cancel, 4 * (uint64_t)f->k + 4, err)) return err->code;
    double num = 0, den = 0;
    for (int64_t s = j * f->k; s < (j + 1) * f->k && s < f->n; s++) {
      num += w[s] * in_mean(st, s);
      den += w[s];
    }
    theta[j] = num / den; /* den > 0: full rank was checked */
  }
  return DPRL_OK;
}

static int lsw_dense(const dprl_features *f, const double *w, const est_in *st,
                     double *theta, dprl_cancel *cancel, dprl_error *err) {
  /* min || Gamma^{1/2} (Phi theta - F) || by QR, better conditioned than
  ** forming the normal equations. */
  int64_t n = f->n, d = f->d;
  double *a = dprl_malloc((size_t)(n * d) * sizeof *a);
  double *y = dprl_malloc((size_t)n * sizeof *y);
  int rc;
  if (!a || !y) {
    rc = dprl_nomem(err);
  } else {
    rc = DPRL_OK;
    for (int64_t s = 0; s < n && !rc; s++) {
      rc = dprl_cancel_poll(cancel, 2 * (uint64_t)d + 4, err);
      double r = sqrt(w[s]);
      for (int64_t j = 0; j < d; j++) a[s * d + j] = r * f->phi[s * d + j];
      y[s] = r * in_mean(st, s);
    }
    if (!rc) rc = dprl_least_squares(a, n, d, y, theta, err);
  }
  dprl_free(a);
  dprl_free(y);
  return rc;
}

static int lsw_theta(const dprl_features *f, const double *w, const est_in *in,
                     double *theta, dprl_cancel *cancel, dprl_error *err) {
  if (f->kind != DPRL_FEAT_DENSE) return lsw_structured(f, w, in, theta, cancel, err);
  return lsw_dense(f, w, in, theta, cancel, err);
}

int dprl_lsw_theta(const dprl_features *f, const double *w, const dprl_fv_stats *st,
                   double *theta, dprl_cancel *cancel, dprl_error *err) {
  est_in in = {st, NULL, NULL, (double)st->m};
  return lsw_theta(f, w, &in, theta, cancel, err);
}

int dprl_lsw_theta_means(const dprl_features *f, const double *w, const double *mean,
                         double *theta, dprl_cancel *cancel, dprl_error *err) {
  est_in in = {NULL, mean, NULL, 0};
  return lsw_theta(f, w, &in, theta, cancel, err);
}

static int lsl_structured(const dprl_features *f, const double *rho, double lambda,
                          const est_in *st, double *theta, dprl_cancel *cancel,
                          dprl_error *err) {
  /* (sum rho v / m + lambda / 2m)^{-1} sum rho F v / m; the m cancels. */
  for (int64_t j = 0; j < f->d; j++) {
    if (dprl_cancel_poll(cancel, 4 * (uint64_t)f->k + 4, err)) return err->code;
    double num = 0, den = 0;
    for (int64_t s = j * f->k; s < (j + 1) * f->k && s < f->n; s++) {
      num += rho[s] * in_sum(st, s);
      den += rho[s] * in_count(st, s);
    }
    theta[j] = num / (den + lambda / 2.0);
  }
  return DPRL_OK;
}

/* theta_l minimises sum_s g_s (phi_s^T theta - F_s)^2 + lambda/(2m) ||theta||^2,
** g_s = rho_s |X_s| / m: least squares with the (d + n) x d matrix
**   [ sqrt(lambda/2m) I ; Gamma_X^{1/2} Phi ]   (the identity rows FIRST).
** Solved by Householder QR (dgels), never by Cholesky of the normal
** equations: those are singular up to lambda/(2m) whenever Gamma_X is (an
** unvisited state), and whether Cholesky then breaks down in floating point
** depends on the visit counts, so its failure would be a data-dependent
** error.  QR cannot fail here: at step j the column still holds
** sqrt(lambda/2m) in row j, untouched by the earlier reflections (they act
** on rows i < j and on the last n rows only, because rows i+1..d of column i
** are zero), so |r_jj| >= sqrt(lambda/2m) > 0.  The matrix has the public
** size (d + n) x d whatever the data. */
static int lsl_dense(const dprl_features *f, const double *rho, double lambda,
                     const est_in *st, double *theta, dprl_cancel *cancel,
                     dprl_error *err) {
  int64_t n = f->n, d = f->d, rows = d + n;
  double m = st->m;
  double *a = dprl_calloc_polled((size_t)(rows * d), sizeof *a, cancel, err);
  double *y = a ? dprl_calloc_polled((size_t)rows, sizeof *y, cancel, err) : NULL;
  int rc;
  if (!a || !y) {
    rc = err->code;
  } else {
    double ridge = sqrt(lambda / (2.0 * m));
    for (int64_t j = 0; j < d; j++) a[j * d + j] = ridge;
    rc = DPRL_OK;
    for (int64_t s = 0; s < n && !rc; s++) {
      rc = dprl_cancel_poll(cancel, 2 * (uint64_t)d + 4, err);
      double r = sqrt(rho[s] * in_count(st, s) / m);
      double *row = a + (d + s) * d;
      for (int64_t j = 0; j < d; j++) row[j] = r * f->phi[s * d + j];
      y[d + s] = r * in_mean(st, s);
    }
    if (!rc) rc = dprl_least_squares(a, rows, d, y, theta, err);
  }
  dprl_free(a);
  dprl_free(y);
  return rc;
}

static int lsl_theta(const dprl_features *f, const double *rho, double lambda,
                     const est_in *in, double *theta, dprl_cancel *cancel,
                     dprl_error *err) {
  if (in->m == 0) { /* no episodes: Gamma_X = 0, theta = 0 */
    for (int64_t j = 0; j < f->d; j++) {
      if (dprl_cancel_poll(cancel, 4, err)) return err->code;
      theta[j] = 0;
    }
    return DPRL_OK;
  }
  if (f->kind != DPRL_FEAT_DENSE)
    return lsl_structured(f, rho, lambda, in, theta, cancel, err);
  return lsl_dense(f, rho, lambda, in, theta, cancel, err);
}

int dprl_lsl_theta(const dprl_features *f, const double *rho, double lambda,
                   const dprl_fv_stats *st, double *theta, dprl_cancel *cancel,
                   dprl_error *err) {
  est_in in = {st, NULL, NULL, (double)st->m};
  return lsl_theta(f, rho, lambda, &in, theta, cancel, err);
}

int dprl_lsl_theta_means(const dprl_features *f, const double *rho, double lambda,
                         const double *mean, const double *count, double m,
                         double *theta, dprl_cancel *cancel, dprl_error *err) {
  est_in in = {NULL, mean, count, m};
  return lsl_theta(f, rho, lambda, &in, theta, cancel, err);
}
