/*
** model.h: a dp_mdp release (the model JSON of the contract in
** ALGORITHMS.md §13) read into arrays, and the MDP estimated from it
** (ALGORITHMS.md §14): transition probabilities, rewards and the start
** distribution.  Post-processing only: everything here is computed from
** the released, public numbers.
*/
#ifndef DPRL_MDP_MODEL_H
#define DPRL_MDP_MODEL_H

#include "base/core.h"
#include "base/json.h"
#include "dp/noise.h"

/* The most count entries (n_states * n_actions * (n_states + 1)) a model
** may have: the largest array of doubles one allocation grants. */
#define DPRL_MDPV_MAX_ENTRIES ((int64_t)(DPRL_MAX_ALLOC / sizeof(double)))

/* The largest magnitude of any number in a model.  Counts redrawn with
** 13 sigma (the polar method's largest normal), summed over 2^31 entries,
** and values of H or 1/(1 - gamma) <= 10^12 times the rewards stay far
** from overflow: nothing in an estimate, a solve or a bootstrap becomes
** infinite or NaN. */
#define DPRL_MDPV_NUMBER_MAX 1e150

typedef struct dprl_mdpv_model {
  int64_t S, A;              /* states (tent: anchors; aggregate or map: groups) and actions */
  double gamma, rmin, rmax;  /* as given to the release */
  double center;             /* reward_center c: reward sums are of r - c */
  double sigma;              /* noise sd of every count entry (start and counts) */
  double reward_sigma;       /* noise sd of every reward sum */
  int64_t horizon;           /* the release's H, 0 when it had none */
  double clip;               /* the release's bound on an episode's norm, 0 when it had none */
  int tent;                  /* features: 0 tabular (or groups: aggregate, map), 1 tent */
  double tent_low, tent_high;
  const double *start;       /* [S] released start counts */
  const double **counts;     /* dense: [S*A] rows of S + 1 released counts; [S] = episode ended */
  const double **reward_sums; /* [S] rows of A released reward sums */
  /* "transitions": "sparse" (ALGORITHMS.md §13.5): no counts; per pair its
  ** released total N(s,a), its ended count and its kept cells */
  int sparse;
  double threshold;          /* the release's tau: a cell below it was not kept */
  const double **totals;     /* [S] rows of A */
  const double **ends;       /* [S] rows of A */
  /* per-episode outcomes (dp_mdp's outcome argument), either layout: the
  ** released censored ends, [S] rows of A; NULL without */
  const double **censored;
  int64_t *cell_row;         /* [S*A + 1]: pair sa's cells are [cell_row[sa], cell_row[sa+1]) */
  int32_t *cell_next;        /* their next states */
  double *cell_count;        /* their released counts */
  size_t n_cells;
  dprl_json *root;           /* owns the numbers (a compact tree) */
} dprl_mdpv_model;

/* Parse and check a model: every key of the contract present with the
** right type and shape, every number finite and at most
** DPRL_MDPV_NUMBER_MAX in magnitude, sizes within
** DPRL_MDPV_MAX_ENTRIES.  Errors name "model" and the key
** ("model: counts[2][0] must hold n_states + 1 = 4 numbers, got 3").  The
** parse asks cancel (may be NULL) whether to stop. */
int dprl_mdpv_model_read(dprl_mdpv_model *m, const char *text, size_t len,
                         dprl_cancel *cancel, dprl_error *err);
void dprl_mdpv_model_free(dprl_mdpv_model *m);

/* One policy: pi[s * A + a] = pi(a|s), or (pi NULL) one action act[s] per
** state: a policy of action numbers is 2 bytes of text a state, so it is
** kept in 4, never S * A doubles. */
typedef struct dprl_mdpv_policy {
  const double *pi;
  const int32_t *act;
} dprl_mdpv_policy;

/* Policies to evaluate: memory O(their text) plus S doubles each. */
typedef struct dprl_mdpv_policies {
  size_t n;
  char **names; /* NULL: one policy, given as an array */
  dprl_mdpv_policy *pol;
} dprl_mdpv_policies;

/* A policy: n_states arrays of n_actions probabilities, or n_states
** action numbers; or an object {"name": policy, ...}.  Probabilities (a
** distribution within 1e-9) are divided by their sum: each state's are a
** distribution up to rounding.  Errors name the policy, the state and the
** value. */
int dprl_mdpv_policies_read(const char *text, size_t len, const dprl_mdpv_model *m,
                            dprl_mdpv_policies *p, dprl_error *err);
void dprl_mdpv_policies_free(dprl_mdpv_policies *p);

/* The choices of the estimate (public, post-processing). */
typedef struct dprl_mdpv_est_opts {
  double count_floor; /* a count entry <= count_floor counts as 0 (0: max(c, 0)) */
  double min_count;   /* a pair with N(s,a) <= min_count ends the episode with rmin */
  int censored;       /* 1: the ended column is censoring: P renormalised over the next states */
  int renormalise;    /* sparse: 1, the kept cells (and the end) share the row; 0, the mass
                      ** they do not place goes to the unknown outcome (pessimistic) */
  int optimistic;     /* the interval's upper completion (ALGORITHMS.md §14.4): pessimistic
                      ** pairs end with rmax, the unknown outcome is worth rmax */
} dprl_mdpv_est_opts;

/* The estimated MDP.  P(.|s,a) is stored sparsely: the next states below
** S with positive probability (the probability of ending, column S, adds
** nothing to a value and is not stored). */
typedef struct dprl_mdpv_est {
  int64_t S, A;
  int64_t *row;      /* [S*A + 1]: pair sa's entries are [row[sa], row[sa+1]) */
  int32_t *next;     /* next states */
  double *prob;      /* their probabilities */
  size_t cap;        /* room in next/prob */
  double *reward;    /* [S*A] r(s,a) */
  double *start;     /* [S] the start distribution */
  int64_t pessimistic; /* pairs at or below min_count */
  double rabs;       /* max |reward| */
  int64_t most_next; /* the most next states of a pair (the length of its dot products) */
  double reward_err; /* max |reward - the exact-arithmetic reward of §14.1| (a bound) */
  int start_uniform; /* no start count above the floor: uniform start */
  /* sparse, pessimistic (§14.1): u(s,a), the mass of the pair that goes to
  ** the unknown outcome, a next state worth unknown_value (rmin) while
  ** steps remain; NULL for dense models and with renormalise */
  double *unknown;
  double unknown_value;
  /* the log bootstrap's world (mdp_interval.c) only: the mass of pair sa
  ** that moves to a uniformly random state; NULL otherwise */
  double *spread;
  /* when the caller allocates it ([S*A]): each pair's visits N, 0 for a
  ** pessimistic pair */
  double *visits;
  double unknown_mass; /* sparse: the N-weighted mean over the pairs that are not pessimistic of
                       ** the share of N the release does not place; NaN if there are none */
} dprl_mdpv_est;

/* Estimate the MDP from m (ALGORITHMS.md §14):
**   N(s,a) = sum_s' c+(s,a,s'),  c+ = c if c > count_floor, else 0
**   P(s'|s,a) = c+(s,a,s') / N(s,a),  r(s,a) = clamp(c + R(s,a)/N(s,a), rmin, rmax)
**   start = c+(start) / sum (uniform when the sum is 0)
** and pairs with N <= min_count end the episode with reward rmin (rmax
** with o->optimistic).  With
** censored, P(s'|s,a) = c+(s,a,s') / sum_{k<S} c+(s,a,k) (the ended column
** counts in N, for the rewards, but not in P; a pair with no next state
** above the floor is pessimistic).
** With redraw (a seeded stream), every count is first replaced by
** count + sigma Z and every reward sum by sum + reward_sigma Z (the
** parametric bootstrap); scratch has room for S + 2 doubles.  e keeps its
** buffers between calls (zero it before the first). */
int dprl_mdpv_estimate(const dprl_mdpv_model *m, const dprl_mdpv_est_opts *o, dprl_rng *redraw,
                       double *scratch, dprl_mdpv_est *e, dprl_cancel *cancel, dprl_error *err);
void dprl_mdpv_est_free(dprl_mdpv_est *e);

/* The default min_count: the mean plus three standard deviations of
** N(s,a) for a pair that was never visited: each of its entries pure
** noise N(0, sigma^2), floored entries (the next states) kept above
** count_floor, the others (the end, the censored ends) above 0.  0 when
** sigma is 0.  Dense: S floored, 1 + censored at 0; sparse, N is the
** larger of the total (floored) and the ends (no cell being released for
** such a pair): 1 floored, 1 + censored at 0 bound it. */
double dprl_mdpv_noise_floor(int64_t floored, int64_t at_zero, double sigma, double count_floor);

#endif
