/*
** sql_policy_eval.c: the dp_lsw and dp_lsl aggregates.
**
**   .load ./dprl
**   SELECT dp_lsw(episode, t, state, reward,
**                 '{"n_states": 5, "gamma": 0.9, "epsilon": 1, "delta": 1e-5}')
**   FROM steps;
**   -- {"mechanism":"dp_lsw","private":true,...,"theta":[...],"values":[...]}
**
**   SELECT site, dp_lsl(episode, t, state, reward, '{..., "lambda": 30}')
**   FROM steps GROUP BY site;            -- one release per group
**
** Glue only: each row is checked and handed to the row buffer (steps.c)
** or, with "grouped": true, to the episode stream; at the end the episodes
** go through first_visit.c and the release through policy_eval.c.
*/
#include <stdio.h>
#include <string.h>

#include "first_visit.h"
#include "policy_eval.h"
#include "sql_glue.h"

typedef struct pe_agg {
  int failed;
  dprl_pe_config cfg;
  char *options; /* the options text of the first row, to compare */
  int options_len;
  int64_t rows;
  dprl_step_buffer buf;         /* rows in any order */
  dprl_episode_stream stream;   /* grouped: true */
  dprl_fv_stats st;
  dprl_fv_scratch sc;
} pe_agg;

static void pe_agg_free(pe_agg *a) {
  dprl_pe_config_free(&a->cfg);
  sqlite3_free(a->options);
  dprl_step_buffer_free(&a->buf);
  dprl_episode_stream_free(&a->stream);
  dprl_fv_stats_free(&a->st);
  dprl_fv_scratch_free(&a->sc);
}

static int pe_agg_start(pe_agg *a, dprl_mechanism mech, const char *fn,
                        sqlite3_value *opt, dprl_error *err) {
  const char *text = (const char *)sqlite3_value_text(opt);
  int len = sqlite3_value_bytes(opt);
  if (!text && sqlite3_value_type(opt) != SQLITE_NULL) return dprl_nomem(err);
  int rc = dprl_pe_config_parse(&a->cfg, mech, fn, text, (size_t)len, 0, err);
  if (rc) return rc;
  a->options = sqlite3_malloc(len + 1);
  if (!a->options) return dprl_nomem(err);
  memcpy(a->options, text, (size_t)len + 1);
  a->options_len = len;
  if ((rc = dprl_fv_stats_init(&a->st, a->cfg.n_states, err))) return rc;
  return dprl_fv_scratch_init(&a->sc, a->cfg.n_states, err);
}

static int same_options(const pe_agg *a, sqlite3_value *opt, dprl_error *err) {
  const char *text = (const char *)sqlite3_value_text(opt);
  if (text && sqlite3_value_bytes(opt) == a->options_len &&
      memcmp(text, a->options, (size_t)a->options_len) == 0)
    return DPRL_OK;
  return dprl_fail(err, DPRL_EINVAL, "options must be the same for every row");
}

/* One row: checks, then buffer or stream. */
static int pe_agg_row(pe_agg *a, sqlite3_value **argv, dprl_error *err) {
  dprl_key ep;
  int64_t t, state;
  double reward;
  int rc;
  if ((rc = dprl_sql_key(argv[0], "episode", &ep, err)) ||
      (rc = dprl_sql_int(argv[1], "t", &t, err)) ||
      (rc = dprl_sql_int(argv[2], "state", &state, err)) ||
      (rc = dprl_sql_real(argv[3], "reward", &reward, err)))
    goto where;
  if (state < 0 || state >= a->cfg.n_states) {
    rc = dprl_fail(err, DPRL_EINVAL, "state must be in 0..n_states-1 = 0..%lld, got %lld",
                   (long long)a->cfg.n_states - 1, (long long)state);
    goto where;
  }
  a->rows++;
  if (!a->cfg.grouped)
    return dprl_step_buffer_push(&a->buf, &ep, t, (uint32_t)state, reward, err);
  int finished;
  const dprl_step *steps;
  size_t n;
  rc = dprl_episode_stream_push(&a->stream, &ep, t, (uint32_t)state, reward,
                                &finished, &steps, &n, err);
  if (!rc && finished)
    rc = dprl_fv_add_episode(&a->st, &a->sc, &a->cfg.rule, steps, n, NULL, NULL, err);
  return rc;
where:
  if (err->code == DPRL_EINVAL && argv[0] && sqlite3_value_type(argv[0]) != SQLITE_NULL) {
    /* Say which row, when the episode and t can be shown. */
    char e[48], t_[48], where[120];
    dprl_sql_describe(argv[0], e, sizeof e);
    dprl_sql_describe(argv[1], t_, sizeof t_);
    snprintf(where, sizeof where, " (row with episode %s, t %s)", e, t_);
    size_t used = strlen(err->msg);
    if (used + strlen(where) < sizeof err->msg) strcat(err->msg, where);
  }
  return rc;
}

typedef struct pe_fn {
  const char *name;
  dprl_mechanism mech;
} pe_fn;

static void pe_step(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  pe_agg **slot = sqlite3_aggregate_context(ctx, sizeof *slot);
  const pe_fn *f = sqlite3_user_data(ctx);
  const char *fn = f->name;
  dprl_error err; /* per row: clear the code only, not the 512-byte message */
  err.code = DPRL_OK;
  err.msg[0] = 0;
  int rc;
  if (!slot) {
    sqlite3_result_error_nomem(ctx);
    return;
  }
  if (*slot && (*slot)->failed) return;
  if (!*slot) {
    *slot = sqlite3_malloc(sizeof **slot);
    if (!*slot) {
      sqlite3_result_error_nomem(ctx);
      return;
    }
    memset(*slot, 0, sizeof **slot);
    rc = pe_agg_start(*slot, f->mech, fn, argv[4], &err);
  } else {
    rc = same_options(*slot, argv[4], &err);
  }
  if (!rc) rc = pe_agg_row(*slot, argv, &err);
  if (rc) {
    (*slot)->failed = 1;
    dprl_sql_result_error(ctx, fn, &err);
  }
  (void)argc;
}

/* All rows seen: episodes -> statistics. */
static int pe_collect(pe_agg *a, dprl_error *err) {
  int rc;
  if (a->cfg.grouped) {
    const dprl_step *steps;
    size_t n;
    rc = dprl_episode_stream_finish(&a->stream, &steps, &n, err);
    if (!rc && n)
      rc = dprl_fv_add_episode(&a->st, &a->sc, &a->cfg.rule, steps, n, NULL, NULL, err);
    return rc;
  }
  if ((rc = dprl_step_buffer_group(&a->buf, err))) return rc;
  size_t E = dprl_step_buffer_episodes(&a->buf);
  for (size_t e = 0; e < E && !rc; e++) {
    const dprl_step *steps;
    size_t n;
    rc = dprl_step_buffer_episode(&a->buf, e, &steps, &n, err);
    if (!rc) rc = dprl_fv_add_episode(&a->st, &a->sc, &a->cfg.rule, steps, n, NULL, NULL, err);
  }
  dprl_step_buffer_free(&a->buf); /* the statistics are all that is needed now */
  return rc;
}

static void pe_final(sqlite3_context *ctx) {
  pe_agg **slot = sqlite3_aggregate_context(ctx, 0);
  const char *fn = ((const pe_fn *)sqlite3_user_data(ctx))->name;
  if (!slot || !*slot) { /* no rows: nothing to release */
    sqlite3_result_null(ctx);
    return;
  }
  pe_agg *a = *slot;
  dprl_error err = {0};
  dprl_buf out = {0};
  if (!a->failed) {
    int rc = pe_collect(a, &err);
    if (!rc) rc = dprl_pe_release(&a->cfg, &a->st, &out, &err);
    if (rc) dprl_sql_result_error(ctx, fn, &err);
    else sqlite3_result_text(ctx, out.data, (int)out.len, SQLITE_TRANSIENT);
  }
  dprl_buf_free(&out);
  pe_agg_free(a);
  sqlite3_free(a);
  *slot = NULL;
}

int dprl_register_policy_eval(sqlite3 *db) {
  /* Noisy: never SQLITE_DETERMINISTIC, so two calls draw independent noise. */
  static const pe_fn fns[] = {{"dp_lsw", DPRL_LSW}, {"dp_lsl", DPRL_LSL}};
  for (int i = 0; i < 2; i++) {
    int rc = sqlite3_create_function_v2(db, fns[i].name, 5, SQLITE_UTF8 | SQLITE_INNOCUOUS,
                                        (void *)&fns[i], NULL, pe_step, pe_final, NULL);
    if (rc != SQLITE_OK) return rc;
  }
  return SQLITE_OK;
}
