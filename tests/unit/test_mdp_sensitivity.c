/*
** test_mdp_sensitivity.c: dp_mdp's sensitivity (ext/mdp/, ALGORITHMS.md
** §13).
**
** - The sensitivity bound against the exhaustive worst case: every episode
**   of a small log (S = 2, A = 2, H <= 3, rewards at rmin, the middle and
**   rmax) has a contribution whose l2 norm, computed exactly from the
**   integer sums, is at most the stated bound, and some episode attains
**   it; the same with a clip, without a horizon, and for tent features.
**   The contribution itself is checked entry by entry against a reference
**   written here from the definition.
** - Replacement: every pair of episodes of small logs (tabular, exact) is
**   within sqrt(4H^2 + H + 3), and the largest pair is above the
**   add/remove bound; with a clip, and for tent features (random pairs),
**   within the stated bound_rep.
** - Grid rounding: for every such episode x (pair x, y) and a few logs D,
**   the grid vectors of D + x and D (D + x and D + y) differ by at most
**   the stated sensitivity in grid steps, on a grid coarse enough that
**   rounding shows.
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "util_mdp.h"
#include "mdp/mdp.h"

/* ---- the reference contribution, from the definition ---------------------- */

typedef struct episode {
  size_t n;
  int s[8], a[8];
  double x[8], r[8]; /* tent: real states */
} episode;

/* start[S], counts[S][A][S+1], reward[S][A] in count units, reward as
** (clamp(r) - c)/b; tent: phi(x) weights, 1 - |x - anchor| / spacing. */
static void phi(const dprl_mdp_config *c, double x, double *w) {
  size_t K = (size_t)c->n_states;
  x = x < c->low ? c->low : x > c->high ? c->high : x; /* states are clamped to [low, high] */
  for (size_t k = 0; k < K; k++) {
    double at = c->low + (double)k * (c->high - c->low) / (double)(K - 1);
    double d = 1 - fabs(x - at) / ((c->high - c->low) / (double)(K - 1));
    w[k] = d > 0 ? d : 0;
  }
}

static void reference(const dprl_mdp_config *c, const episode *e, double *v) {
  size_t S = (size_t)c->n_states, A = (size_t)c->n_actions;
  double *start = v, *counts = v + S, *reward = v + S + S * A * (S + 1);
  memset(v, 0, c->dim * sizeof *v);
  size_t L = c->horizon && e->n > (size_t)c->horizon ? (size_t)c->horizon : e->n;
  double w[16], w2[16];
  for (size_t i = 0; i < L; i++) {
    double r = e->r[i] < c->rmin ? c->rmin : e->r[i] > c->rmax ? c->rmax : e->r[i];
    double u = (r - (c->rmin + c->rmax) / 2) / ((c->rmax - c->rmin) / 2);
    if (c->tent) phi(c, e->x[i], w);
    else
      for (size_t k = 0; k < S; k++) w[k] = (size_t)e->s[i] == k;
    if (i + 1 < e->n && c->tent) phi(c, e->x[i + 1], w2);
    else
      for (size_t k = 0; k <= S; k++) w2[k] = i + 1 < e->n ? (size_t)e->s[i + 1] == k : k == S;
    if (i == 0)
      for (size_t k = 0; k < S; k++) start[k] += w[k];
    for (size_t k = 0; k < S; k++) {
      for (size_t j = 0; j <= S; j++)
        counts[(k * A + (size_t)e->a[i]) * (S + 1) + j] += w[k] * (j < S || i + 1 >= e->n ? w2[j] : 0);
      reward[k * A + (size_t)e->a[i]] += w[k] * u;
    }
  }
}

/* The core's steps of an episode: tabular packed (s, a), reward in ticks;
** tent: action, and the states in xs. */
static void to_steps(const dprl_mdp_config *c, const episode *e, dprl_step *st, dprl_step *xs) {
  for (size_t i = 0; i < e->n; i++) {
    st[i] = (dprl_step){(int64_t)i, dprl_mdp_reward_ticks(c, e->r[i]), 0,
                        c->tent ? (uint32_t)e->a[i] : dprl_mdp_pack(c, e->s[i], e->a[i])};
    double x = e->x[i] < c->low ? c->low : e->x[i] > c->high ? c->high : e->x[i];
    xs[i] = (dprl_step){(int64_t)i, x, 0, 0}; /* the glue clamps it */
  }
}

/* The core's contribution of e alone (ticks) into out. */
static void core_contribution(const dprl_mdp_config *c, dprl_mdp_stats *st, const episode *e,
                              int64_t *out) {
  dprl_step steps[8], xs[8];
  dprl_error err = {0};
  to_steps(c, e, steps, xs);
  memset(st->v, 0, c->dim * sizeof *st->v);
  dprl_mdp_add_episode(st, c, steps, c->tent ? xs : NULL, e->n, &err);
  memcpy(out, st->v, c->dim * sizeof *out);
}

static double norm2_ticks(const int64_t *v, size_t n) {
  __int128 acc = 0;
  for (size_t j = 0; j < n; j++) acc += (__int128)v[j] * v[j];
  return (double)acc / (T_ * T_);
}

/* Every episode of 1..H+1 steps (H+1: one step past the horizon, whose
** state is the last transition's next state; longer ones add nothing),
** with states, actions and rewards from the given sets; calls f on each. */
typedef void (*visit_fn)(const episode *e, void *ctx);
static size_t enumerate(size_t S, size_t A, size_t maxlen, const double *rewards, size_t nr,
                        visit_fn f, void *ctx) {
  size_t count = 0;
  for (size_t n = 1; n <= maxlen; n++) {
    size_t combos = 1;
    for (size_t i = 0; i < n; i++) combos *= S * A * nr;
    for (size_t k = 0; k < combos; k++) {
      episode e = {.n = n};
      size_t q = k;
      for (size_t i = 0; i < n; i++) {
        e.s[i] = (int)(q % S);
        q /= S;
        e.a[i] = (int)(q % A);
        q /= A;
        e.r[i] = rewards[q % nr];
        q /= nr;
        e.x[i] = e.s[i];
      }
      f(&e, ctx);
      count++;
    }
  }
  return count;
}

typedef struct sens_ctx {
  const dprl_mdp_config *c;
  dprl_mdp_stats *st;
  double bound2; /* the squared bound, from the definitions (exact) */
  double max2;
  int over, mismatch;
} sens_ctx;

static void sens_visit(const episode *e, void *p) {
  sens_ctx *x = p;
  int64_t v[256];
  double ref[256];
  core_contribution(x->c, x->st, e, v);
  double n2 = norm2_ticks(v, x->c->dim);
  if (n2 > x->max2) x->max2 = n2;
  if (n2 > x->bound2) x->over++;
  if (x->c->exact_path) { /* unclipped: equal to the definition, to the tick */
    reference(x->c, e, ref);
    for (size_t j = 0; j < x->c->dim; j++)
      if (fabs((double)v[j] - ref[j] * T_) > 0.5) x->mismatch++;
  }
}

static void test_sensitivity_exhaustive(void) {
  static const double rewards[] = {0, 0.5, 1};
  char json[512], what[160];
  for (int H = 1; H <= 3; H++) {
    dprl_mdp_config c;
    dprl_mdp_stats st;
    dprl_error err;
    snprintf(json, sizeof json,
             "{\"n_states\": 2, \"n_actions\": 2, \"gamma\": 0.9, \"rmin\": 0, \"rmax\": 1, "
             "\"epsilon\": 1, \"delta\": 1e-5, \"clip\": \"none\", \"horizon\": %d}", H);
    CHECK(parse(&c, json, &err) == DPRL_OK && c.exact_path, "tabular with a horizon: exact path");
    dprl_mdp_stats_init(&st, &c, NULL, &err);
    sens_ctx x = {&c, &st, 1 + 2 * H * H, 0, 0, 0};
    size_t n = enumerate(2, 2, (size_t)H + 1, rewards, 3, sens_visit, &x);
    snprintf(what, sizeof what, "H = %d: %zu episodes, none above sqrt(1 + 2 H^2) = %.6f", H, n,
             c.bound);
    CHECK(x.over == 0, what);
    snprintf(what, sizeof what, "H = %d: the bound is attained exactly (max norm^2 %.9g = %d)", H,
             x.max2, 1 + 2 * H * H);
    CHECK(x.max2 == 1 + 2 * H * H, what);
    CHECK(x.mismatch == 0, "every contribution equals the definition's, tick for tick");
    dprl_mdp_stats_free(&st);
    dprl_mdp_config_free(&c);
    /* a clip that binds: every norm at most C, the largest just under it */
    snprintf(json, sizeof json,
             "{\"n_states\": 2, \"n_actions\": 2, \"gamma\": 0.9, \"rmin\": 0, \"rmax\": 1, "
             "\"epsilon\": 1, \"delta\": 1e-5, \"horizon\": %d, \"clip\": 1.5}", H);
    CHECK(parse(&c, json, &err) == DPRL_OK && !c.exact_path && c.bound == 1.5,
          "a clip below sqrt(1 + 2 H^2): the general path, bound = clip");
    dprl_mdp_stats_init(&st, &c, NULL, &err);
    x = (sens_ctx){&c, &st, 1.5 * 1.5, 0, 0, 0};
    enumerate(2, 2, (size_t)H + 1, rewards, 3, sens_visit, &x);
    snprintf(what, sizeof what, "H = %d, clip 1.5: none above the clip; largest %.9f", H,
             sqrt(x.max2));
    CHECK(x.over == 0 && sqrt(x.max2) > 1.5 * (1 - 0x1p-18), what);
    dprl_mdp_stats_free(&st);
    dprl_mdp_config_free(&c);
  }
  /* no horizon, a clip only: episodes of up to 5 steps */
  dprl_mdp_config c;
  dprl_mdp_stats st;
  dprl_error err;
  CHECK(parse(&c, "{\"n_states\": 2, \"n_actions\": 2, \"gamma\": 0.9, \"rmin\": -1, "
                  "\"rmax\": 3, \"epsilon\": 1, \"delta\": 1e-5, \"clip\": 3}", &err) == DPRL_OK &&
            c.touched == (int64_t)c.dim,
        "clip without a horizon: every entry may be touched");
  dprl_mdp_stats_init(&st, &c, NULL, &err);
  sens_ctx x = {&c, &st, 9, 0, 0, 0};
  static const double r2[] = {-1, 3};
  enumerate(2, 2, 5, r2, 2, sens_visit, &x);
  CHECK(x.over == 0 && sqrt(x.max2) > 3 * (1 - 0x1p-18) && st.clipped > 0,
        "clip 3 without a horizon: none above 3, the largest just under it");
  dprl_mdp_stats_free(&st);
  dprl_mdp_config_free(&c);
}

/* Tent features: random real states; anchors themselves attain the bound. */
static void test_sensitivity_tent(void) {
  dprl_mdp_config c;
  dprl_mdp_stats st;
  dprl_error err;
  CHECK(parse(&c, "{\"n_states\": 3, \"n_actions\": 2, \"gamma\": 0.9, \"rmin\": 0, \"rmax\": 1, "
                  "\"epsilon\": 1, \"delta\": 1e-5, \"clip\": \"none\", \"horizon\": 3, "
                  "\"features\": {\"tent\": 3, \"low\": -1, \"high\": 1}}", &err) == DPRL_OK &&
            c.tent && !c.exact_path,
        "tent features: the general path");
  dprl_mdp_stats_init(&st, &c, NULL, &err);
  sens_ctx x = {&c, &st, 1 + 2 * 9, 0, 0, 0};
  srand(7);
  int mism = 0;
  for (int trial = 0; trial < 20000; trial++) {
    episode e = {.n = 1 + (size_t)(rand() % 5)};
    for (size_t i = 0; i < e.n; i++) {
      e.x[i] = trial % 3 == 0 ? (double)(rand() % 3) - 1 : -1.2 + 2.4 * rand() / (double)RAND_MAX;
      e.a[i] = rand() % 2;
      e.r[i] = (rand() % 3) / 2.0;
    }
    sens_visit(&e, &x);
    int64_t v[256];
    double ref[256];
    core_contribution(&c, &st, &e, v);
    reference(&c, &e, ref);
    for (size_t j = 0; j < c.dim; j++) /* truncation to whole ticks, or the clip */
      if (fabs((double)v[j] / T_ - ref[j]) > 2 / T_ + 1e-5 * fabs(ref[j])) {
        if (!mism++)
          printf("#   n %zu x %g %g entry %zu: core %.9g, definition %.9g\n", e.n, e.x[0], e.x[1],
                 j, (double)v[j] / T_, ref[j]);
      }
  }
  episode loop = {.n = 4, .x = {-1, -1, -1, -1}, .a = {1, 1, 1, 1}, .r = {1, 1, 1, 1}};
  sens_visit(&loop, &x);
  CHECK(x.over == 0, "tent, H = 3: no episode above sqrt(1 + 2 H^2)");
  CHECK(sqrt(x.max2) > c.bound * (1 - 0x1p-18), "tent: an episode at an anchor attains it");
  CHECK(mism == 0, "tent: contributions equal the definition's phi(s) (x) phi(s') sums");
  dprl_mdp_stats_free(&st);
  dprl_mdp_config_free(&c);
}

/* ---- replacing one episode by another ----------------------------------------- */

/* The contributions (ticks) of every distinct episode of 1..H steps, and of
** H + 1 steps whose last step only gives the last transition's next state,
** with states, actions and rewards from the given sets; *count of them. */
static int64_t *all_contributions(const dprl_mdp_config *c, dprl_mdp_stats *st, const double *rewards,
                                  size_t nr, size_t *count) {
  size_t S = (size_t)c->n_states, A = (size_t)c->n_actions, H = (size_t)c->horizon, total = 0;
  size_t per = S * A * nr, cap = 0;
  for (size_t n = 1, combos = 1; n <= H + 1; n++) total += (combos *= n <= H ? per : S);
  int64_t *all = malloc(total * c->dim * sizeof *all);
  for (size_t n = 1; n <= H + 1; n++) {
    size_t combos = 1;
    for (size_t i = 0; i < n; i++) combos *= i < H ? per : S;
    for (size_t k = 0; k < combos; k++, cap++) {
      episode e = {.n = n};
      for (size_t i = 0, q = k; i < n; i++) {
        e.s[i] = (int)(q % S);
        e.x[i] = e.s[i];
        q /= S;
        if (i == H) break; /* the state after the horizon: nothing else counts */
        e.a[i] = (int)(q % A);
        q /= A;
        e.r[i] = rewards[q % nr];
        q /= nr;
      }
      core_contribution(c, st, &e, all + cap * c->dim);
    }
  }
  *count = cap;
  return all;
}

/* The largest ||v_x - v_y||^2 (count units) over all pairs of the list. */
static double max_pair2(const int64_t *all, size_t n, size_t dim) {
  __int128 best = 0;
  for (size_t i = 0; i < n; i++)
    for (size_t j = i + 1; j < n; j++) {
      __int128 acc = 0;
      for (size_t d = 0; d < dim; d++) {
        int64_t x = all[i * dim + d] - all[j * dim + d];
        acc += (__int128)x * x;
      }
      if (acc > best) best = acc;
    }
  return (double)best / (T_ * T_);
}

/* Every pair of episodes of small logs, exactly (the exact path sums whole
** ticks): ||v_x - v_y||^2 <= 4H^2 + H + 3, and above the add/remove
** bound 1 + 2H^2, so the replacement bound is needed; with a clip that
** binds, within min(2C, sqrt(4H^2 + H + 3)(1 + 2^-10)). */
static void test_replacement_exhaustive(void) {
  static const double ends[] = {0, 1};
  static const struct {
    int S, A, H;
    double worst; /* the largest distance^2 the search finds (exact path) */
  } cases[] = {{2, 2, 1, 6}, {2, 2, 2, 18}, {2, 2, 3, 40}, {3, 1, 3, 40}, {2, 1, 4, 66},
               {2, 1, 5, 106}};
  char json[512], what[200];
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    int S = cases[i].S, A = cases[i].A, H = cases[i].H;
    for (int clip = 0; clip < 2; clip++) {
      dprl_mdp_config c;
      dprl_mdp_stats st;
      dprl_error err;
      snprintf(json, sizeof json,
               "{\"n_states\": %d, \"n_actions\": %d, \"gamma\": 0.9, \"rmin\": 0, \"rmax\": 1, "
               "\"epsilon\": 1, \"delta\": 1e-5, \"horizon\": %d, \"clip\": %s}", S, A, H,
               clip ? "1.5" : "\"none\"");
      CHECK(parse(&c, json, &err) == DPRL_OK && c.exact_path == !clip, json);
      double b2 = 4.0 * H * H + H + 3;
      double want = clip ? fmin(3, sqrt(b2) * (1 + 0x1p-10)) : sqrt(b2);
      CHECK(c.bound_rep == want && c.touched_rep == (int64_t)fmin(2 * (double)c.touched,
                                                                 (double)c.dim),
            "bound_rep = sqrt(4H^2 + H + 3), or min(2C, that (1 + 2^-10)) with a clip; "
            "touched_rep = min(2 touched, dim)");
      dprl_mdp_stats_init(&st, &c, NULL, &err);
      size_t n;
      int64_t *all = all_contributions(&c, &st, ends, 2, &n);
      double m2 = max_pair2(all, n, c.dim);
      if (!clip) {
        snprintf(what, sizeof what, "S %d A %d H %d: %zu episodes, every pair within 4H^2 + H + 3 "
                 "= %g (largest %.9g, the search's %g; add/remove %d)", S, A, H, n, b2, m2,
                 cases[i].worst, 1 + 2 * H * H);
        CHECK(m2 <= b2 && m2 == cases[i].worst && m2 > 1 + 2 * H * H, what);
      } else {
        snprintf(what, sizeof what, "S %d A %d H %d, clip 1.5: every pair within %.9g (largest "
                 "%.9g, above the clip)", S, A, H, c.bound_rep, sqrt(m2));
        CHECK(sqrt(m2) <= c.bound_rep && sqrt(m2) > 1.5, what);
      }
      free(all);
      dprl_mdp_stats_free(&st);
      dprl_mdp_config_free(&c);
    }
  }
}

/* Tent features: random real states, every pair within bound_rep; the
** worst tabular pair (one stays in an anchor, the other alternates) comes
** close to it. */
static void test_replacement_tent(void) {
  dprl_mdp_config c;
  dprl_mdp_stats st;
  dprl_error err;
  CHECK(parse(&c, "{\"n_states\": 3, \"n_actions\": 2, \"gamma\": 0.9, \"rmin\": 0, \"rmax\": 1, "
                  "\"epsilon\": 1, \"delta\": 1e-5, \"clip\": \"none\", \"horizon\": 3, "
                  "\"features\": {\"tent\": 3, \"low\": -1, \"high\": 1}}", &err) == DPRL_OK &&
            c.bound_rep == sqrt(42) * (1 + 0x1p-10),
        "tent, H = 3: bound_rep = sqrt(4H^2 + H + 3) (1 + 2^-10)");
  dprl_mdp_stats_init(&st, &c, NULL, &err);
  enum { N = 1500 };
  int64_t *all = malloc((N + 2) * c.dim * sizeof *all);
  srand(13);
  for (int k = 0; k < N; k++) {
    episode e = {.n = 1 + (size_t)(rand() % 5)};
    for (size_t i = 0; i < e.n; i++) {
      e.x[i] = k % 3 == 0 ? (double)(rand() % 3) - 1 : -1.2 + 2.4 * rand() / (double)RAND_MAX;
      e.a[i] = k % 2 ? 0 : rand() % 2;
      e.r[i] = k % 4 ? (double)(rand() % 2) : rand() / (double)RAND_MAX;
    }
    core_contribution(&c, &st, &e, all + (size_t)k * c.dim);
  }
  episode stay = {.n = 4, .x = {-1, -1, -1, -1}, .a = {0, 0, 0, 0}, .r = {0, 0, 0, 0}};
  episode hop = {.n = 4, .x = {-1, 0, -1, 0}, .a = {0, 0, 0, 0}, .r = {1, 0, 1, 0}};
  core_contribution(&c, &st, &stay, all + (size_t)N * c.dim);
  core_contribution(&c, &st, &hop, all + (size_t)(N + 1) * c.dim);
  double m2 = max_pair2(all, N + 2, c.dim);
  char what[200];
  snprintf(what, sizeof what, "tent: %d random episodes and two at anchors, every pair within "
           "%.9g (largest %.9g, sqrt(40) = %.9g)", N, c.bound_rep, sqrt(m2), sqrt(40.0));
  CHECK(sqrt(m2) <= c.bound_rep && m2 > 40 * (1 - 0x1p-18), what);
  free(all);
  dprl_mdp_stats_free(&st);
  dprl_mdp_config_free(&c);
}

/* ---- grid rounding ---------------------------------------------------------- */

typedef struct grid_ctx {
  const dprl_mdp_config *c;
  dprl_mdp_stats *st;
  const int64_t *base;
  double max;
} grid_ctx;

static void grid_visit(const episode *e, void *p) {
  grid_ctx *x = p;
  int64_t v[256];
  core_contribution(x->c, x->st, e, v);
  __int128 acc = 0;
  for (size_t j = 0; j < x->c->dim; j++) {
    int64_t d = dprl_mdp_grid_value(x->c, x->base[j] + v[j]) - dprl_mdp_grid_value(x->c, x->base[j]);
    acc += (__int128)d * d;
  }
  double n = sqrt((double)acc);
  if (n > x->max) x->max = n;
}

static void test_grid_rounding(void) {
  static const double rewards[] = {0, 0.3, 1};
  dprl_mdp_config c;
  dprl_mdp_stats st;
  dprl_error err;
  parse(&c, "{\"n_states\": 2, \"n_actions\": 2, \"gamma\": 0.9, \"rmin\": 0, \"rmax\": 1, "
            "\"epsilon\": 1, \"delta\": 1e-5, \"clip\": \"none\", \"horizon\": 2}", &err);
  CHECK(c.grid == 0x1p-12 && c.touched == 5 && c.touched_rep == 10 && c.bound_rep == sqrt(21) &&
            c.sens == sqrt(21) + sqrt(10) * c.grid,
        "Delta = sqrt(4H^2 + H + 3) + sqrt(2 touched) g (replacement, the larger), touched = "
        "1 + 2 H for S = A = 2, H = 2");
  /* a grid coarse enough that rounding matters: two counts a step */
  CHECK(dprl_mdp_calibrate_grid(&c, 2.0, &err) == DPRL_OK && c.grid_shift == 25,
        "a coarse grid g = 2 (2^25 ticks a step)");
  dprl_mdp_stats_init(&st, &c, NULL, &err);
  double worst = 0;
  int64_t base[256];
  srand(11);
  for (int d = 0; d < 12; d++) {
    /* a log's sums: whole counts, reward sums anywhere between grid points */
    for (size_t j = 0; j < c.dim; j++)
      base[j] = j < c.dim - 4 ? (int64_t)(rand() % 50) * (int64_t)T_
                              : (int64_t)(rand() % 4000000) * (rand() % 2 ? 1 : -1) * 10;
    grid_ctx x = {&c, &st, base, 0};
    enumerate(2, 2, 3, rewards, 3, grid_visit, &x);
    if (x.max > worst) worst = x.max;
  }
  char what[200];
  double add = c.bound + sqrt((double)c.touched) * c.grid;
  snprintf(what, sizeof what,
           "grid steps, add/remove: every neighbour within (Delta_0 + sqrt(touched) g) / g = %.6f "
           "(largest %.6f, above Delta_0 / g = %.6f: rounding shows)", add / c.grid, worst,
           c.bound / c.grid);
  CHECK(worst <= add / c.grid && worst > c.bound / c.grid, what);
  /* replacement: every pair of episodes x, y on the same logs */
  size_t n;
  int64_t *all = all_contributions(&c, &st, rewards, 3, &n);
  double exact = sqrt(max_pair2(all, n, c.dim)), rworst = 0;
  for (int d = 0; d < 6; d++) {
    for (size_t j = 0; j < c.dim; j++)
      base[j] = j < c.dim - 4 ? (int64_t)(rand() % 50) * (int64_t)T_
                              : (int64_t)(rand() % 4000000) * (rand() % 2 ? 1 : -1) * 10;
    for (size_t x = 0; x < n; x++)
      for (size_t y = x + 1; y < n; y++) {
        __int128 acc = 0;
        for (size_t j = 0; j < c.dim; j++) {
          int64_t k = dprl_mdp_grid_value(&c, base[j] + all[x * c.dim + j]) -
                      dprl_mdp_grid_value(&c, base[j] + all[y * c.dim + j]);
          acc += (__int128)k * k;
        }
        if (sqrt((double)acc) > rworst) rworst = sqrt((double)acc);
      }
  }
  snprintf(what, sizeof what,
           "grid steps, replacement: %zu episodes, every pair within Delta / g = %.6f (largest "
           "%.6f, above the exact largest distance / g = %.6f: rounding shows)", n,
           c.sens / c.grid, rworst, exact / c.grid);
  CHECK(rworst <= c.sens / c.grid && rworst > exact / c.grid, what);
  free(all);
  CHECK(dprl_mdp_grid_value(&c, 3 * ((int64_t)1 << 24)) == 2 &&
            dprl_mdp_grid_value(&c, -3 * ((int64_t)1 << 24)) == -2 &&
            dprl_mdp_grid_value(&c, ((int64_t)1 << 24) - 1) == 0,
        "grid values: half away from zero");
  dprl_mdp_stats_free(&st);
  dprl_mdp_config_free(&c);
}

int main(void) {
  test_sensitivity_exhaustive();
  test_sensitivity_tent();
  test_replacement_exhaustive();
  test_replacement_tent();
  test_grid_rounding();
  return CHECK_DONE();
}
