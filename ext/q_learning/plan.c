/*
** plan.c: dp_plan of dp_q_learn and dp_q_noise, before any epsilon is
** spent (q_options.h; ALGORITHMS.md section 8.2):
**
**   SELECT dp_plan('{"mechanism": "dp_q_learn", "n_actions": 2, "gamma": 0.9, "rmin": 0,
**                    "rmax": 1, "lr": 3e-4, "T": 5000, "B": 64, "k": 60, "epsilon": 1,
**                    "delta": 1e-5}');
**
** The options are the release's, read by the release's own readers
** (q_options.c) under the name dp_plan, less those that make a release
** not private or do not change its noise (seed, budget, a given sigma and
** beta, a path table); dp_q_noise's plan adds the public range of the q
** values it would add noise to. The number of transitions is not asked:
** no noise scale depends on it (every reward may change between
** neighbours, whatever their number).
*/
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/json.h"
#include "q_learning/q_options.h"

static const char *const learn_plan_keys[] = {
    "mechanism", "n_actions", "gamma", "lr", "T",       "B",     "J",          "K", "features",
    "lo",        "hi",        "rmin",  "rmax", "k",     "epsilon", "delta", "accountant",
    "neighbours", NULL};
static const char *const noise_plan_keys[] = {
    "mechanism", "q_range", "n_actions", "lo", "hi", "epsilon",    "delta", "T",        "B",
    "lr",        "k",       "L",         "J",  "accountant", "K", "features", "rmin", "rmax",
    "neighbours", NULL};

/* dp_q_learn: theta gets N(0, sigma_theta^2) per coordinate on each of the
** floor(T/B) updates, whose reward part moves theta by at most Delta =
** lr dr sqrt(P) and a Q value by at most lr dr P = Delta sqrt(P), dr the
** change of the relation (q_learn.h).  Between neighbours a Q value moves
** by at most q_range = dr/(1 - gamma): the rewards
** build a Q value over n_eff = min(updates, q_range / (Delta sqrt(P)))
** updates (the later ones only keep it there), over which the noise of a
** Q value adds up to sigma_theta sqrt(n_eff P). Their ratio,
** sigma_theta / (Delta sqrt(n_eff)), is (1 + rounding)/mu at n_eff =
** updates and larger below: section 8.2. */
static int learn_plan(const dprl_options *o, int64_t length_limit, dprl_buf *out,
                      dprl_plan_cost *cost, dprl_error *err) {
  dprl_q_learn_cfg c;
  int rc = dprl_q_learn_read(o, length_limit > 0 ? length_limit : DPRL_Q_MAX_RESULT, &c);
  dprl_q_learn_cfg_free(&c);
  if (rc) return rc;
  double P, D, dr = dprl_q_reward_change((dprl_q_neighbours)c.cal.nb, c.cal.rmin, c.cal.rmax);
  dprl_q_feature_bounds(&c.cal.feat, &P, &D);
  int64_t updates = c.cal.T / c.cal.B;
  double step = c.th.sens * sqrt(P); /* the most one update moves a Q value */
  double q_range = dr / (1 - c.lo.gamma), reach = (double)updates * step;
  double n_eff = reach <= q_range ? (double)updates : q_range / step;
  double signal = n_eff * step, noise = c.th.sigma * sqrt(n_eff * P), ratio = noise / signal;
  dprl_buf_puts(out, "{\"mechanism\":\"dp_q_learn\"");
  dprl_q_put_relation(out, c.cal.nb);
  dprl_json_put_num(out, "epsilon", c.cal.epsilon);
  dprl_json_put_num(out, "delta", c.cal.delta);
  dprl_q_put_schedule(out, c.cal.T, c.cal.B, c.cal.J, c.cal.lr);
  dprl_json_put_int(out, "n_actions", c.lo.m);
  dprl_json_put_num(out, "gamma", c.lo.gamma);
  dprl_json_put_num(out, "rmin", c.cal.rmin);
  dprl_json_put_num(out, "rmax", c.cal.rmax);
  dprl_json_put_key(out, "features");
  dprl_json_put_string(out, dprl_q_feature_names[c.cal.feat.kind]);
  dprl_json_put_int(out, "K", c.cal.feat.K);
  dprl_json_put_int(out, "updates", updates);
  dprl_json_put_num(out, "sigma", c.th.sigma);
  dprl_json_put_num(out, "sensitivity", c.th.sens);
  dprl_json_put_num(out, "mu", c.th.mu);
  dprl_json_put_num(out, "paths_sigma", c.cal.out.sigma);
  dprl_json_put_num(out, "q_range", q_range);
  dprl_json_put_num(out, "reach", reach);
  dprl_json_put_num(out, "signal", signal);
  dprl_json_put_num(out, "noise_sd", noise);
  dprl_json_put_num(out, "noise_to_signal", ratio);
  dprl_buf_puts(out, "}");
  /* charged as sql_q_learn.c charges: (epsilon, delta) stated, rho =
  ** mu^2/2, per group (ALGORITHMS.md section 12) */
  cost->mechanism = "dp_q_learn";
  cost->unit = dprl_q_unit(c.cal.nb);
  cost->epsilon = c.cal.epsilon;
  cost->delta = c.cal.delta;
  cost->gaussian = 1;
  cost->rho = c.th.mu * c.th.mu / 2;
  cost->per_group = 1;
  cost->useful = ratio < 1;
  if (!cost->useful)
    dprl_snprintf(cost->why, sizeof cost->why, "noise-to-signal %.3g >= 1: a Q value's noise "
             "exceeds what the rewards can move it, as every reward may change between "
             "neighbours (mu = %.3g; docs/q-learning.md, Limitations: no better than a random "
             "policy up to epsilon 100)", ratio, c.th.mu);
  return out->oom ? dprl_nomem(err) : DPRL_OK;
}

/* dp_q_noise: each value gets the paths' sigma; the signal is the range of
** the q values, a public option. A path reused across batches (J < T/B)
** is not covered by the accountant, and a budget refuses it. */
static int noise_plan(const dprl_options *o, dprl_buf *out, dprl_plan_cost *cost,
                      dprl_error *err) {
  dprl_q_noise_cfg c;
  double q_range = 0;
  memset(&c, 0, sizeof c);
  int rc = dprl_opt_number(o, "q_range", 0, 0, DPRL_POSITIVE, &q_range);
  if (!rc && !dprl_opt_has(o, "q_range"))
    rc = dprl_fail(err, DPRL_EINVAL, "dp_plan: option q_range is required for dp_q_noise: the "
                   "public range of the q values it adds noise to, e.g. (rmax - rmin)/(1 - "
                   "gamma) for a Q-function of rewards in [rmin, rmax]");
  if (!rc) rc = dprl_q_noise_read(o, &c);
  dprl_q_noise_cfg_free(&c);
  if (rc) return rc;
  double ratio = c.sigma / q_range;
  int fresh = dprl_q_fresh_paths(&c.cal);
  dprl_buf_puts(out, "{\"mechanism\":\"dp_q_noise\"");
  dprl_q_put_relation(out, c.cal.nb);
  dprl_json_put_num(out, "epsilon", c.cal.epsilon);
  dprl_json_put_num(out, "delta", c.cal.delta);
  dprl_json_put_num(out, "delta_total", c.cal.out.delta_total);
  dprl_q_put_schedule(out, c.cal.T, c.cal.B, c.cal.J, c.cal.lr);
  dprl_json_put_key(out, "accountant");
  dprl_json_put_string(out, c.cal.out.accountant);
  dprl_json_put_num(out, "sigma", c.sigma);
  dprl_json_put_num(out, "beta", c.beta);
  dprl_json_put_num(out, "mu", c.cal.out.mu);
  dprl_json_put_num(out, "q_range", q_range);
  dprl_json_put_num(out, "noise_sd", c.sigma);
  dprl_json_put_num(out, "noise_to_signal", ratio);
  dprl_buf_puts(out, "}");
  /* charged as sql_q_noise.c charges a fresh path: (epsilon, delta_total),
  ** plain; a table-valued function, so no GROUP BY splits it */
  cost->mechanism = "dp_q_noise";
  cost->unit = dprl_q_unit(c.cal.nb);
  cost->epsilon = c.cal.epsilon;
  cost->delta = c.cal.out.delta_total;
  cost->useful = fresh && ratio < 1;
  if (!fresh)
    dprl_snprintf(cost->why, sizeof cost->why, "J = %lld < T/B = %lld reuses noise paths, which the "
             "accountant does not cover: not private, and a budget refuses it",
             (long long)c.cal.J, (long long)(c.cal.T / c.cal.B));
  else if (!cost->useful)
    dprl_snprintf(cost->why, sizeof cost->why, "noise-to-signal %.3g >= 1: each value's noise "
             "(sigma %.3g) is at least the range of the q values (%.3g)", ratio, c.sigma,
             q_range);
  return out->oom ? dprl_nomem(err) : DPRL_OK;
}

int dprl_q_plan(const char *text, size_t len, int64_t length_limit, dprl_cancel *cancel,
                dprl_buf *out, dprl_plan_cost *cost, dprl_error *err) {
  static const char *const mechs[] = {"dp_q_learn", "dp_q_noise", NULL};
  dprl_options o;
  int mech = 0;
  memset(cost, 0, sizeof *cost);
  /* the mechanism first: it says which options are known */
  int rc = dprl_options_open_polled(&o, "dp_plan", text, len, NULL, cancel, err);
  if (!rc && !dprl_opt_has(&o, "mechanism"))
    rc = dprl_fail(err, DPRL_EINVAL, "dp_plan: option mechanism is required here: "
                   "\"dp_q_learn\" or \"dp_q_noise\"");
  if (!rc) rc = dprl_opt_choice(&o, "mechanism", mechs, 0, &mech);
  dprl_options_close(&o);
  if (rc) return rc;
  rc = dprl_options_open_polled(&o, "dp_plan", text, len,
                                mech ? noise_plan_keys : learn_plan_keys, cancel, err);
  if (!rc) rc = mech ? noise_plan(&o, out, cost, err) : learn_plan(&o, length_limit, out, cost, err);
  dprl_options_close(&o);
  if (rc == DPRL_EINVAL && strncmp(err->msg, "dp_plan: ", 9) != 0) { /* a core message */
    char msg[sizeof err->msg];
    dprl_snprintf(msg, sizeof msg, "dp_plan: %.490s", err->msg);
    memcpy(err->msg, msg, sizeof msg);
  }
  return rc;
}
