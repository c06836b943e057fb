/*
** test_mdp_world_normals.c: the log bootstrap's normals (the ziggurat of
** mdp_world_log.c, ALGORITHMS.md §14.4) against the normal law: the
** layers' table (its edges fall, the base ends at R), the moments, the
** share beyond the base's edge and beyond 1, 2 and 4, and a chi-square fit
** over 64 cells of equal probability.  Fixed keys; every bound is about 5
** standard errors of its statistic.
*/
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "check.h"
#include "mdp/mdp_world_internal.h"
#include "util_dp.h"

#define N 2000000L

/* P(|Z| > x). */
static double two_tail(double x) { return erfc(x / sqrt(2.0)); }

/* The standard normal quantile of p, by bisection on erfc (tests only). */
static double quantile(double p) {
  double lo = -10, hi = 10;
  for (int k = 0; k < 200; k++) {
    double mid = 0.5 * (lo + hi);
    if (0.5 * erfc(-mid / sqrt(2.0)) < p) lo = mid;
    else hi = mid;
  }
  return 0.5 * (lo + hi);
}

static void test_table(void) {
  fast_normal g;
  uint64_t key[4] = {1, 2, 3, 4};
  dprl_mdpv_normal_init(&g, key);
  int falls = 1;
  for (int i = 1; i < DPRL_ZIG_LAYERS; i++) falls &= g.x[i + 1] < g.x[i] && g.ratio[i] < 1;
  CHECK(falls && g.x[DPRL_ZIG_LAYERS] == 0, "the layers' right edges fall to 0");
  CHECK_NEAR(g.x[1], 3.442619855899, 1e-12, "the base layer ends at R");
  /* every layer has the area V: the top one x[127] (1 - f(x[127])) */
  double top = g.x[DPRL_ZIG_LAYERS - 1];
  CHECK_REL(top * (1 - exp(-0.5 * top * top)), 9.91256303526217e-3, 1e-6,
            "the top layer's area is V: the table closes");
}

static void test_law(const uint64_t key[4]) {
  fast_normal g;
  dprl_mdpv_normal_init(&g, key);
  double m1 = 0, m2 = 0, m4 = 0, edges[63];
  long beyond_r = 0, beyond[3] = {0, 0, 0};
  const double at[3] = {1, 2, 4};
  double obs[64] = {0}, expct[64];
  for (int k = 0; k < 63; k++) edges[k] = quantile((k + 1) / 64.0);
  for (int k = 0; k < 64; k++) expct[k] = (double)N / 64;
  for (long n = 0; n < N; n++) {
    double z = dprl_mdpv_normal(&g);
    m1 += z, m2 += z * z, m4 += z * z * z * z;
    beyond_r += fabs(z) > 3.442619855899;
    for (int j = 0; j < 3; j++) beyond[j] += fabs(z) > at[j];
    int lo = 0, hi = 63; /* the cell: the number of edges below z */
    while (lo < hi) {
      int mid = (lo + hi) / 2;
      if (z < edges[mid]) hi = mid;
      else lo = mid + 1;
    }
    obs[lo]++;
  }
  m1 /= N, m2 /= N, m4 /= N;
  CHECK_NEAR(m1, 0, 5 / sqrt((double)N), "mean 0");
  CHECK_NEAR(m2, 1, 5 * sqrt(2.0 / N), "variance 1");
  CHECK_NEAR(m4, 3, 5 * sqrt(96.0 / N), "fourth moment 3");
  double pr = two_tail(3.442619855899);
  CHECK_NEAR((double)beyond_r, N * pr, 5 * sqrt(N * pr), "the tail beyond R (Marsaglia's)");
  for (int j = 0; j < 3; j++) {
    double p = two_tail(at[j]);
    CHECK_NEAR((double)beyond[j], N * p, 5 * sqrt(N * p * (1 - p)), "the share beyond 1, 2, 4");
  }
  CHECK(chi2_pvalue(obs, expct, 64) > 1e-6, "64 cells of equal normal probability fit");
}

int main(void) {
  test_table();
  const uint64_t a[4] = {0x9E3779B97F4A7C15u, 7, 11, 13}, b[4] = {42, 43, 44, 45};
  test_law(a);
  test_law(b);
  return CHECK_DONE();
}
