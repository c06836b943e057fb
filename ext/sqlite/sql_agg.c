/*
** sql_agg.c: the one frame of every row aggregate (see sql_agg.h).
*/
#include "sqlite/sql_agg.h"

#include <string.h>

static void agg_free(dprl_agg *a) {
  if (a->state && a->fn->free) a->fn->free(a->state);
  dprl_free(a->state);
  dprl_sql_unpin(&a->options);
  dprl_sql_cancel_close(&a->cancel);
  sqlite3_free(a);
}

/* The first row: the frame, the cancel probe, the options parsed and
** pinned. */
static int agg_start(sqlite3_context *ctx, dprl_agg *a, int argc, sqlite3_value *opt,
                     dprl_error *err) {
  const char *text = (const char *)sqlite3_value_text(opt);
  if (!text && sqlite3_value_type(opt) != SQLITE_NULL) return dprl_nomem(err);
  a->db = sqlite3_context_db_handle(ctx);
  a->max_length = sqlite3_limit(a->db, SQLITE_LIMIT_LENGTH, -1);
  a->state = dprl_calloc(1, a->fn->size);
  if (!a->state) return dprl_nomem(err);
  int rc = dprl_sql_cancel_open(&a->cancel, a->db, err);
  if (!rc) rc = a->fn->start(a, text, (size_t)sqlite3_value_bytes(opt), argc, err);
  if (!rc) rc = dprl_sql_pin_options(&a->options, opt, err);
  return rc;
}

void dprl_agg_step(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  dprl_agg **slot = sqlite3_aggregate_context(ctx, sizeof *slot);
  const dprl_agg_fn *fn = sqlite3_user_data(ctx);
  dprl_error err; /* per row: clear the code only, not the 512-byte message */
  err.code = DPRL_OK;
  err.msg[0] = 0;
  int rc;
  if (!slot) {
    sqlite3_result_error_nomem(ctx);
    return;
  }
  if (*slot && (*slot)->failed) return;
  sqlite3_value *opt = argv[argc - 1];
  if (!*slot) {
    dprl_agg *a = *slot = sqlite3_malloc(sizeof *a);
    if (!a) {
      sqlite3_result_error_nomem(ctx);
      return;
    }
    memset(a, 0, sizeof *a);
    a->fn = fn;
    rc = agg_start(ctx, a, argc, opt, &err);
  } else {
    rc = dprl_sql_same_options(&(*slot)->options, opt, &err);
  }
  if (!rc) rc = fn->row(*slot, argc, argv, &err);
  if (rc) {
    (*slot)->failed = 1;
    dprl_sql_result_error(ctx, fn->name, &err);
  }
}

void dprl_agg_final(sqlite3_context *ctx) {
  dprl_agg **slot = sqlite3_aggregate_context(ctx, 0);
  if (!slot || !*slot) { /* no rows: nothing to release */
    sqlite3_result_null(ctx);
    return;
  }
  dprl_agg *a = *slot;
  dprl_error err = {0};
  dprl_buf out = {0};
  if (!a->failed) {
    dprl_spend spend;
    memset(&spend, 0, sizeof spend);
    int rc = a->fn->final(a, &out, &spend, &err);
    if (!rc && out.oom) rc = dprl_nomem(&err);
    if (!rc && spend.budget) { /* the ledger row, before the value (sql_budget.c) */
      spend.fn = a->fn->name;
      spend.options = a->options.text;
      spend.options_len = a->options.text ? (size_t)a->options.len : 0;
      rc = dprl_budget_charge(a->db, &spend, &err);
    }
    if (rc) dprl_sql_result_error(ctx, a->fn->name, &err);
    else dprl_sql_result_json(ctx, out.data, (int)out.len);
  }
  dprl_buf_free(&out);
  agg_free(a);
  *slot = NULL;
}
