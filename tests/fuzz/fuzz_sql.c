/*
** fuzz_sql.c: every SQL function of dprl driven through an in-memory
** database, with rows and options taken from the input.
**
** Input: byte 0 picks the function; then rows of 5 bytes (episode, t,
** state, reward, action|expert) up to a 0xFF byte; the rest is the
** options text.  The extension is the built dprl.so (DPRL_SO, else the
** path compiled in), loaded as a user would load it.  A progress handler
** stops any call after about a second (dprl's long loops answer it).
*/
#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifndef DPRL_SO_PATH
#define DPRL_SO_PATH "./dprl.so"
#endif

static const char *const queries[] = {
    "SELECT dp_lsw(episode, t, state, reward, ?1) FROM steps",
    "SELECT dp_lsl(episode, t, state, reward, ?1) FROM steps",
    "SELECT * FROM dp_first_visit('SELECT episode, t, state, reward FROM steps', ?1)",
    "SELECT * FROM dp_prefix_stable('SELECT episode, t, state, action FROM steps',"
    " 'SELECT expert, state, action, prob FROM policies', ?1)",
    "SELECT dp_q_learn(state / 4.0, action, reward, ((state + 1) % 5) / 4.0, ?1) FROM steps",
    "SELECT * FROM dp_q_noise('SELECT state / 4.0, action, reward FROM steps', ?1)",
    "SELECT dp_lsw_from_stats(state, t, reward, ?1) FROM steps",
    "SELECT dp_plan(?1), dp_q_calibrate(?1), dp_prefix_calibrate(?1)",
    "SELECT dp_q_value(?1, 0.5, 0)",
    "SELECT dp_lsl_from_stats(state, t, reward, nullif(action, 0), ?1) FROM steps",
};

static double deadline;

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int progress(void *arg) {
  (void)arg;
  return now() > deadline;
}

static sqlite3 *open_db(void) {
  sqlite3 *db = NULL;
  char *err = NULL;
  const char *so = getenv("DPRL_SO") ? getenv("DPRL_SO") : DPRL_SO_PATH;
  if (sqlite3_open(":memory:", &db) != SQLITE_OK) abort();
  sqlite3_enable_load_extension(db, 1);
  if (sqlite3_load_extension(db, so, NULL, &err) != SQLITE_OK) {
    fprintf(stderr, "fuzz_sql: cannot load %s: %s\n", so, err ? err : "?");
    abort();
  }
  sqlite3_exec(db,
               "CREATE TABLE steps(episode, t, state, reward, action, expert);"
               "CREATE TABLE policies(expert, state, action, prob);"
               "WITH e(x) AS (VALUES (0), (1), (2)), s(y) AS (VALUES (0), (1), (2), (3), (4)),"
               " a(z) AS (VALUES (0), (1))"
               " INSERT INTO policies SELECT x, y, z, 0.5 FROM e, s, a;",
               NULL, NULL, NULL);
  sqlite3_progress_handler(db, 1000, progress, NULL);
  return db;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static sqlite3 *db;
  if (!db) db = open_db();
  if (size < 1) return 0;
  int which = data[0] % (int)(sizeof queries / sizeof *queries);
  size_t i = 1;
  sqlite3_exec(db, "DELETE FROM steps", NULL, NULL, NULL);
  sqlite3_stmt *ins = NULL;
  sqlite3_prepare_v2(db, "INSERT INTO steps VALUES (?1, ?2, ?3, ?4, ?5, ?6)", -1, &ins, NULL);
  while (i + 5 <= size && data[i] != 0xFF) {
    const uint8_t *r = data + i;
    if (r[0] & 0x80) sqlite3_bind_text(ins, 1, (const char *)r, 1, SQLITE_TRANSIENT);
    else sqlite3_bind_int(ins, 1, r[0] & 0x0F);
    sqlite3_bind_int(ins, 2, (int8_t)r[1]);
    sqlite3_bind_int(ins, 3, r[2] % 6);
    sqlite3_bind_double(ins, 4, (int8_t)r[3] / 32.0);
    sqlite3_bind_int(ins, 5, r[4] & 1);
    sqlite3_bind_int(ins, 6, (r[4] >> 1) % 3);
    sqlite3_step(ins);
    sqlite3_reset(ins);
    i += 5;
  }
  sqlite3_finalize(ins);
  if (i < size && data[i] == 0xFF) i++;
  sqlite3_stmt *q = NULL;
  deadline = now() + 1.0;
  if (sqlite3_prepare_v2(db, queries[which], -1, &q, NULL) == SQLITE_OK) {
    sqlite3_bind_text(q, 1, (const char *)data + i, (int)(size - i), SQLITE_TRANSIENT);
    while (sqlite3_step(q) == SQLITE_ROW) {
    }
  }
  sqlite3_finalize(q);
  return 0;
}
