/*
** zcdp.h: zero-concentrated DP (zCDP) accounting for the ledger (plain C,
** no SQLite; ALGORITHMS.md section 12.1).
**
** A Gaussian release (discrete Gaussian of scale sigma grid steps on an
** integer-valued query of l2 sensitivity Delta grid steps) is rho-zCDP with
** rho = Delta^2 / (2 sigma^2) (Canonne, Kamath, Steinke 2020); rho adds up
** over releases (Bun & Steinke 2016). The other releases are (eps, delta)
** mechanisms whose eps and delta add up. The combination of rho-zCDP
** releases and plain releases with sums (eps_sum, delta_sum) is
**   (eps_sum + dprl_zcdp_eps(rho, delta_z), delta_sum + delta_z)-DP
** for every delta_z in (0, 1) (section 12.1, rule 4, gives the proof).
**
** Rounding: every returned eps or delta is an upper bound on the exact
** quantity it names (rounded up, never down); rho is rounded up; the
** remaining rho is rounded down. Bad inputs (NaN, negative, out of range)
** give NaN.
*/
#ifndef DPRL_ZCDP_H
#define DPRL_ZCDP_H

#include <stdint.h>

/* rho = sens^2 / (2 sigma^2) of a Gaussian release, rounded up.
** sens >= 0 and sigma > 0, both finite; NaN otherwise. The caller passes
** the sensitivity and the scale in the same units (for dprl's releases: the
** grid steps after rounding, ALGORITHMS.md section 12.1). */
double dprl_zcdp_rho(double sens, double sigma);

/* The eps of rho-zCDP at delta by the conversion of CKS 2020 (Corollary 13):
**   eps(delta) = inf_{a>1} a rho + (log(1/delta) + (a-1) log(1-1/a) - log a)/(a-1),
** clamped below at 0. The minimiser is the unique root of
** rho (a-1)^2 = log(1/delta) - log a, found by bisection; the value is then
** evaluated at that a with an upward margin covering its floating-point
** error, so the result is never below the exact value of the formula at
** the a used (and therefore a valid eps). It exceeds the exact infimum by
** at most a relative 1e-12 (plus 1e-300 absolute). rho >= 0 finite, delta
** in (0, 1); NaN otherwise. rho = 0 gives 0; a result too large for a
** double is +inf. */
double dprl_zcdp_eps(double rho, double delta);

/* The delta of rho-zCDP at eps by the same conversion:
**   delta(eps) = inf_{a>1} exp((a-1)(a rho - eps)) (1-1/a)^a / (a-1),
** capped at 1. The minimiser is the unique root of
** (2a-1) rho + log(1-1/a) = eps; the value is rounded up as for
** dprl_zcdp_eps; its margin is on ln delta, so it exceeds the exact
** infimum by a relative error that grows with |ln delta|: about
** 2e-13 + 1e-14 |ln delta| (plus the smallest subnormal). rho >= 0 finite, eps >= 0 finite; NaN
** otherwise. rho = 0 gives 0. */
double dprl_zcdp_delta(double rho, double eps);

/* The classic conversion eps = rho + 2 sqrt(rho log(1/delta)) (Bun & Steinke
** 2016, Proposition 1.3), rounded up; never below dprl_zcdp_eps. Same
** domain as dprl_zcdp_eps. */
double dprl_zcdp_eps_classic(double rho, double delta);

/* The eps, at total delta, of rho-zCDP releases combined with plain releases
** whose eps and delta sum to eps_sum and delta_sum: the rho part gets
** delta_z = delta - delta_sum (rounded down), so
**   eps = eps_sum + dprl_zcdp_eps(rho, delta_z), rounded up.
** +inf when rho > 0 and delta <= delta_sum (no finite eps at that delta);
** eps_sum when rho = 0 and delta_sum <= delta. rho >= 0 finite, eps_sum
** >= 0 finite, delta_sum in [0, 1), delta in [0, 1); NaN otherwise. */
double dprl_zcdp_total_eps(double rho, double eps_sum, double delta_sum,
                           double delta);

/* Whether the releases fit a budget (eps_b, delta_b): 1 if
** dprl_zcdp_total_eps(rho, eps_sum, delta_sum, delta_b) <= eps_b, 0 if not,
** -1 for bad inputs (those of dprl_zcdp_total_eps; eps_b >= 0 finite). */
int dprl_zcdp_fits(double rho, double eps_sum, double delta_sum, double eps_b,
                   double delta_b);

/* The largest r >= 0 such that dprl_zcdp_fits(rho + r, eps_sum, delta_sum,
** eps_b, delta_b) is 1, rounded down (to within a relative 1e-12 of the
** largest; the returned r itself always passes the check, with rho + r
** computed in double as written). -1 when the releases already do not fit
** (fits is 0); NaN for bad inputs. 0 when only r = 0 fits (e.g. delta_b <=
** delta_sum). The smallest scale of a new Gaussian release of sensitivity
** sens that still fits is then sens / sqrt(2 r). */
double dprl_zcdp_rho_left(double rho, double eps_sum, double delta_sum,
                          double eps_b, double delta_b);

/* What a budget has spent, in its accountant's terms (ALGORITHMS.md §12):
** under zCDP, the Gaussian releases' rho and the others' (epsilon, delta);
** under basic composition every release's (epsilon, delta). */
typedef struct dprl_spent {
  int zcdp;
  double eps_b, delta_b;         /* the budget */
  double eps_plain, delta_plain; /* sums over the releases counted in (epsilon, delta) */
  double rho;                    /* sum over the Gaussian releases (zCDP only) */
  int64_t releases, gaussian;
} dprl_spent;
/* The total epsilon at the budget's delta (+inf when it cannot be met). */
double dprl_spent_epsilon(const dprl_spent *s);
/* Whether s is within its budget.  The sums must be upper bounds on the
** exact sums of the releases' values (dprl_upsum_total): under
** basic composition they are compared with the budget exactly, so a total
** above it by any amount does not fit, and one equal to it does. */
int dprl_spent_fits(const dprl_spent *s);

/* a + b and a b rounded up (to the next double when the exact value is not
** one): the exact value when it is a double, never below it otherwise.
** A sum of n terms added with dprl_add_up is an upper bound on their exact
** sum, and is that sum whenever every partial sum is a double. */
double dprl_add_up(double a, double b);
double dprl_mul_up(double a, double b);

/* A sum of doubles kept as hi + lo, hi the sum rounded to nearest and lo
** the rounding errors added rounded up (TwoSum: each error is exact), so
** dprl_upsum_total is never below the exact sum and is that sum rounded up
** to a double, but for the last bits of lo, at any number of terms: ten
** releases at delta 1e-6 total at most the double 1e-5, where the partial
** sums rounded up at every addition exceed it.  Start at {0, 0}, or at
** {v, 0} from an upper bound v. */
typedef struct dprl_upsum {
  double hi, lo;
} dprl_upsum;
void dprl_upsum_add(dprl_upsum *u, double x);
void dprl_upsum_add_times(dprl_upsum *u, double n, double x); /* adds n x */
double dprl_upsum_total(const dprl_upsum *u);
#endif
