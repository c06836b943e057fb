/*
** study.h: planning before spending (plain C, no SQLite; ALGORITHMS.md
** section 12.2).
**
** dp_plan(options) plans one release of any mechanism, named by the option
** "mechanism" (dp_lsw when absent): the mechanism's own plan (its noise
** scale and expected error at hypothetical public sizes) and what it would
** cost.  With "releases" it plans a study: a list of planned releases taken
** in order against a budget under its accountant, saying which fit, which
** do not, and which would return nothing useful at the planned sizes.
** dprl_budget_plan plans the same list against a declared budget and what
** its ledger has already spent (sql_plan.c).
*/
#ifndef DPRL_STUDY_H
#define DPRL_STUDY_H

#include "base/core.h"
#include "dp/plan.h"
#include "dp/zcdp.h"

/* One mechanism's plan from its options text (dp/plan.h). */
typedef int (*dprl_plan_fn)(const char *text, size_t len, int64_t length_limit,
                            dprl_cancel *cancel, dprl_buf *out, dprl_plan_cost *cost,
                            dprl_error *err);

/* A budget to plan against: its unit, its accountant and what it allows
** (spent.zcdp, eps_b, delta_b), and what its ledger has spent so far (the
** sums of spent; zero for a budget not declared yet). */
typedef struct dprl_study_budget {
  const char *name; /* NULL: a budget described in the options */
  const char *unit;
  dprl_spent spent;
} dprl_study_budget;

/* dp_plan: one release, or with "releases" a study against the options'
** "budget" object ({"epsilon", "delta", "unit", "accountant"}). JSON into
** out; every loop polls cancel. */
int dprl_plan(const char *text, size_t len, int64_t length_limit, dprl_cancel *cancel,
              dprl_buf *out, dprl_error *err);

/* dprl_budget_plan: the releases (a JSON array of dp_plan options) against
** a declared budget and its ledger. fn names the SQL function in errors. */
int dprl_study_plan(const char *fn, const char *releases, size_t len, int64_t length_limit,
                    const dprl_study_budget *budget, dprl_cancel *cancel, dprl_buf *out,
                    dprl_error *err);

/* The mechanisms dp_plan knows, NULL-ended (for errors and tests). */
extern const char *const dprl_plan_mechanisms[];

#endif
