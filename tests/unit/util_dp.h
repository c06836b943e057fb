/*
** util_dp.h: the statistics the tests of dp/'s noise share: the
** chi-square tail and goodness of fit, and the exact pmf of the discrete
** Laplace and Gaussian with checks of its moments.  Every random test uses
** a fixed seed and a bound derived from the distribution: 6 standard
** errors for means and second moments, and a chi-square goodness of fit
** accepted when its p-value is above 1e-6.
*/

#ifndef DPRL_TEST_UTIL_DP_H
#define DPRL_TEST_UTIL_DP_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "check.h"

#define P_MIN 1e-6 /* chi-square tests fail below this p-value */
#define NSE 6.0    /* standard errors allowed for means and moments */

/* Upper tail of the chi-square law, Q(df/2, x/2): series for the lower
** regularised gamma when x < a + 1, Lentz's continued fraction otherwise. */
static inline double chi2_sf(double df, double x) {
  double a = df / 2, y = x / 2;
  if (y <= 0) return 1.0;
  double lg = a * log(y) - y - lgamma(a);
  if (y < a + 1) {
    double term = 1 / a, sum = term, ap = a;
    for (int n = 0; n < 10000 && fabs(term) > fabs(sum) * 1e-16; n++) {
      ap += 1;
      term *= y / ap;
      sum += term;
    }
    return 1 - sum * exp(lg);
  }
  double b = y + 1 - a, c = 1e300, d = 1 / b, h = d;
  for (int i = 1; i < 10000; i++) {
    double an = -i * (i - a);
    b += 2;
    d = an * d + b;
    if (fabs(d) < 1e-300) d = 1e-300;
    c = b + an / c;
    if (fabs(c) < 1e-300) c = 1e-300;
    d = 1 / d;
    double del = d * c;
    h *= del;
    if (fabs(del - 1) < 1e-16) break;
  }
  return exp(lg) * h;
}

/* Chi-square p-value of observed counts against expected counts. */
static inline double chi2_pvalue(const double *obs, const double *expct, int k) {
  double stat = 0;
  for (int i = 0; i < k; i++)
    stat += (obs[i] - expct[i]) * (obs[i] - expct[i]) / expct[i];
  double p = chi2_sf(k - 1, stat);
  printf("#   chi-square %.2f on %d df, p = %.3g\n", stat, k - 1, p);
  return p;
}

/* Exact pmf on [-L, L] (the mass beyond is below 1e-17 of the total). */
typedef struct pmf {
  long L;
  double *p; /* p[x + L] */
  double var, m4;
} pmf;

static inline pmf pmf_make(int gaussian, double scale) {
  pmf d;
  d.L = gaussian ? (long)ceil(10 * scale) + 2 : (long)ceil(45 * scale) + 2;
  d.p = malloc((size_t)(2 * d.L + 1) * sizeof(double));
  double z = 0;
  for (long x = -d.L; x <= d.L; x++) {
    double w = gaussian ? exp(-(double)x * x / (2 * scale * scale))
                        : exp(-fabs((double)x) / scale);
    d.p[x + d.L] = w;
    z += w;
  }
  d.var = d.m4 = 0;
  for (long x = -d.L; x <= d.L; x++) {
    d.p[x + d.L] /= z;
    d.var += (double)x * x * d.p[x + d.L];
    d.m4 += (double)x * x * (double)x * x * d.p[x + d.L];
  }
  return d;
}

/* Mean and E[X^2] of samples from a law with mean 0, variance var and
** fourth moment m4: the estimators' standard errors are exact. */
static inline void check_moments(const char *label, const int64_t *xs, long n,
                          double var, double m4) {
  char what[160];
  double s1 = 0, s2 = 0;
  for (long i = 0; i < n; i++) {
    s1 += (double)xs[i];
    s2 += (double)xs[i] * (double)xs[i];
  }
  snprintf(what, sizeof what, "%s: mean 0 within 6 SE", label);
  CHECK_NEAR(s1 / n, 0.0, NSE * sqrt(var / n), what);
  snprintf(what, sizeof what, "%s: variance %.6g within 6 SE", label, var);
  CHECK_NEAR(s2 / n, var, NSE * sqrt((m4 - var * var) / n), what);
}

/* Goodness of fit: consecutive integers grouped greedily (left to right)
** into bins of expected count >= emin; the outermost bins take the tails. */
static inline void check_fit(const char *label, const int64_t *xs, long n,
                      const pmf *d) {
  long width = 2 * d->L + 1;
  int *bin = malloc((size_t)width * sizeof(int));
  double *expct = calloc((size_t)width, sizeof(double));
  double *obs = calloc((size_t)width, sizeof(double));
  double emin = n / 60.0 > 20 ? n / 60.0 : 20;
  int k = 0;
  for (long i = 0; i < width; i++) {
    bin[i] = k;
    expct[k] += n * d->p[i];
    if (expct[k] >= emin) k++;
  }
  if (k > 0 && expct[k] < emin) { /* merge the short last bin */
    for (long i = 0; i < width; i++)
      if (bin[i] == k) bin[i] = k - 1;
    expct[k - 1] += expct[k];
  } else {
    k++;
  }
  for (long i = 0; i < n; i++) {
    long x = xs[i] < -d->L ? -d->L : xs[i] > d->L ? d->L : (long)xs[i];
    obs[bin[x + d->L]] += 1;
  }
  char what[160];
  snprintf(what, sizeof what, "%s: chi-square fit to exact pmf, p > 1e-6",
           label);
  CHECK(k >= 3 && chi2_pvalue(obs, expct, k) > P_MIN, what);
  free(bin);
  free(expct);
  free(obs);
}

#endif
