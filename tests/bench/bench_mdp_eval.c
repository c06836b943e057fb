/*
** bench_mdp_eval.c: dp_mdp_value and dp_mdp_plan on a 1,000-state,
** 10-action model (10,010,000 count entries, about 190 MB of JSON).
** #included into bench.c after its helpers (exec, run_once, item, measure,
** report, xorshift); call bench_mdp_eval(db).  DPRL_BENCH=offpolicy.
**
** The model is built once per run in memory, as a private release would
** look: every count entry noisy (sigma 5, written with 17 significant
** digits), each pair with three real next states; bench_mdp_model()
** hands it to SQL without a copy (SQLITE_STATIC), so the times are
** dprl's: reading the JSON, estimating, solving.  The reference is
** SQLite's own parse of the same text (json_valid).  The bootstrap is
** measured separately, with 5 draws: its cost is linear in the draws.
*/
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>

#define MV_S 1000
#define MV_A 10
#define MV_SIGMA 5.0

static char *mv_model, *mv_policy, *mv_policies;

static double mv_normal(void) { /* Box-Muller on xorshift: bench data only */
  double u = ((double)(xorshift() >> 11) + 1) * 0x1.0p-53, v = (double)(xorshift() >> 11) * 0x1.0p-53;
  return sqrt(-2 * log(u)) * cos(6.283185307179586 * v);
}

static void mv_put(char **p, double x) { *p += sprintf(*p, "%.17g,", x); }

static void mv_build(void) {
  size_t cap = (size_t)MV_S * MV_A * (MV_S + 1) * 26 + 100000;
  char *p = mv_model = malloc(cap);
  if (!p) {
    fprintf(stderr, "bench: no memory for the model\n");
    exit(1);
  }
  printf("building a %dx%d model (%d count entries, once per run)...\n", MV_S, MV_A,
         MV_S * MV_A * (MV_S + 1));
  p += sprintf(p,
               "{\"mechanism\":\"dp_mdp\",\"private\":true,\"unit\":\"episode\",\"n_states\":%d,"
               "\"n_actions\":%d,\"gamma\":0.99,\"rmin\":0,\"rmax\":1,\"epsilon\":1,"
               "\"delta\":1e-5,\"horizon\":50,\"clip\":null,\"sensitivity\":7.07,\"sigma\":%g,"
               "\"reward_sigma\":%g,\"reward_center\":0.5,\"features\":\"tabular\",\"start\":[",
               MV_S, MV_A, MV_SIGMA, MV_SIGMA);
  for (int s = 0; s < MV_S; s++) mv_put(&p, 100 + MV_SIGMA * mv_normal());
  p[-1] = ']';
  p += sprintf(p, ",\"counts\":[");
  static double row[MV_S + 1];
  for (int s = 0; s < MV_S; s++) {
    *p++ = '[';
    for (int a = 0; a < MV_A; a++) {
      for (int k = 0; k <= MV_S; k++) row[k] = MV_SIGMA * mv_normal();
      for (int j = 0; j < 3; j++) row[xorshift() % (MV_S + 1)] += 200 + (double)(xorshift() % 1800);
      *p++ = '[';
      for (int k = 0; k <= MV_S; k++) mv_put(&p, row[k]);
      p[-1] = ']';
      *p++ = ',';
    }
    p[-1] = ']';
    *p++ = ',';
  }
  p[-1] = ']';
  p += sprintf(p, ",\"reward_sums\":[");
  for (int s = 0; s < MV_S; s++) {
    *p++ = '[';
    for (int a = 0; a < MV_A; a++) mv_put(&p, 500 * mv_normal());
    p[-1] = ']';
    *p++ = ',';
  }
  p[-1] = ']';
  sprintf(p, "}");
  /* a policy as action numbers, and five named ones */
  char *q = mv_policy = malloc(4 * MV_S + 8);
  *q++ = '[';
  for (int s = 0; s < MV_S; s++) q += sprintf(q, "%d,", s % MV_A);
  q[-1] = ']';
  *q = 0;
  q = mv_policies = malloc(5 * (4 * MV_S + 16) + 8);
  *q++ = '{';
  for (int i = 0; i < 5; i++) {
    q += sprintf(q, "\"p%d\":[", i);
    for (int s = 0; s < MV_S; s++) q += sprintf(q, "%d,", (s + i) % MV_A);
    q[-1] = ']';
    *q++ = ',';
  }
  q[-1] = '}';
  *q = 0;
}

static void mv_model_fn(sqlite3_context *c, int n, sqlite3_value **v) {
  (void)n;
  (void)v;
  sqlite3_result_text(c, mv_model, -1, SQLITE_STATIC);
}
static void mv_policy_fn(sqlite3_context *c, int n, sqlite3_value **v) {
  (void)n;
  sqlite3_result_text(c, sqlite3_value_int(v[0]) ? mv_policies : mv_policy, -1, SQLITE_STATIC);
}

#define MV_VALUE(many, opts) \
  "SELECT dp_mdp_value(bench_mdp_model(), bench_mdp_policy(" many "), '" opts "')"

void bench_mdp_eval(sqlite3 *db) {
  if (!mv_model) mv_build();
  sqlite3_create_function(db, "bench_mdp_model", 0, SQLITE_UTF8 | SQLITE_DETERMINISTIC, NULL,
                          mv_model_fn, NULL, NULL);
  sqlite3_create_function(db, "bench_mdp_policy", 1, SQLITE_UTF8 | SQLITE_DETERMINISTIC, NULL,
                          mv_policy_fn, NULL, NULL);
  item it[] = {
      {.name = "json_valid: SQLite parses the same JSON", .sql = "SELECT json_valid(bench_mdp_model())",
       .ref = 0},
      {.name = "dp_mdp_value: read + estimate (horizon 1)",
       .sql = MV_VALUE("0", "{\"horizon\": 1, \"bootstrap\": 0}"),
       .ref = 0},
      {.name = "dp_mdp_value, one policy, no bootstrap", .sql = MV_VALUE("0", "{\"bootstrap\": 0}"),
       .ref = 0},
      {.name = "dp_mdp_value, 5 policies, no bootstrap", .sql = MV_VALUE("1", "{\"bootstrap\": 0}"),
       .ref = 0},
      {.name = "dp_mdp_plan", .sql = "SELECT dp_mdp_plan(bench_mdp_model())", .ref = 0},
      {.name = "dp_mdp_value, one policy, bootstrap 5", .sql = MV_VALUE("0", "{\"bootstrap\": 5}"),
       .ref = 0},
  };
  int n = (int)(sizeof it / sizeof it[0]);
  printf("\n== dp_mdp_value / dp_mdp_plan: %d states x %d actions, %zu MB of JSON (%d rounds) ==\n",
         MV_S, MV_A, strlen(mv_model) >> 20, RUNS);
  run_once(db, it[0].sql, NULL, 0); /* warm */
  measure(db, it, n);
  report(it, n);
  double read = median_cpu(&it[1]), value = median_cpu(&it[2]), plan = median_cpu(&it[4]);
  double draw = (median_cpu(&it[5]) - value) / 5;
  printf(
      "  Target: evaluation and planning <= 0.5 s each.  Here, whole calls: value %.3f s,\n"
      "  plan %.3f s CPU, of which reading the JSON and estimating take %.3f s; on the\n"
      "  read model: value %.3f s, plan %.3f s.  Bootstrap (not included above): %.3f s a\n"
      "  draw, %.0f s for the default 200 (option bootstrap: 0 turns it off).\n",
      value, plan, read, value - read, plan - read, draw, 200 * draw);
}
