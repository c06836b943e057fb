/*
** test_threads.c: many connections, on many threads, loading dprl and
** calling its noisy functions at once.  Built with ThreadSanitizer (and
** dprl.so too, build/tsan) by make test: any data race is a report and a
** failure.  Also checks that concurrent releases charging one privacy
** budget in a shared database never spend more than it holds.
**
**   build/tsan/test_threads [path/to/dprl.so]
*/
#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef DPRL_SO_PATH
#define DPRL_SO_PATH "build/tsan/dprl.so"
#endif

enum { THREADS = 8, ROUNDS = 6 };

static const char *so = DPRL_SO_PATH;
static char shared_db[256];
static int failures;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static void fail(const char *what, const char *why) {
  pthread_mutex_lock(&lock);
  failures++;
  printf("not ok %s\n#   %s\n", what, why ? why : "");
  pthread_mutex_unlock(&lock);
}

static sqlite3 *open_loaded(const char *path) {
  sqlite3 *db = NULL;
  char *err = NULL;
  if (sqlite3_open(path, &db) != SQLITE_OK) return NULL;
  sqlite3_busy_timeout(db, 10000);
  sqlite3_enable_load_extension(db, 1);
  if (sqlite3_load_extension(db, so, NULL, &err) != SQLITE_OK) {
    fail("load dprl", err);
    sqlite3_free(err);
    sqlite3_close(db);
    return NULL;
  }
  return db;
}

static int exec_rows(sqlite3 *db, const char *sql, const char *what) {
  sqlite3_stmt *st = NULL;
  int rows = 0, rc;
  if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
    fail(what, sqlite3_errmsg(db));
    return -1;
  }
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) rows++;
  if (rc != SQLITE_DONE) {
    fail(what, sqlite3_errmsg(db));
    rows = -1;
  }
  sqlite3_finalize(st);
  return rows;
}

static void *worker(void *arg) {
  long id = (long)arg;
  sqlite3 *db = open_loaded(":memory:");
  if (!db) return NULL;
  sqlite3_exec(db,
               "CREATE TABLE steps(episode, t, state, reward, action);"
               "WITH RECURSIVE e(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM e WHERE i < 199)"
               " INSERT INTO steps SELECT i / 4, i % 4, (i * 7) % 5, (i % 3) / 2.0, i % 2 FROM e;"
               "CREATE TABLE policies(expert, state, action, prob);"
               "WITH RECURSIVE x(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM x WHERE i < 59)"
               " INSERT INTO policies SELECT i / 10, (i / 2) % 5, i % 2, 0.5 FROM x;",
               NULL, NULL, NULL);
  for (int r = 0; r < ROUNDS; r++) {
    exec_rows(db, "SELECT dp_lsw(episode, t, state, reward, '{\"n_states\": 5, \"gamma\": 0.5, \"rmin\": 0, \"rmax\": 1, "
                  "\"epsilon\": 1, \"delta\": 1e-5, \"perturb\": \"statistics\"}') FROM steps",
              "dp_lsw on a thread");
    exec_rows(db, "SELECT dp_lsl(episode, t, state, reward, '{\"n_states\": 5, \"gamma\": 0.5, \"rmin\": 0, \"rmax\": 1, "
                  "\"epsilon\": 1, \"delta\": 1e-5, \"lambda\": 10}') FROM steps",
              "dp_lsl on a thread");
    exec_rows(db, "SELECT dp_q_learn(state / 4.0, action, reward, ((state + 1) % 5) / 4.0, "
                  "'{\"n_actions\": 2, \"gamma\": 0.5, \"rmin\": 0, \"rmax\": 1, \"lr\": 0.01, \"T\": 640, \"B\": 64, "
                  "\"K\": 5, \"k\": 60, \"epsilon\": 1, \"delta\": 1e-5}') FROM steps",
              "dp_q_learn on a thread");
    exec_rows(db, "SELECT * FROM dp_prefix_stable('SELECT episode, t, state, action FROM steps', "
                  "'SELECT expert, state, action, prob FROM policies', '{\"epsilon\": 5, "
                  "\"delta\": 1e-3, \"p_min\": 0.1, \"T\": 10, \"L\": 4}')",
              "dp_prefix_stable on a thread");
    exec_rows(db, "SELECT * FROM dp_q_noise('SELECT state / 4.0, action, 0 FROM steps', "
                  "'{\"n_actions\": 2, \"sigma\": 0.5, \"beta\": 2}')",
              "dp_q_noise on a thread");
  }
  sqlite3_close(db);
  /* the shared ledger: every thread spends epsilon 1 a round of 20 */
  sqlite3 *sh = open_loaded(shared_db);
  if (!sh) return NULL;
  sqlite3_exec(sh, "CREATE TABLE IF NOT EXISTS steps(episode, t, state, reward)", NULL, NULL,
               NULL);
  for (int r = 0; r < ROUNDS; r++) {
    sqlite3_stmt *st = NULL;
    sqlite3_prepare_v2(sh, "SELECT dp_lsw(1, 0, 0, 1.0, '{\"n_states\": 2, \"gamma\": 0.5, \"rmin\": 0, \"rmax\": 1, "
                           "\"epsilon\": 1, \"delta\": 1e-9, \"perturb\": \"statistics\", "
                           "\"budget\": \"shared\"}')", -1, &st, NULL);
    int rc = sqlite3_step(st);
    if (rc != SQLITE_ROW && !strstr(sqlite3_errmsg(sh), "exceeded"))
      fail("a budgeted release on a shared database", sqlite3_errmsg(sh));
    sqlite3_finalize(st);
  }
  sqlite3_close(sh);
  (void)id;
  return NULL;
}

int main(int argc, char **argv) {
  if (argc > 1) so = argv[1];
  snprintf(shared_db, sizeof shared_db, "/tmp/dprl_threads_%d.db", (int)getpid());
  unlink(shared_db);
  sqlite3 *db = open_loaded(shared_db);
  if (!db) return 1;
  sqlite3_exec(db,
               "PRAGMA journal_mode = WAL; SELECT dprl_budget('shared', 20, 1e-6, "
               "'{\"unit\": \"episode\", \"accountant\": \"basic\"}')",
               NULL, NULL, NULL);
  pthread_t th[THREADS];
  for (long i = 0; i < THREADS; i++) pthread_create(&th[i], NULL, worker, (void *)i);
  for (int i = 0; i < THREADS; i++) pthread_join(th[i], NULL);
  sqlite3_stmt *st = NULL;
  sqlite3_prepare_v2(db, "SELECT total(epsilon), count(*) FROM dprl_ledger WHERE spent", -1, &st,
                     NULL);
  double spent = -1;
  int n = -1;
  if (sqlite3_step(st) == SQLITE_ROW) {
    spent = sqlite3_column_double(st, 0);
    n = sqlite3_column_int(st, 1);
  }
  sqlite3_finalize(st);
  sqlite3_close(db);
  unlink(shared_db);
  char walf[300];
  snprintf(walf, sizeof walf, "%s-wal", shared_db);
  unlink(walf);
  snprintf(walf, sizeof walf, "%s-shm", shared_db);
  unlink(walf);
  if (spent == 20 && n == 20)
    printf("ok %d threads x %d rounds of every noisy function, no race\n"
           "ok concurrent budgeted releases spent exactly the budget (20 of 48 asked)\n",
           THREADS, ROUNDS);
  else {
    char why[100];
    snprintf(why, sizeof why, "spent %g in %d releases", spent, n);
    fail("concurrent budgeted releases spent exactly the budget", why);
  }
  return failures != 0;
}
