/*
** mdp_world.h: the log bootstrap's world (ALGORITHMS.md §14.4), an MDP
** built from a dp_mdp release: logs of the released size drawn from it
** under the behaviour the counts show, each clipped and noised as the
** release was and returned as a model.  Post-processing of public
** numbers, from a seeded stream.
*/
#ifndef DPRL_MDP_WORLD_H
#define DPRL_MDP_WORLD_H

#include "mdp/mdp_interval.h"

typedef struct dprl_mdpv_world dprl_mdpv_world;

/* The world of release m under the estimate's choices o, its draws from
** the stream of seed. */
int dprl_mdpv_world_open(const dprl_mdpv_model *m, const dprl_mdpv_est_opts *o, uint64_t seed,
                         dprl_mdpv_world **w, dprl_cancel *cancel, dprl_error *err);
/* The world as an MDP, for its policies' values. */
const dprl_mdpv_est *dprl_mdpv_world_truth(const dprl_mdpv_world *w);
/* One log drawn and released; *out is valid until the next call. */
int dprl_mdpv_world_release(dprl_mdpv_world *w, const dprl_mdpv_model **out,
                            dprl_cancel *cancel, dprl_error *err);
/* Its episodes per log, its most steps per episode, the share of the
** episodes drawn so far that the clip cut. */
void dprl_mdpv_world_describe(const dprl_mdpv_world *w, dprl_mdpv_world_info *info);
void dprl_mdpv_world_close(dprl_mdpv_world *w);

#endif
