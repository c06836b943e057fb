/*
** sql_budget.h: the privacy ledger every noisy function charges when its
** options name a budget (sql_budget.c).
*/
#ifndef DPRL_SQL_BUDGET_H
#define DPRL_SQL_BUDGET_H

#include "sql_glue.h"

/* One release about to be returned. */
typedef struct dprl_spend {
  const char *budget; /* the "budget" option; NULL: nothing to charge */
  const char *fn;     /* the SQL function */
  double epsilon, delta;
  int spends;          /* 0: seeded or diagnostic, logged but not spent */
  const char *options; /* the options text, hashed into the ledger row */
  size_t options_len;
} dprl_spend;

/* Check the budget and append the ledger row, atomically, BEFORE the
** release is returned: on any error nothing may be released.  Refused
** inside an explicit transaction (a ROLLBACK would erase the row of a
** release already seen). */
int dprl_budget_charge(sqlite3 *db, const dprl_spend *s, dprl_error *err);

#endif
