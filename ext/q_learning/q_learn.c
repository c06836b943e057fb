/*
** q_learn.c: Algorithm 1 of Wang & Hegde 2019 on a public linear
** approximator (see q_learn.h; ALGORITHMS.md §8).
*/
#include "q_learning/q_learn.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- features --------------------------------------------------------- */

int dprl_q_features_check(const dprl_q_features *f, dprl_error *err) {
  if (f->kind != DPRL_QFEAT_TENT && f->kind != DPRL_QFEAT_RBF)
    return dprl_fail(err, DPRL_EINVAL, "features must be tent or rbf, got %d",
                     (int)f->kind);
  if (f->K < 2)
    return dprl_fail(err, DPRL_EINVAL,
                     "K (features per action) must be >= 2, got %d", f->K);
  if (!isfinite(f->lo) || !isfinite(f->hi) || !(f->lo < f->hi))
    return dprl_fail(err, DPRL_EINVAL,
                     "state interval must have finite lo < hi, got lo = %g, "
                     "hi = %g",
                     f->lo, f->hi);
  return DPRL_OK;
}

double dprl_q_rescale(const dprl_q_features *f, double s) {
  double x = (s - f->lo) / (f->hi - f->lo);
  return x < 0 ? 0 : x > 1 ? 1 : x;
}

/* The two live tents at x: phi_j = 1 - w, phi_{j+1} = w.  In units of the
** spacing, u = x (K - 1) and (x - c_i) / h = u - i.  A NaN x gives w = NaN
** (and j = 0: no undefined conversion). */
static void tent_cell(const dprl_q_features *f, double x, int *j, double *w) {
  double u = x * (f->K - 1);
  int i = u >= 1 ? (int)fmin(floor(u), f->K - 2) : 0;
  *j = i;
  *w = u - i;
}

/* out[i] += scale * phi_i(x); tents touch two entries (sparse). */
static void add_features(const dprl_q_features *f, double x, double scale,
                         double *out) {
  if (f->kind == DPRL_QFEAT_TENT) {
    int j;
    double w;
    tent_cell(f, x, &j, &w);
    out[j] += scale * (1 - w);
    out[j + 1] += scale * w;
    return;
  }
  double u = x * (f->K - 1);
  for (int i = 0; i < f->K; i++) {
    double z = u - i;
    out[i] += scale * exp(-0.5 * z * z);
  }
}

void dprl_q_features_eval(const dprl_q_features *f, double x, double *phi) {
  memset(phi, 0, (size_t)f->K * sizeof *phi);
  add_features(f, x, 1.0, phi);
}

double dprl_q_value(const dprl_q_features *f, const double *theta_a, double x) {
  if (f->kind == DPRL_QFEAT_TENT) {
    int j;
    double w;
    tent_cell(f, x, &j, &w);
    return theta_a[j] * (1 - w) + theta_a[j + 1] * w;
  }
  double u = x * (f->K - 1), q = 0;
  for (int i = 0; i < f->K; i++) {
    double z = u - i;
    q += theta_a[i] * exp(-0.5 * z * z);
  }
  return q;
}

void dprl_q_feature_bounds(const dprl_q_features *f, double *P, double *D) {
  double h = 1.0 / (f->K - 1), K = f->K, e = exp(-0.5);
  if (f->kind == DPRL_QFEAT_TENT) {
    *P = 1;
    *D = 1 / h;
    return;
  }
  /* rbf, width w = h, z = u - i.  P: by Cauchy-Schwarz |phi(x).phi(y)| <=
  ** sup ||phi||^2 = sup sum_i exp(-z^2) <= (Poisson summation over the full
  ** lattice) sqrt(pi) sum_k exp(-pi^2 k^2) <= sqrt(pi) (1 + 2 q / (1 - q)),
  ** q = exp(-pi^2); and <= K.  D: phi_i <= 1, so <= sup sum_i |phi_i'|,
  ** |phi_i'| = |z| e^{-z^2/2} / h <= e^-1/2 / h each (so <= K e^-1/2 / h),
  ** and on each half-line z > 0, z < 0 a unimodal bump of integral 1, whose
  ** lattice sum is <= its max + integral / spacing: <= 2 (e^-1/2 + 1) / h. */
  double q = exp(-M_PI * M_PI);
  *P = fmin(K, sqrt(M_PI) * (1 + 2 * q / (1 - q)));
  *D = fmin(K * e / h, 2 * (e + 1) / h);
}

double dprl_q_reward_change(dprl_q_neighbours nb, double rmin, double rmax) {
  return nb == DPRL_QNB_UNIT ? fmin(1.0, rmax - rmin) : rmax - rmin;
}

int dprl_q_sensitivity_L(const dprl_q_features *f, double lr, double k,
                         double B, double rmin, double rmax,
                         dprl_q_neighbours nb, double *L, dprl_error *err) {
  if (dprl_q_features_check(f, err)) return err->code;
  if (!(lr > 0) || !isfinite(lr))
    return dprl_fail(err, DPRL_EINVAL, "lr must be > 0, got %g", lr);
  if (!(k > 0) || !isfinite(k))
    return dprl_fail(err, DPRL_EINVAL, "k must be > 0, got %g", k);
  if (!(B >= 1) || !isfinite(B))
    return dprl_fail(err, DPRL_EINVAL, "B must be >= 1, got %g", B);
  if (!isfinite(rmin) || !isfinite(rmax) || !(rmin < rmax))
    return dprl_fail(err, DPRL_EINVAL,
                     "reward bounds must have finite rmin < rmax, got rmin = "
                     "%g, rmax = %g",
                     rmin, rmax);
  double P, D, dr = dprl_q_reward_change(nb, rmin, rmax);
  dprl_q_feature_bounds(f, &P, &D);
  /* ||f||_inf <= lr dr P must be <= v L, v = 4 lr (k+1)/B; |f'| <= lr dr D. */
  *L = dr * fmax(lr * D, P * B / (4 * (k + 1)));
  return DPRL_OK;
}

double dprl_q_theta_sensitivity(const dprl_q_features *f, double lr, double dr) {
  double P, D;
  dprl_q_feature_bounds(f, &P, &D);
  return lr * dr * sqrt(P);
}

/* ---- validation -------------------------------------------------------- */

static int check_opts(const dprl_q_learn_opts *o, dprl_error *err) {
  if (dprl_q_features_check(&o->feat, err)) return err->code;
  if (o->m < 1)
    return dprl_fail(err, DPRL_EINVAL, "number of actions must be >= 1, got %d",
                     o->m);
  if (!(o->gamma >= 0 && o->gamma < 1))
    return dprl_fail(err, DPRL_EINVAL, "gamma must be in [0, 1), got %g",
                     o->gamma);
  if (!(o->lr > 0) || !isfinite(o->lr))
    return dprl_fail(err, DPRL_EINVAL, "lr must be > 0, got %g", o->lr);
  if (o->T < 1)
    return dprl_fail(err, DPRL_EINVAL, "T must be >= 1, got %lld",
                     (long long)o->T);
  if (o->B < 1 || o->B > o->T)
    return dprl_fail(err, DPRL_EINVAL,
                     "B must be in [1, T] (T = %lld), got %lld",
                     (long long)o->T, (long long)o->B);
  if (o->J < 1)
    return dprl_fail(err, DPRL_EINVAL, "J must be >= 1, got %lld",
                     (long long)o->J);
  if (!isfinite(o->rmin) || !isfinite(o->rmax) || !(o->rmin < o->rmax))
    return dprl_fail(err, DPRL_EINVAL,
                     "reward bounds must have finite rmin < rmax, got rmin = "
                     "%g, rmax = %g",
                     o->rmin, o->rmax);
  if (!(o->sigma >= 0) || !isfinite(o->sigma))
    return dprl_fail(err, DPRL_EINVAL, "sigma must be finite and >= 0, got %g",
                     o->sigma);
  if (!(o->beta > 0) || !isfinite(o->beta))
    return dprl_fail(err, DPRL_EINVAL, "beta must be finite and > 0, got %g",
                     o->beta);
  if (!(o->sigma_theta >= 0) || !isfinite(o->sigma_theta))
    return dprl_fail(err, DPRL_EINVAL,
                     "sigma_theta must be finite and >= 0, got %g", o->sigma_theta);
  if (o->sigma_theta > 0) {
    int e;
    double g = o->grid_theta;
    if (!(isfinite(g) && g >= 0x1p-1000 && frexp(g, &e) == 0.5 &&
          o->sigma_theta / g <= 0x1p27))
      return dprl_fail(err, DPRL_EINVAL,
                       "grid_theta must be a normal power of two with sigma_theta "
                       "<= 2^27 grid steps, got %g (sigma_theta %g)", g,
                       o->sigma_theta);
  }
  return DPRL_OK;
}

static int check_data(const dprl_q_learn_opts *o, const dprl_q_transitions *d,
                      dprl_error *err) {
  if (d->n < 1)
    return dprl_fail(err, DPRL_EINVAL, "no transitions: need at least 1");
  for (size_t t = 0; t < d->n; t++) {
    if (dprl_cancel_poll(o->cancel, 5, err)) return err->code;
    if (!isfinite(d->s[t]) || !isfinite(d->s_next[t]))
      return dprl_fail(err, DPRL_EINVAL,
                       "transition %zu: state must be finite, got %g -> %g", t,
                       d->s[t], d->s_next[t]);
    if (d->a[t] < 0 || d->a[t] >= o->m)
      return dprl_fail(err, DPRL_EINVAL,
                       "transition %zu: action must be in [0, %d], got %lld", t,
                       o->m - 1, (long long)d->a[t]);
    if (isnan(d->r[t]))
      return dprl_fail(err, DPRL_EINVAL,
                       "transition %zu: reward must be a number, got %g", t,
                       d->r[t]);
  }
  return DPRL_OK;
}

/* ---- one run ----------------------------------------------------------- */

typedef struct qrun {
  const dprl_q_learn_opts *o;
  const dprl_q_transitions *d;
  dprl_rng *rng;
  double *theta;
  dprl_gp_path **paths; /* m */
  size_t B;
  size_t *idx;       /* B rows of the batch */
  double *x, *xn;    /* B rescaled s, s' */
  double *gs;        /* B: g_{a_t}(x_t) */
  double *gn;        /* m * B: g_a(x'_t) */
  double *qx, *qv;   /* 2B queries of one path and their values */
  double *grad;      /* m * K: the update's part that does not involve the rewards */
  double *rgrad;     /* m * K: the rewards' part (ALGORITHMS.md section 10) */
  int presample;     /* draw each path at every state of the data at reset */
  double *states;    /* sorted distinct rescaled states (presample) */
  double *svals;     /* their values (scratch) */
  size_t n_states;
} qrun;

static void qrun_free(qrun *r) {
  if (r->paths)
    for (int a = 0; a < r->o->m; a++) dprl_gp_path_free(r->paths[a]);
  dprl_free(r->paths);
  dprl_free(r->idx);
  dprl_free(r->x);
  dprl_free(r->xn);
  dprl_free(r->gs);
  dprl_free(r->gn);
  dprl_free(r->qx);
  dprl_free(r->qv);
  dprl_free(r->grad);
  dprl_free(r->rgrad);
  dprl_free(r->states);
  dprl_free(r->svals);
}

static int dbl_cmp(const void *pa, const void *pb) {
  double a = *(const double *)pa, b = *(const double *)pb;
  return (a > b) - (a < b);
}

/* The sorted distinct rescaled states (s and s') of the data. */
static int collect_states(qrun *r, dprl_error *err) {
  size_t n = r->d->n, k = 0;
  r->states = dprl_calloc(2 * n, sizeof *r->states);
  r->svals = dprl_calloc(2 * n, sizeof *r->svals);
  if (!r->states || !r->svals) return dprl_nomem(err);
  for (size_t t = 0; t < n; t++) {
    if (dprl_cancel_poll(r->o->cancel, 10, err)) return err->code;
    r->states[2 * t] = dprl_q_rescale(&r->o->feat, r->d->s[t]);
    r->states[2 * t + 1] = dprl_q_rescale(&r->o->feat, r->d->s_next[t]);
  }
  if (dprl_sort(r->states, 2 * n, sizeof *r->states, dbl_cmp, r->o->cancel, err))
    return err->code;
  for (size_t t = 0; t < 2 * n; t++) {
    if (dprl_cancel_poll(r->o->cancel, 2, err)) return err->code;
    if (k == 0 || r->states[t] != r->states[k - 1]) r->states[k++] = r->states[t];
  }
  r->n_states = k;
  return DPRL_OK;
}

static int qrun_init(qrun *r, dprl_error *err) {
  const dprl_q_learn_opts *o = r->o;
  size_t B = r->B, m = (size_t)o->m, K = (size_t)o->feat.K;
  double grid = o->sigma > 0 ? dprl_grid_for(o->sigma) : 1.0;
  r->paths = dprl_calloc(m, sizeof *r->paths);
  r->idx = dprl_calloc(B, sizeof *r->idx);
  r->x = dprl_calloc(B, sizeof *r->x);
  r->xn = dprl_calloc(B, sizeof *r->xn);
  r->gs = dprl_calloc(B, sizeof *r->gs);
  r->gn = dprl_calloc(m * B, sizeof *r->gn);
  r->qx = dprl_calloc(2 * B, sizeof *r->qx);
  r->qv = dprl_calloc(2 * B, sizeof *r->qv);
  r->grad = dprl_calloc(m * K, sizeof *r->grad);
  r->rgrad = dprl_calloc(m * K, sizeof *r->rgrad);
  if (!r->paths || !r->idx || !r->x || !r->xn || !r->gs || !r->gn || !r->qx ||
      !r->qv || !r->grad || !r->rgrad)
    return dprl_nomem(err);
  for (size_t a = 0; a < m; a++) {
    r->paths[a] = dprl_gp_path_create(o->sigma, o->beta, grid, err);
    if (!r->paths[a]) return err->code;
    r->paths[a]->cancel = o->cancel;
  }
  return r->presample ? collect_states(r, err) : DPRL_OK;
}

/* A fresh path per action (Algorithm 1 lines 7-9).  In presample mode the
** path is drawn at once at every state the data can query: the joint law
** of the values later looked up is the same (GP marginals), and lookups
** are then O(log n) instead of a merge with all stored points. */
static int reset_paths(qrun *r, dprl_error *err) {
  for (int a = 0; a < r->o->m; a++) {
    dprl_gp_path_reset(r->paths[a]);
    if (r->presample && r->o->sigma > 0 &&
        dprl_gp_path_sample_batch(r->paths[a], r->rng, r->states, r->n_states,
                                  r->svals, err))
      return err->code;
  }
  return DPRL_OK;
}

static int draw_batch(qrun *r, dprl_error *err) {
  for (size_t t = 0; t < r->B; t++) {
    if (dprl_cancel_poll(r->o->cancel, 30, err)) return err->code;
    size_t i = (size_t)dprl_rng_below(r->rng, r->d->n);
    r->idx[t] = i;
    r->x[t] = dprl_q_rescale(&r->o->feat, r->d->s[i]);
    r->xn[t] = dprl_q_rescale(&r->o->feat, r->d->s_next[i]);
  }
  return DPRL_OK;
}

/* g_a at the nq queries qx -> qv. */
static int path_values(qrun *r, int a, size_t nq, dprl_error *err) {
  if (!r->presample)
    return dprl_gp_path_sample_batch(r->paths[a], r->rng, r->qx, nq, r->qv,
                                     err);
  for (size_t q = 0; q < nq; q++) /* all stored: lookups, no draws */
    if (dprl_cancel_poll(r->o->cancel, 50, err) ||
        dprl_gp_path_sample_at(r->paths[a], r->rng, r->qx[q], &r->qv[q], err))
      return err->code;
  return DPRL_OK;
}

/* g_{a_t}(x_t) and g_a(x'_t) for every a (lines 14-20). */
static int batch_noise(qrun *r, dprl_error *err) {
  size_t B = r->B;
  if (r->o->sigma == 0) return DPRL_OK; /* gs, gn stay 0 */
  for (int a = 0; a < r->o->m; a++) {
    size_t nq = 0, k = 0;
    if (dprl_cancel_poll(r->o->cancel, 8 * (uint64_t)B, err)) return err->code;
    for (size_t t = 0; t < B; t++)
      if (r->d->a[r->idx[t]] == a) r->qx[nq++] = r->x[t];
    for (size_t t = 0; t < B; t++) r->qx[nq++] = r->xn[t];
    if (path_values(r, a, nq, err)) return err->code;
    for (size_t t = 0; t < B; t++)
      if (r->d->a[r->idx[t]] == a) r->gs[t] = r->qv[k++];
    for (size_t t = 0; t < B; t++) r->gn[(size_t)a * B + t] = r->qv[k++];
  }
  return DPRL_OK;
}

/* One SGD step on the mean of 1/2 (Q(s,a) + g_a(s) - y)^2 (line 21),
** computed in two parts (ALGORITHMS.md section 10, "Floating point"):
** with y = r + gamma best and td = Q + g - y = td0 - (r - rmin),
**   A = theta - (lr/B) sum_t td0_t phi(x_t)       (no reward in it)
**   R = (lr/B) sum_t (r_t - rmin) phi(x_t)         (the rewards alone)
** so that the rewards' effect on the update is R, computed to a relative
** 2^-20 whatever the size of theta and of the path noise (in one sum, a
** reward next to noise of 1e16 would be rounded to a multiple of 2).
** Leaves A in theta and R in rgrad. */
static int sgd_step(qrun *r, dprl_error *err) {
  const dprl_q_learn_opts *o = r->o;
  size_t B = r->B, K = (size_t)o->feat.K;
  /* Work of one transition: m values of Q, each 2 (tent) or K (rbf) terms. */
  uint64_t work = (uint64_t)o->m * (o->feat.kind == DPRL_QFEAT_TENT ? 12 : 12 * K);
  memset(r->grad, 0, (size_t)o->m * K * sizeof *r->grad);
  memset(r->rgrad, 0, (size_t)o->m * K * sizeof *r->rgrad);
  for (size_t t = 0; t < B; t++) {
    if (dprl_cancel_poll(o->cancel, work, err)) return err->code;
    size_t i = r->idx[t];
    double best = -HUGE_VAL;
    for (int a = 0; a < o->m; a++) {
      double q = dprl_q_value(&o->feat, r->theta + (size_t)a * K, r->xn[t]) +
                 r->gn[(size_t)a * B + t];
      if (q > best) best = q;
    }
    double w = fmin(fmax(r->d->r[i], o->rmin), o->rmax) - o->rmin; /* in [0, rmax - rmin] */
    size_t a = (size_t)r->d->a[i];
    double td0 = dprl_q_value(&o->feat, r->theta + a * K, r->x[t]) + r->gs[t] - o->rmin -
                 o->gamma * best;
    add_features(&o->feat, r->x[t], td0, r->grad + a * K);
    add_features(&o->feat, r->x[t], w, r->rgrad + a * K);
  }
  double step = o->lr / (double)B;
  for (size_t j = 0; j < (size_t)o->m * K; j++) {
    r->theta[j] -= step * r->grad[j];
    r->rgrad[j] *= step;
  }
  return dprl_cancel_poll(o->cancel, 2 * (uint64_t)o->m * K, err);
}

/* Without theta's noise: theta = A + R. */
static int add_rewards(qrun *r, dprl_error *err) {
  for (size_t j = 0; j < (size_t)r->o->m * (size_t)r->o->feat.K; j++) r->theta[j] += r->rgrad[j];
  return dprl_cancel_poll(r->o->cancel, (uint64_t)r->o->m * (uint64_t)r->o->feat.K, err);
}

/* Clamp to +-2^51 grid steps: a 1-Lipschitz projection, and it keeps
** value / g and every sum below exact in a double and an int64. */
static int64_t grid_units(double v, double g) {
  double q = v / g;
  if (!(q > -0x1p51)) return -(INT64_C(1) << 51); /* also NaN: cannot occur */
  if (q > 0x1p51) return INT64_C(1) << 51;
  return llround(q);
}

static int64_t clamp51(int64_t k) {
  const int64_t lim = INT64_C(1) << 51;
  return k < -lim ? -lim : k > lim ? lim : k;
}

/* The private release of theta after an update (ALGORITHMS.md §10): A and
** R (sgd_step) each rounded to the public grid, their sum projected, then
** discrete Gaussian noise, then projected again (post-processing).  Only
** public values decide what happens: no error can depend on the data. */
static int theta_noise(qrun *r, dprl_error *err) {
  const dprl_q_learn_opts *o = r->o;
  double g = o->grid_theta;
  uint64_t s = (uint64_t)ceil(o->sigma_theta / g);
  if ((double)s * g < o->sigma_theta) s++; /* never round the scale down */
  for (size_t j = 0; j < (size_t)o->m * (size_t)o->feat.K; j++) {
    if (dprl_cancel_poll(o->cancel, 300, err)) return err->code;
    int64_t k = clamp51(grid_units(r->theta[j], g) + grid_units(r->rgrad[j], g));
    r->theta[j] = g * (double)clamp51(k + dprl_discrete_gaussian(r->rng, s));
  }
  return DPRL_OK;
}

int dprl_q_learn(const dprl_q_learn_opts *o, const dprl_q_transitions *d,
                 dprl_rng *rng, double *theta, dprl_gp_path **paths_out,
                 dprl_error *err) {
  if (check_opts(o, err) || check_data(o, d, err)) return err->code;
  int64_t nb = o->T / o->B;
  int64_t period = o->J >= nb ? 1 : (nb + o->J - 1) / o->J;
  qrun r = {0};
  r.o = o;
  r.d = d;
  r.rng = rng;
  r.theta = theta;
  r.B = (size_t)o->B;
  /* Incremental drawing costs ~ B period^2 per period (merges with the
  ** stored points), presampling ~ 2n log2(2n): take the cheaper. */
  r.presample = o->sigma > 0 && (double)o->B * (double)period * (double)period >=
                                    2.0 * (double)d->n * log2(2.0 * d->n + 2);
  /* An incremental path holds up to 2B points a step for a whole period,
  ** 16 bytes each in one allocation: beyond that, presample (2n points). */
  if (o->sigma > 0 && 32.0 * (double)o->B * (double)period > (double)DPRL_MAX_ALLOC)
    r.presample = 1;
  memset(theta, 0, (size_t)o->m * (size_t)o->feat.K * sizeof *theta);
  int rc = qrun_init(&r, err);
  for (int64_t j = 0; rc == DPRL_OK && j < nb; j++) {
    if ((j % period == 0 && (rc = reset_paths(&r, err))) || (rc = draw_batch(&r, err)) ||
        (rc = batch_noise(&r, err)) || (rc = sgd_step(&r, err)) ||
        (rc = o->sigma_theta > 0 ? theta_noise(&r, err) : add_rewards(&r, err)))
      break;
  }
  if (rc == DPRL_OK && paths_out) {
    for (int a = 0; a < o->m; a++) paths_out[a] = r.paths[a];
    dprl_free(r.paths);
    r.paths = NULL;
  }
  qrun_free(&r);
  return rc;
}
