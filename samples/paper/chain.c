/*
** chain.c: Balle, Gomrokchi & Precup (ICML 2016), section 6, on the chain,
** through SQL.  For every run and batch size it simulates a fresh batch of
** episodes, inserts them into an in-memory SQLite table, and asks dprl for
** the estimates the paper compares, e.g.
**
**   SELECT dp_lsw(episode, t, state, reward,
**     '{"n_states": 40, "gamma": 0.99, "epsilon": 0.1, "delta": 0.1,
**       "features": {"aggregate": 2}, "grouped": true,
**       "release": "diagnostic", "seed": 1234}') FROM steps;
**
** "diagnostic" returns both theta_exact (LSW, the non-private estimate) and
** theta (DP-LSW, the noisy release), so one call gives two of the methods.
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
**              [-s uniform|first] [-V]
**   -r runs first..last-1 (default 0:20); -m batch sizes; -c: DP-LSL and
**   LSL use lambda = c * sqrt(m) (paper: "proportional to sqrt(m)");
**   -V prints the exact values V(s) and exits.
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
#define MAX_SIZES 32

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

typedef struct {
  double fsum[N];     /* our own first-visit statistics, to check dprl's LSW */
  int64_t visits[N];
  int64_t rows;
} batch_stats;

/* One episode: rows (e, t, s, r) in t order; returns its number of steps. */
static int64_t episode(sqlite3 *db, sqlite3_stmt *ins, prng *g, int64_t e,
                       int start_first, batch_stats *b) {
  int s = start_first ? 0 : (int)(((next64(g) >> 32) * N) >> 32);
  int s0 = s;
  int64_t t = 0, first[N];
  first[s] = 0;
  for (;;) {
    int advance = uniform01(g) >= P;
    sqlite3_bind_int64(ins, 1, e);
    sqlite3_bind_int64(ins, 2, t);
    sqlite3_bind_int(ins, 3, s);
    sqlite3_bind_int(ins, 4, advance && s == N - 1); /* reward 1 at the end */
    if (sqlite3_step(ins) != SQLITE_DONE) die(db, "insert");
    sqlite3_reset(ins);
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

static void make_batch(sqlite3 *db, int run, int64_t m, int start_first,
                       batch_stats *b) {
  sqlite3_stmt *ins;
  prng g;
  prng_seed(&g, (uint64_t)run, (uint64_t)m);
  memset(b, 0, sizeof *b);
  exec(db, "DROP TABLE IF EXISTS steps;"
           "CREATE TABLE steps(episode INTEGER, t INTEGER, state INTEGER,"
           " reward INTEGER); BEGIN");
  if (sqlite3_prepare_v2(db, "INSERT INTO steps VALUES (?1, ?2, ?3, ?4)", -1,
                         &ins, NULL) != SQLITE_OK)
    die(db, "prepare insert");
  for (int64_t e = 0; e < m; e++) b->rows += episode(db, ins, &g, e, start_first, b);
  sqlite3_finalize(ins);
  exec(db, "COMMIT");
}

/* ---- one dp_lsw / dp_lsl call ------------------------------------------ */

typedef struct {
  double values[N];      /* private: Phi theta, as released ("values") */
  double theta_exact[N]; /* non-private LSW / LSL (diagnostic) */
  double sigma;          /* sigma_applied (diagnostic) */
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

static void call(sqlite3 *db, const char *fn, int agg, double lambda, int fmax,
                 int64_t seed, release *r) {
  char sql[768], lam[64] = "";
  sqlite3_stmt *st;
  if (lambda > 0) snprintf(lam, sizeof lam, ", \"lambda\": %.17g", lambda);
  snprintf(sql, sizeof sql,
           "SELECT %s(episode, t, state, reward, '{\"n_states\": %d, "
           "\"gamma\": %g, \"epsilon\": %g, \"delta\": %g, \"features\": %s, "
           "\"grouped\": true, \"release\": \"diagnostic\", \"seed\": %lld%s%s}')"
           " FROM steps",
           fn, N, GAMMA, EPSILON, DELTA, agg ? "{\"aggregate\": 2}" : "\"tabular\"",
           (long long)seed, fmax ? ", \"fmax\": 1" : "", lam);
  if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) die(db, sql);
  if (sqlite3_step(st) != SQLITE_ROW) die(db, sql);
  const char *json = (const char *)sqlite3_column_text(st, 0);
  if (!json) die(db, "NULL result");
  if (json_array(db, json, "$.values", r->values, N) != N) die(db, "values");
  r->d = json_array(db, json, "$.theta_exact", r->theta_exact, N);
  if (r->d != (agg ? N / 2 : N)) die(db, "theta_exact");
  sqlite3_stmt *sg;
  sqlite3_prepare_v2(db, "SELECT json_extract(?1, '$.sigma_applied')", -1, &sg, NULL);
  sqlite3_bind_text(sg, 1, json, -1, SQLITE_STATIC);
  if (sqlite3_step(sg) != SQLITE_ROW) die(db, "sigma_applied");
  r->sigma = sqlite3_column_double(sg, 0);
  sqlite3_finalize(sg);
  sqlite3_finalize(st);
}

/* ---- errors against V ---------------------------------------------------- */

/* Root mean squared error over the N states (paper: "average root mean
** squared error over the state space"; averaged over runs by the caller). */
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

static void emit(const char *feat, const char *method, int64_t m, int run,
                 double err, double sigma, double lambda) {
  printf("%s,%s,%lld,%d,%.9g,%.9g,%.9g\n", feat, method, (long long)m, run, err,
         sigma, lambda);
}

/* One method on one batch and one feature form: the exact estimate (LSW or
** LSL), and the private one (DP-LSW or DP-LSL) both with the default bound
** rmax/(1-gamma) = 100 on the returns and with the public bound fmax = 1. */
static void evaluate(sqlite3 *db, int64_t seed, int64_t m, int run, int agg,
                     int mi, double lambda, const double V[N],
                     const batch_stats *b) {
  static const char *fns[2] = {"dp_lsw", "dp_lsl"};
  static const char *names[2][3] = {{"LSW", "DP-LSW", "DP-LSW (fmax=1)"},
                                    {"LSL", "DP-LSL", "DP-LSL (fmax=1)"}};
  const char *feat = agg ? "aggregate2" : "tabular";
  double est[N];
  release r0, r1;
  call(db, fns[mi], agg, lambda, 0, seed, &r0);
  call(db, fns[mi], agg, lambda, 1, seed + 1, &r1);
  for (int j = 0; j < r0.d; j++) /* fmax = 1 clamps nothing on this chain */
    if (r0.theta_exact[j] != r1.theta_exact[j]) die(db, "fmax changed theta_exact");
  if (!agg && !mi) check_lsw(&r0, b);
  phi_theta(r0.theta_exact, r0.d, est);
  emit(feat, names[mi][0], m, run, rmse(est, V), 0.0, lambda);
  emit(feat, names[mi][1], m, run, rmse(r0.values, V), r0.sigma, lambda);
  emit(feat, names[mi][2], m, run, rmse(r1.values, V), r1.sigma, lambda);
}

/* Every noise draw gets its own seed: (run, batch size, lambda index,
** features, method, fmax) -> a distinct integer. */
static int64_t noise_seed(int run, int k, int li, int agg, int mi) {
  return 1 + ((((int64_t)run * MAX_SIZES + k) * MAX_SIZES + li) * 4 + agg * 2 + mi) * 2;
}

/* ---- main ---------------------------------------------------------------- */

static int parse_list(const char *arg, double *out) {
  int n = 0;
  char *end;
  while (*arg && n < MAX_SIZES) {
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
  double lambda_c, sizes[MAX_SIZES], lambdas[MAX_SIZES];
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

/* Default: the four methods on both feature forms, lambda = c sqrt(m).
** With -L: only LSL / DP-LSL, tabular, once per lambda in the list. */
static void evaluate_batch(sqlite3 *db, const config *c, int run, int k,
                           const double V[N], const batch_stats *b) {
  int64_t m = (int64_t)c->sizes[k];
  if (c->nlambdas) {
    for (int li = 0; li < c->nlambdas; li++)
      evaluate(db, noise_seed(run, k, li + 1, 0, 1), m, run, 0, 1,
               c->lambdas[li], V, b);
    return;
  }
  for (int agg = 0; agg < 2; agg++)
    for (int mi = 0; mi < 2; mi++)
      evaluate(db, noise_seed(run, k, 0, agg, mi), m, run, agg, mi,
               mi ? c->lambda_c * sqrt((double)m) : 0.0, V, b);
}

int main(int argc, char **argv) {
  config c = {.ext = "../../dprl.so", .first = 0, .last = 20, .lambda_c = 1.0};
  double V[N], t_data = 0, t_sql = 0, t0;
  int64_t rows = 0;
  exact_values(V);
  c.nsizes = parse_list("100,316,1000,3162,10000,31623,100000", c.sizes);
  parse_args(argc, argv, &c, V);
  sqlite3 *db = open_db(c.ext);
  for (int run = c.first; run < c.last; run++)
    for (int k = 0; k < c.nsizes; k++) {
      batch_stats b;
      t0 = now();
      make_batch(db, run, (int64_t)c.sizes[k], c.start_first, &b);
      t_data += now() - t0;
      rows += b.rows;
      t0 = now();
      evaluate_batch(db, &c, run, k, V, &b);
      t_sql += now() - t0;
    }
  fprintf(stderr, "chain: runs %d..%d: %lld steps; simulate+insert %.1f s, "
          "dprl calls %.1f s\n", c.first, c.last - 1, (long long)rows, t_data, t_sql);
  sqlite3_close(db);
  return 0;
}
