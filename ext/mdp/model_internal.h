/*
** model_internal.h: what model.c, model_sparse.c, policy_read.c and mdp_interval.c
** share and nothing else uses: the model reader's checks (errors named "model: ...") and
** the pieces of the estimate both layouts use.
*/
#ifndef DPRL_MDP_MODEL_INTERNAL_H
#define DPRL_MDP_MODEL_INTERNAL_H

#include "mdp/model.h"

/* A required member of the model; "model: key \"sigma\" is missing". */
const dprl_json *dprl_mdpv_member(const dprl_json *root, const char *key, dprl_error *err);
/* What v is, for a message ("an array of 3 numbers"); returns 0. */
int dprl_mdpv_got(const dprl_json *v, char *out, size_t n);
/* "3 items", "1 item". */
void dprl_mdpv_plural(char *out, size_t n, size_t k, const char *noun);
/* v (named what) must be an array of exactly n finite numbers; its values. */
const double *dprl_mdpv_numbers(const dprl_json *v, const char *what, size_t n, const char *size,
                                dprl_error *err);
/* v (named what) must be an array of n arrays. */
int dprl_mdpv_arrays(const dprl_json *v, const char *what, size_t n, const char *size,
                     dprl_error *err);

/* Member key of root: S rows of A numbers (totals, ends, reward_sums,
** censored) into *rows. */
int dprl_mdpv_pair_rows(const dprl_json *root, const char *key, const dprl_mdpv_model *m,
                        const double ***rows, dprl_error *err);

/* Room for need entries of next/prob (at most most). */
int dprl_mdpv_grow(dprl_mdpv_est *e, size_t need, size_t most, dprl_error *err);
/* A bound on the rounding of a reward (ALGORITHMS.md §14.2). */
double dprl_mdpv_reward_rounding(const dprl_mdpv_model *m, int64_t n, double q, double x);
/* The start distribution from the start counts (redrawn when asked). */
void dprl_mdpv_estimate_start(const dprl_mdpv_model *m, double t, dprl_rng *redraw,
                              double *scratch, dprl_mdpv_est *e);

/* The sparse layout (model_sparse.c): its parts, after the header. */
int dprl_mdpv_read_sparse(const dprl_json *root, dprl_mdpv_model *m, dprl_cancel *cancel,
                          dprl_error *err);
int dprl_mdpv_estimate_sparse(const dprl_mdpv_model *m, const dprl_mdpv_est_opts *o,
                              dprl_rng *redraw, double *scratch, dprl_mdpv_est *e,
                              dprl_cancel *cancel, dprl_error *err);

#endif
