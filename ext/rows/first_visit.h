/*
** first_visit.h: episodes -> first-visit returns and the signature
** (Balle, Gomrokchi, Precup 2016, §2.2; ALGORITHMS.md §1).
**
** The per-state statistics (m, |X_s|, sum of clamped first-visit returns)
** are all the private step needs, and they are mergeable: statistics of
** disjoint sets of episodes add up.  That is what lets the per-episode work
** run anywhere (another shard, another SQL engine).
*/
#ifndef DPRL_FIRST_VISIT_H
#define DPRL_FIRST_VISIT_H

#include "base/core.h"
#include "base/options.h"
#include "rows/steps.h"

/* How returns are computed and clamped; all public constants.  Rewards
** are clamped to [rmin, rmax]; first-visit returns to [fmin, fmax], by
** default [min(0, rmin), max(0, rmax)] / (1 - gamma), the range every
** return lies in.  0 is always inside [fmin, fmax]: an unvisited state's
** F_X(s) = 0 must lie in the range the sensitivity analysis assumes
** (ALGORITHMS.md §1, §9). */
typedef struct dprl_return_rule {
  double gamma;      /* [0,1); 1 only with fmax (and fmin when rmin < 0) */
  double rmin, rmax; /* rewards clamped to [rmin, rmax], rmin < rmax */
  double fmin, fmax; /* first-visit returns clamped to [fmin, fmax] */
  int has_fmax, has_fmin; /* given as options (else the defaults above) */
  int64_t max_states; /* > 0: an episode contributes its first max_states
                         first-visits only (contribution bound, §9); 0: all */
} dprl_return_rule;

/* Options gamma (required), rmin (default 0), rmax (default 1), fmin and
** fmax (optional), max_states (optional). */
int dprl_return_rule_parse(const dprl_options *o, dprl_return_rule *r);

/* B of ALGORITHMS.md §1 and §9: the width fmax - fmin of the range. */
double dprl_return_bound(const dprl_return_rule *r);

typedef struct dprl_fv_stats {
  int64_t n_states;
  int64_t m;          /* episodes */
  int64_t *visits;    /* |X_s|: episodes visiting s */
  double *return_sum; /* sum over those episodes of the clamped F_{x,s} */
} dprl_fv_stats;

/* Zeroed arrays of n_states entries; the zeroing polls cancel (may be NULL). */
int dprl_fv_stats_init(dprl_fv_stats *st, int64_t n_states, dprl_cancel *cancel,
                       dprl_error *err);
void dprl_fv_stats_free(dprl_fv_stats *st);
/* F_X(s): mean first-visit return, 0 for unvisited states. */
double dprl_fv_mean(const dprl_fv_stats *st, int64_t s);

/* Reusable per-call scratch (returns of one episode, first-visit marks). */
typedef struct dprl_fv_scratch {
  double *G;
  size_t cap;
  uint64_t *stamp; /* per state: number of the last episode that visited */
  uint64_t episode_no;
} dprl_fv_scratch;

int dprl_fv_scratch_init(dprl_fv_scratch *sc, int64_t n_states, dprl_cancel *cancel,
                         dprl_error *err);
void dprl_fv_scratch_free(dprl_fv_scratch *sc);

/* Called once per (episode, first-visited state), in time order. */
typedef int (*dprl_fv_emit)(void *ctx, uint32_t state, int64_t t_first,
                            double first_visit_return);

/* Add one episode (steps sorted by t, states < n_states) to st (may be NULL
** when only emit is wanted).  Returns G_t = r_t + gamma G_{t+1} over the
** steps in order, rewards clamped to [rmin, rmax], then F clamped to
** [fmin, fmax]. */
int dprl_fv_add_episode(dprl_fv_stats *st, dprl_fv_scratch *sc,
                        const dprl_return_rule *rule, const dprl_step *steps,
                        size_t n, dprl_fv_emit emit, void *ctx, dprl_error *err);

#endif
