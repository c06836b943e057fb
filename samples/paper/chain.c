/*
** chain.c: Balle, Gomrokchi & Precup (ICML 2016), section 6, on the chain,
** through SQL.  For every run and batch size it simulates a fresh batch of
** episodes, inserts them into an in-memory SQLite table, and asks dprl for
** the estimates the paper compares, e.g.
**
**   SELECT dp_lsw(episode, t, state, reward,
**     '{"n_states": 40, "gamma": 0.99, "rmin": 0, "rmax": 1, "epsilon": 0.1, "delta": 0.1,
**       "features": {"aggregate": 2}, "grouped": true,
**       "release": "diagnostic", "seed": 1234}') FROM steps;
**
** "diagnostic" returns both theta_exact (LSW, the non-private estimate) and
** theta (DP-LSW, the noisy release), so one call gives two of the methods.
** Each private method runs under both of dprl's perturbations: the paper's
** output perturbation (the default) and "perturb": "statistics" (Gaussian
** noise on the per-state statistics, ext/ALGORITHMS.md section 9).
** Each value estimate is compared with V from the Bellman equation, solved
** here, and one CSV row per (features, method, batch size, run) goes to
** stdout:  features,method,episodes,run,rmse,sigma,lambda
**
** The chain (paper, section 6): states 0..N-1; in each state the agent
** stays with probability p, else advances one state; advancing from N-1
** reaches the absorbing end, with reward 1, and ends the episode.  Every
** other reward is 0.  The absorbing end is not one of the N logged states
** (see README.md for why).  The start state is uniform on 0..N-1 (the
** paper only says "an initial state distribution"); -s first starts in 0.
**
** usage: chain [-e dprl.so] [-r first:last] [-m m1,m2,...] [-c lambda_c]
**              [-L l1,l2,...] [-s uniform|first] [-V]
**   -r runs first..last-1 (default 0:20); -m batch sizes (default 100 ..
**   100000); -c: LSL and DP-LSL use lambda = c sqrt(m) (paper: "proportional
**   to sqrt(m)"; default c = 100); -L: instead, LSL and DP-LSL only, tabular,
**   at each fixed lambda of the list; -V prints V(s) and exits.
** Each SELECT runs all the aggregates of one batch in one table scan, e.g.
**   SELECT dp_lsw(..., '{... "seed": 17}'), dp_lsw(..., '{... "fmax": 1}'),
**          dp_lsw(..., '{... "fmax": 1, "perturb": "statistics"}'),
**          dp_lsl(..., '{... "lambda": 1000}'), ... FROM steps;
*/
#include <math.h>
#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define N 40      /* states */
#define P 0.5     /* probability of staying */
#define GAMMA 0.99
#define EPSILON 0.1
#define DELTA 0.1
#define MAX_LIST 16   /* batch sizes (-m) or lambdas (-L) */
#define SEED_RADIX 32 /* mixed radix of the noise seeds (noise_seed) */

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void die(sqlite3 *db, const char *what) {
  fprintf(stderr, "chain: %s: %s\n", what, db ? sqlite3_errmsg(db) : "");
  exit(1);
}

static void exec(sqlite3 *db, const char *sql) {
  char *err = NULL;
  if (sqlite3_exec(db, sql, NULL, NULL, &err) != SQLITE_OK) {
    fprintf(stderr, "chain: %s\n  in: %s\n", err, sql);
    exit(1);
  }
}

/* ---- our own PRNG for the data: splitmix64 seeds xoshiro256** ---------- */

typedef struct { uint64_t s[4]; } prng;

static uint64_t splitmix64(uint64_t *x) {
  uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

static uint64_t next64(prng *g) {
  uint64_t *s = g->s, r = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
  s[2] ^= s[0];
  s[3] ^= s[1];
  s[1] ^= s[2];
  s[0] ^= s[3];
  s[2] ^= t;
  s[3] = rotl(s[3], 45);
  return r;
}

static void prng_seed(prng *g, uint64_t run, uint64_t m) {
  uint64_t x = 0x64707231ull ^ (run << 40) ^ m; /* one stream per (run, m) */
  for (int i = 0; i < 4; i++) g->s[i] = splitmix64(&x);
}

static double uniform01(prng *g) { return (double)(next64(g) >> 11) * 0x1p-53; }

/* ---- exact values: solve (I - gamma P) V = r by Gaussian elimination ---- */

static void exact_values(double V[N]) {
  static double A[N][N + 1]; /* augmented [I - gamma P | r] */
  memset(A, 0, sizeof A);
  for (int s = 0; s < N; s++) {
    A[s][s] = 1.0 - GAMMA * P;
    if (s + 1 < N) A[s][s + 1] = -GAMMA * (1.0 - P); /* next state's value */
    A[s][N] = (s + 1 == N) ? (1.0 - P) : 0.0;        /* reward 1 at the end */
  }
  for (int c = 0; c < N; c++) { /* partial pivoting, then eliminate */
    int piv = c;
    for (int r = c + 1; r < N; r++)
      if (fabs(A[r][c]) > fabs(A[piv][c])) piv = r;
    for (int k = 0; k <= N; k++) {
      double tmp = A[c][k];
      A[c][k] = A[piv][k];
      A[piv][k] = tmp;
    }
    for (int r = 0; r < N; r++) {
      if (r == c || A[r][c] == 0.0) continue;
      double f = A[r][c] / A[c][c];
      for (int k = c; k <= N; k++) A[r][k] -= f * A[c][k];
    }
  }
  for (int s = 0; s < N; s++) V[s] = A[s][N] / A[s][s];
  /* Cross-check with the closed form: q = (1-p)/(1-gamma p) per advance. */
  double q = (1.0 - P) / (1.0 - GAMMA * P);
  for (int s = 0; s < N; s++) {
    double closed = q * pow(GAMMA * q, N - 1 - s);
    if (fabs(V[s] - closed) > 1e-12) {
      fprintf(stderr, "chain: V(%d) = %.17g, closed form %.17g\n", s, V[s], closed);
      exit(1);
    }
  }
}

/* ---- one batch of episodes into the table steps ------------------------ */

/* Rows go in 16 at a time through one prepared multi-row INSERT (2.5 times
** faster than one row per statement), the remainder one at a time. */
#define CHUNK 16

typedef struct {
  sqlite3 *db;
  sqlite3_stmt *one, *many;
  int64_t buf[CHUNK][4];
  int n;
} inserter;

static void insert_rows(inserter *w, sqlite3_stmt *st, int n) {
  for (int i = 0; i < n; i++)
    for (int j = 0; j < 4; j++) sqlite3_bind_int64(st, 4 * i + j + 1, w->buf[i][j]);
  if (sqlite3_step(st) != SQLITE_DONE) die(w->db, "insert");
  sqlite3_reset(st);
}

static void insert_row(inserter *w, int64_t e, int64_t t, int s, int r) {
  int64_t *row = w->buf[w->n++];
  row[0] = e, row[1] = t, row[2] = s, row[3] = r;
  if (w->n == CHUNK) insert_rows(w, w->many, CHUNK), w->n = 0;
}

static void insert_flush(inserter *w) {
  for (int i = 0; i < w->n; i++) {
    memcpy(w->buf[0], w->buf[i], sizeof w->buf[0]);
    insert_rows(w, w->one, 1);
  }
  w->n = 0;
}

typedef struct {
  double fsum[N];     /* our own first-visit statistics, to check dprl's LSW */
  int64_t visits[N];
  int64_t rows;
} batch_stats;

/* One episode: rows (e, t, s, r) in t order; returns its number of steps. */
static int64_t episode(inserter *w, prng *g, int64_t e, int start_first,
                       batch_stats *b) {
  int s = start_first ? 0 : (int)(((next64(g) >> 32) * N) >> 32);
  int s0 = s;
  int64_t t = 0, first[N];
  first[s] = 0;
  for (;;) {
    int advance = uniform01(g) >= P;
    insert_row(w, e, t, s, advance && s == N - 1); /* reward 1 at the end */
    t++;
    if (!advance) continue;
    if (s == N - 1) break;
    first[++s] = t;
  }
  /* The only reward is at the last step t-1: F(s) = gamma^(t-1-first[s]). */
  for (int v = s0; v < N; v++) {
    b->fsum[v] += pow(GAMMA, (double)(t - 1 - first[v]));
    b->visits[v]++;
  }
  return t;
}

/* A fresh batch of m episodes for (run, m): the same (run, m) always gives
** the same batch, whichever estimators are run on it. */
static void make_batch(sqlite3 *db, int run, int64_t m, int start_first,
                       batch_stats *b) {
  char sql[CHUNK * 10 + 64] = "INSERT INTO steps VALUES (?,?,?,?)";
  inserter w = {.db = db};
  prng g;
  prng_seed(&g, (uint64_t)run, (uint64_t)m);
  memset(b, 0, sizeof *b);
  exec(db, "DROP TABLE IF EXISTS steps;"
           "CREATE TABLE steps(episode INTEGER, t INTEGER, state INTEGER,"
           " reward INTEGER); BEGIN");
  if (sqlite3_prepare_v2(db, sql, -1, &w.one, NULL) != SQLITE_OK) die(db, sql);
  for (int i = 1; i < CHUNK; i++) strcat(sql, ",(?,?,?,?)");
  if (sqlite3_prepare_v2(db, sql, -1, &w.many, NULL) != SQLITE_OK) die(db, sql);
  for (int64_t e = 0; e < m; e++) b->rows += episode(&w, &g, e, start_first, b);
  insert_flush(&w);
  sqlite3_finalize(w.one);
  sqlite3_finalize(w.many);
  exec(db, "COMMIT");
}

/* ---- dp_lsw / dp_lsl calls: several aggregates in one scan ------------- */

/* Per batch: a group of GROUP calls (output, output with fmax, statistics
** with fmax) for each lambda of -L, or for each of the 4 (features, method)
** pairs. */
#define GROUP 3
#define MAX_CALLS (GROUP * MAX_LIST)

typedef struct {
  int lsl, agg, fmax; /* dp_lsl?  {"aggregate": 2}?  "fmax": 1? */
  int stats;          /* "perturb": "statistics"? (else the output perturbation) */
  double lambda;      /* dp_lsl only */
  int64_t seed;       /* noise seed: every call its own */
} call_spec;

typedef struct {
  double values[N];      /* private: Phi theta, as released ("values") */
  double theta_exact[N]; /* non-private LSW / LSL (diagnostic) */
  double visits[N];      /* statistics only: exact_visits (diagnostic) */
  double sigma;          /* output: sigma_applied (diagnostic); statistics:
                            the public noise scale "sigma" */
  int d;
} release;

static int json_array(sqlite3 *db, const char *json, const char *path,
                      double *out, int cap) {
  sqlite3_stmt *st;
  int n = 0;
  if (sqlite3_prepare_v2(db, "SELECT value FROM json_each(?1, ?2)", -1, &st,
                         NULL) != SQLITE_OK)
    die(db, "prepare json_each");
  sqlite3_bind_text(st, 1, json, -1, SQLITE_STATIC);
  sqlite3_bind_text(st, 2, path, -1, SQLITE_STATIC);
  while (sqlite3_step(st) == SQLITE_ROW && n < cap)
    out[n++] = sqlite3_column_double(st, 0);
  sqlite3_finalize(st);
  return n;
}

/* A release's sigma: "sigma_applied" for the output perturbation (the scale
** of the noise actually added), "sigma" for the statistics perturbation (it
** has no sigma_applied; its sigma is public).  Each key must be present. */
static void parse_release(sqlite3 *db, const char *json, const call_spec *c,
                          release *r) {
  sqlite3_stmt *st;
  const char *key = c->stats ? "$.sigma" : "$.sigma_applied";
  if (!json) die(db, "NULL result");
  if (json_array(db, json, "$.values", r->values, N) != N) die(db, "values");
  r->d = json_array(db, json, "$.theta_exact", r->theta_exact, N);
  if (r->d != (c->agg ? N / 2 : N)) die(db, "theta_exact");
  if (c->stats && json_array(db, json, "$.exact_visits", r->visits, N) != N)
    die(db, "exact_visits");
  if (sqlite3_prepare_v2(db, "SELECT json_type(?1, ?2), json_extract(?1, ?2)", -1,
                         &st, NULL) != SQLITE_OK)
    die(db, "prepare json_extract");
  sqlite3_bind_text(st, 1, json, -1, SQLITE_STATIC);
  sqlite3_bind_text(st, 2, key, -1, SQLITE_STATIC);
  if (sqlite3_step(st) != SQLITE_ROW || sqlite3_column_type(st, 0) == SQLITE_NULL) {
    fprintf(stderr, "chain: no %s in %s\n", key + 2, json);
    exit(1);
  }
  r->sigma = sqlite3_column_double(st, 1);
  sqlite3_finalize(st);
}

/* SELECT dp_lsw(...), dp_lsl(...), ... FROM steps: one table scan feeds all
** n aggregates.  "grouped": the table is stored in episode order (rowid
** order = insertion order), so dprl streams each episode. */
static void run_calls(sqlite3 *db, const call_spec *c, int n, release *out) {
  static char sql[MAX_CALLS * 360];
  sqlite3_stmt *st;
  size_t len = (size_t)snprintf(sql, sizeof sql, "SELECT ");
  for (int i = 0; i < n && len < sizeof sql; i++) {
    char lam[64] = "";
    if (c[i].lsl) snprintf(lam, sizeof lam, ", \"lambda\": %.17g", c[i].lambda);
    len += (size_t)snprintf(
        sql + len, sizeof sql - len,
        "%s%s(episode, t, state, reward, '{\"n_states\": %d, \"gamma\": %g, "
        "\"rmin\": 0, \"rmax\": 1, \"epsilon\": %g, \"delta\": %g, \"features\": %s, \"grouped\": true, "
        "\"release\": \"diagnostic\", \"seed\": %lld%s%s%s}')",
        i ? ", " : "", c[i].lsl ? "dp_lsl" : "dp_lsw", N, GAMMA, EPSILON, DELTA,
        c[i].agg ? "{\"aggregate\": 2}" : "\"tabular\"", (long long)c[i].seed,
        c[i].fmax ? ", \"fmax\": 1" : "", lam,
        c[i].stats ? ", \"perturb\": \"statistics\"" : "");
  }
  if (len < sizeof sql) len += (size_t)snprintf(sql + len, sizeof sql - len, " FROM steps");
  if (len >= sizeof sql) {
    fprintf(stderr, "chain: SQL of %d calls longer than %zu bytes\n", n, sizeof sql);
    exit(1);
  }
  if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) die(db, sql);
  if (sqlite3_step(st) != SQLITE_ROW) die(db, sql);
  for (int i = 0; i < n; i++)
    parse_release(db, (const char *)sqlite3_column_text(st, i), &c[i], &out[i]);
  sqlite3_finalize(st);
}

/* ---- errors against V ---------------------------------------------------- */

/* Root mean squared error over the N states (paper: "average root mean
** squared error over the state space"; averaged over runs afterwards). */
static double rmse(const double *est, const double V[N]) {
  double ss = 0;
  for (int s = 0; s < N; s++) ss += (est[s] - V[s]) * (est[s] - V[s]);
  return sqrt(ss / N);
}

/* Phi theta for tabular (d = N) or adjacent pairs (d = N/2). */
static void phi_theta(const double *theta, int d, double out[N]) {
  for (int s = 0; s < N; s++) out[s] = theta[d == N ? s : s / 2];
}

static void check_lsw(const release *r, const batch_stats *b) {
  for (int s = 0; s < N; s++) {
    double mine = b->visits[s] ? b->fsum[s] / (double)b->visits[s] : 0.0;
    if (fabs(r->theta_exact[s] - mine) > 1e-9 * (1.0 + fabs(mine))) {
      fprintf(stderr, "chain: LSW(%d) = %.17g from dprl, %.17g here\n", s,
              r->theta_exact[s], mine);
      exit(1);
    }
  }
}

/* A group of three calls of the same method (output perturbation without
** and with fmax = 1, statistics perturbation with fmax = 1) gives four rows:
** the exact estimate (LSW or LSL), then the three private ones.  The default
** bound on the returns is rmax/(1-gamma) = 100. */
static void emit_group(sqlite3 *db, const call_spec *c, const release *r,
                       int64_t m, int run, const double V[N], const batch_stats *b) {
  static const char *names[2][1 + GROUP] = {
      {"LSW", "DP-LSW", "DP-LSW (fmax=1)", "DP-LSW stats (fmax=1)"},
      {"LSL", "DP-LSL", "DP-LSL (fmax=1)", "DP-LSL stats (fmax=1)"}};
  const char *feat = c->agg ? "aggregate2" : "tabular";
  const char *const *nm = names[c->lsl];
  double est[N], lam = c->lsl ? c->lambda : 0.0;
  for (int j = 0; j < r[0].d; j++) { /* fmax = 1 clamps nothing on this chain */
    double a = r[0].theta_exact[j];
    if (a != r[1].theta_exact[j]) die(db, "fmax changed theta_exact");
    if (fabs(a - r[2].theta_exact[j]) > 1e-12 * (1.0 + fabs(a)))
      die(db, "the statistics perturbation's theta_exact differs");
  }
  for (int s = 0; s < N; s++) /* its exact counts are our first visits */
    if (r[2].visits[s] != (double)b->visits[s]) die(db, "exact_visits");
  if (!c->agg && !c->lsl) check_lsw(&r[0], b);
  phi_theta(r[0].theta_exact, r[0].d, est);
  printf("%s,%s,%lld,%d,%.9g,0,%.9g\n", feat, nm[0], (long long)m, run, rmse(est, V), lam);
  for (int f = 0; f < GROUP; f++)
    printf("%s,%s,%lld,%d,%.9g,%.9g,%.9g\n", feat, nm[1 + f], (long long)m, run,
           rmse(r[f].values, V), r[f].sigma, lam);
}

/* ---- main ---------------------------------------------------------------- */

static int parse_list(const char *arg, double *out) {
  int n = 0;
  char *end;
  while (*arg) {
    if (n == MAX_LIST) {
      fprintf(stderr, "chain: more than %d values in a list\n", MAX_LIST);
      exit(2);
    }
    out[n++] = strtod(arg, &end);
    if (end == arg || !(out[n - 1] > 0)) {
      fprintf(stderr, "chain: bad list: %s\n", arg);
      exit(2);
    }
    arg = *end == ',' ? end + 1 : end;
  }
  return n;
}

static sqlite3 *open_db(const char *ext) {
  sqlite3 *db;
  char *err = NULL;
  if (sqlite3_open(":memory:", &db) != SQLITE_OK) die(db, "open");
  sqlite3_enable_load_extension(db, 1);
  if (sqlite3_load_extension(db, ext, NULL, &err) != SQLITE_OK) {
    fprintf(stderr, "chain: cannot load %s: %s\n", ext, err);
    exit(1);
  }
  exec(db, "PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF");
  return db;
}

typedef struct {
  const char *ext;
  int first, last, start_first, nsizes, nlambdas;
  double lambda_c, sizes[MAX_LIST], lambdas[MAX_LIST];
} config;

static void parse_args(int argc, char **argv, config *c, const double V[N]) {
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "-V")) {
      for (int s = 0; s < N; s++) printf("%d,%.17g\n", s, V[s]);
      exit(0);
    }
    if (!v) { fprintf(stderr, "chain: %s needs a value\n", a); exit(2); }
    i++;
    if (!strcmp(a, "-e")) c->ext = v;
    else if (!strcmp(a, "-r")) {
      if (sscanf(v, "%d:%d", &c->first, &c->last) != 2 || c->first < 0 ||
          c->last <= c->first) {
        fprintf(stderr, "chain: bad -r %s (want first:last)\n", v);
        exit(2);
      }
    } else if (!strcmp(a, "-m")) c->nsizes = parse_list(v, c->sizes);
    else if (!strcmp(a, "-c")) c->lambda_c = atof(v);
    else if (!strcmp(a, "-L")) c->nlambdas = parse_list(v, c->lambdas);
    else if (!strcmp(a, "-s")) c->start_first = !strcmp(v, "first");
    else { fprintf(stderr, "chain: unknown option %s\n", a); exit(2); }
  }
}

/* Every noise draw gets its own seed, a function of (run, batch size,
** lambda index, features, method, fmax, perturbation).  The output
** perturbation's seeds are those of the earlier version of this sample
** (which had no statistics perturbation); the statistics perturbation's
** are the same numbers plus 2^40, above every one of them. */
static int64_t noise_seed(int run, int k, int li, int agg, int lsl, int fmax,
                          int stats) {
  return 1 +
         (((((int64_t)run * SEED_RADIX + k) * SEED_RADIX + li) * 2 + agg) * 2 + lsl) * 2 +
         fmax + ((int64_t)stats << 40);
}

/* Calls of one method in the order emit_group expects: output perturbation
** without and with fmax = 1, statistics perturbation with fmax = 1. */
static int plan_group(call_spec *calls, int lsl, int agg, double lambda, int run,
                      int k, int li) {
  static const int fmax[GROUP] = {0, 1, 1}, stats[GROUP] = {0, 0, 1};
  for (int g = 0; g < GROUP; g++)
    calls[g] = (call_spec){lsl, agg, fmax[g], stats[g], lambda,
                           noise_seed(run, k, li, agg, lsl, fmax[g], stats[g])};
  return GROUP;
}

/* Default: LSW and LSL on both feature forms, lambda = c sqrt(m), each in
** the three private variants (12 aggregates).  With -L: LSL only, tabular,
** once per lambda in the list (the paper's second plot). */
static int plan_calls(const config *c, int run, int k, call_spec *calls) {
  int n = 0;
  double m = c->sizes[k];
  if (c->nlambdas) {
    for (int li = 0; li < c->nlambdas; li++)
      n += plan_group(calls + n, 1, 0, c->lambdas[li], run, k, li + 1);
    return n;
  }
  for (int agg = 0; agg < 2; agg++)
    for (int lsl = 0; lsl < 2; lsl++)
      n += plan_group(calls + n, lsl, agg, lsl ? c->lambda_c * sqrt(m) : 0.0, run, k, 0);
  return n;
}

int main(int argc, char **argv) {
  config c = {.ext = "../../dprl.so", .first = 0, .last = 20, .lambda_c = 100};
  double V[N], t_data = 0, t_sql = 0, t0;
  int64_t rows = 0;
  static call_spec calls[MAX_CALLS];
  static release rel[MAX_CALLS];
  exact_values(V);
  c.nsizes = parse_list("100,316,1000,3162,10000,31623,100000", c.sizes);
  parse_args(argc, argv, &c, V);
  sqlite3 *db = open_db(c.ext);
  for (int run = c.first; run < c.last; run++)
    for (int k = 0; k < c.nsizes; k++) {
      batch_stats b;
      int64_t m = (int64_t)c.sizes[k];
      t0 = now();
      make_batch(db, run, m, c.start_first, &b);
      t_data += now() - t0;
      rows += b.rows;
      t0 = now();
      int n = plan_calls(&c, run, k, calls);
      run_calls(db, calls, n, rel);
      for (int i = 0; i < n; i += GROUP) emit_group(db, &calls[i], &rel[i], m, run, V, &b);
      t_sql += now() - t0;
    }
  fprintf(stderr, "chain: runs %d..%d: %lld steps; simulate+insert %.1f s, "
          "dprl %.1f s\n", c.first, c.last - 1, (long long)rows, t_data, t_sql);
  sqlite3_close(db);
  return 0;
}
