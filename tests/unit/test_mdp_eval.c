/*
** test_mdp_eval.c: evaluation and planning on a released MDP model
** (mdp/model.c, mdp/mdp_eval.c) and the JSON number reader they rely on.
**
** Values are checked against solutions computed here in another way:
** closed forms for a hand-made MDP, Gaussian elimination of this file's
** own for random ones, every deterministic policy enumerated for the
** optimum, forward sums of P^t r for finite horizons; the bootstrap's
** error bar against the first-order (delta-method) standard deviation.
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "base/json.h"
#include "dp/noise.h"
#include "mdp/mdp_eval.h"
#include "mdp/model.h"

static uint64_t lcg = 12345;
static double unif(void) { /* test data only */
  lcg = lcg * 6364136223846793005ull + 1442695040888963407ull;
  return (double)(lcg >> 11) * 0x1.0p-53;
}

/* ---- a model as the release writes it ------------------------------------------ */

typedef struct spec {
  int S, A, horizon;
  double gamma, rmin, rmax, sigma, rsig;
  double *counts; /* S*A*(S+1) */
  double *rsums;  /* S*A, sums of (r - c) */
  double *start;  /* S */
} spec;

static void spec_alloc(spec *p, int S, int A) {
  memset(p, 0, sizeof *p);
  p->S = S;
  p->A = A;
  p->gamma = 0.9;
  p->rmax = 1;
  p->counts = calloc((size_t)(S * A * (S + 1)), sizeof *p->counts);
  p->rsums = calloc((size_t)(S * A), sizeof *p->rsums);
  p->start = calloc((size_t)S, sizeof *p->start);
}

static void spec_free(spec *p) {
  free(p->counts);
  free(p->rsums);
  free(p->start);
}

static void put_array(dprl_buf *b, const double *x, int n) {
  dprl_json_put_double_array(b, x, (size_t)n);
}

/* The JSON of the contract for p; the caller frees .data. */
static dprl_buf model_json(const spec *p) {
  dprl_buf b = {0};
  int S = p->S, A = p->A;
  dprl_buf_printf(&b,
                  "{\"mechanism\":\"dp_mdp\",\"private\":false,\"seeded\":true,\"unit\":\"episode\","
                  "\"n_states\":%d,\"n_actions\":%d,\"epsilon\":1,\"delta\":1e-5,\"clip\":null,"
                  "\"sensitivity\":2",
                  S, A);
  dprl_json_put_num(&b, "gamma", p->gamma);
  dprl_json_put_num(&b, "rmin", p->rmin);
  dprl_json_put_num(&b, "rmax", p->rmax);
  dprl_json_put_num(&b, "sigma", p->sigma);
  dprl_json_put_num(&b, "reward_sigma", p->rsig);
  dprl_json_put_num(&b, "reward_center", 0.5 * (p->rmin + p->rmax));
  if (p->horizon) dprl_json_put_int(&b, "horizon", p->horizon);
  else dprl_buf_puts(&b, ",\"horizon\":null");
  dprl_buf_puts(&b, ",\"features\":\"tabular\",\"start\":");
  put_array(&b, p->start, S);
  dprl_buf_puts(&b, ",\"reward_sums\":[");
  for (int s = 0; s < S; s++) {
    if (s) dprl_buf_puts(&b, ",");
    put_array(&b, p->rsums + s * A, A);
  }
  dprl_buf_puts(&b, "],\"counts\":[");
  for (int s = 0; s < S; s++) {
    dprl_buf_puts(&b, s ? ",[" : "[");
    for (int a = 0; a < A; a++) {
      if (a) dprl_buf_puts(&b, ",");
      put_array(&b, p->counts + (s * A + a) * (S + 1), S + 1);
    }
    dprl_buf_puts(&b, "]");
  }
  dprl_buf_puts(&b, "]}");
  return b;
}

static int read_spec(const spec *p, dprl_mdpv_model *m, dprl_error *err) {
  dprl_buf b = model_json(p);
  int rc = dprl_mdpv_model_read(m, b.data, b.len, NULL, err);
  dprl_buf_free(&b);
  return rc;
}

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
      double c = unif() < 0.4 ? 0 : floor(1 + 50 * unif());
      p->counts[sa * (S + 1) + k] = c;
      N += c;
    }
    if (N == 0) p->counts[sa * (S + 1) + S] = N = 3;
    p->rsums[sa] = N * (3 * unif() - 1 - 0.5); /* mean reward in [-1, 2], minus c = 0.5 */
  }
  for (int s = 0; s < S; s++) p->start[s] = floor(10 * unif());
  p->start[0] += 1;
}

static int setup(const spec *p, dprl_mdpv_model *m, dprl_mdpv_opts *o, dprl_mdpv_est *e,
                 const char *opts, int plan) {
  dprl_error err = {0};
  memset(e, 0, sizeof *e);
  int rc = read_spec(p, m, &err);
  if (!rc) rc = dprl_mdpv_options("t", opts, strlen(opts), plan, m, o, &err);
  double *scratch = malloc(sizeof(double) * (size_t)(p->S + 1));
  if (!rc) rc = dprl_mdpv_estimate(m, &o->est, NULL, scratch, e, NULL, &err);
  free(scratch);
  if (rc) printf("# setup: %s\n", err.msg);
  return rc;
}

/* ---- the number reader and compact arrays -------------------------------------- */

static void test_numbers(void) {
  static const char *fmt[] = {"%.*g", "%.*e", "%.*f"};
  char buf[96], arr[112];
  size_t n = 0, bad = 0;
  dprl_error err = {0};
  for (int it = 0; it < 300000; it++) {
    double x;
    int kind = it % 4, prec = 1 + (int)(unif() * 19), f = (int)(unif() * 3);
    if (kind == 0) x = (unif() - 0.5) * pow(10, 40 * unif() - 20);
    else if (kind == 1) x = floor(unif() * 9007199254740992.0) * pow(2, -(int)(unif() * 80));
    else if (kind == 2) x = floor((unif() - 0.5) * 2e6) * pow(10, -(int)(unif() * 30));
    else x = 1e15 * unif() + unif();
    if (f == 2) prec = (int)(unif() * 25);
    if (f == 2 && fabs(x) > 1e20) f = 0;
    int len = snprintf(buf, sizeof buf, fmt[f], prec, x);
    if (len >= 60 || buf[len - 1] == '.' || strchr(buf, 'n')) continue;
    snprintf(arr, sizeof arr, "[%s]", buf);
    dprl_json *j = dprl_json_parse_compact(arr, strlen(arr), NULL, &err);
    if (!j) { /* forms that are not JSON ("1.e5") */
      dprl_error_clear(&err);
      continue;
    }
    double want = strtod(buf, NULL);
    n++;
    if (memcmp(&want, &j->nums[0], sizeof want)) {
      if (bad++ < 5) printf("#   %s read as %.17g, strtod %.17g\n", buf, j->nums[0], want);
    }
    dprl_json_free(j);
  }
  CHECK(bad == 0 && n > 250000, LABEL("numbers: %zu forms read exactly as strtod reads them", n));
  static const char *edge[] = {"9007199254740993", "9007199254740995", "0.30000000000000004",
                               "1e-27", "9999999999999999999e-27", "18446744073709551616",
                               "1.7976931348623157e308", "4.9406564584124654e-324", "-0",
                               "123456789012345678.9", "2.2250738585072014e-308", "1E+2"};
  int ok = 1;
  for (size_t i = 0; i < sizeof edge / sizeof *edge; i++) {
    snprintf(arr, sizeof arr, "[%s]", edge[i]);
    dprl_json *j = dprl_json_parse_compact(arr, strlen(arr), NULL, &err);
    double want = strtod(edge[i], NULL);
    if (!j || memcmp(&want, &j->nums[0], sizeof want)) ok = 0, printf("#   %s\n", edge[i]);
    dprl_json_free(j);
  }
  CHECK(ok, "numbers: halfway cases, 20 digits, extremes, -0 as strtod");
  const char *mixed = "{\"a\": [[1, 2.5], [3]], \"b\": [1, \"x\", [2]], \"c\": 7}";
  dprl_json *j = dprl_json_parse_compact(mixed, strlen(mixed), NULL, &err);
  const dprl_json *a = dprl_json_get(j, "a"), *b = dprl_json_get(j, "b");
  CHECK(j && a->items && a->items[0]->nums && a->items[0]->n == 2 && a->items[0]->nums[1] == 2.5 &&
            a->items[1]->nums[0] == 3,
        "compact: arrays of numbers are stored as nums");
  CHECK(j && b->items && b->n == 3 && !b->nums && b->items[1]->type == DPRL_JSON_STRING &&
            b->items[0]->is_integer && b->items[2]->nums[0] == 2,
        "compact: a mixed array is read as nodes");
  dprl_json_free(j);
  j = dprl_json_parse_compact("[1, 2", 5, NULL, &err);
  CHECK(!j && strstr(err.msg, "malformed JSON"), LABEL("compact: unterminated: %s", err.msg));
  dprl_error_clear(&err);
  j = dprl_json_parse_compact("[1, 01]", 7, NULL, &err);
  CHECK(!j && strstr(err.msg, "expected ',' or ']'"), LABEL("compact: 01 refused: %s", err.msg));
  dprl_error_clear(&err);
}

/* ---- a hand-made MDP ---------------------------------------------------------------- */

/* State 0: action 0 stays (reward 0), action 1 moves to state 1 (reward
** 0).  State 1: action 0 stays with reward 1, action 1 ends (reward 0).
** Rewards 0..1, so sums of r - 0.5. */
static void hand_spec(spec *p) {
  spec_alloc(p, 2, 2);
  double c[] = {10, 0, 0, 0, 10, 0, 0, 10, 0, 0, 0, 10};
  memcpy(p->counts, c, sizeof c);
  double r[] = {-5, -5, 5, -5};
  memcpy(p->rsums, r, sizeof r);
  p->start[0] = 10;
}

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
      for (int a = 0; a < A; a++) t += pi[s * A + a] = unif() < 0.3 ? 0 : unif();
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
    e->next[2 * sa] = (int32_t)(unif() * (double)S);
    e->next[2 * sa + 1] = (int32_t)((sa / A + 1) % S);
    double u = 0.9 * unif();
    e->prob[2 * sa] = u;
    e->prob[2 * sa + 1] = 0.97 - u;
    e->reward[sa] = unif() - 0.25;
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

/* ---- the estimate: floor, pessimism, start ----------------------------------------------- */

static void test_estimate(void) {
  spec p;
  dprl_mdpv_model m;
  dprl_mdpv_opts o;
  dprl_mdpv_est e;
  dprl_error err = {0};
  spec_alloc(&p, 3, 2);
  p.rmin = -1;
  p.rmax = 3; /* c = 1 */
  p.sigma = 2;
  p.rsig = 1;
  double c[] = {/* s0 a0 */ 30, 1.5, -2, 10, /* s0 a1 */ -1, 0.5, -3, 0.2,
                /* s1 a0 */ 100, 0, 0, 0, /* s1 a1 */ 0, 0, 0, 0,
                /* s2 a0 */ 5, 5, 5, 5, /* s2 a1 */ 0, 0, 400, 0};
  memcpy(p.counts, c, sizeof c);
  double r[] = {41.5 * 0.5, 7, 100 * 5, 0, -20, 400 * 0.25};
  memcpy(p.rsums, r, sizeof r);
  double st[] = {3, -1, 1.9};
  memcpy(p.start, st, sizeof st);
  if (setup(&p, &m, &o, &e, "{\"count_floor\": 1, \"min_count\": 20}", 0)) return;
  /* s0 a0: entries above 1: 30, 1.5, 10 -> N = 41.5 */
  CHECK(e.row[1] - e.row[0] == 2 && e.next[0] == 0 && fabs(e.prob[0] - 30 / 41.5) < 1e-15 &&
            e.next[1] == 1 && fabs(e.prob[1] - 1.5 / 41.5) < 1e-15,
        "estimate: entries at or below count_floor count as 0; ending is not stored");
  CHECK(fabs(e.reward[0] - 1.5) < 1e-15, "estimate: r = c + R/N");
  CHECK(e.row[2] == e.row[1] && e.reward[1] == -1, "estimate: N = 0 ends with rmin");
  CHECK(e.reward[2] == 3 && e.prob[e.row[2]] == 1, "estimate: r clamped to rmax");
  CHECK(e.row[5] == e.row[4] && e.reward[4] == -1 && e.pessimistic == 3,
        "estimate: N = 20 <= min_count: pessimistic (3 pairs)");
  CHECK(e.reward[5] == 1.25 && e.row[6] - e.row[5] == 1 && e.prob[e.row[5]] == 1,
        "estimate: a pair of state 2 moving to 2");
  CHECK(e.start[0] == 3 / 4.9 && e.start[1] == 0 && e.start[2] == 1.9 / 4.9 && !e.start_uniform,
        "estimate: the start distribution from the counts above the floor");
  dprl_mdpv_est_free(&e);
  dprl_mdpv_model_free(&m);
  /* ends censored: the ended column counts for the reward, not for P */
  if (setup(&p, &m, &o, &e, "{\"count_floor\": 1, \"min_count\": 20, \"ends\": \"censored\"}",
            0))
    return;
  CHECK(o.est.censored && e.row[1] - e.row[0] == 2 && fabs(e.prob[0] - 30 / 31.5) < 1e-15 &&
            fabs(e.prob[1] - 1.5 / 31.5) < 1e-15 && fabs(e.reward[0] - 1.5) < 1e-15,
        "estimate, censored: P over the next states above the floor, r over every step");
  CHECK(e.pessimistic == 3 && e.prob[e.row[2]] == 1, "estimate, censored: the other pairs as before");
  dprl_mdpv_est_free(&e);
  dprl_mdpv_model_free(&m);
  /* no start count above the floor: uniform */
  p.start[0] = 1;
  p.start[2] = 0.5;
  if (setup(&p, &m, &o, &e, "{\"count_floor\": 1}", 0)) return;
  CHECK(e.start_uniform && e.start[1] == 1.0 / 3, "estimate: no start count: uniform start");
  CHECK(o.est.min_count == dprl_mdpv_noise_floor(3, 2, 1) && o.est.min_count > 0,
        "options: min_count defaults to the noise floor");
  dprl_mdpv_est_free(&e);
  dprl_mdpv_model_free(&m);
  spec_free(&p);
  (void)err;
}

/* The noise floor against simulated pure-noise pairs. */
static void test_noise_floor(void) {
  dprl_rng rng;
  dprl_rng_init_seeded(&rng, 7, DPRL_STREAM_MDP_BOOTSTRAP);
  const int S = 10, rows = 40000;
  const double sigma = 2, t = 1;
  double z[11], sum = 0, sum2 = 0;
  for (int i = 0; i < rows; i++) {
    dprl_rng_normals(&rng, z, (size_t)S + 1);
    double N = 0;
    for (int k = 0; k <= S; k++)
      if (sigma * z[k] > t) N += sigma * z[k];
    sum += N;
    sum2 += N * N;
  }
  double mean = sum / rows, sd = sqrt(sum2 / rows - mean * mean);
  double floor_ = dprl_mdpv_noise_floor(S, sigma, t);
  CHECK(fabs(mean + 3 * sd - floor_) < 0.02 * floor_,
        LABEL("noise floor %.4f = simulated mean + 3 sd of N for pure noise (%.4f)", floor_,
              mean + 3 * sd));
  CHECK(dprl_mdpv_noise_floor(S, 0, t) == 0, "noise floor: 0 without noise");
  double n2[20001], m = 0, v = 0;
  dprl_rng_normals(&rng, n2, 20001);
  for (int i = 0; i < 20001; i++) m += n2[i];
  m /= 20001;
  for (int i = 0; i < 20001; i++) v += (n2[i] - m) * (n2[i] - m);
  v /= 20000;
  CHECK(fabs(m) < 0.03 && fabs(v - 1) < 0.05, "dprl_rng_normals: mean 0, variance 1");
}

/* ---- the bootstrap against the first-order standard deviation ------------------------ */

/* One state, one action: V = r / (1 - gamma P), P = c0 / N, r = c + R / N,
** N = c0 + ce (the rest ends the episode). */
static double one_state_value(double c0, double ce, double R, double gamma) {
  double N = c0 + ce;
  return (0.5 + R / N) / (1 - gamma * c0 / N);
}

static char *run_value(const spec *p, const char *policy, const char *opts, dprl_error *err) {
  dprl_mdpv_model m;
  dprl_mdpv_opts o;
  dprl_mdpv_policies pol = {0};
  dprl_buf b = {0};
  int rc = read_spec(p, &m, err);
  if (!rc) rc = dprl_mdpv_options("t", opts, strlen(opts), 0, &m, &o, err);
  if (!rc) rc = dprl_mdpv_policies_read(policy, strlen(policy), &m, &pol, err);
  if (!rc) rc = dprl_mdpv_value(&m, &o, &pol, &b, NULL, err);
  dprl_mdpv_policies_free(&pol);
  if (!err->code) dprl_mdpv_model_free(&m);
  if (rc) {
    dprl_buf_free(&b);
    return NULL;
  }
  return b.data;
}

static double json_num(const char *text, const char *key) {
  dprl_error err = {0};
  dprl_json *j = dprl_json_parse(text, strlen(text), &err);
  const dprl_json *v = dprl_json_get(j, key);
  double x = v && v->type == DPRL_JSON_NUMBER ? v->num : NAN;
  dprl_json_free(j);
  return x;
}

static void test_bootstrap(void) {
  spec p;
  dprl_error err = {0};
  spec_alloc(&p, 1, 1);
  p.start[0] = 100;
  /* rewards only: r = c + (R + tau Z) / N, sd tau / N */
  p.counts[1] = 400;
  p.rsums[0] = 40;
  p.rsig = 10;
  char *out = run_value(&p, "[0]", "{\"bootstrap\": 2000}", &err);
  double se = out ? json_num(out, "stderr") : NAN;
  CHECK(fabs(se - 0.025) < 0.06 * 0.025 && fabs(json_num(out, "value") - 0.6) < 1e-15,
        LABEL("bootstrap: reward noise only: stderr %.5f, tau/N = 0.025", se));
  free(out);
  /* counts too: the delta method's sd, derivatives by central differences */
  p.counts[0] = 600;
  p.rsums[0] = 100;
  p.sigma = 5;
  p.rsig = 8;
  double h = 1e-3, g = 0.9;
  double d0 = (one_state_value(600 + h, 400, 100, g) - one_state_value(600 - h, 400, 100, g)) / (2 * h);
  double de = (one_state_value(600, 400 + h, 100, g) - one_state_value(600, 400 - h, 100, g)) / (2 * h);
  double dr = (one_state_value(600, 400, 100 + h, g) - one_state_value(600, 400, 100 - h, g)) / (2 * h);
  double sd = sqrt(25 * (d0 * d0 + de * de) + 64 * dr * dr);
  out = run_value(&p, "[[1]]", "{\"bootstrap\": 2000, \"min_count\": 0}", &err);
  se = out ? json_num(out, "stderr") : NAN;
  CHECK(fabs(se - sd) < 0.08 * sd &&
            fabs(json_num(out, "value") - one_state_value(600, 400, 100, g)) < 1e-12,
        LABEL("bootstrap: count and reward noise: stderr %.5f, first-order sd %.5f", se, sd));
  char *again = run_value(&p, "[[1]]", "{\"bootstrap\": 2000, \"min_count\": 0}", &err);
  CHECK(out && again && !strcmp(out, again), "bootstrap: the same call gives the same bytes");
  free(again);
  again = run_value(&p, "[[1]]", "{\"bootstrap\": 2000, \"min_count\": 0, \"bootstrap_seed\": 1}",
                    &err);
  CHECK(again && json_num(again, "stderr") != se && fabs(json_num(again, "stderr") - sd) < 0.08 * sd,
        "bootstrap: another bootstrap_seed, other draws, the same sd");
  free(again);
  free(out);
  out = run_value(&p, "[0]", "{\"bootstrap\": 0}", &err);
  CHECK(out && strstr(out, "\"stderr\":null") && strstr(out, "\"values_stderr\":null"),
        "bootstrap 0: no error bar (null)");
  free(out);
  p.sigma = p.rsig = 0;
  out = run_value(&p, "[0]", "{}", &err);
  CHECK(out && strstr(out, "\"stderr\":0,") && strstr(out, "\"values_stderr\":[0]"),
        "a model without noise: error bar 0");
  free(out);
  spec_free(&p);
}

/* ---- results and errors ----------------------------------------------------------------- */

static void test_results(void) {
  spec p;
  dprl_error err = {0};
  hand_spec(&p);
  p.start[1] = 30; /* start distribution (1/4, 3/4) */
  char *out = run_value(&p, "{\"stay\": [0, 0], \"go\": [[0, 1], [1, 0]]}", "{}", &err);
  dprl_json *j = out ? dprl_json_parse(out, strlen(out), &err) : NULL;
  const dprl_json *pol = dprl_json_get(j, "policies");
  const dprl_json *go = dprl_json_get(pol, "go"), *stay = dprl_json_get(pol, "stay");
  CHECK(pol && pol->n == 2 && !strcmp(pol->keys[0], "stay") && go && stay,
        "value: named policies, in the order given");
  CHECK(go && fabs(dprl_json_get(go, "value")->num - (0.25 * 9 + 0.75 * 10)) < 1e-12 &&
            stay && fabs(dprl_json_get(stay, "value")->num - 7.5) < 1e-12,
        "value: under the start distribution (stay: 0 and 10, go: 9 and 10)");
  static const char *keys[] = {"n_states", "n_actions", "gamma", "horizon", "method", "min_count",
                               "count_floor", "ends", "pessimistic_pairs", "start_uniform",
                               "bootstrap", "bootstrap_seed"};
  int all = j != NULL;
  for (size_t i = 0; i < sizeof keys / sizeof *keys; i++) all &= dprl_json_get(j, keys[i]) != NULL;
  CHECK(all, "value: the shared keys");
  dprl_json_free(j);
  free(out);
  /* plan's result */
  dprl_mdpv_model m;
  dprl_mdpv_opts o;
  dprl_buf b = {0};
  read_spec(&p, &m, &err);
  dprl_mdpv_options("t", "{\"horizon\": 2, \"gamma\": 1}", 26, 1, &m, &o, &err);
  dprl_mdpv_plan(&m, &o, &b, NULL, &err);
  CHECK(b.data && strstr(b.data, "\"policy\":[1,0]") && strstr(b.data, "\"q\":[[0,1],[2,0]]") &&
            strstr(b.data, "\"values\":[1,2]") && strstr(b.data, "\"method\":\"backward induction\""),
        LABEL("plan: 2 undiscounted steps: %.120s", b.data ? b.data : err.msg));
  dprl_buf_free(&b);
  dprl_mdpv_model_free(&m);
  spec_free(&p);
}

/* The error of a model text: base with one substring replaced. */
static void model_error(const char *base, const char *from, const char *to, const char *want) {
  const char *at = strstr(base, from);
  size_t n = strlen(base) + strlen(to) + 1;
  char *t = malloc(n);
  if (!at) {
    CHECK(0, LABEL("model error test: \"%s\" not in the model", from));
    free(t);
    return;
  }
  snprintf(t, n, "%.*s%s%s", (int)(at - base), base, to, at + strlen(from));
  dprl_mdpv_model m;
  dprl_error err = {0};
  int rc = dprl_mdpv_model_read(&m, t, strlen(t), NULL, &err);
  CHECK(rc == DPRL_EINVAL && strstr(err.msg, want),
        LABEL("model error: %s -> %s", to, rc ? err.msg : "accepted"));
  if (!rc) dprl_mdpv_model_free(&m);
  free(t);
}

static void test_errors(void) {
  spec p;
  hand_spec(&p);
  dprl_buf b = model_json(&p);
  const char *t = b.data;
  model_error(t, "\"sigma\":0,", "", "model: key \"sigma\" is missing");
  model_error(t, "\"dp_mdp\"", "\"dp_q_learn\"", "must be a result of dp_mdp");
  model_error(t, "\"n_states\":2", "\"n_states\":2.5", "n_states must be an integer");
  model_error(t, "\"gamma\":0.9", "\"gamma\":1.5", "gamma must be a finite number and in [0, 1]");
  model_error(t, "\"rmax\":1", "\"rmax\":-1", "rmin (0) must be below rmax (-1)");
  model_error(t, "\"reward_center\":0.5", "\"reward_center\":0.4", "reward_center must be");
  model_error(t, "\"start\":[10,0]", "\"start\":[10]", "start must be an array of n_states = 2");
  model_error(t, "\"start\":[10,0]", "\"start\":[10,1e999]", "start[1] must be a finite number");
  model_error(t, "\"sigma\":0,", "\"sigma\":1e308,",
              "sigma must be a finite number and >= 0, of magnitude at most 10^150, got 1e+308");
  model_error(t, "[10,0,0]", "[10,0,-1e151]",
              "counts[0][0][2] must be a finite number of magnitude at most 10^150, got -1e+151");
  model_error(t, "[10,0,0]", "[10,0]", "counts[0][0] must be an array of n_states + 1 = 3");
  model_error(t, "[10,0,0]", "[10,\"x\",0]", "counts[0][0][1] must be a finite number of magnitude at most 10^150, got \"x\"");
  model_error(t, "[[10,0,0],[0,10,0]]", "[[10,0,0]]", "counts[0] must be an array of n_actions");
  model_error(t, "\"reward_sums\":[[-5,-5],", "\"reward_sums\":[[-5,null],",
              "reward_sums[0][1] must be a finite number of magnitude at most 10^150, got null");
  model_error(t, "\"tabular\"", "{\"tent\": 3, \"low\": 0, \"high\": 1}",
              "features.tent is 3 anchors but n_states is 2");
  model_error(t, "\"tabular\"", "\"linear\"", "features must be \"tabular\" or {\"tent\"");
  model_error(t, "\"horizon\":null", "\"horizon\":0", "horizon must be an integer in [1,");
  model_error(t, "\"n_states\":2,\"n_actions\":2", "\"n_states\":20000,\"n_actions\":2",
              "is more than the");
  model_error(t, "{", "[", "malformed JSON");
  /* tent features of the right size are a model like any other */
  dprl_mdpv_model m;
  dprl_error err = {0};
  char *tt = malloc(strlen(t) + 64);
  const char *at = strstr(t, "\"tabular\"");
  sprintf(tt, "%.*s{\"tent\": 2, \"low\": -1, \"high\": 1}%s", (int)(at - t), t, at + 9);
  CHECK(!dprl_mdpv_model_read(&m, tt, strlen(tt), NULL, &err) && m.tent && m.tent_low == -1,
        "model: tent features with K = n_states");
  dprl_mdpv_model_free(&m);
  free(tt);
  /* policies */
  dprl_mdpv_model_read(&m, t, strlen(t), NULL, &err);
  static const char *bad[][2] = {
      {"[[0.5, 0.4], [1, 0]]", "policy: the probabilities of state 0 sum to 0.9"},
      {"[[1, 0], [-0.5, 1.5]]", "policy[1][0] must be a probability"},
      {"[0, 2]", "policy[1] must be an action: an integer in 0..1"},
      {"[0, 0.5]", "policy[1] must be an action"},
      {"[0]", "policy must be an array with one entry per state (n_states = 2)"},
      {"[[1, 0], [1]]", "policy[1] must be an array of n_actions = 2 probabilities"},
      {"[[1, 0], 1]", "policy[1] must be an array of n_actions"},
      {"{\"a\": [0, 0], \"b\": [0, 7]}", "policy \"b\"[1] must be an action"},
      {"{}", "an object of named policies needs at least one"},
      {"[0, ", "policy: malformed JSON"}};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    dprl_mdpv_policies pol;
    dprl_error_clear(&err);
    int rc = dprl_mdpv_policies_read(bad[i][0], strlen(bad[i][0]), &m, &pol, &err);
    CHECK(rc == DPRL_EINVAL && strstr(err.msg, bad[i][1]),
          LABEL("policy %s -> %s", bad[i][0], rc ? err.msg : "accepted"));
  }
  dprl_mdpv_policies pol;
  CHECK(!dprl_mdpv_policies_read("[[0.3, 0.7000000000001], [1, 0]]", 32, &m, &pol, &err),
        "policy: sums within 1e-9 of 1 are distributions");
  dprl_mdpv_policies_free(&pol);
  /* options */
  static const char *opt[][2] = {
      {"{\"gamma\": 1}", "gamma is 1, so the value is undiscounted and needs option horizon"},
      {"{\"bootstrap\": 1}", "bootstrap must be 0 (no error bar) or at least 2"},
      {"{\"horizon\": 0}", "option horizon"},
      {"{\"min_count\": -1}", "option min_count"},
      {"{\"tolerance\": 0}", "option tolerance"},
      {"{\"bootstrap_seed\": -1}", "option bootstrap_seed"},
      {"{\"alpha\": 1}", "unknown option \"alpha\""}};
  for (size_t i = 0; i < sizeof opt / sizeof *opt; i++) {
    dprl_mdpv_opts o;
    dprl_error_clear(&err);
    int rc = dprl_mdpv_options("dp_mdp_value", opt[i][0], strlen(opt[i][0]), 0, &m, &o, &err);
    CHECK(rc == DPRL_EINVAL && strstr(err.msg, opt[i][1]),
          LABEL("options %s -> %s", opt[i][0], rc ? err.msg : "accepted"));
  }
  dprl_mdpv_opts o;
  dprl_error_clear(&err);
  CHECK(dprl_mdpv_options("dp_mdp_plan", "{\"bootstrap\": 5}", 16, 1, &m, &o, &err) &&
            strstr(err.msg, "unknown option \"bootstrap\""),
        "options: dp_mdp_plan has no bootstrap");
  dprl_mdpv_model_free(&m);
  dprl_buf_free(&b);
  spec_free(&p);
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
  test_numbers();
  test_hand();
  test_random_eval();
  test_random_plan();
  test_iterative();
  test_estimate();
  test_noise_floor();
  test_bootstrap();
  test_results();
  test_errors();
  test_cancel();
  return CHECK_DONE();
}
