/* sql_ledger.c: the ledger's tables, where a budget lives, and what it has
** spent in its accountant's terms (sql_ledger.h). */
#include "sqlite/sql_ledger.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "dp/zcdp.h"

/* The number of characters of valid UTF-8, or (size_t)-1. */
static size_t utf8_chars(const char *s, size_t n) {
  size_t c = 0;
  for (size_t i = 0; i < n; c++) {
    unsigned char b = (unsigned char)s[i];
    size_t k = b < 0x80 ? 1 : (b & 0xE0) == 0xC0 && b >= 0xC2 ? 2 : (b & 0xF0) == 0xE0 ? 3
               : (b & 0xF8) == 0xF0 && b <= 0xF4 ? 4 : 0;
    if (!k || i + k > n) return (size_t)-1;
    for (size_t j = 1; j < k; j++)
      if (((unsigned char)s[i + j] & 0xC0) != 0x80) return (size_t)-1;
    i += k;
  }
  return c;
}

/* "[schema.]name": the schema must be attached; names are 1 to 200
** characters (not bytes), without NUL. */
int dprl_ledger_locate(sqlite3 *db, const char *fn, const char *what, const char *text,
                         ledger_at *at, dprl_error *err) {
  if (utf8_chars(text, strlen(text)) == (size_t)-1)
    return dprl_fail(err, DPRL_EINVAL, "%s: %s must be valid UTF-8", fn, what);
  const char *dot = strchr(text, '.');
  size_t sn = dot ? (size_t)(dot - text) : 0;
  at->name = dot ? dot + 1 : text;
  size_t nn = strlen(at->name);
  if (dot && (sn == 0 || nn == 0 || utf8_chars(text, sn) > NAME_MAX_CHARS))
    return dprl_fail(err, DPRL_EINVAL,
                     "%s: %s \"%.200s\": a dot separates the schema from the name "
                     "(\"clinic.icu\": budget \"icu\" in the attached database \"clinic\"; "
                     "\"main.v1.2\": budget \"v1.2\" in main), and neither may be empty",
                     fn, what, text);
  if (nn == 0 || utf8_chars(at->name, nn) > NAME_MAX_CHARS)
    return dprl_fail(err, DPRL_EINVAL, "%s: %s must be 1 to %d characters, got %zu", fn, what,
                     NAME_MAX_CHARS, utf8_chars(at->name, nn));
  /* at most 200 characters of at most 4 bytes each: fits at->schema */
  memcpy(at->schema, dot ? text : "main", dot ? sn : 4);
  at->schema[dot ? sn : 4] = 0;
  if (sqlite3_stricmp(at->schema, "main") == 0) memcpy(at->schema, "main", 5);
  if (sqlite3_stricmp(at->schema, "temp") == 0) {
    at->ephemeral = 1;
    return DPRL_OK;
  }
  const char *file = sqlite3_db_filename(db, at->schema);
  if (!file)
    return dprl_fail(err, DPRL_EINVAL,
                     "%s: %s \"%.200s\": no attached database named \"%s\" (a dot separates "
                     "the schema from the name: write \"main.%.200s\" for a name with a dot)",
                     fn, what, text, at->schema, text);
  sqlite3_vfs *vfs = NULL;
  sqlite3_file_control(db, at->schema, SQLITE_FCNTL_VFS_POINTER, &vfs);
  at->ephemeral = file[0] == 0 || (vfs && vfs->zName && strcmp(vfs->zName, "memdb") == 0);
  return DPRL_OK;
}

/* One row of numbers from sql (with %w for the schema) and the text
** parameter p; *found = 0 if none. */
int dprl_ledger_query(sqlite3 *db, const char *schema, const char *fmt, const char *p,
                         double *out, int n, int *found) {
  sqlite3_stmt *st = NULL;
  char *sql = sqlite3_mprintf(fmt, schema);
  int rc = sql ? sqlite3_prepare_v2(db, sql, -1, &st, NULL) : SQLITE_NOMEM;
  sqlite3_free(sql);
  *found = 0;
  if (rc != SQLITE_OK) return rc;
  if (p) sqlite3_bind_text(st, 1, p, -1, SQLITE_STATIC);
  rc = sqlite3_step(st);
  *found = rc == SQLITE_ROW;
  for (int i = 0; *found && i < n; i++) out[i] = sqlite3_column_double(st, i);
  sqlite3_finalize(st);
  return rc == SQLITE_ROW || rc == SQLITE_DONE ? SQLITE_OK : rc;
}

int dprl_ledger_db_error(sqlite3 *db, int rc, const char *fn, const char *what, dprl_error *err) {
  return dprl_sql_rc_error(db, rc, err, "%s: privacy ledger: %s", fn, what);
}

/* The text of table t in the schema ("" if none; NULL only out of memory). */
char *dprl_ledger_table_sql(sqlite3 *db, const char *schema, const char *t, const char **type,
                            int *rc) {
  sqlite3_stmt *st = NULL;
  char *sql = sqlite3_mprintf("SELECT type, sql FROM \"%w\".sqlite_schema WHERE name = ?1 "
                              "COLLATE NOCASE", schema);
  char *out = NULL;
  *type = "";
  *rc = sql ? sqlite3_prepare_v2(db, sql, -1, &st, NULL) : SQLITE_NOMEM;
  if (*rc == SQLITE_OK) {
    sqlite3_bind_text(st, 1, t, -1, SQLITE_STATIC);
    int step = sqlite3_step(st);
    if (step != SQLITE_ROW && step != SQLITE_DONE) *rc = step;
    if (step == SQLITE_ROW) {
      const char *ty = (const char *)sqlite3_column_text(st, 0);
      *type = ty && strcmp(ty, "table") == 0 ? "table" : ty && strcmp(ty, "view") == 0 ? "view"
                                                                                       : "other";
      const char *text = (const char *)sqlite3_column_text(st, 1);
      /* NULL for a NULL sql, or when its conversion to text ran out of memory */
      if ((!ty && sqlite3_column_type(st, 0) != SQLITE_NULL) ||
          (!text && sqlite3_column_type(st, 1) != SQLITE_NULL))
        *rc = SQLITE_NOMEM;
      else if (!(out = sqlite3_mprintf("%s", text ? text : "")))
        *rc = SQLITE_NOMEM;
    }
  }
  sqlite3_free(sql);
  sqlite3_finalize(st);
  if (*rc != SQLITE_OK) {
    sqlite3_free(out);
    return NULL;
  }
  out = out ? out : sqlite3_mprintf("%s", "");
  if (!out) *rc = SQLITE_NOMEM;
  return out;
}

/* Why the tables of the ledger cannot be used, or DPRL_OK.  `where` is the
** schema on the connection c, `shown` the name the user knows it by. */
int dprl_ledger_tables_check(sqlite3 *c, const char *where, const char *fn, const char *what,
                        const char *shown, const char *budget, dprl_error *err) {
  static const char *const names[] = {"dprl_budgets", "dprl_ledger"};
  static const char *const want[] = {BUDGETS_SQL, LEDGER_SQL};
  static const char *const older[] = {BUDGETS_SQL_0 ")", BUDGETS_SQL_1 ")", LEDGER_SQL_0 ")"};
  for (int i = 0; i < 2; i++) {
    const char *type;
    int rc;
    char *sql = dprl_ledger_table_sql(c, where, names[i], &type, &rc);
    if (!sql) return dprl_ledger_db_error(c, rc, fn, "reading its tables", err);
    int missing = sql[0] == 0 && type[0] == 0, differs = !missing && strcmp(sql, want[i]) != 0;
    int old = 0;
    for (int k = 0; k < 3; k++) old |= strcmp(sql, older[k]) == 0;
    sqlite3_free(sql);
    if (old)
      return dprl_fail(err, DPRL_EINVAL,
                       "%s: %s \"%s\": %s.%s was made by an older dprl: declare a budget "
                       "with dprl_budget(name, epsilon, delta, options), which upgrades the "
                       "tables", fn, what, budget, shown, names[i]);
    if (missing && i == 0)
      return dprl_fail(err, DPRL_EINVAL,
                       "%s: %s: no budget named \"%s\" (no dprl_budgets table in %s): declare "
                       "it with dprl_budget(name, epsilon, delta, options)", fn, what, budget, shown);
    if (missing)
      return dprl_fail(err, DPRL_EINVAL,
                       "%s: %s \"%s\": the table %s.dprl_ledger is missing (dropped?): dprl "
                       "will not charge a budget whose ledger is gone", fn, what, budget, shown);
    if (differs)
      return dprl_fail(err, DPRL_EINVAL,
                       "%s: %s \"%s\": %s.%s is not the table dprl created (its "
                       "definition differs): dprl will not charge a ledger it does not know",
                       fn, what, budget, shown, names[i]);
  }
  /* A trigger (here, or a TEMP one of this connection) could rewrite what a
  ** release spends. */
  for (int t = 0; t < 2; t++) {
    double n = 0;
    int found;
    int rc = dprl_ledger_query(c, t ? "temp" : where,
                           "SELECT count(*) FROM \"%w\".sqlite_schema WHERE type = 'trigger' "
                           "AND lower(tbl_name) IN ('dprl_budgets', 'dprl_ledger')", NULL, &n, 1, &found);
    if (rc == SQLITE_NOMEM) return dprl_nomem(err);
    if (rc != SQLITE_OK) return dprl_ledger_db_error(c, rc, fn, "reading its triggers", err);
    if (n > 0)
      return dprl_fail(err, DPRL_EINVAL,
                       "%s: %s \"%s\": %s on dprl_budgets or dprl_ledger: a trigger "
                       "could change what a release spends; drop it (dprl will not charge such "
                       "a ledger)", fn, what, budget, t ? "a TEMP trigger of this connection" : "a trigger");
  }
  return DPRL_OK;
}

/* ---- the tables' upgrade ----------------------------------------------- */

static int add_column(sqlite3 *db, const char *schema, const char *table, const char *col) {
  char *sql = sqlite3_mprintf("ALTER TABLE \"%w\".%s ADD COLUMN %s", schema, table, col);
  int rc = sql ? sqlite3_exec(db, sql, NULL, NULL, NULL) : SQLITE_NOMEM;
  sqlite3_free(sql);
  return rc;
}

int dprl_ledger_upgrade(sqlite3 *db, const char *schema, const char *fn, dprl_error *err) {
  const char *type;
  int rc = SQLITE_OK;
  int rb, rl;
  char *b = dprl_ledger_table_sql(db, schema, "dprl_budgets", &type, &rb);
  char *l = dprl_ledger_table_sql(db, schema, "dprl_ledger", &type, &rl);
  if (!b || !l) rc = rb != SQLITE_OK ? rb : rl;
  if (rc == SQLITE_OK && strcmp(b, BUDGETS_SQL_0 ")") == 0)
    rc = add_column(db, schema, "dprl_budgets", BUDGETS_COLUMN_1);
  if (rc == SQLITE_OK && (strcmp(b, BUDGETS_SQL_0 ")") == 0 || strcmp(b, BUDGETS_SQL_1 ")") == 0))
    rc = add_column(db, schema, "dprl_budgets", BUDGETS_COLUMN_2);
  if (rc == SQLITE_OK && strcmp(l, LEDGER_SQL_0 ")") == 0)
    rc = add_column(db, schema, "dprl_ledger", LEDGER_COLUMN_1);
  sqlite3_free(b);
  sqlite3_free(l);
  if (rc == SQLITE_NOMEM) return dprl_nomem(err);
  return rc == SQLITE_OK ? DPRL_OK : dprl_ledger_db_error(db, rc, fn, "upgrading its tables", err);
}

/* ---- what a budget has spent (ALGORITHMS.md §12, §12.1) ------------------ */

int dprl_spent_read(sqlite3 *db, const char *schema, const char *name, dprl_spent *s) {
  double v[5];
  int found;
  int rc = dprl_ledger_query(
      db, schema,
      s->zcdp ? "SELECT dprl_ledger_total(epsilon) FILTER (WHERE rho IS NULL), "
                "dprl_ledger_total(delta) FILTER (WHERE rho IS NULL), dprl_ledger_total(rho), "
                "count(*), count(rho) FROM \"%w\".dprl_ledger WHERE budget = ?1 AND spent = 1"
              : "SELECT dprl_ledger_total(epsilon), dprl_ledger_total(delta), 0, count(*), 0 "
                "FROM \"%w\".dprl_ledger WHERE budget = ?1 AND spent = 1",
      name, v, 5, &found);
  if (rc != SQLITE_OK) return rc;
  s->eps_plain = v[0];
  s->delta_plain = v[1];
  s->rho = v[2];
  s->releases = (int64_t)v[3];
  s->gaussian = (int64_t)v[4];
  return SQLITE_OK;
}

/* The ledger's values summed exactly and rounded up once (dprl_upsum): an
** upper bound on their exact sum, equal to it when it is a double (total()
** rounds to nearest, which may fall below it). */
void dprl_sql_ledger_total_step(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  dprl_upsum *sum = sqlite3_aggregate_context(ctx, sizeof *sum);
  (void)argc;
  if (!sum) {
    sqlite3_result_error_nomem(ctx);
    return;
  }
  if (sqlite3_value_type(argv[0]) != SQLITE_NULL) dprl_upsum_add(sum, sqlite3_value_double(argv[0]));
}

void dprl_sql_ledger_total_final(sqlite3_context *ctx) {
  dprl_upsum *sum = sqlite3_aggregate_context(ctx, 0);
  sqlite3_result_double(ctx, sum ? dprl_upsum_total(sum) : 0.0);
}

void dprl_sql_ledger_fits(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  dprl_spent s;
  memset(&s, 0, sizeof s);
  const char *acct = (const char *)sqlite3_value_text(argv[0]);
  s.zcdp = acct && strcmp(acct, DPRL_ACCT_ZCDP) == 0;
  s.eps_b = sqlite3_value_double(argv[1]);
  s.delta_b = sqlite3_value_double(argv[2]);
  s.eps_plain = sqlite3_value_double(argv[3]);
  s.delta_plain = sqlite3_value_double(argv[4]);
  s.rho = sqlite3_value_double(argv[5]);
  (void)argc;
  sqlite3_result_int(ctx, acct && dprl_spent_fits(&s));
}
