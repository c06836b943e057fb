/*
** model_sparse.c: a sparse dp_mdp release (ALGORITHMS.md §13.5) read and
** checked, and the MDP estimated from it (§14.1), for model.c (model.h).
*/
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "mdp/model_internal.h"

/* S rows of A numbers (totals, ends, reward_sums, censored) into rows: model_internal.h. */
int dprl_mdpv_pair_rows(const dprl_json *root, const char *key, const dprl_mdpv_model *m,
                        const double ***rows, dprl_error *err) {
  const dprl_json *v = dprl_mdpv_member(root, key, err);
  size_t S = (size_t)m->S, A = (size_t)m->A;
  char what[64];
  int rc;
  if (!v) return DPRL_EINVAL;
  if ((rc = dprl_mdpv_arrays(v, key, S, "n_states", err))) return rc;
  if (!(*rows = dprl_malloc_array(S, sizeof **rows))) return dprl_nomem(err);
  for (size_t s = 0; s < S; s++) {
    dprl_snprintf(what, sizeof what, "%s[%zu]", key, s);
    if (!((*rows)[s] = dprl_mdpv_numbers(v->items[s], what, A, "n_actions", err)))
      return DPRL_EINVAL;
  }
  return DPRL_OK;
}

/* The kept cells of a sparse model: [[s, a, s', count], ...] sorted by
** (s, a, s') without repeats, into the pairs' rows. */
static int read_cells(const dprl_json *root, dprl_mdpv_model *m, dprl_cancel *cancel,
                      dprl_error *err) {
  const dprl_json *v = dprl_mdpv_member(root, "next", err);
  uint64_t S = (uint64_t)m->S, A = (uint64_t)m->A, SA = S * A, last = 0;
  char g[96];
  if (!v) return DPRL_EINVAL;
  if (v->type != DPRL_JSON_ARRAY || (v->n && !v->items)) {
    dprl_mdpv_got(v, g, sizeof g);
    return dprl_fail(err, DPRL_EINVAL,
                     "model: next must be an array of [s, a, s', count] cells, got %s", g);
  }
  size_t n = v->n;
  m->cell_row = dprl_calloc((size_t)SA + 1, sizeof *m->cell_row);
  m->cell_next = dprl_malloc_array(n ? n : 1, sizeof *m->cell_next);
  m->cell_count = dprl_malloc_array(n ? n : 1, sizeof *m->cell_count);
  if (!m->cell_row || !m->cell_next || !m->cell_count) return dprl_nomem(err);
  for (size_t i = 0; i < n; i++) {
    const dprl_json *c = v->items[i];
    const double *x = c->type == DPRL_JSON_ARRAY && c->n == 4 ? c->nums : NULL;
    if (!x || !(x[0] >= 0 && x[0] < (double)S && x[0] == floor(x[0])) ||
        !(x[1] >= 0 && x[1] < (double)A && x[1] == floor(x[1])) ||
        !(x[2] >= 0 && x[2] < (double)S && x[2] == floor(x[2])) ||
        !(fabs(x[3]) <= DPRL_MDPV_NUMBER_MAX)) {
      dprl_mdpv_got(c, g, sizeof g);
      return dprl_fail(err, DPRL_EINVAL,
                       "model: next[%zu] must be [s, a, s', count] with s and s' in "
                       "0..n_states-1, a in 0..n_actions-1 and a finite count of magnitude at "
                       "most 10^150, got %s", i, g);
    }
    uint64_t sa = (uint64_t)x[0] * A + (uint64_t)x[1], key = sa * S + (uint64_t)x[2];
    if (i && key <= last)
      return dprl_fail(err, DPRL_EINVAL,
                       "model: next must be sorted by (s, a, s') without repeats: next[%zu] = "
                       "[%.0f, %.0f, %.0f, ...] comes after next[%zu]", i, x[0], x[1], x[2],
                       i - 1);
    last = key;
    m->cell_row[sa + 1]++;
    m->cell_next[i] = (int32_t)x[2];
    m->cell_count[i] = x[3];
    if (dprl_cancel_poll(cancel, 8, err)) return err->code;
  }
  for (uint64_t sa = 0; sa < SA; sa++) m->cell_row[sa + 1] += m->cell_row[sa];
  m->n_cells = n;
  return DPRL_OK;
}

/* A sparse model's parts (§13.5). */
int dprl_mdpv_read_sparse(const dprl_json *root, dprl_mdpv_model *m, dprl_cancel *cancel,
                       dprl_error *err) {
  const dprl_json *start = dprl_mdpv_member(root, "start", err);
  int rc;
  if (!start) return DPRL_EINVAL;
  if (!(m->start = dprl_mdpv_numbers(start, "start", (size_t)m->S, "n_states", err)))
    return DPRL_EINVAL;
  if ((rc = dprl_mdpv_pair_rows(root, "totals", m, &m->totals, err)) ||
      (rc = dprl_mdpv_pair_rows(root, "ends", m, &m->ends, err)) ||
      (rc = dprl_mdpv_pair_rows(root, "reward_sums", m, &m->reward_sums, err)))
    return rc;
  return read_cells(root, m, cancel, err);
}

/* Per-episode outcomes (ALGORITHMS.md §14.1): a censored end went on,
** its successor unseen.  With K the kept cells' mass, E the ended, C the
** censored: N = max(totals+, K + E + C) visits, of which N - E went on,
** and N_o = N - E - C went on to a recorded state.  P(s') = c(s') / N_o
** times (N - E) / N (renormalise: c(s') / K times (N - E) / N), and
** the unknown share (N - E) / N (1 - K / N_o).  Nothing went on: no
** next states; nothing recorded went on: all of it unknown.  Renormalise
** with no kept cell: the end takes the row when E > 0 (as without
** outcomes), else norm 0, a pessimistic pair. */
static void outcome_row(double K, double E, double C, double T, int renormalise, double *N,
                        double *norm, double *share) {
  double n = T > K + E + C ? T : K + E + C, on = n - E;
  double seen = n == K + E + C ? K : fmax(on - C, K); /* >= K: P sums to at most on / n */
  *N = n;
  if (!(on > 0)) {
    *norm = 1, *share = 0;
  } else if (renormalise) {
    *norm = K > 0 ? K * n / on : E > 0 ? 1 : 0, *share = 0;
  } else if (seen > 0) {
    *norm = seen * n / on, *share = on / n * (1 - K / seen);
  } else {
    *norm = 1, *share = on / n;
  }
}

/* A sparse model (ALGORITHMS.md §14.1): per pair, with c+ as above,
** N = max(totals+, sum of kept cells+ + ends+), P = kept+ / N, the end
** ends+ / N, and the rest u = 1 - (sum + ends+) / N unknown.  Pessimistic
** (the default): the unknown mass leads to a next state worth rmin (rmax
** with o->optimistic; u kept in e->unknown); renormalise: P = kept+ / (sum + ends+).  Censored: the
** observed next states' mass is N_P = max(totals+ - ends+, sum), P =
** kept+ / N_P (renormalise: / sum).  Rewards divide by N.  A release with
** per-episode outcomes has its censored ends apart: totals - censored
** takes the place of totals (those steps' successor was never seen). */
int dprl_mdpv_estimate_sparse(const dprl_mdpv_model *m, const dprl_mdpv_est_opts *o,
                           dprl_rng *redraw, double *scratch, dprl_mdpv_est *e,
                           dprl_cancel *cancel, dprl_error *err) {
  int64_t S = m->S, A = m->A, SA = S * A;
  double t = o->count_floor, weighted = 0, visits = 0;
  int draw_counts = redraw && m->sigma > 0, draw_rewards = redraw && m->reward_sigma > 0;
  size_t nnz = 0, most = m->n_cells ? m->n_cells : 1;
  if (!o->renormalise && !e->unknown &&
      !(e->unknown = dprl_malloc_array((size_t)SA, sizeof *e->unknown)))
    return dprl_nomem(err);
  e->unknown_value = o->optimistic ? m->rmax : m->rmin;
  for (int64_t sa = 0; sa < SA; sa++) {
    int64_t lo = m->cell_row[sa], k = m->cell_row[sa + 1] - lo;
    if (dprl_cancel_poll(cancel, (uint64_t)(k + 3) * (draw_counts ? 30 : 2), err))
      return err->code;
    const double *c = m->cell_count + lo;
    double T = m->totals[sa / A][sa % A], E = m->ends[sa / A][sa % A];
    double C = m->censored ? m->censored[sa / A][sa % A] : 0;
    double R = m->reward_sums[sa / A][sa % A];
    if (draw_counts) {
      dprl_rng_normals(redraw, scratch, (size_t)k + (m->censored ? 3 : 2));
      for (int64_t j = 0; j < k; j++) scratch[j] = c[j] + m->sigma * scratch[j];
      T += m->sigma * scratch[k];
      E += m->sigma * scratch[k + 1];
      if (m->censored) C += m->sigma * scratch[k + 2];
      c = scratch;
    }
    if (draw_rewards) {
      double z;
      dprl_rng_normals(redraw, &z, 1);
      R += m->reward_sigma * z;
    }
    if (dprl_mdpv_grow(e, nnz + (size_t)k, most, err)) return err->code;
    size_t first = nnz;
    double K = 0;
    for (int64_t j = 0; j < k; j++)
      if (c[j] > t) {
        K += c[j];
        e->next[nnz] = m->cell_next[lo + j];
        e->prob[nnz++] = c[j];
      }
    double Tp = T > t ? T : 0, Ep = E > 0 ? E : 0, placed = K + Ep; /* ends: cut at 0 */
    double N = Tp > placed ? Tp : placed;
    double NP = Tp - Ep > K ? Tp - Ep : K; /* censored: the observed next states' mass */
    double norm = o->censored ? (o->renormalise ? K : NP) : (o->renormalise ? placed : N);
    double share = o->censored ? (NP - K) / NP : (N - placed) / N; /* the unplaced share */
    if (m->censored) /* per-episode outcomes: §14.1's split of the going-on mass */
      outcome_row(K, Ep, C > 0 ? C : 0, Tp, o->renormalise, &N, &norm, &share);
    e->row[sa] = (int64_t)first;
    if (!o->renormalise) e->unknown[sa] = 0;
    if (e->visits) e->visits[sa] = !(N > o->min_count) || !(norm > 0) ? 0 : N;
    if (!(N > o->min_count) || !(norm > 0)) { /* also N = 0 */
      nnz = first;
      e->pessimistic++;
      e->reward[sa] = o->optimistic ? m->rmax : m->rmin;
      e->rabs = fmax(e->rabs, fabs(e->reward[sa]));
      continue;
    }
    int64_t kept = (int64_t)(nnz - first);
    for (size_t j = first; j < nnz; j++) e->prob[j] /= norm;
    weighted += N * share;
    visits += N;
    double q = R / N, x = m->center + q, u = 0;
    e->reward[sa] = fmin(fmax(x, m->rmin), m->rmax);
    if (!o->renormalise) {
      u = e->unknown[sa] = share; /* (N - placed) / N >= 0 exactly: N >= placed */
      if (u > 0) kept++;            /* the unknown outcome: one more term of the backup */
    }
    if (kept > e->most_next) e->most_next = kept;
    e->rabs = fmax(e->rabs, fabs(e->reward[sa]) + u * fabs(e->unknown_value));
    e->reward_err =
        fmax(e->reward_err, dprl_mdpv_reward_rounding(m, (int64_t)(nnz - first) + 1, q, x));
  }
  e->row[SA] = (int64_t)nnz;
  e->unknown_mass = visits > 0 ? weighted / visits : NAN;
  dprl_mdpv_estimate_start(m, t, redraw, scratch, e);
  return DPRL_OK;
}

