/*
** test_dp_sensitivity.c: dp/sensitivity.c, Lemma 1's constants: psi of
** dp_lsw and dp_lsl by branch and bound against the paper's loop on 200
** random cases and at a million episodes, the calibrations (alpha, beta)
** worked by hand, and the grid reserve.
*/
#include <math.h>

#include "check.h"
#include "util.h"
#include "dp/sensitivity.h"

/* The paper's loop, for comparison. */
static double psi_lsw_brute(const int64_t *v, const double *w, int n, double beta) {
  int64_t K = 0;
  for (int s = 0; s < n; s++) K = v[s] > K ? v[s] : K;
  double best = 0;
  for (int64_t k = 0; k <= K; k++) {
    double phi = 0;
    for (int s = 0; s < n; s++) {
      double d = (double)(v[s] - k) > 1 ? (double)(v[s] - k) : 1;
      phi += w[s] / (d * d);
    }
    if (exp(-(double)k * beta) * phi > best) best = exp(-(double)k * beta) * phi;
  }
  return best;
}

static double psi_lsl_brute(const int64_t *v, const double *rho, int n, int64_t m,
                            double beta, double c) {
  double r2 = 0, best = 0;
  for (int s = 0; s < n; s++) r2 += rho[s] * rho[s];
  for (int64_t k = 0; k <= m; k++) {
    double sum = 0;
    for (int s = 0; s < n; s++) sum += rho[s] * (double)(v[s] + k < m ? v[s] + k : m);
    double phi = pow(c * sqrt(sum) + sqrt(r2), 2);
    if (exp(-(double)k * beta) * phi > best) best = exp(-(double)k * beta) * phi;
  }
  return best;
}

static void test_psi(void) {
  dprl_error err = {0};
  int all_lsw = 1, all_lsl = 1;
  for (int trial = 0; trial < 200; trial++) {
    int n = 1 + (int)(lcg_unit() * 30);
    int64_t m = 1 + (int64_t)(lcg_unit() * (trial < 100 ? 50 : 3000));
    int64_t v[32];
    double w[32], rho[32];
    for (int s = 0; s < n; s++) {
      /* many ties, some zeros, some at m */
      double u = lcg_unit();
      v[s] = u < 0.2 ? 0 : u < 0.3 ? m : (int64_t)(lcg_unit() * (double)m);
      w[s] = lcg_unit() < 0.2 ? 0 : lcg_unit() * 3;
      rho[s] = lcg_unit();
    }
    double beta = trial % 3 == 0 ? 6e-4 : trial % 3 == 1 ? 0.05 : 0.7;
    double psi, c = lcg_unit() * 2;
    dprl_psi_lsw(v, w, n, beta, NULL, &psi, &err);
    double want = psi_lsw_brute(v, w, n, beta);
    if (fabs(psi - want) > 1e-13 * want) all_lsw = 0;
    dprl_psi_lsl(v, rho, n, m, beta, c, NULL, &psi, &err);
    want = psi_lsl_brute(v, rho, n, m, beta, c);
    if (fabs(psi - want) > 1e-13 * want) all_lsl = 0;
  }
  CHECK(all_lsw, "psi lsw: branch and bound equals the paper's loop (200 cases)");
  CHECK(all_lsl, "psi lsl: branch and bound equals the paper's loop (200 cases)");
  /* Fast at scale: a million episodes, 750 states. */
  enum { N = 750 };
  int64_t v[N];
  double w[N];
  for (int s = 0; s < N; s++) {
    v[s] = (int64_t)(lcg_unit() * 1e6);
    w[s] = 1;
  }
  double psi;
  CHECK(dprl_psi_lsw(v, w, N, 6e-4, NULL, &psi, &err) == 0 && psi > 0, "psi at m = 1e6 computes");
}

static void test_calibration(void) {
  double a, b;
  dprl_error err = {0};
  dprl_calibrate(DPRL_CALIB_NRS, 0.1, 0.1, 40, &a, &b, &err);
  /* worked: ln(20) = 2.995732; alpha = 5 sqrt(5.991465) / 0.1 = 122.3873;
  ** beta = 0.1 / (4 (40 + 2.99573227355399)) = 0.1 / 171.98292909421596
  **      = 5.8145305773469e-4 (the "about 6e-4") */
  CHECK_NEAR(a, 122.38734153404083, 1e-10, "calibration nrs alpha");
  CHECK_NEAR(b, 5.8145305773469e-4, 1e-16, "calibration nrs beta");
  dprl_calibrate(DPRL_CALIB_ELEMENTARY, 1, 0.01, 4, &a, &b, &err);
  double r = 2 + sqrt(2 * log(400));
  CHECK_NEAR(a, 15 * sqrt(2 * log(400)), 1e-12, "calibration elementary alpha");
  CHECK_NEAR(b, 2 * log(2) / (5 * r * r), 1e-15, "calibration elementary beta");
  CHECK(dprl_calibrate(DPRL_CALIB_ELEMENTARY, 6, 0.01, 4, &a, &b, &err) == DPRL_EINVAL,
        "calibration elementary refuses epsilon > 5");
  /* nrs: verified for epsilon <= 20 only (ALGORITHMS.md §4) */
  dprl_error_clear(&err);
  CHECK(dprl_calibrate(DPRL_CALIB_NRS, 20, 0.5, 1, &a, &b, &err) == DPRL_OK &&
            dprl_calibrate(DPRL_CALIB_NRS, 20.000001, 0.5, 1, &a, &b, &err) == DPRL_EINVAL,
        "calibration nrs accepts epsilon 20, refuses above");

  /* The grid reserve (§6.1): c = max(ceil(alpha sqrt d), ceil(32/beta)),
  ** beta_psi = beta - 2 ln(1 + 1/c).  Worked: alpha 1000.2, d 4 ->
  ** ceil(2000.4) = 2001 > 32/0.5 = 64; beta 0.01 -> 3200 > 2001. */
  double c, bp;
  dprl_grid_reserve(1000.2, 0.5, 4, &c, &bp);
  CHECK(c == 2001 && fabs(bp - (0.5 - 2 * log(1 + 1 / 2001.0))) < 1e-15,
        "grid reserve: allowance alpha sqrt(d) when it is larger");
  dprl_grid_reserve(1000.2, 0.01, 4, &c, &bp);
  CHECK(c == 3200 && fabs(bp - (0.01 - 2 * log(1 + 1 / 3200.0))) < 1e-15 && bp >= 0.01 * 15 / 16,
        "grid reserve: 32/beta, and beta_psi >= 15/16 beta");
}

int main(void) {
  test_psi();
  test_calibration();
  return CHECK_DONE();
}
