/*
** sql_prefix_stable.c: dp_prefix_stable, expert-level private release of
** stable trajectory prefixes (Sharma et al. 2024, Algorithms 1-2;
** ALGORITHMS.md sections 7 and 10), and dp_prefix_calibrate, its public
** calibration.
**
**   SELECT * FROM dp_prefix_stable(
**     'SELECT episode, t, state, action FROM steps',
**     'SELECT expert, state, action, prob FROM policies',
**     '{"epsilon": 7.5, "delta": 3e-4, "p_min": 0.02, "T": 100, "L": 200}');
**   -- release | step | state | action | next_state   (released transitions)
**
**   SELECT dp_prefix_calibrate('{"epsilon": 7.5, "delta": 3e-4,
**                                "p_min": 0.02, "T": 100, "L": 200}');
**   -- {"mechanism":"dp_prefix_stable","accountant":"optimal","eps_prime":...}
**
** Glue only: the options become the public parameters before any row is
** read (so no option error depends on the data), the two queries are read
** into dense tables (experts, states and actions interned to 0..n-1), the
** release runs in prefix_stable.c, and the released prefixes come back
** numbered by release and step: the caller's episode keys and t are used
** to group and order the steps and never leave this file.
*/
#include <string.h>

#include "json.h"
#include "noise.h"
#include "options.h"
#include "prefix_stable.h"
#include "sql_budget.h"
#include "sql_tvf.h"

#define FN "dp_prefix_stable"
#define FN_CAL "dp_prefix_calibrate"

static const char *const ps_options[] = {"epsilon", "delta", "p_min", "T", "L",
                                         "accountant", "seed", "budget", NULL};
static const char *const ps_args[] = {"trajectories_sql", "policies_sql", "options"};

typedef struct ps_opts {
  dprl_prefix_params pp; /* from the options alone */
  double epsilon, delta; /* (eps1, delta1): what a release spends */
  int has_seed;
  uint64_t seed;
  char *budget; /* a privacy ledger to charge (sql_budget.c), or NULL */
  const char *text;
  size_t len;
} ps_opts;

typedef struct ps_state {
  dprl_episode_index experts, states, actions; /* ids -> dense indices */
  dprl_policy_table pt;
  dprl_step_buffer buf; /* trajectories: action index kept in .reward */
  int64_t *offsets, *st, *ac;
  dprl_error err;
} ps_state;

/* The options -> the public parameters (eps' by the accountant, threshold,
** noise scales). Every input is an option: L and T are required, never
** computed from the data (a default L = longest trajectory would let one
** expert's long trajectory move the threshold). |A| comes from the policies
** later: dprl_policy_validate checks p_min < 1/|A|. */
static int ps_parse(const char *fn, sqlite3_value *v, ps_opts *o, dprl_error *err) {
  dprl_options op;
  double eps = 0, delta = 0, p_min = 0;
  int64_t T = 0, L = 0;
  int acc = 0;
  const char *text = (const char *)sqlite3_value_text(v);
  if (!text && sqlite3_value_type(v) != SQLITE_NULL) return dprl_nomem(err);
  int rc = dprl_options_open(&op, fn, text, (size_t)sqlite3_value_bytes(v), ps_options, err);
  if (!rc)
    rc = dprl_opt_number(&op, "epsilon", 1, 0, ((dprl_range){0, DPRL_PREFIX_MAX_EPS, 1, 0}),
                         &eps);
  if (!rc) rc = dprl_opt_number(&op, "delta", 1, 0, DPRL_OPEN(0, 1), &delta);
  if (!rc) rc = dprl_opt_number(&op, "p_min", 1, 0, DPRL_OPEN(0, 1), &p_min);
  if (!rc) rc = dprl_opt_int(&op, "T", 1, 0, DPRL_CLOSED(1, DPRL_PREFIX_MAX_T), &T);
  if (!rc) rc = dprl_opt_int(&op, "L", 1, 0, DPRL_AT_LEAST(1), &L);
  if (!rc) rc = dprl_opt_choice(&op, "accountant", dprl_prefix_accountant_names, 0, &acc);
  if (!rc) rc = dprl_opt_seed(&op, &o->has_seed, &o->seed);
  if (!rc) rc = dprl_opt_name(&op, "budget", &o->budget);
  dprl_options_close(&op);
  o->epsilon = eps;
  o->delta = delta;
  o->text = text;
  o->len = (size_t)sqlite3_value_bytes(v);
  if (!rc)
    rc = dprl_prefix_params_derive(eps, delta, p_min, 1, T, L, (dprl_prefix_accountant)acc,
                                   &o->pp, err);
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

/* Episodes flattened into the core's arrays, each sorted by t (the order
** of the episodes is irrelevant: the release shuffles them). */
static int ps_flatten(ps_state *ps, char **pzErr) {
  size_t E = dprl_step_buffer_episodes(&ps->buf), n = ps->buf.n;
  ps->offsets = dprl_malloc((E + 1) * sizeof *ps->offsets);
  ps->st = dprl_malloc((n ? n : 1) * sizeof *ps->st);
  ps->ac = dprl_malloc((n ? n : 1) * sizeof *ps->ac);
  if (!ps->offsets || !ps->st || !ps->ac) return SQLITE_NOMEM;
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

/* One output row per released transition (s_j, a_j, s_{j+1}): release =
** 1, 2, ... over the examined trajectories that released k >= 1 steps, in
** the (secure, shuffled) order of examination; step = 1..k. Nothing the
** caller chose to identify a trajectory (episode key, t) is output. */
static int ps_emit(ps_state *ps, const dprl_prefix_release *rel, dprl_rows *out) {
  int64_t release = 0;
  for (int64_t c = 0; c < rel->n_examined && !out->oom; c++) {
    int64_t e = rel->traj[c], lo = ps->offsets[e], hi = ps->offsets[e + 1];
    if (rel->k[c] > 0) release++;
    for (int64_t j = lo; j < lo + rel->k[c]; j++) {
      dprl_key sk, ak, nk;
      if (dprl_rows_add(out)) break;
      dprl_rows_int(out, 0, release);
      dprl_rows_int(out, 1, j - lo + 1);
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
  return out->oom ? SQLITE_NOMEM : SQLITE_OK;
}

static int ps_release(sqlite3 *db, ps_state *ps, const ps_opts *o, dprl_rows *out,
                      char **pzErr) {
  size_t E = dprl_step_buffer_episodes(&ps->buf);
  dprl_trajectories tr = {(int64_t)E, ps->offsets, ps->st, ps->ac};
  dprl_prefix_release rel = {0};
  dprl_rng rng;
  dprl_sql_cancel cancel;
  dprl_prefix_params pp = o->pp;
  if (dprl_sql_cancel_open(&cancel, db, &ps->err)) return dprl_sql_vtab_error(pzErr, FN, &ps->err);
  pp.cancel = &cancel.base;
  if (o->has_seed) dprl_rng_init_seeded(&rng, o->seed, 3);
  else if (dprl_rng_init_secure(&rng, &ps->err)) {
    dprl_sql_cancel_close(&cancel);
    return dprl_sql_vtab_error(pzErr, FN, &ps->err);
  }
  int rc = SQLITE_OK;
  /* T above the number of trajectories examines them all (no error: it
  ** would reveal their number); none at all releases nothing. */
  if (dprl_prefix_release_run(&ps->pt, &tr, &pp, &rng, &rel, &ps->err))
    rc = dprl_sql_vtab_error(pzErr, FN, &ps->err);
  else
    rc = ps_emit(ps, &rel, out);
  if (rc == SQLITE_OK) { /* the ledger row, before any row is returned */
    dprl_spend sp = {o->budget, FN, o->epsilon, o->delta, !o->has_seed, o->text, o->len};
    if (dprl_budget_charge(db, &sp, &ps->err)) rc = dprl_sql_vtab_error(pzErr, FN, &ps->err);
  }
  dprl_rng_wipe(&rng);
  dprl_sql_cancel_close(&cancel);
  dprl_prefix_release_free(&rel);
  return rc;
}

static int ps_compute(sqlite3 *db, sqlite3_value **args, dprl_rows *out, char **pzErr) {
  ps_state ps;
  ps_opts o;
  memset(&ps, 0, sizeof ps);
  memset(&o, 0, sizeof o);
  int rc;
  /* Options first: their errors come before any row is read. */
  if (ps_parse(FN, args[2], &o, &ps.err)) rc = dprl_sql_vtab_error(pzErr, FN, &ps.err);
  else if (!(rc = ps_read_policies(db, args[1], &ps, pzErr))) {
    /* Assumption 3 is checked before any trajectory is read or released. */
    if (dprl_policy_validate(&ps.pt, o.pp.p_min, &ps.err)) rc = dprl_sql_vtab_error(pzErr, FN, &ps.err);
    else if (!(rc = ps_read_trajectories(db, args[0], &ps, pzErr))) {
      if (dprl_step_buffer_group(&ps.buf, &ps.err)) rc = dprl_sql_vtab_error(pzErr, FN, &ps.err);
      else if (!(rc = ps_flatten(&ps, pzErr))) rc = ps_release(db, &ps, &o, out, pzErr);
    }
  }
  dprl_free(o.budget);
  dprl_key_index_free(&ps.experts);
  dprl_key_index_free(&ps.states);
  dprl_key_index_free(&ps.actions);
  dprl_policy_free(&ps.pt);
  dprl_step_buffer_free(&ps.buf);
  dprl_free(ps.offsets);
  dprl_free(ps.st);
  dprl_free(ps.ac);
  return rc;
}

static const dprl_tvf_spec ps_spec = {
    FN,
    "CREATE TABLE x(release INTEGER, step INTEGER, state INTEGER, action INTEGER,"
    " next_state INTEGER, trajectories_sql HIDDEN, policies_sql HIDDEN, options HIDDEN)",
    5, 3, 3, ps_args, ps_compute, 0};

/* ---- dp_prefix_calibrate(options): the public parameters ---------------- */

static void put_num(dprl_buf *b, const char *k, double x) {
  dprl_buf_puts(b, ",");
  dprl_json_put_string(b, k);
  dprl_buf_puts(b, ":");
  dprl_json_put_double(b, x);
}

/* The same options as dp_prefix_stable (seed has no effect here); a JSON
** object of public values only: what the release will use. */
static void calibrate_fn(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  ps_opts o;
  dprl_error err = {0};
  (void)argc;
  memset(&o, 0, sizeof o);
  int bad = ps_parse(FN_CAL, argv[0], &o, &err);
  dprl_free(o.budget); /* a budget has no effect here: nothing is released */
  if (bad) {
    dprl_sql_result_error(ctx, FN_CAL, &err);
    return;
  }
  const dprl_prefix_params *pp = &o.pp;
  dprl_buf b = {0};
  dprl_buf_puts(&b, "{\"mechanism\":\"" FN "\",\"accountant\":");
  dprl_json_put_string(&b, dprl_prefix_accountant_names[pp->accountant]);
  put_num(&b, "epsilon", pp->eps1);
  put_num(&b, "delta", pp->delta1);
  put_num(&b, "p_min", pp->p_min);
  dprl_buf_printf(&b, ",\"T\":%lld,\"L\":%lld", (long long)pp->T, (long long)pp->L);
  put_num(&b, "eps_prime", pp->eps_prime);
  put_num(&b, "delta_composed", pp->delta_composed);
  put_num(&b, "delta_prime", pp->delta_prime);
  put_num(&b, "c_min", pp->c_min);
  put_num(&b, "theta", pp->theta);
  put_num(&b, "threshold", pp->threshold_base);
  put_num(&b, "b_threshold", pp->b_threshold);
  put_num(&b, "b_query", pp->b_query);
  dprl_buf_puts(&b, "}");
  if (b.oom) sqlite3_result_error_nomem(ctx);
  else dprl_sql_result_json(ctx, b.data, (int)b.len);
  dprl_buf_free(&b);
}

int dprl_register_prefix_stable(sqlite3 *db) {
  int rc = sqlite3_create_function_v2(db, FN_CAL, 1,
                                      DPRL_JSON_FLAGS | SQLITE_DETERMINISTIC | SQLITE_INNOCUOUS,
                                      NULL, calibrate_fn, NULL, NULL, NULL);
  return rc == SQLITE_OK ? dprl_tvf_register(db, &ps_spec) : rc;
}
