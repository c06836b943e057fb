/* accountant.c: Gaussian DP and the exact composition (accountant.h). */
#include "dp/accountant.h"

#include <math.h>

#ifndef M_SQRT2
#define M_SQRT2 1.414213562373095048801688724209698079
#endif

/* ---- Gaussian DP ---------------------------------------------------------- */

double dprl_normal_cdf(double x) { return 0.5 * erfc(-x / M_SQRT2); }

double dprl_gdp_delta(double eps, double mu) {
  double a = -eps / mu + mu / 2, b = -eps / mu - mu / 2;
  double pb = dprl_normal_cdf(b), second;
  if (eps < 700)
    second = exp(eps) * pb;
  else /* e^eps would overflow; pb == 0 means the term is below term 1 */
    second = pb > 0 ? exp(eps + log(pb)) : 0;
  double d = dprl_normal_cdf(a) - second;
  return d > 0 ? d : 0;
}

static int gdp_ok(double eps, double delta, double sens, double sigma) {
  return dprl_gdp_delta(eps, sens / sigma) <= delta;
}

/* delta(eps) grows with mu = sens / sigma, so it falls as sigma grows:
** bracket [lo, hi] with lo failing and hi passing, then bisect on log
** sigma; hi is returned (the passing end: sigma rounded up). */
double dprl_gdp_sigma(double eps, double delta, double sens) {
  double hi = sens / eps, lo = hi;
  for (int i = 0; i < 2100 && !gdp_ok(eps, delta, sens, hi); i++) hi *= 2;
  for (int i = 0; i < 2100 && gdp_ok(eps, delta, sens, lo); i++) lo /= 2;
  while (hi / lo > 1 + 1e-12) {
    double mid = sqrt(lo) * sqrt(hi);
    if (mid <= lo || mid >= hi) break;
    if (gdp_ok(eps, delta, sens, mid))
      hi = mid;
    else
      lo = mid;
  }
  return hi;
}

/* delta(eps) falls as eps grows: bracket [lo, hi] with hi passing, then
** bisect; hi is returned (eps rounded up). */
double dprl_gdp_eps(double mu, double delta) {
  if (!(mu >= 0) || !isfinite(mu) || !(delta > 0 && delta < 1)) return NAN;
  if (mu == 0 || dprl_gdp_delta(0, mu) <= delta) return 0;
  double lo = 0, hi = 1;
  for (int i = 0; i < 2100 && !(dprl_gdp_delta(hi, mu) <= delta); i++) {
    lo = hi;
    hi *= 2;
  }
  while (hi - lo > 1e-12 * hi) {
    double mid = lo + (hi - lo) / 2;
    if (!(mid > lo && mid < hi)) break;
    if (dprl_gdp_delta(mid, mu) <= delta)
      hi = mid;
    else
      lo = mid;
  }
  return hi;
}

/* ---- Exact composition (ALGORITHMS.md section 10) --------------------------- */

/* ln Gamma(x) for x > 0 without lgamma's write of the global signgam (a
** data race when connections on several threads calibrate at once). */
static double ln_gamma(double x) {
  int sign;
  return lgamma_r(x, &sign);
}

/* log of term l of delta_k(eps): C(k,l) (e^{(k-l)e0} - e^{eps+l e0}) /
** (1+e^{e0})^k = pmf of Binomial(k, 1/(1+e^{e0})) at l times
** (1 - e^{d}), d = eps - (k-2l) e0; -inf where d >= 0 (a zero term).
** ln_norm = ln(1 + e^{-e0}), lk1 = lgamma(k+1). */
static double kov_log_term(int64_t k, int64_t l, double e0, double eps,
                           double lk1, double ln_norm) {
  if (l < 0 || l > k) return -HUGE_VAL;
  double d = eps - (double)(k - 2 * l) * e0;
  if (!(d < 0)) return -HUGE_VAL;
  return lk1 - ln_gamma((double)l + 1) - ln_gamma((double)(k - l) + 1) -
         (double)l * e0 - (double)k * ln_norm + log(-expm1(d));
}

/* Running log-sum-exp: the sum is exp(m) * s. */
typedef struct lse {
  double m, s;
} lse;
static void lse_add(lse *a, double t) {
  if (t == -HUGE_VAL) return;
  if (t > a->m) {
    a->s = a->s * exp(a->m - t) + 1;
    a->m = t;
  } else {
    a->s += exp(t - a->m);
  }
}
static double lse_log(const lse *a) {
  return a->s > 0 ? a->m + log(a->s) : -HUGE_VAL;
}

/* Add terms from l = from in direction step (+1 or -1) while they exist,
** stopping once the rest is provably negligible. Past the peak a
** log-concave sequence falls at least geometrically with the ratio r of
** its last two terms, so the rest is at most t r / (1 - r). */
static void kov_sum_from(lse *acc, int64_t k, int64_t from, int step,
                         int64_t lo, int64_t hi, double e0, double eps,
                         double lk1, double ln_norm) {
  double prev = -HUGE_VAL;
  for (int64_t l = from; l >= lo && l <= hi; l += step) {
    double t = kov_log_term(k, l, e0, eps, lk1, ln_norm);
    if (t == -HUGE_VAL) break; /* outside the support of the positive part */
    lse_add(acc, t);
    if (t < prev) {
      double r = exp(t - prev);
      if (t + log(r / (1 - r)) < lse_log(acc) - 46) break; /* < 2^-66 */
    }
    prev = t;
  }
}

double dprl_composition_delta(int64_t k, double eps0, double delta0,
                              double eps) {
  if (k < 1 || k > DPRL_COMPOSITION_MAX_K || !(eps0 > 0) || !isfinite(eps0) ||
      !(delta0 >= 0 && delta0 < 1) || !(eps >= 0) || !isfinite(eps))
    return NAN;
  /* Term l is positive iff l < k/2 - eps/(2 eps0); the +1 covers rounding
  ** (kov_log_term checks each term's sign itself). */
  double lim = 0.5 * (double)k - eps / (2 * eps0);
  double log_dk = -HUGE_VAL;
  if (lim > 0) {
    int64_t hi = lim >= (double)k ? k : (int64_t)ceil(lim);
    double lk1 = ln_gamma((double)k + 1), ln_norm = log1p(exp(-eps0));
    /* The terms are log-concave in l (log C(k,l) and log(1 - e^d) are
    ** concave, the rest linear): the peak is the last l whose term is not
    ** below its predecessor's. */
    int64_t lo = 0, top = hi;
    while (lo < top) {
      int64_t mid = lo + (top - lo + 1) / 2;
      if (kov_log_term(k, mid, eps0, eps, lk1, ln_norm) >=
          kov_log_term(k, mid - 1, eps0, eps, lk1, ln_norm))
        lo = mid;
      else
        top = mid - 1;
    }
    lse acc = {-HUGE_VAL, 0};
    kov_sum_from(&acc, k, lo, -1, 0, hi, eps0, eps, lk1, ln_norm);
    kov_sum_from(&acc, k, lo + 1, +1, 0, hi, eps0, eps, lk1, ln_norm);
    log_dk = lse_log(&acc);
  }
  /* 1 - (1-delta0)^k (1 - delta_k), without cancellation. */
  double dk = exp(log_dk);
  if (dk >= 1) return 1;
  return -expm1((double)k * log1p(-delta0) + log1p(-dk));
}
