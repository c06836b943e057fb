/*
** plan.c: what a dp_is_value release would cost and how accurate its value
** would be, from the options and a hypothetical number of episodes alone
** (no data; ALGORITHMS.md §15.6).
**
**   {"mechanism": "dp_is_value", "episodes": 20000, "gamma": 1, "rmin": -1, "rmax": 1,
**    "gmin": -1, "gmax": 1, "horizon": 30, "weight_max": 20, "epsilon": 1, "delta": 1e-5}
**
** The predicted error is the standard error the noise adds to the value
** at the worst return, with the mean clipped weight taken as 1 (its value
** when no weight is clipped and the logging policy covers the target's
** actions; clipping lowers it and raises the error).  The sampling error
** of importance sampling depends on the weights of the data; its public
** bound is reported beside it.
*/
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/json.h"
#include "ope/ope.h"

int dprl_ope_plan(const char *text, size_t len, int64_t length_limit, dprl_cancel *cancel,
                  dprl_buf *out, dprl_plan_cost *cost, dprl_error *err) {
  dprl_ope_config c;
  dprl_ope_noise nz;
  (void)length_limit; /* the result is a few hundred bytes */
  int rc = dprl_ope_config_parse(&c, "dp_plan", text, len, 1, cancel, err);
  if (rc) return rc;
  rc = dprl_ope_calibrate(&c, &nz, err);
  if (rc) {
    dprl_ope_config_free(&c);
    return rc;
  }
  double n = c.episodes, W = c.weight_max;
  /* §15.4 at T = n (mean weight 1) and the worst value of each estimator */
  double se_w = nz.sigma * sqrt(1 + (nz.B / 2) * (nz.B / 2) / (nz.kw * nz.kw)) / n;
  double M = fmax(fabs(c.gmin), fabs(c.gmax));
  double a = nz.c / nz.kw, b = M / nz.kn;
  double se_o = nz.sigma * sqrt(1 + a * a + b * b) / n;
  double predicted = c.weighted ? se_w : se_o;
  /* Var_b(w G) <= E_b[w^2 G^2] <= W M^2 E_b[w] <= W M^2 (ordinary); the
  ** weighted estimator's delta-method variance is at most W B^2 / n. */
  double sampling = (c.weighted ? nz.B : M) * sqrt(W / n);

  memset(cost, 0, sizeof *cost);
  cost->mechanism = "dp_is_value";
  cost->unit = "episode";
  cost->epsilon = c.epsilon;
  cost->delta = c.delta;
  cost->gaussian = 1;
  cost->rho = nz.rho;
  cost->per_group = 0; /* groups over a public partition of the episodes: one release */
  cost->useful = predicted <= nz.B / 2;
  if (!cost->useful)
    dprl_snprintf(cost->why, sizeof cost->why,
             "dp_is_value: at %.0f episodes the noise alone gives the value a standard error "
             "of %.3g, more than half the return range [%g, %g] (weight_max %g, epsilon %g)",
             n, predicted, c.gmin, c.gmax, W, c.epsilon);

  dprl_buf_puts(out, "{\"mechanism\":\"dp_is_value\",\"unit\":\"episode\"");
  dprl_json_put_num(out, "episodes", n);
  dprl_buf_printf(out, ",\"estimator\":\"%s\"", c.weighted ? "weighted" : "ordinary");
  dprl_json_put_num(out, "epsilon", c.epsilon);
  dprl_json_put_num(out, "delta", c.delta);
  dprl_json_put_num(out, "gmin", c.gmin);
  dprl_json_put_num(out, "gmax", c.gmax);
  dprl_ope_put_range(&c, out);
  if (!c.range_given && c.horizon > 1) { /* §15.6: the noise is proportional to gmax - gmin */
    char lo[32], hi[32], m[400];
    dprl_snprintf(m, sizeof m, "the return range [%s, %s] allows a reward in [rmin, rmax] at "
                  "every one of the %lld steps; if the returns are narrower (a reward only at "
                  "the end: an outcome), state gmin and gmax: the noise is proportional to "
                  "gmax - gmin", dprl_json_num(c.gmin, lo, sizeof lo),
                  dprl_json_num(c.gmax, hi, sizeof hi), (long long)c.horizon);
    dprl_json_put_key(out, "note");
    dprl_json_put_string(out, m);
  }
  dprl_json_put_int(out, "horizon", c.horizon);
  dprl_json_put_num(out, "weight_max", W); /* automatic: the grid's top, the most noise */
  dprl_ope_put_weight_auto(&c, out, 0);
  dprl_json_put_num(out, "sensitivity", nz.sens_steps * nz.grid);
  dprl_json_put_num(out, "sigma", nz.sigma);
  dprl_json_put_num(out, "rho", nz.rho);
  dprl_json_put_num(out, "predicted_error", predicted);
  dprl_json_put_key(out, "noise_stderrs");
  dprl_buf_puts(out, "{\"weighted\":");
  dprl_json_put_double(out, se_w);
  dprl_json_put_num(out, "ordinary", se_o);
  dprl_buf_puts(out, "}");
  dprl_json_put_num(out, "sampling_sd_bound", sampling);
  dprl_json_put_num(out, "bias_bound", dprl_ope_bias_bound(&c, &nz));
  dprl_buf_printf(out, ",\"useful\":%s", cost->useful ? "true" : "false");
  if (!cost->useful) {
    dprl_json_put_key(out, "why");
    dprl_json_put_string(out, cost->why);
  }
  dprl_buf_puts(out, "}");
  dprl_ope_config_free(&c);
  return out->oom ? dprl_nomem(err) : DPRL_OK;
}
