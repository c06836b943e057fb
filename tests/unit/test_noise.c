/*
** test_noise.c: unit tests of noise.c.  Every random test uses a FIXED seed
** (so it never flakes) and a bound derived from the distribution: 6 standard
** errors for means and second moments, and a chi-square goodness of fit
** accepted when its p-value is above 1e-6.
*/
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dp/noise.h"
#include "check.h"

/* Test-only hooks defined in noise.c (RFC 8439 block function; the
** discrete Gaussian with its acceptance trial split as for s > 2^27). */
void dprl_chacha20_block_for_test(const uint32_t key[8], uint32_t counter,
                                  const uint32_t nonce[3], uint32_t out[16]);
int dprl_chacha20_blocks16_for_test(int width, const uint32_t key[8], uint32_t counter,
                                    const uint32_t nonce[3], uint32_t out[256]);
int64_t dprl_discrete_gaussian_split_for_test(dprl_rng *rng, uint64_t s);

#define P_MIN 1e-6 /* chi-square tests fail below this p-value */
#define NSE 6.0    /* standard errors allowed for means and moments */

/* ---------------------------------------------------------------------- */
/* Statistics helpers                                                      */

/* Upper tail of the chi-square law, Q(df/2, x/2): series for the lower
** regularised gamma when x < a + 1, Lentz's continued fraction otherwise. */
static double chi2_sf(double df, double x) {
  double a = df / 2, y = x / 2;
  if (y <= 0) return 1.0;
  double lg = a * log(y) - y - lgamma(a);
  if (y < a + 1) {
    double term = 1 / a, sum = term, ap = a;
    for (int n = 0; n < 10000 && fabs(term) > fabs(sum) * 1e-16; n++) {
      ap += 1;
      term *= y / ap;
      sum += term;
    }
    return 1 - sum * exp(lg);
  }
  double b = y + 1 - a, c = 1e300, d = 1 / b, h = d;
  for (int i = 1; i < 10000; i++) {
    double an = -i * (i - a);
    b += 2;
    d = an * d + b;
    if (fabs(d) < 1e-300) d = 1e-300;
    c = b + an / c;
    if (fabs(c) < 1e-300) c = 1e-300;
    d = 1 / d;
    double del = d * c;
    h *= del;
    if (fabs(del - 1) < 1e-16) break;
  }
  return exp(lg) * h;
}

/* Chi-square p-value of observed counts against expected counts. */
static double chi2_pvalue(const double *obs, const double *expct, int k) {
  double stat = 0;
  for (int i = 0; i < k; i++)
    stat += (obs[i] - expct[i]) * (obs[i] - expct[i]) / expct[i];
  double p = chi2_sf(k - 1, stat);
  printf("#   chi-square %.2f on %d df, p = %.3g\n", stat, k - 1, p);
  return p;
}

/* Exact pmf on [-L, L] (the mass beyond is below 1e-17 of the total). */
typedef struct pmf {
  long L;
  double *p; /* p[x + L] */
  double var, m4;
} pmf;

static pmf pmf_make(int gaussian, double scale) {
  pmf d;
  d.L = gaussian ? (long)ceil(10 * scale) + 2 : (long)ceil(45 * scale) + 2;
  d.p = malloc((size_t)(2 * d.L + 1) * sizeof(double));
  double z = 0;
  for (long x = -d.L; x <= d.L; x++) {
    double w = gaussian ? exp(-(double)x * x / (2 * scale * scale))
                        : exp(-fabs((double)x) / scale);
    d.p[x + d.L] = w;
    z += w;
  }
  d.var = d.m4 = 0;
  for (long x = -d.L; x <= d.L; x++) {
    d.p[x + d.L] /= z;
    d.var += (double)x * x * d.p[x + d.L];
    d.m4 += (double)x * x * (double)x * x * d.p[x + d.L];
  }
  return d;
}

/* Mean and E[X^2] of samples from a law with mean 0, variance var and
** fourth moment m4: the estimators' standard errors are exact. */
static void check_moments(const char *label, const int64_t *xs, long n,
                          double var, double m4) {
  char what[160];
  double s1 = 0, s2 = 0;
  for (long i = 0; i < n; i++) {
    s1 += (double)xs[i];
    s2 += (double)xs[i] * (double)xs[i];
  }
  snprintf(what, sizeof what, "%s: mean 0 within 6 SE", label);
  CHECK_NEAR(s1 / n, 0.0, NSE * sqrt(var / n), what);
  snprintf(what, sizeof what, "%s: variance %.6g within 6 SE", label, var);
  CHECK_NEAR(s2 / n, var, NSE * sqrt((m4 - var * var) / n), what);
}

/* Goodness of fit: consecutive integers grouped greedily (left to right)
** into bins of expected count >= emin; the outermost bins take the tails. */
static void check_fit(const char *label, const int64_t *xs, long n,
                      const pmf *d) {
  long width = 2 * d->L + 1;
  int *bin = malloc((size_t)width * sizeof(int));
  double *expct = calloc((size_t)width, sizeof(double));
  double *obs = calloc((size_t)width, sizeof(double));
  double emin = n / 60.0 > 20 ? n / 60.0 : 20;
  int k = 0;
  for (long i = 0; i < width; i++) {
    bin[i] = k;
    expct[k] += n * d->p[i];
    if (expct[k] >= emin) k++;
  }
  if (k > 0 && expct[k] < emin) { /* merge the short last bin */
    for (long i = 0; i < width; i++)
      if (bin[i] == k) bin[i] = k - 1;
    expct[k - 1] += expct[k];
  } else {
    k++;
  }
  for (long i = 0; i < n; i++) {
    long x = xs[i] < -d->L ? -d->L : xs[i] > d->L ? d->L : (long)xs[i];
    obs[bin[x + d->L]] += 1;
  }
  char what[160];
  snprintf(what, sizeof what, "%s: chi-square fit to exact pmf, p > 1e-6",
           label);
  CHECK(k >= 3 && chi2_pvalue(obs, expct, k) > P_MIN, what);
  free(bin);
  free(expct);
  free(obs);
}

/* ---------------------------------------------------------------------- */
/* Generator                                                               */

static void test_chi2_helper(void) {
  /* df = 2: Q = exp(-x/2); df = 4: Q = exp(-x/2)(1 + x/2), exactly. */
  double x = 2 * log(1e6);
  CHECK_REL(chi2_sf(2, x), 1e-6, 1e-9, "chi2_sf df=2 at p=1e-6");
  CHECK_REL(chi2_sf(4, 3.0), exp(-1.5) * 2.5, 1e-9, "chi2_sf df=4 series");
  CHECK_REL(chi2_sf(4, 30.0), exp(-15) * 16, 1e-9, "chi2_sf df=4 fraction");
  CHECK_REL(chi2_sf(1, 3.841458820694124), 0.05, 1e-6, "chi2_sf df=1 0.05");
}

static void test_rfc8439(void) {
  /* RFC 8439 §2.3.2 */
  uint32_t key[8], out[16];
  const uint32_t nonce[3] = {0x09000000, 0x4a000000, 0x00000000};
  static const uint32_t want[16] = {
      0xe4e7f110, 0x15593bd1, 0x1fdd0f50, 0xc47120a3, 0xc7f4d1c7, 0x0368c033,
      0x9aaa2204, 0x4e6cd4c3, 0x466482d2, 0x09aa9f07, 0x05d7c214, 0xa2028bd9,
      0xd19c12b5, 0xb94e16de, 0xe883d0cb, 0x4e3c50a2};
  for (int i = 0; i < 8; i++)
    key[i] = (uint32_t)(4 * i) | (uint32_t)(4 * i + 1) << 8 |
             (uint32_t)(4 * i + 2) << 16 | (uint32_t)(4 * i + 3) << 24;
  dprl_chacha20_block_for_test(key, 1, nonce, out);
  for (int i = 0; i < 16; i++) {
    char what[80];
    snprintf(what, sizeof what, "RFC 8439 2.3.2 block word %d", i);
    CHECK(out[i] == want[i], what);
  }
}

/* Words of a byte string given in hex, little-endian (RFC 8439 prints the
** keystream as bytes). */
static void hex_words(const char *hex, uint32_t *w, int n) {
  for (int i = 0; i < n; i++) {
    uint32_t v = 0;
    for (int b = 0; b < 4; b++) {
      unsigned byte = 0;
      sscanf(hex + 8 * i + 2 * b, "%2x", &byte);
      v |= (uint32_t)byte << (8 * b);
    }
    w[i] = v;
  }
}

static void test_rfc8439_stream(void) {
  /* RFC 8439 Appendix A.1, test vectors #1 and #2: all-zero key and nonce,
  ** block counters 0 and 1, drawn through the generator (whose refill
  ** computes sixteen blocks at once). */
  static const char *want_hex =
      "76b8e0ada0f13d90405d6ae55386bd28bdd219b8a08ded1aa836efcc8b770dc7"
      "da41597c5157488d7724e03fb8d84a376a43b8f41518a11cc387b669b2ee6586"
      "9f07e7be5551387a98ba977c732d080dcb0f29a048e3656912c6533e32ee7aed"
      "29b721769ce64e43d57133b074d839d531ed1f28510afb45ace10a1f4b794d6f";
  uint32_t want[32];
  hex_words(want_hex, want, 32);
  dprl_rng a;
  dprl_rng_init_seeded(&a, 0, 0);
  memset(a.key, 0, sizeof a.key);
  int ok = 1;
  for (int i = 0; i < 32; i++) ok &= dprl_rng_u32(&a) == want[i];
  CHECK(ok, "RFC 8439 A.1 vectors #1 and #2 through the generator");

  /* RFC 8439 §2.3.2 (counter 1) through the generator */
  static const uint32_t want232[16] = {
      0xe4e7f110, 0x15593bd1, 0x1fdd0f50, 0xc47120a3, 0xc7f4d1c7, 0x0368c033,
      0x9aaa2204, 0x4e6cd4c3, 0x466482d2, 0x09aa9f07, 0x05d7c214, 0xa2028bd9,
      0xd19c12b5, 0xb94e16de, 0xe883d0cb, 0x4e3c50a2};
  dprl_rng_init_seeded(&a, 0, 0);
  for (int i = 0; i < 8; i++)
    a.key[i] = (uint32_t)(4 * i) | (uint32_t)(4 * i + 1) << 8 |
               (uint32_t)(4 * i + 2) << 16 | (uint32_t)(4 * i + 3) << 24;
  a.nonce[0] = 0x09000000;
  a.nonce[1] = 0x4a000000;
  a.counter = 1;
  ok = 1;
  for (int i = 0; i < 16; i++) ok &= dprl_rng_u32(&a) == want232[i];
  CHECK(ok, "RFC 8439 2.3.2 block through the generator");
  dprl_rng_wipe(&a);
}

/* The sixteen-block function, at every width this CPU runs, is sixteen
** calls of the one-block function (stored word-major), and the stream is
** blocks 0, 1, 2, ... whatever the refill size. */
static void test_blocks16(void) {
  dprl_rng a;
  uint32_t many[256], one[16];
  const uint32_t counters[] = {0, 1, 7, 0x7fffffffu, 0xffffffe0u, 0xffffffefu};
  int widths = 0;
  for (int w = 0; w < 3; w++) {
    int ok = 1, ran = 1;
    for (int c = 0; c < 6 && ran; c++) {
      dprl_rng_init_seeded(&a, 1000 + (uint64_t)c, 3);
      a.nonce[0] = 0x01020304u * (uint32_t)c;
      a.nonce[2] = 0xdeadbeefu;
      memset(many, 0, sizeof many);
      ran = dprl_chacha20_blocks16_for_test(w, a.key, counters[c], a.nonce, many);
      for (int j = 0; j < 16 && ran; j++) {
        dprl_chacha20_block_for_test(a.key, counters[c] + (uint32_t)j, a.nonce, one);
        for (int i = 0; i < 16; i++) ok &= one[i] == many[16 * i + j];
      }
    }
    if (!ran) continue; /* this CPU lacks the width */
    widths++;
    char what[80];
    snprintf(what, sizeof what, "sixteen-block ChaCha20 (width %d) = sixteen one-block calls", w);
    CHECK(ok, what);
  }
  CHECK(widths >= 1, "the portable sixteen-block function always runs");

  /* 40 blocks of a seeded stream (two and a half sixteen-block refills) */
  dprl_rng_init_seeded(&a, 77, 78);
  int ok = 1;
  for (uint32_t b = 0; b < 40; b++) {
    dprl_chacha20_block_for_test(a.key, b, a.nonce, one);
    for (int i = 0; i < 16; i++) ok &= dprl_rng_u32(&a) == one[i];
  }
  CHECK(ok, "stream = blocks 0..39 in order");

  /* Near the wrap: counters 2^32 - 3 .. 2^32 - 1 one block at a time,
  ** then block 0 of nonce + 1, sixteen at a time again. */
  const uint32_t nonce0[3] = {5, 0, 0}, nonce1[3] = {6, 0, 0};
  dprl_rng_init_seeded(&a, 79, 80);
  a.counter = 0xfffffffdu;
  a.nonce[0] = 5;
  ok = 1;
  for (uint32_t b = 0xfffffffdu; b != 0; b++) {
    dprl_chacha20_block_for_test(a.key, b, nonce0, one);
    for (int i = 0; i < 16; i++) ok &= dprl_rng_u32(&a) == one[i];
  }
  ok &= a.counter == 0 && a.nonce[0] == 6;
  for (uint32_t b = 0; b < 5; b++) {
    dprl_chacha20_block_for_test(a.key, b, nonce1, one);
    for (int i = 0; i < 16; i++) ok &= dprl_rng_u32(&a) == one[i];
  }
  CHECK(ok, "stream across the counter wrap, block by block then sixteen at a time");
  dprl_rng_wipe(&a);
}

/* dprl_rng_below is x % n over the stream's 64-bit words x, rejecting the
** x < 2^64 mod n: recomputed here from a twin generator's words.  n just
** above 2^63 rejects about half of the words (2^64 mod n = n - 2); powers
** of two (a mask in dprl_rng_below) reject none. */
static void test_below_stream(void) {
  const uint64_t ns[] = {2, 3, 4, 10, 1000003, (uint64_t)1 << 40, (uint64_t)1 << 63,
                         ((uint64_t)1 << 63) + 1, ((uint64_t)1 << 63) + 12345, UINT64_MAX,
                         UINT64_MAX - 1};
  int ok = 1, rejected = 0;
  for (int c = 0; c < (int)(sizeof ns / sizeof ns[0]); c++) {
    dprl_rng a, b;
    uint64_t n = ns[c], reject = (0 - n) % n;
    dprl_rng_init_seeded(&a, 31, (uint64_t)c);
    dprl_rng_init_seeded(&b, 31, (uint64_t)c);
    for (int i = 0; i < 2000; i++) {
      uint64_t x;
      while ((x = dprl_rng_u64(&b)) < reject) rejected++;
      ok &= dprl_rng_below(&a, n) == x % n;
    }
    ok &= dprl_rng_u32(&a) == dprl_rng_u32(&b); /* same words consumed */
  }
  CHECK(ok && rejected > 1000, "below(n) = x mod n after rejecting x < 2^64 mod n");
}

static int same_words(dprl_rng *a, dprl_rng *b, int n) {
  int same = 1;
  for (int i = 0; i < n; i++) same &= dprl_rng_u32(a) == dprl_rng_u32(b);
  return same;
}

static void test_streams(void) {
  dprl_rng a, b;
  dprl_rng_init_seeded(&a, 42, 7);
  dprl_rng_init_seeded(&b, 42, 7);
  CHECK(a.seeded == 1, "seeded rng is marked seeded");
  CHECK(same_words(&a, &b, 1000), "same seed and stream reproduce");
  dprl_rng_init_seeded(&a, 42, 7);
  dprl_rng_init_seeded(&b, 43, 7);
  CHECK(!same_words(&a, &b, 8), "different seeds differ");
  dprl_rng_init_seeded(&a, 42, 7);
  dprl_rng_init_seeded(&b, 42, 8);
  CHECK(!same_words(&a, &b, 8), "different streams differ");
  dprl_rng_init_seeded(&a, 7, 42);
  dprl_rng_init_seeded(&b, 42, 7);
  CHECK(!same_words(&a, &b, 8), "seed and stream are not interchangeable");

  /* The stream is the keystream, block 0 first, words in order. */
  uint32_t blk[16];
  dprl_rng_init_seeded(&a, 5, 6);
  dprl_chacha20_block_for_test(a.key, 0, a.nonce, blk);
  int ok = 1;
  for (int i = 0; i < 16; i++) ok &= dprl_rng_u32(&a) == blk[i];
  dprl_chacha20_block_for_test(a.key, 1, a.nonce, blk);
  ok &= dprl_rng_u64(&a) == ((uint64_t)blk[1] << 32 | blk[0]);
  CHECK(ok, "stream = ChaCha20 blocks 0, 1, ... in word order");

  dprl_error err;
  dprl_error_clear(&err);
  CHECK(dprl_rng_init_secure(&a, &err) == DPRL_OK && err.code == DPRL_OK,
        "secure init succeeds");
  CHECK(dprl_rng_init_secure(&b, &err) == DPRL_OK, "second secure init");
  CHECK(a.seeded == 0, "secure rng is not marked seeded");
  CHECK(memcmp(a.key, b.key, sizeof a.key) != 0, "secure keys differ");
  CHECK(!same_words(&a, &b, 8), "two secure streams differ");
  dprl_rng_wipe(&a);
  const unsigned char *bytes = (const unsigned char *)&a;
  int zero = 1;
  for (size_t i = 0; i < sizeof a; i++) zero &= bytes[i] == 0;
  CHECK(zero, "wipe zeroes the whole state");
  dprl_rng_wipe(&b);
}

static void test_counter_wrap(void) {
  dprl_rng a;
  uint32_t blk[16], fresh[16];
  const uint32_t nonce1[3] = {1, 0, 0}, nonce0[3] = {0, 0, 0};
  dprl_rng_init_seeded(&a, 9, 9);
  a.counter = 0xffffffffu;
  dprl_chacha20_block_for_test(a.key, 0xffffffffu, nonce0, blk);
  int ok = 1;
  for (int i = 0; i < 16; i++) ok &= dprl_rng_u32(&a) == blk[i];
  CHECK(ok, "last block before the counter wraps");
  CHECK(a.counter == 0 && a.nonce[0] == 1, "counter wrap bumps the nonce");
  dprl_chacha20_block_for_test(a.key, 0, nonce1, blk);
  dprl_chacha20_block_for_test(a.key, 0, nonce0, fresh);
  int after = 1, reused = 1;
  for (int i = 0; i < 16; i++) {
    uint32_t w = dprl_rng_u32(&a);
    after &= w == blk[i];
    reused &= w == fresh[i];
  }
  CHECK(after && !reused, "after the wrap: new nonce, block 0 not reused");
}

static void test_below(void) {
  dprl_rng r;
  dprl_rng_init_seeded(&r, 1, 1);
  enum { N = 1000000 };
  double obs[10] = {0}, expct[10];
  int in_range = 1;
  for (long i = 0; i < N; i++) {
    uint64_t x = dprl_rng_below(&r, 10);
    in_range &= x < 10;
    if (x < 10) obs[x] += 1;
  }
  for (int i = 0; i < 10; i++) expct[i] = N / 10.0;
  CHECK(in_range, "below(10) < 10");
  CHECK(chi2_pvalue(obs, expct, 10) > P_MIN, "below(10) uniform (chi-square)");

  int ok = 1;
  for (int i = 0; i < 1000; i++) ok &= dprl_rng_below(&r, 1) == 0;
  CHECK(ok, "below(1) == 0");
  const uint64_t big[] = {UINT64_MAX, UINT64_MAX - 1, ((uint64_t)1 << 63) + 1,
                          (uint64_t)1 << 63, 3};
  ok = 1;
  for (int j = 0; j < 5; j++)
    for (int i = 0; i < 20000; i++) ok &= dprl_rng_below(&r, big[j]) < big[j];
  CHECK(ok, "below(n) < n for n near 2^64");

  /* n = 3 * 2^62: a plain x % n would put half the mass below 2^62. */
  const uint64_t n = (uint64_t)3 << 62;
  const long M = 200000;
  long low = 0;
  for (long i = 0; i < M; i++) low += dprl_rng_below(&r, n) < n / 3;
  CHECK_NEAR((double)low / M, 1.0 / 3, NSE * sqrt(2.0 / 9 / M),
             "below(3*2^62) unbiased (rejection works)");
}

static void test_unit_shuffle(void) {
  dprl_rng r;
  dprl_rng_init_seeded(&r, 2, 2);
  const long N = 200000;
  double sum = 0;
  int ok = 1;
  for (long i = 0; i < N; i++) {
    double u = dprl_rng_unit(&r);
    ok &= u >= 0 && u < 1 && ldexp(u, 53) == floor(ldexp(u, 53));
    sum += u;
  }
  CHECK(ok, "unit in [0,1) on the 2^-53 grid");
  CHECK_NEAR(sum / N, 0.5, NSE * sqrt(1.0 / 12 / N), "unit mean 1/2");

  uint32_t v[1000];
  for (uint32_t i = 0; i < 1000; i++) v[i] = i;
  dprl_rng_shuffle_u32(&r, v, 1000);
  int seen[1000] = {0}, moved = 0;
  ok = 1;
  for (int i = 0; i < 1000; i++) {
    ok &= v[i] < 1000 && !seen[v[i]];
    if (v[i] < 1000) seen[v[i]] = 1;
    moved += v[i] != (uint32_t)i;
  }
  CHECK(ok && moved > 900, "shuffle is a permutation that moves things");
  dprl_rng_shuffle_u32(&r, v, 0);
  dprl_rng_shuffle_u32(&r, v, 1);

  /* All 6 orders of 3 items equally likely. */
  double obs[6] = {0}, expct[6];
  const long M = 60000;
  for (long i = 0; i < M; i++) {
    uint32_t w[3] = {0, 1, 2};
    dprl_rng_shuffle_u32(&r, w, 3);
    obs[w[0] * 2 + (w[1] > w[2])] += 1; /* w[0] and the order of the rest */
  }
  for (int i = 0; i < 6; i++) expct[i] = M / 6.0;
  CHECK(chi2_pvalue(obs, expct, 6) > P_MIN, "shuffle of 3 uniform (chi-square)");
}

/* ---------------------------------------------------------------------- */
/* Samplers                                                                */

/* gaussian: 0 Laplace, 1 Gaussian, 2 Gaussian through the split trial */
static void test_sampler(int gaussian, uint64_t scale, long n, uint64_t seed) {
  dprl_rng r;
  char label[80];
  snprintf(label, sizeof label, "discrete %s%s %s=%llu",
           gaussian ? "Gaussian" : "Laplace", gaussian == 2 ? " (split trial)" : "",
           gaussian ? "s" : "t", (unsigned long long)scale);
  dprl_rng_init_seeded(&r, seed, scale);
  int64_t *xs = malloc((size_t)n * sizeof(int64_t));
  for (long i = 0; i < n; i++)
    xs[i] = gaussian == 2 ? dprl_discrete_gaussian_split_for_test(&r, scale)
            : gaussian    ? dprl_discrete_gaussian(&r, scale)
                          : dprl_discrete_laplace(&r, scale);
  pmf d = pmf_make(gaussian, (double)scale);
  if (!gaussian) { /* cross-check the pmf against the closed form */
    double q = exp(-1.0 / scale);
    char what[120];
    snprintf(what, sizeof what, "%s: summed variance = 2q/(1-q)^2", label);
    CHECK_REL(d.var, 2 * q / ((1 - q) * (1 - q)), 1e-9, what);
  }
  check_moments(label, xs, n, d.var, d.m4);
  check_fit(label, xs, n, &d);
  free(d.p);
  free(xs);
}

static void test_large_gaussian(void) {
  dprl_rng r;
  dprl_rng_init_seeded(&r, 77, 0);
  const uint64_t s = (uint64_t)1 << 20;
  const long n = 200000;
  int64_t *xs = malloc((size_t)n * sizeof(int64_t));
  for (long i = 0; i < n; i++) xs[i] = dprl_discrete_gaussian(&r, s);
  /* For s this large the discrete Gaussian's moments equal the continuous
  ** ones (s^2, 3 s^4) to far below double precision. */
  double v = (double)s * (double)s;
  check_moments("discrete Gaussian s=2^20", xs, n, v, 3 * v * v);
  free(xs);

  const uint64_t smax = (uint64_t)1 << 27;
  const long m = 2000;
  double s2 = 0;
  int ok = 1;
  for (long i = 0; i < m; i++) {
    int64_t z = dprl_discrete_gaussian(&r, smax);
    ok &= llabs(z) <= (long long)(64 * (smax + 1));
    s2 += (double)z * (double)z;
  }
  v = (double)smax * (double)smax;
  CHECK(ok, "discrete Gaussian s=2^27 stays within 64(s+1)");
  CHECK_NEAR(s2 / m / v, 1.0, NSE * sqrt(2.0 / m),
             "discrete Gaussian s=2^27 variance");

  /* Beyond 2^27 the acceptance trial is split (its exact pmf is checked at
  ** small s in main); here the scale: s = 2^27 + 1 and s = 2^40, the
  ** largest allowed, keep |z| <= 64 (s+1) and variance s^2. */
  const uint64_t wide[] = {smax + 1, DPRL_GAUSS_STEPS_MAX};
  for (int w = 0; w < 2; w++) {
    s2 = 0;
    ok = 1;
    for (long i = 0; i < m; i++) {
      int64_t z = dprl_discrete_gaussian(&r, wide[w]);
      ok &= z != INT64_MIN && llabs(z) <= (long long)(64 * (wide[w] + 1));
      s2 += (double)z * (double)z;
    }
    v = (double)wide[w] * (double)wide[w];
    CHECK(ok, w ? "discrete Gaussian s=2^40 stays within 64(s+1)"
                : "discrete Gaussian s=2^27+1 stays within 64(s+1)");
    CHECK_NEAR(s2 / m / v, 1.0, NSE * sqrt(2.0 / m),
               w ? "discrete Gaussian s=2^40 variance" : "discrete Gaussian s=2^27+1 variance");
  }
  CHECK(dprl_discrete_gaussian(&r, DPRL_GAUSS_STEPS_MAX + 1) == INT64_MIN,
        "discrete Gaussian refuses s > 2^40 (INT64_MIN)");
}

/* ---------------------------------------------------------------------- */
/* Grid and release                                                        */

static void test_grid(void) {
  CHECK(dprl_grid_for(1.0) == 0x1.0p-26, "grid_for(1) = 2^-26");
  CHECK(dprl_grid_for(3.0) == 0x1.0p-24, "grid_for(3) = 2^-24");
  CHECK(dprl_grid_for(0.75) == 0x1.0p-26, "grid_for(0.75) = 2^-26");
  int ok = 1;
  for (int k = -1000; k <= 1000; k++) {
    double x = ldexp(1.0, k);
    ok &= dprl_grid_for(x) == ldexp(1.0, k - 26);
    ok &= dprl_grid_for(nextafter(x, INFINITY)) == ldexp(1.0, k + 1 - 26);
    ok &= dprl_grid_for(nextafter(x, 0)) == ldexp(1.0, k - 26);
  }
  CHECK(ok, "grid_for(2^k) = 2^(k-26), just above -> 2^(k-25)");
  CHECK(isnan(dprl_grid_for(0)) && isnan(dprl_grid_for(-1)) &&
            isnan(dprl_grid_for(NAN)) && isnan(dprl_grid_for(INFINITY)),
        "grid_for rejects non-positive / non-finite");
  CHECK(dprl_grid_bits(1.0, 39) == 0x1.0p-39 && dprl_grid_bits(3.0, 39) == 0x1.0p-37 &&
            dprl_grid_bits(3.0, 50) == 0x1.0p-48 && dprl_grid_bits(0x1.0p-1070, 39) == 0x1.0p-1074 &&
            isnan(dprl_grid_bits(0, 39)),
        "grid_bits(x, b) = 2^(ceil(log2 x) - b), never below 2^-1074");
}

typedef int (*release_fn)(dprl_rng *, double, double, double, double *,
                          dprl_error *);

/* E[(out - g round(value/g))^2] / g^2 over n releases. */
static double release_m2(release_fn f, double value, double scale, double g,
                         long n, uint64_t seed, int *ok) {
  dprl_rng r;
  dprl_error err;
  dprl_rng_init_seeded(&r, seed, 0);
  dprl_error_clear(&err);
  double base = g * round(value / g), s2 = 0;
  for (long i = 0; i < n; i++) {
    double out = NAN;
    *ok &= f(&r, value, scale, g, &out, &err) == DPRL_OK;
    double z = (out - base) / g;
    *ok &= z == floor(z);
    s2 += z * z;
  }
  return s2 / n;
}

static void check_release_var(const char *what, release_fn f, double scale,
                              double g, int gaussian, double steps) {
  const long n = 50000;
  int ok = 1;
  double m2 = release_m2(f, 0.3, scale, g, n, 11, &ok);
  pmf d = pmf_make(gaussian, steps);
  CHECK(ok, what);
  CHECK_NEAR(m2, d.var, NSE * sqrt((d.m4 - d.var * d.var) / n), what);
  free(d.p);
}

/* The grid point is round-half-away(value / g): the mean of the release
** must sit there (noise s = 1, so a wrong k is off by >= 1 / SE = 150). */
static void check_release_mean(double value, double g, double want) {
  dprl_rng r;
  dprl_error err;
  const long n = 40000;
  pmf d = pmf_make(1, 1.0);
  double sum = 0;
  int ok = 1;
  dprl_rng_init_seeded(&r, 13, 0);
  dprl_error_clear(&err);
  for (long i = 0; i < n; i++) {
    double out = NAN;
    ok &= dprl_release_gaussian(&r, value, 0.0, g, &out, &err) == DPRL_OK;
    sum += out / g - want; /* exact: both are integers below 2^52 */
  }
  char what[120];
  snprintf(what, sizeof what, "release of %g on g=%g centres on %g", value, g,
           want);
  CHECK(ok, what);
  CHECK_NEAR(sum / n, 0.0, NSE * sqrt(d.var / n), what);
  free(d.p);
}

static void test_release_values(void) {
  dprl_rng r;
  dprl_error err;
  dprl_rng_init_seeded(&r, 3, 3);
  dprl_error_clear(&err);
  double g = dprl_grid_for(0.5);
  int ok = 1;
  for (int i = 0; i < 200; i++) {
    double a = NAN, b = NAN;
    ok &= dprl_release_gaussian(&r, 0.123456789, 0.37, g, &a, &err) == 0;
    ok &= dprl_release_laplace(&r, -12.3456789, 0.37, g, &b, &err) == 0;
    ok &= isfinite(a) && fmod(a, g) == 0 && isfinite(b) && fmod(b, g) == 0;
  }
  CHECK(ok && err.code == DPRL_OK, "releases are multiples of g");

  /* sigma/g tiny or 0 still gets s = 1; never zero noise. */
  check_release_var("gaussian sigma=1e-300 uses s=1", dprl_release_gaussian,
                    1e-300, 1.0, 1, 1.0);
  check_release_var("gaussian sigma=0 uses s=1", dprl_release_gaussian, 0.0,
                    1.0, 1, 1.0);
  check_release_var("laplace b=0 uses t=1", dprl_release_laplace, 0.0, 1.0, 0,
                    1.0);
  /* sigma is rounded UP to whole grid steps, never down. */
  check_release_var("gaussian sigma=2.1, g=1 uses s=3", dprl_release_gaussian,
                    2.1, 1.0, 1, 3.0);
  check_release_var("gaussian sigma=3+2^-40, g=1 uses s=4",
                    dprl_release_gaussian, 3 + 0x1.0p-40, 1.0, 1, 4.0);
  check_release_var("gaussian sigma=3, g=1 uses s=3", dprl_release_gaussian,
                    3.0, 1.0, 1, 3.0);
  check_release_var("gaussian sigma=0.3, g=1/8 uses s=3", dprl_release_gaussian,
                    0.3, 0.125, 1, 3.0);
  check_release_mean(0.7, 1.0, 1.0);
  check_release_mean(-2.5, 1.0, -3.0);
  check_release_mean(0.3125, 0.125, 3.0);
  check_release_mean(-1.2, 0x1.0p-40, round(-1.2 * 0x1.0p40));
  check_release_var("laplace b=2.5, g=1 uses t=3", dprl_release_laplace, 2.5,
                    1.0, 0, 3.0);
  {
    int ok2 = 1;
    double m2 = release_m2(dprl_release_gaussian, 0.3, 2.1, 1.0, 50000, 12, &ok2);
    pmf d = pmf_make(1, 3.0);
    CHECK(ok2 && m2 >= 2.1 * 2.1 - NSE * sqrt((d.m4 - d.var * d.var) / 50000),
          "noise variance >= sigma^2 for sigma=2.1");
    free(d.p);
  }
}

static int rejects(release_fn f, double value, double scale, double g,
                   const char *needle) {
  dprl_rng r;
  dprl_error err;
  double out = 12345;
  dprl_rng_init_seeded(&r, 4, 4);
  dprl_error_clear(&err);
  int rc = f(&r, value, scale, g, &out, &err);
  if (rc == DPRL_OK) return 0;
  printf("#   %s\n", err.msg);
  return rc == DPRL_EINVAL && err.code == DPRL_EINVAL && out == 12345 &&
         strstr(err.msg, needle) != NULL;
}

static int accepts(release_fn f, double value, double scale, double g) {
  dprl_rng r;
  dprl_error err;
  double out = NAN;
  dprl_rng_init_seeded(&r, 4, 4);
  dprl_error_clear(&err);
  return f(&r, value, scale, g, &out, &err) == DPRL_OK && isfinite(out);
}

static void test_release_errors(void) {
  release_fn G = dprl_release_gaussian, L = dprl_release_laplace;
  CHECK(rejects(G, 1, NAN, 1, "sigma must be finite and >= 0, got nan"),
        "rejects sigma NaN");
  CHECK(rejects(G, 1, -0.5, 1, "sigma must be finite and >= 0, got -0.5"),
        "rejects sigma < 0");
  CHECK(rejects(G, 1, INFINITY, 1, "sigma"), "rejects sigma inf");
  CHECK(rejects(L, 1, NAN, 1, "b must be finite"), "rejects b NaN");
  CHECK(rejects(L, 1, -1, 1, "b must be finite"), "rejects b < 0");
  CHECK(rejects(G, 1, 1, 3, "power of two, got 3"), "rejects g = 3");
  CHECK(rejects(G, 1, 1, 0, "power of two"), "rejects g = 0");
  CHECK(rejects(G, 1, 1, -2, "power of two"), "rejects g = -2");
  CHECK(rejects(G, 1, 1, NAN, "power of two"), "rejects g NaN");
  CHECK(rejects(L, 1, 1, INFINITY, "power of two"), "rejects g inf");
  CHECK(rejects(G, NAN, 1, 1, "value must be finite"), "rejects value NaN");
  CHECK(rejects(L, -INFINITY, 1, 1, "value"), "rejects value -inf");
  CHECK(rejects(G, 0x1.0p52, 1, 1, "2^52"), "rejects value/g = 2^52");
  CHECK(rejects(L, -0x1.0p52, 1, 1, "2^52"), "rejects value/g = -2^52");
  CHECK(rejects(G, 0x1.0p40, 1, 0x1.0p-12, "2^52"), "rejects 2^40 / 2^-12");
  CHECK(accepts(G, 0x1.0p52 - 1, 1, 1), "accepts value/g = 2^52 - 1");
  CHECK(accepts(G, 1, 0x1.0p27, 1), "accepts sigma/g = 2^27");
  CHECK(accepts(L, 1, 0x1.0p27, 1), "accepts b/g = 2^27");
  CHECK(rejects(G, 1, 0x1.0p27 + 0.5, 1, "2^27"), "rejects sigma/g > 2^27");
  CHECK(rejects(L, 1, 0x1.0p27 + 1, 1, "2^27"), "rejects b/g > 2^27");
  CHECK(rejects(G, 1, 1e300, 0x1.0p-1074, "2^27"), "rejects sigma/g = inf");
  CHECK(dprl_release_gaussian(NULL, 1, NAN, 1, NULL, NULL) == DPRL_EINVAL,
        "rejects with a NULL error too");

  /* The form with the scale in whole grid steps (DP-LSW/LSL, up to 2^40). */
  {
    dprl_rng r;
    dprl_error err;
    double out = 12345;
    int ok = 1;
    dprl_rng_init_seeded(&r, 6, 6);
    dprl_error_clear(&err);
    ok &= dprl_release_gaussian_steps(&r, 0.3, 0, 0.5, &out, &err) == DPRL_EINVAL &&
          strstr(err.msg, "1 to 2^40 grid steps, got 0") && out == 12345;
    dprl_error_clear(&err);
    ok &= dprl_release_gaussian_steps(&r, 0.3, DPRL_GAUSS_STEPS_MAX + 1, 0.5, &out, &err) ==
              DPRL_EINVAL && strstr(err.msg, "got 1099511627777");
    dprl_error_clear(&err);
    ok &= dprl_release_gaussian_steps(&r, 0.3, 3, 0.75, &out, &err) == DPRL_EINVAL &&
          strstr(err.msg, "power of two");
    dprl_error_clear(&err);
    ok &= dprl_release_gaussian_steps(&r, NAN, 3, 0.5, &out, &err) == DPRL_EINVAL;
    dprl_error_clear(&err);
    ok &= dprl_release_gaussian_steps(&r, 0x1.0p51, 3, 0.5, &out, &err) == DPRL_EINVAL &&
          strstr(err.msg, "2^52");
    CHECK(ok && out == 12345, "release_gaussian_steps checks s, g and the value");
    /* s = 2^40 steps of g = 2^-40: on the grid, |noise| <= 64 (s+1) g */
    ok = 1;
    for (int i = 0; i < 200; i++) {
      double g = 0x1.0p-40;
      dprl_error_clear(&err);
      ok &= dprl_release_gaussian_steps(&r, 0.3, DPRL_GAUSS_STEPS_MAX, g, &out, &err) == 0;
      double z = out / g;
      ok &= z == floor(z) && fabs(out - g * round(0.3 / g)) <= 64 * (1 + g);
    }
    CHECK(ok, "release_gaussian_steps at 2^40 steps: on the grid, within 64 (s+1) g");
  }

  /* A result beyond DBL_MAX is an error, never inf. */
  dprl_rng r;
  dprl_rng_init_seeded(&r, 5, 5);
  int ok = 1, failed = 0;
  for (int i = 0; i < 20; i++) {
    dprl_error err;
    double out = 0;
    dprl_error_clear(&err);
    int rc = dprl_release_gaussian(&r, DBL_MAX, 0, 0x1.0p1000, &out, &err);
    ok &= (rc == DPRL_OK && isfinite(out)) || rc == DPRL_EINVAL;
    failed += rc == DPRL_EINVAL;
  }
  CHECK(ok && failed > 0, "release overflowing a double is an error");
}

int main(void) {
  test_chi2_helper();
  test_rfc8439();
  test_rfc8439_stream();
  test_blocks16();
  test_below_stream();
  test_streams();
  test_counter_wrap();
  test_below();
  test_unit_shuffle();
  const uint64_t lap[] = {1, 3, 1000};
  for (int i = 0; i < 3; i++) test_sampler(0, lap[i], 300000, 100 + i);
  /* s = 100000: 2 s^2 t^2 > 2^64, so the 128-bit uniform draw is used */
  const uint64_t gau[] = {1, 2, 5, 50, 100000};
  for (int i = 0; i < 5; i++) test_sampler(1, gau[i], 300000, 200 + i);
  /* the split acceptance trial used above 2^27, against the same exact pmf */
  for (int i = 0; i < 5; i++) test_sampler(2, gau[i], 300000, 300 + i);
  test_large_gaussian();
  test_grid();
  test_release_values();
  test_release_errors();
  printf("%d passed, %d failed\n", check_passed_count, check_failed_count);
  return CHECK_DONE();
}
