/*
** internal.h: what the three files of rows/ share and nothing else uses:
** the key hash (inline: it runs once a row) and the sort of one episode.
*/
#ifndef DPRL_ROWS_INTERNAL_H
#define DPRL_ROWS_INTERNAL_H

#include <string.h>

#include "rows/steps.h"

/* The hash of an episode key: splitmix64 of an integer, a word-wise
** multiply-mix of a text. */
static inline uint64_t dprl_key_hash(const dprl_key *k) {
  uint64_t h;
  if (!k->is_text) {
    h = (uint64_t)k->ival + 0x9E3779B97F4A7C15ull; /* splitmix64 finaliser */
    h = (h ^ (h >> 30)) * 0xBF58476D1CE4E5B9ull;
    h = (h ^ (h >> 27)) * 0x94D049BB133111EBull;
    return h ^ (h >> 31);
  }
  /* 8 bytes at a time, each word mixed by a multiply (keys such as UUIDs
  ** are 36 bytes: a byte-wise hash cost more than the rest of a row) */
  h = 1469598103934665603ull ^ (uint64_t)k->len;
  size_t i = 0;
  for (; i + 8 <= k->len; i += 8) {
    uint64_t w;
    memcpy(&w, k->text + i, 8);
    h = (h ^ w) * 0x9E3779B97F4A7C15ull;
    h ^= h >> 32;
  }
  uint64_t w = 0;
  for (size_t j = 0; i < k->len; i++, j++) w |= (uint64_t)(unsigned char)k->text[i] << (8 * j);
  h = (h ^ w) * 0xBF58476D1CE4E5B9ull;
  h = (h ^ (h >> 27)) * 0x94D049BB133111EBull;
  return h ^ (h >> 31);
}

/* Sorts steps by t; 1 and *dup = the smallest t that occurs twice, or 0. */
int dprl_steps_sort_by_t(dprl_step *steps, size_t n, int64_t *dup);

#endif
