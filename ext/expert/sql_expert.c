/*
** sql_expert.c: the dp_expert_policy aggregate.
**
**   SELECT dp_expert_policy(clinician, episode, t, state, action,
**            '{"n_states": 10, "n_actions": 2, "epsilon": 1, "delta": 1e-6,
**              "default_action": 0}')
**   FROM log;
**   -- {"mechanism":"dp_expert_policy","private":true,"unit":"expert",...,
**   --  "policy":[...],"votes":[[...],...],...}
**
**   SELECT hospital, dp_expert_policy(...) FROM log GROUP BY hospital;
**   -- one release per hospital; under a budget one charge, the hospitals'
**   -- clinicians checked to be disjoint (ALGORITHMS.md §12, §16.5)
**
** Glue only: each row is checked, its keys interned (rows/) and kept
** (expert/tally.c); the release is expert/expert_policy.c's.  The units
** of privacy the frame checks across groups are the experts.
*/
#include <stdio.h>
#include <string.h>

#include "expert/expert_policy.h"
#include "expert/sql_expert.h"

typedef struct ex_state {
  dprl_ep_config cfg;
  dprl_ep_rows rows;
  dprl_episode_index experts, episodes;
} ex_state;

static void ex_free(void *p) {
  ex_state *g = p;
  dprl_ep_config_free(&g->cfg);
  dprl_ep_rows_free(&g->rows);
  dprl_key_index_free(&g->experts);
  dprl_key_index_free(&g->episodes);
}

/* Everything that can refuse the options, from the options alone. */
static int ex_start(dprl_agg *a, const char *text, size_t len, int argc, dprl_error *err) {
  (void)argc;
  return dprl_ep_config_parse(&((ex_state *)a->state)->cfg, a->fn->name, text, len, 0,
                              a->max_length, &a->cancel.base, err);
}

/* " (row with expert E, episode P, t T)", so a bad value can be found. */
static void say_where(sqlite3_value **argv, dprl_error *err) {
  if (err->code != DPRL_EINVAL) return;
  char e[48], p[48], t[48], where[180];
  dprl_sql_describe(argv[0], e, sizeof e);
  dprl_sql_describe(argv[1], p, sizeof p);
  dprl_sql_describe(argv[2], t, sizeof t);
  dprl_snprintf(where, sizeof where, " (row with expert %s, episode %s, t %s)", e, p, t);
  if (strlen(err->msg) + strlen(where) < sizeof err->msg) strcat(err->msg, where);
}

static int read_row(ex_state *g, sqlite3_value **argv, dprl_ep_row *r, dprl_error *err) {
  dprl_key ex, ep;
  int64_t t, s, act;
  int rc;
  if ((rc = dprl_sql_key(argv[0], "expert", &ex, err)) ||
      (rc = dprl_sql_key(argv[1], "episode", &ep, err)) ||
      (rc = dprl_sql_int(argv[2], "t", &t, err)) ||
      (rc = dprl_sql_int(argv[3], "state", &s, err)) ||
      (rc = dprl_sql_int(argv[4], "action", &act, err)))
    return rc;
  if (s < 0 || s >= g->cfg.n_states)
    return dprl_fail(err, DPRL_EINVAL, "state must be in 0..n_states-1 = 0..%lld, got %lld",
                     (long long)g->cfg.n_states - 1, (long long)s);
  if (act < 0 || act >= g->cfg.n_actions)
    return dprl_fail(err, DPRL_EINVAL, "action must be in 0..n_actions-1 = 0..%lld, got %lld",
                     (long long)g->cfg.n_actions - 1, (long long)act);
  if ((rc = dprl_key_intern(&g->experts, &ex, &r->expert, err)) ||
      (rc = dprl_key_intern(&g->episodes, &ep, &r->episode, err)))
    return rc;
  r->t = t;
  r->state = (uint32_t)s;
  r->action = (uint32_t)act;
  return DPRL_OK;
}

static int ex_row(dprl_agg *a, int argc, sqlite3_value **argv, dprl_error *err) {
  ex_state *g = a->state;
  (void)argc;
  /* A row of five NULLs holds no step (a LEFT JOIN from a public list of
  ** groups gives one for a group without rows): the group is released over
  ** no experts, all noise, instead of being absent (§16.5). */
  int blank = 1;
  for (int i = 0; i < 5 && blank; i++) blank = sqlite3_value_type(argv[i]) == SQLITE_NULL;
  if (blank) return DPRL_OK;
  dprl_ep_row r;
  int rc = read_row(g, argv, &r, err);
  if (rc) {
    say_where(argv, err);
    return rc;
  }
  return dprl_ep_rows_push(&g->rows, &r, err);
}

/* The duplicate's keys, as the caller wrote them. */
static void name_duplicate(ex_state *g, const dprl_ep_dup *d, dprl_error *err) {
  dprl_key k;
  char e[64], p[64];
  dprl_key_get(&g->experts, d->expert, &k);
  dprl_key_describe(&k, e, sizeof e);
  dprl_key_get(&g->episodes, d->episode, &k);
  dprl_key_describe(&k, p, sizeof p);
  err->code = DPRL_OK;
  dprl_fail(err, DPRL_EINVAL,
            "a duplicate (expert, episode, t): expert %s, episode %s, t %lld appears twice",
            e, p, (long long)d->t);
}

/* A release spends its (epsilon, delta) at expert level, one Gaussian
** release of rho in grid steps (ALGORITHMS.md §12.1, §16.3); a seeded or
** diagnostic one is not private. */
static void ex_spend(const dprl_ep_config *c, dprl_spend *s) {
  s->budget = c->budget;
  s->epsilon = c->epsilon;
  s->delta = c->delta;
  s->spends = !c->diagnostic && !c->has_seed;
  s->why_not = c->diagnostic ? "release (\"diagnostic\")" : "seed";
  s->unit = "expert";
  s->gaussian = 1;
  s->rho = c->nz.rho;
}

static int ex_final(dprl_agg *a, dprl_buf *out, dprl_spend *spend, dprl_error *err) {
  ex_state *g = a->state;
  const dprl_ep_config *c = &g->cfg;
  dprl_ep_tally t;
  dprl_ep_dup dup = {UINT32_MAX, 0, 0};
  /* under a budget, each expert's content beside its key (sql_agg.c) */
  int rc = c->budget ? dprl_key_set_print(&g->experts, 0, 0, err) : DPRL_OK;
  if (!rc)
    rc = dprl_ep_tally_rows(&g->rows, c->n_states, c->n_actions, c->nz.k, c->nz.bits,
                            c->diagnostic, &t, &dup, g->experts.print, &a->cancel.base, err);
  if (rc == DPRL_EINVAL && dup.expert != UINT32_MAX) name_duplicate(g, &dup, err);
  dprl_ep_rows_free(&g->rows); /* the tallies are all that is needed now */
  if (!rc) rc = dprl_ep_release_json(c, &t, out, &a->cancel.base, err);
  dprl_ep_tally_free(&t);
  ex_spend(c, spend);
  return rc;
}

/* The experts of the release: its units of privacy. */
static dprl_episode_index *ex_units(dprl_agg *a) { return &((ex_state *)a->state)->experts; }

const dprl_agg_fn dprl_expert_policy_agg = {"dp_expert_policy", sizeof(ex_state), NULL,
                                            ex_start, ex_row, ex_final, ex_free, ex_units};
