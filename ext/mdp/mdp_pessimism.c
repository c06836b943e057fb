/* mdp_pessimism.c: dp_mdp_plan's pessimistic plan (mdp_eval.h,
** ALGORITHMS.md §14.3): the policy that maximises a lower confidence
** bound on its value, the bound, and the logging policy's value and bound
** on the same model.  Post-processing of the release. */
#include <math.h>
#include <string.h>

#include "base/json.h"
#include "dp/accountant.h"
#include "mdp/mdp_eval.h"

/* What the lower bound needs of each pair: its visits less the count
** noise's z sd (NaN: too few to use, the pair valued at its worst) and
** how many noisy numbers its row has. */
typedef struct radii {
  double *low, *k;
  double z;         /* the normal quantile of the level */
  double start_low; /* the episodes, less z sd */
} radii;

/* z with Phi(z) = level, by bisection on the normal cdf. */
static double quantile_of(double level) {
  double lo = -40, hi = 40;
  for (int i = 0; i < 200; i++) {
    double mid = (lo + hi) / 2;
    if (dprl_normal_cdf(mid) < level) lo = mid;
    else hi = mid;
  }
  return hi;
}

static void radii_of(const dprl_mdpv_model *m, const dprl_mdpv_est *e, double count_floor,
                     double level, radii *b) {
  int64_t S = m->S, SA = S * m->A;
  double t = count_floor;
  b->z = quantile_of(level);
  for (int64_t sa = 0; sa < SA; sa++) {
    double k = m->sparse ? (double)(m->cell_row[sa + 1] - m->cell_row[sa]) + 2 : (double)S + 1;
    if (m->censored) k++;
    double low = e->visits[sa] - b->z * m->sigma * sqrt(k) - t * k;
    b->k[sa] = k;
    b->low[sa] = e->visits[sa] > 0 && low > 1 ? low : NAN;
  }
  double n = 0;
  for (int64_t s = 0; s < S; s++) n += m->start[s];
  b->start_low = n - b->z * m->sigma * sqrt((double)S) - t * (double)S;
}

/* max V and min V over the states and 0 (the end). */
static void range_of(const double *V, int64_t S, double *lo, double *hi) {
  *lo = 0, *hi = 0;
  for (int64_t s = 0; s < S; s++) *lo = fmin(*lo, V[s]), *hi = fmax(*hi, V[s]);
}

/* One backup of the lower bound (§14.3): with mu = r + gamma P V,
**   Q(s,a) = mu - z sqrt(v_r + gamma^2 v_P),
**   v_r = span_r^2 / (4 N) + (sigma_R^2 + b^2 sigma^2 k) / N^2,
**   v_P = span(V)^2 / (4 N) + sigma^2 sum_j (V_j - P V)^2 / N^2,
** N the visits less z sd, the sum over the row's noisy entries (dense:
** every state and the end; sparse: the kept cells, the end and the
** unknown outcome at lo); a pair without usable visits rmin + gamma lo, lo
** = min(0, min V).  Values are kept at or above the public floor `floor`.
** out = max_a Q (act: the greedy action) or, with p, the policy's mean. */
static int backup(const dprl_mdpv_model *m, const dprl_mdpv_est *e, const radii *b,
                  const dprl_mdpv_policy *p, double gamma, const double *V, double floor,
                  double *Q, double *out, int32_t *act, dprl_cancel *cancel, dprl_error *err) {
  int64_t S = e->S, A = e->A;
  double lo, hi, span_r = m->rmax - m->rmin, half = span_r / 2, sig2 = m->sigma * m->sigma;
  range_of(V, S, &lo, &hi);
  double span = hi - lo, all2 = 0, all = 0; /* dense: sum of V and V^2 over states and end */
  for (int64_t s = 0; !m->sparse && s < S; s++) all += V[s], all2 += V[s] * V[s];
  for (int64_t s = 0; s < S; s++) {
    double best = -HUGE_VAL, acc = 0;
    int32_t arg = 0;
    for (int64_t a = 0; a < A; a++) {
      int64_t sa = s * A + a;
      double q, N = b->low[sa];
      if (isnan(N)) {
        q = m->rmin + gamma * lo;
      } else {
        double pv = 0, dev = 0;
        for (int64_t j = e->row[sa]; j < e->row[sa + 1]; j++) pv += e->prob[j] * V[e->next[j]];
        double u = e->unknown ? e->unknown[sa] : 0;
        pv += u * lo;
        if (m->sparse) {
          for (int64_t j = e->row[sa]; j < e->row[sa + 1]; j++)
            dev += (V[e->next[j]] - pv) * (V[e->next[j]] - pv);
          dev += pv * pv + (lo - pv) * (lo - pv);
        } else { /* sum over the S states and the end of (V_j - pv)^2 */
          dev = all2 - 2 * pv * all + (double)S * pv * pv + pv * pv;
        }
        double vr = span_r * span_r / (4 * N) +
                    (m->reward_sigma * m->reward_sigma + half * half * sig2 * b->k[sa]) / (N * N);
        double vp = span * span / (4 * N) + sig2 * fmax(dev, 0) / (N * N);
        q = e->reward[sa] + gamma * pv - b->z * sqrt(vr + gamma * gamma * vp);
      }
      /* no Q is below rmin + gamma lo (a step, then the lowest successor or
      ** the end), nor below the public floor: a loose bound ranks with no data */
      q = fmax(q, fmax(floor, m->rmin + gamma * lo));
      Q[sa] = q;
      best = fmax(best, q);
      if (p) acc += (p->act ? (p->act[s] == a) : p->pi[sa]) * q;
    }
    /* ties (a state whose pairs are all too rare is one) to the action the
    ** log took most, then to the lowest */
    double tie = DPRL_MDPV_TIE * fmax(1, fabs(best)), most = -1;
    for (int64_t a = 0; a < A; a++)
      if (Q[s * A + a] >= best - tie && e->visits[s * A + a] > most)
        most = e->visits[s * A + a], arg = (int32_t)a;
    out[s] = p ? acc : best;
    if (act) act[s] = arg;
    if (dprl_cancel_poll(cancel, (uint64_t)(e->row[s * A + A] - e->row[s * A] + A), err))
      return err->code;
  }
  return DPRL_OK;
}

/* The lower bound's values V (and first-step Q and greedy act) of policy p,
** or of the best policy when p is NULL: H backward steps, or without a
** horizon value iteration with the public span of a value. */
static int lower_values(const dprl_mdpv_model *m, const dprl_mdpv_opts *o,
                        const dprl_mdpv_est *e, const radii *b, const dprl_mdpv_policy *p,
                        double *V, double *V2, double *Q, int32_t *act, int64_t *steps,
                        dprl_cancel *cancel, dprl_error *err) {
  int64_t S = e->S;
  double g = o->gamma, worst = fmin(m->rmin, 0), scale = fmax(m->rmax, 0) - worst;
  memset(V, 0, (size_t)S * sizeof *V);
  int64_t most = o->horizon;
  if (!o->horizon) { /* the sweeps of §14.2, at least 2 */
    double k = ceil(log(o->tolerance * (1 - g) / fmax(scale, 1e-300)) / log(g)) + 2;
    most = (int64_t)fmin(DPRL_MDPV_SWEEPS_MAX, k > 2 ? k : 2);
  }
  *steps = 0;
  for (int64_t h = 0; h < most; h++) {
    /* no value is below the worst reward at every step left (a public floor) */
    double floor = o->horizon ? worst * (double)(h + 1) : worst / (1 - g);
    int rc = backup(m, e, b, p, g, V, floor, Q, V2, act, cancel, err);
    if (rc) return rc;
    double d = 0;
    for (int64_t s = 0; s < S; s++) d = fmax(d, fabs(V2[s] - V[s]));
    memcpy(V, V2, (size_t)S * sizeof *V);
    ++*steps;
    if (!o->horizon && g * d / (1 - g) <= o->tolerance) break;
  }
  return DPRL_OK;
}

/* The lower bound under the start distribution: its mean less z times
** the start's sampling and noise sd (§14.3). */
static double start_bound(const dprl_mdpv_model *m, const dprl_mdpv_est *e, const radii *b,
                          const double *V) {
  double lo, hi, v = 0, dev = 0, n = b->start_low;
  range_of(V, e->S, &lo, &hi);
  for (int64_t s = 0; s < e->S; s++) v += e->start[s] * V[s];
  if (!(n > 1)) return lo;
  for (int64_t s = 0; s < e->S; s++) dev += (V[s] - v) * (V[s] - v);
  return v - b->z * sqrt((hi - lo) * (hi - lo) / (4 * n) + m->sigma * m->sigma * dev / (n * n));
}

int dprl_mdpv_plan_pessimistic(const dprl_mdpv_model *m, const dprl_mdpv_opts *o,
                               dprl_buf *out, dprl_cancel *cancel, dprl_error *err) {
  int64_t S = m->S, A = m->A, SA = S * A, steps = 0;
  dprl_mdpv_est e = {0};
  dprl_mdpv_work w;
  dprl_mdpv_solved how, bhow;
  radii b = {0};
  double *mem = dprl_malloc_array((size_t)(4 * SA + 6 * S), sizeof *mem);
  double *scratch = dprl_malloc_array((size_t)S + 3, sizeof *scratch);
  int32_t *act = dprl_malloc_array((size_t)S, sizeof *act);
  int rc = dprl_mdpv_work_init(&w, S, A, err);
  if (!rc && (!mem || !scratch || !act)) rc = dprl_nomem(err);
  double *Q = mem, *pib = Q + SA, *V = pib + SA, *V2 = V + S, *Vp = V2 + S, *Vb = Vp + S,
         *L = Vb + S, *Lb = L + S;
  b.low = Lb + S, b.k = b.low + SA;
  if (!rc && !(e.visits = dprl_malloc_array((size_t)SA, sizeof *e.visits))) rc = dprl_nomem(err);
  if (!rc) rc = dprl_mdpv_estimate(m, &o->est, NULL, scratch, &e, cancel, err);
  if (!rc) radii_of(m, &e, o->est.count_floor, o->pessimism, &b);
  /* the plan: greedy on the lower bound; then its bound as a fixed policy */
  if (!rc) rc = lower_values(m, o, &e, &b, NULL, V, V2, Q, act, &steps, cancel, err);
  dprl_mdpv_policy plan = {NULL, act}, logged = {pib, NULL};
  int64_t fixed_steps;
  double *Qfirst = NULL; /* the plan's first-step Q, kept before the fixed policies' runs */
  if (!rc && !(Qfirst = dprl_malloc_array((size_t)SA, sizeof *Qfirst))) rc = dprl_nomem(err);
  if (!rc) memcpy(Qfirst, Q, (size_t)SA * sizeof *Q);
  if (!rc) rc = lower_values(m, o, &e, &b, &plan, L, V2, Q, NULL, &fixed_steps, cancel, err);
  /* the logging policy: pi_b(a|s) proportional to N(s,a), uniform where none */
  for (int64_t s = 0; !rc && s < S; s++) {
    double tot = 0;
    for (int64_t a = 0; a < A; a++) tot += e.visits[s * A + a];
    for (int64_t a = 0; a < A; a++)
      pib[s * A + a] = tot > 0 ? e.visits[s * A + a] / tot : 1.0 / (double)A;
  }
  if (!rc) rc = lower_values(m, o, &e, &b, &logged, Lb, V2, Q, NULL, &fixed_steps, cancel, err);
  if (!rc) rc = dprl_mdpv_evaluate_policy(&e, o, &plan, &w, Vp, &how, cancel, err);
  if (!rc) rc = dprl_mdpv_evaluate_policy(&e, o, &logged, &w, Vb, &bhow, cancel, err);
  if (!rc) {
    double value = 0, bvalue = 0;
    for (int64_t s = 0; s < S; s++) value += e.start[s] * Vp[s], bvalue += e.start[s] * Vb[s];
    dprl_buf_puts(out, "{\"value\":");
    dprl_json_put_double(out, value);
    dprl_json_put_key(out, "lcb");
    dprl_json_put_double(out, start_bound(m, &e, &b, L));
    dprl_json_put_key(out, "policy");
    dprl_buf_puts(out, "[");
    for (int64_t s = 0; s < S; s++) dprl_buf_printf(out, s ? ",%d" : "%d", (int)act[s]);
    dprl_buf_puts(out, "]");
    dprl_json_put_key(out, "behaviour_value");
    dprl_json_put_double(out, bvalue);
    dprl_json_put_key(out, "behaviour_lcb");
    dprl_json_put_double(out, start_bound(m, &e, &b, Lb));
    dprl_json_put_num(out, "pessimism", o->pessimism);
    dprl_json_put_key(out, "values");
    rc = dprl_json_put_double_array_polled(out, Vp, (size_t)S, cancel, err);
    dprl_json_put_key(out, "lcb_values");
    if (!rc) rc = dprl_json_put_double_array_polled(out, L, (size_t)S, cancel, err);
    dprl_json_put_key(out, "q");
    dprl_buf_puts(out, "[");
    for (int64_t s = 0; s < S && !rc; s++) {
      if (s) dprl_buf_puts(out, ",");
      rc = dprl_json_put_double_array_polled(out, Qfirst + s * A, (size_t)A, cancel, err);
    }
    dprl_buf_puts(out, "]");
    dprl_json_put_num(out, "error_bound", how.bound);
    dprl_json_put_int(out, "iterations", steps);
    dprl_mdpv_put_common(out, m, o, &e, how.method);
    dprl_buf_puts(out, "}");
    if (!rc && out->oom) rc = dprl_nomem(err);
  }
  dprl_mdpv_est_free(&e);
  dprl_mdpv_work_free(&w);
  dprl_free(mem);
  dprl_free(Qfirst);
  dprl_free(scratch);
  dprl_free(act);
  return rc;
}
