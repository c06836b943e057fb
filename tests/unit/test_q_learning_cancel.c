/*
** test_q_learning_cancel.c: the loops of q_learning/ that honour a
** dprl_cancel stop at the check that says stop: gp_path's batch draw and
** load (the path unchanged), and each of q_learn's long loops.
*/
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "util.h"
#include "dp/noise.h"
#include "q_learning/gp_path.h"
#include "q_learning/q_learn.h"

static void test_gp_path(void) {
  enum { N = 200000 };
  double *xs = malloc(N * sizeof *xs), *out = malloc(N * sizeof *out);
  for (size_t i = 0; i < N; i++) xs[i] = (double)(lcg_next() % 1000000) / 1e6;
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
    s[i] = (double)(lcg_next() % 1000000000) / 1e9;
    sn[i] = (double)(lcg_next() % 1000000000) / 1e9;
    r[i] = (double)(lcg_next() % 2);
    a[i] = (int64_t)(lcg_next() % (uint64_t)o.m);
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

int main(void) {
  test_gp_path();
  test_qlearn();
  return CHECK_DONE();
}
