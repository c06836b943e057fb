/*
** policy_eval.h: DP-LSW and DP-LSL end to end, from per-state statistics
** to the JSON result:  statistics -> estimator -> sensitivity -> noise ->
** JSON.  Knows nothing of SQLite; the aggregates in sql_policy_eval.c feed
** it statistics built from rows, or given directly (sharded data).
*/
#ifndef DPRL_POLICY_EVAL_H
#define DPRL_POLICY_EVAL_H

#include "policy_eval/feature_matrix.h"
#include "rows/first_visit.h"
#include "dp/noise.h"
#include "dp/plan.h"
#include "dp/sensitivity.h"

typedef enum { DPRL_LSW, DPRL_LSL } dprl_mechanism;
/* Where the noise goes: on theta (the paper's output perturbation, §2-4)
** or on the per-state statistics (§9). */
typedef enum { DPRL_PERTURB_OUTPUT, DPRL_PERTURB_STATISTICS } dprl_perturb;

typedef struct dprl_pe_config {
  dprl_mechanism mech;
  const char *fn; /* SQL name, for messages and the result */
  int64_t n_states;
  dprl_return_rule rule;
  double epsilon, delta;
  dprl_features feat;
  double *w; /* LSW weights, or LSL rho: n_states entries */
  double lambda;
  dprl_calibration calib;
  dprl_perturb perturb;
  int plan; /* parsed for dp_plan: both perturbations are planned */
  int from_stats; /* dp_plan of a _from_stats form (charged per group, ALGORITHMS.md §12) */
  int64_t length_limit; /* the connection's SQLITE_LIMIT_LENGTH (0: none) */
  char *budget;         /* the "budget" option (a ledger name) or NULL */
  dprl_cancel *cancel;  /* set by the caller: asked in every long loop */
  int has_seed;
  uint64_t seed;
  int diagnostic;
  int grouped;      /* rows arrive grouped by episode (streaming path) */
  int64_t episodes; /* from-statistics form: the public m (else -1) */
  int64_t buckets;  /* from-statistics form: shards hash episodes into this
                       many buckets (0: not checked) */
  /* Public quantities derived from Phi and the weights, once. */
  double phi_norm; /* ||Phi||_2 */
  double min_sv;   /* smallest singular value of Gamma^{1/2} Phi (LSW) */
  double rho_inf, rho_l2, rho_sum; /* LSL */
  /* Public calibration (ALGORITHMS.md §4, §6): alpha and beta of Lemma 1,
  ** the grid allowance c (whole grid steps) and the beta psi uses. */
  double alpha, beta, grid_c, beta_psi;
} dprl_pe_config;

/* Parse and check the options of fn.  from_stats: the statistics form
** (requires "episodes", no "grouped").  length_limit: the largest result
** the connection can return (SQLITE_LIMIT_LENGTH); 0 = unchecked.  The
** loops over states poll cancel (may be NULL); c->cancel is NULL after. */
int dprl_pe_config_parse(dprl_pe_config *c, dprl_mechanism mech, const char *fn,
                         const char *text, size_t len, int from_stats,
                         int64_t length_limit, dprl_cancel *cancel, dprl_error *err);
void dprl_pe_config_free(dprl_pe_config *c);

/* dp_plan's options: the mechanism ("dp_lsw" default, "dp_lsl"), the
** options of that mechanism (episodes = m required) and "visits", one
** hypothetical count per state, into *visits (caller frees).  Loops over
** states poll cancel (may be NULL); c->cancel is NULL after. */
int dprl_pe_plan_parse(dprl_pe_config *c, const char *text, size_t len, int64_t **visits,
                       int64_t length_limit, dprl_cancel *cancel, dprl_error *err);
/* The plan: for hypothetical visits, sigma and the expected error (first-
** order standard deviation of each released value) under both
** perturbations, as JSON appended to out.  Reads no data.  Every loop
** over states, the dense n_states^2 d sum and the JSON poll c->cancel. */
int dprl_pe_plan(const dprl_pe_config *c, const int64_t *visits, dprl_buf *out,
                 dprl_error *err);

/* dp_plan of dp_lsw, dp_lsl and their _from_stats forms from the options
** text: the plan's JSON into out and what the release would cost into
** cost (dp/plan.h; perturb "output" unless the options say
** "statistics"). */
int dprl_pe_plan_text(const char *text, size_t len, int64_t length_limit, dprl_cancel *cancel,
                      dprl_buf *out, dprl_plan_cost *cost, dprl_error *err);

/* The scale the output perturbation applies for these counts of m
** episodes (sigma_applied = whole grid steps x grid, ALGORITHMS.md §6). */
int dprl_pe_output_scale(const dprl_pe_config *c, const int64_t *visits, int64_t m,
                         double *sigma_applied, dprl_error *err);

/* Release from statistics (st->m episodes): appends the JSON to out. */
int dprl_pe_release(const dprl_pe_config *c, const dprl_fv_stats *st,
                    dprl_buf *out, dprl_error *err);

/* Options known to each function (NULL-ended), for tests and docs. */
extern const char *const dprl_lsw_option_names[];
extern const char *const dprl_lsl_option_names[];
extern const char *const dprl_plan_option_names[];

#endif
