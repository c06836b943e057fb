/*
** dprl.c: the entry point.  Loading the extension registers:
**
**   dprl_version()                                 -> '0.2.0'
**   dprl_debug()                                   -> version, commit, build, BLAS
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
**   dp_plan(options)                               planned sigma and error (JSON)
**   dprl_budget(name, epsilon, delta), dprl_budget_remaining(name)   the ledger
**
**   sqlite> .load ./dprl
**   sqlite> SELECT dprl_version();
**
** Each feature lives in its own sql_*.c file and registers itself here;
** the numerical core (every other file in ext/) knows nothing of SQLite.
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
#include "sqlite/sql_glue.h"

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
  (void)argc;
  (void)argv;
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

typedef int (*register_fn)(sqlite3 *);

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
  static const struct {
    const char *name;
    register_fn fn;
  } features[] = {
      {"dprl_row", dprl_register_query_rows},
      {"dprl_budget", dprl_register_budget},
      {"dp_lsw/dp_lsl", dprl_register_policy_eval},
      {"dp_first_visit", dprl_register_first_visit},
      {"dp_prefix_stable", dprl_register_prefix_stable},
      {"dp_q_calibrate", dprl_register_q_calibrate},
      {"dp_q_noise", dprl_register_q_noise},
      {"dp_q_learn", dprl_register_q_learn},
      {"dp_q_value", dprl_register_q_value},
  };
  int rc = sqlite3_create_function_v2(db, "dprl_version", 0,
                                      SQLITE_UTF8 | SQLITE_DETERMINISTIC | SQLITE_INNOCUOUS,
                                      NULL, version_fn, NULL, NULL, NULL);
  if (rc == SQLITE_OK)
    rc = sqlite3_create_function_v2(db, "dprl_debug", 0, SQLITE_UTF8 | SQLITE_INNOCUOUS,
                                    NULL, debug_fn, NULL, NULL, NULL);
  for (size_t i = 0; rc == SQLITE_OK && i < sizeof features / sizeof *features; i++) {
    rc = features[i].fn(db);
    if (rc != SQLITE_OK && pzErrMsg)
      *pzErrMsg = sqlite3_mprintf("dprl: registering %s failed: %s", features[i].name,
                                  sqlite3_errstr(rc));
  }
  return rc;
}
