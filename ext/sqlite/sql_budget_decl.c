/*
** sql_budget_decl.c: declaring a budget and reading what it has left.
**
**   SELECT dprl_budget('study', 3, 1e-5, '{"unit": "episode"}');
**   -- {"budget":"study","epsilon":3,"delta":1e-05,"unit":"episode","accountant":"zcdp"}
**   SELECT dprl_budget_remaining('study');
**
** A budget states what it protects (its unit of privacy: "episode",
** "expert", "reward function" or "unit reward change", the last two the
** two neighbouring relations of the Q-learning releases; a release of
** another unit is refused) and
** its accountant: "zcdp" (the default: Gaussian releases compose in zCDP,
** the others add up, ALGORITHMS.md §12.1) or "basic" (every release's
** epsilon and delta add up).  The charge itself is sql_budget.c.
*/
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/json.h"
#include "base/options.h"
#include "dp/zcdp.h"
#include "sqlite/sql_budget.h"
#include "sqlite/sql_ledger.h"

/* ---- dprl_budget(name, epsilon, delta [, options]), dprl_budget_remaining -- */

static int read_name(sqlite3 *db, sqlite3_value *v, const char *fn, ledger_at *at,
                     dprl_error *err) {
  if (sqlite3_value_type(v) != SQLITE_TEXT) {
    char got[80];
    dprl_sql_describe(v, got, sizeof got);
    return dprl_fail(err, DPRL_EINVAL, "%s: name must be text, got %s", fn, got);
  }
  const char *text = (const char *)sqlite3_value_text(v);
  if (!text) return dprl_nomem(err);
  if ((int)strlen(text) != sqlite3_value_bytes(v))
    return dprl_fail(err, DPRL_EINVAL, "%s: name must not contain NUL", fn);
  return dprl_ledger_locate(db, fn, "name", text, at, err);
}

/* A budget's public parameters. */
typedef struct budget_decl {
  double eps, delta;
  int in_memory;
  const char *unit, *accountant;
} budget_decl;

static const char *const units[] = {"episode", "expert", "reward function", "unit reward change",
                                    NULL};
static const char *const accountants[] = {"zcdp", "basic", NULL};
static const char *const budget_keys[] = {"unit", "accountant", "in_memory", NULL};

static int declare(sqlite3 *db, const ledger_at *at, const budget_decl *d, dprl_error *err) {
  const char *fn = "dprl_budget";
  double have[2];
  int found;
  /* The index: a release reads its budget's rows under the write lock, not
  ** every budget's (a ledger made before it gets it at the next dprl_budget). */
  char *sql = sqlite3_mprintf("CREATE TABLE IF NOT EXISTS \"%w\".dprl_budgets%s;"
                              "CREATE TABLE IF NOT EXISTS \"%w\".dprl_ledger%s;"
                              "CREATE INDEX IF NOT EXISTS \"%w\".dprl_ledger_budget "
                              "ON dprl_ledger(budget, spent)",
                              at->schema, strchr(BUDGETS_SQL, '('), at->schema,
                              strchr(LEDGER_SQL, '('), at->schema);
  if (!sql) return dprl_nomem(err);
  int rc = sqlite3_exec(db, sql, NULL, NULL, NULL);
  sqlite3_free(sql);
  if (rc != SQLITE_OK) return dprl_ledger_db_error(db, rc, fn, "creating its tables", err);
  if (dprl_ledger_upgrade(db, at->schema, fn, err)) return err->code;
  if (dprl_ledger_tables_check(db, at->schema, fn, "budget", at->schema, at->name, err)) return err->code;
  rc = dprl_ledger_query(db, at->schema, "SELECT epsilon, delta FROM \"%w\".dprl_budgets WHERE name = ?1",
                     at->name, have, 2, &found);
  if (rc != SQLITE_OK) return dprl_ledger_db_error(db, rc, fn, "reading it", err);
  if (found) { /* declared again: only with the same parameters */
    double same = 0;
    char *q = sqlite3_mprintf("SELECT count(*) FROM \"%%w\".dprl_budgets WHERE name = ?1 AND "
                              "unit IS %Q AND accountant = %Q", d->unit, d->accountant);
    if (!q) return dprl_nomem(err);
    rc = dprl_ledger_query(db, at->schema, q, at->name, &same, 1, &found);
    sqlite3_free(q);
    if (rc != SQLITE_OK) return dprl_ledger_db_error(db, rc, fn, "reading it", err);
    if (have[0] != d->eps || have[1] != d->delta)
      return dprl_fail(err, DPRL_EINVAL,
                       "budget \"%s\" is already declared with epsilon %.17g, delta %.17g; a "
                       "budget cannot be changed: declare another name", at->name, have[0],
                       have[1]);
    if (same != 1)
      return dprl_fail(err, DPRL_EINVAL,
                       "budget \"%s\" is already declared with another unit or accountant "
                       "(dprl_budget_remaining shows them); a budget cannot be changed: declare "
                       "another name", at->name);
    return DPRL_OK;
  }
  sqlite3_stmt *st = NULL;
  sql = sqlite3_mprintf("INSERT INTO \"%w\".dprl_budgets VALUES (?1, ?2, ?3, ?5, "
                        "strftime('%%Y-%%m-%%dT%%H:%%M:%%fZ', 'now'), ?4, ?6)",
                        at->schema);
  rc = sql ? sqlite3_prepare_v2(db, sql, -1, &st, NULL) : SQLITE_NOMEM;
  sqlite3_free(sql);
  if (rc == SQLITE_OK) {
    sqlite3_bind_text(st, 1, at->name, -1, SQLITE_STATIC);
    sqlite3_bind_double(st, 2, d->eps);
    sqlite3_bind_double(st, 3, d->delta);
    sqlite3_bind_int(st, 4, d->in_memory && at->ephemeral);
    sqlite3_bind_text(st, 5, d->accountant, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 6, d->unit, -1, SQLITE_STATIC);
    rc = sqlite3_step(st);
    rc = rc == SQLITE_DONE ? SQLITE_OK : rc;
  }
  sqlite3_finalize(st);
  return rc == SQLITE_OK ? DPRL_OK : dprl_ledger_db_error(db, rc, fn, "declaring the budget", err);
}

/* The options: unit (required), accountant, in_memory. */
static int read_decl(sqlite3_value *v, budget_decl *d, dprl_error *err) {
  const char *fn = "dprl_budget";
  dprl_options o;
  int u = 0, a = 0;
  const char *text = v ? (const char *)sqlite3_value_text(v) : NULL;
  if (!text)
    return dprl_fail(err, DPRL_EINVAL,
                     "%s: the unit of privacy the budget protects is required: "
                     "dprl_budget(name, epsilon, delta, '{\"unit\": \"episode\"}'), with "
                     "\"episode\", \"expert\", \"reward function\" or \"unit reward change\"", fn);
  int rc = dprl_options_open(&o, fn, text, (size_t)sqlite3_value_bytes(v), budget_keys, err);
  if (rc) return rc;
  if (!dprl_opt_has(&o, "unit"))
    rc = dprl_fail(err, DPRL_EINVAL,
                   "%s: option unit is required: the unit of privacy the budget protects, "
                   "one of \"episode\", \"expert\", \"reward function\", \"unit reward change\"",
                   fn);
  if (!rc) rc = dprl_opt_choice(&o, "unit", units, 0, &u);
  if (!rc) rc = dprl_opt_choice(&o, "accountant", accountants, 0, &a);
  if (!rc) rc = dprl_opt_bool(&o, "in_memory", 0, &d->in_memory);
  dprl_options_close(&o);
  d->unit = units[u];
  d->accountant = a == 0 ? DPRL_ACCT_ZCDP : DPRL_ACCT_BASIC;
  return rc;
}

void dprl_sql_budget(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  const char *fn = "dprl_budget";
  sqlite3 *db = sqlite3_context_db_handle(ctx);
  dprl_error err = {0};
  ledger_at at;
  budget_decl d;
  memset(&d, 0, sizeof d);
  int rc = read_name(db, argv[0], fn, &at, &err);
  if (!rc) rc = dprl_sql_real(argv[1], "epsilon", &d.eps, &err);
  if (!rc && !(d.eps > 0 && isfinite(d.eps)))
    rc = dprl_fail(&err, DPRL_EINVAL, "epsilon must be > 0%s, got %.17g",
                   d.eps > 0 ? " and finite" : "", d.eps);
  if (!rc) rc = dprl_sql_real(argv[2], "delta", &d.delta, &err);
  if (!rc && !(d.delta >= 0 && d.delta < 1))
    rc = dprl_fail(&err, DPRL_EINVAL, "delta must be in [0, 1), got %.17g", d.delta);
  if (!rc) rc = read_decl(argc == 4 ? argv[3] : NULL, &d, &err);
  if (!rc && at.ephemeral && !d.in_memory)
    rc = dprl_fail(&err, DPRL_EINVAL,
                   "the database \"%s\" is %s: a budget there ends with the connection, and "
                   "every new session would start with a fresh one. Name a budget in a file "
                   "(\"clinic.%s\" for the attached database clinic), or add '\"in_memory\": "
                   "true' to the options if a budget for this connection only is "
                   "what you want", at.schema,
                   sqlite3_stricmp(at.schema, "temp") == 0 ? "temporary" : "in memory", at.name);
  if (!rc) rc = declare(db, &at, &d, &err);
  if (rc) {
    dprl_sql_result_error(ctx, fn, &err);
    return;
  }
  dprl_buf b = {0};
  dprl_buf_puts(&b, "{\"budget\":");
  dprl_json_put_string(&b, at.name);
  if (strcmp(at.schema, "main") != 0) {
    dprl_buf_puts(&b, ",\"schema\":");
    dprl_json_put_string(&b, at.schema);
  }
  dprl_json_put_num(&b, "epsilon", d.eps);
  dprl_json_put_num(&b, "delta", d.delta);
  dprl_json_put_key(&b, "unit");
  dprl_json_put_string(&b, d.unit);
  dprl_json_put_key(&b, "accountant");
  dprl_json_put_string(&b, d.accountant);
  dprl_buf_puts(&b, "}");
  if (b.oom) sqlite3_result_error_nomem(ctx);
  else dprl_sql_result_json(ctx, b.data, (int)b.len);
  dprl_buf_free(&b);
}

int dprl_budget_lookup(sqlite3 *db, sqlite3_value *name, const char *fn, ledger_at *at,
                       dprl_spent *sp, char *unit, size_t unit_size, char *acct,
                       size_t acct_size, dprl_error *err) {
  double have[2];
  int found = 0;
  memset(sp, 0, sizeof *sp);
  unit[0] = acct[0] = 0;
  int rc = read_name(db, name, fn, at, err);
  if (!rc) {
    const char *type;
    int rt;
    char *sql = dprl_ledger_table_sql(db, at->schema, "dprl_budgets", &type, &rt);
    if (!sql) rc = dprl_ledger_db_error(db, rt, fn, "reading its tables", err);
    else if (!type[0])
      rc = dprl_fail(err, DPRL_EINVAL, "no budget named \"%s\" (no dprl_budgets table in %s)",
                     at->name, at->schema);
    sqlite3_free(sql);
  }
  if (!rc && dprl_ledger_tables_check(db, at->schema, fn, "budget", at->schema, at->name, err))
    rc = err->code;
  int rq = SQLITE_OK;
  if (!rc && (rq = dprl_ledger_query(db, at->schema,
                                     "SELECT epsilon, delta FROM \"%w\".dprl_budgets WHERE name = ?1",
                                     at->name, have, 2, &found)) != SQLITE_OK)
    rc = dprl_ledger_db_error(db, rq, fn, "reading it", err);
  if (!rc && !found) rc = dprl_fail(err, DPRL_EINVAL, "no budget named \"%s\"", at->name);
  if (!rc && (rq = dprl_budget_texts(db, at->schema, at->name, unit, unit_size, acct, acct_size)))
    rc = dprl_ledger_db_error(db, rq, fn, "reading it", err);
  if (rc) return rc;
  sp->zcdp = strcmp(acct, DPRL_ACCT_ZCDP) == 0;
  sp->eps_b = have[0];
  sp->delta_b = have[1];
  if ((rq = dprl_spent_read(db, at->schema, at->name, sp)) != SQLITE_OK)
    return dprl_ledger_db_error(db, rq, fn, "reading it", err);
  return DPRL_OK;
}

/* What a budget has spent and has left, in its accountant's terms. */
void dprl_sql_budget_remaining(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  const char *fn = "dprl_budget_remaining";
  sqlite3 *db = sqlite3_context_db_handle(ctx);
  dprl_error err = {0};
  ledger_at at;
  char unit[64], acct[64];
  dprl_spent sp;
  (void)argc;
  if (dprl_budget_lookup(db, argv[0], fn, &at, &sp, unit, sizeof unit, acct, sizeof acct,
                         &err)) {
    dprl_sql_result_error(ctx, fn, &err);
    return;
  }
  double spent = dprl_spent_epsilon(&sp);
  dprl_buf b = {0};
  dprl_buf_puts(&b, "{\"budget\":");
  dprl_json_put_string(&b, at.name);
  dprl_json_put_key(&b, "unit");
  if (unit[0]) dprl_json_put_string(&b, unit);
  else dprl_buf_puts(&b, "null");
  dprl_json_put_key(&b, "accountant");
  dprl_json_put_string(&b, acct);
  dprl_json_put_num(&b, "epsilon", sp.eps_b);
  dprl_json_put_num(&b, "delta", sp.delta_b);
  dprl_json_put_num(&b, "epsilon_spent", spent);
  dprl_json_put_num(&b, "epsilon_remaining", fmax(0, sp.eps_b - spent));
  if (sp.zcdp) { /* the parts the total is made of (ALGORITHMS.md §12.1) */
    dprl_json_put_num(&b, "rho_spent", sp.rho);
    double left = dprl_zcdp_rho_left(sp.rho, sp.eps_plain, sp.delta_plain, sp.eps_b, sp.delta_b);
    dprl_json_put_num(&b, "rho_remaining", left > 0 ? left : 0);
    dprl_json_put_num(&b, "epsilon_plain_spent", sp.eps_plain);
    dprl_json_put_num(&b, "delta_plain_spent", sp.delta_plain);
    dprl_json_put_int(&b, "gaussian_releases", sp.gaussian);
    dprl_json_put_key(&b, "explain");
    char text[400];
    dprl_snprintf(text, sizeof text,
             "zCDP: the %lld Gaussian releases spend rho %.6g in all, converted to epsilon at "
             "delta %.6g minus the others' delta (Canonne, Kamath, Steinke 2020); the %lld "
             "other releases add their epsilon %.6g and delta %.6g",
             (long long)sp.gaussian, sp.rho, sp.delta_b, (long long)(sp.releases - sp.gaussian),
             sp.eps_plain, sp.delta_plain);
    dprl_json_put_string(&b, text);
  } else {
    dprl_json_put_num(&b, "delta_spent", sp.delta_plain);
    dprl_json_put_num(&b, "delta_remaining", fmax(0, sp.delta_b - sp.delta_plain));
  }
  dprl_json_put_int(&b, "releases", sp.releases);
  dprl_buf_puts(&b, "}");
  if (b.oom) sqlite3_result_error_nomem(ctx);
  else dprl_sql_result_json(ctx, b.data, (int)b.len);
  dprl_buf_free(&b);
}
