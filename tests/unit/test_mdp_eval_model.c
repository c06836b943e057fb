/*
** test_mdp_eval_model.c: a released MDP model read and estimated
** (mdp/model.c, mdp/mdp_eval.c): the estimate's floor, pessimism and start,
** the noise floor against simulated pure noise, the bootstrap's error bar
** against the first-order (delta-method) standard deviation, the results'
** keys, and the errors of a model text, a policy and the options.
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "util_mdp.h"
#include "base/json.h"
#include "dp/noise.h"
#include "mdp/mdp_eval.h"
#include "mdp/model.h"

/* ---- the estimate: floor, pessimism, start ----------------------------------------------- */

static void test_estimate(void) {
  spec p;
  dprl_mdpv_model m;
  dprl_mdpv_opts o;
  dprl_mdpv_est e;
  dprl_error err = {0};
  spec_alloc(&p, 3, 2);
  p.rmin = -1;
  p.rmax = 3; /* c = 1 */
  p.sigma = 2;
  p.rsig = 1;
  double c[] = {/* s0 a0 */ 30, 1.5, -2, 10, /* s0 a1 */ -1, 0.5, -3, 0.2,
                /* s1 a0 */ 100, 0, 0, 0, /* s1 a1 */ 0, 0, 0, 0,
                /* s2 a0 */ 5, 5, 5, 5, /* s2 a1 */ 0, 0, 400, 0};
  memcpy(p.counts, c, sizeof c);
  double r[] = {41.5 * 0.5, 7, 100 * 5, 0, -20, 400 * 0.25};
  memcpy(p.rsums, r, sizeof r);
  double st[] = {3, -1, 1.9};
  memcpy(p.start, st, sizeof st);
  if (setup(&p, &m, &o, &e, "{\"count_floor\": 1, \"min_count\": 20}", 0)) return;
  /* s0 a0: entries above 1: 30, 1.5, 10 -> N = 41.5 */
  CHECK(e.row[1] - e.row[0] == 2 && e.next[0] == 0 && fabs(e.prob[0] - 30 / 41.5) < 1e-15 &&
            e.next[1] == 1 && fabs(e.prob[1] - 1.5 / 41.5) < 1e-15,
        "estimate: entries at or below count_floor count as 0; ending is not stored");
  CHECK(fabs(e.reward[0] - 1.5) < 1e-15, "estimate: r = c + R/N");
  CHECK(e.row[2] == e.row[1] && e.reward[1] == -1, "estimate: N = 0 ends with rmin");
  CHECK(e.reward[2] == 3 && e.prob[e.row[2]] == 1, "estimate: r clamped to rmax");
  CHECK(e.row[5] == e.row[4] && e.reward[4] == -1 && e.pessimistic == 3,
        "estimate: N = 20 <= min_count: pessimistic (3 pairs)");
  CHECK(e.reward[5] == 1.25 && e.row[6] - e.row[5] == 1 && e.prob[e.row[5]] == 1,
        "estimate: a pair of state 2 moving to 2");
  CHECK(e.start[0] == 3 / 4.9 && e.start[1] == 0 && e.start[2] == 1.9 / 4.9 && !e.start_uniform,
        "estimate: the start distribution from the counts above the floor");
  dprl_mdpv_est_free(&e);
  dprl_mdpv_model_free(&m);
  /* ends censored: the ended column counts for the reward, not for P */
  if (setup(&p, &m, &o, &e, "{\"count_floor\": 1, \"min_count\": 20, \"ends\": \"censored\"}",
            0))
    return;
  CHECK(o.est.censored && e.row[1] - e.row[0] == 2 && fabs(e.prob[0] - 30 / 31.5) < 1e-15 &&
            fabs(e.prob[1] - 1.5 / 31.5) < 1e-15 && fabs(e.reward[0] - 1.5) < 1e-15,
        "estimate, censored: P over the next states above the floor, r over every step");
  CHECK(e.pessimistic == 3 && e.prob[e.row[2]] == 1, "estimate, censored: the other pairs as before");
  dprl_mdpv_est_free(&e);
  dprl_mdpv_model_free(&m);
  /* no start count above the floor: uniform */
  p.start[0] = 1;
  p.start[2] = 0.5;
  if (setup(&p, &m, &o, &e, "{\"count_floor\": 1}", 0)) return;
  CHECK(e.start_uniform && e.start[1] == 1.0 / 3, "estimate: no start count: uniform start");
  CHECK(o.est.min_count == dprl_mdpv_noise_floor(3, 1, 2, 1) && o.est.min_count > 0,
        "options: min_count defaults to the noise floor");
  dprl_mdpv_est_free(&e);
  dprl_mdpv_model_free(&m);
  spec_free(&p);
  (void)err;
}

/* The noise floor against simulated pure-noise pairs. */
static void test_noise_floor(void) {
  dprl_rng rng;
  dprl_rng_init_seeded(&rng, 7, DPRL_STREAM_MDP_BOOTSTRAP);
  const int S = 10, rows = 40000;
  const double sigma = 2, t = 1;
  double z[11], sum = 0, sum2 = 0;
  for (int i = 0; i < rows; i++) {
    dprl_rng_normals(&rng, z, (size_t)S + 1);
    double N = 0; /* the S next states kept above t, the end above 0 */
    for (int k = 0; k < S; k++)
      if (sigma * z[k] > t) N += sigma * z[k];
    if (z[S] > 0) N += sigma * z[S];
    sum += N;
    sum2 += N * N;
  }
  double mean = sum / rows, sd = sqrt(sum2 / rows - mean * mean);
  double floor_ = dprl_mdpv_noise_floor(S, 1, sigma, t);
  CHECK(fabs(mean + 3 * sd - floor_) < 0.02 * floor_,
        LABEL("noise floor %.4f = simulated mean + 3 sd of N for pure noise (%.4f)", floor_,
              mean + 3 * sd));
  CHECK(dprl_mdpv_noise_floor(S, 1, 0, t) == 0, "noise floor: 0 without noise");
  double n2[20001], m = 0, v = 0;
  dprl_rng_normals(&rng, n2, 20001);
  for (int i = 0; i < 20001; i++) m += n2[i];
  m /= 20001;
  for (int i = 0; i < 20001; i++) v += (n2[i] - m) * (n2[i] - m);
  v /= 20000;
  CHECK(fabs(m) < 0.03 && fabs(v - 1) < 0.05, "dprl_rng_normals: mean 0, variance 1");
}

/* ---- the bootstrap against the first-order standard deviation ------------------------ */

/* One state, one action: V = r / (1 - gamma P), P = c0 / N, r = c + R / N,
** N = c0 + ce (the rest ends the episode). */
static double one_state_value(double c0, double ce, double R, double gamma) {
  double N = c0 + ce;
  return (0.5 + R / N) / (1 - gamma * c0 / N);
}

static char *run_value(const spec *p, const char *policy, const char *opts, dprl_error *err) {
  dprl_mdpv_model m;
  dprl_mdpv_opts o;
  dprl_mdpv_policies pol = {0};
  dprl_buf b = {0};
  int rc = read_spec(p, &m, err);
  if (!rc) rc = dprl_mdpv_options("t", opts, strlen(opts), 0, &m, &o, err);
  if (!rc) rc = dprl_mdpv_policies_read(policy, strlen(policy), &m, &pol, err);
  if (!rc) rc = dprl_mdpv_value(&m, &o, &pol, &b, NULL, err);
  dprl_mdpv_policies_free(&pol);
  if (!err->code) dprl_mdpv_model_free(&m);
  if (rc) {
    dprl_buf_free(&b);
    return NULL;
  }
  return b.data;
}

static double json_num(const char *text, const char *key) {
  dprl_error err = {0};
  dprl_json *j = dprl_json_parse(text, strlen(text), &err);
  const dprl_json *v = dprl_json_get(j, key);
  double x = v && v->type == DPRL_JSON_NUMBER ? v->num : NAN;
  dprl_json_free(j);
  return x;
}

static void test_bootstrap(void) {
  spec p;
  dprl_error err = {0};
  spec_alloc(&p, 1, 1);
  p.start[0] = 100;
  /* rewards only: r = c + (R + tau Z) / N, sd tau / N */
  p.counts[1] = 400;
  p.rsums[0] = 40;
  p.rsig = 10;
  char *out = run_value(&p, "[0]", "{\"bootstrap\": 2000}", &err);
  double se = out ? json_num(out, "stderr") : NAN;
  CHECK(fabs(se - 0.025) < 0.06 * 0.025 && fabs(json_num(out, "value") - 0.6) < 1e-15,
        LABEL("bootstrap: reward noise only: stderr %.5f, tau/N = 0.025", se));
  free(out);
  /* counts too: the delta method's sd, derivatives by central differences */
  p.counts[0] = 600;
  p.rsums[0] = 100;
  p.sigma = 5;
  p.rsig = 8;
  double h = 1e-3, g = 0.9;
  double d0 = (one_state_value(600 + h, 400, 100, g) - one_state_value(600 - h, 400, 100, g)) / (2 * h);
  double de = (one_state_value(600, 400 + h, 100, g) - one_state_value(600, 400 - h, 100, g)) / (2 * h);
  double dr = (one_state_value(600, 400, 100 + h, g) - one_state_value(600, 400, 100 - h, g)) / (2 * h);
  double sd = sqrt(25 * (d0 * d0 + de * de) + 64 * dr * dr);
  out = run_value(&p, "[[1]]", "{\"bootstrap\": 2000, \"min_count\": 0}", &err);
  se = out ? json_num(out, "stderr") : NAN;
  CHECK(fabs(se - sd) < 0.08 * sd &&
            fabs(json_num(out, "value") - one_state_value(600, 400, 100, g)) < 1e-12,
        LABEL("bootstrap: count and reward noise: stderr %.5f, first-order sd %.5f", se, sd));
  char *again = run_value(&p, "[[1]]", "{\"bootstrap\": 2000, \"min_count\": 0}", &err);
  CHECK(out && again && !strcmp(out, again), "bootstrap: the same call gives the same bytes");
  free(again);
  again = run_value(&p, "[[1]]", "{\"bootstrap\": 2000, \"min_count\": 0, \"bootstrap_seed\": 1}",
                    &err);
  CHECK(again && json_num(again, "stderr") != se && fabs(json_num(again, "stderr") - sd) < 0.08 * sd,
        "bootstrap: another bootstrap_seed, other draws, the same sd");
  free(again);
  free(out);
  out = run_value(&p, "[0]", "{\"bootstrap\": 0}", &err);
  CHECK(out && strstr(out, "\"stderr\":null") && strstr(out, "\"values_stderr\":null"),
        "bootstrap 0: no error bar (null)");
  free(out);
  p.sigma = p.rsig = 0;
  out = run_value(&p, "[0]", "{}", &err);
  CHECK(out && strstr(out, "\"stderr\":0,") && strstr(out, "\"values_stderr\":[0]"),
        "a model without noise: error bar 0");
  free(out);
  spec_free(&p);
}

/* ---- results and errors ----------------------------------------------------------------- */

static void test_results(void) {
  spec p;
  dprl_error err = {0};
  hand_spec(&p);
  p.start[1] = 30; /* start distribution (1/4, 3/4) */
  char *out = run_value(&p, "{\"stay\": [0, 0], \"go\": [[0, 1], [1, 0]]}", "{}", &err);
  dprl_json *j = out ? dprl_json_parse(out, strlen(out), &err) : NULL;
  const dprl_json *pol = dprl_json_get(j, "policies");
  const dprl_json *go = dprl_json_get(pol, "go"), *stay = dprl_json_get(pol, "stay");
  CHECK(pol && pol->n == 2 && !strcmp(pol->keys[0], "stay") && go && stay,
        "value: named policies, in the order given");
  CHECK(go && fabs(dprl_json_get(go, "value")->num - (0.25 * 9 + 0.75 * 10)) < 1e-12 &&
            stay && fabs(dprl_json_get(stay, "value")->num - 7.5) < 1e-12,
        "value: under the start distribution (stay: 0 and 10, go: 9 and 10)");
  static const char *keys[] = {"n_states", "n_actions", "gamma", "horizon", "method", "min_count",
                               "count_floor", "ends", "pessimistic_pairs", "start_uniform",
                               "bootstrap", "bootstrap_seed"};
  int all = j != NULL;
  for (size_t i = 0; i < sizeof keys / sizeof *keys; i++) all &= dprl_json_get(j, keys[i]) != NULL;
  CHECK(all, "value: the shared keys");
  dprl_json_free(j);
  free(out);
  /* plan's result */
  dprl_mdpv_model m;
  dprl_mdpv_opts o;
  dprl_buf b = {0};
  read_spec(&p, &m, &err);
  dprl_mdpv_options("t", "{\"horizon\": 2, \"gamma\": 1}", 26, 1, &m, &o, &err);
  dprl_mdpv_plan(&m, &o, &b, NULL, &err);
  CHECK(b.data && strstr(b.data, "\"policy\":[1,0]") && strstr(b.data, "\"q\":[[0,1],[2,0]]") &&
            strstr(b.data, "\"values\":[1,2]") && strstr(b.data, "\"method\":\"backward induction\""),
        LABEL("plan: 2 undiscounted steps: %.120s", b.data ? b.data : err.msg));
  dprl_buf_free(&b);
  dprl_mdpv_model_free(&m);
  spec_free(&p);
}

/* The error of a model text: base with one substring replaced. */
static void model_error(const char *base, const char *from, const char *to, const char *want) {
  const char *at = strstr(base, from);
  size_t n = strlen(base) + strlen(to) + 1;
  char *t = malloc(n);
  if (!at) {
    CHECK(0, LABEL("model error test: \"%s\" not in the model", from));
    free(t);
    return;
  }
  snprintf(t, n, "%.*s%s%s", (int)(at - base), base, to, at + strlen(from));
  dprl_mdpv_model m;
  dprl_error err = {0};
  int rc = dprl_mdpv_model_read(&m, t, strlen(t), NULL, &err);
  CHECK(rc == DPRL_EINVAL && strstr(err.msg, want),
        LABEL("model error: %s -> %s", to, rc ? err.msg : "accepted"));
  if (!rc) dprl_mdpv_model_free(&m);
  free(t);
}

static void test_errors(void) {
  spec p;
  hand_spec(&p);
  dprl_buf b = model_json(&p);
  const char *t = b.data;
  model_error(t, "\"sigma\":0,", "", "model: key \"sigma\" is missing");
  model_error(t, "\"dp_mdp\"", "\"dp_q_learn\"", "must be a result of dp_mdp");
  model_error(t, "\"n_states\":2", "\"n_states\":2.5", "n_states must be an integer");
  model_error(t, "\"gamma\":0.9", "\"gamma\":1.5", "gamma must be a finite number and in [0, 1]");
  model_error(t, "\"rmax\":1", "\"rmax\":-1", "rmin (0) must be below rmax (-1)");
  model_error(t, "\"reward_center\":0.5", "\"reward_center\":0.4", "reward_center must be");
  model_error(t, "\"start\":[10,0]", "\"start\":[10]", "start must be an array of n_states = 2");
  model_error(t, "\"start\":[10,0]", "\"start\":[10,1e999]", "start[1] must be a finite number");
  model_error(t, "\"sigma\":0,", "\"sigma\":1e308,",
              "sigma must be a finite number and >= 0, of magnitude at most 10^150, got 1e+308");
  model_error(t, "[10,0,0]", "[10,0,-1e151]",
              "counts[0][0][2] must be a finite number of magnitude at most 10^150, got -1e+151");
  model_error(t, "[10,0,0]", "[10,0]", "counts[0][0] must be an array of n_states + 1 = 3");
  model_error(t, "[10,0,0]", "[10,\"x\",0]", "counts[0][0][1] must be a finite number of magnitude at most 10^150, got \"x\"");
  model_error(t, "[[10,0,0],[0,10,0]]", "[[10,0,0]]", "counts[0] must be an array of n_actions");
  model_error(t, "\"reward_sums\":[[-5,-5],", "\"reward_sums\":[[-5,null],",
              "reward_sums[0][1] must be a finite number of magnitude at most 10^150, got null");
  model_error(t, "\"tabular\"", "{\"tent\": 3, \"low\": 0, \"high\": 1}",
              "features.tent is 3 anchors but n_states is 2");
  model_error(t, "\"tabular\"", "\"linear\"", "features must be \"tabular\", {\"aggregate\": k}");
  model_error(t, "\"tabular\"", "{\"map\": [0, 2, 1]}",
              "model: features.map[1] must be a group in 0..n_states-1 = 0..1");
  model_error(t, "\"tabular\"", "{\"map\": [0, 0.5]}", "model: features.map[1] must be a group");
  model_error(t, "\"tabular\"", "{\"map\": []}", "model: features must be {\"aggregate\": k >= 1}");
  model_error(t, "\"tabular\"", "{\"aggregate\": 0}", "model: features must be {\"aggregate\": k >= 1}");
  model_error(t, "\"tabular\"", "{\"aggregate\": 2, \"map\": [0, 1]}",
              "model: features must be {\"aggregate\": k >= 1}");
  model_error(t, "\"horizon\":null", "\"horizon\":0", "horizon must be an integer in [1,");
  model_error(t, "\"n_states\":2,\"n_actions\":2", "\"n_states\":20000,\"n_actions\":2",
              "is more than the");
  model_error(t, "{", "[", "malformed JSON");
  /* tent features of the right size are a model like any other */
  dprl_mdpv_model m;
  dprl_error err = {0};
  char *tt = malloc(strlen(t) + 64);
  const char *at = strstr(t, "\"tabular\"");
  sprintf(tt, "%.*s{\"tent\": 2, \"low\": -1, \"high\": 1}%s", (int)(at - t), t, at + 9);
  CHECK(!dprl_mdpv_model_read(&m, tt, strlen(tt), NULL, &err) && m.tent && m.tent_low == -1,
        "model: tent features with K = n_states");
  dprl_mdpv_model_free(&m);
  /* groups (aggregate, map): a tabular model over the n_states groups */
  static const char *const groups[] = {"{\"aggregate\": 3}", "{\"map\": [1, 0, 0, 1, 1]}"};
  for (int i = 0; i < 2; i++) {
    sprintf(tt, "%.*s%s%s", (int)(at - t), t, groups[i], at + 9);
    dprl_error_clear(&err);
    CHECK(!dprl_mdpv_model_read(&m, tt, strlen(tt), NULL, &err) && !m.tent && m.S == 2,
          LABEL("model: features %s read as a tabular model of its groups", groups[i]));
    dprl_mdpv_model_free(&m);
  }
  free(tt);
  /* policies */
  dprl_mdpv_model_read(&m, t, strlen(t), NULL, &err);
  static const char *bad[][2] = {
      {"[[0.5, 0.4], [1, 0]]", "policy: the probabilities of state 0 sum to 0.9"},
      {"[[1, 0], [-0.5, 1.5]]", "policy[1][0] must be a probability"},
      {"[0, 2]", "policy[1] must be an action: an integer in 0..1"},
      {"[0, 0.5]", "policy[1] must be an action"},
      {"[0]", "policy must be an array with one entry per state (n_states = 2)"},
      {"[[1, 0], [1]]", "policy[1] must be an array of n_actions = 2 probabilities"},
      {"[[1, 0], 1]", "policy[1] must be an array of n_actions"},
      {"{\"a\": [0, 0], \"b\": [0, 7]}", "policy \"b\"[1] must be an action"},
      {"{}", "an object of named policies needs at least one"},
      {"[0, ", "policy: malformed JSON"}};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    dprl_mdpv_policies pol;
    dprl_error_clear(&err);
    int rc = dprl_mdpv_policies_read(bad[i][0], strlen(bad[i][0]), &m, &pol, &err);
    CHECK(rc == DPRL_EINVAL && strstr(err.msg, bad[i][1]),
          LABEL("policy %s -> %s", bad[i][0], rc ? err.msg : "accepted"));
  }
  dprl_mdpv_policies pol;
  CHECK(!dprl_mdpv_policies_read("[[0.3, 0.7000000000001], [1, 0]]", 32, &m, &pol, &err),
        "policy: sums within 1e-9 of 1 are distributions");
  dprl_mdpv_policies_free(&pol);
  /* options */
  static const char *opt[][2] = {
      {"{\"gamma\": 1}", "gamma is 1, so the value is undiscounted and needs option horizon"},
      {"{\"bootstrap\": 1}", "bootstrap must be 0 (no error bar) or at least 2"},
      {"{\"horizon\": 0}", "option horizon"},
      {"{\"min_count\": -1}", "option min_count"},
      {"{\"tolerance\": 0}", "option tolerance"},
      {"{\"bootstrap_seed\": -1}", "option bootstrap_seed"},
      {"{\"alpha\": 1}", "unknown option \"alpha\""}};
  for (size_t i = 0; i < sizeof opt / sizeof *opt; i++) {
    dprl_mdpv_opts o;
    dprl_error_clear(&err);
    int rc = dprl_mdpv_options("dp_mdp_value", opt[i][0], strlen(opt[i][0]), 0, &m, &o, &err);
    CHECK(rc == DPRL_EINVAL && strstr(err.msg, opt[i][1]),
          LABEL("options %s -> %s", opt[i][0], rc ? err.msg : "accepted"));
  }
  dprl_mdpv_opts o;
  dprl_error_clear(&err);
  CHECK(dprl_mdpv_options("dp_mdp_plan", "{\"bootstrap\": 5}", 16, 1, &m, &o, &err) &&
            strstr(err.msg, "unknown option \"bootstrap\""),
        "options: dp_mdp_plan has no bootstrap");
  dprl_mdpv_model_free(&m);
  dprl_buf_free(&b);
  spec_free(&p);
}

int main(void) {
  test_estimate();
  test_noise_floor();
  test_bootstrap();
  test_results();
  test_errors();
  return CHECK_DONE();
}
