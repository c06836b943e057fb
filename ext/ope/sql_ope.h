/*
** sql_ope.h: the SQL function of off-policy evaluation by clipped
** importance sampling, registered by the table in dprl.c.
*/
#ifndef DPRL_SQL_OPE_H
#define DPRL_SQL_OPE_H

#include "sqlite/sql_agg.h"

/* dp_is_value(episode, t, reward, behavior_prob, target_prob, options) */
extern const dprl_agg_fn dprl_is_value_agg; /* sql_ope.c */

#endif
