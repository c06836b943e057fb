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
** read (so no option error depends on the data), the policies are read
** into a dense table (experts, states and actions interned to 0..n-1), the
** trajectories' episode keys are read and each of the T runs draws one
** (uniformly, with replacement), only the drawn trajectories' rows are read
** (ALGORITHMS.md section 7.1), the release runs in prefix_stable.c, and the
** released prefixes come back numbered by run and step: the caller's
** episode keys and t are used to draw, group and order the steps and never
** leave this file.
*/
#include <stdio.h>
#include <string.h>

#include "base/json.h"
#include "dp/noise.h"
#include "base/options.h"
#include "prefix_stable/prefix_stable.h"
#include "sqlite/sql_budget.h"
#include "sqlite/sql_tvf.h"
#include "prefix_stable/sql_prefix_stable.h"

#define FN_CAL "dp_prefix_calibrate"

static const char *const ps_options[] = {"epsilon", "delta", "p_min", "T", "L", "accountant",
                                         "seed", "budget", "read", NULL};
static const char *const ps_args[] = {"trajectories_sql", "policies_sql", "options"};

/* The options -> the public parameters (eps' by the accountant, threshold,
** noise scales). Every input is an option: L and T are required, never
** computed from the data (a default L = longest trajectory would let one
** expert's long trajectory move the threshold). |A| comes from the policies
** later: dprl_policy_validate checks p_min < 1/|A|. */
static int ps_parse(const char *fn, sqlite3_value *v, ps_opts *o, dprl_error *err) {
  dprl_options op;
  dprl_prefix_calib_in in;
  memset(&in, 0, sizeof in);
  const char *text = (const char *)sqlite3_value_text(v);
  if (!text && sqlite3_value_type(v) != SQLITE_NULL) return dprl_nomem(err);
  int rc = dprl_options_open(&op, fn, text, (size_t)sqlite3_value_bytes(v), ps_options, err);
  if (!rc) rc = dprl_prefix_read_calibration(&op, &in);
  if (!rc) rc = dprl_opt_seed(&op, &o->has_seed, &o->seed);
  if (!rc) rc = dprl_opt_name(&op, "budget", &o->budget);
  if (!rc) rc = dprl_opt_choice(&op, "read", dprl_prefix_read_names, DPRL_PREFIX_READ_AUTO,
                                  &o->read);
  dprl_options_close(&op);
  o->epsilon = in.epsilon;
  o->delta = in.delta;
  o->text = text;
  o->len = (size_t)sqlite3_value_bytes(v);
  if (!rc)
    rc = dprl_prefix_params_derive(in.epsilon, in.delta, in.p_min, 1, in.T, in.L,
                                   (dprl_prefix_accountant)in.accountant, &o->pp, err);
  return rc;
}

/* Messages about the policies name the caller's ids (dprl_id_namer). */
static void ps_name_id(void *ctx, dprl_id_kind kind, int64_t index, char *out, size_t n) {
  ps_state *ps = ctx;
  dprl_episode_index *x = kind == DPRL_ID_EXPERT  ? &ps->experts
                          : kind == DPRL_ID_STATE ? &ps->states
                                                  : &ps->actions;
  dprl_key k;
  if (index < 0 || (size_t)index >= x->n) {
    dprl_snprintf(out, n, "%lld", (long long)index);
    return;
  }
  dprl_key_get(x, (uint32_t)index, &k);
  dprl_key_describe(&k, out, n);
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
        ps_int_key(sqlite3_column_value(q.stmt, 1), "policies_sql: state", &sk, &ps->err) ||
        ps_int_key(sqlite3_column_value(q.stmt, 2), "policies_sql: action", &ak, &ps->err) ||
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
    } else {
      ps->pt.namer = ps_name_id;
      ps->pt.namer_ctx = ps;
    }
    for (size_t i = 0; rc == SQLITE_OK && i < n; i++)
      if (dprl_policy_set(&ps->pt, rows[i].e, rows[i].s, rows[i].a, rows[i].p, &ps->err))
        rc = dprl_sql_vtab_error(pzErr, FN, &ps->err);
  }
  dprl_free(rows);
  return rc;
}

static void put_key(dprl_rows *out, int col, const dprl_key *k) {
  if (k->is_text) dprl_rows_text(out, col, k->text, k->len);
  else dprl_rows_int(out, col, k->ival);
}

/* One output row per released transition (s_j, a_j, s_{j+1}): release =
** the run, 1..T (a run that released nothing has no rows); step = 1..k.
** Nothing the caller chose to identify a trajectory (episode key, t) is
** output. */
static int ps_emit(ps_state *ps, const dprl_prefix_release *rel, dprl_rows *out) {
  for (int64_t c = 0; c < rel->n_runs && !out->oom; c++) {
    if (rel->k[c] <= 0) continue;
    int64_t e = rel->traj[c], lo = ps->offsets[e], hi = ps->offsets[e + 1];
    for (int64_t j = lo; j < lo + rel->k[c]; j++) {
      dprl_key sk, ak, nk;
      if (dprl_rows_add(out)) break;
      dprl_rows_int(out, 0, c + 1);
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

static int ps_release(sqlite3 *db, ps_state *ps, const ps_opts *o, int64_t K, dprl_rows *out,
                      char **pzErr) {
  dprl_trajectories tr = {K, ps->offsets, ps->st, ps->ac};
  dprl_prefix_release rel = {0};
  dprl_prefix_params pp = o->pp;
  pp.cancel = &ps->cancel.base;
  int rc = SQLITE_OK;
  /* T runs whatever the number of trajectories (ALGORITHMS.md 7); with
  ** none at all, every run releases nothing. */
  if (dprl_prefix_release_drawn(&ps->pt, &tr, &pp, &ps->rng, ps->run, &rel, &ps->err))
    rc = dprl_sql_vtab_error(pzErr, FN, &ps->err);
  else
    rc = ps_emit(ps, &rel, out);
  if (rc == SQLITE_OK) { /* the ledger row, before any row is returned */
    dprl_spend sp = {o->budget, FN, o->epsilon, o->delta, !o->has_seed, o->text, o->len,
                     "seed", "expert", 0, 0};
    if (dprl_budget_charge(db, &sp, &ps->err)) rc = dprl_sql_vtab_error(pzErr, FN, &ps->err);
  }
  dprl_prefix_release_free(&rel);
  return rc;
}

/* The generator and the interrupt hook, once the policies are accepted. */
static int ps_open(sqlite3 *db, ps_state *ps, const ps_opts *o, char **pzErr) {
  if (dprl_sql_cancel_open(&ps->cancel, db, &ps->err)) return dprl_sql_vtab_error(pzErr, FN, &ps->err);
  ps->cancel_open = 1;
  if (o->has_seed) dprl_rng_init_seeded(&ps->rng, o->seed, DPRL_STREAM_PREFIX);
  else if (dprl_rng_init_secure(&ps->rng, &ps->err)) return dprl_sql_vtab_error(pzErr, FN, &ps->err);
  return SQLITE_OK;
}

static int ps_compute(sqlite3 *db, sqlite3_value **args, dprl_rows *out, char **pzErr) {
  ps_state ps;
  ps_opts o;
  memset(&ps, 0, sizeof ps);
  memset(&o, 0, sizeof o);
  int rc;
  int64_t K = 0;
  dprl_query q;
  /* Options first: their errors come before any row is read. */
  if (ps_parse(FN, args[2], &o, &ps.err)) rc = dprl_sql_vtab_error(pzErr, FN, &ps.err);
  else if (!(rc = ps_read_policies(db, args[1], &ps, pzErr))) {
    /* Assumption 3 is checked before any trajectory is read or released. */
    if (dprl_policy_validate(&ps.pt, o.pp.p_min, &ps.err)) rc = dprl_sql_vtab_error(pzErr, FN, &ps.err);
    /* trajectories_sql checked as it is (one read-only SELECT, 4 columns,
    ** no parameters) before any of its wrapped forms runs */
    else if (!(rc = dprl_query_open(&q, db, "trajectories_sql", args[0], 4, FN, pzErr))) {
      dprl_query_close(&q);
      ps.body = dprl_query_body(db, args[0]);
      ps.buf.cancel = &ps.cancel.base;
      /* One pass or two (dprl_prefix_reads_once); the plan is asked only
      ** when the choice rests on it. */
      int oom = 0, once = dprl_prefix_reads_once(o.read, o.has_seed);
      if (once < 0) once = !ps_has_seeks(db, &ps, &oom);
      if (!oom && !(ps.run = dprl_malloc((size_t)o.pp.T * sizeof *ps.run))) oom = 1;
      if (oom) rc = SQLITE_NOMEM;
      else if (!(rc = ps_open(db, &ps, &o, pzErr))) {
        if (once) rc = ps_read_once(db, args[0], &ps, o.pp.T, &K, pzErr);
        else if (!(rc = ps_read_ids(db, args[0], &ps, pzErr))) {
          if (ps_choose(&ps, o.pp.T, &K)) rc = dprl_sql_vtab_error(pzErr, FN, &ps.err);
          else rc = ps_read_trajectories(db, args[0], &ps, K, pzErr);
        }
        if (!rc) {
          ps.buf.frees_as_read = 1; /* dprl_examined_flatten copies while freeing it */
          if (dprl_step_buffer_group(&ps.buf, &ps.err)) rc = dprl_sql_vtab_error(pzErr, FN, &ps.err);
          else if (dprl_examined_flatten(&ps.buf, &ps.chosen, K, &ps.offsets, &ps.st, &ps.ac,
                                         &ps.err))
            rc = dprl_sql_vtab_error(pzErr, FN, &ps.err);
          else rc = ps_release(db, &ps, &o, K, out, pzErr);
        }
      }
    }
  }
  dprl_rng_wipe(&ps.rng);
  if (ps.cancel_open) dprl_sql_cancel_close(&ps.cancel);
  dprl_free(o.budget);
  dprl_free(ps.body);
  dprl_key_index_free(&ps.experts);
  dprl_key_index_free(&ps.states);
  dprl_key_index_free(&ps.actions);
  dprl_key_index_free(&ps.ids);
  dprl_key_index_free(&ps.chosen);
  dprl_policy_free(&ps.pt);
  dprl_step_buffer_free(&ps.buf);
  dprl_free(ps.offsets);
  dprl_free(ps.st);
  dprl_free(ps.ac);
  dprl_free(ps.run);
  dprl_reservoir_free(&ps.once);
  return rc;
}

const dprl_tvf_spec dprl_prefix_stable_tvf = {
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
void dprl_sql_prefix_calibrate(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
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
