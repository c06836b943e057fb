/*
** allocate.c: a study's budget divided among its releases by shares
** (allocate.h, ALGORITHMS.md §12.3).  Plain C over the options' trees.
*/
#include "study/allocate.h"

#include <math.h>
#include <string.h>

typedef struct alloc_release {
  double share, k; /* its share, and the charges it takes (groups when per group) */
  int gaussian;
  double epsilon, delta;
} alloc_release;

/* o with epsilon and delta set (and no share), as a new tree. */
static dprl_json *with_budget(const dprl_json *o, double eps, double delta, dprl_cancel *cancel,
                              dprl_error *err) {
  static const char *const skip[] = {"epsilon", "delta", "share", NULL};
  dprl_buf b = {0};
  dprl_json *t = NULL;
  int rc = dprl_json_write(&b, o, skip, cancel, err);
  if (!rc && b.len >= 2) {
    b.len--; /* the closing brace */
    if (b.len == 1) dprl_buf_puts(&b, "\"epsilon\":"), dprl_json_put_double(&b, eps);
    else dprl_json_put_num(&b, "epsilon", eps);
    dprl_json_put_num(&b, "delta", delta);
    dprl_buf_puts(&b, "}");
    if (b.oom) dprl_nomem(err);
    else t = dprl_json_parse(b.data, b.len, err);
  }
  dprl_buf_free(&b);
  return t;
}

static int plan_at(size_t i, const dprl_json *o, double eps, double delta,
                   dprl_alloc_plan_fn plan, void *ctx, dprl_plan_cost *cost, dprl_cancel *cancel,
                   dprl_error *err) {
  dprl_json *t = with_budget(o, eps, delta, cancel, err);
  if (!t) return err->code;
  int rc = plan(ctx, i, t, cost, err);
  dprl_json_free(t);
  return rc;
}

/* The share and charges of release i; no epsilon or delta of its own. */
static int read_release(const char *fn, size_t i, const dprl_json *o, alloc_release *r,
                        dprl_error *err) {
  if (o->type != DPRL_JSON_OBJECT)
    return dprl_fail(err, DPRL_EINVAL, "%s: releases[%zu] must be an object of dp_plan "
                     "options, got %s", fn, i, dprl_json_type_name(o->type));
  for (const char *const *k = (const char *const[]){"epsilon", "delta", NULL}; *k; k++)
    if (dprl_json_get(o, *k))
      return dprl_fail(err, DPRL_EINVAL, "%s: releases[%zu]: option %s is chosen by allocate: "
                       "give the release's share instead", fn, i, *k);
  const dprl_json *w = dprl_json_get(o, "share"), *g = dprl_json_get(o, "groups");
  r->share = 1;
  if (w && !(w->type == DPRL_JSON_NUMBER && w->num > 0 && w->num <= 1e12)) {
    char got[64];
    dprl_json_describe(w, got, sizeof got);
    return dprl_fail(err, DPRL_EINVAL, "%s: releases[%zu]: option share must be a number in "
                     "(0, 1e12], got %s", fn, i, got);
  }
  if (w) r->share = w->num;
  /* checked again when the study is planned; 1 here when it is bad */
  r->k = g && g->type == DPRL_JSON_NUMBER && g->num >= 1 && g->num <= 1e9 ? floor(g->num) : 1;
  return DPRL_OK;
}

/* The largest epsilon (at delta) whose planned rho is at most target: a
** bracket by doubling and halving, then bisection; a plan that fails (an
** epsilon above the mechanism's range) counts as too large. */
static int epsilon_for_rho(const char *fn, size_t i, const dprl_json *o, double target,
                           double delta, dprl_alloc_plan_fn plan, void *ctx, double *eps,
                           int *too_small, dprl_cancel *cancel, dprl_error *err) {
  dprl_plan_cost c;
  dprl_error e2 = {0};
  double lo = 0, hi = 1;
  for (;;) { /* hi: too large, or the largest tried */
    int rc = plan_at(i, o, hi, delta, plan, ctx, &c, cancel, &e2);
    if (rc == DPRL_EINTR || rc == DPRL_ENOMEM) return dprl_fail(err, rc, "%s", e2.msg);
    if (rc || c.rho > target) break;
    lo = hi;
    if (hi >= 1e6) break;
    hi *= 2;
  }
  while (lo == 0) { /* lo: small enough */
    double t = hi / 2;
    if (t < 1e-9) {
      *too_small = 1;
      return dprl_fail(err, DPRL_EINVAL, "%s: releases[%zu]: its part of the budget (rho %.3g) "
                       "is below what an epsilon of 1e-9 costs it at any delta down to 1e-60: "
                       "fewer releases or a larger share", fn, i, target);
    }
    int rc = plan_at(i, o, t, delta, plan, ctx, &c, cancel, &e2);
    if (rc == DPRL_EINTR || rc == DPRL_ENOMEM) return dprl_fail(err, rc, "%s", e2.msg);
    if (!rc && c.rho <= target) lo = t;
    else hi = t;
  }
  for (int it = 0; it < 60 && hi - lo > lo * 1e-12; it++) {
    double mid = lo + (hi - lo) / 2;
    int rc = plan_at(i, o, mid, delta, plan, ctx, &c, cancel, &e2);
    if (rc == DPRL_EINTR || rc == DPRL_ENOMEM) return dprl_fail(err, rc, "%s", e2.msg);
    if (!rc && c.rho <= target) lo = mid;
    else hi = mid;
  }
  *eps = lo;
  return DPRL_OK;
}

/* Basic composition, or the releases that are not Gaussian under zCDP. */
static void plain_parts(alloc_release *r, size_t n, double W, double eps_left,
                        double delta_left) {
  for (size_t i = 0; i < n; i++) {
    if (r[i].gaussian) continue;
    double part = r[i].share / W / r[i].k;
    r[i].epsilon = eps_left * part * (1 - 0x1p-40); /* rounded down: the sum fits */
    r[i].delta = delta_left * part * (1 - 0x1p-40);
  }
}

static int choose(const char *fn, const dprl_json *rel, const dprl_spent *s, const char *unit,
                  alloc_release *r, dprl_alloc_plan_fn plan, void *ctx, dprl_cancel *cancel,
                  dprl_error *err) {
  size_t n = rel->n;
  double W = 0, WG = 0, delta_left = s->delta_b - s->delta_plain;
  double eps_left = s->eps_b - dprl_spent_epsilon(s);
  if (!(s->delta_b > 0))
    return dprl_fail(err, DPRL_EINVAL, "%s: allocate needs a budget with delta > 0, got %g", fn,
                     s->delta_b);
  if (!(eps_left > 0) || !(delta_left > 0))
    return dprl_fail(err, DPRL_EINVAL, "%s: allocate: the budget has nothing left (epsilon "
                     "%.4g of %.4g spent)", fn, dprl_spent_epsilon(s), s->eps_b);
  for (size_t i = 0; i < n; i++) {
    dprl_plan_cost c;
    int rc = read_release(fn, i, rel->items[i], &r[i], err);
    if (!rc) rc = plan_at(i, rel->items[i], 1, s->delta_b, plan, ctx, &c, cancel, err);
    if (rc) return rc;
    if (strcmp(c.unit, unit) != 0)
      return dprl_fail(err, DPRL_EINVAL, "%s: releases[%zu]: its unit of privacy is one %s, and "
                       "the budget protects one %s: allocate gives it no share", fn, i, c.unit,
                       unit);
    r[i].gaussian = s->zcdp && c.gaussian;
    if (!c.per_group) r[i].k = 1;
    W += r[i].share;
    WG += r[i].gaussian ? r[i].share : 0;
  }
  /* half the delta left stays for converting rho, spent or to come */
  plain_parts(r, n, W, eps_left, WG > 0 || s->rho > 0 ? delta_left / 2 : delta_left);
  if (WG == 0) return DPRL_OK;
  dprl_upsum e = {s->eps_plain, 0}, d = {s->delta_plain, 0};
  for (size_t i = 0; i < n; i++)
    if (!r[i].gaussian) {
      dprl_upsum_add_times(&e, r[i].k, r[i].epsilon);
      dprl_upsum_add_times(&d, r[i].k, r[i].delta);
    }
  double rho_left = dprl_zcdp_rho_left(s->rho, dprl_upsum_total(&e), dprl_upsum_total(&d),
                                       s->eps_b, s->delta_b);
  if (!(rho_left > 0))
    return dprl_fail(err, DPRL_EINVAL, "%s: allocate: no rho is left for the Gaussian releases",
                     fn);
  for (size_t i = 0; i < n; i++) {
    if (!r[i].gaussian) continue;
    double target = rho_left * (1 - 0x1p-40) * (r[i].share / WG) / r[i].k;
    /* at the budget's delta, or a smaller one when even a tiny epsilon
    ** costs more rho there (the ledger charges a Gaussian release its rho
    ** only, so its own delta is free to choose) */
    int rc = DPRL_OK, too_small = 1;
    for (double dd = s->delta_b; too_small && dd >= 1e-60; dd *= 1e-6) {
      too_small = 0;
      r[i].delta = dd;
      rc = epsilon_for_rho(fn, i, rel->items[i], target, dd, plan, ctx, &r[i].epsilon,
                           &too_small, cancel, err);
      if (rc && !too_small) return rc;
    }
    if (rc) return rc;
  }
  return DPRL_OK;
}

int dprl_study_allocate(const char *fn, const dprl_json *rel, const dprl_spent *spent,
                        const char *unit, dprl_alloc_plan_fn plan, void *ctx,
                        dprl_cancel *cancel, dprl_json ***trees, dprl_error *err) {
  *trees = NULL;
  if (rel->type != DPRL_JSON_ARRAY || rel->n == 0)
    return dprl_fail(err, DPRL_EINVAL, "%s: releases must be a non-empty array of dp_plan "
                     "options, got %s", fn, rel->type == DPRL_JSON_ARRAY ? "an empty array"
                                                         : dprl_json_type_name(rel->type));
  alloc_release *r = dprl_malloc_array(rel->n, sizeof *r);
  dprl_json **t = dprl_malloc_array(rel->n, sizeof *t);
  int rc = r && t ? DPRL_OK : dprl_nomem(err);
  if (t) memset(t, 0, rel->n * sizeof *t);
  if (!rc) rc = choose(fn, rel, spent, unit, r, plan, ctx, cancel, err);
  for (size_t i = 0; !rc && i < rel->n; i++)
    if (!(t[i] = with_budget(rel->items[i], r[i].epsilon, r[i].delta, cancel, err))) rc = err->code;
  if (rc && t) {
    for (size_t i = 0; i < rel->n; i++) dprl_json_free(t[i]);
    dprl_free(t);
    t = NULL;
  }
  dprl_free(r);
  *trees = t;
  return rc;
}
