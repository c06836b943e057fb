/*
** feature_matrix.h: the public feature matrix Phi (N x d) in three forms.
**
**   "tabular"          Phi = I, d = N
**   {"aggregate": k}   state s -> feature floor(s / k), d = ceil(N / k)
**                      (the state aggregation of Balle et al. §6)
**   [[...], ...]       an explicit N x d matrix
**
** The first two have closed forms for everything the estimators need
** (their columns are disjoint indicators, so Phi^T Gamma Phi is diagonal
** and the singular values are column norms); only the explicit matrix
** goes through LAPACK.
*/
#ifndef DPRL_FEATURES_H
#define DPRL_FEATURES_H

#include "base/core.h"
#include "base/options.h"

typedef enum {
  DPRL_FEAT_TABULAR,
  DPRL_FEAT_AGGREGATE,
  DPRL_FEAT_DENSE
} dprl_feat_kind;

typedef struct dprl_features {
  dprl_feat_kind kind;
  int64_t n, d;
  int64_t k;   /* AGGREGATE: states per feature */
  double *phi; /* DENSE: n x d, row-major */
} dprl_features;

/* Read option "features" (default tabular) for n_states states. */
int dprl_features_from_options(const dprl_options *o, int64_t n_states,
                               dprl_features *f);
void dprl_features_free(dprl_features *f);

/* Feature index of state s for AGGREGATE. */
static inline int64_t dprl_feature_group(const dprl_features *f, int64_t s) {
  return s / f->k;
}

/* ||Phi||_2 (largest singular value). */
int dprl_features_norm(const dprl_features *f, double *out, dprl_error *err);

/* Smallest singular value of Gamma^{1/2} Phi, Gamma = diag(w); fails with a
** clear message when Gamma^{1/2} Phi is not of full column rank. */
int dprl_features_min_sv_weighted(const dprl_features *f, const double *w, double *out,
                                  dprl_cancel *cancel, dprl_error *err);

/* values = Phi theta (n entries); polls cancel (may be NULL). */
int dprl_features_apply(const dprl_features *f, const double *theta, double *values,
                        dprl_cancel *cancel, dprl_error *err);

#endif
