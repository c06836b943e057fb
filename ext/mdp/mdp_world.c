/* mdp_world.c: the log bootstrap's world (mdp_world.h, ALGORITHMS.md §14.4). */
#include "mdp/mdp_world_internal.h"

#include <math.h>
#include <string.h>

#include "base/json.h"
#include "dp/noise.h"
#include "mdp/model_internal.h"

static void world_free(world *w) {
  dprl_free(w->row);
  dprl_free(w->to);
  dprl_free(w->cum);
  dprl_free(w->aprob);
  dprl_free(w->alias);
  dprl_free(w->act);
  dprl_free(w->start);
  dprl_free(w->gain);
  dprl_mdpv_est_free(&w->truth);
  memset(w, 0, sizeof *w); /* freed twice is then harmless (a failed calibration) */
}

/* Pair sa's released numbers above the floor t: its kept next states
** (into to/prob from *n, their mass *K), ended *E, censored *C and visits
** *N (sparse: with the unplaced mass *U). */
static void pair_numbers(const dprl_mdpv_model *m, int64_t sa, double t, int32_t *to,
                         double *prob, size_t *n, double *K, double *E, double *C, double *U,
                         double *N) {
  int64_t S = m->S, A = m->A;
  double k = 0;
  if (m->sparse) {
    for (int64_t j = m->cell_row[sa]; j < m->cell_row[sa + 1]; j++)
      if (m->cell_count[j] > t) {
        to[*n] = m->cell_next[j];
        prob[(*n)++] = m->cell_count[j];
        k += m->cell_count[j];
      }
    *E = m->ends[sa / A][sa % A];
  } else {
    const double *c = m->counts[sa];
    for (int64_t j = 0; j < S; j++)
      if (c[j] > t) {
        to[*n] = (int32_t)j;
        prob[(*n)++] = c[j];
        k += c[j];
      }
    *E = c[S];
  }
  *E = *E > 0 ? *E : 0; /* ends are cut at 0, not floored (as the estimate) */
  *C = m->censored ? m->censored[sa / A][sa % A] : 0;
  *C = *C > 0 ? *C : 0;
  *K = k;
  *N = k + *E + *C;
  *U = 0;
  if (m->sparse) {
    double T = m->totals[sa / A][sa % A];
    if (T > t && T > *N) *U = T - *N, *N = T;
  }
}

/* Pair lo..lo+k's alias table from its cumulative probabilities (Vose's
** method: each slot i keeps i with probability aprob[i], else alias[i]);
** st: k ints of scratch, the small slots from the front, large from the back. */
static void alias_build(const double *cum, int64_t k, double *q, int32_t *alias, int32_t *st) {
  int64_t ns = 0, nl = k;
  for (int64_t j = 0; j < k; j++) {
    q[j] = (cum[j] - (j ? cum[j - 1] : 0)) * (double)k;
    alias[j] = (int32_t)j;
    if (q[j] < 1) st[ns++] = (int32_t)j;
    else st[--nl] = (int32_t)j;
  }
  while (ns > 0 && nl < k) {
    int32_t l = st[--ns], g = st[nl++];
    alias[l] = g;
    q[g] = (q[g] + q[l]) - 1;
    if (q[g] < 1) st[ns++] = g;
    else st[--nl] = g;
  }
  while (ns > 0) q[st[--ns]] = 1; /* rounding leftovers: kept for sure */
  while (nl < k) q[st[nl++]] = 1;
}

/* The world of §14.4 from the numbers of m, the estimate's choices o and
** the episodes of a log. */
static int world_build(const dprl_mdpv_model *m, const dprl_mdpv_est_opts *o, double episodes,
                       world *w, dprl_cancel *cancel, dprl_error *err) {
  int64_t S = m->S, A = m->A, SA = S * A;
  size_t most = m->sparse ? m->n_cells + 3 * (size_t)SA : (size_t)SA * (size_t)(S + 3);
  dprl_mdpv_est *e = &w->truth;
  memset(w, 0, sizeof *w);
  w->S = S, w->A = A;
  w->row = dprl_malloc_array((size_t)SA + 1, sizeof *w->row);
  w->to = dprl_malloc_array(most, sizeof *w->to);
  w->cum = dprl_malloc_array(most, sizeof *w->cum);
  w->aprob = dprl_malloc_array(most, sizeof *w->aprob);
  w->alias = dprl_malloc_array(most, sizeof *w->alias);
  w->act = dprl_malloc_array((size_t)SA, sizeof *w->act);
  w->start = dprl_malloc_array((size_t)S, sizeof *w->start);
  w->gain = dprl_malloc_array((size_t)SA, sizeof *w->gain);
  e->S = S, e->A = A;
  e->row = dprl_malloc_array((size_t)SA + 1, sizeof *e->row);
  e->reward = dprl_malloc_array((size_t)SA, sizeof *e->reward);
  e->start = dprl_malloc_array((size_t)S, sizeof *e->start);
  e->spread = m->sparse ? dprl_calloc((size_t)SA, sizeof *e->spread) : NULL;
  if (!w->row || !w->to || !w->cum || !w->aprob || !w->alias || !w->act || !w->start || !w->gain || !e->row ||
      !e->reward || !e->start || (m->sparse && !e->spread))
    return dprl_nomem(err);
  if (dprl_mdpv_grow(e, most, most, err)) return err->code;
  size_t n = 0, nn = 0;
  double visits = 0;
  for (int64_t sa = 0; sa < SA; sa++) {
    if (dprl_cancel_poll(cancel, (uint64_t)(m->sparse ? 8 : S + 8), err)) return err->code;
    double K, E, C, U, N;
    size_t first = n;
    w->row[sa] = (int64_t)n;
    e->row[sa] = (int64_t)nn;
    pair_numbers(m, sa, o->count_floor, w->to, w->cum, &n, &K, &E, &C, &U, &N);
    /* the mass that went on unseen: censored ends (option ends: the ended column) */
    double gone = m->censored ? C : o->censored ? E : 0, seen = K + U;
    /* a pair the estimate deems too rare (N <= min_count) is still visited
    ** in the world, as often as released: whether a new log's count passes
    ** min_count is part of the spread; only a pair without visits ends */
    int pess = !(N > 0) || (!(seen > 0) && (o->censored || (gone > 0 && !(E > 0))));
    w->act[sa] = pess ? 0 : N;
    if (pess) { /* the estimate's pessimistic pair: the episode ends with rmin */
      n = first;
      w->to[n] = TO_END;
      w->cum[n++] = 1;
      w->gain[sa] = m->rmin - m->center;
      e->reward[sa] = m->rmin;
      e->pessimistic++;
      continue;
    }
    visits += N;
    /* the world's own moves: the unseen ones go on alike (none seen: they end) */
    double f = seen > 0 ? (seen + gone) / seen / N : 0;
    for (size_t j = first; j < n; j++) {
      e->next[nn] = w->to[j];
      e->prob[nn++] = w->cum[j] * f;
    }
    if (U > 0) {
      e->spread[sa] = U * f;
      w->to[n] = TO_SPREAD, w->cum[n++] = U;
    }
    if (E > 0) w->to[n] = TO_END, w->cum[n++] = E;
    if (C > 0) w->to[n] = TO_CENSORED, w->cum[n++] = C;
    double acc = 0;
    for (size_t j = first; j < n; j++) w->cum[j] = (acc += w->cum[j]) / N;
    w->cum[n - 1] = 1;
    int64_t moves = (int64_t)(nn - (size_t)e->row[sa]) + (U > 0 ? S : 0);
    if (moves > e->most_next) e->most_next = moves;
    double x = m->center + m->reward_sums[sa / A][sa % A] / N;
    e->reward[sa] = fmin(fmax(x, m->rmin), m->rmax);
    w->gain[sa] = e->reward[sa] - m->center;
  }
  w->row[SA] = (int64_t)n;
  e->row[SA] = (int64_t)nn;
  int32_t *st = dprl_malloc_array((size_t)S + 4, sizeof *st); /* at most S + 3 outcomes a pair */
  if (!st) return dprl_nomem(err);
  for (int64_t sa = 0; sa < SA; sa++)
    alias_build(w->cum + w->row[sa], w->row[sa + 1] - w->row[sa], w->aprob + w->row[sa],
                w->alias + w->row[sa], st);
  dprl_free(st);
  for (int64_t i = 0; i < SA; i++) e->rabs = fmax(e->rabs, fabs(e->reward[i]));
  /* the behaviour: pi_b(a|s) proportional to N(s,a) over the pairs that are not pessimistic */
  for (int64_t s = 0; s < S; s++) {
    double *c = w->act + s * A, tot = 0, run = 0;
    for (int64_t a = 0; a < A; a++) tot += c[a];
    for (int64_t a = 0; a < A; a++) c[a] = tot > 0 ? (run += c[a]) / tot : (double)(a + 1) / (double)A;
    c[A - 1] = 1;
  }
  /* the start: the estimate's distribution */
  dprl_mdpv_estimate_start(m, o->count_floor, NULL, NULL, e);
  double run = 0;
  for (int64_t s = 0; s < S; s++) w->start[s] = (run += e->start[s]);
  w->start[S - 1] = 1;
  w->episodes = episodes >= 1 ? (int64_t)nearbyint(episodes) : 1;
  /* 50 times the mean steps per episode, within [1,000, 100,000], and at
  ** most the release's horizon */
  double L = fmin(fmax(ceil(50 * visits / (double)w->episodes), DPRL_MDPV_WORLD_STEPS),
                  DPRL_MDPV_WORLD_STEPS_MAX);
  if (m->horizon && (double)m->horizon < L) L = (double)m->horizon;
  w->steps = (int64_t)L;
  return DPRL_OK;
}

/* ---- the world's numbers, calibrated to the clip ------------------------------ */

/* The numbers a world is built from: a model like the release whose
** start, counts (or totals, ends and kept cells), reward sums and
** censored ends are own copies, floored at the estimate's t. */
typedef struct source {
  dprl_mdpv_model m;
  double *x;  /* every number, in the order of the parts below */
  size_t n;
  double *start, *counts, *totals, *ends, *cells, *reward, *censored;
  const double **rows;
} source;

static void source_free(source *q) {
  dprl_free(q->x);
  dprl_free(q->rows);
  memset(q, 0, sizeof *q);
}

static int source_init(source *q, const dprl_mdpv_model *m, dprl_error *err) {
  size_t S = (size_t)m->S, A = (size_t)m->A, SA = S * A;
  memset(q, 0, sizeof *q);
  q->n = S + (m->sparse ? 2 * SA + m->n_cells : SA * (S + 1)) + SA + (m->censored ? SA : 0);
  q->x = dprl_malloc_array(q->n, sizeof *q->x);
  q->rows = dprl_malloc_array(SA + 4 * S, sizeof *q->rows);
  if (!q->x || !q->rows) return dprl_nomem(err);
  double *p = q->x;
  q->start = p, p += S;
  if (m->sparse) q->totals = p, p += SA, q->ends = p, p += SA, q->cells = p, p += m->n_cells;
  else q->counts = p, p += SA * (S + 1);
  q->reward = p, p += SA;
  if (m->censored) q->censored = p;
  q->m = *m;
  q->m.root = NULL;
  q->m.start = q->start;
  const double **rw = q->rows + SA, **tot = rw + S, **ends = tot + S, **cens = ends + S;
  for (size_t s = 0; s < S; s++) {
    q->start[s] = m->start[s];
    rw[s] = q->reward + s * A;
    for (size_t a = 0; a < A; a++) q->reward[s * A + a] = m->reward_sums[s][a];
    if (m->censored) {
      cens[s] = q->censored + s * A;
      for (size_t a = 0; a < A; a++) q->censored[s * A + a] = m->censored[s][a];
    }
    if (m->sparse) {
      tot[s] = q->totals + s * A, ends[s] = q->ends + s * A;
      for (size_t a = 0; a < A; a++)
        q->totals[s * A + a] = m->totals[s][a], q->ends[s * A + a] = m->ends[s][a];
    }
  }
  q->m.reward_sums = rw;
  if (m->censored) q->m.censored = cens;
  if (m->sparse) {
    memcpy(q->cells, m->cell_count, m->n_cells * sizeof *q->cells);
    q->m.totals = tot, q->m.ends = ends, q->m.cell_count = q->cells;
  } else {
    for (size_t sa = 0; sa < SA; sa++) {
      memcpy(q->counts + sa * (S + 1), m->counts[sa], (S + 1) * sizeof *q->counts);
      q->rows[sa] = q->counts + sa * (S + 1);
    }
    q->m.counts = q->rows;
  }
  return DPRL_OK;
}

/* Pair sa's visits in the numbers of m above t. */
static double visits_of(const dprl_mdpv_model *m, int64_t sa, double t, int32_t *to, double *p) {
  double K, E, C, U, N;
  size_t n = 0;
  pair_numbers(m, sa, t, to, p, &n, &K, &E, &C, &U, &N);
  return N;
}

/* One step of the calibration (§14.4): each count of the world q times
** its target's (the release's) over its mean in the world's clipped logs
** (fq), the ratio kept within [1/2, 2]; each pair's mean reward moved by
** the target's minus fq's. */
static void calibrate_step(source *q, const source *tq, const source *fq, double t, int32_t *to,
                           double *p) {
  const dprl_mdpv_model *m = &q->m;
  size_t SA = (size_t)(m->S * m->A), r0 = (size_t)(q->reward - q->x);
  double lo = m->rmin - m->center, hi = m->rmax - m->center;
  for (size_t sa = 0; sa < SA; sa++) { /* q->reward holds the mean until the counts move */
    double Nq = visits_of(&q->m, (int64_t)sa, t, to, p);
    double Nt = visits_of(&tq->m, (int64_t)sa, t, to, p);
    double Nf = visits_of(&fq->m, (int64_t)sa, t, to, p);
    double g = Nq > 0 ? q->reward[sa] / Nq : 0;
    if (Nt > 0 && Nf > 0) g += tq->reward[sa] / Nt - fq->reward[sa] / Nf;
    q->reward[sa] = fmin(fmax(g, lo), hi);
  }
  for (size_t i = 0; i < q->n; i++) {
    if (i >= r0 && i < r0 + SA) continue;
    if (q->x[i] > t && tq->x[i] > t && fq->x[i] > 0) {
      double ratio = tq->x[i] / fq->x[i];
      q->x[i] *= ratio < 0.5 ? 0.5 : ratio > 2 ? 2 : ratio;
    }
  }
  for (size_t sa = 0; sa < SA; sa++) q->reward[sa] *= visits_of(&q->m, (int64_t)sa, t, to, p);
}

static double kept_sum(const double *x, int64_t n, double t) {
  double s = 0;
  for (int64_t i = 0; i < n; i++) s += x[i] > t ? x[i] : 0;
  return s;
}

/* ---- the handle ------------------------------------------------------------------ */

struct dprl_mdpv_world {
  const dprl_mdpv_model *m;
  dprl_mdpv_est_opts o;
  source q;        /* the world's numbers (calibrated to the clip) */
  source qb;       /* a draw's: q with the release's noise added */
  double episodes; /* per log */
  world w;
  sums y;
  released r;
  dprl_rng rng;  /* keys the two below */
  fast_rng fr;   /* the logs */
  fast_normal g; /* the noise */
  int64_t draws, clipped;
};

/* The world a clipped release calibrates: rounds of logs per round. */
#define CALIBRATION_ROUNDS 4
#define CALIBRATION_LOGS 4

/* The clip scales down the long episodes' numbers, so a world built from
** the release has fewer of them than the log had: h->q's numbers are
** moved until its clipped logs give the release's numbers on average. */
static int calibrate(dprl_mdpv_world *h, dprl_cancel *cancel, dprl_error *err) {
  const dprl_mdpv_model *m = h->m;
  int64_t S = m->S;
  double t = h->o.count_floor, raw = h->episodes;
  source tq, fq;
  memset(&tq, 0, sizeof tq), memset(&fq, 0, sizeof fq);
  size_t most = m->sparse ? m->n_cells + 1 : (size_t)S + 1;
  int32_t *to = dprl_malloc_array(most, sizeof *to);
  double *p = dprl_malloc_array(most, sizeof *p);
  int rc = source_init(&tq, m, err);
  if (!rc) rc = source_init(&fq, m, err);
  if (!rc && (!to || !p)) rc = dprl_nomem(err);
  double base = rc ? 0 : kept_sum(tq.start, S, t);
  for (int round = 0; round < CALIBRATION_ROUNDS && !rc; round++) {
    world_free(&h->w);
    rc = world_build(&h->q.m, &h->o, h->episodes, &h->w, cancel, err);
    memset(fq.x, 0, fq.n * sizeof *fq.x);
    for (int j = 0; j < CALIBRATION_LOGS && !rc; j++) {
      rc = dprl_mdpv_draw_log(&h->w, m, &h->y, &h->fr, cancel, err);
      if (!rc) dprl_mdpv_sums_add(&fq.m, &h->y, fq.x);
    }
    for (size_t i = 0; i < fq.n; i++) fq.x[i] /= CALIBRATION_LOGS;
    if (!rc) calibrate_step(&h->q, &tq, &fq, t, to, p);
    h->episodes = base > 0 ? raw * kept_sum(h->q.start, S, t) / base : raw;
  }
  world_free(&h->w);
  if (!rc) rc = world_build(&h->q.m, &h->o, h->episodes, &h->w, cancel, err);
  source_free(&tq);
  source_free(&fq);
  dprl_free(to);
  dprl_free(p);
  return rc;
}

int dprl_mdpv_world_open(const dprl_mdpv_model *m, const dprl_mdpv_est_opts *o, uint64_t seed,
                         dprl_mdpv_world **out, dprl_cancel *cancel, dprl_error *err) {
  dprl_mdpv_world *h = dprl_calloc(1, sizeof *h);
  *out = h;
  if (!h) return dprl_nomem(err);
  h->m = m;
  h->o = *o;
  dprl_rng_init_seeded(&h->rng, seed, DPRL_STREAM_MDP_BOOTSTRAP | 1);
  uint64_t key[4];
  for (int k = 0; k < 4; k++) h->fr.s[k] = dprl_rng_u64(&h->rng);
  for (int k = 0; k < 4; k++) key[k] = dprl_rng_u64(&h->rng);
  dprl_mdpv_normal_init(&h->g, key);
  double raw = 0; /* the episodes: the released start counts' sum */
  for (int64_t s = 0; s < m->S; s++) raw += m->start[s];
  if (!(nearbyint(raw) <= (double)DPRL_MDPV_WORLD_EPISODES_MAX)) {
    char g[32];
    return dprl_fail(err, DPRL_EINVAL,
                     "dp_mdp_value: the model's start counts sum to %s episodes, more than the "
                     "2^31 a log bootstrap draws: option interval \"none\"",
                     dprl_json_num(nearbyint(raw), g, sizeof g));
  }
  h->episodes = raw;
  int rc = source_init(&h->q, m, err);
  if (!rc) rc = source_init(&h->qb, m, err);
  if (!rc) rc = world_build(m, o, raw, &h->w, cancel, err);
  if (!rc) rc = dprl_mdpv_sums_init(&h->y, m, h->w.steps, err);
  if (!rc && m->clip > 0) rc = calibrate(h, cancel, err);
  return rc;
}

const dprl_mdpv_est *dprl_mdpv_world_truth(const dprl_mdpv_world *w) { return &w->w.truth; }

/* A draw's world: the world's numbers with the release's noise added
** again, so that the worlds vary as much as the release leaves the truth
** open (§14.4). */
static int perturbed_world(dprl_mdpv_world *h, dprl_cancel *cancel, dprl_error *err) {
  const dprl_mdpv_model *m = h->m;
  size_t SA = (size_t)(m->S * m->A), r0 = (size_t)(h->q.reward - h->q.x);
  memcpy(h->qb.x, h->q.x, h->q.n * sizeof *h->qb.x);
  dprl_mdpv_add_noise(&h->g, h->qb.x, r0, m->sigma);
  dprl_mdpv_add_noise(&h->g, h->qb.reward, SA, m->reward_sigma);
  if (h->qb.censored) dprl_mdpv_add_noise(&h->g, h->qb.censored, SA, m->sigma);
  world_free(&h->w);
  return world_build(&h->qb.m, &h->o, h->episodes, &h->w, cancel, err);
}

int dprl_mdpv_world_release(dprl_mdpv_world *h, const dprl_mdpv_model **out, dprl_cancel *cancel,
                            dprl_error *err) {
  int noisy = h->m->sigma > 0 || h->m->reward_sigma > 0;
  int rc = noisy ? perturbed_world(h, cancel, err) : DPRL_OK;
  if (!rc) rc = dprl_mdpv_draw_log(&h->w, h->m, &h->y, &h->fr, cancel, err);
  h->draws++;
  h->clipped += h->y.clipped;
  if (!rc) rc = dprl_mdpv_release_log(h->m, &h->y, &h->g, &h->r, cancel, err);
  *out = rc ? NULL : &h->r.m;
  return rc;
}

void dprl_mdpv_world_describe(const dprl_mdpv_world *h, dprl_mdpv_world_info *info) {
  info->episodes = h->w.episodes;
  info->steps = h->w.steps;
  info->clipped_share =
      h->draws ? (double)h->clipped / ((double)h->draws * (double)h->w.episodes) : 0;
}

void dprl_mdpv_world_close(dprl_mdpv_world *h) {
  if (!h) return;
  dprl_rng_wipe(&h->rng);
  world_free(&h->w);
  dprl_mdpv_sums_free(&h->y);
  dprl_mdpv_released_free(&h->r);
  source_free(&h->q);
  source_free(&h->qb);
  dprl_free(h);
}
