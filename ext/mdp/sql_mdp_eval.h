/*
** sql_mdp_eval.h: the SQL functions that evaluate and plan on a released
** MDP model, registered by the table in dprl.c.
*/
#ifndef DPRL_SQL_MDP_EVAL_H
#define DPRL_SQL_MDP_EVAL_H

#include "sqlite/sql_glue.h"

/* dp_mdp_value(model, policy[, options]) */
void dprl_sql_mdp_value_fn(sqlite3_context *ctx, int argc, sqlite3_value **argv);
/* dp_mdp_plan(model[, options]) */
void dprl_sql_mdp_plan_fn(sqlite3_context *ctx, int argc, sqlite3_value **argv);

#endif
