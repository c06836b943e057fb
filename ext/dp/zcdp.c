/* zcdp.c: zCDP accounting and its conversion to (eps, delta) (zcdp.h;
** ALGORITHMS.md section 12.1). */
#include "dp/zcdp.h"

#include <float.h>
#include <math.h>

/* Unit roundoff, and the margin (in units of it, times the sum of the
** absolute values of the terms) added to a sum of a few terms each
** computed with a relative error of a few units: generous on purpose. */
#define U (DBL_EPSILON / 2)
#define MARGIN (16 * U)

static double up(double x) { return nextafter(x, HUGE_VAL); }

/* Bisection of an increasing function on t > 0, in log scale, between lo
** (f < 0) and hi (f >= 0), down to adjacent doubles or a relative 4U. */
typedef double (*incr_fn)(double t, double a, double b);
static double root_log(incr_fn f, double a, double b, double lo, double hi) {
  while (hi > lo * (1 + 4 * U)) {
    double mid = sqrt(lo) * sqrt(hi);
    if (!(mid > lo && mid < hi)) break;
    if (f(mid, a, b) < 0)
      lo = mid;
    else
      hi = mid;
  }
  return hi;
}

double dprl_zcdp_rho(double sens, double sigma) {
  if (!(sens >= 0) || !isfinite(sens) || !(sigma > 0) || !isfinite(sigma))
    return NAN;
  if (sens == 0) return 0;
  double r = sens / sigma;
  /* r*r/2 carries at most about 4U of relative rounding error (r, the
  ** square, the product): the factor and the step up cover it, and an
  ** underflow to 0 is stepped up to the smallest subnormal. */
  return up(0.5 * r * r * (1 + 8 * U));
}

/* ---- eps(delta) ------------------------------------------------------------ */

/* With a = 1 + t and L = log(1/delta):
**   f(t) = (1+t) rho + L/t - log1p(1/t) - log1p(t)/t,
**   f'(a) = rho - (L - log a)/(a-1)^2 = phi(t)/t^2,
**   phi(t) = rho t^2 - L + log1p(t), increasing in t: one minimum. */
static double eps_phi(double t, double rho, double L) {
  return rho * t * t - L + log1p(t);
}

/* f(t) plus a margin above its rounding error: never below the exact f(t). */
static double eps_at(double t, double rho, double L) {
  double a = (1 + t) * rho, b = L / t, c = -log1p(1 / t), d = -log1p(t) / t;
  double s = a + b + c + d;
  return up(s + MARGIN * (fabs(a) + fabs(b) + fabs(c) + fabs(d)));
}

double dprl_zcdp_eps(double rho, double delta) {
  if (!(rho >= 0) || !isfinite(rho) || !(delta > 0 && delta < 1)) return NAN;
  if (rho == 0) return 0;
  /* L is rounded up (the margin in eps_at covers the rest): a larger L only
  ** raises f, so the bound stays valid. */
  double L = up(-log(delta));
  /* phi(hi) = log1p(hi) > 0; at lo both rho lo^2 and log1p(lo) are <= L/2.
  ** The square roots are split so that a subnormal rho cannot overflow. */
  double sr = sqrt(rho);
  double hi = sqrt(L) / sr, lo = fmin(sqrt(L / 2) / sr, expm1(L / 2));
  double t = lo > 0 && lo < hi ? root_log(eps_phi, rho, L, lo, hi) : hi;
  double e = eps_at(t, rho, L);
  if (isnan(e)) return HUGE_VAL; /* inf - inf at absurd rho: no finite eps */
  return e > 0 ? e : 0;
}

double dprl_zcdp_eps_classic(double rho, double delta) {
  if (!(rho >= 0) || !isfinite(rho) || !(delta > 0 && delta < 1)) return NAN;
  double L = up(-log(delta));
  return up(up(rho + up(2 * up(sqrt(up(rho * L))))) * (1 + 2 * U));
}

/* ---- delta(eps) ------------------------------------------------------------ */

/* With a = 1 + t:
**   log g(t) = t((1+t) rho - eps) - (1+t) log1p(1/t) - log t,
**   d/da log g = (2a-1) rho + log(1-1/a) - eps = psi(t), increasing. */
static double delta_psi(double t, double rho, double eps) {
  return (1 + 2 * t) * rho - log1p(1 / t) - eps;
}

double dprl_zcdp_delta(double rho, double eps) {
  if (!(rho >= 0) || !isfinite(rho) || !(eps >= 0) || !isfinite(eps)) return NAN;
  if (rho == 0) return 0;
  /* psi(hi) >= 0: log1p(1/t) <= 1/t, and t >= eps/rho, t >= 1/sqrt(rho) give
  ** 2 t rho >= eps + 1/t. The cap keeps t eps and t(1+t) rho finite (hi
  ** above it means eps^2 > 2^1000 rho); past it the bound at the cap is
  ** used (every a gives a valid bound), where t rho < eps. */
  double cap = 0x1p1000 / fmax(1, eps);
  double hi = fmin(fmax(eps / rho, 1 / sqrt(rho)), cap), lo = hi, t = hi;
  if (!(delta_psi(hi, rho, eps) < 0)) {
    while (lo > DBL_MIN && !(delta_psi(lo, rho, eps) < 0)) lo /= 2;
    if (!(delta_psi(lo, rho, eps) < 0)) return 1; /* the infimum is near a = 1 */
    t = root_log(delta_psi, rho, eps, lo, hi);
  }
  double A = t * ((1 + t) * rho), B = -t * eps, C = -(1 + t) * log1p(1 / t),
         D = -log(t);
  double lg = A + B + C + D;
  lg += MARGIN * (fabs(A) + fabs(B) + fabs(C) + fabs(D));
  if (isnan(lg) || lg >= 0) return 1;
  /* exp is within an ulp or two: a relative 8U and one step up cover it;
  ** an underflow to 0 is stepped up to the smallest subnormal. */
  double d = up(exp(lg) * (1 + 8 * U));
  return d < 1 ? d : 1;
}

/* ---- Mixed totals ------------------------------------------------------------ */

static int mixed_ok(double rho, double eps_sum, double delta_sum, double delta) {
  return rho >= 0 && isfinite(rho) && eps_sum >= 0 && isfinite(eps_sum) &&
         delta_sum >= 0 && delta_sum < 1 && delta >= 0 && delta < 1;
}

double dprl_zcdp_total_eps(double rho, double eps_sum, double delta_sum,
                           double delta) {
  if (!mixed_ok(rho, eps_sum, delta_sum, delta)) return NAN;
  if (rho == 0) return delta_sum <= delta ? eps_sum : HUGE_VAL;
  if (!(delta > delta_sum)) return HUGE_VAL;
  /* The computed difference is within a relative U of the exact one: the
  ** factor keeps delta_z + delta_sum <= delta in exact arithmetic. */
  double dz = (delta - delta_sum) * (1 - 4 * U);
  if (!(dz > 0)) return HUGE_VAL;
  double ez = dprl_zcdp_eps(rho, dz);
  if (isnan(ez)) return NAN;
  return up(ez + eps_sum);
}

int dprl_zcdp_fits(double rho, double eps_sum, double delta_sum, double eps_b,
                   double delta_b) {
  if (!mixed_ok(rho, eps_sum, delta_sum, delta_b) || !(eps_b >= 0) ||
      !isfinite(eps_b))
    return -1;
  double e = dprl_zcdp_total_eps(rho, eps_sum, delta_sum, delta_b);
  if (isnan(e)) return -1;
  return e <= eps_b;
}

double dprl_zcdp_rho_left(double rho, double eps_sum, double delta_sum,
                          double eps_b, double delta_b) {
  int f = dprl_zcdp_fits(rho, eps_sum, delta_sum, eps_b, delta_b);
  if (f < 0) return NAN;
  if (f == 0) return -1;
  /* eps grows without bound in rho (at least like rho), so doubling finds a
  ** failing r; a finite rho + r that overflows fails as bad input. */
  double lo = 0, hi = fmax(1, eps_b);
  for (int i = 0; i < 2100; i++) {
    if (dprl_zcdp_fits(rho + hi, eps_sum, delta_sum, eps_b, delta_b) != 1) break;
    lo = hi;
    hi *= 2;
  }
  while (hi - lo > 1e-13 * hi) {
    double mid = lo + (hi - lo) / 2;
    if (!(mid > lo && mid < hi)) break;
    if (dprl_zcdp_fits(rho + mid, eps_sum, delta_sum, eps_b, delta_b) == 1)
      lo = mid;
    else
      hi = mid;
  }
  return lo;
}

/* ---- a budget: what it has spent against what it allows ---------------- */

double dprl_spent_epsilon(const dprl_spent *s) {
  if (!s->zcdp || s->rho <= 0) return s->delta_plain <= s->delta_b ? s->eps_plain : INFINITY;
  double e = dprl_zcdp_total_eps(s->rho, s->eps_plain, s->delta_plain, s->delta_b);
  return isnan(e) ? INFINITY : e;
}

/* ---- sums rounded up ---------------------------------------------------- */

/* TwoSum (Knuth): x + y = s + e exactly, when s is finite. */
static double two_sum(double x, double y, double *e) {
  double s = x + y, yy = s - x;
  *e = (x - (s - yy)) + (y - yy);
  return s;
}

double dprl_add_up(double a, double b) {
  double e, s = two_sum(a, b, &e);
  if (!isfinite(s)) return s;
  return e > 0 ? up(s) : s;
}

double dprl_mul_up(double a, double b) {
  double p = a * b;
  if (!isfinite(p)) return p;
  return fma(a, b, -p) > 0 ? up(p) : p;
}

void dprl_upsum_add(dprl_upsum *u, double x) {
  double e;
  double s = two_sum(u->hi, x, &e);
  if (!isfinite(s)) {
    u->hi = s, u->lo = 0;
    return;
  }
  u->hi = s;
  u->lo = dprl_add_up(u->lo, e);
}

void dprl_upsum_add_times(dprl_upsum *u, double n, double x) {
  double p = n * x;
  if (!isfinite(p) || fabs(p) < 0x1p-900) { /* near underflow the error may not be a double */
    dprl_upsum_add(u, dprl_mul_up(n, x));
    return;
  }
  double e = fma(n, x, -p); /* n x = p + e exactly */
  dprl_upsum_add(u, p);
  u->lo = dprl_add_up(u->lo, e);
}

double dprl_upsum_total(const dprl_upsum *u) {
  return isfinite(u->hi) ? dprl_add_up(u->hi, u->lo) : u->hi;
}

int dprl_spent_fits(const dprl_spent *s) {
  /* the sums are upper bounds (added up rounded up), compared exactly: a
  ** total above the budget by any amount does not fit */
  if (!s->zcdp || s->rho <= 0)
    return s->eps_plain <= s->eps_b && s->delta_plain <= s->delta_b;
  return dprl_zcdp_fits(s->rho, s->eps_plain, s->delta_plain, s->eps_b, s->delta_b) == 1;
}
