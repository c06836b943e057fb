/*
** test_mdp_sparse_release.c: what dp_mdp's sparse layout releases
** (ext/mdp/, ALGORITHMS.md §13.5).
**
** - The layout: a seeded release replayed from the same stream (dense
**   parts, then the touched cells in key order): every touched cell whose
**   noisy value is above tau appears, sorted, and no other, over many
**   seeds; max_cells keeps the largest; one seed, one release.
** - The attack: coupled logs D and D' = D + an episode that adds a new
**   cell of count H; over many seeded releases the new cell appears in
**   D''s at most delta (+ 4 standard errors) of the time (never in D's),
**   and does appear (the bound is not vacuous); an untouched cell's noise
**   alone passes tau at most delta_0 / T_c of the time.
** - Option errors, from the options alone.
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "mdp/mdp.h"

#define T_ DPRL_MDP_TICK

static int parse(dprl_mdp_config *c, const char *json, dprl_error *err) {
  memset(err, 0, sizeof *err);
  return dprl_mdp_config_parse(c, "dp_mdp", json, strlen(json), 0, 0, NULL, err);
}

typedef struct episode {
  size_t n;
  int s[8], a[8];
  double x[8], r[8];
} episode;

/* ---- the layout ------------------------------------------------------------- */

/* A log of episodes (state, action) per step, through the step buffer. */
static int collect(const dprl_mdp_config *c, dprl_mdp_stats *st, const int (*eps)[4][2],
                   const int *len, const int *copies, size_t n, dprl_error *err) {
  dprl_step_buffer buf;
  memset(&buf, 0, sizeof buf);
  int rc = DPRL_OK;
  int64_t id = 0;
  for (size_t i = 0; i < n; i++)
    for (int k = 0; k < copies[i]; k++, id++)
      for (int t = 0; t < len[i] && !rc; t++) {
        dprl_key ep = {0, id, NULL, 0};
        rc = dprl_step_buffer_push(&buf, &ep, t, dprl_mdp_pack(c, eps[i][t][0], eps[i][t][1]),
                                   dprl_mdp_reward_ticks(c, 1), err);
      }
  if (!rc) rc = dprl_mdp_collect(st, c, &buf, NULL, NULL, NULL, err);
  dprl_step_buffer_free(&buf);
  return rc;
}

/* The release's cells replayed: the dense parts' noise, then each touched
** cell's, from the same seeded stream; those above tau, in key order. */
static size_t replay(const dprl_mdp_config *c, const dprl_mdp_stats *st, uint64_t seed,
                     uint64_t *keys, double *vals) {
  dprl_rng rng;
  dprl_rng_init_seeded(&rng, seed, DPRL_STREAM_MDP);
  for (size_t j = 0; j < c->dim; j++) dprl_discrete_gaussian(&rng, c->steps);
  size_t n = 0;
  for (size_t j = 0; j < st->n_cells; j++) {
    double x = c->grid * (double)(dprl_mdp_grid_value(c, st->cells[j].ticks) +
                                  dprl_discrete_gaussian(&rng, c->steps));
    if (x > c->tau) keys[n] = st->cells[j].key, vals[n++] = x;
  }
  dprl_rng_wipe(&rng);
  return n;
}

static void test_layout(void) {
  /* S = 4, A = 2, H = 3; counts near tau for some cells, far above or
  ** below for others */
  static const int eps[][4][2] = {{{0, 0}, {1, 1}, {2, 0}, {3, 1}},
                                  {{1, 0}, {1, 0}, {1, 0}, {1, 0}},
                                  {{2, 1}, {0, 1}, {3, 0}, {0, 0}},
                                  {{3, 0}, {2, 1}, {2, 1}, {0, 0}}};
  static const int len[] = {4, 4, 3, 2}, copies[] = {60, 9, 30, 15};
  dprl_mdp_config c;
  dprl_mdp_stats st;
  dprl_error err;
  CHECK(parse(&c, "{\"n_states\": 4, \"n_actions\": 2, \"gamma\": 0.9, \"rmin\": 0, \"rmax\": 1, "
                  "\"epsilon\": 4, \"delta\": 0.3, \"clip\": \"none\", \"horizon\": 3, \"transitions\": \"sparse\"}",
              &err) == DPRL_OK && c.cells_max == 32,
        "sparse S = 4, A = 2: cells_max = S A S without a length limit");
  dprl_mdp_stats_init(&st, &c, NULL, &err);
  CHECK(collect(&c, &st, eps, len, copies, 4, &err) == DPRL_OK, "collect a log");
  /* the support: (0,0)->1 60, (0,1)->3 30, (1,0)->1 27, (1,1)->2 60, (2,0)->3 60,
  ** (2,1)->0 30, (3,0)->2 15 (near tau); (3,0) and (2,1) also end */
  static const uint64_t want[] = {(0 * 2 + 0) * 4 + 1, (0 * 2 + 1) * 4 + 3, (1 * 2 + 0) * 4 + 1,
                                  (1 * 2 + 1) * 4 + 2, (2 * 2 + 0) * 4 + 3, (2 * 2 + 1) * 4 + 0,
                                  (3 * 2 + 0) * 4 + 2};
  static const int64_t wc[] = {60, 30, 27, 60, 60, 30, 15};
  int supp = st.merged && st.n_cells == 7;
  for (size_t i = 0; supp && i < 7; i++)
    supp = st.cells[i].key == want[i] && st.cells[i].ticks == wc[i] * (int64_t)T_;
  CHECK(supp, "the merged cells: the support, sorted by (s, a, s'), each with its exact count");
  double *x = malloc(c.dim * sizeof *x), vals[64];
  dprl_mdp_cell kept[64];
  uint64_t keys[64];
  int same = 1, outside = 0, sorted = 1, some_cut = 0, all_kept = 0, seeds = 400;
  size_t nk, above;
  for (int seed = 0; seed < seeds; seed++) {
    dprl_rng rng;
    dprl_rng_init_seeded(&rng, (uint64_t)seed, DPRL_STREAM_MDP);
    dprl_mdp_perturb(&c, &st, &rng, x, NULL, &err);
    dprl_mdp_perturb_cells(&c, &st, &rng, kept, &nk, &above, NULL, &err);
    dprl_rng_wipe(&rng);
    size_t n = replay(&c, &st, (uint64_t)seed, keys, vals);
    same &= nk == n && above == n;
    for (size_t i = 0; i < nk && same; i++) {
      same &= kept[i].key == keys[i] && kept[i].w == vals[i] && kept[i].w > c.tau;
      sorted &= i == 0 || kept[i].key > kept[i - 1].key;
      int in = 0;
      for (size_t j = 0; j < 7; j++) in |= kept[i].key == want[j];
      outside += !in;
    }
    int near = 0; /* the cell of count 15 */
    for (size_t i = 0; i < nk; i++) near |= kept[i].key == want[6];
    some_cut |= !near;
    all_kept |= near;
  }
  char what[200];
  snprintf(what, sizeof what, "%d seeds: the kept cells are exactly the touched cells whose noisy "
           "value is above tau = %.6g, in the stream's order, sorted", seeds, c.tau);
  CHECK(same && sorted, what);
  snprintf(what, sizeof what, "no untouched cell ever appears; the cell of count 15, near tau = "
           "%.4g (sigma %.4g), is kept for some seeds and dropped for others", c.tau, c.sigma);
  CHECK(outside == 0 && some_cut && all_kept, what);
  /* max_cells: the largest noisy values */
  dprl_mdp_config c2 = c;
  c2.cells_max = 3;
  int largest = 1, tested = 0;
  for (int seed = 0; seed < 100; seed++) {
    dprl_rng rng;
    dprl_rng_init_seeded(&rng, (uint64_t)seed, DPRL_STREAM_MDP);
    dprl_mdp_perturb(&c2, &st, &rng, x, NULL, &err);
    dprl_mdp_perturb_cells(&c2, &st, &rng, kept, &nk, &above, NULL, &err);
    dprl_rng_wipe(&rng);
    size_t n = replay(&c2, &st, (uint64_t)seed, keys, vals);
    if (n <= 3) {
      largest &= nk == n;
      continue;
    }
    tested++;
    /* the 3rd largest replayed value; every kept one at least that, every
    ** dropped one at most */
    double v3[64];
    memcpy(v3, vals, n * sizeof *v3);
    for (size_t i = 0; i < 3; i++)
      for (size_t j = i + 1; j < n; j++)
        if (v3[j] > v3[i]) {
          double t = v3[i];
          v3[i] = v3[j];
          v3[j] = t;
        }
    largest &= nk == 3 && above == n;
    for (size_t i = 0; i < nk; i++) largest &= kept[i].w >= v3[2] && (!i || kept[i].key > kept[i - 1].key);
    for (size_t j = 0; j < n; j++) {
      int in = 0;
      for (size_t i = 0; i < nk; i++) in |= kept[i].key == keys[j];
      if (!in) largest &= vals[j] <= v3[2];
    }
  }
  CHECK(largest && tested > 50, "max_cells 3: the 3 largest noisy values are kept, sorted by key; "
                                "above counts every cell that passed");
  free(x);
  dprl_mdp_stats_free(&st);
  dprl_mdp_config_free(&c);
}

/* One seed, one release (bytes); another seed, another. */
static void test_determinism(void) {
  static const int eps[][4][2] = {{{0, 0}, {1, 1}, {2, 0}, {3, 1}}, {{1, 0}, {1, 0}, {1, 0}, {1, 0}}};
  static const int len[] = {4, 4}, copies[] = {80, 20};
  const char *opts[] = {"{\"n_states\": 4, \"n_actions\": 2, \"gamma\": 0.9, \"rmin\": 0, "
                        "\"rmax\": 1, \"epsilon\": 4, \"delta\": 0.3, \"clip\": \"none\", \"horizon\": 3, "
                        "\"transitions\": \"sparse\", \"seed\": 7}",
                        "{\"n_states\": 4, \"n_actions\": 2, \"gamma\": 0.9, \"rmin\": 0, "
                        "\"rmax\": 1, \"epsilon\": 4, \"delta\": 0.3, \"clip\": \"none\", \"horizon\": 3, "
                        "\"transitions\": \"sparse\", \"seed\": 8}"};
  dprl_buf out[3] = {{0}, {0}, {0}};
  for (int k = 0; k < 3; k++) {
    dprl_mdp_config c;
    dprl_mdp_stats st;
    dprl_error err;
    parse(&c, opts[k == 2], &err);
    dprl_mdp_stats_init(&st, &c, NULL, &err);
    collect(&c, &st, eps, len, copies, 2, &err);
    CHECK(dprl_mdp_release(&c, &st, &out[k], NULL, &err) == DPRL_OK, "a seeded sparse release");
    dprl_mdp_stats_free(&st);
    dprl_mdp_config_free(&c);
  }
  CHECK(out[0].len == out[1].len && memcmp(out[0].data, out[1].data, out[0].len) == 0 &&
            !(out[0].len == out[2].len && memcmp(out[0].data, out[2].data, out[0].len) == 0) &&
            strstr(out[0].data, "\"transitions\":\"sparse\"") &&
            strstr(out[0].data, "\"next\":[[0,0,1,"),
        "the same seed gives the same bytes, another seed others");
  for (int k = 0; k < 3; k++) dprl_buf_free(&out[k]);
}

/* ---- the attack --------------------------------------------------------------- */

/* D: 30 copies of an episode in states 0 and 1; D' = D + one episode that
** stays in state 2 with action 0 for H + 1 steps, adding the cell
** (2, 0, 2) with count H.  The event "the release holds (2, 0, 2)" has
** probability 0 under D (never touched), so (eps, delta)-DP says at most
** delta under D'. */
static void test_attack(void) {
  static const int eps[][4][2] = {{{0, 0}, {1, 0}, {0, 0}, {1, 0}}, {{2, 0}, {2, 0}, {2, 0}, {2, 0}}};
  static const int len[] = {4, 4}, with[] = {30, 1}, without[] = {30, 0};
  const double delta = 0.2;
  dprl_mdp_config c;
  dprl_mdp_stats d, d2;
  dprl_error err;
  CHECK(parse(&c, "{\"n_states\": 3, \"n_actions\": 1, \"gamma\": 0.9, \"rmin\": 0, \"rmax\": 1, "
                  "\"epsilon\": 1, \"delta\": 0.2, \"clip\": \"none\", \"horizon\": 3, \"transitions\": \"sparse\"}",
              &err) == DPRL_OK,
        "attack: eps 1, delta 0.2, H 3");
  dprl_mdp_stats_init(&d, &c, NULL, &err);
  dprl_mdp_stats_init(&d2, &c, NULL, &err);
  collect(&c, &d, eps, len, without, 2, &err);
  collect(&c, &d2, eps, len, with, 2, &err);
  const uint64_t cell = (2 * 1 + 0) * 3 + 2;
  int touched = 0;
  for (size_t i = 0; i < d2.n_cells; i++) touched |= d2.cells[i].key == cell && d2.cells[i].ticks == 3 * (int64_t)T_;
  for (size_t i = 0; i < d.n_cells; i++) touched &= d.cells[i].key != cell;
  CHECK(touched, "D' adds the cell (2, 0, 2) with count H = 3; D does not touch it");
  /* N from the bound: 4 standard errors of a frequency near delta are a
  ** tenth of delta at N = 1600 (1 - delta) / delta; far more, to see the
  ** rare event itself */
  const char *sizes = getenv("DPRL_TEST_SIZES"); /* the sanitized pass: fewer draws */
  int N = sizes && strcmp(sizes, "small") == 0 ? 40000 : 200000;
  double *x = malloc(c.dim * sizeof *x);
  dprl_mdp_cell kept[16];
  size_t nk, above;
  int in_d = 0, in_d2 = 0, noise_only = 0;
  for (int seed = 0; seed < N; seed++) {
    for (int side = 0; side < 2; side++) {
      dprl_rng rng;
      dprl_rng_init_seeded(&rng, (uint64_t)seed, DPRL_STREAM_MDP); /* coupled: the same seed */
      dprl_mdp_perturb(&c, side ? &d2 : &d, &rng, x, NULL, &err);
      dprl_mdp_perturb_cells(&c, side ? &d2 : &d, &rng, kept, &nk, &above, NULL, &err);
      for (size_t i = 0; i < nk; i++)
        if (kept[i].key == cell) *(side ? &in_d2 : &in_d) += 1;
      if (side) /* M'(D): an untouched cell given noise alone, against tau */
        noise_only += c.grid * (double)dprl_discrete_gaussian(&rng, c.steps) > c.tau;
      dprl_rng_wipe(&rng);
    }
  }
  double f = (double)in_d2 / N, se = sqrt(delta * (1 - delta) / N);
  double f0 = (double)noise_only / N, p0 = c.delta_thr / (double)c.new_cells;
  double se0 = sqrt(p0 * (1 - p0) / N);
  char what[300];
  snprintf(what, sizeof what, "%d coupled releases: the new cell in D' %.5f of the time, at most "
           "e^eps 0 + delta = %.2f (+ 4 se %.4f), and more than 0 (the bound is not vacuous); in D "
           "%d times", N, f, delta, 4 * se, in_d);
  CHECK(in_d == 0 && f <= delta + 4 * se && in_d2 > 0, what);
  snprintf(what, sizeof what, "an untouched cell's noise alone passes tau = %.4g (%.3f sigma) "
           "%.5f of the time: at most delta_0 / T_c = %.5f (+ 4 se), and more than 0", c.tau,
           c.tau / c.sigma, f0, p0);
  CHECK(f0 <= p0 + 4 * se0 && noise_only > 0, what);
  free(x);
  dprl_mdp_stats_free(&d);
  dprl_mdp_stats_free(&d2);
  dprl_mdp_config_free(&c);
}

/* ---- options -------------------------------------------------------------------- */

static void test_options(void) {
  static const char *base = "\"n_states\": 3, \"n_actions\": 2, \"gamma\": 0.9, \"rmin\": 0, "
                            "\"rmax\": 1, \"delta\": 1e-5";
  static const struct {
    const char *more, *want;
  } cases[] = {
      {"\"clip\": 2, \"transitions\": \"sparse\"",
       "dp_mdp: option transitions \"sparse\" needs option horizon: the threshold's delta counts "
       "the cells one episode can add, at most one per counted step"},
      {"\"clip\": \"none\", \"horizon\": 2, \"transitions\": \"thin\"",
       "dp_mdp: option transitions must be one of \"auto\", \"dense\", \"sparse\", got \"thin\""},
      {"\"clip\": \"none\", \"horizon\": 2, \"transitions\": \"sparse\", \"max_cells\": 0",
       "dp_mdp: option max_cells must be in [1, 18], got 0 (at most S A S = 18 cells)"},
      {"\"clip\": \"none\", \"horizon\": 2, \"transitions\": \"sparse\", \"max_cells\": 19",
       "dp_mdp: option max_cells must be in [1, 18], got 19 (at most S A S = 18 cells)"},
      {"\"clip\": \"none\", \"horizon\": 2, \"max_cells\": 5",
       "dp_mdp: option max_cells applies to a sparse release, and this one is dense "
       "(transitions \"auto\" with S A (S + 1) at most 65536)"},
      {"\"clip\": \"none\", \"horizon\": 2, \"transitions\": \"sparse\", \"epsilon\": 800",
       "dp_mdp: epsilon = 800 is too large for the sparse release: its threshold's delta_0 = "
       "(delta/2)/(1 + e^epsilon) = 0 is below the smallest normal double (ALGORITHMS.md "
       "§13.5); give a smaller epsilon or \"transitions\": \"dense\""},
      /* subnormal: T_c / delta_0 would overflow and tau be infinite */
      {"\"clip\": \"none\", \"horizon\": 2, \"transitions\": \"sparse\", \"epsilon\": 700",
       "dp_mdp: epsilon = 700 is too large for the sparse release: its threshold's delta_0 = "
       "(delta/2)/(1 + e^epsilon) = 4.92984e-310 is below the smallest normal double "
       "(ALGORITHMS.md §13.5); give a smaller epsilon or \"transitions\": \"dense\""},
      {"\"clip\": \"none\", \"horizon\": 2, \"transitions\": \"dense\", \"max_cells\": 5",
       "dp_mdp: option max_cells applies to a sparse release, and this one is dense "
       "(transitions \"dense\")"},
  };
  char json[600];
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    dprl_mdp_config c;
    dprl_error err;
    snprintf(json, sizeof json, "{%s, %s%s}", base, cases[i].more,
             strstr(cases[i].more, "epsilon") ? "" : ", \"epsilon\": 1");
    int rc = parse(&c, json, &err);
    CHECK(rc == DPRL_EINVAL && strcmp(err.msg, cases[i].want) == 0, err.msg);
    if (rc != DPRL_EINVAL || strcmp(err.msg, cases[i].want)) printf("#   want %s\n", cases[i].want);
  }
  /* auto: sparse above 65536 count entries with a horizon; 31 states, 66
  ** actions make 65472, 67 make 66464 */
  static const struct {
    int S, A;
    const char *more;
    int sparse;
  } autos[] = {{31, 66, "\"clip\": \"none\", \"horizon\": 2", 0}, {31, 67, "\"clip\": \"none\", \"horizon\": 2", 1},
               {31, 67, "\"clip\": 3", 0}, {31, 67, "\"clip\": \"none\", \"horizon\": 2, \"transitions\": \"dense\"", 0}};
  for (size_t i = 0; i < sizeof autos / sizeof *autos; i++) {
    dprl_mdp_config c;
    dprl_error err;
    snprintf(json, sizeof json,
             "{\"n_states\": %d, \"n_actions\": %d, \"gamma\": 0.9, \"rmin\": 0, \"rmax\": 1, "
             "\"epsilon\": 1, \"delta\": 1e-5, %s}", autos[i].S, autos[i].A, autos[i].more);
    CHECK(parse(&c, json, &err) == DPRL_OK && c.sparse == autos[i].sparse, json);
    dprl_mdp_config_free(&c);
  }
  /* the length limit: the default max_cells is what fits beside the dense parts */
  dprl_mdp_config c;
  dprl_error err = {0};
  const char *big = "{\"n_states\": 1000, \"n_actions\": 10, \"gamma\": 0.5, \"rmin\": 0, "
                    "\"rmax\": 1, \"epsilon\": 1, \"delta\": 1e-5, \"clip\": \"none\", \"horizon\": 3}";
  CHECK(dprl_mdp_config_parse(&c, "dp_mdp", big, strlen(big), 10000000, 0, NULL, &err) == DPRL_OK &&
            c.sparse && c.cells_max == (10000000 - 4096 - 31000 * 25) / 64,
        "1000 states, 10 actions: sparse by default; cells_max = (limit - 4096 - 25 (S + 3 S A)) / 64");
  dprl_mdp_config_free(&c);
  CHECK(dprl_mdp_config_parse(&c, "dp_mdp", big, strlen(big), 700000, 0, NULL, &err) == DPRL_EINVAL &&
            strstr(err.msg, "dense parts S + 3 S A = 31000 numbers leave no room for a cell"),
        err.msg);
}

int main(void) {
  test_layout();
  test_determinism();
  test_attack();
  test_options();
  return CHECK_DONE();
}
