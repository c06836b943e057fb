/*
** test_prefix_stable_params.c: dp_prefix_stable's parameters
** (prefix_stable.c, ALGORITHMS.md section 7): theta, the grid, delta' and
** the threshold's scale from (eps1, delta1, p_min), and their refusals;
** the exact k-fold composition against its sum written out in long
** double, and the accountant that picks eps' (section 10).
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "util_prefix_stable.h"
#include "prefix_stable/prefix_stable.h"

/* ---- parameters --------------------------------------------------------- */

static void test_params(void) {
  dprl_error err = {0};
  dprl_prefix_params pp;
  struct {
    double eps1, delta1, p_min;
    int64_t A, T, L;
  } cases[] = {{7.5, 0.9 / 3000, 0.02, 4, 100, 200},
               {1.0, 1e-5, 0.1, 2, 20, 50},
               {20.0, 1e-6, 1e-3, 3, 6, 12}};
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    dprl_error_clear(&err);
    int rc = dprl_prefix_params_derive(cases[c].eps1, cases[c].delta1,
                                       cases[c].p_min, cases[c].A, cases[c].T,
                                       cases[c].L, DPRL_PREFIX_PAPER, &pp, &err);
    CHECK(rc == DPRL_OK, "params: derive succeeds");
    /* Section 7, computed here the textbook way. */
    double T = (double)cases[c].T, L = (double)cases[c].L;
    double ep = cases[c].eps1 / sqrt(32 * T * log(2 / cases[c].delta1));
    double dp = cases[c].delta1 / (2 * T * L);
    double cmin = exp(ep) / (exp(ep) - 1);
    double theta = cmin / cases[c].p_min;
    CHECK_REL(pp.eps_prime, ep, 1e-13, "params: eps' = eps1/sqrt(32 T ln(2/delta1))");
    CHECK_REL(pp.delta_prime, dp, 1e-15, "params: delta' = delta1/(2TL)");
    CHECK_REL(pp.c_min, cmin, 1e-12, "params: c_min = e^eps'/(e^eps'-1)");
    CHECK_REL(pp.theta, theta, 1e-12, "params: theta = c_min/p_min");
    CHECK_REL(pp.threshold_base, theta + (4 / ep) * log(1 / dp), 1e-12,
              "params: theta-hat base = theta + (4/eps') ln(1/delta')");
    CHECK_REL(pp.b_threshold, 2 / ep, 1e-13, "params: threshold scale 2/eps'");
    CHECK_REL(pp.b_query, 4 / ep, 1e-13, "params: query scale 4/eps'");
    CHECK(pp.grid == dprl_grid_for(2 / ep), "params: grid from 2/eps'");
    CHECK(pp.b_threshold / pp.grid >= 0x1p25, "params: >= 2^25 grid steps per scale");
  }
  /* One case by hand, digits written out (eps1 = 1, delta1 = 1e-5, T = 20,
  ** L = 50, p_min = 0.1): ln(2e5) = 12.206072645530174,
  ** 32*20*12.206... = 7811.886493139311, sqrt = 88.38487704...,
  ** eps' = 0.011314154..., delta' = 5e-9, c_min = 88.88... */
  dprl_error_clear(&err);
  dprl_prefix_params_derive(1.0, 1e-5, 0.1, 2, 20, 50, DPRL_PREFIX_PAPER, &pp, &err);
  CHECK_REL(pp.eps_prime, 1.0 / 88.384877049, 1e-9, "params: eps' by hand");
  CHECK_REL(pp.delta_prime, 5e-9, 1e-15, "params: delta' by hand");
  CHECK_REL(pp.c_min, 1.0 / pp.eps_prime + 0.5 + pp.eps_prime / 12, 1e-8,
            "params: c_min ~ 1/eps' + 1/2 + eps'/12 for small eps'");

  /* The paper's own setting (section 7: m = 3000, p_min = 0.02, eps1 = 7.5,
  ** delta1 = 0.9/3000, T = 100, L = 200): print how the threshold compares
  ** with m, the largest count possible. */
  dprl_error_clear(&err);
  dprl_prefix_params_derive(7.5, 0.9 / 3000, 0.02, 4, 100, 200, DPRL_PREFIX_OPTIMAL, &pp, &err);
  printf("# paper setting: eps' = %.6g, c_min = %.6g, theta = %.6g, "
         "theta-hat base = %.6g (m = 3000; max count after one step with "
         "p_min = 0.02, |A| = 4: %.6g)\n",
         pp.eps_prime, pp.c_min, pp.theta, pp.threshold_base,
         3000 * (1 - 3 * 0.02));

  dprl_prefix_params paper;
  dprl_prefix_params_derive(7.5, 0.9 / 3000, 0.02, 4, 100, 200, DPRL_PREFIX_PAPER, &paper,
                            &err);
  printf("# the same with the paper's eps': eps' = %.6g, theta-hat base = %.6g\n",
         paper.eps_prime, paper.threshold_base);

  /* Messages. */
  struct {
    double eps1, delta1, p_min;
    int64_t A, T, L;
    const char *msg;
  } bad[] = {
      {0, 1e-5, 0.1, 4, 1, 1, "epsilon must be in (0, 1e+06], got 0"},
      {NAN, 1e-5, 0.1, 4, 1, 1, "epsilon must be in (0, 1e+06], got nan"},
      {2e6, 1e-5, 0.1, 4, 1, 1, "epsilon must be in (0, 1e+06], got 2e+06"},
      {1, 1, 0.1, 4, 1, 1, "delta must be in (0, 1), got 1"},
      {1, 0, 0.1, 4, 1, 1, "delta must be in (0, 1), got 0"},
      {1, 1e-5, 0.3, 4, 1, 1, "p_min must be in (0, 1/|A|) = (0, 0.25), got 0.3"},
      {1, 1e-5, 0.25, 4, 1, 1, "p_min must be in (0, 1/|A|) = (0, 0.25), got 0.25"},
      {1, 1e-5, 0, 4, 1, 1, "p_min must be in (0, 1/|A|) = (0, 0.25), got 0"},
      {1, 1e-5, 0.1, 4, 0, 1, "T must be in 1..1000000, got 0"},
      {1, 1e-5, 0.1, 4, 1000001, 1, "T must be in 1..1000000, got 1000001"},
      {1, 1e-5, 0.1, 4, 1, 0, "L must be >= 1, got 0"},
  };
  for (size_t c = 0; c < sizeof bad / sizeof bad[0]; c++) {
    dprl_error_clear(&err);
    int rc = dprl_prefix_params_derive(bad[c].eps1, bad[c].delta1, bad[c].p_min,
                                       bad[c].A, bad[c].T, bad[c].L, DPRL_PREFIX_OPTIMAL, &pp, &err);
    CHECK(rc == DPRL_EINVAL && strcmp(err.msg, bad[c].msg) == 0,
          "params: message for a bad argument");
    if (strcmp(err.msg, bad[c].msg)) printf("#   got \"%s\"\n", err.msg);
  }
  dprl_error_clear(&err);
  int rc = dprl_prefix_params_derive(1e-310, 1e-5, 0.1, 4, 10, 10, DPRL_PREFIX_PAPER, &pp, &err);
  CHECK(rc == DPRL_EINVAL && strstr(err.msg, "too small"),
        "params: an eps1 whose threshold overflows is refused");
  /* eps' = 1e-6 / sqrt(3200 ln 2e5) ~ 5.1e-9 < 2^-25: the grid for 2/eps'
  ** would be coarser than 1. */
  dprl_error_clear(&err);
  rc = dprl_prefix_params_derive(1e-6, 1e-5, 0.1, 4, 100, 10, DPRL_PREFIX_PAPER, &pp, &err);
  CHECK(rc == DPRL_EINVAL && strstr(err.msg, "is below 2^-25"),
        "params: eps' below 2^-25 is refused (grid coarser than 1)");
  if (rc != DPRL_EINVAL) printf("#   got \"%s\"\n", err.msg);
  /* Just above the limit: eps' = 2^-25 exactly gives 2/eps' = 2^26, g = 1. */
  dprl_error_clear(&err);
  double e1 = 0x1p-25 * sqrt(32 * 1 * log(2 / 0.5));
  rc = dprl_prefix_params_derive(e1, 0.5, 0.1, 4, 1, 1, DPRL_PREFIX_PAPER, &pp, &err);
  CHECK(rc == DPRL_OK && pp.grid <= 1 && pp.grid >= 0.5,
        "params: eps' ~ 2^-25 still accepted with g <= 1");
  CHECK(pp.grid <= 1, "params: grid never exceeds the count's sensitivity");
}

/* ---- exact composition and the accountant (section 10) ----------------- */

/* delta of the k-fold composition by the definition, directly: every term
** of the sum in long double, binomial coefficients by products, no logs,
** no peak search, no truncation. Only for k, k eps0 small enough that
** e^{k eps0} and C(k, l) stay finite in long double. */
static double brute_composition(int64_t k, double e0, double d0, double eps) {
  long double sum = 0, c = 1, norm = powl(1 + expl(e0), (long double)k);
  for (int64_t l = 0; l <= k; l++) {
    long double t = expl((long double)(k - l) * e0) - expl((long double)eps + (long double)l * e0);
    if (t > 0) sum += c * t;
    c = c * (long double)(k - l) / (long double)(l + 1);
  }
  long double dk = sum / norm;
  return (double)(1 - powl(1 - (long double)d0, (long double)k) * (1 - dk));
}

/* The same for large k: every term in log space with lgammal, all l. */
static double brute_composition_log(int64_t k, double e0, double d0, double eps) {
  long double m = -INFINITY, s = 0;
  long double ln_norm = log1pl(expl(-(long double)e0));
  for (int64_t l = 0; l <= k; l++) {
    long double d = (long double)eps - (long double)(k - 2 * l) * e0;
    if (!(d < 0)) continue;
    long double t = lgammal((long double)k + 1) - lgammal((long double)l + 1) -
                    lgammal((long double)(k - l) + 1) - (long double)l * e0 -
                    (long double)k * ln_norm + logl(-expm1l(d));
    if (t > m) {
      s = s * expl(m - t) + 1;
      m = t;
    } else {
      s += expl(t - m);
    }
  }
  long double dk = s > 0 ? expl(m + logl(s)) : 0;
  return (double)(1 - powl(1 - (long double)d0, (long double)k) * (1 - dk));
}

static void test_composition(void) {
  int64_t ks[] = {1, 2, 5, 30, 100, 200};
  double e0s[] = {0.01, 0.1, 0.5, 1, 3};
  double epss[] = {0, 0.5, 1, 5, 20};
  double d0s[] = {0, 1e-6};
  int ok = 1, n = 0;
  double worst = 0;
  for (size_t a = 0; a < sizeof ks / sizeof ks[0]; a++)
    for (size_t b = 0; b < sizeof e0s / sizeof e0s[0]; b++)
      for (size_t c = 0; c < sizeof epss / sizeof epss[0]; c++)
        for (size_t d = 0; d < 2; d++) {
          double got = dprl_composition_delta(ks[a], e0s[b], d0s[d], epss[c]);
          double want = brute_composition(ks[a], e0s[b], d0s[d], epss[c]);
          /* absolute 1e-17: where eps = (k - 2l) eps0 exactly, the two
          ** roundings of (k - l) eps0 may disagree on a ~1e-18 term */
          double diff = fabs(got - want);
          if (diff > 1e-17 && diff / want > worst) worst = diff / want;
          if (!(diff <= 1e-10 * want + 1e-17)) {
            if (ok)
              printf("#   k %lld eps0 %g delta0 %g eps %g: got %.17g want %.17g\n",
                     (long long)ks[a], e0s[b], d0s[d], epss[c], got, want);
            ok = 0;
          }
          n++;
        }
  printf("# composition: %d cases against the direct sum, worst relative error %.3g\n", n,
         worst);
  CHECK(ok, "composition: log-space sum = direct sum (rel 1e-10) on 300 cases");
  /* Large k: against every term in log space (no peak search, no cut). */
  struct {
    int64_t k;
    double e0, d0, eps;
  } big[] = {{100000, 0.01, 1e-9, 2}, {1000000, 0.002, 1e-12, 3},
             {1000000, 0.0001, 0, 0.05}, {300000, 0.3, 1e-8, 27000}};
  for (size_t i = 0; i < sizeof big / sizeof big[0]; i++) {
    double got = dprl_composition_delta(big[i].k, big[i].e0, big[i].d0, big[i].eps);
    double want = brute_composition_log(big[i].k, big[i].e0, big[i].d0, big[i].eps);
    printf("# composition k = %lld: %.12g vs all terms %.12g\n", (long long)big[i].k, got,
           want);
    CHECK_REL(got, want, 1e-9, "composition: large k = every term summed");
  }
  /* Closed forms. k = 1: one (eps0, delta0) mechanism is exactly
  ** (eps, delta0 + (1 - delta0) max(0, e^eps0 - e^eps) / (1 + e^eps0)). */
  for (double eps = 0; eps <= 3; eps += 0.25) {
    double want = 1 - (1 - 1e-3) * (1 - fmax(0, (exp(2.0) - exp(eps)) / (1 + exp(2.0))));
    CHECK_REL(dprl_composition_delta(1, 2.0, 1e-3, eps), want, 1e-13,
              "composition: k = 1 closed form");
  }
  /* eps >= k eps0: pure composition, only the delta0 part remains. */
  CHECK_REL(dprl_composition_delta(50, 0.1, 1e-4, 5.0), 1 - pow(1 - 1e-4, 50), 1e-12,
            "composition: eps >= k eps0 leaves 1 - (1 - delta0)^k");
  CHECK(dprl_composition_delta(50, 0.1, 0, 5.0) == 0, "composition: pure eps, no delta");
  /* Monotone in eps0 and k, antitone in eps. */
  int mono = 1;
  double prev = 0;
  for (double e0 = 0.01; e0 < 2; e0 *= 1.3) {
    double d = dprl_composition_delta(100, e0, 1e-6, 3);
    if (d < prev) mono = 0;
    prev = d;
  }
  CHECK(mono, "composition: delta grows with eps0");
  CHECK(dprl_composition_delta(101, 0.2, 1e-6, 3) > dprl_composition_delta(100, 0.2, 1e-6, 3) &&
            dprl_composition_delta(100, 0.2, 1e-6, 3.1) <
                dprl_composition_delta(100, 0.2, 1e-6, 3),
        "composition: delta grows with k, falls with eps");
  CHECK(isnan(dprl_composition_delta(0, 0.1, 0, 1)) &&
            isnan(dprl_composition_delta(DPRL_PREFIX_MAX_T + 1, 0.1, 0, 1)) &&
            isnan(dprl_composition_delta(5, 0, 0, 1)) &&
            isnan(dprl_composition_delta(5, 0.1, 1, 1)) &&
            isnan(dprl_composition_delta(5, 0.1, 0, -1)),
        "composition: NaN outside its domain");
}

static void test_accountant(void) {
  dprl_error err = {0};
  dprl_prefix_params pp, paper;
  /* The paper's setting: eps' about doubles, the threshold halves (the
  ** SQL test checks both against an independent Python computation). */
  int rc = dprl_prefix_params_derive(7.5, 0.9 / 3000, 0.02, 4, 100, 200, DPRL_PREFIX_OPTIMAL,
                                     &pp, &err);
  rc |= dprl_prefix_params_derive(7.5, 0.9 / 3000, 0.02, 4, 100, 200, DPRL_PREFIX_PAPER,
                                  &paper, &err);
  printf("# accountant at the paper's setting: eps' %.6g (paper %.6g), threshold %.6g "
         "(paper %.6g), composed delta %.6g (paper %.6g)\n",
         pp.eps_prime, paper.eps_prime, pp.threshold_base, paper.threshold_base,
         pp.delta_composed, paper.delta_composed);
  CHECK(rc == DPRL_OK && pp.accountant == DPRL_PREFIX_OPTIMAL &&
            paper.accountant == DPRL_PREFIX_PAPER,
        "accountant: both derive at the paper's setting");
  CHECK(pp.eps_prime > 0.0900 && pp.eps_prime < 0.0910, "accountant: optimal eps' ~ 0.0905");
  CHECK(pp.threshold_base > 1400 && pp.threshold_base < 1410,
        "accountant: threshold ~ 1405 (paper's eps': 2819)");
  CHECK(paper.threshold_base > 2818 && paper.threshold_base < 2820,
        "accountant: the paper's eps' keeps its threshold 2819");
  /* Every derived eps' composes to (eps1, <= delta1 (1 - margin)), and
  ** the optimal one is the largest: 1e-9 more does not. */
  double eps1s[] = {0.1, 1, 7.5, 30, 100, 300, 1000};
  double deltas[] = {1e-9, 1e-5, 3e-4, 0.1};
  int64_t Ts[] = {1, 7, 100, 5000};
  int safe = 1, largest = 1, paper_below = 1, basic = 1, refused = 0, cases = 0;
  for (size_t a = 0; a < sizeof eps1s / sizeof eps1s[0]; a++)
    for (size_t b = 0; b < sizeof deltas / sizeof deltas[0]; b++)
      for (size_t c = 0; c < sizeof Ts / sizeof Ts[0]; c++) {
        double e1 = eps1s[a], d1 = deltas[b];
        int64_t T = Ts[c];
        dprl_error_clear(&err);
        if (dprl_prefix_params_derive(e1, d1, 0.01, 4, T, 50, DPRL_PREFIX_OPTIMAL, &pp,
                                      &err)) {
          printf("#   optimal refused (%g, %g, %lld): %s\n", e1, d1, (long long)T, err.msg);
          safe = 0;
          continue;
        }
        cases++;
        double lim = d1 * (1 - DPRL_PREFIX_DELTA_MARGIN);
        double d = dprl_composition_delta(T, 2 * pp.eps_prime, d1 / (2.0 * T), e1);
        if (!(d <= lim) || d != pp.delta_composed) safe = 0;
        if (!(dprl_composition_delta(T, 2 * pp.eps_prime * (1 + 1e-9), d1 / (2.0 * T), e1) >
              lim))
          largest = 0;
        if (pp.eps_prime < e1 / (2.0 * T)) basic = 0;
        dprl_error_clear(&err);
        if (dprl_prefix_params_derive(e1, d1, 0.01, 4, T, 50, DPRL_PREFIX_PAPER, &paper, &err)) {
          refused++;
          if (!strstr(err.msg, "accountant \"paper\"")) paper_below = 0;
          /* refused exactly where the printed eps' does not compose */
          double ep = e1 / sqrt(32.0 * T * log(2 / d1));
          if (dprl_composition_delta(T, 2 * ep, d1 / (2.0 * T), e1) <= lim) paper_below = 0;
        } else if (!(paper.eps_prime <= pp.eps_prime) || !(paper.delta_composed <= lim)) {
          paper_below = 0;
        }
      }
  printf("# accountant: %d settings, the paper's eps' refused in %d\n", cases, refused);
  CHECK(safe, "accountant: the composed delta is <= delta1 (1 - margin) in every setting");
  CHECK(largest, "accountant: eps' (1 + 1e-9) would exceed it (eps' is the largest)");
  CHECK(basic, "accountant: eps' >= eps1/(2T) (basic composition)");
  CHECK(paper_below && refused > 0,
        "accountant: the paper's eps' is below the optimal one, refused exactly where its "
        "exact composition exceeds delta1");
  /* The sample's eps1 = 100 and 300: the printed eps' is not covered. */
  dprl_error_clear(&err);
  rc = dprl_prefix_params_derive(100, 1e-3, 0.02, 2, 100, 20, DPRL_PREFIX_PAPER, &paper, &err);
  expect_prefix(rc, &err,
                "accountant \"paper\": eps' = eps1/sqrt(32 T ln(2/delta1)) = 0.641198 does not "
                "give (epsilon 100, delta 0.001): the exact composition of T = 100 examined "
                "trajectories, each (2 eps', delta/(2T))-DP, has delta 0.00221",
                "accountant: the paper's eps' refused at eps1 = 100, T = 100");
  dprl_error_clear(&err);
  rc = dprl_prefix_params_derive(300, 1e-3, 0.02, 2, 100, 20, DPRL_PREFIX_PAPER, &paper, &err);
  CHECK(rc == DPRL_EINVAL && strstr(err.msg, "use \"accountant\": \"optimal\""),
        "accountant: the paper's eps' refused at eps1 = 300, T = 100");
  dprl_error_clear(&err);
  CHECK(dprl_prefix_params_derive(100, 1e-3, 0.02, 2, 100, 20, DPRL_PREFIX_OPTIMAL, &pp,
                                  &err) == DPRL_OK &&
            pp.eps_prime > 0.5,
        "accountant: the optimal eps' at eps1 = 100 is derived");
}

int main(void) {
  test_params();
  test_composition();
  test_accountant();
  return CHECK_DONE();
}
