/*
** dprl.c: the entry point.  Loading the extension registers:
**
**   dprl_version()                                 -> '0.2.0'
**   dprl_debug()                                   -> version, commit, build, BLAS
**   dprl_debug(options)                            -> 'bytes' or 'converted': how the
**                                                     row aggregates compare it per row
**   dp_lsw(episode, t, state, reward, options)     aggregate
**   dp_lsl(episode, t, state, reward, options)     aggregate
**   dp_lsw_from_stats(state, visits, return_sum, options)   aggregate
**   dp_lsl_from_stats(state, visits, return_sum, options)   aggregate
**   dp_first_visit(trajectories_sql, options)      table-valued, NOT private
**   dp_fv_stats(episode, t, state, reward, options) aggregate, NOT private
**   dp_prefix_stable(trajectories_sql, policies_sql, options)  table-valued
**   dp_prefix_calibrate(options)                   its public parameters (JSON)
**   dp_q_calibrate(options)                        scalar, JSON
**   dp_q_noise(points_sql, options)                table-valued
**   dp_q_learn(s, a, r, s_next, options)           aggregate
**   dp_q_value(model, state, action)               scalar
**   dp_mdp(episode, t, state, action, reward[, outcome], options)   aggregate
**   dp_is_value(episode, t, reward, behavior_prob, target_prob, options)  aggregate
**   dp_expert_policy(expert, episode, t, state, action, options)  aggregate
**   dp_plan(options)                               planned sigma and error (JSON), a study's plan
**   dprl_budget_plan(name, releases)               a study's plan against a declared budget
**   dp_mdp_value(model, policy[, options])         a policy's value on a released MDP model
**   dp_mdp_plan(model[, options])                  the optimal policy on a released MDP model
**   dprl_budget(name, epsilon, delta), dprl_budget_remaining(name)   the ledger
**
**   sqlite> .load ./dprl
**   sqlite> SELECT dprl_version();
**
** Every function is registered from one table below (its arguments and
** flags); each lives in its mechanism's sql_*.c glue, and the numerical
** core (every other file in ext/) knows nothing of SQLite.
** The table-valued functions run caller SQL and are therefore
** SQLITE_VTAB_DIRECTONLY (sql_tvf.c): top-level statements only.
**
** sqlite3_dprl_init is the only symbol dprl.so exports: everything is
** compiled with -fvisibility=hidden and it alone is marked visible.  With
** -DSQLITE_CORE (make static) the same file links into a program that
** registers it with sqlite3_auto_extension (dprl.h).
*/
#include <pthread.h>
#include <sqlite3ext.h>
SQLITE_EXTENSION_INIT1

#include "base/core.h"
#include "dprl.h"
#include "base/linalg.h"
#include "mdp/sql_mdp_eval.h"
#include "expert/sql_expert.h"
#include "policy_eval/sql_policy_eval.h"
#include "ope/sql_ope.h"
#include "prefix_stable/sql_prefix_stable.h"
#include "mdp/sql_mdp.h"
#include "q_learning/sql_q.h"
#include "study/sql_plan.h"
#include "sqlite/sql_agg.h"
#include "sqlite/sql_budget.h"
#include "sqlite/sql_ledger.h"
#include "sqlite/sql_glue.h"
#include "sqlite/sql_tvf.h"

const char dprl_version[] = DPRL_VERSION;

/* The commit the Makefile compiled in (git rev-parse --short HEAD). */
#ifndef DPRL_GIT_COMMIT
#define DPRL_GIT_COMMIT "unknown"
#endif

#if defined(_WIN32)
#define DPRL_EXPORT __declspec(dllexport)
#elif defined(__GNUC__)
#define DPRL_EXPORT __attribute__((visibility("default")))
#else
#define DPRL_EXPORT
#endif

static void *sqlite_alloc(size_t n) { return sqlite3_malloc64((sqlite3_uint64)n); }
static void *sqlite_resize(void *p, size_t n) {
  return sqlite3_realloc64(p, (sqlite3_uint64)n);
}
static void sqlite_release(void *p) { sqlite3_free(p); }

static void version_fn(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  (void)argc;
  (void)argv;
  sqlite3_result_text(ctx, DPRL_VERSION, -1, SQLITE_STATIC);
}

static void debug_fn(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  if (argc == 1) { /* how the row aggregates compare this options value, row by row */
    sqlite3_result_text(ctx, dprl_sql_options_as_bytes(argv[0]) ? "bytes" : "converted", -1,
                        SQLITE_STATIC);
    return;
  }
  char *s = sqlite3_mprintf("dprl %s\ncommit %s\nbuilt %s %s with %s\nsqlite %s (runtime)\nblas: %s",
                            DPRL_VERSION, DPRL_GIT_COMMIT, __DATE__, __TIME__,
#if defined(__clang__)
                            "clang " __clang_version__,
#elif defined(__GNUC__)
                            "gcc " __VERSION__,
#else
                            "an unknown compiler",
#endif
                            sqlite3_libversion(), dprl_linalg_backend());
  if (!s) sqlite3_result_error_nomem(ctx);
  else sqlite3_result_text(ctx, s, -1, sqlite3_free);
}

/* Every SQL function dprl registers, with its arguments and flags.
** PURE: deterministic, reads nothing but its arguments (usable in views,
**   indexes and CHECKs).
** EXACT: as PURE, but its result goes through LAPACK/BLAS, whose last bits
**   change with the machine, the library and its thread count: not
**   deterministic (never in an index, where a lookup would miss the row).
** LONG: as EXACT, and it can run long on a public input: direct-only too,
**   so a view or trigger in a file someone else wrote cannot start it.
** NOISY: draws fresh noise (never deterministic: two calls in a statement
**   are independent) or touches the database, and may write the privacy
**   ledger; direct-only (top-level statements, never a view or trigger).
** The table-valued functions run caller SQL: direct-only too (sql_tvf.c).
** tests/sql/test_registry.py checks these flags from SQL. */
#define PURE (SQLITE_UTF8 | SQLITE_DETERMINISTIC | SQLITE_INNOCUOUS)
#define PURE_JSON (DPRL_JSON_FLAGS | SQLITE_DETERMINISTIC | SQLITE_INNOCUOUS)
#define EXACT_JSON (DPRL_JSON_FLAGS | SQLITE_INNOCUOUS)
#define LONG_JSON (DPRL_JSON_FLAGS | SQLITE_DIRECTONLY)
#define NOISY (SQLITE_UTF8 | SQLITE_DIRECTONLY)
#define NOISY_JSON (DPRL_JSON_FLAGS | SQLITE_DIRECTONLY)

typedef void (*sql_fn)(sqlite3_context *, int, sqlite3_value **);
static const struct function {
  const char *name;
  int nargs, flags;
  const void *data;          /* user data: an aggregate's dprl_agg_fn */
  sql_fn func, step;         /* scalar, or aggregate step */
  void (*final)(sqlite3_context *);
} functions[] = {
#define SCALAR(name, nargs, flags, fn) {name, nargs, flags, NULL, fn, NULL, NULL}
#define AGGREGATE(name, nargs, flags, agg) \
  {name, nargs, flags, &(agg), NULL, dprl_agg_step, dprl_agg_final}
    SCALAR("dprl_version", 0, PURE, version_fn),
    SCALAR("dprl_debug", 0, SQLITE_UTF8 | SQLITE_INNOCUOUS, debug_fn),
    SCALAR("dprl_debug", 1, SQLITE_UTF8 | SQLITE_INNOCUOUS, debug_fn),
    /* the privacy ledger (sqlite/sql_budget.c) */
    SCALAR("dprl_budget", 3, NOISY_JSON, dprl_sql_budget),
    SCALAR("dprl_budget", 4, NOISY_JSON, dprl_sql_budget),
    SCALAR("dprl_budget_remaining", 1, NOISY_JSON, dprl_sql_budget_remaining),
    /* the budget check inside the ledger's INSERT (sqlite/sql_ledger.c) */
    SCALAR("dprl_ledger_fits", 6, PURE, dprl_sql_ledger_fits),
    {"dprl_ledger_total", 1, PURE, NULL, NULL, dprl_sql_ledger_total_step,
     dprl_sql_ledger_total_final},
    /* policy evaluation (policy_eval/): episode, t, state, reward, options */
    AGGREGATE("dp_lsw", 5, NOISY_JSON, dprl_lsw_agg),
    AGGREGATE("dp_lsl", 5, NOISY_JSON, dprl_lsl_agg),
    /* state, visits, return_sum[, buckets, bucket_lo, bucket_hi][, max_states], options */
    AGGREGATE("dp_lsw_from_stats", 4, NOISY_JSON, dprl_lsw_stats_agg),
    AGGREGATE("dp_lsw_from_stats", 5, NOISY_JSON, dprl_lsw_stats_agg),
    AGGREGATE("dp_lsw_from_stats", 7, NOISY_JSON, dprl_lsw_stats_agg),
    AGGREGATE("dp_lsw_from_stats", 8, NOISY_JSON, dprl_lsw_stats_agg),
    AGGREGATE("dp_lsl_from_stats", 4, NOISY_JSON, dprl_lsl_stats_agg),
    AGGREGATE("dp_lsl_from_stats", 5, NOISY_JSON, dprl_lsl_stats_agg),
    AGGREGATE("dp_lsl_from_stats", 7, NOISY_JSON, dprl_lsl_stats_agg),
    AGGREGATE("dp_lsl_from_stats", 8, NOISY_JSON, dprl_lsl_stats_agg),
    /* exact first-visit statistics, NOT private */
    AGGREGATE("dp_fv_stats", 5, PURE_JSON, dprl_fv_stats_agg),
    /* expert-level prefixes (prefix_stable/) */
    SCALAR("dp_prefix_calibrate", 1, PURE_JSON, dprl_sql_prefix_calibrate),
    /* dp_prefix_stable's key reader: collects keys as a side effect */
    SCALAR(PS_KEY_FN, 2, NOISY, ps_key_fn),
    SCALAR(PS_KEY_FN, 5, NOISY, ps_key_fn),
    /* Q-learning with functional noise (q_learning/) */
    SCALAR("dp_q_calibrate", 1, PURE_JSON, dprl_sql_q_calibrate),
    /* s, a, r, s_next, options */
    AGGREGATE("dp_q_learn", 5, NOISY_JSON, dprl_q_learn_agg),
    SCALAR("dp_q_value", 3, PURE, dprl_sql_q_value),
    /* the patient-level model release (mdp/): episode, t, state, action, reward[, outcome],
    ** options */
    AGGREGATE("dp_mdp", 6, NOISY_JSON, dprl_mdp_agg),
    AGGREGATE("dp_mdp", 7, NOISY_JSON, dprl_mdp_agg),
    /* off-policy evaluation (ope/): episode, t, reward, behavior_prob, target_prob, options */
    AGGREGATE("dp_is_value", 6, NOISY_JSON, dprl_is_value_agg),
    /* a consensus policy at expert level (expert/):
    ** expert, episode, t, state, action, options */
    AGGREGATE("dp_expert_policy", 6, NOISY_JSON, dprl_expert_policy_agg),
    /* planning before spending (study/): one release of any mechanism, or a
    ** study's releases against a budget described or declared */
    SCALAR("dp_plan", 1, EXACT_JSON, dprl_sql_plan), /* dense features: dgesdd, dpotri */
    SCALAR("dprl_budget_plan", 2, NOISY_JSON, dprl_sql_budget_plan),
    /* evaluating and planning on a released MDP model (mdp/): post-processing
    ** (dgesv solves; up to 10^8 sweeps, 10^5 bootstrap draws); the options
    ** argument is optional */
    SCALAR("dp_mdp_value", 2, LONG_JSON, dprl_sql_mdp_value_fn),
    SCALAR("dp_mdp_value", 3, LONG_JSON, dprl_sql_mdp_value_fn),
    SCALAR("dp_mdp_plan", 1, LONG_JSON, dprl_sql_mdp_plan_fn),
    SCALAR("dp_mdp_plan", 2, LONG_JSON, dprl_sql_mdp_plan_fn),
    /* the rows of a caller's query, for the readers of sqlite/sql_tvf.c */
    SCALAR(DPRL_ROW_FN, -1, NOISY, dprl_sql_row),
#undef SCALAR
#undef AGGREGATE
};

/* The table-valued functions (sqlite/sql_tvf.c): arguments are hidden
** columns, SQLITE_VTAB_DIRECTONLY. */
static const dprl_tvf_spec *const table_functions[] = {
    &dprl_first_visit_tvf,   /* (trajectories_sql, options), NOT private */
    &dprl_prefix_stable_tvf, /* (trajectories_sql, policies_sql, options) */
    &dprl_q_noise_tvf,       /* (points_sql, options) */
};

static _Thread_local const sqlite3_api_routines *loading_api;
static pthread_once_t init_once = PTHREAD_ONCE_INIT;

static void init_globals(void) {
  static const dprl_allocator alloc = {sqlite_alloc, sqlite_resize, sqlite_release};
  SQLITE_EXTENSION_INIT2(loading_api);
  dprl_set_allocator(&alloc);
}

DPRL_EXPORT int sqlite3_dprl_init(sqlite3 *db, char **pzErrMsg, const sqlite3_api_routines *pApi) {
  /* The process-wide pointers (SQLite's API table, the allocator hook) are
  ** written once, however many connections and threads load dprl: a
  ** write on every load was a data race (ThreadSanitizer).  The API table
  ** reaches the one-time initialiser through a thread-local. */
  loading_api = pApi;
  pthread_once(&init_once, init_globals);
  int rc = SQLITE_OK;
  const char *failed = NULL;
  for (size_t i = 0; rc == SQLITE_OK && i < sizeof functions / sizeof *functions; i++) {
    const struct function *f = &functions[i];
    rc = sqlite3_create_function_v2(db, f->name, f->nargs, f->flags, (void *)f->data, f->func,
                                    f->step, f->final, NULL);
    failed = f->name;
  }
  for (size_t i = 0; rc == SQLITE_OK && i < sizeof table_functions / sizeof *table_functions; i++) {
    rc = dprl_tvf_register(db, table_functions[i]);
    failed = table_functions[i]->name;
  }
  if (rc != SQLITE_OK && pzErrMsg)
    *pzErrMsg = sqlite3_mprintf("dprl: registering %s failed: %s", failed, sqlite3_errstr(rc));
  return rc;
}
