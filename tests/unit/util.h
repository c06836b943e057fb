/*
** util.h: helpers the unit tests of several folders share: a fixed
** sequence of test data, a cancellation hook that counts its checks, and
** an error's message compared with the one wanted.
*/
#ifndef DPRL_TEST_UTIL_H
#define DPRL_TEST_UTIL_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "base/core.h"

/* Test data only, never noise: Knuth's MMIX linear congruential sequence,
** from 12345 in each test program (a test may set lcg_state). */
static uint64_t lcg_state = 12345;
static inline uint64_t lcg_next(void) {
  lcg_state = lcg_state * 6364136223846793005ull + 1442695040888963407ull;
  return lcg_state >> 11;
}
/* Uniform on [0, 1), 53 bits. */
static inline double lcg_unit(void) { return (double)lcg_next() * 0x1p-53; }

/* A dprl_cancel whose check counts its calls and says stop from call
** number stop_at on (0: never). */
typedef struct counter {
  int calls, stop_at;
} counter;

static inline int count_check(void *ctx) {
  counter *c = ctx;
  c->calls++;
  return c->stop_at && c->calls >= c->stop_at;
}

static inline dprl_cancel make_cancel(counter *c, int stop_at) {
  c->calls = 0;
  c->stop_at = stop_at;
  dprl_cancel k = {count_check, c, 0, 0};
  return k;
}

/* The error's message is want; both are printed when it is not. */
static inline int msg_is(const dprl_error *e, const char *want) {
  if (strcmp(e->msg, want) == 0) return 1;
  printf("#   message: \"%s\"\n#   wanted:  \"%s\"\n", e->msg, want);
  return 0;
}

#endif
