/*
** internal.h: what the files of mdp/ share and nothing else uses: the
** option parser over an open options object (the release's and the
** plan's options overlap).
*/
#ifndef DPRL_MDP_INTERNAL_H
#define DPRL_MDP_INTERNAL_H

#include "base/options.h"
#include "mdp/mdp.h"

/* The options both forms share, checked and calibrated; plan = 1: no
** seed, budget or release (they are the release's).  Polls cancel (a
** map of features can be long). */
int dprl_mdp_parse_options(dprl_mdp_config *c, const dprl_options *o, int plan,
                           dprl_cancel *cancel);

/* "clip": "auto" (clip_auto.c, §13.6): options clip_quantile and
** clip_share (refused without it), and from the options alone the grid of
** edges, the histogram's noise and rho_cap; the release's calibration
** then leaves rho_cap - gq.rho to the release. */
int dprl_mdp_auto_options(dprl_mdp_config *c, const dprl_options *o);
/* The calibration at the grid's smallest clip: so none that the histogram
** can choose fails after the rows are read. */
int dprl_mdp_auto_check(const dprl_mdp_config *c, dprl_error *err);

#endif
