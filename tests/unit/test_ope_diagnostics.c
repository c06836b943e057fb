/*
** test_ope_diagnostics.c: dp_is_value's diagnostics (option diagnostics =
** s; ext/ope/, ALGORITHMS.md §15.7).
**
** - The sensitivity W B sqrt(1 + s), over every pair of episode kinds on a
**   grid of weights (0 to W, clipped or not at W) and returns (gmin to
**   gmax): adding or removing one is within it and attains it (w = W
**   clipped, G = gmax); replacing one is within it.
** - Without diagnostics (s = 0) the vector and the calibration are those
**   of three entries, unchanged.
** - The vector's two new entries are k2 sum w^2 and kc (clipped), with
**   the scales of the header, from sums written here.
*/
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "ope/ope.h"

static int setup(dprl_ope_config *c, dprl_ope_noise *nz, double share) {
  char opts[300];
  dprl_error err = {0};
  dprl_snprintf(opts, sizeof opts,
                "{\"gamma\": 1, \"rmin\": -1, \"rmax\": 2, \"gmin\": -1, \"gmax\": 2, "
                "\"horizon\": 3, \"weight_max\": 4, \"epsilon\": 1, \"delta\": 1e-5, "
                "\"diagnostics\": %.17g}", share);
  return dprl_ope_config_parse(c, "dp_is_value", opts, strlen(opts), 0, NULL, &err) ||
         dprl_ope_calibrate(c, nz, &err);
}

/* One episode's vector: (w, g, clipped) added to empty sums. */
static void one(const dprl_ope_config *c, const dprl_ope_noise *nz, double w, double g,
                int clipped, double v[5]) {
  dprl_ope_sums s = {0};
  memset(v, 0, 5 * sizeof *v);
  dprl_ope_sums_add(c, nz, &s, w, g, clipped);
  dprl_ope_vector(nz, &s, v);
}

static double dist(const double *x, const double *y) {
  double d = 0;
  for (int i = 0; i < 5; i++) d += (x[i] - y[i]) * (x[i] - y[i]);
  return sqrt(d);
}

#define KINDS 64
static void test_sensitivity(double share) {
  dprl_ope_config c;
  dprl_ope_noise nz;
  CHECK(setup(&c, &nz, share) == 0, "options with diagnostics parse and calibrate");
  double W = c.weight_max, v[KINDS][5], zero[5] = {0}, ar = 0, rep = 0;
  int n = 0;
  for (int i = 0; i <= 6; i++) /* w = 0, W/6, ..., W; at W also clipped */
    for (int k = 0; k <= 4; k++)
      for (int cl = 0; cl <= (i == 6); cl++)
        if (n < KINDS) one(&c, &nz, W * i / 6, c.gmin + (c.gmax - c.gmin) * k / 4, cl, v[n++]);
  for (int a = 0; a < n; a++) {
    ar = fmax(ar, dist(v[a], zero));
    for (int b = 0; b < n; b++) rep = fmax(rep, dist(v[a], v[b]));
  }
  double want = W * (c.gmax - c.gmin) * sqrt(1 + share);
  char m[160];
  dprl_snprintf(m, sizeof m, "s = %g: the sensitivity is W B sqrt(1 + s)", share);
  CHECK_REL(nz.sens, want, 1e-15, m);
  dprl_snprintf(m, sizeof m, "s = %g: add/remove within it over %d kinds, and attained", share, n);
  CHECK(ar <= nz.sens * (1 + 1e-12) && ar >= nz.sens * (1 - 1e-12), m);
  dprl_snprintf(m, sizeof m, "s = %g: replace within it over every pair", share);
  CHECK(rep <= nz.sens * (1 + 1e-12), m);
  dprl_snprintf(m, sizeof m, "s = %g: %d entries, the rounding term sqrt(dim)", share, nz.dim);
  CHECK(nz.dim == (share > 0 ? 5 : 3) &&
            fabs(nz.sens_steps - (nz.sens / nz.grid + sqrt((double)nz.dim))) < 1e-9,
        m);
  printf("# s = %g: add/remove %.17g, replace %.17g, claimed %.17g\n", share, ar, rep, nz.sens);
  dprl_ope_config_free(&c);
}

static void test_vector(void) {
  dprl_ope_config c, c0;
  dprl_ope_noise nz, nz0;
  CHECK(setup(&c, &nz, 0.5) == 0 && setup(&c0, &nz0, 0) == 0, "two calibrations");
  dprl_ope_sums s = {0};
  double ws[] = {0.5, 4, 0, 2}, gs[] = {1, -1, 2, 0.5}, T2 = 0;
  int cl[] = {0, 1, 0, 0};
  for (int i = 0; i < 4; i++) {
    dprl_ope_sums_add(&c, &nz, &s, ws[i], gs[i], cl[i]);
    T2 += ws[i] * ws[i];
  }
  double v[5], v0[5] = {0};
  dprl_ope_vector(&nz, &s, v);
  dprl_ope_vector(&nz0, &s, v0);
  double k2 = sqrt(0.25) * 3 / 4, kc = sqrt(0.25) * 4 * 3; /* s/2 = 0.25, B = 3, W = 4 */
  CHECK(fabs(v[3] - k2 * T2) < 1e-12 && fabs(v[4] - kc * 1) < 1e-12,
        "the new entries: k2 sum w^2 and kc clipped, k2 = sqrt(s/2) B/W, kc = sqrt(s/2) W B");
  CHECK(v[0] == v0[0] && v[1] == v0[1] && v[2] == v0[2],
        "the first three entries do not depend on the diagnostics");
  CHECK(nz0.sens == 4 * 3 && nz0.dim == 3, "s = 0: W B and three entries, as without the option");
  dprl_ope_config_free(&c);
  dprl_ope_config_free(&c0);
}

int main(void) {
  test_sensitivity(0);
  test_sensitivity(0.25);
  test_sensitivity(1);
  test_vector();
  return CHECK_DONE();
}
