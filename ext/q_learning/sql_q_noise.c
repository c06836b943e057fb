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
** Glue only: options -> q_options.c; the points from points_sql; their
** noise -> q_noise.c, whose path store is the path table of sql_q_path.c;
** the ledger row; the rows.
**
** A path is the noise of one function (ALGORITHMS.md section 8.1): a point
** has one q, in a call and on a stored path (q as rounded to the grid, the
** part of noisy_q that is not noise), and the path's release is charged
** to a budget once.
*/
#include <math.h>
#include <string.h>

#include "q_learning/q_noise.h"
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

/* q on the public grid, then the grid-valued noise: nothing of q's low
** bits survives (ALGORITHMS.md section 6). */
static int noise_rows(const dprl_q_noise_cfg *c, const qn_points *p, const double *vals,
                      dprl_rows *out, dprl_cancel *cancel, dprl_error *err) {
  if (dprl_rows_reserve(out, p->n)) return dprl_nomem(err);
  for (size_t i = 0; i < p->n; i++) {
    if (dprl_cancel_poll(cancel, 20, err)) return err->code;
    double qr = dprl_q_on_grid(c, p->q[i]);
    if (dprl_rows_add(out)) return dprl_nomem(err);
    dprl_rows_double(out, 0, p->s[i]);
    dprl_rows_int(out, 1, p->a[i]);
    dprl_rows_double(out, 2, p->q[i]);
    dprl_rows_double(out, 3, qr + vals[i]);
  }
  return DPRL_OK;
}

/* ---- the path table as dp_q_noise's path store (q_noise.h) ---------------- */

static int store_load(void *ctx, int64_t a, dprl_q_point **pts, size_t *npts, dprl_error *err) {
  return dprl_q_store_load(ctx, a, pts, npts, err);
}

static int store_add(void *ctx, int64_t a, dprl_q_point *pts, size_t n, dprl_error *err) {
  return dprl_q_store_add(ctx, a, pts, n, err);
}

static int store_mark_charged(void *ctx, dprl_error *err) {
  return dprl_q_store_mark_charged(ctx, err);
}

/* The ledger row, before any row is returned; the path marked charged
** after it (q_noise.h, dprl_q_noise_cost_of). */
static int noise_charge(sqlite3 *db, const dprl_q_noise_cfg *c, const dprl_q_path_store *ps,
                        const char *text, size_t len, dprl_error *err) {
  dprl_q_noise_cost cost;
  dprl_q_noise_cost_of(c, ps, &cost);
  dprl_spend sp = {c->budget, "dp_q_noise", cost.epsilon, cost.delta, cost.spends,
                   text,      len,          cost.why_not, dprl_q_unit(c->cal.nb), 0, 0};
  int rc = dprl_budget_charge(db, &sp, err);
  if (!rc) rc = dprl_q_noise_charged(&cost, ps, err);
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
  dprl_q_path_store ps = {&st, store_load, store_add, store_mark_charged, 0};
  qn_points p = {0};
  double *vals = NULL;
  memset(&st, 0, sizeof st);
  int rc = c->path ? dprl_q_store_begin(&st, db, c->path, &pp, cancel, err) : DPRL_OK;
  ps.charged = st.charged;
  if (!rc) rc = read_points(db, sql, c, &p, err);
  dprl_q_noise_in in = {p.s, p.a, p.q, p.n, "points_sql"};
  /* every entry is written (each point has an action) before it is read */
  if (!rc && !(vals = dprl_malloc_array(p.n ? p.n : 1, sizeof *vals))) rc = dprl_nomem(err);
  if (!rc) rc = dprl_q_noise_sample(c, &in, c->path ? &ps : NULL, cancel, vals, err);
  if (c->path) rc = dprl_q_store_end(&st, rc, err);
  if (!rc) rc = noise_charge(db, c, c->path ? &ps : NULL, text, len, err);
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

