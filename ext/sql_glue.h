/*
** sql_glue.h: what the SQLite layer shares.  Every sql_*.c file is thin
** glue: it turns sqlite3_values into core inputs, calls the core, and turns
** dprl_error into SQL errors.
*/
#ifndef DPRL_SQL_GLUE_H
#define DPRL_SQL_GLUE_H

#include <sqlite3ext.h>

#include "core.h"
#include "steps.h"

#ifndef SQLITE_CORE
SQLITE_EXTENSION_INIT3
#endif

#define DPRL_VERSION "0.2.0"

/* Report err as the SQL error of ctx, prefixed "fn: " unless the message
** already names fn; out of memory becomes SQLITE_NOMEM. */
void dprl_sql_result_error(sqlite3_context *ctx, const char *fn,
                           const dprl_error *err);
/* The same for a virtual table cursor/vtab: sets *pzErr (sqlite3_malloc'd)
** and returns the SQLite error code. */
int dprl_sql_vtab_error(char **pzErr, const char *fn, const dprl_error *err);

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

/* An aggregate's options argument, pinned on its first row: every later
** row must pass the same text ("options must be the same for every row"). */
typedef struct dprl_sql_pinned {
  char *text;
  int len;
} dprl_sql_pinned;
int dprl_sql_pin_options(dprl_sql_pinned *p, sqlite3_value *v, dprl_error *err);
int dprl_sql_same_options(const dprl_sql_pinned *p, sqlite3_value *v, dprl_error *err);
void dprl_sql_unpin(dprl_sql_pinned *p);

/* Registration of each feature (one per sql_*.c). */
int dprl_register_policy_eval(sqlite3 *db);
int dprl_register_first_visit(sqlite3 *db);
int dprl_register_prefix_stable(sqlite3 *db); /* sql_prefix_stable.c */
int dprl_register_q(sqlite3 *db);             /* sql_q.c */

#endif
