/*
** test_dp_noise_release.c: the grid (dprl_grid_for, dprl_grid_bits) and
** the releases of dp/noise.c: a value rounded to its grid point plus
** discrete noise, centred where it should be with the exact pmf's
** variance (fixed seeds, util_dp.h's bounds), and the errors it refuses.
*/
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dp/noise.h"
#include "check.h"
#include "util_dp.h"

static void test_grid(void) {
  CHECK(dprl_grid_for(1.0) == 0x1.0p-26, "grid_for(1) = 2^-26");
  CHECK(dprl_grid_for(3.0) == 0x1.0p-24, "grid_for(3) = 2^-24");
  CHECK(dprl_grid_for(0.75) == 0x1.0p-26, "grid_for(0.75) = 2^-26");
  int ok = 1;
  for (int k = -1000; k <= 1000; k++) {
    double x = ldexp(1.0, k);
    ok &= dprl_grid_for(x) == ldexp(1.0, k - 26);
    ok &= dprl_grid_for(nextafter(x, INFINITY)) == ldexp(1.0, k + 1 - 26);
    ok &= dprl_grid_for(nextafter(x, 0)) == ldexp(1.0, k - 26);
  }
  CHECK(ok, "grid_for(2^k) = 2^(k-26), just above -> 2^(k-25)");
  CHECK(isnan(dprl_grid_for(0)) && isnan(dprl_grid_for(-1)) &&
            isnan(dprl_grid_for(NAN)) && isnan(dprl_grid_for(INFINITY)),
        "grid_for rejects non-positive / non-finite");
  CHECK(dprl_grid_bits(1.0, 39) == 0x1.0p-39 && dprl_grid_bits(3.0, 39) == 0x1.0p-37 &&
            dprl_grid_bits(3.0, 50) == 0x1.0p-48 && dprl_grid_bits(0x1.0p-1070, 39) == 0x1.0p-1074 &&
            isnan(dprl_grid_bits(0, 39)),
        "grid_bits(x, b) = 2^(ceil(log2 x) - b), never below 2^-1074");
}

typedef int (*release_fn)(dprl_rng *, double, double, double, double *,
                          dprl_error *);

/* E[(out - g round(value/g))^2] / g^2 over n releases. */
static double release_m2(release_fn f, double value, double scale, double g,
                         long n, uint64_t seed, int *ok) {
  dprl_rng r;
  dprl_error err;
  dprl_rng_init_seeded(&r, seed, 0);
  dprl_error_clear(&err);
  double base = g * round(value / g), s2 = 0;
  for (long i = 0; i < n; i++) {
    double out = NAN;
    *ok &= f(&r, value, scale, g, &out, &err) == DPRL_OK;
    double z = (out - base) / g;
    *ok &= z == floor(z);
    s2 += z * z;
  }
  return s2 / n;
}

static void check_release_var(const char *what, release_fn f, double scale,
                              double g, int gaussian, double steps) {
  const long n = 50000;
  int ok = 1;
  double m2 = release_m2(f, 0.3, scale, g, n, 11, &ok);
  pmf d = pmf_make(gaussian, steps);
  CHECK(ok, what);
  CHECK_NEAR(m2, d.var, NSE * sqrt((d.m4 - d.var * d.var) / n), what);
  free(d.p);
}

/* The grid point is round-half-away(value / g): the mean of the release
** must sit there (noise s = 1, so a wrong k is off by >= 1 / SE = 150). */
static void check_release_mean(double value, double g, double want) {
  dprl_rng r;
  dprl_error err;
  const long n = 40000;
  pmf d = pmf_make(1, 1.0);
  double sum = 0;
  int ok = 1;
  dprl_rng_init_seeded(&r, 13, 0);
  dprl_error_clear(&err);
  for (long i = 0; i < n; i++) {
    double out = NAN;
    ok &= dprl_release_gaussian(&r, value, 0.0, g, &out, &err) == DPRL_OK;
    sum += out / g - want; /* exact: both are integers below 2^52 */
  }
  char what[120];
  snprintf(what, sizeof what, "release of %g on g=%g centres on %g", value, g,
           want);
  CHECK(ok, what);
  CHECK_NEAR(sum / n, 0.0, NSE * sqrt(d.var / n), what);
  free(d.p);
}

static void test_release_values(void) {
  dprl_rng r;
  dprl_error err;
  dprl_rng_init_seeded(&r, 3, 3);
  dprl_error_clear(&err);
  double g = dprl_grid_for(0.5);
  int ok = 1;
  for (int i = 0; i < 200; i++) {
    double a = NAN, b = NAN;
    ok &= dprl_release_gaussian(&r, 0.123456789, 0.37, g, &a, &err) == 0;
    ok &= dprl_release_laplace(&r, -12.3456789, 0.37, g, &b, &err) == 0;
    ok &= isfinite(a) && fmod(a, g) == 0 && isfinite(b) && fmod(b, g) == 0;
  }
  CHECK(ok && err.code == DPRL_OK, "releases are multiples of g");

  /* sigma/g tiny or 0 still gets s = 1; never zero noise. */
  check_release_var("gaussian sigma=1e-300 uses s=1", dprl_release_gaussian,
                    1e-300, 1.0, 1, 1.0);
  check_release_var("gaussian sigma=0 uses s=1", dprl_release_gaussian, 0.0,
                    1.0, 1, 1.0);
  check_release_var("laplace b=0 uses t=1", dprl_release_laplace, 0.0, 1.0, 0,
                    1.0);
  /* sigma is rounded UP to whole grid steps, never down. */
  check_release_var("gaussian sigma=2.1, g=1 uses s=3", dprl_release_gaussian,
                    2.1, 1.0, 1, 3.0);
  check_release_var("gaussian sigma=3+2^-40, g=1 uses s=4",
                    dprl_release_gaussian, 3 + 0x1.0p-40, 1.0, 1, 4.0);
  check_release_var("gaussian sigma=3, g=1 uses s=3", dprl_release_gaussian,
                    3.0, 1.0, 1, 3.0);
  check_release_var("gaussian sigma=0.3, g=1/8 uses s=3", dprl_release_gaussian,
                    0.3, 0.125, 1, 3.0);
  check_release_mean(0.7, 1.0, 1.0);
  check_release_mean(-2.5, 1.0, -3.0);
  check_release_mean(0.3125, 0.125, 3.0);
  check_release_mean(-1.2, 0x1.0p-40, round(-1.2 * 0x1.0p40));
  check_release_var("laplace b=2.5, g=1 uses t=3", dprl_release_laplace, 2.5,
                    1.0, 0, 3.0);
  {
    int ok2 = 1;
    double m2 = release_m2(dprl_release_gaussian, 0.3, 2.1, 1.0, 50000, 12, &ok2);
    pmf d = pmf_make(1, 3.0);
    CHECK(ok2 && m2 >= 2.1 * 2.1 - NSE * sqrt((d.m4 - d.var * d.var) / 50000),
          "noise variance >= sigma^2 for sigma=2.1");
    free(d.p);
  }
}

static int rejects(release_fn f, double value, double scale, double g,
                   const char *needle) {
  dprl_rng r;
  dprl_error err;
  double out = 12345;
  dprl_rng_init_seeded(&r, 4, 4);
  dprl_error_clear(&err);
  int rc = f(&r, value, scale, g, &out, &err);
  if (rc == DPRL_OK) return 0;
  printf("#   %s\n", err.msg);
  return rc == DPRL_EINVAL && err.code == DPRL_EINVAL && out == 12345 &&
         strstr(err.msg, needle) != NULL;
}

static int accepts(release_fn f, double value, double scale, double g) {
  dprl_rng r;
  dprl_error err;
  double out = NAN;
  dprl_rng_init_seeded(&r, 4, 4);
  dprl_error_clear(&err);
  return f(&r, value, scale, g, &out, &err) == DPRL_OK && isfinite(out);
}

static void test_release_errors(void) {
  release_fn G = dprl_release_gaussian, L = dprl_release_laplace;
  CHECK(rejects(G, 1, NAN, 1, "sigma must be finite and >= 0, got nan"),
        "rejects sigma NaN");
  CHECK(rejects(G, 1, -0.5, 1, "sigma must be finite and >= 0, got -0.5"),
        "rejects sigma < 0");
  CHECK(rejects(G, 1, INFINITY, 1, "sigma"), "rejects sigma inf");
  CHECK(rejects(L, 1, NAN, 1, "b must be finite"), "rejects b NaN");
  CHECK(rejects(L, 1, -1, 1, "b must be finite"), "rejects b < 0");
  CHECK(rejects(G, 1, 1, 3, "power of two, got 3"), "rejects g = 3");
  CHECK(rejects(G, 1, 1, 0, "power of two"), "rejects g = 0");
  CHECK(rejects(G, 1, 1, -2, "power of two"), "rejects g = -2");
  CHECK(rejects(G, 1, 1, NAN, "power of two"), "rejects g NaN");
  CHECK(rejects(L, 1, 1, INFINITY, "power of two"), "rejects g inf");
  CHECK(rejects(G, NAN, 1, 1, "value must be finite"), "rejects value NaN");
  CHECK(rejects(L, -INFINITY, 1, 1, "value"), "rejects value -inf");
  CHECK(rejects(G, 0x1.0p52, 1, 1, "2^52"), "rejects value/g = 2^52");
  CHECK(rejects(L, -0x1.0p52, 1, 1, "2^52"), "rejects value/g = -2^52");
  CHECK(rejects(G, 0x1.0p40, 1, 0x1.0p-12, "2^52"), "rejects 2^40 / 2^-12");
  CHECK(accepts(G, 0x1.0p52 - 1, 1, 1), "accepts value/g = 2^52 - 1");
  CHECK(accepts(G, 1, 0x1.0p27, 1), "accepts sigma/g = 2^27");
  CHECK(accepts(L, 1, 0x1.0p27, 1), "accepts b/g = 2^27");
  CHECK(rejects(G, 1, 0x1.0p27 + 0.5, 1, "2^27"), "rejects sigma/g > 2^27");
  CHECK(rejects(L, 1, 0x1.0p27 + 1, 1, "2^27"), "rejects b/g > 2^27");
  CHECK(rejects(G, 1, 1e300, 0x1.0p-1074, "2^27"), "rejects sigma/g = inf");
  CHECK(dprl_release_gaussian(NULL, 1, NAN, 1, NULL, NULL) == DPRL_EINVAL,
        "rejects with a NULL error too");

  /* The form with the scale in whole grid steps (DP-LSW/LSL, up to 2^40). */
  {
    dprl_rng r;
    dprl_error err;
    double out = 12345;
    int ok = 1;
    dprl_rng_init_seeded(&r, 6, 6);
    dprl_error_clear(&err);
    ok &= dprl_release_gaussian_steps(&r, 0.3, 0, 0.5, &out, &err) == DPRL_EINVAL &&
          strstr(err.msg, "1 to 2^40 grid steps, got 0") && out == 12345;
    dprl_error_clear(&err);
    ok &= dprl_release_gaussian_steps(&r, 0.3, DPRL_GAUSS_STEPS_MAX + 1, 0.5, &out, &err) ==
              DPRL_EINVAL && strstr(err.msg, "got 1099511627777");
    dprl_error_clear(&err);
    ok &= dprl_release_gaussian_steps(&r, 0.3, 3, 0.75, &out, &err) == DPRL_EINVAL &&
          strstr(err.msg, "power of two");
    dprl_error_clear(&err);
    ok &= dprl_release_gaussian_steps(&r, NAN, 3, 0.5, &out, &err) == DPRL_EINVAL;
    dprl_error_clear(&err);
    ok &= dprl_release_gaussian_steps(&r, 0x1.0p51, 3, 0.5, &out, &err) == DPRL_EINVAL &&
          strstr(err.msg, "2^52");
    CHECK(ok && out == 12345, "release_gaussian_steps checks s, g and the value");
    /* s = 2^40 steps of g = 2^-40: on the grid, |noise| <= 64 (s+1) g */
    ok = 1;
    for (int i = 0; i < 200; i++) {
      double g = 0x1.0p-40;
      dprl_error_clear(&err);
      ok &= dprl_release_gaussian_steps(&r, 0.3, DPRL_GAUSS_STEPS_MAX, g, &out, &err) == 0;
      double z = out / g;
      ok &= z == floor(z) && fabs(out - g * round(0.3 / g)) <= 64 * (1 + g);
    }
    CHECK(ok, "release_gaussian_steps at 2^40 steps: on the grid, within 64 (s+1) g");
  }

  /* A result beyond DBL_MAX is an error, never inf. */
  dprl_rng r;
  dprl_rng_init_seeded(&r, 5, 5);
  int ok = 1, failed = 0;
  for (int i = 0; i < 20; i++) {
    dprl_error err;
    double out = 0;
    dprl_error_clear(&err);
    int rc = dprl_release_gaussian(&r, DBL_MAX, 0, 0x1.0p1000, &out, &err);
    ok &= (rc == DPRL_OK && isfinite(out)) || rc == DPRL_EINVAL;
    failed += rc == DPRL_EINVAL;
  }
  CHECK(ok && failed > 0, "release overflowing a double is an error");
}

int main(void) {
  test_grid();
  test_release_values();
  test_release_errors();
  return CHECK_DONE();
}
