/*
** sql_q_learn.c: differentially private Q-learning with functional noise
** (Wang & Hegde 2019, Algorithm 1; ALGORITHMS.md §8 and §10) as an
** aggregate: one release of theta per group.
**
**   SELECT dp_q_learn(s, a, r, s_next,
**     '{"n_actions": 2, "gamma": 0.9, "rmin": 0, "rmax": 1, "lr": 3e-4, "T": 5000, "B": 64,
**       "K": 21, "k": 60, "epsilon": 1, "delta": 1e-5}') AS model
**   FROM transitions;
**   -- {"mechanism":"dp_q_learn","private":true,...,"theta":[[...],[...]]}
**
** Glue only: options -> q_options.c; the transitions, kept in memory;
** Algorithm 1 in q_learn.c; the result as JSON.
*/
#include <string.h>

#include "base/json.h"
#include "q_learning/q_learn.h"
#include "q_learning/q_options.h"
#include "sqlite/sql_budget.h"
#include "sqlite/sql_glue.h"

typedef struct ql_agg {
  int failed;
  dprl_q_learn_cfg cfg;
  dprl_sql_pinned options;
  double *s, *r, *sn;
  int64_t *a;
  size_t n, cap;
} ql_agg;

static void ql_agg_free(ql_agg *g) {
  dprl_q_learn_cfg_free(&g->cfg);
  dprl_sql_unpin(&g->options);
  dprl_free(g->s);
  dprl_free(g->r);
  dprl_free(g->sn);
  dprl_free(g->a);
}

static int ql_push(ql_agg *g, double s, int64_t a, double r, double sn, dprl_error *err) {
  if (g->n == DPRL_Q_MAX_TRANSITIONS)
    return dprl_fail(err, DPRL_EINVAL,
                     "too many transitions: at most %zu fit (presampling sorts 2 states a "
                     "transition, 32 bytes with their index and path value, in one allocation "
                     "of at most %zu bytes)",
                     (size_t)DPRL_Q_MAX_TRANSITIONS, DPRL_MAX_ALLOC);
  if (g->n == g->cap) {
    size_t nc = g->cap ? 2 * g->cap : 1024;
    if (nc > DPRL_Q_MAX_TRANSITIONS) nc = DPRL_Q_MAX_TRANSITIONS;
    void **arrays[] = {(void **)&g->s, (void **)&g->r, (void **)&g->sn, (void **)&g->a};
    const size_t sizes[] = {sizeof *g->s, sizeof *g->r, sizeof *g->sn, sizeof *g->a};
    if (dprl_grow_parallel(nc, 4, arrays, sizes, err)) return DPRL_ENOMEM;
    g->cap = nc;
  }
  g->s[g->n] = s;
  g->a[g->n] = a;
  g->r[g->n] = r;
  g->sn[g->n] = sn;
  g->n++;
  return DPRL_OK;
}

static int ql_row(ql_agg *g, sqlite3_value **argv, dprl_error *err) {
  const dprl_q_learn_opts *o = &g->cfg.lo;
  double s, r, sn;
  int64_t a;
  int rc;
  if ((rc = dprl_sql_real(argv[0], "s", &s, err)) ||
      (rc = dprl_q_check_state(s, o->feat.lo, o->feat.hi, "s", err)) ||
      (rc = dprl_sql_int(argv[1], "a", &a, err)) ||
      (rc = dprl_q_check_action(a, o->m, "a", err)) ||
      (rc = dprl_sql_real(argv[2], "r", &r, err)) ||
      (rc = dprl_sql_real(argv[3], "s_next", &sn, err)) ||
      (rc = dprl_q_check_state(sn, o->feat.lo, o->feat.hi, "s_next", err)))
    return rc;
  return ql_push(g, s, a, r, sn, err);
}

/* The first row: the aggregate's state, its options read and pinned. */
static int ql_start(ql_agg **slot, sqlite3_value *options, int64_t max_result,
                    dprl_error *err) {
  const char *text = (const char *)sqlite3_value_text(options);
  ql_agg *g = *slot = sqlite3_malloc(sizeof *g);
  if (!g) return dprl_nomem(err);
  memset(g, 0, sizeof *g);
  int rc = dprl_q_learn_options(text, (size_t)sqlite3_value_bytes(options), max_result,
                                &g->cfg, err);
  if (!rc) rc = dprl_sql_pin_options(&g->options, options, err);
  return rc;
}

static void learn_step(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  ql_agg **slot = sqlite3_aggregate_context(ctx, sizeof *slot);
  dprl_error err = {0};
  (void)argc;
  if (!slot) {
    sqlite3_result_error_nomem(ctx);
    return;
  }
  if (*slot && (*slot)->failed) return;
  if (!sqlite3_value_text(argv[4]) && sqlite3_value_type(argv[4]) != SQLITE_NULL) {
    sqlite3_result_error_nomem(ctx);
    return;
  }
  int rc = *slot ? dprl_sql_same_options(&(*slot)->options, argv[4], &err)
                 : ql_start(slot, argv[4],
                            sqlite3_limit(sqlite3_context_db_handle(ctx), SQLITE_LIMIT_LENGTH, -1),
                            &err);
  if (!rc) {
    rc = ql_row(*slot, argv, &err);
    dprl_error_at_row(&err, "the transitions", (*slot)->n + 1);
  }
  if (rc) {
    if (*slot) (*slot)->failed = 1;
    dprl_sql_result_error(ctx, "dp_q_learn", &err);
  }
}

/* The calibration of the functional noise (Theorem 5), as an object. */
static void put_paths(dprl_buf *b, const dprl_q_learn_cfg *c) {
  const dprl_q_learn_opts *o = &c->lo;
  dprl_json_put_key(b, "paths");
  dprl_buf_puts(b, "{\"role\":\"the functional noise of Algorithm 1 (Theorem 5 covers Q + g); "
                   "theta's guarantee does not rest on it\"");
  dprl_json_put_num(b, "sigma", o->sigma);
  dprl_json_put_num(b, "beta", o->beta);
  if (o->sigma > 0) dprl_json_put_num(b, "grid", dprl_grid_for(o->sigma));
  if (c->explicit_sigma) {
    dprl_buf_puts(b, "}");
    return;
  }
  const dprl_q_calib_out *q = &c->cal.out;
  dprl_json_put_key(b, "accountant");
  dprl_json_put_string(b, q->accountant);
  dprl_buf_printf(b, ",\"proven\":%s", q->proven ? "true" : "false");
  dprl_json_put_num(b, "delta_total", q->delta_total);
  dprl_q_put_constants(b, &c->cal);
  if (!q->proven || !dprl_q_fresh_paths(&c->cal)) {
    dprl_json_put_key(b, "note");
    dprl_json_put_string(b, !q->proven ? q->note : dprl_q_reuse_note);
  }
  dprl_buf_puts(b, "}");
}

/* theta's own noise (ALGORITHMS.md §10): public values only. */
static void put_theta_noise(dprl_buf *b, const dprl_q_learn_cfg *c) {
  dprl_json_put_num(b, "epsilon", c->cal.epsilon);
  dprl_json_put_num(b, "delta", c->cal.delta);
  dprl_json_put_key(b, "theta_noise");
  dprl_buf_puts(b, "{\"accountant\":\"gdp\"");
  dprl_json_put_num(b, "sigma", c->th.sigma);
  dprl_json_put_num(b, "grid", c->th.grid);
  dprl_json_put_num(b, "sensitivity", c->th.sens);
  dprl_json_put_num(b, "mu", c->th.mu);
  dprl_json_put_int(b, "updates", c->lo.T / c->lo.B);
  dprl_buf_puts(b, "}");
}

/* The approximator and theta (one array of K numbers per action: up to
** 4 x 10^7 numbers in all, seconds of formatting, so it polls). */
static int put_model(dprl_buf *b, const dprl_q_learn_opts *o, const double *theta,
                     dprl_cancel *cancel, dprl_error *err) {
  dprl_json_put_key(b, "features");
  dprl_buf_printf(b, "{\"kind\":\"%s\",\"K\":%d", dprl_q_feature_names[o->feat.kind],
                  o->feat.K);
  dprl_json_put_num(b, "lo", o->feat.lo);
  dprl_json_put_num(b, "hi", o->feat.hi);
  dprl_buf_puts(b, "}");
  dprl_json_put_key(b, "theta");
  dprl_buf_puts(b, "[");
  for (int a = 0; a < o->m; a++) {
    if (dprl_cancel_poll(cancel, 300 * (uint64_t)o->feat.K, err)) return err->code;
    if (a) dprl_buf_puts(b, ",");
    dprl_json_put_double_array(b, theta + (size_t)a * (size_t)o->feat.K, (size_t)o->feat.K);
  }
  dprl_buf_puts(b, "]");
  return DPRL_OK;
}

/* Private: theta (noisy), the public parameters, the public noise levels.
** Never the number of transitions or anything else computed from data. */
static int learn_json(const ql_agg *g, const double *theta, dprl_cancel *cancel, dprl_buf *b,
                      dprl_error *err) {
  const dprl_q_learn_cfg *c = &g->cfg;
  const dprl_q_learn_opts *o = &c->lo;
  int private_ = !c->explicit_sigma && !c->has_seed;
  dprl_buf_puts(b, "{\"mechanism\":\"dp_q_learn\"");
  dprl_buf_printf(b, ",\"private\":%s", private_ ? "true" : "false");
  if (c->has_seed) dprl_buf_puts(b, ",\"seeded\":true");
  /* the unit of privacy: neighbours may change every reward (ALGORITHMS.md §10) */
  dprl_buf_puts(b, ",\"unit\":\"reward function\"");
  if (!c->explicit_sigma) put_theta_noise(b, c);
  put_paths(b, c);
  dprl_q_put_schedule(b, o->T, o->B, o->J, o->lr);
  dprl_json_put_int(b, "n_actions", o->m);
  dprl_json_put_num(b, "gamma", o->gamma);
  dprl_json_put_num(b, "rmin", o->rmin);
  dprl_json_put_num(b, "rmax", o->rmax);
  if (put_model(b, o, theta, cancel, err)) return err->code;
  if (!private_) {
    dprl_json_put_int(b, "transitions", (int64_t)g->n); /* a count: diagnostic only */
    dprl_json_put_key(b, "note");
    dprl_json_put_string(
        b, c->explicit_sigma
               ? "sigma was given, not calibrated: no privacy guarantee is claimed"
               : "seeded: the noise is reproducible from the seed, so the result is not "
                 "private (for tests and examples)");
  }
  dprl_buf_puts(b, "}");
  return DPRL_OK;
}

/* Algorithm 1 over the collected transitions, then the JSON. */
static void learn_result(sqlite3_context *ctx, ql_agg *g) {
  dprl_error err = {0};
  dprl_buf b = {0};
  dprl_rng rng;
  dprl_sql_cancel cancel;
  const dprl_q_learn_opts *o = &g->cfg.lo;
  double *theta = dprl_calloc((size_t)o->m * (size_t)o->feat.K, sizeof *theta);
  int rc = theta ? DPRL_OK : dprl_nomem(&err);
  memset(&rng, 0, sizeof rng);
  memset(&cancel, 0, sizeof cancel);
  if (!rc) rc = dprl_sql_cancel_open(&cancel, sqlite3_context_db_handle(ctx), &err);
  g->cfg.lo.cancel = &cancel.base;
  if (!rc) {
    if (g->cfg.has_seed) dprl_rng_init_seeded(&rng, g->cfg.seed, DPRL_STREAM_Q_LEARN);
    else rc = dprl_rng_init_secure(&rng, &err);
  }
  dprl_q_transitions d = {g->s, g->r, g->sn, g->a, g->n};
  if (!rc) rc = dprl_q_learn(o, &d, &rng, theta, NULL, &err);
  dprl_rng_wipe(&rng);
  if (!rc) rc = learn_json(g, theta, &cancel.base, &b, &err);
  dprl_sql_cancel_close(&cancel);
  if (!rc) { /* the ledger row, before theta is returned (sql_budget.c) */
    const dprl_q_learn_cfg *c = &g->cfg;
    int spends = !c->explicit_sigma && !c->has_seed;
    dprl_spend sp = {c->budget, "dp_q_learn", spends ? c->cal.epsilon : 0,
                     spends ? c->cal.delta : 0, spends, g->options.text,
                     g->options.text ? (size_t)g->options.len : 0,
                     c->has_seed ? "seed" : "sigma"};
    rc = dprl_budget_charge(sqlite3_context_db_handle(ctx), &sp, &err);
  }
  g->cfg.lo.cancel = NULL;
  if (rc) dprl_sql_result_error(ctx, "dp_q_learn", &err);
  else if (b.oom) sqlite3_result_error_nomem(ctx);
  else dprl_sql_result_json(ctx, b.data, (int)b.len);
  dprl_buf_free(&b);
  dprl_free(theta);
}

static void learn_final(sqlite3_context *ctx) {
  ql_agg **slot = sqlite3_aggregate_context(ctx, 0);
  if (!slot || !*slot) {
    sqlite3_result_null(ctx);
    return;
  }
  ql_agg *g = *slot;
  if (!g->failed) learn_result(ctx, g);
  ql_agg_free(g);
  sqlite3_free(g);
  *slot = NULL;
}

int dprl_register_q_learn(sqlite3 *db) { /* noisy: never SQLITE_DETERMINISTIC */
  /* It may write the privacy ledger: direct-only. */
  return sqlite3_create_function_v2(db, "dp_q_learn", 5, DPRL_JSON_FLAGS | SQLITE_DIRECTONLY, NULL,
                                    NULL, learn_step, learn_final, NULL);
}
