/*
** plan.c: the options that fix dp_prefix_stable's calibration (read here
** for the release, dp_prefix_calibrate and dp_plan alike), and dp_plan's
** plan of a release before any epsilon is spent (prefix_stable.h;
** ALGORITHMS.md section 7.2):
**
**   SELECT dp_plan('{"mechanism": "dp_prefix_stable", "epsilon": 1, "delta": 1e-6,
**                    "p_min": 0.02, "T": 100, "L": 25, "experts": 240, "agreement": 0.9}');
**
** From public options and hypothetical sizes only: the threshold a count
** must pass, the most a count can reach (the number of experts), and the
** expected number and length of the released prefixes when the experts'
** summed probability of a prefix is agreement * experts.
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "prefix_stable/prefix_stable.h"

int dprl_prefix_read_calibration(const dprl_options *o, dprl_prefix_calib_in *in) {
  int rc = dprl_opt_number(o, "epsilon", 1, 0, ((dprl_range){0, DPRL_PREFIX_MAX_EPS, 1, 0}),
                           &in->epsilon);
  if (!rc) rc = dprl_opt_number(o, "delta", 1, 0, DPRL_OPEN(0, 1), &in->delta);
  if (!rc) rc = dprl_opt_number(o, "p_min", 1, 0, DPRL_OPEN(0, 1), &in->p_min);
  if (!rc) rc = dprl_opt_int(o, "T", 1, 0, DPRL_CLOSED(1, DPRL_PREFIX_MAX_T), &in->T);
  if (!rc) rc = dprl_opt_int(o, "L", 1, 0, DPRL_AT_LEAST(1), &in->L);
  if (!rc) rc = dprl_opt_choice(o, "accountant", dprl_prefix_accountant_names, 0, &in->accountant);
  return rc;
}

/* ---- One run's expectation (section 7.2) --------------------------------
** In units of the threshold's scale b0 = 2/eps': the threshold noise u has
** density e^{-|u|}/2, query j says "top" iff its noise exceeds u - w_j,
** w_j = (count_j - threshold)/b0, with probability S(u - w_j) given u
** (Laplace of scale beta = b_query/b0 = 2). So, given u, the run releases at
** least j steps with probability prod_{i<=j} S(u - w_i), and
**   P(k >= 1) = P(X1 - X0 > -w_1)       (closed form below),
**   E[k]      = int e^{-|u|}/2 sum_j prod_{i<=j} S(u - w_i) du,
** the second by adaptive Gauss-Kronrod quadrature of E[k] / P(k >= 1),
** which lies in [1, n] however small P(k >= 1) is. */

typedef struct expect_ctx {
  const double *w; /* w_j per step, or one w for every step (n_w = 1) */
  int64_t n_w, n;
  double beta, log_p1;
  dprl_cancel *cancel;
  dprl_error *err;
  int rc;
} expect_ctx;

/* S(x) = P(Laplace(beta) > x), and 1 - S(x), each without cancellation. */
static double surv(double x, double beta) {
  return x >= 0 ? 0.5 * exp(-x / beta) : 1 - 0.5 * exp(x / beta);
}
static double surv_c(double x, double beta) {
  return x >= 0 ? 1 - 0.5 * exp(-x / beta) : 0.5 * exp(x / beta);
}
static double log_surv(double x, double beta) {
  return x >= 0 ? log(0.5) - x / beta : log1p(-0.5 * exp(x / beta));
}

/* ln P(X1 - X0 > t), X1 ~ Laplace(beta), X0 ~ Laplace(1), beta > 1: the
** density of the difference is (beta e^{-|x|/beta} - e^{-|x|}) /
** (2 (beta^2 - 1)), whose tail at t >= 0 is
** (beta^2 e^{-t/beta} - e^{-t}) / (2 (beta^2 - 1)). */
static double log_tail(double t, double beta) {
  double d = 2 * (beta * beta - 1);
  if (t >= 0) return -t / beta + log(beta * beta - exp(-t * (1 - 1 / beta))) - log(d);
  double s = -t;
  return log1p(-(beta * beta * exp(-s / beta) - exp(-s)) / d);
}

/* At u: f[0] = h1(u) / P(k >= 1) with h1 = e^{-|u|}/2 S(u - w_1), and f[1]
** = f[0] (1 + S_2 (1 + S_3 (... (1 + S_n)))), the integrand of E[k]. */
static void integrand(expect_ctx *c, double u, double f[2]) {
  double w1 = c->w[0];
  double g = exp(log(0.5) - fabs(u) + log_surv(u - w1, c->beta) - c->log_p1), r = 1;
  if (c->n_w == 1) { /* sum_{j<n} S^j = (1 - S^n) / (1 - S) */
    double q = surv_c(u - w1, c->beta);
    r = q > 0 ? -expm1((double)c->n * log_surv(u - w1, c->beta)) / q : (double)c->n;
  } else {
    for (int64_t j = c->n - 1; j >= 1; j--) r = 1 + surv(u - c->w[j], c->beta) * r;
  }
  if (!c->rc) c->rc = dprl_cancel_poll(c->cancel, 20 + 20 * (uint64_t)(c->n_w > 1 ? c->n : 1),
                                       c->err);
  f[0] = g;
  f[1] = g * r;
}

/* Gauss-Kronrod 15 / Gauss 7 nodes and weights on [-1, 1] (the odd-indexed
** Kronrod nodes are the Gauss ones). */
static const double xk[8] = {0.991455371120812639206854697526329, 0.949107912342758524526189684047851,
                             0.864864423359769072789712788640926, 0.741531185599394439863864773280788,
                             0.586087235467691130294144845693013, 0.405845151377397166906606412076961,
                             0.207784955007898467600689403773245, 0};
static const double wk[8] = {0.022935322010529224963732008058970, 0.063092092629978553290700663189204,
                             0.104790010322250183839876322541518, 0.140653259715525918745189590510238,
                             0.169004726639267902826583426598550, 0.190350578064785409913256402421014,
                             0.204432940075298892414161999234649, 0.209482141084727828012999174891714};
static const double wg[4] = {0.129484966168869693270611432679082, 0.279705391489276667901467771423780,
                             0.381830050505118944950369775488975, 0.417959183673469387755102040816327};

/* The integral of both components over [a, b] and its error estimate
** |K15 - G7| (the larger of the two components'). */
static double gk15(expect_ctx *c, double a, double b, double res[2]) {
  double h = (b - a) / 2, mid = (a + b) / 2, k[2] = {0, 0}, gs[2] = {0, 0}, f[2], f2[2];
  integrand(c, mid, f);
  for (int t = 0; t < 2; t++) k[t] = wk[7] * f[t], gs[t] = wg[3] * f[t];
  for (int i = 0; i < 7; i++) {
    integrand(c, mid - h * xk[i], f);
    integrand(c, mid + h * xk[i], f2);
    for (int t = 0; t < 2; t++) {
      k[t] += wk[i] * (f[t] + f2[t]);
      if (i % 2) gs[t] += wg[i / 2] * (f[t] + f2[t]);
    }
  }
  double e = 0;
  for (int t = 0; t < 2; t++) {
    res[t] = h * k[t];
    double d = fabs(h * (k[t] - gs[t]));
    if (d > e) e = d;
  }
  return e;
}

/* Global adaptive quadrature: the panel with the largest error estimate is
** halved until the total estimate is within a relative 1e-11 of the
** integral (which is at least 1), or the panels run out: the error of a
** sum near the precision of doubles may never get there, and the plan must
** end. */
typedef struct panel {
  double a, b, r[2], e;
} panel;

#define PANELS_MORE 2000

static int integrate(expect_ctx *c, const double *cut, int64_t nc, double acc[2]) {
  size_t cap = (size_t)nc + 1 + PANELS_MORE, n = 0;
  panel *p = dprl_malloc(cap * sizeof *p);
  if (!p) return dprl_nomem(c->err);
  for (int64_t i = 0; i + 1 < nc && !c->rc; i++)
    if (cut[i + 1] > cut[i]) {
      p[n] = (panel){cut[i], cut[i + 1], {0, 0}, 0};
      p[n].e = gk15(c, p[n].a, p[n].b, p[n].r);
      n++;
    }
  while (!c->rc) {
    double tot = 0, err = 0;
    size_t worst = 0;
    for (size_t i = 0; i < n; i++) {
      tot += p[i].r[1];
      err += p[i].e;
      if (p[i].e > p[worst].e) worst = i;
    }
    if (err <= 1e-11 * fmax(1, fabs(tot)) || n == cap) break;
    double a = p[worst].a, b = p[worst].b, m = (a + b) / 2;
    p[worst] = (panel){a, m, {0, 0}, 0};
    p[worst].e = gk15(c, a, m, p[worst].r);
    p[n] = (panel){m, b, {0, 0}, 0};
    p[n].e = gk15(c, m, b, p[n].r);
    n++;
  }
  acc[0] = acc[1] = 0;
  for (size_t i = 0; i < n; i++) acc[0] += p[i].r[0], acc[1] += p[i].r[1];
  dprl_free(p);
  return c->rc;
}

static int cmp_double(const void *x, const void *y) {
  double a = *(const double *)x, b = *(const double *)y;
  return (a > b) - (a < b);
}

int dprl_prefix_expect(const dprl_prefix_params *pp, const double *counts, int64_t n_counts,
                       int64_t n, dprl_cancel *cancel, dprl_prefix_expectation *out,
                       dprl_error *err) {
  memset(out, 0, sizeof *out);
  if (n < 1 || n_counts < 1 || (n_counts > 1 && n > n_counts))
    return dprl_fail(err, DPRL_EINVAL, "%lld steps with %lld counts", (long long)n,
                     (long long)n_counts);
  int64_t nw = n_counts == 1 ? 1 : n;
  double *w = dprl_malloc((size_t)(2 * nw + 3) * sizeof *w), *cut = w + nw;
  if (!w) return dprl_nomem(err);
  for (int64_t j = 0; j < nw; j++) w[j] = (counts[j] - pp->threshold_base) / pp->b_threshold;
  expect_ctx c = {w, nw, n, pp->b_query / pp->b_threshold, 0, cancel, err, DPRL_OK};
  c.log_p1 = log_tail(-w[0], c.beta);
  /* The integrand is at most n e^{-rate |u|} with rate 1 right of 0 and
  ** 1 - 1/beta left of it (h1(u) / h1(0) decays so, h1(0) <= P(k >= 1)),
  ** so beyond these ends each tail is below e^{-42} / rate. */
  double span = 42 + log((double)n), hi = span, lo = -span / (1 - 1 / c.beta);
  int64_t nc = 0;
  cut[nc++] = lo;
  cut[nc++] = 0;
  cut[nc++] = hi;
  for (int64_t j = 0; j < nw; j++)
    if (w[j] > lo && w[j] < hi) cut[nc++] = w[j];
  qsort(cut, (size_t)nc, sizeof *cut, cmp_double);
  double acc[2] = {0, 0};
  c.rc = integrate(&c, cut, nc, acc);
  dprl_free(w);
  if (c.rc) return c.rc;
  out->log_p_release = c.log_p1;
  out->p_release = exp(c.log_p1);
  out->normalizer = acc[0];
  out->length = acc[1] / acc[0];
  return DPRL_OK;
}

/* ---- dp_plan ------------------------------------------------------------ */

static const char *const plan_keys[] = {"mechanism", "epsilon", "delta", "p_min", "T", "L",
                                        "accountant", "experts", "agreement", "length", NULL};

/* "agreement": a number in [0, 1], or a non-increasing array of them (one
** per prefix length) into *prof (dprl_malloc'd) and *n_prof. */
static int read_agreement(const dprl_options *o, double *a, double **prof, int64_t *n_prof) {
  const dprl_json *v = dprl_opt_get(o, "agreement");
  *prof = NULL;
  *n_prof = 0;
  if (!v)
    return dprl_fail(o->err, DPRL_EINVAL, "%s: option agreement is required: the hypothetical "
                     "share of the experts' probability a prefix gets (count / experts), a "
                     "number in [0, 1] or one per prefix length", o->fn);
  if (v->type == DPRL_JSON_NUMBER) return dprl_opt_number(o, "agreement", 1, 0, DPRL_CLOSED(0, 1), a);
  char got[64];
  dprl_json_describe(v, got, sizeof got);
  if (v->type != DPRL_JSON_ARRAY)
    return dprl_fail(o->err, DPRL_EINVAL, "%s: option agreement must be a number in [0, 1] or "
                     "an array of them (one per prefix length), got %s", o->fn, got);
  if (v->n < 1 || v->n > DPRL_PREFIX_PLAN_MAX_PROFILE)
    return dprl_fail(o->err, DPRL_EINVAL, "%s: option agreement must hold 1 to %d prefix "
                     "lengths, got an array of %zu", o->fn, DPRL_PREFIX_PLAN_MAX_PROFILE, v->n);
  for (size_t j = 0; j < v->n; j++)
    if (!(v->items[j]->type == DPRL_JSON_NUMBER && v->items[j]->num >= 0 &&
          v->items[j]->num <= 1)) {
      dprl_json_describe(v->items[j], got, sizeof got);
      return dprl_fail(o->err, DPRL_EINVAL, "%s: option agreement[%zu] must be in [0, 1], "
                       "got %s", o->fn, j, got);
    }
  for (size_t j = 1; j < v->n; j++)
    if (v->items[j]->num > v->items[j - 1]->num)
      return dprl_fail(o->err, DPRL_EINVAL, "%s: option agreement must not increase with the "
                       "prefix's length (a prefix's count is at most that of its own prefixes), "
                       "got %g at length %zu after %g", o->fn, v->items[j]->num, j + 1,
                       v->items[j - 1]->num);
  if (!(*prof = dprl_malloc(v->n * sizeof **prof))) return dprl_nomem(o->err);
  for (size_t j = 0; j < v->n; j++) (*prof)[j] = v->items[j]->num;
  *n_prof = (int64_t)v->n;
  *a = (*prof)[0];
  return DPRL_OK;
}

/* x rounded, with thousands separators: "12,022". */
static const char *grouped(double x, char *buf, size_t n) {
  char d[48];
  dprl_snprintf(d, sizeof d, "%.0f", x);
  size_t len = strlen(d), o = 0, lead = d[0] == '-';
  for (size_t i = 0; i < len && o + 2 < n; i++) {
    buf[o++] = d[i];
    size_t left = len - i - 1;
    if (i >= lead && left > 0 && left % 3 == 0) buf[o++] = ',';
  }
  buf[o] = 0;
  return buf;
}

/* The cost (dp/plan.h): the release charges (epsilon, delta) of unit
** "expert" once per call (sql_prefix_stable.c). It is a table-valued
** function, never an aggregate, so no GROUP BY splits it: per_group 0. */
static void plan_cost(const dprl_prefix_params *pp, int64_t m, double a, double releases,
                      dprl_plan_cost *cost) {
  char t[32], e[32], k[32];
  memset(cost, 0, sizeof *cost);
  cost->mechanism = "dp_prefix_stable";
  cost->unit = "expert";
  cost->epsilon = pp->eps1;
  cost->delta = pp->delta1;
  cost->useful = !(pp->threshold_base > (double)m) && releases >= 1;
  grouped(pp->threshold_base, t, sizeof t);
  grouped((double)m, e, sizeof e);
  if (pp->threshold_base > (double)m)
    dprl_snprintf(cost->why, sizeof cost->why, "threshold %s above the %s experts (the most a count "
             "can reach): no prefix can be released (%.2g expected over the T = %lld runs)", t,
             e, releases, (long long)pp->T);
  else if (!cost->useful)
    dprl_snprintf(cost->why, sizeof cost->why, "at agreement %g of the %s experts (count %s against "
             "threshold %s) the T = %lld runs are expected to release %.2g prefixes: fewer "
             "than 1", a, e, grouped(a * (double)m, k, sizeof k), t, (long long)pp->T, releases);
}

int dprl_prefix_plan(const char *text, size_t len, int64_t length_limit, dprl_cancel *cancel,
                     dprl_buf *out, dprl_plan_cost *cost, dprl_error *err) {
  static const char *const mechs[] = {"dp_prefix_stable", NULL};
  dprl_options o;
  dprl_prefix_calib_in in;
  dprl_prefix_params pp;
  dprl_prefix_expectation ex;
  double a = 0, *prof = NULL;
  int64_t m = 0, n_prof = 0, length = 0;
  int mech = 0;
  (void)length_limit; /* the plan holds at most DPRL_PREFIX_PLAN_MAX_PROFILE numbers */
  memset(&in, 0, sizeof in);
  int rc = dprl_options_open_polled(&o, "dp_plan", text, len, plan_keys, cancel, err);
  if (!rc) rc = dprl_opt_choice(&o, "mechanism", mechs, 0, &mech);
  if (!rc) rc = dprl_prefix_read_calibration(&o, &in);
  if (!rc) rc = dprl_opt_int(&o, "experts", 1, 0, DPRL_AT_LEAST(1), &m);
  if (!rc) rc = read_agreement(&o, &a, &prof, &n_prof);
  if (!rc && prof && dprl_opt_has(&o, "length"))
    rc = dprl_fail(err, DPRL_EINVAL, "dp_plan: option length goes with a number agreement; "
                   "with an array the trajectory has one step per entry (%lld)", (long long)n_prof);
  if (!rc) rc = dprl_opt_int(&o, "length", 0, in.L, DPRL_AT_LEAST(1), &length);
  dprl_options_close(&o);
  if (!rc && dprl_prefix_params_derive(in.epsilon, in.delta, in.p_min, 1, in.T, in.L,
                                       (dprl_prefix_accountant)in.accountant, &pp, err)) {
    char msg[sizeof err->msg];
    dprl_snprintf(msg, sizeof msg, "dp_plan: %.490s", err->msg);
    memcpy(err->msg, msg, sizeof msg);
    rc = err->code;
  }
  int64_t steps = prof ? n_prof : length;
  if (steps > in.L) steps = in.L;
  double one = a * (double)m, *counts = prof ? dprl_malloc((size_t)n_prof * sizeof *counts) : &one;
  if (!rc && !counts) rc = dprl_nomem(err);
  for (int64_t j = 0; !rc && prof && j < n_prof; j++) counts[j] = prof[j] * (double)m;
  if (!rc) rc = dprl_prefix_expect(&pp, counts, prof ? n_prof : 1, steps, cancel, &ex, err);
  if (!rc) {
    double releases = (double)pp.T * ex.p_release;
    dprl_buf_puts(out, "{\"mechanism\":\"dp_prefix_stable\",\"accountant\":");
    dprl_json_put_string(out, dprl_prefix_accountant_names[pp.accountant]);
    dprl_json_put_num(out, "epsilon", pp.eps1);
    dprl_json_put_num(out, "delta", pp.delta1);
    dprl_json_put_num(out, "p_min", pp.p_min);
    dprl_json_put_int(out, "T", pp.T);
    dprl_json_put_int(out, "L", pp.L);
    dprl_json_put_num(out, "eps_prime", pp.eps_prime);
    dprl_json_put_num(out, "threshold", pp.threshold_base);
    dprl_json_put_num(out, "b_threshold", pp.b_threshold);
    dprl_json_put_num(out, "b_query", pp.b_query);
    dprl_json_put_int(out, "experts", m);
    dprl_json_put_int(out, "max_count", m);
    dprl_json_put_key(out, "agreement");
    if (!prof) dprl_json_put_double(out, a);
    else {
      dprl_buf_puts(out, "[");
      for (int64_t j = 0; j < n_prof; j++) {
        if (j) dprl_buf_puts(out, ",");
        dprl_json_put_double(out, prof[j]);
      }
      dprl_buf_puts(out, "]");
    }
    dprl_json_put_int(out, "steps", steps);
    dprl_json_put_num(out, "count", counts[0]);
    dprl_json_put_num(out, "release_probability", ex.p_release);
    dprl_json_put_num(out, "expected_releases", releases);
    dprl_json_put_num(out, "expected_length", ex.length);
    dprl_json_put_num(out, "expected_transitions", releases * ex.length);
    dprl_buf_puts(out, "}");
    if (out->oom) rc = dprl_nomem(err);
    else plan_cost(&pp, m, a, releases, cost);
  }
  if (prof) dprl_free(counts);
  dprl_free(prof);
  return rc;
}
