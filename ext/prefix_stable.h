/*
** prefix_stable.h: expert-level private release of stable trajectory
** prefixes (Sharma et al. 2024, Algorithms 1-2; ALGORITHMS.md section 7).
** Plain C over arrays, nothing of SQLite.
**
** The data path of one call:
**   policy rows -> dprl_policy_set (dense table, duplicates refused)
**   -> dprl_policy_validate (no missing entry, every prob >= p_min, each
**      pi_i(.|s) sums to 1 within 1e-9)
**   -> dprl_prefix_params_derive (eps', delta', c_min, theta from eps1,
**      delta1, p_min, T, L)
**   -> dprl_prefix_release (shuffle, then for each of the first T
**      trajectories a noisy threshold and one PrefixQuery per step until
**      the first "bottom") -> one prefix length k per examined trajectory.
**
** count_tau(Pi) = sum_i prod_j pi_i(a_j|s_j) is kept incrementally: one
** running product per expert, updated in O(m) per step over a contiguous
** column of the table (layout below), so the inner loop vectorises.
**
** All indices here are dense 0-based positions (expert 0..m-1, state
** 0..S-1, action 0..A-1, trajectory 0..n-1, step 0..len-1); the SQL layer
** maps its keys to them and may re-word messages with its own ids.
*/
#ifndef DPRL_PREFIX_STABLE_H
#define DPRL_PREFIX_STABLE_H

#include <stddef.h>
#include <stdint.h>

#include "core.h"
#include "noise.h"

/* Tolerance on sum_a pi_i(a|s) = 1. */
#define DPRL_POLICY_SUM_TOL 1e-9

/* ---- The experts' policies ------------------------------------------- */

/* pi_i(a|s) for every expert i, state s, action a, stored at
** prob[(s * n_actions + a) * n_experts + i]: the experts of one (s, a) are
** contiguous, which is the column one step of count_tau multiplies in.
** NaN marks an entry never given (dprl_policy_set refuses NaN input, so a
** NaN in the table always means "missing"). */
typedef struct dprl_policy_table {
  int64_t n_experts; /* m */
  int64_t n_states;  /* |S| */
  int64_t n_actions; /* |A| */
  double *prob;
} dprl_policy_table;

/* Allocate an m x S x A table with every entry missing (NaN). Sizes must be
** >= 1 (and the table addressable); messages name the bad size. */
int dprl_policy_init(dprl_policy_table *pt, int64_t n_experts,
                     int64_t n_states, int64_t n_actions, dprl_error *err);
void dprl_policy_free(dprl_policy_table *pt);

/* Index of pi_expert(action|state) in pt->prob (no range check). */
static inline size_t dprl_policy_index(const dprl_policy_table *pt,
                                       int64_t expert, int64_t state,
                                       int64_t action) {
  return ((size_t)state * (size_t)pt->n_actions + (size_t)action) *
             (size_t)pt->n_experts +
         (size_t)expert;
}

/* Store one policy row. Errors: an index outside the table, a prob that is
** not a finite number, or an entry given twice:
**   "policies: duplicate (expert 1, state 4, action 2)". */
int dprl_policy_set(dprl_policy_table *pt, int64_t expert, int64_t state,
                    int64_t action, double prob, dprl_error *err);

/* The checks the guarantee rests on (Assumption 3), run before any release.
** p_min must be in (0, 1/|A|). Then, in order of (expert, state): every
** action present, every prob >= p_min, and the probs summing to 1 within
** DPRL_POLICY_SUM_TOL. The first failure is reported, e.g.
**   "policies: missing (expert 1, state 4, action 2)"
**   "policies: expert 2, state 0, action 1: prob 0.01 < p_min 0.02"
**   "policies: expert 3, state 5: probabilities sum to 0.97, not 1
**    (tolerance 1e-9)" */
int dprl_policy_validate(const dprl_policy_table *pt, double p_min,
                         dprl_error *err);

/* ---- Parameters (Algorithm 2, line 2-3 and 7) ------------------------- */

typedef struct dprl_prefix_params {
  double eps1, delta1, p_min; /* inputs */
  int64_t T, L;               /* inputs */
  double eps_prime;   /* eps' = eps1 / sqrt(32 T ln(2/delta1)) */
  double delta_prime; /* delta' = delta1 / (2 T L) */
  double c_min;       /* e^eps' / (e^eps' - 1) */
  double theta;       /* c_min / p_min */
  /* theta + (4/eps') ln(1/delta'): the noiseless part of theta-hat */
  double threshold_base;
  double b_threshold; /* Laplace scale of theta-hat's noise: 2/eps' */
  double b_query;     /* Laplace scale of each PrefixQuery: 4/eps' */
  double grid;        /* dprl_grid_for(2/eps') <= 1, used for both draws */
} dprl_prefix_params;

/* Validate eps1 > 0, delta1 in (0,1), p_min in (0, 1/n_actions), T >= 1,
** L >= 1 and derive the rest (ALGORITHMS.md section 7). An eps1 so small
** that 4/eps' or theta overflows, or that eps' < 2^-25 (the noise grid for
** 2/eps' would be coarser than the count's sensitivity 1; theta is then
** > 2^25/p_min, beyond any realistic number of experts), is refused with a
** message. T <= the number of trajectories is checked by
** dprl_prefix_release_run. */
int dprl_prefix_params_derive(double eps1, double delta1, double p_min,
                              int64_t n_actions, int64_t T, int64_t L,
                              dprl_prefix_params *out, dprl_error *err);

/* ---- Trajectories ----------------------------------------------------- */

/* n trajectories in flat arrays: trajectory j has the steps
** [offsets[j], offsets[j+1]) of states[] and actions[] (s_1, a_1, s_2, ...
** in the paper's notation); offsets has n+1 non-decreasing entries. */
typedef struct dprl_trajectories {
  int64_t n;
  const int64_t *offsets;
  const int64_t *states;
  const int64_t *actions;
} dprl_trajectories;

/* Every offset in order and every state/action inside the policy table:
**   "trajectory 3, step 7: state 12 is outside the policy table
**    (states 0..9)". */
int dprl_trajectories_check(const dprl_trajectories *tr,
                            const dprl_policy_table *pt, dprl_error *err);
/* Length of the longest trajectory (the default L), 0 if n == 0. */
int64_t dprl_trajectories_longest(const dprl_trajectories *tr);

/* ---- count_tau and the two noisy primitives -------------------------- */

/* counts[j] = count_{tau_{1:j+1}}(Pi) for j = 0..len-1 (no early stop),
** computed by the same incremental kernel the release uses. States and
** actions are range-checked. Exposed for tests and diagnostics: counts are
** NOT private. */
int dprl_prefix_counts(const dprl_policy_table *pt, const int64_t *states,
                       const int64_t *actions, int64_t len, double *counts,
                       dprl_error *err);

/* theta-hat minus threshold_base: g * Z, Z discrete Laplace of scale
** b_threshold on the grid g (Algorithm 2, line 7). */
int dprl_prefix_threshold_noise(dprl_rng *rng, const dprl_prefix_params *pp,
                                double *noise, dprl_error *err);

/* Algorithm 1: *top = 1 iff count + Lap(4/eps') > theta-hat, where
** theta-hat = threshold_base + threshold_noise. */
int dprl_prefix_query(dprl_rng *rng, const dprl_prefix_params *pp,
                      double count, double threshold_noise, int *top,
                      dprl_error *err);

/* ---- The release (Algorithm 2) --------------------------------------- */

typedef struct dprl_prefix_release {
  int64_t n_examined; /* = T */
  int64_t *traj;      /* traj[c]: index of the c-th examined trajectory */
  int64_t *k;         /* k[c]: released prefix length, 0..min(len, L) */
} dprl_prefix_release;

/* Validate the policies (with pp->p_min) and trajectories, check
** T <= n, then shuffle the trajectories with rng and, for each of the
** first T, release the longest prefix tau_{1:k} whose PrefixQueries all
** returned "top" (k = 0: nothing). A trajectory longer than L is examined
** on its first L steps only; one shorter than L stops at its end as if that
** were L. The released rows for traj[c] are its steps 0..k[c]-1, each with
** next state s_{j+1} where it exists. On error *out is left empty. */
int dprl_prefix_release_run(const dprl_policy_table *pt,
                            const dprl_trajectories *tr,
                            const dprl_prefix_params *pp, dprl_rng *rng,
                            dprl_prefix_release *out, dprl_error *err);
void dprl_prefix_release_free(dprl_prefix_release *r);

#endif
