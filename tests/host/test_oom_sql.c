/*
** test_oom_sql.c: out of memory through SQL, as an application sees it.
** SQLite's allocator is wrapped (SQLITE_CONFIG_MALLOC), so every allocation
** of SQLite and of dprl (which allocates through SQLite) can fail.  Each
** case runs its setup, then its statement with the k-th allocation failing
** once, for k = 1, 2, ... until a run passes every allocation.  Every run
** must succeed, fail with SQLITE_NOMEM, or (where a failed allocation is
** absorbed: a group charged alone) give what the run with no failure
** gives; never SQLITE_ERROR with another reason ("not an error", "no budget
** named", "dprl_ledger is missing"), and never a crash (the sanitized build
** also checks for leaks).
*/
#include <dlfcn.h>
#include <execinfo.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"

#ifndef DPRL_SO_PATH
#define DPRL_SO_PATH "./dprl.so"
#endif

static sqlite3_mem_methods base;
static long fail_at = 0; /* the allocation that fails (1-based); 0: none */
static long count = 0;
static int failed = 0;

static int fails_now(void) {
  if (!fail_at) return 0;
  if (++count != fail_at) return 0;
  failed = 1;
  if (getenv("DPRL_OOM_TRACE")) { /* where allocation k fails: a backtrace */
    void *frames[32];
    backtrace_symbols_fd(frames, backtrace(frames, 32), 2);
  }
  return 1;
}
static void *oom_malloc(int n) { return fails_now() ? NULL : base.xMalloc(n); }
static void *oom_realloc(void *p, int n) { return fails_now() ? NULL : base.xRealloc(p, n); }

typedef struct {
  const char *name;
  const char *setup; /* run with no failure */
  const char *sql;   /* run with the k-th allocation failing */
} oom_case;

#define LOG                                                                     \
  "CREATE TABLE steps(episode INTEGER, t INTEGER, state INTEGER, action INTEGER," \
  " reward REAL);"                                                              \
  "INSERT INTO steps VALUES (1,0,0,0,0.5),(1,1,1,1,1),(2,0,1,0,0),(2,1,2,1,1),"  \
  "(3,0,0,1,0.25),(3,1,2,0,0.75);"
#define LSW_OPTS                                                               \
  "'{\"n_states\": 3, \"gamma\": 0.9, \"rmin\": 0, \"rmax\": 1, \"epsilon\": 0.5, " \
  "\"delta\": 1e-5, \"perturb\": \"statistics\", \"budget\": \"study\"}'"

static const oom_case cases[] = {
    {"declaring a budget", LOG, "SELECT dprl_budget('study', 2, 1e-5, '{\"unit\": \"episode\"}')"},
    {"a budgeted release", LOG "SELECT dprl_budget('study', 2, 1e-5, '{\"unit\": \"episode\"}');",
     "SELECT dp_lsw(episode, t, state, reward, " LSW_OPTS ") FROM steps"},
    {"what is left", LOG "SELECT dprl_budget('study', 2, 1e-5, '{\"unit\": \"episode\"}');",
     "SELECT dprl_budget_remaining('study')"},
    {"a release over a missing budget", LOG,
     "SELECT dp_lsw(episode, t, state, reward, " LSW_OPTS ") FROM steps"},
    {"a model release", LOG,
     "SELECT dp_mdp(episode, t, state, action, reward, '{\"n_states\": 3, \"n_actions\": 2, "
     "\"gamma\": 0.9, \"rmin\": 0, \"rmax\": 1, \"horizon\": 2, \"epsilon\": 1, \"delta\": 1e-5}')"
     " FROM steps"},
    {"a model's value",
     LOG "CREATE TABLE release AS SELECT dp_mdp(episode, t, state, action, reward, "
         "'{\"n_states\": 3, \"n_actions\": 2, \"gamma\": 0.9, \"rmin\": 0, \"rmax\": 1, "
         "\"horizon\": 2, \"epsilon\": 1, \"delta\": 1e-5, \"seed\": 3}') AS model FROM steps;",
     "SELECT dp_mdp_value(model, '[0, 1, 1]') FROM release"},
    {"a study's plan", LOG "SELECT dprl_budget('study', 2, 1e-5, '{\"unit\": \"episode\"}');",
     "SELECT dprl_budget_plan('study', '[{\"mechanism\": \"dp_lsw\", \"n_states\": 3, "
     "\"gamma\": 0.9, \"rmin\": 0, \"rmax\": 1, \"epsilon\": 0.5, \"delta\": 1e-5, "
     "\"episodes\": 100, \"visits\": [50, 40, 30]}]')"},
};

static char path[64];

static sqlite3 *open_db(void) {
  sqlite3 *db = NULL;
  char *err = NULL;
  unlink(path);
  if (sqlite3_open(path, &db) != SQLITE_OK) return NULL;
  sqlite3_enable_load_extension(db, 1);
  const char *so = getenv("DPRL_SO") ? getenv("DPRL_SO") : DPRL_SO_PATH;
  if (sqlite3_load_extension(db, so, NULL, &err) != SQLITE_OK) {
    printf("not ok cannot load %s: %s\n", so, err ? err : "?");
    exit(1);
  }
  return db;
}

static int run_sql(sqlite3 *db, const char *sql) {
  sqlite3_stmt *st = NULL;
  int rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
  if (rc == SQLITE_OK) {
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    }
  }
  if (rc == SQLITE_DONE) rc = SQLITE_OK;
  sqlite3_finalize(st);
  return rc;
}

/* The statement's result code and message with no failure. */
static int baseline(const oom_case *c, char *msg, size_t n) {
  sqlite3 *db = open_db();
  sqlite3_exec(db, c->setup, NULL, NULL, NULL);
  int rc = run_sql(db, c->sql);
  snprintf(msg, n, "%s", rc ? sqlite3_errmsg(db) : "");
  sqlite3_close(db);
  return rc;
}

static void run_case(const oom_case *c) {
  long runs = 0, nomem = 0, bad = 0;
  char what[256], first_bad[512] = "", want[512];
  int want_rc = baseline(c, want, sizeof want);
  const char *only = getenv("DPRL_OOM_AT"); /* one k, to trace it */
  for (long k = only ? atol(only) : 1; k < 200000; k++) {
    sqlite3 *db = open_db();
    if (!db) break;
    int rc = sqlite3_exec(db, c->setup, NULL, NULL, NULL);
    if (rc != SQLITE_OK) {
      printf("not ok %s: setup: %s\n", c->name, sqlite3_errmsg(db));
      sqlite3_close(db);
      return;
    }
    count = 0;
    failed = 0;
    fail_at = k;
    rc = run_sql(db, c->sql);
    fail_at = 0;
    int code = sqlite3_extended_errcode(db) & 0xFF;
    runs++;
    if (failed && rc != SQLITE_OK) {
      if ((rc & 0xFF) == SQLITE_NOMEM && code == SQLITE_NOMEM) {
        nomem++;
      } else if (rc == want_rc && strcmp(sqlite3_errmsg(db), want) == 0) {
        /* absorbed: the same error as with no failure */
      } else if (!bad++) {
        snprintf(first_bad, sizeof first_bad, "allocation %ld: code %d: %s", k, rc,
                 sqlite3_errmsg(db));
      }
    }
    sqlite3_close(db);
    if (!failed || only) break; /* the statement needed fewer than k allocations */
  }
  snprintf(what, sizeof what,
           "%s: every one of %ld runs with an allocation failing succeeds or is SQLITE_NOMEM "
           "(%ld were)", c->name, runs - 1, nomem);
  if (!CHECK(bad == 0 && runs > 1, what)) printf("#   %ld others, the first: %s\n", bad, first_bad);
}

int main(void) {
  sqlite3_config(SQLITE_CONFIG_GETMALLOC, &base);
  sqlite3_mem_methods m = base;
  m.xMalloc = oom_malloc;
  m.xRealloc = oom_realloc;
  if (sqlite3_config(SQLITE_CONFIG_MALLOC, &m) != SQLITE_OK) {
    printf("not ok SQLITE_CONFIG_MALLOC\n");
    return 1;
  }
  /* held open for the whole run, so that each connection's load is a
  ** reference to the library rather than a new dlopen and relocation of it
  ** and of LAPACK and OpenBLAS (most of the time of a run otherwise) */
  const char *so = getenv("DPRL_SO") ? getenv("DPRL_SO") : DPRL_SO_PATH;
  void *held = dlopen(so, RTLD_NOW);
  if (!held) {
    printf("not ok dlopen %s: %s\n", so, dlerror());
    return 1;
  }
  snprintf(path, sizeof path, "/dev/shm/dprl-oom-%d.db", (int)getpid());
  const char *one = getenv("DPRL_OOM_CASE"); /* one case, by index */
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    if (!one || (size_t)atoi(one) == i) run_case(&cases[i]);
  unlink(path);
  dlclose(held);
  return check_failed_count ? 1 : 0;
}
