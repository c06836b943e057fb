/*
** test_embed.c: dprl linked into a program (docs/bindings.md, "Embedding in C").
** libdprl.a is built with -DSQLITE_CORE (make static); this program links
** it with the system SQLite, registers sqlite3_dprl_init with
** sqlite3_auto_extension, and runs a release on connections that never
** enabled extension loading.
*/
#include <sqlite3.h>
#include <string.h>

#include "check.h"
#include "dprl.h"

#ifndef WANT_VERSION
#error "build with -DWANT_VERSION (the Makefile's VERSION)"
#endif

static const char *SETUP =
    "CREATE TABLE steps(episode, t, state, reward);"
    "INSERT INTO steps VALUES (1,0,0,1),(1,1,1,0),(1,2,2,1),(2,0,1,1),(2,1,2,1),(3,0,2,0);";

/* The text of the first column of the first row of sql, in buf ("" on
** error, with the message in buf after "error: "). */
static void one(sqlite3 *db, const char *sql, char *buf, size_t n) {
  sqlite3_stmt *st = NULL;
  buf[0] = 0;
  if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
    snprintf(buf, n, "error: %s", sqlite3_errmsg(db));
    return;
  }
  int rc = sqlite3_step(st);
  if (rc == SQLITE_ROW && sqlite3_column_text(st, 0))
    snprintf(buf, n, "%s", (const char *)sqlite3_column_text(st, 0));
  else if (rc != SQLITE_ROW && rc != SQLITE_DONE)
    snprintf(buf, n, "error: %s", sqlite3_errmsg(db));
  sqlite3_finalize(st);
}

static sqlite3 *open_memory(void) {
  sqlite3 *db = NULL;
  if (sqlite3_open(":memory:", &db) != SQLITE_OK) return NULL;
  return db;
}

int main(void) {
  char buf[4096];
  CHECK(sqlite3_auto_extension((void (*)(void))sqlite3_dprl_init) == SQLITE_OK,
        "sqlite3_auto_extension(sqlite3_dprl_init)");

  sqlite3 *db = open_memory();
  CHECK(db != NULL, "open :memory:");
  if (!db) return 1;
  /* Extension loading off: dprl is in the program, nothing is loaded. */
  int enabled = -1;
  sqlite3_db_config(db, SQLITE_DBCONFIG_ENABLE_LOAD_EXTENSION, 0, &enabled);
  CHECK(enabled == 0, "extension loading switched off on the connection");

  one(db, "SELECT dprl_version()", buf, sizeof buf);
  CHECK(strcmp(buf, WANT_VERSION) == 0, "dprl_version() is the Makefile's VERSION");
  if (strcmp(buf, WANT_VERSION) != 0) printf("#   got '%s', want '%s'\n", buf, WANT_VERSION);

  CHECK(sqlite3_exec(db, SETUP, NULL, NULL, NULL) == SQLITE_OK, "create the README's steps table");
  one(db,
      "SELECT json_extract(r, '$.mechanism') || ' ' || json_extract(r, '$.private') || ' ' ||"
      " json_array_length(r, '$.values') || ' ' || (json_extract(r, '$.seeded') IS NULL)"
      " FROM (SELECT dp_lsw(episode, t, state, reward, '{\"n_states\": 3, \"gamma\": 0.5, \"rmin\": 0, \"rmax\": 1,"
      " \"epsilon\": 1, \"delta\": 1e-5, \"perturb\": \"statistics\"}') AS r FROM steps)",
      buf, sizeof buf);
  CHECK(strcmp(buf, "dp_lsw 1 3 1") == 0, "a private dp_lsw release: private, 3 values, not seeded");
  if (strcmp(buf, "dp_lsw 1 3 1") != 0) printf("#   got '%s'\n", buf);

  /* The same seed gives the same noise: the release really ran. */
  const char *seeded =
      "SELECT dp_lsw(episode, t, state, reward, '{\"n_states\": 3, \"gamma\": 0.5, \"rmin\": 0, \"rmax\": 1,"
      " \"epsilon\": 1, \"delta\": 1e-5, \"perturb\": \"statistics\", \"seed\": 7}') FROM steps";
  char again[4096];
  one(db, seeded, buf, sizeof buf);
  one(db, seeded, again, sizeof again);
  CHECK(strstr(buf, "\"private\":false,\"seeded\":true") != NULL && strcmp(buf, again) == 0,
        "a seeded release: not private, reproducible");

  /* Errors come back as SQL errors through the program's SQLite. */
  one(db, "SELECT dp_lsw(episode, t, state, reward, '{\"n_states\": 0}') FROM steps", buf,
      sizeof buf);
  CHECK(strncmp(buf, "error: ", 7) == 0 && strstr(buf, "n_states") != NULL,
        "a bad option is an SQL error naming it");
  sqlite3_close(db);

  /* Every connection opened later has dprl; none after cancelling. */
  db = open_memory();
  one(db, "SELECT dprl_version()", buf, sizeof buf);
  CHECK(strcmp(buf, WANT_VERSION) == 0, "a second connection has dprl too");
  sqlite3_close(db);
  CHECK(sqlite3_cancel_auto_extension((void (*)(void))sqlite3_dprl_init) == 1,
        "sqlite3_cancel_auto_extension");
  db = open_memory();
  one(db, "SELECT dprl_version()", buf, sizeof buf);
  CHECK(strstr(buf, "no such function") != NULL,
        "after cancelling, a new connection has no dprl (it came from auto_extension)");

  /* Registering on one connection by hand. */
  char *err = NULL;
  CHECK(sqlite3_dprl_init(db, &err, NULL) == SQLITE_OK && err == NULL,
        "sqlite3_dprl_init(db, &err, NULL) on one connection");
  one(db, "SELECT dprl_version()", buf, sizeof buf);
  CHECK(strcmp(buf, WANT_VERSION) == 0, "that connection has dprl");
  sqlite3_close(db);
  sqlite3_shutdown();
  return CHECK_DONE();
}
