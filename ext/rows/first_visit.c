/* first_visit.c: first-visit returns and the signature (see first_visit.h). */
#include "rows/first_visit.h"

#include <math.h>
#include <string.h>

int dprl_return_rule_parse(const dprl_options *o, dprl_return_rule *r) {
  int rc;
  r->has_fmax = dprl_opt_has(o, "fmax");
  r->has_fmin = dprl_opt_has(o, "fmin");
  if ((rc = dprl_opt_number(o, "gamma", 1, 0, DPRL_CLOSED(0, 1), &r->gamma)) ||
      (rc = dprl_opt_reward_bounds(o, &r->rmin, &r->rmax)) ||
      (rc = dprl_opt_number(o, "fmin", 0, 0, DPRL_AT_MOST(0), &r->fmin)) ||
      (rc = dprl_opt_number(o, "fmax", 0, 0, DPRL_POSITIVE, &r->fmax)) ||
      (rc = dprl_opt_int(o, "max_states", 0, 0, DPRL_CLOSED(1, 2147483647), &r->max_states)))
    return rc;
  if (r->gamma == 1.0 && !r->has_fmax)
    return dprl_fail(o->err, DPRL_EINVAL,
                     "%s: option gamma = 1 needs option fmax (a public bound on returns), "
                     "got gamma 1 without fmax",
                     o->fn);
  if (r->gamma == 1.0 && r->rmin < 0 && !r->has_fmin)
    return dprl_fail(o->err, DPRL_EINVAL,
                     "%s: option gamma = 1 with rmin < 0 needs option fmin (a public lower "
                     "bound on returns), got rmin %.17g without fmin",
                     o->fn, r->rmin);
  /* Every return lies in [min(0, rmin), max(0, rmax)] / (1 - gamma). */
  if (!r->has_fmin) r->fmin = r->rmin < 0 ? r->rmin / (1.0 - r->gamma) : 0.0;
  if (!r->has_fmax) r->fmax = r->rmax > 0 ? r->rmax / (1.0 - r->gamma) : 0.0;
  if (!(r->fmax > r->fmin) || !isfinite(r->fmax - r->fmin))
    return dprl_fail(o->err, DPRL_EINVAL,
                     "%s: the return range [fmin, fmax] = [%.17g, %.17g] must be finite and "
                     "not empty",
                     o->fn, r->fmin, r->fmax);
  return DPRL_OK;
}

double dprl_return_bound(const dprl_return_rule *r) { return r->fmax - r->fmin; }

int dprl_fv_stats_init(dprl_fv_stats *st, int64_t n_states, dprl_cancel *cancel,
                       dprl_error *err) {
  memset(st, 0, sizeof *st);
  st->n_states = n_states;
  st->visits = dprl_calloc_polled((size_t)n_states, sizeof *st->visits, cancel, err);
  if (st->visits)
    st->return_sum = dprl_calloc_polled((size_t)n_states, sizeof *st->return_sum, cancel, err);
  if (!st->return_sum) {
    dprl_fv_stats_free(st);
    return err->code;
  }
  return DPRL_OK;
}

void dprl_fv_stats_free(dprl_fv_stats *st) {
  dprl_free(st->visits);
  dprl_free(st->return_sum);
  st->visits = NULL;
  st->return_sum = NULL;
}

double dprl_fv_mean(const dprl_fv_stats *st, int64_t s) {
  return st->visits[s] ? st->return_sum[s] / (double)st->visits[s] : 0.0;
}

int dprl_fv_scratch_init(dprl_fv_scratch *sc, int64_t n_states, dprl_cancel *cancel,
                         dprl_error *err) {
  memset(sc, 0, sizeof *sc);
  sc->stamp = dprl_calloc_polled((size_t)n_states, sizeof *sc->stamp, cancel, err);
  return sc->stamp ? DPRL_OK : err->code;
}

void dprl_fv_scratch_free(dprl_fv_scratch *sc) {
  dprl_free(sc->G);
  dprl_free(sc->stamp);
  memset(sc, 0, sizeof *sc);
}

static double clamp(double x, double lo, double hi) {
  return x < lo ? lo : x > hi ? hi : x;
}

int dprl_fv_add_episode(dprl_fv_stats *st, dprl_fv_scratch *sc,
                        const dprl_return_rule *rule, const dprl_step *steps,
                        size_t n, dprl_fv_emit emit, void *ctx, dprl_error *err) {
  if (n > sc->cap) {
    double *G = dprl_realloc(sc->G, n * sizeof *G);
    if (!G) return dprl_nomem(err);
    sc->G = G;
    sc->cap = n;
  }
  /* Backward pass: G_t = r_t + gamma G_{t+1} (clamped rewards: §1). */
  double g = 0.0;
  for (size_t i = n; i-- > 0;) {
    g = clamp(steps[i].reward, rule->rmin, rule->rmax) + rule->gamma * g;
    sc->G[i] = g;
  }
  /* Forward pass: the first time each state is seen is its first visit. */
  uint64_t mark = ++sc->episode_no;
  int64_t seen = 0, limit = rule->max_states > 0 ? rule->max_states : INT64_MAX;
  for (size_t i = 0; i < n && seen < limit; i++) {
    uint32_t s = steps[i].state;
    if (sc->stamp[s] == mark) continue;
    sc->stamp[s] = mark;
    seen++;
    double F = clamp(sc->G[i], rule->fmin, rule->fmax);
    if (st) {
      st->visits[s]++;
      st->return_sum[s] += F;
    }
    if (emit) {
      int rc = emit(ctx, s, steps[i].t, F);
      if (rc) return rc;
    }
  }
  if (st) st->m++;
  return DPRL_OK;
}
