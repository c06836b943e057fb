/*
** test_policy_eval_oom.c: out of memory, everywhere: the whole dp_lsw /
** dp_lsl pipeline (options, row buffer, grouping, first visits, release,
** JSON) is run with the k-th allocation failing, for every k until a run
** needs no failure.  Each run must end in DPRL_OK or DPRL_ENOMEM ("out of
** memory"), never a crash; the sanitizer build (leak detection on) checks
** nothing leaks on any path.
*/
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "rows/first_visit.h"
#include "policy_eval/policy_eval.h"
#include "rows/steps.h"

static long budget = -1; /* allocations left before one fails; -1 = no limit */
static long failures = 0;

static void *counting_alloc(size_t n) {
  if (budget == 0) {
    failures++;
    return NULL;
  }
  if (budget > 0) budget--;
  return malloc(n);
}
static void *counting_resize(void *p, size_t n) {
  if (budget == 0) {
    failures++;
    return NULL;
  }
  if (budget > 0) budget--;
  return realloc(p, n);
}
static void counting_release(void *p) { free(p); }

/* rows -> episodes -> statistics -> release, as sql_policy_eval.c does. */
static int pipeline(const char *options, dprl_mechanism mech, int grouped, dprl_buf *out,
                    dprl_error *err) {
  dprl_pe_config cfg;
  dprl_step_buffer buf = {0};
  dprl_episode_stream stream = {0};
  dprl_fv_stats st = {0};
  dprl_fv_scratch sc = {0};
  int rc = dprl_pe_config_parse(&cfg, mech, mech == DPRL_LSW ? "dp_lsw" : "dp_lsl", options,
                                strlen(options), 0, 0, NULL, err);
  if (rc) return rc;
  if (!(rc = dprl_fv_stats_init(&st, cfg.n_states, NULL, err)))
    rc = dprl_fv_scratch_init(&sc, cfg.n_states, NULL, err);
  for (int e = 0; e < 300 && !rc; e++) {
    char name[16];
    snprintf(name, sizeof name, "p%04d", e); /* in order as text too */
    dprl_key k = {1, 0, name, strlen(name)};
    for (int t = 0; t < 7 && !rc; t++) {
      uint32_t s = (uint32_t)((e * 7 + t * 3) % cfg.n_states);
      if (!grouped) {
        rc = dprl_step_buffer_push(&buf, &k, 6 - t, s, 0.25 * t, err);
        continue;
      }
      int fin;
      const dprl_step *steps;
      size_t n;
      rc = dprl_episode_stream_push(&stream, &k, t, s, 0.25 * t, &fin, &steps, &n, err);
      if (!rc && fin) rc = dprl_fv_add_episode(&st, &sc, &cfg.rule, steps, n, NULL, NULL, err);
    }
  }
  if (!rc && grouped) {
    const dprl_step *steps;
    size_t n;
    rc = dprl_episode_stream_finish(&stream, &steps, &n, err);
    if (!rc && n) rc = dprl_fv_add_episode(&st, &sc, &cfg.rule, steps, n, NULL, NULL, err);
  } else if (!rc) {
    rc = dprl_step_buffer_group(&buf, err);
    for (size_t e = 0; !rc && e < dprl_step_buffer_episodes(&buf); e++) {
      const dprl_step *steps;
      size_t n;
      rc = dprl_step_buffer_episode(&buf, e, &steps, &n, err);
      if (!rc) rc = dprl_fv_add_episode(&st, &sc, &cfg.rule, steps, n, NULL, NULL, err);
    }
  }
  if (!rc) rc = dprl_pe_release(&cfg, &st, out, err);
  dprl_pe_config_free(&cfg);
  dprl_step_buffer_free(&buf);
  dprl_episode_stream_free(&stream);
  dprl_fv_stats_free(&st);
  dprl_fv_scratch_free(&sc);
  return rc;
}

static void sweep(const char *label, const char *options, dprl_mechanism mech, int grouped) {
  int all_clean = 1, finished = 0, shown = 0;
  long k;
  for (k = 0; k < 100000 && !finished && all_clean; k++) {
    dprl_error err = {0};
    dprl_buf out = {0};
    budget = k;
    failures = 0;
    int rc = pipeline(options, mech, grouped, &out, &err);
    budget = -1;
    if (rc == DPRL_OK && failures == 0) {
      finished = 1;
    } else if (!(rc == DPRL_ENOMEM && strcmp(err.msg, "out of memory") == 0)) {
      all_clean = 0;
      if (shown++ < 3) printf("#   k = %ld: rc %d, \"%s\"\n", k, rc, err.msg);
    }
    dprl_buf_free(&out);
  }
  char name[160];
  snprintf(name, sizeof name, "%s: every one of the first %ld allocations failing ends in "
           "ENOMEM, then success", label, k - 1);
  CHECK(finished && all_clean, name);
}

int main(void) {
  static const dprl_allocator counting = {counting_alloc, counting_resize, counting_release};
  dprl_set_allocator(&counting);
  sweep("lsw tabular, buffered",
        "{\"n_states\": 5, \"gamma\": 0.9, \"rmin\": 0, \"rmax\": 1, \"epsilon\": 1, \"delta\": 0.01, \"seed\": 1}",
        DPRL_LSW, 0);
  sweep("lsw dense features, streaming",
        "{\"n_states\": 5, \"gamma\": 0.9, \"rmin\": 0, \"rmax\": 1, \"epsilon\": 1, \"delta\": 0.01, \"seed\": 1, "
        "\"grouped\": true, \"features\": [[1,0],[1,1],[1,2],[1,3],[1,4]]}",
        DPRL_LSW, 1);
  sweep("lsl dense, diagnostic",
        "{\"n_states\": 5, \"gamma\": 0.9, \"rmin\": 0, \"rmax\": 1, \"epsilon\": 1, \"delta\": 0.01, \"seed\": 1, "
        "\"lambda\": 200, \"release\": \"diagnostic\", \"features\": [[1,0],[1,1],[1,2],[1,3],[1,4]]}",
        DPRL_LSL, 0);
  return CHECK_DONE();
}
