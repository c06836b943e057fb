/*
** test_q_learning_plan.c: dp_plan of dp_q_learn (q_learning/plan.c,
** ALGORITHMS.md §8.2): its calibration against delta(eps) of mu-GDP
** written out here, and its cost.
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "util.h"
#include "base/json.h"
#include "q_learning/q_calibrate.h"
#include "q_learning/q_options.h"

/* ====================== dp_plan (ALGORITHMS.md §8.2) ===================== */

static double json_num_at(const dprl_buf *b, const char *k) {
  dprl_error err = {0};
  dprl_json *v = dprl_json_parse(b->data, b->len, &err);
  const dprl_json *x = v ? dprl_json_get(v, k) : NULL;
  double r = x && x->type == DPRL_JSON_NUMBER ? x->num : NAN;
  dprl_json_free(v);
  return r;
}

/* delta(eps) of a mu-GDP mechanism (Balle & Wang 2018), written here. */
static double gdp_delta(double eps, double mu) {
  double a = 0.5 * erfc((eps / mu - mu / 2) / sqrt(2)), b = 0.5 * erfc((eps / mu + mu / 2) / sqrt(2));
  return a - exp(eps) * b;
}

static void test_plan(void) {
  dprl_error err = {0};
  dprl_buf out = {0};
  dprl_plan_cost cost;
  const char *opts = "\"n_actions\": 2, \"gamma\": 0.9, \"rmin\": 0, \"rmax\": 1, \"lr\": 3e-4, "
                     "\"T\": 5000, \"B\": 64, \"k\": 60, \"epsilon\": 1, \"delta\": 1e-5";
  char text[512], rel[512];
  snprintf(text, sizeof text, "{\"mechanism\": \"dp_q_learn\", %s}", opts);
  snprintf(rel, sizeof rel, "{%s}", opts);
  memset(&cost, 0, sizeof cost);
  int rc = dprl_q_plan(text, strlen(text), 0, NULL, &out, &cost, &err);
  dprl_q_learn_cfg cfg;
  int rc2 = dprl_q_learn_options(rel, strlen(rel), 1 << 30, &cfg, &err);
  dprl_q_learn_cfg_free(&cfg);
  double mu = json_num_at(&out, "mu"), sig = json_num_at(&out, "sigma");
  CHECK(rc == DPRL_OK && rc2 == DPRL_OK, "plan dp_q_learn: planned");
  CHECK(sig == cfg.th.sigma && mu == cfg.th.mu,
        "plan dp_q_learn: sigma and mu are the release's for the same options");
  double d = gdp_delta(1, mu);
  CHECK(d <= 1e-5 && d >= 1e-5 * (1 - 1e-6), "plan dp_q_learn: mu is the GDP mu of (1, 1e-5)");
  CHECK_REL(json_num_at(&out, "noise_to_signal"), 1 / mu, 1e-12,
            "plan dp_q_learn: reach below the range of Q: noise-to-signal = 1/mu");
  CHECK_REL(json_num_at(&out, "noise_sd"), sig * sqrt(78.0), 1e-12,
            "plan dp_q_learn: a Q value's noise over the 78 updates (tents: P = 1)");
  CHECK(cost.gaussian && cost.rho == mu * mu / 2 && cost.per_group && cost.epsilon == 1 &&
            cost.delta == 1e-5 && strcmp(cost.unit, "reward function") == 0,
        "plan dp_q_learn: charged rho = mu^2/2 per group, unit reward function");
  CHECK(!cost.useful && strncmp(cost.why, "noise-to-signal 3.73 >= 1", 25) == 0,
        "plan dp_q_learn: noise-to-signal >= 1 is not useful, and why says so");
  /* the rewards can move Q past its range: the signal is the range */
  out.len = 0;
  const char *big = "{\"mechanism\": \"dp_q_learn\", \"n_actions\": 2, \"gamma\": 0.5, \"rmin\": 0, "
                    "\"rmax\": 1, \"lr\": 0.1, \"T\": 5000, \"B\": 64, \"k\": 2000, \"epsilon\": 1, "
                    "\"delta\": 1e-5}";
  rc = dprl_q_plan(big, strlen(big), 0, NULL, &out, &cost, &err);
  double sens = json_num_at(&out, "sensitivity"), n_eff = 2 / sens;
  CHECK(rc == DPRL_OK && json_num_at(&out, "signal") == json_num_at(&out, "q_range"),
        "plan dp_q_learn: reach past (rmax - rmin)/(1 - gamma): the signal is that range");
  CHECK_REL(json_num_at(&out, "noise_to_signal"), json_num_at(&out, "sigma") / (sens * sqrt(n_eff)),
            1e-12, "plan dp_q_learn: noise over the updates that build the range");
  /* a large epsilon answers */
  out.len = 0;
  const char *e10 = "{\"mechanism\": \"dp_q_learn\", \"n_actions\": 2, \"gamma\": 0.9, \"rmin\": 0, "
                    "\"rmax\": 1, \"lr\": 3e-4, \"T\": 5000, \"B\": 64, \"k\": 60, \"epsilon\": 10, "
                    "\"delta\": 1e-5}";
  rc = dprl_q_plan(e10, strlen(e10), 0, NULL, &out, &cost, &err);
  CHECK(rc == DPRL_OK && cost.useful && json_num_at(&out, "mu") > 1,
        "plan dp_q_learn: at epsilon 10, mu > 1 and the plan calls it useful");
  /* dp_q_noise: the paths' sigma against q_range, charged (epsilon, delta_total) */
  out.len = 0;
  const char *cal = "{\"T\": 5000, \"B\": 64, \"lr\": 3e-4, \"k\": 60, \"epsilon\": 1, "
                    "\"delta\": 1e-5, \"rmin\": 0, \"rmax\": 1, \"K\": 21}";
  const char *noise = "{\"mechanism\": \"dp_q_noise\", \"n_actions\": 2, \"q_range\": 0.1, "
                      "\"T\": 5000, \"B\": 64, \"lr\": 3e-4, \"k\": 60, \"epsilon\": 1, "
                      "\"delta\": 1e-5, \"rmin\": 0, \"rmax\": 1, \"K\": 21}";
  dprl_q_cal qc;
  rc2 = dprl_q_calibrate_options(cal, strlen(cal), &qc, &err);
  rc = dprl_q_plan(noise, strlen(noise), 0, NULL, &out, &cost, &err);
  CHECK(rc == DPRL_OK && rc2 == DPRL_OK && json_num_at(&out, "sigma") == qc.out.sigma,
        "plan dp_q_noise: sigma is dp_q_calibrate's");
  CHECK(json_num_at(&out, "noise_to_signal") == qc.out.sigma / 0.1,
        "plan dp_q_noise: noise-to-signal = sigma / q_range");
  CHECK(!cost.gaussian && !cost.per_group && cost.epsilon == 1 &&
            cost.delta == qc.out.delta_total && !cost.useful &&
            strstr(cost.why, "is at least the range of the q values (0.1)"),
        "plan dp_q_noise: plain (epsilon, delta_total); sigma above q_range is not useful");
  out.len = 0;
  const char *no_range = "{\"mechanism\": \"dp_q_noise\", \"n_actions\": 2}";
  rc = dprl_q_plan(no_range, strlen(no_range), 0, NULL, &out, &cost, &err);
  CHECK(rc == DPRL_EINVAL && strncmp(err.msg, "dp_plan: option q_range is required", 35) == 0,
        "plan dp_q_noise: q_range required");
  dprl_buf_free(&out);
}

int main(void) {
  test_plan();
  return CHECK_DONE();
}
