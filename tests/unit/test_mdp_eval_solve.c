/*
** test_mdp_eval_solve.c: evaluation and planning on a released MDP model
** (mdp/mdp_eval.c).  Values are checked against solutions computed here in
** another way: closed forms for a hand-made MDP, Gaussian elimination of
** this file's own for random ones, every deterministic policy enumerated
** for the optimum, forward sums of P^t r for finite horizons, Gauss-Seidel
** sweeps where there are too many states for a direct solve; and both
** stop when cancelled.
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "util.h"
#include "util_mdp.h"
#include "mdp/mdp_eval.h"
#include "mdp/model.h"

/* ---- independent solutions --------------------------------------------------- */

/* Gaussian elimination with partial pivoting: a (n x n) and b overwritten. */
static void gauss(int n, double *a, double *b) {
  for (int c = 0; c < n; c++) {
    int p = c;
    for (int r = c + 1; r < n; r++)
      if (fabs(a[r * n + c]) > fabs(a[p * n + c])) p = r;
    for (int k = 0; k < n; k++) {
      double t = a[c * n + k];
      a[c * n + k] = a[p * n + k];
      a[p * n + k] = t;
    }
    double t = b[c];
    b[c] = b[p];
    b[p] = t;
    for (int r = c + 1; r < n; r++) {
      double f = a[r * n + c] / a[c * n + c];
      for (int k = c; k < n; k++) a[r * n + k] -= f * a[c * n + k];
      b[r] -= f * b[c];
    }
  }
  for (int r = n - 1; r >= 0; r--) {
    double x = b[r];
    for (int k = r + 1; k < n; k++) x -= a[r * n + k] * b[k];
    b[r] = x / a[r * n + r];
  }
}

/* The plain estimate of p (no floor, no pessimism: every pair visited):
** P[(s*A+a)*S + k], r[s*A+a]. */
static void plain_estimate(const spec *p, double *P, double *r) {
  int S = p->S, A = p->A;
  for (int sa = 0; sa < S * A; sa++) {
    const double *c = p->counts + sa * (S + 1);
    double N = 0;
    for (int k = 0; k <= S; k++) N += fmax(c[k], 0);
    for (int k = 0; k < S; k++) P[sa * S + k] = fmax(c[k], 0) / N;
    r[sa] = fmin(fmax(0.5 * (p->rmin + p->rmax) + p->rsums[sa] / N, p->rmin), p->rmax);
  }
}

/* V^pi by elimination of (I - gamma P_pi) V = r_pi. */
static void exact_value(const spec *p, const double *P, const double *r, const double *pi,
                        double gamma, double *V) {
  int S = p->S, A = p->A;
  double *M = calloc((size_t)(S * S), sizeof *M);
  for (int s = 0; s < S; s++) {
    M[s * S + s] = 1;
    V[s] = 0;
    for (int a = 0; a < A; a++) {
      V[s] += pi[s * A + a] * r[s * A + a];
      for (int k = 0; k < S; k++) M[s * S + k] -= gamma * pi[s * A + a] * P[(s * A + a) * S + k];
    }
  }
  gauss(S, M, V);
  free(M);
}

/* sum_{t<H} gamma^t P_pi^t r_pi, forwards: the H-step value. */
static void horizon_value(const spec *p, const double *P, const double *r, const double *pi,
                          double gamma, int H, double *V) {
  int S = p->S, A = p->A;
  double *Ppi = calloc((size_t)(S * S), sizeof *Ppi), *rpi = calloc((size_t)S, sizeof *rpi);
  double *D = calloc((size_t)(S * S), sizeof *D), *D2 = calloc((size_t)(S * S), sizeof *D2);
  for (int s = 0; s < S; s++)
    for (int a = 0; a < A; a++) {
      rpi[s] += pi[s * A + a] * r[s * A + a];
      for (int k = 0; k < S; k++) Ppi[s * S + k] += pi[s * A + a] * P[(s * A + a) * S + k];
    }
  for (int s = 0; s < S; s++) D[s * S + s] = 1, V[s] = 0;
  double g = 1;
  for (int t = 0; t < H; t++) { /* D = (gamma P_pi)^t */
    for (int s = 0; s < S; s++)
      for (int k = 0; k < S; k++) V[s] += g * D[s * S + k] * rpi[k];
    for (int s = 0; s < S; s++)
      for (int k = 0; k < S; k++) {
        double x = 0;
        for (int j = 0; j < S; j++) x += D[s * S + j] * Ppi[j * S + k];
        D2[s * S + k] = x;
      }
    memcpy(D, D2, (size_t)(S * S) * sizeof *D);
    g *= gamma;
  }
  free(Ppi);
  free(rpi);
  free(D);
  free(D2);
}

static double max_abs_diff(const double *x, const double *y, int n) {
  double d = 0;
  for (int i = 0; i < n; i++) d = fmax(d, fabs(x[i] - y[i]));
  return d;
}

/* A random visited MDP: every pair has counts, some transitions absent. */
static void random_spec(spec *p, int S, int A) {
  spec_alloc(p, S, A);
  p->rmin = -1;
  p->rmax = 2;
  for (int sa = 0; sa < S * A; sa++) {
    double N = 0;
    for (int k = 0; k <= S; k++) {
      double c = lcg_unit() < 0.4 ? 0 : floor(1 + 50 * lcg_unit());
      p->counts[sa * (S + 1) + k] = c;
      N += c;
    }
    if (N == 0) p->counts[sa * (S + 1) + S] = N = 3;
    p->rsums[sa] = N * (3 * lcg_unit() - 1 - 0.5); /* mean reward in [-1, 2], minus c = 0.5 */
  }
  for (int s = 0; s < S; s++) p->start[s] = floor(10 * lcg_unit());
  p->start[0] += 1;
}

/* ---- a hand-made MDP ---------------------------------------------------------------- */

static void test_hand(void) {
  spec p;
  dprl_mdpv_model m;
  dprl_mdpv_opts o;
  dprl_mdpv_est e;
  dprl_mdpv_work w;
  dprl_mdpv_solved how;
  dprl_error err = {0};
  hand_spec(&p);
  if (setup(&p, &m, &o, &e, "{}", 0)) return;
  dprl_mdpv_work_init(&w, 2, 2, &err);
  double pi[] = {0, 1, 1, 0}, V[2], Q[4];
  int32_t pol[2];
  dprl_mdpv_evaluate(&e, &o, pi, &w, V, &how, NULL, &err);
  /* V(1) = 1/(1 - 0.9) = 10, V(0) = 0.9 V(1) */
  CHECK(fabs(V[1] - 10) < 1e-12 && fabs(V[0] - 9) < 1e-12 && !strcmp(how.method, "direct"),
        LABEL("hand: V = (9, 10) by a direct solve, got (%.17g, %.17g)", V[0], V[1]));
  CHECK(how.bound <= o.tolerance, "hand: the bound meets the tolerance");
  dprl_mdpv_optimize(&e, &o, &w, Q, V, pol, &how, NULL, &err);
  CHECK(pol[0] == 1 && pol[1] == 0 && fabs(Q[0] - 8.1) < 1e-12 && fabs(Q[1] - 9) < 1e-12 &&
            fabs(Q[2] - 10) < 1e-12 && fabs(Q[3]) < 1e-12,
        "hand: plan: policy (1, 0), Q = (8.1, 9; 10, 0)");
  o.horizon = 3;
  dprl_mdpv_evaluate(&e, &o, pi, &w, V, &how, NULL, &err);
  CHECK(fabs(V[0] - 1.71) <= how.bound && fabs(V[1] - 2.71) <= how.bound && how.bound > 0 &&
            how.bound < 1e-13,
        LABEL("hand: 3 steps: V = (0.9^2 + ... = 1.71, 2.71) within the bound %.3g", how.bound));
  dprl_mdpv_optimize(&e, &o, &w, Q, V, pol, &how, NULL, &err);
  CHECK(pol[0] == 1 && pol[1] == 0 && fabs(V[0] - 1.71) < 1e-14, "hand: 3-step plan");
  /* H = 1: only the immediate reward counts, every action of state 0 ties at 0 */
  o.horizon = 1;
  dprl_mdpv_optimize(&e, &o, &w, Q, V, pol, &how, NULL, &err);
  CHECK(pol[0] == 0 && pol[1] == 0 && V[1] == 1, "hand: ties go to the lowest action");
  dprl_mdpv_work_free(&w);
  dprl_mdpv_est_free(&e);
  dprl_mdpv_model_free(&m);
  spec_free(&p);
}

/* ---- random MDPs against elimination, enumeration and forward sums ------------------ */

static void test_random_eval(void) {
  for (int trial = 0; trial < 5; trial++) {
    int S = 3 + trial * 3, A = 1 + trial % 3;
    spec p;
    dprl_mdpv_model m;
    dprl_mdpv_opts o;
    dprl_mdpv_est e;
    dprl_mdpv_work w;
    dprl_mdpv_solved how;
    dprl_error err = {0};
    random_spec(&p, S, A);
    p.gamma = 0.95;
    if (setup(&p, &m, &o, &e, "{\"min_count\": 0}", 0)) return;
    dprl_mdpv_work_init(&w, S, A, &err);
    double *pi = malloc(sizeof(double) * (size_t)(S * A)), *P = malloc(sizeof(double) * (size_t)(S * A * S));
    double *r = malloc(sizeof(double) * (size_t)(S * A)), *V = malloc(sizeof(double) * (size_t)S);
    double *X = malloc(sizeof(double) * (size_t)S);
    for (int s = 0; s < S; s++) {
      double t = 0;
      for (int a = 0; a < A; a++) t += pi[s * A + a] = lcg_unit() < 0.3 ? 0 : lcg_unit();
      if (t == 0) pi[s * A] = t = 1;
      for (int a = 0; a < A; a++) pi[s * A + a] /= t;
    }
    plain_estimate(&p, P, r);
    exact_value(&p, P, r, pi, 0.95, X);
    dprl_mdpv_evaluate(&e, &o, pi, &w, V, &how, NULL, &err);
    CHECK(max_abs_diff(V, X, S) <= 1e-10 && how.bound <= o.tolerance,
          LABEL("random %dx%d: discounted values equal elimination's (diff %.2g, bound %.2g)", S,
                A, max_abs_diff(V, X, S), how.bound));
    for (int H = 1; H <= 7; H += 3) {
      o.horizon = H;
      o.gamma = trial % 2 ? 1 : 0.8;
      dprl_mdpv_evaluate(&e, &o, pi, &w, V, &how, NULL, &err);
      horizon_value(&p, P, r, pi, o.gamma, H, X);
      CHECK(max_abs_diff(V, X, S) <= 1e-12,
            LABEL("random %dx%d: %d steps, gamma %g: backward induction = sum of gamma^t P^t r", S,
                  A, H, o.gamma));
    }
    free(pi);
    free(P);
    free(r);
    free(V);
    free(X);
    dprl_mdpv_work_free(&w);
    dprl_mdpv_est_free(&e);
    dprl_mdpv_model_free(&m);
    spec_free(&p);
  }
}

/* The best value of every state over all A^S deterministic policies. */
static void enumerate_optimum(const spec *p, const double *P, const double *r, double gamma,
                              double *best) {
  int S = p->S, A = p->A, total = 1;
  for (int s = 0; s < S; s++) total *= A;
  double *pi = calloc((size_t)(S * A), sizeof *pi), *V = malloc(sizeof(double) * (size_t)S);
  for (int s = 0; s < S; s++) best[s] = -HUGE_VAL;
  for (int code = 0; code < total; code++) {
    memset(pi, 0, sizeof(double) * (size_t)(S * A));
    for (int s = 0, c = code; s < S; s++, c /= A) pi[s * A + c % A] = 1;
    exact_value(p, P, r, pi, gamma, V);
    for (int s = 0; s < S; s++) best[s] = fmax(best[s], V[s]);
  }
  free(pi);
  free(V);
}

/* max over the A^(S H) deterministic Markov policies of the H-step value
** of state s, by recursion over the steps. */
static double enumerate_horizon(const double *P, const double *r, int S, int A, double gamma,
                                int H, int s) {
  if (H == 0) return 0;
  double best = -HUGE_VAL;
  for (int a = 0; a < A; a++) {
    double q = r[s * A + a];
    for (int k = 0; k < S; k++)
      if (P[(s * A + a) * S + k] > 0)
        q += gamma * P[(s * A + a) * S + k] * enumerate_horizon(P, r, S, A, gamma, H - 1, k);
    best = fmax(best, q);
  }
  return best;
}

static void test_random_plan(void) {
  for (int trial = 0; trial < 4; trial++) {
    int S = 4 + trial % 2, A = 2 + trial % 2;
    spec p;
    dprl_mdpv_model m;
    dprl_mdpv_opts o;
    dprl_mdpv_est e;
    dprl_mdpv_work w;
    dprl_mdpv_solved how;
    dprl_error err = {0};
    random_spec(&p, S, A);
    p.gamma = 0.9;
    if (setup(&p, &m, &o, &e, "{\"min_count\": 0}", 1)) return;
    dprl_mdpv_work_init(&w, S, A, &err);
    double *P = malloc(sizeof(double) * (size_t)(S * A * S)), *r = malloc(sizeof(double) * (size_t)(S * A));
    double *V = malloc(sizeof(double) * (size_t)S), *best = malloc(sizeof(double) * (size_t)S);
    double *Q = malloc(sizeof(double) * (size_t)(S * A)), *pi = calloc((size_t)(S * A), sizeof *pi);
    int32_t *pol = malloc(sizeof(int32_t) * (size_t)S);
    plain_estimate(&p, P, r);
    enumerate_optimum(&p, P, r, 0.9, best);
    dprl_mdpv_optimize(&e, &o, &w, Q, V, pol, &how, NULL, &err);
    CHECK(max_abs_diff(V, best, S) <= 1e-10 && how.bound <= o.tolerance,
          LABEL("random %dx%d: planned values = the best of all %d deterministic policies", S, A,
                (int)pow(A, S)));
    for (int s = 0; s < S; s++) pi[s * A + pol[s]] = 1;
    exact_value(&p, P, r, pi, 0.9, V);
    double qerr = 0;
    for (int s = 0; s < S; s++)
      for (int a = 0; a < A; a++) {
        double q = r[s * A + a];
        for (int k = 0; k < S; k++) q += 0.9 * P[(s * A + a) * S + k] * best[k];
        qerr = fmax(qerr, fabs(q - Q[s * A + a]));
      }
    CHECK(max_abs_diff(V, best, S) <= 1e-10 && qerr <= 1e-10,
          LABEL("random %dx%d: the greedy policy attains them; Q = r + gamma P V*", S, A));
    o.horizon = 3;
    o.gamma = trial % 2 ? 1 : 0.7;
    dprl_mdpv_optimize(&e, &o, &w, Q, V, pol, &how, NULL, &err);
    double herr = 0;
    for (int s = 0; s < S; s++)
      herr = fmax(herr, fabs(V[s] - enumerate_horizon(P, r, S, A, o.gamma, 3, s)));
    CHECK(herr <= 1e-12, LABEL("random %dx%d: 3-step plan = the best of every Markov policy", S, A));
    free(P);
    free(r);
    free(V);
    free(best);
    free(Q);
    free(pi);
    free(pol);
    dprl_mdpv_work_free(&w);
    dprl_mdpv_est_free(&e);
    dprl_mdpv_model_free(&m);
    spec_free(&p);
  }
}

/* ---- more states than a direct solve takes: value iteration -------------------------- */

/* A sparse estimate built directly: each pair moves to two states or ends. */
static void sparse_est(dprl_mdpv_est *e, int64_t S, int64_t A) {
  memset(e, 0, sizeof *e);
  e->S = S;
  e->A = A;
  e->row = malloc(sizeof(int64_t) * (size_t)(S * A + 1));
  e->next = malloc(sizeof(int32_t) * (size_t)(2 * S * A));
  e->prob = malloc(sizeof(double) * (size_t)(2 * S * A));
  e->reward = malloc(sizeof(double) * (size_t)(S * A));
  e->start = malloc(sizeof(double) * (size_t)S);
  for (int64_t sa = 0; sa < S * A; sa++) {
    e->row[sa] = 2 * sa;
    e->next[2 * sa] = (int32_t)(lcg_unit() * (double)S);
    e->next[2 * sa + 1] = (int32_t)((sa / A + 1) % S);
    double u = 0.9 * lcg_unit();
    e->prob[2 * sa] = u;
    e->prob[2 * sa + 1] = 0.97 - u;
    e->reward[sa] = lcg_unit() - 0.25;
    e->rabs = fmax(e->rabs, fabs(e->reward[sa]));
  }
  e->most_next = 2;
  e->row[S * A] = 2 * S * A;
  for (int64_t s = 0; s < S; s++) e->start[s] = 1.0 / (double)S;
}

static void sparse_free(dprl_mdpv_est *e) {
  free(e->row);
  free(e->next);
  free(e->prob);
  free(e->reward);
  free(e->start);
}

/* Gauss-Seidel sweeps (each state updated in place) until nothing moves. */
static void gauss_seidel(const dprl_mdpv_est *e, const double *pi, double gamma, double *V) {
  int64_t S = e->S, A = e->A;
  for (int64_t s = 0; s < S; s++) V[s] = 0;
  for (int sweep = 0; sweep < 100000; sweep++) {
    double d = 0;
    for (int64_t s = 0; s < S; s++) {
      double best = -HUGE_VAL, acc = 0;
      for (int64_t a = 0; a < A; a++) {
        double q = e->reward[s * A + a];
        for (int64_t j = e->row[s * A + a]; j < e->row[s * A + a + 1]; j++)
          q += gamma * e->prob[j] * V[e->next[j]];
        if (pi) acc += pi[s * A + a] * q;
        best = fmax(best, q);
      }
      double x = pi ? acc : best;
      d = fmax(d, fabs(x - V[s]));
      V[s] = x;
    }
    if (d < 1e-15) break;
  }
}

static void test_iterative(void) {
  int64_t S = DPRL_MDPV_DIRECT_MAX + 52, A = 2;
  dprl_mdpv_est e;
  dprl_mdpv_work w;
  dprl_mdpv_solved how;
  dprl_error err = {0};
  dprl_mdpv_opts o = {.gamma = 0.97, .tolerance = 1e-9};
  sparse_est(&e, S, A);
  dprl_mdpv_work_init(&w, S, A, &err);
  double *pi = malloc(sizeof(double) * (size_t)(S * A)), *V = malloc(sizeof(double) * (size_t)S);
  double *X = malloc(sizeof(double) * (size_t)S), *Q = malloc(sizeof(double) * (size_t)(S * A));
  int32_t *pol = malloc(sizeof(int32_t) * (size_t)S);
  for (int64_t i = 0; i < S * A; i++) pi[i] = i % 2 ? 0.3 : 0.7;
  dprl_mdpv_evaluate(&e, &o, pi, &w, V, &how, NULL, &err);
  gauss_seidel(&e, pi, 0.97, X);
  double d = max_abs_diff(V, X, (int)S);
  CHECK(!strcmp(how.method, "iteration") && how.bound <= 1e-9 && d <= how.bound + 1e-12,
        LABEL("%lld states: iteration, |V - V_gauss_seidel| = %.2g <= bound %.2g <= tolerance",
              (long long)S, d, how.bound));
  dprl_mdpv_optimize(&e, &o, &w, Q, V, pol, &how, NULL, &err);
  gauss_seidel(&e, NULL, 0.97, X);
  d = max_abs_diff(V, X, (int)S);
  CHECK(!strcmp(how.method, "iteration") && how.bound <= 1e-9 && d <= how.bound + 1e-12,
        LABEL("%lld states: planned V within its bound %.2g of Gauss-Seidel's V* (%.2g)",
              (long long)S, how.bound, d));
  /* a tolerance below rounding: it stops once the change is within the
  ** rounding, long before the a-priori count (10^8) */
  o.tolerance = 1e-300;
  dprl_mdpv_evaluate(&e, &o, pi, &w, V, &how, NULL, &err);
  CHECK(how.bound < 1e-10 && how.iterations > 100 && how.iterations < 10000,
        LABEL("tolerance 1e-300 stops after %lld sweeps, bound %.2g", (long long)how.iterations,
              how.bound));
  free(pi);
  free(V);
  free(X);
  free(Q);
  free(pol);
  dprl_mdpv_work_free(&w);
  sparse_free(&e);
}

/* ---- cancellation ------------------------------------------------------------------------- */

static int stop_now(void *ctx) {
  (void)ctx;
  return 1;
}

static void test_cancel(void) {
  int64_t S = 3000, A = 2;
  dprl_mdpv_est e;
  dprl_mdpv_work w;
  dprl_mdpv_solved how;
  dprl_error err = {0};
  dprl_mdpv_opts o = {.gamma = 0.999, .tolerance = 1e-12};
  dprl_cancel c = {stop_now, NULL, 0, 0};
  sparse_est(&e, S, A);
  dprl_mdpv_work_init(&w, S, A, &err);
  double *pi = calloc((size_t)(S * A), sizeof *pi), *V = malloc(sizeof(double) * (size_t)S);
  double *Q = malloc(sizeof(double) * (size_t)(S * A));
  int32_t *pol = malloc(sizeof(int32_t) * (size_t)S);
  for (int64_t s = 0; s < S; s++) pi[s * A] = 1;
  int rc = dprl_mdpv_evaluate(&e, &o, pi, &w, V, &how, &c, &err);
  CHECK(rc == DPRL_EINTR && how.iterations < 100, "cancel: evaluation stops");
  c.stopped = 0;
  c.spent = 0;
  dprl_error_clear(&err);
  rc = dprl_mdpv_optimize(&e, &o, &w, Q, V, pol, &how, &c, &err);
  CHECK(rc == DPRL_EINTR, "cancel: planning stops");
  free(pi);
  free(V);
  free(Q);
  free(pol);
  dprl_mdpv_work_free(&w);
  sparse_free(&e);
}

int main(void) {
  test_hand();
  test_random_eval();
  test_random_plan();
  test_iterative();
  test_cancel();
  return CHECK_DONE();
}
