/* sql_glue.c: errors and typed value reads for the SQL layer (sql_glue.h). */
#include "sqlite/sql_glue.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static char *with_prefix(const char *fn, const dprl_error *err) {
  size_t n = strlen(fn);
  if (err->code == DPRL_EINTR) return sqlite3_mprintf("%s", err->msg);
  if (strncmp(err->msg, fn, n) == 0 && err->msg[n] == ':')
    return sqlite3_mprintf("%s", err->msg);
  return sqlite3_mprintf("%s: %s", fn, err->msg);
}

void dprl_sql_result_error(sqlite3_context *ctx, const char *fn,
                           const dprl_error *err) {
  if (err->code == DPRL_ENOMEM) {
    sqlite3_result_error_nomem(ctx);
    return;
  }
  char *msg = with_prefix(fn, err);
  if (!msg) {
    sqlite3_result_error_nomem(ctx);
    return;
  }
  sqlite3_result_error(ctx, msg, -1);
  if (err->code == DPRL_EINTR) sqlite3_result_error_code(ctx, SQLITE_INTERRUPT);
  if (err->code == DPRL_EBUSY) sqlite3_result_error_code(ctx, SQLITE_BUSY);
  sqlite3_free(msg);
}

int dprl_sql_vtab_error(char **pzErr, const char *fn, const dprl_error *err) {
  if (err->code == DPRL_ENOMEM) return SQLITE_NOMEM;
  sqlite3_free(*pzErr);
  *pzErr = with_prefix(fn, err);
  if (!*pzErr) return SQLITE_NOMEM;
  return err->code == DPRL_EINTR   ? SQLITE_INTERRUPT
         : err->code == DPRL_EBUSY ? SQLITE_BUSY
                                   : SQLITE_ERROR;
}

void dprl_sql_describe(sqlite3_value *v, char *out, size_t n) {
  switch (sqlite3_value_type(v)) {
    case SQLITE_NULL: dprl_snprintf(out, n, "NULL"); break;
    case SQLITE_INTEGER: dprl_snprintf(out, n, "%lld", (long long)sqlite3_value_int64(v)); break;
    case SQLITE_FLOAT: dprl_snprintf(out, n, "%.17g", sqlite3_value_double(v)); break;
    case SQLITE_TEXT: dprl_snprintf(out, n, "text '%.40s'", (const char *)sqlite3_value_text(v)); break;
    default: { /* a blob: its length and up to 16 bytes in SQL's x'..' form */
      const unsigned char *b = sqlite3_value_blob(v);
      int len = sqlite3_value_bytes(v), k = len < 16 ? len : 16;
      char hex[33] = "";
      for (int i = 0; b && i < k; i++) dprl_snprintf(hex + 2 * i, 3, "%02x", b[i]);
      dprl_snprintf(out, n, "a blob of %d byte%s x'%s'%s", len, len == 1 ? "" : "s", hex,
               len > k ? "..." : "");
      break;
    }
  }
}

static int bad_value(sqlite3_value *v, const char *what, const char *want,
                     dprl_error *err) {
  char got[80];
  dprl_sql_describe(v, got, sizeof got);
  /* A number stored as text (a CSV import, say) gets a hint, not a puzzle. */
  if (sqlite3_value_type(v) == SQLITE_TEXT && sqlite3_value_numeric_type(v) != SQLITE_TEXT)
    return dprl_fail(err, DPRL_EINVAL,
                     "%s must be %s, got %s (a number stored as text: CAST(%s AS %s) in the "
                     "query, or import the column with a numeric type)",
                     what, want, got, what, strstr(want, "integer") ? "INTEGER" : "REAL");
  return dprl_fail(err, DPRL_EINVAL, "%s must be %s, got %s", what, want, got);
}

int dprl_sql_key(sqlite3_value *v, const char *what, dprl_key *out, dprl_error *err) {
  int type = sqlite3_value_type(v);
  if (type == SQLITE_INTEGER) {
    *out = (dprl_key){0, sqlite3_value_int64(v), NULL, 0};
    return DPRL_OK;
  }
  if (type == SQLITE_TEXT) {
    const char *s = (const char *)sqlite3_value_text(v);
    if (!s) return dprl_nomem(err);
    *out = (dprl_key){1, 0, s, (size_t)sqlite3_value_bytes(v)};
    return DPRL_OK;
  }
  return bad_value(v, what, "an integer or text", err);
}

int dprl_sql_int(sqlite3_value *v, const char *what, int64_t *out, dprl_error *err) {
  int type = sqlite3_value_type(v);
  if (type == SQLITE_INTEGER) {
    *out = sqlite3_value_int64(v);
    return DPRL_OK;
  }
  if (type == SQLITE_FLOAT) { /* 3.0 from arithmetic is still an integer */
    double x = sqlite3_value_double(v);
    if (x == floor(x) && fabs(x) < 9007199254740992.0) {
      *out = (int64_t)x;
      return DPRL_OK;
    }
  }
  return bad_value(v, what, "an integer", err);
}

int dprl_sql_real(sqlite3_value *v, const char *what, double *out, dprl_error *err) {
  int type = sqlite3_value_type(v);
  if (type == SQLITE_INTEGER || type == SQLITE_FLOAT) {
    double x = sqlite3_value_double(v);
    if (isfinite(x)) {
      *out = x;
      return DPRL_OK;
    }
    return bad_value(v, what, "a finite number", err);
  }
  return bad_value(v, what, "a number", err);
}

void dprl_sql_say_where(sqlite3_value **argv, dprl_error *err) {
  if (err->code != DPRL_EINVAL || sqlite3_value_type(argv[0]) == SQLITE_NULL) return;
  char e[48], t[48], where[120];
  dprl_sql_describe(argv[0], e, sizeof e);
  dprl_sql_describe(argv[1], t, sizeof t);
  dprl_snprintf(where, sizeof where, " (row with episode %s, t %s)", e, t);
  if (strlen(err->msg) + strlen(where) < sizeof err->msg) strcat(err->msg, where);
}

int dprl_sql_read_step(sqlite3_value **argv, int64_t n_states, dprl_key *episode,
                       int64_t *t, uint32_t *state, double *reward, dprl_error *err) {
  int64_t s = 0;
  int rc;
  /* The usual row (integer episode, t and state, a numeric reward) in one
  ** go; anything else, or a value out of range, takes the checks below,
  ** which name what is wrong. */
  if (sqlite3_value_type(argv[0]) == SQLITE_INTEGER &&
      sqlite3_value_type(argv[1]) == SQLITE_INTEGER &&
      sqlite3_value_type(argv[2]) == SQLITE_INTEGER) {
    int rt = sqlite3_value_type(argv[3]);
    s = sqlite3_value_int64(argv[2]);
    double r = rt == SQLITE_FLOAT || rt == SQLITE_INTEGER ? sqlite3_value_double(argv[3]) : NAN;
    if (s >= 0 && s < n_states && isfinite(r)) {
      *episode = (dprl_key){0, sqlite3_value_int64(argv[0]), NULL, 0};
      *t = sqlite3_value_int64(argv[1]);
      *state = (uint32_t)s;
      *reward = r;
      return DPRL_OK;
    }
  }
  if ((rc = dprl_sql_key(argv[0], "episode", episode, err)) ||
      (rc = dprl_sql_int(argv[1], "t", t, err)) ||
      (rc = dprl_sql_int(argv[2], "state", &s, err)) ||
      (rc = dprl_sql_real(argv[3], "reward", reward, err))) {
    dprl_sql_say_where(argv, err);
    return rc;
  }
  if (s < 0 || s >= n_states) {
    rc = dprl_fail(err, DPRL_EINVAL, "state must be in 0..n_states-1 = 0..%lld, got %lld",
                   (long long)n_states - 1, (long long)s);
    dprl_sql_say_where(argv, err);
    return rc;
  }
  *state = (uint32_t)s;
  return DPRL_OK;
}

int dprl_sql_pin_options(dprl_sql_pinned *p, sqlite3_value *v, dprl_error *err) {
  const char *text = (const char *)sqlite3_value_text(v);
  int len = sqlite3_value_bytes(v);
  if (!text) text = ""; /* NULL options: refused by the parser before this */
  p->text = sqlite3_malloc(len + 1);
  if (!p->text) return dprl_nomem(err);
  memcpy(p->text, text, (size_t)len + 1);
  p->len = len;
  return DPRL_OK;
}

int dprl_sql_same_options(const dprl_sql_pinned *p, sqlite3_value *v, dprl_error *err) {
  /* The bytes as they are first: sqlite3_value_text would copy a bound
  ** parameter's text on every row to add its terminator (SQLite keeps a
  ** bound string without one).  They are the UTF-8 text in a UTF-8
  ** database; any other encoding fails this comparison and takes the
  ** converting one below. */
  if (sqlite3_value_type(v) == SQLITE_TEXT) {
    const void *bytes = sqlite3_value_blob(v);
    if (bytes && sqlite3_value_bytes(v) == p->len && memcmp(bytes, p->text, (size_t)p->len) == 0)
      return DPRL_OK;
  }
  const char *text = (const char *)sqlite3_value_text(v);
  if (text && sqlite3_value_bytes(v) == p->len && memcmp(text, p->text, (size_t)p->len) == 0)
    return DPRL_OK;
  return dprl_fail(err, DPRL_EINVAL, "options must be the same for every row");
}

int dprl_sql_options_as_bytes(sqlite3_value *v) {
  if (sqlite3_value_type(v) != SQLITE_TEXT) return 0;
  const void *bytes = sqlite3_value_blob(v);
  int n = sqlite3_value_bytes(v);
  char *copy = bytes && n > 0 ? sqlite3_malloc(n) : NULL;
  if (!copy) return 0;
  memcpy(copy, bytes, (size_t)n); /* sqlite3_value_text may convert v in place */
  const char *text = (const char *)sqlite3_value_text(v);
  int same = text && sqlite3_value_bytes(v) == n && memcmp(text, copy, (size_t)n) == 0;
  sqlite3_free(copy);
  return same;
}

void dprl_sql_unpin(dprl_sql_pinned *p) {
  sqlite3_free(p->text);
  p->text = NULL;
}

/* ---- cancellation -------------------------------------------------------- */

/* Stepping the probe is how an extension learns of sqlite3_interrupt()
** before SQLite 3.41: a statement started on an interrupted connection
** fails at once, and a progress handler that returns nonzero does the
** same.  The probe runs once every PROBE_EVERY checks of the core (a
** check per DPRL_CANCEL_EVERY units of work, about 65 microseconds: a probe
** about every millisecond of work, counted, not timed) and runs PROBE_OPS
** virtual machine instructions, so that a progress handler set every N
** instructions is called about every N / PROBE_OPS milliseconds of dprl's
** work (N = 10^4: 7 ms), at a cost of about 12 microseconds a probe. */
#define PROBE_EVERY 16
#define PROBE_ROWS 300 /* a VALUES row is 5 instructions: PROBE_OPS = 1,510 */

static int probe_check(void *ctx) {
  dprl_sql_cancel *c = ctx;
  if (++c->checks % PROBE_EVERY) return 0;
  int rc = sqlite3_step(c->probe);
  sqlite3_reset(c->probe);
  return rc == SQLITE_INTERRUPT;
}

/* SELECT count(*) FROM (VALUES (1),(1),...): PROBE_ROWS rows. */
static char *probe_sql(void) {
  static const char head[] = "SELECT count(*) FROM (VALUES (1)";
  size_t n = sizeof head - 1 + 4 * (PROBE_ROWS - 1) + 2;
  char *sql = sqlite3_malloc64(n + 1);
  if (!sql) return NULL;
  memcpy(sql, head, sizeof head - 1);
  char *p = sql + sizeof head - 1;
  for (int i = 1; i < PROBE_ROWS; i++, p += 4) memcpy(p, ",(1)", 4);
  memcpy(p, ")", 2);
  return sql;
}

static int rc_error(sqlite3 *db, int rc, dprl_error *err, const char *fmt, va_list ap) {
  /* The code the failing call returned wins: the connection's may be older
  ** (a failed allocation of our own leaves it at SQLITE_OK, "not an error"). */
  int code = rc != SQLITE_OK ? rc : sqlite3_errcode(db);
  if ((code & 0xFF) == SQLITE_NOMEM || code == SQLITE_OK) return dprl_nomem(err);
  if ((code & 0xFF) == SQLITE_INTERRUPT) return dprl_fail(err, DPRL_EINTR, "interrupted");
  char prefix[256];
  dprl_vsnprintf(prefix, sizeof prefix, fmt, ap);
  const char *why = sqlite3_errcode(db) == code ? sqlite3_errmsg(db) : sqlite3_errstr(code);
  return dprl_fail(err, (code & 0xFF) == SQLITE_BUSY ? DPRL_EBUSY : DPRL_EINVAL, "%s: %s", prefix,
                   why);
}

int dprl_sql_db_error(sqlite3 *db, dprl_error *err, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int r = rc_error(db, SQLITE_OK, err, fmt, ap);
  va_end(ap);
  return r;
}

int dprl_sql_rc_error(sqlite3 *db, int rc, dprl_error *err, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int r = rc_error(db, rc, err, fmt, ap);
  va_end(ap);
  return r;
}

int dprl_sql_cancel_open(dprl_sql_cancel *c, sqlite3 *db, dprl_error *err) {
  memset(c, 0, sizeof *c);
  char *sql = probe_sql();
  int rc = sql ? sqlite3_prepare_v2(db, sql, -1, &c->probe, NULL) : SQLITE_NOMEM;
  sqlite3_free(sql);
  if (rc != SQLITE_OK) return dprl_sql_rc_error(db, rc, err, "preparing the interrupt check");
  c->base.check = probe_check;
  c->base.ctx = c;
  return DPRL_OK;
}

void dprl_sql_cancel_close(dprl_sql_cancel *c) {
  sqlite3_finalize(c->probe);
  c->probe = NULL;
}

void dprl_sql_result_json(sqlite3_context *ctx, const char *text, int len) {
  sqlite3_result_text(ctx, text, len, SQLITE_TRANSIENT);
  sqlite3_result_subtype(ctx, DPRL_JSON_SUBTYPE);
}
