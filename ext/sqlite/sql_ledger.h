/*
** sql_ledger.h: the ledger's tables and where a budget lives, shared by the
** charge and the SQL functions of sql_budget.c (sql_ledger.c).
*/
#ifndef DPRL_SQL_LEDGER_H
#define DPRL_SQL_LEDGER_H

#include "sqlite/sql_glue.h"

/* BUDGETS_SQL is BUDGETS_SQL_0 after ALTER TABLE ... ADD COLUMN in_memory
** (SQLite appends the column to the stored text): dprl_budget() upgrades a
** table of the old definition that way. */
#define BUDGETS_SQL_0                                                                   \
  "CREATE TABLE dprl_budgets(name TEXT PRIMARY KEY, epsilon REAL NOT NULL, delta REAL " \
  "NOT NULL, accountant TEXT NOT NULL, created TEXT NOT NULL"
#define BUDGETS_SQL BUDGETS_SQL_0 ", in_memory INTEGER NOT NULL DEFAULT 0)"
#define BUDGETS_ADD_COLUMN "in_memory INTEGER NOT NULL DEFAULT 0"
#define LEDGER_SQL                                                                        \
  "CREATE TABLE dprl_ledger(id INTEGER PRIMARY KEY, time TEXT NOT NULL, budget TEXT NOT " \
  "NULL, function TEXT NOT NULL, epsilon REAL NOT NULL, delta REAL NOT NULL, options_hash " \
  "TEXT NOT NULL, spent INTEGER NOT NULL)"
#define NAME_MAX_CHARS 200

typedef struct ledger_at {
  char schema[NAME_MAX_CHARS * 4 + 1]; /* "main" when the budget has no dot */
  const char *name;                    /* the budget's name, inside the text */
  int ephemeral;                       /* in-memory or temporary database */
} ledger_at;

/* "[schema.]name" (what names the budget in messages): the schema must be
** attached; the name is 1 to 200 characters of valid UTF-8. */
int dprl_ledger_locate(sqlite3 *db, const char *fn, const char *what, const char *text,
                       ledger_at *at, dprl_error *err);
/* One row of numbers from fmt (%w: the schema) with the text parameter p;
** *found = 0 if none.  A SQLite result code. */
int dprl_ledger_query(sqlite3 *db, const char *schema, const char *fmt, const char *p,
                      double *out, int n, int *found);
/* A SQLite error of db as a dprl error (BUSY, INTERRUPT, NOMEM kept). */
int dprl_ledger_db_error(sqlite3 *db, const char *fn, const char *what, dprl_error *err);
/* The text of table t in the schema ("" if none; NULL only out of memory),
** *type "table", "view", "other" or "" (none). */
char *dprl_ledger_table_sql(sqlite3 *db, const char *schema, const char *t, const char **type);
/* Why the ledger's tables in `where` (on connection c) cannot be used:
** missing, of another definition, or with triggers; DPRL_OK if they can. */
int dprl_ledger_tables_check(sqlite3 *c, const char *where, const char *fn, const char *what,
                             const char *shown, const char *budget, dprl_error *err);

#endif
