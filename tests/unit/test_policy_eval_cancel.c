/*
** test_policy_eval_cancel.c: every phase of a dp_lsw / dp_lsl release and
** of their plan polls its dprl_cancel: stopped at its first checks and at
** each of its last ones, each returns DPRL_EINTR there and frees
** everything (the sanitizer run checks the leaks).
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "util.h"
#include "policy_eval/policy_eval.h"

/* One release of dp_lsw / dp_lsl over n states with a hook that says stop
** at check number stop_at (0: never): the code, and the number of checks. */
static int release_case(const char *options, dprl_mechanism mech, int stop_at, int *calls) {
  counter n;
  dprl_cancel k = make_cancel(&n, stop_at);
  dprl_error err = {0};
  dprl_pe_config cfg;
  dprl_fv_stats st = {0};
  dprl_buf out = {0};
  int rc = dprl_pe_config_parse(&cfg, mech, "f", options, strlen(options), 0, 0, &k, &err);
  if (rc) return *calls = n.calls, rc;
  rc = dprl_fv_stats_init(&st, cfg.n_states, &k, &err);
  if (!rc) {
    lcg_state = 7;
    st.m = 1000;
    for (int64_t s = 0; s < cfg.n_states; s++) {
      st.visits[s] = (int64_t)(lcg_next() % 1001);
      st.return_sum[s] = (double)st.visits[s] * (double)(lcg_next() % 100) / 100.0;
    }
    cfg.cancel = &k;
    rc = dprl_pe_release(&cfg, &st, &out, &err);
  }
  dprl_pe_config_free(&cfg);
  dprl_fv_stats_free(&st);
  dprl_buf_free(&out);
  *calls = n.calls;
  if (rc && rc != DPRL_EINTR) fprintf(stderr, "# %s\n", err.msg);
  return rc;
}

/* Every phase of a release (options, zeroing the per-state arrays, psi,
** the estimators, the noise, the values, the JSON) polls: stopped at its
** first checks and at each of its last ones, the release returns
** DPRL_EINTR and frees everything (the sanitizer run checks the leaks). */
static void test_release(void) {
  static const char *const cases[] = {
      "{\"n_states\": 10000, \"gamma\": 0.5, \"rmin\": 0, \"rmax\": 1, \"epsilon\": 1, \"delta\": 1e-5}",
      "{\"n_states\": 10000, \"gamma\": 0.5, \"rmin\": 0, \"rmax\": 1, \"epsilon\": 1, \"delta\": 1e-5, "
      "\"perturb\": \"statistics\", \"release\": \"diagnostic\"}",
      "{\"n_states\": 10000, \"gamma\": 0.5, \"rmin\": 0, \"rmax\": 1, \"epsilon\": 1, \"delta\": 1e-5, "
      "\"lambda\": 10, \"features\": {\"aggregate\": 3}}",
      "{\"n_states\": 10000, \"gamma\": 0.5, \"rmin\": 0, \"rmax\": 1, \"epsilon\": 1, \"delta\": 1e-5, "
      "\"lambda\": 10, \"perturb\": \"statistics\"}"};
  for (int i = 0; i < 4; i++) {
    dprl_mechanism mech = i < 2 ? DPRL_LSW : DPRL_LSL;
    int total, calls, bad = 0, tried = 0;
    int rc = release_case(cases[i], mech, 0, &total);
    CHECK(rc == DPRL_OK && total > 100, LABEL("release %d runs to the end, checking %d times", i, total));
    for (int at = 1; at <= total; at++) {
      if (at > 2 && (at < total - 150 || (total - at) % 2)) continue; /* first, last 150 */
      tried++;
      rc = release_case(cases[i], mech, at, &calls);
      bad += rc != DPRL_EINTR || calls != at;
    }
    CHECK(bad == 0, LABEL("release %d: stopped at each of %d checks, it stops there", i, tried));
  }
}

/* dp_plan over n states with a hook that says stop at check number stop_at
** (0: never): the code and the number of checks, parsing included. */
static int plan_case(const char *options, int stop_at, int *calls, int *in_plan,
                     int *in_json) {
  counter n;
  dprl_cancel k = make_cancel(&n, stop_at);
  dprl_error err = {0};
  dprl_pe_config cfg;
  int64_t *visits = NULL;
  dprl_buf out = {0};
  int rc = dprl_pe_plan_parse(&cfg, options, strlen(options), &visits, 0, &k, &err);
  int parsed = n.calls;
  if (!rc) {
    cfg.cancel = &k;
    rc = dprl_pe_plan(&cfg, visits, &out, &err);
    dprl_pe_config_free(&cfg);
  }
  *in_plan = n.calls - parsed;
  /* stopped while writing the second array of numbers */
  *in_json = rc == DPRL_EINTR && out.data && strstr(out.data, "\"statistics\":{\"sigma\"");
  free(visits);
  dprl_buf_free(&out);
  *calls = n.calls;
  if (rc && rc != DPRL_EINTR) fprintf(stderr, "# %s\n", err.msg);
  return rc;
}

/* Every phase of dp_plan polls (the visits, psi, the per-state errors, the
** dense n^2 d sum, the JSON of 2n numbers): stopped at its first checks
** and at each of its last ones, it returns DPRL_EINTR and frees
** everything. */
static void test_plan(void) {
  dprl_buf tab = {0}, dense = {0};
  dprl_buf_puts(&tab, "{\"n_states\": 20000, \"gamma\": 0.9, \"rmin\": 0, \"rmax\": 1, \"fmax\": 9, \"epsilon\": 1, "
                      "\"delta\": 1e-5, \"episodes\": 20000, \"visits\": [");
  for (int s = 0; s < 20000; s++) dprl_buf_printf(&tab, s ? ",%d" : "%d", 1 + s % 50);
  dprl_buf_puts(&tab, "]}");
  dprl_buf_puts(&dense, "{\"n_states\": 600, \"gamma\": 0.9, \"rmin\": 0, \"rmax\": 1, \"fmax\": 9, \"epsilon\": 1, "
                        "\"delta\": 1e-5, \"episodes\": 20000, \"features\": [");
  for (int s = 0; s < 600; s++)
    dprl_buf_printf(&dense, s ? ",[1, %g]" : "[1, %g]", (double)(s % 9) / 9);
  dprl_buf_puts(&dense, "], \"visits\": [");
  for (int s = 0; s < 600; s++) dprl_buf_printf(&dense, s ? ",%d" : "%d", 1 + s % 50);
  dprl_buf_puts(&dense, "]}");
  const char *cases[] = {tab.data, dense.data};
  const char *names[] = {"tabular, 20000 states", "dense 600 x 2"};
  /* checks the plan itself must make: 2n numbers of JSON at 150 units each
  ** (tabular: 91), the dense sum's n^2 (d + 4) units (dense: 32) */
  const int least[] = {90, 30};
  for (int i = 0; i < 2; i++) {
    int total, calls, in_plan, in_json, bad = 0, tried = 0;
    int rc = plan_case(cases[i], 0, &total, &in_plan, &in_json);
    CHECK(rc == DPRL_OK && in_plan >= least[i],
          LABEL("plan %s runs to the end, checking %d times (%d after parsing)", names[i], total,
                in_plan));
    for (int at = 1; at <= total; at++) {
      if (at > 2 && (at < total - 150 || (total - at) % 2)) continue; /* first, last 150 */
      tried++;
      rc = plan_case(cases[i], at, &calls, &in_plan, &in_json);
      bad += rc != DPRL_EINTR || calls != at;
    }
    plan_case(cases[i], total, &calls, &in_plan, &in_json);
    CHECK(in_json, LABEL("plan %s: the last check is made while writing the JSON", names[i]));
    CHECK(bad == 0, LABEL("plan %s: stopped at each of %d checks, it stops there", names[i], tried));
  }
  dprl_buf_free(&tab);
  dprl_buf_free(&dense);
}

int main(void) {
  test_release();
  test_plan();
  return CHECK_DONE();
}
