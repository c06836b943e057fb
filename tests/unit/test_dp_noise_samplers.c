/*
** test_dp_noise_samplers.c: the exact samplers of dp/noise.c: the discrete
** Laplace and Gaussian against their exact pmf (moments and chi-square
** fit, util_dp.h), the Gaussian's acceptance trial split as above 2^27,
** and the largest scales.  Fixed seeds throughout.
*/
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "dp/noise.h"
#include "check.h"
#include "util_dp.h"

/* Test-only hook defined in noise.c: the discrete Gaussian with its
** acceptance trial split as for s > 2^27. */
int64_t dprl_discrete_gaussian_split_for_test(dprl_rng *rng, uint64_t s);

static void test_chi2_helper(void) {
  /* df = 2: Q = exp(-x/2); df = 4: Q = exp(-x/2)(1 + x/2), exactly. */
  double x = 2 * log(1e6);
  CHECK_REL(chi2_sf(2, x), 1e-6, 1e-9, "chi2_sf df=2 at p=1e-6");
  CHECK_REL(chi2_sf(4, 3.0), exp(-1.5) * 2.5, 1e-9, "chi2_sf df=4 series");
  CHECK_REL(chi2_sf(4, 30.0), exp(-15) * 16, 1e-9, "chi2_sf df=4 fraction");
  CHECK_REL(chi2_sf(1, 3.841458820694124), 0.05, 1e-6, "chi2_sf df=1 0.05");
}

/* gaussian: 0 Laplace, 1 Gaussian, 2 Gaussian through the split trial */
static void test_sampler(int gaussian, uint64_t scale, long n, uint64_t seed) {
  dprl_rng r;
  char label[80];
  snprintf(label, sizeof label, "discrete %s%s %s=%llu",
           gaussian ? "Gaussian" : "Laplace", gaussian == 2 ? " (split trial)" : "",
           gaussian ? "s" : "t", (unsigned long long)scale);
  dprl_rng_init_seeded(&r, seed, scale);
  int64_t *xs = malloc((size_t)n * sizeof(int64_t));
  for (long i = 0; i < n; i++)
    xs[i] = gaussian == 2 ? dprl_discrete_gaussian_split_for_test(&r, scale)
            : gaussian    ? dprl_discrete_gaussian(&r, scale)
                          : dprl_discrete_laplace(&r, scale);
  pmf d = pmf_make(gaussian, (double)scale);
  if (!gaussian) { /* cross-check the pmf against the closed form */
    double q = exp(-1.0 / scale);
    char what[120];
    snprintf(what, sizeof what, "%s: summed variance = 2q/(1-q)^2", label);
    CHECK_REL(d.var, 2 * q / ((1 - q) * (1 - q)), 1e-9, what);
  }
  check_moments(label, xs, n, d.var, d.m4);
  check_fit(label, xs, n, &d);
  free(d.p);
  free(xs);
}

static void test_large_gaussian(void) {
  dprl_rng r;
  dprl_rng_init_seeded(&r, 77, 0);
  const uint64_t s = (uint64_t)1 << 20;
  const long n = 200000;
  int64_t *xs = malloc((size_t)n * sizeof(int64_t));
  for (long i = 0; i < n; i++) xs[i] = dprl_discrete_gaussian(&r, s);
  /* For s this large the discrete Gaussian's moments equal the continuous
  ** ones (s^2, 3 s^4) to far below double precision. */
  double v = (double)s * (double)s;
  check_moments("discrete Gaussian s=2^20", xs, n, v, 3 * v * v);
  free(xs);

  const uint64_t smax = (uint64_t)1 << 27;
  const long m = 2000;
  double s2 = 0;
  int ok = 1;
  for (long i = 0; i < m; i++) {
    int64_t z = dprl_discrete_gaussian(&r, smax);
    ok &= llabs(z) <= (long long)(64 * (smax + 1));
    s2 += (double)z * (double)z;
  }
  v = (double)smax * (double)smax;
  CHECK(ok, "discrete Gaussian s=2^27 stays within 64(s+1)");
  CHECK_NEAR(s2 / m / v, 1.0, NSE * sqrt(2.0 / m),
             "discrete Gaussian s=2^27 variance");

  /* Beyond 2^27 the acceptance trial is split (its exact pmf is checked at
  ** small s in main); here the scale: s = 2^27 + 1 and s = 2^40, the
  ** largest allowed, keep |z| <= 64 (s+1) and variance s^2. */
  const uint64_t wide[] = {smax + 1, DPRL_GAUSS_STEPS_MAX};
  for (int w = 0; w < 2; w++) {
    s2 = 0;
    ok = 1;
    for (long i = 0; i < m; i++) {
      int64_t z = dprl_discrete_gaussian(&r, wide[w]);
      ok &= z != INT64_MIN && llabs(z) <= (long long)(64 * (wide[w] + 1));
      s2 += (double)z * (double)z;
    }
    v = (double)wide[w] * (double)wide[w];
    CHECK(ok, w ? "discrete Gaussian s=2^40 stays within 64(s+1)"
                : "discrete Gaussian s=2^27+1 stays within 64(s+1)");
    CHECK_NEAR(s2 / m / v, 1.0, NSE * sqrt(2.0 / m),
               w ? "discrete Gaussian s=2^40 variance" : "discrete Gaussian s=2^27+1 variance");
  }
  CHECK(dprl_discrete_gaussian(&r, DPRL_GAUSS_STEPS_MAX + 1) == INT64_MIN,
        "discrete Gaussian refuses s > 2^40 (INT64_MIN)");
}

int main(void) {
  test_chi2_helper();
  const uint64_t lap[] = {1, 3, 1000};
  for (int i = 0; i < 3; i++) test_sampler(0, lap[i], 300000, 100 + i);
  /* s = 100000: 2 s^2 t^2 > 2^64, so the 128-bit uniform draw is used */
  const uint64_t gau[] = {1, 2, 5, 50, 100000};
  for (int i = 0; i < 5; i++) test_sampler(1, gau[i], 300000, 200 + i);
  /* the split acceptance trial used above 2^27, against the same exact pmf */
  for (int i = 0; i < 5; i++) test_sampler(2, gau[i], 300000, 300 + i);
  test_large_gaussian();
  return CHECK_DONE();
}
