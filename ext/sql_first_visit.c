/*
** sql_first_visit.c: dp_first_visit, the per-episode half of DP-LSW/LSL.
**
**   SELECT * FROM dp_first_visit(
**     'SELECT episode, t, state, reward FROM steps',
**     '{"n_states": 750, "gamma": 0.99, "rmax": 1}');
**   -- episode | state | t_first | first_visit_return
**
** NOT PRIVATE: one row per (episode, first-visited state) with its exact
** clamped return.  It exists so the per-episode work can run where the
** data is (one shard, one site), and only the per-state sums
** (see dp_lsw_from_stats) travel to the private release.
*/
#include <string.h>

#include "first_visit.h"
#include "options.h"
#include "sql_tvf.h"

static const char *const fv_options[] = {"n_states", "gamma", "rmin", "rmax", "fmin", "fmax",
                                         "max_states", NULL};
static const char *const fv_args[] = {"trajectories_sql", "options"};

typedef struct fv_emit_ctx {
  dprl_rows *out;
  dprl_key key;
} fv_emit_ctx;

static int fv_emit(void *vctx, uint32_t state, int64_t t_first, double F) {
  fv_emit_ctx *c = vctx;
  if (dprl_rows_add(c->out)) return DPRL_ENOMEM;
  if (c->key.is_text) dprl_rows_text(c->out, 0, c->key.text, c->key.len);
  else dprl_rows_int(c->out, 0, c->key.ival);
  dprl_rows_int(c->out, 1, state);
  dprl_rows_int(c->out, 2, t_first);
  dprl_rows_double(c->out, 3, F);
  return c->out->oom ? DPRL_ENOMEM : DPRL_OK;
}

static int fv_options_parse(sqlite3_value *v, int64_t *n_states, dprl_return_rule *rule,
                            dprl_error *err) {
  dprl_options o;
  const char *text = (const char *)sqlite3_value_text(v);
  int rc = dprl_options_open(&o, "dp_first_visit", text, (size_t)sqlite3_value_bytes(v),
                             fv_options, err);
  if (!rc) rc = dprl_opt_int(&o, "n_states", 1, 0, DPRL_CLOSED(1, 1 << 27), n_states);
  if (!rc) rc = dprl_return_rule_parse(&o, rule);
  dprl_options_close(&o);
  return rc;
}

/* The caller's rows into the buffer, checked as dp_lsw checks them. */
static int fv_read(sqlite3 *db, sqlite3_value *sql, int64_t n_states, dprl_step_buffer *buf,
                   dprl_error *err, char **pzErr) {
  dprl_query q;
  int rc = dprl_query_open(&q, db, "trajectories_sql", sql, 4, "dp_first_visit", pzErr);
  if (rc) return rc;
  while ((rc = dprl_query_step(&q, "dp_first_visit", pzErr)) == SQLITE_ROW) {
    sqlite3_value *row[4];
    for (int i = 0; i < 4; i++) row[i] = sqlite3_column_value(q.stmt, i);
    dprl_key k;
    int64_t t;
    uint32_t s;
    double r;
    if (dprl_sql_read_step(row, n_states, &k, &t, &s, &r, err) ||
        dprl_step_buffer_push(buf, &k, t, s, r, err)) {
      rc = dprl_sql_vtab_error(pzErr, "dp_first_visit", err);
      break;
    }
  }
  dprl_query_close(&q);
  return rc == SQLITE_DONE ? SQLITE_OK : rc;
}

static int fv_compute(sqlite3 *db, sqlite3_value **args, dprl_rows *out, char **pzErr) {
  dprl_error err = {0};
  dprl_return_rule rule;
  int64_t n_states = 0;
  dprl_step_buffer buf = {0};
  dprl_fv_scratch sc = {0};
  dprl_sql_cancel cancel;
  if (fv_options_parse(args[1], &n_states, &rule, &err))
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
    for (size_t e = 0; e < E && !rc; e++) {
      const dprl_step *steps;
      size_t n;
      fv_emit_ctx ctx = {out, {0}};
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

static const dprl_tvf_spec fv_spec = {
    "dp_first_visit",
    "CREATE TABLE x(episode, state INTEGER, t_first INTEGER, first_visit_return REAL,"
    " trajectories_sql HIDDEN, options HIDDEN)",
    4, 2, 2, fv_args, fv_compute, 0};

int dprl_register_first_visit(sqlite3 *db) { return dprl_tvf_register(db, &fv_spec); }
