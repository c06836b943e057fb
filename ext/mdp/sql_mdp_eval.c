/*
** sql_mdp_eval.c: dp_mdp_value and dp_mdp_plan, post-processing of a
** dp_mdp release (mdp_eval.h).
**
**   SELECT dp_mdp_value(model, '[1, 0, 1]', '{"bootstrap": 100}') FROM release;
**   SELECT dp_mdp_plan(model) FROM release;
**
** Glue only: the model is parsed once per statement when it is a constant
** (auxdata), then mdp_eval.c estimates, solves and writes the JSON.
*/
#include "mdp/sql_mdp_eval.h"

#include "base/json.h"
#include "mdp/mdp_eval.h"

static void model_release(void *p) {
  if (!p) return;
  dprl_mdpv_model_free(p);
  dprl_free(p);
}

/* The parsed model of argument 0: kept from an earlier row, or read now
** (*fresh = 1: the caller hands it to SQLite when done). */
static dprl_mdpv_model *model_arg(sqlite3_context *ctx, sqlite3_value *v, dprl_cancel *cancel,
                                  int *fresh, dprl_error *err) {
  dprl_mdpv_model *m = sqlite3_get_auxdata(ctx, 0);
  *fresh = !m;
  if (m) return m;
  if (sqlite3_value_type(v) != SQLITE_TEXT) {
    char got[80];
    dprl_sql_describe(v, got, sizeof got);
    dprl_fail(err, DPRL_EINVAL, "model must be the JSON text of a dp_mdp result, got %s", got);
    return NULL;
  }
  const char *text = (const char *)sqlite3_value_text(v);
  if (!text || !(m = dprl_calloc(1, sizeof *m))) {
    dprl_nomem(err);
    return NULL;
  }
  if (dprl_mdpv_model_read(m, text, (size_t)sqlite3_value_bytes(v), cancel, err)) {
    dprl_free(m);
    return NULL;
  }
  return m;
}

/* The options argument's text: "{}" for the form without one. */
static const char *options_text(sqlite3_value *v, size_t *len) {
  if (!v) {
    *len = 2;
    return "{}";
  }
  const char *t = (const char *)sqlite3_value_text(v);
  *len = t ? (size_t)sqlite3_value_bytes(v) : 0;
  return t;
}

static void run(sqlite3_context *ctx, int argc, sqlite3_value **argv, int plan) {
  const char *fn = plan ? "dp_mdp_plan" : "dp_mdp_value";
  dprl_error err = {0};
  dprl_sql_cancel cancel;
  dprl_buf b = {0};
  int fresh = 0;
  dprl_mdpv_model *m = NULL;
  int rc = dprl_sql_cancel_open(&cancel, sqlite3_context_db_handle(ctx), &err);
  if (!rc && !(m = model_arg(ctx, argv[0], &cancel.base, &fresh, &err))) rc = err.code;
  if (!rc) {
    int has_opt = argc == (plan ? 2 : 3);
    size_t olen = 0;
    const char *otext = options_text(has_opt ? argv[argc - 1] : NULL, &olen);
    dprl_mdpv_opts o;
    dprl_mdpv_policies p = {0};
    if (has_opt && !otext && sqlite3_value_type(argv[argc - 1]) != SQLITE_NULL)
      rc = dprl_nomem(&err);
    if (!rc) rc = dprl_mdpv_options(fn, otext, olen, plan, m, &o, &err);
    if (!rc && !plan) {
      const char *ptext = (const char *)sqlite3_value_text(argv[1]);
      if (!ptext && sqlite3_value_type(argv[1]) != SQLITE_NULL) rc = dprl_nomem(&err);
      else rc = dprl_mdpv_policies_read(ptext, ptext ? (size_t)sqlite3_value_bytes(argv[1]) : 0,
                                        m, &p, &err);
    }
    if (!rc)
      rc = plan ? dprl_mdpv_plan(m, &o, &b, &cancel.base, &err)
                : dprl_mdpv_value(m, &o, &p, &b, &cancel.base, &err);
    dprl_mdpv_policies_free(&p);
  }
  dprl_sql_cancel_close(&cancel);
  if (rc) dprl_sql_result_error(ctx, fn, &err);
  else dprl_sql_result_json(ctx, b.data, (int)b.len);
  dprl_buf_free(&b);
  /* Keep the parsed model for the next row (SQLite frees it if it cannot). */
  if (fresh && m) sqlite3_set_auxdata(ctx, 0, m, model_release);
}

void dprl_sql_mdp_value_fn(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  run(ctx, argc, argv, 0);
}

void dprl_sql_mdp_plan_fn(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  run(ctx, argc, argv, 1);
}
