/*
** test_q_learning_calibrate.c: q_learning/q_calibrate.c and the features
** of q_options.c: the calibration worked by hand, the paper's E.3 case,
** the GDP accountant against delta(eps) of mu-GDP written out here, the
** refusals; the features' bounds P and D against their sups on a grid, and
** the constant L against one SGD step under neighbouring rewards.
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "util.h"
#include "q_learning/q_calibrate.h"
#include "q_learning/q_learn.h"
#include "q_learning/q_options.h"

/* ====================== calibration ====================================== */

static dprl_q_calib_in calib(double eps, double delta, double T, double B,
                             double lr, double k, double L, double J,
                             dprl_q_accountant acc) {
  dprl_q_calib_in in = {eps, delta, T, B, lr, k, L, J, acc};
  return in;
}

/* Worked example (proof accountant), by hand:
**   eps = 1, delta = 1e-5, T = 6400, B = 64 (T/B = 100), lr = 0.01,
**   k = 30, L = 0.1, J = 10
**   v = 4 * 0.01 * 31 / 64 = 0.019375,  beta = 1/v = 51.6129032...
**   C = (0.019375^2 + 0.019375) * 0.1^2 = 0.00019750390625
**   ln(e + 1/1e-5) = ln(100002.71828...) = 11.5129526...
**   sigma = sqrt(2 * 100 * 0.00019750390625 * 11.5129526) / 1
**         = sqrt(0.45477...) = 0.674366832
**   8.68 sqrt(beta) sigma = 8.68 * 7.18421 * 0.674367 = 42.0528;
**   margin = 60 - 42.0528 = 17.947, J e^{-margin^2/2} ~ 1e-69:
**   delta_total = 1e-5.
** With k = 22.5: v = 0.0146875, sigma = 0.585798765, margin = 3.04398,
**   delta_total = 1e-5 + 10 e^{-4.6329} = 0.0972731 (the path term shows).
** Constants to 12+ digits from a 30-digit recomputation (mpmath). */
static void test_calibrate_worked(void) {
  dprl_error err = {0};
  dprl_q_calib_out out;
  dprl_q_calib_in in = calib(1, 1e-5, 6400, 64, 0.01, 30, 0.1, 10, DPRL_QACC_PROOF);
  int rc = dprl_q_calibrate(&in, &out, &err);
  CHECK(rc == 0, "worked example calibrates");
  /* independent line: sigma = L sqrt(2 (T/B) (v + v^2) ln(e + eps/delta)) / eps */
  double v = 0.04 * 31 / 64, lnt = log(exp(1) + 1e5);
  double s_ind = 0.1 * sqrt(200 * (v + v * v) * lnt);
  CHECK_REL(out.sigma, s_ind, 1e-13, "proof sigma = independent arithmetic");
  CHECK_REL(out.sigma, 0.67436683197448919, 1e-12, "proof sigma = 0.674366832 (by hand)");
  CHECK_REL(out.beta, 51.612903225806452, 1e-13, "beta = 1/v = 51.6129");
  CHECK_REL(out.C, 0.00019750390625, 1e-13, "C = (v^2+v) L^2");
  CHECK_REL(out.margin, 17.947185117128007, 1e-11, "margin 2k - 8.68 sqrt(beta) sigma");
  CHECK(out.delta_total == 1e-5 + 10 * exp(-out.margin * out.margin / 2),
        "delta_total = delta + J exp(-margin^2/2)");
  CHECK(strcmp(out.accountant, "proof") == 0 && out.proven, "proof: named, proven");
  in.k = 22.5;
  rc = dprl_q_calibrate(&in, &out, &err);
  double v2 = 0.04 * 23.5 / 64, s2 = 0.1 * sqrt(200 * (v2 + v2 * v2) * lnt);
  double m2 = 45 - 8.68 * sqrt(1 / v2) * s2;
  CHECK(rc == 0, "k = 22.5 calibrates");
  CHECK_REL(out.sigma, 0.5857987653372944, 1e-12, "k = 22.5: sigma = 0.585798765");
  CHECK_REL(out.delta_total, 1e-5 + 10 * exp(-m2 * m2 / 2), 1e-10,
            "k = 22.5: delta_total (independent arithmetic)");
  CHECK_REL(out.delta_total, 0.097273093338657058, 1e-9, "k = 22.5: delta_total = 0.0972731");
  in.k = 20; /* 2k = 40 < 8.68 sqrt(beta) sigma ~ 41.9 */
  rc = dprl_q_calibrate(&in, &out, &err);
  CHECK(rc == DPRL_EINVAL && strncmp(err.msg, "no privacy guarantee", 20) == 0,
        "refused when 2k <= 8.68 sqrt(beta) sigma");
  printf("#   %s\n", err.msg);
}

/* The paper's E.3 numbers: eps 0.9, delta 5e-5, T 5000, B 64, lr 3e-4,
** k 23, L^2 = 16.  v = 4 * 3e-4 * 24 / 64 = 4.5e-4 (not their 6.19e-5),
** C = (v^2 + v) 16 = 7.20324e-3; the PRINTED formula gives
** sqrt(2 * 78.125 * ln(e + 18000)) * C / 0.9 = 39.132 * 7.20324e-3 / 0.9
** = 0.31316: their sigma ~ 0.313.  It still fails Theorem 5's condition
** (8.68 sqrt(2222) 0.313 = 128 > 2k = 46), as does the proof's sigma 3.69. */
static void test_calibrate_paper_e3(void) {
  double v = dprl_q_v(3e-4, 23, 64), C = dprl_q_C(v, 4);
  CHECK_REL(v, 4.5e-4, 1e-14, "E.3: v = 4.5e-4");
  CHECK_REL(dprl_q_sigma_paper(0.9, 5e-5, 5000.0 / 64, C), 0.31316287256828587,
            1e-12, "E.3: printed formula gives sigma = 0.3132 (paper: ~0.313)");
  CHECK_REL(dprl_q_sigma_proof(0.9, 5e-5, 5000.0 / 64, C), 3.6898297285037859,
            1e-12, "E.3: proof's formula gives sigma = 3.69");
  const dprl_q_accountant acc[3] = {DPRL_QACC_PROOF, DPRL_QACC_GDP, DPRL_QACC_PAPER};
  for (int i = 0; i < 3; i++) {
    dprl_error err = {0};
    dprl_q_calib_out out;
    dprl_q_calib_in in = calib(0.9, 5e-5, 5000, 64, 3e-4, 23, 4, 78, acc[i]);
    int rc = dprl_q_calibrate(&in, &out, &err);
    CHECK(rc == DPRL_EINVAL && strstr(err.msg, "no privacy guarantee"),
          LABEL("E.3 parameters refused (%s): no guarantee", dprl_q_accountant_name(acc[i])));
  }
  dprl_error err = {0};
  dprl_q_calib_out out;
  dprl_q_calib_in in = calib(1, 1e-5, 6400, 64, 0.01, 30, 0.1, 10, DPRL_QACC_PAPER);
  int rc = dprl_q_calibrate(&in, &out, &err);
  CHECK(rc == 0 && !out.proven && strcmp(out.accountant, "paper") == 0 &&
            strstr(out.note, "NOT the proven bound"),
        "paper mode says it is not the proven bound");
  CHECK_REL(out.sigma, 0.0094772873070854921, 1e-12, "paper mode sigma (C outside the root)");
}

/* delta(eps) of mu-GDP (Balle & Wang 2018), written out again here. */
static double gdp_delta_ref(double eps, double mu) {
  double p1 = 0.5 * erfc((eps / mu - mu / 2) / M_SQRT2);
  double p2 = 0.5 * erfc((eps / mu + mu / 2) / M_SQRT2);
  return p1 - exp(eps) * p2;
}

static void test_calibrate_gdp(void) {
  const double cases[][8] = {
      /* eps, delta, T, B, lr, k, L, J */
      {1, 1e-5, 6400, 64, 0.01, 30, 0.1, 10},
      {0.5, 1e-6, 5000, 64, 3e-4, 60, 0.1, 78},
      {3, 1e-8, 100000, 100, 1e-3, 40, 0.05, 1},
      {0.9, 5e-5, 5000, 64, 3e-4, 57, 0.28, 78},
  };
  for (int c = 0; c < 4; c++) {
    const double *p = cases[c];
    dprl_error err = {0};
    dprl_q_calib_out g, pr;
    dprl_q_calib_in in = calib(p[0], p[1], p[2], p[3], p[4], p[5], p[6], p[7], DPRL_QACC_GDP);
    int rc = dprl_q_calibrate(&in, &g, &err);
    in.accountant = DPRL_QACC_PROOF;
    rc |= dprl_q_calibrate(&in, &pr, &err);
    if (!CHECK(rc == 0, LABEL("gdp case %d calibrates", c))) {
      printf("#   %s\n", err.msg);
      continue;
    }
    double sens = sqrt(p[2] / p[3] * g.C), s = g.sigma;
    printf("# gdp case %d: sigma %.9g (proof %.9g), mu %.6g\n", c, s, pr.sigma, g.mu);
    CHECK(gdp_delta_ref(p[0], sens / s) <= p[1], LABEL("gdp case %d: delta(eps) <= delta at sigma", c));
    CHECK(gdp_delta_ref(p[0], sens / (s - 1e-6)) > p[1],
          LABEL("gdp case %d: delta(eps) > delta at sigma - 1e-6", c));
    CHECK(gdp_delta_ref(p[0], sens / (s * (1 - 1e-10))) > p[1],
          LABEL("gdp case %d: delta(eps) > delta at sigma (1 - 1e-10)", c));
    CHECK(g.sigma < pr.sigma, LABEL("gdp case %d: gdp sigma < proof sigma", c));
    CHECK(strcmp(g.accountant, "gdp") == 0 && g.proven, LABEL("gdp case %d: named, proven", c));
  }
  /* case 0 against a 30-digit root of delta(eps; mu) = delta (mpmath):
  ** mu = 0.268051123211294, sigma = sqrt(100 C) / mu = 0.524288357073146 */
  double s0 = dprl_q_sigma_gdp(1, 1e-5, 100, 0.00019750390625);
  CHECK_REL(s0, 0.524288357073146, 1e-11, "gdp sigma = 0.524288357 (30-digit reference)");
  CHECK(dprl_gdp_delta(1, 1e-3) == 0 && dprl_gdp_delta(1, 50) > 0.99,
        "delta(eps) at tiny and huge mu");
}

static void test_calibrate_validation(void) {
  struct {
    dprl_q_calib_in in;
    const char *msg;
  } bad[] = {
      {calib(-1, 1e-5, 6400, 64, 0.01, 30, 0.1, 10, 0), "epsilon must be > 0, got -1"},
      {calib(1, 1, 6400, 64, 0.01, 30, 0.1, 10, 0), "delta must be in (0, 1), got 1"},
      {calib(1, 1e-5, 2.5, 1, 0.01, 30, 0.1, 10, 0), "T must be an integer >= 1, got 2.5"},
      {calib(1, 1e-5, 64, 100, 0.01, 30, 0.1, 10, 0), "B must be an integer in [1, T] (T = 64), got 100"},
      {calib(1, 1e-5, 6400, 0, 0.01, 30, 0.1, 10, 0), "B must be an integer in [1, T] (T = 6400), got 0"},
      {calib(1, 1e-5, 6400, 64, 0, 30, 0.1, 10, 0), "lr must be > 0, got 0"},
      {calib(1, 1e-5, 6400, 64, 0.01, -2, 0.1, 10, 0), "k must be > 0, got -2"},
      {calib(1, 1e-5, 6400, 64, 0.01, 30, NAN, 10, 0), "L must be > 0, got nan"},
      {calib(1, 1e-5, 6400, 64, 0.01, 30, 0.1, 0, 0), "J must be an integer >= 1, got 0"},
      {calib(1, 1e-5, 6400, 64, 0.01, 30, 0.1, 1.5, 0), "J must be an integer >= 1, got 1.5"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    dprl_error err = {0};
    dprl_q_calib_out out;
    int rc = dprl_q_calibrate(&bad[i].in, &out, &err);
    CHECK(rc == DPRL_EINVAL && msg_is(&err, bad[i].msg), LABEL("refused: %s", bad[i].msg));
  }
  dprl_error err = {0};
  dprl_q_accountant a;
  CHECK(dprl_q_accountant_parse("gdp", &a, &err) == 0 && a == DPRL_QACC_GDP, "parse gdp");
  CHECK(dprl_q_accountant_parse(NULL, &a, &err) == 0 && a == DPRL_QACC_GDP,
        "accountant defaults to gdp (the exact requirement)");
  CHECK(dprl_q_accountant_parse("rdp", &a, &err) == DPRL_EINVAL &&
            msg_is(&err, "accountant must be one of proof, gdp, paper, got \"rdp\""),
        "unknown accountant refused");
}

/* ====================== features and the constant L ===================== */

/* sup over a grid of pairs (x, y) of |phi(x).phi(y)| and |phi(x).phi'(y)|
** (phi' in closed form; y off the tent kinks), to check that the
** closed-form bounds P and D are bounds. */
static void grid_sups(const dprl_q_features *f, double *P, double *D) {
  enum { G = 400 };
  static double phi[G + 1][32], dphi[G][32];
  double h = 1.0 / (f->K - 1);
  for (int s = 0; s <= G; s++) {
    dprl_q_features_eval(f, (double)s / G, phi[s]);
    if (s == G) break;
    double y = (s + 0.37) / G;
    for (int i = 0; i < f->K; i++) {
      double z = (y - i * h) / h;
      if (f->kind == DPRL_QFEAT_TENT)
        dphi[s][i] = fabs(z) < 1 ? (z < 0 ? 1 / h : -1 / h) : 0;
      else
        dphi[s][i] = -z * exp(-0.5 * z * z) / h;
    }
  }
  *P = *D = 0;
  for (int s = 0; s <= G; s++)
    for (int t = 0; t < G; t++) {
      double p = 0, d = 0;
      for (int i = 0; i < f->K; i++) {
        p += phi[s][i] * phi[t][i];
        d += phi[s][i] * dphi[t][i];
      }
      *P = fmax(*P, fabs(p));
      *D = fmax(*D, fabs(d));
    }
}

static void test_features_and_L(void) {
  dprl_q_features tent = {DPRL_QFEAT_TENT, 21, -2, 3}, rbf = {DPRL_QFEAT_RBF, 11, 0, 1};
  double phi[21], P, D, Pg, Dg;
  dprl_q_features_eval(&tent, dprl_q_rescale(&tent, 0.5), phi); /* x = 0.5: node 10 */
  CHECK(phi[10] == 1 && phi[9] == 0 && phi[11] == 0, "tent: node value 1");
  dprl_q_features_eval(&tent, dprl_q_rescale(&tent, 9), phi);
  CHECK(phi[20] == 1, "states beyond hi are clamped to hi");
  dprl_q_feature_bounds(&tent, &P, &D);
  CHECK(P == 1 && D == 20, "tent bounds: P = 1, D = 1/h = K - 1");
  grid_sups(&tent, &Pg, &Dg);
  printf("# tent K=21: P %.4f (grid %.4f), D %.4f (grid %.4f)\n", P, Pg, D, Dg);
  CHECK(Pg <= P && Dg <= D && Pg == 1 && fabs(Dg - D) < 1e-9, "tent: P and D bound the grid sups, and are attained");
  dprl_q_feature_bounds(&rbf, &P, &D);
  grid_sups(&rbf, &Pg, &Dg);
  printf("# rbf K=11: P %.4f (grid %.4f), D %.4f (grid %.4f)\n", P, Pg, D, Dg);
  CHECK(Pg <= P && P <= 1.05 * Pg, "rbf: P bounds sup |phi(x).phi(y)|, within 5%");
  /* D bounds sum |phi_i'| and ignores the cancellation in phi(x).phi'(y):
  ** ~4x loose, harmless (P B / (4 (k+1)) sets L unless lr is large). */
  CHECK(Dg <= D && D <= 5 * Dg, "rbf: D bounds sup |phi(x).phi'(y)|, within 5x");
  double L;
  dprl_error err = {0};
  dprl_q_features t21 = {DPRL_QFEAT_TENT, 21, 0, 1};
  int rc = dprl_q_sensitivity_L(&t21, 3e-4, 23, 64, 0, 0.5, DPRL_QNB_RANGE, &L, &err);
  /* dr = min(1, 0.5) = 0.5; max(3e-4 * 20, 64 / 96) = 2/3 */
  CHECK(rc == 0 && fabs(L - 0.5 * 64.0 / 96) < 1e-15, "L = dr max(lr D, P B / (4 (k+1)))");
  rc = dprl_q_sensitivity_L(&t21, 0.5, 23, 64, -1, 1, DPRL_QNB_UNIT, &L, &err);
  CHECK(rc == 0 && L == 10, "L = lr D when the slope term dominates");
  dprl_q_features k1 = {DPRL_QFEAT_TENT, 1, 0, 1};
  rc = dprl_q_sensitivity_L(&k1, 0.5, 23, 64, -1, 1, DPRL_QNB_RANGE, &L, &err);
  CHECK(rc == DPRL_EINVAL && msg_is(&err, "K (features per action) must be >= 2, got 1"),
        "K = 1 refused");
}

/* One SGD step under rewards r and r' (same batch, same theta, sigma = 0)
** and f = Q - Q' on a fine grid: the proof needs ||f||_inf <= v L and
** |f'| <= L.  Rewards in [-5, 5]: under the relation "unit" r' = r + 1,
** under "range" r = rmin, r' = rmax (every reward changes by the whole
** range, 10).  Worst case for the sup: every sampled transition at one
** tent node with one action. */
static void sensitivity_case(int worst, int kind, dprl_q_neighbours nb, const char *what) {
  enum { N = 300 };
  double s[N], r[N], r2[N], sn[N], th[2 * 21], th2[2 * 21];
  int64_t a[N];
  dprl_rng g;
  dprl_rng_init_seeded(&g, 77, 3);
  for (int i = 0; i < N; i++) {
    s[i] = worst ? 0.5 : dprl_rng_unit(&g);
    sn[i] = dprl_rng_unit(&g);
    a[i] = worst ? 1 : (int64_t)dprl_rng_below(&g, 2);
    r[i] = nb == DPRL_QNB_UNIT ? dprl_rng_unit(&g) - 0.5 : -5;
    r2[i] = nb == DPRL_QNB_UNIT ? r[i] + 1 : 5;
  }
  dprl_q_learn_opts o = {{kind, 21, 0, 1}, 2, 0.9, 0.01, 64, 64, 1, -5, 5, 0, 1, 0, 0, NULL};
  dprl_q_transitions d1 = {s, r, sn, a, N}, d2 = {s, r2, sn, a, N};
  dprl_rng ra, rb;
  dprl_rng_init_seeded(&ra, 5, 0);
  dprl_rng_init_seeded(&rb, 5, 0);
  dprl_error err = {0};
  int rc = dprl_q_learn(&o, &d1, &ra, th, NULL, &err) | dprl_q_learn(&o, &d2, &rb, th2, NULL, &err);
  double k = 23, L, v = dprl_q_v(o.lr, k, 64), sup = 0, slope = 0, prev = 0;
  rc |= dprl_q_sensitivity_L(&o.feat, o.lr, k, 64, o.rmin, o.rmax, nb, &L, &err);
  for (int act = 0; act < 2; act++)
    for (int i = 0; i <= 4000; i++) {
      double x = i / 4000.0;
      double f = dprl_q_value(&o.feat, th + act * 21, x) - dprl_q_value(&o.feat, th2 + act * 21, x);
      sup = fmax(sup, fabs(f));
      if (i) slope = fmax(slope, fabs(f - prev) * 4000);
      prev = f;
    }
  printf("# %s: sup|f| %.6g <= vL %.6g, max|f'| %.6g <= L %.6g\n", what, sup, v * L, slope, L);
  CHECK(rc == 0 && sup <= v * L * (1 + 1e-12), LABEL("%s: ||f||_inf <= v L", what));
  CHECK(slope <= L * (1 + 1e-9), LABEL("%s: |f'| <= L", what));
  if (worst) CHECK_REL(sup, v * L, 1e-9, LABEL("%s: the worst case attains ||f||_inf = v L", what));
  /* One update of theta moves by at most lr dr sqrt(P) in l2. */
  double l2 = 0;
  for (int i = 0; i < 2 * 21; i++) l2 += (th[i] - th2[i]) * (th[i] - th2[i]);
  l2 = sqrt(l2);
  double bound = dprl_q_theta_sensitivity(&o.feat, o.lr, dprl_q_reward_change(nb, o.rmin, o.rmax));
  CHECK(l2 <= bound * (1 + 1e-12), LABEL("%s: ||theta - theta'||_2 %.6g <= lr dr sqrt(P) %.6g", what, l2, bound));
  if (worst) CHECK_REL(l2, bound, 1e-9, LABEL("%s: the worst case attains the theta sensitivity", what));
}

static void test_sensitivity_bound(void) {
  sensitivity_case(0, DPRL_QFEAT_TENT, DPRL_QNB_UNIT, "unit, tent, random batch");
  sensitivity_case(1, DPRL_QFEAT_TENT, DPRL_QNB_UNIT, "unit, tent, worst batch");
  sensitivity_case(0, DPRL_QFEAT_RBF, DPRL_QNB_UNIT, "unit, rbf, random batch");
  sensitivity_case(0, DPRL_QFEAT_TENT, DPRL_QNB_RANGE, "range, tent, random batch");
  sensitivity_case(1, DPRL_QFEAT_TENT, DPRL_QNB_RANGE, "range, tent, worst batch");
  sensitivity_case(0, DPRL_QFEAT_RBF, DPRL_QNB_RANGE, "range, rbf, random batch");
  /* L, and so the paths' sigma, scales with the range under "range" */
  dprl_q_features t21 = {DPRL_QFEAT_TENT, 21, 0, 1};
  dprl_error err = {0};
  double L1, L10, U10;
  int rc = dprl_q_sensitivity_L(&t21, 3e-4, 200, 64, 0, 1, DPRL_QNB_RANGE, &L1, &err) |
           dprl_q_sensitivity_L(&t21, 3e-4, 200, 64, -5, 5, DPRL_QNB_RANGE, &L10, &err) |
           dprl_q_sensitivity_L(&t21, 3e-4, 200, 64, -5, 5, DPRL_QNB_UNIT, &U10, &err);
  CHECK(rc == 0 && L10 == 10 * L1 && U10 == L1, "L: 10x at range 10 under range, 1x under unit");
}

int main(void) {
  test_calibrate_worked();
  test_calibrate_paper_e3();
  test_calibrate_gdp();
  test_calibrate_validation();
  test_features_and_L();
  test_sensitivity_bound();
  return CHECK_DONE();
}
