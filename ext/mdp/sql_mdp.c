/*
** sql_mdp.c: the dp_mdp aggregate (mdp.h, ALGORITHMS.md §13).
**
**   SELECT dp_mdp(episode, t, state, action, reward,
**                 '{"n_states": 10, "n_actions": 3, "gamma": 0.9, "rmin": 0, "rmax": 1,
**                   "epsilon": 1, "delta": 1e-5, "horizon": 20}')
**   FROM steps;
**   -- {"mechanism":"dp_mdp","private":true,...,"start":[...],"counts":[...],...}
**
** With an outcome argument before the options, dp_mdp(episode, t, state,
** action, reward, outcome, options), each row says 'terminal' or
** 'censored', and an episode ends as its last row (by t) says.
**
** Glue only: each row is checked and goes to the step buffer (rows/, rows
** in any order); at the end the core groups the episodes, bounds each
** one's contribution and releases the noisy model.  The frame is
** sql_agg.c: it charges the ledger once, for all the groups of a GROUP BY
** over a partition of the episodes (the units below).
*/
#include <math.h>
#include <string.h>

#include "mdp/mdp.h"
#include "mdp/sql_mdp.h"

typedef struct mdp_state {
  dprl_mdp_config cfg;
  dprl_step_buffer buf;  /* every step; tabular: (s, a) packed, the reward in ticks */
  dprl_step_buffer xbuf; /* tent features: the real state of every step */
  dprl_mdp_stats st;
  dprl_episode_index keys; /* the release's episodes, kept when a budget is named */
} mdp_state;

static void mdp_free(void *p) {
  mdp_state *g = p;
  dprl_step_buffer_free(&g->buf);
  dprl_step_buffer_free(&g->xbuf);
  dprl_mdp_stats_free(&g->st);
  dprl_key_index_free(&g->keys);
  dprl_mdp_config_free(&g->cfg);
}

/* Options, checked and calibrated before any row; then the sums (S^2 A
** entries can take a while to zero: interruptible). */
static int mdp_start(dprl_agg *a, const char *text, size_t len, int argc, dprl_error *err) {
  mdp_state *g = a->state;
  int rc = dprl_mdp_config_parse(&g->cfg, a->fn->name, text, len, a->max_length, argc == 7,
                                 &a->cancel.base, err);
  return rc ? rc : dprl_mdp_stats_init(&g->st, &g->cfg, &a->cancel.base, err);
}

static int out_of_range(sqlite3_value **argv, const char *what, const char *n, int64_t most,
                        const char *note, int64_t got, dprl_error *err) {
  dprl_fail(err, DPRL_EINVAL, "%s must be in 0..%s-1 = 0..%lld%s, got %lld", what, n,
            (long long)most - 1, note, (long long)got);
  dprl_sql_say_where(argv, err);
  return err->code;
}

/* A row that is not the usual one (integer episode, t, state and action,
** a numeric reward, all in range): read each value with a message naming
** it and the row. */
static int read_slow(const dprl_mdp_config *c, sqlite3_value **argv, dprl_key *ep, int64_t *t,
                     int64_t *s, double *x, int64_t *act, double *r, dprl_error *err) {
  int rc;
  if ((rc = dprl_sql_key(argv[0], "episode", ep, err)) ||
      (rc = dprl_sql_int(argv[1], "t", t, err)) ||
      (rc = c->tent ? dprl_sql_real(argv[2], "state", x, err)
                    : dprl_sql_int(argv[2], "state", s, err)) ||
      (rc = dprl_sql_int(argv[3], "action", act, err)) ||
      (rc = dprl_sql_real(argv[4], "reward", r, err))) {
    dprl_sql_say_where(argv, err);
    return rc;
  }
  if (!c->tent && dprl_mdp_group(c, *s) < 0)
    return out_of_range(argv, "state", c->agg_k ? "k n_states" : c->map ? "R" : "n_states",
                        c->raw_states,
                        c->agg_k ? " (features.aggregate k: state s counts in group floor(s / k))"
                        : c->map ? " (the R states of features.map)"
                                 : "",
                        *s, err);
  if (*act < 0 || *act >= c->n_actions)
    return out_of_range(argv, "action", "n_actions", c->n_actions, "", *act, err);
  return DPRL_OK;
}

/* The outcome argument: 'terminal' or 'censored' (the flag of the step's
** state field, DPRL_MDP_CENSORED). */
static int read_outcome(sqlite3_value **argv, uint32_t *flag, dprl_error *err) {
  sqlite3_value *v = argv[5];
  if (sqlite3_value_type(v) == SQLITE_TEXT) {
    const char *x = (const char *)sqlite3_value_text(v);
    int n = sqlite3_value_bytes(v);
    if (x && n == 8 && memcmp(x, "terminal", 8) == 0) return *flag = 0, DPRL_OK;
    if (x && n == 8 && memcmp(x, "censored", 8) == 0) return *flag = DPRL_MDP_CENSORED, DPRL_OK;
    if (!x) return dprl_nomem(err);
  }
  char got[96];
  dprl_sql_describe(v, got, sizeof got);
  dprl_fail(err, DPRL_EINVAL,
            "outcome must be 'terminal' (the episode ended: discharge, death) or 'censored' "
            "(the episode went on after this step, its next state not recorded), got %s; only "
            "each episode's last row counts, e.g. COALESCE(outcome, 'terminal')", got);
  dprl_sql_say_where(argv, err);
  return err->code;
}

static int mdp_row(dprl_agg *a, int argc, sqlite3_value **argv, dprl_error *err) {
  mdp_state *g = a->state;
  const dprl_mdp_config *c = &g->cfg;
  dprl_key ep;
  int64_t t, s = 0, act;
  double r, x = 0;
  uint32_t flag = 0;
  if (argc == 7) {
    int rc = read_outcome(argv, &flag, err);
    if (rc) return rc;
  }
  int rt = sqlite3_value_type(argv[4]);
  if (!c->tent && sqlite3_value_type(argv[0]) == SQLITE_INTEGER &&
      sqlite3_value_type(argv[1]) == SQLITE_INTEGER &&
      sqlite3_value_type(argv[2]) == SQLITE_INTEGER &&
      sqlite3_value_type(argv[3]) == SQLITE_INTEGER &&
      (rt == SQLITE_FLOAT || rt == SQLITE_INTEGER)) { /* the usual row, in one go */
    s = sqlite3_value_int64(argv[2]);
    act = sqlite3_value_int64(argv[3]);
    r = sqlite3_value_double(argv[4]);
    int64_t grp = dprl_mdp_group(c, s);
    if (grp >= 0 && act >= 0 && act < c->n_actions && isfinite(r)) {
      ep = (dprl_key){0, sqlite3_value_int64(argv[0]), NULL, 0};
      return dprl_step_buffer_push(&g->buf, &ep, sqlite3_value_int64(argv[1]),
                                   dprl_mdp_pack(c, grp, act) | flag,
                                   dprl_mdp_reward_ticks(c, r), err);
    }
  }
  int rc = read_slow(c, argv, &ep, &t, &s, &x, &act, &r, err);
  if (rc) return rc;
  if (!c->tent) /* the group: what is counted (aggregate or map features) */
    return dprl_step_buffer_push(&g->buf, &ep, t,
                                 dprl_mdp_pack(c, dprl_mdp_group(c, s), act) | flag,
                                 dprl_mdp_reward_ticks(c, r), err);
  /* tent: the same key and t in both buffers, so both group alike */
  x = x < c->low ? c->low : x > c->high ? c->high : x;
  rc = dprl_step_buffer_push(&g->buf, &ep, t, (uint32_t)act | flag, dprl_mdp_reward_ticks(c, r),
                             err);
  return rc ? rc : dprl_step_buffer_push(&g->xbuf, &ep, t, 0, x, err);
}

static int mdp_final(dprl_agg *a, dprl_buf *out, dprl_spend *spend, dprl_error *err) {
  mdp_state *g = a->state;
  dprl_mdp_config *c = &g->cfg; /* "clip": "auto" sets C (§13.6) */
  dprl_cancel *cancel = &a->cancel.base;
  int rc = dprl_mdp_collect(&g->st, c, &g->buf, c->tent ? &g->xbuf : NULL,
                            c->budget ? &g->keys : NULL, cancel, err);
  if (!rc) rc = dprl_mdp_release(c, &g->st, out, cancel, err);
  /* Dense: one discrete Gaussian release, rho in grid steps (ALGORITHMS.md
  ** §12.1, §13); sparse: a plain (epsilon, delta) release, the threshold's
  ** delta_0 not being zCDP (§13.5).  A seeded or diagnostic one is not
  ** private (the ledger refuses it under a budget, naming the option). */
  spend->budget = c->budget;
  spend->epsilon = c->epsilon;
  spend->delta = c->delta;
  spend->spends = !c->diagnostic && !c->has_seed;
  spend->why_not = c->diagnostic ? "release (\"diagnostic\")" : "seed";
  spend->unit = "episode";
  spend->gaussian = !c->sparse;
  spend->rho = c->sparse ? 0 : c->rho;
  return rc;
}

/* The episodes of the release: its units of privacy (a GROUP BY over a
** partition of them is charged once). */
static dprl_episode_index *mdp_units(dprl_agg *a) {
  mdp_state *g = a->state;
  return g->cfg.budget ? &g->keys : NULL;
}

const dprl_agg_fn dprl_mdp_agg = {"dp_mdp", sizeof(mdp_state), NULL,
                                  mdp_start, mdp_row, mdp_final, mdp_free, mdp_units};
