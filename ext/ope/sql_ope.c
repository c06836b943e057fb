/*
** sql_ope.c: the dp_is_value aggregate (one row per logged step).
**
**   SELECT dp_is_value(episode, t, reward, propensity, target_prob,
**            '{"gamma": 1, "rmin": -1, "rmax": 1, "horizon": 30, "weight_max": 20,
**              "epsilon": 1, "delta": 1e-5}')
**   FROM steps JOIN policies USING (state, action);
**   -- {"mechanism":"dp_is_value","private":true,"value":...,"stderr":...}
**
** Glue only: each row is checked and kept (ope_rows.c); the release is
** ope.c's.  The frame (options pinned, ledger charged once per statement
** over disjoint groups of episodes) is sqlite/sql_agg.c.
*/
#include <stdio.h>
#include <string.h>

#include "ope/ope.h"
#include "ope/sql_ope.h"

typedef struct ope_state {
  dprl_ope_config cfg;
  dprl_ope_noise nz;
  dprl_ope_rows rows;
} ope_state;

static void ope_free(void *p) {
  ope_state *g = p;
  dprl_ope_config_free(&g->cfg);
  dprl_ope_rows_free(&g->rows);
}

/* The options and the calibration, before any row: every refusal is
** computed from the options alone (ALGORITHMS.md §6.2). */
static int ope_start(dprl_agg *a, const char *text, size_t len, int argc, dprl_error *err) {
  ope_state *g = a->state;
  (void)argc;
  int rc = dprl_ope_config_parse(&g->cfg, a->fn->name, text, len, 0, &a->cancel.base, err);
  return rc ? rc : dprl_ope_calibrate(&g->cfg, &g->nz, err);
}

/* " (row with episode E, t T)" so that a bad value can be found. */
static int at_row(sqlite3_value **argv, dprl_error *err) {
  char e[48], t[48], where[120];
  if (err->code != DPRL_EINVAL) return err->code;
  dprl_sql_describe(argv[0], e, sizeof e);
  dprl_sql_describe(argv[1], t, sizeof t);
  dprl_snprintf(where, sizeof where, " (row with episode %s, t %s)", e, t);
  if (strlen(err->msg) + strlen(where) < sizeof err->msg) strcat(err->msg, where);
  return err->code;
}

static int ope_row(dprl_agg *a, int argc, sqlite3_value **argv, dprl_error *err) {
  ope_state *g = a->state;
  dprl_key ep;
  int64_t t;
  double r, b, p;
  char got[48];
  (void)argc;
  if (dprl_sql_key(argv[0], "episode", &ep, err) || dprl_sql_int(argv[1], "t", &t, err) ||
      dprl_sql_real(argv[2], "reward", &r, err) ||
      dprl_sql_real(argv[3], "behavior_prob", &b, err) ||
      dprl_sql_real(argv[4], "target_prob", &p, err))
    return at_row(argv, err);
  if (!(b > 0 && b <= 1)) {
    dprl_sql_describe(argv[3], got, sizeof got);
    dprl_fail(err, DPRL_EINVAL,
              "behavior_prob must be in (0, 1] (the logging policy's probability of the "
              "action taken), got %s", got);
    return at_row(argv, err);
  }
  if (!(p >= 0 && p <= 1)) {
    dprl_sql_describe(argv[4], got, sizeof got);
    dprl_fail(err, DPRL_EINVAL,
              "target_prob must be in [0, 1] (the target policy's probability of the action "
              "taken), got %s", got);
    return at_row(argv, err);
  }
  return dprl_ope_rows_push(&g->rows, &ep, t, r, b, p, err);
}

static int ope_final(dprl_agg *a, dprl_buf *out, dprl_spend *spend, dprl_error *err) {
  ope_state *g = a->state;
  dprl_ope_config *c = &g->cfg;
  dprl_ope_sums sums;
  dprl_rng rng;
  spend->budget = c->budget;
  spend->epsilon = c->epsilon;
  spend->delta = c->delta;
  spend->spends = !c->diagnostic && !c->has_seed;
  spend->why_not = c->diagnostic ? "release (\"diagnostic\")" : "seed";
  spend->unit = "episode";
  spend->gaussian = 1; /* one discrete Gaussian release (ALGORITHMS.md §12.1, §15.3) */
  spend->rho = g->nz.rho; /* automatic W: rho_cap, whatever W is (§15.8) */
  int rc = dprl_ope_rows_collect(&g->rows, c, &a->cancel.base, err);
  if (rc) return rc;
  if (c->has_seed) dprl_rng_init_seeded(&rng, c->seed, DPRL_STREAM_OPE);
  else if ((rc = dprl_rng_init_secure(&rng, err))) return rc;
  if (c->weight_auto) rc = dprl_ope_choose_weight(c, &g->nz, &g->rows, &rng, err);
  if (!rc) {
    dprl_ope_rows_sum(&g->rows, c, &g->nz, &sums);
    rc = dprl_ope_release(c, &g->nz, &sums, &rng, out, err);
  }
  dprl_rng_wipe(&rng);
  return rc;
}

/* The episodes of the release: its units of privacy. */
static dprl_episode_index *ope_units(dprl_agg *a) { return &((ope_state *)a->state)->rows.keys; }

const dprl_agg_fn dprl_is_value_agg = {"dp_is_value", sizeof(ope_state), NULL, ope_start,
                                       ope_row, ope_final, ope_free, ope_units};
