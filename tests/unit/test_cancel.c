/*
** test_cancel.c: the cancellation hook of core.h (dprl_cancel_poll), the
** interruptible sort (dprl_sort), and the core loops that honour the hook
** (gp_path's batch draw and load, q_learn, the releases and dp_plan).  No SQLite: tests/sql/test_q.py
** checks the SQLite side (sqlite3_interrupt, progress handlers).
*/
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "base/core.h"
#include "q_learning/gp_path.h"
#include "dp/noise.h"
#include "policy_eval/policy_eval.h"
#include "q_learning/q_learn.h"

/* A check that counts its calls and says stop from call number `stop_at`
** on (0: never). */
typedef struct counter {
  int calls, stop_at;
} counter;

static int count_check(void *ctx) {
  counter *c = ctx;
  c->calls++;
  return c->stop_at && c->calls >= c->stop_at;
}

static dprl_cancel make_cancel(counter *c, int stop_at) {
  c->calls = 0;
  c->stop_at = stop_at;
  dprl_cancel k = {count_check, c, 0, 0};
  return k;
}

static uint64_t lcg = 99;
static uint64_t next_u(void) { /* test data only */
  lcg = lcg * 6364136223846793005ull + 1442695040888963407ull;
  return lcg >> 11;
}

static void test_poll(void) {
  counter n;
  dprl_cancel k = make_cancel(&n, 0);
  dprl_error err = {0};
  int rc = 0;
  for (uint64_t i = 0; i < 3 * (uint64_t)DPRL_CANCEL_EVERY + 5; i++)
    rc |= dprl_cancel_poll(&k, 1, &err);
  CHECK(rc == 0 && n.calls == 3, "poll: the check runs once per DPRL_CANCEL_EVERY units of work");
  rc = dprl_cancel_poll(&k, 10 * (uint64_t)DPRL_CANCEL_EVERY, &err);
  CHECK(rc == 0 && n.calls == 4, "poll: a large piece of work checks at once");
  n.stop_at = 5;
  for (uint64_t i = 0; i < 2 * (uint64_t)DPRL_CANCEL_EVERY && !rc; i++)
    rc = dprl_cancel_poll(&k, 1, &err);
  CHECK(rc == DPRL_EINTR && err.code == DPRL_EINTR && strcmp(err.msg, "interrupted") == 0,
        "poll: stop -> DPRL_EINTR, \"interrupted\"");
  dprl_error e2 = {0};
  CHECK(dprl_cancel_poll(&k, 1, &e2) == DPRL_EINTR && n.calls == 5,
        "poll: once stopped, every poll fails at once without asking again");
  dprl_error e3 = {0};
  CHECK(dprl_cancel_poll(NULL, UINT64_MAX, &e3) == DPRL_OK && e3.code == 0,
        "poll: a NULL hook never stops");
}

static int dbl_cmp(const void *pa, const void *pb) {
  double a = *(const double *)pa, b = *(const double *)pb;
  return (a > b) - (a < b);
}

static int pt_cmp(const void *pa, const void *pb) { /* by x only: ties stay */
  const dprl_gp_point *a = pa, *b = pb;
  return (a->x > b->x) - (a->x < b->x);
}

static int pt_full_cmp(const void *pa, const void *pb) {
  const dprl_gp_point *a = pa, *b = pb;
  int c = pt_cmp(pa, pb);
  return c ? c : (a->g > b->g) - (a->g < b->g);
}

/* dprl_sort of x[0, n) against libc's qsort of a copy. */
static void sort_case(const char *what, double *x, size_t n) {
  double *want = malloc((n ? n : 1) * sizeof *want);
  memcpy(want, x, n * sizeof *x);
  qsort(want, n, sizeof *want, dbl_cmp);
  counter c;
  dprl_cancel k = make_cancel(&c, 0);
  dprl_error err = {0};
  int rc = dprl_sort(x, n, sizeof *x, dbl_cmp, &k, &err);
  CHECK(rc == 0 && memcmp(x, want, n * sizeof *x) == 0, LABEL("sort: %s (n = %zu)", what, n));
  free(want);
}

static void test_sort(void) {
  enum { N = 300000 };
  double *x = malloc(N * sizeof *x);
  for (size_t i = 0; i < N; i++) x[i] = (double)next_u();
  sort_case("random doubles", x, N);
  sort_case("already sorted", x, N);
  for (size_t i = 0; i < N / 2; i++) {
    double t = x[i];
    x[i] = x[N - 1 - i];
    x[N - 1 - i] = t;
  }
  sort_case("reversed", x, N);
  for (size_t i = 0; i < N; i++) x[i] = (double)(next_u() % 10);
  sort_case("ten distinct values", x, N);
  for (size_t i = 0; i < N; i++) x[i] = 0.5;
  sort_case("all equal", x, N);
  for (size_t i = 0; i < N; i++) x[i] = (double)(i < N / 2 ? i : N - i); /* organ pipe */
  sort_case("organ pipe", x, N);
  for (size_t i = 0; i < 100; i++) x[i] = (double)(next_u() % 1000);
  sort_case("small (libc qsort only)", x, 100);
  sort_case("empty", x, 0);
  free(x);
  /* 16-byte elements with ties on the key: sorted by key, same multiset. */
  dprl_gp_point *p = malloc(N * sizeof *p), *q = malloc(N * sizeof *q);
  for (size_t i = 0; i < N; i++) p[i] = (dprl_gp_point){(double)(next_u() % 5000), (double)i};
  memcpy(q, p, N * sizeof *p);
  dprl_error err = {0};
  int rc = dprl_sort(p, N, sizeof *p, pt_cmp, NULL, &err), ordered = 1;
  for (size_t i = 1; i < N; i++) ordered &= p[i - 1].x <= p[i].x;
  qsort(p, N, sizeof *p, pt_full_cmp);
  qsort(q, N, sizeof *q, pt_full_cmp);
  CHECK(rc == 0 && ordered && memcmp(p, q, N * sizeof *p) == 0,
        "sort: 16-byte points with ties, ordered by key, nothing lost");
  free(p);
  free(q);
}

static void test_sort_interrupted(void) {
  enum { N = 400000 };
  double *x = malloc(N * sizeof *x), *y = malloc(N * sizeof *y);
  for (size_t i = 0; i < N; i++) x[i] = y[i] = (double)next_u();
  counter c;
  dprl_cancel k = make_cancel(&c, 2);
  dprl_error err = {0};
  int rc = dprl_sort(x, N, sizeof *x, dbl_cmp, &k, &err);
  CHECK(rc == DPRL_EINTR && c.calls == 2, "sort: stops at the check that says stop");
  qsort(x, N, sizeof *x, dbl_cmp);
  qsort(y, N, sizeof *y, dbl_cmp);
  CHECK(memcmp(x, y, N * sizeof *x) == 0, "sort: an interrupted sort leaves a permutation");
  free(x);
  free(y);
}

static void test_gp_path(void) {
  enum { N = 200000 };
  double *xs = malloc(N * sizeof *xs), *out = malloc(N * sizeof *out);
  for (size_t i = 0; i < N; i++) xs[i] = (double)(next_u() % 1000000) / 1e6;
  dprl_error err = {0};
  dprl_gp_path *p = dprl_gp_path_create(1.0, 2.0, dprl_grid_for(1.0), &err);
  dprl_rng rng;
  dprl_rng_init_seeded(&rng, 4, 0);
  double first;
  int rc = dprl_gp_path_sample_at(p, &rng, 0.5, &first, &err);
  counter c;
  dprl_cancel k = make_cancel(&c, 3);
  p->cancel = &k;
  rc |= dprl_gp_path_sample_batch(p, &rng, xs, N, out, &err) != DPRL_EINTR;
  CHECK(rc == 0 && c.calls == 3 && dprl_gp_path_count(p) == 1 &&
            dprl_gp_path_points(p)[0].g == first,
        "gp path: an interrupted batch draw stops and leaves the path unchanged");
  dprl_gp_point pts[3] = {{0.3, 0}, {0.1, 0}, {0.2, 0}};
  dprl_error e2 = {0};
  CHECK(dprl_gp_path_load(p, pts, 3, &e2) == DPRL_EINTR && dprl_gp_path_count(p) == 1,
        "gp path: a stopped hook refuses a load, path unchanged");
  k = make_cancel(&c, 0);
  dprl_error e3 = {0};
  CHECK(dprl_gp_path_sample_batch(p, &rng, xs, N, out, &e3) == 0 && c.calls > 0,
        "gp path: a batch draw with a hook that never stops completes (and asks)");
  dprl_gp_path_free(p);
  free(xs);
  free(out);
}

/* q_learn stops at the check that says stop, in each of its long loops:
** many cheap SGD steps, wide rbf features, theta's noise, presampling. */
static void learn_case(const char *what, dprl_q_learn_opts o, size_t n) {
  double *s = malloc(n * sizeof *s), *r = malloc(n * sizeof *r), *sn = malloc(n * sizeof *sn);
  int64_t *a = malloc(n * sizeof *a);
  for (size_t i = 0; i < n; i++) {
    s[i] = (double)(next_u() % 1000000000) / 1e9;
    sn[i] = (double)(next_u() % 1000000000) / 1e9;
    r[i] = (double)(next_u() % 2);
    a[i] = (int64_t)(next_u() % (uint64_t)o.m);
  }
  dprl_q_transitions d = {s, r, sn, a, n};
  double *th = calloc((size_t)o.m * (size_t)o.feat.K, sizeof *th);
  counter c;
  dprl_cancel k = make_cancel(&c, 4);
  o.cancel = &k;
  dprl_rng g;
  dprl_rng_init_seeded(&g, 5, 0);
  dprl_error err = {0};
  int rc = dprl_q_learn(&o, &d, &g, th, NULL, &err);
  CHECK(rc == DPRL_EINTR && c.calls == 4 && strcmp(err.msg, "interrupted") == 0,
        LABEL("q_learn stops when asked: %s", what));
  free(s), free(r), free(sn), free(a), free(th);
}

static void test_qlearn(void) {
  /* feat, m, gamma, lr, T, B, J, rmin, rmax, sigma, beta, sigma_theta, grid_theta */
  dprl_q_learn_opts steps = {{DPRL_QFEAT_TENT, 21, 0, 1}, 2, 0.9, 0.01, 1000000000, 1,
                             1000000000, 0, 1, 0, 1, 0, 0, NULL};
  learn_case("10^9 steps of one transition", steps, 100);
  dprl_q_learn_opts wide = {{DPRL_QFEAT_RBF, 100000, 0, 1}, 2, 0.9, 0.01, 300000, 1,
                            300000, 0, 1, 0, 1, 0, 0, NULL};
  learn_case("rbf, K = 10^5", wide, 100);
  dprl_q_learn_opts noisy = {{DPRL_QFEAT_TENT, 100000, 0, 1}, 8, 0.9, 0.01, 300000, 1,
                             300000, 0, 1, 0, 1, 1.0, 0x1p-26, NULL};
  learn_case("theta noise on 8 x 10^5 coordinates", noisy, 100);
  dprl_q_learn_opts pre = {{DPRL_QFEAT_TENT, 21, 0, 1}, 4, 0.9, 0.01, 1000000, 64, 1, 0, 1,
                           0.5, 2, 0, 0, NULL};
  learn_case("presampling 2 x 10^6 states per path", pre, 1000000);
}

/* One release of dp_lsw / dp_lsl over n states with a hook that says stop
** at check number stop_at (0: never): the code, and the number of checks. */
static int release_case(const char *options, dprl_mechanism mech, int stop_at, int *calls) {
  counter n;
  dprl_cancel k = make_cancel(&n, stop_at);
  dprl_error err = {0};
  dprl_pe_config cfg;
  dprl_fv_stats st = {0};
  dprl_buf out = {0};
  int rc = dprl_pe_config_parse(&cfg, mech, "f", options, strlen(options), 0, 0, &k, &err);
  if (rc) return *calls = n.calls, rc;
  rc = dprl_fv_stats_init(&st, cfg.n_states, &k, &err);
  if (!rc) {
    lcg = 7;
    st.m = 1000;
    for (int64_t s = 0; s < cfg.n_states; s++) {
      st.visits[s] = (int64_t)(next_u() % 1001);
      st.return_sum[s] = (double)st.visits[s] * (double)(next_u() % 100) / 100.0;
    }
    cfg.cancel = &k;
    rc = dprl_pe_release(&cfg, &st, &out, &err);
  }
  dprl_pe_config_free(&cfg);
  dprl_fv_stats_free(&st);
  dprl_buf_free(&out);
  *calls = n.calls;
  if (rc && rc != DPRL_EINTR) fprintf(stderr, "# %s\n", err.msg);
  return rc;
}

/* Every phase of a release (options, zeroing the per-state arrays, psi,
** the estimators, the noise, the values, the JSON) polls: stopped at its
** first checks and at each of its last ones, the release returns
** DPRL_EINTR and frees everything (the sanitizer run checks the leaks). */
static void test_release(void) {
  static const char *const cases[] = {
      "{\"n_states\": 10000, \"gamma\": 0.5, \"rmin\": 0, \"rmax\": 1, \"epsilon\": 1, \"delta\": 1e-5}",
      "{\"n_states\": 10000, \"gamma\": 0.5, \"rmin\": 0, \"rmax\": 1, \"epsilon\": 1, \"delta\": 1e-5, "
      "\"perturb\": \"statistics\", \"release\": \"diagnostic\"}",
      "{\"n_states\": 10000, \"gamma\": 0.5, \"rmin\": 0, \"rmax\": 1, \"epsilon\": 1, \"delta\": 1e-5, "
      "\"lambda\": 10, \"features\": {\"aggregate\": 3}}",
      "{\"n_states\": 10000, \"gamma\": 0.5, \"rmin\": 0, \"rmax\": 1, \"epsilon\": 1, \"delta\": 1e-5, "
      "\"lambda\": 10, \"perturb\": \"statistics\"}"};
  for (int i = 0; i < 4; i++) {
    dprl_mechanism mech = i < 2 ? DPRL_LSW : DPRL_LSL;
    int total, calls, bad = 0, tried = 0;
    int rc = release_case(cases[i], mech, 0, &total);
    CHECK(rc == DPRL_OK && total > 100, LABEL("release %d runs to the end, checking %d times", i, total));
    for (int at = 1; at <= total; at++) {
      if (at > 2 && (at < total - 150 || (total - at) % 2)) continue; /* first, last 150 */
      tried++;
      rc = release_case(cases[i], mech, at, &calls);
      bad += rc != DPRL_EINTR || calls != at;
    }
    CHECK(bad == 0, LABEL("release %d: stopped at each of %d checks, it stops there", i, tried));
  }
}

/* dp_plan over n states with a hook that says stop at check number stop_at
** (0: never): the code and the number of checks, parsing included. */
static int plan_case(const char *options, int stop_at, int *calls, int *in_plan,
                     int *in_json) {
  counter n;
  dprl_cancel k = make_cancel(&n, stop_at);
  dprl_error err = {0};
  dprl_pe_config cfg;
  int64_t *visits = NULL;
  dprl_buf out = {0};
  int rc = dprl_pe_plan_parse(&cfg, options, strlen(options), &visits, 0, &k, &err);
  int parsed = n.calls;
  if (!rc) {
    cfg.cancel = &k;
    rc = dprl_pe_plan(&cfg, visits, &out, &err);
    dprl_pe_config_free(&cfg);
  }
  *in_plan = n.calls - parsed;
  /* stopped while writing the second array of numbers */
  *in_json = rc == DPRL_EINTR && out.data && strstr(out.data, "\"statistics\":{\"sigma\"");
  free(visits);
  dprl_buf_free(&out);
  *calls = n.calls;
  if (rc && rc != DPRL_EINTR) fprintf(stderr, "# %s\n", err.msg);
  return rc;
}

/* Every phase of dp_plan polls (the visits, psi, the per-state errors, the
** dense n^2 d sum, the JSON of 2n numbers): stopped at its first checks
** and at each of its last ones, it returns DPRL_EINTR and frees
** everything. */
static void test_plan(void) {
  dprl_buf tab = {0}, dense = {0};
  dprl_buf_puts(&tab, "{\"n_states\": 20000, \"gamma\": 0.9, \"rmin\": 0, \"rmax\": 1, \"fmax\": 9, \"epsilon\": 1, "
                      "\"delta\": 1e-5, \"episodes\": 20000, \"visits\": [");
  for (int s = 0; s < 20000; s++) dprl_buf_printf(&tab, s ? ",%d" : "%d", 1 + s % 50);
  dprl_buf_puts(&tab, "]}");
  dprl_buf_puts(&dense, "{\"n_states\": 600, \"gamma\": 0.9, \"rmin\": 0, \"rmax\": 1, \"fmax\": 9, \"epsilon\": 1, "
                        "\"delta\": 1e-5, \"episodes\": 20000, \"features\": [");
  for (int s = 0; s < 600; s++)
    dprl_buf_printf(&dense, s ? ",[1, %g]" : "[1, %g]", (double)(s % 9) / 9);
  dprl_buf_puts(&dense, "], \"visits\": [");
  for (int s = 0; s < 600; s++) dprl_buf_printf(&dense, s ? ",%d" : "%d", 1 + s % 50);
  dprl_buf_puts(&dense, "]}");
  const char *cases[] = {tab.data, dense.data};
  const char *names[] = {"tabular, 20000 states", "dense 600 x 2"};
  /* checks the plan itself must make: 2n numbers of JSON at 150 units each
  ** (tabular: 91), the dense sum's n^2 (d + 4) units (dense: 32) */
  const int least[] = {90, 30};
  for (int i = 0; i < 2; i++) {
    int total, calls, in_plan, in_json, bad = 0, tried = 0;
    int rc = plan_case(cases[i], 0, &total, &in_plan, &in_json);
    CHECK(rc == DPRL_OK && in_plan >= least[i],
          LABEL("plan %s runs to the end, checking %d times (%d after parsing)", names[i], total,
                in_plan));
    for (int at = 1; at <= total; at++) {
      if (at > 2 && (at < total - 150 || (total - at) % 2)) continue; /* first, last 150 */
      tried++;
      rc = plan_case(cases[i], at, &calls, &in_plan, &in_json);
      bad += rc != DPRL_EINTR || calls != at;
    }
    plan_case(cases[i], total, &calls, &in_plan, &in_json);
    CHECK(in_json, LABEL("plan %s: the last check is made while writing the JSON", names[i]));
    CHECK(bad == 0, LABEL("plan %s: stopped at each of %d checks, it stops there", names[i], tried));
  }
  dprl_buf_free(&tab);
  dprl_buf_free(&dense);
}

int main(void) {
  test_poll();
  test_sort();
  test_sort_interrupted();
  test_gp_path();
  test_qlearn();
  test_release();
  test_plan();
  printf("%d passed, %d failed\n", check_passed_count, check_failed_count);
  return CHECK_DONE();
}
