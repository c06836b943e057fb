/*
** noise.h: the only source of randomness in dprl (ALGORITHMS.md §6).
**
** - dprl_rng: a ChaCha20 keystream (RFC 8439 block function), keyed from
**   the kernel's CSPRNG (getrandom) or, for tests and examples only, from a
**   user seed (the result is then reproducible and marked "seeded").
** - Exact integer samplers (Canonne, Kamath, Steinke 2020): discrete Laplace
**   and discrete Gaussian, using only integer arithmetic and fair bits, so
**   no floating-point artefact can leak the data (Mironov 2012).
** - Grid release: the deterministic value is rounded to a power-of-two grid
**   g and an integer multiple of g is added.  g is chosen by the caller from
**   PUBLIC quantities (an upper bound on the noise scale), never from a
**   data-dependent scale; the scale in grid units is rounded UP.
*/
#ifndef DPRL_NOISE_H
#define DPRL_NOISE_H

#include <stdint.h>

#include "base/core.h"

/* Bits of resolution below the public upper bound of the noise scale:
** g = 2^(ceil(log2(scale_upper)) - DPRL_GRID_BITS). */
#define DPRL_GRID_BITS 26

typedef struct dprl_rng {
  uint32_t key[8];
  uint32_t nonce[3];
  uint32_t counter;
  uint32_t block[256]; /* up to sixteen keystream blocks, word-major */
  int pos, len;       /* next unused word of block; len = exhausted */
  int seeded;
} dprl_rng;

/* Key from getrandom(); DPRL_EINVAL with a message if the kernel refuses. */
int dprl_rng_init_secure(dprl_rng *rng, dprl_error *err);
/* The seeded streams: one per use of a seed, so that two mechanisms (or
** two parts of one) given the same seed never share a keystream.  A use
** with several independent parts adds its part number below bit 56. */
#define DPRL_STREAM_LSW ((uint64_t)0)     /* dp_lsw */
#define DPRL_STREAM_LSL ((uint64_t)1)     /* dp_lsl */
#define DPRL_STREAM_PREFIX ((uint64_t)3)  /* dp_prefix_stable */
#define DPRL_STREAM_OPE ((uint64_t)7)     /* dp_is_value */
#define DPRL_STREAM_EXPERT ((uint64_t)22) /* dp_expert_policy */
#define DPRL_STREAM_Q_LEARN ((uint64_t)1 << 56)
#define DPRL_STREAM_Q_NOISE ((uint64_t)2 << 56) /* | action | paths so far << 21 */
#define DPRL_STREAM_MDP ((uint64_t)3 << 56)     /* dp_mdp */
#define DPRL_STREAM_MDP_BOOTSTRAP ((uint64_t)5 << 56) /* dp_mdp_value's error bars */
/* Reproducible stream from a user seed; stream is one of DPRL_STREAM_*. */
void dprl_rng_init_seeded(dprl_rng *rng, uint64_t seed, uint64_t stream);
/* Wipe key material. */
void dprl_rng_wipe(dprl_rng *rng);

uint32_t dprl_rng_u32(dprl_rng *rng);
uint64_t dprl_rng_u64(dprl_rng *rng);
/* Uniform on [0, n), n >= 1, unbiased (rejection). */
uint64_t dprl_rng_below(dprl_rng *rng, uint64_t n);
/* Uniform double in [0,1) with 53 random bits: for shuffles and batch
** sampling only, never for released noise. */
double dprl_rng_unit(dprl_rng *rng);
/* n independent standard normal doubles (Marsaglia's polar method on
** dprl_rng_unit): for post-processing that resamples public noise, such
** as a parametric bootstrap; never for released noise. */
void dprl_rng_normals(dprl_rng *rng, double *out, size_t n);
/* Fisher-Yates shuffle of n indices in place. */
void dprl_rng_shuffle_u32(dprl_rng *rng, uint32_t *v, uint64_t n);

/* Largest discrete Gaussian scale, in grid steps, that the exact sampler
** accepts (dprl_discrete_gaussian, dprl_release_gaussian_steps). */
#define DPRL_GAUSS_STEPS_MAX ((uint64_t)1 << 40)

/* Exact samplers on the integers.
** Discrete Laplace: P(x) proportional to exp(-|x| / t), t >= 1.
** Discrete Gaussian: P(x) proportional to exp(-x^2 / (2 s^2)),
** 1 <= s <= DPRL_GAUSS_STEPS_MAX (INT64_MIN, never a sample, otherwise). */
int64_t dprl_discrete_laplace(dprl_rng *rng, uint64_t t);
int64_t dprl_discrete_gaussian(dprl_rng *rng, uint64_t s);

/* The power-of-two grid for a public upper bound on the noise scale
** (> 0, finite): 2^(ceil(log2(scale_upper)) - DPRL_GRID_BITS). */
double dprl_grid_for(double scale_upper);
/* The same with `bits` bits below the bound: the largest power of two g
** with scale_upper / g <= 2^bits (NAN unless scale_upper > 0 is finite). */
double dprl_grid_bits(double scale_upper, int bits);

/* Release value + Gaussian(0, sigma^2) on grid g: returns
** g * (round(value / g) + Z), Z ~ discrete Gaussian with s = ceil(sigma/g)
** (sigma rounded up, never down; s >= 1).  DPRL_EINVAL if value/g is too
** large for the grid to be exact (|value/g| >= 2^52) or sigma is not
** finite and >= 0. */
int dprl_release_gaussian(dprl_rng *rng, double value, double sigma, double g,
                          double *out, dprl_error *err);
/* Release value + g Z, Z ~ discrete Gaussian of scale s grid steps, for a
** caller that rounds its scale itself (1 <= s <= DPRL_GAUSS_STEPS_MAX;
** same value and grid checks as above). */
int dprl_release_gaussian_steps(dprl_rng *rng, double value, uint64_t s, double g,
                                double *out, dprl_error *err);
/* Same with Laplace(b): Z ~ discrete Laplace with t = ceil(b/g). */
int dprl_release_laplace(dprl_rng *rng, double value, double b, double g,
                         double *out, dprl_error *err);

#endif
