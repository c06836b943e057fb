/*
** sql_policy_eval.c: the dp_lsw and dp_lsl aggregates.
**
**   .load ./dprl
**   SELECT dp_lsw(episode, t, state, reward,
**                 '{"n_states": 5, "gamma": 0.9, "rmin": 0, "rmax": 1, "epsilon": 1, "delta": 1e-5}')
**   FROM steps;
**   -- {"mechanism":"dp_lsw","private":true,...,"theta":[...],"values":[...]}
**
**   SELECT expert, dp_lsl(episode, t, state, reward, '{..., "lambda": 30}')
**   FROM steps GROUP BY expert;          -- one release per group (samples/clinic.sql)
**
** Glue only: the rows become first-visit statistics (sql_fv_agg.c, shared
** with dp_fv_stats) and the release goes through policy_eval.c.
*/
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "policy_eval/policy_eval.h"
#include "sqlite/sql_budget.h"
#include "policy_eval/sql_fv_agg.h"
#include "sqlite/sql_glue.h"

typedef struct pe_agg {
  int failed;
  dprl_pe_config cfg;
  dprl_sql_pinned options; /* the options of the first row */
  dprl_fv_agg fv;          /* rows -> statistics (sql_fv_agg.c) */
  dprl_sql_cancel cancel;  /* opened on the first row, used again at the end */
} pe_agg;

static void pe_agg_free(pe_agg *a) {
  dprl_pe_config_free(&a->cfg);
  dprl_sql_unpin(&a->options);
  dprl_fv_agg_free(&a->fv);
  dprl_sql_cancel_close(&a->cancel);
}

static int64_t length_limit(sqlite3_context *ctx) {
  return sqlite3_limit(sqlite3_context_db_handle(ctx), SQLITE_LIMIT_LENGTH, -1);
}

/* The first row: options, then the per-state arrays (10^7 states take a
** while to zero: interruptible). */
static int pe_agg_start(pe_agg *a, sqlite3_context *ctx, dprl_mechanism mech, const char *fn,
                        sqlite3_value *opt, dprl_error *err) {
  const char *text = (const char *)sqlite3_value_text(opt);
  int len = sqlite3_value_bytes(opt);
  if (!text && sqlite3_value_type(opt) != SQLITE_NULL) return dprl_nomem(err);
  int rc = dprl_sql_cancel_open(&a->cancel, sqlite3_context_db_handle(ctx), err);
  if (rc) return rc;
  rc = dprl_pe_config_parse(&a->cfg, mech, fn, text, (size_t)len, 0, length_limit(ctx),
                            &a->cancel.base, err);
  if (!rc) rc = dprl_sql_pin_options(&a->options, opt, err);
  if (!rc)
    rc = dprl_fv_agg_start(&a->fv, a->cfg.n_states, &a->cfg.rule, a->cfg.grouped,
                           &a->cancel.base, err);
  return rc;
}

typedef struct pe_fn {
  const char *name;
  dprl_mechanism mech;
} pe_fn;

static void pe_step(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  pe_agg **slot = sqlite3_aggregate_context(ctx, sizeof *slot);
  dprl_error err; /* per row: clear the code only, not the 512-byte message */
  err.code = DPRL_OK;
  err.msg[0] = 0;
  int rc;
  if (!slot) {
    sqlite3_result_error_nomem(ctx);
    return;
  }
  if (*slot && (*slot)->failed) return;
  if (!*slot) { /* the first row: which function, its options */
    const pe_fn *f = sqlite3_user_data(ctx);
    *slot = sqlite3_malloc(sizeof **slot);
    if (!*slot) {
      sqlite3_result_error_nomem(ctx);
      return;
    }
    memset(*slot, 0, sizeof **slot);
    rc = pe_agg_start(*slot, ctx, f->mech, f->name, argv[4], &err);
  } else {
    rc = dprl_sql_same_options(&(*slot)->options, argv[4], &err);
  }
  if (!rc) rc = dprl_fv_agg_row(&(*slot)->fv, argv, &err);
  if (rc) {
    (*slot)->failed = 1;
    dprl_sql_result_error(ctx, ((const pe_fn *)sqlite3_user_data(ctx))->name, &err);
  }
  (void)argc;
}

/* The ledger row of a release, before it is returned (sql_budget.c). */
static int pe_charge(sqlite3_context *ctx, const dprl_pe_config *c, const dprl_sql_pinned *opt,
                     dprl_error *err) {
  dprl_spend s = {c->budget, c->fn, c->epsilon, c->delta, !c->diagnostic && !c->has_seed,
                  opt->text, opt->text ? (size_t)opt->len : 0,
                  c->diagnostic ? "release (\"diagnostic\")" : "seed"};
  return dprl_budget_charge(sqlite3_context_db_handle(ctx), &s, err);
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
    a->cfg.cancel = &a->cancel.base;
    int rc = dprl_fv_agg_collect(&a->fv, &a->cancel.base, &err);
    if (!rc) rc = dprl_pe_release(&a->cfg, &a->fv.st, &out, &err);
    if (!rc) rc = pe_charge(ctx, &a->cfg, &a->options, &err);
    a->cfg.cancel = NULL;
    if (rc) dprl_sql_result_error(ctx, fn, &err);
    else dprl_sql_result_json(ctx, out.data, (int)out.len);
  }
  dprl_buf_free(&out);
  pe_agg_free(a);
  sqlite3_free(a);
  *slot = NULL;
}

static int dprl_register_policy_eval_stats(sqlite3 *db);

/* dp_plan(options): deterministic, reads no data (plan.c); 10^7 states
** take seconds, so every phase can be interrupted. */
static void plan_fn(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  dprl_error err = {0};
  dprl_pe_config c;
  dprl_sql_cancel cancel;
  int64_t *visits = NULL;
  dprl_buf b = {0};
  (void)argc;
  const char *text = (const char *)sqlite3_value_text(argv[0]);
  if (!text && sqlite3_value_type(argv[0]) != SQLITE_NULL) {
    sqlite3_result_error_nomem(ctx);
    return;
  }
  int rc = dprl_sql_cancel_open(&cancel, sqlite3_context_db_handle(ctx), &err);
  if (!rc) {
    rc = dprl_pe_plan_parse(&c, text, (size_t)sqlite3_value_bytes(argv[0]), &visits,
                            length_limit(ctx), &cancel.base, &err);
    if (!rc) {
      c.cancel = &cancel.base;
      rc = dprl_pe_plan(&c, visits, &b, &err);
      c.cancel = NULL;
      dprl_pe_config_free(&c);
      dprl_free(visits);
    }
    dprl_sql_cancel_close(&cancel);
  }
  if (rc) dprl_sql_result_error(ctx, "dp_plan", &err);
  else dprl_sql_result_json(ctx, b.data, (int)b.len);
  dprl_buf_free(&b);
}

int dprl_register_policy_eval(sqlite3 *db) {
  /* Noisy, so registered without the deterministic flag: two calls in one
  ** statement must draw independent noise (tests/sql/test_registry.py).
  ** They may write the privacy ledger: direct-only (never from a view,
  ** trigger or CHECK), SQLite's rule for functions with side effects. */
  static const pe_fn fns[] = {{"dp_lsw", DPRL_LSW}, {"dp_lsl", DPRL_LSL}};
  for (int i = 0; i < 2; i++) {
    int rc = sqlite3_create_function_v2(db, fns[i].name, 5, DPRL_JSON_FLAGS | SQLITE_DIRECTONLY,
                                        (void *)&fns[i], NULL, pe_step, pe_final, NULL);
    if (rc != SQLITE_OK) return rc;
  }
  int rc = sqlite3_create_function_v2(db, "dp_plan", 1,
                                      DPRL_JSON_FLAGS | SQLITE_DETERMINISTIC | SQLITE_INNOCUOUS,
                                      NULL, plan_fn, NULL, NULL, NULL);
  if (rc != SQLITE_OK) return rc;
  return dprl_register_policy_eval_stats(db);
}

/* ---- the same release from per-state statistics ---------------------------
**
**   SELECT dp_lsw_from_stats(state, visits, return_sum,
**            '{"n_states": 750, "gamma": 0.99, "rmin": 0, "rmax": 1, "epsilon": 1, "delta": 1e-6,
**              "episodes": 100000}')
**   FROM (SELECT * FROM shard1.stats UNION ALL SELECT * FROM shard2.stats);
**
** Rows for the same state are added up (statistics of disjoint sets of
** episodes merge by addition), so shards can be unioned as they are.  The
** release is exactly what dp_lsw / dp_lsl give from the underlying steps.
*/

/* With option "buckets": K, each row also says which hash buckets of the
** episode ids its shard covers (sql/first_visit_stats.sql): one shard is
** one (lo, hi) range, and the ranges must cover 0..K-1 exactly once, so no
** episode can be counted by two shards (the privacy unit) or dropped.
**
** The forms, by argument count (options always last):
**   4  state, visits, return_sum
**   5  state, visits, return_sum, max_states
**   7  state, visits, return_sum, buckets, bucket_lo, bucket_hi
**   8  state, visits, return_sum, buckets, bucket_lo, bucket_hi, max_states
** max_states is the contribution bound the statistics were made with (NULL:
** none; dp_fv_stats, dp_first_visit and sql/ give it).  It must equal option
** max_states in every row, and the forms without it are statistics with no
** bound, so a release cannot assume a bound the statistics were not made
** with (ALGORITHMS.md §9). */
typedef struct shard_row {
  int64_t lo, hi, state;
} shard_row;

typedef struct stats_agg {
  int failed;
  dprl_pe_config cfg;
  dprl_fv_stats st;
  dprl_sql_pinned options;
  dprl_sql_cancel cancel; /* opened on the first row, used again at the end */
  shard_row *rows; /* buckets form: one per row */
  size_t n_rows, cap_rows;
} stats_agg;

static int shard_row_cmp(const void *pa, const void *pb) {
  const shard_row *a = pa, *b = pb;
  if (a->lo != b->lo) return (a->lo > b->lo) - (a->lo < b->lo);
  if (a->hi != b->hi) return (a->hi > b->hi) - (a->hi < b->hi);
  return (a->state > b->state) - (a->state < b->state);
}

static int bucket_row(stats_agg *a, sqlite3_value **argv, int64_t s, dprl_error *err) {
  int64_t K = a->cfg.buckets, k, lo, hi;
  int rc;
  if ((rc = dprl_sql_int(argv[3], "buckets", &k, err)) ||
      (rc = dprl_sql_int(argv[4], "bucket_lo", &lo, err)) ||
      (rc = dprl_sql_int(argv[5], "bucket_hi", &hi, err)))
    return rc;
  if (k != K)
    return dprl_fail(err, DPRL_EINVAL,
                     "buckets must equal option buckets = %lld (the shard was hashed with "
                     "another K), got %lld", (long long)K, (long long)k);
  if (!(lo >= 0 && lo <= hi && hi <= K - 1))
    return dprl_fail(err, DPRL_EINVAL,
                     "bucket_lo..bucket_hi must be a range within 0..%lld, got %lld..%lld",
                     (long long)K - 1, (long long)lo, (long long)hi);
  if (a->n_rows == a->cap_rows) {
    size_t nc = a->cap_rows ? 2 * a->cap_rows : 64;
    shard_row *r = dprl_realloc(a->rows, nc * sizeof *r);
    if (!r) return dprl_nomem(err);
    a->rows = r;
    a->cap_rows = nc;
  }
  a->rows[a->n_rows++] = (shard_row){lo, hi, s};
  return DPRL_OK;
}

/* The shards' ranges, sorted: a state given twice by one shard (the same
** shard unioned twice), overlapping ranges, and uncovered buckets are
** errors.  Messages name buckets only, never a state. */
static int buckets_check(stats_agg *a, dprl_error *err) {
  int64_t K = a->cfg.buckets, next = 0;
  if (K == 0) return DPRL_OK;
  int rc = dprl_sort(a->rows, a->n_rows, sizeof *a->rows, shard_row_cmp, a->cfg.cancel, err);
  if (rc) return rc;
  for (size_t i = 0; i < a->n_rows; i++) {
    const shard_row *r = &a->rows[i];
    if (i && r->lo == r[-1].lo && r->hi == r[-1].hi) {
      if (r->state == r[-1].state)
        return dprl_fail(err, DPRL_EINVAL,
                         "the shard of buckets %lld..%lld gives a state twice (was it "
                         "unioned twice?)", (long long)r->lo, (long long)r->hi);
      continue;
    }
    if (r->lo < next)
      return dprl_fail(err, DPRL_EINVAL, "buckets %lld..%lld and %lld..%lld overlap: an episode "
                       "would count twice", (long long)r[-1].lo, (long long)r[-1].hi,
                       (long long)r->lo, (long long)r->hi);
    if (r->lo > next)
      return dprl_fail(err, DPRL_EINVAL, "bucket %lld is not covered by any shard",
                       (long long)next);
    next = r->hi + 1;
  }
  if (next < K)
    return dprl_fail(err, DPRL_EINVAL, "bucket %lld is not covered by any shard", (long long)next);
  return DPRL_OK;
}

/* A bound for messages: "2", or "NULL (no bound)". */
static const char *bound_text(int64_t k, char *buf, size_t n) {
  if (k > 0) snprintf(buf, n, "%lld", (long long)k);
  else snprintf(buf, n, "NULL (no bound)");
  return buf;
}

/* The statistics' max_states (argument bound, NULL = none) against the
** option's. */
static int bound_row(stats_agg *a, sqlite3_value *bound, dprl_error *err) {
  int64_t k = 0, want = a->cfg.rule.max_states;
  char got_s[32], want_s[32];
  if (sqlite3_value_type(bound) != SQLITE_NULL) {
    int rc = dprl_sql_int(bound, "max_states", &k, err);
    if (rc) return rc;
    if (k < 1)
      return dprl_fail(err, DPRL_EINVAL,
                       "max_states must be NULL (no bound) or an integer >= 1, got %lld",
                       (long long)k);
  }
  if (k != want)
    return dprl_fail(err, DPRL_EINVAL,
                     "the statistics were made with max_states = %s but option max_states = "
                     "%s: release them with the contribution bound they were made with",
                     bound_text(k, got_s, sizeof got_s), bound_text(want, want_s, sizeof want_s));
  return DPRL_OK;
}

static int stats_row(stats_agg *a, sqlite3_value **argv, int argc, dprl_error *err) {
  int64_t s, v;
  double sum;
  int rc;
  if ((rc = dprl_sql_int(argv[0], "state", &s, err)) ||
      (rc = dprl_sql_int(argv[1], "visits", &v, err)) ||
      (rc = dprl_sql_real(argv[2], "return_sum", &sum, err)))
    return rc;
  if (s < 0 || s >= a->cfg.n_states)
    return dprl_fail(err, DPRL_EINVAL, "state must be in 0..n_states-1 = 0..%lld, got %lld",
                     (long long)a->cfg.n_states - 1, (long long)s);
  if (v < 0 || v > a->cfg.episodes)
    return dprl_fail(err, DPRL_EINVAL,
                     "visits must be in 0..episodes = 0..%lld, got %lld (state %lld)",
                     (long long)a->cfg.episodes, (long long)v, (long long)s);
  if ((argc == 5 || argc == 8) && (rc = bound_row(a, argv[argc - 2], err))) return rc;
  if (a->cfg.buckets && (rc = bucket_row(a, argv, s, err))) return rc;
  if (a->st.visits[s] > INT64_MAX - v) /* v <= m <= 2^53: only after ~1000 rows */
    return dprl_fail(err, DPRL_EINVAL,
                     "state %lld: visits add up to more than 2^63 - 1, more than episodes = %lld",
                     (long long)s, (long long)a->cfg.episodes);
  a->st.visits[s] += v;
  a->st.return_sum[s] += sum;
  return DPRL_OK;
}

/* With max_states = k, each episode adds at most k to the visits of all
** states together, so m episodes give sum_s |X_s| <= k m (and, with
** |X_s| <= m, any such counts can be produced: ALGORITHMS.md §9).  The sum
** is kept as q m + r, 0 <= r < m (each |X_s| <= m), so nothing overflows. */
static int bound_check(stats_agg *a, dprl_error *err) {
  int64_t k = a->cfg.rule.max_states, m = a->cfg.episodes, q = 0, r = 0;
  if (k <= 0 || k >= a->cfg.n_states) return DPRL_OK; /* k >= N: implied by |X_s| <= m */
  for (int64_t s = 0; s < a->cfg.n_states; s++) {
    if (dprl_cancel_poll(a->cfg.cancel, 4, err)) return err->code;
    r += a->st.visits[s]; /* r < m, visits <= m: r < 2^54 */
    if (r >= m) {
      r -= m;
      q++;
    }
  }
  if (q > k || (q == k && r > 0))
    return dprl_fail(err, DPRL_EINVAL,
                     "the visits of all states add up to %.17g, more than option max_states x "
                     "episodes = %lld x %lld: no %lld episodes of at most %lld first-visits each "
                     "could produce them",
                     (double)q * (double)m + (double)r, (long long)k, (long long)m, (long long)m,
                     (long long)k);
  return DPRL_OK;
}

/* The merged statistics must be ones that steps could have produced:
** |X_s| <= m and |X_s| fmin <= sum <= |X_s| fmax.  Sums are clamped to that
** range (rounding in a shard's own summation may overshoot by an ulp or
** so); a real excess is an error. */
static int stats_check(stats_agg *a, dprl_error *err) {
  const dprl_return_rule *r = &a->cfg.rule;
  a->st.m = a->cfg.episodes;
  for (int64_t s = 0; s < a->cfg.n_states; s++) {
    double n = (double)a->st.visits[s], lo = n * r->fmin, hi = n * r->fmax;
    double slack = (hi - lo) * 1e-9 + 1e-300;
    if (a->st.visits[s] > a->cfg.episodes)
      return dprl_fail(err, DPRL_EINVAL,
                       "state %lld: visits add up to %lld, more than episodes = %lld",
                       (long long)s, (long long)a->st.visits[s], (long long)a->cfg.episodes);
    if (a->st.return_sum[s] > hi + slack || a->st.return_sum[s] < lo - slack)
      return dprl_fail(err, DPRL_EINVAL,
                       "state %lld: return_sum %.17g is outside visits x [fmin, fmax] = %lld x "
                       "[%.17g, %.17g]",
                       (long long)s, a->st.return_sum[s], (long long)a->st.visits[s], r->fmin,
                       r->fmax);
    if (a->st.return_sum[s] > hi) a->st.return_sum[s] = hi;
    if (a->st.return_sum[s] < lo) a->st.return_sum[s] = lo;
  }
  return bound_check(a, err);
}

static void stats_step(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  stats_agg **slot = sqlite3_aggregate_context(ctx, sizeof *slot);
  const pe_fn *f = sqlite3_user_data(ctx);
  dprl_error err;
  err.code = DPRL_OK;
  err.msg[0] = 0;
  int rc = DPRL_OK;
  sqlite3_value *opt = argv[argc - 1]; /* 4, 5, 7 or 8 arguments (above) */
  if (!slot) {
    sqlite3_result_error_nomem(ctx);
    return;
  }
  if (*slot && (*slot)->failed) return;
  if (!*slot) {
    stats_agg *a = *slot = sqlite3_malloc(sizeof *a);
    if (!a) {
      sqlite3_result_error_nomem(ctx);
      return;
    }
    memset(a, 0, sizeof *a);
    const char *text = (const char *)sqlite3_value_text(opt);
    int len = sqlite3_value_bytes(opt);
    rc = dprl_sql_cancel_open(&a->cancel, sqlite3_context_db_handle(ctx), &err);
    if (!rc)
      rc = dprl_pe_config_parse(&a->cfg, f->mech, f->name, text, (size_t)len, 1,
                                length_limit(ctx), &a->cancel.base, &err);
    const char *bound = argc == 5 || argc == 8 ? "max_states, " : "";
    if (!rc && argc >= 7 && !a->cfg.buckets)
      rc = dprl_fail(&err, DPRL_EINVAL,
                     "the %d-argument form (state, visits, return_sum, buckets, bucket_lo, "
                     "bucket_hi, %soptions) needs option buckets", argc, bound);
    if (!rc && argc < 7 && a->cfg.buckets)
      rc = dprl_fail(&err, DPRL_EINVAL,
                     "option buckets needs the %d-argument form (state, visits, return_sum, "
                     "buckets, bucket_lo, bucket_hi, %soptions)", argc + 3, bound);
    if (!rc && !*bound && a->cfg.rule.max_states > 0)
      rc = dprl_fail(&err, DPRL_EINVAL,
                     "option max_states = %lld needs the bound the statistics were made with: "
                     "pass their max_states column (state, visits, return_sum, %smax_states, "
                     "options); statistics without it have no bound",
                     (long long)a->cfg.rule.max_states,
                     argc == 7 ? "buckets, bucket_lo, bucket_hi, " : "");
    if (!rc) rc = dprl_fv_stats_init(&a->st, a->cfg.n_states, &a->cancel.base, &err);
    if (!rc) rc = dprl_sql_pin_options(&a->options, opt, &err);
  } else {
    rc = dprl_sql_same_options(&(*slot)->options, opt, &err);
  }
  if (!rc) rc = stats_row(*slot, argv, argc, &err);
  if (rc) {
    (*slot)->failed = 1;
    dprl_sql_result_error(ctx, f->name, &err);
  }
}

static void stats_final(sqlite3_context *ctx) {
  stats_agg **slot = sqlite3_aggregate_context(ctx, 0);
  const pe_fn *f = sqlite3_user_data(ctx);
  if (!slot || !*slot) {
    sqlite3_result_null(ctx);
    return;
  }
  stats_agg *a = *slot;
  dprl_error err = {0};
  dprl_buf out = {0};
  if (!a->failed) {
    a->cfg.cancel = &a->cancel.base;
    int rc = buckets_check(a, &err);
    if (!rc) rc = stats_check(a, &err);
    if (!rc) rc = dprl_pe_release(&a->cfg, &a->st, &out, &err);
    if (!rc) rc = pe_charge(ctx, &a->cfg, &a->options, &err);
    a->cfg.cancel = NULL;
    if (rc) dprl_sql_result_error(ctx, f->name, &err);
    else dprl_sql_result_json(ctx, out.data, (int)out.len);
  }
  dprl_buf_free(&out);
  dprl_pe_config_free(&a->cfg);
  dprl_fv_stats_free(&a->st);
  dprl_sql_unpin(&a->options);
  dprl_sql_cancel_close(&a->cancel);
  dprl_free(a->rows);
  sqlite3_free(a);
  *slot = NULL;
}

static int dprl_register_policy_eval_stats(sqlite3 *db) {
  static const pe_fn fns[] = {{"dp_lsw_from_stats", DPRL_LSW},
                              {"dp_lsl_from_stats", DPRL_LSL}};
  static const int nargs[] = {4, 5, 7, 8}; /* the forms above */
  for (int i = 0; i < 8; i++) {
    int rc = sqlite3_create_function_v2(db, fns[i / 4].name, nargs[i % 4],
                                        DPRL_JSON_FLAGS | SQLITE_DIRECTONLY, (void *)&fns[i / 4],
                                        NULL, stats_step, stats_final, NULL);
    if (rc != SQLITE_OK) return rc;
  }
  return SQLITE_OK;
}
