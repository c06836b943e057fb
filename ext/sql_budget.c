/*
** sql_budget.c: a privacy ledger inside the database.
**
**   SELECT dprl_budget('icu-2026', 3, 1e-5);      -- declare: epsilon 3, delta 1e-5
**   SELECT dp_lsw(episode, t, state, reward,
**     '{"n_states": 10, "gamma": 0.9, "epsilon": 1, "delta": 1e-6,
**       "perturb": "statistics", "budget": "icu-2026"}') FROM steps;
**   SELECT dprl_budget_remaining('icu-2026');
**   SELECT * FROM dprl_ledger;                     -- the audit trail
**
** Tables dprl owns, created by dprl_budget() in the main schema:
**   dprl_budgets(name, epsilon, delta, accountant, created)
**   dprl_ledger(id, time, budget, function, epsilon, delta, options_hash, spent)
** Accountant: basic composition (the epsilons and the deltas add up), valid
** for any mix of mechanisms.  A release naming a budget appends its row and
** checks the total in one transaction before anything is returned; a
** release that would exceed the budget is refused and leaves no row.
** Seeded and diagnostic calls are logged with spent = 0.  The ledger
** protects an honest analyst from overspending; whoever can write these
** tables can rewrite them.
*/
#include "sql_budget.h"

#include <math.h>

#include "json.h"
#include <stdio.h>
#include <string.h>

#define BUDGETS_SCHEMA                                                                  \
  "CREATE TABLE IF NOT EXISTS main.dprl_budgets(name TEXT PRIMARY KEY, epsilon REAL NOT " \
  "NULL, delta REAL NOT NULL, accountant TEXT NOT NULL, created TEXT NOT NULL);"         \
  "CREATE TABLE IF NOT EXISTS main.dprl_ledger(id INTEGER PRIMARY KEY, time TEXT NOT "   \
  "NULL, budget TEXT NOT NULL, function TEXT NOT NULL, epsilon REAL NOT NULL, delta "     \
  "REAL NOT NULL, options_hash TEXT NOT NULL, spent INTEGER NOT NULL)"

static int db_error(sqlite3 *db, const char *fn, const char *what, dprl_error *err) {
  if (sqlite3_errcode(db) == SQLITE_NOMEM) return dprl_nomem(err);
  return dprl_fail(err, DPRL_EINVAL, "%s: privacy ledger: %s: %s", fn, what, sqlite3_errmsg(db));
}

/* One row of numbers from sql with the text parameter p; *found = 0 if none. */
static int query_numbers(sqlite3 *db, const char *fn, const char *sql, const char *p, double *out,
                         int n, int *found, dprl_error *err) {
  sqlite3_stmt *st = NULL;
  if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
    return db_error(db, fn, "reading it", err);
  sqlite3_bind_text(st, 1, p, -1, SQLITE_STATIC);
  int rc = sqlite3_step(st);
  *found = rc == SQLITE_ROW;
  for (int i = 0; *found && i < n; i++) out[i] = sqlite3_column_double(st, i);
  sqlite3_finalize(st);
  return rc == SQLITE_ROW || rc == SQLITE_DONE ? DPRL_OK : db_error(db, fn, "reading it", err);
}

static int exists_tables(sqlite3 *db) {
  sqlite3_stmt *st = NULL;
  int n = 0;
  if (sqlite3_prepare_v2(db,
                         "SELECT count(*) FROM main.sqlite_schema WHERE type = 'table' AND name IN "
                         "('dprl_budgets', 'dprl_ledger')",
                         -1, &st, NULL) == SQLITE_OK &&
      sqlite3_step(st) == SQLITE_ROW)
    n = sqlite3_column_int(st, 0);
  sqlite3_finalize(st);
  return n == 2;
}

/* FNV-1a of the options text, so a ledger row says which call it was. */
static void options_hash(const char *s, size_t n, char out[17]) {
  uint64_t h = 1469598103934665603u;
  for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 1099511628211u;
  snprintf(out, 17, "%016llx", (unsigned long long)h);
}

/* Check and append, inside whatever transaction the caller opened. */
static int charge_locked(sqlite3 *db, const dprl_spend *s, dprl_error *err) {
  double have[2], used[2];
  int found;
  if (!exists_tables(db))
    return dprl_fail(err, DPRL_EINVAL,
                     "%s: option budget: no budget named \"%s\" (no dprl_budgets table in main): "
                     "declare it with dprl_budget(name, epsilon, delta)", s->fn, s->budget);
  int rc = query_numbers(db, s->fn, "SELECT epsilon, delta FROM main.dprl_budgets WHERE name = ?1",
                         s->budget, have, 2, &found, err);
  if (rc) return rc;
  if (!found)
    return dprl_fail(err, DPRL_EINVAL,
                     "%s: option budget: no budget named \"%s\": declare it with "
                     "dprl_budget(name, epsilon, delta)", s->fn, s->budget);
  rc = query_numbers(db, s->fn,
                     "SELECT total(epsilon), total(delta) FROM main.dprl_ledger WHERE budget = ?1 "
                     "AND spent = 1", s->budget, used, 2, &found, err);
  if (rc) return rc;
  if (s->spends && (used[0] + s->epsilon > have[0] * (1 + 1e-12) ||
                    used[1] + s->delta > have[1] * (1 + 1e-12)))
    return dprl_fail(err, DPRL_EINVAL,
                     "%s: budget \"%s\" exceeded: this release needs epsilon %.6g, delta %.6g; "
                     "already spent epsilon %.6g of %.6g and delta %.6g of %.6g (basic "
                     "composition); nothing was released",
                     s->fn, s->budget, s->epsilon, s->delta, used[0], have[0], used[1], have[1]);
  char hash[17];
  options_hash(s->options ? s->options : "", s->options ? s->options_len : 0, hash);
  sqlite3_stmt *st = NULL;
  if (sqlite3_prepare_v2(db,
                         "INSERT INTO main.dprl_ledger(time, budget, function, epsilon, delta, "
                         "options_hash, spent) VALUES (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'), ?1, "
                         "?2, ?3, ?4, ?5, ?6)",
                         -1, &st, NULL) != SQLITE_OK)
    return db_error(db, s->fn, "appending to dprl_ledger", err);
  sqlite3_bind_text(st, 1, s->budget, -1, SQLITE_STATIC);
  sqlite3_bind_text(st, 2, s->fn, -1, SQLITE_STATIC);
  sqlite3_bind_double(st, 3, s->epsilon);
  sqlite3_bind_double(st, 4, s->delta);
  sqlite3_bind_text(st, 5, hash, -1, SQLITE_STATIC);
  sqlite3_bind_int(st, 6, s->spends != 0);
  rc = sqlite3_step(st);
  sqlite3_finalize(st);
  if (rc != SQLITE_DONE) return db_error(db, s->fn, "appending to dprl_ledger", err);
  if (sqlite3_changes(db) != 1)
    return dprl_fail(err, DPRL_EINVAL, "%s: privacy ledger: the ledger row was not stored",
                     s->fn);
  return DPRL_OK;
}

int dprl_budget_charge(sqlite3 *db, const dprl_spend *s, dprl_error *err) {
  if (!s->budget) return DPRL_OK;
  if (!sqlite3_get_autocommit(db))
    return dprl_fail(err, DPRL_EINVAL,
                     "%s: option budget: a budgeted release cannot run inside an explicit "
                     "transaction (a ROLLBACK would erase the ledger row of a release already "
                     "seen); run it on its own", s->fn);
  /* Our own transaction, with the write lock taken before the check, so
  ** two connections cannot both pass it; committed before the release is
  ** returned.  Inside a statement that writes (CREATE TABLE ... AS SELECT)
  ** BEGIN is refused: the row then joins that statement's transaction,
  ** and commits or fails with the release it stores. */
  int writing = 0;
  for (sqlite3_stmt *st = sqlite3_next_stmt(db, NULL); st; st = sqlite3_next_stmt(db, st))
    if (sqlite3_stmt_busy(st) && !sqlite3_stmt_readonly(st)) writing = 1;
  int own = !writing && sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL) == SQLITE_OK;
  if (!own && !writing)
    return db_error(db, s->fn, "taking the write lock (another connection writes?)", err);
  int rc = charge_locked(db, s, err);
  if (!own) return rc;
  if (!rc && sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
    rc = db_error(db, s->fn, "committing the ledger row", err);
  if (!sqlite3_get_autocommit(db)) sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
  return rc;
}

/* ---- dprl_budget(name, epsilon, delta), dprl_budget_remaining(name) ------ */

static int read_name(sqlite3_value *v, const char *fn, const char **out, dprl_error *err) {
  *out = (const char *)sqlite3_value_text(v);
  int n = sqlite3_value_bytes(v);
  if (sqlite3_value_type(v) != SQLITE_TEXT || !*out || n == 0 || n > 200 ||
      (int)strlen(*out) != n) {
    char got[80];
    dprl_sql_describe(v, got, sizeof got);
    return dprl_fail(err, DPRL_EINVAL,
                     "%s: name must be text of 1 to 200 characters without NUL, got %s", fn, got);
  }
  return DPRL_OK;
}

static void budget_fn(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  const char *fn = "dprl_budget", *name;
  sqlite3 *db = sqlite3_context_db_handle(ctx);
  dprl_error err = {0};
  double eps = 0, delta = 0, have[2];
  int found = 0;
  (void)argc;
  int rc = read_name(argv[0], fn, &name, &err);
  if (!rc) rc = dprl_sql_real(argv[1], "epsilon", &eps, &err);
  if (!rc && !(eps > 0))
    rc = dprl_fail(&err, DPRL_EINVAL, "epsilon must be > 0, got %.17g", eps);
  if (!rc) rc = dprl_sql_real(argv[2], "delta", &delta, &err);
  if (!rc && !(delta >= 0 && delta < 1))
    rc = dprl_fail(&err, DPRL_EINVAL, "delta must be in [0, 1), got %.17g", delta);
  if (!rc && sqlite3_exec(db, BUDGETS_SCHEMA, NULL, NULL, NULL) != SQLITE_OK)
    rc = db_error(db, fn, "creating its tables", &err);
  if (!rc)
    rc = query_numbers(db, fn, "SELECT epsilon, delta FROM main.dprl_budgets WHERE name = ?1",
                       name, have, 2, &found, &err);
  if (!rc && found && (have[0] != eps || have[1] != delta))
    rc = dprl_fail(&err, DPRL_EINVAL,
                   "budget \"%s\" is already declared with epsilon %.17g, delta %.17g; a "
                   "budget cannot be changed: declare another name", name, have[0], have[1]);
  if (!rc && !found) {
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db,
                           "INSERT INTO main.dprl_budgets VALUES (?1, ?2, ?3, 'basic composition', "
                           "strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))",
                           -1, &st, NULL) != SQLITE_OK)
      rc = db_error(db, fn, "declaring the budget", &err);
    else {
      sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
      sqlite3_bind_double(st, 2, eps);
      sqlite3_bind_double(st, 3, delta);
      if (sqlite3_step(st) != SQLITE_DONE) rc = db_error(db, fn, "declaring the budget", &err);
    }
    sqlite3_finalize(st);
  }
  if (rc) {
    dprl_sql_result_error(ctx, fn, &err);
    return;
  }
  dprl_buf b = {0};
  dprl_buf_puts(&b, "{\"budget\":");
  dprl_json_put_string(&b, name);
  dprl_buf_puts(&b, ",\"epsilon\":");
  dprl_json_put_double(&b, eps);
  dprl_buf_puts(&b, ",\"delta\":");
  dprl_json_put_double(&b, delta);
  dprl_buf_puts(&b, ",\"accountant\":\"basic composition\"}");
  if (b.oom) sqlite3_result_error_nomem(ctx);
  else dprl_sql_result_json(ctx, b.data, (int)b.len);
  dprl_buf_free(&b);
}

static void remaining_fn(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  const char *fn = "dprl_budget_remaining", *name;
  sqlite3 *db = sqlite3_context_db_handle(ctx);
  dprl_error err = {0};
  double have[2], used[3];
  int found = 0;
  (void)argc;
  int rc = read_name(argv[0], fn, &name, &err);
  if (!rc && !exists_tables(db))
    rc = dprl_fail(&err, DPRL_EINVAL, "no budget named \"%s\" (no dprl_budgets table)", name);
  if (!rc)
    rc = query_numbers(db, fn, "SELECT epsilon, delta FROM main.dprl_budgets WHERE name = ?1",
                       name, have, 2, &found, &err);
  if (!rc && !found) rc = dprl_fail(&err, DPRL_EINVAL, "no budget named \"%s\"", name);
  if (!rc)
    rc = query_numbers(db, fn,
                       "SELECT total(epsilon) FILTER (WHERE spent), total(delta) FILTER (WHERE "
                       "spent), count(*) FILTER (WHERE spent) FROM main.dprl_ledger WHERE "
                       "budget = ?1", name, used, 3, &found, &err);
  if (rc) {
    dprl_sql_result_error(ctx, fn, &err);
    return;
  }
  static const char *const keys[] = {"epsilon", "delta", "epsilon_spent", "delta_spent",
                                     "epsilon_remaining", "delta_remaining"};
  double vals[6] = {have[0], have[1], used[0], used[1], fmax(0, have[0] - used[0]),
                    fmax(0, have[1] - used[1])};
  dprl_buf b = {0};
  dprl_buf_puts(&b, "{\"budget\":");
  dprl_json_put_string(&b, name);
  dprl_buf_puts(&b, ",\"accountant\":\"basic composition\"");
  for (int i = 0; i < 6; i++) {
    dprl_buf_printf(&b, ",\"%s\":", keys[i]);
    dprl_json_put_double(&b, vals[i]);
  }
  dprl_buf_printf(&b, ",\"releases\":%lld}", (long long)used[2]);
  if (b.oom) sqlite3_result_error_nomem(ctx);
  else dprl_sql_result_json(ctx, b.data, (int)b.len);
  dprl_buf_free(&b);
}

int dprl_register_budget(sqlite3 *db) {
  /* Both touch the database: top-level statements only (never from a view
  ** or trigger), and not deterministic. */
  int rc = sqlite3_create_function_v2(db, "dprl_budget", 3, DPRL_JSON_FLAGS | SQLITE_DIRECTONLY, NULL,
                                      budget_fn, NULL, NULL, NULL);
  if (rc == SQLITE_OK)
    rc = sqlite3_create_function_v2(db, "dprl_budget_remaining", 1,
                                    DPRL_JSON_FLAGS | SQLITE_DIRECTONLY, NULL, remaining_fn, NULL,
                                    NULL, NULL);
  return rc;
}
