/*
** test_policy_eval_features.c: the closed forms of tabular and aggregate
** features (policy_eval/estimator.c, feature_matrix.c) equal the dense
** LAPACK path on the same matrix: LSW's theta (QR), LSL's (Cholesky),
** ||Phi|| and the smallest weighted singular value (SVD).
*/
#include <math.h>
#include <stdlib.h>

#include "check.h"
#include "util.h"
#include "policy_eval/estimator.h"
#include "policy_eval/feature_matrix.h"
#include "rows/first_visit.h"

/* Closed forms for tabular/aggregate equal the dense LAPACK path on the
** same matrix. */
static void test_structured_equals_dense(void) {
  enum { N = 11, K = 3 };
  dprl_error err = {0};
  dprl_fv_stats st;
  dprl_fv_stats_init(&st, N, NULL, &err);
  st.m = 40;
  double w[N];
  for (int s = 0; s < N; s++) {
    st.visits[s] = s % 4 == 0 ? 0 : 1 + (int64_t)(lcg_unit() * 39);
    st.return_sum[s] = (double)st.visits[s] * lcg_unit() * 5;
    w[s] = 0.5 + lcg_unit();
  }
  dprl_features agg = {DPRL_FEAT_AGGREGATE, N, (N + K - 1) / K, K, NULL};
  dprl_features dense = {DPRL_FEAT_DENSE, N, agg.d, 1, NULL};
  dense.phi = calloc(N * agg.d, sizeof(double));
  for (int s = 0; s < N; s++) dense.phi[s * agg.d + s / K] = 1;
  double t1[N], t2[N], n1, n2, s1, s2;
  dprl_lsw_theta(&agg, w, &st, t1, NULL, &err);
  dprl_lsw_theta(&dense, w, &st, t2, NULL, &err);
  double diff = 0;
  for (int j = 0; j < agg.d; j++) diff = fmax(diff, fabs(t1[j] - t2[j]));
  CHECK(diff < 1e-12, "aggregate LSW closed form = dense QR");
  dprl_lsl_theta(&agg, w, 7.0, &st, t1, NULL, &err);
  dprl_lsl_theta(&dense, w, 7.0, &st, t2, NULL, &err);
  diff = 0;
  for (int j = 0; j < agg.d; j++) diff = fmax(diff, fabs(t1[j] - t2[j]));
  CHECK(diff < 1e-12, "aggregate LSL closed form = dense Cholesky");
  dprl_features_norm(&agg, &n1, &err);
  dprl_features_norm(&dense, &n2, &err);
  CHECK_NEAR(n1, n2, 1e-12, "aggregate ||Phi|| = SVD");
  dprl_features_min_sv_weighted(&agg, w, &s1, NULL, &err);
  dprl_features_min_sv_weighted(&dense, w, &s2, NULL, &err);
  CHECK_NEAR(s1, s2, 1e-12, "aggregate smallest weighted singular value = SVD");
  free(dense.phi);
  dprl_fv_stats_free(&st);
}

int main(void) {
  test_structured_equals_dense();
  return CHECK_DONE();
}
