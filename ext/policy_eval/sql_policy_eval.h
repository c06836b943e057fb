/*
** sql_policy_eval.h: the SQL functions of policy evaluation, registered by
** the table in dprl.c.
*/
#ifndef DPRL_SQL_POLICY_EVAL_H
#define DPRL_SQL_POLICY_EVAL_H

#include "sqlite/sql_agg.h"
#include "sqlite/sql_tvf.h"

extern const dprl_agg_fn dprl_lsw_agg, dprl_lsl_agg;             /* sql_policy_eval.c */
extern const dprl_agg_fn dprl_lsw_stats_agg, dprl_lsl_stats_agg; /* sql_policy_eval.c */
extern const dprl_agg_fn dprl_fv_stats_agg;                      /* sql_first_visit.c */
extern const dprl_tvf_spec dprl_first_visit_tvf;                 /* sql_first_visit.c */

#endif
