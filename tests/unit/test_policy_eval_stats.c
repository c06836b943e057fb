/*
** test_policy_eval_stats.c: the statistics perturbation core
** (policy_eval/stats_perturb.h, ALGORITHMS.md §9), the estimators from
** per-state means, and the shard merge (stats_merge.h).
**
** Expected values come from outside the code under test: sigma1 of the
** analytic Gaussian mechanism was solved separately (Python, bisection on
** the normal CDF through math.erfc, 300 halvings):
**   (eps, delta) = (1, 1e-5) -> 3.7306316348159454
**                  (0.1, 0.1) -> 2.8469244358473484
**                  (2, 1e-6)  -> 2.23047627118642
** Statistical checks use fixed seeds and bounds of 5 standard errors.
** The shard merge is checked on hand-made shards whose sums and verdicts
** follow from the definitions.
*/
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "policy_eval/estimator.h"
#include "policy_eval/stats_merge.h"
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

/* A from-statistics config: 3 states, m = 10 episodes, returns in [0, 2],
** K buckets, max_states k (0: none). */
static dprl_pe_config merge_cfg(int64_t K, int64_t k) {
  dprl_pe_config c;
  memset(&c, 0, sizeof c);
  c.n_states = 3;
  c.episodes = 10;
  c.buckets = K;
  c.rule.fmin = 0;
  c.rule.fmax = 2;
  c.rule.max_states = k;
  return c;
}

static dprl_stats_row srow(int64_t s, int64_t v, double sum, int64_t lo, int64_t hi) {
  dprl_stats_row r;
  memset(&r, 0, sizeof r);
  r.state = s;
  r.visits = v;
  r.return_sum = sum;
  r.with_buckets = 1;
  r.bucket_k = 4;
  r.bucket_lo = lo;
  r.bucket_hi = hi;
  return r;
}

/* Rows of shards (lo..hi); the code of finish (or of the first row that
** fails), and the error text. */
static int merge_run(const dprl_pe_config *c, const dprl_stats_row *rows, size_t n,
                     dprl_stats_merge *m, dprl_error *err) {
  memset(err, 0, sizeof *err); /* the first error of a run is the one kept */
  int rc = dprl_stats_merge_init(m, c, NULL, err);
  for (size_t i = 0; i < n && !rc; i++) rc = dprl_stats_merge_row(m, &rows[i], err);
  return rc ? rc : dprl_stats_merge_finish(m, NULL, err);
}

static void test_merge(void) {
  dprl_pe_config c = merge_cfg(4, 0);
  dprl_stats_merge m;
  dprl_error err = {0};
  /* two shards covering buckets 0..1 and 2..3: sums add per state */
  const dprl_stats_row ok[] = {srow(0, 3, 2.5, 0, 1), srow(2, 1, 0.5, 0, 1),
                               srow(0, 4, 1.0, 2, 3), srow(1, 2, 3.0, 2, 3)};
  int rc = merge_run(&c, ok, 4, &m, &err);
  CHECK(rc == DPRL_OK, "merge: two shards covering 0..3 pass");
  CHECK(m.st.visits[0] == 7 && m.st.visits[1] == 2 && m.st.visits[2] == 1 && m.st.m == 10,
        "merge: visits add per state, m = episodes");
  CHECK_NEAR(m.st.return_sum[0], 3.5, 0, "merge: return sums add per state");
  dprl_stats_merge_free(&m);

  const dprl_stats_row gap[] = {srow(0, 3, 2.5, 0, 1), srow(0, 1, 0.5, 3, 3)};
  rc = merge_run(&c, gap, 2, &m, &err);
  CHECK(rc == DPRL_EINVAL && strstr(err.msg, "bucket 2 is not covered"),
        "merge: an uncovered bucket is named");
  dprl_stats_merge_free(&m);

  const dprl_stats_row overlap[] = {srow(0, 3, 2.5, 0, 2), srow(0, 1, 0.5, 2, 3)};
  rc = merge_run(&c, overlap, 2, &m, &err);
  CHECK(rc == DPRL_EINVAL && strstr(err.msg, "0..2 and 2..3 overlap"),
        "merge: overlapping shards are refused");
  dprl_stats_merge_free(&m);

  const dprl_stats_row twice[] = {srow(1, 3, 2.5, 0, 3), srow(1, 3, 2.5, 0, 3)};
  rc = merge_run(&c, twice, 2, &m, &err);
  CHECK(rc == DPRL_EINVAL && strstr(err.msg, "gives a state twice"),
        "merge: a shard unioned twice is refused");
  dprl_stats_merge_free(&m);

  dprl_stats_row badk = srow(0, 1, 1, 0, 3);
  badk.bucket_k = 5;
  rc = merge_run(&c, &badk, 1, &m, &err);
  CHECK(rc == DPRL_EINVAL && strstr(err.msg, "option buckets = 4") && strstr(err.msg, "got 5"),
        "merge: a shard hashed with another K is refused");
  dprl_stats_merge_free(&m);

  /* returns: 3 visits can sum to at most 3 x fmax = 6 */
  const dprl_stats_row big[] = {srow(0, 3, 6.5, 0, 3)};
  rc = merge_run(&c, big, 1, &m, &err);
  CHECK(rc == DPRL_EINVAL && strstr(err.msg, "outside visits x [fmin, fmax]"),
        "merge: a return sum above visits x fmax is refused");
  dprl_stats_merge_free(&m);
  const dprl_stats_row ulp[] = {srow(0, 3, 6.0 * (1 + 1e-15), 0, 3)};
  rc = merge_run(&c, ulp, 1, &m, &err);
  CHECK(rc == DPRL_OK && m.st.return_sum[0] == 6.0, "merge: an ulp over is clamped to 6");
  dprl_stats_merge_free(&m);

  const dprl_stats_row many[] = {srow(2, 6, 1, 0, 1), srow(2, 5, 1, 2, 3)};
  rc = merge_run(&c, many, 2, &m, &err);
  CHECK(rc == DPRL_EINVAL && strstr(err.msg, "state 2: visits add up to 11"),
        "merge: visits above m across shards are refused");
  dprl_stats_merge_free(&m);

  /* max_states = 1 with m = 10: the visits of all states add up to <= 10 */
  c = merge_cfg(0, 1);
  dprl_stats_row k1[] = {srow(0, 6, 0, 0, 0), srow(1, 4, 0, 0, 0)};
  for (int i = 0; i < 2; i++) {
    k1[i].with_buckets = 0;
    k1[i].has_bound = 1;
    k1[i].bound = 1;
  }
  rc = merge_run(&c, k1, 2, &m, &err);
  CHECK(rc == DPRL_OK, "merge: max_states 1, visits adding to m pass");
  dprl_stats_merge_free(&m);
  k1[1].visits = 5;
  rc = merge_run(&c, k1, 2, &m, &err);
  CHECK(rc == DPRL_EINVAL && strstr(err.msg, "add up to 11"),
        "merge: max_states 1, visits adding to m + 1 are refused");
  dprl_stats_merge_free(&m);
  k1[0].bound = 0;
  rc = merge_run(&c, k1, 1, &m, &err);
  CHECK(rc == DPRL_EINVAL && strstr(err.msg, "made with max_states = NULL (no bound)"),
        "merge: statistics made without the option's bound are refused");
  dprl_stats_merge_free(&m);
}

int main(void) {
  test_calibrate();
  test_perturb_statistics();
  test_estimate();
  test_means_estimators();
  test_merge();
  return CHECK_DONE();
}
