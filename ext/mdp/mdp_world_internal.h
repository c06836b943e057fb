/*
** mdp_world_internal.h: what mdp_world.c (the world and its calibration)
** and mdp_world_log.c (a log drawn from it and released) share.
*/
#ifndef DPRL_MDP_WORLD_INTERNAL_H
#define DPRL_MDP_WORLD_INTERNAL_H

#include "mdp/mdp_world.h"

/* A fast generator for the draws of the world's logs (post-processing of
** public numbers: no cryptographic need), xoshiro256**, keyed from the
** seeded stream. */
typedef struct fast_rng {
  uint64_t s[4];
} fast_rng;
static inline uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
static inline uint64_t fast_u64(fast_rng *r) {
  uint64_t *s = r->s, out = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
  s[2] ^= s[0], s[3] ^= s[1], s[1] ^= s[2], s[0] ^= s[3], s[2] ^= t, s[3] = rotl(s[3], 45);
  return out;
}
static inline double fast_unit(fast_rng *r) { return (double)(fast_u64(r) >> 11) * 0x1p-53; }

/* Standard normals for the world's noise, from a fast_rng: the ziggurat
** of Marsaglia and Tsang (2000) with 128 layers, as refined by Doornik
** (2005: the layer and the uniform from separate bits of one draw). */
#define DPRL_ZIG_LAYERS 128
typedef struct fast_normal {
  fast_rng r;
  double x[DPRL_ZIG_LAYERS + 1]; /* the layers' right edges, x[0] the base's */
  double ratio[DPRL_ZIG_LAYERS]; /* x[i + 1] / x[i] */
} fast_normal;
void dprl_mdpv_normal_init(fast_normal *g, const uint64_t key[4]);
double dprl_mdpv_normal(fast_normal *g);

/* The first j in [0, n) with u < cum[j] (cum rises to cum[n-1] = 1). */
static inline int64_t pick(const double *cum, int64_t n, double u) {
  if (n <= 16) { /* a few actions: count the steps below u, without branches */
    int64_t j = 0;
    for (int64_t i = 0; i < n - 1; i++) j += u >= cum[i];
    return j;
  }
  int64_t lo = 0, hi = n - 1;
  while (lo < hi) {
    int64_t mid = lo + (hi - lo) / 2;
    if (u < cum[mid]) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}

enum { TO_END = -1, TO_CENSORED = -2, TO_SPREAD = -3 };

typedef struct world {
  int64_t S, A;
  int64_t *row;   /* [S*A + 1]: pair sa's outcomes are [row[sa], row[sa+1]) */
  int32_t *to;    /* a next state, or TO_* */
  double *cum;    /* their cumulative probabilities */
  double *aprob;  /* the same law as an alias table (Walker, Vose): per pair, outcome */
  int32_t *alias; /* i of k kept when frac(u k) < aprob[i], else alias[i] (pair-relative) */
  double *act;    /* [S*A]: per state, the behaviour's cumulative probabilities */
  double *start;  /* [S] cumulative */
  double *gain;   /* [S*A]: r(s,a) - reward_center */
  int64_t episodes, steps;
  dprl_mdpv_est truth; /* the world as an MDP, for its values */
} world;

/* A table from keys to sums, open addressing (linear probes); used lists
** the occupied slots so that clearing costs what was used. */
typedef struct table {
  uint64_t *key; /* key + 1; 0: empty */
  double *val;
  uint32_t *used;
  size_t cap, n;
} table;

static inline size_t slot_of(const table *t, uint64_t k) {
  size_t i = (size_t)((k * UINT64_C(0x9E3779B97F4A7C15)) >> 17) & (t->cap - 1);
  while (t->key[i] && t->key[i] != k + 1) i = (i + 1) & (t->cap - 1);
  return i;
}

/* The sums of one drawn log, laid out as the release's parts. */
enum { K_START, K_COUNT, K_TOTAL, K_END, K_CELL, K_REWARD, K_CENSORED };
typedef struct sums {
  double *start, *counts, *totals, *ends, *reward, *censored; /* counts dense, totals/ends sparse */
  table cells;  /* sparse: key sa * S + s' */
  table ep;     /* sparse: one episode's entries, key kind << 58 | index (a clip applies) */
  /* dense, a clip applies: the sums are one block (start, counts, reward,
  ** censored in that order); epx has the same layout for one episode's
  ** entries, touched lists its entries (an entry may repeat: harmless) */
  double *block, *epx;
  size_t *touched, n_touched;
  double norm2; /* its squared norm, rewards in units of (rmax - rmin) / 2 */
  int64_t clipped;
} sums;

/* The release of one drawn log: a model like m whose numbers are the
** log's sums plus the release's noise (the sparse cells above the
** threshold kept).  Its arrays live in r, whose rows point into y. */
typedef struct released {
  dprl_mdpv_model m;
  const double **rows; /* counts [S*A]; reward_sums, totals, ends, censored [S] each */
  uint64_t *keys;      /* sparse: the drawn cells' keys, sorted */
  size_t cap_keys;
  int32_t *next;
  double *count;
  int64_t *cell_row;
} released;

/* Room for one log of episodes of at most steps steps of release m. */
int dprl_mdpv_sums_init(sums *y, const dprl_mdpv_model *m, int64_t steps, dprl_error *err);
void dprl_mdpv_sums_free(sums *y);
/* One log of w->episodes episodes drawn from w under its behaviour, each
** clipped as the release m was, into y. */
int dprl_mdpv_draw_log(const world *w, const dprl_mdpv_model *m, sums *y, fast_rng *r,
                       dprl_cancel *cancel, dprl_error *err);
/* y's sums plus the release's noise, released as m was, into r. */
int dprl_mdpv_release_log(const dprl_mdpv_model *m, sums *y, fast_normal *g, released *r,
                          dprl_cancel *cancel, dprl_error *err);
void dprl_mdpv_released_free(released *r);
/* x[i] += sd Z for n normals of g (nothing when sd is 0). */
void dprl_mdpv_add_noise(fast_normal *g, double *x, size_t n, double sd);
/* y's sums added to f, laid out as the numbers of a model like m: start,
** counts (or totals, ends and m's kept cells), reward sums, censored. */
void dprl_mdpv_sums_add(const dprl_mdpv_model *m, const sums *y, double *f);

#endif
