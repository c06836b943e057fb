/*
** sql_glue.h: what the SQLite layer shares.  Every sql_*.c file is thin
** glue: it turns sqlite3_values into core inputs, calls the core, and turns
** dprl_error into SQL errors.
*/
#ifndef DPRL_SQL_GLUE_H
#define DPRL_SQL_GLUE_H

#include <sqlite3ext.h>

#include "base/core.h"
#include "rows/steps.h"

#ifndef SQLITE_CORE
SQLITE_EXTENSION_INIT3
#endif


/* Report err as the SQL error of ctx, prefixed "fn: " unless the message
** already names fn; out of memory becomes SQLITE_NOMEM, DPRL_EINTR
** SQLITE_INTERRUPT (its message as is, "interrupted"). */
void dprl_sql_result_error(sqlite3_context *ctx, const char *fn,
                           const dprl_error *err);
/* The same for a virtual table cursor/vtab: sets *pzErr (sqlite3_malloc'd)
** and returns the SQLite error code. */
int dprl_sql_vtab_error(char **pzErr, const char *fn, const dprl_error *err);

/* A JSON result: TEXT with SQLite's JSON subtype ('J'), so it nests as an
** object in json_object()/json_group_array().  Functions that call it are
** registered with DPRL_JSON_FLAGS. */
#ifndef SQLITE_RESULT_SUBTYPE
#define SQLITE_RESULT_SUBTYPE 0x001000000 /* SQLite >= 3.45; older ones ignore it */
#endif
#define DPRL_JSON_SUBTYPE 74
#define DPRL_JSON_FLAGS (SQLITE_UTF8 | SQLITE_RESULT_SUBTYPE)
void dprl_sql_result_json(sqlite3_context *ctx, const char *text, int len);

/* The last error of db as a dprl error, the one mapping of SQLite's codes:
** SQLITE_NOMEM -> DPRL_ENOMEM, SQLITE_INTERRUPT -> DPRL_EINTR
** ("interrupted"), SQLITE_BUSY -> DPRL_EBUSY, anything else DPRL_EINVAL;
** the message is the printf-style prefix, ": ", and SQLite's message. */
int dprl_sql_db_error(sqlite3 *db, dprl_error *err, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* The same for the code rc that the failing call returned (the
** connection's code may be older: a failed allocation of dprl's own leaves
** it at SQLITE_OK); rc = SQLITE_OK reads the connection's. */
int dprl_sql_rc_error(sqlite3 *db, int rc, dprl_error *err, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

/* Describe a value for messages: NULL, 2.5, 'text', a blob. */
void dprl_sql_describe(sqlite3_value *v, char *out, size_t n);

/* Typed reads with the message "fn: <what> must be ..., got ..." */
int dprl_sql_key(sqlite3_value *v, const char *what, dprl_key *out,
                 dprl_error *err);
int dprl_sql_int(sqlite3_value *v, const char *what, int64_t *out,
                 dprl_error *err);
int dprl_sql_real(sqlite3_value *v, const char *what, double *out,
                  dprl_error *err);

/* One step row (episode, t, state, reward) as dp_lsw and dp_first_visit
** read it; errors name the value and the row. */
int dprl_sql_read_step(sqlite3_value **argv, int64_t n_states, dprl_key *episode,
                       int64_t *t, uint32_t *state, double *reward, dprl_error *err);

/* Add " (row with episode E, t T)" to an EINVAL message, argv[0] and
** argv[1] being the row's episode and t, so a bad value can be found. */
void dprl_sql_say_where(sqlite3_value **argv, dprl_error *err);

/* An aggregate's options argument, pinned on its first row: every later
** row must pass the same text ("options must be the same for every row"). */
typedef struct dprl_sql_pinned {
  char *text;
  int len;
} dprl_sql_pinned;
int dprl_sql_pin_options(dprl_sql_pinned *p, sqlite3_value *v, dprl_error *err);
int dprl_sql_same_options(const dprl_sql_pinned *p, sqlite3_value *v, dprl_error *err);
void dprl_sql_unpin(dprl_sql_pinned *p);
/* 1 when dprl_sql_same_options compares v as the bytes it came in (a
** TEXT value whose bytes are its UTF-8 text), 0 when each row would be
** converted first (dprl_debug(options)).  A function of v alone. */
int dprl_sql_options_as_bytes(sqlite3_value *v);

/* The cancellation hook of core.h for a call on db: every millisecond of
** work or so (counted in the core's units, not timed) it steps a probe
** statement of about 1,500 instructions on the same connection, which fails with SQLITE_INTERRUPT once sqlite3_interrupt()
** has been called and runs the progress handler (sqlite3_is_interrupted()
** needs SQLite 3.41; Debian 12 ships 3.40).  Open once per call, pass
** &c->base to the core, close when done.  A DPRL_EINTR error then becomes
** SQLITE_INTERRUPT with the message "interrupted" (dprl_sql_result_error,
** dprl_sql_vtab_error). */
typedef struct dprl_sql_cancel {
  dprl_cancel base;
  sqlite3_stmt *probe;
  unsigned checks; /* the core's checks since the probe was opened */
} dprl_sql_cancel;
int dprl_sql_cancel_open(dprl_sql_cancel *c, sqlite3 *db, dprl_error *err);
void dprl_sql_cancel_close(dprl_sql_cancel *c);

/* DPRL_VERSION of ext/dprl.h (defined in dprl.c), for results that say
** which dprl made them (made_with of dp_fv_stats and dp_first_visit). */
extern const char dprl_version[];

#endif
