/*
** test_q_learning_noise.c: dp_q_noise's mechanism (q_learning/q_noise.c)
** over a path store in memory: q rounded to its grid, one q per point,
** the stored path read back and extended, and the calls made to the store.
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "util.h"
#include "dp/noise.h"
#include "q_learning/gp_path.h"
#include "q_learning/q_noise.h"

/* ====================== dp_q_noise's mechanism (q_noise.c) ============== */

/* A path store in memory: per action, the points as stored (x = the state
** as given), and a log of the calls the mechanism makes. */
enum { MEM_ACTIONS = 3, MEM_CAP = 256 };
typedef struct mem_store {
  dprl_q_point pts[MEM_ACTIONS][MEM_CAP];
  size_t n[MEM_ACTIONS];
  int loads[MEM_ACTIONS], adds[MEM_ACTIONS], marks;
  size_t added[MEM_ACTIONS]; /* points handed to the last add of each action */
  int fail_add;              /* add refuses (a store that cannot keep a point) */
} mem_store;

static int mem_load(void *ctx, int64_t a, dprl_q_point **pts, size_t *npts, dprl_error *err) {
  mem_store *m = ctx;
  m->loads[a]++;
  *npts = m->n[a];
  *pts = dprl_malloc_array(m->n[a] ? m->n[a] : 1, sizeof **pts);
  if (!*pts) return dprl_nomem(err);
  memcpy(*pts, m->pts[a], m->n[a] * sizeof **pts);
  return DPRL_OK;
}

static int mem_add(void *ctx, int64_t a, dprl_q_point *pts, size_t n, dprl_error *err) {
  mem_store *m = ctx;
  m->adds[a]++;
  m->added[a] = n;
  if (m->fail_add) return dprl_fail(err, DPRL_EINVAL, "store full");
  for (size_t j = 0; j < n; j++) {
    size_t k = 0;
    while (k < m->n[a] && m->pts[a][k].x != pts[j].x) k++;
    if (k < m->n[a]) continue; /* a state repeated in the call: kept once */
    if (m->n[a] == MEM_CAP) return dprl_fail(err, DPRL_EINVAL, "store full");
    m->pts[a][m->n[a]++] = pts[j];
  }
  return DPRL_OK;
}

static int mem_mark(void *ctx, dprl_error *err) {
  ((mem_store *)ctx)->marks++;
  return DPRL_OK;
}

static dprl_q_path_store mem_iface(mem_store *m) {
  dprl_q_path_store s = {m, mem_load, mem_add, mem_mark, 0};
  return s;
}

/* Seeded, on states in [lo, hi] = [-2, 3] (so rescaling shows), 3 actions. */
static dprl_q_noise_cfg qn_cfg(void) {
  dprl_q_noise_cfg c;
  memset(&c, 0, sizeof c);
  c.n_actions = MEM_ACTIONS;
  c.lo = -2, c.hi = 3;
  c.sigma = 0.8, c.beta = 3, c.grid = dprl_grid_for(0.8);
  c.has_seed = 1, c.seed = 77;
  c.path = "mem";
  return c;
}

/* Nearest multiple of the grid, ties away from zero, by hand: q / grid is
** exact (a power of two) and under 2^52, so |q / grid| + 0.5 is exact. */
static double by_hand_on_grid(double q, double grid) {
  double k = floor(fabs(q / grid) + 0.5);
  return copysign(k * grid, q);
}

static void test_qnoise_grid(void) {
  dprl_q_noise_cfg c = qn_cfg();
  c.grid = 0.25;
  CHECK(dprl_q_on_grid(&c, 0.375) == 0.5 && dprl_q_on_grid(&c, -0.375) == -0.5 &&
            dprl_q_on_grid(&c, 0.1) == 0 && dprl_q_on_grid(&c, 1.13) == 1.25 &&
            dprl_q_on_grid(&c, -7.2) == -7.25,
        "q on the grid 1/4: nearest multiple, ties away from zero");
  dprl_rng r;
  dprl_rng_init_seeded(&r, 31, 0);
  int same = 1;
  for (int i = 0; i < 20000; i++) {
    c.grid = ldexp(1, (int)dprl_rng_below(&r, 60) - 40);
    double q = ldexp(dprl_rng_unit(&r) - 0.5, (int)dprl_rng_below(&r, 60) - 30);
    if (i % 4 == 0) q = c.grid * ((double)dprl_rng_below(&r, 1000) + 0.5); /* ties */
    if (fabs(q / c.grid) >= 0x1p52) continue;
    same &= dprl_q_on_grid(&c, q) == by_hand_on_grid(q, c.grid);
  }
  CHECK(same, "q on the grid = the nearest multiple computed by hand (20000 cases, grids 2^-40..2^19)");
  /* the release q_on_grid + g: a multiple of the grid, nothing of q's low bits */
  c = qn_cfg();
  double s[40], q[40], vals[40];
  int64_t a[40];
  for (int i = 0; i < 40; i++)
    s[i] = -2 + 5 * dprl_rng_unit(&r), a[i] = i % 3, q[i] = 10 * dprl_rng_unit(&r) - 5;
  dprl_q_noise_in in = {s, a, q, 40, "pts"};
  dprl_error err = {0};
  int rc = dprl_q_noise_sample(&c, &in, NULL, NULL, vals, &err), grid_ok = 1;
  for (int i = 0; i < 40; i++) {
    double v = dprl_q_on_grid(&c, q[i]) + vals[i];
    grid_ok &= v / c.grid == nearbyint(v / c.grid) && vals[i] / c.grid == nearbyint(vals[i] / c.grid);
  }
  CHECK(rc == 0 && grid_ok, "noise and released value are multiples of the grid");
}

/* The draws of one action, computed independently: its stored points (x
** as stored) loaded into a fresh path, the stream of the action and of
** the size of its stored path, the batch over the rescaled states. */
static void by_hand_draws(const dprl_q_noise_cfg *c, int64_t act, const dprl_q_point *stored,
                          size_t nold, const double *s, size_t n, double *out) {
  dprl_error err = {0};
  dprl_gp_path *p = dprl_gp_path_create(c->sigma, c->beta, c->grid, &err);
  dprl_gp_point xg[MEM_CAP];
  for (size_t i = 0; i < nold; i++)
    xg[i].x = (stored[i].x - c->lo) / (c->hi - c->lo), xg[i].g = stored[i].g;
  dprl_gp_path_load(p, xg, nold, &err);
  double xs[64];
  for (size_t i = 0; i < n; i++) xs[i] = (s[i] - c->lo) / (c->hi - c->lo);
  dprl_rng r;
  dprl_rng_init_seeded(&r, c->seed, DPRL_STREAM_Q_NOISE | (uint64_t)act | (uint64_t)nold << 21);
  dprl_gp_path_sample_batch(p, &r, xs, n, out, &err);
  dprl_gp_path_free(p);
}

static void test_qnoise_one_q_per_point(void) {
  dprl_q_noise_cfg c = qn_cfg();
  dprl_error err = {0};
  double vals[4];
  /* two rows at one point: same q on the grid is one point, another is refused */
  double s1[3] = {0.5, 1.5, 0.5}, q1[3] = {1.0, 2.0, 1.0 + c.grid / 4};
  int64_t a1[3] = {1, 1, 1};
  dprl_q_noise_in in1 = {s1, a1, q1, 3, "pts"};
  CHECK(dprl_q_noise_sample(&c, &in1, NULL, NULL, vals, &err) == 0 && vals[0] == vals[2],
        "two rows at one point with the same q on the grid: one point, one value");
  q1[2] = 2.0;
  int rc = dprl_q_noise_sample(&c, &in1, NULL, NULL, vals, &err);
  CHECK(rc == DPRL_EINVAL &&
            msg_is(&err, "state 0.5, action 1 has two values of q in this call, 1 (row 1) and 2: "
                         "one noise value at a point cannot hide two (their difference would be "
                         "released exactly); a path is the noise of one function (row 3 of pts)"),
        "a second q at one point in one call is refused, naming both rows");
  dprl_error_clear(&err);
  /* the same state under another action is another point */
  a1[2] = 2;
  CHECK(dprl_q_noise_sample(&c, &in1, NULL, NULL, vals, &err) == 0,
        "the same state under another action is another point");
  /* against a stored point */
  mem_store *m = calloc(1, sizeof *m);
  dprl_q_path_store st = mem_iface(m);
  m->pts[0][0] = (dprl_q_point){0.5, 3 * c.grid, 1.0};
  m->n[0] = 1;
  double s2[2] = {-1.0, 0.5}, q2[2] = {0.0, 1.0 + c.grid / 4};
  int64_t a2[2] = {0, 0};
  dprl_q_noise_in in2 = {s2, a2, q2, 2, "pts"};
  CHECK(dprl_q_noise_sample(&c, &in2, &st, NULL, vals, &err) == 0 && vals[1] == 3 * c.grid,
        "the stored q (on the grid) at a stored point: accepted, its stored g");
  q2[1] = 2.0;
  int adds = m->adds[0];
  rc = dprl_q_noise_sample(&c, &in2, &st, NULL, vals, &err);
  CHECK(rc == DPRL_EINVAL &&
            msg_is(&err, "path table \"mem\" holds state 0.5, action 0 with q = 1 (on the grid: "
                         "its noise was released with that q); this call gives q = 2: a path is "
                         "the noise of one function, so another function needs another path "
                         "table (row 2 of pts)"),
        "another q than a stored point's is refused");
  CHECK(m->adds[0] == adds, "... and nothing of that call is handed to the store");
  dprl_error_clear(&err);
  free(m);
}

static void test_qnoise_stored_path(void) {
  dprl_q_noise_cfg c = qn_cfg();
  dprl_error err = {0};
  mem_store *m = calloc(1, sizeof *m);
  dprl_q_path_store st = mem_iface(m);
  /* action 0 has a stored path of 3 points (g on the grid, any values) */
  dprl_q_point stored[3] = {{-1.5, 7 * c.grid, 0.5}, {0.25, -2 * c.grid, 1.0},
                            {2.0, 40 * c.grid, -1.0}};
  memcpy(m->pts[0], stored, sizeof stored);
  m->n[0] = 3;
  /* rows: the stored states (with their q), new states, a new state twice;
  ** action 1 has no stored path, action 2 no rows */
  double s[9] = {0.25, -1.0, -1.5, 2.0, 1.0, 1.0, 0.3, -0.7, 2.5};
  double q[9] = {1.0, 0.0, 0.5, -1.0, 3.0, 3.0, 1.0, 1.0, 1.0};
  int64_t a[9] = {0, 0, 0, 0, 0, 0, 1, 1, 1};
  dprl_q_noise_in in = {s, a, q, 9, "pts"};
  double vals[9];
  int rc = dprl_q_noise_sample(&c, &in, &st, NULL, vals, &err);
  CHECK(rc == 0 && vals[0] == stored[1].g && vals[2] == stored[0].g && vals[3] == stored[2].g,
        "points already on the stored path get their stored g");
  CHECK(m->n[0] == 3 + 2 && m->n[1] == 3 && m->n[2] == 0,
        "the new points are stored (a state repeated in the call once)");
  int kept = 1;
  for (int i = 0; i < 3; i++)
    kept &= memcmp(&m->pts[0][i], &stored[i], sizeof stored[i]) == 0;
  CHECK(kept, "the stored points are unchanged");
  /* independent computation: conditional on the stored points, the stream
  ** of the action and of its stored path's size */
  double want0[6], want1[3];
  by_hand_draws(&c, 0, stored, 3, s, 6, want0);
  by_hand_draws(&c, 1, NULL, 0, s + 6, 3, want1);
  int same = 1;
  for (int i = 0; i < 6; i++) same &= vals[i] == want0[i];
  for (int i = 0; i < 3; i++) same &= vals[6 + i] == want1[i];
  CHECK(same, "draws = a path loaded with the stored points, sampled on the stream of "
              "(action, stored size): conditional sampling");
  int stored_ok = 1;
  for (size_t k = 0; k < m->n[0]; k++)
    for (int i = 0; i < 6; i++)
      if (m->pts[0][k].x == s[i])
        stored_ok &= m->pts[0][k].g == vals[i] && m->pts[0][k].q == dprl_q_on_grid(&c, q[i]);
  CHECK(stored_ok, "a stored point holds the state as given, the g released, q on the grid");
  /* a second call at the same points: all stored now, same values, nothing added */
  double again[9];
  int adds0 = m->adds[0], adds1 = m->adds[1];
  rc = dprl_q_noise_sample(&c, &in, &st, NULL, again, &err);
  CHECK(rc == 0 && memcmp(vals, again, sizeof vals) == 0,
        "a second call on the stored path releases the same values");
  CHECK(m->adds[0] == adds0 && m->adds[1] == adds1, "... and hands nothing new to the store");
  /* a new point right next to a stored one is drawn conditionally: near it */
  double s3[1] = {0.25 + 1e-9}, q3[1] = {0}, v3;
  int64_t a3[1] = {0};
  dprl_q_noise_in in3 = {s3, a3, q3, 1, "pts"};
  rc = dprl_q_noise_sample(&c, &in3, &st, NULL, &v3, &err);
  /* conditional sd <= sigma sqrt(2 beta d), d the rescaled distance; the
  ** draw's scale is that rounded up to whole grid steps; 8 of them */
  double sd = c.sigma * sqrt(2 * c.beta * 1e-9 / (c.hi - c.lo));
  CHECK(rc == 0 && fabs(v3 - stored[1].g) <= 8 * ceil(sd / c.grid) * c.grid + 2 * c.grid &&
            8 * ceil(sd / c.grid) * c.grid < 1e-3 * c.sigma,
        "a new point 1e-9 from a stored one is drawn near its g (conditional, not fresh)");
  /* two stored rows at one rescaled point with different values */
  mem_store *m2 = calloc(1, sizeof *m2);
  dprl_q_path_store st2 = mem_iface(m2);
  m2->pts[1][0] = (dprl_q_point){1.0, c.grid, 0};
  m2->pts[1][1] = (dprl_q_point){1.0, 2 * c.grid, 0};
  m2->n[1] = 2;
  double s4[1] = {0.0}, q4[1] = {0}, v4;
  int64_t a4[1] = {1};
  dprl_q_noise_in in4 = {s4, a4, q4, 1, "pts"};
  rc = dprl_q_noise_sample(&c, &in4, &st2, NULL, &v4, &err);
  CHECK(rc == DPRL_EINVAL && msg_is(&err, "path table \"mem\": two values stored at one point "
                                          "(action 1, rescaled state 0.6)"),
        "two stored values at one point are refused");
  dprl_error_clear(&err);
  free(m);
  free(m2);
}

static void test_qnoise_store_calls(void) {
  dprl_q_noise_cfg c = qn_cfg();
  dprl_error err = {0};
  mem_store *m = calloc(1, sizeof *m);
  dprl_q_path_store st = mem_iface(m);
  double s[5] = {0.1, 0.2, 0.1, 2.9, -2}, q[5] = {1, 2, 1, 0, 0}, vals[5];
  int64_t a[5] = {0, 0, 0, 2, 2};
  dprl_q_noise_in in = {s, a, q, 5, "pts"};
  int rc = dprl_q_noise_sample(&c, &in, &st, NULL, vals, &err);
  CHECK(rc == 0 && m->loads[0] == 1 && m->loads[1] == 0 && m->loads[2] == 1,
        "load: once per action that has rows, none for an action without");
  CHECK(m->adds[0] == 1 && m->added[0] == 3 && m->adds[2] == 1 && m->added[2] == 2 &&
            m->adds[1] == 0,
        "add: once per action with new points, every new row (a repeated state too)");
  CHECK(m->marks == 0, "sampling never marks the path charged");
  m->fail_add = 1;
  s[0] = 0.15;
  rc = dprl_q_noise_sample(&c, &in, &st, NULL, vals, &err);
  CHECK(rc == DPRL_EINVAL && msg_is(&err, "store full"),
        "a point the store cannot keep fails the call (never skipped)");
  dprl_error_clear(&err);
  /* the ledger row's cost and the mark */
  dprl_q_noise_cost cost;
  c.has_seed = 0;
  c.budget = "b";
  c.cal.epsilon = 1, c.cal.out.delta_total = 1e-5, c.cal.T = 100, c.cal.B = 10, c.cal.J = 10;
  dprl_q_noise_cost_of(&c, &st, &cost);
  CHECK(cost.spends && cost.epsilon == 1 && cost.delta == 1e-5 && cost.mark,
        "a path not yet charged: the call charges (epsilon, delta_total) and marks it");
  CHECK(dprl_q_noise_charged(&cost, &st, &err) == 0 && m->marks == 1,
        "the mark goes through the store's mark_charged");
  st.charged = 1;
  dprl_q_noise_cost_of(&c, &st, &cost);
  CHECK(cost.spends && cost.epsilon == 0 && cost.delta == 0 && !cost.mark &&
            dprl_q_noise_charged(&cost, &st, &err) == 0 && m->marks == 1,
        "a path charged already: the call spends nothing more and marks nothing");
  dprl_q_noise_cost_of(&c, NULL, &cost);
  CHECK(cost.spends && cost.epsilon == 1 && !cost.mark, "no store: fresh paths, charged, no mark");
  st.charged = 0;
  c.budget = NULL;
  dprl_q_noise_cost_of(&c, &st, &cost);
  CHECK(!cost.mark, "no budget: nothing to mark");
  c.budget = "b";
  c.has_seed = 1;
  dprl_q_noise_cost_of(&c, &st, &cost);
  CHECK(!cost.spends && cost.epsilon == 0 && !cost.mark && strcmp(cost.why_not, "seed") == 0,
        "seeded: not private, spends nothing, says why");
  c.has_seed = 0;
  c.cal.J = 9;
  dprl_q_noise_cost_of(&c, &st, &cost);
  CHECK(!cost.spends && !cost.mark && strcmp(cost.why_not, "J (below T/B)") == 0,
        "J below T/B: not covered by the accountant, spends nothing, says why");
  free(m);
}

int main(void) {
  test_qnoise_grid();
  test_qnoise_one_q_per_point();
  test_qnoise_stored_path();
  test_qnoise_store_calls();
  return CHECK_DONE();
}
