/*
** bench_mdp.c: dp_mdp on 5,000,000 steps.  #included into bench.c after
** its helpers (exec, run_once, item, measure, report); call bench_mdp(db).
**
** 100,000 episodes x 50 steps, 100 states, 4 actions, rows in random
** order (mdp_steps, built once): the release with a horizon (the exact
** path: integer sums, no clip), with a clip that binds (the general path:
** each episode gathered, its norm taken, scaled), and with tent features
** over the same states read as reals, each against a bare scan of the
** same five columns.  Target: the release with a horizon <= 1.5x the scan.
*/
#include <sqlite3.h>
#include <stdio.h>

#define BM_EPISODES scaled(100000)
#define BM_STEPS 50
#define BM_STATES 100

static void bm_build(sqlite3 *db) {
  if (count_rows(db, "mdp_steps") == (long long)BM_EPISODES * BM_STEPS) return;
  printf("building mdp_steps (%lld steps, once)...\n", (long long)BM_EPISODES * BM_STEPS);
  fflush(stdout);
  exec(db,
       "DROP TABLE IF EXISTS mdp_steps; DROP TABLE IF EXISTS mdp_steps_grouped;"
       "CREATE TABLE mdp_steps_grouped(episode INTEGER, t INTEGER, state INTEGER, "
       "action INTEGER, reward REAL); BEGIN");
  sqlite3_stmt *ins;
  if (sqlite3_prepare_v2(db, "INSERT INTO mdp_steps_grouped VALUES (?,?,?,?,?)", -1, &ins, NULL))
    die(db, "prepare insert");
  for (int e = 0; e < BM_EPISODES; e++) {
    int s = (int)(xorshift() % BM_STATES);
    for (int t = 0; t < BM_STEPS; t++) {
      int a = (int)(xorshift() % 4);
      sqlite3_bind_int(ins, 1, e);
      sqlite3_bind_int(ins, 2, t);
      sqlite3_bind_int(ins, 3, s);
      sqlite3_bind_int(ins, 4, a);
      sqlite3_bind_double(ins, 5, (double)(xorshift() % 1000) / 1000.0);
      if (sqlite3_step(ins) != SQLITE_DONE) die(db, "insert");
      sqlite3_reset(ins);
      s = (s + BM_STATES + a - 2 + (int)(xorshift() % 3) - 1) % BM_STATES;
    }
  }
  sqlite3_finalize(ins);
  exec(db,
       "COMMIT; CREATE TABLE mdp_steps AS SELECT * FROM mdp_steps_grouped ORDER BY random();"
       "DROP TABLE mdp_steps_grouped");
}

#define BM_OPT                                                                          \
  "'{\"n_states\": 100, \"n_actions\": 4, \"gamma\": 0.95, \"rmin\": 0, \"rmax\": 1, " \
  "\"epsilon\": 1, \"delta\": 1e-5"

/* dp_mdp_value's interval (ALGORITHMS.md 14.4) on a model of 100 states
** and 5 actions released from 20,000 of the episodes, their first 10
** steps: each of the 200 draws builds a log of that size, releases and
** values it again.  The noise-only error bar is the reference. */
static void bench_mdp_interval(sqlite3 *db) {
  exec(db,
       "DROP TABLE IF EXISTS mdp_interval_model; CREATE TEMP TABLE mdp_interval_model AS "
       "SELECT dp_mdp(episode, t, state, (action + t) % 5, reward, '{\"n_states\": 100, "
       "\"n_actions\": 5, \"gamma\": 0.95, \"rmin\": 0, \"rmax\": 1, \"epsilon\": 1, "
       "\"delta\": 1e-5, \"horizon\": 10, \"seed\": 1}') AS m FROM mdp_steps "
       "WHERE episode < 20000 AND t < 10");
#define BM_VALUE(opts)                                                                     \
  "SELECT length(dp_mdp_value(m, (WITH RECURSIVE s(i) AS (SELECT 0 UNION ALL SELECT i + 1 "  \
  "FROM s WHERE i < 99) SELECT json_group_array(i % 5) FROM s), '{\"horizon\": 10, " opts  \
  "}')) FROM mdp_interval_model"
  item it[] = {
      {.name = "dp_mdp_value, noise bootstrap (default, 200)", .sql = BM_VALUE("\"bootstrap\": 200"),
       .ref = 0},
      {.name = "dp_mdp_value, interval log (200 draws)", .sql = BM_VALUE("\"interval\": \"log\""),
       .ref = 0},
  };
#undef BM_VALUE
  int n = (int)(sizeof it / sizeof it[0]);
  printf("\n== dp_mdp_value's interval: 100 states x 5 actions, 20,000 episodes of 10 steps "
         "(%d rounds) ==\n", RUNS);
  measure(db, it, n);
  report(it, n);
  printf("  Target: the interval for one policy < 2 s CPU (here %.3f s).\n", median_cpu(&it[1]));
}

static void bench_mdp(sqlite3 *db) {
  bm_build(db);
  item it[] = {
      {.name = "bare scan (sum of the 5 columns)",
       .sql = "SELECT sum(episode), sum(t), sum(state), sum(action), sum(reward) FROM mdp_steps",
       .ref = 0},
      {.name = "dp_mdp, horizon 50, no clip (exact path)",
       .sql = "SELECT length(dp_mdp(episode, t, state, action, reward, " BM_OPT
              ", \"horizon\": 50, \"clip\": \"none\"}')) FROM mdp_steps",
       .ref = 0,
       .steps = BM_EPISODES * (double)BM_STEPS},
      {.name = "dp_mdp, horizon 50 (default: automatic clip)",
       .sql = "SELECT length(dp_mdp(episode, t, state, action, reward, " BM_OPT
              ", \"horizon\": 50}')) FROM mdp_steps",
       .ref = 0,
       .steps = BM_EPISODES * (double)BM_STEPS},
      {.name = "dp_mdp, horizon 50, clip 20 (general path)",
       .sql = "SELECT length(dp_mdp(episode, t, state, action, reward, " BM_OPT
              ", \"horizon\": 50, \"clip\": 20}')) FROM mdp_steps",
       .ref = 0,
       .steps = BM_EPISODES * (double)BM_STEPS},
      {.name = "dp_mdp, tent features K = 10, horizon 50",
       .sql = "SELECT length(dp_mdp(episode, t, state * 1.0, action, reward, "
              "'{\"n_states\": 10, \"n_actions\": 4, \"gamma\": 0.95, \"rmin\": 0, \"rmax\": 1, "
              "\"epsilon\": 1, \"delta\": 1e-5, \"horizon\": 50, "
              "\"features\": {\"tent\": 10, \"low\": 0, \"high\": 99}}')) FROM mdp_steps",
       .ref = 0,
       .steps = BM_EPISODES * (double)BM_STEPS},
  };
  int n = (int)(sizeof it / sizeof it[0]);
  printf("\n== dp_mdp: %d episodes x %d steps, %d states, 4 actions, random order (%d rounds) ==\n",
         BM_EPISODES, BM_STEPS, BM_STATES, RUNS);
  run_once(db, it[0].sql, NULL, 0); /* warm the page cache */
  measure(db, it, n);
  report(it, n);
  double q[3];
  ratio_stats(it, 1, 0, q);
  printf("  Target: dp_mdp with a horizon <= 1.5x the bare scan (median ratio here %.2f).\n", q[1]);
  bench_mdp_interval(db);
}
