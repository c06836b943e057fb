/*
** test_mdp_outcome.c: dp_mdp with per-episode outcomes (the outcome
** argument; ext/mdp/, ALGORITHMS.md §13.1, §13.5).
**
** - The layout: an outcome adds S A entries (censored) at the end of the
**   vector, dense and sparse, and nothing else moves.
** - Every episode of small logs (S = 2, A = 2 up to H = 2 and A = 1 at
**   H = 3, rewards at rmin and rmax), dense and sparse, exact path: its
**   censored contribution is its terminal one with the end moved, entry
**   for entry, from column S (sparse: ends) to censored[s][a]; a
**   truncated episode (more than H steps) is the same either way.
** - Norms and pairs over both outcomes: every contribution within the
**   stated add/remove bound, every pair (any outcomes) within the stated
**   replacement bound; with a clip that binds (general path) and tent
**   features too.
** - The collect path reads the last step's flag and clears it: the sums
**   of a log pushed through a step buffer equal those of add_episode with
**   st->censored set by hand.
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "mdp/mdp.h"

#define T_ DPRL_MDP_TICK

static int parse_o(dprl_mdp_config *c, const char *json, int outcome, dprl_error *err) {
  memset(err, 0, sizeof *err);
  return dprl_mdp_config_parse(c, "dp_mdp", json, strlen(json), 0, outcome, NULL, err);
}

typedef struct episode {
  size_t n;
  int s[8], a[8], censored;
  double x[8], r[8];
} episode;

/* The whole vector of e alone in ticks: the sums (dim entries), then, for
** the sparse layout, the cells placed in S A S entries. */
static size_t full_dim(const dprl_mdp_config *c) {
  size_t S = (size_t)c->n_states, A = (size_t)c->n_actions;
  return c->dim + (c->sparse ? S * A * S : 0);
}

static void contribution(const dprl_mdp_config *c, dprl_mdp_stats *st, const episode *e,
                         int64_t *out) {
  dprl_step steps[8], xs[8];
  dprl_error err = {0};
  for (size_t i = 0; i < e->n; i++) {
    steps[i] = (dprl_step){(int64_t)i, dprl_mdp_reward_ticks(c, e->r[i]), 0,
                           c->tent ? (uint32_t)e->a[i] : dprl_mdp_pack(c, e->s[i], e->a[i])};
    xs[i] = (dprl_step){(int64_t)i, e->x[i], 0, 0};
  }
  memset(st->v, 0, c->dim * sizeof *st->v);
  st->n_cells = 0;
  st->censored = e->censored;
  if (dprl_mdp_add_episode(st, c, steps, c->tent ? xs : NULL, e->n, &err) != DPRL_OK)
    CHECK(0, err.msg);
  memset(out, 0, full_dim(c) * sizeof *out);
  memcpy(out, st->v, c->dim * sizeof *out);
  for (size_t i = 0; i < st->n_cells; i++) out[c->dim + st->cells[i].key] += st->cells[i].ticks;
}

static double dist2(const int64_t *x, const int64_t *y, size_t n) {
  __int128 acc = 0;
  for (size_t j = 0; j < n; j++) acc += (__int128)(x[j] - y[j]) * (x[j] - y[j]);
  return (double)acc / (T_ * T_);
}

/* Every episode of 1..H+1 steps over S, A and rewards {rmin, rmax}, each
** with both outcomes: 2 * count vectors into *all. */
static int64_t *all_of(const dprl_mdp_config *c, dprl_mdp_stats *st, size_t *count,
                       size_t **lens) {
  size_t S = (size_t)c->n_states, A = (size_t)c->n_actions, D = full_dim(c), n = 0, cap = 0;
  int64_t *all = NULL;
  for (size_t len = 1; len <= (size_t)c->horizon + 1; len++) {
    size_t combos = 1;
    for (size_t i = 0; i < len; i++) combos *= S * A * 2;
    for (size_t k = 0; k < combos; k++)
      for (int cens = 0; cens < 2; cens++) {
        episode e = {.n = len, .censored = cens};
        size_t q = k;
        for (size_t i = 0; i < len; i++, q /= S * A * 2) {
          e.s[i] = (int)(q % S);
          e.a[i] = (int)(q / S % A);
          e.r[i] = q / (S * A) % 2 ? c->rmax : c->rmin;
          e.x[i] = e.s[i];
        }
        if (n == cap) {
          cap = cap ? 2 * cap : 256;
          all = realloc(all, cap * D * sizeof *all);
          *lens = realloc(*lens, cap * sizeof **lens);
        }
        contribution(c, st, &e, all + n * D);
        (*lens)[n++] = len;
      }
  }
  *count = n;
  return all;
}

/* The end of a censored episode moved: entry for entry, the terminal
** contribution with its end (column S or ends) at censored[s][a]. */
static int moved_ok(const dprl_mdp_config *c, const int64_t *term, const int64_t *cens,
                    size_t len) {
  size_t S = (size_t)c->n_states, A = (size_t)c->n_actions, D = full_dim(c);
  size_t at = c->dim - S * A;
  int64_t *want = malloc(D * sizeof *want);
  memcpy(want, term, D * sizeof *want);
  if (len <= (size_t)c->horizon) /* the end is counted: move it */
    for (size_t sa = 0; sa < S * A; sa++) {
      size_t end = c->sparse ? S + S * A + sa : S + sa * (S + 1) + S;
      want[at + sa] = want[end];
      want[end] = 0;
    }
  int ok = memcmp(want, cens, D * sizeof *want) == 0;
  free(want);
  return ok;
}

static void check_log(const char *json, const char *what) {
  dprl_mdp_config c;
  dprl_mdp_stats st;
  dprl_error err;
  if (parse_o(&c, json, 1, &err) != DPRL_OK || dprl_mdp_stats_init(&st, &c, NULL, &err)) {
    CHECK(0, err.msg);
    return;
  }
  size_t n, D = full_dim(&c), bad_move = 0, over = 0, over_rep = 0, *lens = NULL;
  int64_t *all = all_of(&c, &st, &n, &lens);
  double most = 0, most_rep = 0;
  int64_t *z = calloc(D, sizeof *z);
  for (size_t i = 0; i < n; i += 2) /* i terminal, i + 1 the same episode censored */
    bad_move += !moved_ok(&c, all + i * D, all + (i + 1) * D, lens[i]);
  for (size_t i = 0; i < n; i++) {
    double d = dist2(all + i * D, z, D);
    most = fmax(most, d);
    over += d > c.bound * c.bound * (1 + 1e-12);
    for (size_t j = i + 1; j < n; j++) {
      double r = dist2(all + i * D, all + j * D, D);
      most_rep = fmax(most_rep, r);
      over_rep += r > c.bound_rep * c.bound_rep * (1 + 1e-12);
    }
  }
  printf("  %s: %zu episodes, max |v|^2 %.6g (bound %.6g), max pair %.6g (bound %.6g)\n", what,
         n, most, c.bound * c.bound, most_rep, c.bound_rep * c.bound_rep);
  char m[200];
  dprl_snprintf(m, sizeof m, "%s: a censored episode is its terminal one with the end moved", what);
  CHECK(bad_move == 0, m);
  dprl_snprintf(m, sizeof m, "%s: every contribution within the add/remove bound", what);
  CHECK(over == 0, m);
  dprl_snprintf(m, sizeof m, "%s: every pair (any outcomes) within the replacement bound", what);
  CHECK(over_rep == 0, m);
  dprl_snprintf(m, sizeof m, "%s: the search is not empty (pairs beyond one episode)", what);
  CHECK(most > 0 && most_rep > most, m);
  free(lens);
  free(z);
  free(all);
  dprl_mdp_stats_free(&st);
  dprl_mdp_config_free(&c);
}

static void test_layout(void) {
  dprl_mdp_config c0, c1;
  dprl_error err;
  const char *dense = "{\"n_states\": 3, \"n_actions\": 2, \"gamma\": 0.9, \"rmin\": 0, "
                      "\"rmax\": 1, \"epsilon\": 1, \"delta\": 1e-5, \"clip\": \"none\", \"horizon\": 4}";
  const char *sparse = "{\"n_states\": 3, \"n_actions\": 2, \"gamma\": 0.9, \"rmin\": 0, "
                       "\"rmax\": 1, \"epsilon\": 1, \"delta\": 1e-5, \"clip\": \"none\", \"horizon\": 4, "
                       "\"transitions\": \"sparse\"}";
  CHECK(parse_o(&c0, dense, 0, &err) == DPRL_OK && parse_o(&c1, dense, 1, &err) == DPRL_OK,
        "dense options parse with and without an outcome");
  CHECK(c0.dim == 3 + 6 * 4 + 6 && c1.dim == c0.dim + 6 && c1.outcome && !c0.outcome,
        "dense: the outcome adds S A entries");
  /* the censored ends replace ends: the same calibration */
  CHECK(c1.sigma == c0.sigma && c1.sens == c0.sens && c1.touched == c0.touched,
        "dense: the same calibration with an outcome");
  CHECK(parse_o(&c0, sparse, 0, &err) == DPRL_OK && parse_o(&c1, sparse, 1, &err) == DPRL_OK,
        "sparse options parse with and without an outcome");
  CHECK(c0.dim == 3 + 3 * 6 && c1.dim == c0.dim + 6, "sparse: the outcome adds S A entries");
  CHECK(c1.sigma == c0.sigma && c1.tau == c0.tau && c1.new_cells == c0.new_cells,
        "sparse: the same calibration and threshold with an outcome");
  /* the flag needs the top bit: S 2^abits <= 2^31 */
  const char *big = "{\"n_states\": 1073741825, \"n_actions\": 2, \"gamma\": 0.9, \"rmin\": 0, "
                    "\"rmax\": 1, \"epsilon\": 1, \"delta\": 1e-5, \"clip\": \"none\", \"horizon\": 4, "
                    "\"transitions\": \"sparse\"}";
  CHECK(parse_o(&c1, big, 1, &err) == DPRL_EINVAL &&
            strstr(err.msg, "too many with an outcome argument") != NULL,
        "S 2^abits above 2^31 is refused with an outcome");
  parse_o(&c1, big, 0, &err); /* too large anyway, for another reason */
  CHECK(strstr(err.msg, "outcome") == NULL, "... and without one, not for the outcome");
}

/* A log through the step buffer and dprl_mdp_collect (the glue's path:
** every row carries its flag, the last one counts) against add_episode. */
static void test_collect(void) {
  const char *json = "{\"n_states\": 3, \"n_actions\": 2, \"gamma\": 0.9, \"rmin\": 0, "
                     "\"rmax\": 1, \"epsilon\": 1, \"delta\": 1e-5, \"clip\": \"none\", \"horizon\": 3}";
  static const int s[][4] = {{0, 1, 2, 1}, {2, 2, 0, 0}, {1, 0, 0, 0}};
  static const size_t len[] = {4, 2, 3}; /* the first is truncated at H = 3 */
  static const int cens[] = {1, 1, 0};
  for (int layout = 0; layout < 2; layout++) {
    char text[400];
    dprl_snprintf(text, sizeof text, "%.*s%s}", (int)strlen(json) - 1, json,
                  layout ? ", \"transitions\": \"sparse\"" : "");
    dprl_mdp_config c;
    dprl_mdp_stats st, want;
    dprl_error err;
    CHECK(parse_o(&c, text, 1, &err) == DPRL_OK && !dprl_mdp_stats_init(&st, &c, NULL, &err) &&
              !dprl_mdp_stats_init(&want, &c, NULL, &err),
          "collect: options and sums");
    dprl_step_buffer buf = {0};
    for (int e = 2; e >= 0; e--) /* rows in any order */
      for (size_t i = len[e]; i-- > 0;) {
        dprl_key k = {0, e, NULL, 0};
        /* only the last row's flag counts: the others say the opposite */
        uint32_t flag = (i + 1 == len[e]) == (cens[e] != 0) ? DPRL_MDP_CENSORED : 0;
        if (dprl_step_buffer_push(&buf, &k, (int64_t)i, dprl_mdp_pack(&c, s[e][i], i % 2) | flag,
                                  dprl_mdp_reward_ticks(&c, 0.25 * (double)i), &err))
          CHECK(0, err.msg);
      }
    CHECK(dprl_mdp_collect(&st, &c, &buf, NULL, NULL, NULL, &err) == DPRL_OK, "collect runs");
    for (int e = 0; e < 3; e++) {
      dprl_step steps[4];
      for (size_t i = 0; i < len[e]; i++)
        steps[i] = (dprl_step){(int64_t)i, dprl_mdp_reward_ticks(&c, 0.25 * (double)i), 0,
                               dprl_mdp_pack(&c, s[e][i], i % 2)};
      want.censored = cens[e];
      if (dprl_mdp_add_episode(&want, &c, steps, NULL, len[e], &err)) CHECK(0, err.msg);
    }
    if (layout && dprl_mdp_cells_merge(&want, NULL, &err)) CHECK(0, err.msg);
    CHECK(memcmp(st.v, want.v, c.dim * sizeof *st.v) == 0,
          layout ? "collect (sparse): the sums of the last rows' outcomes, flags cleared"
                 : "collect (dense): the sums of the last rows' outcomes, flags cleared");
    int same = st.n_cells == want.n_cells;
    for (size_t i = 0; same && i < st.n_cells; i++)
      same = st.cells[i].key == want.cells[i].key && st.cells[i].ticks == want.cells[i].ticks;
    CHECK(same, "collect: the same cells");
    /* episode 1 (censored, 2 steps) ended after (2, 1): censored[2][1] = 1;
    ** episode 2 (terminal) after (0, 0); episode 0 is truncated: no end */
    size_t at = c.dim - 6;
    int64_t sum = 0;
    for (size_t j = 0; j < 6; j++) sum += st.v[at + j];
    CHECK(st.v[at + 2 * 2 + 1] == (int64_t)T_ && sum == (int64_t)T_,
          "collect: one censored end, after (2, 1); the truncated episode has none");
    dprl_mdp_stats_free(&st);
    dprl_mdp_stats_free(&want);
    dprl_mdp_config_free(&c);
  }
}

int main(void) {
  test_layout();
  test_collect();
  const char *base = "{\"n_states\": 2, \"n_actions\": %d, \"gamma\": 0.9, \"rmin\": -1, "
                     "\"rmax\": 1, \"epsilon\": 1, \"delta\": 1e-5, \"horizon\": %d%s}";
  static const struct {
    int A, H;
    const char *extra, *what;
  } cases[] = {
      {2, 1, ", \"clip\": \"none\"", "dense H=1"},
      {2, 2, ", \"clip\": \"none\"", "dense H=2"},
      {1, 3, ", \"clip\": \"none\"", "dense H=3 A=1"},
      {2, 2, ", \"clip\": 2", "dense H=2, clip 2 (general path)"},
      {2, 2, ", \"clip\": \"none\", \"features\": {\"tent\": 2, \"low\": 0, \"high\": 1}",
       "dense H=2, tent"},
      {2, 1, ", \"clip\": \"none\", \"transitions\": \"sparse\"", "sparse H=1"},
      {2, 2, ", \"clip\": \"none\", \"transitions\": \"sparse\"", "sparse H=2"},
      {1, 3, ", \"clip\": \"none\", \"transitions\": \"sparse\"", "sparse H=3 A=1"},
      {2, 2, ", \"transitions\": \"sparse\", \"clip\": 2", "sparse H=2, clip 2"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    char json[400];
    dprl_snprintf(json, sizeof json, base, cases[i].A, cases[i].H, cases[i].extra);
    check_log(json, cases[i].what);
  }
  return CHECK_DONE();
}
