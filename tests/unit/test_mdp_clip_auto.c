/*
** test_mdp_clip_auto.c: dp_mdp's "clip": "auto" core (ext/mdp/clip_auto.c,
** ALGORITHMS.md §13.6).
**
** - The grid: K = floor(4 log2 top) + 1 edges, ratio 2^(1/4), the last the
**   unclipped bound; a norm goes to the smallest edge at or above it (an
**   edge itself included), above the grid or NaN to the last.
** - The episode's norm: for a one-pair episode of L steps (no clip binds)
**   sqrt(1 + L^2 + L^2 u^2) with its end in the last count (dense), and
**   the totals' L^2 more (sparse), computed here by hand.
** - The choice: with all counts in one bin far above the noise, C is that
**   bin's edge and the release is recalibrated at it (the sensitivity of a
**   fixed clip C); the charge stays rho_cap.
** - Parse-time calibration at the smallest edge.
*/
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "mdp/mdp.h"

static int parse(dprl_mdp_config *c, const char *json, dprl_error *err) {
  memset(err, 0, sizeof *err);
  return dprl_mdp_config_parse(c, "dp_mdp", json, strlen(json), 0, 0, NULL, err);
}

static void test_grid(void) {
  dprl_mdp_config c;
  dprl_error err;
  CHECK(parse(&c, "{\"n_states\": 3, \"n_actions\": 2, \"gamma\": 0.9, \"rmin\": 0, \"rmax\": 1, "
                  "\"epsilon\": 1, \"delta\": 1e-5, \"horizon\": 10, \"clip\": \"auto\"}",
              &err) == DPRL_OK,
        err.msg);
  double top = sqrt(201.0);
  int K = (int)floor(4 * log2(top)) + 1;
  CHECK(c.gq.n == K && c.gq.top == top, "K edges, the last sqrt(1 + 2 H^2)");
  CHECK(dprl_mdp_auto_edge(&c, K - 1) == top && fabs(dprl_mdp_auto_edge(&c, 0) - top * pow(2, -(K - 1) / 4.0)) < 1e-14,
        "edge j = top 2^((j + 1 - K) / 4)");
  CHECK(dprl_mdp_auto_edge(&c, 0) >= 1 && dprl_mdp_auto_edge(&c, 0) < pow(2, 0.25), "edge 0 in [1, 2^(1/4))");
  int ok = 1;
  for (int j = 0; j < K; j++) {
    double e = dprl_mdp_auto_edge(&c, j);
    ok &= dprl_mdp_auto_bin(&c, e) == j;
    ok &= dprl_mdp_auto_bin(&c, nextafter(e, INFINITY)) == (j + 1 < K ? j + 1 : K - 1);
  }
  CHECK(ok, "a norm at an edge is in its bin, just above it in the next");
  CHECK(dprl_mdp_auto_bin(&c, 0) == 0 && dprl_mdp_auto_bin(&c, 1e300) == K - 1 &&
            dprl_mdp_auto_bin(&c, NAN) == K - 1,
        "0 in the first bin; above the grid and NaN in the last");
  CHECK(c.exact_path == 0 && c.rho == c.rho_cap && c.gq.rho < c.rho_cap,
        "parse: the general path, charged rho_cap, the histogram's rho below it");
  dprl_mdp_config_free(&c);
}

static void test_norm(void) {
  for (int sparse = 0; sparse < 2; sparse++) {
    dprl_mdp_config c;
    dprl_error err;
    char json[400];
    snprintf(json, sizeof json,
             "{\"n_states\": 3, \"n_actions\": 2, \"gamma\": 0.9, \"rmin\": -1, \"rmax\": 1, "
             "\"epsilon\": 1, \"delta\": 1e-5, \"horizon\": 10, \"clip\": \"auto\"%s}",
             sparse ? ", \"transitions\": \"sparse\"" : "");
    CHECK(parse(&c, json, &err) == DPRL_OK, err.msg);
    dprl_mdp_stats st;
    CHECK(dprl_mdp_stats_init(&st, &c, NULL, &err) == DPRL_OK, "stats");
    dprl_step steps[6];
    for (int i = 0; i < 6; i++)
      steps[i] = (dprl_step){i, dprl_mdp_reward_ticks(&c, 0.5), 0, dprl_mdp_pack(&c, 1, 1)};
    double norm = -1, L = 6, u = 0.5;
    /* start 1; the pair's count to itself L - 1 and its end 1; reward L u;
    ** sparse: the total L */
    double want = sqrt(1 + (L - 1) * (L - 1) + 1 + L * L * u * u + (sparse ? L * L : 0));
    CHECK(dprl_mdp_episode_norm(&st, &c, steps, NULL, 6, &norm, &err) == DPRL_OK &&
              fabs(norm - want) < 1e-9 * want,
          sparse ? "sparse: the norm of a one-pair episode, by hand" : "dense: the norm, by hand");
    double again = -1;
    dprl_mdp_episode_norm(&st, &c, steps, NULL, 6, &again, &err);
    CHECK(again == norm, "the scratch is cleared: the same norm twice");
    dprl_mdp_stats_free(&st);
    /* the choice: every episode in one bin, far above the noise */
    int64_t bins[DPRL_MDP_EDGES_MAX] = {0};
    int j = dprl_mdp_auto_bin(&c, norm);
    bins[j] = 100000;
    c.has_seed = 1;
    c.seed = 7;
    double rho = c.rho;
    CHECK(dprl_mdp_auto_choose(&c, bins, &err) == DPRL_OK && c.clip == dprl_mdp_auto_edge(&c, j) &&
              c.rho == rho,
          "C is the bin's edge; the charge stays rho_cap");
    dprl_mdp_config fixed;
    snprintf(json, sizeof json,
             "{\"n_states\": 3, \"n_actions\": 2, \"gamma\": 0.9, \"rmin\": -1, \"rmax\": 1, "
             "\"epsilon\": 1, \"delta\": 1e-5, \"horizon\": 10, \"clip\": %.17g%s}",
             c.clip, sparse ? ", \"transitions\": \"sparse\"" : "");
    CHECK(parse(&fixed, json, &err) == DPRL_OK, err.msg);
    CHECK(fixed.bound == c.bound && fixed.bound_rep == c.bound_rep && fixed.sens == c.sens &&
              c.sigma >= fixed.sigma,
          "recalibrated at C: a fixed clip C's bounds and sensitivity, sigma no smaller");
    CHECK(c.gq.share < 0.01, "clipped_share: no episode above C");
    dprl_mdp_config_free(&fixed);
    dprl_mdp_config_free(&c);
  }
}

int main(void) {
  test_grid();
  test_norm();
  return CHECK_DONE();
}
