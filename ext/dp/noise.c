/*
** noise.c: the only source of randomness in dprl (ALGORITHMS.md §6).
**
** Generator: the ChaCha20 block function of RFC 8439 §2.3 run as a
** keystream (key, 32-bit block counter, 96-bit nonce).  Samplers: the exact
** discrete Laplace and discrete Gaussian of Canonne, Kamath, Steinke, "The
** Discrete Gaussian for Differential Privacy" (2020), Algorithms 1-3, in
** integer arithmetic only: no floating point touches a released sample, so
** no rounding artefact can leak the data (Mironov 2012).
*/
#include "dp/noise.h"

#include <errno.h>
#include <math.h>
#include <string.h>
#include <sys/random.h>

__extension__ typedef unsigned __int128 u128;

/* Largest noise scale in grid steps of dprl_release_gaussian/_laplace
** (dprl_release_gaussian_steps goes to DPRL_GAUSS_STEPS_MAX), and the
** largest discrete Gaussian scale whose acceptance exponent fits one
** 128-bit fraction (see dprl_discrete_gaussian); with 2^26 steps below the
** public scale bound (DPRL_GRID_BITS) it leaves a factor 2 of slack. */
#define SCALE_MAX ((uint64_t)1 << 27)

/* ---------------------------------------------------------------------- */
/* ChaCha20 (RFC 8439 §2.1-2.3)                                            */

/* Key material (the key, keystream blocks, the block function's working
** state) is wiped once per use of a generator, by dprl_rng_wipe: the
** struct with explicit_bzero (which the compiler may not drop as a dead
** store), then the stack below the caller, where the block function's
** registers may have been spilled (burn_stack).  Nothing is wiped per
** block: the state lives in registers, and a wipe per block cost more
** than the block. */
static void wipe(void *p, size_t n) { explicit_bzero(p, n); }

/* Deeper than any call chain from a generator's owner down to the block
** function (a few hundred bytes of frames and spills). */
#define BURN_BYTES 8192

/* noinline: the array must be a frame of its own, below the caller's,
** over the stack that the calls made through the generator used. */
__attribute__((noinline)) static void burn_stack(void) {
  unsigned char scratch[BURN_BYTES];
  explicit_bzero(scratch, sizeof scratch);
  __asm__ __volatile__("" : : "r"(scratch) : "memory"); /* keep the frame */
}

#define ROTL(x, n) (((x) << (n)) | ((x) >> (32 - (n))))
/* RFC 8439 §2.1: the quarter round on four words (scalars or vectors of
** words, one lane per block) held in registers. */
#define QR(a, b, c, d)                   \
  do {                                   \
    a += b; d ^= a; d = ROTL(d, 16);     \
    c += d; b ^= c; b = ROTL(b, 12);     \
    a += b; d ^= a; d = ROTL(d, 8);      \
    c += d; b ^= c; b = ROTL(b, 7);      \
  } while (0)
/* 20 rounds: 10 column + diagonal pairs */
#define ROUNDS(x)                                                        \
  for (int r_ = 0; r_ < 10; r_++) {                                      \
    QR(x##0, x##4, x##8, x##12); QR(x##1, x##5, x##9, x##13);            \
    QR(x##2, x##6, x##10, x##14); QR(x##3, x##7, x##11, x##15);          \
    QR(x##0, x##5, x##10, x##15); QR(x##1, x##6, x##11, x##12);          \
    QR(x##2, x##7, x##8, x##13); QR(x##3, x##4, x##9, x##14);            \
  }

enum { C0 = 0x61707865, C1 = 0x3320646e, C2 = 0x79622d32, C3 = 0x6b206574 };

/* RFC 8439 §2.3: constants | key | counter | nonce, 20 rounds, then the
** input state added word by word.  One block. */
static inline __attribute__((always_inline)) void
chacha20_block(const uint32_t key[8], uint32_t counter, const uint32_t nonce[3],
               uint32_t out[16]) {
  uint32_t x0 = C0, x1 = C1, x2 = C2, x3 = C3;
  uint32_t x4 = key[0], x5 = key[1], x6 = key[2], x7 = key[3];
  uint32_t x8 = key[4], x9 = key[5], x10 = key[6], x11 = key[7];
  uint32_t x12 = counter, x13 = nonce[0], x14 = nonce[1], x15 = nonce[2];
  ROUNDS(x)
  out[0] = x0 + C0; out[1] = x1 + C1; out[2] = x2 + C2; out[3] = x3 + C3;
  for (int i = 0; i < 8; i++) out[4 + i] = key[i];
  out[4] += x4; out[5] += x5; out[6] += x6; out[7] += x7;
  out[8] += x8; out[9] += x9; out[10] += x10; out[11] += x11;
  out[12] = x12 + counter; out[13] = x13 + nonce[0];
  out[14] = x14 + nonce[1]; out[15] = x15 + nonce[2];
}

/* Sixteen consecutive blocks, counter .. counter + 15 (the caller ensures
** the counter does not wrap in between), stored word-major:
** out[16 i + j] = word i of block j.  Each vector holds one word of L
** blocks (lane j = block j), so the rounds are the scalar ones, L lanes
** wide, and the words are stored as the rounds leave them (no transpose):
** rng_u32 reads word p of the stream at out[16 (p % 16) + p / 16].
** Three widths of one body: 4 lanes (SSE2 on x86-64, NEON on arm64, the
** portable one), 8 (AVX2) and 16 (AVX-512F, whose 32 registers hold the
** whole state and whose vprold is the rotation).  blocks16() picks the
** widest the CPU runs; each is checked against chacha20_block by the unit
** tests. */
#define DEFINE_BLOCKS16(name, V, L, attr)                                 \
  attr static void name(const uint32_t key[8], uint32_t counter,          \
                        const uint32_t nonce[3], uint32_t out[256]) {     \
    const V z = {0};                                                      \
    for (uint32_t g = 0; g < 16; g += L) {                                \
      V ctr = z;                                                          \
      for (uint32_t j = 0; j < L; j++) ctr[j] = counter + g + j;          \
      V y0 = z + C0, y1 = z + C1, y2 = z + C2, y3 = z + C3;               \
      V y4 = z + key[0], y5 = z + key[1], y6 = z + key[2];                \
      V y7 = z + key[3], y8 = z + key[4], y9 = z + key[5];                \
      V y10 = z + key[6], y11 = z + key[7], y12 = ctr;                    \
      V y13 = z + nonce[0], y14 = z + nonce[1], y15 = z + nonce[2];       \
      ROUNDS(y)                                                           \
      y0 += C0; y1 += C1; y2 += C2; y3 += C3;                             \
      y4 += key[0]; y5 += key[1]; y6 += key[2]; y7 += key[3];             \
      y8 += key[4]; y9 += key[5]; y10 += key[6]; y11 += key[7];           \
      y12 += ctr; y13 += nonce[0]; y14 += nonce[1]; y15 += nonce[2];      \
      const V w[16] = {y0, y1, y2,  y3,  y4,  y5,  y6,  y7,               \
                       y8, y9, y10, y11, y12, y13, y14, y15};             \
      for (int i = 0; i < 16; i++) memcpy(out + 16 * i + g, &w[i], sizeof w[i]); \
    }                                                                     \
  }

typedef uint32_t v4u32 __attribute__((vector_size(16)));
DEFINE_BLOCKS16(blocks16_v4, v4u32, 4, )

typedef void blocks16_fn(const uint32_t key[8], uint32_t counter,
                         const uint32_t nonce[3], uint32_t out[256]);

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define DPRL_X86_DISPATCH 1
typedef uint32_t v8u32 __attribute__((vector_size(32)));
typedef uint32_t v16u32 __attribute__((vector_size(64)));
DEFINE_BLOCKS16(blocks16_v8, v8u32, 8, __attribute__((target("avx2"))))
DEFINE_BLOCKS16(blocks16_v16, v16u32, 16, __attribute__((target("avx512f"))))
#endif

/* Widths: 0 portable (4 lanes), 1 AVX2 (8), 2 AVX-512F (16); -1 if this
** CPU cannot run the width. */
static blocks16_fn *blocks16_at(int width) {
  if (width == 0) return blocks16_v4;
#ifdef DPRL_X86_DISPATCH
  __builtin_cpu_init(); /* idempotent; needed before constructors have run */
  if (width == 1 && __builtin_cpu_supports("avx2")) return blocks16_v8;
  if (width == 2 && __builtin_cpu_supports("avx512f")) return blocks16_v16;
#endif
  return NULL;
}

/* The widest width this CPU runs, chosen once (a relaxed atomic: every
** thread that races here computes the same pointer). */
static blocks16_fn *blocks16(void) {
  static blocks16_fn *chosen;
  blocks16_fn *f = __atomic_load_n(&chosen, __ATOMIC_RELAXED);
  if (!f) {
    for (int w = 2; w >= 0 && !f; w--) f = blocks16_at(w);
    __atomic_store_n(&chosen, f, __ATOMIC_RELAXED);
  }
  return f;
}

/* Test-only hooks (declared in tests/unit/test_dp_noise_stream.c, not in noise.h). */
void dprl_chacha20_block_for_test(const uint32_t key[8], uint32_t counter,
                                  const uint32_t nonce[3], uint32_t out[16]);
void dprl_chacha20_block_for_test(const uint32_t key[8], uint32_t counter,
                                  const uint32_t nonce[3], uint32_t out[16]) {
  chacha20_block(key, counter, nonce, out);
}
/* Sixteen blocks at the given width, word-major; 0 if the CPU lacks it. */
int dprl_chacha20_blocks16_for_test(int width, const uint32_t key[8], uint32_t counter,
                                    const uint32_t nonce[3], uint32_t out[256]);
int dprl_chacha20_blocks16_for_test(int width, const uint32_t key[8], uint32_t counter,
                                    const uint32_t nonce[3], uint32_t out[256]) {
  blocks16_fn *f = blocks16_at(width);
  if (f) f(key, counter, nonce, out);
  return f != NULL;
}

/* The next blocks of the keystream into rng->block: sixteen at a time, one
** at a time over the last fifteen before the 32-bit counter wraps. */
static __attribute__((noinline)) void refill(dprl_rng *rng) {
  uint32_t n = 16;
  if (rng->counter > UINT32_MAX - 15) {
    uint32_t one[16];
    n = 1;
    chacha20_block(rng->key, rng->counter, rng->nonce, one);
    for (int i = 0; i < 16; i++) rng->block[16 * i] = one[i]; /* word-major */
  } else {
    blocks16()(rng->key, rng->counter, rng->nonce, rng->block);
  }
  rng->pos = 0;
  rng->len = (int)(16 * n);
  /* After 2^32 blocks the counter wraps: carry into the nonce (a 96-bit
  ** extension of the counter) so that no (key, counter, nonce) block is
  ** ever produced twice. */
  rng->counter += n;
  if (rng->counter == 0 && ++rng->nonce[0] == 0 && ++rng->nonce[1] == 0)
    ++rng->nonce[2];
}

static void rng_reset(dprl_rng *rng, int seeded) {
  memset(rng->nonce, 0, sizeof rng->nonce);
  rng->counter = 0;
  rng->pos = rng->len = 0; /* first draw generates block 0 */
  rng->seeded = seeded;
}

int dprl_rng_init_secure(dprl_rng *rng, dprl_error *err) {
  unsigned char buf[32];
  size_t got = 0;
  memset(rng, 0, sizeof *rng);
  while (got < sizeof buf) {
    ssize_t r = getrandom(buf + got, sizeof buf - got, 0);
    if (r < 0 && errno == EINTR) continue; /* interrupted: retry */
    if (r <= 0) {
      int e = r < 0 ? errno : EIO;
      wipe(buf, sizeof buf);
      return dprl_fail(err, DPRL_EINVAL,
                       "noise: getrandom() failed to key the generator: %s",
                       strerror(e));
    }
    got += (size_t)r; /* short read: ask for the rest */
  }
  for (int i = 0; i < 8; i++) /* little-endian words, as RFC 8439 §2.3 */
    rng->key[i] = (uint32_t)buf[4 * i] | (uint32_t)buf[4 * i + 1] << 8 |
                  (uint32_t)buf[4 * i + 2] << 16 | (uint32_t)buf[4 * i + 3] << 24;
  wipe(buf, sizeof buf);
  rng_reset(rng, 0);
  return DPRL_OK;
}

void dprl_rng_init_seeded(dprl_rng *rng, uint64_t seed, uint64_t stream) {
  memset(rng, 0, sizeof *rng);
  rng->key[0] = (uint32_t)seed;
  rng->key[1] = (uint32_t)(seed >> 32);
  rng->key[2] = (uint32_t)stream;
  rng->key[3] = (uint32_t)(stream >> 32);
  /* Fixed domain words ("dprl-seeded-v1") keep seeded keys apart from any
  ** other use of ChaCha20 with the same 128 bits. */
  rng->key[4] = 0x6c727064; /* "dprl" */
  rng->key[5] = 0x6565732d; /* "-see" */
  rng->key[6] = 0x2d646564; /* "ded-" */
  rng->key[7] = 0x00003176; /* "v1"   */
  rng_reset(rng, 1);
}

void dprl_rng_wipe(dprl_rng *rng) {
  wipe(rng, sizeof *rng);
  burn_stack();
}

static inline uint32_t rng_u32(dprl_rng *rng) {
  if (__builtin_expect(rng->pos >= rng->len, 0)) refill(rng);
  int p = rng->pos++; /* word p % 16 of block p / 16, stored word-major */
  return rng->block[(p & 15) << 4 | p >> 4];
}

static inline uint64_t rng_u64(dprl_rng *rng) {
  uint64_t lo = rng_u32(rng);
  return (uint64_t)rng_u32(rng) << 32 | lo;
}

uint32_t dprl_rng_u32(dprl_rng *rng) { return rng_u32(rng); }
uint64_t dprl_rng_u64(dprl_rng *rng) { return rng_u64(rng); }

uint64_t dprl_rng_below(dprl_rng *rng, uint64_t n) {
  if (n <= 1) return 0; /* n == 0 is a caller error; answer 0 */
  /* A power of two divides 2^64: nothing is rejected and x % n is a mask
  ** (the same value, without a division; the exact trials draw below 2, 4,
  ** ... often). */
  if (!(n & (n - 1))) return rng_u64(rng) & (n - 1);
  /* Reject the lowest 2^64 mod n values: the rest is a whole number of
  ** copies of [0, n), so x % n is exactly uniform.  That bound is below n,
  ** so it is computed (a division) only for the rare x < n. */
  for (;;) {
    uint64_t x = rng_u64(rng);
    if (x >= n || x >= (0 - n) % n) return x % n;
  }
}

double dprl_rng_unit(dprl_rng *rng) {
  return (double)(rng_u64(rng) >> 11) * 0x1.0p-53;
}

void dprl_rng_normals(dprl_rng *rng, double *out, size_t n) {
  size_t i = 0;
  while (i < n) {
    double u = 2 * dprl_rng_unit(rng) - 1, v = 2 * dprl_rng_unit(rng) - 1, s = u * u + v * v;
    if (s >= 1 || s == 0) continue; /* a point of the unit disc, not its centre */
    double f = sqrt(-2 * log(s) / s);
    out[i++] = u * f;
    if (i < n) out[i++] = v * f;
  }
}

void dprl_rng_shuffle_u32(dprl_rng *rng, uint32_t *v, uint64_t n) {
  for (uint64_t i = n; i > 1; i--) { /* Fisher-Yates, from the top */
    uint64_t j = dprl_rng_below(rng, i);
    uint32_t tmp = v[i - 1];
    v[i - 1] = v[j];
    v[j] = tmp;
  }
}

/* ---------------------------------------------------------------------- */
/* Exact Bernoulli trials (CKS 2020 Algorithm 1), integers only            */

/* Uniform on [0, d), d >= 1, by the same rejection as dprl_rng_below. */
static u128 below128(dprl_rng *rng, u128 d) {
  if (d <= UINT64_MAX) return dprl_rng_below(rng, (uint64_t)d);
  for (;;) {
    u128 hi = rng_u64(rng); /* the high word first (as dprl has always drawn) */
    u128 x = hi << 64 | rng_u64(rng);
    if (x >= d || x >= (0 - d) % d) return x % d; /* the bound is below d */
  }
}

/* Bernoulli(n/d), 0 <= n <= d, d >= 1. */
static int bern_frac(dprl_rng *rng, u128 n, u128 d) {
  return below128(rng, d) < n;
}

/* Bernoulli(n/(d*k)).  If d*k would overflow, use Bern(n/d) AND Bern(1/k)
** (independent, so the product of the probabilities): still exact. */
static int bern_frac_over_k(dprl_rng *rng, u128 n, u128 d, uint64_t k) {
  u128 dk;
  if (!__builtin_mul_overflow(d, (u128)k, &dk)) return bern_frac(rng, n, dk);
  return bern_frac(rng, n, d) && dprl_rng_below(rng, k) == 0;
}

/* CKS 2020 Algorithm 1, gamma = n/d in [0, 1]: count K successes of
** Bernoulli(gamma/K); P(K odd) = exp(-gamma).  K stays tiny (P(K > k) <=
** 1/k!), so the 64-bit counter cannot wrap. */
static int bern_exp_unit(dprl_rng *rng, u128 n, u128 d) {
  uint64_t k = 1;
  while (bern_frac_over_k(rng, n, d, k)) k++;
  return (int)(k & 1);
}

/* CKS 2020 Algorithm 1, gamma = n/d > 1: exp(-gamma) = exp(-1)^floor(gamma)
** * exp(-frac(gamma)), a product of independent trials (stop at the first
** failure). */
static int bern_exp(dprl_rng *rng, u128 n, u128 d) {
  u128 whole = n / d;
  for (u128 i = 0; i < whole; i++)
    if (!bern_exp_unit(rng, 1, 1)) return 0;
  return bern_exp_unit(rng, n % d, d);
}

/* ---------------------------------------------------------------------- */
/* Discrete Laplace and discrete Gaussian (CKS 2020 Algorithms 2 and 3)    */

/* CKS 2020 Algorithm 2 with s = 1: P(x) proportional to exp(-|x|/t).
** X = U + t*V with U uniform on [0, t) accepted with prob exp(-U/t) and V
** geometric (P(V = v) prop. to exp(-v)); a fair sign, rejecting "-0" so that 0
** is not counted twice. */
int64_t dprl_discrete_laplace(dprl_rng *rng, uint64_t t) {
  if (t == 0) t = 1; /* caller error; more noise rather than none */
  for (;;) {
    uint64_t u = dprl_rng_below(rng, t);
    if (!bern_exp_unit(rng, u, t)) continue;
    uint64_t v = 0;
    while (bern_exp_unit(rng, 1, 1)) v++;
    /* |x| must fit in int64.  Rejecting larger candidates truncates the
    ** distribution there; for t <= 2^40 + 1 that needs V >= 2^23 - 1, which
    ** has probability below exp(-2^22). */
    if (v > ((uint64_t)INT64_MAX - u) / t) continue;
    uint64_t x = u + t * v;
    int negative = (int)(rng_u32(rng) & 1);
    if (negative && x == 0) continue;
    return negative ? -(int64_t)x : (int64_t)x;
  }
}

/* Bernoulli(exp(-(r/v)^2 / 2)) for 0 <= r < v: CKS 2020 Algorithm 1 with
** gamma = r^2 / (2 v^2) in [0, 1/2).  Its trials Bernoulli(gamma / k) are
** run as Bernoulli(r/v) AND Bernoulli(r/(2 v k)), independent, so that the
** probabilities multiply and no number is larger than 2 v k (never r^2). */
static int bern_exp_half_square(dprl_rng *rng, u128 r, u128 v) {
  uint64_t k = 1;
  while (bern_frac(rng, r, v) && bern_frac_over_k(rng, r, 2 * v, k)) k++;
  return (int)(k & 1);
}

/* Bernoulli(exp(-(D/V)^2 / 2)) without forming D^2: with D = q V + r,
** (D/V)^2 / 2 = q^2/2 + q r/V + (r/V)^2/2, and exp of a sum is the product
** of three independent trials (stop at the first failure). */
static int bern_exp_half_square_big(dprl_rng *rng, u128 D, u128 V) {
  u128 q = D / V, r = D % V;
  return bern_exp(rng, q * q, 2) && bern_exp(rng, q * r, V) &&
         bern_exp_half_square(rng, r, V);
}

/* CKS 2020 Algorithm 3 with sigma = s (an integer), t = floor(sigma) + 1:
** draw Y ~ discrete Laplace(t), accept with probability
**   exp(-(|Y| - sigma^2/t)^2 / (2 sigma^2)) = exp(-(D/V)^2 / 2),
**   D = | |Y| t - s^2 |,  V = s t,
** an exact rational exponent.  Requires 1 <= s <= DPRL_GAUSS_STEPS_MAX =
** 2^40 (returns INT64_MIN, never a valid sample, otherwise).
**
** Overflow bound, s <= 2^40, t = s + 1:
**   |Y| <= 64 t                    (else rejected, see below)
**   |Y| t <= 64 t^2 < 2^87,  s^2 <= 2^80, so D < 2^87;  V < 2^81.
** For s <= 2^27 (SCALE_MAX) the exponent is one fraction D^2 / (2 V^2) with
** D^2 < 2^122 and 2 V^2 < 2^110; above that D^2 could overflow 128 bits, so
** the trial is split as in bern_exp_half_square_big (D/V <= 64 t/s <= 128,
** so q^2 <= 2^14, q r < 2^88).  The two forms accept with the same
** probability; the first is kept where it fits so that seeded streams of
** small scales are unchanged.
** Rejecting |Y| > 64 t: there |Y| - s^2/t > 63 t > 63 s, so the true
** acceptance probability is below exp(-63^2/2) < exp(-1900); the output is
** the discrete Gaussian conditioned on |x| <= 64 t, a change in total
** variation far below exp(-1900). */
static int64_t discrete_gaussian(dprl_rng *rng, uint64_t s, int one_fraction) {
  if (s == 0) s = 1; /* caller error; more noise rather than none */
  if (s > DPRL_GAUSS_STEPS_MAX) return INT64_MIN;
  uint64_t t = s + 1;
  u128 s2 = (u128)s * s, V = (u128)s * t;
  for (;;) {
    int64_t y = dprl_discrete_laplace(rng, t);
    uint64_t a = y < 0 ? 0 - (uint64_t)y : (uint64_t)y;
    if (a > 64 * t) continue;
    u128 at = (u128)a * t;
    u128 D = at >= s2 ? at - s2 : s2 - at;
    if (one_fraction ? bern_exp(rng, D * D, 2 * V * V)
                     : bern_exp_half_square_big(rng, D, V))
      return y;
  }
}

int64_t dprl_discrete_gaussian(dprl_rng *rng, uint64_t s) {
  return discrete_gaussian(rng, s, s <= SCALE_MAX);
}

/* Test-only hook (declared in tests/unit/test_dp_noise_samplers.c): the split trial at
** any scale, so that its exact pmf can be checked where the pmf is small. */
int64_t dprl_discrete_gaussian_split_for_test(dprl_rng *rng, uint64_t s);
int64_t dprl_discrete_gaussian_split_for_test(dprl_rng *rng, uint64_t s) {
  return discrete_gaussian(rng, s, 0);
}

/* ---------------------------------------------------------------------- */
/* Grid release                                                            */

double dprl_grid_bits(double scale_upper, int bits) {
  if (!(isfinite(scale_upper) && scale_upper > 0)) return NAN;
  int e;
  /* scale_upper = m 2^e with m in [0.5, 1): ceil(log2) is e - 1 when m is
  ** exactly 0.5 (a power of two) and e otherwise: no log() rounding. */
  double m = frexp(scale_upper, &e);
  int c = (m == 0.5 ? e - 1 : e) - bits;
  if (c < -1074) c = -1074; /* finest double grid; finer is never needed */
  return ldexp(1.0, c);
}

double dprl_grid_for(double scale_upper) {
  return dprl_grid_bits(scale_upper, DPRL_GRID_BITS);
}

static int check_grid(double g, dprl_error *err) {
  int e;
  if (isfinite(g) && g > 0 && frexp(g, &e) == 0.5) return DPRL_OK;
  return dprl_fail(err, DPRL_EINVAL,
                   "noise: grid g must be a positive power of two, got %.17g", g);
}

/* The noise scale in grid steps, rounded UP: s g >= scale, 1 <= s <= 2^27. */
static int grid_steps(double scale, const char *name, double g, uint64_t *s,
                      dprl_error *err) {
  if (!(isfinite(scale) && scale >= 0))
    return dprl_fail(err, DPRL_EINVAL,
                     "noise: %s must be finite and >= 0, got %.17g", name, scale);
  double r = scale / g; /* exact for a power-of-two g barring underflow */
  if (!(r <= (double)SCALE_MAX))
    return dprl_fail(err, DPRL_EINVAL,
                     "noise: %s = %.17g is more than 2^27 grid steps of g = "
                     "%.17g; use a coarser grid", name, scale, g);
  uint64_t n = (uint64_t)ceil(r);
  if ((double)n * g < scale) n++; /* never round the scale down */
  if (n < 1) n = 1;               /* scale 0 still gets one step of noise */
  if (n > SCALE_MAX)
    return dprl_fail(err, DPRL_EINVAL,
                     "noise: %s = %.17g is more than 2^27 grid steps of g = "
                     "%.17g; use a coarser grid", name, scale, g);
  *s = n;
  return DPRL_OK;
}

/* g * (round(value / g) + Z), Z drawn with s grid steps (checked). */
static int draw(dprl_rng *rng, double value, uint64_t s, double g, int gaussian,
                double *out, dprl_error *err) {
  if (!isfinite(value))
    return dprl_fail(err, DPRL_EINVAL,
                     "noise: value must be finite, got %.17g", value);
  double q = value / g; /* exact for a power-of-two g barring underflow */
  if (!(fabs(q) < 0x1.0p52))
    return dprl_fail(err, DPRL_EINVAL,
                     "noise: |value / g| must be < 2^52 for an exact grid, got "
                     "value %.17g with g = %.17g", value, g);
  int64_t k = llround(q); /* half away from zero; |q| < 2^52 fits */
  int64_t z = gaussian ? dprl_discrete_gaussian(rng, s)
                       : dprl_discrete_laplace(rng, s);
  /* |z| <= 64 (s + 1) <= 2^47, so |k + z| < 2^53: exact as a double, and
  ** g * (k + z) is exact unless it overflows.  Checking that is
  ** post-processing of the noisy integer k + z, so it leaks nothing beyond
  ** the release itself. */
  double o = g * (double)(k + z);
  if (!isfinite(o))
    return dprl_fail(err, DPRL_EINVAL,
                     "noise: released value overflows a double (g = %.17g)", g);
  *out = o;
  return DPRL_OK;
}

static int release(dprl_rng *rng, double value, double scale, double g,
                   int gaussian, double *out, dprl_error *err) {
  const char *name = gaussian ? "sigma" : "b";
  uint64_t s = 0;
  int rc = check_grid(g, err);
  if (rc == DPRL_OK) rc = grid_steps(scale, name, g, &s, err);
  if (rc != DPRL_OK) return rc;
  return draw(rng, value, s, g, gaussian, out, err);
}

int dprl_release_gaussian_steps(dprl_rng *rng, double value, uint64_t s, double g,
                                double *out, dprl_error *err) {
  int rc = check_grid(g, err);
  if (rc != DPRL_OK) return rc;
  if (s < 1 || s > DPRL_GAUSS_STEPS_MAX)
    return dprl_fail(err, DPRL_EINVAL,
                     "noise: the scale must be 1 to 2^40 grid steps, got %llu",
                     (unsigned long long)s);
  return draw(rng, value, s, g, 1, out, err);
}

int dprl_release_gaussian(dprl_rng *rng, double value, double sigma, double g,
                          double *out, dprl_error *err) {
  return release(rng, value, sigma, g, 1, out, err);
}

int dprl_release_laplace(dprl_rng *rng, double value, double b, double g,
                         double *out, dprl_error *err) {
  return release(rng, value, b, g, 0, out, err);
}
