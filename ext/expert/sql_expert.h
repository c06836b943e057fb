/*
** sql_expert.h: the dp_expert_policy aggregate (sql_expert.c).
*/
#ifndef DPRL_SQL_EXPERT_H
#define DPRL_SQL_EXPERT_H

#include "sqlite/sql_agg.h"

/* dp_expert_policy(expert, episode, t, state, action, options) */
extern const dprl_agg_fn dprl_expert_policy_agg;

#endif
