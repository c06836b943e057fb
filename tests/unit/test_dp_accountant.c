/*
** test_dp_accountant.c: unit tests of zcdp.c (zCDP accounting and the CKS 2020
** conversion) and of dprl_gdp_eps (accountant.c).
**
** The expected values come from an independent computation in Python: the
** conversion's formula itself minimised by golden section over log(a - 1)
** in Decimal at 60 digits (no derivative, no root finding), as below.
**
**   from decimal import Decimal as D, getcontext
**   getcontext().prec = 60
**   def golden(f, lo, hi, it=300):
**       g = (D(5).sqrt() - 1) / 2
**       a, b = D(lo), D(hi)
**       c, d = b - g * (b - a), a + g * (b - a)
**       fc, fd = f(c), f(d)
**       for _ in range(it):
**           if fc < fd: b, d, fd = d, c, fc; c = b - g * (b - a); fc = f(c)
**           else: a, c, fc = c, d, fd; d = a + g * (b - a); fd = f(d)
**       return min(fc, fd)
**   def eps(rho, delta):
**       rho, L = D(rho), -D(delta).ln()
**       def f(u):  # a = 1 + e^u
**           t = u.exp(); a = 1 + t
**           return a * rho + (L + t * (t / a).ln() - a.ln()) / t
**       return max(golden(f, -60, 60), D(0))
**   def delta(rho, e):
**       rho, e = D(rho), D(e)
**       def lg(u):
**           t = u.exp(); a = 1 + t
**           return t * (a * rho - e) + a * (t / a).ln() - t.ln()
**       return min(golden(lg, -60, 60).exp(), D(1))
**
** The ten-release case: sigma1 of the analytic Gaussian at (1, 1e-6) for
** sensitivity 1 by bisection on sigma with math.erfc
** (phi(-1/s + 1/(2s)) - e phi(-1/s - 1/(2s)) <= 1e-6), rho = 10/(2 sigma1^2),
** then eps(rho, 1e-5) as above; the GDP value by bisection on eps of the
** same delta(eps) at mu = sqrt(10)/sigma1.
*/
#include <float.h>
#include <math.h>

#include "check.h"
#include "dp/accountant.h"
#include "dp/zcdp.h"

/* Relative accuracy asked of the conversion against the reference. */
#define REL 1e-11

static void test_eps_reference(void) {
  static const struct {
    double rho, delta, eps;
  } cases[] = {
      {0.01, 1e-5, 0.54572554827400244}, {0.01, 1e-9, 0.81017446786753411},
      {0.1, 1e-5, 1.9142388320035979},   {0.1, 1e-9, 2.7154818867305019},
      {1, 1e-5, 7.0771966958063395},     {1, 1e-9, 9.5214636717922314},
      {10, 1e-5, 30.110857303795729},    {10, 1e-9, 37.637453577913263},
      {1e-8, 1e-5, 2.0901524554147720e-4}, {1e6, 1e-5, 1006779.4526362651},
  };
  for (unsigned i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    double e = dprl_zcdp_eps(cases[i].rho, cases[i].delta);
    char what[120];
    snprintf(what, sizeof what, "eps(rho=%g, delta=%g) matches the reference",
             cases[i].rho, cases[i].delta);
    CHECK_REL(e, cases[i].eps, REL, what);
    snprintf(what, sizeof what, "eps(rho=%g, delta=%g) is not below it",
             cases[i].rho, cases[i].delta);
    CHECK(e >= cases[i].eps * (1 - 1e-15), what);
    snprintf(what, sizeof what, "eps(rho=%g, delta=%g) <= the classic bound",
             cases[i].rho, cases[i].delta);
    CHECK(e <= dprl_zcdp_eps_classic(cases[i].rho, cases[i].delta), what);
  }
}

static void test_delta_reference(void) {
  static const struct {
    double rho, eps, delta;
  } cases[] = {
      {0.01, 0.5, 3.5058780600523912e-05}, {0.01, 1, 1.6641139773879945e-13},
      {0.01, 3, 2.1048983957211695e-100},  {0.1, 0.5, 0.077062292463260698},
      {0.1, 1, 0.0089332457718183621},     {0.1, 3, 1.794435208333833e-11},
      {0.1, 10, 2.8399053527192459e-109},  {1, 0.5, 0.62010264009457272},
      {1, 1, 0.49349373123370766},         {1, 3, 0.083341960411542279},
      {1, 10, 1.1714172313952302e-10},     {10, 0.5, 0.99992520411854469},
      {10, 1, 0.99987674213970812},        {10, 3, 0.99909629248052567},
      {10, 10, 0.78831167666622515},
  };
  for (unsigned i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    double d = dprl_zcdp_delta(cases[i].rho, cases[i].eps);
    char what[120];
    snprintf(what, sizeof what, "delta(rho=%g, eps=%g) matches the reference",
             cases[i].rho, cases[i].eps);
    CHECK_REL(d, cases[i].delta, REL, what);
    snprintf(what, sizeof what, "delta(rho=%g, eps=%g) is not below it",
             cases[i].rho, cases[i].eps);
    CHECK(d >= cases[i].delta * (1 - 1e-15), what);
  }
  /* The reference is 2.0e-1087: below every double, so the smallest one. */
  double tiny = dprl_zcdp_delta(0.01, 10);
  CHECK(tiny > 0 && tiny <= 1e-300, "delta below every double rounds up to a subnormal");
}

/* The case: ten statistics releases each calibrated at (1, 1e-6). */
static void test_ten_releases(void) {
  double s1 = dprl_gdp_sigma(1, 1e-6, 1);
  CHECK_REL(s1, 4.2246788893268397, 1e-11, "sigma1 at (1, 1e-6) matches the reference");
  double rho1 = dprl_zcdp_rho(1, s1), rho = 0;
  for (int i = 0; i < 10; i++) rho += rho1;
  CHECK_REL(rho, 0.28014481912630279, 1e-12, "ten releases: rho");
  double e = dprl_zcdp_eps(rho, 1e-5);
  CHECK_REL(e, 3.4002750648239308, REL, "ten releases: eps at 1e-5 (zCDP, CKS)");
  CHECK(e <= 3.5, "ten releases: eps at 1e-5 <= 3.5 (basic composition: 10)");
  CHECK(dprl_zcdp_eps_classic(rho, 1e-5) > e, "the classic conversion is looser");
  CHECK_REL(dprl_zcdp_total_eps(rho, 0, 0, 1e-5), e, 1e-15,
            "total_eps without plain releases is eps");
  CHECK(dprl_zcdp_fits(rho, 0, 0, 3.5, 1e-5) == 1, "ten releases fit (3.5, 1e-5)");
  CHECK(dprl_zcdp_fits(rho, 0, 0, 3.3, 1e-5) == 0, "ten releases do not fit (3.3, 1e-5)");
  double mu = sqrt(10) / s1;
  CHECK_REL(dprl_gdp_eps(mu, 1e-5), 3.1397600033397319, 1e-10,
            "ten releases: eps at 1e-5 by GDP (continuous Gaussian)");
}

static void test_rho(void) {
  CHECK(dprl_zcdp_rho(2, 4) >= 0.125 && dprl_zcdp_rho(2, 4) <= 0.125 * (1 + 1e-15),
        "rho(2, 4) = 1/8, rounded up");
  CHECK(dprl_zcdp_rho(0, 1) == 0, "rho of sensitivity 0 is 0");
  CHECK(dprl_zcdp_rho(1e-200, 1e200) > 0, "an underflowing rho rounds up, not to 0");
  /* Rounded up for many ratios: never below the long double value. */
  int ok = 1;
  for (int i = 1; i <= 1000; i++) {
    double sens = 0.37 * i, sigma = 1.3 + i * 0.011;
    long double r = (long double)sens / sigma;
    if ((long double)dprl_zcdp_rho(sens, sigma) < r * r / 2) ok = 0;
  }
  CHECK(ok, "rho is never below sens^2/(2 sigma^2) in long double");
  CHECK(isnan(dprl_zcdp_rho(-1, 1)), "rho: negative sensitivity is NaN");
  CHECK(isnan(dprl_zcdp_rho(1, 0)), "rho: sigma 0 is NaN");
  CHECK(isnan(dprl_zcdp_rho(NAN, 1)), "rho: NaN sensitivity is NaN");
  CHECK(isnan(dprl_zcdp_rho(1, INFINITY)), "rho: infinite sigma is NaN");
}

static void test_monotone(void) {
  int ok_rho = 1, ok_delta = 1, ok_eps = 1, ok_dual = 1;
  double prev = 0;
  for (int i = -80; i <= 40; i++) { /* rho from 1e-8 to 1e4 */
    double rho = pow(10, i / 10.0), e = dprl_zcdp_eps(rho, 1e-6);
    if (!(e >= prev)) ok_rho = 0;
    prev = e;
    for (int j = 1; j <= 60; j++) { /* delta from 1e-1 down to 1e-60 */
      double d = pow(10, -j), ej = dprl_zcdp_eps(rho, d);
      if (!(ej <= dprl_zcdp_eps(rho, d * 0.5))) ok_delta = 0;
      /* The conversions are dual: delta at eps(delta) is at most delta. */
      if (!(dprl_zcdp_delta(rho, ej) <= d * (1 + 1e-11))) ok_dual = 0;
    }
    double pd = 1;
    for (int j = 0; j <= 100; j++) {
      double dj = dprl_zcdp_delta(rho, j * 0.5);
      if (!(dj <= pd)) ok_eps = 0;
      pd = dj;
    }
  }
  CHECK(ok_rho, "eps grows with rho");
  CHECK(ok_delta, "eps falls as delta grows");
  CHECK(ok_eps, "delta falls as eps grows");
  CHECK(ok_dual, "delta(eps(delta)) <= delta");
}

static void test_mixed(void) {
  double rho = 0.5, d = 1e-5;
  /* Plain releases (2, 4e-6): the zCDP part gets 6e-6. */
  double t = dprl_zcdp_total_eps(rho, 2, 4e-6, d);
  CHECK(t >= 2 + dprl_zcdp_eps(rho, 6e-6) &&
            t <= (2 + dprl_zcdp_eps(rho, 6e-6)) * (1 + 1e-12),
        "total = eps_sum + eps_z(delta - delta_sum)");
  CHECK(dprl_zcdp_total_eps(rho, 2, d, d) == HUGE_VAL,
        "no delta left for rho > 0: infinite eps");
  CHECK(dprl_zcdp_total_eps(0, 2, d, d) == 2, "rho 0: eps_sum when delta_sum <= delta");
  CHECK(dprl_zcdp_total_eps(0, 2, 2 * d, d) == HUGE_VAL, "rho 0, delta_sum > delta: inf");
  CHECK(dprl_zcdp_total_eps(0, 0, 0, 0) == 0, "nothing spent: 0 at delta 0");
  CHECK(isnan(dprl_zcdp_total_eps(-1, 0, 0, d)), "total: negative rho is NaN");
  CHECK(isnan(dprl_zcdp_total_eps(rho, NAN, 0, d)), "total: NaN eps_sum is NaN");
  CHECK(isnan(dprl_zcdp_total_eps(rho, 0, 1, d)), "total: delta_sum 1 is NaN");
  CHECK(isnan(dprl_zcdp_total_eps(rho, 0, 0, 1)), "total: delta 1 is NaN");
  CHECK(dprl_zcdp_fits(rho, 0, 0, -1, d) == -1, "fits: negative eps_b is -1");
  CHECK(dprl_zcdp_fits(rho, 0, 0, INFINITY, d) == -1, "fits: infinite eps_b is -1");

  /* rho_left: the returned r passes, a slightly larger one does not. */
  double eb = 8, db = 1e-5, es = 1.5, ds = 2e-6;
  double r = dprl_zcdp_rho_left(rho, es, ds, eb, db);
  CHECK(r > 0, "rho_left is positive under budget");
  CHECK(dprl_zcdp_fits(rho + r, es, ds, eb, db) == 1, "rho + rho_left fits");
  CHECK(dprl_zcdp_fits(rho + r * (1 + 1e-11), es, ds, eb, db) == 0,
        "a slightly larger rho does not");
  CHECK_REL(dprl_zcdp_total_eps(rho + r, es, ds, db), eb, 1e-11,
            "rho_left spends the budget's eps");
  CHECK(dprl_zcdp_rho_left(0, es, db, eb, db) == 0, "no delta left: rho_left 0");
  CHECK(dprl_zcdp_rho_left(rho, es, db, eb, db) == -1,
        "no delta left for the rho spent: rho_left -1");
  CHECK(dprl_zcdp_rho_left(rho, 9, ds, eb, db) == -1, "over budget: rho_left -1");
  CHECK(dprl_zcdp_rho_left(0, 0, 0, 0, db) == 0, "eps budget 0: rho_left 0");
  CHECK(isnan(dprl_zcdp_rho_left(rho, es, ds, NAN, db)), "rho_left: NaN budget is NaN");
  /* From nothing spent: r is the rho whose eps at delta_b is eps_b. */
  double r0 = dprl_zcdp_rho_left(0, 0, 0, 1, 1e-5);
  CHECK_REL(dprl_zcdp_eps(r0, 1e-5 * (1 - 4 * DBL_EPSILON / 2)), 1, 1e-11,
            "rho_left from nothing inverts eps");
}

static void test_bad_inputs(void) {
  CHECK(isnan(dprl_zcdp_eps(NAN, 1e-5)), "eps: NaN rho");
  CHECK(isnan(dprl_zcdp_eps(-0.1, 1e-5)), "eps: negative rho");
  CHECK(isnan(dprl_zcdp_eps(INFINITY, 1e-5)), "eps: infinite rho");
  CHECK(isnan(dprl_zcdp_eps(1, 0)), "eps: delta 0");
  CHECK(isnan(dprl_zcdp_eps(1, 1)), "eps: delta 1");
  CHECK(isnan(dprl_zcdp_eps(1, -1e-5)), "eps: negative delta");
  CHECK(isnan(dprl_zcdp_eps(1, NAN)), "eps: NaN delta");
  CHECK(isnan(dprl_zcdp_delta(NAN, 1)), "delta: NaN rho");
  CHECK(isnan(dprl_zcdp_delta(-1, 1)), "delta: negative rho");
  CHECK(isnan(dprl_zcdp_delta(1, -1)), "delta: negative eps");
  CHECK(isnan(dprl_zcdp_delta(1, NAN)), "delta: NaN eps");
  CHECK(isnan(dprl_zcdp_delta(1, INFINITY)), "delta: infinite eps");
  CHECK(isnan(dprl_zcdp_eps_classic(-1, 1e-5)), "classic: negative rho");
  CHECK(isnan(dprl_gdp_eps(-1, 1e-5)), "gdp_eps: negative mu");
  CHECK(isnan(dprl_gdp_eps(1, 0)), "gdp_eps: delta 0");
  CHECK(isnan(dprl_gdp_eps(NAN, 0.1)), "gdp_eps: NaN mu");
  /* Edges that are not errors. */
  CHECK(dprl_zcdp_eps(0, 1e-5) == 0, "eps of rho 0 is 0");
  CHECK(dprl_zcdp_delta(0, 0) == 0, "delta of rho 0 is 0");
  CHECK(dprl_zcdp_eps(1e-12, 0.9) == 0, "tiny rho at large delta: eps 0");
  CHECK(dprl_zcdp_delta(1e6, 0) == 1, "huge rho at eps 0: delta 1");
  double big = dprl_zcdp_eps(1e300, 1e-5);
  CHECK(big >= 1e300, "huge rho: eps at least rho");
  CHECK(dprl_zcdp_eps(DBL_MAX, 1e-5) == HUGE_VAL, "rho at DBL_MAX: eps inf");
  CHECK(dprl_gdp_eps(0, 1e-5) == 0, "gdp_eps of mu 0 is 0");
  /* Extremes, against the reference at getcontext().prec = 400 (60 digits
  ** lose ln(t/a) near 0 at t ~ 1e150) with golden(f, -800, 800, 700), rho
  ** given as Decimal(5e-324), the double's exact value. At rho < delta^2
  ** eps is 0. */
  CHECK(dprl_zcdp_eps(5e-324, 1e-5) == 0, "subnormal rho: eps 0");
  CHECK_REL(dprl_zcdp_eps(1e-12, 1e-9), 4.4955780701146502e-06, REL, "eps(1e-12, 1e-9)");
  CHECK_REL(dprl_zcdp_eps(1e-300, 1e-160), 9.0561896034631343e-150, REL,
            "eps(1e-300, 1e-160)");
  CHECK_REL(dprl_zcdp_delta(5e-324, 0), 1.9066021802887224e-162, REL, "delta(subnormal rho, 0)");
  CHECK_REL(dprl_zcdp_delta(1e-300, 0), 8.5776388496070681e-151, REL, "delta(1e-300, 0)");
  double sub = dprl_zcdp_delta(1e-300, 1e-140);
  CHECK(sub > 0 && sub <= 1e-300, "delta(1e-300, 1e-140) is below every double");
  sub = dprl_zcdp_delta(5e-324, 1e300);
  CHECK(sub > 0 && sub <= 1e-300, "eps / rho beyond the doubles: a vanishing delta");
  double tiny = dprl_zcdp_eps(1e-300, 1e-300);
  CHECK(tiny > 0 && tiny < 1e-140, "tiny rho, tiny delta: small positive eps");
}

/* Basic composition at the boundary: a total equal to the budget fits, one
** above it by any amount does not, and the sums are rounded up, never to
** nearest below the exact sum. */
static void test_plain_boundary(void) {
  dprl_spent s = {0, 1.0, 1e-5, 1.0, 1e-5, 0, 2, 0};
  CHECK(dprl_spent_fits(&s), "basic: a total equal to the budget fits");
  s.eps_plain = nextafter(1.0, 2.0);
  CHECK(!dprl_spent_fits(&s), "basic: a total one ulp above the budget's epsilon does not fit");
  s.eps_plain = 1.0;
  s.delta_plain = nextafter(1e-5, 1.0);
  CHECK(!dprl_spent_fits(&s), "basic: a total one ulp above the budget's delta does not fit");
  s.zcdp = 1; /* zCDP without Gaussian releases: the same sums */
  CHECK(!dprl_spent_fits(&s), "zcdp, no rho: one ulp above the budget's delta does not fit");
  CHECK(dprl_add_up(1.0, 1.0) == 2.0 && dprl_add_up(0.5, 0.25) == 0.75,
        "add_up: an exact sum is itself");
  CHECK(dprl_add_up(1.0, 0x1p-60) == nextafter(1.0, 2.0) && dprl_add_up(1.0, -0x1p-60) == 1.0,
        "add_up: rounded up to the next double, never down");
  CHECK(dprl_mul_up(3.0, 0.5) == 1.5 && dprl_mul_up(10.0, 0.1) > 1.0 && 10.0 * 0.1 == 1.0,
        "mul_up: exact products are themselves, 10 x 0.1 is above 1");
}

/* The ledger's sums (dprl_upsum): the exact sum rounded up once, where
** rounding up at every addition drifts by an ulp per term. */
static void test_upsum(void) {
  /* ten at 0.1: the double 0.1 is 0.1 + 5.55e-18, so the exact sum is
  ** 1 + 5.55e-17, whose next double is 1 + 2^-52 (to nearest, the sum is
  ** 0.9999999999999999) */
  dprl_upsum u = {0, 0};
  double near = 0;
  for (int i = 0; i < 10; i++) dprl_upsum_add(&u, 0.1), near += 0.1;
  dprl_spent s = {0, 1.0, 1e-5, dprl_upsum_total(&u), 1e-5, 0, 10, 0};
  CHECK(near < 1.0 && dprl_upsum_total(&u) == nextafter(1.0, 2.0) && !dprl_spent_fits(&s),
        "ten releases at epsilon 0.1 total 1 + 2^-52 and exceed a budget of 1");
  /* ten at 1e-6: the double 1e-6 is below 10^-6 and the double 1e-5 above
  ** 10^-5, so they fit; rounded up at every addition they did not */
  dprl_upsum d = {0, 0};
  double drift = 0;
  for (int i = 0; i < 10; i++) dprl_upsum_add(&d, 1e-6), drift = dprl_add_up(drift, 1e-6);
  s = (dprl_spent){0, 10.0, 1e-5, 10.0, dprl_upsum_total(&d), 0, 10, 0};
  CHECK(dprl_upsum_total(&d) == dprl_mul_up(10.0, 1e-6) && dprl_spent_fits(&s) && drift > 1e-5,
        "ten releases at delta 1e-6 total 10 x 1e-6 rounded up and fit a delta of 1e-5");
  /* 2^53 + 1 + 1 + 1: the exact sum 2^53 + 3 lies between the doubles
  ** 2^53 + 2 and 2^53 + 4 (rounding up at every addition gives 2^53 + 6) */
  dprl_upsum big = {0x1p53, 0};
  for (int i = 0; i < 3; i++) dprl_upsum_add(&big, 1.0);
  CHECK(dprl_upsum_total(&big) == 0x1p53 + 4, "2^53 + 3 ones: the exact sum rounded up once");
  dprl_upsum t = {0, 0};
  dprl_upsum_add_times(&t, 10.0, 0.1); /* 10 x 0.1 = 1 + 5.55e-17 exactly */
  double ten = dprl_upsum_total(&t);
  CHECK(ten == nextafter(1.0, 2.0) && 10.0 * 0.1 == 1.0, "n x: the exact product rounded up");
  dprl_upsum_add_times(&t, 2.0, 0x1p-1070); /* near underflow: rounded up, not lost */
  CHECK(dprl_upsum_total(&t) >= ten && t.lo > 0, "a subnormal term never moves the total down");
  dprl_upsum inf = {1e308, 0};
  dprl_upsum_add(&inf, 1e308);
  CHECK(isinf(dprl_upsum_total(&inf)), "an overflowing sum is +inf");
}

int main(void) {
  test_plain_boundary();
  test_upsum();
  test_eps_reference();
  test_delta_reference();
  test_ten_releases();
  test_rho();
  test_monotone();
  test_mixed();
  test_bad_inputs();
  return CHECK_DONE();
}
