/*
** test_prefix_stable_policies.c: what dp_prefix_stable checks before it
** releases (prefix_stable.c): the experts' policy table (every entry set,
** at least p_min, rows summing to 1, the messages), the trajectories and
** the draws, and the incremental count_tau against the triple loop of its
** definition on random policies.
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "util_prefix_stable.h"
#include "prefix_stable/prefix_stable.h"

/* ---- policy validation ------------------------------------------------- */

static void expect_msg(int rc, const dprl_error *err, const char *want,
                       const char *what) {
  int ok = rc == DPRL_EINVAL && strcmp(err->msg, want) == 0;
  CHECK(ok, what);
  if (!ok) printf("#   got rc %d \"%s\"\n#   want \"%s\"\n", rc, err->msg, want);
}

static void test_validation(void) {
  dprl_error err = {0};
  dprl_policy_table pt;
  int64_t A = 3;

  /* missing */
  dprl_policy_init(&pt, 3, 6, A, &err);
  for (int64_t i = 0; i < 3; i++)
    for (int64_t s = 0; s < 6; s++)
      for (int64_t a = 0; a < A; a++)
        if (!(i == 1 && s == 4 && a == 2) && !(i == 2 && s == 0 && a == 0))
          dprl_policy_set(&pt, i, s, a, 1.0 / 3, &err);
  CHECK(err.code == DPRL_OK, "validate: filling succeeds");
  expect_msg(dprl_policy_validate(&pt, 0.02, &err), &err,
             "policies: missing (expert 1, state 4, action 2)",
             "validate: first missing entry in (expert, state) order");
  /* duplicate */
  dprl_error_clear(&err);
  expect_msg(dprl_policy_set(&pt, 0, 1, 1, 0.3, &err), &err,
             "policies: duplicate (expert 0, state 1, action 1)",
             "set: duplicate entry");
  dprl_error_clear(&err);
  expect_msg(dprl_policy_set(&pt, 1, 4, 2, NAN, &err), &err,
             "policies: expert 1, state 4, action 2: prob must be a finite "
             "number, got nan",
             "set: NaN prob");
  dprl_error_clear(&err);
  expect_msg(dprl_policy_set(&pt, 3, 0, 0, 0.5, &err), &err,
             "policies: expert 3 is outside 0..2", "set: expert out of range");
  dprl_error_clear(&err);
  expect_msg(dprl_policy_set(&pt, 0, 6, 0, 0.5, &err), &err,
             "policies: state 6 is outside 0..5", "set: state out of range");
  dprl_error_clear(&err);
  expect_msg(dprl_policy_set(&pt, 0, 0, -1, 0.5, &err), &err,
             "policies: action -1 is outside 0..2", "set: action out of range");
  dprl_policy_free(&pt);

  /* p_min */
  dprl_error_clear(&err);
  build_policies(&pt, 3, 2, A, uniform_policy, &A);
  pt.prob[dprl_policy_index(&pt, 2, 0, 0)] = 0.49;
  pt.prob[dprl_policy_index(&pt, 2, 0, 1)] = 0.01;
  pt.prob[dprl_policy_index(&pt, 2, 0, 2)] = 0.5;
  CHECK(dprl_policy_validate(&pt, 0.01, &err) == DPRL_OK,
        "validate: prob == p_min is allowed");
  expect_msg(dprl_policy_validate(&pt, 0.02, &err), &err,
             "policies: expert 2, state 0, action 1: prob 0.01 < p_min 0.02",
             "validate: prob below p_min");
  dprl_error_clear(&err);
  pt.prob[dprl_policy_index(&pt, 2, 0, 1)] = nextafter(0.02, 0);
  pt.prob[dprl_policy_index(&pt, 2, 0, 0)] = 0.48;
  expect_msg(dprl_policy_validate(&pt, 0.02, &err), &err,
             "policies: expert 2, state 0, action 1: prob 0.019999999999999997 "
             "< p_min 0.02",
             "validate: a prob one ulp below p_min prints distinctly");
  dprl_error_clear(&err);
  expect_msg(dprl_policy_validate(&pt, 0.5, &err), &err,
             "p_min must be in (0, 1/|A|) = (0, 0.333333), got 0.5",
             "validate: p_min range");
  dprl_policy_free(&pt);

  /* sums */
  int64_t A2 = 2;
  dprl_error_clear(&err);
  build_policies(&pt, 4, 6, A2, uniform_policy, &A2);
  pt.prob[dprl_policy_index(&pt, 3, 5, 1)] = 0.47;
  expect_msg(dprl_policy_validate(&pt, 0.02, &err), &err,
             "policies: expert 3, state 5: probabilities sum to 0.97, not 1 "
             "(tolerance 1e-09)",
             "validate: sum off by 0.03");
  dprl_error_clear(&err);
  pt.prob[dprl_policy_index(&pt, 3, 5, 1)] = 0.5 + 5e-10;
  CHECK(dprl_policy_validate(&pt, 0.02, &err) == DPRL_OK,
        "validate: sum within 1e-9 passes");
  pt.prob[dprl_policy_index(&pt, 3, 5, 1)] = 0.5 + 2e-9;
  expect_msg(dprl_policy_validate(&pt, 0.02, &err), &err,
             "policies: expert 3, state 5: probabilities sum to 1.000000002, "
             "not 1 (tolerance 1e-09)",
             "validate: sum off by 2e-9 fails");
  dprl_error_clear(&err);
  pt.prob[dprl_policy_index(&pt, 3, 5, 1)] = INFINITY;
  expect_msg(dprl_policy_validate(&pt, 0.02, &err), &err,
             "policies: expert 3, state 5: probabilities sum to inf, not 1 "
             "(tolerance 1e-09)",
             "validate: an infinite prob fails the sum");
  dprl_error_clear(&err);
  pt.prob[dprl_policy_index(&pt, 3, 5, 1)] = NAN; /* written directly */
  expect_msg(dprl_policy_validate(&pt, 0.02, &err), &err,
             "policies: missing (expert 3, state 5, action 1)",
             "validate: NaN in the table counts as missing");
  /* Two failures: (expert 1, state 0) comes first in memory (state-major
  ** layout), (expert 0, state 5) first in (expert, state) order, which is
  ** the one the message must name. */
  dprl_error_clear(&err);
  pt.prob[dprl_policy_index(&pt, 3, 5, 1)] = 0.5;
  pt.prob[dprl_policy_index(&pt, 1, 0, 0)] = 0.4;
  pt.prob[dprl_policy_index(&pt, 0, 5, 0)] = 0.01;
  pt.prob[dprl_policy_index(&pt, 0, 5, 1)] = 0.99;
  expect_msg(dprl_policy_validate(&pt, 0.02, &err), &err,
             "policies: expert 0, state 5, action 0: prob 0.01 < p_min 0.02",
             "validate: first failure in (expert, state) order, not memory order");
  dprl_policy_free(&pt);

  /* sizes */
  dprl_error_clear(&err);
  expect_msg(dprl_policy_init(&pt, 0, 2, 2, &err), &err,
             "policies: the number of experts must be >= 1, got 0",
             "init: zero experts");
}

/* ---- trajectory checks ------------------------------------------------- */

static void test_trajectory_checks(void) {
  dprl_error err = {0};
  dprl_policy_table pt;
  int64_t A = 4;
  build_policies(&pt, 5, 4, A, uniform_policy, &A);
  int64_t offsets[] = {0, 3, 6};
  int64_t states[] = {0, 1, 2, 3, 0, 9};
  int64_t actions[] = {0, 1, 2, 3, 0, 1};
  dprl_trajectories tr = {2, offsets, states, actions};
  expect_msg(dprl_trajectories_check(&tr, &pt, &err), &err,
             "trajectory 1, step 2: state 9 is outside the policy table "
             "(states 0..3)",
             "trajectories: state out of range names trajectory and step");
  states[5] = 1;
  actions[4] = 4;
  dprl_error_clear(&err);
  expect_msg(dprl_trajectories_check(&tr, &pt, &err), &err,
             "trajectory 1, step 1: action 4 is outside the policy table "
             "(actions 0..3)",
             "trajectories: action out of range");
  actions[4] = -2;
  dprl_error_clear(&err);
  expect_msg(dprl_trajectories_check(&tr, &pt, &err), &err,
             "trajectory 1, step 1: action -2 is outside the policy table "
             "(actions 0..3)",
             "trajectories: negative action");
  actions[4] = 0;
  dprl_error_clear(&err);
  CHECK(dprl_trajectories_check(&tr, &pt, &err) == DPRL_OK,
        "trajectories: valid data passes");
  offsets[1] = 7;
  expect_msg(dprl_trajectories_check(&tr, &pt, &err), &err,
             "trajectories: offsets must be non-decreasing, got offsets[1] = "
             "7 > offsets[2] = 6",
             "trajectories: offsets out of order");
  offsets[1] = 3;

  /* Through the release: errors before any noise, output left empty. */
  dprl_prefix_params pp;
  dprl_rng rng;
  dprl_prefix_release rel;
  dprl_rng_init_seeded(&rng, 1, 0);
  dprl_error_clear(&err);
  dprl_prefix_params_derive(5, 1e-5, 0.1, A, 3, 3, DPRL_PREFIX_OPTIMAL, &pp, &err);
  /* T = 3 > n = 2 is not an error (that would reveal n): 3 runs, each
  ** drawing one of the 2. */
  CHECK(dprl_prefix_release_run(&pt, &tr, &pp, &rng, &rel, &err) == DPRL_OK &&
            rel.n_runs == 3 && rel.traj != NULL && rel.traj[0] >= 0 && rel.traj[0] < 2 &&
            rel.traj[1] >= 0 && rel.traj[1] < 2 && rel.traj[2] >= 0 && rel.traj[2] < 2,
        "release: T above the number of trajectories: T runs, each drawing one");
  dprl_prefix_release_free(&rel);
  dprl_trajectories none = {0, offsets, states, actions};
  dprl_error_clear(&err);
  CHECK(dprl_prefix_release_run(&pt, &none, &pp, &rng, &rel, &err) == DPRL_OK &&
            rel.n_runs == 3 && rel.traj[0] == -1 && rel.traj[2] == -1 && rel.k[0] == 0 &&
            rel.k[1] == 0 && rel.k[2] == 0,
        "release: no trajectories: T runs that release nothing, no error");
  dprl_prefix_release_free(&rel);
  int64_t bad_draw[3] = {0, 2, 1};
  expect_msg(dprl_prefix_release_drawn(&pt, &tr, &pp, &rng, bad_draw, &rel, &err), &err,
             "run 1: trajectory 2 is outside 0..1", "release_drawn: a draw out of range");
  CHECK(rel.traj == NULL && rel.n_runs == 0, "release_drawn: output empty on error");
  states[2] = 4;
  dprl_error_clear(&err);
  dprl_prefix_params_derive(5, 1e-5, 0.1, A, 2, 3, DPRL_PREFIX_OPTIMAL, &pp, &err);
  expect_msg(dprl_prefix_release_run(&pt, &tr, &pp, &rng, &rel, &err), &err,
             "trajectory 0, step 2: state 4 is outside the policy table "
             "(states 0..3)",
             "release: out-of-range state refused");
  CHECK(rel.traj == NULL && rel.k == NULL && rel.n_runs == 0,
        "release: output empty on error");
  states[2] = 2;
  pt.prob[dprl_policy_index(&pt, 4, 3, 2)] = NAN;
  dprl_error_clear(&err);
  expect_msg(dprl_prefix_release_run(&pt, &tr, &pp, &rng, &rel, &err), &err,
             "policies: missing (expert 4, state 3, action 2)",
             "release: policies validated before any release");
  pt.prob[dprl_policy_index(&pt, 4, 3, 2)] = 0.25;
  dprl_error_clear(&err);
  CHECK(dprl_prefix_release_run(&pt, &tr, &pp, &rng, &rel, &err) == DPRL_OK &&
            rel.n_runs == 2,
        "release: runs once the data is valid");
  dprl_prefix_release_free(&rel);
  dprl_error_clear(&err);
  actions[5] = 4;
  double counts[6];
  expect_msg(dprl_prefix_counts(&pt, states, actions, 6, counts, &err), &err,
             "step 5: (state 1, action 4) is outside the policy table "
             "(4 states, 4 actions)",
             "counts: range-checked");
  dprl_policy_free(&pt);
}

/* ---- incremental count == brute force ---------------------------------- */

/* A random policy with every prob >= p_min: p_min + a share of the rest. */
static double random_policy(int64_t i, int64_t s, int64_t a, void *ctx) {
  (void)i, (void)s, (void)a;
  double p_min = *(double *)ctx;
  return p_min + xs_unit() * 0.3 * (1.0 - 3 * p_min) / 3.0;
}

static void test_counts_bruteforce(void) {
  int64_t ms[] = {1, 7, 8, 37, 64};
  for (size_t c = 0; c < sizeof ms / sizeof ms[0]; c++) {
    dprl_error err = {0};
    dprl_policy_table pt;
    double p_min = 0.05;
    int64_t S = 5, A = 3, len = 40;
    build_policies(&pt, ms[c], S, A, random_policy, &p_min);
    CHECK(dprl_policy_validate(&pt, p_min, &err) == DPRL_OK,
          "bruteforce: random policies are valid");
    double worst = 0;
    for (int rep = 0; rep < 20; rep++) {
      int64_t st[40], ac[40];
      double counts[40];
      for (int64_t j = 0; j < len; j++) {
        st[j] = xs_below(S);
        ac[j] = xs_below(A);
      }
      dprl_prefix_counts(&pt, st, ac, len, counts, &err);
      for (int64_t k = 1; k <= len; k++) {
        double want = brute_count(&pt, st, ac, k);
        double rel = fabs(counts[k - 1] - want) / want;
        if (!(rel <= worst)) worst = rel;
      }
    }
    printf("# m = %lld: worst relative difference %.3g over 800 prefixes\n",
           (long long)ms[c], worst);
    CHECK(worst <= 1e-13, "bruteforce: incremental count = triple loop at every step");
    dprl_policy_free(&pt);
  }
}

int main(void) {
  test_validation();
  test_trajectory_checks();
  test_counts_bruteforce();
  return CHECK_DONE();
}
