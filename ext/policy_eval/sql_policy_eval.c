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
#include "rows/made_with.h"
#include "policy_eval/sql_fv_agg.h"
#include "policy_eval/stats_merge.h"
#include "policy_eval/stats_perturb.h"
#include "policy_eval/sql_policy_eval.h"

/* dp_lsw, dp_lsl: the rows become first-visit statistics (sql_fv_agg.c),
** then one release (policy_eval.c).  The frame is sql_agg.c. */
typedef struct pe_state {
  dprl_pe_config cfg;
  dprl_fv_agg fv;
} pe_state;

static void pe_free(void *p) {
  pe_state *g = p;
  dprl_pe_config_free(&g->cfg);
  dprl_fv_agg_free(&g->fv);
}

/* The first row: options, then the per-state arrays (10^7 states take a
** while to zero: interruptible). */
static int pe_start(dprl_agg *a, const char *text, size_t len, int argc, dprl_error *err) {
  pe_state *g = a->state;
  const dprl_mechanism *mech = a->fn->arg;
  (void)argc;
  int rc = dprl_pe_config_parse(&g->cfg, *mech, a->fn->name, text, len, 0, a->max_length,
                                &a->cancel.base, err);
  if (!rc)
    rc = dprl_fv_agg_start(&g->fv, g->cfg.n_states, &g->cfg.rule, g->cfg.grouped,
                           &a->cancel.base, err);
  g->fv.keep_keys = g->cfg.budget != NULL; /* a budget's groups may share a charge */
  return rc;
}

static int pe_row(dprl_agg *a, int argc, sqlite3_value **argv, dprl_error *err) {
  (void)argc;
  return dprl_fv_agg_row(&((pe_state *)a->state)->fv, argv, err);
}

/* What a release of c spends: its (epsilon, delta) under the budget it
** names; a seeded or diagnostic one is not private (sql_budget.c refuses
** it under a budget, naming the option). */
static void pe_spend(const dprl_pe_config *c, dprl_spend *s) {
  s->budget = c->budget;
  s->epsilon = c->epsilon;
  s->delta = c->delta;
  s->spends = !c->diagnostic && !c->has_seed;
  s->why_not = c->diagnostic ? "release (\"diagnostic\")" : "seed";
  s->unit = "episode";
  /* statistics perturbation: one discrete Gaussian release (zCDP) */
  s->gaussian = c->perturb == DPRL_PERTURB_STATISTICS;
  if (s->gaussian) s->rho = dprl_sp_rho(c->epsilon, c->delta);
}

static int pe_final(dprl_agg *a, dprl_buf *out, dprl_spend *spend, dprl_error *err) {
  pe_state *g = a->state;
  g->cfg.cancel = &a->cancel.base;
  int rc = dprl_fv_agg_collect(&g->fv, &a->cancel.base, err);
  if (!rc) rc = dprl_pe_release(&g->cfg, &g->fv.st, out, err);
  g->cfg.cancel = NULL;
  pe_spend(&g->cfg, spend);
  return rc;
}

/* The episodes of the release: its units of privacy. */
static dprl_episode_index *pe_units(dprl_agg *a) {
  return dprl_fv_agg_keys(&((pe_state *)a->state)->fv);
}

static const dprl_mechanism mech_lsw = DPRL_LSW, mech_lsl = DPRL_LSL;
const dprl_agg_fn dprl_lsw_agg = {"dp_lsw", sizeof(pe_state), &mech_lsw,
                                  pe_start, pe_row, pe_final, pe_free, pe_units};
const dprl_agg_fn dprl_lsl_agg = {"dp_lsl", sizeof(pe_state), &mech_lsl,
                                  pe_start, pe_row, pe_final, pe_free, pe_units};

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
** with (ALGORITHMS.md §9).  In its place a row may carry made_with, the
** text of every parameter the statistics were made with (rows/made_with.h):
** each must then equal its option too. */
typedef struct stats_state {
  dprl_pe_config cfg;
  dprl_stats_merge merge; /* stats_merge.c: the checks and the sums */
  dprl_buf made_with;     /* the last made_with checked, and its bound */
  int64_t made_bound;
  int form;               /* 0: no row yet; 1: rows carry max_states; 2: made_with */
} stats_state;

static void stats_free(void *p) {
  stats_state *g = p;
  dprl_free(g->made_with.data);
  dprl_stats_merge_free(&g->merge);
  dprl_pe_config_free(&g->cfg);
}

static int stats_start(dprl_agg *a, const char *text, size_t len, int argc, dprl_error *err) {
  stats_state *g = a->state;
  const dprl_mechanism *mech = a->fn->arg;
  int rc = dprl_pe_config_parse(&g->cfg, *mech, a->fn->name, text, len, 1, a->max_length,
                                &a->cancel.base, err);
  const char *bound = argc == 5 || argc == 8 ? "max_states, " : "";
  if (!rc && argc >= 7 && !g->cfg.buckets)
    rc = dprl_fail(err, DPRL_EINVAL,
                   "the %d-argument form (state, visits, return_sum, buckets, bucket_lo, "
                   "bucket_hi, %soptions) needs option buckets", argc, bound);
  if (!rc && argc < 7 && g->cfg.buckets)
    rc = dprl_fail(err, DPRL_EINVAL,
                   "option buckets needs the %d-argument form (state, visits, return_sum, "
                   "buckets, bucket_lo, bucket_hi, %soptions)", argc + 3, bound);
  if (!rc && !*bound && g->cfg.rule.max_states > 0)
    rc = dprl_fail(err, DPRL_EINVAL,
                   "option max_states = %lld needs the bound the statistics were made with: "
                   "pass their max_states column (state, visits, return_sum, %smax_states, "
                   "options); statistics without it have no bound",
                   (long long)g->cfg.rule.max_states,
                   argc == 7 ? "buckets, bucket_lo, bucket_hi, " : "");
  if (!rc) rc = dprl_stats_merge_init(&g->merge, &g->cfg, &a->cancel.base, err);
  return rc;
}

/* The statistics' max_states column: NULL (made without a bound) or >= 1,
** or their made_with text, a JSON object (checked against the options; a
** row with the text of the row before is not parsed again).  Either every
** row carries made_with or none does: a row without it among rows with it
** (a shard whose recipe lost the column) would go unchecked. */
static int read_bound(stats_state *g, sqlite3_value *v, const dprl_stats_row *r, int64_t *k,
                      dprl_error *err) {
  char shard[64] = "";
  if (r->with_buckets)
    dprl_snprintf(shard, sizeof shard, " of buckets %lld..%lld", (long long)r->bucket_lo,
             (long long)r->bucket_hi);
  *k = 0;
  int type = sqlite3_value_type(v);
  const char *text = type == SQLITE_TEXT   ? (const char *)sqlite3_value_text(v)
                     : type == SQLITE_BLOB ? (const char *)sqlite3_value_blob(v)
                                           : NULL;
  size_t n = text ? (size_t)sqlite3_value_bytes(v) : 0, lead = 0;
  if (n >= 3 && !memcmp(text, "\xEF\xBB\xBF", 3)) lead = 3; /* a UTF-8 byte order mark */
  while (lead < n && (text[lead] == ' ' || text[lead] == '\t' || text[lead] == '\n' ||
                      text[lead] == '\r'))
    lead++;
  int made = lead < n && text[lead] == '{';
  if (g->form && g->form != 1 + made)
    return dprl_fail(err, DPRL_EINVAL,
                     "a row%s carries %s where rows before carry %s: pass made_with in every "
                     "row (or max_states in every row), so that every row's parameters are "
                     "checked", shard, made ? "made_with" : "max_states (no made_with)",
                     made ? "max_states (no made_with)" : "made_with");
  g->form = 1 + made;
  if (made) {
    text += lead, n -= lead;
    if (g->made_with.data && g->made_with.len == n && !memcmp(g->made_with.data, text, n)) {
      *k = g->made_bound;
      return DPRL_OK;
    }
    int rc = dprl_made_with_check(text, n, &g->cfg.rule, g->cfg.n_states, g->cfg.fn,
                                  r->with_buckets ? shard + 4 : NULL, k, err);
    if (rc) return rc;
    g->made_with.len = 0;
    dprl_buf_append(&g->made_with, text, n);
    if (g->made_with.oom) return dprl_nomem(err);
    g->made_bound = *k;
    return DPRL_OK;
  }
  if (type == SQLITE_NULL) return DPRL_OK;
  if (type == SQLITE_TEXT || type == SQLITE_BLOB)
    return dprl_fail(err, DPRL_EINVAL,
                     "the max_states position takes max_states (NULL or an integer >= 1) or "
                     "made_with (a JSON object), got %s of %zu bytes that is neither",
                     type == SQLITE_TEXT ? "a text" : "a blob", n);
  int rc = dprl_sql_int(v, "max_states", k, err);
  if (rc) return rc;
  if (*k < 1)
    return dprl_fail(err, DPRL_EINVAL,
                     "max_states must be NULL (no bound) or an integer >= 1, got %lld",
                     (long long)*k);
  return DPRL_OK;
}

static int stats_row(dprl_agg *a, int argc, sqlite3_value **argv, dprl_error *err) {
  stats_state *g = a->state;
  dprl_stats_row r;
  int rc;
  memset(&r, 0, sizeof r);
  if ((rc = dprl_sql_int(argv[0], "state", &r.state, err)) ||
      (rc = dprl_sql_int(argv[1], "visits", &r.visits, err)) ||
      (rc = dprl_sql_real(argv[2], "return_sum", &r.return_sum, err)))
    return rc;
  /* state and visits are checked before the other columns are read */
  if (r.state < 0 || r.state >= g->cfg.n_states || r.visits < 0 || r.visits > g->cfg.episodes)
    return dprl_stats_merge_row(&g->merge, &r, err);
  r.with_buckets = g->cfg.buckets != 0;
  if (r.with_buckets &&
      ((rc = dprl_sql_int(argv[3], "buckets", &r.bucket_k, err)) ||
       (rc = dprl_sql_int(argv[4], "bucket_lo", &r.bucket_lo, err)) ||
       (rc = dprl_sql_int(argv[5], "bucket_hi", &r.bucket_hi, err))))
    return rc;
  r.has_bound = argc == 5 || argc == 8;
  if (r.has_bound && (rc = read_bound(g, argv[argc - 2], &r, &r.bound, err))) return rc;
  return dprl_stats_merge_row(&g->merge, &r, err);
}

static int stats_final(dprl_agg *a, dprl_buf *out, dprl_spend *spend, dprl_error *err) {
  stats_state *g = a->state;
  g->cfg.cancel = &a->cancel.base;
  int rc = dprl_stats_merge_finish(&g->merge, &a->cancel.base, err);
  if (!rc) rc = dprl_pe_release(&g->cfg, &g->merge.st, out, err);
  g->cfg.cancel = NULL;
  pe_spend(&g->cfg, spend);
  return rc;
}

const dprl_agg_fn dprl_lsw_stats_agg = {"dp_lsw_from_stats", sizeof(stats_state), &mech_lsw,
                                        stats_start, stats_row, stats_final, stats_free, NULL};
const dprl_agg_fn dprl_lsl_stats_agg = {"dp_lsl_from_stats", sizeof(stats_state), &mech_lsl,
                                        stats_start, stats_row, stats_final, stats_free, NULL};
