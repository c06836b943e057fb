/*
** accountant.h: the privacy accounting every mechanism shares (plain C,
** no SQLite; ALGORITHMS.md sections 8-10).
**
**  - Gaussian DP (Dong, Roth, Su 2019) with the exact delta(eps) of the
**    Gaussian mechanism (Balle & Wang 2018, Theorem 8): dprl_gdp_delta for
**    a mu-GDP mechanism, dprl_gdp_sigma for the smallest sigma of a given
**    l2 sensitivity (compositions of Gaussian mechanisms add mu^2);
**  - the exact k-fold composition of (eps0, delta0)-DP mechanisms
**    (Kairouz, Oh, Viswanath 2015): dprl_composition_delta.
*/
#ifndef DPRL_ACCOUNTANT_H
#define DPRL_ACCOUNTANT_H

#include <stdint.h>

/* Standard normal CDF through erfc (accurate in the lower tail). */
double dprl_normal_cdf(double x);

/* delta(eps) of a mu-GDP mechanism (Balle & Wang 2018, Theorem 8). */
double dprl_gdp_delta(double eps, double mu);

/* The smallest sigma (to relative 1e-12, rounded up: the end of the
** bracket that passes) with dprl_gdp_delta(eps, sens / sigma) <= delta. */
double dprl_gdp_sigma(double eps, double delta, double sens);

/* The smallest eps >= 0 (to relative 1e-12, rounded up: the end of the
** bracket that passes) with dprl_gdp_delta(eps, mu) <= delta: the eps of a
** mu-GDP mechanism at delta. A composition of Gaussian mechanisms is one
** with mu = sqrt(sum mu_i^2) (Dong, Roth, Su 2019, Corollary 3.3); GDP is
** proven for the continuous Gaussian only (ALGORITHMS.md section 12.1).
** mu >= 0 finite, delta in (0, 1); NaN otherwise. mu = 0 gives 0. */
double dprl_gdp_eps(double mu, double delta);

/* The largest k dprl_composition_delta takes. */
#define DPRL_COMPOSITION_MAX_K 1000000

/* The exact privacy profile of the k-fold adaptive composition of
** (eps0, delta0)-DP mechanisms (Kairouz, Oh, Viswanath 2015, Theorem 3.3):
** the composition is (eps, delta)-DP for
**   delta = 1 - (1 - delta0)^k (1 - delta_k(eps)),
**   delta_k(eps) = sum_{l=0..k} C(k,l) max(0, e^{(k-l) eps0} - e^{eps + l eps0})
**                  / (1 + e^{eps0})^k,
** and no smaller delta holds for every choice of such mechanisms. The sum
** is taken in log space over the terms that matter (they are log-concave
** in l: a binary search finds the largest, the tails stop once provably
** below 2^-66 of the total); relative error ~1e-13 for k <= 1000, ~1e-9 at
** k = 10^6 (lgamma's rounding). k in 1..DPRL_COMPOSITION_MAX_K, eps0 > 0 finite,
** delta0 in [0, 1), eps >= 0 finite; NaN otherwise. */
double dprl_composition_delta(int64_t k, double eps0, double delta0,
                              double eps);

#endif
