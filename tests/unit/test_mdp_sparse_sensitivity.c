/*
** test_mdp_sparse_sensitivity.c: the sensitivity and calibration of
** dp_mdp's sparse layout (ext/mdp/, ALGORITHMS.md §13.5).
**
** - Sensitivity, exhaustively: every episode of small logs (S = 2 or 3,
**   A = 1 or 2, H <= 5, rewards at rmin and rmax) has a whole vector
**   (start, cells and ends, rewards, totals), built from the core's dense
**   parts and merged cells, equal tick for tick to the definition, of
**   squared norm at most 1 + 3H^2 (attained); every pair within
**   6H^2 + H + 3, the largest at the search's 6H^2 + 2, above the dense
**   bound 4H^2 + H + 3 (the totals count); with a clip that binds, and for
**   tent features (random episodes), within the stated bounds.
** - Grid rounding on a coarse grid: neighbours' grid vectors within Delta / g.
** - The calibration against independent formulas: delta_0 and tau written
**   out here, and sigma the smallest grid multiple whose CKS conversion
**   (minimised here over a grid of orders, not with dp/zcdp.c) meets
**   epsilon at delta / 2.
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

/* The whole vector: start[S], counts[S][A][S+1] (cells, column S the
** ends), reward[S][A], totals[S][A]. */
static size_t full_dim(const dprl_mdp_config *c) {
  size_t S = (size_t)c->n_states, A = (size_t)c->n_actions;
  return S + S * A * (S + 1) + 2 * S * A;
}

/* ... from the core's sums (dense parts and merged cells), in ticks. */
static void full_vector(const dprl_mdp_config *c, const dprl_mdp_stats *st, int64_t *out) {
  size_t S = (size_t)c->n_states, A = (size_t)c->n_actions, SA = S * A;
  size_t counts = S, reward = S + SA * (S + 1), totals = reward + SA;
  memset(out, 0, full_dim(c) * sizeof *out);
  for (size_t s = 0; s < S; s++) out[s] = st->v[s];
  for (size_t sa = 0; sa < SA; sa++) {
    out[totals + sa] = st->v[S + sa];
    out[counts + sa * (S + 1) + S] = st->v[S + SA + sa];
    out[reward + sa] = st->v[S + 2 * SA + sa];
  }
  for (size_t i = 0; i < st->n_cells; i++) {
    uint64_t k = st->cells[i].key;
    out[counts + (size_t)(k / S) * (S + 1) + (size_t)(k % S)] += st->cells[i].ticks;
  }
}

/* ... from the definition (ALGORITHMS.md §13.1, §13.5), in count units. */
static void phi(const dprl_mdp_config *c, double x, double *w) {
  size_t K = (size_t)c->n_states;
  x = x < c->low ? c->low : x > c->high ? c->high : x;
  for (size_t k = 0; k < K; k++) {
    double at = c->low + (double)k * (c->high - c->low) / (double)(K - 1);
    double d = 1 - fabs(x - at) / ((c->high - c->low) / (double)(K - 1));
    w[k] = d > 0 ? d : 0;
  }
}

static void reference(const dprl_mdp_config *c, const episode *e, double *v) {
  size_t S = (size_t)c->n_states, A = (size_t)c->n_actions, SA = S * A;
  double *start = v, *counts = v + S, *reward = counts + SA * (S + 1), *totals = reward + SA;
  memset(v, 0, full_dim(c) * sizeof *v);
  size_t L = e->n < (size_t)c->horizon ? e->n : (size_t)c->horizon;
  double w[16], w2[16];
  for (size_t i = 0; i < L; i++) {
    double r = e->r[i] < c->rmin ? c->rmin : e->r[i] > c->rmax ? c->rmax : e->r[i];
    double u = (r - (c->rmin + c->rmax) / 2) / ((c->rmax - c->rmin) / 2);
    if (c->tent) phi(c, e->x[i], w);
    else
      for (size_t k = 0; k < S; k++) w[k] = (size_t)e->s[i] == k;
    if (i + 1 < e->n && c->tent) phi(c, e->x[i + 1], w2), w2[S] = 0;
    else
      for (size_t k = 0; k <= S; k++) w2[k] = i + 1 < e->n ? (size_t)e->s[i + 1] == k : k == S;
    for (size_t k = 0; k < S && i == 0; k++) start[k] += w[k];
    for (size_t k = 0; k < S; k++) {
      size_t sa = k * A + (size_t)e->a[i];
      for (size_t j = 0; j <= S; j++) counts[sa * (S + 1) + j] += w[k] * w2[j];
      reward[sa] += w[k] * u;
      totals[sa] += w[k];
    }
  }
}

/* The core's whole vector of e alone (ticks). */
static void contribution(const dprl_mdp_config *c, dprl_mdp_stats *st, const episode *e,
                         int64_t *out) {
  dprl_step steps[8], xs[8];
  dprl_error err = {0};
  for (size_t i = 0; i < e->n; i++) {
    steps[i] = (dprl_step){(int64_t)i, dprl_mdp_reward_ticks(c, e->r[i]), 0,
                           c->tent ? (uint32_t)e->a[i] : dprl_mdp_pack(c, e->s[i], e->a[i])};
    double x = e->x[i] < c->low ? c->low : e->x[i] > c->high ? c->high : e->x[i];
    xs[i] = (dprl_step){(int64_t)i, x, 0, 0};
  }
  memset(st->v, 0, c->dim * sizeof *st->v);
  st->n_cells = 0;
  dprl_mdp_add_episode(st, c, steps, c->tent ? xs : NULL, e->n, &err);
  dprl_mdp_cells_merge(st, NULL, &err);
  full_vector(c, st, out);
}

static double norm2(const int64_t *v, size_t n) {
  __int128 acc = 0;
  for (size_t j = 0; j < n; j++) acc += (__int128)v[j] * v[j];
  return (double)acc / (T_ * T_);
}

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

/* Every episode of 1..H steps, and of H + 1 whose last step gives only
** the last transition's next state; *count of them, their vectors. */
static int64_t *all_contributions(const dprl_mdp_config *c, dprl_mdp_stats *st,
                                  const double *rewards, size_t nr, size_t *count,
                                  int *mismatch) {
  size_t S = (size_t)c->n_states, A = (size_t)c->n_actions, H = (size_t)c->horizon, total = 0;
  size_t per = S * A * nr, at = 0, D = full_dim(c);
  for (size_t n = 1, combos = 1; n <= H + 1; n++) total += (combos *= n <= H ? per : S);
  int64_t *all = malloc(total * D * sizeof *all);
  double *ref = malloc(D * sizeof *ref);
  for (size_t n = 1; n <= H + 1; n++) {
    size_t combos = 1;
    for (size_t i = 0; i < n; i++) combos *= i < H ? per : S;
    for (size_t k = 0; k < combos; k++, at++) {
      episode e = {.n = n};
      for (size_t i = 0, q = k; i < n; i++) {
        e.s[i] = (int)(q % S);
        e.x[i] = e.s[i];
        q /= S;
        if (i == H) break;
        e.a[i] = (int)(q % A);
        q /= A;
        e.r[i] = rewards[q % nr];
        q /= nr;
      }
      contribution(c, st, &e, all + at * D);
      if (c->exact_path) {
        reference(c, &e, ref);
        for (size_t j = 0; j < D; j++)
          if (fabs((double)all[at * D + j] - ref[j] * T_) > 0.5) (*mismatch)++;
      }
    }
  }
  free(ref);
  *count = at;
  return all;
}

static void test_sensitivity_exhaustive(void) {
  static const double ends[] = {0, 1};
  static const struct {
    int S, A, H;
  } cases[] = {{2, 2, 1}, {2, 2, 2}, {2, 2, 3}, {3, 1, 3}, {2, 1, 4}, {2, 1, 5}};
  char json[512], what[240];
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    int S = cases[i].S, A = cases[i].A, H = cases[i].H;
    for (int clip = 0; clip < 2 && (!clip || H <= 3); clip++) {
      dprl_mdp_config c;
      dprl_mdp_stats st;
      dprl_error err;
      snprintf(json, sizeof json,
               "{\"n_states\": %d, \"n_actions\": %d, \"gamma\": 0.9, \"rmin\": 0, \"rmax\": 1, "
               "\"epsilon\": 1, \"delta\": 1e-5, \"horizon\": %d, \"transitions\": \"sparse\", \"clip\": %s}",
               S, A, H, clip ? "1.5" : "\"none\"");
      CHECK(parse(&c, json, &err) == DPRL_OK && c.sparse && c.exact_path == !clip, json);
      double one = 1 + 3.0 * H * H, rep = 6.0 * H * H + H + 3;
      CHECK(c.bound == (clip ? 1.5 : sqrt(one)) &&
                c.bound_rep == (clip ? fmin(3, sqrt(rep) * (1 + 0x1p-10)) : sqrt(rep)) &&
                c.dim == (size_t)(S + 3 * S * A),
            "bounds sqrt(1 + 3H^2) and sqrt(6H^2 + H + 3) (with a clip C: C and min(2C, ...)); "
            "the sums hold S + 3 S A numbers, the cells apart");
      dprl_mdp_stats_init(&st, &c, NULL, &err);
      size_t n, D = full_dim(&c);
      int mismatch = 0;
      int64_t *all = all_contributions(&c, &st, ends, 2, &n, &mismatch);
      double single = 0;
      for (size_t k = 0; k < n; k++) single = fmax(single, norm2(all + k * D, D));
      double m2 = max_pair2(all, n, D);
      if (!clip) {
        CHECK(mismatch == 0, "every episode's vector (cells merged from the list, totals, ends) "
                             "equals the definition, tick for tick");
        snprintf(what, sizeof what, "S %d A %d H %d: %zu episodes, every one within 1 + 3H^2 = %g "
                 "and one at it (largest %.9g)", S, A, H, n, one, single);
        CHECK(single == one, what);
        snprintf(what, sizeof what, "S %d A %d H %d: every pair within 6H^2 + H + 3 = %g, the "
                 "largest %.9g = 6H^2 + 2, above the dense bound 4H^2 + H + 3 = %d from H = 2 on",
                 S, A, H, rep,
                 m2, 4 * H * H + H + 3);
        CHECK(m2 <= rep && m2 == 6.0 * H * H + 2 && (H == 1 || m2 > 4 * H * H + H + 3), what);
      } else {
        snprintf(what, sizeof what, "S %d A %d H %d, clip 1.5: every episode within 1.5 (largest "
                 "%.9f), every pair within %.9g (largest %.9g)", S, A, H, sqrt(single),
                 c.bound_rep, sqrt(m2));
        CHECK(sqrt(single) <= 1.5 && sqrt(single) > 1.5 * (1 - 0x1p-18) &&
                  sqrt(m2) <= c.bound_rep && sqrt(m2) > 1.5 && st.clipped > 0,
              what);
      }
      free(all);
      dprl_mdp_stats_free(&st);
      dprl_mdp_config_free(&c);
    }
  }
}

/* Tent features (the general path): random episodes against the
** definition (to truncation), single norms and pairs within the bounds. */
static void test_sensitivity_tent(void) {
  dprl_mdp_config c;
  dprl_mdp_stats st;
  dprl_error err;
  CHECK(parse(&c, "{\"n_states\": 3, \"n_actions\": 2, \"gamma\": 0.9, \"rmin\": 0, \"rmax\": 1, "
                  "\"epsilon\": 1, \"delta\": 1e-5, \"clip\": \"none\", \"horizon\": 3, \"transitions\": \"sparse\", "
                  "\"features\": {\"tent\": 3, \"low\": -1, \"high\": 1}}", &err) == DPRL_OK &&
            c.tent && !c.exact_path && c.new_cells == 12 &&
            c.bound_rep == sqrt(60) * (1 + 0x1p-10),
        "tent, H = 3: the general path, T_c = 4H, bound_rep = sqrt(6H^2 + H + 3)(1 + 2^-10)");
  dprl_mdp_stats_init(&st, &c, NULL, &err);
  enum { N = 1200 };
  size_t D = full_dim(&c);
  int64_t *all = malloc((N + 1) * D * sizeof *all);
  double *ref = malloc(D * sizeof *ref), single = 0;
  int mism = 0;
  srand(5);
  for (int k = 0; k < N; k++) {
    episode e = {.n = 1 + (size_t)(rand() % 5)};
    for (size_t i = 0; i < e.n; i++) {
      e.x[i] = k % 3 == 0 ? (double)(rand() % 3) - 1 : -1.2 + 2.4 * rand() / (double)RAND_MAX;
      e.a[i] = k % 2 ? 0 : rand() % 2;
      e.r[i] = (double)(rand() % 2);
    }
    contribution(&c, &st, &e, all + (size_t)k * D);
    reference(&c, &e, ref);
    for (size_t j = 0; j < D; j++)
      if (fabs((double)all[(size_t)k * D + j] / T_ - ref[j]) > 2 / T_ + 1e-5 * fabs(ref[j]) &&
          !mism++) /* truncation to ticks, or the limit 2^-20 under the bound */
        printf("#   episode %d entry %zu: core %.9g, definition %.9g\n", k, j,
               (double)all[(size_t)k * D + j] / T_, ref[j]);
    single = fmax(single, norm2(all + (size_t)k * D, D));
  }
  episode stay = {.n = 4, .x = {-1, -1, -1, -1}, .a = {1, 1, 1, 1}, .r = {1, 1, 1, 1}};
  contribution(&c, &st, &stay, all + (size_t)N * D);
  single = fmax(single, norm2(all + (size_t)N * D, D));
  double m2 = max_pair2(all, N + 1, D);
  char what[200];
  CHECK(mism == 0, "tent: the vectors equal the definition's phi sums, totals included "
                   "(to a tick's truncation)");
  snprintf(what, sizeof what, "tent: every episode within sqrt(1 + 3H^2) = %.9g, one at an "
           "anchor at it (largest %.9g); every pair within %.9g (largest %.9g)", c.bound,
           sqrt(single), c.bound_rep, sqrt(m2));
  CHECK(sqrt(single) <= c.bound && sqrt(single) > c.bound * (1 - 0x1p-18) &&
            sqrt(m2) <= c.bound_rep,
        what);
  free(all);
  free(ref);
  dprl_mdp_stats_free(&st);
  dprl_mdp_config_free(&c);
}

/* On a coarse grid (two counts a step): every neighbour D + x of random
** logs D, and every pair D + x, D + y, moves the grid vector by at most
** Delta / g. */
static void test_grid_rounding(void) {
  static const double rewards[] = {0, 0.3, 1};
  dprl_mdp_config c;
  dprl_mdp_stats st;
  dprl_error err;
  parse(&c, "{\"n_states\": 2, \"n_actions\": 2, \"gamma\": 0.9, \"rmin\": 0, \"rmax\": 1, "
            "\"epsilon\": 1, \"delta\": 1e-5, \"clip\": \"none\", \"horizon\": 2, \"transitions\": \"sparse\"}", &err);
  /* touched: start 1, counts min(H, 12), rewards and totals min(H, 4) each */
  CHECK(c.touched == 7 && c.touched_rep == 14 && c.bound_rep == sqrt(29) &&
            c.sens == sqrt(29) + sqrt(14) * c.grid,
        "Delta = sqrt(6H^2 + H + 3) + sqrt(2 touched) g, touched = 1 + 3H for S = A = 2, H = 2");
  CHECK(dprl_mdp_calibrate_grid(&c, 2.0, &err) == DPRL_OK && c.grid_shift == 25, "grid g = 2");
  dprl_mdp_stats_init(&st, &c, NULL, &err);
  size_t n, D = full_dim(&c);
  int mismatch = 0;
  int64_t *all = all_contributions(&c, &st, rewards, 3, &n, &mismatch), base[64];
  double add = 0, rep = 0;
  srand(3);
  for (int d = 0; d < 6; d++) {
    for (size_t j = 0; j < D; j++)
      base[j] = j < 2 + 12 || j >= D - 4 ? (int64_t)(rand() % 50) * (int64_t)T_
                                         : (int64_t)(rand() % 4000000) * (rand() % 2 ? 1 : -1) * 10;
    for (size_t x = 0; x < n; x++) {
      __int128 acc = 0;
      for (size_t j = 0; j < D; j++) {
        int64_t k = dprl_mdp_grid_value(&c, base[j] + all[x * D + j]) -
                    dprl_mdp_grid_value(&c, base[j]);
        acc += (__int128)k * k;
      }
      add = fmax(add, sqrt((double)acc));
      for (size_t y = x + 1; y < n; y += 3) {
        acc = 0;
        for (size_t j = 0; j < D; j++) {
          int64_t k = dprl_mdp_grid_value(&c, base[j] + all[x * D + j]) -
                      dprl_mdp_grid_value(&c, base[j] + all[y * D + j]);
          acc += (__int128)k * k;
        }
        rep = fmax(rep, sqrt((double)acc));
      }
    }
  }
  char what[240];
  snprintf(what, sizeof what, "grid steps: every neighbour within (Delta_0 + sqrt(touched) g)/g "
           "= %.6f (largest %.6f, above Delta_0/g = %.6f), every pair within Delta/g = %.6f "
           "(largest %.6f)", (c.bound + sqrt((double)c.touched) * c.grid) / c.grid, add,
           c.bound / c.grid, c.sens / c.grid, rep);
  CHECK(add <= (c.bound + sqrt((double)c.touched) * c.grid) / c.grid && add > c.bound / c.grid &&
            rep <= c.sens / c.grid,
        what);
  free(all);
  dprl_mdp_stats_free(&st);
  dprl_mdp_config_free(&c);
}

/* ---- the calibration, independently ---------------------------------------- */

/* CKS 2020, Corollary 13: eps(rho, delta) = inf over a > 1 of
** a rho + (ln(1/delta) + (a - 1) ln(1 - 1/a) - ln a) / (a - 1), here by a
** dense scan of ln(a - 1) and a golden-section refinement. */
static double cks_obj(double a, double rho, double delta) {
  return a * rho + (log(1 / delta) + (a - 1) * log1p(-1 / a) - log(a)) / (a - 1);
}

static double cks_eps(double rho, double delta) {
  double best = HUGE_VAL, at = 0;
  for (double t = -12; t <= 12; t += 0.01) {
    double v = cks_obj(1 + exp(t), rho, delta);
    if (v < best) best = v, at = t;
  }
  double lo = at - 0.01, hi = at + 0.01, g = (sqrt(5) - 1) / 2;
  for (int i = 0; i < 200; i++) {
    double m1 = hi - g * (hi - lo), m2 = lo + g * (hi - lo);
    if (cks_obj(1 + exp(m1), rho, delta) < cks_obj(1 + exp(m2), rho, delta)) hi = m2;
    else lo = m1;
  }
  return fmin(best, cks_obj(1 + exp((lo + hi) / 2), rho, delta));
}

static void test_calibration(void) {
  static const struct {
    double eps, delta;
    int H;
  } cases[] = {{1, 1e-5, 20}, {0.3, 1e-6, 5}, {3, 1e-3, 2}, {1, 0.2, 3}};
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    char json[400], what[300];
    snprintf(json, sizeof json,
             "{\"n_states\": 5, \"n_actions\": 3, \"gamma\": 0.9, \"rmin\": -1, \"rmax\": 1, "
             "\"epsilon\": %g, \"delta\": %g, \"clip\": \"none\", \"horizon\": %d, \"transitions\": \"sparse\"}",
             cases[i].eps, cases[i].delta, cases[i].H);
    dprl_mdp_config c;
    dprl_error err;
    CHECK(parse(&c, json, &err) == DPRL_OK, json);
    double eps = cases[i].eps, delta = cases[i].delta, H = cases[i].H;
    double d0 = delta / 2 / (1 + exp(eps)), Tc = fmin(H, 5 * 3 * 5);
    double tau = c.sigma * sqrt(2 * log(Tc / d0));
    snprintf(what, sizeof what, "eps %g delta %g H %g: T_c = %lld = H, delta_G = delta/2, delta_0 "
             "= %.12g = (delta/2)/(1 + e^eps) (not above), tau %.12g = sigma sqrt(2 ln(T_c / "
             "delta_0)) = %.12g (not below)", eps, delta, H, (long long)c.new_cells, c.delta_thr, c.tau,
             tau);
    CHECK(c.new_cells == (int64_t)Tc && c.delta_gauss == delta / 2 && c.delta_thr <= d0 &&
              c.delta_thr > d0 * (1 - 1e-12) && c.tau >= tau && c.tau < tau * (1 + 1e-10),
          what);
    CHECK(Tc * exp(-c.tau * c.tau / (2 * c.sigma * c.sigma)) <= c.delta_thr &&
              c.delta_gauss + (1 + exp(eps)) * c.delta_thr <= delta,
          "T_c exp(-tau^2 / (2 sigma^2)) <= delta_0, and delta_G + (1 + e^eps) delta_0 <= delta");
    double k = c.sens / c.grid, s = (double)c.steps;
    double here = cks_eps(k * k / (2 * s * s), delta / 2);
    double below = cks_eps(k * k / (2 * (s - 1) * (s - 1)), delta / 2);
    snprintf(what, sizeof what, "sigma = %.12g = s g with s = %.0f the smallest: the CKS "
             "conversion of (Delta/g)^2/(2 s^2) gives %.12g <= eps, and %.12g > eps at s - 1",
             c.sigma, s, here, below);
    CHECK(c.sigma == s * c.grid && here <= eps * (1 + 1e-9) && below > eps * (1 - 1e-9) &&
              fabs(c.rho - k * k / (2 * s * s)) <= 1e-12 * c.rho,
          what);
    dprl_mdp_config_free(&c);
  }
}

int main(void) {
  test_sensitivity_exhaustive();
  test_sensitivity_tent();
  test_grid_rounding();
  test_calibration();
  return CHECK_DONE();
}
