/*
** test_expert_policy.c: dp_expert_policy's core (expert/, ALGORITHMS.md §16).
**
** - The sensitivity against an exhaustive worst case: for small logs
**   (S = 2..3 states, A = 2..3 actions, every log of one expert up to five
**   steps in one or two episodes), the tallies in grid steps with and
**   without that expert, next to two fixed others, never differ by more
**   than Delta_g in l2, at coarse grids (where the rounding matters) and at
**   a fine one (where the bound is reached by a deterministic expert).
** - sigma against an independent computation: sigma1 of the analytic
**   Gaussian mechanism solved here by its own bisection on Balle & Wang's
**   delta(eps), then the grid, Delta_g, the steps and rho by hand.
** - The choice of an expert's states, duplicates, the post-processing, the
**   planned probability of the majority, and the noise of a release.
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "base/json.h"
#include "expert/expert_policy.h"

/* ---- sigma, independently --------------------------------------------- */

static double phi_cdf(double x) { return 0.5 * erfc(-x / sqrt(2.0)); }

/* delta(eps) of the Gaussian mechanism of sensitivity 1 and scale s. */
static double gauss_delta(double eps, double s) {
  return phi_cdf(0.5 / s - eps * s) - exp(eps) * phi_cdf(-0.5 / s - eps * s);
}

static double sigma1_bisect(double eps, double delta) {
  double lo = 1e-6, hi = 1e6;
  for (int i = 0; i < 300; i++) {
    double mid = sqrt(lo * hi);
    if (gauss_delta(eps, mid) <= delta) hi = mid;
    else lo = mid;
  }
  return hi;
}

static void test_calibrate(void) {
  static const struct {
    double eps, delta;
    int64_t k, A;
  } cases[] = {{1, 1e-6, 10, 2}, {0.1, 1e-5, 3, 5}, {5, 1e-3, 1, 2}, {1, 1e-6, 1000, 7}};
  for (int i = 0; i < 4; i++) {
    dprl_ep_noise nz;
    dprl_error err = {0};
    CHECK(dprl_ep_calibrate(cases[i].eps, cases[i].delta, cases[i].k, cases[i].A, &nz, &err) ==
              DPRL_OK, "calibrate");
    double s1 = sigma1_bisect(cases[i].eps, cases[i].delta);
    CHECK_REL(nz.sigma1, s1, 1e-9, "sigma1 = the analytic Gaussian (independent bisection)");
    /* the grid: the power of two 2^26 steps below sqrt(2k) sigma1 (within 2^-25..1) */
    double s0 = sqrt(2.0 * (double)cases[i].k) * s1;
    int b = 26 - (int)ceil(log2(s0));
    if (b > 25) b = 25;
    if (b < 0) b = 0;
    CHECK(nz.bits == b && nz.grid == ldexp(1, -b), "grid 2^-b, b = 26 - ceil(log2(sqrt(2k) sigma1))");
    double u = ldexp(1, b), v = u + sqrt((double)cases[i].A) / 2;
    double dg = sqrt((double)cases[i].k * (v * v + u * u));
    CHECK_REL(nz.sens_steps, dg, 1e-11, "Delta_g = sqrt(k ((2^b + sqrt(A)/2)^2 + 4^b))");
    CHECK(nz.sens_steps >= dg, "Delta_g is never rounded down");
    CHECK(nz.steps == (uint64_t)ceil(nz.sens_steps * nz.sigma1), "s = ceil(Delta_g sigma1)");
    CHECK(nz.sigma == (double)nz.steps * nz.grid, "sigma = s g");
    CHECK_REL(nz.sens, sqrt(2.0 * (double)cases[i].k), 1e-5,
              "the sensitivity is sqrt(2k) up to the rounding term");
    CHECK_REL(nz.rho, dg * dg / (2.0 * (double)nz.steps * (double)nz.steps), 1e-10,
              "rho = Delta_g^2 / (2 s^2)");
    CHECK(nz.rho <= 1 / (2 * s1 * s1) * (1 + 1e-9), "rho <= 1 / (2 sigma1^2)");
  }
  dprl_ep_noise nz;
  dprl_error err = {0};
  /* (options keep k A <= 2^26, where 2^40 steps are out of reach) */
  CHECK(dprl_ep_calibrate(1e-6, 1e-300, (int64_t)1 << 27, (int64_t)1 << 26, &nz, &err) ==
            DPRL_EINVAL && strstr(err.msg, "too small"),
        "a scale of more than 2^40 grid steps is refused");
  dprl_error_clear(&err);
  CHECK(dprl_ep_calibrate(1, 1, 10, 2, &nz, &err) == DPRL_EINVAL, "delta = 1 is refused");
}

/* ---- the exhaustive worst case ---------------------------------------- */

typedef struct tallies {
  int64_t votes[9], experts[3];
} tallies;

static int tally(const dprl_ep_row *rows, size_t n, int64_t S, int64_t A, int64_t k, int bits,
                 tallies *out) {
  dprl_ep_rows r = {0};
  dprl_ep_tally t;
  dprl_ep_dup dup;
  dprl_error err = {0};
  for (size_t i = 0; i < n; i++) dprl_ep_rows_push(&r, &rows[i], &err);
  int rc = dprl_ep_tally_rows(&r, S, A, k, bits, 0, &t, &dup, NULL, NULL, &err);
  if (!rc) {
    memcpy(out->votes, t.votes, (size_t)(S * A) * sizeof *t.votes);
    memcpy(out->experts, t.experts, (size_t)S * sizeof *t.experts);
  }
  dprl_ep_tally_free(&t);
  dprl_ep_rows_free(&r);
  return rc;
}

/* Two other experts, fixed: expert 0 and 1 over every state. */
static size_t base_log(dprl_ep_row *rows, int64_t S, int64_t A) {
  size_t n = 0;
  for (uint32_t e = 0; e < 2; e++)
    for (int64_t t = 0; t < 2 * S; t++)
      rows[n++] = (dprl_ep_row){e, e, t, (uint32_t)(t % S), (uint32_t)((t / S + e) % A)};
  return n;
}

/* Every log of expert 2 with up to max_len steps (symbol = state * A +
** action), in one episode or split after its first step into two. */
static void test_exhaustive(int64_t S, int64_t A, int max_len) {
  static const int bits_list[] = {0, 1, 2, 21};
  dprl_ep_row rows[64];
  size_t nb = base_log(rows, S, A);
  int64_t syms = S * A;
  for (int64_t k = 1; k <= S; k++)
    for (int bi = 0; bi < 4; bi++) {
      int bits = bits_list[bi];
      tallies without, with;
      tally(rows, nb, S, A, k, bits, &without);
      double bound = dprl_ep_sens_steps(k, A, bits), worst = 0;
      long logs = 0, over = 0;
      for (int len = 1; len <= max_len; len++) {
        long total = 1;
        for (int i = 0; i < len; i++) total *= syms;
        for (long code = 0; code < total; code++)
          for (int split = 0; split < (len > 1 ? 2 : 1); split++) {
            long c = code;
            for (int i = 0; i < len; i++, c /= syms) {
              uint32_t ep = split && i > 0 ? 101 : 100;
              rows[nb + i] = (dprl_ep_row){2, ep, i, (uint32_t)(c % syms / A),
                                           (uint32_t)(c % syms % A)};
            }
            tally(rows, nb + (size_t)len, S, A, k, bits, &with);
            double d2 = 0;
            for (int64_t j = 0; j < S * A; j++) {
              double d = (double)(with.votes[j] - without.votes[j]);
              d2 += d * d;
            }
            for (int64_t s = 0; s < S; s++) {
              double d = ldexp((double)(with.experts[s] - without.experts[s]), bits);
              d2 += d * d;
            }
            double norm = sqrt(d2);
            if (norm > worst) worst = norm;
            if (norm > bound) over++;
            logs++;
          }
      }
      char what[200];
      snprintf(what, sizeof what,
               "S=%lld A=%lld k=%lld b=%d: %ld logs of one expert move (V, C) by at most "
               "Delta_g (worst %.6g of %.6g)", (long long)S, (long long)A, (long long)k, bits,
               logs, worst, bound);
      CHECK(over == 0, what);
      if (bits == 21) {
        snprintf(what, sizeof what, "S=%lld A=%lld k=%lld: the bound is reached at a fine grid "
                 "(a deterministic expert at k states)", (long long)S, (long long)A, (long long)k);
        CHECK(worst >= bound * 0.9999 && worst <= bound, what);
      }
    }
}

/* ---- the choice of states, duplicates --------------------------------- */

static void test_max_states(void) {
  /* steps: state 2 five times, states 0 and 1 three times each */
  dprl_ep_row rows[11];
  int st[11] = {2, 2, 2, 2, 2, 0, 0, 0, 1, 1, 1};
  for (int i = 0; i < 11; i++) rows[i] = (dprl_ep_row){0, 0, i, (uint32_t)st[i], (uint32_t)(i % 2)};
  tallies t;
  tally(rows, 11, 3, 2, 2, 3, &t);
  CHECK(t.experts[2] == 1 && t.experts[0] == 1 && t.experts[1] == 0,
        "max_states 2: the two most visited states, a tie to the lower state");
  tally(rows, 11, 3, 2, 1, 3, &t);
  CHECK(t.experts[2] == 1 && t.experts[0] == 0 && t.experts[1] == 0,
        "max_states 1: the most visited state");
  tally(rows, 11, 3, 2, 3, 3, &t);
  CHECK(t.experts[0] == 1 && t.experts[1] == 1 && t.experts[2] == 1, "max_states 3: all");
  /* state 2: actions 0,1,0,1,0 -> 3/5, 2/5; at b = 3, round(24/5) = 5, round(16/5) = 3 */
  CHECK(t.votes[4] == 5 && t.votes[5] == 3, "votes: round(pi 2^b) per expert, in integers");
  /* state 0: actions 1,0,1 (i = 5..7) -> 1/3, 2/3: round(8/3) = 3, round(16/3) = 5 */
  CHECK(t.votes[0] == 3 && t.votes[1] == 5, "votes: halves round up, the rest to nearest");

  /* a duplicate (expert, episode, t) is found and named */
  dprl_ep_rows r = {0};
  dprl_ep_tally tl;
  dprl_ep_dup dup = {0};
  dprl_error err = {0};
  dprl_ep_row a = {3, 7, 4, 0, 0}, b = {3, 7, 4, 1, 1}, c = {3, 8, 4, 1, 1};
  dprl_ep_rows_push(&r, &a, &err);
  dprl_ep_rows_push(&r, &c, &err);
  dprl_ep_rows_push(&r, &b, &err);
  CHECK(dprl_ep_tally_rows(&r, 2, 2, 2, 3, 0, &tl, &dup, NULL, NULL, &err) == DPRL_EINVAL &&
            dup.expert == 3 && dup.episode == 7 && dup.t == 4,
        "a duplicate (expert, episode, t) is refused and located");
  dprl_ep_rows_free(&r);
  /* no rows: zero tallies (a release over no experts) */
  CHECK(dprl_ep_tally_rows(&r, 2, 2, 2, 3, 1, &tl, &dup, NULL, NULL, &err) == DPRL_OK &&
            tl.n_experts == 0 && tl.votes[3] == 0 && tl.experts[1] == 0 && tl.exact[0] == 0,
        "no rows: every tally is 0");
  dprl_ep_tally_free(&tl);
}

/* ---- post-processing --------------------------------------------------- */

static void test_post(void) {
  dprl_ep_config c;
  memset(&c, 0, sizeof c);
  c.n_states = 4;
  c.n_actions = 3;
  c.default_action = 2;
  c.min_count = 5;
  c.nz.sigma = 2;
  double votes[12] = {1, 4, 4, /* a tie: the lower action */
                      -1, -2, -3, /* all <= 0: uniform */
                      9, 0, 0, /* defaulted (count below 5) */
                      2, -1, 6};
  double counts[4] = {8, 6, 4.9, 10}, dist[12], se[4];
  int64_t pol[4];
  unsigned char def[4];
  dprl_ep_release r = {votes, counts, dist, se, pol, def};
  dprl_error err = {0};
  CHECK(dprl_ep_post(&c, &r, NULL, &err) == DPRL_OK, "post");
  CHECK(pol[0] == 1 && pol[1] == 0 && pol[2] == 2 && pol[3] == 2,
        "policy: argmax, ties to the lowest, the default below min_count");
  CHECK(!def[0] && !def[1] && def[2] && !def[3], "defaulted: the noisy count below min_count");
  CHECK(dist[0] == 1.0 / 9 && dist[1] == 4.0 / 9 && dist[2] == 4.0 / 9, "distribution: max(V, 0) normalised");
  CHECK(dist[3] == 1.0 / 3 && dist[5] == 1.0 / 3, "distribution: uniform when every vote is <= 0");
  CHECK(dist[6] == 0 && dist[7] == 0 && dist[8] == 1, "distribution: the default when defaulted");
  CHECK(dist[9] == 0.25 && dist[10] == 0 && dist[11] == 0.75, "distribution: negatives count 0");
  CHECK(se[0] == 0.25 && isnan(se[2]) && se[3] == 0.2, "stderr: sigma / count, NaN when defaulted");
}

/* ---- the planned probability of the majority --------------------------- */

static double gauss(unsigned *st) { /* Box-Muller on a test-only LCG */
  double u1, u2;
  *st = *st * 1103515245u + 12345u;
  u1 = ((*st >> 8) + 0.5) / 16777216.0;
  *st = *st * 1103515245u + 12345u;
  u2 = ((*st >> 8) + 0.5) / 16777216.0;
  return sqrt(-2 * log(u1)) * cos(2 * M_PI * u2);
}

static void test_p_majority(void) {
  CHECK_NEAR(dprl_ep_p_majority(100, 0.8, 2, 20), phi_cdf(0.6 * 100 / (20 * sqrt(2.0))), 1e-15,
             "A = 2: Phi((2q - 1) n / (sigma sqrt 2))");
  CHECK_NEAR(dprl_ep_p_majority(50, 1.0 / 3, 3, 10), 1.0 / 3, 1e-9,
             "A = 3, q = 1/3: every action ties, 1/3");
  CHECK_NEAR(dprl_ep_p_majority(50, 0.25, 4, 10), 0.25, 1e-9, "A = 4, q = 1/4: 1/4");
  CHECK_NEAR(dprl_ep_p_majority(1e9, 0.5, 3, 1), 0.5, 1e-9,
             "A = 3, q = 1/2: the worst case ties one action, 1/2 with no noise left");
  /* Monte Carlo at the worst sharing for A = 3, q = 0.6: (0.4, 0) */
  unsigned st = 12345;
  long win = 0, N = 400000;
  for (long i = 0; i < N; i++) {
    double v0 = 0.6 * 40 + 10 * gauss(&st), v1 = 0.4 * 40 + 10 * gauss(&st), v2 = 10 * gauss(&st);
    win += v0 > v1 && v0 > v2;
  }
  double p = dprl_ep_p_majority(40, 0.6, 3, 10), mc = (double)win / N;
  CHECK_NEAR(p, mc, 5 * sqrt(mc * (1 - mc) / N), "A = 3: the integral against Monte Carlo");
  CHECK(dprl_ep_p_majority(40, 0.6, 3, 10) <= dprl_ep_p_majority(40, 0.6, 2, 10) + 1e-12,
        "A = 3's worst case is no better than A = 2 at the same q");
}

/* ---- the release's noise ------------------------------------------------ */

static void test_release_noise(void) {
  dprl_ep_config c;
  dprl_error err = {0};
  const char *opt = "{\"n_states\": 20000, \"n_actions\": 1, \"epsilon\": 1, \"delta\": 1e-6, "
                    "\"default_action\": 0, \"seed\": 3, \"max_states\": 1}";
  CHECK(dprl_ep_config_parse(&c, "dp_expert_policy", opt, strlen(opt), 0, 0, NULL, &err) ==
            DPRL_OK, "parse");
  CHECK(c.nz.k == 1 && c.min_count == 3 * c.nz.sigma, "max_states 1; min_count = 3 sigma");
  dprl_ep_rows rows = {0};
  dprl_ep_tally t;
  dprl_ep_dup dup;
  CHECK(dprl_ep_tally_rows(&rows, c.n_states, 1, 1, c.nz.bits, 0, &t, &dup, NULL, NULL, &err) == 0,
        "tally of no rows");
  dprl_buf out = {0};
  CHECK(dprl_ep_release_json(&c, &t, &out, NULL, &err) == DPRL_OK, "release");
  dprl_json *j = dprl_json_parse(out.data, out.len, &err);
  const dprl_json *counts = j ? dprl_json_get(j, "counts") : NULL;
  double m = 0, v = 0;
  size_t n = counts ? counts->n : 0;
  for (size_t i = 0; i < n; i++) m += counts->items[i]->num;
  m /= (double)(n ? n : 1);
  for (size_t i = 0; i < n; i++) v += (counts->items[i]->num - m) * (counts->items[i]->num - m);
  double sd = sqrt(v / (double)(n > 1 ? n - 1 : 1));
  CHECK(n == 20000, "a count per state");
  CHECK(fabs(m) < 5 * c.nz.sigma / sqrt((double)n), "counts of no experts: mean 0");
  CHECK(fabs(sd / c.nz.sigma - 1) < 5 / sqrt(2.0 * (double)n), "counts: sd sigma");
  dprl_json_free(j);
  dprl_buf_free(&out);
  dprl_ep_tally_free(&t);
}

/* ---- dp_plan ------------------------------------------------------------- */

static dprl_json *plan(const char *text, dprl_plan_cost *cost, dprl_error *err) {
  dprl_buf out = {0};
  memset(cost, 0, sizeof *cost);
  int rc = dprl_expert_plan(text, strlen(text), 0, NULL, &out, cost, err);
  dprl_json *j = rc ? NULL : dprl_json_parse(out.data, out.len, err);
  dprl_buf_free(&out);
  return j;
}

static double num(const dprl_json *j, const char *k) {
  const dprl_json *v = dprl_json_get(j, k);
  return v && v->type == DPRL_JSON_NUMBER ? v->num : NAN;
}

static void test_plan(void) {
  dprl_plan_cost cost;
  dprl_error err = {0};
  const char *rel = "{\"n_states\": 10, \"n_actions\": 2, \"epsilon\": 1, \"delta\": 1e-6, "
                    "\"default_action\": 0}";
  dprl_ep_config c;
  dprl_ep_config_parse(&c, "dp_expert_policy", rel, strlen(rel), 0, 0, NULL, &err);
  dprl_json *j = plan("{\"n_states\": 10, \"n_actions\": 2, \"epsilon\": 1, \"delta\": 1e-6, "
                      "\"experts\": 200, \"agreement\": 0.8, \"coverage\": 0.5}", &cost, &err);
  CHECK(j != NULL, "plan");
  if (!j) return;
  double sigma = num(j, "sigma"), n = 100;
  CHECK(sigma == c.nz.sigma && num(j, "sensitivity") == c.nz.sens &&
            num(j, "min_count") == 3 * sigma, "the plan's sigma, sensitivity and min_count are the release's");
  CHECK(num(j, "experts_per_state") == n, "experts per state = experts x coverage");
  CHECK_NEAR(num(j, "p_majority"), phi_cdf(0.6 * n / (sigma * sqrt(2.0))), 1e-15, "p_majority, A = 2");
  CHECK_NEAR(num(j, "p_counted"), phi_cdf((n - 3 * sigma) / sigma), 1e-15, "p_counted");
  CHECK_NEAR(num(j, "p_policy"), num(j, "p_majority") * num(j, "p_counted"), 1e-15, "p_policy");
  CHECK_NEAR(num(j, "stderr"), sigma / n, 1e-15, "stderr = sigma / n");
  CHECK(cost.gaussian && !cost.per_group && strcmp(cost.unit, "expert") == 0 &&
            strcmp(cost.mechanism, "dp_expert_policy") == 0 && cost.rho == c.nz.rho &&
            cost.epsilon == 1 && cost.delta == 1e-6 && cost.useful,
        "cost: Gaussian at expert level, rho of the release, one charge, useful");
  dprl_json_free(j);
  j = plan("{\"n_states\": 10, \"n_actions\": 2, \"epsilon\": 1, \"delta\": 1e-6, "
           "\"experts\": 30, \"agreement\": 0.8}", &cost, &err);
  CHECK(j && !cost.useful && strstr(cost.why, "probability"), "30 experts at eps 1: not useful, and why");
  dprl_json_free(j);
  j = plan("{\"n_states\": 10, \"n_actions\": 3, \"epsilon\": 1, \"delta\": 1e-6, "
           "\"experts\": 300, \"agreement\": 0.2}", &cost, &err);
  CHECK(!j && strstr(err.msg, "agreement must be at least 1/n_actions"), "agreement below 1/A");
  dprl_error_clear(&err);
  j = plan("{\"n_states\": 10, \"n_actions\": 2, \"epsilon\": 1, \"delta\": 1e-6, "
           "\"agreement\": 0.8}", &cost, &err);
  CHECK(!j && strstr(err.msg, "option experts is required"), "experts is required");
  dprl_error_clear(&err);
  j = plan("{\"n_states\": 10, \"n_actions\": 2, \"epsilon\": 1, \"delta\": 1e-6, "
           "\"experts\": 9, \"agreement\": 0.8, \"seed\": 1}", &cost, &err);
  CHECK(!j && strstr(err.msg, "unknown option"), "seed is not a plan's option");
  dprl_ep_config_free(&c);
}

int main(void) {
  test_calibrate();
  test_exhaustive(2, 2, 5);
  test_exhaustive(3, 2, 4);
  test_exhaustive(2, 3, 4);
  test_max_states();
  test_post();
  test_p_majority();
  test_release_noise();
  test_plan();
  return CHECK_DONE();
}
