/*
** sql_q.h: the SQL functions of Q-learning with functional noise,
** registered by the table in dprl.c.
*/
#ifndef DPRL_SQL_Q_H
#define DPRL_SQL_Q_H

#include "sqlite/sql_agg.h"
#include "sqlite/sql_tvf.h"

extern const dprl_agg_fn dprl_q_learn_agg;    /* sql_q_learn.c */
extern const dprl_tvf_spec dprl_q_noise_tvf;  /* sql_q_noise.c */
void dprl_sql_q_calibrate(sqlite3_context *ctx, int argc, sqlite3_value **argv);
void dprl_sql_q_value(sqlite3_context *ctx, int argc, sqlite3_value **argv);

#endif
