/*
** test_prefix_stable_plan.c: the noise as dp_prefix_stable uses it (the
** Laplace variances, PrefixQuery's acceptance against
** Lap(4/eps') - Lap(2/eps')), its plan's expectation (prefix_stable/plan.c,
** ALGORITHMS.md section 7.2) against brute integrals, and a release at
** the paper's scale, timed.
**
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
#include "util_prefix_stable.h"
#include "prefix_stable/prefix_stable.h"

/* ---- the noise as used ------------------------------------------------- */

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

/* ---- the plan's expectation (ALGORITHMS.md section 7.2) ---------------- */

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

/* ---- timing at the paper's scale --------------------------------------- */

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

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

int main(void) {
  test_noise_statistics();
  test_plan();
  test_timing();
  return CHECK_DONE();
}
