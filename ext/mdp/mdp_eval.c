/* mdp_eval.c: values, optimal policies and bootstrap error bars on a
** released MDP model (mdp_eval.h, ALGORITHMS.md §14). */
#include "mdp/mdp_eval.h"
#include "mdp/mdp_interval.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/json.h"
#include "base/linalg.h"
#include "base/options.h"
#include "dp/noise.h"

int dprl_mdpv_work_init(dprl_mdpv_work *w, int64_t S, int64_t A, dprl_error *err) {
  memset(w, 0, sizeof *w);
  w->S = S;
  w->A = A;
  w->v2 = dprl_malloc_array((size_t)S, sizeof *w->v2);
  w->act = dprl_malloc_array((size_t)S, sizeof *w->act);
  if (!w->v2 || !w->act) return dprl_nomem(err);
  return DPRL_OK;
}

/* The S x S matrix of a direct solve, allocated on first use. */
static int need_matrix(dprl_mdpv_work *w, dprl_error *err) {
  if (!w->mat && !(w->mat = dprl_malloc_array((size_t)(w->S * w->S), sizeof *w->mat)))
    return dprl_nomem(err);
  return DPRL_OK;
}

void dprl_mdpv_work_free(dprl_mdpv_work *w) {
  dprl_free(w->mat);
  dprl_free(w->v2);
  dprl_free(w->act);
  memset(w, 0, sizeof *w);
}

/* ---- options --------------------------------------------------------------------- */

/* Value-iteration sweeps from V = 0 after which the stop
** gamma ||V_k+1 - V_k|| / (1 - gamma) <= tol is met in exact arithmetic:
** ||V_k+1 - V_k|| <= gamma^k r with r = max|reward| (ALGORITHMS.md §14.2). */
static double sweeps_for(double gamma, double tol, double r) {
  if (gamma == 0 || r == 0) return 2;
  double k = log(tol * (1 - gamma) / r) / log(gamma);
  return k < 1 ? 2 : k + 2;
}

/* gamma so close to 1 that the sweeps would pass DPRL_MDPV_SWEEPS_MAX: refused. */
static int sweep_limit(const char *fn, const dprl_mdpv_opts *o, double r, dprl_error *err) {
  double k = sweeps_for(o->gamma, o->tolerance, r);
  if (k <= DPRL_MDPV_SWEEPS_MAX) return DPRL_OK;
  char g[32], t[32], n[32];
  return dprl_fail(err, DPRL_EINVAL,
                   "%s: gamma = %s with tolerance %s can need %s value-iteration sweeps, "
                   "more than the 10^8 allowed (about 20 / (1 - gamma) at the default "
                   "tolerance): a smaller gamma, a larger tolerance, or gamma 1 with option "
                   "horizon", fn, dprl_json_num(o->gamma, g, sizeof g), dprl_json_num(o->tolerance, t, sizeof t),
                   dprl_json_num(ceil(k), n, sizeof n));
}

int dprl_mdpv_options(const char *fn, const char *text, size_t len, int plan,
                      const dprl_mdpv_model *m, dprl_mdpv_opts *o, dprl_error *err) {
  static const char *const value_keys[] = {"horizon", "gamma", "min_count", "count_floor",
                                           "ends", "unknown", "bootstrap", "bootstrap_seed",
                                           "interval", "level", "tolerance", NULL};
  static const char *const plan_keys[] = {"horizon", "gamma", "min_count", "count_floor",
                                          "ends", "unknown", "tolerance", "pessimism", NULL};
  static const char *const ends[] = {"terminal", "censored", NULL};
  static const char *const unknown[] = {"pessimistic", "renormalise", NULL};
  static const char *const intervals[] = {"none", "log", NULL};
  dprl_options opt;
  int64_t seed = 0;
  memset(o, 0, sizeof *o);
  int rc = dprl_options_open(&opt, fn, text, len, plan ? plan_keys : value_keys, err);
  if (rc) goto done;
  if ((rc = dprl_opt_int(&opt, "horizon", 0, 0, DPRL_CLOSED(1, INT32_MAX), &o->horizon)) ||
      (rc = dprl_opt_number(&opt, "gamma", 0, m->gamma, DPRL_CLOSED(0, 1), &o->gamma)) ||
      (rc = dprl_opt_number(&opt, "count_floor", 0,
                            m->clip > 0 ? DPRL_MDPV_FLOOR_SIGMAS * m->sigma : 0,
                            DPRL_NONNEG, &o->est.count_floor)) ||
      (rc = dprl_opt_number(&opt, "min_count", 0,
                            dprl_mdpv_noise_floor(m->sparse ? 1 : m->S, 1 + !!m->censored,
                                                  m->sigma, o->est.count_floor),
                            DPRL_NONNEG, &o->est.min_count)) ||
      (rc = dprl_opt_choice(&opt, "ends", ends, 0, &o->est.censored)) ||
      (rc = dprl_opt_choice(&opt, "unknown", unknown, 0, &o->est.renormalise)))
    goto done;
  if (m->censored && dprl_opt_has(&opt, "ends") &&
      (rc = dprl_fail(err, DPRL_EINVAL, "%s: option ends does not apply: this model says how "
                      "each episode ended (dp_mdp's outcome argument), its censored ends counted "
                      "apart", fn)))
    goto done;
  if (!m->sparse && dprl_opt_has(&opt, "unknown") &&
      (rc = dprl_fail(err, DPRL_EINVAL, "%s: option unknown applies to a sparse model "
                      "(\"transitions\": \"sparse\"); this model is dense, every transition "
                      "count is released", fn)))
    goto done;
  if (plan && (rc = dprl_opt_number(&opt, "pessimism", 0, 0, DPRL_CLOSED_OPEN(0.5, 1),
                                    &o->pessimism)))
    goto done;
  if (!plan &&
      ((rc = dprl_opt_int(&opt, "bootstrap", 0, DPRL_MDPV_BOOTSTRAP,
                          DPRL_CLOSED(0, DPRL_MDPV_BOOTSTRAP_MAX), &o->bootstrap)) ||
       (rc = dprl_opt_int(&opt, "bootstrap_seed", 0, 0, DPRL_ANY, &seed)) ||
       (rc = dprl_opt_choice(&opt, "interval", intervals, 0, &o->interval)) ||
       (rc = dprl_opt_number(&opt, "level", 0, DPRL_MDPV_LEVEL, DPRL_OPEN(0, 1), &o->level))))
    goto done;
  if ((rc = dprl_mdpv_interval_check(fn, m, o, err))) goto done;
  if (seed < 0 || seed >= (INT64_C(1) << 53)) { /* from 2^53 on, two texts read as one */
    rc = dprl_fail(err, DPRL_EINVAL,
                   "%s: option bootstrap_seed must be an integer in [0, 2^53 - 1], got %lld", fn,
                   (long long)seed);
    goto done;
  }
  if (o->bootstrap == 1 &&
      (rc = dprl_fail(err, DPRL_EINVAL,
                      "%s: option bootstrap must be 0 (no error bar) or at least 2 draws, got 1", fn)))
    goto done;
  o->seed = (uint64_t)seed;
  if (o->gamma == 1 && !o->horizon) {
    char h[64] = "";
    if (m->horizon)
      dprl_snprintf(h, sizeof h, " (the release counted the first %lld steps of each episode)",
               (long long)m->horizon);
    rc = dprl_fail(err, DPRL_EINVAL,
                   "%s: gamma is 1, so the value is undiscounted and needs option horizon: the "
                   "number of steps H to sum over%s",
                   fn, h);
    goto done;
  }
  /* max|r| / (1 - gamma) bounds every value: the default tolerance is relative to it */
  double scale = fmax(fabs(m->rmin), fabs(m->rmax)) / (o->horizon ? 1 : 1 - o->gamma);
  rc = dprl_opt_number(&opt, "tolerance", 0, DPRL_MDPV_TOLERANCE * scale, DPRL_POSITIVE,
                       &o->tolerance);
  if (!rc && !o->horizon) rc = sweep_limit(fn, o, fmax(fabs(m->rmin), fabs(m->rmax)), err);
done:
  dprl_options_close(&opt);
  return rc;
}

/* ---- Bellman backups ---------------------------------------------------------- */

/* sum_k P(k|sa) V(k) over the stored entries (ending adds 0), and a sparse
** model's unknown mass worth wv (ALGORITHMS.md §14.1): rmin, or 0 when the
** values V have no step left (left 0; -1: discounted). */
static inline double expect(const dprl_mdpv_est *e, int64_t sa, const double *V, double wv,
                            double vm) {
  double q = 0;
  for (int64_t j = e->row[sa]; j < e->row[sa + 1]; j++) q += e->prob[j] * V[e->next[j]];
  if (e->spread) q += e->spread[sa] * vm; /* a world's uniform moves (vm: the mean of V) */
  return e->unknown ? q + e->unknown[sa] * wv : q;
}
static double mean_of(const dprl_mdpv_est *e, const double *V) {
  double t = 0;
  for (int64_t s = 0; e->spread && s < e->S; s++) t += V[s];
  return t / (double)e->S;
}
#define UNKNOWN_WORTH(e, left) ((left) == 0 ? 0 : (e)->unknown_value)

/* The actions of state s that policy p uses: [*lo, *hi), each with weight(). */
static inline void actions(const dprl_mdpv_policy *p, int64_t s, int64_t A, int64_t *lo,
                           int64_t *hi) {
  *lo = p->act ? p->act[s] : 0;
  *hi = p->act ? p->act[s] + 1 : A;
}
static inline double weight(const dprl_mdpv_policy *p, int64_t sa) {
  return p->act ? 1 : p->pi[sa];
}

/* out = T_pi V; max_s |out(s) - V(s)| into *diff. */
static int backup_policy(const dprl_mdpv_est *e, const dprl_mdpv_policy *p, double gamma,
                         const double *V, int64_t left, double *out, double *diff,
                         dprl_cancel *cancel, dprl_error *err) {
  int64_t S = e->S, A = e->A, lo, hi;
  double d = 0, wv = UNKNOWN_WORTH(e, left), vm = mean_of(e, V);
  for (int64_t s = 0; s < S; s++) {
    double acc = 0;
    actions(p, s, A, &lo, &hi);
    for (int64_t a = lo; a < hi; a++) {
      double w = weight(p, s * A + a);
      if (w != 0) acc += w * (e->reward[s * A + a] + gamma * expect(e, s * A + a, V, wv, vm));
    }
    out[s] = acc;
    d = fmax(d, fabs(acc - V[s]));
    if (dprl_cancel_poll(cancel, (uint64_t)(e->row[s * A + A] - e->row[s * A] + A), err))
      return err->code;
  }
  *diff = d;
  return DPRL_OK;
}

/* Q = r + gamma P V; out = max_a Q; max_s |out(s) - V(s)| into *diff. */
static int backup_optimal(const dprl_mdpv_est *e, double gamma, const double *V, int64_t left,
                          double *Q, double *out, double *diff, dprl_cancel *cancel,
                          dprl_error *err) {
  int64_t S = e->S, A = e->A;
  double d = 0, wv = UNKNOWN_WORTH(e, left), vm = mean_of(e, V);
  for (int64_t s = 0; s < S; s++) {
    double best = -HUGE_VAL;
    for (int64_t a = 0; a < A; a++) {
      double q = e->reward[s * A + a] + gamma * expect(e, s * A + a, V, wv, vm);
      Q[s * A + a] = q;
      best = fmax(best, q);
    }
    out[s] = best;
    d = fmax(d, fabs(best - V[s]));
    if (dprl_cancel_poll(cancel, (uint64_t)(e->row[s * A + A] - e->row[s * A] + A), err))
      return err->code;
  }
  *diff = d;
  return DPRL_OK;
}

/* V = (I - gamma P_pi)^-1 r_pi by LU. */
static int solve_policy(const dprl_mdpv_est *e, const dprl_mdpv_policy *p, double gamma,
                        double *mat, double *V, dprl_cancel *cancel, dprl_error *err) {
  int64_t S = e->S, A = e->A, lo, hi;
  for (int64_t s = 0; s < S; s++) {
    double *row = mat + s * S, rhs = 0;
    memset(row, 0, (size_t)S * sizeof *row);
    row[s] = 1;
    actions(p, s, A, &lo, &hi);
    for (int64_t a = lo; a < hi; a++) {
      double w = weight(p, s * A + a);
      if (w == 0) continue;
      int64_t sa = s * A + a;
      rhs += w * e->reward[sa];
      if (e->unknown) rhs += w * gamma * e->unknown[sa] * e->unknown_value;
      for (int64_t k = 0; e->spread && e->spread[sa] > 0 && k < S; k++)
        row[k] -= gamma * w * e->spread[sa] / (double)S;
      for (int64_t j = e->row[sa]; j < e->row[sa + 1]; j++)
        row[e->next[j]] -= gamma * w * e->prob[j];
    }
    V[s] = rhs;
    if (dprl_cancel_poll(cancel, (uint64_t)(S + e->row[s * A + A] - e->row[s * A]), err))
      return err->code;
  }
  /* gamma < 1 makes I - gamma P_pi strictly diagonally dominant: never singular */
  int rc = dprl_solve(mat, S, V, 1, err);
  if (!rc) rc = dprl_cancel_poll(cancel, (uint64_t)S * (uint64_t)S * (uint64_t)S / 2, err);
  return rc;
}

/* The value scale: max |r| / (1 - gamma), or H max |r| with a horizon. */
static double value_scale(const dprl_mdpv_est *e, const dprl_mdpv_opts *o) {
  double r = 0;
  for (int64_t i = 0; i < e->S * e->A; i++) r = fmax(r, fabs(e->reward[i]));
  if (o->horizon) return r * (double)o->horizon;
  return r / (1 - o->gamma);
}

static int64_t sweeps_needed(const dprl_mdpv_est *e, const dprl_mdpv_opts *o) {
  double k = sweeps_for(o->gamma, o->tolerance, e->rabs);
  return k > DPRL_MDPV_SWEEPS_MAX ? (int64_t)DPRL_MDPV_SWEEPS_MAX : (int64_t)k;
}

/* E: a bound on max_s |fl(T x)(s) - (T x)(s)|, T the backup (T_pi or T*) of
** the exact-arithmetic model, for a backup computed here from x
** (ALGORITHMS.md §14.2): with m the most next states of a pair, every
** term of a backup carries at most K = 2m + 2A + 10 relative roundings
** (the dot product and the sum over actions, and P's and the policy's own
** rounding), so E = 2.01 K u (max|r| + gamma ||x||) plus the rewards'
** rounding. */
static double rounding(const dprl_mdpv_est *e, double gamma, const double *x) {
  double xn = 0, K = 2 * (double)e->most_next + 2 * (double)e->A + 10;
  for (int64_t s = 0; s < e->S; s++) xn = fmax(xn, fabs(x[s]));
  /* sparse: the unknown outcome's value counts in ||x||; its mass (N - placed)/N,
  ** inexact by cancellation, is within (m + 3) u of the exact one (§14.2) */
  if (e->unknown) xn = fmax(xn, fabs(e->unknown_value));
  double unk = e->unknown ? 2.01 * ((double)e->most_next + 3) * 0x1p-53 * gamma * xn : 0;
  /* the rewards' error is weighed by the rounded policy: 1.001 covers it */
  return 2.01 * K * 0x1p-53 * (e->rabs + gamma * xn) + unk + 1.001 * e->reward_err;
}

/* The bound on ||y - V|| for y = fl(T x), V the fixed point of T, d the
** computed max |y - x|, E = rounding(x): ||T x - x|| <= d (1 + 2u) + E and
** ||y - V|| <= E + gamma ||T x - x|| / (1 - gamma).  The few roundings of
** this formula (non-negative terms) are covered by 2^-47. */
static double stop_bound(double gamma, double d, double E) {
  return (E + gamma * (d + E) / (1 - gamma)) * (1 + 0x1p-47);
}

/* Backward induction: b_h = gamma b_h-1 + E_h bounds ||V_h - V_h exact||
** (T is a gamma-contraction of the exact model, gamma <= 1); the 2H
** roundings of the recursion itself are covered at the end. */
static double horizon_bound(double b, int64_t H) {
  return b * (1 + (2 * (double)H + 8) * 0x1p-52);
}

int dprl_mdpv_evaluate(const dprl_mdpv_est *e, const dprl_mdpv_opts *o, const double *pi,
                       dprl_mdpv_work *w, double *V, dprl_mdpv_solved *how,
                       dprl_cancel *cancel, dprl_error *err) {
  dprl_mdpv_policy p = {pi, NULL};
  return dprl_mdpv_evaluate_policy(e, o, &p, w, V, how, cancel, err);
}

int dprl_mdpv_evaluate_policy(const dprl_mdpv_est *e, const dprl_mdpv_opts *o,
                              const dprl_mdpv_policy *pi, dprl_mdpv_work *w, double *V,
                              dprl_mdpv_solved *how, dprl_cancel *cancel, dprl_error *err) {
  int64_t S = e->S;
  double d = 0, E;
  int rc;
  how->bound = 0;
  how->iterations = 0;
  if (o->horizon) { /* V_0 = 0, V_h = T_pi V_h-1 */
    how->method = "backward induction";
    memset(V, 0, (size_t)S * sizeof *V);
    for (int64_t h = 0; h < o->horizon; h++) {
      E = rounding(e, o->gamma, V);
      if ((rc = backup_policy(e, pi, o->gamma, V, h, w->v2, &d, cancel, err))) return rc;
      memcpy(V, w->v2, (size_t)S * sizeof *V);
      how->bound = o->gamma * how->bound + E;
    }
    how->bound = horizon_bound(how->bound, o->horizon);
    how->iterations = o->horizon;
    return DPRL_OK;
  }
  if (S <= DPRL_MDPV_DIRECT_MAX) {
    how->method = "direct";
    if ((rc = need_matrix(w, err)) || (rc = solve_policy(e, pi, o->gamma, w->mat, V, cancel, err)))
      return rc;
    how->iterations = 1;
  } else {
    how->method = "iteration";
    memset(V, 0, (size_t)S * sizeof *V);
  }
  /* One more backup: the bound from its change holds whatever V is.  Once
  ** the change is within the rounding E, more sweeps only trade rounding. */
  int64_t most = sweeps_needed(e, o);
  for (;;) {
    E = rounding(e, o->gamma, V);
    if ((rc = backup_policy(e, pi, o->gamma, V, -1, w->v2, &d, cancel, err))) return rc;
    memcpy(V, w->v2, (size_t)S * sizeof *V);
    how->bound = stop_bound(o->gamma, d, E);
    if (how->bound <= o->tolerance || d <= E || ++how->iterations >= most) break;
  }
  return DPRL_OK;
}

/* The greedy action of state s: the lowest within tie of the best. */
static int32_t greedy(const double *Qs, int64_t A, double tie) {
  double best = Qs[0];
  for (int64_t a = 1; a < A; a++) best = fmax(best, Qs[a]);
  for (int64_t a = 0; a < A; a++)
    if (Qs[a] >= best - tie) return (int32_t)a;
  return 0;
}

int dprl_mdpv_optimize(const dprl_mdpv_est *e, const dprl_mdpv_opts *o, dprl_mdpv_work *w,
                       double *Q, double *V, int32_t *policy, dprl_mdpv_solved *how,
                       dprl_cancel *cancel, dprl_error *err) {
  int64_t S = e->S, A = e->A;
  double d = 0, E, tie = DPRL_MDPV_TIE * value_scale(e, o);
  int rc;
  how->bound = 0;
  how->iterations = 0;
  memset(V, 0, (size_t)S * sizeof *V);
  if (o->horizon) { /* Q_h = r + gamma P V_h-1, V_h = max_a Q_h */
    how->method = "backward induction";
    for (int64_t h = 0; h < o->horizon; h++) {
      E = rounding(e, o->gamma, V);
      if ((rc = backup_optimal(e, o->gamma, V, h, Q, w->v2, &d, cancel, err))) return rc;
      memcpy(V, w->v2, (size_t)S * sizeof *V);
      how->bound = o->gamma * how->bound + E; /* Q of the last step too */
    }
    how->bound = horizon_bound(how->bound, o->horizon);
    how->iterations = o->horizon;
  } else {
    how->method = "iteration";
    if (S <= DPRL_MDPV_DIRECT_MAX) {
      /* Policy iteration from the greedy policy of r: an exact evaluation
      ** per step; an action changes only for a gain above tie, so rounding
      ** cannot make it cycle. */
      how->method = "direct";
      if ((rc = need_matrix(w, err))) return rc;
      for (int64_t s = 0; s < S; s++) w->act[s] = greedy(e->reward + s * A, A, tie);
      dprl_mdpv_policy cur = {NULL, w->act};
      for (int64_t step = 0; step < 100; step++) {
        if ((rc = solve_policy(e, &cur, o->gamma, w->mat, V, cancel, err))) return rc;
        how->iterations++;
        if ((rc = backup_optimal(e, o->gamma, V, -1, Q, w->v2, &d, cancel, err))) return rc;
        int changed = 0;
        for (int64_t s = 0; s < S; s++) {
          int32_t b = greedy(Q + s * A, A, tie);
          if (Q[s * A + b] > Q[s * A + w->act[s]] + tie) {
            w->act[s] = b;
            changed = 1;
          }
        }
        if (!changed) break;
      }
    }
    /* Value iteration (from policy iteration's values when there are
    ** any) until the bound is within the tolerance or the change within
    ** the rounding: it bounds max_s |V_k+1(s) - V*(s)| and max |Q - Q*|. */
    int64_t most = sweeps_needed(e, o);
    for (int64_t k = 0;; k++) {
      E = rounding(e, o->gamma, V);
      if ((rc = backup_optimal(e, o->gamma, V, -1, Q, w->v2, &d, cancel, err))) return rc;
      memcpy(V, w->v2, (size_t)S * sizeof *V);
      how->bound = stop_bound(o->gamma, d, E);
      if (S > DPRL_MDPV_DIRECT_MAX) how->iterations++;
      if (how->bound <= o->tolerance || d <= E || k + 1 >= most) break;
    }
  }
  for (int64_t s = 0; s < S; s++) policy[s] = greedy(Q + s * A, A, tie);
  return DPRL_OK;
}

static double dot(const double *x, const double *y, int64_t n) {
  double t = 0;
  for (int64_t i = 0; i < n; i++) t += x[i] * y[i];
  return t;
}

/* ---- results ---------------------------------------------------------------------- */

void dprl_mdpv_put_common(dprl_buf *b, const dprl_mdpv_model *m, const dprl_mdpv_opts *o,
                       const dprl_mdpv_est *e, const char *method) {
  dprl_json_put_int(b, "n_states", m->S);
  dprl_json_put_int(b, "n_actions", m->A);
  dprl_json_put_num(b, "gamma", o->gamma);
  dprl_json_put_key(b, "horizon");
  if (o->horizon) dprl_buf_printf(b, "%lld", (long long)o->horizon);
  else dprl_buf_puts(b, "null");
  dprl_json_put_key(b, "method");
  dprl_json_put_string(b, method);
  dprl_json_put_num(b, "min_count", o->est.min_count);
  dprl_json_put_num(b, "count_floor", o->est.count_floor);
  dprl_json_put_key(b, "ends");
  dprl_json_put_string(b, m->censored ? "per episode" : o->est.censored ? "censored" : "terminal");
  dprl_json_put_int(b, "pessimistic_pairs", e->pessimistic);
  dprl_json_put_key(b, "start_uniform");
  dprl_buf_puts(b, e->start_uniform ? "true" : "false");
  if (!m->sparse) return;
  dprl_json_put_key(b, "unknown");
  dprl_json_put_string(b, o->est.renormalise ? "renormalise" : "pessimistic");
  dprl_json_put_key(b, "unknown_mass");
  if (isnan(e->unknown_mass)) dprl_buf_puts(b, "null");
  else dprl_json_put_double(b, e->unknown_mass);
}

/* One policy's value, values, error bars and bound, without braces. */
static int put_policy(dprl_buf *b, double value, const double *V, int64_t S,
                      const dprl_mdpv_moments *mo, const dprl_mdpv_interval *ci,
                      int64_t draws, int noiseless, double bound, dprl_cancel *cancel,
                      dprl_error *err) {
  dprl_buf_puts(b, "\"value\":");
  dprl_json_put_double(b, value);
  dprl_json_put_key(b, "stderr");
  if (!draws) dprl_buf_puts(b, "null");
  else dprl_json_put_double(b, noiseless ? 0 : sqrt(mo->m2 / (double)(draws - 1)));
  static const char *const keys[] = {"ci_low", "ci_high", "ci_bias", "ci_unknown"};
  double x[4] = {ci ? ci->low : 0, ci ? ci->high : 0, ci ? ci->bias : 0, ci ? ci->unknown : 0};
  for (int k = 0; k < 4; k++) {
    dprl_json_put_key(b, keys[k]);
    if (ci) dprl_json_put_double(b, x[k]);
    else dprl_buf_puts(b, "null");
  }
  dprl_json_put_num(b, "error_bound", bound);
  dprl_json_put_key(b, "values");
  int rc = dprl_json_put_double_array_polled(b, V, (size_t)S, cancel, err);
  dprl_json_put_key(b, "values_stderr");
  if (!draws) {
    dprl_buf_puts(b, "null");
    return rc;
  }
  dprl_buf_puts(b, "[");
  for (int64_t s = 0; s < S && !rc; s++) {
    if (s) dprl_buf_puts(b, ",");
    dprl_json_put_double(b, noiseless ? 0 : sqrt(mo->m2s[s] / (double)(draws - 1)));
    rc = dprl_cancel_poll(cancel, 150, err);
  }
  dprl_buf_puts(b, "]");
  return rc;
}

int dprl_mdpv_value(const dprl_mdpv_model *m, const dprl_mdpv_opts *o,
                    const dprl_mdpv_policies *p, dprl_buf *out, dprl_cancel *cancel,
                    dprl_error *err) {
  int64_t S = m->S;
  size_t n = p->n;
  dprl_mdpv_est e = {0};
  dprl_mdpv_work w;
  dprl_mdpv_solved how = {"direct", 0, 0}, *hows = dprl_calloc(n, sizeof *hows);
  double *V = dprl_malloc_array(n * (size_t)S, sizeof *V);
  double *mem = dprl_calloc(2 * n * (size_t)S, sizeof *mem);
  dprl_mdpv_moments *mo = dprl_calloc(n, sizeof *mo);
  dprl_mdpv_interval *ci = dprl_calloc(n, sizeof *ci);
  dprl_mdpv_world_info world = {0, 0, 0};
  double *value = dprl_malloc_array(n, sizeof *value);
  double *scratch = dprl_malloc_array((size_t)S + 3, sizeof *scratch); /* a redraw: <= S + 3 */
  int rc = dprl_mdpv_work_init(&w, S, m->A, err);
  if (!rc && (!hows || !V || !mem || !mo || !ci || !value || !scratch)) rc = dprl_nomem(err);
  if (!rc) rc = dprl_mdpv_estimate(m, &o->est, NULL, scratch, &e, cancel, err);
  for (size_t i = 0; i < n && !rc; i++) {
    mo[i].means = mem + 2 * i * (size_t)S;
    mo[i].m2s = mo[i].means + S;
    rc = dprl_mdpv_evaluate_policy(&e, o, &p->pol[i], &w, V + i * (size_t)S, &hows[i], cancel,
                                   err);
    if (!rc) how = hows[i], value[i] = dot(e.start, V + i * (size_t)S, S);
  }
  /* A model without noise resamples to itself: no draws needed. */
  int noiseless = m->sigma == 0 && m->reward_sigma == 0;
  if (!rc && o->bootstrap && !noiseless)
    rc = dprl_mdpv_noise_bootstrap(m, o, p, &w, mo, cancel, err);
  if (!rc && o->interval)
    rc = dprl_mdpv_log_bootstrap(m, o, p, value, &w, ci, &world, cancel, err);
  if (!rc && o->interval) rc = dprl_mdpv_interval_unknown(m, o, p, value, &w, ci, cancel, err);
  if (!rc) {
    dprl_buf_puts(out, "{");
    if (p->names) dprl_buf_puts(out, "\"policies\":{");
    for (size_t i = 0; i < n && !rc; i++) {
      if (p->names) {
        if (i) dprl_buf_puts(out, ",");
        dprl_json_put_string(out, p->names[i]);
        dprl_buf_puts(out, ":{");
      }
      rc = put_policy(out, value[i], V + i * (size_t)S, S, &mo[i], o->interval ? &ci[i] : NULL,
                      o->bootstrap, noiseless, hows[i].bound, cancel, err);
      if (p->names) dprl_buf_puts(out, "}");
    }
    if (p->names) dprl_buf_puts(out, "}");
    dprl_mdpv_put_common(out, m, o, &e, how.method);
    dprl_json_put_int(out, "bootstrap", o->bootstrap);
    dprl_json_put_int(out, "bootstrap_seed", (int64_t)o->seed);
    dprl_json_put_key(out, "interval");
    dprl_json_put_string(out, o->interval ? "log bootstrap" : "none");
    if (o->interval) { /* the world the logs were drawn from (§14.4) */
      dprl_json_put_num(out, "level", o->level);
      dprl_json_put_int(out, "world_episodes", world.episodes);
      dprl_json_put_int(out, "world_steps", world.steps);
      dprl_json_put_num(out, "world_clipped_share", world.clipped_share);
    }
    dprl_buf_puts(out, "}");
    if (!rc && out->oom) rc = dprl_nomem(err);
  }
  dprl_mdpv_est_free(&e);
  dprl_mdpv_work_free(&w);
  dprl_free(hows);
  dprl_free(V);
  dprl_free(mem);
  dprl_free(mo);
  dprl_free(ci);
  dprl_free(value);
  dprl_free(scratch);
  return rc;
}

int dprl_mdpv_plan(const dprl_mdpv_model *m, const dprl_mdpv_opts *o, dprl_buf *out,
                   dprl_cancel *cancel, dprl_error *err) {
  if (o->pessimism > 0) return dprl_mdpv_plan_pessimistic(m, o, out, cancel, err);
  int64_t S = m->S, A = m->A;
  dprl_mdpv_est e = {0};
  dprl_mdpv_work w;
  dprl_mdpv_solved how;
  double *Q = dprl_malloc_array((size_t)(S * A), sizeof *Q);
  double *V = dprl_malloc_array((size_t)S, sizeof *V);
  double *scratch = dprl_malloc_array((size_t)S + 3, sizeof *scratch); /* a redraw: <= S + 3 */
  int32_t *policy = dprl_malloc_array((size_t)S, sizeof *policy);
  int rc = dprl_mdpv_work_init(&w, S, A, err);
  if (!rc && (!Q || !V || !scratch || !policy)) rc = dprl_nomem(err);
  if (!rc) rc = dprl_mdpv_estimate(m, &o->est, NULL, scratch, &e, cancel, err);
  if (!rc) rc = dprl_mdpv_optimize(&e, o, &w, Q, V, policy, &how, cancel, err);
  if (!rc) {
    dprl_buf_puts(out, "{\"value\":");
    dprl_json_put_double(out, dot(e.start, V, S));
    dprl_json_put_key(out, "policy");
    dprl_buf_puts(out, "[");
    for (int64_t s = 0; s < S; s++) dprl_buf_printf(out, s ? ",%d" : "%d", (int)policy[s]);
    dprl_buf_puts(out, "]");
    dprl_json_put_key(out, "values");
    rc = dprl_json_put_double_array_polled(out, V, (size_t)S, cancel, err);
    dprl_json_put_key(out, "q");
    dprl_buf_puts(out, "[");
    for (int64_t s = 0; s < S && !rc; s++) {
      if (s) dprl_buf_puts(out, ",");
      rc = dprl_json_put_double_array_polled(out, Q + s * A, (size_t)A, cancel, err);
    }
    dprl_buf_puts(out, "]");
    dprl_json_put_num(out, "error_bound", how.bound);
    dprl_json_put_int(out, "iterations", how.iterations);
    dprl_mdpv_put_common(out, m, o, &e, how.method);
    dprl_buf_puts(out, "}");
    if (!rc && out->oom) rc = dprl_nomem(err);
  }
  dprl_mdpv_est_free(&e);
  dprl_mdpv_work_free(&w);
  dprl_free(Q);
  dprl_free(V);
  dprl_free(scratch);
  dprl_free(policy);
  return rc;
}
