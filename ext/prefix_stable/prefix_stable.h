/*
** prefix_stable.h: expert-level private release of stable trajectory
** prefixes (Sharma et al. 2024, Algorithms 1-2; ALGORITHMS.md section 7).
** Plain C over arrays, nothing of SQLite.
**
** The data path of one call:
**   policy rows -> dprl_policy_set (dense table, duplicates refused)
**   -> dprl_policy_validate (no missing entry, every prob >= p_min, each
**      pi_i(.|s) sums to 1 within 1e-9)
**   -> dprl_prefix_params_derive (eps' by the accountant, delta', c_min,
**      theta from the public eps1, delta1, p_min, T, L)
**   -> dprl_prefix_release_run (T runs, each drawing a trajectory
**      uniformly with replacement, then a noisy threshold and one
**      PrefixQuery per step until the first "bottom") -> one prefix length
**      k per run.
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

#include "base/core.h"
#include "base/options.h"
#include "dp/accountant.h"
#include "dp/noise.h"
#include "dp/plan.h"

/* Tolerance on sum_a pi_i(a|s) = 1. */
#define DPRL_POLICY_SUM_TOL 1e-9

/* ---- The experts' policies ------------------------------------------- */

/* pi_i(a|s) for every expert i, state s, action a, stored at
** prob[(s * n_actions + a) * n_experts + i]: the experts of one (s, a) are
** contiguous, which is the column one step of count_tau multiplies in.
** NaN marks an entry never given (dprl_policy_set refuses NaN input, so a
** NaN in the table always means "missing"). */
/* How messages name an expert, state or action: the caller's own id (the
** SQL layer writes the key as given: 42 or 'dr1'); without a namer, the
** index. */
typedef enum { DPRL_ID_EXPERT, DPRL_ID_STATE, DPRL_ID_ACTION } dprl_id_kind;
typedef void (*dprl_id_namer)(void *ctx, dprl_id_kind kind, int64_t index, char *out,
                              size_t n);

typedef struct dprl_policy_table {
  int64_t n_experts; /* m */
  int64_t n_states;  /* |S| */
  int64_t n_actions; /* |A| */
  double *prob;
  dprl_id_namer namer; /* may be NULL; set after dprl_policy_init */
  void *namer_ctx;
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
**   "policies: duplicate (expert 'dr1', state 4, action 2)". */
int dprl_policy_set(dprl_policy_table *pt, int64_t expert, int64_t state,
                    int64_t action, double prob, dprl_error *err);

/* The checks the guarantee rests on (Assumption 3), run before any release.
** p_min must be in (0, 1/|A|). Then, in order of (expert, state): every
** action present, every prob >= p_min, and the probs summing to 1 within
** DPRL_POLICY_SUM_TOL. The first failure is reported, with the namer's
** ids, e.g.
**   "policies: missing (expert 'dr1', state 4, action 2)"
**   "policies: expert 'dr2', state 0, action 1: prob 0.01 < p_min 0.02"
**   "policies: expert 'dr3', state 5: probabilities sum to 0.97, not 1
**    (tolerance 1e-9)" */
int dprl_policy_validate(const dprl_policy_table *pt, double p_min,
                         dprl_error *err);

/* ---- Parameters (Algorithm 2, line 2-3 and 7) ------------------------- */

/* Public bounds on the options (not on the data). */
#define DPRL_PREFIX_MAX_T 1000000     /* trajectories examined */
#define DPRL_PREFIX_MAX_EPS 1e6       /* eps1 */

/* How eps' is chosen from (eps1, delta1, T). Either way each examined
** trajectory is (2 eps', delta1/(2T))-DP (Theorem 5.3) and the T of them
** must compose to (eps1, <= delta1), checked with dprl_composition_delta:
**  - OPTIMAL: the largest eps' (bisection) for which the exact composition
**    is (eps1, <= delta1);
**  - PAPER: the printed eps' = eps1 / sqrt(32 T ln(2/delta1)) (advanced
**    composition, Dwork-Roth Cor. 3.21, which assumes eps < 1), refused
**    where its exact composition exceeds delta1 at eps1. */
typedef enum dprl_prefix_accountant {
  DPRL_PREFIX_OPTIMAL = 0,
  DPRL_PREFIX_PAPER = 1
} dprl_prefix_accountant;

/* "optimal", "paper", NULL: the option's values, in enum order. */
extern const char *const dprl_prefix_accountant_names[];

/* Relative margin of the accountant: eps' is accepted only when the
** computed composed delta is <= delta1 (1 - DPRL_PREFIX_DELTA_MARGIN), far
** more than the sum's floating-point error (about 1e-9 relative at most,
** for T = DPRL_PREFIX_MAX_T), so rounding never lands on the unsafe side. */
#define DPRL_PREFIX_DELTA_MARGIN 1e-6

typedef struct dprl_prefix_params {
  double eps1, delta1, p_min; /* inputs */
  int64_t T, L;               /* inputs */
  dprl_prefix_accountant accountant;
  double eps_prime;   /* per the accountant (see above) */
  /* The exact delta at eps1 of T compositions of (2 eps', delta1/(2T)):
  ** <= delta1 (1 - DPRL_PREFIX_DELTA_MARGIN). */
  double delta_composed;
  double delta_prime; /* delta' = delta1 / (2 T L) */
  double c_min;       /* e^eps' / (e^eps' - 1) */
  double theta;       /* c_min / p_min */
  /* theta + (4/eps') ln(1/delta'): the noiseless part of theta-hat */
  double threshold_base;
  double b_threshold; /* Laplace scale of theta-hat's noise: 2/eps' */
  double b_query;     /* Laplace scale of each PrefixQuery: 4/eps' */
  double grid;        /* dprl_grid_for(2/eps') <= 1, used for both draws */
  dprl_cancel *cancel; /* asked during the release (NULL: never stops) */
} dprl_prefix_params;

/* Validate eps1 in (0, DPRL_PREFIX_MAX_EPS], delta1 in (0,1), p_min in
** (0, 1/n_actions), T in 1..DPRL_PREFIX_MAX_T, L >= 1, and derive the rest
** (ALGORITHMS.md sections 7 and 10). Every input is public: nothing here
** depends on the data (the SQL layer passes n_actions = 1 before reading
** any row, and dprl_policy_validate checks p_min < 1/|A| later). Refused
** with a message: the paper's eps' where its exact composition exceeds
** delta1; an eps1 so small that 4/eps' or theta overflows, or that
** eps' < 2^-25 (the noise grid for 2/eps' would be coarser than the count's
** sensitivity 1; theta is then > 2^25/p_min, beyond any realistic number
** of experts). T is the number of runs whatever the number of
** trajectories (dprl_prefix_release_run). */
int dprl_prefix_params_derive(double eps1, double delta1, double p_min,
                              int64_t n_actions, int64_t T, int64_t L,
                              dprl_prefix_accountant accountant,
                              dprl_prefix_params *out, dprl_error *err);

/* The options that fix the calibration, as dp_prefix_stable,
** dp_prefix_calibrate and dp_plan read them (plan.c): epsilon, delta,
** p_min, T, L (required) and accountant (default "optimal"), each checked
** against its range with a message naming the option; the rest
** (p_min < 1/|A|, the accountant's own refusals) is
** dprl_prefix_params_derive's, called with n_actions = 1. */
typedef struct dprl_prefix_calib_in {
  double epsilon, delta, p_min;
  int64_t T, L;
  int accountant; /* dprl_prefix_accountant */
} dprl_prefix_calib_in;
int dprl_prefix_read_calibration(const dprl_options *o, dprl_prefix_calib_in *in);

/* ---- Planning (ALGORITHMS.md section 7.2) ----------------------------- */

/* The most lengths an "agreement" profile of dp_plan may give: the plan's
** work grows with the square of its length. */
#define DPRL_PREFIX_PLAN_MAX_PROFILE 1000

/* One run at hypothetical counts, for the continuous Laplace noise of
** pp's scales (section 7.2): counts[j] is the count of the prefix of
** length j + 1, non-increasing, for the n steps the run examines
** (n_counts = 1: counts[0] at every step; else n <= n_counts). */
typedef struct dprl_prefix_expectation {
  double p_release;     /* P(k >= 1): the run releases a prefix */
  double log_p_release; /* its natural log (finite where p_release underflows) */
  double length;        /* E[k | k >= 1]: the expected length of a released prefix */
  double normalizer;    /* the quadrature of P(k >= 1) / p_release: 1 up to its error */
} dprl_prefix_expectation;
int dprl_prefix_expect(const dprl_prefix_params *pp, const double *counts, int64_t n_counts,
                       int64_t n, dprl_cancel *cancel, dprl_prefix_expectation *out,
                       dprl_error *err);

/* dp_plan of dp_prefix_stable (study.h's dprl_plan_fn): from its
** calibration options and the hypothetical "experts" and "agreement"
** ("length" optional), the threshold, the most a count can reach and the
** expected number and length of the released prefixes, as JSON into out;
** what the release would cost into cost. */
int dprl_prefix_plan(const char *text, size_t len, int64_t length_limit, dprl_cancel *cancel,
                     dprl_buf *out, dprl_plan_cost *cost, dprl_error *err);

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
  int64_t n_runs; /* T, whatever the data */
  int64_t *traj;  /* traj[c]: the trajectory run c drew, -1 when there is none */
  int64_t *k;     /* k[c]: released prefix length, 0..min(len, L) (0 if traj[c] < 0) */
} dprl_prefix_release;

/* The draw of T runs (ALGORITHMS.md section 7): draw[c] uniform on
** 0..n-1, independent (with replacement), by dprl_rng_below in run order;
** n = 0 gives -1 everywhere and uses no randomness. */
void dprl_prefix_draw(dprl_rng *rng, int64_t n, int64_t T, int64_t *draw);

/* Validate the policies (with pp->p_min) and trajectories, then run T
** times: each run draws a trajectory uniformly with replacement
** (dprl_prefix_draw, before any noise) and releases its longest prefix
** tau_{1:k} whose PrefixQueries all returned "top" (k = 0: nothing). The
** number of runs is T whatever n is; n = 0 (no trajectory to draw) gives T
** runs that release nothing, an outcome every input can produce
** (ALGORITHMS.md section 7). A trajectory longer than L is examined on its
** first L steps only (no count or query uses a later step; every step is
** still range-checked); one shorter than L stops at its end as if that
** were L. The released rows of run c are steps 0..k[c]-1 of traj[c], each
** with next state s_{j+1} where it exists. On error *out is left empty. */
int dprl_prefix_release_run(const dprl_policy_table *pt,
                            const dprl_trajectories *tr,
                            const dprl_prefix_params *pp, dprl_rng *rng,
                            dprl_prefix_release *out, dprl_error *err);
/* The same release with the draw already made (the SQL layer reads only
** the trajectories drawn, ALGORITHMS.md section 7.1): draw[c] in
** 0..tr->n-1 is run c's trajectory, for c < pp->T, or -1 for none (only
** when tr->n = 0; draw may then be NULL). Refused: an index out of range. */
int dprl_prefix_release_drawn(const dprl_policy_table *pt,
                              const dprl_trajectories *tr,
                              const dprl_prefix_params *pp, dprl_rng *rng,
                              const int64_t *draw, dprl_prefix_release *out,
                              dprl_error *err);
void dprl_prefix_release_free(dprl_prefix_release *r);

#endif
