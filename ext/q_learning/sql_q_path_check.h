/*
** sql_q_path_check.h: the lower layer of dp_q_noise's path table (the
** store, sql_q_path.h, is built on it; nothing here calls the store): the
** store's state, SQL statement helpers that word SQLite's errors, and the
** tables themselves: created (only here), their schemas and triggers
** checked, the parameters row recorded or compared.
*/
#ifndef DPRL_SQL_Q_PATH_CHECK_H
#define DPRL_SQL_Q_PATH_CHECK_H

#include "sqlite/sql_glue.h"

/* The law of the path, the public grid of its values, and the budget the
** call names (NULL: none). */
typedef struct dprl_q_path_params {
  double sigma, beta, lo, hi, grid;
  int seeded;
  const char *budget;
} dprl_q_path_params;

typedef struct dprl_q_store {
  sqlite3 *db;
  const char *name;          /* the path table, as the user gave it */
  char *schema;              /* the schema of both tables (sqlite3_malloc'd, as the */
  char *table, *params;      /* ... names below): "<table>_params" */
  char *params_shown;        /* "<name>_params", for messages */
  const dprl_q_path_params *p;
  dprl_cancel *cancel;       /* polled while sorting and storing */
  sqlite3_stmt *load, *ins;  /* prepared once per call */
  int writable;              /* inside our SAVEPOINT */
  int outermost;             /* the SAVEPOINT opened the transaction */
  int cannot_wait;           /* the schema was read before: no waiting for its lock */
  int charged;               /* the path's release is charged to p->budget already */
  char why[160];             /* why not writable (SQLite's message) */
} dprl_q_store;

/* Refused when the SAVEPOINT could not be opened (the calling statement
** writes itself). */
int dprl_q_path_may_write(dprl_q_store *st, dprl_error *err);
/* SQLite's error on st->db as err: 'path table "gp": <what>: <message>'. */
int dprl_q_path_db_fail(dprl_q_store *st, const char *what, dprl_error *err);
/* The same for a write, saying what works when the lock cannot be waited for. */
int dprl_q_path_write_fail(dprl_q_store *st, const char *what, dprl_error *err);
/* Run a write, or prepare a statement, from sqlite3_mprintf-style SQL. */
int dprl_q_path_write_fmt(dprl_q_store *st, const char *what, dprl_error *err,
                          const char *fmt, ...);
int dprl_q_path_prepare_fmt(dprl_q_store *st, sqlite3_stmt **s, const char *what,
                            dprl_error *err, const char *fmt, ...);

/* CREATE TABLE [IF NOT EXISTS] of the path table st->schema.st->table
** (`what` says why, in messages): the one place its schema is written. */
int dprl_q_path_create(dprl_q_store *st, int if_not_exists, const char *what,
                       dprl_error *err);
/* Inside the SAVEPOINT: check, or create, both tables; refuse triggers on
** them; record or compare the parameters (sets st->charged). */
int dprl_q_path_open(dprl_q_store *st, dprl_error *err);

#endif
