/*
** sql_mdp.h: the dp_mdp aggregate (sql_mdp.c), registered by dprl.c.
*/
#ifndef DPRL_SQL_MDP_H
#define DPRL_SQL_MDP_H

#include "sqlite/sql_agg.h"

/* dp_mdp(episode, t, state, action, reward, options) */
extern const dprl_agg_fn dprl_mdp_agg;

#endif
