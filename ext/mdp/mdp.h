/*
** mdp.h: dp_mdp, a private release of a patient-level model of the
** logged process (ALGORITHMS.md §13): noisy start counts, transition
** counts with a terminal column, and reward sums per (state, action), one
** discrete Gaussian draw on one grid for the whole vector, at the level of
** one episode: adding, removing or replacing one patient (the ledger
** composes it with releases stated for replacement, §12).  Every estimate
** built from it
** (transition probabilities, mean rewards, the value of any policy, a
** planned policy) is post-processing.
**
** The released vector, in count units (start[S], counts[S][A][S+1],
** reward[S][A]):
**   start[s]          episodes whose first step is in s
**   counts[s][a][s']  steps (s, a) followed by s'; s' = S: the episode
**                     ended after (s, a)
**   reward[s][a]      sum over the steps in (s, a) of (clamp(r) - c) / b,
**                     c = (rmin + rmax)/2, b = (rmax - rmin)/2
**   censored[s][a]    with an outcome argument only: the episode ended
**                     after (s, a) without its outcome (cut by the study
**                     window); such an end goes here instead of column S
** so one step moves its count entry and its reward entry by at most 1
** each.  The result's reward_sums are b * reward (reward_sigma = b sigma).
** With tent features a real state x is phi(x) over K anchors (two
** non-zero weights summing to 1) and the entries are sums of phi(s) (x)
** phi(s'), phi(s0), phi(s) (r - c)/b.  With aggregate or map features
** s is the group of the row's state (dprl_mdp_group), so the vector and
** its bounds are the tabular ones over the groups (§13.1).
**
** Contributions are bounded by public options: only the first `horizon`
** steps (by t) of an episode count, and/or the episode's whole vector is
** scaled down to the l2 norm `clip`.  Sums are kept in fixed point
** (DPRL_MDP_TICK ticks per count, int64): every sum is exact, so adding
** one episode moves the sums by exactly its contribution, whose norm is
** bounded in exact arithmetic, and so is the distance between two
** episodes' contributions (§13.1).
**
** Core only: plain C over arrays, rows come in through rows/steps.h.
*/
#ifndef DPRL_MDP_H
#define DPRL_MDP_H

#include "base/core.h"
#include "dp/grid_quantile.h"
#include "dp/noise.h"
#include "dp/plan.h"
#include "rows/steps.h"

/* Ticks per count: the fixed point of the sums and of a step's reward.
** int64 sums hold 2^39 counts in one entry (more steps than a release can
** buffer: dprl_mdp_collect refuses more). */
#define DPRL_MDP_TICK_BITS 24
#define DPRL_MDP_TICK 0x1p24
#define DPRL_MDP_MAX_STEPS ((size_t)1 << 39)

/* The most edges of "clip": "auto"'s grid: 4 log2(sqrt(1 + 3 2^80)) + 1 < 170. */
#define DPRL_MDP_EDGES_MAX 176

typedef struct dprl_mdp_config {
  const char *fn;            /* for messages: "dp_mdp" or "dp_plan" */
  int64_t n_states;          /* S, or K anchors with tent features */
  int64_t n_actions;         /* A */
  double gamma, rmin, rmax, epsilon, delta;
  int64_t horizon;           /* H >= 1, or 0: no horizon */
  double clip;               /* C > 0, or 0: no clip */
  int tent;                  /* features {"tent": K, "low": lo, "high": hi} */
  double low, high;
  /* features {"aggregate": k} (group floor(s / k)) or {"map": [g_0, ...]}
  ** (group map[s]): a public function of a row's state, applied before
  ** counting; n_states is then the number of groups, the model's states */
  int64_t agg_k;             /* k, or 0 */
  int32_t *map;              /* map[R], or NULL */
  int64_t raw_states;        /* the states a row may give, 0..raw_states-1: S tabular,
                             ** k S aggregated, R with a map (0 with tent features) */
  size_t echo_bytes;         /* the bytes of the map's echo in the result */
  int has_seed;
  uint64_t seed;
  int diagnostic;            /* release "diagnostic": exact statistics too */
  char *budget;
  int64_t length_limit;      /* the result's largest length (0: none) */
  int sparse;                /* option transitions: the sparse layout (ALGORITHMS.md §13.5) */
  int64_t cells_max;         /* sparse: the most cells a release keeps (option max_cells) */
  int outcome;               /* dp_mdp's outcome argument: each episode says how it ended, a
                             ** censored end counted in censored[S][A] (the last S A entries) */
  /* Derived from the options alone (public). */
  size_t dim;                /* the sums' length: dense S + S A (S + 1) + S A; sparse
                             ** S + 3 S A (start, totals, ends, reward), the cells apart;
                             ** with an outcome, S A more (censored) */
  unsigned abits;            /* tabular: a step's state field is s << abits | a */
  double center, half;       /* c and b of the reward scale */
  int exact_path;            /* tabular with a horizon that the clip does not cut */
  double bound;              /* Delta_0: the l2 norm of one episode's contribution */
  double bound_rep;          /* the l2 distance between two episodes' contributions */
  double limit;              /* the norm an episode is scaled down to (general path) */
  int64_t touched;           /* most entries one episode can change */
  int64_t touched_rep;       /* most entries a replacement can change: min(2 touched, dim) */
  double sigma1;             /* the scale for sensitivity 1: dense, the analytic Gaussian's;
                             ** sparse, 1 / sqrt(2 rho*) with rho* the largest rho whose zCDP
                             ** conversion gives epsilon at delta_gauss */
  double grid;               /* g, a power of two (count units) */
  int grid_shift;            /* g TICK = 2^grid_shift */
  double sens;               /* Delta, both relations, grid rounding included: the larger of
                             ** Delta_0 + sqrt(touched) g (add/remove) and
                             ** bound_rep + sqrt(touched_rep) g (replace) */
  uint64_t steps;            /* noise scale in grid steps, ceil(Delta sigma1 / g) */
  double sigma;              /* steps * g: the applied scale of every count entry */
  double rho;                /* zCDP cost, (Delta / g)^2 / (2 steps^2) */
  /* sparse only (§13.5): delta = delta_gauss + (1 + e^eps) delta_thr */
  int64_t new_cells;         /* T_c: the most cells one episode can add to the support */
  double delta_gauss;        /* delta / 2: the Gaussian part's delta (zCDP conversion) */
  double delta_thr;          /* delta_0 = delta_gauss / (1 + e^eps), rounded down */
  double tau;                /* the threshold: sigma sqrt(2 ln(T_c / delta_0)), rounded up */
  /* "clip": "auto" (ALGORITHMS.md §13.6): C is chosen before the release,
  ** from a noisy histogram of the episodes' norms over a public grid of
  ** edges top 2^((j + 1 - K) / 4), j < K, top the unclipped bound
  ** (dp/grid_quantile.h); the histogram takes gq.rho of rho_cap, the release the rest */
  int clip_auto;
  double clip_share;         /* the histogram's share of rho_cap */
  double rho_cap;            /* rho*, what the whole release is charged */
  dprl_gridq gq;             /* the grid, the quantile, the histogram's scale and rho and,
                             ** after the choice, its noisy counts and share above C */
} dprl_mdp_config;

/* "auto" picks the sparse layout above this many count entries
** S A (S + 1) (a rule on public sizes), when a horizon is given. */
#define DPRL_MDP_AUTO_SPARSE 65536

/* The options of dp_mdp (text may be NULL: an error naming it), checked
** and calibrated from the options alone, before any row is read; outcome:
** the call has the outcome argument (a public fact of the query).  Every
** refusal here depends on the options and the arity only. */
int dprl_mdp_config_parse(dprl_mdp_config *c, const char *fn, const char *text, size_t len,
                          int64_t length_limit, int outcome, dprl_cancel *cancel,
                          dprl_error *err);
void dprl_mdp_config_free(dprl_mdp_config *c);
/* The options dp_mdp knows (NULL-ended). */
extern const char *const dprl_mdp_option_names[];

/* The public calibration for a grid g (a power of two): sens, steps,
** sigma and rho from bound, bound_rep, touched, touched_rep and sigma1
** (used by parse; the unit
** tests call it with a coarse g to see the rounding term). */
int dprl_mdp_calibrate_grid(dprl_mdp_config *c, double g, dprl_error *err);
/* The whole calibration from the options' values (bounds from the clip,
** touched entries, grid, sigma); parse calls it, and "clip": "auto" again
** once C is chosen. */
int dprl_mdp_calibrate(dprl_mdp_config *c, dprl_error *err);
/* "clip": "auto" (clip_auto.c, §13.6; its options: internal.h): given the episodes' exact bin counts (gq.n of them), the noisy
** histogram, C (the edge of the noisy quantile) and the calibration for
** it.  rng is the release's histogram stream. */
int dprl_mdp_auto_bin(const dprl_mdp_config *c, double norm);
double dprl_mdp_auto_edge(const dprl_mdp_config *c, int j); /* edge j of the grid */
int dprl_mdp_auto_choose(dprl_mdp_config *c, const int64_t *bins, dprl_error *err);

/* ---- rows into steps -------------------------------------------------------
** A buffered step (rows/steps.h) carries, tabular: state = s << abits | a
** (s the group with aggregate or map features),
** reward = the step's reward in ticks; tent: state = a, reward = the
** reward in ticks, and a second buffer (same keys and t) holds the real
** state x (clamped to [low, high]) in its reward field. */
static inline double dprl_mdp_reward_ticks(const dprl_mdp_config *c, double r) {
  r = r < c->rmin ? c->rmin : r > c->rmax ? c->rmax : r;
  double u = (r - c->center) / c->half;
  u = u < -1 ? -1 : u > 1 ? 1 : u;
  double q = u * DPRL_MDP_TICK; /* |q| <= 2^24: rounded to whole ticks */
  return (double)(int64_t)(q + (q < 0 ? -0.5 : 0.5));
}
/* With an outcome, a step of a censored episode has this bit of its state
** field set (tabular: S 2^abits <= 2^31 leaves it free; tent: the field is
** the action).  dprl_mdp_collect reads the episode's last step's and
** clears it before the statistics. */
#define DPRL_MDP_CENSORED 0x80000000u
/* The model state (group) of a row's state s, or -1 when s is outside
** 0..raw_states-1 (tabular, aggregate or map; not tent). */
static inline int64_t dprl_mdp_group(const dprl_mdp_config *c, int64_t s) {
  if (s < 0 || s >= c->raw_states) return -1;
  return c->map ? c->map[s] : c->agg_k ? s / c->agg_k : s;
}
static inline uint32_t dprl_mdp_pack(const dprl_mdp_config *c, int64_t s, int64_t a) {
  return (uint32_t)((uint64_t)s << c->abits | (uint64_t)a);
}

/* ---- the statistics ------------------------------------------------------ */

/* A cell (s, a, s') of the sparse layout, s' < S: key (s A + a) S + s', with
** its exact sum in ticks, an episode's weight (general path) or a noisy
** value (count units). */
typedef struct dprl_mdp_cell {
  uint64_t key;
  union {
    int64_t ticks;
    double w;
  };
} dprl_mdp_cell;

typedef struct dprl_mdp_stats {
  int64_t *v;               /* dim entries, in ticks (sparse: start, totals, ends, reward) */
  int64_t episodes, clipped; /* exact, diagnostic only */
  /* the general path's per-episode scratch (reused: no allocation per
  ** episode) */
  double *w;
  unsigned char *mark;
  uint32_t *list;
  size_t n_list, cap_list;
  /* sparse: every contribution to a cell, (key, ticks); after
  ** dprl_mdp_cells_merge, the cells of the support sorted by key, each
  ** once with its exact sum (> 0) */
  dprl_mdp_cell *cells;
  size_t n_cells, cap_cells;
  int merged;
  int censored;             /* the episode being added ended censored (outcome only) */
  dprl_mdp_cell *ecells, *tmp; /* general path: one episode's cells; sort scratch */
  size_t n_ecells, cap_ecells, cap_tmp;
} dprl_mdp_stats;

int dprl_mdp_stats_init(dprl_mdp_stats *st, const dprl_mdp_config *c, dprl_cancel *cancel,
                        dprl_error *err);
void dprl_mdp_stats_free(dprl_mdp_stats *st);
/* One episode, sorted by t: steps as above; xs (tent only, else NULL) the
** same steps of the second buffer.  Fails only for lack of memory (the
** scratch list grows to the longest episode). */
int dprl_mdp_add_episode(dprl_mdp_stats *st, const dprl_mdp_config *c, const dprl_step *steps,
                         const dprl_step *xs, size_t n, dprl_error *err);
/* The l2 norm (count units) of the vector the general path would add for
** the episode, before any clip; nothing is added. */
int dprl_mdp_episode_norm(dprl_mdp_stats *st, const dprl_mdp_config *c, const dprl_step *steps,
                          const dprl_step *xs, size_t n, double *norm, dprl_error *err);
/* Every episode of the buffers (xbuf: tent only), grouped here; the
** buffers are read, then freed but for buf's episode keys, which move to
** *keys when keys is not NULL (the release's units), each with the print
** of its steps as read (rows/print.h). */
int dprl_mdp_collect(dprl_mdp_stats *st, dprl_mdp_config *c, dprl_step_buffer *buf,
                     dprl_step_buffer *xbuf, dprl_episode_index *keys, dprl_cancel *cancel,
                     dprl_error *err);

/* Sparse: sort the cells' contributions by key and add up each cell's
** (polls cancel; needs room for a copy).  dprl_mdp_collect calls it. */
int dprl_mdp_cells_merge(dprl_mdp_stats *st, dprl_cancel *cancel, dprl_error *err);
/* Sort n cells (tmp: room for n) by key, or by_value: by w descending,
** then key ascending.  Polls cancel. */
int dprl_mdp_cells_sort(dprl_mdp_cell *a, dprl_mdp_cell *tmp, size_t n, int by_value,
                        dprl_cancel *cancel, dprl_error *err);

/* Entry j of the sums rounded to the grid: round(v[j] / (g TICK)), half
** away from zero, clamped to +-2^51 (1-Lipschitz: the sensitivity holds). */
int64_t dprl_mdp_grid_value(const dprl_mdp_config *c, int64_t ticks);

/* ---- the release ---------------------------------------------------------- */

/* The noisy vector (dim entries, count units; the reward part still in
** units of b) from rng: entry j is g (grid_value(v[j]) + Z_j), Z_j drawn
** in index order.  Polls cancel. */
int dprl_mdp_perturb(const dprl_mdp_config *c, const dprl_mdp_stats *st, dprl_rng *rng,
                     double *out, dprl_cancel *cancel, dprl_error *err);
/* Sparse (§13.5): after the dense parts' noise from the same rng, each
** merged cell of st in key order gets g (grid_value + Z); those above
** tau go to kept (room for st->n_cells), *above of them; when more than
** cells_max pass, the cells_max largest noisy values are kept (ties to the
** lower key), sorted by key again, *n_kept of them.  Polls cancel. */
int dprl_mdp_perturb_cells(const dprl_mdp_config *c, const dprl_mdp_stats *st, dprl_rng *rng,
                           dprl_mdp_cell *kept, size_t *n_kept, size_t *above,
                           dprl_cancel *cancel, dprl_error *err);
/* The whole release as JSON (noise from a seeded stream DPRL_STREAM_MDP
** when c->has_seed, else the secure generator). */
int dprl_mdp_release(const dprl_mdp_config *c, const dprl_mdp_stats *st, dprl_buf *out,
                     dprl_cancel *cancel, dprl_error *err);

/* ---- planning (plan.c) ---------------------------------------------------
** dp_mdp's options without seed, budget and release, plus the public
** sizes to plan for: "episodes" (required), "visits" ([S][A] hypothetical
** counted steps per pair) or "steps" (counted steps per episode, default
** the horizon; visits then spread evenly).  Writes the calibration and
** the predicted errors as JSON and fills cost (dp/plan.h). */
int dprl_mdp_plan(const char *text, size_t len, int64_t length_limit, dprl_cancel *cancel,
                  dprl_buf *out, dprl_plan_cost *cost, dprl_error *err);

#endif
