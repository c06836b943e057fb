/*
** bench_bind.c: the row aggregates with their options written into the
** SQL text, as the other sections do, and passed as a bound parameter, as
** Python, Node and every careful app pass them.  #included into bench.c
** after the other sections (it reads their tables: steps, q_transitions,
** mdp_steps); call bench_bind(db).  DPRL_BENCH=bind.
**
** Each pair prints the literal form against the bare scan of its table
** and the bound form against the literal one; the summary gives both
** against the scan.
*/

#define BB_LSW "{\"n_states\": 750, \"gamma\": 0.99, \"rmin\": 0, \"rmax\": 1, \"epsilon\": 1, " \
               "\"delta\": 1e-6, \"perturb\": \"statistics\"}"
#define BB_LSL "{\"n_states\": 750, \"gamma\": 0.99, \"rmin\": 0, \"rmax\": 1, \"epsilon\": 1, " \
               "\"delta\": 1e-6, \"lambda\": 300}"
#define BB_FVS "{\"n_states\": 750, \"gamma\": 0.99, \"rmin\": 0, \"rmax\": 1}"
#define BB_QL "{\"n_actions\": 2, \"gamma\": 0.9, \"rmin\": 0, \"rmax\": 1, \"lr\": 3e-4, " \
              "\"T\": 5000, \"B\": 64, \"k\": 60, \"epsilon\": 1, \"delta\": 1e-5}"
#define BB_MDP "{\"n_states\": 100, \"n_actions\": 4, \"gamma\": 0.95, \"rmin\": 0, " \
               "\"rmax\": 1, \"epsilon\": 1, \"delta\": 1e-5, \"horizon\": 50}"

/* median over the rounds of x's CPU time / y's */
static double bb_ratio(const item *x, const item *y) {
  double v[MAX_RUNS];
  int m = 0;
  for (int r = 0; r < RUNS; r++)
    if (x->have[r] && y->have[r]) v[m++] = x->cpu[r] / y->cpu[r];
  return m ? median_of(v, m) : NAN;
}

static void bench_bind(sqlite3 *db) {
  bq_build(db);
  bm_build(db);
  item it[] = {
      {.name = "bare scan of steps (4 columns)", .sql = SCAN("steps"), .ref = 0},
      {.name = "dp_lsw, options in the SQL",
       .sql = "SELECT dp_lsw(episode, t, state, reward, '" BB_LSW "') FROM steps", .ref = 0},
      {.name = "dp_lsw, options bound (?)",
       .sql = "SELECT dp_lsw(episode, t, state, reward, ?) FROM steps", .bind = BB_LSW, .ref = 1},
      {.name = "dp_lsl, options in the SQL",
       .sql = "SELECT dp_lsl(episode, t, state, reward, '" BB_LSL "') FROM steps", .ref = 0},
      {.name = "dp_lsl, options bound (?)",
       .sql = "SELECT dp_lsl(episode, t, state, reward, ?) FROM steps", .bind = BB_LSL, .ref = 3},
      {.name = "dp_fv_stats, options in the SQL",
       .sql = "SELECT length(dp_fv_stats(episode, t, state, reward, '" BB_FVS "')) FROM steps",
       .ref = 0},
      {.name = "dp_fv_stats, options bound (?)",
       .sql = "SELECT length(dp_fv_stats(episode, t, state, reward, ?)) FROM steps",
       .bind = BB_FVS, .ref = 5},
      {.name = "bare scan of q_transitions (4 columns)",
       .sql = "SELECT sum(s), sum(a), sum(r), sum(s_next) FROM q_transitions", .ref = 7},
      {.name = "dp_q_learn, options in the SQL",
       .sql = "SELECT dp_q_learn(s, a, r, s_next, '" BB_QL "') FROM q_transitions", .ref = 7},
      {.name = "dp_q_learn, options bound (?)",
       .sql = "SELECT dp_q_learn(s, a, r, s_next, ?) FROM q_transitions", .bind = BB_QL,
       .ref = 8},
      {.name = "bare scan of mdp_steps (5 columns)",
       .sql = "SELECT sum(episode), sum(t), sum(state), sum(action), sum(reward) FROM mdp_steps",
       .ref = 10},
      {.name = "dp_mdp, options in the SQL",
       .sql = "SELECT length(dp_mdp(episode, t, state, action, reward, '" BB_MDP "')) "
              "FROM mdp_steps",
       .ref = 10},
      {.name = "dp_mdp, options bound (?)",
       .sql = "SELECT length(dp_mdp(episode, t, state, action, reward, ?)) FROM mdp_steps",
       .bind = BB_MDP, .ref = 11},
  };
  int n = (int)(sizeof it / sizeof it[0]);
  printf("\n== options in the SQL text and bound as a parameter (%d rounds) ==\n", RUNS);
  run_once(db, SCAN("steps"), NULL, 0); /* warm the page cache */
  measure(db, it, n);
  report(it, n);
  printf("  Against the bare scan of the same table (median): \n");
  for (int i = 1; i < n; i += 2) {
    if (!strncmp(it[i].name, "bare scan", 9)) i++;
    int scan = it[i].ref;
    printf("    %-12.*s in the SQL %.2f, bound %.2f (bound / in the SQL %.3f)\n",
           (int)strcspn(it[i].name, ","), it[i].name, bb_ratio(&it[i], &it[scan]),
           bb_ratio(&it[i + 1], &it[scan]), bb_ratio(&it[i + 1], &it[i]));
  }
  printf("  Target: dp_lsw bound within 5%% of the literal form, both <= 1.2x the scan.\n");
}
