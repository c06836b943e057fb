/*
** prefix_stable.c: the numerical core of dp_prefix_stable (see
** prefix_stable.h; ALGORITHMS.md section 7; Sharma et al. 2024, Alg. 1-2).
**
** In SQL (the glue is elsewhere), the feature reads:
**   SELECT * FROM dp_prefix_stable(
**     'SELECT episode, t, state, action FROM logs',
**     'SELECT expert, state, action, prob FROM policies',
**     '{"epsilon": 7.5, "delta": 3e-4, "p_min": 0.02, "T": 100}');
** and this file turns dense arrays into one prefix length per examined
** trajectory.
*/
#include "prefix_stable/prefix_stable.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A probability in a message: the shortest %g that reads back exactly, so
** "prob 0.019999999999999997 < p_min 0.02" never prints as "0.02 < 0.02". */
static const char *fmt_num(char *buf, size_t n, double x) {
  for (int prec = 15; prec <= 17; prec++) {
    dprl_snprintf(buf, n, "%.*g", prec, x);
    if (dprl_strtod(buf, NULL) == x) break;
  }
  return buf;
}

/* ---- Policy table ------------------------------------------------------ */

int dprl_policy_init(dprl_policy_table *pt, int64_t n_experts,
                     int64_t n_states, int64_t n_actions, dprl_error *err) {
  memset(pt, 0, sizeof *pt);
  if (n_experts < 1)
    return dprl_fail(err, DPRL_EINVAL,
                     "policies: the number of experts must be >= 1, got %lld",
                     (long long)n_experts);
  if (n_states < 1)
    return dprl_fail(err, DPRL_EINVAL,
                     "policies: the number of states must be >= 1, got %lld",
                     (long long)n_states);
  if (n_actions < 1)
    return dprl_fail(err, DPRL_EINVAL,
                     "policies: the number of actions must be >= 1, got %lld",
                     (long long)n_actions);
  size_t cells = (size_t)n_experts;
  if ((uint64_t)n_experts > SIZE_MAX || (uint64_t)n_states > SIZE_MAX / cells)
    return dprl_nomem(err);
  cells *= (size_t)n_states;
  if ((uint64_t)n_actions > SIZE_MAX / cells) return dprl_nomem(err);
  cells *= (size_t)n_actions;
  if (cells > SIZE_MAX / sizeof(double)) return dprl_nomem(err);
  pt->prob = dprl_malloc(cells * sizeof(double));
  if (!pt->prob) return dprl_nomem(err);
  for (size_t c = 0; c < cells; c++) pt->prob[c] = NAN;
  pt->n_experts = n_experts;
  pt->n_states = n_states;
  pt->n_actions = n_actions;
  return DPRL_OK;
}

void dprl_policy_free(dprl_policy_table *pt) {
  dprl_free(pt->prob);
  memset(pt, 0, sizeof *pt);
}

static int index_in(int64_t v, int64_t n) { return v >= 0 && v < n; }

/* The name of an expert, state or action in messages (see dprl_id_namer). */
typedef struct ids {
  char e[64], s[64], a[64];
} ids;
static const ids *name_ids(const dprl_policy_table *pt, int64_t i, int64_t s, int64_t a,
                           ids *out) {
  char *buf[3] = {out->e, out->s, out->a};
  int64_t v[3] = {i, s, a};
  for (int k = 0; k < 3; k++) {
    if (pt->namer && v[k] >= 0) pt->namer(pt->namer_ctx, (dprl_id_kind)k, v[k], buf[k], 64);
    else dprl_snprintf(buf[k], 64, "%lld", (long long)v[k]);
  }
  return out;
}

int dprl_policy_set(dprl_policy_table *pt, int64_t expert, int64_t state,
                    int64_t action, double prob, dprl_error *err) {
  if (!index_in(expert, pt->n_experts))
    return dprl_fail(err, DPRL_EINVAL,
                     "policies: expert %lld is outside 0..%lld",
                     (long long)expert, (long long)pt->n_experts - 1);
  if (!index_in(state, pt->n_states))
    return dprl_fail(err, DPRL_EINVAL, "policies: state %lld is outside 0..%lld",
                     (long long)state, (long long)pt->n_states - 1);
  if (!index_in(action, pt->n_actions))
    return dprl_fail(err, DPRL_EINVAL,
                     "policies: action %lld is outside 0..%lld",
                     (long long)action, (long long)pt->n_actions - 1);
  ids n;
  if (!isfinite(prob)) {
    name_ids(pt, expert, state, action, &n);
    return dprl_fail(err, DPRL_EINVAL,
                     "policies: expert %s, state %s, action %s: prob must be a finite "
                     "number, got %g",
                     n.e, n.s, n.a, prob);
  }
  double *cell = &pt->prob[dprl_policy_index(pt, expert, state, action)];
  if (!isnan(*cell)) {
    name_ids(pt, expert, state, action, &n);
    return dprl_fail(err, DPRL_EINVAL, "policies: duplicate (expert %s, state %s, action %s)",
                     n.e, n.s, n.a);
  }
  *cell = prob;
  return DPRL_OK;
}

static int sum_ok(double sum) {
  return fabs(sum - 1.0) <= DPRL_POLICY_SUM_TOL; /* false for NaN */
}

/* The checks of one (expert, state), in the order the messages promise. */
static int validate_one(const dprl_policy_table *pt, double p_min,
                        int64_t i, int64_t s, dprl_error *err) {
  char b1[40], b2[40];
  ids n;
  for (int64_t a = 0; a < pt->n_actions; a++)
    if (isnan(pt->prob[dprl_policy_index(pt, i, s, a)])) {
      name_ids(pt, i, s, a, &n);
      return dprl_fail(err, DPRL_EINVAL, "policies: missing (expert %s, state %s, action %s)",
                       n.e, n.s, n.a);
    }
  double sum = 0;
  for (int64_t a = 0; a < pt->n_actions; a++) {
    double p = pt->prob[dprl_policy_index(pt, i, s, a)];
    if (!(p >= p_min)) {
      name_ids(pt, i, s, a, &n);
      return dprl_fail(err, DPRL_EINVAL,
                       "policies: expert %s, state %s, action %s: prob %s < p_min %s", n.e,
                       n.s, n.a, fmt_num(b1, sizeof b1, p), fmt_num(b2, sizeof b2, p_min));
    }
    sum += p;
  }
  if (!sum_ok(sum)) {
    name_ids(pt, i, s, -1, &n);
    return dprl_fail(err, DPRL_EINVAL,
                     "policies: expert %s, state %s: probabilities sum to %.15g, not 1 "
                     "(tolerance %g)",
                     n.e, n.s, sum, DPRL_POLICY_SUM_TOL);
  }
  return DPRL_OK;
}

/* One pass in memory order (the experts of a column are contiguous); true
** iff every check passes. Sums accumulate over actions in the same order as
** validate_one, so both passes agree bit for bit. */
static int policies_all_ok(const dprl_policy_table *pt, double p_min,
                           double *sums) {
  const int64_t m = pt->n_experts;
  for (int64_t s = 0; s < pt->n_states; s++) {
    for (int64_t i = 0; i < m; i++) sums[i] = 0;
    for (int64_t a = 0; a < pt->n_actions; a++) {
      const double *col = pt->prob + dprl_policy_index(pt, 0, s, a);
      int bad = 0;
      for (int64_t i = 0; i < m; i++) {
        bad |= !(col[i] >= p_min); /* NaN (missing) fails too */
        sums[i] += col[i];
      }
      if (bad) return 0;
    }
    for (int64_t i = 0; i < m; i++)
      if (!sum_ok(sums[i])) return 0;
  }
  return 1;
}

int dprl_policy_validate(const dprl_policy_table *pt, double p_min,
                         dprl_error *err) {
  if (!pt->prob || pt->n_experts < 1 || pt->n_states < 1 || pt->n_actions < 1)
    return dprl_fail(err, DPRL_EINVAL, "policies: the table is empty");
  double hi = 1.0 / (double)pt->n_actions;
  if (!(p_min > 0 && p_min < hi))
    return dprl_fail(err, DPRL_EINVAL,
                     "p_min must be in (0, 1/|A|) = (0, %g), got %g", hi, p_min);
  double *sums = dprl_malloc((size_t)pt->n_experts * sizeof(double));
  if (!sums) return dprl_nomem(err);
  int ok = policies_all_ok(pt, p_min, sums);
  dprl_free(sums);
  if (ok) return DPRL_OK;
  /* Something failed: find the first failure in (expert, state) order so
  ** the message does not depend on the memory layout. */
  for (int64_t i = 0; i < pt->n_experts; i++)
    for (int64_t s = 0; s < pt->n_states; s++)
      if (validate_one(pt, p_min, i, s, err)) return err->code;
  return dprl_fail(err, DPRL_EINVAL, "policies: invalid table"); /* unreached */
}

const char *const dprl_prefix_accountant_names[] = {"optimal", "paper", NULL};

/* T examined trajectories, each (2 eps', delta1/(2T))-DP, compose to
** (eps1, <= delta1) with the accountant's margin. */
static int composes(double eps_prime, double eps1, double delta1, int64_t T,
                    double *delta) {
  *delta = dprl_composition_delta(T, 2 * eps_prime, delta1 / (2.0 * (double)T),
                                  eps1);
  return *delta <= delta1 * (1 - DPRL_PREFIX_DELTA_MARGIN); /* false for NaN */
}

/* The largest eps' that composes, by bisection on a bracket [lo, hi] with
** lo composing and hi not. lo = eps1/(2T): then T * 2eps' = eps1, every
** term of delta_T(eps1) vanishes and the total is 1 - (1 - delta1/(2T))^T
** <= delta1/2. hi: a single (2eps', delta0)-DP mechanism is already not
** (eps1, delta1)-DP once 2eps' >= eps1 + 2 atanh(delta1) (then
** (e^{2eps'} - e^{eps1}) / (1 + e^{2eps'}) >= delta1), and composing more
** of them only adds to delta; +1 keeps it strictly outside. The result is
** lo, which composes: the guarantee is never rounded the unsafe way. */
static int optimal_eps_prime(double eps1, double delta1, int64_t T,
                             double *eps_prime, double *delta,
                             dprl_error *err) {
  double lo = eps1 / (2.0 * (double)T), hi = (eps1 + 2 * atanh(delta1) + 1) / 2;
  double d_lo, d_hi;
  if (!composes(lo, eps1, delta1, T, &d_lo) || composes(hi, eps1, delta1, T, &d_hi))
    return dprl_fail(err, DPRL_EINVAL,
                     "accountant \"optimal\": no eps' found for epsilon %g, "
                     "delta %g, T = %lld (delta %g at eps1/(2T))",
                     eps1, delta1, (long long)T, d_lo);
  for (int it = 0; it < 200 && hi - lo > lo * 0x1p-45; it++) {
    double mid = 0.5 * (lo + hi), d;
    if (composes(mid, eps1, delta1, T, &d)) {
      lo = mid;
      d_lo = d;
    } else {
      hi = mid;
    }
  }
  *eps_prime = lo;
  *delta = d_lo;
  return DPRL_OK;
}

/* ---- Parameters -------------------------------------------------------- */

int dprl_prefix_params_derive(double eps1, double delta1, double p_min,
                              int64_t n_actions, int64_t T, int64_t L,
                              dprl_prefix_accountant accountant,
                              dprl_prefix_params *out, dprl_error *err) {
  memset(out, 0, sizeof *out);
  if (!(eps1 > 0 && eps1 <= DPRL_PREFIX_MAX_EPS))
    return dprl_fail(err, DPRL_EINVAL, "epsilon must be in (0, %g], got %g",
                     DPRL_PREFIX_MAX_EPS, eps1);
  if (!(delta1 > 0 && delta1 < 1))
    return dprl_fail(err, DPRL_EINVAL, "delta must be in (0, 1), got %g",
                     delta1);
  if (n_actions < 1)
    return dprl_fail(err, DPRL_EINVAL,
                     "the number of actions must be >= 1, got %lld",
                     (long long)n_actions);
  double hi = 1.0 / (double)n_actions;
  if (!(p_min > 0 && p_min < hi))
    return dprl_fail(err, DPRL_EINVAL,
                     "p_min must be in (0, 1/|A|) = (0, %g), got %g", hi, p_min);
  if (T < 1 || T > DPRL_PREFIX_MAX_T)
    return dprl_fail(err, DPRL_EINVAL, "T must be in 1..%d, got %lld",
                     DPRL_PREFIX_MAX_T, (long long)T);
  if (L < 1)
    return dprl_fail(err, DPRL_EINVAL, "L must be >= 1, got %lld",
                     (long long)L);
  if (accountant != DPRL_PREFIX_OPTIMAL && accountant != DPRL_PREFIX_PAPER)
    return dprl_fail(err, DPRL_EINVAL, "unknown accountant %d",
                     (int)accountant);
  /* Logs of ratios are taken as differences of logs so that a subnormal
  ** delta never overflows 2/delta1 or underflows delta'. */
  double ln_2_over_delta1 = log(2.0) - log(delta1);
  double two_TL = 2.0 * (double)T * (double)L;
  double ln_1_over_delta_p = log(two_TL) - log(delta1);
  double ep = 0, dcomp = 0;
  if (accountant == DPRL_PREFIX_PAPER) {
    ep = eps1 / sqrt(32.0 * (double)T * ln_2_over_delta1);
    if (!composes(ep, eps1, delta1, T, &dcomp))
      return dprl_fail(err, DPRL_EINVAL,
                       "accountant \"paper\": eps' = eps1/sqrt(32 T ln(2/delta1)) "
                       "= %g does not give (epsilon %g, delta %g): the exact "
                       "composition of T = %lld examined trajectories, each "
                       "(2 eps', delta/(2T))-DP, has delta %g at epsilon %g "
                       "(advanced composition assumes small eps'); use "
                       "\"accountant\": \"optimal\"",
                       ep, eps1, delta1, (long long)T, dcomp, eps1);
  } else {
    int rc = optimal_eps_prime(eps1, delta1, T, &ep, &dcomp, err);
    if (rc) return rc;
  }
  out->eps1 = eps1;
  out->delta1 = delta1;
  out->p_min = p_min;
  out->T = T;
  out->L = L;
  out->accountant = accountant;
  out->eps_prime = ep;
  out->delta_composed = dcomp;
  out->delta_prime = delta1 / two_TL;
  /* e^x/(e^x - 1) = 1/(1 - e^-x) = -1/expm1(-x): no cancellation for small
  ** eps', no overflow for large. */
  out->c_min = -1.0 / expm1(-out->eps_prime);
  out->theta = out->c_min / p_min;
  out->b_threshold = 2.0 / out->eps_prime;
  out->b_query = 4.0 / out->eps_prime;
  out->threshold_base = out->theta + out->b_query * ln_1_over_delta_p;
  if (!(out->eps_prime > 0) || !isfinite(out->b_query) ||
      !isfinite(out->threshold_base)) {
    double e = out->eps_prime;
    memset(out, 0, sizeof *out);
    return dprl_fail(err, DPRL_EINVAL,
                     "epsilon %g is too small (eps' = %g for T = %lld, delta = "
                     "%g): the threshold overflows",
                     eps1, e, (long long)T, delta1);
  }
  /* One grid for both draws, from the public 2/eps' (the smaller scale):
  ** both scales are then >= 2^25 grid steps, so rounding them up to the
  ** grid costs a factor <= 1 + 2^-25 in noise, and theta-hat and the noisy
  ** count are integer multiples of the same g, so their comparison is exact
  ** whatever their magnitudes. g <= 1 is required: then 1/g is an integer
  ** and floor(x/g) (dprl_prefix_query) moves by at most 1/g steps when x
  ** moves by 1, i.e. the grid keeps the count's sensitivity at exactly 1.
  ** g > 1 means 2/eps' > 2^26, theta > 2^25/p_min: refused. */
  out->grid = dprl_grid_for(out->b_threshold);
  if (!(out->grid > 0 && out->grid <= 1)) {
    double e = out->eps_prime, th = out->theta;
    memset(out, 0, sizeof *out);
    return dprl_fail(err, DPRL_EINVAL,
                     "epsilon %g is too small: eps' = %g (T = %lld, delta = "
                     "%g) is below 2^-25, where the noise grid is coarser "
                     "than the count's sensitivity (and theta = %g exceeds "
                     "any realistic number of experts)",
                     eps1, e, (long long)T, delta1, th);
  }
  return DPRL_OK;
}

/* ---- Trajectories ------------------------------------------------------ */

int dprl_trajectories_check(const dprl_trajectories *tr,
                            const dprl_policy_table *pt, dprl_error *err) {
  if (tr->n < 0)
    return dprl_fail(err, DPRL_EINVAL,
                     "trajectories: count must be >= 0, got %lld",
                     (long long)tr->n);
  if (tr->n > 0 && tr->offsets[0] < 0)
    return dprl_fail(err, DPRL_EINVAL,
                     "trajectories: offsets[0] must be >= 0, got %lld",
                     (long long)tr->offsets[0]);
  /* All offsets first: steps are read only inside [offsets[0], offsets[n]). */
  for (int64_t j = 0; j < tr->n; j++)
    if (tr->offsets[j + 1] < tr->offsets[j])
      return dprl_fail(err, DPRL_EINVAL,
                       "trajectories: offsets must be non-decreasing, got "
                       "offsets[%lld] = %lld > offsets[%lld] = %lld",
                       (long long)j, (long long)tr->offsets[j],
                       (long long)j + 1, (long long)tr->offsets[j + 1]);
  for (int64_t j = 0; j < tr->n; j++) {
    int64_t lo = tr->offsets[j], hi = tr->offsets[j + 1];
    for (int64_t p = lo; p < hi; p++) {
      if (!index_in(tr->states[p], pt->n_states))
        return dprl_fail(err, DPRL_EINVAL,
                         "trajectory %lld, step %lld: state %lld is outside "
                         "the policy table (states 0..%lld)",
                         (long long)j, (long long)(p - lo),
                         (long long)tr->states[p],
                         (long long)pt->n_states - 1);
      if (!index_in(tr->actions[p], pt->n_actions))
        return dprl_fail(err, DPRL_EINVAL,
                         "trajectory %lld, step %lld: action %lld is outside "
                         "the policy table (actions 0..%lld)",
                         (long long)j, (long long)(p - lo),
                         (long long)tr->actions[p],
                         (long long)pt->n_actions - 1);
    }
  }
  return DPRL_OK;
}

/* ---- count_tau --------------------------------------------------------- */

/* One step of count_tau: prod[i] *= pi_i(a|s) for every expert (col is the
** contiguous column of (s, a)) and return sum_i prod[i]. Eight partial sums
** break the floating-point add chain so the loop runs at multiply
** throughput and vectorises without -ffast-math; the products themselves
** are exact left-to-right products, as in the definition. */
static double count_step(double *restrict prod, const double *restrict col,
                         int64_t m) {
  double acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 8 <= m; i += 8)
    for (int k = 0; k < 8; k++) {
      double p = prod[i + k] * col[i + k];
      prod[i + k] = p;
      acc[k] += p;
    }
  double tail = 0;
  for (; i < m; i++) {
    prod[i] *= col[i];
    tail += prod[i];
  }
  return ((acc[0] + acc[1]) + (acc[2] + acc[3])) +
         ((acc[4] + acc[5]) + (acc[6] + acc[7])) + tail;
}

static const double *column(const dprl_policy_table *pt, int64_t s,
                            int64_t a) {
  return pt->prob + dprl_policy_index(pt, 0, s, a);
}

int dprl_prefix_counts(const dprl_policy_table *pt, const int64_t *states,
                       const int64_t *actions, int64_t len, double *counts,
                       dprl_error *err) {
  for (int64_t j = 0; j < len; j++) {
    if (!index_in(states[j], pt->n_states) ||
        !index_in(actions[j], pt->n_actions))
      return dprl_fail(err, DPRL_EINVAL,
                       "step %lld: (state %lld, action %lld) is outside the "
                       "policy table (%lld states, %lld actions)",
                       (long long)j, (long long)states[j],
                       (long long)actions[j], (long long)pt->n_states,
                       (long long)pt->n_actions);
  }
  double *prod = dprl_malloc((size_t)pt->n_experts * sizeof(double));
  if (!prod) return dprl_nomem(err);
  for (int64_t i = 0; i < pt->n_experts; i++) prod[i] = 1.0;
  for (int64_t j = 0; j < len; j++)
    counts[j] = count_step(prod, column(pt, states[j], actions[j]),
                           pt->n_experts);
  dprl_free(prod);
  return DPRL_OK;
}

/* ---- Noise: theta-hat and PrefixQuery ---------------------------------- */

int dprl_prefix_threshold_noise(dprl_rng *rng, const dprl_prefix_params *pp,
                                double *noise, dprl_error *err) {
  return dprl_release_laplace(rng, 0.0, pp->b_threshold, pp->grid, noise, err);
}

/* count + Lap(4/eps') > threshold_base + threshold_noise is evaluated as
** release(count - threshold_base) > threshold_noise: the same comparison
** shifted by the public threshold_base, so that the grid value stays small
** even when theta is huge (tiny eps' or p_min). The difference is
** - clamped to +-2^50 grid steps (|value/g| < 2^52 is what the grid
**   sampler accepts); clamping is 1-Lipschitz, so the query keeps
**   sensitivity 1, and since 2^50 g > 2^23 b_query, a clamped query differs
**   from the unclamped one only with probability < exp(-2^22);
** - floored to the grid before the sampler rounds it: floor commutes with
**   integer shifts (llround's ties away from zero do not), so a change of
**   at most 1 in the count moves the grid integer by at most 1/g steps and
**   the discrete Laplace of >= 4/(eps' g) steps gives exactly the
**   continuous mechanism's privacy. (The count itself is a floating-point
**   sum; its rounding, ~m 2^-53 relative, is the usual residual.) */
int dprl_prefix_query(dprl_rng *rng, const dprl_prefix_params *pp,
                      double count, double threshold_noise, int *top,
                      dprl_error *err) {
  double lim = ldexp(pp->grid, 50);
  double v = count - pp->threshold_base;
  if (v > lim) v = lim;
  if (v < -lim) v = -lim;
  v = pp->grid * floor(v / pp->grid); /* exact: g is a power of two */
  double q;
  int rc = dprl_release_laplace(rng, v, pp->b_query, pp->grid, &q, err);
  if (rc) return rc;
  *top = q > threshold_noise;
  return DPRL_OK;
}

/* ---- The release ------------------------------------------------------- */

/* Algorithm 2, lines 6-16, for one trajectory: k = the number of leading
** "top" answers, at most min(len, L); prod is scratch of m doubles. */
static int release_one(const dprl_policy_table *pt,
                       const dprl_prefix_params *pp, dprl_rng *rng,
                       const int64_t *states, const int64_t *actions,
                       int64_t len, double *prod, int64_t *k,
                       dprl_error *err) {
  double thr;
  int rc = dprl_prefix_threshold_noise(rng, pp, &thr, err);
  if (rc) return rc;
  int64_t n = len < pp->L ? len : pp->L;
  for (int64_t i = 0; i < pt->n_experts; i++) prod[i] = 1.0;
  *k = 0;
  for (int64_t j = 0; j < n; j++) {
    /* T L m products in all: 200k experts x 1000 steps x 100 runs is
    ** minutes, so every step asks whether to stop. */
    if ((rc = dprl_cancel_poll(pp->cancel, (uint64_t)pt->n_experts + 100, err))) return rc;
    double count =
        count_step(prod, column(pt, states[j], actions[j]), pt->n_experts);
    int top;
    rc = dprl_prefix_query(rng, pp, count, thr, &top, err);
    if (rc) return rc;
    if (!top) break; /* first bottom: release tau_{1:j}, stop */
    *k = j + 1;
  }
  return DPRL_OK;
}

void dprl_prefix_release_free(dprl_prefix_release *r) {
  dprl_free(r->traj);
  dprl_free(r->k);
  memset(r, 0, sizeof *r);
}

void dprl_prefix_draw(dprl_rng *rng, int64_t n, int64_t T, int64_t *draw) {
  for (int64_t c = 0; c < T; c++)
    draw[c] = n > 0 ? (int64_t)dprl_rng_below(rng, (uint64_t)n) : -1;
}

/* Assumption 3 and the trajectories checked before any noise. */
static int release_prepare(const dprl_policy_table *pt, const dprl_trajectories *tr,
                           const dprl_prefix_params *pp, dprl_prefix_release *out,
                           dprl_error *err) {
  memset(out, 0, sizeof *out);
  int rc = dprl_policy_validate(pt, pp->p_min, err);
  if (!rc) rc = dprl_trajectories_check(tr, pt, err);
  return rc;
}

/* Run c examines trajectory draw[c] (-1: none, k = 0 with no noise drawn:
** a run without a trajectory asks no query). */
static int examine(const dprl_policy_table *pt, const dprl_trajectories *tr,
                   const dprl_prefix_params *pp, dprl_rng *rng,
                   const int64_t *draw, dprl_prefix_release *out, dprl_error *err) {
  int rc = DPRL_OK;
  int64_t T = pp->T;
  for (int64_t c = 0; draw && c < T; c++)
    if (draw[c] < -1 || draw[c] >= tr->n || (draw[c] < 0) != (tr->n == 0))
      return dprl_fail(err, DPRL_EINVAL, "run %lld: trajectory %lld is outside 0..%lld",
                       (long long)c, (long long)draw[c], (long long)tr->n - 1);
  if (!draw && tr->n > 0)
    return dprl_fail(err, DPRL_EINVAL, "trajectories: %lld given but no draw",
                     (long long)tr->n);
  double *prod = dprl_malloc((size_t)pt->n_experts * sizeof(double));
  out->traj = dprl_malloc((size_t)T * sizeof(int64_t));
  out->k = dprl_malloc((size_t)T * sizeof(int64_t));
  if (!prod || !out->traj || !out->k) {
    rc = dprl_nomem(err);
    goto done;
  }
  for (int64_t c = 0; c < T; c++) {
    int64_t j = draw ? draw[c] : -1;
    out->traj[c] = j;
    out->k[c] = 0;
    if (j < 0) continue;
    int64_t lo = tr->offsets[j];
    rc = release_one(pt, pp, rng, tr->states + lo, tr->actions + lo,
                     tr->offsets[j + 1] - lo, prod, &out->k[c], err);
    if (rc) goto done;
  }
  out->n_runs = T;
done:
  dprl_free(prod);
  if (rc) dprl_prefix_release_free(out);
  return rc;
}

int dprl_prefix_release_run(const dprl_policy_table *pt,
                            const dprl_trajectories *tr,
                            const dprl_prefix_params *pp, dprl_rng *rng,
                            dprl_prefix_release *out, dprl_error *err) {
  int rc = release_prepare(pt, tr, pp, out, err);
  if (rc) return rc;
  int64_t *draw = NULL;
  if (tr->n > 0) {
    if (!(draw = dprl_malloc((size_t)pp->T * sizeof *draw))) return dprl_nomem(err);
    dprl_prefix_draw(rng, tr->n, pp->T, draw);
  }
  rc = examine(pt, tr, pp, rng, draw, out, err);
  dprl_free(draw);
  return rc;
}

int dprl_prefix_release_drawn(const dprl_policy_table *pt,
                              const dprl_trajectories *tr,
                              const dprl_prefix_params *pp, dprl_rng *rng,
                              const int64_t *draw, dprl_prefix_release *out,
                              dprl_error *err) {
  int rc = release_prepare(pt, tr, pp, out, err);
  return rc ? rc : examine(pt, tr, pp, rng, draw, out, err);
}
