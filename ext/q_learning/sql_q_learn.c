/*
** sql_q_learn.c: differentially private Q-learning with functional noise
** (Wang & Hegde 2019, Algorithm 1; ALGORITHMS.md §8 and §10) as an
** aggregate: one release of theta per group.
**
**   SELECT dp_q_learn(s, a, r, s_next,
**     '{"n_actions": 2, "gamma": 0.9, "rmin": 0, "rmax": 1, "lr": 3e-4, "T": 5000, "B": 64,
**       "K": 21, "k": 60, "epsilon": 1, "delta": 1e-5}') AS model
**   FROM transitions;
**   -- {"mechanism":"dp_q_learn","private":true,...,"theta":[[...],[...]]}
**
** Glue only: options -> q_options.c; the transitions, kept in memory;
** Algorithm 1 in q_learn.c; the result as JSON.
*/
#include <string.h>

#include "base/json.h"
#include "q_learning/q_learn.h"
#include "q_learning/q_options.h"
#include "q_learning/sql_q.h"

typedef struct ql_agg {
  dprl_q_learn_cfg cfg;
  double *s, *r, *sn;
  int64_t *a;
  size_t n, cap;
} ql_agg;

static void ql_agg_free(void *p) {
  ql_agg *g = p;
  dprl_q_learn_cfg_free(&g->cfg);
  dprl_free(g->s);
  dprl_free(g->r);
  dprl_free(g->sn);
  dprl_free(g->a);
}

static int ql_push(ql_agg *g, double s, int64_t a, double r, double sn, dprl_error *err) {
  if (g->n == DPRL_Q_MAX_TRANSITIONS)
    return dprl_fail(err, DPRL_EINVAL,
                     "too many transitions: at most %zu fit (presampling sorts 2 states a "
                     "transition, 32 bytes with their index and path value, in one allocation "
                     "of at most %zu bytes)",
                     (size_t)DPRL_Q_MAX_TRANSITIONS, DPRL_MAX_ALLOC);
  if (g->n == g->cap) {
    size_t nc = g->cap ? 2 * g->cap : 1024;
    if (nc > DPRL_Q_MAX_TRANSITIONS) nc = DPRL_Q_MAX_TRANSITIONS;
    void **arrays[] = {(void **)&g->s, (void **)&g->r, (void **)&g->sn, (void **)&g->a};
    const size_t sizes[] = {sizeof *g->s, sizeof *g->r, sizeof *g->sn, sizeof *g->a};
    if (dprl_grow_parallel(nc, 4, arrays, sizes, err)) return DPRL_ENOMEM;
    g->cap = nc;
  }
  g->s[g->n] = s;
  g->a[g->n] = a;
  g->r[g->n] = r;
  g->sn[g->n] = sn;
  g->n++;
  return DPRL_OK;
}

static int ql_row(dprl_agg *frame, int argc, sqlite3_value **argv, dprl_error *err) {
  ql_agg *g = frame->state;
  const dprl_q_learn_opts *o = &g->cfg.lo;
  double s, r, sn;
  int64_t a;
  int rc;
  (void)argc;
  if ((rc = dprl_sql_real(argv[0], "s", &s, err)) ||
      (rc = dprl_q_check_state(s, o->feat.lo, o->feat.hi, "s", err)) ||
      (rc = dprl_sql_int(argv[1], "a", &a, err)) ||
      (rc = dprl_q_check_action(a, o->m, "a", err)) ||
      (rc = dprl_sql_real(argv[2], "r", &r, err)) ||
      (rc = dprl_sql_real(argv[3], "s_next", &sn, err)) ||
      (rc = dprl_q_check_state(sn, o->feat.lo, o->feat.hi, "s_next", err)) ||
      (rc = ql_push(g, s, a, r, sn, err)))
    dprl_error_at_row(err, "the transitions", g->n + 1);
  return rc;
}

/* The first row: the options (the frame is sql_agg.c). */
static int ql_start(dprl_agg *frame, const char *text, size_t len, int argc, dprl_error *err) {
  (void)argc;
  return dprl_q_learn_options(text, len, frame->max_length, &((ql_agg *)frame->state)->cfg, err);
}

/* The calibration of the functional noise (Theorem 5), as an object. */
static void put_paths(dprl_buf *b, const dprl_q_learn_cfg *c) {
  const dprl_q_learn_opts *o = &c->lo;
  dprl_json_put_key(b, "paths");
  dprl_buf_puts(b, "{\"role\":\"the functional noise of Algorithm 1 (Theorem 5 covers Q + g); "
                   "theta's guarantee does not rest on it\"");
  dprl_json_put_num(b, "sigma", o->sigma);
  dprl_json_put_num(b, "beta", o->beta);
  if (o->sigma > 0) dprl_json_put_num(b, "grid", dprl_grid_for(o->sigma));
  if (c->explicit_sigma) {
    dprl_buf_puts(b, "}");
    return;
  }
  const dprl_q_calib_out *q = &c->cal.out;
  dprl_json_put_key(b, "accountant");
  dprl_json_put_string(b, q->accountant);
  dprl_buf_printf(b, ",\"proven\":%s", q->proven ? "true" : "false");
  dprl_json_put_num(b, "delta_total", q->delta_total);
  dprl_q_put_constants(b, &c->cal);
  if (!q->proven || !dprl_q_fresh_paths(&c->cal)) {
    dprl_json_put_key(b, "note");
    dprl_json_put_string(b, !q->proven ? q->note : dprl_q_reuse_note);
  }
  dprl_buf_puts(b, "}");
}

/* theta's own noise (ALGORITHMS.md §10): public values only. */
static void put_theta_noise(dprl_buf *b, const dprl_q_learn_cfg *c) {
  dprl_json_put_num(b, "epsilon", c->cal.epsilon);
  dprl_json_put_num(b, "delta", c->cal.delta);
  dprl_json_put_key(b, "theta_noise");
  dprl_buf_puts(b, "{\"accountant\":\"gdp\"");
  dprl_json_put_num(b, "sigma", c->th.sigma);
  dprl_json_put_num(b, "grid", c->th.grid);
  dprl_json_put_num(b, "sensitivity", c->th.sens);
  dprl_json_put_num(b, "mu", c->th.mu);
  dprl_json_put_int(b, "updates", c->lo.T / c->lo.B);
  dprl_buf_puts(b, "}");
}

/* The approximator and theta (one array of K numbers per action: up to
** 4 x 10^7 numbers in all, seconds of formatting, so it polls). */
static int put_model(dprl_buf *b, const dprl_q_learn_opts *o, const double *theta,
                     dprl_cancel *cancel, dprl_error *err) {
  dprl_json_put_key(b, "features");
  dprl_buf_printf(b, "{\"kind\":\"%s\",\"K\":%d", dprl_q_feature_names[o->feat.kind],
                  o->feat.K);
  dprl_json_put_num(b, "lo", o->feat.lo);
  dprl_json_put_num(b, "hi", o->feat.hi);
  dprl_buf_puts(b, "}");
  dprl_json_put_key(b, "theta");
  dprl_buf_puts(b, "[");
  for (int a = 0; a < o->m; a++) {
    if (dprl_cancel_poll(cancel, 300 * (uint64_t)o->feat.K, err)) return err->code;
    if (a) dprl_buf_puts(b, ",");
    dprl_json_put_double_array(b, theta + (size_t)a * (size_t)o->feat.K, (size_t)o->feat.K);
  }
  dprl_buf_puts(b, "]");
  return DPRL_OK;
}

/* Private: theta (noisy), the public parameters, the public noise levels.
** Never the number of transitions or anything else computed from data. */
static int learn_json(const ql_agg *g, const double *theta, dprl_cancel *cancel, dprl_buf *b,
                      dprl_error *err) {
  const dprl_q_learn_cfg *c = &g->cfg;
  const dprl_q_learn_opts *o = &c->lo;
  int private_ = !c->explicit_sigma && !c->has_seed;
  dprl_buf_puts(b, "{\"mechanism\":\"dp_q_learn\"");
  dprl_buf_printf(b, ",\"private\":%s", private_ ? "true" : "false");
  if (c->has_seed) dprl_buf_puts(b, ",\"seeded\":true");
  /* the unit of privacy and the relation (ALGORITHMS.md §8, §10) */
  dprl_q_put_relation(b, c->cal.nb);
  if (!c->explicit_sigma) put_theta_noise(b, c);
  put_paths(b, c);
  dprl_q_put_schedule(b, o->T, o->B, o->J, o->lr);
  dprl_json_put_int(b, "n_actions", o->m);
  dprl_json_put_num(b, "gamma", o->gamma);
  dprl_json_put_num(b, "rmin", o->rmin);
  dprl_json_put_num(b, "rmax", o->rmax);
  if (put_model(b, o, theta, cancel, err)) return err->code;
  if (!private_) {
    dprl_json_put_int(b, "transitions", (int64_t)g->n); /* a count: diagnostic only */
    dprl_json_put_key(b, "note");
    dprl_json_put_string(
        b, c->explicit_sigma
               ? "sigma was given, not calibrated: no privacy guarantee is claimed"
               : "seeded: the noise is reproducible from the seed, so the result is not "
                 "private (for tests and examples)");
  }
  dprl_buf_puts(b, "}");
  return DPRL_OK;
}

/* Algorithm 1 over the collected transitions, then the JSON; theta is
** charged to the budget it names (a seeded run or a given sigma is not
** private: sql_budget.c refuses it under a budget, naming the option). */
static int ql_final(dprl_agg *frame, dprl_buf *b, dprl_spend *sp, dprl_error *err) {
  ql_agg *g = frame->state;
  const dprl_q_learn_cfg *c = &g->cfg;
  const dprl_q_learn_opts *o = &c->lo;
  dprl_rng rng;
  memset(&rng, 0, sizeof rng);
  double *theta = dprl_calloc((size_t)o->m * (size_t)o->feat.K, sizeof *theta);
  int rc = theta ? DPRL_OK : dprl_nomem(err);
  g->cfg.lo.cancel = &frame->cancel.base;
  if (!rc) {
    if (c->has_seed) dprl_rng_init_seeded(&rng, c->seed, DPRL_STREAM_Q_LEARN);
    else rc = dprl_rng_init_secure(&rng, err);
  }
  dprl_q_transitions d = {g->s, g->r, g->sn, g->a, g->n};
  if (!rc) rc = dprl_q_learn(o, &d, &rng, theta, NULL, err);
  dprl_rng_wipe(&rng);
  if (!rc) rc = learn_json(g, theta, &frame->cancel.base, b, err);
  g->cfg.lo.cancel = NULL;
  dprl_free(theta);
  sp->budget = c->budget;
  sp->spends = !c->explicit_sigma && !c->has_seed;
  sp->epsilon = sp->spends ? c->cal.epsilon : 0;
  sp->delta = sp->spends ? c->cal.delta : 0;
  sp->why_not = c->has_seed ? "seed" : "sigma";
  sp->unit = dprl_q_unit(c->cal.nb);
  sp->gaussian = sp->spends; /* theta: mu-GDP steps of the discrete Gaussian, rho = mu^2/2 */
  sp->rho = sp->spends ? c->th.mu * c->th.mu / 2 : 0;
  return rc;
}

const dprl_agg_fn dprl_q_learn_agg = {"dp_q_learn", sizeof(ql_agg), NULL,
                                      ql_start, ql_row, ql_final, ql_agg_free, NULL};
