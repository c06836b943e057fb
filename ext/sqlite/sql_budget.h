/*
** sql_budget.h: the privacy ledger every noisy function charges when its
** options name a budget (sql_budget.c).
*/
#ifndef DPRL_SQL_BUDGET_H
#define DPRL_SQL_BUDGET_H

#include "sqlite/sql_glue.h"

/* One release about to be returned. */
typedef struct dprl_spend {
  const char *budget; /* the "budget" option, "[schema.]name"; NULL: no charge */
  const char *fn;     /* the SQL function */
  double epsilon, delta;
  int spends;          /* 0: not private (seeded, diagnostic, given sigma) */
  const char *options; /* the options text, hashed into the ledger row */
  size_t options_len;
  const char *why_not; /* when !spends: the option that makes it not private,
                       ** e.g. "seed" (NULL: "seed") */
  const char *unit;    /* the unit of privacy: "episode", "expert", "reward function",
                       ** "unit reward change" */
  int gaussian;        /* a Gaussian release of known rho (zCDP, ALGORITHMS.md §12.1) */
  double rho;
} dprl_spend;

/* Check the budget and append the ledger row, committed and durable
** BEFORE the release is returned (the rules are at the top of
** sql_budget.c).  On any error nothing may be released: the caller
** reports the error instead of the value.  A release that is not private
** is refused under a budget; DPRL_EBUSY when the ledger's lock could not
** be had within the connection's busy timeout (retry), DPRL_EINTR when
** interrupted while waiting. */
int dprl_budget_charge(sqlite3 *db, const dprl_spend *s, dprl_error *err);

/* dprl_budget(name, epsilon, delta[, options]) and
** dprl_budget_remaining(name), registered by dprl.c. */
void dprl_sql_budget(sqlite3_context *ctx, int argc, sqlite3_value **argv);
void dprl_sql_budget_remaining(sqlite3_context *ctx, int argc, sqlite3_value **argv);

#endif
