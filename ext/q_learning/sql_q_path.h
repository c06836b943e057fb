/*
** sql_q_path.h: dp_q_noise's path table, the one thing dprl writes.
**
**   SELECT * FROM dp_q_noise('SELECT state, action, q FROM my_q',
**     '{"n_actions": 2, "sigma": 0.5, "beta": 2, "path": "q_noise_path"}');
**   -- q_noise_path(action, state, g, q) keeps every point drawn so far and
**   --   the q it was released with (a path is the noise of one function),
**   -- q_noise_path_params(sigma, beta, lo, hi, seeded, budget) the path's
**   --   law, and the budget its release was charged to (NULL: none yet)
**
** A store is opened once per call (dprl_q_store_begin): inside a SAVEPOINT
** it checks or creates both tables, refuses triggers on them, and records
** or compares the parameters.  Then, as the path store of q_noise.h, it
** gives each action's stored points before new ones are drawn, and stores
** the new points before any value is released.  dprl_q_store_end commits, or undoes
** everything the call wrote and leaves the connection as it was found;
** after the ledger row, dprl_q_store_mark_charged records the budget, and
** dprl_q_store_close frees the store.
**
** Two layers: sql_q_path_check.c (the statements, the tables, their
** checks) below; the store (sql_q_path.c) on top of it.
*/
#ifndef DPRL_SQL_Q_PATH_H
#define DPRL_SQL_Q_PATH_H

#include "q_learning/q_noise.h"
#include "q_learning/sql_q_path_check.h"

/* Open the store of table `name` (kept, not copied): "schema.table", the
** schema main, temp or an attached database, or "table", in the schema
** where SQLite would find it, else main; "<table>_params" in the same
** schema.  Unless the schema is already read by this connection, its
** write lock is taken first (waiting as the busy handler says).  A path
** charged to another budget than p->budget (when not NULL) is refused.
** Whatever it returns, dprl_q_store_end and dprl_q_store_close must follow. */
int dprl_q_store_begin(dprl_q_store *st, sqlite3 *db, const char *name,
                       const dprl_q_path_params *p, dprl_cancel *cancel,
                       dprl_error *err);
/* The stored points of action a, checked (state in [lo, hi], g and q on
** the grid), in table order: *pts (x the state as stored; the caller
** frees it), *npts its size.  (q_noise.h: the path store's load.) */
int dprl_q_store_load(dprl_q_store *st, int64_t a, dprl_q_point **pts, size_t *npts,
                      dprl_error *err);
/* Store n new points (state as given, g, q) of action a, each state once;
** sorts pts.  A point that cannot be stored is an error, never skipped. */
int dprl_q_store_add(dprl_q_store *st, int64_t a, dprl_q_point *pts, size_t n,
                     dprl_error *err);
/* Commit (rc == DPRL_OK) or undo; returns the final code. */
int dprl_q_store_end(dprl_q_store *st, int rc, dprl_error *err);
/* After dprl_q_store_end and the ledger row: record that the path's
** release is charged to p->budget (a write of its own). */
int dprl_q_store_mark_charged(dprl_q_store *st, dprl_error *err);
void dprl_q_store_close(dprl_q_store *st);

#endif
