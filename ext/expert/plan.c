/*
** plan.c: dp_plan of dp_expert_policy (expert_policy.h, ALGORITHMS.md
** §16.6): before any epsilon is spent, how often the released consensus
** would be the experts' majority action at hypothetical sizes.
**
**   SELECT dp_plan('{"mechanism": "dp_expert_policy", "n_states": 10, "n_actions": 2,
**                    "epsilon": 1, "delta": 1e-6, "default_action": 0,
**                    "experts": 200, "agreement": 0.8, "coverage": 0.9}');
**
** At a state, n = experts x coverage experts have data and a share q
** ("agreement") of their vote is on the majority action.  The vote of the
** majority is q n + N(0, sigma^2), every other action's m_b n + N(0,
** sigma^2), independent, and the count n + N(0, sigma^2).  Then
**   p_counted  = P(count >= min_count)            (the state is not defaulted)
**   p_majority = P(the majority's vote is the largest)
**   p_policy   = p_counted p_majority              (independent noises)
** For two actions p_majority = Phi((2q - 1) n / (sigma sqrt 2)); for more,
** the smallest p_majority over every way the other actions can share 1 - q
** (each at most q), a lower bound (§16.6).
*/
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/json.h"
#include "dp/accountant.h"
#include "expert/expert_policy.h"

/* A plan is useful when the released action is the majority's at least
** this often at a state with the stated sizes. */
#define USEFUL_P 0.6

/* ln Phi(x), accurate in the lower tail. */
static double log_cdf(double x) {
  double p = dprl_normal_cdf(x);
  return p > 0 ? log(p) : -HUGE_VAL;
}

double dprl_ep_p_majority(double n, double q, int64_t n_actions, double sigma) {
  if (n_actions <= 1) return 1.0;
  double c = n / sigma;
  if (n_actions == 2) return dprl_normal_cdf((2 * q - 1) * c / sqrt(2.0));
  /* The worst sharing of 1 - q: j actions at q, one at r < q, the rest 0
  ** (the vertices of {0 <= m_b <= q, sum m_b = 1 - q}, all alike up to
  ** order).  P = E_X prod_b Phi(X + (q - m_b) c), X standard normal, by
  ** Simpson's rule on [-12, 12]. */
  double others = (double)(n_actions - 1);
  double j = q > 0 ? floor((1 - q) / q * (1 + 1e-12)) : others;
  if (j > others) j = others;
  double r = 1 - q - j * q;
  if (r < 0) r = 0;
  double zeros = others - j - (j < others ? 1 : 0);
  const int N = 4800; /* even */
  double lo = -12, h = 24.0 / N, acc = 0;
  for (int i = 0; i <= N; i++) {
    double x = lo + h * i;
    double lf = -0.5 * x * x; /* a factor only where it has actions: 0 ln 0 is NaN */
    if (j > 0) lf += j * log_cdf(x);
    if (zeros > 0) lf += zeros * log_cdf(x + q * c);
    if (j < others) lf += log_cdf(x + (q - r) * c);
    double w = i == 0 || i == N ? 1 : i % 2 ? 4 : 2;
    acc += w * exp(lf);
  }
  double p = acc * h / 3 / sqrt(2 * M_PI);
  return p < 0 ? 0 : p > 1 ? 1 : p;
}

static void plan_cost(const dprl_ep_config *c, double n, double p_policy,
                      dprl_plan_cost *cost) {
  memset(cost, 0, sizeof *cost);
  cost->mechanism = "dp_expert_policy";
  cost->unit = "expert";
  cost->epsilon = c->epsilon;
  cost->delta = c->delta;
  cost->gaussian = 1;
  cost->rho = c->nz.rho;
  cost->per_group = 0; /* a GROUP BY over a partition of the experts is one charge */
  cost->useful = p_policy >= USEFUL_P;
  if (!cost->useful)
    dprl_snprintf(cost->why, sizeof cost->why,
             "at %.4g experts per state (experts x coverage) with agreement %.3g, the "
             "released action is the majority's with probability %.3g, below %.2g: sigma = "
             "%.3g votes, min_count = %.3g", n, c->agreement, p_policy, USEFUL_P,
             c->nz.sigma, c->min_count);
}

int dprl_expert_plan(const char *text, size_t len, int64_t length_limit, dprl_cancel *cancel,
                     dprl_buf *out, dprl_plan_cost *cost, dprl_error *err) {
  dprl_ep_config c;
  int rc = dprl_ep_config_parse(&c, "dp_plan", text, len, 1, length_limit, cancel, err);
  if (rc) return rc;
  double n = c.experts * c.coverage, sigma = c.nz.sigma;
  double p_major = dprl_ep_p_majority(n, c.agreement, c.n_actions, sigma);
  double p_counted = dprl_normal_cdf((n - c.min_count) / sigma);
  double p_policy = p_major * p_counted;
  dprl_buf_puts(out, "{\"mechanism\":\"dp_expert_policy\"");
  dprl_json_put_num(out, "epsilon", c.epsilon);
  dprl_json_put_num(out, "delta", c.delta);
  dprl_json_put_int(out, "n_states", c.n_states);
  dprl_json_put_int(out, "n_actions", c.n_actions);
  dprl_json_put_int(out, "max_states", c.nz.k);
  dprl_json_put_num(out, "sigma", sigma);
  dprl_json_put_num(out, "sensitivity", c.nz.sens);
  dprl_json_put_num(out, "min_count", c.min_count);
  dprl_json_put_num(out, "experts", c.experts);
  dprl_json_put_num(out, "agreement", c.agreement);
  dprl_json_put_num(out, "coverage", c.coverage);
  dprl_json_put_num(out, "experts_per_state", n);
  dprl_json_put_num(out, "p_majority", p_major);
  dprl_json_put_num(out, "p_counted", p_counted);
  dprl_json_put_num(out, "p_policy", p_policy);
  dprl_json_put_num(out, "stderr", sigma / (n > 1 ? n : 1));
  dprl_buf_puts(out, "}");
  if (out->oom) rc = dprl_nomem(err);
  if (!rc) plan_cost(&c, n, p_policy, cost);
  dprl_ep_config_free(&c);
  return rc;
}
