/*
** test_dp_noise_stream.c: the random stream of dp/noise.c: ChaCha20
** against RFC 8439's vectors, the sixteen-block function at every vector
** width the CPU runs against the one-block function, seeded and secure
** streams, the counter's wrap, uniform integers below n and the shuffle
** (fixed seeds; util_dp.h's bounds).
*/
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dp/noise.h"
#include "check.h"
#include "util_dp.h"

/* Test-only hooks defined in noise.c (the RFC 8439 block function, one
** block and sixteen at a given vector width). */
void dprl_chacha20_block_for_test(const uint32_t key[8], uint32_t counter,
                                  const uint32_t nonce[3], uint32_t out[16]);
int dprl_chacha20_blocks16_for_test(int width, const uint32_t key[8], uint32_t counter,
                                    const uint32_t nonce[3], uint32_t out[256]);

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

int main(void) {
  test_rfc8439();
  test_rfc8439_stream();
  test_blocks16();
  test_below_stream();
  test_streams();
  test_counter_wrap();
  test_below();
  test_unit_shuffle();
  return CHECK_DONE();
}
