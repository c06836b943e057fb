/*
** sql_q.c: differentially private Q-learning with functional noise
** (Wang & Hegde 2019; ALGORITHMS.md section 8) in SQL.
**
**   SELECT dp_q_calibrate(options);                        scalar, JSON
**   SELECT * FROM dp_q_noise(points_sql, options);         table-valued
**     -- state | action | q | noisy_q
**   SELECT dp_q_learn(s, a, r, s_next, options) FROM transitions;  aggregate
**   SELECT dp_q_value(model, state, action);               scalar: Q_theta
**
** Glue only: options -> q_calibrate.c (sigma, beta), gp_path.c (the noise
** paths) and q_learn.c (Algorithm 1).  dp_q_noise with option "path" is
** the one place dprl writes to the database: the sampled noise is kept in
** the table the user names (and a companion "<path>_params" with sigma,
** beta and the state interval), inside a SAVEPOINT, so later calls
** condition on it and an error leaves nothing written.
*/
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gp_path.h"
#include "json.h"
#include "noise.h"
#include "options.h"
#include "q_calibrate.h"
#include "q_learn.h"
#include "sql_tvf.h"

#define MAX_ACTIONS 1000000
#define MAX_K 100000

static const char *const acc_choices[] = {"proof", "gdp", "paper", NULL};
static const char *const feat_choices[] = {"tent", "rbf", NULL};

/* Shortest %g form that reads back exactly (as the JSON writer does). */
static const char *num(double x, char *buf, size_t n) {
  for (int prec = 15; prec <= 17; prec++) {
    snprintf(buf, n, "%.*g", prec, x);
    if (strtod(buf, NULL) == x) break;
  }
  return buf;
}

static void put_key(dprl_buf *b, const char *k) {
  dprl_buf_puts(b, ",");
  dprl_json_put_string(b, k);
  dprl_buf_puts(b, ":");
}

static void put_num(dprl_buf *b, const char *k, double x) {
  put_key(b, k);
  dprl_json_put_double(b, x);
}

static void put_int(dprl_buf *b, const char *k, int64_t x) {
  put_key(b, k);
  dprl_buf_printf(b, "%lld", (long long)x);
}

/* ---- calibration inputs (shared by the three functions) ---------------- */

typedef struct q_cal {
  int64_t T, B, J;
  double epsilon, delta, lr, k, L;
  int acc;
  int L_computed;          /* L from the approximator (K, features, rmin, rmax) */
  dprl_q_features feat;    /* the approximator, when known */
  double rmin, rmax;
  dprl_q_calib_out out;
} q_cal;

/* T, B <= T, J (default floor(T/B): a fresh path every batch). */
static int read_schedule(const dprl_options *o, q_cal *c) {
  int rc = dprl_opt_int(o, "T", 1, 0, DPRL_CLOSED(1, 1e9), &c->T);
  if (!rc) rc = dprl_opt_int(o, "B", 1, 0, DPRL_CLOSED(1, 1e9), &c->B);
  if (!rc && c->B > c->T)
    return dprl_fail(o->err, DPRL_EINVAL, "%s: option B must be <= T = %lld, got %lld",
                     o->fn, (long long)c->T, (long long)c->B);
  if (!rc) rc = dprl_opt_int(o, "J", 0, c->T / c->B, DPRL_CLOSED(1, 1e9), &c->J);
  return rc;
}

/* features, K, rmin, rmax (lo, hi are read by the caller if it has them). */
static int read_approximator(const dprl_options *o, int K_required, q_cal *c) {
  int kind = 0;
  int64_t K = 21;
  int rc = dprl_opt_choice(o, "features", feat_choices, 0, &kind);
  if (!rc) rc = dprl_opt_int(o, "K", K_required, 21, DPRL_CLOSED(2, MAX_K), &K);
  if (!rc) rc = dprl_opt_number(o, "rmin", 0, 0, DPRL_ANY, &c->rmin);
  if (!rc) rc = dprl_opt_number(o, "rmax", 0, 1, DPRL_ANY, &c->rmax);
  if (!rc && !(c->rmax > c->rmin)) {
    char a[32], b[32];
    return dprl_fail(o->err, DPRL_EINVAL, "%s: option rmax must be > rmin = %s, got %s", o->fn,
                     num(c->rmin, a, sizeof a), num(c->rmax, b, sizeof b));
  }
  c->feat.kind = kind ? DPRL_QFEAT_RBF : DPRL_QFEAT_TENT;
  c->feat.K = (int)K;
  return rc;
}

/* epsilon, delta, lr, k, accountant, and L: given, or (learn, or K given)
** computed from the approximator as dp_q_learn does. */
static int read_privacy(const dprl_options *o, int learn, q_cal *c) {
  int rc = dprl_opt_number(o, "epsilon", 1, 0, DPRL_POSITIVE, &c->epsilon);
  if (!rc) rc = dprl_opt_number(o, "delta", 1, 0, DPRL_OPEN(0, 1), &c->delta);
  if (!rc) rc = read_schedule(o, c);
  if (!rc) rc = dprl_opt_number(o, "lr", 1, 0, DPRL_POSITIVE, &c->lr);
  if (!rc) rc = dprl_opt_number(o, "k", 1, 0, DPRL_POSITIVE, &c->k);
  if (!rc) rc = dprl_opt_choice(o, "accountant", acc_choices, DPRL_QACC_GDP, &c->acc);
  if (rc) return rc;
  if (learn) {
    c->L_computed = 1;
  } else {
    int has_L = dprl_opt_has(o, "L");
    int has_approx = dprl_opt_has(o, "K") || dprl_opt_has(o, "features") ||
                     dprl_opt_has(o, "rmin") || dprl_opt_has(o, "rmax");
    if (has_L && has_approx)
      return dprl_fail(o->err, DPRL_EINVAL,
                       "%s: give option L or the approximator it is computed from "
                       "(K, features, rmin, rmax), not both", o->fn);
    if (!has_L && !has_approx)
      return dprl_fail(o->err, DPRL_EINVAL,
                       "%s: option L is required (or K, to compute L for dp_q_learn's "
                       "approximator)", o->fn);
    if (has_L) return dprl_opt_number(o, "L", 1, 0, DPRL_POSITIVE, &c->L);
    if ((rc = read_approximator(o, 1, c))) return rc;
    c->L_computed = 1;
  }
  /* L is a property of the features on the rescaled interval [0, 1]. */
  dprl_q_features unit = c->feat;
  unit.lo = 0;
  unit.hi = 1;
  return dprl_q_sensitivity_L(&unit, c->lr, c->k, (double)c->B, c->rmin, c->rmax, &c->L, o->err);
}

/* sigma, beta from Theorem 5 (q_calibrate.c); refused without a guarantee. */
static int calibrate(const char *fn, q_cal *c, dprl_error *err) {
  dprl_q_calib_in in = {c->epsilon, c->delta, (double)c->T, (double)c->B, c->lr, c->k,
                        c->L, (double)c->J, (dprl_q_accountant)c->acc};
  int rc = dprl_q_calibrate(&in, &c->out, err);
  if (rc) return rc;
  if (!(c->out.delta_total < 1))
    return dprl_fail(err, DPRL_EINVAL,
                     "%s: no privacy guarantee: delta_total = delta + J exp(-(2k - 8.68 "
                     "sqrt(beta) sigma)^2 / 2) = %g >= 1 (J = %lld, 2k - 8.68 sqrt(beta) "
                     "sigma = %g); raise k",
                     fn, c->out.delta_total, (long long)c->J, c->out.margin);
  return DPRL_OK;
}

/* J < T/B reuses a path over several SGD steps: no accountant covers it. */
static int fresh_paths(const q_cal *c) { return c->J >= c->T / c->B; }

static void put_calibration(dprl_buf *b, const q_cal *c) {
  put_num(b, "sigma", c->out.sigma);
  put_num(b, "beta", c->out.beta);
  put_num(b, "delta_total", c->out.delta_total);
  put_key(b, "accountant");
  dprl_json_put_string(b, c->out.accountant);
  dprl_buf_printf(b, ",\"proven\":%s", c->out.proven ? "true" : "false");
  put_num(b, "epsilon", c->epsilon);
  put_num(b, "delta", c->delta);
  put_int(b, "T", c->T);
  put_int(b, "B", c->B);
  put_int(b, "J", c->J);
  put_num(b, "lr", c->lr);
  put_num(b, "k", c->k);
  put_num(b, "L", c->L);
  put_num(b, "v", c->out.v);
  put_num(b, "C", c->out.C);
  put_num(b, "mu", c->out.mu);
  put_num(b, "margin", c->out.margin);
}

static const char *const reuse_note =
    "J < T/B reuses a noise path over several batches; the accountant composes T/B "
    "batches with a fresh path each, so this run is not covered";

/* ---- dp_q_calibrate(options) -------------------------------------------- */

static const char *const cal_keys[] = {"epsilon", "delta", "T",        "B", "lr",
                                       "k",       "L",     "J",        "accountant",
                                       "K",       "features", "rmin", "rmax", NULL};

static void calibrate_fn(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  const char *fn = "dp_q_calibrate";
  dprl_error err = {0};
  dprl_options o;
  q_cal c;
  memset(&c, 0, sizeof c);
  const char *text = (const char *)sqlite3_value_text(argv[0]);
  if (!text && sqlite3_value_type(argv[0]) != SQLITE_NULL) {
    sqlite3_result_error_nomem(ctx);
    return;
  }
  int rc = dprl_options_open(&o, fn, text, (size_t)sqlite3_value_bytes(argv[0]), cal_keys, &err);
  if (!rc) rc = read_privacy(&o, 0, &c);
  dprl_options_close(&o);
  if (!rc) rc = calibrate(fn, &c, &err);
  if (rc) {
    dprl_sql_result_error(ctx, fn, &err);
    return;
  }
  dprl_buf b = {0};
  dprl_buf_puts(&b, "{\"mechanism\":\"dp_q_calibrate\"");
  put_calibration(&b, &c);
  if (c.L_computed) {
    put_key(&b, "features");
    dprl_buf_printf(&b, "{\"kind\":\"%s\",\"K\":%d}", feat_choices[c.feat.kind], c.feat.K);
    put_num(&b, "rmin", c.rmin);
    put_num(&b, "rmax", c.rmax);
  }
  put_key(&b, "note");
  dprl_buf nb = {0};
  dprl_buf_puts(&nb, c.out.note);
  if (!fresh_paths(&c)) dprl_buf_printf(&nb, "; %s", reuse_note);
  dprl_json_put_string(&b, nb.oom ? "" : nb.data);
  dprl_buf_free(&nb);
  dprl_buf_puts(&b, "}");
  if (b.oom) sqlite3_result_error_nomem(ctx);
  else sqlite3_result_text(ctx, b.data, (int)b.len, SQLITE_TRANSIENT);
  dprl_buf_free(&b);
  (void)argc;
}

/* ---- dp_q_noise(points_sql, options) ---------------------------------- */

static const char *const noise_keys[] = {
    "n_actions", "lo", "hi",         "path", "seed", "sigma",    "beta", "epsilon", "delta",
    "T",         "B",  "lr",         "k",    "L",    "J",        "accountant",     "K",
    "features",  "rmin", "rmax",     NULL};

/* Keys that only calibration reads: refused when sigma and beta are given. */
static const char *const calib_only_keys[] = {"epsilon", "delta", "T", "B", "lr", "k", "L",
                                              "J", "accountant", "K", "features", "rmin",
                                              "rmax", NULL};

typedef struct qn_cfg {
  int64_t n_actions;
  double lo, hi;
  double sigma, beta, grid;
  q_cal cal;
  char *path; /* table name or NULL (dprl_malloc'd) */
  int has_seed;
  uint64_t seed;
} qn_cfg;

static int read_interval(const dprl_options *o, double *lo, double *hi) {
  int rc = dprl_opt_number(o, "lo", 0, 0, DPRL_ANY, lo);
  if (!rc) rc = dprl_opt_number(o, "hi", 0, 1, DPRL_ANY, hi);
  if (!rc && !(*hi > *lo)) {
    char a[32], b[32];
    return dprl_fail(o->err, DPRL_EINVAL, "%s: option hi must be > lo = %s, got %s", o->fn,
                     num(*lo, a, sizeof a), num(*hi, b, sizeof b));
  }
  return rc;
}

static int noise_options(sqlite3_value *v, qn_cfg *c, dprl_error *err) {
  const char *fn = "dp_q_noise";
  dprl_options o;
  const char *text = (const char *)sqlite3_value_text(v);
  if (!text && sqlite3_value_type(v) != SQLITE_NULL) return dprl_nomem(err);
  int rc = dprl_options_open(&o, fn, text, (size_t)sqlite3_value_bytes(v), noise_keys, err);
  if (!rc) rc = dprl_opt_int(&o, "n_actions", 1, 0, DPRL_CLOSED(1, MAX_ACTIONS), &c->n_actions);
  if (!rc) rc = read_interval(&o, &c->lo, &c->hi);
  if (!rc) rc = dprl_opt_seed(&o, &c->has_seed, &c->seed);
  if (!rc && dprl_opt_has(&o, "path")) {
    const dprl_json *p = dprl_opt_get(&o, "path");
    if (p->type != DPRL_JSON_STRING || p->n == 0 || strlen(p->str) != p->n) {
      char got[64];
      dprl_json_describe(p, got, sizeof got);
      rc = dprl_fail(err, DPRL_EINVAL, "%s: option path must be a table name, got %s", fn, got);
    } else if (!(c->path = dprl_malloc(p->n + 1))) {
      rc = dprl_nomem(err);
    } else {
      memcpy(c->path, p->str, p->n + 1);
    }
  }
  if (!rc && dprl_opt_has(&o, "sigma")) {
    for (const char *const *k = calib_only_keys; *k && !rc; k++)
      if (dprl_opt_has(&o, *k))
        rc = dprl_fail(err, DPRL_EINVAL,
                       "%s: option %s is a calibration input; give either sigma and beta, "
                       "or the calibration inputs, not both", fn, *k);
    if (!rc) rc = dprl_opt_number(&o, "sigma", 1, 0, DPRL_POSITIVE, &c->sigma);
    if (!rc) rc = dprl_opt_number(&o, "beta", 1, 0, DPRL_POSITIVE, &c->beta);
  } else if (!rc) {
    if (dprl_opt_has(&o, "beta"))
      rc = dprl_fail(err, DPRL_EINVAL,
                     "%s: option beta goes with sigma; without sigma both come from the "
                     "calibration inputs", fn);
    if (!rc) rc = read_privacy(&o, 0, &c->cal);
    if (!rc && c->cal.acc == DPRL_QACC_PAPER)
      rc = dprl_fail(err, DPRL_EINVAL,
                     "%s: accountant \"paper\" has no privacy guarantee (the printed formula "
                     "of Theorem 5); use it with dp_q_calibrate or dp_q_learn to compare", fn);
    if (!rc) rc = calibrate(fn, &c->cal, err);
    if (!rc) {
      c->sigma = c->cal.out.sigma;
      c->beta = c->cal.out.beta;
    }
  }
  dprl_options_close(&o);
  if (!rc) c->grid = dprl_grid_for(c->sigma);
  return rc;
}

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

/* Grow n parallel arrays to nc elements each; arrays already grown stay
** grown on failure (harmless: the caller keeps its old capacity). */
static int grow_parallel(size_t nc, int n, void **arrays[], const size_t sizes[],
                         dprl_error *err) {
  for (int i = 0; i < n; i++) {
    void *p = dprl_realloc(*arrays[i], nc * sizes[i]);
    if (!p) return dprl_nomem(err);
    *arrays[i] = p;
  }
  return DPRL_OK;
}

static int qn_points_push(qn_points *p, double s, int64_t a, double q, dprl_error *err) {
  if (p->n == p->cap) {
    size_t nc = p->cap ? 2 * p->cap : 1024;
    void **arrays[] = {(void **)&p->s, (void **)&p->q, (void **)&p->a};
    const size_t sizes[] = {sizeof *p->s, sizeof *p->q, sizeof *p->a};
    if (grow_parallel(nc, 3, arrays, sizes, err)) return DPRL_ENOMEM;
    p->cap = nc;
  }
  p->s[p->n] = s;
  p->a[p->n] = a;
  p->q[p->n] = q;
  p->n++;
  return DPRL_OK;
}

static void say_row(dprl_error *err, const char *where, size_t row) {
  char tail[64];
  if (err->code != DPRL_EINVAL) return;
  snprintf(tail, sizeof tail, " (row %zu of %s)", row, where);
  if (strlen(err->msg) + strlen(tail) < sizeof err->msg) strcat(err->msg, tail);
}

static int check_state(double s, double lo, double hi, const char *what, dprl_error *err) {
  if (s >= lo && s <= hi) return DPRL_OK;
  char a[32], b[32], c[32];
  return dprl_fail(err, DPRL_EINVAL, "%s must be in [lo, hi] = [%s, %s], got %s", what,
                   num(lo, a, sizeof a), num(hi, b, sizeof b), num(s, c, sizeof c));
}

static int check_action(int64_t a, int64_t n_actions, const char *what, dprl_error *err) {
  if (a >= 0 && a < n_actions) return DPRL_OK;
  return dprl_fail(err, DPRL_EINVAL, "%s must be in 0..n_actions-1 = 0..%lld, got %lld", what,
                   (long long)n_actions - 1, (long long)a);
}

/* One row (state, action, q) of points_sql, checked. */
static int read_point(sqlite3_value **v, const qn_cfg *c, double *s, int64_t *a, double *q,
                      dprl_error *err) {
  int rc;
  if ((rc = dprl_sql_real(v[0], "state", s, err)) ||
      (rc = check_state(*s, c->lo, c->hi, "state", err)) ||
      (rc = dprl_sql_int(v[1], "action", a, err)) ||
      (rc = check_action(*a, c->n_actions, "action", err)) || (rc = dprl_sql_real(v[2], "q", q, err)))
    return rc;
  if (!(fabs(*q / c->grid) < 0x1p52)) {
    char a1[32], b1[32];
    return dprl_fail(err, DPRL_EINVAL, "q must be below 2^52 grid steps (grid %s), got %s",
                     num(c->grid, a1, sizeof a1), num(*q, b1, sizeof b1));
  }
  return DPRL_OK;
}

static int read_points(sqlite3 *db, sqlite3_value *sql, const qn_cfg *c, qn_points *p,
                       dprl_error *err, char **pzErr) {
  dprl_query q;
  int rc = dprl_query_open(&q, db, "points_sql", sql, 3, "dp_q_noise", pzErr);
  if (rc) return rc;
  while ((rc = dprl_query_step(&q, "dp_q_noise", pzErr)) == SQLITE_ROW) {
    sqlite3_value *row[3];
    for (int i = 0; i < 3; i++) row[i] = sqlite3_column_value(q.stmt, i);
    double s, qv;
    int64_t a;
    if (read_point(row, c, &s, &a, &qv, err) || qn_points_push(p, s, a, qv, err)) {
      say_row(err, "points_sql", p->n + 1);
      rc = dprl_sql_vtab_error(pzErr, "dp_q_noise", err);
      break;
    }
  }
  dprl_query_close(&q);
  return rc == SQLITE_DONE ? SQLITE_OK : rc;
}

/* ---- the path table --------------------------------------------------------- */

typedef struct qn_store {
  sqlite3 *db;
  const char *name;
  char *params;             /* "<name>_params" */
  sqlite3_stmt *load, *ins; /* prepared once per call */
  int writable;             /* inside our SAVEPOINT */
  char why[160];            /* why not (SQLite's message) */
} qn_store;

/* Called before any write: refused when the SAVEPOINT could not be opened
** (the calling statement writes itself, e.g. CREATE TABLE ... AS SELECT). */
static int may_write(qn_store *st, dprl_error *err) {
  if (st->writable) return DPRL_OK;
  return dprl_fail(err, DPRL_EINVAL,
                   "path table \"%s\": cannot store new noise from inside a statement that "
                   "writes (%s); run the same call in a plain SELECT first: once its points "
                   "are stored, it writes nothing",
                   st->name, st->why);
}

static int db_fail(qn_store *st, const char *what, dprl_error *err) {
  int code = sqlite3_errcode(st->db);
  if (code == SQLITE_NOMEM) return dprl_nomem(err);
  return dprl_fail(err, DPRL_EINVAL, "path table \"%s\": %s: %s", st->name, what,
                   sqlite3_errmsg(st->db));
}

static int exec_fmt(qn_store *st, const char *what, dprl_error *err, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char *sql = sqlite3_vmprintf(fmt, ap);
  va_end(ap);
  if (!sql) return dprl_nomem(err);
  int rc = sqlite3_exec(st->db, sql, NULL, NULL, NULL);
  sqlite3_free(sql);
  return rc == SQLITE_OK ? DPRL_OK : db_fail(st, what, err);
}

/* Columns of table `name` as "(a INTEGER, b REAL, PRIMARY KEY(a))" into
** got; *ncol = 0 when there is no such table.  *ok = the columns are
** exactly want_names / want_types with primary key order want_pk. */
static int table_shape(qn_store *st, const char *name, int nwant,
                       const char *const *want_names, const char *const *want_types,
                       const int *want_pk, int *ncol, int *ok, char *got, size_t gotn,
                       dprl_error *err) {
  sqlite3_stmt *s = NULL;
  if (sqlite3_prepare_v2(st->db, "SELECT name, type, pk FROM pragma_table_info(?1)", -1, &s,
                         NULL) != SQLITE_OK)
    return db_fail(st, "reading its schema", err);
  sqlite3_bind_text(s, 1, name, -1, SQLITE_STATIC);
  char pkcols[8][64] = {{0}};
  int npk = 0, n = 0, rc;
  size_t used = 0;
  *ok = 1;
  got[0] = 0;
  while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
    const char *cn = (const char *)sqlite3_column_text(s, 0);
    const char *ct = (const char *)sqlite3_column_text(s, 1);
    int pk = sqlite3_column_int(s, 2);
    if (!cn) cn = "";
    if (!ct) ct = "";
    used += (size_t)snprintf(got + used, used < gotn ? gotn - used : 0, "%s%s%s%s",
                             n ? ", " : "(", cn, *ct ? " " : "", ct);
    if (used >= gotn) used = gotn - 1;
    if (pk >= 1 && pk <= 8) {
      snprintf(pkcols[pk - 1], sizeof pkcols[0], "%s", cn);
      if (pk > npk) npk = pk;
    }
    if (n >= nwant || sqlite3_stricmp(cn, want_names[n]) != 0 ||
        sqlite3_stricmp(ct, want_types[n]) != 0 || pk != want_pk[n])
      *ok = 0;
    n++;
  }
  sqlite3_finalize(s);
  if (rc != SQLITE_DONE) return db_fail(st, "reading its schema", err);
  if (n != nwant) *ok = 0;
  for (int i = 0; i < npk; i++)
    used += (size_t)snprintf(got + used, used < gotn ? gotn - used : 0, "%s%s",
                             i ? ", " : ", PRIMARY KEY(", pkcols[i]);
  if (used >= gotn) used = gotn - 1;
  if (n) snprintf(got + used, gotn - used, "%s)", npk ? ")" : "");
  *ncol = n;
  return DPRL_OK;
}

static const char *const path_names[] = {"action", "state", "g"};
static const char *const path_types[] = {"INTEGER", "REAL", "REAL"};
static const int path_pk[] = {1, 2, 0};
#define PATH_SCHEMA "(action INTEGER, state REAL, g REAL, PRIMARY KEY(action, state))"
static const char *const par_names[] = {"sigma", "beta", "lo", "hi", "seeded"};
static const char *const par_types[] = {"REAL", "REAL", "REAL", "REAL", "INTEGER"};
static const int par_pk[] = {0, 0, 0, 0, 0};
#define PARAMS_SCHEMA "(sigma REAL, beta REAL, lo REAL, hi REAL, seeded INTEGER)"

static int count_rows(qn_store *st, const char *table, int64_t *n, dprl_error *err) {
  sqlite3_stmt *s = NULL;
  char *sql = sqlite3_mprintf("SELECT count(*) FROM \"%w\"", table);
  if (!sql) return dprl_nomem(err);
  int rc = sqlite3_prepare_v2(st->db, sql, -1, &s, NULL);
  sqlite3_free(sql);
  if (rc != SQLITE_OK || sqlite3_step(s) != SQLITE_ROW) {
    sqlite3_finalize(s);
    return db_fail(st, "reading it", err);
  }
  *n = sqlite3_column_int64(s, 0);
  sqlite3_finalize(s);
  return DPRL_OK;
}

static int record_params(qn_store *st, const qn_cfg *c, dprl_error *err) {
  sqlite3_stmt *s = NULL;
  char *sql = sqlite3_mprintf("INSERT INTO \"%w\"(sigma, beta, lo, hi, seeded) "
                              "VALUES (?1, ?2, ?3, ?4, ?5)", st->params);
  if (!sql) return dprl_nomem(err);
  int rc = sqlite3_prepare_v2(st->db, sql, -1, &s, NULL);
  sqlite3_free(sql);
  if (rc == SQLITE_OK) {
    sqlite3_bind_double(s, 1, c->sigma);
    sqlite3_bind_double(s, 2, c->beta);
    sqlite3_bind_double(s, 3, c->lo);
    sqlite3_bind_double(s, 4, c->hi);
    sqlite3_bind_int(s, 5, c->has_seed);
    rc = sqlite3_step(s) == SQLITE_DONE ? SQLITE_OK : SQLITE_ERROR;
  }
  sqlite3_finalize(s);
  return rc == SQLITE_OK ? DPRL_OK : db_fail(st, "recording its parameters", err);
}

/* A trigger on the path table (or its parameters) could skip, change or
** delete stored noise behind our back: a later call would then release q
** with other noise, or none.  Refused, in every schema of the connection. */
static int no_triggers(qn_store *st, const char *table, dprl_error *err) {
  sqlite3_stmt *dbs = NULL;
  int rc = DPRL_OK, step;
  if (sqlite3_prepare_v2(st->db, "SELECT name FROM pragma_database_list", -1, &dbs, NULL) !=
      SQLITE_OK)
    return db_fail(st, "listing the schemas", err);
  while (!rc && (step = sqlite3_step(dbs)) == SQLITE_ROW) {
    const char *schema = (const char *)sqlite3_column_text(dbs, 0);
    sqlite3_stmt *t = NULL;
    char *sql = sqlite3_mprintf("SELECT name FROM \"%w\".sqlite_schema WHERE type = 'trigger' "
                                "AND tbl_name = ?1 COLLATE NOCASE", schema ? schema : "main");
    if (!sql) rc = dprl_nomem(err);
    else if (sqlite3_prepare_v2(st->db, sql, -1, &t, NULL) != SQLITE_OK)
      rc = db_fail(st, "reading its triggers", err);
    sqlite3_free(sql);
    if (!rc) {
      sqlite3_bind_text(t, 1, table, -1, SQLITE_STATIC);
      int r = sqlite3_step(t);
      if (r == SQLITE_ROW)
        rc = dprl_fail(err, DPRL_EINVAL,
                       "path table \"%s\": table \"%s\" has a trigger (\"%s\" in schema %s); "
                       "stored noise must not be changed behind dprl's back: drop the trigger "
                       "or use another path table",
                       st->name, table, (const char *)sqlite3_column_text(t, 0),
                       schema ? schema : "main");
      else if (r != SQLITE_DONE)
        rc = db_fail(st, "reading its triggers", err);
    }
    sqlite3_finalize(t);
  }
  if (!rc && step != SQLITE_DONE) rc = db_fail(st, "listing the schemas", err);
  sqlite3_finalize(dbs);
  return rc;
}

/* Create the tables if missing, check their schema, record or compare the
** parameters.  Inside the caller's SAVEPOINT. */
static int store_open(qn_store *st, const qn_cfg *c, dprl_error *err) {
  char got[400];
  int ncol, ok, rc;
  if ((rc = no_triggers(st, st->name, err)) || (rc = no_triggers(st, st->params, err)))
    return rc;
  if ((rc = table_shape(st, st->name, 3, path_names, path_types, path_pk, &ncol, &ok, got,
                        sizeof got, err)))
    return rc;
  if (ncol && !ok)
    return dprl_fail(err, DPRL_EINVAL, "path table \"%s\" must have the schema %s, got %s",
                     st->name, PATH_SCHEMA, got);
  int path_exists = ncol > 0;
  if (!ncol && ((rc = may_write(st, err)) ||
                (rc = exec_fmt(st, "creating it", err, "CREATE TABLE \"%w\"" PATH_SCHEMA,
                               st->name))))
    return rc;
  if ((rc = table_shape(st, st->params, 5, par_names, par_types, par_pk, &ncol, &ok, got,
                        sizeof got, err)))
    return rc;
  if (ncol && !ok)
    return dprl_fail(err, DPRL_EINVAL,
                     "path table \"%s\": its parameters table \"%s\" must have the schema %s, "
                     "got %s",
                     st->name, st->params, PARAMS_SCHEMA, got);
  int params_exist = ncol > 0;
  if (!ncol && ((rc = may_write(st, err)) ||
                (rc = exec_fmt(st, "creating its parameters table", err,
                               "CREATE TABLE \"%w\"" PARAMS_SCHEMA, st->params))))
    return rc;
  /* The parameters: none yet (a new path) or exactly the ones of this call. */
  int64_t nparams = 0, npoints = 0;
  double have[4] = {0, 0, 0, 0};
  int have_seeded = 0, types_ok = 1;
  if ((params_exist && (rc = count_rows(st, st->params, &nparams, err))) ||
      (path_exists && (rc = count_rows(st, st->name, &npoints, err))))
    return rc;
  if (nparams == 1) {
    sqlite3_stmt *s = NULL;
    char *sql = sqlite3_mprintf("SELECT sigma, beta, lo, hi, seeded FROM \"%w\"", st->params);
    if (!sql) return dprl_nomem(err);
    rc = sqlite3_prepare_v2(st->db, sql, -1, &s, NULL);
    sqlite3_free(sql);
    if (rc != SQLITE_OK || sqlite3_step(s) != SQLITE_ROW) {
      sqlite3_finalize(s);
      return db_fail(st, "reading its parameters", err);
    }
    for (int i = 0; i < 5; i++) {
      int t = sqlite3_column_type(s, i);
      types_ok &= i < 4 ? t == SQLITE_FLOAT || t == SQLITE_INTEGER : t == SQLITE_INTEGER;
      if (i < 4) have[i] = sqlite3_column_double(s, i);
    }
    have_seeded = sqlite3_column_int(s, 4);
    sqlite3_finalize(s);
  }
  char a[4][32], b[4][32];
  if (nparams == 0) {
    if (npoints > 0)
      return dprl_fail(err, DPRL_EINVAL,
                       "path table \"%s\" holds %lld points but \"%s\" has no parameters row: "
                       "its sigma, beta and interval are unknown",
                       st->name, (long long)npoints, st->params);
    return may_write(st, err) ? err->code : record_params(st, c, err);
  }
  if (nparams != 1 || !types_ok)
    return dprl_fail(err, DPRL_EINVAL,
                     "path table \"%s\": \"%s\" must hold exactly one row of numbers, got %lld "
                     "rows",
                     st->name, st->params, (long long)nparams);
  if (have[0] != c->sigma || have[1] != c->beta || have[2] != c->lo || have[3] != c->hi)
    return dprl_fail(err, DPRL_EINVAL,
                     "path table \"%s\" holds a path with sigma = %s, beta = %s, interval "
                     "[%s, %s]; this call has sigma = %s, beta = %s, interval [%s, %s]: use "
                     "another path table",
                     st->name, num(have[0], a[0], 32), num(have[1], a[1], 32),
                     num(have[2], a[2], 32), num(have[3], a[3], 32), num(c->sigma, b[0], 32),
                     num(c->beta, b[1], 32), num(c->lo, b[2], 32), num(c->hi, b[3], 32));
  if ((have_seeded != 0) != (c->has_seed != 0))
    return dprl_fail(err, DPRL_EINVAL,
                     have_seeded
                         ? "path table \"%s\" was drawn with a seed (reproducible, not "
                           "private): use another path table for private noise"
                         : "path table \"%s\" holds private noise: a seeded call would add "
                           "reproducible values to it; use another path table",
                     st->name);
  return DPRL_OK;
}

static int pt_cmp(const void *pa, const void *pb) {
  const dprl_gp_point *a = pa, *b = pb;
  return (a->x > b->x) - (a->x < b->x);
}

/* The stored points of action a into the path (rescaled to [0, 1]);
** pts gets a copy, sorted, for the membership test of new points. */
static int store_load(qn_store *st, const qn_cfg *c, int64_t a, dprl_gp_path *path,
                      dprl_gp_point **pts, size_t *npts, dprl_error *err) {
  size_t n = 0, cap = 0;
  dprl_gp_point *v = NULL;
  int rc;
  sqlite3_reset(st->load);
  sqlite3_bind_int64(st->load, 1, a);
  while ((rc = sqlite3_step(st->load)) == SQLITE_ROW) {
    int ts = sqlite3_column_type(st->load, 0), tg = sqlite3_column_type(st->load, 1);
    double s = sqlite3_column_double(st->load, 0), g = sqlite3_column_double(st->load, 1);
    double k = g / c->grid;
    if ((ts != SQLITE_FLOAT && ts != SQLITE_INTEGER) || !(s >= c->lo && s <= c->hi) ||
        (tg != SQLITE_FLOAT && tg != SQLITE_INTEGER) || !(fabs(k) < 0x1p52) || k != floor(k)) {
      char x[32], y[32];
      dprl_free(v);
      sqlite3_reset(st->load);
      return dprl_fail(err, DPRL_EINVAL,
                       "path table \"%s\": stored row (action %lld, state %s, g %s) is not a "
                       "point of this path (state in [lo, hi], g a finite multiple of the grid)",
                       st->name, (long long)a, ts == SQLITE_NULL ? "NULL" : num(s, x, 32),
                       tg == SQLITE_NULL ? "NULL" : num(g, y, 32));
    }
    if (n == cap) {
      size_t nc = cap ? 2 * cap : 256;
      dprl_gp_point *nv = dprl_realloc(v, nc * sizeof *nv);
      if (!nv) {
        dprl_free(v);
        sqlite3_reset(st->load);
        return dprl_nomem(err);
      }
      v = nv;
      cap = nc;
    }
    v[n].x = (s - c->lo) / (c->hi - c->lo);
    v[n].g = g;
    n++;
  }
  sqlite3_reset(st->load);
  if (rc != SQLITE_DONE) {
    dprl_free(v);
    return db_fail(st, "loading the stored points", err);
  }
  /* Distinct states can rescale to the same x; they were stored with the
  ** same value (a repeated point), so keep one. */
  if (n) qsort(v, n, sizeof *v, pt_cmp);
  size_t m = 0;
  for (size_t i = 0; i < n; i++) {
    if (m && v[m - 1].x == v[i].x) {
      if (v[m - 1].g != v[i].g) {
        char x[32];
        dprl_free(v);
        return dprl_fail(err, DPRL_EINVAL,
                         "path table \"%s\": two values stored at one point (action %lld, "
                         "rescaled state %s)",
                         st->name, (long long)a, num(v[i].x, x, 32));
      }
      continue;
    }
    v[m++] = v[i];
  }
  rc = dprl_gp_path_load(path, v, m, err);
  if (rc) {
    dprl_free(v);
    return rc;
  }
  *pts = v;
  *npts = m;
  return DPRL_OK;
}

static int stored(const dprl_gp_point *pts, size_t n, double x) {
  size_t lo = 0, hi = n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (pts[mid].x < x) lo = mid + 1;
    else hi = mid;
  }
  return lo < n && pts[lo].x == x;
}

/* Insert the new points (state, g) of action a, each state once (a plain
** INSERT: a point that cannot be stored is an error, never skipped, since
** its value is about to be released). */
static int store_new(qn_store *st, int64_t a, dprl_gp_point *pts, size_t n, dprl_error *err) {
  int rc = may_write(st, err);
  if (rc) return rc;
  qsort(pts, n, sizeof *pts, pt_cmp);
  for (size_t j = 0; j < n && !rc; j++) {
    if (j && pts[j].x == pts[j - 1].x) continue; /* a state repeated in this call */
    sqlite3_reset(st->ins);
    sqlite3_bind_int64(st->ins, 1, a);
    sqlite3_bind_double(st->ins, 2, pts[j].x);
    sqlite3_bind_double(st->ins, 3, pts[j].g);
    if (sqlite3_step(st->ins) != SQLITE_DONE) rc = db_fail(st, "storing new points", err);
    else if (sqlite3_changes(st->db) != 1) /* e.g. a trigger's RAISE(IGNORE) */
      rc = dprl_fail(err, DPRL_EINVAL,
                     "path table \"%s\": a new point was not stored (the insert changed %d "
                     "rows); its noise is not released",
                     st->name, sqlite3_changes(st->db));
    sqlite3_reset(st->ins);
  }
  return rc;
}

/* ---- sampling ---------------------------------------------------------------- */

/* Per action: its rows, the path (loaded), the batch draw, the new points
** written; vals[i] = g_{a_i}(x_i). */
static int noise_sample(const qn_cfg *c, const qn_points *p, qn_store *st, double *vals,
                        dprl_error *err) {
  size_t n = p->n, m = (size_t)c->n_actions;
  size_t *start = dprl_calloc(m + 1, sizeof *start);
  size_t *order = dprl_calloc(n ? n : 1, sizeof *order);
  double *xs = dprl_calloc(n ? n : 1, sizeof *xs), *out = dprl_calloc(n ? n : 1, sizeof *out);
  dprl_gp_point *fresh = st ? dprl_calloc(n ? n : 1, sizeof *fresh) : NULL;
  dprl_gp_path *path = dprl_gp_path_create(c->sigma, c->beta, c->grid, err);
  dprl_rng rng;
  int rc = DPRL_OK;
  memset(&rng, 0, sizeof rng);
  if (!path) rc = err->code;
  else if (!start || !order || !xs || !out || (st && !fresh)) rc = dprl_nomem(err);
  else if (!c->has_seed) rc = dprl_rng_init_secure(&rng, err);
  if (!rc) { /* counting sort of the rows by action, stable */
    for (size_t i = 0; i < n; i++) start[p->a[i] + 1]++;
    for (size_t a = 0; a < m; a++) start[a + 1] += start[a];
    size_t *fill = dprl_calloc(m, sizeof *fill);
    if (!fill) rc = dprl_nomem(err);
    else {
      for (size_t i = 0; i < n; i++) order[start[p->a[i]] + fill[p->a[i]]++] = i;
      dprl_free(fill);
    }
  }
  for (size_t a = 0; a < m && !rc; a++) {
    size_t lo = start[a], cnt = start[a + 1] - start[a];
    if (!cnt) continue;
    dprl_gp_point *old = NULL;
    size_t nold = 0;
    dprl_gp_path_reset(path);
    if (st && (rc = store_load(st, c, (int64_t)a, path, &old, &nold, err))) break;
    if (c->has_seed) /* one stream per action and per size of the stored path */
      dprl_rng_init_seeded(&rng, c->seed, (uint64_t)a | (uint64_t)nold << 21);
    for (size_t j = 0; j < cnt; j++) {
      size_t i = order[lo + j];
      xs[j] = (p->s[i] - c->lo) / (c->hi - c->lo);
    }
    rc = dprl_gp_path_sample_batch(path, &rng, xs, cnt, out, err);
    size_t nnew = 0;
    for (size_t j = 0; j < cnt && !rc; j++) {
      size_t i = order[lo + j];
      vals[i] = out[j];
      if (st && !stored(old, nold, xs[j])) { /* (state, g) of a new point */
        fresh[nnew].x = p->s[i];
        fresh[nnew].g = out[j];
        nnew++;
      }
    }
    dprl_free(old);
    if (!rc && nnew) rc = store_new(st, (int64_t)a, fresh, nnew, err);
  }
  dprl_rng_wipe(&rng);
  dprl_gp_path_free(path);
  dprl_free(start);
  dprl_free(order);
  dprl_free(xs);
  dprl_free(out);
  dprl_free(fresh);
  return rc;
}

/* After a failure: nothing of this call stays written, and the connection
** is left as it was found.  A transaction our SAVEPOINT opened is rolled
** back whole (a failed commit leaves it open, and later autocommit writes
** would then be lost on close); inside the caller's transaction, ROLLBACK
** TO and RELEASE (which cannot commit there). */
static void undo_savepoint(sqlite3 *db, int outermost, dprl_error *err) {
  int ok;
  if (outermost && !sqlite3_get_autocommit(db))
    ok = sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL) == SQLITE_OK;
  else
    ok = sqlite3_exec(db, "ROLLBACK TO dprl_q_noise", NULL, NULL, NULL) == SQLITE_OK &&
         sqlite3_exec(db, "RELEASE dprl_q_noise", NULL, NULL, NULL) == SQLITE_OK;
  if (!ok && err->code == DPRL_EINVAL) { /* say so: the caller must roll back */
    const char *tail = "; undoing it failed too: roll back the transaction";
    if (strlen(err->msg) + strlen(tail) < sizeof err->msg) strcat(err->msg, tail);
  }
}

/* The same with the path kept in the table c->path, atomically: a
** SAVEPOINT around everything written; any error rolls it back. */
static int noise_sample_stored(sqlite3 *db, const qn_cfg *c, const qn_points *p, double *vals,
                               dprl_error *err) {
  qn_store st;
  memset(&st, 0, sizeof st);
  st.db = db;
  st.name = c->path;
  /* Fails while another statement of this connection writes; the path can
  ** then still be read, and a call whose points are all stored succeeds.
  ** Outside a transaction our SAVEPOINT opens one, and releasing it
  ** commits: that can fail (a reader holds the lock), and then the
  ** connection must not be left inside it. */
  int outermost = sqlite3_get_autocommit(db);
  st.writable = sqlite3_exec(db, "SAVEPOINT dprl_q_noise", NULL, NULL, NULL) == SQLITE_OK;
  if (!st.writable) snprintf(st.why, sizeof st.why, "%s", sqlite3_errmsg(db));
  int rc = DPRL_OK;
  st.params = sqlite3_mprintf("%s_params", c->path);
  if (!st.params) rc = dprl_nomem(err);
  if (!rc) rc = store_open(&st, c, err);
  if (!rc) {
    char *l = sqlite3_mprintf("SELECT state, g FROM \"%w\" WHERE action = ?1", c->path);
    char *i = sqlite3_mprintf("INSERT INTO \"%w\"(action, state, g) VALUES (?1, ?2, ?3)",
                              c->path);
    if (!l || !i) rc = dprl_nomem(err);
    else if (sqlite3_prepare_v2(db, l, -1, &st.load, NULL) != SQLITE_OK)
      rc = db_fail(&st, "loading the stored points", err);
    else if (sqlite3_prepare_v2(db, i, -1, &st.ins, NULL) != SQLITE_OK)
      rc = db_fail(&st, "storing new points", err);
    sqlite3_free(l);
    sqlite3_free(i);
  }
  if (!rc) rc = noise_sample(c, p, &st, vals, err);
  sqlite3_finalize(st.load);
  sqlite3_finalize(st.ins);
  sqlite3_free(st.params);
  if (!st.writable) return rc;
  if (!rc && sqlite3_exec(db, "RELEASE dprl_q_noise", NULL, NULL, NULL) != SQLITE_OK)
    rc = db_fail(&st, "committing", err);
  if (rc) undo_savepoint(db, outermost, err);
  return rc;
}

static int noise_compute(sqlite3 *db, sqlite3_value **args, dprl_rows *out, char **pzErr) {
  dprl_error err = {0};
  qn_cfg c;
  qn_points p = {0};
  double *vals = NULL;
  memset(&c, 0, sizeof c);
  int rc = noise_options(args[1], &c, &err);
  if (rc) {
    dprl_free(c.path);
    return dprl_sql_vtab_error(pzErr, "dp_q_noise", &err);
  }
  rc = read_points(db, args[0], &c, &p, &err, pzErr);
  if (!rc && !(vals = dprl_calloc(p.n ? p.n : 1, sizeof *vals))) rc = SQLITE_NOMEM;
  if (!rc && (c.path ? noise_sample_stored(db, &c, &p, vals, &err)
                     : noise_sample(&c, &p, NULL, vals, &err)))
    rc = dprl_sql_vtab_error(pzErr, "dp_q_noise", &err);
  for (size_t i = 0; i < p.n && !rc; i++) {
    /* q on the public grid, then the grid-valued noise: nothing of q's
    ** low bits survives (ALGORITHMS.md section 6). */
    double qr = c.grid * (double)llround(p.q[i] / c.grid);
    if (dprl_rows_add(out)) rc = SQLITE_NOMEM;
    else {
      dprl_rows_double(out, 0, p.s[i]);
      dprl_rows_int(out, 1, p.a[i]);
      dprl_rows_double(out, 2, p.q[i]);
      dprl_rows_double(out, 3, qr + vals[i]);
    }
  }
  dprl_free(vals);
  qn_points_free(&p);
  dprl_free(c.path);
  return rc;
}

static const char *const noise_args[] = {"points_sql", "options"};

static const dprl_tvf_spec noise_spec = {
    "dp_q_noise",
    "CREATE TABLE x(state REAL, action INTEGER, q REAL, noisy_q REAL,"
    " points_sql HIDDEN, options HIDDEN)",
    4, 2, 2, noise_args, noise_compute, 1 /* writes the path table */};

/* ---- dp_q_learn(s, a, r, s_next, options) ----------------------------------- */

static const char *const learn_keys[] = {
    "n_actions", "gamma", "lr",      "T",     "B",          "J",     "K",
    "features",  "lo",    "hi",      "rmin",  "rmax",       "k",     "epsilon",
    "delta",     "accountant", "sigma", "beta", "seed",     NULL};

typedef struct ql_cfg {
  dprl_q_learn_opts lo;
  q_cal cal;
  dprl_q_theta_noise th; /* the noise that makes theta private */
  int explicit_sigma; /* sigma given: no calibration, not private */
  int has_seed;
  uint64_t seed;
} ql_cfg;

static int learn_options(const char *text, size_t len, ql_cfg *c, dprl_error *err) {
  const char *fn = "dp_q_learn";
  dprl_options o;
  int64_t m = 0;
  memset(c, 0, sizeof *c);
  int rc = dprl_options_open(&o, fn, text, len, learn_keys, err);
  if (!rc) rc = dprl_opt_int(&o, "n_actions", 1, 0, DPRL_CLOSED(1, 1024), &m);
  if (!rc) rc = dprl_opt_number(&o, "gamma", 1, 0, DPRL_CLOSED_OPEN(0, 1), &c->lo.gamma);
  if (!rc) rc = read_interval(&o, &c->cal.feat.lo, &c->cal.feat.hi);
  if (!rc) rc = read_approximator(&o, 0, &c->cal);
  if (!rc) rc = dprl_opt_seed(&o, &c->has_seed, &c->seed);
  if (!rc && dprl_opt_has(&o, "sigma")) {
    static const char *const calib_keys[] = {"epsilon", "delta", "k", "accountant", NULL};
    c->explicit_sigma = 1;
    for (const char *const *k = calib_keys; *k && !rc; k++)
      if (dprl_opt_has(&o, *k))
        rc = dprl_fail(err, DPRL_EINVAL,
                       "%s: option %s is a calibration input; give either sigma (and beta) "
                       "or epsilon, delta and k, not both", fn, *k);
    if (!rc) rc = read_schedule(&o, &c->cal);
    if (!rc) rc = dprl_opt_number(&o, "lr", 1, 0, DPRL_POSITIVE, &c->cal.lr);
    if (!rc) rc = dprl_opt_number(&o, "sigma", 1, 0, DPRL_NONNEG, &c->lo.sigma);
    if (!rc) rc = dprl_opt_number(&o, "beta", c->lo.sigma > 0, 1, DPRL_POSITIVE, &c->lo.beta);
  } else if (!rc) {
    if (dprl_opt_has(&o, "beta"))
      rc = dprl_fail(err, DPRL_EINVAL,
                     "%s: option beta goes with sigma; without sigma both come from the "
                     "calibration", fn);
    if (!rc) rc = read_privacy(&o, 1, &c->cal);
    if (!rc) rc = calibrate(fn, &c->cal, err);
    if (!rc) {
      c->lo.sigma = c->cal.out.sigma;
      c->lo.beta = c->cal.out.beta;
    }
    /* Theorem 5 covers Q + g, not theta: theta gets its own noise on every
    ** update, calibrated from public values only (ALGORITHMS.md §10). */
    if (!rc) {
      double sens = dprl_q_theta_sensitivity(&c->cal.feat, c->cal.lr, c->cal.rmin, c->cal.rmax);
      dprl_error terr = {0};
      if (dprl_q_theta_calibrate(c->cal.epsilon, c->cal.delta, c->cal.T / c->cal.B, sens,
                                 (size_t)m * (size_t)c->cal.feat.K, &c->th, &terr))
        rc = dprl_fail(err, terr.code, "%s: %s", fn, terr.msg);
    }
    if (!rc) {
      c->lo.sigma_theta = c->th.sigma;
      c->lo.grid_theta = c->th.grid;
    }
  }
  dprl_options_close(&o);
  c->lo.feat = c->cal.feat;
  c->lo.m = (int)m;
  c->lo.lr = c->cal.lr;
  c->lo.T = c->cal.T;
  c->lo.B = c->cal.B;
  c->lo.J = c->cal.J;
  c->lo.rmin = c->cal.rmin;
  c->lo.rmax = c->cal.rmax;
  return rc;
}

typedef struct ql_agg {
  int failed;
  ql_cfg cfg;
  dprl_sql_pinned options;
  double *s, *r, *sn;
  int64_t *a;
  size_t n, cap;
} ql_agg;

static void ql_agg_free(ql_agg *g) {
  dprl_sql_unpin(&g->options);
  dprl_free(g->s);
  dprl_free(g->r);
  dprl_free(g->sn);
  dprl_free(g->a);
}

static int ql_push(ql_agg *g, double s, int64_t a, double r, double sn, dprl_error *err) {
  if (g->n == g->cap) {
    size_t nc = g->cap ? 2 * g->cap : 1024;
    void **arrays[] = {(void **)&g->s, (void **)&g->r, (void **)&g->sn, (void **)&g->a};
    const size_t sizes[] = {sizeof *g->s, sizeof *g->r, sizeof *g->sn, sizeof *g->a};
    if (grow_parallel(nc, 4, arrays, sizes, err)) return DPRL_ENOMEM;
    g->cap = nc;
  }
  g->s[g->n] = s;
  g->a[g->n] = a;
  g->r[g->n] = r;
  g->sn[g->n] = sn;
  g->n++;
  return DPRL_OK;
}

static int ql_row(ql_agg *g, sqlite3_value **argv, dprl_error *err) {
  const dprl_q_learn_opts *o = &g->cfg.lo;
  double s, r, sn;
  int64_t a;
  int rc;
  if ((rc = dprl_sql_real(argv[0], "s", &s, err)) ||
      (rc = check_state(s, o->feat.lo, o->feat.hi, "s", err)) ||
      (rc = dprl_sql_int(argv[1], "a", &a, err)) || (rc = check_action(a, o->m, "a", err)) ||
      (rc = dprl_sql_real(argv[2], "r", &r, err)) ||
      (rc = dprl_sql_real(argv[3], "s_next", &sn, err)) ||
      (rc = check_state(sn, o->feat.lo, o->feat.hi, "s_next", err)))
    return rc;
  return ql_push(g, s, a, r, sn, err);
}

static void learn_step(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  const char *fn = "dp_q_learn";
  ql_agg **slot = sqlite3_aggregate_context(ctx, sizeof *slot);
  dprl_error err;
  err.code = DPRL_OK;
  err.msg[0] = 0;
  int rc = DPRL_OK;
  (void)argc;
  if (!slot) {
    sqlite3_result_error_nomem(ctx);
    return;
  }
  if (*slot && (*slot)->failed) return;
  const char *text = (const char *)sqlite3_value_text(argv[4]);
  int len = sqlite3_value_bytes(argv[4]);
  if (!text && sqlite3_value_type(argv[4]) != SQLITE_NULL) {
    sqlite3_result_error_nomem(ctx);
    return;
  }
  if (!*slot) {
    ql_agg *g = *slot = sqlite3_malloc(sizeof *g);
    if (!g) {
      sqlite3_result_error_nomem(ctx);
      return;
    }
    memset(g, 0, sizeof *g);
    rc = learn_options(text, (size_t)len, &g->cfg, &err);
    if (!rc) rc = dprl_sql_pin_options(&g->options, argv[4], &err);
  } else {
    rc = dprl_sql_same_options(&(*slot)->options, argv[4], &err);
  }
  if (!rc) {
    rc = ql_row(*slot, argv, &err);
    say_row(&err, "the transitions", (*slot)->n + 1);
  }
  if (rc) {
    (*slot)->failed = 1;
    dprl_sql_result_error(ctx, fn, &err);
  }
}

/* The calibration of the functional noise (Theorem 5), as an object. */
static void put_paths(dprl_buf *b, const ql_cfg *c) {
  const dprl_q_learn_opts *o = &c->lo;
  put_key(b, "paths");
  dprl_buf_puts(b, "{\"role\":\"the functional noise of Algorithm 1 (Theorem 5 covers Q + g); "
                   "theta's guarantee does not rest on it\"");
  put_num(b, "sigma", o->sigma);
  put_num(b, "beta", o->beta);
  if (o->sigma > 0) put_num(b, "grid", dprl_grid_for(o->sigma));
  if (!c->explicit_sigma) {
    const dprl_q_calib_out *q = &c->cal.out;
    put_key(b, "accountant");
    dprl_json_put_string(b, q->accountant);
    dprl_buf_printf(b, ",\"proven\":%s", q->proven ? "true" : "false");
    put_num(b, "delta_total", q->delta_total);
    put_num(b, "k", c->cal.k);
    put_num(b, "L", c->cal.L);
    put_num(b, "v", q->v);
    put_num(b, "C", q->C);
    put_num(b, "mu", q->mu);
    put_num(b, "margin", q->margin);
    if (!q->proven || !fresh_paths(&c->cal)) {
      put_key(b, "note");
      dprl_json_put_string(b, !q->proven ? q->note : reuse_note);
    }
  }
  dprl_buf_puts(b, "}");
}

/* Private: theta (noisy), the public parameters, the public noise levels.
** Never the number of transitions or anything else computed from data. */
static void learn_json(const ql_agg *g, const double *theta, dprl_buf *b) {
  const ql_cfg *c = &g->cfg;
  const dprl_q_learn_opts *o = &c->lo;
  int private_ = !c->explicit_sigma && !c->has_seed;
  dprl_buf_puts(b, "{\"mechanism\":\"dp_q_learn\"");
  dprl_buf_printf(b, ",\"private\":%s", private_ ? "true" : "false");
  if (c->has_seed) dprl_buf_puts(b, ",\"seeded\":true");
  if (!c->explicit_sigma) {
    put_num(b, "epsilon", c->cal.epsilon);
    put_num(b, "delta", c->cal.delta);
    put_key(b, "theta_noise");
    dprl_buf_puts(b, "{\"accountant\":\"gdp\"");
    put_num(b, "sigma", c->th.sigma);
    put_num(b, "grid", c->th.grid);
    put_num(b, "sensitivity", c->th.sens);
    put_num(b, "mu", c->th.mu);
    put_int(b, "updates", o->T / o->B);
    dprl_buf_puts(b, "}");
  }
  put_paths(b, c);
  put_int(b, "T", o->T);
  put_int(b, "B", o->B);
  put_int(b, "J", o->J);
  put_num(b, "lr", o->lr);
  put_int(b, "n_actions", o->m);
  put_num(b, "gamma", o->gamma);
  put_num(b, "rmin", o->rmin);
  put_num(b, "rmax", o->rmax);
  put_key(b, "features");
  dprl_buf_printf(b, "{\"kind\":\"%s\",\"K\":%d", feat_choices[o->feat.kind], o->feat.K);
  put_num(b, "lo", o->feat.lo);
  put_num(b, "hi", o->feat.hi);
  dprl_buf_puts(b, "}");
  put_key(b, "theta");
  dprl_buf_puts(b, "[");
  for (int a = 0; a < o->m; a++) {
    if (a) dprl_buf_puts(b, ",");
    dprl_json_put_double_array(b, theta + (size_t)a * (size_t)o->feat.K, (size_t)o->feat.K);
  }
  dprl_buf_puts(b, "]");
  if (!private_) {
    put_int(b, "transitions", (int64_t)g->n); /* a count: diagnostic only */
    put_key(b, "note");
    dprl_json_put_string(
        b, c->explicit_sigma
               ? "sigma was given, not calibrated: no privacy guarantee is claimed"
               : "seeded: the noise is reproducible from the seed, so the result is not "
                 "private (for tests and examples)");
  }
  dprl_buf_puts(b, "}");
}

static void learn_final(sqlite3_context *ctx) {
  const char *fn = "dp_q_learn";
  ql_agg **slot = sqlite3_aggregate_context(ctx, 0);
  if (!slot || !*slot) {
    sqlite3_result_null(ctx);
    return;
  }
  ql_agg *g = *slot;
  if (!g->failed) {
    dprl_error err = {0};
    dprl_buf b = {0};
    dprl_rng rng;
    const dprl_q_learn_opts *o = &g->cfg.lo;
    double *theta = dprl_calloc((size_t)o->m * (size_t)o->feat.K, sizeof *theta);
    int rc = theta ? DPRL_OK : dprl_nomem(&err);
    memset(&rng, 0, sizeof rng);
    if (!rc) {
      if (g->cfg.has_seed) dprl_rng_init_seeded(&rng, g->cfg.seed, 0);
      else rc = dprl_rng_init_secure(&rng, &err);
    }
    dprl_q_transitions d = {g->s, g->r, g->sn, g->a, g->n};
    if (!rc) rc = dprl_q_learn(o, &d, &rng, theta, NULL, &err);
    dprl_rng_wipe(&rng);
    if (!rc) learn_json(g, theta, &b);
    if (rc) dprl_sql_result_error(ctx, fn, &err);
    else if (b.oom) sqlite3_result_error_nomem(ctx);
    else sqlite3_result_text(ctx, b.data, (int)b.len, SQLITE_TRANSIENT);
    dprl_buf_free(&b);
    dprl_free(theta);
  }
  ql_agg_free(g);
  sqlite3_free(g);
  *slot = NULL;
}

/* ---- dp_q_value(model, state, action) ---------------------------------------- */

/* A model (dp_q_learn's JSON) parsed once per statement (auxdata). */
typedef struct q_model {
  dprl_q_features feat;
  int m;
  double *theta;
} q_model;

static void q_model_free(void *p) {
  q_model *q = p;
  if (!q) return;
  dprl_free(q->theta);
  dprl_free(q);
}

static int model_bad(dprl_error *err, const char *what) {
  return dprl_fail(err, DPRL_EINVAL, "model must be a result of dp_q_learn: %s", what);
}

static int model_number(const dprl_json *obj, const char *key, double *out, dprl_error *err) {
  const dprl_json *v = dprl_json_get(obj, key);
  if (!v || v->type != DPRL_JSON_NUMBER) {
    char what[80];
    snprintf(what, sizeof what, "features.%s must be a number", key);
    return model_bad(err, what);
  }
  *out = v->num;
  return DPRL_OK;
}

static q_model *model_parse(sqlite3_value *v, dprl_error *err) {
  const char *text = (const char *)sqlite3_value_text(v);
  if (sqlite3_value_type(v) != SQLITE_TEXT) {
    char got[80];
    dprl_sql_describe(v, got, sizeof got);
    dprl_fail(err, DPRL_EINVAL, "model must be the JSON text of a dp_q_learn result, got %s",
              got);
    return NULL;
  }
  if (!text) {
    dprl_nomem(err);
    return NULL;
  }
  dprl_error perr = {0};
  dprl_json *root = dprl_json_parse(text, (size_t)sqlite3_value_bytes(v), &perr);
  if (!root) {
    if (perr.code == DPRL_ENOMEM) dprl_nomem(err);
    else dprl_fail(err, DPRL_EINVAL, "model: %s", perr.msg);
    return NULL;
  }
  q_model *q = dprl_calloc(1, sizeof *q);
  const dprl_json *f = root->type == DPRL_JSON_OBJECT ? dprl_json_get(root, "features") : NULL;
  const dprl_json *th = root->type == DPRL_JSON_OBJECT ? dprl_json_get(root, "theta") : NULL;
  const dprl_json *kind = f && f->type == DPRL_JSON_OBJECT ? dprl_json_get(f, "kind") : NULL;
  double K = 0;
  int rc = DPRL_OK;
  if (!q) rc = dprl_nomem(err);
  else if (!f || f->type != DPRL_JSON_OBJECT || !th || th->type != DPRL_JSON_ARRAY ||
           th->n < 1)
    rc = model_bad(err, "it needs \"features\" and \"theta\"");
  else if (!kind || kind->type != DPRL_JSON_STRING ||
           (strcmp(kind->str, "tent") && strcmp(kind->str, "rbf")))
    rc = model_bad(err, "features.kind must be \"tent\" or \"rbf\"");
  else if (!(rc = model_number(f, "K", &K, err)) && !(rc = model_number(f, "lo", &q->feat.lo, err)) &&
           !(rc = model_number(f, "hi", &q->feat.hi, err))) {
    q->feat.kind = strcmp(kind->str, "rbf") ? DPRL_QFEAT_TENT : DPRL_QFEAT_RBF;
    q->feat.K = K >= 2 && K <= MAX_K && K == floor(K) ? (int)K : 0;
    q->m = (int)th->n;
    dprl_error ferr = {0};
    if (dprl_q_features_check(&q->feat, &ferr)) rc = model_bad(err, ferr.msg);
  }
  if (!rc && !(q->theta = dprl_calloc((size_t)q->m * (size_t)q->feat.K, sizeof *q->theta)))
    rc = dprl_nomem(err);
  for (int a = 0; a < (q ? q->m : 0) && !rc; a++) {
    const dprl_json *row = th->items[a];
    if (row->type != DPRL_JSON_ARRAY || row->n != (size_t)q->feat.K) {
      rc = model_bad(err, "theta must hold one array of K numbers per action");
      break;
    }
    for (int i = 0; i < q->feat.K && !rc; i++) {
      if (row->items[i]->type != DPRL_JSON_NUMBER)
        rc = model_bad(err, "theta must hold one array of K numbers per action");
      else q->theta[(size_t)a * (size_t)q->feat.K + (size_t)i] = row->items[i]->num;
    }
  }
  dprl_json_free(root);
  if (rc) {
    q_model_free(q);
    return NULL;
  }
  return q;
}

static void value_fn(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  const char *fn = "dp_q_value";
  dprl_error err = {0};
  (void)argc;
  q_model *q = sqlite3_get_auxdata(ctx, 0);
  int fresh = !q;
  if (fresh && !(q = model_parse(argv[0], &err))) {
    dprl_sql_result_error(ctx, fn, &err);
    return;
  }
  double s = 0;
  int64_t a = 0;
  int rc = dprl_sql_real(argv[1], "state", &s, &err);
  if (!rc) rc = check_state(s, q->feat.lo, q->feat.hi, "state", &err);
  if (!rc) rc = dprl_sql_int(argv[2], "action", &a, &err);
  if (!rc) rc = check_action(a, q->m, "action", &err);
  if (rc) dprl_sql_result_error(ctx, fn, &err);
  else
    sqlite3_result_double(ctx, dprl_q_value(&q->feat, q->theta + (size_t)a * (size_t)q->feat.K,
                                            dprl_q_rescale(&q->feat, s)));
  /* Keep the parsed model for the next row (SQLite frees it if it cannot). */
  if (fresh) sqlite3_set_auxdata(ctx, 0, q, q_model_free);
}

/* ---- registration ------------------------------------------------------------- */

int dprl_register_q(sqlite3 *db) {
  int rc = sqlite3_create_function_v2(db, "dp_q_calibrate", 1,
                                      SQLITE_UTF8 | SQLITE_DETERMINISTIC | SQLITE_INNOCUOUS,
                                      NULL, calibrate_fn, NULL, NULL, NULL);
  if (rc == SQLITE_OK) /* noisy: never SQLITE_DETERMINISTIC */
    rc = sqlite3_create_function_v2(db, "dp_q_learn", 5, SQLITE_UTF8 | SQLITE_INNOCUOUS, NULL,
                                    NULL, learn_step, learn_final, NULL);
  if (rc == SQLITE_OK)
    rc = sqlite3_create_function_v2(db, "dp_q_value", 3,
                                    SQLITE_UTF8 | SQLITE_DETERMINISTIC | SQLITE_INNOCUOUS, NULL,
                                    value_fn, NULL, NULL, NULL);
  if (rc == SQLITE_OK) rc = dprl_tvf_register(db, &noise_spec);
  return rc;
}
