/*
** test_mdp_release.c: dp_mdp's release and plan (ext/mdp/, ALGORITHMS.md
** §13).
**
** - sigma against an independent calibration: the analytic Gaussian's
**   delta(eps) written out here and solved by bisection.
** - The statistics of hand-made logs (tabular and tent), and the release
**   minus its noise, replayed from the same seeded stream, equal to them.
** - The options' refusals.
** - dprl_mdp_plan: its calibration, the errors it predicts, its cost.
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "util_mdp.h"
#include "mdp/mdp.h"

/* ---- sigma, independently ---------------------------------------------------- */

static double Phi(double x) { return 0.5 * erfc(-x / sqrt(2.0)); }

/* delta(eps) of the Gaussian mechanism with sensitivity 1 and scale s
** (Balle & Wang 2018, Theorem 8), and the smallest s with delta <= target. */
static double gauss_delta(double eps, double s) {
  return Phi(1 / (2 * s) - eps * s) - exp(eps) * Phi(-1 / (2 * s) - eps * s);
}

static double sigma1_bisect(double eps, double delta) {
  double lo = 1e-3, hi = 1e4;
  for (int i = 0; i < 200; i++) {
    double mid = (lo + hi) / 2;
    if (gauss_delta(eps, mid) <= delta) hi = mid;
    else lo = mid;
  }
  return hi;
}

static void test_sigma(void) {
  static const struct {
    double eps, delta;
    const char *more;
  } cases[] = {{1, 1e-5, "\"clip\": \"none\", \"horizon\": 20"},
               {0.3, 1e-6, "\"horizon\": 5, \"clip\": 3"},
               {4, 1e-3, "\"clip\": 10"},
               {1, 1e-5, "\"clip\": \"none\", \"horizon\": 2, \"features\": {\"tent\": 4, \"low\": 0, \"high\": 3}"}};
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    char json[400], what[200];
    snprintf(json, sizeof json,
             "{\"n_states\": 4, \"n_actions\": 3, \"gamma\": 0.9, \"rmin\": -2, \"rmax\": 6, "
             "\"epsilon\": %g, \"delta\": %g, %s}", cases[i].eps, cases[i].delta, cases[i].more);
    dprl_mdp_config c;
    dprl_error err;
    CHECK(parse(&c, json, &err) == DPRL_OK, json);
    double s1 = sigma1_bisect(cases[i].eps, cases[i].delta);
    snprintf(what, sizeof what, "eps %g delta %g: sigma1 %.12g = bisection %.12g",
             cases[i].eps, cases[i].delta, c.sigma1, s1);
    CHECK(fabs(c.sigma1 - s1) <= 1e-9 * s1, what);
    CHECK(c.sigma >= c.sens * s1 * (1 - 1e-10) && c.sigma < c.sens * s1 + c.grid,
          "sigma = Delta sigma1 rounded up to the grid");
    CHECK((double)c.steps * c.grid == c.sigma, "sigma is whole grid steps");
    double mu = c.sens / c.sigma;
    CHECK(gauss_delta(cases[i].eps, 1 / mu) <= cases[i].delta * (1 + 1e-9),
          "the applied scale meets delta(eps) <= delta at mu = Delta / sigma");
    CHECK(fabs(c.rho - mu * mu / 2) <= 1e-12 * c.rho && c.rho <= 1 / (2 * s1 * s1) * (1 + 1e-9),
          "rho = (Delta / g)^2 / (2 steps^2) <= 1 / (2 sigma1^2)");
    dprl_mdp_config_free(&c);
  }
}

/* ---- hand-made logs --------------------------------------------------------- */

/* Rows in a shuffled order through the step buffer, grouped by the core. */
static int collect_rows(const dprl_mdp_config *c, dprl_mdp_stats *st, const int64_t (*rows)[4],
                        const double *xr, const double *rw, size_t n, dprl_error *err) {
  dprl_step_buffer buf, xbuf;
  memset(&buf, 0, sizeof buf);
  memset(&xbuf, 0, sizeof xbuf);
  int rc = DPRL_OK;
  for (size_t k = 0; k < n && !rc; k++) {
    size_t i = (k * 7 + 3) % n; /* n is not a multiple of 7: a permutation */
    dprl_key ep = {0, rows[i][0], NULL, 0};
    uint32_t state = c->tent ? (uint32_t)rows[i][3] : dprl_mdp_pack(c, rows[i][2], rows[i][3]);
    rc = dprl_step_buffer_push(&buf, &ep, rows[i][1], state, dprl_mdp_reward_ticks(c, rw[i]), err);
    if (!rc && c->tent) rc = dprl_step_buffer_push(&xbuf, &ep, rows[i][1], 0, xr[i], err);
  }
  if (!rc) rc = dprl_mdp_collect(st, c, &buf, c->tent ? &xbuf : NULL, NULL, NULL, err);
  dprl_step_buffer_free(&buf);
  dprl_step_buffer_free(&xbuf);
  return rc;
}

static int equal_counts(const dprl_mdp_config *c, const dprl_mdp_stats *st, const double *want) {
  for (size_t j = 0; j < c->dim; j++)
    if ((double)st->v[j] / T_ != want[j]) {
      printf("#   entry %zu: got %.17g, want %.17g\n", j, (double)st->v[j] / T_, want[j]);
      return 0;
    }
  return 1;
}

static void test_hand_logs(void) {
  dprl_mdp_config c;
  dprl_mdp_stats st;
  dprl_error err;
  /* S = 2, A = 2, H = 2, rewards in [0, 2] (c = 1, b = 1):
  **   episode 5: (0, a1, r 2) (1, a0, r 0)          ends: (1, 0) -> end
  **   episode 9: (1, a1, 1.5) (1, a1, 3) (0, a0, 0) truncated after 2 steps:
  **              (1, 1) -> 1, (1, 1) -> 0 (the third step's state)
  **   episode 2: (0, a0, -1)                         ends at once */
  parse(&c, "{\"n_states\": 2, \"n_actions\": 2, \"gamma\": 0.9, \"rmin\": 0, \"rmax\": 2, "
            "\"epsilon\": 1, \"delta\": 1e-5, \"clip\": \"none\", \"horizon\": 2}", &err);
  dprl_mdp_stats_init(&st, &c, NULL, &err);
  static const int64_t rows[][4] = {{5, 10, 0, 1}, {5, 11, 1, 0}, {9, 0, 1, 1},
                                    {9, 4, 1, 1},  {9, 7, 0, 0},  {2, -3, 0, 0}};
  static const double rw[] = {2, 0, 1.5, 3, 0, -1};
  CHECK(collect_rows(&c, &st, rows, NULL, rw, 6, &err) == DPRL_OK, "collect a tabular log");
  /* start[2] | counts s0: a0 [0 0 1], a1 [0 1 0]; s1: a0 [0 0 1], a1 [1 1 0] | reward */
  static const double want[] = {2, 1, 0, 0, 1, 0, 1, 0, 0, 0, 1, 1, 1, 0,
                                /* (clamp(r) - 1)/1: (0,0): -1; (0,1): 1; (1,0): -1; (1,1): 0.5 + 1 */
                                -1, 1, -1, 1.5};
  CHECK(st.episodes == 3 && equal_counts(&c, &st, want),
        "tabular statistics = the hand computation (first H steps by t, terminal column)");
  /* the release minus its noise, replayed from the same seeded stream */
  double *out = malloc(c.dim * sizeof *out);
  dprl_rng rng, again;
  dprl_rng_init_seeded(&rng, 42, DPRL_STREAM_MDP);
  dprl_rng_init_seeded(&again, 42, DPRL_STREAM_MDP);
  CHECK(dprl_mdp_perturb(&c, &st, &rng, out, NULL, &err) == DPRL_OK, "perturb");
  int same = 1;
  for (size_t j = 0; j < c.dim; j++) {
    int64_t z = dprl_discrete_gaussian(&again, c.steps);
    same &= out[j] == c.grid * (double)(dprl_mdp_grid_value(&c, st.v[j]) + z) &&
            dprl_mdp_grid_value(&c, st.v[j]) * c.grid == want[j];
  }
  CHECK(same, "release - replayed noise (one discrete Gaussian of s steps per entry, in order) "
              "= the hand statistics");
  free(out);
  dprl_mdp_stats_free(&st);
  /* a duplicate (episode, t) is an error naming it */
  dprl_mdp_stats_init(&st, &c, NULL, &err);
  static const int64_t dup[][4] = {{5, 1, 0, 1}, {5, 1, 1, 0}, {6, 0, 0, 0}};
  CHECK(collect_rows(&c, &st, dup, NULL, rw, 3, &err) == DPRL_EINVAL &&
            strstr(err.msg, "duplicate (episode, t) = (5, 1)"),
        err.msg);
  dprl_mdp_stats_free(&st);
  dprl_mdp_config_free(&c);

  /* tent, K = 3 anchors at 0, 1, 2; one action; rewards in [0, 1]:
  **   episode 1: x 0.5 (r 1), x 2 (r 0), ends
  **   phi(0.5) = (0.5, 0.5, 0), phi(2) = (0, 0, 1) */
  parse(&c, "{\"n_states\": 3, \"n_actions\": 1, \"gamma\": 0.9, \"rmin\": 0, \"rmax\": 1, "
            "\"epsilon\": 1, \"delta\": 1e-5, \"clip\": \"none\", \"horizon\": 5, "
            "\"features\": {\"tent\": 3, \"low\": 0, \"high\": 2}}", &err);
  dprl_mdp_stats_init(&st, &c, NULL, &err);
  static const int64_t trows[][4] = {{1, 0, 0, 0}, {1, 1, 0, 0}};
  static const double tx[] = {0.5, 2}, tr[] = {1, 0};
  CHECK(collect_rows(&c, &st, trows, tx, tr, 2, &err) == DPRL_OK, "collect a tent log");
  static const double twant[] = {
      0.5, 0.5, 0,                       /* start: phi(0.5) */
      0, 0, 0.5, 0, 0, 0, 0.5, 0, 0, 0, 0, 1, /* counts: phi(0.5) (x) phi(2), phi(2) (x) end */
      0.5, 0.5, -1};                     /* reward: phi(0.5) (+1), phi(2) (-1) */
  CHECK(equal_counts(&c, &st, twant), "tent statistics = the hand computation");
  dprl_mdp_stats_free(&st);
  dprl_mdp_config_free(&c);
}

/* ---- options ------------------------------------------------------------------ */

static void test_option_errors(void) {
  static const struct {
    const char *json, *want;
  } cases[] = {
      {"{\"n_states\": 2, \"n_actions\": 2, \"gamma\": 0.9, \"rmin\": 0, \"rmax\": 1, "
       "\"epsilon\": 1, \"delta\": 1e-5}",
       "dp_mdp: option horizon (only the first H steps of an episode count) or option clip"},
      {"{\"n_states\": 2, \"n_actions\": 2, \"gamma\": 1.5, \"rmin\": 0, \"rmax\": 1, "
       "\"epsilon\": 1, \"delta\": 1e-5, \"clip\": \"none\", \"horizon\": 3}",
       "dp_mdp: option gamma must be in [0, 1], got 1.5"},
      {"{\"n_states\": 2, \"n_actions\": 2, \"gamma\": 0.5, \"epsilon\": 1, "
       "\"delta\": 1e-5, \"clip\": \"none\", \"horizon\": 3}",
       "dp_mdp: option rmin is required"},
      {"{\"n_states\": 2, \"n_actions\": 2, \"gamma\": 0.5, \"rmin\": 0, \"rmax\": 1, "
       "\"epsilon\": 1, \"delta\": 1e-5, \"clip\": \"none\", \"horizon\": 3, \"features\": {\"tent\": 3, "
       "\"low\": 0, \"high\": 1}}",
       "dp_mdp: option n_states = 2 must equal features.tent = 3"},
      {"{\"n_states\": 3, \"n_actions\": 2, \"gamma\": 0.5, \"rmin\": 0, \"rmax\": 1, "
       "\"epsilon\": 1, \"delta\": 1e-5, \"clip\": \"none\", \"horizon\": 3, \"features\": {\"tent\": 3, "
       "\"low\": 1, \"high\": 1}}",
       "dp_mdp: features.high must be > features.low"},
      {"{\"n_states\": 3, \"n_actions\": 2, \"gamma\": 0.5, \"rmin\": 0, \"rmax\": 1, "
       "\"epsilon\": 1, \"delta\": 1e-5, \"clip\": 0}",
       "dp_mdp: option clip must be in (0, "},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    dprl_mdp_config c;
    dprl_error err;
    int rc = parse(&c, cases[i].json, &err);
    CHECK(rc == DPRL_EINVAL && strncmp(err.msg, cases[i].want, strlen(cases[i].want)) == 0,
          err.msg);
  }
  /* the size of the result, from the options alone */
  dprl_mdp_config c;
  dprl_error err = {0};
  const char *big = "{\"n_states\": 1000, \"n_actions\": 10, \"gamma\": 0.5, \"rmin\": 0, "
                    "\"rmax\": 1, \"epsilon\": 1, \"delta\": 1e-5, \"clip\": \"none\", \"horizon\": 3, "
                    "\"transitions\": \"dense\"}";
  int rc = dprl_mdp_config_parse(&c, "dp_mdp", big, strlen(big), 100000000, 0, NULL, &err);
  CHECK(rc == DPRL_EINVAL && strstr(err.msg, "10021000 numbers") &&
            strstr(err.msg, "SQLITE_LIMIT_LENGTH (100000000 bytes)"),
        err.msg);
}

/* ---- the plan ------------------------------------------------------------------- */

static void test_plan(void) {
  const char *model = "\"n_states\": 4, \"n_actions\": 2, \"gamma\": 0.9, \"rmin\": 0, "
                      "\"rmax\": 2, \"epsilon\": 1, \"delta\": 1e-5, \"clip\": \"none\", \"horizon\": 10";
  char json[600];
  snprintf(json, sizeof json, "{\"mechanism\": \"dp_mdp\", \"error\": \"transitions\", %s, \"episodes\": 1000}", model);
  dprl_buf out = {0};
  dprl_plan_cost cost;
  dprl_error err = {0};
  int rc = dprl_mdp_plan(json, strlen(json), 0, NULL, &out, &cost, &err);
  CHECK(rc == DPRL_OK, rc ? err.msg : "plan");
  dprl_mdp_config c;
  char rel[400];
  snprintf(rel, sizeof rel, "{%s}", model);
  parse(&c, rel, &err);
  char *at = out.data ? strstr(out.data, "\"sigma\":") : NULL;
  CHECK(at && strtod(at + 8, NULL) == c.sigma, "plan: the release's sigma for the same options");
  CHECK(strcmp(cost.mechanism, "dp_mdp") == 0 && strcmp(cost.unit, "episode") == 0 &&
            cost.epsilon == 1 && cost.delta == 1e-5 && cost.gaussian == 1 && cost.rho == c.rho &&
            cost.per_group == 0,
        "plan cost: dp_mdp, episode, (1, 1e-5), Gaussian with the release's rho, one release");
  /* 1000 episodes x 10 steps over 8 pairs: 1250 per pair; the row's L1
  ** error is first order plus twice the share of spurious mass
  ** M = S sigma / sqrt(2 pi) from the clipped noise of S empty entries */
  double spur = 4 * c.sigma / sqrt(2 * M_PI);
  double l1 = sqrt(2 / M_PI) * c.sigma * (5 + sqrt(5.0)) / 1250 + 2 * spur / (1250 + spur);
  double rsd = 1.0 * c.sigma * sqrt(6.0) / 1250;
  char *p = strstr(out.data, "\"transition_l1\":");
  CHECK(p && fabs(strtod(p + 16, NULL) - l1) < 1e-12 * l1, "transition_l1 at 1250 steps a pair");
  p = strstr(out.data, "\"worst_reward_sd\":");
  CHECK(p && fabs(strtod(p + 18, NULL) - rsd) < 1e-12 * rsd, "worst_reward_sd at the worst mean");
  CHECK(!strstr(out.data, "\"visits\"") && strstr(out.data, "\"tolerance\":0.5"),
        "no per-pair arrays; the default tolerance 0.5 stated");
  CHECK(l1 > 0.5 && cost.useful == 0, "an L1 error of 0.53 is above the tolerance: not useful");
  dprl_buf_free(&out);
  /* few episodes: every row is noise */
  snprintf(json, sizeof json, "{\"error\": \"transitions\", %s, \"episodes\": 20, \"steps\": 3}", model);
  rc = dprl_mdp_plan(json, strlen(json), 0, NULL, &out, &cost, &err);
  CHECK(rc == DPRL_OK && cost.useful == 0 && strstr(cost.why, "above the tolerance 0.5") &&
            strstr(out.data, "\"useful\":false"),
        cost.why);
  dprl_buf_free(&out);
  /* visits per pair, and a bad one named */
  snprintf(json, sizeof json,
           "{\"error\": \"transitions\", %s, \"episodes\": 20, \"visits\": [[1e6, 0], [5, 5], [5, 5], [5, -1]]}", model);
  rc = dprl_mdp_plan(json, strlen(json), 0, NULL, &out, &cost, &err);
  CHECK(rc == DPRL_EINVAL && strstr(err.msg, "got -1 at state 3, action 1"), err.msg);
  dprl_buf_free(&out);
  snprintf(json, sizeof json,
           "{\"error\": \"transitions\", %s, \"episodes\": 20, \"visits\": [[1e6, 0], [5, 5], [5, 5], [5, 1]]}", model);
  memset(&err, 0, sizeof err);
  rc = dprl_mdp_plan(json, strlen(json), 0, NULL, &out, &cost, &err);
  CHECK(rc == DPRL_OK && cost.useful == 1 && strstr(out.data, "\"pairs_visited\":7,"),
        "visits as given; a pair with most of the visits makes the mean L1 error small: useful");
  dprl_buf_free(&out);
  snprintf(json, sizeof json, "{\"error\": \"transitions\", %s, \"episodes\": 20, \"seed\": 1}", model);
  rc = dprl_mdp_plan(json, strlen(json), 0, NULL, &out, &cost, &err);
  CHECK(rc == DPRL_EINVAL && strstr(err.msg, "dp_plan: unknown option \"seed\""), err.msg);
  dprl_buf_free(&out);
  dprl_mdp_config_free(&c);
}

int main(void) {
  test_sigma();
  test_hand_logs();
  test_option_errors();
  test_plan();
  return CHECK_DONE();
}
