/*
** q_learn.h: differentially private Q-learning with functional noise
** (Wang & Hegde 2019, Algorithm 1; ALGORITHMS.md §8) on a public linear
** approximator, over a fixed array of transitions (s, a, r, s').
**
** Q_theta(s, a) = theta_a . phi(x),  x = (clamp(s, lo, hi) - lo) / (hi - lo),
** with K features per action on [0, 1], centres c_i = i / (K - 1), h = 1/(K-1):
**   tent: phi_i(x) = max(0, 1 - |x - c_i| / h)      (piecewise-linear hats)
**   rbf:  phi_i(x) = exp(-(x - c_i)^2 / (2 h^2))    (width = spacing)
** Everything about the approximator (lo, hi, K, kind) is public.
**
** Per batch (T/B of them, B transitions drawn uniformly WITH replacement
** from the secure generator), with paths g_a (one per action, reset every
** ceil((T/B) / J) batches, so at most J paths per action):
**   y_t = clamp(r_t, rmin, rmax) + gamma max_a (Q(s'_t, a) + g_a(s'_t))
**   theta <- theta - (lr / B) sum_t (Q(s_t, a_t) + g_{a_t}(s_t) - y_t) phi(s_t)
** (semi-gradient: y_t is held fixed).  Every transition is treated as
** non-terminal (the SQL contract has no done flag).
** J < T/B reuses one path over several SGD steps, while the composition
** behind every accountant counts T/B steps with fresh noise; J = T/B (a
** fresh path per batch, the paper's recommendation in §4) matches it.
*/
#ifndef DPRL_Q_LEARN_H
#define DPRL_Q_LEARN_H

#include <stddef.h>
#include <stdint.h>

#include "base/core.h"
#include "q_learning/gp_path.h"
#include "dp/noise.h"

typedef enum { DPRL_QFEAT_TENT = 0, DPRL_QFEAT_RBF = 1 } dprl_qfeat_kind;

typedef struct dprl_q_features {
  dprl_qfeat_kind kind;
  int K;         /* features per action, >= 2 */
  double lo, hi; /* the public state interval, lo < hi */
} dprl_q_features;

int dprl_q_features_check(const dprl_q_features *f, dprl_error *err);
/* s -> [0, 1] (states outside [lo, hi] are clamped to it). */
double dprl_q_rescale(const dprl_q_features *f, double s);
/* phi[0..K) at a rescaled x in [0, 1]. */
void dprl_q_features_eval(const dprl_q_features *f, double x, double *phi);
/* theta_a . phi(x), x rescaled. */
double dprl_q_value(const dprl_q_features *f, const double *theta_a, double x);

/* Public bounds over x, y in [0, 1] (rescaled states), from the feature
** definition alone:
**   *P >= sup |phi(x) . phi(y)|,  *D >= sup |phi(x) . phi'(y)|
** tent: P = 1 (phi >= 0, sum phi = 1), D = 1/h (phi' = -1/h, +1/h on the
** two live hats, and |phi_{i+1}(x) - phi_i(x)| <= 1).
** rbf:  P = min(K, sqrt(pi) (1 + 2 q/(1-q))), q = e^{-pi^2} (Poisson
**       summation), D = min(K e^-1/2 / h, 2 (e^-1/2 + 1) / h) (a unimodal
**       bump summed over a lattice: <= its max + integral / spacing). */
void dprl_q_feature_bounds(const dprl_q_features *f, double *P, double *D);

/* The neighbouring relation a release covers (ALGORITHMS.md §8, "The
** neighbouring relation"): two logs of the same transitions whose clamped
** rewards may all differ, each by at most dr:
**   DPRL_QNB_RANGE: dr = rmax - rmin (any two reward functions; default)
**   DPRL_QNB_UNIT:  dr = min(1, rmax - rmin) (the paper's ||r - r'||_inf <= 1)
** Both sensitivities below are linear in dr, so sigma of the paths and of
** theta scale with it. */
typedef enum { DPRL_QNB_RANGE = 0, DPRL_QNB_UNIT = 1 } dprl_q_neighbours;
double dprl_q_reward_change(dprl_q_neighbours nb, double rmin, double rmax);

/* The constant L that calibration (q_calibrate.h) needs for this
** approximator, derived from the reward bound (no clipping of theta):
**   L = dr * max(lr * D, P * B / (4 (k + 1))),  dr of the relation nb.
** Why: the proof of Theorem 5 bounds f = (one step under r) - (one step
** under r') by ||f||_inf <= v L and ||f'|| <= L, v = 4 lr (k+1)/B, to get
** ||f||_H^2 <= (v^2 + v) L^2 = C.  For this linear model, with theta, the
** batch and the noise paths shared,
**   f(x) = (lr / B) sum_{t: a_t = a} (r_t - r'_t) phi(x_t) . phi(x),
** |r_t - r'_t| <= dr; so ||f||_inf <= lr dr P and |f'| <= lr dr D, and the
** L above makes both inequalities true.  Note the B: all B rewards of a
** batch may differ, so the step moves by lr dr P, not lr dr P / B as the
** paper's proof assumes; L carries that factor back.  The paths cancel
** out of f, so no bound on theta or on the noise is needed. */
int dprl_q_sensitivity_L(const dprl_q_features *f, double lr, double k,
                         double B, double rmin, double rmax,
                         dprl_q_neighbours nb, double *L, dprl_error *err);

/* The l2 sensitivity of one SGD update of theta (ALGORITHMS.md §10):
** neighbouring data may change every reward by up to dr, so the B rewards
** of a batch move the update by at most
**   (lr / B) sum_t dr ||phi(x_t)||_2 <= lr dr sqrt(P)
** (P >= sup ||phi||^2, dprl_q_feature_bounds); the batch, the noise paths
** and theta before the step are the same on both sides (data-independent
** randomness and the previous, already noisy, release). */
double dprl_q_theta_sensitivity(const dprl_q_features *f, double lr, double dr);

typedef struct dprl_q_learn_opts {
  dprl_q_features feat;
  int m;              /* actions 0..m-1, m >= 1 */
  double gamma;       /* discount, in [0, 1) */
  double lr;          /* learning rate eta ("alpha" in the paper), > 0 */
  int64_t T, B, J;    /* T >= B >= 1, J >= 1: floor(T/B) SGD steps */
  double rmin, rmax;  /* public reward clamp, rmin < rmax */
  double sigma, beta; /* from dprl_q_calibrate; sigma = 0: noise off */
  /* Gaussian noise on every update of theta (dprl_q_theta_calibrate):
  ** after each step theta = g (round(theta / g) + Z), Z discrete Gaussian
  ** with scale ceil(sigma_theta / g) grid steps, each coordinate kept
  ** within 2^51 grid steps (a 1-Lipschitz projection: the sensitivity
  ** holds).  sigma_theta = 0: off (then theta is not private). */
  double sigma_theta, grid_theta;
  /* Polled throughout (core.h); NULL: never stopped.  On DPRL_EINTR theta
  ** holds no result. */
  dprl_cancel *cancel;
} dprl_q_learn_opts;

typedef struct dprl_q_transitions {
  const double *s, *r, *s_next;
  const int64_t *a;
  size_t n; /* >= 1 */
} dprl_q_transitions;

/* Run Algorithm 1; theta (m * K doubles, action a at theta + a K) gets the
** result, starting from 0.  Deterministic given the rng state.  If
** paths_out is not NULL it receives the m paths of the last reset period
** (caller frees each with dprl_gp_path_free); else they are freed. */
int dprl_q_learn(const dprl_q_learn_opts *o, const dprl_q_transitions *d,
                 dprl_rng *rng, double *theta, dprl_gp_path **paths_out,
                 dprl_error *err);

#endif
