/*
** sql_plan.c: planning before spending (study.h).
**
**   SELECT dp_plan('{"mechanism": "dp_lsw", …, "episodes": 20000, "visits": […]}');
**   SELECT dp_plan('{"budget": {"epsilon": 3, "delta": 1e-5, "unit": "episode"},
**                    "releases": [{…}, {…}]}');
**   SELECT dprl_budget_plan('study', '[{…}, {…}]');
**
** dp_plan is deterministic and reads nothing; dprl_budget_plan reads the
** declared budget and what its ledger has spent (public: the ledger holds
** only what releases stated), and writes nothing.
*/
#include "study/sql_plan.h"

#include <string.h>

#include "sqlite/sql_ledger.h"
#include "study/study.h"

static int64_t length_limit(sqlite3_context *ctx) {
  return sqlite3_limit(sqlite3_context_db_handle(ctx), SQLITE_LIMIT_LENGTH, -1);
}

static void result(sqlite3_context *ctx, const char *fn, int rc, dprl_buf *b, dprl_error *err) {
  if (rc) dprl_sql_result_error(ctx, fn, err);
  else if (b->oom) sqlite3_result_error_nomem(ctx);
  else dprl_sql_result_json(ctx, b->data, (int)b->len);
  dprl_buf_free(b);
}

/* dp_plan(options): every phase can be interrupted (10^7 states take
** seconds). */
void dprl_sql_plan(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  dprl_error err = {0};
  dprl_sql_cancel cancel;
  dprl_buf b = {0};
  (void)argc;
  const char *text = (const char *)sqlite3_value_text(argv[0]);
  if (!text && sqlite3_value_type(argv[0]) != SQLITE_NULL) {
    sqlite3_result_error_nomem(ctx);
    return;
  }
  int rc = dprl_sql_cancel_open(&cancel, sqlite3_context_db_handle(ctx), &err);
  if (!rc) {
    rc = dprl_plan(text, (size_t)sqlite3_value_bytes(argv[0]), length_limit(ctx), &cancel.base,
                   &b, &err);
    dprl_sql_cancel_close(&cancel);
  }
  result(ctx, "dp_plan", rc, &b, &err);
}

/* dprl_budget_plan(name, releases): the releases against what the budget
** has left. */
void dprl_sql_budget_plan(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  const char *fn = "dprl_budget_plan";
  sqlite3 *db = sqlite3_context_db_handle(ctx);
  dprl_error err = {0};
  dprl_sql_cancel cancel;
  dprl_buf b = {0};
  ledger_at at;
  char unit[64], acct[64];
  dprl_study_budget bud;
  (void)argc;
  memset(&bud, 0, sizeof bud);
  int rc = dprl_budget_lookup(db, argv[0], fn, &at, &bud.spent, unit, sizeof unit, acct,
                              sizeof acct, &err);
  const char *text = (const char *)sqlite3_value_text(argv[1]);
  if (!rc && !text) {
    if (sqlite3_value_type(argv[1]) != SQLITE_NULL) {
      sqlite3_result_error_nomem(ctx);
      return;
    }
    rc = dprl_fail(&err, DPRL_EINVAL, "%s: releases must be a JSON array of dp_plan options, "
                   "got NULL", fn);
  }
  if (!rc && !unit[0])
    rc = dprl_fail(&err, DPRL_EINVAL, "%s: budget \"%s\" states no unit of privacy", fn,
                   at.name);
  if (!rc) rc = dprl_sql_cancel_open(&cancel, db, &err);
  if (!rc) {
    bud.name = at.name;
    bud.unit = unit;
    rc = dprl_study_plan(fn, text, (size_t)sqlite3_value_bytes(argv[1]), length_limit(ctx), &bud,
                         &cancel.base, &b, &err);
    dprl_sql_cancel_close(&cancel);
  }
  result(ctx, fn, rc, &b, &err);
}
