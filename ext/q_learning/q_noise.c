/*
** q_noise.c: dp_q_noise's mechanism (see q_noise.h): the points bound to
** one q each, their noise drawn per action on a path that may be stored.
*/
#include "q_learning/q_noise.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "base/json.h"
#include "dp/noise.h"
#include "q_learning/gp_path.h"

int dprl_q_point_cmp(const void *pa, const void *pb) {
  const dprl_q_point *a = pa, *b = pb;
  return (a->x > b->x) - (a->x < b->x);
}

size_t dprl_q_point_find(const dprl_q_point *pts, size_t n, double x) {
  size_t lo = 0, hi = n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (pts[mid].x < x) lo = mid + 1;
    else hi = mid;
  }
  return lo < n && pts[lo].x == x ? lo : n;
}

double dprl_q_on_grid(const dprl_q_noise_cfg *c, double q) {
  return c->grid * (double)llround(q / c->grid);
}

typedef struct qn_work {
  const dprl_q_noise_cfg *c;
  dprl_cancel *cancel;
  const dprl_q_noise_in *p;
  const dprl_q_path_store *st; /* NULL: no store */
  size_t *start, *order;       /* rows of action a: order[start[a] .. start[a+1]) */
  double *xs, *out;            /* rescaled states and values of one action */
  size_t *where;               /* the index of each row's point on the path */
  dprl_q_point *fresh;         /* new points of one action (store only) */
  dprl_gp_path *path;
  dprl_rng rng;
} qn_work;

static void work_free(qn_work *w) {
  dprl_rng_wipe(&w->rng);
  dprl_gp_path_free(w->path);
  dprl_free(w->start);
  dprl_free(w->order);
  dprl_free(w->xs);
  dprl_free(w->out);
  dprl_free(w->where);
  dprl_free(w->fresh);
}

/* Buffers, the path, the generator; the rows sorted by action (counting
** sort, stable).  The per-action buffers are as long as the largest
** action's rows, and like order they are written before they are read, so
** they are not zeroed. */
static int work_init(qn_work *w, dprl_error *err) {
  size_t n = w->p->n, m = (size_t)w->c->n_actions, n1 = n ? n : 1, most = 1;
  int rc = DPRL_OK;
  if (!(w->path = dprl_gp_path_create(w->c->sigma, w->c->beta, w->c->grid, err)))
    return err->code;
  w->path->cancel = w->cancel;
  if (!w->c->has_seed && dprl_rng_init_secure(&w->rng, err)) return err->code;
  size_t *fill = dprl_calloc(m, sizeof *fill);
  w->start = dprl_calloc(m + 1, sizeof *w->start);
  w->order = dprl_malloc_array(n1, sizeof *w->order);
  if (!fill || !w->start || !w->order) {
    dprl_free(fill);
    return dprl_nomem(err);
  }
  for (size_t i = 0; i < n && !rc; i++) {
    w->start[w->p->a[i] + 1]++;
    rc = dprl_cancel_poll(w->cancel, 4, err);
  }
  for (size_t a = 0; a < m; a++) {
    if (w->start[a + 1] > most) most = w->start[a + 1];
    w->start[a + 1] += w->start[a];
  }
  for (size_t i = 0; i < n && !rc; i++) {
    w->order[w->start[w->p->a[i]] + fill[w->p->a[i]]++] = i;
    rc = dprl_cancel_poll(w->cancel, 4, err);
  }
  dprl_free(fill);
  if (rc) return rc;
  w->xs = dprl_malloc_array(most, sizeof *w->xs);
  w->out = dprl_malloc_array(most, sizeof *w->out);
  w->where = dprl_malloc_array(most, sizeof *w->where);
  w->fresh = w->st ? dprl_malloc_array(most, sizeof *w->fresh) : NULL;
  if (!w->xs || !w->out || !w->where || (w->st && !w->fresh)) return dprl_nomem(err);
  return DPRL_OK;
}

/* ---- the stored path ----------------------------------------------------- */

/* The (x, g) pairs of v[0..n) into the path. */
static int load_path(dprl_gp_path *path, const dprl_q_point *v, size_t n, dprl_error *err) {
  dprl_gp_point *xg = dprl_malloc_array(n ? n : 1, sizeof *xg); /* written before read */
  if (!xg) return dprl_nomem(err);
  for (size_t i = 0; i < n; i++) {
    xg[i].x = v[i].x;
    xg[i].g = v[i].g;
  }
  int rc = dprl_gp_path_load(path, xg, n, err);
  dprl_free(xg);
  return rc;
}

/* The stored points of action a into the path; *pts gets them sorted by
** rescaled state (for dprl_q_point_find), *npts their number. */
static int load_action(qn_work *w, int64_t a, dprl_q_point **pts, size_t *npts,
                       dprl_error *err) {
  const dprl_q_noise_cfg *c = w->c;
  dprl_q_point *v = NULL;
  size_t n = 0, m = 0;
  int rc = w->st->load(w->st->ctx, a, &v, &n, err);
  if (rc) return rc;
  for (size_t i = 0; i < n; i++) v[i].x = (v[i].x - c->lo) / (c->hi - c->lo);
  /* Distinct states can rescale to the same x; they were stored with the
  ** same value and the same q (a repeated point), so keep one. */
  rc = dprl_sort(v, n, sizeof *v, dprl_q_point_cmp, w->cancel, err);
  for (size_t i = 0; i < n && !rc; i++) {
    if ((rc = dprl_cancel_poll(w->cancel, 2, err))) break;
    if (m && v[m - 1].x == v[i].x) {
      char x[32];
      if (v[m - 1].g != v[i].g || v[m - 1].q != v[i].q)
        rc = dprl_fail(err, DPRL_EINVAL,
                       "path table \"%s\": two values stored at one point (action %lld, "
                       "rescaled state %s)",
                       c->path, (long long)a, dprl_json_num(v[i].x, x, 32));
      continue;
    }
    v[m++] = v[i];
  }
  if (!rc) rc = load_path(w->path, v, m, err);
  if (rc) {
    dprl_free(v);
    return rc;
  }
  *pts = v;
  *npts = m;
  return DPRL_OK;
}

/* ---- one q per point ------------------------------------------------------- */

/* Row i gives the point of row `first` (same action, same rescaled state,
** earlier in this call) another q. */
static int twice_in_call(const qn_work *w, size_t first, size_t i, dprl_error *err) {
  char s[32], q1[32], q2[32];
  dprl_fail(err, DPRL_EINVAL,
            "state %s, action %lld has two values of q in this call, %s (row %zu) and %s: one "
            "noise value at a point cannot hide two (their difference would be released "
            "exactly); a path is the noise of one function",
            dprl_json_num(w->p->s[i], s, sizeof s), (long long)w->p->a[i],
            dprl_json_num(w->p->q[first], q1, sizeof q1), first + 1,
            dprl_json_num(w->p->q[i], q2, sizeof q2));
  dprl_error_at_row(err, w->p->what, i + 1);
  return err->code;
}

/* Row i gives a stored point another q than the one it was released with. */
static int other_than_stored(const qn_work *w, double stored, size_t i, dprl_error *err) {
  char s[32], q1[32], q2[32];
  dprl_fail(err, DPRL_EINVAL,
            "path table \"%s\" holds state %s, action %lld with q = %s (on the grid: its noise "
            "was released with that q); this call gives q = %s: a path is the noise of one "
            "function, so another function needs another path table",
            w->c->path, dprl_json_num(w->p->s[i], s, sizeof s), (long long)w->p->a[i],
            dprl_json_num(stored, q1, sizeof q1), dprl_json_num(w->p->q[i], q2, sizeof q2));
  dprl_error_at_row(err, w->p->what, i + 1);
  return err->code;
}

/* Every row of action a (rows order[lo .. lo + cnt), their points at
** where[]) has the q of its point: the stored one, else the first row's at
** that point in this call; the new points go to fresh[] (store only). */
static int bind_action(qn_work *w, size_t lo, size_t cnt, const dprl_q_point *old, size_t nold,
                       size_t *nnew, dprl_error *err) {
  size_t npath = dprl_gp_path_count(w->path), *first;
  int rc = DPRL_OK;
  if (!(first = dprl_malloc_array(npath, sizeof *first))) return dprl_nomem(err);
  for (size_t k = 0; k < npath; k++) first[k] = SIZE_MAX;
  for (size_t j = 0; j < cnt && !rc; j++) {
    size_t i = w->order[lo + j], k = w->where[j], at;
    double q = dprl_q_on_grid(w->c, w->p->q[i]);
    if ((rc = dprl_cancel_poll(w->cancel, 50, err))) break;
    if (first[k] == SIZE_MAX) first[k] = i;
    else if (dprl_q_on_grid(w->c, w->p->q[first[k]]) != q) rc = twice_in_call(w, first[k], i, err);
    if (rc || !w->st) continue;
    if ((at = dprl_q_point_find(old, nold, w->xs[j])) < nold) {
      if (old[at].q != q) rc = other_than_stored(w, old[at].q, i, err);
      continue;
    }
    w->fresh[*nnew].x = w->p->s[i]; /* (state, g, q) of a new point */
    w->fresh[*nnew].g = w->out[j];
    w->fresh[*nnew].q = q;
    (*nnew)++;
  }
  dprl_free(first);
  return rc;
}

/* ---- sampling ---------------------------------------------------------------- */

/* Action a: its path (loaded), the batch draw, the new points kept;
** vals[i] = g_a(x_i) for its rows. */
static int sample_action(qn_work *w, size_t a, double *vals, dprl_error *err) {
  const dprl_q_noise_cfg *c = w->c;
  size_t lo = w->start[a], cnt = w->start[a + 1] - lo, nold = 0, nnew = 0;
  dprl_q_point *old = NULL;
  int rc;
  if (!cnt) return DPRL_OK;
  dprl_gp_path_reset(w->path);
  if (w->st && (rc = load_action(w, (int64_t)a, &old, &nold, err))) return rc;
  if (c->has_seed) /* one stream per action and per size of the stored path */
    dprl_rng_init_seeded(&w->rng, c->seed, DPRL_STREAM_Q_NOISE | (uint64_t)a | (uint64_t)nold << 21);
  for (size_t j = 0; j < cnt; j++)
    w->xs[j] = (w->p->s[w->order[lo + j]] - c->lo) / (c->hi - c->lo);
  rc = dprl_cancel_poll(w->cancel, 4 * (uint64_t)cnt, err);
  if (!rc) rc = dprl_gp_path_sample_indexed(w->path, &w->rng, w->xs, cnt, w->out, w->where, err);
  if (!rc) rc = bind_action(w, lo, cnt, old, nold, &nnew, err);
  for (size_t j = 0; j < cnt && !rc; j++) vals[w->order[lo + j]] = w->out[j];
  dprl_free(old);
  if (!rc && nnew) rc = w->st->add(w->st->ctx, (int64_t)a, w->fresh, nnew, err);
  return rc;
}

int dprl_q_noise_sample(const dprl_q_noise_cfg *c, const dprl_q_noise_in *p,
                        const dprl_q_path_store *st, dprl_cancel *cancel, double *vals,
                        dprl_error *err) {
  qn_work w;
  memset(&w, 0, sizeof w);
  w.c = c;
  w.cancel = cancel;
  w.p = p;
  w.st = st;
  int rc = work_init(&w, err);
  for (size_t a = 0; a < (size_t)c->n_actions && !rc; a++) rc = sample_action(&w, a, vals, err);
  work_free(&w);
  return rc;
}

/* ---- the charge --------------------------------------------------------------- */

void dprl_q_noise_cost_of(const dprl_q_noise_cfg *c, const dprl_q_path_store *st,
                          dprl_q_noise_cost *out) {
  /* J < T/B reuses paths, which the accountant does not cover */
  int fresh = c->cal.epsilon <= 0 || dprl_q_fresh_paths(&c->cal);
  int spends = c->sigma > 0 && c->cal.epsilon > 0 && !c->has_seed && fresh;
  int paid = c->path && st && st->charged; /* this path's release is charged already */
  out->epsilon = spends && !paid ? c->cal.epsilon : 0;
  out->delta = spends && !paid ? c->cal.out.delta_total : 0;
  out->spends = spends;
  out->why_not = c->has_seed ? "seed" : !fresh ? "J (below T/B)" : "sigma";
  out->mark = c->budget && c->path && st && spends && !paid;
}

int dprl_q_noise_charged(const dprl_q_noise_cost *cost, const dprl_q_path_store *st,
                         dprl_error *err) {
  return cost->mark ? st->mark_charged(st->ctx, err) : DPRL_OK;
}
