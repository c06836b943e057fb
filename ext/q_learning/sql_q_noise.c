/*
** sql_q_noise.c: Q(s, a) + g_a(s) for Q-values the caller supplies, g_a a
** Gaussian-process (Ornstein-Uhlenbeck) noise path per action (Wang &
** Hegde 2019; ALGORITHMS.md §8), on the public grid of §6.
**
**   SELECT * FROM dp_q_noise('SELECT state, action, q FROM my_q',
**     '{"n_actions": 2, "epsilon": 1, "delta": 1e-5, "T": 5000, "B": 64,
**       "lr": 3e-4, "k": 60, "K": 21, "path": "q_noise_path"}');
**   -- state | action | q | noisy_q
**
** Glue only: options -> q_options.c; the points from points_sql; the
** paths from gp_path.c, kept in the path table by sql_q_path.c.
**
** A path is the noise of one function (ALGORITHMS.md section 8.1): a point
** has one q, in a call and on a stored path (q as rounded to the grid, the
** part of noisy_q that is not noise), and the path's release is charged
** to a budget once.
*/
#include <math.h>
#include <string.h>

#include "q_learning/gp_path.h"
#include "q_learning/q_options.h"
#include "q_learning/sql_q_path.h"
#include "sqlite/sql_budget.h"
#include "sqlite/sql_tvf.h"

typedef struct qn_points {
  double *s, *q;
  int64_t *a;
  size_t n, cap;
} qn_points;

static void qn_points_free(qn_points *p) {
  dprl_free(p->s);
  dprl_free(p->q);
  dprl_free(p->a);
  memset(p, 0, sizeof *p);
}

static int qn_points_push(qn_points *p, double s, int64_t a, double q, dprl_error *err) {
  if (p->n == DPRL_Q_NOISE_MAX_POINTS)
    return dprl_fail(err, DPRL_EINVAL,
                     "points_sql returned more rows than one call can hold, %zu (its output, "
                     "32 bytes a row, must fit in one allocation of at most %zu bytes)",
                     DPRL_Q_NOISE_MAX_POINTS, DPRL_MAX_ALLOC);
  if (p->n == p->cap) {
    size_t nc = p->cap ? 2 * p->cap : 1024;
    void **arrays[] = {(void **)&p->s, (void **)&p->q, (void **)&p->a};
    const size_t sizes[] = {sizeof *p->s, sizeof *p->q, sizeof *p->a};
    if (dprl_grow_parallel(nc, 3, arrays, sizes, err)) return DPRL_ENOMEM;
    p->cap = nc;
  }
  p->s[p->n] = s;
  p->a[p->n] = a;
  p->q[p->n] = q;
  p->n++;
  return DPRL_OK;
}

/* One row (state, action, q) of points_sql, checked. */
static int read_point(sqlite3_value **v, const dprl_q_noise_cfg *c, double *s, int64_t *a,
                      double *q, dprl_error *err) {
  int rc;
  if ((rc = dprl_sql_real(v[0], "state", s, err)) ||
      (rc = dprl_q_check_state(*s, c->lo, c->hi, "state", err)) ||
      (rc = dprl_sql_int(v[1], "action", a, err)) ||
      (rc = dprl_q_check_action(*a, c->n_actions, "action", err)) ||
      (rc = dprl_sql_real(v[2], "q", q, err)))
    return rc;
  if (!(fabs(*q / c->grid) < 0x1p52)) {
    char a1[32], b1[32];
    return dprl_fail(err, DPRL_EINVAL, "q must be below 2^52 grid steps (grid %s), got %s",
                     dprl_json_num(c->grid, a1, sizeof a1), dprl_json_num(*q, b1, sizeof b1));
  }
  return DPRL_OK;
}

/* One row of points_sql, checked, kept.  The usual row (a REAL state in
** [lo, hi], an INTEGER action in range, a REAL q under 2^52 grid steps) is
** taken in one go; any other goes through read_point, whose checks name
** what is wrong (or convert). */
static int take_point(sqlite3_value **row, const dprl_q_noise_cfg *c, qn_points *p,
                      dprl_error *err) {
  double s, qv;
  int64_t a;
  if (!(sqlite3_value_type(row[0]) == SQLITE_FLOAT &&
        sqlite3_value_type(row[1]) == SQLITE_INTEGER &&
        sqlite3_value_type(row[2]) == SQLITE_FLOAT &&
        (s = sqlite3_value_double(row[0])) >= c->lo && s <= c->hi &&
        (a = sqlite3_value_int64(row[1])) >= 0 && a < c->n_actions &&
        fabs((qv = sqlite3_value_double(row[2])) / c->grid) < 0x1p52) &&
      read_point(row, c, &s, &a, &qv, err)) {
    dprl_error_at_row(err, "points_sql", p->n + 1);
    return err->code;
  }
  if (qn_points_push(p, s, a, qv, err)) {
    dprl_error_at_row(err, "points_sql", p->n + 1);
    return err->code;
  }
  return DPRL_OK;
}

typedef struct qn_reader {
  const dprl_q_noise_cfg *c;
  qn_points *p;
  dprl_error *err;
} qn_reader;

static int point_row(void *ctx, sqlite3_value **row) {
  qn_reader *r = ctx;
  return take_point(row, r->c, r->p, r->err);
}

/* The points: every row of points_sql, in one step of SQLite where the text
** can be wrapped (sql_tvf.h, dprl_query_rows). */
static int read_points(sqlite3 *db, sqlite3_value *sql, const dprl_q_noise_cfg *c,
                       qn_points *p, dprl_error *err) {
  qn_reader r = {c, p, err};
  return dprl_query_rows(db, sql, "points_sql", 3, "dp_q_noise", point_row, &r, err);
}

/* ---- sampling ---------------------------------------------------------------- */

typedef struct qn_work {
  const dprl_q_noise_cfg *c;
  dprl_cancel *cancel;
  const qn_points *p;
  dprl_q_store *st;      /* NULL: no path table */
  size_t *start, *order; /* rows of action a: order[start[a] .. start[a+1]) */
  double *xs, *out;      /* rescaled states and values of one action */
  size_t *where;         /* the index of each row's point on the path */
  dprl_q_point *fresh;   /* new points of one action (path table only) */
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

/* q on the public grid: the part of noisy_q that is not noise. */
static double q_on_grid(const dprl_q_noise_cfg *c, double q) {
  return c->grid * (double)llround(q / c->grid);
}

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
  dprl_error_at_row(err, "points_sql", i + 1);
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
  dprl_error_at_row(err, "points_sql", i + 1);
  return err->code;
}

/* Every row of action a (rows order[lo .. lo + cnt), their points at
** where[]) has the q of its point: the stored one, else the first row's at
** that point in this call; the new points go to fresh[] (path table). */
static int bind_action(qn_work *w, size_t lo, size_t cnt, const dprl_q_point *old, size_t nold,
                       size_t *nnew, dprl_error *err) {
  size_t npath = dprl_gp_path_count(w->path), *first;
  int rc = DPRL_OK;
  if (!(first = dprl_malloc_array(npath, sizeof *first))) return dprl_nomem(err);
  for (size_t k = 0; k < npath; k++) first[k] = SIZE_MAX;
  for (size_t j = 0; j < cnt && !rc; j++) {
    size_t i = w->order[lo + j], k = w->where[j], at;
    double q = q_on_grid(w->c, w->p->q[i]);
    if ((rc = dprl_cancel_poll(w->cancel, 50, err))) break;
    if (first[k] == SIZE_MAX) first[k] = i;
    else if (q_on_grid(w->c, w->p->q[first[k]]) != q) rc = twice_in_call(w, first[k], i, err);
    if (rc || !w->st) continue;
    if ((at = dprl_q_store_find(old, nold, w->xs[j])) < nold) {
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

/* Action a: its path (loaded), the batch draw, the new points written;
** vals[i] = g_a(x_i) for its rows. */
static int sample_action(qn_work *w, size_t a, double *vals, dprl_error *err) {
  const dprl_q_noise_cfg *c = w->c;
  size_t lo = w->start[a], cnt = w->start[a + 1] - lo, nold = 0, nnew = 0;
  dprl_q_point *old = NULL;
  int rc;
  if (!cnt) return DPRL_OK;
  dprl_gp_path_reset(w->path);
  if (w->st && (rc = dprl_q_store_load(w->st, (int64_t)a, w->path, &old, &nold, err)))
    return rc;
  if (c->has_seed) /* one stream per action and per size of the stored path */
    dprl_rng_init_seeded(&w->rng, c->seed, DPRL_STREAM_Q_NOISE | (uint64_t)a | (uint64_t)nold << 21);
  for (size_t j = 0; j < cnt; j++)
    w->xs[j] = (w->p->s[w->order[lo + j]] - c->lo) / (c->hi - c->lo);
  rc = dprl_cancel_poll(w->cancel, 4 * (uint64_t)cnt, err);
  if (!rc) rc = dprl_gp_path_sample_indexed(w->path, &w->rng, w->xs, cnt, w->out, w->where, err);
  if (!rc) rc = bind_action(w, lo, cnt, old, nold, &nnew, err);
  for (size_t j = 0; j < cnt && !rc; j++) vals[w->order[lo + j]] = w->out[j];
  dprl_free(old);
  if (!rc && nnew) rc = dprl_q_store_add(w->st, (int64_t)a, w->fresh, nnew, err);
  return rc;
}

/* vals[i] = g_{a_i}(x_i), one path per action, kept in st if not NULL. */
static int noise_sample(const dprl_q_noise_cfg *c, const qn_points *p, dprl_q_store *st,
                        dprl_cancel *cancel, double *vals, dprl_error *err) {
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

/* q on the public grid, then the grid-valued noise: nothing of q's low
** bits survives (ALGORITHMS.md section 6). */
static int noise_rows(const dprl_q_noise_cfg *c, const qn_points *p, const double *vals,
                      dprl_rows *out, dprl_cancel *cancel, dprl_error *err) {
  if (dprl_rows_reserve(out, p->n)) return dprl_nomem(err);
  for (size_t i = 0; i < p->n; i++) {
    if (dprl_cancel_poll(cancel, 20, err)) return err->code;
    double qr = q_on_grid(c, p->q[i]);
    if (dprl_rows_add(out)) return dprl_nomem(err);
    dprl_rows_double(out, 0, p->s[i]);
    dprl_rows_int(out, 1, p->a[i]);
    dprl_rows_double(out, 2, p->q[i]);
    dprl_rows_double(out, 3, qr + vals[i]);
  }
  return DPRL_OK;
}

/* The ledger row, before any row is returned (ALGORITHMS.md section 8.1).
** Without a path table every call draws fresh paths: one release, charged.
** With one, all calls on the path are one release: charged (epsilon,
** delta_total) by the first budgeted call, then marked so; later calls on
** it log a row that spends nothing.  The mark is written only after the
** ledger row is committed: a failure in between makes a later call charge
** again, never charge less. */
static int noise_charge(sqlite3 *db, const dprl_q_noise_cfg *c, dprl_q_store *st,
                        const char *text, size_t len, dprl_error *err) {
  /* J < T/B reuses paths, which the accountant does not cover */
  int fresh = c->cal.epsilon <= 0 || dprl_q_fresh_paths(&c->cal);
  int spends = c->sigma > 0 && c->cal.epsilon > 0 && !c->has_seed && fresh;
  int paid = c->path && st->charged; /* this path's release is charged already */
  dprl_spend sp = {c->budget, "dp_q_noise", spends && !paid ? c->cal.epsilon : 0,
                   spends && !paid ? c->cal.out.delta_total : 0, spends, text, len,
                   c->has_seed ? "seed" : !fresh ? "J (below T/B)" : "sigma"};
  int rc = dprl_budget_charge(db, &sp, err);
  if (!rc && c->budget && c->path && spends && !paid) rc = dprl_q_store_mark_charged(st, err);
  return rc;
}

/* The points, their noise (kept in the path table, if any, atomically:
** the store's transaction holds everything from before the points are
** read to the rows), the ledger row, the rows. */
static int noise_run(sqlite3 *db, sqlite3_value *sql, const dprl_q_noise_cfg *c,
                     const char *text, size_t len, dprl_cancel *cancel, dprl_rows *out,
                     dprl_error *err) {
  dprl_q_path_params pp = {c->sigma, c->beta, c->lo, c->hi, c->grid, c->has_seed, c->budget};
  dprl_q_store st;
  qn_points p = {0};
  double *vals = NULL;
  memset(&st, 0, sizeof st);
  int rc = c->path ? dprl_q_store_begin(&st, db, c->path, &pp, cancel, err) : DPRL_OK;
  if (!rc) rc = read_points(db, sql, c, &p, err);
  /* every entry is written (each point has an action) before it is read */
  if (!rc && !(vals = dprl_malloc_array(p.n ? p.n : 1, sizeof *vals))) rc = dprl_nomem(err);
  if (!rc) rc = noise_sample(c, &p, c->path ? &st : NULL, cancel, vals, err);
  if (c->path) rc = dprl_q_store_end(&st, rc, err);
  if (!rc) rc = noise_charge(db, c, &st, text, len, err);
  if (c->path) dprl_q_store_close(&st);
  if (!rc) rc = noise_rows(c, &p, vals, out, cancel, err);
  dprl_free(vals);
  qn_points_free(&p);
  return rc;
}

static int noise_compute(sqlite3 *db, sqlite3_value **args, dprl_rows *out, char **pzErr) {
  dprl_error err = {0};
  dprl_q_noise_cfg c;
  dprl_sql_cancel cancel;
  const char *text = (const char *)sqlite3_value_text(args[1]);
  if (!text && sqlite3_value_type(args[1]) != SQLITE_NULL) return SQLITE_NOMEM;
  size_t len = text ? (size_t)sqlite3_value_bytes(args[1]) : 0;
  int rc = dprl_q_noise_options(text, len, &c, &err);
  if (!rc && !(rc = dprl_sql_cancel_open(&cancel, db, &err))) {
    rc = noise_run(db, args[0], &c, text, len, &cancel.base, out, &err);
    dprl_sql_cancel_close(&cancel);
  }
  dprl_q_noise_cfg_free(&c);
  if (rc == DPRL_ENOMEM || (!rc && out->oom)) return SQLITE_NOMEM;
  return rc ? dprl_sql_vtab_error(pzErr, "dp_q_noise", &err) : SQLITE_OK;
}

static const char *const noise_args[] = {"points_sql", "options"};

const dprl_tvf_spec dprl_q_noise_tvf = {
    "dp_q_noise",
    "CREATE TABLE x(state REAL, action INTEGER, q REAL, noisy_q REAL,"
    " points_sql HIDDEN, options HIDDEN)",
    4, 2, 2, noise_args, noise_compute, 1 /* writes the path table */};

