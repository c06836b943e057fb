/*
** test_prefix_stable_release.c: dp_prefix_stable's release
** (prefix_stable.c): the cliff at step j0 released with proven margins, a
** tiny epsilon releasing nothing, T runs drawn with replacement with exact
** prefixes, replayed step by step with the public primitives.
**
** Fixed seeds throughout; every test whose outcome depends on noise states,
** in a comment and in a CHECK, a margin that bounds its failure probability
** below 1e-12.
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "util_prefix_stable.h"
#include "prefix_stable/prefix_stable.h"

/* ---- the test: a cliff at step j0 ------------------------------ */

/* Experts: action 1 has exactly p_min for every expert, action 2 has
** p_min + x and action 0 the rest (1 - 2 p_min - x), x in [0, 0.05] varying
** with expert and state. */
#define CLIFF_ACTION 1
static double cliff_policy(int64_t i, int64_t s, int64_t a, void *ctx) {
  double p_min = *(double *)ctx;
  double x = 0.05 * (double)((i * 7 + s * 13) % 101) / 100.0;
  return a == 0 ? 1 - 2 * p_min - x : a == 1 ? p_min : p_min + x;
}

static void test_cliff(void) {
  /* m = 20000, |A| = 3, p_min = 1e-3, eps1 = 20, delta1 = 1e-6, T = n = 6,
  ** L = 12: eps' ~ 0.38, b_query = 4/eps' ~ 10.6, threshold base ~ 3.4e3.
  ** Before j0 every step takes action 0 (prob >= 0.948), so the count stays
  ** >= 20000 * 0.948^12 ~ 1.05e4; step j0 takes action 1 (p_min for all), so the count
  ** drops to 1e-3 of what it was (<= 20). The test computes both margins
  ** (by brute force) in units of b_query and requires >= 100 on each side;
  ** it finds ~670 above and ~316 below.
  **
  ** Why >= 100 b_query makes failure impossible in practice: a query answers
  ** wrongly only if |g Z1 - g Z2| >= 100 b_query, so |g Z1| or |g Z2| is
  ** >= 50 b_query. For the grid noise P(|g Z| >= x) <= 2 exp(-x / (t g))
  ** with t g <= b + g <= b (1 + 2^-25), b <= b_query, so each query fails
  ** with probability <= 4 exp(-49.99) < 1e-21; over at most T L = 72
  ** queries per run and 4 runs, < 3e-19 < 1e-12. */
  dprl_error err = {0};
  dprl_policy_table pt;
  double p_min = 1e-3;
  int64_t m = 20000, S = 4, A = 3, L = 12;
  CHECK(build_policies(&pt, m, S, A, cliff_policy, &p_min),
        "cliff: policies built");
  CHECK(dprl_policy_validate(&pt, p_min, &err) == DPRL_OK, "cliff: policies valid");
  /* (length, j0): j0 = 0 means no p_min step. */
  int64_t spec[][2] = {{12, 6}, {12, 0}, {8, 1}, {10, 10}, {5, 0}, {15, 0}};
  int64_t n = 6, expect[6];
  traj_buf tb = {0};
  for (int64_t j = 0; j < n; j++) {
    tb_begin(&tb);
    for (int64_t t = 1; t <= spec[j][0]; t++)
      tb_step(&tb, xs_below(S), t == spec[j][1] ? CLIFF_ACTION : 0);
    int64_t reach = spec[j][0] < L ? spec[j][0] : L;
    expect[j] = spec[j][1] ? spec[j][1] - 1 : reach;
  }
  dprl_trajectories tr = tb_view(&tb);
  dprl_prefix_params pp;
  dprl_prefix_params_derive(20, 1e-6, p_min, A, n, L, DPRL_PREFIX_OPTIMAL, &pp, &err);
  double up = HUGE_VAL, down = HUGE_VAL;
  for (int64_t j = 0; j < n; j++) {
    const int64_t *st = tr.states + tr.offsets[j], *ac = tr.actions + tr.offsets[j];
    for (int64_t k = 1; k <= expect[j]; k++) {
      double u = (brute_count(&pt, st, ac, k) - pp.threshold_base) / pp.b_query;
      if (u < up) up = u;
    }
    if (spec[j][1]) {
      double d = (pp.threshold_base - brute_count(&pt, st, ac, spec[j][1])) /
                 pp.b_query;
      if (d < down) down = d;
    }
  }
  printf("# cliff: base %.6g, b_query %.6g; margins %.1f b_query above, "
         "%.1f below\n",
         pp.threshold_base, pp.b_query, up, down);
  CHECK(up >= 100 && down >= 100, "cliff: both margins >= 100 noise scales");
  for (int run = 0; run < 4; run++) {
    dprl_rng rng;
    if (run < 3) dprl_rng_init_seeded(&rng, 1000 + run, 7);
    else CHECK(dprl_rng_init_secure(&rng, &err) == DPRL_OK, "cliff: secure rng");
    dprl_prefix_release rel;
    int rc = dprl_prefix_release_run(&pt, &tr, &pp, &rng, &rel, &err);
    if (!CHECK(rc == DPRL_OK && rel.n_runs == n, "cliff: release runs"))
      printf("#   error: %s\n", err.msg);
    int all = rc == DPRL_OK;
    for (int64_t c = 0; all && c < rel.n_runs; c++)
      if (rel.k[c] != expect[rel.traj[c]]) {
        all = 0;
        printf("#   trajectory %lld: k = %lld, want %lld\n",
               (long long)rel.traj[c], (long long)rel.k[c],
               (long long)expect[rel.traj[c]]);
      }
    CHECK(all, "cliff: k = j0 - 1 (or min(len, L) without a cliff) for every trajectory");
    dprl_prefix_release_free(&rel);
    dprl_rng_wipe(&rng);
  }
  tb_free(&tb);
  dprl_policy_free(&pt);
}

/* ---- tiny epsilon releases nothing ------------------------------------- */

static void test_tiny_epsilon(void) {
  /* The cliff experts (m = 2000, p_min = 5e-3) on trajectories that always
  ** take action 0 (prob >= 0.94). With eps1 = 1e-3, delta1 = 1e-30, T = 25,
  ** L = 20: eps' ~ 4e-6 and theta ~ 5e7 while count <= m, so the first
  ** query of every trajectory sees base - count >= theta - m
  ** + (4/eps') ln(1/delta') ~ 125 b_query (checked below to be >= 100): by
  ** the bound of test_cliff, each of the 25 first queries returns "top" with
  ** probability < 1e-21. */
  dprl_error err = {0};
  dprl_policy_table pt;
  double p_min = 5e-3;
  int64_t m = 2000, S = 4, A = 3, L = 20, n = 30, T = 25;
  build_policies(&pt, m, S, A, cliff_policy, &p_min);
  traj_buf tb = {0};
  for (int64_t j = 0; j < n; j++) {
    tb_begin(&tb);
    int64_t len = 1 + xs_below(L);
    for (int64_t t = 0; t < len; t++) tb_step(&tb, xs_below(S), 0);
  }
  dprl_trajectories tr = tb_view(&tb);
  dprl_prefix_params pp;
  dprl_prefix_params_derive(1e-3, 1e-30, p_min, A, T, L, DPRL_PREFIX_OPTIMAL, &pp, &err);
  double margin = (pp.threshold_base - (double)m) / pp.b_query;
  printf("# tiny eps: theta %.4g, margin %.1f b_query\n", pp.theta, margin);
  CHECK(margin >= 100, "tiny eps: margin >= 100 noise scales");
  dprl_rng rng;
  dprl_rng_init_seeded(&rng, 42, 0);
  dprl_prefix_release rel;
  int rc = dprl_prefix_release_run(&pt, &tr, &pp, &rng, &rel, &err);
  int64_t released = 0;
  for (int64_t c = 0; rc == DPRL_OK && c < rel.n_runs; c++) released += rel.k[c];
  if (!CHECK(rc == DPRL_OK && rel.n_runs == T && released == 0,
             "tiny eps: nothing is released"))
    printf("#   rc %d (%s), %lld steps released\n", rc, err.msg, (long long)released);
  dprl_prefix_release_free(&rel);

  /* Contrast, so the test above is not vacuous: eps1 = 200 on the same data
  ** puts the base ~ 700 far below the first step's count (>= 0.94 m), by
  ** >= 100 b_query (checked), so every examined trajectory releases k >= 1. */
  dprl_prefix_params_derive(200, 1e-30, p_min, A, T, L, DPRL_PREFIX_OPTIMAL, &pp, &err);
  double first = HUGE_VAL;
  for (int64_t j = 0; j < n; j++) {
    double c1 = brute_count(&pt, tr.states + tr.offsets[j], tr.actions + tr.offsets[j], 1);
    if (c1 < first) first = c1;
  }
  double up = (first - pp.threshold_base) / pp.b_query;
  CHECK(up >= 100, "tiny eps contrast: first step >= 100 noise scales above");
  rc = dprl_prefix_release_run(&pt, &tr, &pp, &rng, &rel, &err);
  int all = rc == DPRL_OK;
  released = 0;
  for (int64_t c = 0; all && c < rel.n_runs; c++) {
    released += rel.k[c];
    if (rel.k[c] < 1) all = 0;
  }
  printf("# eps1 = 200 on the same data: base %.4g, first-step margin %.1f "
         "b_query, %lld steps released\n",
         pp.threshold_base, up, (long long)released);
  CHECK(all, "tiny eps contrast: a large eps1 releases on the same data");
  dprl_prefix_release_free(&rel);
  tb_free(&tb);
  dprl_policy_free(&pt);
}

/* ---- T runs drawn with replacement; exact prefixes; replay ------------- */

static double mostly_zero_policy(int64_t i, int64_t s, int64_t a, void *ctx) {
  (void)ctx;
  double x = 0.05 * (double)((i * 31 + s * 17) % 97) / 96.0; /* [0, 0.05] */
  return a == 0 ? 0.9 - x : 0.1 + x; /* A = 2, p_min = 0.05 */
}

static int64_t traj_len(const dprl_trajectories *tr, int64_t j) {
  return tr->offsets[j + 1] - tr->offsets[j];
}

/* Algorithm 2 replayed from the public primitives on the same seed: T
** uniform draws with replacement (dprl_rng_below), then per run one
** threshold draw and one query per step until the first bottom. */
static int replay_matches(const dprl_policy_table *pt,
                          const dprl_trajectories *tr,
                          const dprl_prefix_params *pp, uint64_t seed,
                          const dprl_prefix_release *rel) {
  dprl_error err = {0};
  dprl_rng rng;
  dprl_rng_init_seeded(&rng, seed, 3);
  int64_t *order = malloc((size_t)pp->T * sizeof *order);
  for (int64_t c = 0; c < pp->T; c++) order[c] = (int64_t)dprl_rng_below(&rng, (uint64_t)tr->n);
  int ok = 1;
  for (int64_t c = 0; c < pp->T; c++) {
    int64_t j = order[c], len = traj_len(tr, j);
    double *counts = malloc((size_t)(len ? len : 1) * sizeof(double));
    dprl_prefix_counts(pt, tr->states + tr->offsets[j],
                       tr->actions + tr->offsets[j], len, counts, &err);
    double thr;
    dprl_prefix_threshold_noise(&rng, pp, &thr, &err);
    int64_t k = 0;
    for (int64_t i = 0; i < len && i < pp->L; i++) {
      int top;
      dprl_prefix_query(&rng, pp, counts[i], thr, &top, &err);
      if (!top) break;
      k = i + 1;
    }
    free(counts);
    if (rel->traj[c] != j || rel->k[c] != k) ok = 0;
  }
  free(order);
  return ok && err.code == DPRL_OK;
}

static void test_T_and_prefixes(void) {
  dprl_error err = {0};
  dprl_policy_table pt;
  int64_t m = 2000, S = 6, A = 2, n = 50, L = 30;
  build_policies(&pt, m, S, A, mostly_zero_policy, NULL);
  traj_buf tb = {0};
  for (int64_t j = 0; j < n; j++) {
    tb_begin(&tb);
    int64_t len = xs_below(45); /* some empty, some longer than L */
    for (int64_t t = 0; t < len; t++)
      tb_step(&tb, xs_below(S), xs_unit() < 0.9 ? 0 : 1);
  }
  dprl_trajectories tr = tb_view(&tb);
  int64_t Ts[] = {1, 17, 50};
  int64_t k_hist[31] = {0};
  for (size_t c = 0; c < sizeof Ts / sizeof Ts[0]; c++) {
    for (uint64_t seed = 1; seed <= 20; seed++) {
      dprl_prefix_params pp;
      dprl_prefix_params_derive(50, 1e-3, 0.05, A, Ts[c], L, DPRL_PREFIX_OPTIMAL, &pp, &err);
      dprl_rng rng;
      dprl_rng_init_seeded(&rng, seed, 3);
      dprl_prefix_release rel;
      int rc = dprl_prefix_release_run(&pt, &tr, &pp, &rng, &rel, &err);
      int ok = rc == DPRL_OK && rel.n_runs == Ts[c];
      int distinct = ok, prefix = ok; /* distinct: every draw in range */
      for (int64_t e = 0; ok && e < rel.n_runs; e++) {
        int64_t j = rel.traj[e];
        if (j < 0 || j >= n) distinct = 0;
        int64_t len = traj_len(&tr, j), cap = len < L ? len : L;
        if (rel.k[e] < 0 || rel.k[e] > cap) prefix = 0;
        else k_hist[rel.k[e]]++;
      }
      if (seed == 1) {
        if (!CHECK(ok, "T: exactly T runs"))
          printf("#   error: %s\n", err.msg);
        CHECK(distinct, "T: every run's trajectory is in range");
        CHECK(prefix, "T: 0 <= k <= min(length, L)");
        CHECK(replay_matches(&pt, &tr, &pp, seed, &rel),
              "T: release = step-by-step replay with the public primitives");
        dprl_prefix_release again;
        dprl_rng_init_seeded(&rng, seed, 3);
        dprl_prefix_release_run(&pt, &tr, &pp, &rng, &again, &err);
        CHECK(memcmp(again.traj, rel.traj, (size_t)Ts[c] * sizeof(int64_t)) == 0 &&
                  memcmp(again.k, rel.k, (size_t)Ts[c] * sizeof(int64_t)) == 0,
              "T: the same seed gives the same release");
        dprl_prefix_release_free(&again);
        /* The SQL layer's form: the caller draws (the same words of the
        ** stream), keeps only the distinct drawn trajectories, in order of
        ** first draw, and passes each run's place among them. */
        dprl_rng_init_seeded(&rng, seed, 3);
        int64_t draw[50], place[50], first[50], K = 0;
        dprl_prefix_draw(&rng, n, Ts[c], draw);
        for (int64_t j = 0; j < n; j++) place[j] = -1;
        for (int64_t c2 = 0; c2 < Ts[c]; c2++) {
          if (place[draw[c2]] < 0) {
            first[K] = draw[c2];
            place[draw[c2]] = K++;
          }
          draw[c2] = place[draw[c2]];
        }
        traj_buf tb2 = {0};
        for (int64_t c2 = 0; c2 < K; c2++) {
          tb_begin(&tb2);
          for (int64_t p = tr.offsets[first[c2]]; p < tr.offsets[first[c2] + 1]; p++)
            tb_step(&tb2, tr.states[p], tr.actions[p]);
        }
        dprl_trajectories tr2 = tb_view(&tb2);
        int same = dprl_prefix_release_drawn(&pt, &tr2, &pp, &rng, draw, &again, &err) ==
                       DPRL_OK &&
                   again.n_runs == rel.n_runs;
        for (int64_t e = 0; same && e < rel.n_runs; e++)
          same = again.traj[e] == draw[e] && again.k[e] == rel.k[e] &&
                 rel.traj[e] == first[draw[e]];
        CHECK(same, "T: release_drawn over the distinct drawn trajectories = release_run");
        dprl_prefix_release_free(&again);
        tb_free(&tb2);
      } else if (!(ok && distinct && prefix && replay_matches(&pt, &tr, &pp, seed, &rel))) {
        CHECK(0, "T: properties hold for every seed");
      }
      dprl_prefix_release_free(&rel);
    }
  }
  printf("# k histogram over 360 examined trajectories:");
  for (int k = 0; k <= 30; k++)
    if (k_hist[k]) printf(" %d:%lld", k, (long long)k_hist[k]);
  printf("\n");
  tb_free(&tb);
  dprl_policy_free(&pt);
}

int main(void) {
  test_cliff();
  test_tiny_epsilon();
  test_T_and_prefixes();
  return CHECK_DONE();
}
