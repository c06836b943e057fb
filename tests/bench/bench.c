/*
** bench.c: `make bench`.  One process, one database, the same rows:
**   - a bare scan of the four columns dp_lsw reads,
**   - dp_lsw / dp_lsl over rows in random order (buffered path),
**   - dp_lsw over rows grouped by episode ("grouped": true, streaming),
**   - the same first-visit statistics in plain SQL with window functions,
** each timed as the best of a few runs, with the peak memory SQLite's
** allocator saw during the call (dprl allocates through it).
** Later sections time the other mechanisms at the scale of their papers.
*/
#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define EPISODES 100000
#define STEPS 50
#define N_STATES 750

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
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

static uint64_t rng = 88172645463325252ull;
static uint64_t xorshift(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return rng;
}

/* 100,000 episodes of 50 steps over 750 states: a random walk on states,
** rewards in [0,1].  steps: random row order; steps_grouped: by episode. */
static void build(sqlite3 *db) {
  sqlite3_stmt *chk;
  int have = 0;
  if (sqlite3_prepare_v2(db, "SELECT count(*) FROM steps_grouped", -1, &chk, NULL) == SQLITE_OK &&
      sqlite3_step(chk) == SQLITE_ROW)
    have = sqlite3_column_int(chk, 0);
  sqlite3_finalize(chk);
  if (have == EPISODES * STEPS) return;
  printf("building the benchmark database (%d steps, once)...\n", EPISODES * STEPS);
  exec(db, "DROP TABLE IF EXISTS steps; DROP TABLE IF EXISTS steps_grouped;"
           "CREATE TABLE steps_grouped(episode INTEGER, t INTEGER, state INTEGER, reward REAL);"
           "BEGIN");
  sqlite3_stmt *ins;
  if (sqlite3_prepare_v2(db, "INSERT INTO steps_grouped VALUES (?,?,?,?)", -1, &ins, NULL))
    die(db, "prepare insert");
  for (int e = 0; e < EPISODES; e++) {
    int s = (int)(xorshift() % N_STATES);
    for (int t = 0; t < STEPS; t++) {
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
  exec(db, "COMMIT;"
           "CREATE TABLE steps AS SELECT * FROM steps_grouped ORDER BY random();");
}

typedef struct timing {
  double seconds;
  long long peak_bytes;
} timing;

/* Best of `runs`; the first column of the single result row goes to out. */
static timing run(sqlite3 *db, const char *sql, int runs, char *out, size_t n) {
  timing best = {1e30, 0};
  for (int r = 0; r < runs; r++) {
    sqlite3_stmt *st;
    long long base = sqlite3_memory_used();
    sqlite3_memory_highwater(1);
    double t0 = now();
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) die(db, sql);
    while (sqlite3_step(st) == SQLITE_ROW)
      if (out && sqlite3_column_text(st, 0))
        snprintf(out, n, "%s", (const char *)sqlite3_column_text(st, 0));
    if (sqlite3_finalize(st) != SQLITE_OK) die(db, sql);
    double dt = now() - t0;
    long long peak = sqlite3_memory_highwater(0) - base;
    if (dt < best.seconds) best.seconds = dt;
    if (peak > best.peak_bytes) best.peak_bytes = peak;
  }
  return best;
}

static void line(const char *name, timing t, double scan, double plain) {
  printf("  %-44s %8.3f s  %6.2fx scan  %6.2fx plain-SQL  peak %8.1f MB (%5.1f B/step)\n",
         name, t.seconds, t.seconds / scan, plain > 0 ? t.seconds / plain : 0.0,
         (double)t.peak_bytes / 1e6, (double)t.peak_bytes / (EPISODES * (double)STEPS));
}

static const char *OPT =
    "'{\"n_states\": 750, \"gamma\": 0.99, \"epsilon\": 1, \"delta\": 1e-6%s}'";

static void policy_eval_bench(sqlite3 *db) {
  char sql[1024], o[256], res[256];
  int runs = 3;
  printf("\n== dp_lsw / dp_lsl: %d episodes x %d steps, N = %d ==\n", EPISODES, STEPS,
         N_STATES);
  timing scan = run(db, "SELECT sum(episode), sum(t), sum(state), sum(reward) FROM steps",
                    runs, NULL, 0);
  /* First-visit statistics in plain SQL: G_t from a reversed running sum
  ** of gamma^t r_t, first visits by row_number. */
  timing plain = run(db,
                     "WITH g AS (SELECT episode, t, state, "
                     " sum(min(max(reward, 0), 1) * power(0.99, t)) OVER "
                     "  (PARTITION BY episode ORDER BY t DESC) / power(0.99, t) AS G, "
                     " row_number() OVER (PARTITION BY episode, state ORDER BY t) AS rn "
                     " FROM steps) "
                     "SELECT count(*), sum(v), sum(s) FROM "
                     "(SELECT state, count(*) AS v, sum(G) AS s FROM g WHERE rn = 1 GROUP BY state)",
                     1, NULL, 0);
  line("bare scan (sum of 4 columns)", scan, scan.seconds, plain.seconds);
  line("plain SQL first-visit (window functions)", plain, scan.seconds, plain.seconds);
  snprintf(o, sizeof o, OPT, "");
  snprintf(sql, sizeof sql, "SELECT dp_lsw(episode, t, state, reward, %s) FROM steps", o);
  line("dp_lsw, rows in random order", run(db, sql, runs, res, sizeof res), scan.seconds,
       plain.seconds);
  snprintf(o, sizeof o, OPT, ", \"lambda\": 300");
  snprintf(sql, sizeof sql, "SELECT dp_lsl(episode, t, state, reward, %s) FROM steps", o);
  line("dp_lsl, rows in random order", run(db, sql, runs, res, sizeof res), scan.seconds,
       plain.seconds);
  timing scan_g = run(db, "SELECT sum(episode), sum(t), sum(state), sum(reward) FROM steps_grouped",
                      runs, NULL, 0);
  snprintf(o, sizeof o, OPT, ", \"grouped\": true");
  snprintf(sql, sizeof sql, "SELECT dp_lsw(episode, t, state, reward, %s) FROM steps_grouped", o);
  line("bare scan, table stored by episode", scan_g, scan_g.seconds, plain.seconds);
  line("dp_lsw grouped:true (streaming)", run(db, sql, runs, res, sizeof res), scan_g.seconds,
       plain.seconds);
  snprintf(o, sizeof o, OPT, ", \"features\": {\"aggregate\": 10}");
  snprintf(sql, sizeof sql, "SELECT dp_lsw(episode, t, state, reward, %s) FROM steps", o);
  line("dp_lsw aggregate k=10, random order", run(db, sql, runs, res, sizeof res),
       scan.seconds, plain.seconds);
  printf("  (ratios: time / bare scan of the same table; peak: SQLite allocator high-water\n"
         "   during the call, minus what was in use before)\n");
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
  sqlite3_stmt *chk;
  int have = 0;
  if (sqlite3_prepare_v2(db, "SELECT count(*) FROM ps2_steps", -1, &chk, NULL) == SQLITE_OK &&
      sqlite3_step(chk) == SQLITE_ROW)
    have = sqlite3_column_int(chk, 0);
  sqlite3_finalize(chk);
  if (have == PS_EXPERTS * PS_TRAJ * PS_LEN) return;
  printf("building the dp_prefix_stable tables (%d steps, once)...\n",
         PS_EXPERTS * PS_TRAJ * PS_LEN);
  exec(db, "DROP TABLE IF EXISTS ps_steps; DROP TABLE IF EXISTS ps_policies;"
           "DROP TABLE IF EXISTS ps2_steps;"
           "CREATE TABLE ps_policies(expert, state, action, prob);"
           "CREATE TABLE ps2_steps(episode, t, state, action); BEGIN;");
  exec(db, "INSERT INTO ps_policies "
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

static void prefix_bench(sqlite3 *db) {
  char res[256];
  prefix_build(db);
  printf("\n== dp_prefix_stable: %d experts x %d trajectories x %d steps, |A| = 4, T = 100 ==\n",
         PS_EXPERTS, PS_TRAJ, PS_LEN);
  timing scan = run(db, "SELECT sum(episode), sum(t), sum(state), sum(action) FROM ps2_steps", 1,
                    NULL, 0);
  /* epsilon large enough that prefixes pass: the worst case for time, every
  ** examined step multiplies all 3,000 experts' running products. */
  timing call = run(db,
                    "SELECT count(*) FROM dp_prefix_stable("
                    "'SELECT episode, t, state, action FROM ps2_steps', "
                    "'SELECT expert, state, action, prob FROM ps_policies', "
                    "'{\"epsilon\": 1e6, \"delta\": 3e-4, \"p_min\": 0.02, \"T\": 100, \"L\": 200}')",
                    1, res, sizeof res);
  printf("  bare scan of the trajectories      %8.3f s\n", scan.seconds);
  printf("  dp_prefix_stable, whole call       %8.3f s  (%.2fx scan; %s transitions released;"
         " peak %.0f MB)\n", call.seconds, call.seconds / scan.seconds, res,
         (double)call.peak_bytes / 1e6);
  printf("  per examined trajectory            %8.3f ms (whole call / T)\n",
         1e3 * call.seconds / 100);
  printf("  (the call must read all %d steps to shuffle every trajectory; the T x m x L =\n"
         "   6e7 multiply-adds themselves take ~0.1 s, see tests/unit/test_prefix.c)\n",
         PS_EXPERTS * PS_TRAJ * PS_LEN);
}

#include "bench_q.c" /* dp_q_noise and dp_q_learn */

int main(int argc, char **argv) {
  const char *path = argc > 1 ? argv[1] : "build/bench.db";
  const char *ext = argc > 2 ? argv[2] : "./dprl";
  sqlite3 *db;
  char *err = NULL;
  if (sqlite3_open(path, &db) != SQLITE_OK) die(db, "open");
  sqlite3_enable_load_extension(db, 1);
  if (sqlite3_load_extension(db, ext, NULL, &err) != SQLITE_OK) {
    fprintf(stderr, "bench: load %s: %s\n", ext, err);
    return 1;
  }
  exec(db, "PRAGMA cache_size = -1000000; PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF");
  build(db);
  /* Warm the page cache so every query reads from memory. */
  run(db, "SELECT sum(episode), sum(t), sum(state), sum(reward) FROM steps", 1, NULL, 0);
  run(db, "SELECT sum(episode), sum(t), sum(state), sum(reward) FROM steps_grouped", 1, NULL, 0);
  const char *only = getenv("DPRL_BENCH");
  if (!only || strstr(only, "lsw")) policy_eval_bench(db);
  if (!only || strstr(only, "prefix")) prefix_bench(db);
  if (!only || strstr(only, "q")) bench_q(db);
  sqlite3_close(db);
  return 0;
}
