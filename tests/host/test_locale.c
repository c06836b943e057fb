/*
** test_locale.c: dprl in a host that localises.  A Qt program, DB Browser
** for SQLite among them, calls setlocale(LC_ALL, "") at start; in a German
** or French locale printf writes "0,5" and strtod stops at the '.'.  This
** program does the same (de_DE.UTF-8, then fr_FR.UTF-8; `make deps`
** generates both), loads the dprl.so of its build and requires every
** result and message to be the bytes it is in the "C" locale, every JSON
** result to be valid, and options with more than 19 digits to read right.
*/
#include <locale.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

#ifndef DPRL_SO_PATH
#define DPRL_SO_PATH "./dprl.so"
#endif

/* The first three queries are dp_lsw with epsilon 0.5, the same 0.5
** written with 21 significant digits, and -1.25 (an error whose message
** prints a fractional number). */
static const char *const lsw_eps[] = {"0.5", "0.50000000000000000001", "-1.25"};
#define NLSW 3
static const char lsw_sql[] =
    "SELECT dp_lsw(episode, t, state, reward, '{\"n_states\": 4, \"gamma\": 0.9, "
    "\"rmin\": 0, \"rmax\": 1, \"epsilon\": %s, \"delta\": 1e-5, \"seed\": 7}') FROM steps";

/* Then one query of each kind of number dprl writes or reads. */
static const char *const queries[] = {
    "SELECT dp_lsl(episode, t, state, reward, '{\"n_states\": 4, \"gamma\": 0.9, \"rmin\": 0, "
    "\"rmax\": 1, \"epsilon\": 0.5, \"delta\": 1e-5, \"lambda\": 2.5, \"seed\": 3}') FROM steps",
    "SELECT dp_fv_stats(episode, t, state, reward, '{\"n_states\": 4, \"gamma\": 0.95, "
    "\"rmin\": -0.5, \"rmax\": 1.5}') FROM steps",
    "SELECT dp_plan('{\"mechanism\": \"dp_lsw\", \"n_states\": 4, \"gamma\": 0.9, \"rmin\": 0, "
    "\"rmax\": 1, \"epsilon\": 0.5, \"delta\": 1e-5, \"episodes\": 3, "
    "\"visits\": [3, 2, 2, 1]}')",
    "SELECT dp_mdp(episode, t, state, action, reward, '{\"n_states\": 4, \"n_actions\": 2, "
    "\"gamma\": 0.9, \"rmin\": 0, \"rmax\": 1, \"horizon\": 3, \"epsilon\": 0.5, \"delta\": 1e-5, \"seed\": 5}') "
    "FROM steps",
    "SELECT dp_q_calibrate('{\"epsilon\": 0.5, \"delta\": 1e-5, \"T\": 50, \"B\": 8, "
    "\"lr\": 3e-4, \"rmin\": 0, \"rmax\": 1.5, \"k\": 9, \"K\": 5}')",
};
#define NQ (NLSW + (int)(sizeof queries / sizeof queries[0]))

static sqlite3 *open_db(void) {
  sqlite3 *db = NULL;
  char *err = NULL;
  const char *so = getenv("DPRL_SO") ? getenv("DPRL_SO") : DPRL_SO_PATH;
  if (sqlite3_open(":memory:", &db) != SQLITE_OK) exit(2);
  sqlite3_enable_load_extension(db, 1);
  if (sqlite3_load_extension(db, so, NULL, &err) != SQLITE_OK) {
    printf("not ok cannot load %s: %s\n", so, err ? err : "?");
    exit(1);
  }
  sqlite3_exec(db,
               "CREATE TABLE steps(episode INTEGER, t INTEGER, state INTEGER, action INTEGER,"
               " reward REAL);"
               "INSERT INTO steps VALUES (1,0,0,0,0.25),(1,1,1,1,0.5),(1,2,2,0,1),"
               "(2,0,0,1,0.75),(2,1,3,0,0.125),(3,0,1,1,0.5),(3,1,2,1,0.375);",
               NULL, NULL, NULL);
  return db;
}

/* The text of query i. */
static void query_text(int i, char *out, size_t n) {
  if (i < NLSW) {
    snprintf(out, n, lsw_sql, lsw_eps[i]);
  } else {
    snprintf(out, n, "%s", queries[i - NLSW]);
  }
}

static char *run(sqlite3 *db, const char *sql) {
  sqlite3_stmt *st = NULL;
  char *out;
  if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
    return sqlite3_mprintf("error: %s", sqlite3_errmsg(db));
  int rc = sqlite3_step(st);
  if (rc == SQLITE_ROW) {
    out = sqlite3_mprintf("%s", (const char *)sqlite3_column_text(st, 0));
  } else {
    out = sqlite3_mprintf("error: %s", sqlite3_errmsg(db));
  }
  sqlite3_finalize(st);
  return out;
}

static int is_json(sqlite3 *db, const char *text) {
  sqlite3_stmt *st = NULL;
  int ok = 0;
  if (sqlite3_prepare_v2(db, "SELECT json_valid(?1)", -1, &st, NULL) != SQLITE_OK) return 0;
  sqlite3_bind_text(st, 1, text, -1, SQLITE_STATIC);
  if (sqlite3_step(st) == SQLITE_ROW) ok = sqlite3_column_int(st, 0);
  sqlite3_finalize(st);
  return ok;
}

static void results(char *out[NQ]) {
  sqlite3 *db = open_db();
  char sql[1024];
  for (int i = 0; i < NQ; i++) {
    query_text(i, sql, sizeof sql);
    out[i] = run(db, sql);
  }
  sqlite3_close(db);
}

static void in_locale(const char *name, char *const want[NQ]) {
  char what[256], probe[32];
  if (!setlocale(LC_ALL, name)) {
    snprintf(what, sizeof what, "locale %s is available (make deps generates it)", name);
    CHECK(0, what);
    return;
  }
  snprintf(probe, sizeof probe, "%.1f", 0.5);
  snprintf(what, sizeof what, "%s: the host's printf writes 0,5 (got %s)", name, probe);
  CHECK(strcmp(probe, "0,5") == 0, what);

  char *got[NQ];
  results(got);
  sqlite3 *db = open_db();
  for (int i = 0; i < NQ; i++) {
    snprintf(what, sizeof what, "%s: query %d gives the bytes it gives in the C locale", name, i);
    if (!CHECK(strcmp(got[i], want[i]) == 0, what))
      printf("#   C: %.300s\n#   %s: %.300s\n", want[i], name, got[i]);
    if (strncmp(got[i], "error: ", 7) != 0) {
      snprintf(what, sizeof what, "%s: query %d's result is valid JSON", name, i);
      CHECK(is_json(db, got[i]), what);
    }
  }
  snprintf(what, sizeof what, "%s: dp_lsw states \"epsilon\":0.5", name);
  CHECK(strstr(got[0], "\"epsilon\":0.5") != NULL, what);
  snprintf(what, sizeof what, "%s: epsilon written with 21 digits reads as 0.5", name);
  CHECK(strcmp(got[0], got[1]) == 0, what);
  snprintf(what, sizeof what, "%s: the error shows -1.25", name);
  if (!CHECK(strstr(got[2], "-1.25") != NULL, what)) printf("#   %s\n", got[2]);
  sqlite3_close(db);
  for (int i = 0; i < NQ; i++) sqlite3_free(got[i]);
}

int main(void) {
  char *want[NQ];
  results(want);
  CHECK(strncmp(want[0], "{", 1) == 0, "C locale: dp_lsw returns a JSON object");
  CHECK(strncmp(want[2], "error: ", 7) == 0, "C locale: epsilon -1.25 is refused");
  in_locale("de_DE.UTF-8", want);
  in_locale("fr_FR.UTF-8", want);
  setlocale(LC_ALL, "C");
  for (int i = 0; i < NQ; i++) sqlite3_free(want[i]);
  return check_failed_count ? 1 : 0;
}
