/*
** test_ope_is_value.c: dp_is_value's core (ext/ope/): the sensitivity of the
** released vector against an exhaustive worst case over small logs (add,
** remove and replace one episode), the noise scale against an independent
** computation, the estimators, the seeded release, the bias bound and the
** plan.
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "ope/ope.h"

static int parse(dprl_ope_config *c, const char *opts, dprl_error *err) {
  memset(err, 0, sizeof *err);
  return dprl_ope_config_parse(c, "dp_is_value", opts, strlen(opts), 0, NULL, err);
}

/* ---- an independent analytic Gaussian (Balle & Wang 2018, Theorem 8) ---- */
static double phi(double x) { return 0.5 * erfc(-x / sqrt(2.0)); }
static double bw_delta(double eps, double sigma) { /* sensitivity 1 */
  return phi(1 / (2 * sigma) - eps * sigma) - exp(eps) * phi(-1 / (2 * sigma) - eps * sigma);
}
static double bw_sigma(double eps, double delta) {
  double lo = 1e-6, hi = 1e6;
  for (int i = 0; i < 300; i++) {
    double mid = sqrt(lo * hi);
    if (bw_delta(eps, mid) <= delta) hi = mid;
    else lo = mid;
  }
  return hi;
}

static void test_calibration(void) {
  dprl_ope_config c;
  dprl_ope_noise nz;
  dprl_error err;
  const double eps[] = {0.1, 1, 4}, del[] = {1e-5, 1e-6, 1e-3};
  for (int i = 0; i < 3; i++) {
    char o[300];
    snprintf(o, sizeof o,
             "{\"gamma\": 0.9, \"rmin\": -1, \"rmax\": 2, \"horizon\": 4, \"weight_max\": 7,"
             " \"epsilon\": %g, \"delta\": %g}", eps[i], del[i]);
    CHECK(parse(&c, o, &err) == 0 && dprl_ope_calibrate(&c, &nz, &err) == 0, "calibrates");
    /* default range: rmin (1 + 0.9 + 0.81 + 0.729) .. rmax times the same */
    double sh = 1 + 0.9 + 0.81 + 0.729;
    CHECK_NEAR(c.gmin, -sh, 1e-12, "gmin = rmin sum gamma^k");
    CHECK_NEAR(c.gmax, 2 * sh, 1e-12, "gmax = rmax sum gamma^k");
    double B = 3 * sh, W = 7;
    CHECK_NEAR(nz.sens, W * B, 1e-12, "sensitivity W B");
    double s1 = bw_sigma(eps[i], del[i]);
    CHECK_REL(nz.sigma1, s1, 1e-9, "sigma1 = the analytic Gaussian (independent bisection)");
    double steps = ceil((W * B / nz.grid + sqrt(3.0)) * nz.sigma1);
    CHECK(nz.steps == (uint64_t)steps, "s = ceil((W B / g + sqrt 3) sigma1)");
    CHECK(nz.sigma == steps * nz.grid && nz.sigma >= W * B * s1,
          "sigma = s g, never below W B sigma1");
    CHECK(nz.sigma <= W * B * nz.sigma1 + (sqrt(3.0) * nz.sigma1 + 1) * nz.grid,
          "the grid costs at most (sqrt 3 sigma1 + 1) g, 2^-19 sqrt 3 of sigma");
    double r = nz.sens_steps / (double)nz.steps;
    CHECK_REL(nz.rho, r * r / 2, 1e-12, "rho = sens^2 / (2 s^2) in grid steps");
    CHECK(nz.rho <= 1 / (2 * nz.sigma1 * nz.sigma1), "rho <= 1/(2 sigma1^2)");
    double g = nz.grid;
    int e;
    CHECK(frexp(g, &e) == 0.5 && W * B * nz.sigma1 / g <= 0x1p20 &&
              W * B * nz.sigma1 / g > 0x1p19,
          "the grid is the power of two 2^20 below the scale");
    dprl_ope_config_free(&c);
  }
  /* gmin, gmax given */
  CHECK(parse(&c, "{\"gamma\": 1, \"rmin\": -1, \"rmax\": 1, \"gmin\": -1, \"gmax\": 1,"
                  " \"horizon\": 30, \"weight_max\": 10, \"epsilon\": 1, \"delta\": 1e-5}",
              &err) == 0 && dprl_ope_calibrate(&c, &nz, &err) == 0,
        "gmin, gmax given");
  CHECK(nz.sens == 20 && nz.c == 0 && nz.B == 2, "their range: B = 2, c = 0, sens = W B = 20");
  dprl_ope_config_free(&c);
  /* no negative rewards: the shortest episode bounds the return below */
  CHECK(parse(&c, "{\"gamma\": 1, \"rmin\": 0.5, \"rmax\": 1, \"horizon\": 3, \"weight_max\": 1,"
                  " \"epsilon\": 1, \"delta\": 1e-5}", &err) == 0,
        "rmin > 0");
  CHECK(c.gmin == 0.5 && c.gmax == 3, "[gmin, gmax] = [rmin, 3 rmax]");
  dprl_ope_config_free(&c);
}

/* ---- the exhaustive worst case ----------------------------------------- */

/* Step types: reward x (target, behavior); episodes of 1..3 steps. */
static const double rewards[] = {-2, 1, 3};
static const double probs[][2] = {{1, 0.25}, {0.5, 1}, {0, 0.5}};
#define N_STEP 9
#define N_EP (N_STEP + N_STEP * N_STEP + N_STEP * N_STEP * N_STEP)

static int episode_steps(int type, int steps[3]) {
  if (type < N_STEP) {
    steps[0] = type;
    return 1;
  }
  type -= N_STEP;
  if (type < N_STEP * N_STEP) {
    steps[0] = type / N_STEP;
    steps[1] = type % N_STEP;
    return 2;
  }
  type -= N_STEP * N_STEP;
  steps[0] = type / (N_STEP * N_STEP);
  steps[1] = type / N_STEP % N_STEP;
  steps[2] = type % N_STEP;
  return 3;
}

/* v of a log of episodes (types; -1 = none), pushed as rows in reverse
** order of t so that the sort is exercised. */
static int log_vector(const dprl_ope_config *c, const dprl_ope_noise *nz, const int *types,
                      int n, double v[3]) {
  dprl_ope_rows rows;
  dprl_ope_sums sums;
  dprl_error err = {0};
  memset(&rows, 0, sizeof rows);
  for (int i = 0; i < n; i++) {
    int st[3];
    if (types[i] < 0) continue;
    int k = episode_steps(types[i], st);
    dprl_key key = {0, 100 + i, NULL, 0};
    for (int j = k - 1; j >= 0; j--)
      if (dprl_ope_rows_push(&rows, &key, 10 * j, rewards[st[j] / 3], probs[st[j] % 3][1],
                             probs[st[j] % 3][0], &err))
        return -1;
  }
  int rc = dprl_ope_rows_collect(&rows, c, NULL, &err);
  if (!rc) dprl_ope_rows_sum(&rows, c, nz, &sums);
  dprl_ope_rows_free(&rows);
  if (rc) return -1;
  dprl_ope_vector(nz, &sums, v);
  return 0;
}

static double dist(const double a[3], const double b[3]) {
  return sqrt((a[0] - b[0]) * (a[0] - b[0]) + (a[1] - b[1]) * (a[1] - b[1]) +
              (a[2] - b[2]) * (a[2] - b[2]));
}

static void test_sensitivity(void) {
  dprl_ope_config c;
  dprl_ope_noise nz;
  dprl_error err;
  /* horizon 2: a third step never counts; W = 3 clips 1/0.25^2 = 16 and 4 */
  CHECK(parse(&c, "{\"gamma\": 0.9, \"rmin\": -1, \"rmax\": 2, \"horizon\": 2, \"weight_max\": 3,"
                  " \"epsilon\": 1, \"delta\": 1e-5}", &err) == 0 &&
            dprl_ope_calibrate(&c, &nz, &err) == 0,
        "the small logs' options");
  static double v1[N_EP][3];
  double empty[3], base[3], worst_ar = 0, worst_rep = 0, worst_ar2 = 0, worst_rep2 = 0;
  int fixed = 5; /* one more episode in every log of the second round */
  int ok = log_vector(&c, &nz, NULL, 0, empty) == 0 && log_vector(&c, &nz, &fixed, 1, base) == 0;
  for (int a = 0; a < N_EP && ok; a++) {
    int one = a, two[2] = {fixed, a};
    double vb[3];
    ok = log_vector(&c, &nz, &one, 1, v1[a]) == 0 && log_vector(&c, &nz, two, 2, vb) == 0;
    worst_ar = fmax(worst_ar, dist(v1[a], empty)); /* {} vs {a} */
    worst_ar2 = fmax(worst_ar2, dist(vb, base));   /* {f} vs {f, a} */
  }
  CHECK(ok, "every small log summed");
  /* replace: {a} vs {b}, and {f, a} vs {f, b} (sums: the same differences) */
  for (int a = 0; a < N_EP && ok; a++)
    for (int b = 0; b < N_EP; b++) worst_rep = fmax(worst_rep, dist(v1[a], v1[b]));
  for (int a = 0; a < N_EP && ok; a += 37)
    for (int b = 0; b < N_EP; b += 11) {
      int x[2] = {fixed, a}, y[2] = {fixed, b};
      double vx[3], vy[3];
      ok = log_vector(&c, &nz, x, 2, vx) == 0 && log_vector(&c, &nz, y, 2, vy) == 0;
      worst_rep2 = fmax(worst_rep2, dist(vx, vy));
    }
  double claim = nz.sens; /* W B */
  CHECK(worst_ar <= claim * (1 + 1e-12) && worst_ar2 <= claim * (1 + 1e-12),
        "add/remove one episode: at most W B over every small log");
  CHECK(worst_rep <= claim * (1 + 1e-12) && worst_rep2 <= claim * (1 + 1e-12),
        "replace one episode: at most W B over every small log");
  CHECK_REL(worst_ar, claim, 1e-12, "add/remove: W B is attained (w = W, G = gmax)");
  CHECK_REL(worst_rep, claim, 1e-12, "replace: W B is attained (w = W, G = gmax vs gmin)");
  printf("# worst add/remove %.17g, replace %.17g, claimed %.17g\n", worst_ar, worst_rep, claim);
  /* the third step is ignored (horizon 2): same vector with or without it */
  int two_steps = N_STEP + 0, three_steps = N_STEP + N_STEP * N_STEP + 0;
  double a2[3], a3[3];
  CHECK(log_vector(&c, &nz, &two_steps, 1, a2) == 0 &&
            log_vector(&c, &nz, &three_steps, 1, a3) == 0 && dist(a2, a3) == 0,
        "only the first horizon steps count");
  /* an episode with one step the target never takes weighs 0 */
  int zero = 2; /* reward -2, (target 0, behavior 0.5) */
  double vz[3];
  CHECK(log_vector(&c, &nz, &zero, 1, vz) == 0 && vz[0] == 0 && vz[1] == 0 && vz[2] == nz.kn,
        "target_prob 0: weight 0, the episode still counted");
  dprl_ope_config_free(&c);
}

/* ---- estimators, release, bias bound, plan --------------------------------- */

static void test_estimators(void) {
  dprl_ope_config c;
  dprl_ope_noise nz;
  dprl_error err;
  CHECK(parse(&c, "{\"gamma\": 1, \"rmin\": 0, \"rmax\": 1, \"gmin\": 0, \"gmax\": 1,"
                  " \"horizon\": 5, \"weight_max\": 10, \"epsilon\": 1, \"delta\": 1e-5}",
              &err) == 0 && dprl_ope_calibrate(&c, &nz, &err) == 0,
        "estimator options");
  /* episodes (w, G): (4, 1), (0, 0), (1, 0), (2, 0.5) */
  dprl_ope_sums s;
  memset(&s, 0, sizeof s);
  const double w[] = {4, 0, 1, 2}, g[] = {1, 0, 0, 0.5};
  for (int i = 0; i < 4; i++) dprl_ope_sums_add(&c, &nz, &s, w[i], g[i], 0);
  double v[3];
  dprl_ope_estimate e;
  dprl_ope_vector(&nz, &s, v);
  dprl_ope_estimate_from(&c, &nz, v, 0, &e);
  CHECK_NEAR(e.weighted, (4 + 1.0) / 7, 1e-15, "weighted IS = sum wG / sum w");
  CHECK_NEAR(e.ordinary, 1, 1e-15, "ordinary IS = sum wG / n = 5/4, clamped to gmax = 1");
  dprl_ope_sums s2 = s;
  dprl_ope_sums_add(&c, &nz, &s2, 0, 1, 0);
  dprl_ope_vector(&nz, &s2, v);
  dprl_ope_estimate_from(&c, &nz, v, 0, &e);
  CHECK_NEAR(e.ordinary, 1, 1e-15, "one more episode of weight 0: 5/5");
  dprl_ope_sums_add(&c, &nz, &s2, 0, 1, 0);
  dprl_ope_vector(&nz, &s2, v);
  dprl_ope_estimate_from(&c, &nz, v, 0, &e);
  CHECK_NEAR(e.ordinary, 5.0 / 6, 1e-15, "and another: 5/6");
  CHECK_NEAR(e.weighted, 5.0 / 7, 1e-15, "the weighted estimate does not move");
  dprl_ope_vector(&nz, &s, v);
  double v0[3] = {5, -1, 3};
  dprl_ope_estimate_from(&c, &nz, v0, 1, &e);
  CHECK(e.weighted == nz.c && isnan(e.se_weighted), "a weight sum <= 0: the centre, no stderr");
  double v1[3] = {5, 1, 0.5 * nz.kn};
  dprl_ope_estimate_from(&c, &nz, v1, 1, &e);
  CHECK(e.ordinary == nz.c && isnan(e.se_ordinary), "fewer than one episode: the centre");
  /* seeded releases: reproducible, and the noise has the scale sigma */
  dprl_rng rng;
  dprl_buf b1 = {0}, b2 = {0};
  dprl_rng_init_seeded(&rng, 42, DPRL_STREAM_OPE);
  CHECK(dprl_ope_release(&c, &nz, &s, &rng, &b1, &err) == 0, "release");
  dprl_rng_init_seeded(&rng, 42, DPRL_STREAM_OPE);
  CHECK(dprl_ope_release(&c, &nz, &s, &rng, &b2, &err) == 0 && b1.len == b2.len &&
            memcmp(b1.data, b2.data, b1.len) == 0,
        "the same seed gives the same release");
  dprl_buf_free(&b1);
  dprl_buf_free(&b2);
  /* the noise of each entry: mean 0, sd sigma (4000 draws: 5 standard errors) */
  double sum[3] = {0}, sq[3] = {0};
  int n = 4000;
  dprl_rng_init_seeded(&rng, 7, DPRL_STREAM_OPE);
  for (int i = 0; i < n; i++)
    for (int k = 0; k < 3; k++) {
      double out, x = round(v[k] / nz.grid) * nz.grid;
      dprl_release_gaussian_steps(&rng, v[k], nz.steps, nz.grid, &out, &err);
      sum[k] += out - x;
      sq[k] += (out - x) * (out - x);
    }
  for (int k = 0; k < 3; k++) {
    double sd = sqrt(sq[k] / n);
    CHECK(fabs(sum[k] / n) < 5 * nz.sigma / sqrt(n) && fabs(sd / nz.sigma - 1) < 5 / sqrt(2.0 * n),
          "each entry's noise has mean 0 and sd sigma");
  }
  dprl_rng_wipe(&rng);
  /* bias bound */
  CHECK(isnan(dprl_ope_bias_bound(&c, &nz)), "no ratio_max: no bias bound");
  c.ratio_max = 1.5; /* 1.5^5 = 7.6 <= W = 10: nothing is clipped */
  CHECK(dprl_ope_bias_bound(&c, &nz) == 0, "ratio_max^H <= W: no clipping, bias bound 0");
  c.ratio_max = 2; /* 32 / 40 = 0.8: alpha >= 1/2, the range */
  CHECK_NEAR(dprl_ope_bias_bound(&c, &nz), 1, 1e-15, "weighted: alpha >= 1/2 gives B");
  c.weighted = 0;
  CHECK_NEAR(dprl_ope_bias_bound(&c, &nz), 0.8, 1e-12, "ordinary: M ratio_max^H / (4W)");
  c.weighted = 1;
  c.weight_max = 30; /* alpha = 32/120 */
  CHECK_NEAR(dprl_ope_bias_bound(&c, &nz), (32.0 / 120) / (1 - 32.0 / 120), 1e-12,
             "weighted: B alpha / (1 - alpha)");
  dprl_ope_config_free(&c);
}

static void test_errors(void) {
  dprl_ope_config c;
  dprl_error err;
  const char *base = "\"gamma\": 1, \"rmin\": 0, \"rmax\": 1, \"horizon\": 5, \"epsilon\": 1,"
                     " \"delta\": 1e-5";
  char o[400];
  snprintf(o, sizeof o, "{%s}", base);
  CHECK(parse(&c, o, &err) == 0 && c.weight_auto && c.weight_max == 1024 && c.gq.n == 41,
        "without weight_max, W is automatic: calibrated at the grid's top 2^10, 41 edges");
  dprl_ope_config_free(&c);
  snprintf(o, sizeof o, "{%s, \"weight_max\": 0.5}", base);
  CHECK(parse(&c, o, &err) == DPRL_EINVAL && strstr(err.msg, "weight_max must be in [1,"),
        "weight_max < 1 refused");
  snprintf(o, sizeof o, "{%s, \"weight_max\": 5, \"gmin\": 1, \"gmax\": 1}", base);
  CHECK(parse(&c, o, &err) == DPRL_EINVAL && strstr(err.msg, "gmax > gmin"),
        "an empty return range refused");
  CHECK(parse(&c, "{\"gamma\": 1, \"rmax\": 1, \"horizon\": 5, \"weight_max\": 5, \"epsilon\": 1,"
                  " \"delta\": 1e-5}", &err) == DPRL_EINVAL && strstr(err.msg, "rmin is required"),
        "rmin is required");
  snprintf(o, sizeof o, "{%s, \"weight_max\": 5, \"episodes\": 10}", base);
  CHECK(parse(&c, o, &err) == DPRL_EINVAL && strstr(err.msg, "unknown option \"episodes\""),
        "episodes is the plan's");
  printf("# %s\n", err.msg);
}

static void test_plan(void) {
  dprl_buf b = {0};
  dprl_plan_cost cost;
  dprl_error err = {0};
  const char *o = "{\"mechanism\": \"dp_is_value\", \"episodes\": 20000, \"gamma\": 1,"
                  " \"rmin\": -1, \"rmax\": 1, \"gmin\": -1, \"gmax\": 1, \"horizon\": 30,"
                  " \"weight_max\": 10, \"epsilon\": 1, \"delta\": 1e-5}";
  CHECK(dprl_ope_plan(o, strlen(o), 0, NULL, &b, &cost, &err) == 0, "plan");
  dprl_ope_config c;
  dprl_ope_noise nz;
  CHECK(parse(&c, "{\"gamma\": 1, \"rmin\": -1, \"rmax\": 1, \"gmin\": -1, \"gmax\": 1,"
                  " \"horizon\": 30, \"weight_max\": 10, \"epsilon\": 1, \"delta\": 1e-5}",
              &err) == 0 && dprl_ope_calibrate(&c, &nz, &err) == 0,
        "the same options released");
  CHECK(!strcmp(cost.mechanism, "dp_is_value") && !strcmp(cost.unit, "episode") &&
            cost.gaussian == 1 && cost.rho == nz.rho && cost.epsilon == 1 && cost.delta == 1e-5 &&
            cost.per_group == 0 && cost.useful == 1,
        "the cost: dp_is_value, episode, Gaussian, the release's rho, useful");
  char want[64];
  snprintf(want, sizeof want, "\"predicted_error\":");
  double pe = nz.sigma * sqrt(1.5) / 20000;
  const char *at = strstr(b.data, want);
  CHECK(at && fabs(strtod(at + strlen(want), NULL) - pe) < 1e-12, "predicted error sigma sqrt(1.5)/n");
  dprl_buf_free(&b);
  dprl_ope_config_free(&c);
  o = "{\"episodes\": 50, \"gamma\": 1, \"rmin\": -1, \"rmax\": 1, \"gmin\": -1, \"gmax\": 1,"
      " \"horizon\": 30, \"weight_max\": 10, \"epsilon\": 1, \"delta\": 1e-5}";
  memset(&b, 0, sizeof b);
  CHECK(dprl_ope_plan(o, strlen(o), 0, NULL, &b, &cost, &err) == 0 && cost.useful == 0 &&
            strstr(cost.why, "50 episodes") && strstr(b.data, "\"useful\":false"),
        "50 episodes: not useful, and why");
  printf("# %s\n", cost.why);
  dprl_buf_free(&b);
  o = "{\"gamma\": 1, \"rmin\": -1, \"rmax\": 1, \"horizon\": 30, \"weight_max\": 10,"
      " \"epsilon\": 1, \"delta\": 1e-5}";
  CHECK(dprl_ope_plan(o, strlen(o), 0, NULL, &b, &cost, &err) == DPRL_EINVAL &&
            strstr(err.msg, "option episodes is required"),
        "the plan needs episodes");
  dprl_buf_free(&b);
}

int main(void) {
  test_calibration();
  test_sensitivity();
  test_estimators();
  test_errors();
  test_plan();
  return CHECK_DONE();
}
