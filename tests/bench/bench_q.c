/*
** bench_q.c: dp_q_noise and dp_q_learn at scale.  #included into bench.c
** after its helpers (exec, run_once, item, measure, report); call
** bench_q(db).
**
**   - dp_q_noise on 1,000,000 query points over 4 actions (no path table:
**     sort + merge per action, one bridge draw per point), against a bare
**     scan of the points;
**   - the same with a path table in which every point is already stored
**     (loads, merges, writes nothing);
**   - dp_q_learn with T = 5000, B = 64 on 100,000 logged transitions of the
**     paper's task (Wang & Hegde 2019, E.1), against a bare scan.
** The tables are built once (q_points, q_transitions) in plain SQL.
*/
#include <sqlite3.h>
#include <stdio.h>

#define BQ_POINTS scaled(1000000)
#define BQ_TRANSITIONS scaled(100000)

static long long bq_count(sqlite3 *db, const char *table) {
  char sql[128];
  sqlite3_stmt *st;
  long long n = -1;
  snprintf(sql, sizeof sql, "SELECT count(*) FROM %s", table);
  if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
    n = sqlite3_column_int64(st, 0);
  sqlite3_finalize(st);
  return n;
}

/* 1,000,000 points: state = a scrambled fraction in [0, 1) (7919 n mod
** the prime 1000003, so ~all distinct), action n mod 4, q any value. */
static void bq_build(sqlite3 *db) {
  if (bq_count(db, "q_points") != BQ_POINTS) {
    printf("building q_points (%d rows, once)...\n", BQ_POINTS);
    exec(db,
         "DROP TABLE IF EXISTS q_points;"
         "CREATE TABLE q_points AS WITH RECURSIVE i(n) AS "
         " (SELECT 0 UNION ALL SELECT n + 1 FROM i WHERE n < 999999) "
         "SELECT (n * 7919 % 1000003) / 1000003.0 AS state, n % 4 AS action, "
         " 4.125 * (n * 7919 % 1000003) / 1000003.0 AS q FROM i");
  }
  if (bq_count(db, "q_transitions") != BQ_TRANSITIONS) {
    /* the paper's task, as samples/q_learning/task.sql, 2000 episodes */
    printf("building q_transitions (%d rows, once)...\n", BQ_TRANSITIONS);
    exec(db,
         "DROP TABLE IF EXISTS q_transitions;"
         "CREATE TABLE q_transitions AS WITH RECURSIVE walk(e, t, x, s) AS ("
         " SELECT 0, 0, 20190504, 20190504 * 1.0 / 2147483647 UNION ALL"
         " SELECT CASE WHEN t < 49 THEN e ELSE e + 1 END, CASE WHEN t < 49 THEN t + 1 ELSE 0 END,"
         "  x * 1291394886 % 2147483647,"
         "  CASE WHEN t < 49 THEN CASE WHEN (x * 48271 % 2147483647) * 2 / 2147483647 = 1"
         "   THEN min(1.0, s + 0.25 * (x * 182605794 % 2147483647) / 2147483647.0)"
         "   ELSE max(0.0, s - 0.25 * (x * 182605794 % 2147483647) / 2147483647.0) END"
         "  ELSE (x * 1291394886 % 2147483647) / 2147483647.0 END"
         " FROM walk WHERE e < 1999 OR t < 49),"
         "moved AS (SELECT s, (x * 48271 % 2147483647) * 2 / 2147483647 AS a,"
         " 0.25 * (x * 182605794 % 2147483647) / 2147483647.0 AS u FROM walk),"
         "stepped AS (SELECT s, a, CASE a WHEN 1 THEN min(1.0, s + u) ELSE max(0.0, s - u) END"
         " AS s_next FROM moved)"
         "SELECT s, a, 0.5 - abs(s_next - 0.5) AS r, s_next FROM stepped");
  }
}

#define BQ_NOISE(path)                                                                      \
  "SELECT count(*), sum(noisy_q) FROM dp_q_noise('SELECT state, action, q FROM q_points', " \
  "'{\"n_actions\": 4, \"sigma\": 0.5, \"beta\": 874" path "}')"
#define BQ_LEARN(j)                                                                       \
  "SELECT dp_q_learn(s, a, r, s_next, '{\"n_actions\": 2, \"gamma\": 0.9, \"rmin\": 0, \"rmax\": 1, \"lr\": 3e-4, " \
  "\"T\": 5000, \"B\": 64, " j "\"k\": 60, \"epsilon\": 1, \"delta\": 1e-5}') FROM q_transitions"

void bench_q(sqlite3 *db) {
  bq_build(db);
  /* with a path table: stored once before the rounds, then every run finds
  ** all the points stored (loads, merges, writes nothing) */
  exec(db, "DROP TABLE IF EXISTS q_bench_path; DROP TABLE IF EXISTS q_bench_path_params");
  run_once(db, BQ_NOISE(", \"path\": \"q_bench_path\""), NULL, 0);
  item it[] = {
      {.name = "bare scan of the points (3 columns)",
       .sql = "SELECT sum(state), sum(action), sum(q) FROM q_points",
       .ref = 0},
      {.name = "dp_q_noise, 10^6 points, no path table", .sql = BQ_NOISE(""), .ref = 0},
      {.name = "dp_q_noise, path table, all points stored",
       .sql = BQ_NOISE(", \"path\": \"q_bench_path\""),
       .ref = 0},
      {.name = "bare scan of the transitions (4 columns)",
       .sql = "SELECT sum(s), sum(a), sum(r), sum(s_next) FROM q_transitions",
       .ref = 3},
      {.name = "dp_q_learn, T = 5000, B = 64 (J = T/B)", .sql = BQ_LEARN(""), .ref = 3},
      {.name = "dp_q_learn, same with J = 1 (one path)", .sql = BQ_LEARN("\"J\": 1, "), .ref = 3},
  };
  int n = (int)(sizeof it / sizeof it[0]);
  printf(
      "\n== dp_q_noise: %d query points over 4 actions; dp_q_learn: %d transitions "
      "(%d rounds) ==\n",
      BQ_POINTS, BQ_TRANSITIONS, RUNS);
  run_once(db, it[0].sql, NULL, 0); /* warm */
  run_once(db, it[3].sql, NULL, 0);
  measure(db, it, n);
  report(it, n);
  exec(db, "DROP TABLE IF EXISTS q_bench_path; DROP TABLE IF EXISTS q_bench_path_params");
  printf("  Target: dp_q_noise <= 0.5 s on quiet runs (median here %.3f s CPU).\n",
         median_cpu(&it[1]));
}
