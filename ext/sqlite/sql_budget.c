/*
** sql_budget.c: a privacy ledger inside the database.
**
**   SELECT dprl_budget('icu-2026', 3, 1e-5);      -- declare: epsilon 3, delta 1e-5
**   SELECT dp_lsw(episode, t, state, reward,
**     '{"n_states": 10, "gamma": 0.9, "rmin": 0, "rmax": 1, "epsilon": 1,
**       "delta": 1e-6, "perturb": "statistics", "budget": "icu-2026"}') FROM steps;
**   SELECT dprl_budget_remaining('icu-2026');
**   SELECT * FROM dprl_ledger;                     -- the audit trail
**
** Tables dprl owns, in the schema the budget names ("clinic.icu": budget
** "icu" in the attached database "clinic"; no dot: main):
**   dprl_budgets(name, epsilon, delta, accountant, created)
**   dprl_ledger(id, time, budget, function, epsilon, delta, options_hash, spent)
** Accountant: basic composition (the epsilons and the deltas add up), valid
** for any mix of mechanisms.
**
** The rule: no budgeted value is observable unless its ledger row is
** committed first, whatever the caller's statement does afterwards.  So
** the row is never part of the caller's transaction:
**  - the row is written by one INSERT that checks, in the same statement,
**    the budget, the tables' definitions, the absence of triggers and the
**    total, and commits on its own (ledger_write);
**  - on a file database it is written through a connection of its own
**    (ledger_open), except where that connection could not commit while
**    the caller's statement reads the file: in rollback-journal mode (the
**    caller's read lock blocks every other commit) and in exclusive
**    locking mode.  There it is a nested statement on the caller's
**    connection, which commits at its end because the caller's statement
**    only reads;
**  - refused: inside an explicit transaction; in a statement that writes
**    to the ledger's database (its write lock is the one the row needs);
**    on the caller's connection while any of its statements writes (the
**    row would join that statement's transaction); a budget in an
**    in-memory or temporary database that was not declared as such.
** Waits for the ledger's lock last at most the connection's busy timeout,
** stop on sqlite3_interrupt(), and give up with SQLITE_BUSY.  A nested
** statement that must first take the write lock while the caller's
** statement holds the read lock cannot wait (SQLite's rule against
** deadlock: the other writer needs that read lock gone): SQLITE_BUSY at
** once.  Whoever can write these tables can rewrite them: the ledger keeps
** an honest analyst from overspending, it is not a defence against the
** database's owner.
*/
#include "sqlite/sql_budget.h"
#include "sqlite/sql_ledger.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "base/json.h"
#include "base/options.h"

/* FNV-1a of the options text, so a ledger row says which call it was. */
static void options_hash(const char *s, size_t n, char out[17]) {
  uint64_t h = 1469598103934665603u;
  for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 1099511628211u;
  dprl_snprintf(out, 17, "%016llx", (unsigned long long)h);
}

/* ---- waiting for the ledger's lock -------------------------------------- */

typedef struct ledger_wait {
  int timeout_ms;       /* the caller's busy timeout */
  int64_t start_ns;
  dprl_sql_cancel *cancel; /* a probe on the caller's connection */
  int interrupted;
  int nested; /* the row is written through the caller's connection */
  int waited; /* calls of ledger_busy */
} ledger_wait;

static int64_t now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

/* A busy handler: sleep a little, up to the timeout; stop on interrupt. */
static int ledger_busy(void *p, int n) {
  ledger_wait *w = p;
  w->waited++;
  if (w->cancel && w->cancel->base.check(w->cancel->base.ctx)) {
    w->interrupted = 1;
    return 0;
  }
  int64_t left = (int64_t)w->timeout_ms - (now_ns() - w->start_ns) / 1000000;
  if (left <= 0) return 0;
  static const int delays[] = {1, 2, 5, 10, 15, 20, 25};
  int d = n < 7 ? delays[n] : 25;
  sqlite3_sleep(d < left ? d : (int)left);
  return 1;
}

/* The caller's busy timeout (PRAGMA busy_timeout); 0 if it has none, or a
** busy handler of its own (which cannot be called from here). */
static int busy_timeout(sqlite3 *db) {
  double ms = 0;
  int found;
  if (dprl_ledger_query(db, "", "PRAGMA busy_timeout", NULL, &ms, 1, &found) != SQLITE_OK) return 0;
  return ms > 0 && ms <= 2147483647 ? (int)ms : 0;
}

/* ---- the charge ---------------------------------------------------------- */

/* The unit and the accountant of a budget ("" for a NULL unit). */
int dprl_budget_texts(sqlite3 *c, const char *where, const char *name, char *unit, size_t nu,
                        char *acct, size_t na) {
  sqlite3_stmt *st = NULL;
  char *sql = sqlite3_mprintf("SELECT unit, accountant FROM \"%w\".dprl_budgets WHERE name = ?1",
                              where);
  int rc = sql ? sqlite3_prepare_v2(c, sql, -1, &st, NULL) : SQLITE_NOMEM;
  sqlite3_free(sql);
  if (rc != SQLITE_OK) return rc;
  sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
  rc = sqlite3_step(st);
  if (rc == SQLITE_ROW) {
    const char *u = (const char *)sqlite3_column_text(st, 0);
    const char *a = (const char *)sqlite3_column_text(st, 1);
    dprl_snprintf(unit, nu, "%s", u ? u : "");
    dprl_snprintf(acct, na, "%s", a ? a : "");
    rc = SQLITE_OK;
  } else {
    rc = rc == SQLITE_DONE ? SQLITE_OK : rc;
  }
  sqlite3_finalize(st);
  return rc;
}

/* The budget would be exceeded: what it has spent, in its accountant's
** terms, and what this release needs. */
static int exceeded(const dprl_spend *s, const dprl_spent *sp, dprl_error *err) {
  if (!sp->zcdp)
    return dprl_fail(err, DPRL_EINVAL,
                     "%s: budget \"%s\" exceeded: this release needs epsilon %.6g, delta %.6g; "
                     "already spent epsilon %.6g of %.6g and delta %.6g of %.6g (basic "
                     "composition); this release was not returned",
                     s->fn, s->budget, s->epsilon, s->delta, sp->eps_plain, sp->eps_b,
                     sp->delta_plain, sp->delta_b);
  dprl_spent with = *sp;
  if (s->gaussian) with.rho = dprl_add_up(with.rho, s->rho);
  else {
    with.eps_plain = dprl_add_up(with.eps_plain, s->epsilon);
    with.delta_plain = dprl_add_up(with.delta_plain, s->delta);
  }
  char need[64];
  if (s->gaussian) dprl_snprintf(need, sizeof need, "rho %.6g", s->rho);
  else dprl_snprintf(need, sizeof need, "epsilon %.6g, delta %.6g", s->epsilon, s->delta);
  return dprl_fail(err, DPRL_EINVAL,
                   "%s: budget \"%s\" exceeded: this release needs %s; with it the budget's "
                   "total would be epsilon %.6g at delta %.6g (zCDP: rho %.6g from the "
                   "Gaussian releases, plus epsilon %.6g and delta %.6g from the others), more "
                   "than epsilon %.6g; this release was not returned",
                   s->fn, s->budget, need, dprl_spent_epsilon(&with), sp->delta_b, with.rho,
                   with.eps_plain, with.delta_plain, sp->eps_b);
}

/* Check and append in one statement on c, which commits on its own. */
static int ledger_write(sqlite3 *c, const char *where, const char *shown, const ledger_at *at,
                        const dprl_spend *s, ledger_wait *w, dprl_error *err) {
  char hash[17];
  options_hash(s->options ? s->options : "", s->options ? s->options_len : 0, hash);
  char *sql = sqlite3_mprintf(
      "INSERT INTO \"%w\".dprl_ledger(time, budget, function, epsilon, delta, options_hash, "
      "spent, rho) SELECT strftime('%%Y-%%m-%%dT%%H:%%M:%%fZ', 'now'), ?1, ?2, ?3, ?4, ?5, 1, "
      "CASE WHEN b.accountant = '" DPRL_ACCT_ZCDP "' THEN ?9 END "
      "FROM \"%w\".dprl_budgets AS b WHERE b.name = ?1 "
      "AND (SELECT sql FROM \"%w\".sqlite_schema WHERE name = 'dprl_budgets' COLLATE NOCASE) "
      "= ?6 "
      "AND (SELECT sql FROM \"%w\".sqlite_schema WHERE name = 'dprl_ledger' COLLATE NOCASE) "
      "= ?7 "
      "AND NOT EXISTS (SELECT 1 FROM \"%w\".sqlite_schema WHERE type = 'trigger' AND "
      "lower(tbl_name) IN ('dprl_budgets', 'dprl_ledger')) "
      "AND NOT EXISTS (SELECT 1 FROM temp.sqlite_schema WHERE type = 'trigger' AND "
      "lower(tbl_name) IN ('dprl_budgets', 'dprl_ledger')) "
      "AND b.unit = ?10 AND (b.in_memory = 1 OR ?8 = 0) "
      /* the total with this release, in the budget's accountant's terms */
      /* (sums rounded up over the ledger's rows and this release's values) */
      "AND dprl_ledger_fits(b.accountant, b.epsilon, b.delta, "
      "(SELECT dprl_ledger_total(x) FROM (SELECT epsilon AS x FROM \"%w\".dprl_ledger "
      "WHERE budget = ?1 AND spent = 1 AND (b.accountant <> '" DPRL_ACCT_ZCDP "' OR rho IS NULL) "
      "UNION ALL SELECT CASE WHEN b.accountant = '" DPRL_ACCT_ZCDP "' AND ?9 IS NOT NULL "
      "THEN 0 ELSE ?3 END)), "
      "(SELECT dprl_ledger_total(x) FROM (SELECT delta AS x FROM \"%w\".dprl_ledger "
      "WHERE budget = ?1 AND spent = 1 AND (b.accountant <> '" DPRL_ACCT_ZCDP "' OR rho IS NULL) "
      "UNION ALL SELECT CASE WHEN b.accountant = '" DPRL_ACCT_ZCDP "' AND ?9 IS NOT NULL "
      "THEN 0 ELSE ?4 END)), "
      "CASE WHEN b.accountant = '" DPRL_ACCT_ZCDP "' THEN (SELECT dprl_ledger_total(x) FROM "
      "(SELECT rho AS x FROM \"%w\".dprl_ledger WHERE budget = ?1 AND spent = 1 "
      "UNION ALL SELECT coalesce(?9, 0))) ELSE 0 END)",
      where, where, where, where, where, where, where, where);
  if (!sql) return dprl_nomem(err);
  sqlite3_stmt *st = NULL;
  int rc = sqlite3_prepare_v2(c, sql, -1, &st, NULL);
  sqlite3_free(sql);
  if (rc != SQLITE_OK) {
    if (rc == SQLITE_NOMEM) return dprl_nomem(err);
    if (w->interrupted || rc == SQLITE_INTERRUPT) return dprl_fail(err, DPRL_EINTR, "interrupted");
    if (rc != SQLITE_BUSY && dprl_ledger_tables_check(c, where, s->fn, "option budget", shown, s->budget, err))
      return err->code;
    return dprl_ledger_db_error(c, rc, s->fn, "reading it", err);
  }
  sqlite3_bind_text(st, 1, at->name, -1, SQLITE_STATIC);
  sqlite3_bind_text(st, 2, s->fn, -1, SQLITE_STATIC);
  sqlite3_bind_double(st, 3, s->epsilon);
  sqlite3_bind_double(st, 4, s->delta);
  sqlite3_bind_text(st, 5, hash, -1, SQLITE_STATIC);
  sqlite3_bind_text(st, 6, BUDGETS_SQL, -1, SQLITE_STATIC);
  sqlite3_bind_text(st, 7, LEDGER_SQL, -1, SQLITE_STATIC);
  sqlite3_bind_int(st, 8, at->ephemeral);
  if (s->gaussian) sqlite3_bind_double(st, 9, s->rho);
  sqlite3_bind_text(st, 10, s->unit ? s->unit : "", -1, SQLITE_STATIC);
  rc = sqlite3_step(st);
  int stored = rc == SQLITE_DONE ? sqlite3_changes(c) : 0;
  sqlite3_finalize(st);
  if (w->interrupted) return dprl_fail(err, DPRL_EINTR, "interrupted");
  if (rc == SQLITE_BUSY || rc == SQLITE_LOCKED)
    return dprl_fail(err, DPRL_EBUSY,
                     "%s: budget \"%s\": the ledger is locked by another connection (%s); "
                     "this release was not returned: retry", s->fn, s->budget,
                     w->timeout_ms == 0 ? "this connection has no busy timeout: PRAGMA "
                                          "busy_timeout = 5000 makes a release wait up to 5 s"
                     : !w->nested || w->waited ? "waited for the busy timeout"
                     : "another connection writes, and this statement reads the ledger's "
                       "database in rollback-journal mode, so it cannot wait for it; WAL "
                       "(PRAGMA journal_mode = WAL) lets releases wait as the busy timeout says");
  if (rc != SQLITE_DONE) return dprl_ledger_db_error(c, rc, s->fn, "appending to dprl_ledger", err);
  if (stored == 1) return DPRL_OK;
  /* Nothing stored: say why (the same checks, one at a time). */
  if (dprl_ledger_tables_check(c, where, s->fn, "option budget", shown, s->budget, err)) return err->code;
  double have[3];
  int found;
  rc = dprl_ledger_query(c, where,
                     "SELECT epsilon, delta, in_memory FROM \"%w\".dprl_budgets WHERE name = ?1",
                     at->name, have, 3, &found);
  if (rc == SQLITE_OK && !found)
    return dprl_fail(err, DPRL_EINVAL,
                     "%s: option budget: no budget named \"%s\": declare it with "
                     "dprl_budget(name, epsilon, delta, options)", s->fn, s->budget);
  if (rc == SQLITE_OK && at->ephemeral && have[2] != 1)
    return dprl_fail(err, DPRL_EINVAL,
                     "%s: option budget \"%s\": the budget was declared in a file, and this "
                     "copy of it is in memory (a backup or a deserialized database?): what it "
                     "charges would vanish with the connection. Release against the file, or "
                     "declare an in-memory budget with '{\"in_memory\": true}'",
                     s->fn, s->budget);
  char unit[64] = "", acct[64] = "";
  if (rc == SQLITE_OK) rc = dprl_budget_texts(c, where, at->name, unit, sizeof unit, acct, sizeof acct);
  if (rc != SQLITE_OK) return dprl_ledger_db_error(c, rc, s->fn, "reading it", err);
  if (!unit[0])
    return dprl_fail(err, DPRL_EINVAL,
                     "%s: option budget \"%s\": the budget was declared by an older dprl, "
                     "without a unit of privacy: declare a new budget with "
                     "dprl_budget(name, epsilon, delta, '{\"unit\": \"%s\"}')",
                     s->fn, s->budget, s->unit ? s->unit : "episode");
  if (!s->unit || strcmp(unit, s->unit) != 0)
    return dprl_fail(err, DPRL_EINVAL,
                     "%s: option budget \"%s\": the budget protects one %s, and %s protects "
                     "one %s: epsilons of different units of privacy do not add up to a "
                     "guarantee, so they cannot share a budget; declare a budget with "
                     "'{\"unit\": \"%s\"}' for this release",
                     s->fn, s->budget, unit, s->fn, s->unit ? s->unit : "?",
                     s->unit ? s->unit : "?");
  dprl_spent sp;
  memset(&sp, 0, sizeof sp);
  sp.zcdp = strcmp(acct, DPRL_ACCT_ZCDP) == 0;
  sp.eps_b = have[0];
  sp.delta_b = have[1];
  int rs = dprl_spent_read(c, where, at->name, &sp);
  if (rs != SQLITE_OK) return dprl_ledger_db_error(c, rs, s->fn, "reading it", err);
  return exceeded(s, &sp, err);
}

/* A connection of the ledger's own to the file of `schema`. */
static int ledger_open(sqlite3 *db, const char *fn, const char *schema, ledger_wait *w,
                       sqlite3 **out, dprl_error *err) {
  sqlite3_vfs *vfs = NULL;
  sqlite3_file_control(db, schema, SQLITE_FCNTL_VFS_POINTER, &vfs);
  int rc = sqlite3_open_v2(sqlite3_db_filename(db, schema), out,
                           SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_PRIVATECACHE,
                           vfs ? vfs->zName : NULL);
  if (rc != SQLITE_OK) {
    if (!*out || rc == SQLITE_NOMEM) {
      sqlite3_close(*out);
      *out = NULL;
      return dprl_nomem(err);
    }
    dprl_fail(err, DPRL_EINVAL, "%s: privacy ledger: opening the database \"%s\": %s", fn,
              schema, sqlite3_errmsg(*out));
    sqlite3_close(*out);
    *out = NULL;
    return err->code;
  }
  sqlite3_busy_handler(*out, ledger_busy, w);
  if (sqlite3_create_function_v2(*out, "dprl_ledger_fits", 6,
                                 SQLITE_UTF8 | SQLITE_DETERMINISTIC | SQLITE_INNOCUOUS, NULL,
                                 dprl_sql_ledger_fits, NULL, NULL, NULL) != SQLITE_OK ||
      sqlite3_create_function_v2(*out, "dprl_ledger_total", 1,
                                 SQLITE_UTF8 | SQLITE_DETERMINISTIC | SQLITE_INNOCUOUS, NULL, NULL,
                                 dprl_sql_ledger_total_step, dprl_sql_ledger_total_final,
                                 NULL) != SQLITE_OK) {
    /* the only way they fail for a valid name and arity: no memory */
    sqlite3_close(*out);
    *out = NULL;
    return dprl_nomem(err);
  }
  sqlite3_db_config(*out, SQLITE_DBCONFIG_DEFENSIVE, 1, (int *)0);
  sqlite3_db_config(*out, SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0, (int *)0);
  /* Durable at commit, whatever the caller's connection chose. */
  sqlite3_exec(*out, "PRAGMA synchronous = FULL", NULL, NULL, NULL);
  return DPRL_OK;
}

/* The journal mode or locking mode of the schema, lower case. */
static void pragma_text(sqlite3 *db, const char *schema, const char *pragma, char *out, size_t n) {
  sqlite3_stmt *st = NULL;
  char *sql = sqlite3_mprintf("PRAGMA \"%w\".%s", schema, pragma);
  out[0] = 0;
  if (sql && sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK &&
      sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0))
    dprl_snprintf(out, n, "%s", (const char *)sqlite3_column_text(st, 0));
  sqlite3_free(sql);
  sqlite3_finalize(st);
  for (char *p = out; *p; p++) *p = (char)(*p >= 'A' && *p <= 'Z' ? *p + 32 : *p);
}

static int writing_statement(sqlite3 *db) {
  for (sqlite3_stmt *st = sqlite3_next_stmt(db, NULL); st; st = sqlite3_next_stmt(db, st))
    if (sqlite3_stmt_busy(st) && !sqlite3_stmt_readonly(st)) return 1;
  return 0;
}

/* The strongest transaction state of this connection on the file of the
** ledger, whichever of its names (the same file may be attached twice);
** the ledger is then written through that name, whose pager holds the
** lock (another name's pager would wait for it). */
static int file_txn_state(sqlite3 *db, ledger_at *at) {
  const char *file = sqlite3_db_filename(db, at->schema);
  int state = sqlite3_txn_state(db, at->schema);
  for (int i = 0; file && file[0]; i++) {
    const char *name = sqlite3_db_name(db, i);
    if (!name) break;
    const char *f = sqlite3_db_filename(db, name);
    if (f && strcmp(f, file) == 0 && sqlite3_txn_state(db, name) > state &&
        strlen(name) < sizeof at->schema) {
      state = sqlite3_txn_state(db, name);
      memcpy(at->schema, name, strlen(name) + 1);
    }
  }
  return state;
}

/* The ledger row through the caller's connection: a nested statement that
** commits when it ends.  Its commit waits for other readers through
** ledger_busy (where the connection's handler is SQLite's own, which can
** be put back), and is synchronous = FULL whatever the connection chose. */
static int nested_write(sqlite3 *db, const ledger_at *at, const dprl_spend *s, ledger_wait *w,
                        const char *journal, dprl_error *err) {
  if (strcmp(journal, "off") == 0 || strcmp(journal, "memory") == 0)
    return dprl_fail(err, DPRL_EINVAL,
                     "%s: option budget \"%s\": the database \"%s\" has journal_mode %s, and a "
                     "crash could then lose or corrupt the ledger: use WAL (PRAGMA journal_mode = "
                     "WAL) or DELETE", s->fn, s->budget, at->schema, journal);
  char sync[8] = "";
  if (!at->ephemeral) pragma_text(db, at->schema, "synchronous", sync, sizeof sync);
  char *full = sqlite3_mprintf("PRAGMA \"%w\".synchronous = FULL", at->schema);
  char *back = sqlite3_mprintf("PRAGMA \"%w\".synchronous = %s", at->schema, sync[0] ? sync : "2");
  if (!full || !back) {
    sqlite3_free(full);
    sqlite3_free(back);
    return dprl_nomem(err);
  }
  if (sync[0]) sqlite3_exec(db, full, NULL, NULL, NULL);
  if (w->timeout_ms > 0) sqlite3_busy_handler(db, ledger_busy, w);
  int rc = ledger_write(db, at->schema, at->schema, at, s, w, err);
  if (w->timeout_ms > 0) sqlite3_busy_timeout(db, w->timeout_ms);
  if (sync[0]) sqlite3_exec(db, back, NULL, NULL, NULL);
  sqlite3_free(full);
  sqlite3_free(back);
  return rc;
}

int dprl_budget_charge(sqlite3 *db, const dprl_spend *s, dprl_error *err) {
  if (!s->budget) return DPRL_OK;
  ledger_at at;
  if (dprl_ledger_locate(db, s->fn, "option budget", s->budget, &at, err)) return err->code;
  if (!s->spends)
    return dprl_fail(err, DPRL_EINVAL,
                     "%s: option budget: option %s makes this release not private, and a budget "
                     "only counts private releases: drop %s for a private release, or budget "
                     "for a test", s->fn, s->why_not ? s->why_not : "seed",
                     s->why_not ? s->why_not : "seed");
  if (!sqlite3_get_autocommit(db))
    return dprl_fail(err, DPRL_EINVAL,
                     "%s: option budget: a budgeted release cannot run inside a transaction (a "
                     "ROLLBACK would erase the ledger row of a release already seen); run it on "
                     "its own, in autocommit mode (Python's sqlite3 opens transactions itself "
                     "unless isolation_level = None or autocommit = True)", s->fn);
  if (sqlite3_db_readonly(db, at.schema) == 1)
    return dprl_fail(err, DPRL_EINVAL,
                     "%s: option budget \"%s\": the database \"%s\" that holds the ledger is "
                     "read-only", s->fn, s->budget, at.schema);
  char query_only[8] = "";
  pragma_text(db, "main", "query_only", query_only, sizeof query_only);
  if (strcmp(query_only, "1") == 0)
    return dprl_fail(err, DPRL_EINVAL,
                     "%s: option budget \"%s\": PRAGMA query_only is on, and a budgeted release "
                     "writes its ledger row", s->fn, s->budget);
  int state = file_txn_state(db, &at);
  if (state == SQLITE_TXN_WRITE)
    return dprl_fail(err, DPRL_EINVAL,
                     "%s: option budget \"%s\": this statement (or another one open on the "
                     "connection) writes to \"%s\", the database of the ledger, so the release's "
                     "ledger row could not be committed before the release is returned; nothing "
                     "was released. Release with a plain SELECT and store what it returns (in "
                     "WAL mode, CREATE TEMP TABLE r AS SELECT ... works too)", s->fn, s->budget,
                     at.schema);
  dprl_sql_cancel cancel;
  if (dprl_sql_cancel_open(&cancel, db, err)) return err->code;
  ledger_wait w = {busy_timeout(db), now_ns(), &cancel, 0, 0, 0};
  char journal[16] = "", locking[16] = "";
  if (!at.ephemeral) {
    pragma_text(db, at.schema, "journal_mode", journal, sizeof journal);
    pragma_text(db, at.schema, "locking_mode", locking, sizeof locking);
  }
  int wal = strcmp(journal, "wal") == 0;
  /* Its own connection where that one can commit while this statement
  ** runs: WAL, or a file this statement does not read. */
  int own = !at.ephemeral && strcmp(locking, "exclusive") != 0 &&
            (wal || state == SQLITE_TXN_NONE);
  int rc;
  if (own) {
    sqlite3 *c = NULL;
    rc = ledger_open(db, s->fn, at.schema, &w, &c, err);
    if (!rc) rc = ledger_write(c, "main", at.schema, &at, s, &w, err);
    sqlite3_close(c);
  } else if (writing_statement(db)) {
    rc = dprl_fail(err, DPRL_EINVAL,
                   "%s: option budget \"%s\": a statement that writes is open on this "
                   "connection, and the ledger row (written on this connection: %s) would join "
                   "its transaction and could be rolled back after the release is seen; "
                   "nothing was released. Release with a plain SELECT and store what it "
                   "returns%s", s->fn, s->budget,
                   at.ephemeral ? "the ledger's database is in memory"
                   : wal        ? "exclusive locking mode"
                                : "rollback-journal mode",
                   at.ephemeral || wal ? ""
                                       : " (in WAL mode, CREATE TEMP TABLE r AS SELECT ... "
                                         "works too: PRAGMA journal_mode = WAL)");
  } else {
    w.nested = 1;
    rc = nested_write(db, &at, s, &w, journal, err);
  }
  dprl_sql_cancel_close(&cancel);
  return rc;
}
