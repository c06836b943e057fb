/*
** test_mdp_features.c: dp_mdp's grouped features (mdp/mdp_config.c,
** ALGORITHMS.md §13.1): {"aggregate": k} and {"map": [...]} parsed into
** the group of each state (dprl_mdp_group: floor(s / k), map[s], -1
** outside), with the calibration of the tabular release over the groups
** (every public number equal, dense and sparse, with and without a clip),
** the map's echo counted to the byte, and a long map's parse interrupted.
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "util_mdp.h"
#include "mdp/mdp.h"

#define HEAD "\"n_actions\": 3, \"gamma\": 1, \"rmin\": -1, \"rmax\": 1, \"epsilon\": 1, \"delta\": 1e-5"

/* Every number of the calibration the release writes or uses. */
static int same_calibration(const dprl_mdp_config *a, const dprl_mdp_config *b) {
  return a->n_states == b->n_states && a->dim == b->dim && a->abits == b->abits &&
         a->exact_path == b->exact_path && a->bound == b->bound &&
         a->bound_rep == b->bound_rep && a->touched == b->touched &&
         a->touched_rep == b->touched_rep && a->sens == b->sens && a->grid == b->grid &&
         a->steps == b->steps && a->sigma == b->sigma && a->rho == b->rho &&
         a->sparse == b->sparse && a->new_cells == b->new_cells && a->tau == b->tau &&
         a->delta_thr == b->delta_thr && a->cells_max == b->cells_max;
}

static void test_calibration(void) {
  static const char *const more[] = {
      "\"clip\": \"none\", \"horizon\": 20, \"transitions\": \"dense\"", "\"clip\": \"none\", \"horizon\": 20, \"transitions\": \"sparse\"",
      "\"horizon\": 5, \"clip\": 3, \"transitions\": \"dense\"",
      "\"horizon\": 5, \"clip\": 3, \"transitions\": \"sparse\"", "\"clip\": 4"};
  char map[200] = "[";
  for (int s = 0; s < 30; s++) /* 30 states into 10 groups, not in order */
    snprintf(map + strlen(map), sizeof map - strlen(map), s ? ",%d" : "%d", (s * 7) % 10);
  strcat(map, "]");
  for (size_t i = 0; i < sizeof more / sizeof *more; i++) {
    char tab[400], agg[400], mp[600];
    snprintf(tab, sizeof tab, "{\"n_states\": 10, " HEAD ", %s}", more[i]);
    snprintf(agg, sizeof agg, "{\"n_states\": 10, " HEAD ", %s, \"features\": {\"aggregate\": 3}}",
             more[i]);
    snprintf(mp, sizeof mp, "{\"n_states\": 10, " HEAD ", %s, \"features\": {\"map\": %s}}",
             more[i], map);
    dprl_mdp_config t, a, m;
    dprl_error err;
    int ok = parse(&t, tab, &err) == DPRL_OK && parse(&a, agg, &err) == DPRL_OK &&
             parse(&m, mp, &err) == DPRL_OK;
    CHECK(ok, LABEL("%s: parsed (%s)", more[i], err.msg));
    if (!ok) continue;
    CHECK(same_calibration(&t, &a) && same_calibration(&t, &m),
          LABEL("%s: aggregate and map have the tabular calibration over the 10 groups", more[i]));
    CHECK(t.raw_states == 10 && a.agg_k == 3 && a.raw_states == 30 && !a.map && m.map &&
              m.raw_states == 30 && !m.agg_k,
          LABEL("%s: the states a row may give: 10, 3 x 10, the map's 30", more[i]));
    int groups = 1;
    for (int64_t s = -2; s < 33; s++) {
      int64_t in = s >= 0 && s < 30;
      groups &= dprl_mdp_group(&a, s) == (in ? s / 3 : -1);
      groups &= dprl_mdp_group(&m, s) == (in ? (s * 7) % 10 : -1);
      groups &= dprl_mdp_group(&t, s) == (s >= 0 && s < 10 ? s : -1);
    }
    CHECK(groups, LABEL("%s: the group of every state, and -1 outside", more[i]));
    CHECK(m.echo_bytes == strlen(map) && a.echo_bytes == 0,
          LABEL("%s: the map's echo is %zu bytes, as written here", more[i], strlen(map)));
    dprl_mdp_config_free(&t);
    dprl_mdp_config_free(&a);
    dprl_mdp_config_free(&m);
  }
}

/* The map's echo beside the result's length: the largest model that fits
** shrinks by the echo's bytes. */
static void test_length(void) {
  char *json = malloc(40000);
  int n = snprintf(json, 40000, "{\"n_states\": 2, " HEAD ", \"clip\": \"none\", \"horizon\": 2, "
                   "\"transitions\": \"dense\", \"features\": {\"map\": [");
  for (int s = 0; s < 4000; s++) n += snprintf(json + n, 40000 - (size_t)n, s ? ",%d" : "%d", s % 2);
  strcpy(json + n, "]}}");
  size_t echo = 2 * 4000 + 1; /* 4000 digits, 3999 commas, two brackets */
  dprl_mdp_config c;
  dprl_error err = {0};
  /* 2 + 2 * 3 * 3 + 2 * 3 = 26 numbers of 25 bytes beside 4096 bytes and the echo */
  int64_t fits = 4096 + (int64_t)echo + 26 * 25, rc;
  rc = dprl_mdp_config_parse(&c, "dp_mdp", json, strlen(json), fits, 0, NULL, &err);
  CHECK(rc == DPRL_OK && c.echo_bytes == echo, LABEL("a limit of %lld bytes holds the model and "
        "the echo of %zu (%s)", (long long)fits, echo, err.msg));
  dprl_mdp_config_free(&c);
  dprl_error_clear(&err);
  rc = dprl_mdp_config_parse(&c, "dp_mdp", json, strlen(json), fits - 25, 0, NULL, &err);
  CHECK(rc == DPRL_EINVAL && strstr(err.msg, "make a model of S + S A (S + 1) + S A = 26 numbers"),
        LABEL("25 bytes less: the model does not fit beside the echo (%s)", err.msg));
  dprl_mdp_config_free(&c);
  dprl_error_clear(&err);
  rc = dprl_mdp_config_parse(&c, "dp_mdp", json, strlen(json), 4096 + (int64_t)echo - 1, 0, NULL,
                             &err);
  CHECK(rc == DPRL_EINVAL && strstr(err.msg, "features.map of 4000 states is echoed in the result "
                                    "in 8001 bytes"),
        LABEL("a limit that the echo alone passes: refused naming the map (%s)", err.msg));
  dprl_mdp_config_free(&c);
  free(json);
}

/* The hook's calls, stopping at call stop_at (0: never). */
typedef struct calls {
  int n, stop_at;
} calls;

static int counting(void *ctx) {
  calls *k = ctx;
  return ++k->n == k->stop_at;
}

static void test_interrupt(void) {
  size_t cap = 2500000;
  char *json = malloc(cap);
  int n = snprintf(json, cap, "{\"n_states\": 2, " HEAD ", \"clip\": \"none\", \"horizon\": 2, \"features\": {\"map\": [");
  for (int s = 0; s < 1000000; s++) n += snprintf(json + n, cap - (size_t)n, s ? ",%d" : "%d", s % 2);
  strcpy(json + n, "]}}");
  dprl_error err = {0};
  /* the calls the JSON parse alone makes; the next one is the map's */
  calls k = {0, 0};
  dprl_cancel cancel = {counting, &k, 0, 0};
  dprl_json *root = dprl_json_parse_polled(json, strlen(json), &cancel, &err);
  CHECK(root != NULL, "the options' JSON parses");
  dprl_json_free(root);
  calls k2 = {0, k.n + 1};
  dprl_cancel cancel2 = {counting, &k2, 0, 0};
  dprl_mdp_config c;
  int rc = dprl_mdp_config_parse(&c, "dp_mdp", json, strlen(json), 0, 0, &cancel2, &err);
  CHECK(rc == DPRL_EINTR, LABEL("a map of 10^6 states: its reading after the JSON parse (%d "
                                "calls) stops when asked (%s)", k.n, err.msg));
  dprl_mdp_config_free(&c);
  dprl_error_clear(&err);
  rc = dprl_mdp_config_parse(&c, "dp_mdp", json, strlen(json), 0, 0, NULL, &err);
  CHECK(rc == DPRL_OK && c.raw_states == 1000000 && dprl_mdp_group(&c, 999999) == 1,
        "a map of 10^6 states: read whole when not interrupted");
  dprl_mdp_config_free(&c);
  free(json);
}

int main(void) {
  test_calibration();
  test_length();
  test_interrupt();
  return CHECK_DONE();
}
