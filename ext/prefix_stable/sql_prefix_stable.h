/*
** sql_prefix_stable.h: what the two halves of dp_prefix_stable's glue
** share: the call's options and state; sql_prefix_read.c reads the drawn
** trajectories (ALGORITHMS.md section 7.1), sql_prefix_stable.c does the
** rest (options, policies, the release, the rows).
*/
#ifndef DPRL_SQL_PREFIX_STABLE_H
#define DPRL_SQL_PREFIX_STABLE_H

#include "base/options.h"
#include "dp/noise.h"
#include "prefix_stable/examined.h"
#include "prefix_stable/prefix_stable.h"
#include "sqlite/sql_tvf.h"

#define FN "dp_prefix_stable"
enum { PS_COLLECT, PS_PICK, PS_SAMPLE }; /* what dprl_prefix_key does */
#define PS_KEY_FN "dprl_prefix_key"
#define PS_KEY_PTR "dprl_prefix_key_state"

typedef struct ps_opts {
  dprl_prefix_params pp; /* from the options alone */
  double epsilon, delta; /* (eps1, delta1): what a release spends */
  int has_seed;
  uint64_t seed;
  int read; /* dprl_prefix_read */
  char *budget; /* a privacy ledger to charge (sql_budget.c), or NULL */
  const char *text;
  size_t len;
} ps_opts;

typedef struct ps_state {
  dprl_episode_index experts, states, actions; /* ids -> dense indices */
  dprl_policy_table pt;
  dprl_episode_index ids;    /* every episode key of trajectories_sql */
  dprl_episode_index chosen; /* the K distinct drawn keys, in order of first draw */
  int64_t *run;              /* run[c]: run c's trajectory in chosen (-1: none) */
  char *body;                /* trajectories_sql without what follows it, or NULL */
  dprl_step_buffer buf;      /* trajectories: action index kept in .reward */
  int64_t *offsets, *st, *ac; /* the K drawn trajectories, in order of first draw */
  int seeks;   /* pass 1 found the keys by index seeks */
  int picking; /* dprl_prefix_key: PS_COLLECT (pass 1), PS_PICK (pass 2), PS_SAMPLE (one pass) */
  /* the last integer key seen by dprl_prefix_key, and its id (rows of one
  ** episode usually come together) */
  int last_ok;
  int64_t last_key;
  uint32_t last_id;
  /* one pass: the sample of ids (ps->ids) and the deferred errors */
  dprl_reservoir once;
  dprl_sql_cancel cancel;
  int cancel_open;
  dprl_rng rng;
  dprl_error err;
} ps_state;

int ps_read_ids(sqlite3 *db, sqlite3_value *sql, ps_state *ps, char **pzErr);
int ps_read_trajectories(sqlite3 *db, sqlite3_value *sql, ps_state *ps, int64_t K,
                                char **pzErr);
int ps_read_once(sqlite3 *db, sqlite3_value *sql, ps_state *ps, int64_t T, int64_t *K,
                        char **pzErr);
int ps_has_seeks(sqlite3 *db, const ps_state *ps, int *oom);
int ps_choose(ps_state *ps, int64_t T, int64_t *K);
void ps_key_fn(sqlite3_context *ctx, int argc, sqlite3_value **argv);

/* Registered by the table in dprl.c. */
extern const dprl_tvf_spec dprl_prefix_stable_tvf;
void dprl_sql_prefix_calibrate(sqlite3_context *ctx, int argc, sqlite3_value **argv);
/* sql_prefix_read.c: ids as keys, and a trajectory's id looked up. */
int ps_int_key(sqlite3_value *v, const char *what, dprl_key *k, dprl_error *err);
int ps_lookup(dprl_episode_index *x, sqlite3_value *v, const char *what, uint32_t *out,
              dprl_error *err);

#endif
