/*
** mdp_interval.h: the error bars of dp_mdp_value (ALGORITHMS.md §14.4).
** Post-processing of a release: both resample from seeded streams and
** read nothing but the released model.
**
** - The noise bootstrap (stderr): the release's noise redrawn around the
**   released numbers, the model re-estimated, the policies evaluated.
** - The log bootstrap (ci_low, ci_high): a world MDP built from the
**   release, logs of the released size drawn from it under the behaviour
**   the counts show, each clipped and noised as the release was, then
**   re-estimated and evaluated; the interval is the estimate minus the
**   quantiles of (re-estimate - the world's value).
*/
#ifndef DPRL_MDP_INTERVAL_H
#define DPRL_MDP_INTERVAL_H

#include "mdp/mdp_eval.h"

/* The interval's options against the model: draws, a tabular model. */
int dprl_mdpv_interval_check(const char *fn, const dprl_mdpv_model *m, const dprl_mdpv_opts *o,
                             dprl_error *err);

/* Running mean and sum of squared deviations (Welford) of a policy's value
** and of its S values. */
typedef struct dprl_mdpv_moments {
  double mean, m2;
  double *means, *m2s;
} dprl_mdpv_moments;

/* o->bootstrap redraws of the release's noise, every policy evaluated on
** each (the same draws for all) into mo[i]. */
int dprl_mdpv_noise_bootstrap(const dprl_mdpv_model *m, const dprl_mdpv_opts *o,
                              const dprl_mdpv_policies *p, dprl_mdpv_work *w,
                              dprl_mdpv_moments *mo, dprl_cancel *cancel, dprl_error *err);

/* One policy's interval at o->level: [value - q_hi, value - q_lo + unknown],
** q the quantiles of re-estimate - world value over the draws, bias their
** mean, and unknown the policy's value on the release's optimistic
** completion (pessimistic pairs and the unknown outcome worth rmax) less
** its value (ALGORITHMS.md §14.4). */
typedef struct dprl_mdpv_interval {
  double low, high, bias, unknown;
} dprl_mdpv_interval;

/* Widen out[i].high by each policy's unknown part: value[i] its value on
** the release's estimate, w scratch as for a value. */
int dprl_mdpv_interval_unknown(const dprl_mdpv_model *m, const dprl_mdpv_opts *o,
                               const dprl_mdpv_policies *p, const double *value,
                               dprl_mdpv_work *w, dprl_mdpv_interval *out, dprl_cancel *cancel,
                               dprl_error *err);

/* What the log bootstrap's world was: its episodes per log, the most
** steps it draws for one, and the share of its episodes the clip cut. */
typedef struct dprl_mdpv_world_info {
  int64_t episodes, steps;
  double clipped_share;
} dprl_mdpv_world_info;

/* The most episodes a world draws per log (the released start counts'
** sum, rounded); a model claiming more is refused. */
#define DPRL_MDPV_WORLD_EPISODES_MAX ((int64_t)1 << 31)
/* Without a horizon, a world's episode is cut after this many steps, or
** 50 times the release's mean steps per episode if that is more. */
#define DPRL_MDPV_WORLD_STEPS 1000
#define DPRL_MDPV_WORLD_STEPS_MAX 100000

/* o->bootstrap logs drawn from the world of (m, o->est); value[i] is
** policy i's estimate on the release, out[i] its interval. */
int dprl_mdpv_log_bootstrap(const dprl_mdpv_model *m, const dprl_mdpv_opts *o,
                            const dprl_mdpv_policies *p, const double *value,
                            dprl_mdpv_work *w, dprl_mdpv_interval *out,
                            dprl_mdpv_world_info *info, dprl_cancel *cancel, dprl_error *err);

#endif
