/*
** test_rows_first_visit.c: rows/first_visit.c: first-visit returns and
** visits of a hand-worked episode, rewards clamped to [rmin, rmax] and
** returns to [fmin, fmax], and the bound B = fmax - fmin.
*/
#include "check.h"
#include "rows/first_visit.h"

static void test_first_visit(void) {
  dprl_fv_stats st;
  dprl_fv_scratch sc;
  dprl_error err = {0};
  dprl_fv_stats_init(&st, 3, NULL, &err);
  dprl_fv_scratch_init(&sc, 3, NULL, &err);
  /* states 0,1,0,2 rewards 1,2(clamped to 1.5),1,-1(clamped to 0), gamma .5:
  ** G3 = 0, G2 = 1, G1 = 1.5 + .5 = 2, G0 = 1 + 1 = 2: first visits 0:2, 1:2, 2:0 */
  dprl_step ep[] = {{0, 1, 0, 0}, {1, 2, 0, 1}, {2, 1, 0, 0}, {3, -1, 0, 2}};
  /* the defaults of dprl_return_rule_parse: [fmin, fmax] = [0, rmax/(1-gamma)] */
  dprl_return_rule r = {.gamma = 0.5, .rmin = 0, .rmax = 1.5, .fmin = 0, .fmax = 3.0};
  dprl_fv_add_episode(&st, &sc, &r, ep, 4, NULL, NULL, &err);
  CHECK(st.m == 1 && st.visits[0] == 1 && st.visits[2] == 1, "fv: visits");
  CHECK_NEAR(st.return_sum[0], 2.0, 0, "fv: return of state 0");
  CHECK_NEAR(st.return_sum[1], 2.0, 0, "fv: return of state 1");
  CHECK_NEAR(st.return_sum[2], 0.0, 0, "fv: return of state 2");
  dprl_return_rule rf = {.gamma = 0.5, .rmin = 0, .rmax = 1.5, .fmin = 0, .fmax = 1.25, .has_fmax = 1};
  dprl_fv_add_episode(&st, &sc, &rf, ep, 4, NULL, NULL, &err);
  CHECK_NEAR(st.return_sum[0], 3.25, 0, "fv: fmax clamps first-visit returns");
  CHECK_NEAR(dprl_return_bound(&r), 3.0, 0, "fv: B = fmax - fmin = rmax/(1-gamma)");
  /* negative rewards: clamped to [rmin, rmax] = [-1, 1.5], returns to
  ** [-2, 3]: G3 = -1, G2 = 1 - .5 = .5, G1 = 1.5 + .25 = 1.75, G0 = 1 + .875 */
  dprl_fv_stats sn;
  dprl_fv_stats_init(&sn, 3, NULL, &err);
  dprl_return_rule rn = {.gamma = 0.5, .rmin = -1, .rmax = 1.5, .fmin = -2, .fmax = 3.0};
  dprl_fv_add_episode(&sn, &sc, &rn, ep, 4, NULL, NULL, &err);
  CHECK(sn.return_sum[0] == 1.875 && sn.return_sum[1] == 1.75 && sn.return_sum[2] == -1,
        "fv: rmin < 0: rewards clamped to [rmin, rmax], returns may be negative");
  CHECK_NEAR(dprl_return_bound(&rn), 5.0, 0, "fv: B = fmax - fmin = 5");
  dprl_fv_stats_free(&sn);
  dprl_fv_stats_free(&st);
  dprl_fv_scratch_free(&sc);
}

int main(void) {
  test_first_visit();
  return CHECK_DONE();
}
