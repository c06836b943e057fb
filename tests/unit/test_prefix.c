/*
** test_prefix.c: unit tests of prefix_stable.c (ALGORITHMS.md section 7) and
** examined.c (section 7.1).
** Fixed seeds throughout; every test whose outcome depends on noise states,
** in a comment and in a CHECK, a margin that bounds its failure probability
** below 1e-12.
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/json.h"
#include "check.h"
#include "prefix_stable/examined.h"
#include "prefix_stable/prefix_stable.h"

/* ---- helpers ------------------------------------------------------------ */

/* Data generation only (not privacy noise): xorshift64*. */
static uint64_t xs_state = 88172645463325252ULL;
static uint64_t xs(void) {
  xs_state ^= xs_state >> 12;
  xs_state ^= xs_state << 25;
  xs_state ^= xs_state >> 27;
  return xs_state * 2685821657736338717ULL;
}
static double xs_unit(void) { return (double)(xs() >> 11) * 0x1p-53; }
static int64_t xs_below(int64_t n) { return (int64_t)(xs() % (uint64_t)n); }

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Fill a table through dprl_policy_set from f(i, s, a); the largest prob of
** each (i, s) is replaced by 1 - (sum of the others), so rows sum to 1 up to
** rounding while the small probs (p_min) stay exactly as f gives them. */
typedef double (*policy_fn)(int64_t i, int64_t s, int64_t a, void *ctx);
static int build_policies(dprl_policy_table *pt, int64_t m, int64_t S,
                          int64_t A, policy_fn f, void *ctx) {
  dprl_error err = {0};
  if (dprl_policy_init(pt, m, S, A, &err)) return 0;
  double *row = malloc((size_t)A * sizeof(double));
  for (int64_t i = 0; i < m; i++)
    for (int64_t s = 0; s < S; s++) {
      int64_t big = 0;
      for (int64_t a = 0; a < A; a++) {
        row[a] = f(i, s, a, ctx);
        if (row[a] > row[big]) big = a;
      }
      double rest = 1.0;
      for (int64_t a = 0; a < A; a++)
        if (a != big) rest -= row[a];
      row[big] = rest;
      for (int64_t a = 0; a < A; a++)
        if (dprl_policy_set(pt, i, s, a, row[a], &err)) {
          free(row);
          return 0;
        }
    }
  free(row);
  return 1;
}

/* A random policy with every prob >= p_min: p_min + a share of the rest. */
static double random_policy(int64_t i, int64_t s, int64_t a, void *ctx) {
  (void)i, (void)s, (void)a;
  double p_min = *(double *)ctx;
  return p_min + xs_unit() * 0.3 * (1.0 - 3 * p_min) / 3.0;
}

/* Flat trajectory storage built step by step. */
typedef struct traj_buf {
  int64_t n, cap_n, len, cap;
  int64_t *offsets, *states, *actions;
} traj_buf;
static void tb_begin(traj_buf *b) {
  if (b->n + 2 > b->cap_n) {
    b->cap_n = b->cap_n ? 2 * b->cap_n : 16;
    b->offsets = realloc(b->offsets, (size_t)b->cap_n * sizeof(int64_t));
  }
  b->offsets[b->n] = b->len;
  b->n++;
  b->offsets[b->n] = b->len;
}
static void tb_step(traj_buf *b, int64_t s, int64_t a) {
  if (b->len + 1 > b->cap) {
    b->cap = b->cap ? 2 * b->cap : 64;
    b->states = realloc(b->states, (size_t)b->cap * sizeof(int64_t));
    b->actions = realloc(b->actions, (size_t)b->cap * sizeof(int64_t));
  }
  b->states[b->len] = s;
  b->actions[b->len] = a;
  b->len++;
  b->offsets[b->n] = b->len;
}
static dprl_trajectories tb_view(const traj_buf *b) {
  dprl_trajectories t = {b->n, b->offsets, b->states, b->actions};
  return t;
}
static void tb_free(traj_buf *b) {
  free(b->offsets);
  free(b->states);
  free(b->actions);
  memset(b, 0, sizeof *b);
}

static int64_t traj_len(const dprl_trajectories *tr, int64_t j) {
  return tr->offsets[j + 1] - tr->offsets[j];
}

/* count_tau_{1:k} by the definition: a triple loop, nothing incremental. */
static double brute_count(const dprl_policy_table *pt, const int64_t *st,
                          const int64_t *ac, int64_t k) {
  double total = 0;
  for (int64_t i = 0; i < pt->n_experts; i++) {
    double prod = 1.0;
    for (int64_t j = 0; j < k; j++)
      prod *= pt->prob[((size_t)st[j] * pt->n_actions + ac[j]) * pt->n_experts +
                       i];
    total += prod;
  }
  return total;
}

/* An error whose message starts with want. */
static void expect_prefix(int rc, const dprl_error *err, const char *want, const char *what) {
  int ok = rc == DPRL_EINVAL && strncmp(err->msg, want, strlen(want)) == 0;
  CHECK(ok, what);
  if (!ok) printf("#   got rc %d \"%s\"\n#   want \"%s...\"\n", rc, err->msg, want);
}

/* ---- 1. parameters ------------------------------------------------------ */

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


/* ---- 1b. exact composition and the accountant (section 10) ------------- */

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

/* ---- 2. policy validation ---------------------------------------------- */

static double uniform_policy(int64_t i, int64_t s, int64_t a, void *ctx) {
  (void)i, (void)s, (void)a;
  return 1.0 / (double)*(int64_t *)ctx;
}

static void expect_msg(int rc, const dprl_error *err, const char *want,
                       const char *what) {
  int ok = rc == DPRL_EINVAL && strcmp(err->msg, want) == 0;
  CHECK(ok, what);
  if (!ok) printf("#   got rc %d \"%s\"\n#   want \"%s\"\n", rc, err->msg, want);
}

static void test_validation(void) {
  dprl_error err = {0};
  dprl_policy_table pt;
  int64_t A = 3;

  /* missing */
  dprl_policy_init(&pt, 3, 6, A, &err);
  for (int64_t i = 0; i < 3; i++)
    for (int64_t s = 0; s < 6; s++)
      for (int64_t a = 0; a < A; a++)
        if (!(i == 1 && s == 4 && a == 2) && !(i == 2 && s == 0 && a == 0))
          dprl_policy_set(&pt, i, s, a, 1.0 / 3, &err);
  CHECK(err.code == DPRL_OK, "validate: filling succeeds");
  expect_msg(dprl_policy_validate(&pt, 0.02, &err), &err,
             "policies: missing (expert 1, state 4, action 2)",
             "validate: first missing entry in (expert, state) order");
  /* duplicate */
  dprl_error_clear(&err);
  expect_msg(dprl_policy_set(&pt, 0, 1, 1, 0.3, &err), &err,
             "policies: duplicate (expert 0, state 1, action 1)",
             "set: duplicate entry");
  dprl_error_clear(&err);
  expect_msg(dprl_policy_set(&pt, 1, 4, 2, NAN, &err), &err,
             "policies: expert 1, state 4, action 2: prob must be a finite "
             "number, got nan",
             "set: NaN prob");
  dprl_error_clear(&err);
  expect_msg(dprl_policy_set(&pt, 3, 0, 0, 0.5, &err), &err,
             "policies: expert 3 is outside 0..2", "set: expert out of range");
  dprl_error_clear(&err);
  expect_msg(dprl_policy_set(&pt, 0, 6, 0, 0.5, &err), &err,
             "policies: state 6 is outside 0..5", "set: state out of range");
  dprl_error_clear(&err);
  expect_msg(dprl_policy_set(&pt, 0, 0, -1, 0.5, &err), &err,
             "policies: action -1 is outside 0..2", "set: action out of range");
  dprl_policy_free(&pt);

  /* p_min */
  dprl_error_clear(&err);
  build_policies(&pt, 3, 2, A, uniform_policy, &A);
  pt.prob[dprl_policy_index(&pt, 2, 0, 0)] = 0.49;
  pt.prob[dprl_policy_index(&pt, 2, 0, 1)] = 0.01;
  pt.prob[dprl_policy_index(&pt, 2, 0, 2)] = 0.5;
  CHECK(dprl_policy_validate(&pt, 0.01, &err) == DPRL_OK,
        "validate: prob == p_min is allowed");
  expect_msg(dprl_policy_validate(&pt, 0.02, &err), &err,
             "policies: expert 2, state 0, action 1: prob 0.01 < p_min 0.02",
             "validate: prob below p_min");
  dprl_error_clear(&err);
  pt.prob[dprl_policy_index(&pt, 2, 0, 1)] = nextafter(0.02, 0);
  pt.prob[dprl_policy_index(&pt, 2, 0, 0)] = 0.48;
  expect_msg(dprl_policy_validate(&pt, 0.02, &err), &err,
             "policies: expert 2, state 0, action 1: prob 0.019999999999999997 "
             "< p_min 0.02",
             "validate: a prob one ulp below p_min prints distinctly");
  dprl_error_clear(&err);
  expect_msg(dprl_policy_validate(&pt, 0.5, &err), &err,
             "p_min must be in (0, 1/|A|) = (0, 0.333333), got 0.5",
             "validate: p_min range");
  dprl_policy_free(&pt);

  /* sums */
  int64_t A2 = 2;
  dprl_error_clear(&err);
  build_policies(&pt, 4, 6, A2, uniform_policy, &A2);
  pt.prob[dprl_policy_index(&pt, 3, 5, 1)] = 0.47;
  expect_msg(dprl_policy_validate(&pt, 0.02, &err), &err,
             "policies: expert 3, state 5: probabilities sum to 0.97, not 1 "
             "(tolerance 1e-09)",
             "validate: sum off by 0.03");
  dprl_error_clear(&err);
  pt.prob[dprl_policy_index(&pt, 3, 5, 1)] = 0.5 + 5e-10;
  CHECK(dprl_policy_validate(&pt, 0.02, &err) == DPRL_OK,
        "validate: sum within 1e-9 passes");
  pt.prob[dprl_policy_index(&pt, 3, 5, 1)] = 0.5 + 2e-9;
  expect_msg(dprl_policy_validate(&pt, 0.02, &err), &err,
             "policies: expert 3, state 5: probabilities sum to 1.000000002, "
             "not 1 (tolerance 1e-09)",
             "validate: sum off by 2e-9 fails");
  dprl_error_clear(&err);
  pt.prob[dprl_policy_index(&pt, 3, 5, 1)] = INFINITY;
  expect_msg(dprl_policy_validate(&pt, 0.02, &err), &err,
             "policies: expert 3, state 5: probabilities sum to inf, not 1 "
             "(tolerance 1e-09)",
             "validate: an infinite prob fails the sum");
  dprl_error_clear(&err);
  pt.prob[dprl_policy_index(&pt, 3, 5, 1)] = NAN; /* written directly */
  expect_msg(dprl_policy_validate(&pt, 0.02, &err), &err,
             "policies: missing (expert 3, state 5, action 1)",
             "validate: NaN in the table counts as missing");
  /* Two failures: (expert 1, state 0) comes first in memory (state-major
  ** layout), (expert 0, state 5) first in (expert, state) order, which is
  ** the one the message must name. */
  dprl_error_clear(&err);
  pt.prob[dprl_policy_index(&pt, 3, 5, 1)] = 0.5;
  pt.prob[dprl_policy_index(&pt, 1, 0, 0)] = 0.4;
  pt.prob[dprl_policy_index(&pt, 0, 5, 0)] = 0.01;
  pt.prob[dprl_policy_index(&pt, 0, 5, 1)] = 0.99;
  expect_msg(dprl_policy_validate(&pt, 0.02, &err), &err,
             "policies: expert 0, state 5, action 0: prob 0.01 < p_min 0.02",
             "validate: first failure in (expert, state) order, not memory order");
  dprl_policy_free(&pt);

  /* sizes */
  dprl_error_clear(&err);
  expect_msg(dprl_policy_init(&pt, 0, 2, 2, &err), &err,
             "policies: the number of experts must be >= 1, got 0",
             "init: zero experts");
}

/* ---- 3. trajectory checks ---------------------------------------------- */

static void test_trajectory_checks(void) {
  dprl_error err = {0};
  dprl_policy_table pt;
  int64_t A = 4;
  build_policies(&pt, 5, 4, A, uniform_policy, &A);
  int64_t offsets[] = {0, 3, 6};
  int64_t states[] = {0, 1, 2, 3, 0, 9};
  int64_t actions[] = {0, 1, 2, 3, 0, 1};
  dprl_trajectories tr = {2, offsets, states, actions};
  expect_msg(dprl_trajectories_check(&tr, &pt, &err), &err,
             "trajectory 1, step 2: state 9 is outside the policy table "
             "(states 0..3)",
             "trajectories: state out of range names trajectory and step");
  states[5] = 1;
  actions[4] = 4;
  dprl_error_clear(&err);
  expect_msg(dprl_trajectories_check(&tr, &pt, &err), &err,
             "trajectory 1, step 1: action 4 is outside the policy table "
             "(actions 0..3)",
             "trajectories: action out of range");
  actions[4] = -2;
  dprl_error_clear(&err);
  expect_msg(dprl_trajectories_check(&tr, &pt, &err), &err,
             "trajectory 1, step 1: action -2 is outside the policy table "
             "(actions 0..3)",
             "trajectories: negative action");
  actions[4] = 0;
  dprl_error_clear(&err);
  CHECK(dprl_trajectories_check(&tr, &pt, &err) == DPRL_OK,
        "trajectories: valid data passes");
  offsets[1] = 7;
  expect_msg(dprl_trajectories_check(&tr, &pt, &err), &err,
             "trajectories: offsets must be non-decreasing, got offsets[1] = "
             "7 > offsets[2] = 6",
             "trajectories: offsets out of order");
  offsets[1] = 3;

  /* Through the release: errors before any noise, output left empty. */
  dprl_prefix_params pp;
  dprl_rng rng;
  dprl_prefix_release rel;
  dprl_rng_init_seeded(&rng, 1, 0);
  dprl_error_clear(&err);
  dprl_prefix_params_derive(5, 1e-5, 0.1, A, 3, 3, DPRL_PREFIX_OPTIMAL, &pp, &err);
  /* T = 3 > n = 2 is not an error (that would reveal n): 3 runs, each
  ** drawing one of the 2. */
  CHECK(dprl_prefix_release_run(&pt, &tr, &pp, &rng, &rel, &err) == DPRL_OK &&
            rel.n_runs == 3 && rel.traj != NULL && rel.traj[0] >= 0 && rel.traj[0] < 2 &&
            rel.traj[1] >= 0 && rel.traj[1] < 2 && rel.traj[2] >= 0 && rel.traj[2] < 2,
        "release: T above the number of trajectories: T runs, each drawing one");
  dprl_prefix_release_free(&rel);
  dprl_trajectories none = {0, offsets, states, actions};
  dprl_error_clear(&err);
  CHECK(dprl_prefix_release_run(&pt, &none, &pp, &rng, &rel, &err) == DPRL_OK &&
            rel.n_runs == 3 && rel.traj[0] == -1 && rel.traj[2] == -1 && rel.k[0] == 0 &&
            rel.k[1] == 0 && rel.k[2] == 0,
        "release: no trajectories: T runs that release nothing, no error");
  dprl_prefix_release_free(&rel);
  int64_t bad_draw[3] = {0, 2, 1};
  expect_msg(dprl_prefix_release_drawn(&pt, &tr, &pp, &rng, bad_draw, &rel, &err), &err,
             "run 1: trajectory 2 is outside 0..1", "release_drawn: a draw out of range");
  CHECK(rel.traj == NULL && rel.n_runs == 0, "release_drawn: output empty on error");
  states[2] = 4;
  dprl_error_clear(&err);
  dprl_prefix_params_derive(5, 1e-5, 0.1, A, 2, 3, DPRL_PREFIX_OPTIMAL, &pp, &err);
  expect_msg(dprl_prefix_release_run(&pt, &tr, &pp, &rng, &rel, &err), &err,
             "trajectory 0, step 2: state 4 is outside the policy table "
             "(states 0..3)",
             "release: out-of-range state refused");
  CHECK(rel.traj == NULL && rel.k == NULL && rel.n_runs == 0,
        "release: output empty on error");
  states[2] = 2;
  pt.prob[dprl_policy_index(&pt, 4, 3, 2)] = NAN;
  dprl_error_clear(&err);
  expect_msg(dprl_prefix_release_run(&pt, &tr, &pp, &rng, &rel, &err), &err,
             "policies: missing (expert 4, state 3, action 2)",
             "release: policies validated before any release");
  pt.prob[dprl_policy_index(&pt, 4, 3, 2)] = 0.25;
  dprl_error_clear(&err);
  CHECK(dprl_prefix_release_run(&pt, &tr, &pp, &rng, &rel, &err) == DPRL_OK &&
            rel.n_runs == 2,
        "release: runs once the data is valid");
  dprl_prefix_release_free(&rel);
  dprl_error_clear(&err);
  actions[5] = 4;
  double counts[6];
  expect_msg(dprl_prefix_counts(&pt, states, actions, 6, counts, &err), &err,
             "step 5: (state 1, action 4) is outside the policy table "
             "(4 states, 4 actions)",
             "counts: range-checked");
  dprl_policy_free(&pt);
}

/* ---- 4. incremental count == brute force ------------------------------- */

static void test_counts_bruteforce(void) {
  int64_t ms[] = {1, 7, 8, 37, 64};
  for (size_t c = 0; c < sizeof ms / sizeof ms[0]; c++) {
    dprl_error err = {0};
    dprl_policy_table pt;
    double p_min = 0.05;
    int64_t S = 5, A = 3, len = 40;
    build_policies(&pt, ms[c], S, A, random_policy, &p_min);
    CHECK(dprl_policy_validate(&pt, p_min, &err) == DPRL_OK,
          "bruteforce: random policies are valid");
    double worst = 0;
    for (int rep = 0; rep < 20; rep++) {
      int64_t st[40], ac[40];
      double counts[40];
      for (int64_t j = 0; j < len; j++) {
        st[j] = xs_below(S);
        ac[j] = xs_below(A);
      }
      dprl_prefix_counts(&pt, st, ac, len, counts, &err);
      for (int64_t k = 1; k <= len; k++) {
        double want = brute_count(&pt, st, ac, k);
        double rel = fabs(counts[k - 1] - want) / want;
        if (!(rel <= worst)) worst = rel;
      }
    }
    printf("# m = %lld: worst relative difference %.3g over 800 prefixes\n",
           (long long)ms[c], worst);
    CHECK(worst <= 1e-13, "bruteforce: incremental count = triple loop at every step");
    dprl_policy_free(&pt);
  }
}

/* ---- 5. the test: a cliff at step j0 --------------------------- */

/* Experts: action 1 has exactly p_min for every expert, action 2 has
** p_min + x and action 0 the rest (1 - 2 p_min - x), x in [0, 0.05] varying
** with expert and state. */
#define CLIFF_ACTION 1
static double cliff_policy(int64_t i, int64_t s, int64_t a, void *ctx) {
  double p_min = *(double *)ctx;
  double x = 0.05 * (double)((i * 7 + s * 13) % 101) / 100.0;
  return a == 0 ? 1 - 2 * p_min - x : a == 1 ? p_min : p_min + x;
}

static void test_cliff(void) {
  /* m = 20000, |A| = 3, p_min = 1e-3, eps1 = 20, delta1 = 1e-6, T = n = 6,
  ** L = 12: eps' ~ 0.38, b_query = 4/eps' ~ 10.6, threshold base ~ 3.4e3.
  ** Before j0 every step takes action 0 (prob >= 0.948), so the count stays
  ** >= 20000 * 0.948^12 ~ 1.05e4; step j0 takes action 1 (p_min for all), so the count
  ** drops to 1e-3 of what it was (<= 20). The test computes both margins
  ** (by brute force) in units of b_query and requires >= 100 on each side;
  ** it finds ~670 above and ~316 below.
  **
  ** Why >= 100 b_query makes failure impossible in practice: a query answers
  ** wrongly only if |g Z1 - g Z2| >= 100 b_query, so |g Z1| or |g Z2| is
  ** >= 50 b_query. For the grid noise P(|g Z| >= x) <= 2 exp(-x / (t g))
  ** with t g <= b + g <= b (1 + 2^-25), b <= b_query, so each query fails
  ** with probability <= 4 exp(-49.99) < 1e-21; over at most T L = 72
  ** queries per run and 4 runs, < 3e-19 < 1e-12. */
  dprl_error err = {0};
  dprl_policy_table pt;
  double p_min = 1e-3;
  int64_t m = 20000, S = 4, A = 3, L = 12;
  CHECK(build_policies(&pt, m, S, A, cliff_policy, &p_min),
        "cliff: policies built");
  CHECK(dprl_policy_validate(&pt, p_min, &err) == DPRL_OK, "cliff: policies valid");
  /* (length, j0): j0 = 0 means no p_min step. */
  int64_t spec[][2] = {{12, 6}, {12, 0}, {8, 1}, {10, 10}, {5, 0}, {15, 0}};
  int64_t n = 6, expect[6];
  traj_buf tb = {0};
  for (int64_t j = 0; j < n; j++) {
    tb_begin(&tb);
    for (int64_t t = 1; t <= spec[j][0]; t++)
      tb_step(&tb, xs_below(S), t == spec[j][1] ? CLIFF_ACTION : 0);
    int64_t reach = spec[j][0] < L ? spec[j][0] : L;
    expect[j] = spec[j][1] ? spec[j][1] - 1 : reach;
  }
  dprl_trajectories tr = tb_view(&tb);
  dprl_prefix_params pp;
  dprl_prefix_params_derive(20, 1e-6, p_min, A, n, L, DPRL_PREFIX_OPTIMAL, &pp, &err);
  double up = HUGE_VAL, down = HUGE_VAL;
  for (int64_t j = 0; j < n; j++) {
    const int64_t *st = tr.states + tr.offsets[j], *ac = tr.actions + tr.offsets[j];
    for (int64_t k = 1; k <= expect[j]; k++) {
      double u = (brute_count(&pt, st, ac, k) - pp.threshold_base) / pp.b_query;
      if (u < up) up = u;
    }
    if (spec[j][1]) {
      double d = (pp.threshold_base - brute_count(&pt, st, ac, spec[j][1])) /
                 pp.b_query;
      if (d < down) down = d;
    }
  }
  printf("# cliff: base %.6g, b_query %.6g; margins %.1f b_query above, "
         "%.1f below\n",
         pp.threshold_base, pp.b_query, up, down);
  CHECK(up >= 100 && down >= 100, "cliff: both margins >= 100 noise scales");
  for (int run = 0; run < 4; run++) {
    dprl_rng rng;
    if (run < 3) dprl_rng_init_seeded(&rng, 1000 + run, 7);
    else CHECK(dprl_rng_init_secure(&rng, &err) == DPRL_OK, "cliff: secure rng");
    dprl_prefix_release rel;
    int rc = dprl_prefix_release_run(&pt, &tr, &pp, &rng, &rel, &err);
    if (!CHECK(rc == DPRL_OK && rel.n_runs == n, "cliff: release runs"))
      printf("#   error: %s\n", err.msg);
    int all = rc == DPRL_OK;
    for (int64_t c = 0; all && c < rel.n_runs; c++)
      if (rel.k[c] != expect[rel.traj[c]]) {
        all = 0;
        printf("#   trajectory %lld: k = %lld, want %lld\n",
               (long long)rel.traj[c], (long long)rel.k[c],
               (long long)expect[rel.traj[c]]);
      }
    CHECK(all, "cliff: k = j0 - 1 (or min(len, L) without a cliff) for every trajectory");
    dprl_prefix_release_free(&rel);
    dprl_rng_wipe(&rng);
  }
  tb_free(&tb);
  dprl_policy_free(&pt);
}

/* ---- 6. tiny epsilon releases nothing ---------------------------------- */

static void test_tiny_epsilon(void) {
  /* The cliff experts (m = 2000, p_min = 5e-3) on trajectories that always
  ** take action 0 (prob >= 0.94). With eps1 = 1e-3, delta1 = 1e-30, T = 25,
  ** L = 20: eps' ~ 4e-6 and theta ~ 5e7 while count <= m, so the first
  ** query of every trajectory sees base - count >= theta - m
  ** + (4/eps') ln(1/delta') ~ 125 b_query (checked below to be >= 100): by
  ** the bound of test_cliff, each of the 25 first queries returns "top" with
  ** probability < 1e-21. */
  dprl_error err = {0};
  dprl_policy_table pt;
  double p_min = 5e-3;
  int64_t m = 2000, S = 4, A = 3, L = 20, n = 30, T = 25;
  build_policies(&pt, m, S, A, cliff_policy, &p_min);
  traj_buf tb = {0};
  for (int64_t j = 0; j < n; j++) {
    tb_begin(&tb);
    int64_t len = 1 + xs_below(L);
    for (int64_t t = 0; t < len; t++) tb_step(&tb, xs_below(S), 0);
  }
  dprl_trajectories tr = tb_view(&tb);
  dprl_prefix_params pp;
  dprl_prefix_params_derive(1e-3, 1e-30, p_min, A, T, L, DPRL_PREFIX_OPTIMAL, &pp, &err);
  double margin = (pp.threshold_base - (double)m) / pp.b_query;
  printf("# tiny eps: theta %.4g, margin %.1f b_query\n", pp.theta, margin);
  CHECK(margin >= 100, "tiny eps: margin >= 100 noise scales");
  dprl_rng rng;
  dprl_rng_init_seeded(&rng, 42, 0);
  dprl_prefix_release rel;
  int rc = dprl_prefix_release_run(&pt, &tr, &pp, &rng, &rel, &err);
  int64_t released = 0;
  for (int64_t c = 0; rc == DPRL_OK && c < rel.n_runs; c++) released += rel.k[c];
  if (!CHECK(rc == DPRL_OK && rel.n_runs == T && released == 0,
             "tiny eps: nothing is released"))
    printf("#   rc %d (%s), %lld steps released\n", rc, err.msg, (long long)released);
  dprl_prefix_release_free(&rel);

  /* Contrast, so the test above is not vacuous: eps1 = 200 on the same data
  ** puts the base ~ 700 far below the first step's count (>= 0.94 m), by
  ** >= 100 b_query (checked), so every examined trajectory releases k >= 1. */
  dprl_prefix_params_derive(200, 1e-30, p_min, A, T, L, DPRL_PREFIX_OPTIMAL, &pp, &err);
  double first = HUGE_VAL;
  for (int64_t j = 0; j < n; j++) {
    double c1 = brute_count(&pt, tr.states + tr.offsets[j], tr.actions + tr.offsets[j], 1);
    if (c1 < first) first = c1;
  }
  double up = (first - pp.threshold_base) / pp.b_query;
  CHECK(up >= 100, "tiny eps contrast: first step >= 100 noise scales above");
  rc = dprl_prefix_release_run(&pt, &tr, &pp, &rng, &rel, &err);
  int all = rc == DPRL_OK;
  released = 0;
  for (int64_t c = 0; all && c < rel.n_runs; c++) {
    released += rel.k[c];
    if (rel.k[c] < 1) all = 0;
  }
  printf("# eps1 = 200 on the same data: base %.4g, first-step margin %.1f "
         "b_query, %lld steps released\n",
         pp.threshold_base, up, (long long)released);
  CHECK(all, "tiny eps contrast: a large eps1 releases on the same data");
  dprl_prefix_release_free(&rel);
  tb_free(&tb);
  dprl_policy_free(&pt);
}

/* ---- 7. T runs drawn with replacement; exact prefixes; replay ---------- */

static double mostly_zero_policy(int64_t i, int64_t s, int64_t a, void *ctx) {
  (void)ctx;
  double x = 0.05 * (double)((i * 31 + s * 17) % 97) / 96.0; /* [0, 0.05] */
  return a == 0 ? 0.9 - x : 0.1 + x; /* A = 2, p_min = 0.05 */
}

/* Algorithm 2 replayed from the public primitives on the same seed: T
** uniform draws with replacement (dprl_rng_below), then per run one
** threshold draw and one query per step until the first bottom. */
static int replay_matches(const dprl_policy_table *pt,
                          const dprl_trajectories *tr,
                          const dprl_prefix_params *pp, uint64_t seed,
                          const dprl_prefix_release *rel) {
  dprl_error err = {0};
  dprl_rng rng;
  dprl_rng_init_seeded(&rng, seed, 3);
  int64_t *order = malloc((size_t)pp->T * sizeof *order);
  for (int64_t c = 0; c < pp->T; c++) order[c] = (int64_t)dprl_rng_below(&rng, (uint64_t)tr->n);
  int ok = 1;
  for (int64_t c = 0; c < pp->T; c++) {
    int64_t j = order[c], len = traj_len(tr, j);
    double *counts = malloc((size_t)(len ? len : 1) * sizeof(double));
    dprl_prefix_counts(pt, tr->states + tr->offsets[j],
                       tr->actions + tr->offsets[j], len, counts, &err);
    double thr;
    dprl_prefix_threshold_noise(&rng, pp, &thr, &err);
    int64_t k = 0;
    for (int64_t i = 0; i < len && i < pp->L; i++) {
      int top;
      dprl_prefix_query(&rng, pp, counts[i], thr, &top, &err);
      if (!top) break;
      k = i + 1;
    }
    free(counts);
    if (rel->traj[c] != j || rel->k[c] != k) ok = 0;
  }
  free(order);
  return ok && err.code == DPRL_OK;
}

static void test_T_and_prefixes(void) {
  dprl_error err = {0};
  dprl_policy_table pt;
  int64_t m = 2000, S = 6, A = 2, n = 50, L = 30;
  build_policies(&pt, m, S, A, mostly_zero_policy, NULL);
  traj_buf tb = {0};
  for (int64_t j = 0; j < n; j++) {
    tb_begin(&tb);
    int64_t len = xs_below(45); /* some empty, some longer than L */
    for (int64_t t = 0; t < len; t++)
      tb_step(&tb, xs_below(S), xs_unit() < 0.9 ? 0 : 1);
  }
  dprl_trajectories tr = tb_view(&tb);
  int64_t Ts[] = {1, 17, 50};
  int64_t k_hist[31] = {0};
  for (size_t c = 0; c < sizeof Ts / sizeof Ts[0]; c++) {
    for (uint64_t seed = 1; seed <= 20; seed++) {
      dprl_prefix_params pp;
      dprl_prefix_params_derive(50, 1e-3, 0.05, A, Ts[c], L, DPRL_PREFIX_OPTIMAL, &pp, &err);
      dprl_rng rng;
      dprl_rng_init_seeded(&rng, seed, 3);
      dprl_prefix_release rel;
      int rc = dprl_prefix_release_run(&pt, &tr, &pp, &rng, &rel, &err);
      int ok = rc == DPRL_OK && rel.n_runs == Ts[c];
      int distinct = ok, prefix = ok; /* distinct: every draw in range */
      for (int64_t e = 0; ok && e < rel.n_runs; e++) {
        int64_t j = rel.traj[e];
        if (j < 0 || j >= n) distinct = 0;
        int64_t len = traj_len(&tr, j), cap = len < L ? len : L;
        if (rel.k[e] < 0 || rel.k[e] > cap) prefix = 0;
        else k_hist[rel.k[e]]++;
      }
      if (seed == 1) {
        if (!CHECK(ok, "T: exactly T runs"))
          printf("#   error: %s\n", err.msg);
        CHECK(distinct, "T: every run's trajectory is in range");
        CHECK(prefix, "T: 0 <= k <= min(length, L)");
        CHECK(replay_matches(&pt, &tr, &pp, seed, &rel),
              "T: release = step-by-step replay with the public primitives");
        dprl_prefix_release again;
        dprl_rng_init_seeded(&rng, seed, 3);
        dprl_prefix_release_run(&pt, &tr, &pp, &rng, &again, &err);
        CHECK(memcmp(again.traj, rel.traj, (size_t)Ts[c] * sizeof(int64_t)) == 0 &&
                  memcmp(again.k, rel.k, (size_t)Ts[c] * sizeof(int64_t)) == 0,
              "T: the same seed gives the same release");
        dprl_prefix_release_free(&again);
        /* The SQL layer's form: the caller draws (the same words of the
        ** stream), keeps only the distinct drawn trajectories, in order of
        ** first draw, and passes each run's place among them. */
        dprl_rng_init_seeded(&rng, seed, 3);
        int64_t draw[50], place[50], first[50], K = 0;
        dprl_prefix_draw(&rng, n, Ts[c], draw);
        for (int64_t j = 0; j < n; j++) place[j] = -1;
        for (int64_t c2 = 0; c2 < Ts[c]; c2++) {
          if (place[draw[c2]] < 0) {
            first[K] = draw[c2];
            place[draw[c2]] = K++;
          }
          draw[c2] = place[draw[c2]];
        }
        traj_buf tb2 = {0};
        for (int64_t c2 = 0; c2 < K; c2++) {
          tb_begin(&tb2);
          for (int64_t p = tr.offsets[first[c2]]; p < tr.offsets[first[c2] + 1]; p++)
            tb_step(&tb2, tr.states[p], tr.actions[p]);
        }
        dprl_trajectories tr2 = tb_view(&tb2);
        int same = dprl_prefix_release_drawn(&pt, &tr2, &pp, &rng, draw, &again, &err) ==
                       DPRL_OK &&
                   again.n_runs == rel.n_runs;
        for (int64_t e = 0; same && e < rel.n_runs; e++)
          same = again.traj[e] == draw[e] && again.k[e] == rel.k[e] &&
                 rel.traj[e] == first[draw[e]];
        CHECK(same, "T: release_drawn over the distinct drawn trajectories = release_run");
        dprl_prefix_release_free(&again);
        tb_free(&tb2);
      } else if (!(ok && distinct && prefix && replay_matches(&pt, &tr, &pp, seed, &rel))) {
        CHECK(0, "T: properties hold for every seed");
      }
      dprl_prefix_release_free(&rel);
    }
  }
  printf("# k histogram over 360 examined trajectories:");
  for (int k = 0; k <= 30; k++)
    if (k_hist[k]) printf(" %d:%lld", k, (long long)k_hist[k]);
  printf("\n");
  tb_free(&tb);
  dprl_policy_free(&pt);
}

/* ---- 8. the noise as used ---------------------------------------------- */

/* P(Z1 - Z2 > x), Z1 ~ Lap(b1), Z2 ~ Lap(b2), b1 != b2 (convolution). */
static double lap_diff_tail(double x, double b1, double b2) {
  if (x < 0) return 1 - lap_diff_tail(-x, b1, b2);
  return (b1 * b1 * exp(-x / b1) - b2 * b2 * exp(-x / b2)) /
         (2 * (b1 * b1 - b2 * b2));
}

static void test_noise_statistics(void) {
  dprl_error err = {0};
  dprl_prefix_params pp;
  dprl_prefix_params_derive(7.5, 0.9 / 3000, 0.02, 4, 100, 200, DPRL_PREFIX_OPTIMAL, &pp, &err);
  dprl_rng rng;
  dprl_rng_init_seeded(&rng, 2024, 11);
  const int N = 200000;
  double scales[2] = {pp.b_threshold, pp.b_query};
  for (int w = 0; w < 2; w++) {
    double b = scales[w], sum = 0, sum2 = 0;
    int on_grid = 1;
    for (int r = 0; r < N; r++) {
      double x;
      dprl_release_laplace(&rng, 0.0, b, pp.grid, &x, &err);
      if (x / pp.grid != nearbyint(x / pp.grid)) on_grid = 0;
      sum += x;
      sum2 += x * x;
    }
    double mean = sum / N, var = sum2 / N - mean * mean;
    /* Laplace(b): variance 2b^2, Var(X^2) = 24b^4 - 4b^4 = 20b^4. */
    double se_mean = sqrt(2 * b * b / N), se_var = sqrt(20.0 / N) * b * b;
    printf("# Lap(%.4g) on grid %.3g: mean %.4g (se %.3g), var %.6g vs 2b^2 "
           "= %.6g (se %.3g)\n",
           b, pp.grid, mean, se_mean, var, 2 * b * b, se_var);
    CHECK(err.code == DPRL_OK && on_grid, "noise: draws are multiples of the grid");
    CHECK_NEAR(mean, 0, 5 * se_mean, "noise: mean ~ 0 within 5 s.e.");
    CHECK_NEAR(var, 2 * b * b, 5 * se_var, "noise: variance ~ 2b^2 within 5 s.e.");
  }
  /* PrefixQuery's acceptance probability, threshold noise drawn fresh each
  ** time: P(top) = P(Z1 - Z2 > base - count). */
  double deltas[] = {0, 1, -1, 3, -2.5};
  for (size_t d = 0; d < sizeof deltas / sizeof deltas[0]; d++) {
    double count = pp.threshold_base + deltas[d] * pp.b_query;
    int tops = 0;
    const int M = 100000;
    for (int r = 0; r < M; r++) {
      double thr;
      int top;
      dprl_prefix_threshold_noise(&rng, &pp, &thr, &err);
      dprl_prefix_query(&rng, &pp, count, thr, &top, &err);
      tops += top;
    }
    double p = lap_diff_tail(-deltas[d] * pp.b_query, pp.b_query, pp.b_threshold);
    double freq = (double)tops / M, se = sqrt(p * (1 - p) / M);
    printf("# count = base %+g b_query: P(top) %.4f, theory %.4f (se %.4f)\n",
           deltas[d], freq, p, se);
    CHECK_NEAR(freq, p, 5 * se, "noise: PrefixQuery acceptance matches Lap(4/eps') - Lap(2/eps')");
  }
}

/* ---- 8.1 the plan's expectation (ALGORITHMS.md section 7.2) ------------ */

/* E[k] of one run whose query j sees count threshold + v[j] (v[j] for j <
** n; n_v = 1: v[0] at every step), by composite Simpson over the
** threshold noise z ~ Lap(b0) of the probability that the first j queries
** pass given z, prod_i P(Lap(b) > z - v_i): written here from the
** definition, independently of plan.c's quadrature. */
static double brute_expected_k(const double *v, int n_v, int n, double b0, double b) {
  const int N = 1000000; /* even */
  double lo = -200 * b0, hi = 200 * b0, h = (hi - lo) / N;
  long double acc = 0;
  for (int i = 0; i <= N; i++) {
    double z = lo + i * h, f0 = exp(-fabs(z) / b0) / (2 * b0), prod = 1, sum = 0;
    for (int j = 0; j < n; j++) {
      double x = z - v[n_v == 1 ? 0 : j];
      prod *= x >= 0 ? 0.5 * exp(-x / b) : 1 - 0.5 * exp(x / b);
      sum += prod;
    }
    int wgt = i == 0 || i == N ? 1 : i % 2 ? 4 : 2;
    acc += (long double)wgt * f0 * sum;
  }
  return (double)(acc * h / 3);
}

/* A plan's number at key k (JSON), NAN if absent. */
static double plan_num(const dprl_buf *b, const char *k) {
  dprl_error err = {0};
  dprl_json *v = dprl_json_parse(b->data, b->len, &err);
  const dprl_json *x = v ? dprl_json_get(v, k) : NULL;
  double r = x && x->type == DPRL_JSON_NUMBER ? x->num : NAN;
  dprl_json_free(v);
  return r;
}

static void test_plan(void) {
  dprl_error err = {0};
  dprl_prefix_params pp;
  dprl_prefix_expectation ex;
  dprl_prefix_params_derive(1, 1e-6, 0.02, 1, 100, 25, DPRL_PREFIX_OPTIMAL, &pp, &err);
  double b0 = pp.b_threshold, b = pp.b_query;
  /* P(k >= 1) against the difference of two Laplace variables (section 8). */
  double offs[] = {-30, -4, -1, -0.25, 0, 0.5, 2, 6};
  for (size_t i = 0; i < sizeof offs / sizeof offs[0]; i++) {
    double count = pp.threshold_base + offs[i] * b;
    int rc = dprl_prefix_expect(&pp, &count, 1, 25, NULL, &ex, &err);
    double want = lap_diff_tail(-offs[i] * b, b, b0);
    CHECK(rc == DPRL_OK, LABEL("plan: count = threshold %+g b_query: computed", offs[i]));
    CHECK_REL(ex.p_release, want, 1e-12,
              LABEL("plan: count = threshold %+g b_query: P(k >= 1) = P(Lap(b) - Lap(b0) > "
                    "threshold - count)", offs[i]));
    CHECK_NEAR(ex.normalizer, 1, 1e-10,
               LABEL("plan: count = threshold %+g b_query: the quadrature of P(k >= 1) gives "
                     "it back", offs[i]));
    CHECK_NEAR(log(want), ex.log_p_release, 1e-12 * fabs(log(want)) + 1e-14,
               LABEL("plan: count = threshold %+g b_query: its log", offs[i]));
  }
  /* E[k | k >= 1] against the brute integral, constant counts and profiles. */
  struct { double v[6]; int n_v, n; } cases[] = {
      {{0.5}, 1, 8},         {{-2}, 1, 25},          {{3}, 1, 25},
      {{1, 0.5, 0, -0.5, -1, -2}, 6, 6}, {{4, 4, 1, 1, -3, -3}, 6, 5}, {{-1}, 1, 1}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    double v[6], counts[6];
    for (int j = 0; j < cases[i].n_v; j++) {
      v[j] = cases[i].v[j] * b;
      counts[j] = pp.threshold_base + v[j];
    }
    int rc = dprl_prefix_expect(&pp, counts, cases[i].n_v, cases[i].n, NULL, &ex, &err);
    double ek = brute_expected_k(v, cases[i].n_v, cases[i].n, b0, b);
    double p1 = lap_diff_tail(-v[0], b, b0);
    CHECK(rc == DPRL_OK, LABEL("plan: case %zu computed", i));
    CHECK_REL(ex.length, ek / p1, 1e-7,
              LABEL("plan: case %zu: E[k | k >= 1] = the brute integral / P(k >= 1) (%.6g)", i,
                    ek / p1));
  }
  /* A profile of equal counts is the constant count. */
  double same[25], one = pp.threshold_base - 0.7 * b;
  dprl_prefix_expectation ex2;
  for (int j = 0; j < 25; j++) same[j] = one;
  dprl_prefix_expect(&pp, &one, 1, 25, NULL, &ex, &err);
  dprl_prefix_expect(&pp, same, 25, 25, NULL, &ex2, &err);
  CHECK_REL(ex2.length, ex.length, 1e-10, "plan: a flat profile and a constant count agree");
  /* The longest profile, and a million steps of one count, far above the
  ** threshold, where the sum of the integrand nears the precision of
  ** doubles: the quadrature ends, and P(k >= 1) comes back from it. */
  double *prof = malloc(DPRL_PREFIX_PLAN_MAX_PROFILE * sizeof *prof);
  for (int j = 0; j < DPRL_PREFIX_PLAN_MAX_PROFILE; j++)
    prof[j] = pp.threshold_base + (20 - 0.03 * j) * b;
  int rc = dprl_prefix_expect(&pp, prof, DPRL_PREFIX_PLAN_MAX_PROFILE, DPRL_PREFIX_PLAN_MAX_PROFILE,
                              NULL, &ex, &err);
  CHECK(rc == DPRL_OK && fabs(ex.normalizer - 1) < 1e-9 && ex.length > 500 && ex.length < 1000,
        "plan: a profile of 1000 lengths");
  free(prof);
  one = pp.threshold_base + 30 * b;
  rc = dprl_prefix_expect(&pp, &one, 1, 1000000, NULL, &ex, &err);
  CHECK(rc == DPRL_OK && fabs(ex.normalizer - 1) < 1e-9 && ex.length > 1e5 && ex.length <= 1e6,
        "plan: 10^6 steps of one count");
  /* The release itself: its frequencies against the plan (5 s.e.). */
  double count = pp.threshold_base + 0.5 * b;
  dprl_rng rng;
  dprl_rng_init_seeded(&rng, 2207, 11);
  const int N = 100000, n = 8;
  long released = 0, steps = 0;
  double sq = 0;
  for (int r = 0; r < N; r++) {
    double thr;
    int top = 1, k = 0;
    dprl_prefix_threshold_noise(&rng, &pp, &thr, &err);
    while (top && k < n) {
      dprl_prefix_query(&rng, &pp, count, thr, &top, &err);
      k += top;
    }
    if (k) released++, steps += k, sq += (double)k * k;
  }
  dprl_prefix_expect(&pp, &count, 1, n, NULL, &ex, &err);
  double freq = (double)released / N, mk = (double)steps / released;
  double se_p = sqrt(ex.p_release * (1 - ex.p_release) / N);
  double se_k = sqrt((sq / released - mk * mk) / released);
  printf("# plan vs %d runs: P(release) %.4f (plan %.4f), mean length %.4f (plan %.4f)\n", N,
         freq, ex.p_release, mk, ex.length);
  CHECK_NEAR(freq, ex.p_release, 5 * se_p, "plan: the release's frequency of a prefix");
  CHECK_NEAR(mk, ex.length, 5 * se_k, "plan: the release's mean prefix length");
  /* dp_plan's text: issue 22's 240 clinicians at epsilon 1. */
  dprl_buf out = {0};
  dprl_plan_cost cost;
  const char *t240 = "{\"epsilon\": 1, \"delta\": 1e-6, \"p_min\": 0.02, \"T\": 100, \"L\": 25, "
                     "\"experts\": 240, \"agreement\": 0.9}";
  rc = dprl_prefix_plan(t240, strlen(t240), 0, NULL, &out, &cost, &err);
  CHECK(rc == DPRL_OK, "plan text: 240 experts planned");
  CHECK(plan_num(&out, "threshold") == pp.threshold_base,
        "plan text: the threshold is the calibration's");
  CHECK(plan_num(&out, "max_count") == 240, "plan text: the most a count can reach");
  CHECK_REL(plan_num(&out, "expected_releases"),
            100 * lap_diff_tail(pp.threshold_base - 216, b, b0), 1e-12,
            "plan text: expected releases = T P(Lap(b) - Lap(b0) > threshold - 0.9 x 240)");
  CHECK(!cost.useful && strstr(cost.why, "threshold 12,022 above the 240 experts"),
        "plan text: not useful, and why names the threshold and the experts");
  if (!cost.useful) printf("# why: %s\n", cost.why);
  CHECK(strcmp(cost.mechanism, "dp_prefix_stable") == 0 && strcmp(cost.unit, "expert") == 0 &&
            cost.epsilon == 1 && cost.delta == 1e-6 && !cost.gaussian && !cost.per_group,
        "plan text: charged (epsilon, delta) of unit expert, once");
  out.len = 0;
  const char *few = "{\"epsilon\": 1, \"delta\": 1e-6, \"p_min\": 0.02, \"T\": 100, \"L\": 25, "
                    "\"experts\": 13000, \"agreement\": 0.8}";
  rc = dprl_prefix_plan(few, strlen(few), 0, NULL, &out, &cost, &err);
  double er = plan_num(&out, "expected_releases");
  CHECK(rc == DPRL_OK && er > 0 && er < 1 && !cost.useful &&
            strstr(cost.why, "agreement 0.8 of the 13,000 experts (count 10,400 against "
                             "threshold 12,022)"),
        "plan text: fewer than 1 expected release is not useful, and why says so");
  out.len = 0;
  const char *many = "{\"epsilon\": 1, \"delta\": 1e-6, \"p_min\": 0.02, \"T\": 100, \"L\": 25, "
                     "\"experts\": 20000, \"agreement\": [0.9, 0.8, 0.7]}";
  rc = dprl_prefix_plan(many, strlen(many), 0, NULL, &out, &cost, &err);
  CHECK(rc == DPRL_OK && cost.useful && plan_num(&out, "steps") == 3 &&
            plan_num(&out, "expected_length") <= 3,
        "plan text: 20,000 experts answer; a profile of 3 lengths examines 3 steps");
  out.len = 0;
  const char *bad = "{\"epsilon\": 1, \"delta\": 1e-6, \"p_min\": 0.02, \"T\": 100, \"L\": 25, "
                    "\"experts\": 240, \"agreement\": [0.5, 0.6]}";
  rc = dprl_prefix_plan(bad, strlen(bad), 0, NULL, &out, &cost, &err);
  expect_prefix(rc, &err, "dp_plan: option agreement must not increase",
                "plan text: an increasing agreement is refused");
  dprl_buf_free(&out);
}

/* ---- 9. timing at the paper's scale ------------------------------------ */

static double heavy_policy(int64_t i, int64_t s, int64_t a, void *ctx) {
  double p_min = *(double *)ctx;
  double x = 0.002 * (double)((i * 13 + s * 7) % 89) / 88.0;
  int64_t star = (s * 7) % 4;
  return a == star ? 1 - 3 * p_min - x : p_min + x / 3;
}

static void time_release(const char *label, const dprl_policy_table *pt,
                         const dprl_trajectories *tr, double eps1,
                         double delta1, double p_min, int64_t T, int64_t L) {
  dprl_error err = {0};
  dprl_prefix_params pp;
  dprl_prefix_params_derive(eps1, delta1, p_min, pt->n_actions, T, L, DPRL_PREFIX_OPTIMAL, &pp, &err);
  dprl_rng rng;
  dprl_rng_init_seeded(&rng, 5, 0);
  dprl_prefix_release rel;
  double t0 = now_ms();
  int rc = dprl_prefix_release_run(pt, tr, &pp, &rng, &rel, &err);
  double t1 = now_ms();
  int64_t steps = 0;
  for (int64_t c = 0; rc == DPRL_OK && c < rel.n_runs; c++) steps += rel.k[c];
  printf("# timing %s: %.1f ms for release (validation included); %lld of "
         "%lld steps released; %s\n",
         label, t1 - t0, (long long)steps, (long long)(T * L),
         rc ? err.msg : "ok");
  CHECK(rc == DPRL_OK, "timing: release runs at paper scale");
  dprl_prefix_release_free(&rel);
}

static void test_timing(void) {
  /* 3000 experts x 20 trajectories each = 60000 trajectories of length 200,
  ** |A| = 4, 100 states, T = 100. */
  int64_t m = 3000, S = 100, A = 4, n = 60000, len = 200, T = 100, L = 200;
  double p_min = 1e-3;
  dprl_policy_table pt;
  double t0 = now_ms();
  build_policies(&pt, m, S, A, heavy_policy, &p_min);
  int64_t *offsets = malloc((size_t)(n + 1) * sizeof(int64_t));
  int64_t *states = malloc((size_t)(n * len) * sizeof(int64_t));
  int64_t *actions = malloc((size_t)(n * len) * sizeof(int64_t));
  for (int64_t j = 0; j <= n; j++) offsets[j] = j * len;
  for (int64_t p = 0; p < n * len; p++) {
    states[p] = xs_below(S);
    actions[p] = (states[p] * 7) % 4; /* the experts' favourite action */
  }
  dprl_trajectories tr = {n, offsets, states, actions};
  printf("# timing: data built in %.0f ms\n", now_ms() - t0);
  dprl_error err = {0};
  t0 = now_ms();
  dprl_policy_validate(&pt, p_min, &err);
  printf("# timing: policy validation alone %.1f ms\n", now_ms() - t0);
  /* Worst case: every prefix passes, so all T m L = 6e7 multiply-adds run
  ** (eps1 = 1000 puts the base near theta = 1/p_min = 1000, below the
  ** counts ~ 3000 * 0.997^200 ~ 1.6e3). */
  time_release("worst case (every step passes, T m L = 6e7)", &pt, &tr, 1000,
               1.0 / 3000, p_min, T, L);
  dprl_policy_free(&pt);
  /* The paper's parameters (p_min = 0.02, eps1 = 7.5, delta1 = 0.9/3000):
  ** theta-hat's base ~ 2819 while the count after one step is at most
  ** 3000 (1 - 3 p_min) = 2820, so almost nothing can be released. */
  p_min = 0.02;
  build_policies(&pt, m, S, A, heavy_policy, &p_min);
  time_release("paper parameters (p_min 0.02, eps1 7.5, delta1 3e-4)", &pt,
               &tr, 7.5, 0.9 / 3000, p_min, T, L);
  free(offsets);
  free(states);
  free(actions);
  dprl_policy_free(&pt);
}

/* ---- which trajectories are examined (examined.c, ALGORITHMS.md 7.1) -- */

/* The T runs of the two-pass read: the draws are those of
** dprl_prefix_release_run on the same seed (run over n trajectories), the
** chosen keys are exactly the distinct draws in order of first draw, and
** the stream is left where T calls of dprl_rng_below(n) leave it. */
static void test_examined_choose(void) {
  dprl_error err = {0};
  dprl_policy_table pt;
  int64_t m = 3, S = 4, A = 2, L = 5;
  build_policies(&pt, m, S, A, uniform_policy, &A);
  int64_t ns[] = {1, 2, 7, 40}, Ts[] = {1, 3, 40, 100};
  int draws_ok = 1, set_ok = 1, order_ok = 1, stream_ok = 1, drawn_ok = 1, bound_ok = 1;
  for (size_t a = 0; a < sizeof ns / sizeof ns[0]; a++) {
    int64_t n = ns[a];
    traj_buf tb = {0};
    for (int64_t j = 0; j < n; j++) {
      tb_begin(&tb);
      for (int64_t t = 0, len = xs_below(2 * L); t < len; t++)
        tb_step(&tb, xs_below(S), xs_below(A));
    }
    dprl_trajectories tr = tb_view(&tb);
    for (size_t b = 0; b < sizeof Ts / sizeof Ts[0]; b++) {
      int64_t T = Ts[b];
      for (uint64_t seed = 1; seed <= 5; seed++) {
        dprl_prefix_params pp;
        dprl_prefix_params_derive(50, 1e-3, 0.05, A, T, L, DPRL_PREFIX_OPTIMAL, &pp, &err);
        dprl_rng rng;
        dprl_prefix_release rel;
        dprl_rng_init_seeded(&rng, seed, DPRL_STREAM_PREFIX);
        if (dprl_prefix_release_run(&pt, &tr, &pp, &rng, &rel, &err)) {
          CHECK(0, "examined: the reference release runs");
          printf("#   error: %s\n", err.msg);
          continue;
        }
        int64_t run[100], K = -1;
        uint32_t chosen[100];
        dprl_rng_init_seeded(&rng, seed, DPRL_STREAM_PREFIX);
        int rc = dprl_examined_choose(&rng, n, T, run, chosen, &K, &err);
        /* the words T draws use, by hand */
        dprl_rng ref;
        dprl_rng_init_seeded(&ref, seed, DPRL_STREAM_PREFIX);
        for (int64_t c = 0; c < T; c++) dprl_rng_below(&ref, (uint64_t)n);
        if (dprl_rng_u64(&rng) != dprl_rng_u64(&ref)) stream_ok = 0;
        if (rc || K < 1 || K > T || K > n) {
          bound_ok = 0;
          dprl_prefix_release_free(&rel);
          continue;
        }
        int seen[40] = {0}, distinct = 0;
        for (int64_t c = 0; c < T; c++) {
          if (run[c] < 0 || run[c] >= K || chosen[run[c]] != (uint32_t)rel.traj[c]) draws_ok = 0;
          else if (!seen[rel.traj[c]]++) {
            /* a first draw: the next chosen key */
            if (run[c] != distinct) order_ok = 0;
            distinct++;
          }
        }
        if (distinct != K) set_ok = 0;
        for (int64_t i = 0; i < K; i++)
          if (!seen[chosen[i]]) set_ok = 0;
        /* the glue's form: only the chosen trajectories, in that order */
        traj_buf tb2 = {0};
        for (int64_t i = 0; i < K; i++) {
          tb_begin(&tb2);
          for (int64_t p = tr.offsets[chosen[i]]; p < tr.offsets[chosen[i] + 1]; p++)
            tb_step(&tb2, tr.states[p], tr.actions[p]);
        }
        dprl_trajectories tr2 = tb_view(&tb2);
        dprl_prefix_release again;
        if (dprl_prefix_release_drawn(&pt, &tr2, &pp, &rng, run, &again, &err)) drawn_ok = 0;
        else {
          for (int64_t c = 0; c < T; c++)
            if (again.k[c] != rel.k[c]) drawn_ok = 0;
          dprl_prefix_release_free(&again);
        }
        tb_free(&tb2);
        dprl_prefix_release_free(&rel);
      }
    }
    tb_free(&tb);
  }
  CHECK(bound_ok, "examined: 1 <= K <= min(T, n)");
  CHECK(draws_ok, "examined: run c's chosen key is dprl_prefix_release_run's draw for run c");
  CHECK(set_ok, "examined: the chosen keys are exactly the set of draws");
  CHECK(order_ok, "examined: chosen in order of first draw");
  CHECK(stream_ok, "examined: the draws use the words of T dprl_rng_below(n)");
  CHECK(drawn_ok, "examined: release_drawn over the chosen = release_run (same seed)");

  /* no trajectory: T runs of none, no randomness used */
  dprl_rng rng, ref;
  int64_t run[4] = {7, 7, 7, 7}, K = -1;
  uint32_t chosen[1];
  dprl_rng_init_seeded(&rng, 9, DPRL_STREAM_PREFIX);
  dprl_rng_init_seeded(&ref, 9, DPRL_STREAM_PREFIX);
  int rc = dprl_examined_choose(&rng, 0, 4, run, chosen, &K, &err);
  CHECK(rc == DPRL_OK && K == 0 && run[0] == -1 && run[1] == -1 && run[2] == -1 && run[3] == -1,
        "examined: n = 0 gives K = 0 and every run -1");
  CHECK(dprl_rng_u64(&rng) == dprl_rng_u64(&ref), "examined: n = 0 uses no randomness");
  dprl_policy_free(&pt);
}

/* Key order: SQLite's (integers by value, then BINARY text: bytes
** unsigned, a prefix first), whatever the order the keys were interned. */
static void test_examined_key_order(void) {
  static const char *texts[] = {"", "A", "Z", "a", "ab", "abc", "b", "\xc3\xa9"};
  static const int64_t ints[] = {INT64_MIN, -5, -1, 0, 3, 42, 1000, INT64_MAX};
  enum { NI = 8, NT = 8, N = NI + NT };
  dprl_key sorted[N]; /* the expected order, written out */
  for (int i = 0; i < NI; i++) sorted[i] = (dprl_key){0, ints[i], NULL, 0};
  for (int i = 0; i < NT; i++) sorted[NI + i] = (dprl_key){1, 0, texts[i], strlen(texts[i])};
  int ok = 1, perm_ok = 1;
  for (int round = 0; round < 20; round++) {
    int perm[N];
    for (int i = 0; i < N; i++) perm[i] = i;
    for (int i = N - 1; i > 0; i--) { /* interned in a shuffled order */
      int j = (int)xs_below(i + 1), t = perm[i];
      perm[i] = perm[j];
      perm[j] = t;
    }
    dprl_episode_index ids = {0};
    dprl_error err = {0};
    uint32_t got, order[N];
    for (int i = 0; i < N; i++) dprl_key_intern(&ids, &sorted[perm[i]], &got, &err);
    int rc = dprl_examined_key_order(&ids, order, NULL, &err);
    int hit[N] = {0};
    for (int i = 0; !rc && i < N; i++) {
      if (order[i] >= N || hit[order[i]]++) perm_ok = 0;
      else if (perm[order[i]] != i) ok = 0; /* id order[i] holds sorted[perm[order[i]]] */
    }
    if (rc || ids.n != N) ok = 0;
    dprl_key_index_free(&ids);
  }
  CHECK(perm_ok, "key order: a permutation of the ids");
  CHECK(ok, "key order: integers by value, then text bytewise, a prefix first");
}

/* Algorithm R replayed by hand on its own stream: the members after each
** key, and then the draw of the T runs. */
static void reservoir_replay(uint64_t seed, int64_t T, uint32_t n, uint32_t *res, size_t *res_n,
                             int64_t *run, int64_t *K) {
  dprl_rng rng;
  dprl_rng_init_seeded(&rng, seed, DPRL_STREAM_PREFIX);
  *res_n = 0;
  for (uint32_t i = 0; i < n; i++) {
    if ((int64_t)*res_n < T) res[(*res_n)++] = i;
    else {
      uint64_t j = dprl_rng_below(&rng, (uint64_t)i + 1);
      if (j < (uint64_t)T) res[j] = i;
    }
  }
  for (uint64_t i = *res_n; i > 1; i--) { /* Fisher-Yates from the top */
    uint64_t j = dprl_rng_below(&rng, i);
    uint32_t t = res[i - 1];
    res[i - 1] = res[j];
    res[j] = t;
  }
  int64_t d = 0;
  for (int64_t c = 0; c < T; c++) {
    if (!n) {
      run[c] = -1;
      continue;
    }
    uint64_t u = dprl_rng_below(&rng, n);
    run[c] = u < (uint64_t)d ? (int64_t)u : d++;
  }
  *K = d;
}

static void test_reservoir(void) {
  dprl_error err = {0};
  /* the replay, with repeated rows of earlier keys between new ones */
  int replay_ok = 1, member_ok = 1, examined_ok = 1;
  for (uint64_t seed = 1; seed <= 30; seed++) {
    int64_t T = 1 + (int64_t)(seed % 7);
    uint32_t n = (uint32_t)(seed % 13) * 3;
    dprl_reservoir r;
    dprl_rng rng;
    dprl_reservoir_init(&r, T);
    dprl_rng_init_seeded(&rng, seed, DPRL_STREAM_PREFIX);
    int in_now[40] = {0};
    for (uint32_t i = 0; i < n; i++) {
      int in;
      if (dprl_reservoir_see(&r, &rng, i, &in, &err)) replay_ok = 0;
      if (in) { /* the member it may have replaced is out */
        for (uint32_t k = 0; k < i; k++) {
          int was;
          dprl_reservoir_see(&r, &rng, k, &was, &err);
          in_now[k] = was;
        }
      }
      in_now[i] = in;
      uint32_t old = (uint32_t)xs_below(i + 1); /* a row of an earlier key */
      int again;
      dprl_reservoir_see(&r, &rng, old, &again, &err);
      if (again != in_now[old]) member_ok = 0;
    }
    int64_t run[8], K;
    dprl_reservoir_draw(&r, &rng, run, &K);
    uint32_t res[8];
    size_t res_n;
    int64_t run2[8], K2;
    reservoir_replay(seed, T, n, res, &res_n, run2, &K2);
    if (r.res_n != res_n || K != K2 || (res_n && memcmp(r.res, res, res_n * sizeof *res)))
      replay_ok = 0;
    for (int64_t c = 0; c < T; c++)
      if (run[c] != run2[c]) replay_ok = 0;
    if ((uint64_t)K > (uint64_t)(T < (int64_t)n ? T : (int64_t)n)) examined_ok = 0;
    for (int64_t c = 0; c < T; c++)
      if (n ? run[c] < 0 || run[c] >= K : run[c] != -1) examined_ok = 0;
    dprl_reservoir_free(&r);
  }
  CHECK(replay_ok, "reservoir: sample and draw = Algorithm R and the draw replayed by hand");
  CHECK(member_ok, "reservoir: a key seen again is a member iff it is in the sample");
  CHECK(examined_ok, "reservoir: K <= min(T, n), every run in 0..K-1 (or -1 with no key)");

  /* T >= n: every key kept, no randomness until the draw */
  {
    dprl_reservoir r;
    dprl_rng rng, ref;
    dprl_reservoir_init(&r, 10);
    dprl_rng_init_seeded(&rng, 4, DPRL_STREAM_PREFIX);
    dprl_rng_init_seeded(&ref, 4, DPRL_STREAM_PREFIX);
    int all = 1, in;
    for (uint32_t i = 0; i < 6; i++) all &= !dprl_reservoir_see(&r, &rng, i, &in, &err) && in;
    CHECK(all && r.res_n == 6, "reservoir: T >= n keeps every key");
    CHECK(dprl_rng_u64(&rng) == dprl_rng_u64(&ref), "reservoir: T >= n draws nothing");
    dprl_error e2 = {0};
    CHECK(dprl_reservoir_see(&r, &rng, 8, &in, &e2) == DPRL_EINVAL && strstr(e2.msg, "key 8"),
          "reservoir: a key numbered out of order is refused");
    dprl_reservoir_free(&r);
  }

  /* The law: min(T, n) keys uniformly without replacement, then each run
  ** uniform on the n keys, independently. 20000 trials; by Hoeffding each
  ** frequency is within 0.04 of its probability but with probability
  ** 2 exp(-2 * 20000 * 0.04^2) < 1e-27 (38 frequencies in all). */
  {
    enum { TRIALS = 20000, NK = 10, TT = 3 };
    static int kept[NK], first[NK], pair;
    for (uint64_t seed = 1; seed <= TRIALS; seed++) {
      dprl_reservoir r;
      dprl_rng rng;
      int in;
      int64_t run[TT], K;
      dprl_reservoir_init(&r, TT);
      dprl_rng_init_seeded(&rng, seed, DPRL_STREAM_PREFIX);
      for (uint32_t i = 0; i < NK; i++) dprl_reservoir_see(&r, &rng, i, &in, &err);
      for (size_t i = 0; i < r.res_n; i++) kept[r.res[i]]++;
      dprl_reservoir_draw(&r, &rng, run, &K);
      first[r.res[run[0]]]++;
      pair += r.res[run[1]] == r.res[run[2]];
      dprl_reservoir_free(&r);
    }
    int ok_kept = 1, ok_first = 1;
    for (int i = 0; i < NK; i++) {
      ok_kept &= fabs(kept[i] / (double)TRIALS - (double)TT / NK) <= 0.04;
      ok_first &= fabs(first[i] / (double)TRIALS - 1.0 / NK) <= 0.04;
    }
    CHECK(ok_kept, "reservoir: each key sampled with probability T/n (within 0.04)");
    CHECK(ok_first, "reservoir: a run's key uniform on the n keys (within 0.04)");
    CHECK(fabs(pair / (double)TRIALS - 1.0 / NK) <= 0.04,
          "reservoir: two runs draw the same key with probability 1/n (with replacement)");
  }
}

/* Deferred errors: kept while read, raised only for an examined key, the
** first in the order the rows were taken. */
static void test_reservoir_deferred(void) {
  int only_examined = 1, fired_when_due = 1, first_ok = 1, skip_ok = 1, any_fired = 0,
      any_quiet = 0;
  for (uint64_t seed = 1; seed <= 200; seed++) {
    enum { NK = 6 };
    int64_t T = 2;
    dprl_reservoir r;
    dprl_rng rng;
    dprl_error err = {0};
    dprl_reservoir_init(&r, T);
    dprl_rng_init_seeded(&rng, seed, DPRL_STREAM_PREFIX);
    uint64_t bad_row[NK] = {0}; /* 1 + the row of each key's deferred error */
    uint64_t rows = 0;
    for (uint32_t i = 0; i < NK; i++) {
      int in, read;
      dprl_reservoir_see(&r, &rng, i, &in, &err);
      for (int row = 0; in && row < 2; row++) { /* two rows a key, taken while a member */
        dprl_reservoir_take(&r, i, &read, &err);
        rows++;
        if (read != !bad_row[i]) skip_ok = 0;
        if (read && (i + seed) % 2 == 0) { /* even keys' (for odd seeds, odd keys') rows fail */
          dprl_fail(&err, DPRL_EINVAL, "row %llu of key %u fails", (unsigned long long)rows, i);
          if (dprl_reservoir_defer(&r, i, &err) || err.code || err.msg[0]) skip_ok = 0;
          bad_row[i] = rows;
        }
      }
    }
    int64_t run[2], K;
    dprl_reservoir_draw(&r, &rng, run, &K);
    int examined[NK] = {0};
    for (int64_t c = 0; c < T; c++) examined[r.res[run[c]]] = 1;
    uint64_t want_row = 0;
    uint32_t want_key = 0;
    for (uint32_t i = 0; i < NK; i++)
      if (examined[i] && bad_row[i] && (!want_row || bad_row[i] < want_row)) {
        want_row = bad_row[i];
        want_key = i;
      }
    dprl_error e2 = {0};
    int rc = dprl_reservoir_bad_examined(&r, &e2);
    char want[64];
    snprintf(want, sizeof want, "row %llu of key %u fails", (unsigned long long)want_row,
             want_key);
    if (rc && !want_row) only_examined = 0;
    if (!rc && want_row) fired_when_due = 0;
    if (rc && want_row && (rc != DPRL_EINVAL || strcmp(e2.msg, want) != 0)) first_ok = 0;
    any_fired |= rc != 0;
    any_quiet |= !rc && r.n_bad > 0; /* a deferred error left unraised */
    dprl_reservoir_free(&r);
  }
  CHECK(any_fired && any_quiet, "deferred: the seeds cover both outcomes");
  CHECK(only_examined, "deferred: no error unless an examined key failed a check");
  CHECK(fired_when_due, "deferred: an examined key's failed row raises its error");
  CHECK(first_ok, "deferred: the error raised is the first examined one, message as given");
  CHECK(skip_ok, "deferred: err cleared; a key's rows after its failure are skipped");

  dprl_reservoir r;
  dprl_error err = {0};
  int read = 7;
  dprl_reservoir_init(&r, 1);
  CHECK(dprl_reservoir_take(&r, 0, &read, &err) == DPRL_EINVAL && read == 0,
        "deferred: a row of a key never sampled is refused");
  dprl_reservoir_free(&r);
}

/* The examined trajectories into the core's arrays: chosen keys in their
** order, steps by t, other episodes skipped (a duplicate t there is not
** seen), a chosen key without rows empty. Expected arrays written from
** the rows directly. */
static void test_examined_flatten(void) {
  enum { NE = 12, LEN = 6 };
  int ok = 1, skip_ok = 1;
  for (int round = 0; round < 10; round++) {
    dprl_step_buffer buf = {0};
    dprl_error err = {0};
    /* episode e (key 10 e, or text for odd e): t = 0..LEN-1 with state 100 e + t,
    ** action e + t; rows pushed in a shuffled order; episode 3 has a
    ** duplicate t and is never chosen */
    int rows[NE * LEN + 1][2], nr = 0;
    char names[NE][8];
    for (int e = 0; e < NE; e++) {
      snprintf(names[e], sizeof names[e], "k%02d", e);
      for (int t = 0; t < LEN; t++) rows[nr][0] = e, rows[nr++][1] = t;
    }
    rows[nr][0] = 3, rows[nr++][1] = 2;
    for (int i = nr - 1; i > 0; i--) {
      int j = (int)xs_below(i + 1), a = rows[i][0], b = rows[i][1];
      rows[i][0] = rows[j][0], rows[i][1] = rows[j][1];
      rows[j][0] = a, rows[j][1] = b;
    }
    dprl_key keys[NE + 1];
    for (int e = 0; e < NE; e++)
      keys[e] = e % 2 ? (dprl_key){1, 0, names[e], 3} : (dprl_key){0, 10 * e, NULL, 0};
    keys[NE] = (dprl_key){0, -77, NULL, 0}; /* chosen, no rows */
    for (int i = 0; i < nr; i++) {
      int e = rows[i][0], t = rows[i][1];
      dprl_step_buffer_push(&buf, &keys[e], t, (uint32_t)(100 * e + t), (double)(e + t), &err);
    }
    buf.frees_as_read = round % 2;
    if (dprl_step_buffer_group(&buf, &err)) ok = 0;
    /* chosen: a few episodes (never 3) in a shuffled order, and -77 */
    int pick[NE + 1], K = 0;
    for (int e = 0; e < NE; e++)
      if (e != 3 && xs_below(3) > 0) pick[K++] = e;
    pick[K++] = NE;
    for (int i = K - 1; i > 0; i--) {
      int j = (int)xs_below(i + 1), a = pick[i];
      pick[i] = pick[j];
      pick[j] = a;
    }
    dprl_episode_index chosen = {0};
    uint32_t got;
    for (int c = 0; c < K; c++) dprl_key_intern(&chosen, &keys[pick[c]], &got, &err);
    int64_t *off = NULL, *st = NULL, *ac = NULL;
    int rc = dprl_examined_flatten(&buf, &chosen, K, &off, &st, &ac, &err);
    if (rc) {
      skip_ok = 0;
      printf("#   error: %s\n", err.msg);
    }
    int64_t at = 0;
    for (int c = 0; !rc && c < K; c++) {
      int e = pick[c], len = e == NE ? 0 : LEN;
      if (off[c] != at || off[c + 1] != at + len) ok = 0;
      for (int t = 0; t < len && off[c] == at; t++)
        if (st[at + t] != 100 * e + t || ac[at + t] != e + t) ok = 0;
      at += len;
    }
    dprl_free(off);
    dprl_free(st);
    dprl_free(ac);
    dprl_key_index_free(&chosen);
    dprl_step_buffer_free(&buf);
  }
  CHECK(skip_ok, "flatten: an episode not chosen is not read (its duplicate t unseen)");
  CHECK(ok, "flatten: chosen order, steps by t, state and action index, a key without rows empty");

  /* a chosen episode with a duplicate t is refused, the arrays left NULL */
  dprl_step_buffer buf = {0};
  dprl_error err = {0};
  dprl_key k = {0, 5, NULL, 0};
  dprl_step_buffer_push(&buf, &k, 1, 0, 0, &err);
  dprl_step_buffer_push(&buf, &k, 1, 0, 0, &err);
  dprl_step_buffer_group(&buf, &err);
  dprl_episode_index chosen = {0};
  uint32_t got;
  dprl_key_intern(&chosen, &k, &got, &err);
  int64_t *off = (int64_t *)&got, *st = off, *ac = off;
  int rc = dprl_examined_flatten(&buf, &chosen, 1, &off, &st, &ac, &err);
  CHECK(rc == DPRL_EINVAL && !off && !st && !ac, "flatten: a chosen duplicate t is refused");
  dprl_key_index_free(&chosen);
  dprl_step_buffer_free(&buf);
}

static void test_read_mode(void) {
  CHECK(dprl_prefix_reads_once(DPRL_PREFIX_READ_ONCE, 0) == 1 &&
            dprl_prefix_reads_once(DPRL_PREFIX_READ_ONCE, 1) == 1,
        "read: once reads once, seeded or not");
  CHECK(dprl_prefix_reads_once(DPRL_PREFIX_READ_TWICE, 0) == 0 &&
            dprl_prefix_reads_once(DPRL_PREFIX_READ_TWICE, 1) == 0,
        "read: twice reads twice, seeded or not");
  CHECK(dprl_prefix_reads_once(DPRL_PREFIX_READ_AUTO, 1) == 0,
        "read: auto, seeded: two passes (independent of the rows' order)");
  CHECK(dprl_prefix_reads_once(DPRL_PREFIX_READ_AUTO, 0) == -1,
        "read: auto, unseeded: the plan decides");
  CHECK(strcmp(dprl_prefix_read_names[DPRL_PREFIX_READ_AUTO], "auto") == 0 &&
            strcmp(dprl_prefix_read_names[DPRL_PREFIX_READ_ONCE], "once") == 0 &&
            strcmp(dprl_prefix_read_names[DPRL_PREFIX_READ_TWICE], "twice") == 0 &&
            dprl_prefix_read_names[3] == NULL,
        "read: the option's names in enum order");
}

int main(void) {
  test_params();
  test_composition();
  test_accountant();
  test_validation();
  test_trajectory_checks();
  test_counts_bruteforce();
  test_cliff();
  test_tiny_epsilon();
  test_T_and_prefixes();
  test_examined_choose();
  test_examined_key_order();
  test_reservoir();
  test_reservoir_deferred();
  test_examined_flatten();
  test_read_mode();
  test_noise_statistics();
  test_plan();
  test_timing();
  printf("# %d passed, %d failed\n", check_passed_count, check_failed_count);
  return CHECK_DONE();
}
