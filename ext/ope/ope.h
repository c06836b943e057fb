/*
** ope.h: off-policy evaluation of one target policy from logged
** propensities, by clipped-weight importance sampling, private at the
** level of one episode (dp_is_value; ALGORITHMS.md §15).
**
** Per episode e, over its first `horizon` steps by t:
**   w_e = min(prod_t target_prob / behavior_prob, W)       W = weight_max
**   G_e = clamp(sum_k gamma^k clamp(r_k, rmin, rmax), gmin, gmax)
** Released once, with one Gaussian draw, the vector
**   v = (sum_e w_e (G_e - c), kw sum_e w_e, kn n)
** (c the centre of [gmin, gmax], B its width, kw = B/sqrt(2),
** kn = W B/2), whose l2 sensitivity is W B for adding or removing one
** episode and for replacing one.  From it, as post-processing:
**   weighted IS  c + S/T            (T the noisy sum of weights)
**   ordinary IS  (S + c T)/n        (n the noisy episode count)
** both clamped to [gmin, gmax].
** With the option diagnostics = s > 0, v also holds k2 sum_e w_e^2 and
** kc (episodes whose weight was clipped), k2 = sqrt(s/2) B/W, kc =
** sqrt(s/2) W B: the sensitivity becomes W B sqrt(1 + s), and the
** effective sample size T^2/T2 and the clipped share are post-processing
** (ALGORITHMS.md §15.7).
**
** Plain C over typed values; the SQL glue is sql_ope.c.
*/
#ifndef DPRL_OPE_H
#define DPRL_OPE_H

#include <stdint.h>

#include "base/core.h"
#include "dp/grid_quantile.h"
#include "dp/noise.h"
#include "dp/plan.h"
#include "rows/steps.h"

/* The public options (ALGORITHMS.md §15). */
typedef struct dprl_ope_config {
  const char *fn;
  double gamma, rmin, rmax;
  double gmin, gmax;   /* the return range: given, or derived from the above */
  int range_given;     /* both gmin and gmax were options */
  double weight_max;   /* W (automatic: the grid's top until the rows choose it) */
  /* "weight_max": "auto", the default (§15.8): W chosen privately on a
  ** grid up to weight_top, spending weight_share of rho_cap */
  int weight_auto;
  double weight_q, weight_share, weight_top;
  double rho_cap;      /* the largest rho that converts to (epsilon, delta) */
  dprl_gridq gq;       /* the grid, its noise and (after the rows) the choice */
  int64_t horizon;     /* H: the first H steps of an episode count */
  double epsilon, delta;
  int weighted;        /* value = weighted IS (1, default) or ordinary IS (0) */
  double ratio_max;    /* a public bound on target/behavior per step; 0: none */
  double diag_share;   /* option diagnostics s in [0, 1]: 0, none released */
  int diagnostic;      /* release "diagnostic": exact values added (not private) */
  int has_seed;
  uint64_t seed;
  char *budget;
  double episodes;     /* the plan's hypothetical number of episodes; -1 otherwise */
} dprl_ope_config;

/* The calibration: public values only. */
typedef struct dprl_ope_noise {
  double B, c;       /* width and centre of [gmin, gmax] */
  double kw, kn;     /* scales of the weight sum and of the count */
  double k2, kc;     /* diagnostics: scales of sum w^2 and of the clipped count */
  int dim;           /* entries of v: 3, or 5 with diagnostics */
  double sens;       /* W B sqrt(1 + s): the l2 sensitivity of v in value units */
  double sigma1;     /* analytic Gaussian scale for sensitivity 1 at (eps, delta) */
  double grid;       /* the power-of-two grid of every entry */
  double sens_steps; /* (sens + sqrt(dim) grid) / grid: with the rounding, in grid steps
                        (times grid: the reported "sensitivity") */
  uint64_t steps;    /* s = ceil(sens_steps sigma1): the noise scale in grid steps */
  double sigma;      /* s grid: the applied noise scale of every entry (value units) */
  double rho;        /* sens_steps^2 / (2 s^2): the zCDP cost */
  double cap;        /* every entry is clamped to [-cap, cap] before rounding */
  double episodes_max; /* below this many episodes the clamp never acts */
} dprl_ope_noise;

/* Parse the options of dp_is_value (plan = 0) or of its plan (plan = 1:
** "episodes" required, "mechanism" allowed, no seed/release/budget).
** Every refusal depends on the options alone. */
int dprl_ope_config_parse(dprl_ope_config *c, const char *fn, const char *text, size_t len,
                          int plan, dprl_cancel *cancel, dprl_error *err);
void dprl_ope_config_free(dprl_ope_config *c);

/* The key return_range: "given" (gmin and gmax were options) or "from
** rmin, rmax and horizon" (the default, which holds a reward at every
** step: for a reward only at the end, far wider than the returns). */
void dprl_ope_put_range(const dprl_ope_config *c, dprl_buf *b);

/* The keys of the weight bound (§15.8): weight_from ("given" or "auto"),
** and for "auto" the quantile, share, grid, the histogram's scale and rho
** and, once chosen, the noisy histogram and the noisy share of episodes
** above the chosen W. */
void dprl_ope_put_weight_auto(const dprl_ope_config *c, dprl_buf *b, int chosen);

/* The noise of a release with these options (ALGORITHMS.md §15.3). */
int dprl_ope_calibrate(const dprl_ope_config *c, dprl_ope_noise *nz, dprl_error *err);

/* One logged step as the aggregate keeps it. */
typedef struct dprl_ope_step {
  int64_t t;
  double reward;
  double log_ratio; /* log target_prob - log behavior_prob; -inf when target_prob = 0 */
  double behavior;  /* behavior_prob: with t and reward, the episode's content (its print) */
  uint32_t episode; /* dense index of the episode key */
  uint32_t pad;
} dprl_ope_step;

/* One episode's weight before the clip, exp(sum of its log ratios), and
** clamped return, from its steps sorted by t (at least one): the first
** `horizon` of them count. */
void dprl_ope_episode(const dprl_ope_config *c, const dprl_ope_step *steps, size_t n,
                      double *w, double *g);

/* The sums over episodes: the exact released vector before noise, and
** diagnostics that are never released in private mode. */
typedef struct dprl_ope_sums {
  double S;        /* sum w (G - c) */
  double T;        /* sum w */
  double n;        /* episodes */
  double T2;       /* sum w^2 (diagnostic: effective sample size) */
  double clipped;  /* episodes whose weight was clipped (diagnostic) */
  double zero;     /* episodes of weight 0 (diagnostic) */
} dprl_ope_sums;

/* Add one episode's clipped weight w and return G to the sums (clipped: w
** was cut to W). */
void dprl_ope_sums_add(const dprl_ope_config *c, const dprl_ope_noise *nz, dprl_ope_sums *s,
                       double w, double g, int clipped);

/* The vector v of the header for these sums (before rounding and noise):
** nz->dim entries. */
void dprl_ope_vector(const dprl_ope_noise *nz, const dprl_ope_sums *s, double *v);

/* ---- rows in any order ------------------------------------------------- */
typedef struct dprl_ope_rows {
  dprl_ope_step *v;
  size_t n, cap;
  double *w, *g;   /* after collect: per episode, its weight before the clip and its return */
  size_t episodes;
  dprl_episode_index keys; /* episode keys -> dense indices: the units of privacy */
} dprl_ope_rows;

/* One row; behavior_prob in (0, 1] and target_prob in [0, 1] (checked by
** the caller, whose message names the row). */
int dprl_ope_rows_push(dprl_ope_rows *r, const dprl_key *episode, int64_t t, double reward,
                       double behavior_prob, double target_prob, dprl_error *err);
/* All rows seen: sort by (episode, t), refuse a duplicate (episode, t), and
** reduce each episode to its weight and return (r->w, r->g).  The rows are
** freed; the keys stay, and under a budget each has the print of its
** episode's logged rows (t, reward, behavior_prob; not target_prob, the
** analyst's policy), so that one log evaluated under several policies is
** seen as one set of episodes. */
int dprl_ope_rows_collect(dprl_ope_rows *r, const dprl_ope_config *c, dprl_cancel *cancel,
                          dprl_error *err);
/* The sums of the collected episodes at c's W. */
void dprl_ope_rows_sum(const dprl_ope_rows *r, const dprl_ope_config *c, const dprl_ope_noise *nz,
                       dprl_ope_sums *sums);
/* "weight_max": "auto" (§15.8): W chosen from the collected episodes'
** weights by the noisy histogram (draws from rng, before the release's),
** into c->weight_max, and nz recalibrated for it. */
int dprl_ope_choose_weight(dprl_ope_config *c, dprl_ope_noise *nz, const dprl_ope_rows *r,
                           dprl_rng *rng, dprl_error *err);
void dprl_ope_rows_free(dprl_ope_rows *r);

/* ---- the release --------------------------------------------------------- */

/* The estimators from a (noisy or exact) vector v: value, stderr from the
** noise (NaN when the rule of §15.4 gives no estimate). */
typedef struct dprl_ope_estimate {
  double weighted, ordinary;       /* clamped to [gmin, gmax] */
  double se_weighted, se_ordinary; /* from the public noise (delta method) */
  double T, n;                     /* the weight sum and count read back from v */
} dprl_ope_estimate;
void dprl_ope_estimate_from(const dprl_ope_config *c, const dprl_ope_noise *nz,
                            const double v[3], double sigma, dprl_ope_estimate *e);

/* The bound of §15.5 on the clipping bias of the chosen estimator, or NaN
** when none can be given (no ratio_max). */
double dprl_ope_bias_bound(const dprl_ope_config *c, const dprl_ope_noise *nz);

/* Noise on v (rng: secure or seeded by the caller) and the JSON result. */
int dprl_ope_release(const dprl_ope_config *c, const dprl_ope_noise *nz,
                     const dprl_ope_sums *sums, dprl_rng *rng, dprl_buf *out, dprl_error *err);

/* dp_plan for dp_is_value: from the options and a hypothetical "episodes",
** the sigma and the predicted error of the value (plan.c). */
int dprl_ope_plan(const char *text, size_t len, int64_t length_limit, dprl_cancel *cancel,
                  dprl_buf *out, dprl_plan_cost *cost, dprl_error *err);

#endif
