/*
** sql_first_visit.c: the per-episode half of DP-LSW/LSL, NOT PRIVATE.
**
**   SELECT * FROM dp_first_visit(
**     'SELECT episode, t, state, reward FROM steps',
**     '{"n_states": 750, "gamma": 0.99, "rmin": 0, "rmax": 1}');
**   -- episode | state | t_first | first_visit_return | max_states | made_with
**
**   SELECT dp_fv_stats(episode, t, state, reward,
**                      '{"n_states": 750, "gamma": 0.99, "rmin": 0, "rmax": 1}') FROM steps;
**   -- {"function":"dp_fv_stats","private":false,"n_states":750,
**   --  "episodes":100000,"max_states":null,"made_with":{...},
**   --  "states":[[state, visits, return_sum], ...]}
**
** dp_first_visit gives one row per (episode, first-visited state) with its
** exact clamped return; dp_fv_stats gives the per-state sums straight from
** the rows, as dp_lsw computes them (sql_fv_agg.c).  Both exist so the
** per-episode work can run where the data is (one shard, one site), and
** only the per-state sums travel to the private release
** (dp_lsw_from_stats).  Both say the contribution bound they applied
** (max_states, NULL for none), which the release must match, and every
** parameter they used (made_with, rows/made_with.h), which it checks.
*/
#include <string.h>

#include "rows/first_visit.h"
#include "rows/made_with.h"
#include "base/json.h"
#include "base/options.h"
#include "policy_eval/sql_fv_agg.h"
#include "policy_eval/sql_policy_eval.h"

static const char *const fv_options[] = {"n_states", "gamma", "rmin", "rmax", "fmin", "fmax",
                                         "max_states", NULL};
static const char *const fv_stats_options[] = {"n_states", "gamma", "rmin", "rmax", "fmin",
                                               "fmax", "max_states", "grouped", NULL};
static const char *const fv_args[] = {"trajectories_sql", "options"};

typedef struct fv_emit_ctx {
  dprl_rows *out;
  dprl_key key;
  int64_t max_states; /* the bound applied, 0: none (column NULL) */
  size_t made_at, made_len; /* made_with, written once in out's text */
} fv_emit_ctx;

static int fv_emit(void *vctx, uint32_t state, int64_t t_first, double F) {
  fv_emit_ctx *c = vctx;
  if (dprl_rows_add(c->out)) return DPRL_ENOMEM;
  if (c->key.is_text) dprl_rows_text(c->out, 0, c->key.text, c->key.len);
  else dprl_rows_int(c->out, 0, c->key.ival);
  dprl_rows_int(c->out, 1, state);
  dprl_rows_int(c->out, 2, t_first);
  dprl_rows_double(c->out, 3, F);
  if (c->max_states > 0) dprl_rows_int(c->out, 4, c->max_states);
  dprl_rows_text_ref(c->out, 5, c->made_at, c->made_len);
  return c->out->oom ? DPRL_ENOMEM : DPRL_OK;
}

/* The options of dp_first_visit (grouped == NULL) or dp_fv_stats. */
static int fv_options_parse(const char *text, size_t len, const char *fn, int64_t *n_states,
                            dprl_return_rule *rule, int *grouped, dprl_error *err) {
  dprl_options o;
  int rc = dprl_options_open(&o, fn, text, len, grouped ? fv_stats_options : fv_options, err);
  if (!rc) rc = dprl_opt_int(&o, "n_states", 1, 0, DPRL_CLOSED(1, 1 << 27), n_states);
  if (!rc) rc = dprl_return_rule_parse(&o, rule);
  if (!rc && grouped) rc = dprl_opt_bool(&o, "grouped", 0, grouped);
  dprl_options_close(&o);
  return rc;
}

/* The caller's rows into the buffer, checked as dp_lsw checks them, in one
** step of SQLite where the text can be wrapped (dprl_query_rows). */
typedef struct fv_reader {
  int64_t n_states;
  dprl_step_buffer *buf;
  dprl_error *err;
} fv_reader;

static int fv_row(void *ctx, sqlite3_value **row) {
  fv_reader *r = ctx;
  dprl_key k;
  int64_t t;
  uint32_t s;
  double rw;
  int rc = dprl_sql_read_step(row, r->n_states, &k, &t, &s, &rw, r->err);
  return rc ? rc : dprl_step_buffer_push(r->buf, &k, t, s, rw, r->err);
}

static int fv_read(sqlite3 *db, sqlite3_value *sql, int64_t n_states, dprl_step_buffer *buf,
                   dprl_error *err, char **pzErr) {
  fv_reader r = {n_states, buf, err};
  if (dprl_query_rows(db, sql, "trajectories_sql", 4, "dp_first_visit", fv_row, &r, err))
    return dprl_sql_vtab_error(pzErr, "dp_first_visit", err);
  return SQLITE_OK;
}

static int fv_compute(sqlite3 *db, sqlite3_value **args, dprl_rows *out, char **pzErr) {
  dprl_error err = {0};
  dprl_return_rule rule;
  int64_t n_states = 0;
  dprl_step_buffer buf = {0};
  dprl_fv_scratch sc = {0};
  dprl_sql_cancel cancel;
  const char *text = (const char *)sqlite3_value_text(args[1]);
  if (!text && sqlite3_value_type(args[1]) != SQLITE_NULL) return SQLITE_NOMEM;
  if (fv_options_parse(text, (size_t)sqlite3_value_bytes(args[1]), "dp_first_visit", &n_states,
                       &rule, NULL, &err))
    return dprl_sql_vtab_error(pzErr, "dp_first_visit", &err);
  if (dprl_sql_cancel_open(&cancel, db, &err))
    return dprl_sql_vtab_error(pzErr, "dp_first_visit", &err);
  int rc = SQLITE_OK;
  if (dprl_fv_scratch_init(&sc, n_states, &cancel.base, &err))
    rc = dprl_sql_vtab_error(pzErr, "dp_first_visit", &err);
  if (!rc) rc = fv_read(db, args[0], n_states, &buf, &err, pzErr);
  if (!rc) {
    buf.cancel = &cancel.base;
    if (dprl_step_buffer_group(&buf, &err)) rc = dprl_sql_vtab_error(pzErr, "dp_first_visit", &err);
    size_t E = rc ? 0 : dprl_step_buffer_episodes(&buf);
    size_t made_at = 0, made_len = 0;
    if (!rc && E) {
      made_at = out->text.len;
      dprl_made_with_write(&out->text, &rule, n_states, "dprl", dprl_version);
      made_len = out->text.len - made_at;
      if (out->text.oom) rc = SQLITE_NOMEM;
    }
    for (size_t e = 0; e < E && !rc; e++) {
      const dprl_step *steps;
      size_t n;
      fv_emit_ctx ctx = {out, {0}, rule.max_states, made_at, made_len};
      dprl_step_buffer_episode_key(&buf, e, &ctx.key);
      if (dprl_step_buffer_episode(&buf, e, &steps, &n, &err) ||
          dprl_cancel_poll(&cancel.base, 40 * (uint64_t)n + 50, &err) ||
          dprl_fv_add_episode(NULL, &sc, &rule, steps, n, fv_emit, &ctx, &err))
        rc = err.code ? dprl_sql_vtab_error(pzErr, "dp_first_visit", &err) : SQLITE_NOMEM;
    }
  }
  dprl_sql_cancel_close(&cancel);
  dprl_step_buffer_free(&buf);
  dprl_fv_scratch_free(&sc);
  return rc;
}

const dprl_tvf_spec dprl_first_visit_tvf = {
    "dp_first_visit",
    "CREATE TABLE x(episode, state INTEGER, t_first INTEGER, first_visit_return REAL,"
    " max_states INTEGER, made_with TEXT, trajectories_sql HIDDEN, options HIDDEN)",
    6, 2, 2, fv_args, fv_compute, 0};

/* ---- dp_fv_stats: the per-state statistics as one JSON value ------------- */

/* The frame is sql_agg.c; the rows become statistics as for dp_lsw
** (sql_fv_agg.c). */
static void fvs_free(void *p) { dprl_fv_agg_free(p); }

static int fvs_start(dprl_agg *a, const char *text, size_t len, int argc, dprl_error *err) {
  int64_t n_states = 0;
  int grouped = 0;
  dprl_return_rule rule;
  (void)argc;
  int rc = fv_options_parse(text, len, "dp_fv_stats", &n_states, &rule, &grouped, err);
  if (!rc) rc = dprl_fv_agg_start(a->state, n_states, &rule, grouped, &a->cancel.base, err);
  return rc;
}

static int fvs_row(dprl_agg *a, int argc, sqlite3_value **argv, dprl_error *err) {
  (void)argc;
  return dprl_fv_agg_row(a->state, argv, err);
}

/* Visited states only, in state order; return sums printed exactly (17
** digits), so dp_lsw_from_stats on them is dp_lsw on the rows. */
static int fvs_json(const dprl_fv_stats *st, const dprl_return_rule *rule, dprl_buf *b,
                    dprl_cancel *cancel, dprl_error *err) {
  dprl_buf_printf(b, "{\"function\":\"dp_fv_stats\",\"private\":false,\"n_states\":%lld,"
                  "\"episodes\":%lld,", (long long)st->n_states, (long long)st->m);
  if (rule->max_states > 0) dprl_buf_printf(b, "\"max_states\":%lld,", (long long)rule->max_states);
  else dprl_buf_puts(b, "\"max_states\":null,");
  dprl_buf_puts(b, "\"made_with\":");
  dprl_made_with_write(b, rule, st->n_states, "dprl", dprl_version);
  dprl_buf_puts(b, ",\"states\":[");
  int first = 1;
  for (int64_t s = 0; s < st->n_states; s++) {
    if (dprl_cancel_poll(cancel, 4, err)) return err->code;
    if (!st->visits[s]) continue;
    dprl_buf_printf(b, first ? "[%lld,%lld," : ",[%lld,%lld,", (long long)s,
                    (long long)st->visits[s]);
    dprl_json_put_double(b, st->return_sum[s]);
    dprl_buf_puts(b, "]");
    first = 0;
  }
  dprl_buf_puts(b, "]}");
  return b->oom ? dprl_nomem(err) : DPRL_OK;
}

/* Not a release: exact statistics, so no budget and no charge. */
static int fvs_final(dprl_agg *a, dprl_buf *out, dprl_spend *spend, dprl_error *err) {
  dprl_fv_agg *fv = a->state;
  (void)spend;
  int rc = dprl_fv_agg_collect(fv, &a->cancel.base, err);
  if (!rc) rc = fvs_json(&fv->st, &fv->rule, out, &a->cancel.base, err);
  if (!rc && (int64_t)out->len > a->max_length)
    rc = dprl_fail(err, DPRL_EINVAL,
                   "the statistics of %lld states take %zu bytes, more than this "
                   "connection's SQLITE_LIMIT_LENGTH (%lld)",
                   (long long)fv->n_states, out->len, (long long)a->max_length);
  return rc;
}

const dprl_agg_fn dprl_fv_stats_agg = {"dp_fv_stats", sizeof(dprl_fv_agg), NULL,
                                       fvs_start, fvs_row, fvs_final, fvs_free, NULL};
