/*
** sql_prefix_stable.c: dp_prefix_stable, expert-level private release of
** stable trajectory prefixes (Sharma et al. 2024, Algorithms 1-2;
** ALGORITHMS.md §7).
**
**   SELECT * FROM dp_prefix_stable(
**     'SELECT episode, t, state, action FROM steps',
**     'SELECT expert, state, action, prob FROM policies',
**     '{"epsilon": 7.5, "delta": 3e-4, "p_min": 0.02, "T": 100}');
**   -- episode | t | state | action | next_state   (released transitions)
**
** Glue only: the two queries are read into dense tables (experts, states
** and actions interned to 0..n-1), the release runs in prefix_stable.c,
** and the released prefixes come back with the caller's own ids.
*/
#include <string.h>

#include "noise.h"
#include "options.h"
#include "prefix_stable.h"
#include "sql_tvf.h"

#define FN "dp_prefix_stable"

static const char *const ps_options[] = {"epsilon", "delta", "p_min", "T", "L", "seed", NULL};
static const char *const ps_args[] = {"trajectories_sql", "policies_sql", "options"};

typedef struct ps_opts {
  double epsilon, delta, p_min;
  int64_t T, L; /* 0 = default */
  int has_seed;
  uint64_t seed;
} ps_opts;

typedef struct ps_state {
  dprl_episode_index experts, states, actions; /* ids -> dense indices */
  dprl_policy_table pt;
  dprl_step_buffer buf; /* trajectories: action index kept in .reward */
  int64_t *offsets, *st, *ac, *t;
  dprl_error err;
} ps_state;

static int ps_parse(sqlite3_value *v, ps_opts *o, dprl_error *err) {
  dprl_options op;
  int rc = dprl_options_open(&op, FN, (const char *)sqlite3_value_text(v),
                             (size_t)sqlite3_value_bytes(v), ps_options, err);
  if (!rc) rc = dprl_opt_number(&op, "epsilon", 1, 0, DPRL_POSITIVE, &o->epsilon);
  if (!rc) rc = dprl_opt_number(&op, "delta", 1, 0, DPRL_OPEN(0, 1), &o->delta);
  if (!rc) rc = dprl_opt_number(&op, "p_min", 1, 0, DPRL_OPEN(0, 1), &o->p_min);
  if (!rc) rc = dprl_opt_int(&op, "T", 0, 0, DPRL_AT_LEAST(1), &o->T);
  if (!rc) rc = dprl_opt_int(&op, "L", 0, 0, DPRL_AT_LEAST(1), &o->L);
  if (!rc) rc = dprl_opt_seed(&op, &o->has_seed, &o->seed);
  dprl_options_close(&op);
  return rc;
}

/* An integer id (state or action) as a key. */
static int int_key(sqlite3_value *v, const char *what, dprl_key *k, dprl_error *err) {
  int64_t x;
  int rc = dprl_sql_int(v, what, &x, err);
  *k = (dprl_key){0, x, NULL, 0};
  return rc;
}

typedef struct policy_row {
  uint32_t e, s, a;
  double p;
} policy_row;

/* policies_sql -> dense m x S x A table.  Two passes over the rows kept in
** memory: the sizes are known only once every id has been seen. */
static int ps_read_policies(sqlite3 *db, sqlite3_value *sql, ps_state *ps, char **pzErr) {
  dprl_query q;
  policy_row *rows = NULL;
  size_t n = 0, cap = 0;
  int rc = dprl_query_open(&q, db, "policies_sql", sql, 4, FN, pzErr);
  if (rc) return rc;
  while ((rc = dprl_query_step(&q, FN, pzErr)) == SQLITE_ROW) {
    dprl_key ek, sk, ak;
    policy_row r;
    if (n == cap) {
      cap = cap ? 2 * cap : 1024;
      policy_row *nr = dprl_realloc(rows, cap * sizeof *nr);
      if (!nr) {
        rc = SQLITE_NOMEM;
        break;
      }
      rows = nr;
    }
    if (dprl_sql_key(sqlite3_column_value(q.stmt, 0), "policies_sql: expert", &ek, &ps->err) ||
        int_key(sqlite3_column_value(q.stmt, 1), "policies_sql: state", &sk, &ps->err) ||
        int_key(sqlite3_column_value(q.stmt, 2), "policies_sql: action", &ak, &ps->err) ||
        dprl_sql_real(sqlite3_column_value(q.stmt, 3), "policies_sql: prob", &r.p, &ps->err) ||
        dprl_key_intern(&ps->experts, &ek, &r.e, &ps->err) ||
        dprl_key_intern(&ps->states, &sk, &r.s, &ps->err) ||
        dprl_key_intern(&ps->actions, &ak, &r.a, &ps->err)) {
      rc = dprl_sql_vtab_error(pzErr, FN, &ps->err);
      break;
    }
    rows[n++] = r;
  }
  dprl_query_close(&q);
  if (rc == SQLITE_DONE) {
    rc = SQLITE_OK;
    if (n == 0) {
      dprl_fail(&ps->err, DPRL_EINVAL, "policies_sql returned no rows");
      rc = dprl_sql_vtab_error(pzErr, FN, &ps->err);
    } else if (dprl_policy_init(&ps->pt, (int64_t)ps->experts.n, (int64_t)ps->states.n,
                                (int64_t)ps->actions.n, &ps->err)) {
      rc = dprl_sql_vtab_error(pzErr, FN, &ps->err);
    }
    for (size_t i = 0; rc == SQLITE_OK && i < n; i++)
      if (dprl_policy_set(&ps->pt, rows[i].e, rows[i].s, rows[i].a, rows[i].p, &ps->err))
        rc = dprl_sql_vtab_error(pzErr, FN, &ps->err);
  }
  dprl_free(rows);
  return rc;
}

/* A trajectory's state or action must be one the policies describe. */
static int ps_lookup(dprl_episode_index *x, sqlite3_value *v, const char *what,
                     uint32_t *out, dprl_error *err) {
  dprl_key k;
  int rc = int_key(v, what, &k, err);
  if (rc) return rc;
  if (!dprl_key_find(x, &k, out))
    return dprl_fail(err, DPRL_EINVAL,
                     "trajectories_sql: %s %lld is not in the policy table (policies_sql)",
                     what, (long long)k.ival);
  return DPRL_OK;
}

static int ps_read_trajectories(sqlite3 *db, sqlite3_value *sql, ps_state *ps, char **pzErr) {
  dprl_query q;
  int rc = dprl_query_open(&q, db, "trajectories_sql", sql, 4, FN, pzErr);
  if (rc) return rc;
  while ((rc = dprl_query_step(&q, FN, pzErr)) == SQLITE_ROW) {
    dprl_key ek;
    int64_t t;
    uint32_t s, a;
    if (dprl_sql_key(sqlite3_column_value(q.stmt, 0), "trajectories_sql: episode", &ek, &ps->err) ||
        dprl_sql_int(sqlite3_column_value(q.stmt, 1), "trajectories_sql: t", &t, &ps->err) ||
        ps_lookup(&ps->states, sqlite3_column_value(q.stmt, 2), "state", &s, &ps->err) ||
        ps_lookup(&ps->actions, sqlite3_column_value(q.stmt, 3), "action", &a, &ps->err) ||
        dprl_step_buffer_push(&ps->buf, &ek, t, s, (double)a, &ps->err)) {
      rc = dprl_sql_vtab_error(pzErr, FN, &ps->err);
      break;
    }
  }
  dprl_query_close(&q);
  return rc == SQLITE_DONE ? SQLITE_OK : rc;
}

/* Episodes in key order, flattened into the core's arrays. */
static int ps_flatten(ps_state *ps, char **pzErr) {
  size_t E = dprl_step_buffer_episodes(&ps->buf), n = ps->buf.n;
  ps->offsets = dprl_malloc((E + 1) * sizeof *ps->offsets);
  ps->st = dprl_malloc((n ? n : 1) * sizeof *ps->st);
  ps->ac = dprl_malloc((n ? n : 1) * sizeof *ps->ac);
  ps->t = dprl_malloc((n ? n : 1) * sizeof *ps->t);
  if (!ps->offsets || !ps->st || !ps->ac || !ps->t) return SQLITE_NOMEM;
  size_t at = 0;
  ps->offsets[0] = 0;
  for (size_t e = 0; e < E; e++) {
    const dprl_step *steps;
    size_t len;
    if (dprl_step_buffer_episode(&ps->buf, e, &steps, &len, &ps->err))
      return dprl_sql_vtab_error(pzErr, FN, &ps->err);
    for (size_t j = 0; j < len; j++, at++) {
      ps->st[at] = steps[j].state;
      ps->ac[at] = (int64_t)steps[j].reward; /* the action index */
      ps->t[at] = steps[j].t;
    }
    ps->offsets[e + 1] = (int64_t)at;
    dprl_step_buffer_drop_before(&ps->buf, ps->buf.start[e + 1]);
  }
  return SQLITE_OK;
}

static void put_key(dprl_rows *out, int col, const dprl_key *k) {
  if (k->is_text) dprl_rows_text(out, col, k->text, k->len);
  else dprl_rows_int(out, col, k->ival);
}

/* One output row per released transition (s_j, a_j, s_{j+1}), examined
** trajectories in key order. */
static int ps_emit(ps_state *ps, const dprl_prefix_release *rel, dprl_rows *out) {
  size_t E = dprl_step_buffer_episodes(&ps->buf);
  int64_t *k_of = dprl_calloc(E ? E : 1, sizeof *k_of);
  if (!k_of) return SQLITE_NOMEM;
  for (int64_t c = 0; c < rel->n_examined; c++) k_of[rel->traj[c]] = rel->k[c];
  for (size_t e = 0; e < E; e++) {
    dprl_key ek, sk, ak, nk;
    dprl_step_buffer_episode_key(&ps->buf, e, &ek);
    int64_t lo = ps->offsets[e], hi = ps->offsets[e + 1];
    for (int64_t j = lo; j < lo + k_of[e]; j++) {
      if (dprl_rows_add(out)) break;
      put_key(out, 0, &ek);
      dprl_rows_int(out, 1, ps->t[j]);
      dprl_key_get(&ps->states, (uint32_t)ps->st[j], &sk);
      dprl_key_get(&ps->actions, (uint32_t)ps->ac[j], &ak);
      put_key(out, 2, &sk);
      put_key(out, 3, &ak);
      if (j + 1 < hi) {
        dprl_key_get(&ps->states, (uint32_t)ps->st[j + 1], &nk);
        put_key(out, 4, &nk);
      }
    }
  }
  dprl_free(k_of);
  return out->oom ? SQLITE_NOMEM : SQLITE_OK;
}

static int ps_release(ps_state *ps, const ps_opts *o, dprl_rows *out, char **pzErr) {
  size_t E = dprl_step_buffer_episodes(&ps->buf);
  dprl_trajectories tr = {(int64_t)E, ps->offsets, ps->st, ps->ac};
  int64_t T = o->T ? o->T : (int64_t)E, L = o->L ? o->L : dprl_trajectories_longest(&tr);
  dprl_prefix_params pp;
  dprl_prefix_release rel = {0};
  dprl_rng rng;
  if (E == 0) return SQLITE_OK; /* nothing to examine, nothing to release */
  if (T > (int64_t)E) {
    dprl_fail(&ps->err, DPRL_EINVAL,
              "option T must be at most the number of trajectories (%zu), got %lld", E,
              (long long)T);
    return dprl_sql_vtab_error(pzErr, FN, &ps->err);
  }
  if (dprl_prefix_params_derive(o->epsilon, o->delta, o->p_min, ps->pt.n_actions, T, L, &pp,
                                &ps->err))
    return dprl_sql_vtab_error(pzErr, FN, &ps->err);
  if (o->has_seed) dprl_rng_init_seeded(&rng, o->seed, 3);
  else if (dprl_rng_init_secure(&rng, &ps->err)) return dprl_sql_vtab_error(pzErr, FN, &ps->err);
  int rc = SQLITE_OK;
  if (dprl_prefix_release_run(&ps->pt, &tr, &pp, &rng, &rel, &ps->err))
    rc = dprl_sql_vtab_error(pzErr, FN, &ps->err);
  else
    rc = ps_emit(ps, &rel, out);
  dprl_rng_wipe(&rng);
  dprl_prefix_release_free(&rel);
  return rc;
}

static int ps_compute(sqlite3 *db, sqlite3_value **args, dprl_rows *out, char **pzErr) {
  ps_state ps;
  ps_opts o;
  memset(&ps, 0, sizeof ps);
  memset(&o, 0, sizeof o);
  int rc;
  if (ps_parse(args[2], &o, &ps.err)) rc = dprl_sql_vtab_error(pzErr, FN, &ps.err);
  else if (!(rc = ps_read_policies(db, args[1], &ps, pzErr))) {
    /* Assumption 3 is checked before any trajectory is read or released. */
    if (dprl_policy_validate(&ps.pt, o.p_min, &ps.err)) rc = dprl_sql_vtab_error(pzErr, FN, &ps.err);
    else if (!(rc = ps_read_trajectories(db, args[0], &ps, pzErr))) {
      if (dprl_step_buffer_group(&ps.buf, &ps.err)) rc = dprl_sql_vtab_error(pzErr, FN, &ps.err);
      else if (!(rc = ps_flatten(&ps, pzErr))) rc = ps_release(&ps, &o, out, pzErr);
    }
  }
  dprl_key_index_free(&ps.experts);
  dprl_key_index_free(&ps.states);
  dprl_key_index_free(&ps.actions);
  dprl_policy_free(&ps.pt);
  dprl_step_buffer_free(&ps.buf);
  dprl_free(ps.offsets);
  dprl_free(ps.st);
  dprl_free(ps.ac);
  dprl_free(ps.t);
  return rc;
}

static const dprl_tvf_spec ps_spec = {
    FN,
    "CREATE TABLE x(episode, t INTEGER, state INTEGER, action INTEGER, next_state INTEGER,"
    " trajectories_sql HIDDEN, policies_sql HIDDEN, options HIDDEN)",
    5, 3, 3, ps_args, ps_compute, 0};

int dprl_register_prefix_stable(sqlite3 *db) { return dprl_tvf_register(db, &ps_spec); }
