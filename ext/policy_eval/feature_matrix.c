/* feature_matrix.c: the public feature matrix (see feature_matrix.h). */
#include "policy_eval/feature_matrix.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/linalg.h"

static int parse_dense(const dprl_options *o, const dprl_json *v, int64_t n,
                       dprl_features *f) {
  if ((int64_t)v->n != n)
    return dprl_fail(o->err, DPRL_EINVAL,
                     "%s: option features must have one row per state (%lld rows), "
                     "got %zu rows",
                     o->fn, (long long)n, v->n);
  for (int64_t s = 0; s < n; s++) {
    const dprl_json *row = v->items[s];
    if (row->type != DPRL_JSON_ARRAY || row->n == 0) {
      char got[64];
      dprl_json_describe(row, got, sizeof got);
      return dprl_fail(o->err, DPRL_EINVAL,
                       "%s: option features[%lld] must be a non-empty array of numbers, "
                       "got %s",
                       o->fn, (long long)s, got);
    }
    if (s == 0) f->d = (int64_t)row->n;
    if ((int64_t)row->n != f->d)
      return dprl_fail(o->err, DPRL_EINVAL,
                       "%s: option features[%lld] has %zu columns, but features[0] has "
                       "%lld",
                       o->fn, (long long)s, row->n, (long long)f->d);
  }
  if (f->d > n)
    return dprl_fail(o->err, DPRL_EINVAL,
                     "%s: option features has %lld columns for %lld states: Phi cannot "
                     "have full column rank",
                     o->fn, (long long)f->d, (long long)n);
  f->phi = dprl_malloc((size_t)(n * f->d) * sizeof *f->phi);
  if (!f->phi) return dprl_nomem(o->err);
  for (int64_t s = 0; s < n; s++)
    for (int64_t j = 0; j < f->d; j++) {
      const dprl_json *x = v->items[s]->items[j];
      if (x->type != DPRL_JSON_NUMBER || !isfinite(x->num)) {
        char got[64];
        dprl_json_describe(x, got, sizeof got);
        return dprl_fail(o->err, DPRL_EINVAL,
                         "%s: option features[%lld][%lld] must be a finite number, got %s",
                         o->fn, (long long)s, (long long)j, got);
      }
      f->phi[s * f->d + j] = x->num;
    }
  f->kind = DPRL_FEAT_DENSE;
  return DPRL_OK;
}

int dprl_features_from_options(const dprl_options *o, int64_t n, dprl_features *f) {
  const dprl_json *v = dprl_opt_get(o, "features");
  memset(f, 0, sizeof *f);
  f->n = n;
  f->kind = DPRL_FEAT_TABULAR;
  f->d = n;
  f->k = 1;
  if (!v || (v->type == DPRL_JSON_STRING && strcmp(v->str, "tabular") == 0))
    return DPRL_OK;
  if (v->type == DPRL_JSON_OBJECT && v->n == 1 && strcmp(v->keys[0], "aggregate") == 0) {
    const dprl_json *k = v->items[0];
    if (k->type != DPRL_JSON_NUMBER || k->num != floor(k->num) || k->num < 1 ||
        k->num > (double)n) {
      char got[64];
      dprl_json_describe(k, got, sizeof got);
      return dprl_fail(o->err, DPRL_EINVAL,
                       "%s: option features.aggregate must be an integer in [1, n_states "
                       "= %lld], got %s",
                       o->fn, (long long)n, got);
    }
    f->kind = DPRL_FEAT_AGGREGATE;
    f->k = (int64_t)k->num;
    f->d = (n + f->k - 1) / f->k;
    return DPRL_OK;
  }
  if (v->type == DPRL_JSON_ARRAY) return parse_dense(o, v, n, f);
  char got[64];
  dprl_json_describe(v, got, sizeof got);
  return dprl_fail(o->err, DPRL_EINVAL,
                   "%s: option features must be \"tabular\", {\"aggregate\": k} or an "
                   "n_states x d matrix, got %s",
                   o->fn, got);
}

void dprl_features_free(dprl_features *f) {
  dprl_free(f->phi);
  f->phi = NULL;
}

int dprl_features_norm(const dprl_features *f, double *out, dprl_error *err) {
  if (f->kind == DPRL_FEAT_TABULAR) {
    *out = 1.0;
    return DPRL_OK;
  }
  if (f->kind == DPRL_FEAT_AGGREGATE) { /* orthogonal columns: largest norm */
    *out = sqrt((double)(f->k < f->n ? f->k : f->n));
    return DPRL_OK;
  }
  double *sv = dprl_malloc((size_t)f->d * sizeof *sv);
  if (!sv) return dprl_nomem(err);
  int rc = dprl_singular_values(f->phi, f->n, f->d, sv, err);
  if (!rc) *out = sv[0];
  dprl_free(sv);
  return rc;
}

static int not_full_rank(dprl_error *err, const char *detail) {
  return dprl_fail(err, DPRL_EINVAL,
                   "features: Gamma^(1/2) Phi is not of full column rank under the "
                   "weights (%s)",
                   detail);
}

static int min_sv_structured(const dprl_features *f, const double *w, double *out,
                             dprl_cancel *cancel, dprl_error *err) {
  double best = HUGE_VAL;
  for (int64_t j = 0; j < f->d; j++) {
    if (dprl_cancel_poll(cancel, 2 * (uint64_t)f->k + 4, err)) return err->code;
    double sum = 0;
    for (int64_t s = j * f->k; s < (j + 1) * f->k && s < f->n; s++) sum += w[s];
    if (!(sum > 0)) {
      char detail[96];
      dprl_snprintf(detail, sizeof detail, "every state of feature %lld has weight 0",
               (long long)j);
      return not_full_rank(err, detail);
    }
    if (sum < best) best = sum;
  }
  *out = sqrt(best);
  return DPRL_OK;
}

int dprl_features_min_sv_weighted(const dprl_features *f, const double *w, double *out,
                                  dprl_cancel *cancel, dprl_error *err) {
  if (f->kind != DPRL_FEAT_DENSE) return min_sv_structured(f, w, out, cancel, err);
  size_t nd = (size_t)(f->n * f->d);
  double *a = dprl_malloc(nd * sizeof *a);
  double *sv = dprl_malloc((size_t)f->d * sizeof *sv);
  int rc = DPRL_OK;
  if (!a || !sv) {
    rc = dprl_nomem(err);
    goto done;
  }
  for (int64_t s = 0; s < f->n; s++) {
    if ((rc = dprl_cancel_poll(cancel, 2 * (uint64_t)f->d + 4, err))) goto done;
    for (int64_t j = 0; j < f->d; j++) a[s * f->d + j] = sqrt(w[s]) * f->phi[s * f->d + j];
  }
  if ((rc = dprl_singular_values(a, f->n, f->d, sv, err))) goto done;
  /* LAPACK's usual numerical-rank tolerance: max(n,d) * eps * s_max. */
  double tol = (double)(f->n > f->d ? f->n : f->d) * DBL_EPSILON * sv[0];
  if (!(sv[f->d - 1] > tol)) {
    char detail[96];
    dprl_snprintf(detail, sizeof detail, "smallest singular value %.3g <= tolerance %.3g",
             sv[f->d - 1], tol);
    rc = not_full_rank(err, detail);
    goto done;
  }
  *out = sv[f->d - 1];
done:
  dprl_free(a);
  dprl_free(sv);
  return rc;
}

int dprl_features_apply(const dprl_features *f, const double *theta, double *values,
                        dprl_cancel *cancel, dprl_error *err) {
  uint64_t work = f->kind == DPRL_FEAT_DENSE ? 2 * (uint64_t)f->d + 2 : 2;
  for (int64_t s = 0; s < f->n; s++) {
    if (dprl_cancel_poll(cancel, work, err)) return err->code;
    if (f->kind == DPRL_FEAT_TABULAR) {
      values[s] = theta[s];
    } else if (f->kind == DPRL_FEAT_AGGREGATE) {
      values[s] = theta[dprl_feature_group(f, s)];
    } else {
      double v = 0;
      for (int64_t j = 0; j < f->d; j++) v += f->phi[s * f->d + j] * theta[j];
      values[s] = v;
    }
  }
  return DPRL_OK;
}
