/*
** test_stats.c: the statistics perturbation core (stats_perturb.h,
** ALGORITHMS.md §9) and the estimators from per-state means.
**
** Expected values come from outside the code under test: sigma1 of the
** analytic Gaussian mechanism was solved separately (Python, bisection on
** the normal CDF through math.erfc, 300 halvings):
**   (eps, delta) = (1, 1e-5) -> 3.7306316348159454
**                  (0.1, 0.1) -> 2.8469244358473484
**                  (2, 1e-6)  -> 2.23047627118642
** Statistical checks use fixed seeds and bounds of 5 standard errors.
*/
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "policy_eval/estimator.h"
#include "policy_eval/stats_perturb.h"

static dprl_sp_params params(double eps, double delta, int64_t n, int64_t max_states) {
  dprl_sp_params p = {eps, delta, -2.0, 7.0, n, max_states, 1000};
  return p;
}

static void test_calibrate(void) {
  static const struct {
    double eps, delta, sigma1;
  } cases[] = {{1, 1e-5, 3.7306316348159454}, {0.1, 0.1, 2.8469244358473484},
               {2, 1e-6, 2.23047627118642}};
  for (int i = 0; i < 3; i++) {
    dprl_sp_params p = params(cases[i].eps, cases[i].delta, 10, 0);
    dprl_sp_noise nz;
    dprl_error err = {0};
    CHECK(dprl_sp_calibrate(&p, &nz, &err) == DPRL_OK, "calibrate");
    CHECK_REL(nz.sigma1, cases[i].sigma1, 1e-9, "sigma1 = the analytic Gaussian (independent bisection)");
    CHECK(nz.c == 9.0 && nz.n_eff == 10, "c = B = fmax - fmin, n_eff = N");
    CHECK_REL(nz.sens, sqrt(10 * (81.0 + 81.0)) + sqrt(20.0) * nz.grid, 1e-15,
              "Delta = sqrt(N (B^2 + c^2)) + sqrt(2 N) grid");
    CHECK(nz.grid == dprl_grid_for(sqrt(10 * (81.0 + 81.0)) * nz.sigma1), "grid from the unrounded scale");
    CHECK_REL(nz.sigma, nz.sens * nz.sigma1, 1e-15, "sigma = Delta sigma1");
    int e;
    CHECK(frexp(nz.grid, &e) == 0.5 && nz.sigma / nz.grid <= 0x1p26 && nz.sigma / nz.grid >= 0x1p25,
          "grid: a power of two, 2^25..2^26 steps per sigma");
  }
  dprl_sp_params p = params(1, 1e-5, 10, 3);
  dprl_sp_noise nz;
  dprl_error err = {0};
  dprl_sp_calibrate(&p, &nz, &err);
  CHECK(nz.n_eff == 6, "max_states 3 of 10 states: n_eff = 2 max_states = 6");
  p.max_states = 7;
  dprl_sp_calibrate(&p, &nz, &err);
  CHECK(nz.n_eff == 10, "max_states 7 of 10 states: n_eff = N (2 max_states > N)");
  /* huge m: the grid coarsens so that m B is exact on it (public rule) */
  p = params(1, 1e-5, 1, 0);
  p.episodes = (int64_t)1 << 40;
  dprl_sp_calibrate(&p, &nz, &err);
  CHECK((double)p.episodes * 9.0 / nz.grid < 0x1p51 && nz.grid > dprl_grid_for(nz.sigma),
        "m = 2^40: coarser grid keeps every value exact");
  p = params(1, 1e-5, 1, 0);
  p.fmax = p.fmin;
  CHECK(dprl_sp_calibrate(&p, &nz, &err) == DPRL_EINVAL &&
            strcmp(err.msg, "statistics: the return range must be finite with fmax > fmin, got [-2, -2]") == 0,
        "empty return range refused");
}

static void test_perturb_statistics(void) {
  enum { N = 3, DRAWS = 4000 };
  int64_t visits[N] = {0, 5, 400};
  double sums[N] = {0, 5 * 3.0, 400 * -1.5};
  dprl_fv_stats st = {N, 400, visits, sums};
  dprl_sp_params p = params(1, 1e-5, N, 0);
  dprl_sp_noise nz;
  dprl_error err = {0};
  dprl_sp_calibrate(&p, &nz, &err);
  double acc[2][N] = {{0}}, acc2[2][N] = {{0}};
  dprl_rng rng;
  dprl_rng_init_seeded(&rng, 2024, 1);
  int rc = 0;
  for (int k = 0; k < DRAWS; k++) {
    double s[N], v[N];
    rc |= dprl_sp_perturb(&p, &nz, &st, &rng, NULL, s, v, &err);
    for (int i = 0; i < N; i++) {
      double e0 = s[i] - (sums[i] - p.fmin * (double)visits[i]);
      double e1 = (v[i] - (double)visits[i]) * nz.c;
      acc[0][i] += e0;
      acc[1][i] += e1;
      acc2[0][i] += e0 * e0;
      acc2[1][i] += e1 * e1;
    }
  }
  CHECK(rc == 0, "perturb: no error");
  double tol_var = 5 * sqrt(2.0 / DRAWS);
  for (int j = 0; j < 2; j++)
    for (int i = 0; i < N; i++) {
      double mean = acc[j][i] / DRAWS, var = acc2[j][i] / DRAWS - mean * mean;
      char what[120];
      snprintf(what, sizeof what, "%s of state %d: noise mean 0 (5 se)", j ? "c visits" : "centred sum", i);
      CHECK(fabs(mean) <= 5 * nz.sigma / sqrt(DRAWS), what);
      snprintf(what, sizeof what, "%s of state %d: noise variance sigma^2 (5 se)", j ? "c visits" : "centred sum", i);
      CHECK(fabs(var / (nz.sigma * nz.sigma) - 1) <= tol_var, what);
    }
  dprl_rng_wipe(&rng);
}

static void test_estimate(void) {
  dprl_sp_params p = params(1, 1e-5, 4, 0);
  dprl_sp_noise nz;
  dprl_error err = {0};
  dprl_sp_calibrate(&p, &nz, &err);
  /* centred sums and noisy counts: unvisited (< 1), clamped high, clamped
  ** low, inside */
  double sum[4] = {5, 1000, -50, 30}, vis[4] = {0.5, 10, 10, 10};
  double mean[4], se[4], cnt[4];
  dprl_sp_estimate(&p, &nz, sum, vis, mean, se, cnt, NULL, &err);
  CHECK(mean[0] == 0 && isnan(se[0]) && cnt[0] == 0.5, "visits < 1: unvisited, mean 0, no se");
  CHECK(mean[1] == 7 && mean[2] == -2, "means clamped to [fmin, fmax]");
  CHECK_REL(mean[3], -2 + 3.0, 1e-15, "mean = fmin + sum / visits");
  CHECK_REL(se[3], nz.sigma * sqrt(1 + (3.0 / 9) * (3.0 / 9)) / 10, 1e-15,
            "se = sigma sqrt(1 + ((mean - fmin)/c)^2) / visits");
  double neg[1] = {-3};
  p.n_states = 1;
  dprl_sp_estimate(&p, &nz, sum, neg, mean, se, cnt, NULL, &err);
  CHECK(cnt[0] == 0 && mean[0] == 0, "negative noisy count: LSL count 0, unvisited");
  CHECK_REL(dprl_sp_planned_se(&p, &nz, 50), nz.sigma * sqrt(2.0) / 50, 1e-15,
            "planned se at the worst mean: sigma sqrt(2) / n");
}

/* The means-based estimators reproduce the exact ones when given exact
** means and counts (tabular, aggregate; LSW and LSL). */
static void test_means_estimators(void) {
  int64_t visits[6] = {3, 0, 7, 2, 9, 1};
  double sums[6] = {2.5, 0, 10, -1, 4, 0.25};
  dprl_fv_stats st = {6, 12, visits, sums};
  double mean[6], cnt[6], w[6] = {1, 2, 0.5, 1, 1, 3};
  for (int s = 0; s < 6; s++) {
    mean[s] = visits[s] ? sums[s] / (double)visits[s] : 0;
    cnt[s] = (double)visits[s];
  }
  dprl_features tab = {DPRL_FEAT_TABULAR, 6, 6, 1, NULL};
  dprl_features agg = {DPRL_FEAT_AGGREGATE, 6, 2, 3, NULL};
  const dprl_features *fs[2] = {&tab, &agg};
  for (int i = 0; i < 2; i++) {
    double a[6], b[6];
    dprl_error err = {0};
    int rc = dprl_lsw_theta(fs[i], w, &st, a, NULL, &err) |
             dprl_lsw_theta_means(fs[i], w, mean, b, NULL, &err);
    int same = rc == 0;
    for (int j = 0; j < fs[i]->d; j++) same &= fabs(a[j] - b[j]) <= 1e-14 * (1 + fabs(a[j]));
    CHECK(same, i ? "LSW from means = from statistics (aggregate)" : "LSW from means = from statistics (tabular)");
    rc = dprl_lsl_theta(fs[i], w, 4.0, &st, a, NULL, &err) |
         dprl_lsl_theta_means(fs[i], w, 4.0, mean, cnt, 12, b, NULL, &err);
    same = rc == 0;
    for (int j = 0; j < fs[i]->d; j++) same &= fabs(a[j] - b[j]) <= 1e-14 * (1 + fabs(a[j]));
    CHECK(same, i ? "LSL from means = from statistics (aggregate)" : "LSL from means = from statistics (tabular)");
  }
}

int main(void) {
  test_calibrate();
  test_perturb_statistics();
  test_estimate();
  test_means_estimators();
  printf("%d passed, %d failed\n", check_passed_count, check_failed_count);
  return CHECK_DONE();
}
