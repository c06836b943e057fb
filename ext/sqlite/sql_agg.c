/*
** sql_agg.c: the one frame of every row aggregate (see sql_agg.h).
*/
#include "sqlite/sql_agg.h"

#include <stdio.h>
#include <string.h>

#include "rows/print.h"

/* ---- one charge for the groups of a statement (sql_agg.h) ----------------
** The record lives as the auxiliary data of the options argument at this
** call site: SQLite drops it when the statement is reset or finalized, so
** a new execution starts a new record.  If SQLite drops it earlier, the
** next group starts a new record and is charged again: the failure is
** always towards charging more, never less. */
struct dprl_agg_stmt {
  int refs;
  int charged;               /* the shared ledger row is committed */
  dprl_sql_pinned options;   /* ... for releases with this options text */
  dprl_episode_index seen;   /* the units of the groups released so far */
  unsigned kinds;            /* ... the kinds of their keys (DPRL_KEY_INT, _TEXT) */
  dprl_print_set prints;     /* ... their contents, from the second group on */
  int printed;               /* prints holds the first group's */
};

static void stmt_unref(void *p) {
  dprl_agg_stmt *st = p;
  if (!st || --st->refs > 0) return;
  dprl_sql_unpin(&st->options);
  dprl_key_index_free(&st->seen);
  dprl_print_set_free(&st->prints);
  dprl_free(st);
}

/* The record of this call site in this execution, a reference for the
** group (NULL when none could be kept: the group is charged alone). */
static dprl_agg_stmt *stmt_get(sqlite3_context *ctx, int arg) {
  dprl_agg_stmt *st = sqlite3_get_auxdata(ctx, arg);
  if (!st) {
    st = dprl_calloc(1, sizeof *st);
    if (!st) return NULL;
    st->refs = 1; /* the auxiliary data's */
    sqlite3_set_auxdata(ctx, arg, st, stmt_unref);
    if (sqlite3_get_auxdata(ctx, arg) != st) return NULL; /* dropped (and freed) */
  }
  st->refs++;
  return st;
}

/* The refusals of a group that is not a partition's (ALGORITHMS.md §12).
** They name no unit and no value (§6.2); `unit` says what the units are
** ("episode", "expert"). */
static int not_a_partition(dprl_error *err, int why, const char *unit) {
  static const char *const what[] = {
      "an %s appears in two groups of this statement",
      "the groups of this statement mix integer and text %s keys (7 and '7' are two keys "
      "for what may be one %s, e.g. a log imported twice: give the keys one type)",
      "the rows of every %s of this group are those of an %s of an earlier group under "
      "another key (the same %ss under two keys: a log imported twice, keys renamed "
      "by a join or per group)"};
  char head[320];
  dprl_snprintf(head, sizeof head, what[why], unit, unit, unit);
  return dprl_fail(err, DPRL_EINVAL,
                   "%s: groups charged once to a budget (parallel composition) must be a "
                   "partition of the %ss (GROUP BY a column that is the same in every row "
                   "of an %s); this group is not released", head, unit, unit);
}

/* The earlier groups' contents, kept from the second group on (a single
** group, the usual case, never builds the set). */
static int stmt_prints(dprl_agg_stmt *st, dprl_error *err) {
  if (st->printed) return DPRL_OK;
  st->printed = 1;
  for (size_t i = 0; st->seen.print && i < st->seen.n; i++)
    if (dprl_print_set_add(&st->prints, st->seen.print[i], err)) return err->code;
  return DPRL_OK;
}

/* Every unit of this group must be new to the statement under its key,
** the group must not be a copy of earlier groups' units under other keys,
** and the keys must be of one kind; then the units join the statement's. */
static int stmt_add_units(dprl_agg_stmt *st, dprl_episode_index *units, const char *unit,
                          dprl_cancel *cancel, dprl_error *err) {
  unsigned kinds = dprl_key_kinds(units);
  if (st->seen.n == 0) { /* the first group: take its index over */
    dprl_key_index_free(&st->seen);
    st->seen = *units;
    st->kinds = kinds;
    memset(units, 0, sizeof *units);
    return DPRL_OK;
  }
  if ((st->kinds | kinds) == (DPRL_KEY_INT | DPRL_KEY_TEXT)) return not_a_partition(err, 1, unit);
  dprl_key k;
  uint32_t id;
  for (size_t i = 0; i < units->n; i++) {
    if (dprl_cancel_poll(cancel, 8, err)) return err->code;
    dprl_key_get(units, (uint32_t)i, &k);
    if (dprl_key_find(&st->seen, &k, &id)) return not_a_partition(err, 0, unit);
  }
  /* A group all of whose units' contents earlier groups hold is a copy:
  ** refused.  A group that shares only some is not: distinct short
  ** episodes are often alike (half of the clinical sample's are another's). */
  if (stmt_prints(st, err)) return err->code;
  size_t held = 0;
  for (size_t i = 0; units->print && i < units->n && held == i; i++) {
    if (dprl_cancel_poll(cancel, 4, err)) return err->code;
    held += (size_t)dprl_print_set_has(&st->prints, units->print[i]);
  }
  if (units->print && units->n && held == units->n) return not_a_partition(err, 2, unit);
  for (size_t i = 0; i < units->n; i++) {
    if (dprl_cancel_poll(cancel, 8, err)) return err->code;
    dprl_key_get(units, (uint32_t)i, &k);
    if (dprl_key_intern(&st->seen, &k, &id, err)) return err->code;
    if (units->print && dprl_print_set_add(&st->prints, units->print[i], err)) return err->code;
  }
  st->kinds |= kinds;
  return DPRL_OK;
}

/* The ledger row of a group's release: once for the statement's groups
** that share it, else its own. */
static int agg_charge(dprl_agg *a, dprl_spend *spend, dprl_error *err) {
  dprl_agg_stmt *st = a->stmt;
  dprl_episode_index *units = a->fn->units ? a->fn->units(a) : NULL;
  int shares = st && units && spend->spends;
  const char *unit = spend->unit ? spend->unit : "episode";
  if (shares && st->charged) {
    if (st->options.len == a->options.len &&
        !memcmp(st->options.text, a->options.text, (size_t)a->options.len))
      return stmt_add_units(st, units, unit, &a->cancel.base, err);
    shares = 0; /* other options: another release, charged alone */
  }
  int rc = dprl_budget_charge(a->db, spend, err);
  if (rc || !shares) return rc;
  st->options.text = sqlite3_malloc(a->options.len + 1);
  if (!st->options.text) return DPRL_OK; /* charged; later groups are charged alone */
  memcpy(st->options.text, a->options.text ? a->options.text : "", (size_t)a->options.len + 1);
  st->options.len = a->options.len;
  st->charged = 1;
  return stmt_add_units(st, units, unit, &a->cancel.base, err);
}

static void agg_free(dprl_agg *a) {
  stmt_unref(a->stmt);
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
  if (!rc && a->fn->units) a->stmt = stmt_get(ctx, argc - 1);
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
      rc = agg_charge(a, &spend, &err);
    }
    if (rc) dprl_sql_result_error(ctx, a->fn->name, &err);
    else dprl_sql_result_json(ctx, out.data, (int)out.len);
  }
  dprl_buf_free(&out);
  agg_free(a);
  *slot = NULL;
}
