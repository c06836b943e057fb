/* mdp_interval.c: dp_mdp_value's error bars (mdp_interval.h, ALGORITHMS.md §14.4). */
#include "mdp/mdp_interval.h"

#include <math.h>
#include <string.h>

#include "dp/noise.h"
#include "mdp/mdp_world.h"

static double dot(const double *x, const double *y, int64_t n) {
  double t = 0;
  for (int64_t i = 0; i < n; i++) t += x[i] * y[i];
  return t;
}

int dprl_mdpv_interval_check(const char *fn, const dprl_mdpv_model *m, const dprl_mdpv_opts *o,
                             dprl_error *err) {
  if (o->interval && !o->bootstrap)
    return dprl_fail(err, DPRL_EINVAL, "%s: option interval \"log\" needs bootstrap draws "
                     "(at least 2), got bootstrap 0", fn);
  if (o->interval && m->tent)
    return dprl_fail(err, DPRL_EINVAL, "%s: option interval \"log\" needs a tabular model: this "
                     "one has tent features, whose episodes cannot be redrawn from the model "
                     "(interval \"none\")", fn);
  return DPRL_OK;
}

/* ---- the noise bootstrap ------------------------------------------------------ */

static void moments_add(dprl_mdpv_moments *mo, double x, const double *V, int64_t S,
                        int64_t count) {
  double d = x - mo->mean;
  mo->mean += d / (double)count;
  mo->m2 += d * (x - mo->mean);
  for (int64_t s = 0; s < S; s++) {
    double ds = V[s] - mo->means[s];
    mo->means[s] += ds / (double)count;
    mo->m2s[s] += ds * (V[s] - mo->means[s]);
  }
}

int dprl_mdpv_noise_bootstrap(const dprl_mdpv_model *m, const dprl_mdpv_opts *o,
                              const dprl_mdpv_policies *p, dprl_mdpv_work *w,
                              dprl_mdpv_moments *mo, dprl_cancel *cancel, dprl_error *err) {
  dprl_mdpv_est eb = {0};
  dprl_rng rng;
  dprl_mdpv_solved how;
  int64_t S = m->S;
  double *scratch = dprl_malloc_array((size_t)S + 3, sizeof *scratch); /* a redraw: <= S + 3 */
  double *V = dprl_malloc_array((size_t)S, sizeof *V);
  int rc = !scratch || !V ? dprl_nomem(err) : DPRL_OK;
  dprl_rng_init_seeded(&rng, o->seed, DPRL_STREAM_MDP_BOOTSTRAP);
  for (int64_t b = 1; b <= o->bootstrap && !rc; b++) {
    rc = dprl_mdpv_estimate(m, &o->est, &rng, scratch, &eb, cancel, err);
    for (size_t i = 0; i < p->n && !rc; i++) {
      rc = dprl_mdpv_evaluate_policy(&eb, o, &p->pol[i], w, V, &how, cancel, err);
      if (!rc) moments_add(&mo[i], dot(eb.start, V, S), V, S, b);
    }
  }
  dprl_rng_wipe(&rng);
  dprl_mdpv_est_free(&eb);
  dprl_free(scratch);
  dprl_free(V);
  return rc;
}

/* ---- the log bootstrap ---------------------------------------------------------- */

/* The q-quantile of sorted x[n] (linear between order statistics). */
static double quantile(const double *x, int64_t n, double q) {
  double h = q * (double)(n - 1);
  int64_t i = (int64_t)floor(h);
  if (i >= n - 1) return x[n - 1];
  return x[i] + (h - (double)i) * (x[i + 1] - x[i]);
}

static int by_value(const void *x, const void *y) {
  double a = *(const double *)x, b = *(const double *)y;
  return (a > b) - (a < b);
}

int dprl_mdpv_log_bootstrap(const dprl_mdpv_model *m, const dprl_mdpv_opts *o,
                            const dprl_mdpv_policies *p, const double *value,
                            dprl_mdpv_work *w, dprl_mdpv_interval *out,
                            dprl_mdpv_world_info *info, dprl_cancel *cancel, dprl_error *err) {
  int64_t S = m->S, B = o->bootstrap;
  size_t n = p->n;
  dprl_mdpv_world *wd = NULL;
  const dprl_mdpv_model *r;
  dprl_mdpv_est eb = {0};
  dprl_mdpv_solved how;
  double *truth = dprl_malloc_array(n, sizeof *truth);
  double *D = dprl_malloc_array(n * (size_t)B, sizeof *D);
  double *V = dprl_malloc_array((size_t)S, sizeof *V);
  double *scratch = dprl_malloc_array((size_t)S + 3, sizeof *scratch);
  int rc = dprl_mdpv_world_open(m, &o->est, o->seed, &wd, cancel, err);
  if (!rc && (!truth || !D || !V || !scratch)) rc = dprl_nomem(err);
  for (int64_t b = 0; b < B && !rc; b++) {
    rc = dprl_mdpv_world_release(wd, &r, cancel, err);
    for (size_t i = 0; i < n && !rc; i++) { /* this draw's world's values */
      const dprl_mdpv_est *t = dprl_mdpv_world_truth(wd);
      rc = dprl_mdpv_evaluate_policy(t, o, &p->pol[i], w, V, &how, cancel, err);
      truth[i] = dot(t->start, V, S);
    }
    if (!rc) rc = dprl_mdpv_estimate(r, &o->est, NULL, scratch, &eb, cancel, err);
    for (size_t i = 0; i < n && !rc; i++) {
      rc = dprl_mdpv_evaluate_policy(&eb, o, &p->pol[i], w, V, &how, cancel, err);
      D[i * (size_t)B + (size_t)b] = dot(eb.start, V, S) - truth[i];
    }
  }
  for (size_t i = 0; i < n && !rc; i++) {
    double *d = D + i * (size_t)B, mean = 0;
    rc = dprl_sort(d, (size_t)B, sizeof *d, by_value, cancel, err);
    for (int64_t b = 0; b < B; b++) mean += d[b] / (double)B;
    out[i].low = value[i] - quantile(d, B, (1 + o->level) / 2);
    out[i].high = value[i] - quantile(d, B, (1 - o->level) / 2);
    out[i].bias = mean;
  }
  if (!rc) dprl_mdpv_world_describe(wd, info);
  dprl_mdpv_world_close(wd);
  dprl_mdpv_est_free(&eb);
  dprl_free(truth);
  dprl_free(D);
  dprl_free(V);
  dprl_free(scratch);
  return rc;
}

/* ---- what the release cannot value ---------------------------------------------- */

int dprl_mdpv_interval_unknown(const dprl_mdpv_model *m, const dprl_mdpv_opts *o,
                               const dprl_mdpv_policies *p, const double *value,
                               dprl_mdpv_work *w, dprl_mdpv_interval *out, dprl_cancel *cancel,
                               dprl_error *err) {
  dprl_mdpv_est eo = {0};
  dprl_mdpv_est_opts best = o->est;
  dprl_mdpv_solved how;
  int64_t S = m->S;
  double *V = dprl_malloc_array((size_t)S, sizeof *V);
  double *scratch = dprl_malloc_array((size_t)S + 3, sizeof *scratch);
  int rc = !V || !scratch ? dprl_nomem(err) : DPRL_OK;
  best.optimistic = 1;
  if (!rc) rc = dprl_mdpv_estimate(m, &best, NULL, scratch, &eo, cancel, err);
  for (size_t i = 0; i < p->n && !rc; i++) {
    rc = dprl_mdpv_evaluate_policy(&eo, o, &p->pol[i], w, V, &how, cancel, err);
    if (rc) break;
    /* values are monotone in the rewards: the difference is >= 0 up to the
    ** solves' rounding, which the max keeps from narrowing the interval */
    out[i].unknown = fmax(0, dot(eo.start, V, S) - value[i]);
    out[i].high += out[i].unknown;
  }
  dprl_mdpv_est_free(&eo);
  dprl_free(V);
  dprl_free(scratch);
  return rc;
}
