/*
** sql_ledger.h: the ledger's tables and where a budget lives, shared by the
** charge and the SQL functions of sql_budget.c (sql_ledger.c).
*/
#ifndef DPRL_SQL_LEDGER_H
#define DPRL_SQL_LEDGER_H

#include "dp/zcdp.h"
#include "sqlite/sql_glue.h"

/* The tables' definitions are each an older one after ALTER TABLE ... ADD
** COLUMN (SQLite appends the column to the stored text): dprl_budget()
** upgrades tables of an older definition that way.  A budget of an older
** definition has no unit (NULL) and is refused by every release. */
#define BUDGETS_SQL_0                                                                   \
  "CREATE TABLE dprl_budgets(name TEXT PRIMARY KEY, epsilon REAL NOT NULL, delta REAL " \
  "NOT NULL, accountant TEXT NOT NULL, created TEXT NOT NULL"
#define BUDGETS_COLUMN_1 "in_memory INTEGER NOT NULL DEFAULT 0"
#define BUDGETS_COLUMN_2 "unit TEXT"
#define BUDGETS_SQL_1 BUDGETS_SQL_0 ", " BUDGETS_COLUMN_1
#define BUDGETS_SQL BUDGETS_SQL_1 ", " BUDGETS_COLUMN_2 ")"
#define LEDGER_SQL_0                                                                      \
  "CREATE TABLE dprl_ledger(id INTEGER PRIMARY KEY, time TEXT NOT NULL, budget TEXT NOT " \
  "NULL, function TEXT NOT NULL, epsilon REAL NOT NULL, delta REAL NOT NULL, options_hash " \
  "TEXT NOT NULL, spent INTEGER NOT NULL"
#define LEDGER_COLUMN_1 "rho REAL"
#define LEDGER_SQL LEDGER_SQL_0 ", " LEDGER_COLUMN_1 ")"
/* The accountants' names in dprl_budgets.accountant. */
#define DPRL_ACCT_ZCDP "zcdp"
#define DPRL_ACCT_BASIC "basic composition"
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
int dprl_ledger_db_error(sqlite3 *db, int rc, const char *fn, const char *what, dprl_error *err);
/* The text of table t in the schema ("" if none), *type "table", "view",
** "other" or "" (none); NULL when it could not be read, with *rc the
** SQLite code why (SQLITE_NOMEM among them: never read as "no table"). */
char *dprl_ledger_table_sql(sqlite3 *db, const char *schema, const char *t, const char **type,
                            int *rc);
/* Why the ledger's tables in `where` (on connection c) cannot be used:
** missing, of another definition, or with triggers; DPRL_OK if they can. */
int dprl_ledger_tables_check(sqlite3 *c, const char *where, const char *fn, const char *what,
                             const char *shown, const char *budget, dprl_error *err);
/* The unit ("" when NULL) and the accountant of budget name. A SQLite code. */
int dprl_budget_texts(sqlite3 *c, const char *where, const char *name, char *unit, size_t nu,
                      char *acct, size_t na);
/* Bring tables of an older definition in `schema` to the current one. */
int dprl_ledger_upgrade(sqlite3 *db, const char *schema, const char *fn, dprl_error *err);

/* Read the sums of budget `name` in `schema` (s->zcdp, eps_b, delta_b set
** by the caller). A SQLite result code. */
int dprl_spent_read(sqlite3 *db, const char *schema, const char *name, dprl_spent *s);
/* The declared budget named by the SQL value name ("[schema.]name"): where
** it is, what it allows and has spent (sp), its unit and accountant texts.
** A dprl code; errors name fn. */
int dprl_budget_lookup(sqlite3 *db, sqlite3_value *name, const char *fn, ledger_at *at,
                       dprl_spent *sp, char *unit, size_t unit_size, char *acct,
                       size_t acct_size, dprl_error *err);
/* dprl_ledger_fits(accountant, eps_b, delta_b, eps_plain, delta_plain, rho):
** the check inside the ledger's INSERT; registered on the caller's
** connection (dprl.c) and on the ledger's own. */
void dprl_sql_ledger_fits(sqlite3_context *ctx, int argc, sqlite3_value **argv);
/* dprl_ledger_total(x): the aggregate that adds the ledger's values for
** the check, exactly and rounded up once (zcdp.h: dprl_upsum); 0 over no
** rows, as total(). */
void dprl_sql_ledger_total_step(sqlite3_context *ctx, int argc, sqlite3_value **argv);
void dprl_sql_ledger_total_final(sqlite3_context *ctx);

#endif
