/*
** bench.c: `make bench`.  One process, one database (build/bench.db, built
** once), the same rows for every query of a section.  Each section runs its
** queries round-robin, DPRL_BENCH_RUNS rounds (default 5), starting each
** round at the next query, so that a change in the machine's load touches
** every query alike; each query's CPU time is divided by its reference's
** in the same round (the bare scan of the same table, or dp_lsw for the
** peers), and the table prints that ratio's min / median / max, the median
** CPU time, and the peak memory SQLite's allocator saw during the call
** (dprl allocates through it).  The machine is shared: read the ratios,
** not the seconds.
**
** Sections (DPRL_BENCH=lsw,shapes,prefix,q,mdp,offpolicy,bind picks some):
**   lsw     100,000 episodes x 50 steps, N = 750, dense ids in random order:
**           dp_lsw, dp_lsl, grouped, aggregate features, the shard recipe,
**           plain SQL window functions in SQLite and DuckDB;
**   shapes  text (UUID-like) ids, sparse random 63-bit ids, 500,000
**           episodes of 10 steps, 10,000,000 steps;
**   prefix  dp_prefix_stable at the paper's scale, with and without an
**           index on (episode, t);
**   q       dp_q_noise and dp_q_learn (bench_q.c);
**   mdp     dp_mdp on 5,000,000 steps (bench_mdp.c);
**   offpolicy  dp_mdp_value and dp_mdp_plan on a 1,000-state, 10-action
**           model (bench_mdp_eval.c);
**   bind    the row aggregates with their options written into the SQL
**           and bound as a parameter, as apps pass them (bench_bind.c).
** Every row checks its result each round, after its clock stops: a number
** must be finite (a NULL fails), a JSON result must be an object, a release
** must say "private":true, and a first-visit row (SQLite's window SQL,
** DuckDB's two) must give dp_fv_stats's sum of first-visit returns on the
** same rows within a relative 1e-12.  A row that fails stops the bench with
** exit 1, naming the row and why.  DPRL_BENCH_CORRUPT=NAME (a part of a
** row's name) corrupts that row's result, to show that the checks fail.
** DuckDB (npm @duckdb/node-api, `make duckdb-deps`) runs in a child node
** process (tests/bench/duckdb_bench.cjs) with 2 threads on the same rows
** (exported once to build/bench_steps.csv); its CPU time is the child's,
** all threads.
*/
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* DPRL_BENCH_EPISODES changes it: tests/sql/test_commands.py runs a quick form,
** where every other table shrinks by the same factor (SCALE). */
static int EPISODES = 100000;
static double SCALE = 1;
/* n rows of a table at SCALE, at least 100 */
static int scaled(int n) { return n * SCALE > 100 ? (int)(n * SCALE) : 100; }
#define STEPS 50
#define N_STATES 750
#define MAX_RUNS 50

static int RUNS = 5;

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static double cpu_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void die(sqlite3 *db, const char *what) {
  fprintf(stderr, "bench: %s: %s\n", what, sqlite3_errmsg(db));
  exit(1);
}

static void exec(sqlite3 *db, const char *sql) {
  char *err = NULL;
  if (sqlite3_exec(db, sql, NULL, NULL, &err) != SQLITE_OK) {
    fprintf(stderr, "bench: %s\n  in: %.200s\n", err, sql);
    exit(1);
  }
}

static long long count_rows(sqlite3 *db, const char *table) {
  char sql[160];
  sqlite3_stmt *st;
  long long n = -1;
  snprintf(sql, sizeof sql, "SELECT count(*) FROM %s", table);
  if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
    n = sqlite3_column_int64(st, 0);
  sqlite3_finalize(st);
  return n;
}

static uint64_t rng = 88172645463325252ull;
static uint64_t xorshift(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return rng;
}

static uint64_t splitmix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

/* bench_sparse(e): a random-looking 63-bit id per episode;
** bench_uuid(e): a UUID-like text id per episode. */
static void sparse_fn(sqlite3_context *c, int n, sqlite3_value **v) {
  (void)n;
  sqlite3_result_int64(c, (int64_t)(splitmix((uint64_t)sqlite3_value_int64(v[0])) >> 1));
}
static void uuid_fn(sqlite3_context *c, int n, sqlite3_value **v) {
  (void)n;
  uint64_t a = splitmix((uint64_t)sqlite3_value_int64(v[0]) * 2 + 1), b = splitmix(a);
  char s[40];
  snprintf(s, sizeof s, "%08x-%04x-4%03x-%04x-%012llx", (unsigned)(a >> 32),
           (unsigned)(a >> 16) & 0xffff, (unsigned)a & 0xfff,
           0x8000 | ((unsigned)(b >> 48) & 0x3fff), (unsigned long long)b & 0xffffffffffffull);
  sqlite3_result_text(c, s, -1, SQLITE_TRANSIENT);
}

/* `episodes` episodes of `steps` steps over 750 states: a random walk on
** states, rewards in [0,1].  <name>_grouped: by episode; <name>: the same
** rows in random order (the grouped copy is dropped unless keep). */
static void build_walk(sqlite3 *db, const char *name, int episodes, int steps, int keep) {
  char sql[512], grouped[96];
  snprintf(grouped, sizeof grouped, "%s_grouped", name);
  if (count_rows(db, name) == (long long)episodes * steps &&
      (!keep || count_rows(db, grouped) == (long long)episodes * steps))
    return;
  printf("building %s (%lld steps, once)...\n", name, (long long)episodes * steps);
  fflush(stdout);
  snprintf(sql, sizeof sql,
           "DROP TABLE IF EXISTS %s; DROP TABLE IF EXISTS %s;"
           "CREATE TABLE %s(episode INTEGER, t INTEGER, state INTEGER, reward REAL); BEGIN",
           name, grouped, grouped);
  exec(db, sql);
  sqlite3_stmt *ins;
  snprintf(sql, sizeof sql, "INSERT INTO %s VALUES (?,?,?,?)", grouped);
  if (sqlite3_prepare_v2(db, sql, -1, &ins, NULL)) die(db, "prepare insert");
  for (int e = 0; e < episodes; e++) {
    int s = (int)(xorshift() % N_STATES);
    for (int t = 0; t < steps; t++) {
      s = (s + N_STATES + (int)(xorshift() % 21) - 10) % N_STATES;
      sqlite3_bind_int(ins, 1, e);
      sqlite3_bind_int(ins, 2, t);
      sqlite3_bind_int(ins, 3, s);
      sqlite3_bind_double(ins, 4, (double)(xorshift() % 1000) / 1000.0);
      if (sqlite3_step(ins) != SQLITE_DONE) die(db, "insert");
      sqlite3_reset(ins);
    }
  }
  sqlite3_finalize(ins);
  snprintf(sql, sizeof sql, "COMMIT; CREATE TABLE %s AS SELECT * FROM %s ORDER BY random();%s%s",
           name, grouped, keep ? "" : "DROP TABLE ", keep ? "" : grouped);
  exec(db, sql);
}

/* A table of `from` with the episode column rewritten by fn (same order). */
static void build_mapped(sqlite3 *db, const char *name, const char *fn, const char *from) {
  char sql[256];
  if (count_rows(db, name) == count_rows(db, from)) return;
  printf("building %s (%s ids, once)...\n", name, fn);
  fflush(stdout);
  snprintf(sql, sizeof sql,
           "DROP TABLE IF EXISTS %s; CREATE TABLE %s AS SELECT %s(episode) AS episode, t, "
           "state, reward FROM %s",
           name, name, fn, from);
  exec(db, sql);
}

/* ---- measuring ------------------------------------------------------------ */

typedef struct sample {
  double cpu, wall;
  long long peak;
} sample;

/* One run, with bind (if not NULL) bound to parameter 1 as an app binds
** text (a copy: SQLITE_TRANSIENT); the first column of the last row goes
** to out. */
/* The whole first cell of the last row of the last run_bound with out (a
** copy, for the checks; NULL for an SQL NULL). */
static char *last_text;

static sample run_bound(sqlite3 *db, const char *sql, const char *bind, char *out, size_t n) {
  sqlite3_stmt *st;
  long long base = sqlite3_memory_used();
  sqlite3_memory_highwater(1);
  double w0 = now(), c0 = cpu_now();
  if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) die(db, sql);
  if (bind && sqlite3_bind_text(st, 1, bind, -1, SQLITE_TRANSIENT) != SQLITE_OK) die(db, sql);
  if (out) {
    free(last_text);
    last_text = NULL;
    snprintf(out, n, "NULL");
  }
  while (sqlite3_step(st) == SQLITE_ROW)
    if (out) {
      const char *t = (const char *)sqlite3_column_text(st, 0);
      free(last_text);
      last_text = t ? strdup(t) : NULL;
      snprintf(out, n, "%s", t ? t : "NULL");
    }
  if (sqlite3_finalize(st) != SQLITE_OK) die(db, sql);
  sample s = {cpu_now() - c0, now() - w0, sqlite3_memory_highwater(0) - base};
  return s;
}

static sample run_once(sqlite3 *db, const char *sql, char *out, size_t n) {
  return run_bound(db, sql, NULL, out, n);
}

typedef struct item item;
struct item {
  const char *name;
  const char *sql;              /* run in this process; NULL: ext */
  const char *bind;             /* bound to the sql's parameter 1, or NULL */
  int ref;                      /* index of the reference item in the section */
  int (*ext)(item *, sample *); /* a run elsewhere (DuckDB) */
  int ext_query;
  double steps; /* > 0: print bytes per step of the peak */
  double first_visit; /* != 0: the result must be this sum of first-visit returns */
  double cpu[MAX_RUNS], wall[MAX_RUNS];
  int have[MAX_RUNS];
  long long peak;
  char res[256];
};

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median_of(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* The result of x's last run (text: the whole of it for SQL rows, the
** first 255 bytes for DuckDB's), checked as the header says; exits 1 when
** it is not what the row computes. */
static void check_result(const item *x, const char *text) {
  const char *corrupt = getenv("DPRL_BENCH_CORRUPT");
  char *own = text ? strdup(text) : NULL;
  const char *why = NULL;
  char detail[200] = "";
  if (corrupt && *corrupt && strstr(x->name, corrupt) && own) { /* the test of the checks */
    char *p = strstr(own, "\"private\":true");
    if (p) memcpy(p, "\"private\":nope", 14);
    else if (x->first_visit != 0) {
      char v[64];
      snprintf(v, sizeof v, "%.17g", strtod(own, NULL) * (1 + 1e-11));
      free(own);
      own = strdup(v);
    } else {
      free(own);
      own = NULL;
    }
  }
  if (!own || strcmp(own, "NULL") == 0) {
    why = "the result is NULL";
  } else if (own[0] == '{') {
    size_t n = strlen(own);
    if (own[n - 1] != '}') why = "the JSON result is not an object";
    else if (strstr(own, "\"private\":") && !strstr(own, "\"private\":true"))
      why = "the release does not say \"private\":true";
  } else {
    char *end;
    double v = strtod(own, &end);
    if (end == own || !isfinite(v)) {
      why = "the result is not a finite number";
    } else if (x->first_visit != 0 &&
               !(fabs(v - x->first_visit) <= 1e-12 * fabs(x->first_visit))) {
      why = "the sum of first-visit returns differs from dp_fv_stats's";
      snprintf(detail, sizeof detail, " (%.17g, want %.17g)", v, x->first_visit);
    }
  }
  if (why) {
    fprintf(stderr, "bench: FAILED: row \"%s\": %s%s\n", x->name, why, detail);
    exit(1);
  }
  free(own);
}

static void measure(sqlite3 *db, item *it, int n) {
  for (int r = 0; r < RUNS; r++) {
    for (int k = 0; k < n; k++) {
      item *x = &it[(k + r) % n];
      sample s;
      if (x->sql) {
        s = run_bound(db, x->sql, x->bind, x->res, sizeof x->res);
        check_result(x, last_text);
      } else if (!x->ext || x->ext(x, &s)) {
        continue;
      } else {
        check_result(x, x->res);
      }
      x->cpu[r] = s.cpu;
      x->wall[r] = s.wall;
      x->have[r] = 1;
      if (s.peak > x->peak) x->peak = s.peak;
    }
    fprintf(stderr, "  (round %d of %d done)\r", r + 1, RUNS);
  }
  fprintf(stderr, "                         \r");
}

/* min / median / max over the rounds of it's time / its reference's time
** (cpu or wall), NAN if none. */
static void ratio_stats(const item *sec, int i, int wall, double out[3]) {
  double v[MAX_RUNS];
  int m = 0;
  const item *x = &sec[i], *ref = &sec[x->ref];
  for (int r = 0; r < RUNS; r++)
    if (x->have[r] && ref->have[r])
      v[m++] = (wall ? x->wall[r] / ref->wall[r] : x->cpu[r] / ref->cpu[r]);
  if (!m) {
    out[0] = out[1] = out[2] = NAN;
    return;
  }
  out[1] = median_of(v, m);
  out[0] = v[0];
  out[2] = v[m - 1];
}

static double median_cpu(const item *x) {
  double v[MAX_RUNS];
  int m = 0;
  for (int r = 0; r < RUNS; r++)
    if (x->have[r]) v[m++] = x->cpu[r];
  return m ? median_of(v, m) : NAN;
}

static void report(const item *it, int n) {
  printf("  %-52s %7s  %-6s %6s %6s %6s  %8s\n", "query", "CPU s", "ratio", "min", "median", "max",
         "peak MB");
  for (int i = 0; i < n; i++) {
    double q[3];
    int runs = 0;
    for (int r = 0; r < RUNS; r++) runs += it[i].have[r];
    if (!runs) {
      printf("  %-52s (not run)\n", it[i].name);
      continue;
    }
    ratio_stats(it, i, 0, q);
    const char *vs = i == it[i].ref                                     ? "(ref)"
                     : strncmp(it[it[i].ref].name, "bare scan", 9) == 0 ? "/ scan"
                     : strncmp(it[it[i].ref].name, "dp_lsw", 6) == 0    ? "/ lsw"
                                                                        : "/ ref";
    printf("  %-52s %7.3f  %-6s %6.2f %6.2f %6.2f", it[i].name, median_cpu(&it[i]), vs, q[0],
           q[1], q[2]);
    if (it[i].sql) printf("  %8.1f", (double)it[i].peak / 1e6);
    else printf("  %8s", "-");
    if (it[i].steps > 0 && it[i].peak > 0)
      printf(" (%4.1f B/step)", (double)it[i].peak / it[i].steps);
    if (!it[i].sql) {
      double w[3];
      ratio_stats(it, i, 1, w);
      printf("  wall: %.2f %.2f %.2f", w[0], w[1], w[2]);
    }
    printf("\n");
  }
}

/* ---- DuckDB in a child node process ---------------------------------------- */

static pid_t duck_pid = -1;
static FILE *duck_in, *duck_out;

/* build/bench_steps.csv: the rows of `steps`, in its order. */
static const char *export_csv(sqlite3 *db, const char *dir) {
  static char path[1100];
  snprintf(path, sizeof path, "%s/bench_steps.csv", dir);
  struct stat stt;
  if (stat(path, &stt) == 0 && stt.st_size > 1000000) return path;
  printf("exporting steps to %s (once)...\n", path);
  FILE *f = fopen(path, "w");
  if (!f) return NULL;
  sqlite3_stmt *st;
  if (sqlite3_prepare_v2(db, "SELECT episode, t, state, reward FROM steps", -1, &st, NULL))
    die(db, "export");
  while (sqlite3_step(st) == SQLITE_ROW)
    fprintf(f, "%lld,%lld,%lld,%.17g\n", (long long)sqlite3_column_int64(st, 0),
            (long long)sqlite3_column_int64(st, 1), (long long)sqlite3_column_int64(st, 2),
            sqlite3_column_double(st, 3));
  sqlite3_finalize(st);
  return fclose(f) == 0 ? path : NULL;
}

static int duck_start(const char *csv) {
  const char *dir = getenv("DUCKDB_NODE_DIR");
  if (!dir || !csv) return -1;
  int to[2], from[2];
  if (pipe(to) || pipe(from)) return -1;
  duck_pid = fork();
  if (duck_pid < 0) return -1;
  if (duck_pid == 0) {
    dup2(to[0], 0);
    dup2(from[1], 1);
    close(to[1]);
    close(from[0]);
    execlp("node", "node", "tests/bench/duckdb_bench.cjs", csv, "sql/duckdb/first_visit_stats.sql",
           (char *)NULL);
    _exit(127);
  }
  close(to[0]);
  close(from[1]);
  duck_in = fdopen(to[1], "w");
  duck_out = fdopen(from[0], "r");
  char line[256];
  if (!duck_out || !fgets(line, sizeof line, duck_out) || strncmp(line, "ready", 5) != 0) {
    fprintf(stderr, "bench: DuckDB did not start (%s)\n", dir);
    return -1;
  }
  printf("  DuckDB %s", line + 5);
  return 0;
}

static void duck_stop(void) {
  if (duck_pid <= 0) return;
  if (duck_in) fclose(duck_in);
  if (duck_out) fclose(duck_out);
  waitpid(duck_pid, NULL, 0);
  duck_pid = -1;
}

static int duck_run(item *x, sample *s) {
  char line[512];
  if (duck_pid <= 0) return -1;
  fprintf(duck_in, "%d\n", x->ext_query);
  fflush(duck_in);
  if (!fgets(line, sizeof line, duck_out)) return -1;
  char res[256] = "";
  if (sscanf(line, "%lf %lf %255s", &s->cpu, &s->wall, res) < 2) return -1;
  snprintf(x->res, sizeof x->res, "%s", res);
  s->peak = 0;
  return 0;
}

/* ---- dp_lsw / dp_lsl ----------------------------------------------------------- */

#define OPT "'{\"n_states\": 750, \"gamma\": 0.99, \"rmin\": 0, \"rmax\": 1, \"epsilon\": 1, \"delta\": 1e-6"
#define SCAN(t) "SELECT sum(episode), sum(t), sum(state), sum(reward) FROM " t
/* First-visit statistics in plain SQL: G_t from a reversed running sum of
** gamma^t r_t, first visits by row_number (DuckDB: the same, with
** least/greatest for the scalar min/max). */
#define PLAIN_SQL                                                      \
  "WITH g AS (SELECT episode, t, state, "                              \
  " sum(min(max(reward, 0), 1) * power(0.99, t)) OVER "                \
  "  (PARTITION BY episode ORDER BY t DESC) / power(0.99, t) AS G, "   \
  " row_number() OVER (PARTITION BY episode, state ORDER BY t) AS rn " \
  " FROM steps) "                                                      \
  "SELECT sum(s) FROM "                                                \
  "(SELECT state, count(*) AS v, sum(G) AS s FROM g WHERE rn = 1 GROUP BY state)"

static void policy_eval_bench(sqlite3 *db, const char *csv) {
  enum { SCAN_R, LSW, LSL, SCAN_G, GROUPED, AGG, FVS, SHARD, PLAIN, DUCK_W, DUCK_S, SCAN_1 };
  item it[] = {
      [SCAN_R] = {.name = "bare scan (sum of the 4 columns)", .sql = SCAN("steps"), .ref = SCAN_R},
      [LSW] = {.name = "dp_lsw, rows in random order",
               .sql = "SELECT dp_lsw(episode, t, state, reward, " OPT "}') FROM steps",
               .ref = SCAN_R,
               .steps = EPISODES * (double)STEPS},
      [LSL] = {.name = "dp_lsl, rows in random order",
               .sql = "SELECT dp_lsl(episode, t, state, reward, " OPT
                      ", \"lambda\": 300}') FROM steps",
               .ref = SCAN_R,
               .steps = EPISODES * (double)STEPS},
      [SCAN_G] = {.name = "bare scan, table stored by episode",
                  .sql = SCAN("steps_grouped"),
                  .ref = SCAN_G},
      [GROUPED] = {.name = "dp_lsw grouped:true (streaming)",
                   .sql = "SELECT dp_lsw(episode, t, state, reward, " OPT
                          ", \"grouped\": true}') FROM steps_grouped",
                   .ref = SCAN_G},
      [AGG] = {.name = "dp_lsw aggregate k=10, random order",
               .sql = "SELECT dp_lsw(episode, t, state, reward, " OPT
                      ", \"features\": {\"aggregate\": 10}}') FROM steps",
               .ref = SCAN_R},
      [FVS] = {.name = "shard recipe: dp_fv_stats+json_each+_from_stats",
               .sql = "SELECT dp_lsw_from_stats(e.value->>0, e.value->>1, e.value->>2, " OPT
                      ", \"episodes\": 100000}') FROM (SELECT dp_fv_stats(episode, t, state, "
                      "reward, '{\"n_states\": 750, \"gamma\": 0.99, \"rmin\": 0, \"rmax\": 1}') AS j FROM steps) AS x, "
                      "json_each(x.j, '$.states') AS e",
               .ref = SCAN_R},
      [SHARD] = {.name = "shard recipe: dp_first_visit+GROUP BY+_from_stats",
                 .sql = "SELECT dp_lsw_from_stats(state, visits, return_sum, " OPT
                        ", \"episodes\": 100000}') FROM (SELECT state, count(*) AS visits, "
                        "sum(first_visit_return) AS return_sum FROM dp_first_visit("
                        "'SELECT episode, t, state, reward FROM steps', "
                        "'{\"n_states\": 750, \"gamma\": 0.99, \"rmin\": 0, \"rmax\": 1}') GROUP BY state)",
                 .ref = SCAN_R},
      [PLAIN] = {.name = "SQLite window SQL (first-visit statistics)",
                 .sql = PLAIN_SQL,
                 .ref = LSW},
      [DUCK_W] = {.name = "DuckDB 2 threads, the same window SQL",
                  .sql = NULL,
                  .ref = LSW,
                  .ext = duck_run,
                  .ext_query = 0},
      [DUCK_S] = {.name = "DuckDB 2 threads, sql/duckdb/first_visit_stats.sql",
                  .sql = NULL,
                  .ref = LSW,
                  .ext = duck_run,
                  .ext_query = 1},
      [SCAN_1] = {.name = "bare scan of one column (sum(reward))",
                  .sql = "SELECT sum(reward) FROM steps",
                  .ref = SCAN_1},
  };
  int n = (int)(sizeof it / sizeof it[0]);
  /* the reference of the first-visit rows: dp_fv_stats on the same rows */
  char fv[64];
  run_once(db, "SELECT sum(e.value->>2) FROM (SELECT dp_fv_stats(episode, t, state, reward, "
               "'{\"n_states\": 750, \"gamma\": 0.99, \"rmin\": 0, \"rmax\": 1}') AS j FROM steps) "
               "AS x, json_each(x.j, '$.states') AS e", fv, sizeof fv);
  it[PLAIN].first_visit = it[DUCK_W].first_visit = it[DUCK_S].first_visit = strtod(fv, NULL);
  printf("\n== dp_lsw / dp_lsl: %d episodes x %d steps, N = %d, dense ids (%d rounds) ==\n",
         EPISODES, STEPS, N_STATES, RUNS);
  if (getenv("DPRL_BENCH_NO_PLAIN")) it[PLAIN].sql = NULL;
  if (duck_start(csv)) {
    printf("  (DuckDB not run: set DUCKDB_NODE_DIR; `make bench` installs it)\n");
    it[DUCK_W].ext = it[DUCK_S].ext = NULL;
  }
  run_once(db, SCAN("steps"), NULL, 0); /* warm the page cache */
  run_once(db, SCAN("steps_grouped"), NULL, 0);
  measure(db, it, n);
  duck_stop();
  report(it, n);
  /* the two floors side by side: what dp_lsw costs over each */
  double q4[3], q1[3], s41[3];
  ratio_stats(it, LSW, 0, q4);
  it[LSW].ref = it[SCAN_R].ref = SCAN_1;
  ratio_stats(it, LSW, 0, q1);
  ratio_stats(it, SCAN_R, 0, s41);
  it[LSW].ref = it[SCAN_R].ref = SCAN_R;
  printf("  floors (median CPU ratios): dp_lsw / the 4-column scan %.2f, dp_lsw / the one-column "
         "scan %.2f; the 4-column scan / the one-column scan %.2f\n", q4[1], q1[1], s41[1]);
  printf(
      "  results: SQLite window SQL sum of returns %s; DuckDB window SQL %s, "
      "first_visit_stats.sql %s\n",
      it[PLAIN].res, it[DUCK_W].res, it[DUCK_S].res);
  printf(
      "  (ratios: CPU time / the reference's in the same round; DuckDB's CPU time is all\n"
      "   its threads'; peak: SQLite allocator high-water during the call)\n");
}

/* ---- other id shapes and sizes ---------------------------------------------- */

static void shapes_bench(sqlite3 *db) {
  item it[] = {
      {.name = "bare scan, text ids (length of the id)",
       .sql = "SELECT sum(length(episode)), sum(t), sum(state), sum(reward) FROM steps_text",
       .ref = 0},
      {.name = "dp_lsw, text (UUID-like) ids",
       .sql = "SELECT dp_lsw(episode, t, state, reward, " OPT "}') FROM steps_text",
       .ref = 0,
       .steps = EPISODES * (double)STEPS},
      {.name = "bare scan, sparse 63-bit ids (total())", .sql = "SELECT total(episode), sum(t), sum(state), sum(reward) FROM steps_sparse", .ref = 2},
      {.name = "dp_lsw, sparse random 63-bit ids",
       .sql = "SELECT dp_lsw(episode, t, state, reward, " OPT "}') FROM steps_sparse",
       .ref = 2,
       .steps = EPISODES * (double)STEPS},
      {.name = "bare scan, 500,000 episodes x 10 steps", .sql = SCAN("steps_short"), .ref = 4},
      {.name = "dp_lsw, 500,000 episodes x 10 steps",
       .sql = "SELECT dp_lsw(episode, t, state, reward, " OPT "}') FROM steps_short",
       .ref = 4,
       .steps = 5e6},
      {.name = "bare scan, 10^7 steps", .sql = SCAN("steps_10m"), .ref = 6},
      {.name = "dp_lsw, 10^7 steps (200,000 x 50)",
       .sql = "SELECT dp_lsw(episode, t, state, reward, " OPT "}') FROM steps_10m",
       .ref = 6,
       .steps = 1e7},
      {.name = "dp_lsl, 10^7 steps (200,000 x 50)",
       .sql = "SELECT dp_lsl(episode, t, state, reward, " OPT ", \"lambda\": 300}') FROM steps_10m",
       .ref = 6,
       .steps = 1e7},
  };
  int n = (int)(sizeof it / sizeof it[0]);
  printf(
      "\n== dp_lsw / dp_lsl, other ids and sizes: 5,000,000 steps in random order unless "
      "noted (%d rounds) ==\n",
      RUNS);
  for (int i = 0; i < n; i += 2) run_once(db, it[i].sql, NULL, 0); /* warm */
  measure(db, it, n);
  report(it, n);
}

/* ---- dp_prefix_stable at the paper's scale (Sharma et al. §6) ------------
** 3,000 experts x 20 trajectories of 200 steps, |A| = 4, 10 states, T = 100.
** Every expert prefers action s mod 4 in state s with prob 0.94 (the most
** p_min = 0.02 allows) and the trajectories follow it, so the count
** 3000 x 0.94^j stays above the threshold for ~66 steps: close to the
** worst case for time that p_min permits. */
#define PS_EXPERTS 3000
#define PS_TRAJ 20
#define PS_LEN 200
#define PS_STATES 10

static void prefix_build(sqlite3 *db) {
  if (count_rows(db, "ps2_steps") != PS_EXPERTS * PS_TRAJ * PS_LEN) {
    printf("building the dp_prefix_stable tables (%d steps, once)...\n",
           PS_EXPERTS * PS_TRAJ * PS_LEN);
    exec(db,
         "DROP TABLE IF EXISTS ps_steps; DROP TABLE IF EXISTS ps_policies;"
         "DROP TABLE IF EXISTS ps2_steps; DROP TABLE IF EXISTS ps2_indexed;"
         "CREATE TABLE ps_policies(expert, state, action, prob);"
         "CREATE TABLE ps2_steps(episode, t, state, action); BEGIN;");
    exec(db,
         "INSERT INTO ps_policies "
         "WITH RECURSIVE e(i) AS (SELECT 0 UNION ALL SELECT i+1 FROM e WHERE i < 2999),"
         " s(j) AS (SELECT 0 UNION ALL SELECT j+1 FROM s WHERE j < 9),"
         " a(k) AS (SELECT 0 UNION ALL SELECT k+1 FROM a WHERE k < 3) "
         "SELECT i, j, k, CASE WHEN k = j % 4 THEN 0.94 ELSE 0.02 END FROM e, s, a");
    sqlite3_stmt *ins;
    if (sqlite3_prepare_v2(db, "INSERT INTO ps2_steps VALUES (?,?,?,?)", -1, &ins, NULL))
      die(db, "prepare");
    for (int e = 0; e < PS_EXPERTS * PS_TRAJ; e++) {
      int s = (int)(xorshift() % PS_STATES);
      for (int t = 0; t < PS_LEN; t++) {
        int a = s % 4;
        sqlite3_bind_int(ins, 1, e);
        sqlite3_bind_int(ins, 2, t);
        sqlite3_bind_int(ins, 3, s);
        sqlite3_bind_int(ins, 4, a);
        if (sqlite3_step(ins) != SQLITE_DONE) die(db, "insert");
        sqlite3_reset(ins);
        s = (s + 1 + (int)(xorshift() % 3)) % PS_STATES;
      }
    }
    sqlite3_finalize(ins);
    exec(db, "COMMIT");
  }
  if (count_rows(db, "ps2_indexed") != PS_EXPERTS * PS_TRAJ * PS_LEN) {
    printf("building ps2_indexed (the same rows, index on (episode, t), once)...\n");
    exec(db,
         "DROP TABLE IF EXISTS ps2_indexed;"
         "CREATE TABLE ps2_indexed AS SELECT * FROM ps2_steps;"
         "CREATE INDEX ps2_indexed_ep_t ON ps2_indexed(episode, t)");
  }
}

#define PS_CALL(table)                                      \
  "SELECT count(*) FROM dp_prefix_stable("                  \
  "'SELECT episode, t, state, action FROM " table           \
  "', "                                                     \
  "'SELECT expert, state, action, prob FROM ps_policies', " \
  "'{\"epsilon\": 1e6, \"delta\": 3e-4, \"p_min\": 0.02, \"T\": 100, \"L\": 200}')"

static void prefix_bench(sqlite3 *db) {
  prefix_build(db);
  /* epsilon large enough that prefixes pass: the worst case for time, every
  ** examined step multiplies all 3,000 experts' running products. */
  item it[] = {
      {.name = "bare scan of the trajectories (4 columns)",
       .sql = "SELECT sum(episode), sum(t), sum(state), sum(action) FROM ps2_steps",
       .ref = 0},
      {.name = "dp_prefix_stable, no index", .sql = PS_CALL("ps2_steps"), .ref = 0},
      {.name = "dp_prefix_stable, index on (episode, t)", .sql = PS_CALL("ps2_indexed"), .ref = 0},
  };
  int n = (int)(sizeof it / sizeof it[0]);
  printf(
      "\n== dp_prefix_stable: %d experts x %d trajectories x %d steps, |A| = 4, T = 100 "
      "(%d rounds) ==\n",
      PS_EXPERTS, PS_TRAJ, PS_LEN, RUNS);
  run_once(db, it[0].sql, NULL, 0);
  measure(db, it, n);
  report(it, n);
  printf(
      "  %s transitions released.  Targets: whole call <= 1 s (median here %.3f s CPU),\n"
      "  <= 0.2 s with the index (%.3f s), peak <= 50 MB.  Only the T examined\n"
      "  trajectories are read (docs/prefix-stable.md, \"What is read\").\n",
      it[1].res, median_cpu(&it[1]), median_cpu(&it[2]));
}

#include "bench_q.c" /* dp_q_noise and dp_q_learn */
#include "bench_mdp.c" /* dp_mdp */
#include "bench_mdp_eval.c" /* dp_mdp_value and dp_mdp_plan */
#include "bench_bind.c" /* options as a literal and as a bound parameter */

int main(int argc, char **argv) {
  const char *path = argc > 1 ? argv[1] : "build/bench.db";
  const char *ext = argc > 2 ? argv[2] : "./dprl";
  signal(SIGPIPE, SIG_IGN); /* a DuckDB child that dies is reported, not fatal */
  const char *r = getenv("DPRL_BENCH_RUNS");
  if (r) RUNS = atoi(r);
  if (RUNS < 1) RUNS = 1;
  if (RUNS > MAX_RUNS) RUNS = MAX_RUNS;
  const char *ne = getenv("DPRL_BENCH_EPISODES");
  if (ne && atoi(ne) > 0) EPISODES = atoi(ne);
  SCALE = EPISODES / 100000.0;
  sqlite3 *db;
  char *err = NULL;
  if (sqlite3_open(path, &db) != SQLITE_OK) die(db, "open");
  sqlite3_enable_load_extension(db, 1);
  if (sqlite3_load_extension(db, ext, NULL, &err) != SQLITE_OK) {
    fprintf(stderr, "bench: load %s: %s\n", ext, err);
    return 1;
  }
  sqlite3_create_function(db, "bench_sparse", 1, SQLITE_UTF8 | SQLITE_DETERMINISTIC, NULL,
                          sparse_fn, NULL, NULL);
  sqlite3_create_function(db, "bench_uuid", 1, SQLITE_UTF8 | SQLITE_DETERMINISTIC, NULL, uuid_fn,
                          NULL, NULL);
  exec(db, "PRAGMA cache_size = -1000000; PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF");
  const char *only = getenv("DPRL_BENCH");
  FILE *la = fopen("/proc/loadavg", "r");
  char load[64] = "?";
  if (la) {
    if (!fgets(load, sizeof load, la)) snprintf(load, sizeof load, "?");
    fclose(la);
  }
  printf("dprl bench: %d rounds, CPU time; load average at the start: %s", RUNS, load);
  build_walk(db, "steps", EPISODES, STEPS, 1);
  if (!only || strstr(only, "lsw")) {
    char dir[1024];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash)
      *slash = 0;
    else
      snprintf(dir, sizeof dir, ".");
    policy_eval_bench(db, getenv("DUCKDB_NODE_DIR") ? export_csv(db, dir) : NULL);
  }
  if (!only || strstr(only, "shapes")) {
    build_mapped(db, "steps_text", "bench_uuid", "steps");
    build_mapped(db, "steps_sparse", "bench_sparse", "steps");
    build_walk(db, "steps_short", 500000, 10, 0);
    build_walk(db, "steps_10m", 200000, 50, 0);
    shapes_bench(db);
  }
  if (!only || strstr(only, "prefix")) prefix_bench(db);
  if (!only || strstr(only, "q")) bench_q(db);
  if (!only || strstr(only, "mdp")) bench_mdp(db);
  if (!only || strstr(only, "offpolicy")) bench_mdp_eval(db);
  if (!only || strstr(only, "bind")) bench_bind(db);
  FILE *lb = fopen("/proc/loadavg", "r");
  if (lb) {
    if (fgets(load, sizeof load, lb)) printf("\nload average at the end: %s", load);
    fclose(lb);
  }
  sqlite3_close(db);
  return 0;
}
