/*
** test_q_learning_learn.c: q_learning/q_learn.c on the paper's task
** (Appendix E.1) against value iteration, with and without noise, its
** options and refusals, and theta's noise on its grid.  Fixed seeds
** throughout; paired differences bounded by their standard errors.
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "util.h"
#include "dp/noise.h"
#include "q_learning/q_learn.h"
#include "q_learning/q_options.h"

/* ====================== Q-learning on the paper's task ================== */
/*
** Appendix E.1: S = [0, 1], s0 uniform, A = {0 (left), 1 (right)}; an
** action moves by U[0, 0.25] in its direction, clipped to [0, 1]; reward
** 0.5 - |s - 0.5| each step, read here at the state reached (s'), so the
** action matters at once; episodes of 50 steps.  The paper does not state
** gamma: we take 0.9.  Transitions are treated as non-terminal (the
** episode cut is a time limit), so the target is the infinite-horizon Q*.
*/
#define GAMMA 0.9
#define NG 2001 /* value-iteration grid on [0, 1], spacing 5e-4 */

static double task_reward(double s) { return 0.5 - fabs(s - 0.5); }
static double task_move(double s, int a, double u) {
  return a ? fmin(1.0, s + u) : fmax(0.0, s - u);
}

static double qstar_grid[2][NG];

/* Q*(s, a) = 4 int_0^{1/4} h(clip(s +- u)) du, h = r + gamma V*, by value
** iteration on the grid with V* piecewise linear: the integral of the
** linear interpolant is exact through cumulative trapezoids, and s +- 1/4
** falls on grid nodes (500 steps); the clipped part contributes h(0) or
** h(1) times its length.  Converged to 1e-13. */
static void value_iteration(void) {
  static double V[NG], h[NG], F[NG];
  const double dx = 1.0 / (NG - 1);
  const int w = (NG - 1) / 4;
  for (int it = 0; it < 5000; it++) {
    double diff = 0;
    for (int i = 0; i < NG; i++) h[i] = task_reward(i * dx) + GAMMA * V[i];
    F[0] = 0;
    for (int i = 1; i < NG; i++) F[i] = F[i - 1] + 0.5 * dx * (h[i] + h[i - 1]);
    for (int i = 0; i < NG; i++) {
      int hi = i + w, lo = i - w;
      double qr = hi <= NG - 1 ? 4 * (F[hi] - F[i])
                               : 4 * (F[NG - 1] - F[i] + (hi - (NG - 1)) * dx * h[NG - 1]);
      double ql = lo >= 0 ? 4 * (F[i] - F[lo]) : 4 * (F[i] + (-lo) * dx * h[0]);
      qstar_grid[0][i] = ql;
      qstar_grid[1][i] = qr;
      double vv = fmax(ql, qr);
      diff = fmax(diff, fabs(vv - V[i]));
      V[i] = vv;
    }
    if (diff < 1e-13) break;
  }
}

static double qstar(int a, double x) {
  double u = x * (NG - 1);
  int j = (int)u;
  if (j > NG - 2) j = NG - 2;
  return qstar_grid[a][j] * (1 - (u - j)) + qstar_grid[a][j + 1] * (u - j);
}

/* Episodes of 50 steps under a uniformly random behaviour policy. */
static void make_data(int episodes, uint64_t seed, double *s, int64_t *a,
                      double *r, double *sn) {
  dprl_rng g;
  dprl_rng_init_seeded(&g, seed, 9);
  size_t t = 0;
  for (int e = 0; e < episodes; e++) {
    double x = dprl_rng_unit(&g);
    for (int k = 0; k < 50; k++, t++) {
      a[t] = (int64_t)dprl_rng_below(&g, 2);
      s[t] = x;
      x = task_move(x, (int)a[t], 0.25 * dprl_rng_unit(&g));
      sn[t] = x;
      r[t] = task_reward(x);
    }
  }
}

enum { POL_LEARNED, POL_RANDOM, POL_OPTIMAL };

/* Mean undiscounted 50-step return over 2000 episodes; the same seed gives
** every policy the same starts and move sizes (common random numbers), so
** per-episode differences are paired. */
static void episode_returns(int pol, const dprl_q_features *f, const double *th,
                            double *ret) {
  dprl_rng g, coin;
  dprl_rng_init_seeded(&g, 4242, 0);
  dprl_rng_init_seeded(&coin, 4242, 1);
  for (int e = 0; e < 2000; e++) {
    double x = dprl_rng_unit(&g), sum = 0;
    for (int k = 0; k < 50; k++) {
      double u = 0.25 * dprl_rng_unit(&g);
      int act;
      if (pol == POL_LEARNED)
        act = dprl_q_value(f, th + f->K, x) > dprl_q_value(f, th, x);
      else if (pol == POL_RANDOM)
        act = (int)dprl_rng_below(&coin, 2);
      else
        act = qstar(1, x) > qstar(0, x);
      x = task_move(x, act, u);
      sum += task_reward(x);
    }
    ret[e] = sum;
  }
}

/* Mean and standard error of the paired difference of two policies. */
static void paired_diff(const double *x, const double *y, double *mean, double *se) {
  double m = 0, v = 0;
  for (int e = 0; e < 2000; e++) m += x[e] - y[e];
  m /= 2000;
  for (int e = 0; e < 2000; e++) v += (x[e] - y[e] - m) * (x[e] - y[e] - m);
  *mean = m;
  *se = sqrt(v / 1999 / 2000);
}

/* Noise off, plenty of data: Q_theta must approach Q*.
** Tolerance 0.05 (1.2% of max Q* = 4.125), an error budget of:
**  - approximation: the tent interpolant of Q* on 21 nodes is off by at
**    most eps_I (computed below, ~0.004); for an interpolating averager
**    the fixed point is within eps_I / (1 - gamma) ~ 0.04 of Q* (Gordon
**    1995); Q* is nearly linear between nodes, so far less in practice;
**  - data: 500k transitions, ~1.2e4 per feature and action: sampling
**    error of the fixed point ~ 0.3 / sqrt(1.2e4) / (1 - gamma) ~ 0.03
**    pointwise (0.3: sd of a TD target), in practice far less;
**  - SGD with a constant step lr = 0.3, B = 64: stationary spread of
**    sqrt(lr p / (2 B)) * 0.3 / (1 - gamma) ~ 0.01 (p ~ 1/10: share of a
**    batch on one feature).
** Observed: 0.016-0.027 over 8 data/learning seeds.  The greedy policy must then match the optimal one
** wherever the optimal action gap exceeds 2 * tolerance, and return
** within 1% of the optimal return. */
static void test_qlearn_noise_free(void) {
  enum { EP = 10000, N = EP * 50 };
  double *s = malloc(N * sizeof *s), *r = malloc(N * sizeof *r), *sn = malloc(N * sizeof *sn);
  int64_t *a = malloc(N * sizeof *a);
  make_data(EP, 11, s, a, r, sn);
  dprl_q_learn_opts o = {{DPRL_QFEAT_TENT, 21, 0, 1}, 2, GAMMA, 0.3, 64 * 60000, 64, 1, 0, 0.5, 0, 1, 0, 0, NULL};
  dprl_q_transitions d = {s, r, sn, a, N};
  double th[42], tol = 0.05, err_max = 0, eps_i = 0;
  dprl_rng g;
  dprl_rng_init_seeded(&g, 3, 0);
  dprl_error err = {0};
  CHECK(dprl_q_learn(&o, &d, &g, th, NULL, &err) == 0, "noise-free Q-learning runs");
  int policy_ok = 1;
  for (int i = 0; i <= 1000; i++) {
    double x = i / 1000.0;
    int j = x < 1 ? (int)(x * 20) : 19; /* tent interval of x */
    double w = x * 20 - j;
    for (int act = 0; act < 2; act++) {
      double ip = qstar(act, j / 20.0) * (1 - w) + qstar(act, (j + 1) / 20.0) * w;
      eps_i = fmax(eps_i, fabs(ip - qstar(act, x)));
      err_max = fmax(err_max, fabs(dprl_q_value(&o.feat, th + act * 21, x) - qstar(act, x)));
    }
    double gap = qstar(1, x) - qstar(0, x);
    double lgap = dprl_q_value(&o.feat, th + 21, x) - dprl_q_value(&o.feat, th, x);
    if (fabs(gap) > 2 * tol) policy_ok &= (gap > 0) == (lgap > 0);
  }
  printf("# noise-free: max |Q_theta - Q*| = %.4f (interpolation error %.4f)\n", err_max, eps_i);
  CHECK(err_max <= tol, "noise-free Q-learning learns Q* to 0.05 (1.2% of max Q*)");
  CHECK(policy_ok, "greedy policy = optimal where the action gap exceeds 0.1");
  static double rl[2000], ro[2000];
  double m, se;
  episode_returns(POL_LEARNED, &o.feat, th, rl);
  episode_returns(POL_OPTIMAL, &o.feat, th, ro);
  paired_diff(ro, rl, &m, &se);
  double opt = 0;
  for (int e = 0; e < 2000; e++) opt += ro[e] / 2000;
  printf("# noise-free: optimal return %.3f, optimal - learned %.4f (se %.4f)\n", opt, m, se);
  CHECK(m <= 0.01 * opt, "learned greedy return within 1% of the optimal one");
  free(s), free(r), free(sn), free(a);
}

/* The paper's setting (E.1, E.3): 100 episodes (5000 transitions), T =
** 5000, B = 64 (78 SGD steps), lr = 3e-4, k = 23, beta = 1/v = B / (4 lr
** (k+1)) = 2222, sigma at the paper's noise levels 0.32 and 0.74 (Figure
** 2 a, b), J = T/B (a fresh path every batch, as the paper recommends) or
** J = 1 (one path: the presampling code path).  The greedy policy must
** beat the uniformly random one in mean 50-step return by more than 5
** standard errors of the paired difference (deterministic: fixed seeds). */
static void noisy_case(dprl_qfeat_kind kind, int K, double sigma, int64_t J,
                       const double *s, const int64_t *a, const double *r,
                       const double *sn) {
  dprl_q_learn_opts o = {{kind, K, 0, 1}, 2, GAMMA, 3e-4, 5000, 64, J, 0, 0.5, sigma, 0, 0, 0, NULL};
  o.beta = 1 / dprl_q_v(o.lr, 23, 64);
  dprl_q_transitions d = {s, r, sn, a, 5000};
  double th[42];
  dprl_rng g;
  dprl_rng_init_seeded(&g, 8, 0);
  dprl_error err = {0};
  dprl_gp_path *paths[2];
  int rc = dprl_q_learn(&o, &d, &g, th, paths, &err);
  const char *kn = kind == DPRL_QFEAT_TENT ? "tent" : "rbf";
  if (!CHECK(rc == 0, LABEL("noisy run (%s K=%d sigma=%g J=%lld)", kn, K, sigma, (long long)J))) {
    printf("#   %s\n", err.msg);
    return;
  }
  static double rl[2000], rr[2000];
  double m, se;
  episode_returns(POL_LEARNED, &o.feat, th, rl);
  episode_returns(POL_RANDOM, &o.feat, th, rr);
  paired_diff(rl, rr, &m, &se);
  printf("# %s K=%d sigma=%g J=%lld: learned - random return %.3f (se %.3f), "
         "last paths hold %zu + %zu points\n",
         kn, K, sigma, (long long)J, m, se, dprl_gp_path_count(paths[0]),
         dprl_gp_path_count(paths[1]));
  CHECK(m > 5 * se, LABEL("sigma = %g (%s, J = %lld) beats a random policy", sigma, kn, (long long)J));
  dprl_gp_path_free(paths[0]);
  dprl_gp_path_free(paths[1]);
}

static void test_qlearn_noisy(void) {
  static double s[5000], r[5000], sn[5000];
  static int64_t a[5000];
  make_data(100, 12, s, a, r, sn);
  noisy_case(DPRL_QFEAT_TENT, 21, 0.32, 78, s, a, r, sn);
  noisy_case(DPRL_QFEAT_TENT, 21, 0.74, 78, s, a, r, sn);
  noisy_case(DPRL_QFEAT_TENT, 21, 0.32, 1, s, a, r, sn);
  noisy_case(DPRL_QFEAT_RBF, 11, 0.74, 78, s, a, r, sn);
}

static void test_qlearn_api(void) {
  static double s[500], r[500], sn[500];
  static int64_t a[500];
  make_data(10, 13, s, a, r, sn);
  dprl_q_learn_opts o = {{DPRL_QFEAT_TENT, 11, 0, 1}, 2, GAMMA, 0.1, 640, 64, 2, 0, 0.5, 0.3, 5, 0, 0, NULL};
  dprl_q_transitions d = {s, r, sn, a, 500};
  double t1[22], t2[22];
  dprl_rng g1, g2;
  dprl_rng_init_seeded(&g1, 21, 0);
  dprl_rng_init_seeded(&g2, 21, 0);
  dprl_error err = {0};
  int rc = dprl_q_learn(&o, &d, &g1, t1, NULL, &err) | dprl_q_learn(&o, &d, &g2, t2, NULL, &err);
  CHECK(rc == 0 && memcmp(t1, t2, sizeof t1) == 0, "same seed, same theta (deterministic)");
  a[17] = 2;
  rc = dprl_q_learn(&o, &d, &g1, t1, NULL, &err);
  CHECK(rc == DPRL_EINVAL && msg_is(&err, "transition 17: action must be in [0, 1], got 2"),
        "action out of range refused");
  a[17] = 0;
  struct {
    dprl_q_learn_opts o;
    const char *msg;
  } bad[] = {
      {{{DPRL_QFEAT_TENT, 11, 1, 1}, 2, 0.9, 0.1, 640, 64, 2, 0, 0.5, 0.3, 5, 0, 0, NULL},
       "state interval must have finite lo < hi, got lo = 1, hi = 1"},
      {{{DPRL_QFEAT_TENT, 11, 0, 1}, 2, 1.0, 0.1, 640, 64, 2, 0, 0.5, 0.3, 5, 0, 0, NULL},
       "gamma must be in [0, 1), got 1"},
      {{{DPRL_QFEAT_TENT, 11, 0, 1}, 2, 0.9, 0.1, 640, 700, 2, 0, 0.5, 0.3, 5, 0, 0, NULL},
       "B must be in [1, T] (T = 640), got 700"},
      {{{DPRL_QFEAT_TENT, 11, 0, 1}, 2, 0.9, 0.1, 640, 64, 2, 0.5, 0.5, 0.3, 5, 0, 0, NULL},
       "reward bounds must have finite rmin < rmax, got rmin = 0.5, rmax = 0.5"},
      {{{DPRL_QFEAT_TENT, 11, 0, 1}, 2, 0.9, 0.1, 640, 64, 2, 0, 0.5, -0.3, 5, 0, 0, NULL},
       "sigma must be finite and >= 0, got -0.3"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    dprl_error e = {0};
    CHECK(dprl_q_learn(&bad[i].o, &d, &g1, t1, NULL, &e) == DPRL_EINVAL && msg_is(&e, bad[i].msg),
          LABEL("refused: %s", bad[i].msg));
  }
}

/* Issue 18 item 6: path noise of 1e16 swamped the reward in the update,
** y = r + gamma best rounded to a multiple of 2, so one update moved theta
** by 0 or 2 for a reward change of 1 (sensitivity lr = 1).  With the
** rewards' part computed on its own, the update's reward effect is exact:
** B self-loops at 0.5 (phi = e_10), gamma = 1 - 2^-53, lr = 1, rewards 0
** against 1, same seed (same batch, paths and theta noise): theta
** differs by exactly 1 at coordinate 10 and nowhere else, every seed. */
static void test_qlearn_fp_huge_noise(void) {
  enum { B = 8, K = 21 };
  double s[B], r0[B], r1[B];
  int64_t a[B];
  for (int t = 0; t < B; t++) s[t] = 0.5, a[t] = 0, r0[t] = 0, r1[t] = 1;
  dprl_q_learn_opts o = {{DPRL_QFEAT_TENT, K, 0, 1}, 1, 1 - 0x1p-53, 1.0, B, B, 1, 0, 1,
                         1e16, 6.25e-15, 4.0, 0x1p-24, NULL};
  dprl_q_transitions d0 = {s, r0, s, a, B}, d1 = {s, r1, s, a, B};
  int exact = 1, rc = 0, moved = 0;
  for (uint64_t seed = 1; seed <= 40; seed++) {
    double t0[K], t1[K];
    dprl_rng g0, g1;
    dprl_error err = {0};
    dprl_rng_init_seeded(&g0, seed, 3);
    dprl_rng_init_seeded(&g1, seed, 3);
    rc |= dprl_q_learn(&o, &d0, &g0, t0, NULL, &err) | dprl_q_learn(&o, &d1, &g1, t1, NULL, &err);
    for (int i = 0; i < K; i++) exact &= t1[i] - t0[i] == (i == 10 ? 1.0 : 0.0);
    moved |= t0[10] != 0; /* the path noise reaches theta (A is not zero) */
  }
  CHECK(rc == 0 && exact, "path sigma 1e16, gamma = 1 - 2^-53: one update's reward effect is exactly lr");
  CHECK(moved, "... while theta itself moves with the (reward-free) noise");
  /* without theta's noise the same holds up to the last add, whose
  ** rounding is that of theta's own size (|theta| small here) */
  o.sigma_theta = 0;
  double t0[K], t1[K];
  dprl_rng g0, g1;
  dprl_error err = {0};
  dprl_rng_init_seeded(&g0, 9, 3);
  dprl_rng_init_seeded(&g1, 9, 3);
  rc = dprl_q_learn(&o, &d0, &g0, t0, NULL, &err) | dprl_q_learn(&o, &d1, &g1, t1, NULL, &err);
  CHECK(rc == 0 && fabs(t1[10] - t0[10] - 1) <= 0x1p-50 * (fabs(t0[10]) + 1),
        "no theta noise: theta = A + R, the reward effect lr up to one rounding");
}

/* The floating-point bound of ALGORITHMS.md section 10: sigma_theta
** carries the factor 1 + 2^-20, and options with lr > 2^1051 g are
** refused.  By hand: for nb = 1, epsilon = 1, delta = 1e-5 the GDP sigma
** of sensitivity 1 is 1/mu with mu = 0.268 (README), in (2, 4); so at
** sens = 2^-500, s0 is in (2^-499, 2^-498), g = 2^(-498 - 26) = 2^-524,
** and the largest lr accepted is 2^(1051 - 524) = 2^527.  (sens^2 must
** not underflow, so sens is not taken smaller.) */
static void test_theta_fp_bound(void) {
  dprl_q_theta_noise tn;
  dprl_error err = {0};
  double sens = 0x1p-500, lr = 0x1p527;
  int rc = dprl_q_theta_calibrate(1, 1e-5, 1, sens, DPRL_Q_FP_SLACK, lr, 3, &tn, &err);
  CHECK(rc == 0 && tn.grid == 0x1p-524, LABEL("grid 2^-524 as computed by hand, got %a", tn.grid));
  CHECK(rc == 0 && tn.sens == (sens + sqrt(3) * 0x1p-524) * (1 + 0x1p-20),
        "sensitivity in use: (sens + sqrt(d) g)(1 + 2^-20)");
  lr = nextafter(lr, INFINITY);
  rc = dprl_q_theta_calibrate(1, 1e-5, 1, sens, DPRL_Q_FP_SLACK, lr, 3, &tn, &err);
  CHECK(rc == DPRL_EINVAL &&
            msg_is(&err, "theta noise: its grid 1.82088e-158 is too fine for lr = 4.39347e+158: an "
                         "update's reward part cannot be computed in doubles to 2^-21 of a grid "
                         "step (needs lr <= 2^1051 grid); widen [rmin, rmax] or lower lr"),
        "lr just above 2^1051 g: refused, from public values only");
}

int main(void) {
  value_iteration();
  test_qlearn_noise_free();
  test_qlearn_noisy();
  test_qlearn_api();
  test_qlearn_fp_huge_noise();
  test_theta_fp_bound();
  return CHECK_DONE();
}
