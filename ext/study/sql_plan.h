/*
** sql_plan.h: dp_plan and dprl_budget_plan, registered by the table in
** dprl.c.
*/
#ifndef DPRL_SQL_PLAN_H
#define DPRL_SQL_PLAN_H

#include "sqlite/sql_glue.h"

void dprl_sql_plan(sqlite3_context *ctx, int argc, sqlite3_value **argv);
void dprl_sql_budget_plan(sqlite3_context *ctx, int argc, sqlite3_value **argv);

#endif
