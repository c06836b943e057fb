/*
** print.h: the fingerprint of a unit's content, and a set of fingerprints.
**
** A key names a unit (an episode, an expert); the same unit may come under
** two keys (integer 7 and text '7', keys renamed by a query).  The
** fingerprint is a 64-bit hash of what a release reads of the unit, its
** key excluded, so that the frame can tell that two groups of a statement
** hold the same unit under different keys (ALGORITHMS.md §12).  An
** episode's fingerprint folds its steps in the order of t; a unit made of
** episodes (an expert) adds up its episodes' fingerprints, so their order
** and keys do not matter.  Not a cryptographic hash: it tells copies
** apart from other content, it does not resist a chosen collision.
*/
#ifndef DPRL_PRINT_H
#define DPRL_PRINT_H

#include <string.h>

#include "rows/steps.h"

/* The splitmix64 finaliser: a bijection of 64-bit words that mixes every
** bit into every other. */
static inline uint64_t dprl_print_mix(uint64_t h) {
  h = (h ^ (h >> 30)) * 0xBF58476D1CE4E5B9ull;
  h = (h ^ (h >> 27)) * 0x94D049BB133111EBull;
  return h ^ (h >> 31);
}

/* The print of a sequence of words so far, and the next word. */
static inline uint64_t dprl_print_word(uint64_t h, uint64_t w) {
  return dprl_print_mix((h + 0x9E3779B97F4A7C15ull) ^ w);
}

static inline uint64_t dprl_print_int(uint64_t h, int64_t v) {
  return dprl_print_word(h, (uint64_t)v);
}

/* A double by its bits, with -0.0 and 0.0 as one value (SQL's equality
** treats them alike) and one NaN. */
static inline uint64_t dprl_print_double(uint64_t h, double x) {
  uint64_t w;
  if (x == 0) x = 0.0;
  if (x != x) w = 0x7FF8000000000000ull;
  else memcpy(&w, &x, sizeof w);
  return dprl_print_word(h, w);
}

/* The start of a print over n items (the count is part of the content). */
static inline uint64_t dprl_print_start(uint64_t n) {
  return dprl_print_word(0x2545F4914F6CDD1Dull, n);
}

/* An episode's steps, sorted by t: (t, state, reward) each, folded into h
** (dprl_print_steps starts from the count). */
uint64_t dprl_print_steps_from(uint64_t h, const dprl_step *steps, size_t n);
uint64_t dprl_print_steps(const dprl_step *steps, size_t n);

/* A multiset of prints (a unit's episodes): sum = 0, add each with
** dprl_print_add, then dprl_print_end(sum, count). */
static inline uint64_t dprl_print_add(uint64_t sum, uint64_t p) { return sum + dprl_print_mix(p); }
static inline uint64_t dprl_print_end(uint64_t sum, uint64_t count) {
  return dprl_print_word(dprl_print_start(count), sum);
}

/* A set of prints (open addressing; the print is its own hash). */
typedef struct dprl_print_set {
  uint64_t *slot; /* 0 = empty; print 0 is has_zero */
  size_t n_slots, n;
  int has_zero;
} dprl_print_set;

int dprl_print_set_add(dprl_print_set *s, uint64_t p, dprl_error *err);
int dprl_print_set_has(const dprl_print_set *s, uint64_t p);
void dprl_print_set_free(dprl_print_set *s);

#endif
