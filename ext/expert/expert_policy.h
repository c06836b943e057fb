/*
** expert_policy.h: a private consensus policy at expert level
** (dp_expert_policy; ALGORITHMS.md §16).  Plain C over arrays.
**
** Each expert i has a log of steps (episode, t, state, action).  From it,
** pi_i(a|s) = n_i(s,a) / n_i(s), the share of the expert's steps at s that
** took a.  With a public max_states k, an expert contributes at its k most
** visited states only (ties: the lower state), a choice made from that
** expert's rows alone.  Per state s:
**   V[s][a] = sum over experts with data at s of pi_i(a|s),
**   C[s]    = the number of experts with data at s.
** Adding or removing one expert moves (V, C) by the expert's own
** contribution, at most k states of (pi_i(.|s), 1): l2 norm at most
** sqrt(2k).  Each pi_i(a|s) is rounded to the grid once, per expert, in
** integer arithmetic, so the sums are exact integers in grid steps and the
** sensitivity in steps is Delta_g = sqrt(k ((2^b + sqrt(A)/2)^2 + 4^b))
** (1/g = 2^b).  One discrete Gaussian of scale s = ceil(Delta_g sigma1)
** steps is added to every entry of (V, C), sigma1 the analytic Gaussian
** scale for sensitivity 1 at (epsilon, delta).  Everything after the noise
** (consensus action, distribution, standard error, defaulting) is
** post-processing of the noisy (V, C) and public options.
*/
#ifndef DPRL_EXPERT_POLICY_H
#define DPRL_EXPERT_POLICY_H

#include "base/core.h"
#include "dp/plan.h"

/* Rows kept by one release: the rows' arrays are 24 bytes a row and one
** allocation, and this bound also keeps every sum of grid steps below
** 2^51 (at most 2^26 experts times 2^25 steps each; noise.c needs < 2^52). */
#define DPRL_EP_MAX_ROWS ((size_t)1 << 26)
/* States times actions: the per-cell arrays of a release. */
#define DPRL_EP_MAX_CELLS ((int64_t)1 << 26)

/* The public calibration (from the options alone). */
typedef struct dprl_ep_noise {
  int64_t k;          /* the most states one expert contributes to: min(max_states, S) */
  double sigma1;      /* the analytic Gaussian scale for sensitivity 1 */
  int bits;           /* b: the grid is g = 2^-b, 0 <= b <= 25 */
  double grid;        /* g */
  double sens_steps;  /* Delta_g, in grid steps, rounding included */
  uint64_t steps;     /* s = ceil(Delta_g sigma1) grid steps */
  double sens;        /* Delta_g g, in votes (experts) */
  double sigma;       /* s g: the scale on every vote and count */
  double rho;         /* the zCDP cost Delta_g^2 / (2 s^2) */
} dprl_ep_noise;

/* sigma1 from (epsilon, delta), the grid and the scale for k states per
** expert and A actions.  DPRL_EINVAL (naming public values only) when
** unusable. */
int dprl_ep_calibrate(double epsilon, double delta, int64_t k, int64_t n_actions,
                      dprl_ep_noise *nz, dprl_error *err);
/* Delta_g for k states, A actions and the grid 2^-bits (for the tests). */
double dprl_ep_sens_steps(int64_t k, int64_t n_actions, int bits);

typedef struct dprl_ep_config {
  const char *fn; /* the SQL name, for messages */
  int64_t n_states, n_actions;
  double epsilon, delta;
  int64_t default_action;
  int64_t max_states; /* as given; 0: none */
  int has_min_count;
  double min_count; /* the threshold applied (default 3 sigma) */
  int has_seed;
  uint64_t seed;
  int diagnostic;
  char *budget;
  int64_t length_limit; /* SQLITE_LIMIT_LENGTH (0: unchecked) */
  dprl_ep_noise nz;
  /* dp_plan only: the hypothetical sizes */
  int plan;
  double experts, agreement, coverage;
} dprl_ep_config;

/* Options of the release (plan = 0) or of dp_plan (plan = 1): every
** refusal here depends on the options alone.  length_limit: the largest
** result the connection can return (0: unchecked). */
int dprl_ep_config_parse(dprl_ep_config *c, const char *fn, const char *text, size_t len,
                         int plan, int64_t length_limit, dprl_cancel *cancel, dprl_error *err);
void dprl_ep_config_free(dprl_ep_config *c);

extern const char *const dprl_expert_option_names[];
extern const char *const dprl_expert_plan_option_names[];

/* ---- the rows ------------------------------------------------------------ */

/* One step, keys as dense indices (the glue interns them). */
typedef struct dprl_ep_row {
  uint32_t expert, episode;
  int64_t t;
  uint32_t state, action;
} dprl_ep_row;

typedef struct dprl_ep_rows {
  dprl_ep_row *v;
  size_t n, cap;
} dprl_ep_rows;

/* Append a row; DPRL_EINVAL past DPRL_EP_MAX_ROWS. */
int dprl_ep_rows_push(dprl_ep_rows *r, const dprl_ep_row *row, dprl_error *err);
void dprl_ep_rows_free(dprl_ep_rows *r);

/* The exact tallies in grid steps (ALGORITHMS.md §16.2). */
typedef struct dprl_ep_tally {
  int64_t *votes;   /* [S*A]: sum over experts of round(pi_i(a|s) 2^bits) */
  int64_t *experts; /* [S]: experts with data at s (contributing there) */
  double *exact;    /* [S*A]: sum of pi_i(a|s) in doubles (diagnostic), or NULL */
  int64_t n_experts;
} dprl_ep_tally;

/* Where a duplicate (expert, episode, t) was found, for the glue's message. */
typedef struct dprl_ep_dup {
  uint32_t expert, episode;
  int64_t t;
} dprl_ep_dup;

/* Sorts the rows (they are reordered), refuses a duplicate (expert,
** episode, t) (DPRL_EINVAL, *dup says where), then adds every expert's
** contribution at its k most visited states.  want_exact: also fill
** t->exact.  prints: NULL, or one entry per expert index, set to the print
** of the expert's rows (rows/print.h).  Polls cancel.  Free with
** dprl_ep_tally_free. */
int dprl_ep_tally_rows(dprl_ep_rows *rows, int64_t n_states, int64_t n_actions, int64_t k,
                       int bits, int want_exact, dprl_ep_tally *t, dprl_ep_dup *dup,
                       uint64_t *prints, dprl_cancel *cancel, dprl_error *err);
void dprl_ep_tally_free(dprl_ep_tally *t);

/* ---- the release --------------------------------------------------------- */

/* The released arrays and their post-processing. */
typedef struct dprl_ep_release {
  double *votes;        /* [S*A] noisy votes */
  double *counts;       /* [S] noisy counts of experts */
  double *distribution; /* [S*A] */
  double *stderr_;      /* [S]; NaN where defaulted */
  int64_t *policy;      /* [S] */
  unsigned char *defaulted; /* [S] */
} dprl_ep_release;

/* The post-processing of ALGORITHMS.md §16.4 for noisy votes and counts
** already in r (public rule: a state whose noisy count is below min_count
** takes default_action). */
int dprl_ep_post(const dprl_ep_config *c, dprl_ep_release *r, dprl_cancel *cancel,
                 dprl_error *err);

/* Noise on the tallies, post-processing, and the JSON into out. */
int dprl_ep_release_json(const dprl_ep_config *c, const dprl_ep_tally *t, dprl_buf *out,
                         dprl_cancel *cancel, dprl_error *err);

/* ---- planning (plan.c) --------------------------------------------------- */

/* The probability that the noisy vote picks the majority action at a state
** with n experts of whom a share q takes it, A actions and noise sigma per
** vote: exact for A = 2, a lower bound for A > 2 (ALGORITHMS.md §16.6). */
double dprl_ep_p_majority(double n, double q, int64_t n_actions, double sigma);

/* dp_plan of dp_expert_policy (dp/plan.h): sigma, the sensitivity and the
** planned accuracy at hypothetical "experts", "agreement" and "coverage". */
int dprl_expert_plan(const char *text, size_t len, int64_t length_limit, dprl_cancel *cancel,
                     dprl_buf *out, dprl_plan_cost *cost, dprl_error *err);

#endif
