/* json_number.c: the JSON parser's number reader (json.h,
** dprl_json_scan_number).
**
** strtod dominates the time to read a released MDP model (10^7 numbers).
** Most numbers have at most 19 significant digits and a small decimal
** exponent: for those the value is computed exactly in 128-bit integers
** and rounded once, to nearest even, which is what strtod returns;
** anything else goes to strtod. */
#include "base/json.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef unsigned __int128 u128;

/* 2^e as a double, e in the normal range [-1022, 1023]. */
static double pow2(int e) {
  uint64_t bits = (uint64_t)(e + 1023) << 52;
  double x;
  memcpy(&x, &bits, sizeof x);
  return x;
}

/* u * 2^e2 rounded to nearest even, sticky: the exact value is a little
** above u (a nonzero remainder was dropped).  The callers keep the result
** a normal double, so the final scaling by a power of two is exact. */
static double round_u128(u128 u, int sticky, int e2) {
  int bits = (u >> 64) ? 128 - __builtin_clzll((uint64_t)(u >> 64))
                       : 64 - __builtin_clzll((uint64_t)u | 1);
  if (bits <= 53) return (double)(int64_t)u * pow2(e2); /* exact (sticky is 0 here) */
  int sh = bits - 53;
  uint64_t mant = (uint64_t)(u >> sh);
  u128 rem = u & (((u128)1 << sh) - 1), half = (u128)1 << (sh - 1);
  if (rem > half || (rem == half && (sticky || (mant & 1)))) {
    if (++mant == (uint64_t)1 << 53) {
      mant >>= 1;
      sh++;
    }
  }
  return (double)(int64_t)mant * pow2(sh + e2);
}

static const uint64_t pow10_u64[20] = {
    1u, 10u, 100u, 1000u, 10000u, 100000u, 1000000u, 10000000u, 100000000u, 1000000000u,
    10000000000u, 100000000000u, 1000000000000u, 10000000000000u, 100000000000000u,
    1000000000000000u, 10000000000000000u, 100000000000000000u, 1000000000000000000u,
    10000000000000000000u};

static const uint64_t pow5_u64[28] = {
    1u, 5u, 25u, 125u, 625u, 3125u, 15625u, 78125u, 390625u, 1953125u, 9765625u, 48828125u,
    244140625u, 1220703125u, 6103515625u, 30517578125u, 152587890625u, 762939453125u,
    3814697265625u, 19073486328125u, 95367431640625u, 476837158203125u, 2384185791015625u,
    11920928955078125u, 59604644775390625u, 298023223876953125u, 1490116119384765625u,
    7450580596923828125u};

/* For 5^k, k = 0..27: with s = the leading zeros of 5^k and d = 5^k 2^s
** (normalised: top bit set), v = floor((2^128 - 1) / d) - 2^64, the
** reciprocal of Moller & Granlund, "Improved division by invariant
** integers" (IEEE Trans. Computers 60(2), 2011), Algorithm 4.  Computed
** exactly (Python integers); tests/unit/test_base_json.c (test_numbers)
** reads 300,000 forms, 17-19 digit ones among them, exactly as strtod. */
static const struct { uint64_t v; int s; } pow5_inv[28] = {
    {UINT64_C(0xffffffffffffffff), 63},
    {UINT64_C(0x9999999999999999), 61},
    {UINT64_C(0x47ae147ae147ae14), 59},
    {UINT64_C(0x0624dd2f1a9fbe76), 57},
    {UINT64_C(0xa36e2eb1c432ca57), 54},
    {UINT64_C(0x4f8b588e368f0846), 52},
    {UINT64_C(0x0c6f7a0b5ed8d36b), 50},
    {UINT64_C(0xad7f29abcaf48578), 47},
    {UINT64_C(0x5798ee2308c39df9), 45},
    {UINT64_C(0x12e0be826d694b2e), 43},
    {UINT64_C(0xb7cdfd9d7bdbab7d), 40},
    {UINT64_C(0x5fd7fe17964955fd), 38},
    {UINT64_C(0x19799812dea11197), 36},
    {UINT64_C(0xc25c268497681c26), 33},
    {UINT64_C(0x6849b86a12b9b01e), 31},
    {UINT64_C(0x203af9ee756159b2), 29},
    {UINT64_C(0xcd2b297d889bc2b6), 26},
    {UINT64_C(0x70ef54646d496892), 24},
    {UINT64_C(0x2725dd1d243aba0e), 22},
    {UINT64_C(0xd83c94fb6d2ac34a), 19},
    {UINT64_C(0x79ca10c9242235d5), 17},
    {UINT64_C(0x2e3b40a0e9b4f7dd), 15},
    {UINT64_C(0xe392010175ee5962), 12},
    {UINT64_C(0x82db34012b25144e), 10},
    {UINT64_C(0x357c299a88ea76a5), 8},
    {UINT64_C(0xef2d0f5da7dd8aa2), 5},
    {UINT64_C(0x8c240c4aecb13bb5), 3},
    {UINT64_C(0x3ce9a36f23c0fc90), 1},
};

/* floor(u / d) and the remainder, u = u1 2^64 + u0 with u1 < d, d = 5^k 2^s:
** two multiplications instead of a 128-bit division (Algorithm 4). */
static uint64_t div_pow5(uint64_t u1, uint64_t u0, int k, uint64_t *rem) {
  uint64_t d = pow5_u64[k] << pow5_inv[k].s;
  u128 q = (u128)pow5_inv[k].v * u1 + (((u128)u1 << 64) | u0); /* < 2^128 since u1 < d */
  uint64_t q1 = (uint64_t)(q >> 64) + 1, q0 = (uint64_t)q, r = u0 - q1 * d;
  if (r > q0) {
    q1--;
    r += d;
  }
  if (r >= d) {
    q1++;
    r -= d;
  }
  *rem = r;
  return q1;
}

/* w 10^e10, w < 10^19 not 0, exactly rounded when e10 is in [-27, 19];
** otherwise NAN (the caller asks strtod). */
static double decimal_value(uint64_t w, long e10) {
  /* Clinger's fast path: w and 10^|e10| are exact doubles, so one IEEE
  ** multiplication or division rounds the exact value once */
  static const double pow10_exact[23] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                         1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                         1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
  if (FLT_EVAL_METHOD == 0 && w <= (UINT64_C(1) << 53) && e10 >= -22 && e10 <= 22)
    return e10 < 0 ? (double)w / pow10_exact[-e10] : (double)w * pow10_exact[e10];
  if (e10 >= 0 && e10 <= 19) return round_u128((u128)w * pow10_u64[e10], 0, 0); /* < 10^38 */
  if (e10 < 0 && e10 >= -27) {
    /* w / 10^k = (w / 5^k) 2^-k with 5^k < 2^63.  w is shifted so that
    ** the quotient has 63 or 64 bits: enough for the rounding (the
    ** remainder decides ties), and one hardware division (its high word
    ** is below the divisor). */
    int k = (int)-e10;
    int sh = (64 - __builtin_clzll(pow5_u64[k])) + 63 - (64 - __builtin_clzll(w));
    u128 num = (u128)w << (sh + pow5_inv[k].s); /* num / d = (w 2^sh) / 5^k, same floor */
    uint64_t rem, q = div_pow5((uint64_t)(num >> 64), (uint64_t)num, k, &rem);
    return round_u128(q, rem != 0, -sh - k);
  }
  return NAN;
}

static int is_digit(char c) { return c >= '0' && c <= '9'; }

/* Are the 8 bytes at c all digits?  Each byte must have high nibble 3 and
** stay below 0x40 when 6 is added (no byte carries into the next). */
static int eight_digits(const char *c) {
  uint64_t v;
  memcpy(&v, c, 8);
  return (v & 0xF0F0F0F0F0F0F0F0u) == 0x3030303030303030u &&
         ((v + 0x0606060606060606u) & 0xF0F0F0F0F0F0F0F0u) == 0x3030303030303030u;
}

/* The 8 digits at c as a number (c[0] most significant): neighbouring
** digits, then pairs, then quadruples are combined in the lanes of one
** word (little-endian: c[0] is the lowest byte), no lane overflowing. */
static uint64_t eight_value(const char *c) {
  uint64_t v;
  memcpy(&v, c, 8);
  v -= 0x3030303030303030u;
  v = v * 10 + (v >> 8);                  /* byte 2i: 10 c[2i] + c[2i+1] */
  v &= 0x00FF00FF00FF00FFu;
  v = v * 100 + (v >> 16);                /* lane 4i bytes: 100 pair + next pair */
  v &= 0x0000FFFF0000FFFFu;
  return (v & 0xFFFFu) * 10000 + (v >> 32);
}

/* Append the digits at *c (up to end) to w; returns how many. */
static inline int digits(const char **c, const char *end, uint64_t *w) {
  const char *d = *c, *x = d;
  uint64_t acc = *w;
  while (end - x >= 8 && eight_digits(x)) {
    acc = acc * 100000000u + eight_value(x);
    x += 8;
  }
  while (x < end && is_digit(*x)) acc = acc * 10 + (uint64_t)(*x++ - '0');
  *w = acc;
  *c = x;
  return (int)(x - d);
}

/* See json.h.  One pass: the syntax is checked while the significant
** digits are gathered. */
size_t dprl_json_scan_number(const char *s, size_t len, double *out, int *integer_out,
                             const char **expected, size_t *at) {
  const char *c = s, *end = s + len;
  int integer = 1, sig = 0;
  uint64_t w = 0; /* the significant digits (wrong when sig > 19: then strtod) */
  long e10 = 0;
  if (*c == '-') c++;
  if (c >= end || !is_digit(*c)) {
    *expected = "expected a digit";
    *at = (size_t)(c - s);
    return 0;
  }
  if (*c == '0') {
    c++;
  } else {
    sig = digits(&c, end, &w);
  }
  if (c < end && *c == '.') {
    integer = 0;
    const char *f = ++c;
    if (!w)
      while (c < end && *c == '0') c++; /* zeros before the first significant digit */
    int nd = digits(&c, end, &w);
    if (c == f) {
      *expected = "expected a digit after '.'";
      *at = (size_t)(c - s);
      return 0;
    }
    sig += nd;
    e10 -= (long)(c - f);
  }
  if (c < end && (*c == 'e' || *c == 'E')) {
    integer = 0;
    int neg = 0;
    long x = 0;
    c++;
    if (c < end && (*c == '+' || *c == '-')) neg = *c++ == '-';
    const char *d = c;
    while (c < end && is_digit(*c)) {
      if (x < 1000000) x = x * 10 + (*c - '0');
      c++;
    }
    if (c == d) {
      *expected = "expected a digit in the exponent";
      *at = (size_t)(c - s);
      return 0;
    }
    e10 += neg ? -x : x;
  }
  size_t n = (size_t)(c - s);
  double v = sig > 19 ? NAN : !w ? 0 : decimal_value(w, e10);
  if (n >= 64) {
    *out = 0; /* the caller refuses a number this long */
  } else if (isnan(v)) {
    char tmp[64];
    memcpy(tmp, s, n);
    tmp[n] = 0;
    *out = dprl_strtod(tmp, NULL);
  } else {
    *out = *s == '-' ? -v : v;
  }
  *integer_out = integer;
  return n;
}
