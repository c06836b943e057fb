/*
** test_rows_steps.c: rows/steps.h, rows to episodes: the step buffer
** (random order in, episodes in key order with their steps by t out; key
** order with keys split between the dense map and the hash, blocks laid
** out whole from their runs in every chunk, a large block among small ones
** over several chunks, blocks partitioned in place, the lowest-rank
** duplicate t, freeing as it is read), the key index, and the stream of
** grouped rows.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "util.h"
#include "rows/steps.h"

/* Episodes: random order in, grouped by key and sorted by t out. */
static void test_step_buffer(void) {
  dprl_step_buffer b = {0};
  dprl_error err = {0};
  enum { E = 300, L = 20 }; /* more than one block of 256 episodes */
  int64_t order[E * L];
  for (int i = 0; i < E * L; i++) order[i] = i;
  for (int i = E * L - 1; i > 0; i--) {
    int j = (int)(lcg_unit() * (i + 1));
    int64_t tmp = order[i];
    order[i] = order[j];
    order[j] = tmp;
  }
  int ok = 1;
  for (int i = 0; i < E * L; i++) {
    int64_t e = order[i] / L, t = order[i] % L;
    dprl_key k = {0, 1000 - e * 3, NULL, 0};
    ok &= dprl_step_buffer_push(&b, &k, t * 10, (uint32_t)(e % 7), (double)order[i], &err) == 0;
  }
  CHECK(ok, "buffer: pushes");
  CHECK(dprl_step_buffer_group(&b, &err) == DPRL_OK && b.n == E * L, "buffer: group");
  int sorted = 1;
  dprl_key prev = {0}, k;
  size_t total = 0;
  for (size_t e = 0; e < dprl_step_buffer_episodes(&b); e++) {
    const dprl_step *st;
    size_t n;
    dprl_step_buffer_episode_key(&b, e, &k);
    if (e && dprl_key_compare(&prev, &k) >= 0) sorted = 0;
    prev = k;
    if (dprl_step_buffer_episode(&b, e, &st, &n, &err)) sorted = 0;
    total += n;
    for (size_t i = 0; i < n; i++) {
      int64_t orig = (1000 - k.ival) / 3 * L + st[i].t / 10;
      if (st[i].reward != (double)orig || (i > 0 && st[i - 1].t >= st[i].t)) sorted = 0;
    }
  }
  sorted &= total == E * L;
  CHECK(sorted, "buffer: episodes in key order, steps by t, every step kept");
  CHECK(sizeof(dprl_step) == 24, "buffer: 24 bytes a step");
  /* A buffer is grouped once: a new one for the duplicate. */
  dprl_step_buffer_free(&b);
  dprl_key k0 = {0, 1000, NULL, 0};
  for (int i = 0; i < 3; i++) {
    dprl_key ki = {0, 1000 - i, NULL, 0};
    dprl_step_buffer_push(&b, &ki, 0, 0, 1.0, &err);
  }
  dprl_step_buffer_push(&b, &k0, 0, 0, 1.0, &err);
  const dprl_step *st;
  size_t n;
  dprl_step_buffer_group(&b, &err);
  dprl_step_buffer_episode_key(&b, 2, &k);
  CHECK(k.ival == 1000 && dprl_step_buffer_episode(&b, 2, &st, &n, &err) == DPRL_EINVAL &&
            strcmp(err.msg, "duplicate (episode, t) = (1000, 0)") == 0,
        "buffer: duplicate (episode, t), dense t");
  dprl_step_buffer_free(&b);
  dprl_error e3 = {0};
  int64_t sparse_t[] = {5, 100, 7, 100};
  for (int i = 0; i < 4; i++) dprl_step_buffer_push(&b, &k0, sparse_t[i], 0, 0, &e3);
  dprl_step_buffer_group(&b, &e3);
  CHECK(dprl_step_buffer_episode(&b, 0, &st, &n, &e3) == DPRL_EINVAL &&
            strcmp(e3.msg, "duplicate (episode, t) = (1000, 100)") == 0,
        "buffer: duplicate (episode, t), sparse t");
  dprl_step_buffer_free(&b);
  /* text keys */
  dprl_error e2 = {0};
  const char *names[] = {"b", "a", "b", "ab"};
  for (int i = 0; i < 4; i++) {
    dprl_key tk = {1, 0, names[i], strlen(names[i])};
    dprl_step_buffer_push(&b, &tk, i, 0, 0, &e2);
  }
  dprl_step_buffer_group(&b, &e2);
  dprl_step_buffer_episode_key(&b, 1, &k);
  CHECK(dprl_step_buffer_episodes(&b) == 3 && k.len == 2 && memcmp(k.text, "ab", 2) == 0,
        "buffer: text keys interned and ordered");
  dprl_step_buffer_free(&b);
}

/* The key index: text keys of every length 0..40 sharing prefixes (and
** NUL bytes), integers dense, negative and sparse, interleaved so that the
** last-key cache switches kinds; every key keeps its first index, and an
** integer never matches the text of its digits or a key seen last. */
static void test_key_index(void) {
  dprl_episode_index x = {0};
  dprl_error err = {0};
  char texts[41][48];
  int ok = 1;
  uint32_t idx[41 + 41 + 5], got;
  const int64_t ints[5] = {0, 7, -3, (int64_t)1 << 62, 123456789012345};
  for (int pass = 0; pass < 2; pass++) {
    for (int len = 0; len <= 40; len++) {
      for (int i = 0; i < len; i++) texts[len][i] = i == 17 ? 0 : (char)('a' + i % 3);
      dprl_key tk = {1, 0, texts[len], (size_t)len};
      dprl_key ik = {0, len, NULL, 0}; /* integer len: never the text */
      dprl_key big = {0, ints[len % 5], NULL, 0};
      ok &= dprl_key_intern(&x, &tk, &got, &err) == DPRL_OK;
      if (pass == 0) idx[len] = got;
      else ok &= got == idx[len];
      ok &= dprl_key_intern(&x, &ik, &got, &err) == DPRL_OK;
      if (pass == 0) idx[41 + len] = got;
      else ok &= got == idx[41 + len];
      ok &= dprl_key_intern(&x, &big, &got, &err) == DPRL_OK;
      if (pass == 0 && len < 5) idx[82 + len] = got;
      else ok &= got == idx[82 + len % 5];
      ok &= dprl_key_intern(&x, &big, &got, &err) == DPRL_OK && got == idx[82 + len % 5];
    }
  }
  /* 41 texts + 41 integers 0..40 + 3 integers not among 0..40 */
  ok &= x.n == 41 + 41 + 3;
  for (int len = 0; len <= 40; len++) {
    dprl_key tk = {1, 0, texts[len], (size_t)len};
    ok &= dprl_key_find(&x, &tk, &got) && got == idx[len];
    dprl_key k;
    dprl_key_get(&x, idx[len], &k);
    ok &= k.is_text && k.len == (size_t)len && memcmp(k.text, texts[len], (size_t)len) == 0;
  }
  dprl_key miss = {1, 0, "abcabcabcabcabcabca", 19}; /* no NUL at 17 */
  ok &= !dprl_key_find(&x, &miss, &got);
  CHECK(ok, "key index: texts of every length, integers of every kind, each its own index");
  dprl_key_index_free(&x);
}

static void test_stream(void) {
  dprl_episode_stream s = {0};
  dprl_error err = {0};
  int64_t keys[] = {1, 1, 1, 2, 2, 5};
  int64_t ts[] = {2, 0, 1, 0, 1, 0};
  int finished, closed = 0;
  const dprl_step *ep;
  size_t n;
  int ok = 1;
  for (int i = 0; i < 6; i++) {
    dprl_key k = {0, keys[i], NULL, 0};
    ok &= dprl_episode_stream_push(&s, &k, ts[i], 0, (double)i, &finished, &ep, &n, &err) == 0;
    if (finished) {
      closed++;
      if (closed == 1) ok &= n == 3 && ep[0].t == 0 && ep[2].t == 2 && ep[0].reward == 1.0;
      if (closed == 2) ok &= n == 2;
    }
  }
  ok &= dprl_episode_stream_finish(&s, &ep, &n, &err) == 0 && n == 1 && ep[0].reward == 5.0;
  CHECK(ok && closed == 2, "stream: episodes closed and sorted by t");
  dprl_key back = {0, 3, NULL, 0};
  CHECK(dprl_episode_stream_push(&s, &back, 0, 0, 0, &finished, &ep, &n, &err) == DPRL_EINVAL &&
            strstr(err.msg, "episode 3 came after episode 5"),
        "stream: a key going back is an error");
  dprl_episode_stream_free(&s);
}

/* Keys of every kind mixed (dense, negative, huge integers, texts, one
** text per integer), in random order and often repeated within a stage of
** DPRL_STAGE rows: every step lands in its own key's episode.  Expected:
** the step's reward encodes its key and t, checked per episode. */
static void test_step_buffer_mixed(void) {
  enum { K = 400, L = 9 };
  dprl_step_buffer b = {0};
  dprl_error err = {0};
  char texts[K][16];
  dprl_key keys[K];
  for (int i = 0; i < K; i++) {
    int kind = i % 4;
    snprintf(texts[i], sizeof texts[i], "k%03d", i);
    keys[i] = kind == 0   ? (dprl_key){0, i, NULL, 0}
              : kind == 1 ? (dprl_key){0, -1000 - i, NULL, 0}
              : kind == 2 ? (dprl_key){0, ((int64_t)1 << 62) + i, NULL, 0}
                          : (dprl_key){1, 0, texts[i], strlen(texts[i])};
  }
  int order[K * L];
  for (int i = 0; i < K * L; i++) order[i] = i;
  for (int i = K * L - 1; i > 0; i--) {
    int j = (int)(lcg_unit() * (i + 1)), tmp = order[i];
    order[i] = order[j];
    order[j] = tmp;
  }
  int ok = 1;
  for (int i = 0; i < K * L; i++) {
    int key = order[i] % K, t = order[i] / K;
    ok &= dprl_step_buffer_push(&b, &keys[key], t, 0, (double)order[i], &err) == DPRL_OK;
  }
  ok &= dprl_step_buffer_group(&b, &err) == DPRL_OK && dprl_step_buffer_episodes(&b) == K;
  for (size_t e = 0; ok && e < dprl_step_buffer_episodes(&b); e++) {
    dprl_key k;
    const dprl_step *st;
    size_t n;
    dprl_step_buffer_episode_key(&b, e, &k);
    int want = -1;
    for (int i = 0; i < K; i++)
      if (dprl_key_compare(&k, &keys[i]) == 0) want = i;
    ok &= want >= 0 && dprl_step_buffer_episode(&b, e, &st, &n, &err) == DPRL_OK && n == L;
    for (size_t i = 0; ok && i < n; i++)
      ok &= st[i].t == (int64_t)i && st[i].reward == (double)(want + K * (int)i);
  }
  CHECK(ok, "buffer: mixed integer and text keys, repeated within a stage, each step in its episode");
  dprl_step_buffer_free(&b);
}

/* Key order when dense integer keys are split between the dense map and
** the hash (a key above the map's reach when it first came is hashed, and
** the map grows past it later), with negative, huge and text keys: the
** episodes come out in key order, each with its own steps. */
static void test_step_buffer_key_order(void) {
  enum { D = 100000, X = 150, L = 2 };
  static dprl_key keys[D + X];
  static char texts[X][16];
  static int order[(D + X) * L];
  dprl_step_buffer b = {0};
  dprl_error err = {0};
  for (int i = 0; i < D; i++) keys[i] = (dprl_key){0, i, NULL, 0};
  for (int i = 0; i < X; i++) {
    snprintf(texts[i], sizeof texts[i], "t%03d", 149 - i);
    keys[D + i] = i % 3 == 0   ? (dprl_key){0, -5 - 7 * i, NULL, 0}
                  : i % 3 == 1 ? (dprl_key){0, ((int64_t)1 << 40) + 3 * i, NULL, 0}
                               : (dprl_key){1, 0, texts[i], strlen(texts[i])};
  }
  int n = (D + X) * L;
  for (int i = 0; i < n; i++) order[i] = i;
  for (int i = n - 1; i > 0; i--) {
    int j = (int)(lcg_unit() * (i + 1)), tmp = order[i];
    order[i] = order[j];
    order[j] = tmp;
  }
  int ok = 1;
  for (int i = 0; i < n; i++)
    ok &= dprl_step_buffer_push(&b, &keys[order[i] % (D + X)], order[i] / (D + X), 0,
                                (double)(order[i] % (D + X)), &err) == DPRL_OK;
  ok &= dprl_step_buffer_group(&b, &err) == DPRL_OK &&
        dprl_step_buffer_episodes(&b) == (size_t)(D + X);
  int hashed_dense = 0;
  for (int i = D / 2; i < D; i++) /* some dense keys did go to the hash */
    hashed_dense += !(b.ep.dsize > (size_t)i && b.ep.dmap[i]);
  dprl_key prev = {0};
  for (size_t e = 0; ok && e < dprl_step_buffer_episodes(&b); e++) {
    dprl_key k;
    const dprl_step *st;
    size_t len;
    dprl_step_buffer_episode_key(&b, e, &k);
    ok &= e == 0 || dprl_key_compare(&prev, &k) < 0;
    prev = k;
    ok &= dprl_step_buffer_episode(&b, e, &st, &len, &err) == DPRL_OK && len == L;
    for (size_t i = 0; ok && i < len; i++)
      ok &= dprl_key_compare(&keys[(int)st[i].reward], &k) == 0 && st[i].t == (int64_t)i;
  }
  CHECK(hashed_dense > 0, "buffer: the setup puts some dense keys in the hash");
  CHECK(ok, "buffer: dense keys split between map and hash, and other keys: key order");
  dprl_step_buffer_free(&b);
}

/* A block of episodes larger than DPRL_BLOCK_STEPS (3 episodes of 30,000
** steps: one block of 90,000) is partitioned in place and each episode
** sorted alone: dense t, sparse t, and a duplicate in each. */
static void test_step_buffer_large_block(void) {
  enum { E = 3, L = 30000 };
  static int order[E * L];
  for (int dup = 0; dup < 3; dup++) { /* none, dense episode, sparse episode */
    dprl_step_buffer b = {0};
    dprl_error err = {0};
    for (int i = 0; i < E * L; i++) order[i] = i;
    for (int i = E * L - 1; i > 0; i--) {
      int j = (int)(lcg_unit() * (i + 1)), tmp = order[i];
      order[i] = order[j];
      order[j] = tmp;
    }
    int ok = 1;
    for (int i = 0; i < E * L; i++) {
      int e = order[i] % E, j = order[i] / E;
      int64_t t = e == 2 ? 7 * (int64_t)j : (int64_t)j; /* episode 2: sparse t */
      if (dup == 1 && e == 0 && (j == 123 || j == 500)) t = j + 1; /* smallest: 124 */
      if (dup == 2 && e == 2 && j == 5) t = 7 * 6;
      dprl_key k = {0, 10 + e, NULL, 0};
      ok &= dprl_step_buffer_push(&b, &k, t, (uint32_t)e, (double)j, &err) == DPRL_OK;
    }
    ok &= dprl_step_buffer_group(&b, &err) == DPRL_OK && dprl_step_buffer_episodes(&b) == E;
    int rc = 0;
    for (size_t e = 0; ok && !rc && e < E; e++) {
      const dprl_step *st;
      size_t n;
      rc = dprl_step_buffer_episode(&b, e, &st, &n, &err);
      for (size_t i = 0; !rc && i < n; i++)
        ok &= n == L && st[i].reward == (double)i && st[i].state == e &&
              st[i].t == (e == 2 ? 7 * (int64_t)i : (int64_t)i);
    }
    if (dup == 0) CHECK(ok && !rc, "buffer: a block over DPRL_BLOCK_STEPS, each episode by t");
    if (dup == 1)
      CHECK(rc == DPRL_EINVAL && strcmp(err.msg, "duplicate (episode, t) = (10, 124)") == 0,
            "buffer: a block over DPRL_BLOCK_STEPS, duplicate t (dense)");
    if (dup == 2)
      CHECK(rc == DPRL_EINVAL && strstr(err.msg, "(12, 42)") != NULL,
            "buffer: a block over DPRL_BLOCK_STEPS, duplicate t (sparse)");
    dprl_step_buffer_free(&b);
  }
}

/* Several blocks, one of them over DPRL_BLOCK_STEPS, over several chunks:
** each chunk was partitioned by block first, then the blocks are made
** contiguous and the large one partitioned by episode.  And the same rows
** with only small blocks, read from each block's run in every chunk. */
static void test_step_buffer_mixed_blocks(void) {
  enum { E = 600, LONG = 70000, SHORT = 200 }; /* blocks of 256 x 200 steps */
  for (int big = 0; big < 2; big++) {
    size_t total = (size_t)(E - 1) * SHORT + (big ? LONG : SHORT);
    int64_t *code = malloc(total * sizeof *code); /* episode * 2^20 + t */
    size_t at = 0;
    for (int e = 0; e < E; e++)
      for (int t = 0; t < (e == 3 && big ? LONG : SHORT); t++) code[at++] = ((int64_t)e << 20) + t;
    for (size_t i = total - 1; i > 0; i--) {
      size_t j = (size_t)(lcg_unit() * (double)(i + 1));
      int64_t tmp = code[i];
      code[i] = code[j];
      code[j] = tmp;
    }
    dprl_step_buffer b = {0};
    dprl_error err = {0};
    int ok = 1;
    for (size_t i = 0; i < total; i++) {
      dprl_key k = {0, 1000 - (code[i] >> 20), NULL, 0}; /* keys in reverse */
      ok &= dprl_step_buffer_push(&b, &k, code[i] & 0xfffff, (uint32_t)(code[i] >> 20),
                                  (double)code[i], &err) == DPRL_OK;
    }
    ok &= dprl_step_buffer_group(&b, &err) == DPRL_OK && dprl_step_buffer_episodes(&b) == E;
    ok &= big ? b.runs == NULL : b.runs != NULL; /* the layout this test is about */
    size_t seen = 0;
    for (size_t r = 0; ok && r < E; r++) {
      const dprl_step *st;
      size_t n;
      int e = E - 1 - (int)r; /* key 1000 - e, in key order */
      ok &= dprl_step_buffer_episode(&b, r, &st, &n, &err) == DPRL_OK &&
            n == (size_t)(e == 3 && big ? LONG : SHORT);
      for (size_t i = 0; ok && i < n; i++)
        ok &= st[i].t == (int64_t)i && st[i].state == (uint32_t)e &&
              st[i].reward == (double)(((int64_t)e << 20) + (int64_t)i);
      seen += n;
      /* read by runs, every chunk holds a part of every block: nothing is
      ** freed before the end */
      dprl_step_buffer_done_before(&b, r + 1);
      if (!big && r == E / 2) ok &= b.chunks[0] != NULL;
    }
    CHECK(ok && seen == total, big ? "buffer: one block over DPRL_BLOCK_STEPS among small ones, "
                                     "over several chunks"
                                   : "buffer: small blocks over several chunks, read by runs");
    dprl_step_buffer_free(&b);
    free(code);
  }
}

/* Small blocks are laid out whole, but a duplicate t is an error of its
** own episode only, asked for in any order, at its smallest duplicated t
** whatever the order of the rows. */
static void test_step_buffer_block_duplicates(void) {
  dprl_step_buffer b = {0};
  dprl_error err = {0};
  /* episode 5: t 0, 3, 3, 1, 1, 5 (six steps over 0..5, so placed by t),
  ** duplicates at 3 and then 1 in row order;
  ** episode 9: sparse t with a duplicate; episode 2: fine */
  const int64_t rows[][2] = {{9, 10}, {5, 0}, {5, 3}, {2, 0}, {5, 3}, {9, 30}, {5, 1},
                             {2, 1}, {9, 10}, {5, 1}, {5, 5}};
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    dprl_key k = {0, rows[i][0], NULL, 0};
    dprl_step_buffer_push(&b, &k, rows[i][1], 0, 1.0, &err);
  }
  const dprl_step *st;
  size_t n;
  int ok = dprl_step_buffer_group(&b, &err) == DPRL_OK;
  ok &= dprl_step_buffer_episode(&b, 2, &st, &n, &err) == DPRL_EINVAL &&
        strcmp(err.msg, "duplicate (episode, t) = (9, 10)") == 0;
  err = (dprl_error){0};
  ok &= dprl_step_buffer_episode(&b, 0, &st, &n, &err) == DPRL_OK && n == 2 && st[0].t == 0 &&
        st[1].t == 1;
  ok &= dprl_step_buffer_episode(&b, 1, &st, &n, &err) == DPRL_EINVAL &&
        strcmp(err.msg, "duplicate (episode, t) = (5, 1)") == 0;
  CHECK(ok, "buffer: a duplicate t is its own episode's error, at its smallest t");
  dprl_step_buffer_free(&b);
}

/* Episodes consumed in order with most of them skipped, freeing as it goes
** (dp_prefix_stable reads only the examined ones): every episode asked for
** is whole, whichever of its block's episodes came first (under
** AddressSanitizer a freed chunk read here is an error). */
static void test_step_buffer_done_before(void) {
  enum { E = 3000, L = 100 };
  static int order[E * L];
  dprl_step_buffer b = {0};
  dprl_error err = {0};
  for (int i = 0; i < E * L; i++) order[i] = i;
  for (int i = E * L - 1; i > 0; i--) {
    int j = (int)(lcg_unit() * (i + 1)), tmp = order[i];
    order[i] = order[j];
    order[j] = tmp;
  }
  int ok = 1;
  for (int i = 0; i < E * L; i++) {
    dprl_key k = {0, order[i] % E, NULL, 0};
    ok &= dprl_step_buffer_push(&b, &k, order[i] / E, 0, (double)order[i], &err) == DPRL_OK;
  }
  b.frees_as_read = 1; /* as dp_prefix_stable sets it: contiguous blocks */
  ok &= dprl_step_buffer_group(&b, &err) == DPRL_OK && b.runs == NULL;
  int asked = 0;
  for (size_t e = 0; ok && e < E; e++) {
    if (e % 256 == 250) { /* late in its block of 256, past a chunk boundary */
      const dprl_step *st;
      size_t n;
      ok &= dprl_step_buffer_episode(&b, e, &st, &n, &err) == DPRL_OK && n == L;
      for (size_t i = 0; ok && i < n; i++) ok &= st[i].reward == (double)(e + E * i);
      asked++;
    }
    dprl_step_buffer_done_before(&b, e + 1);
    if (e == E / 2) ok &= b.chunks[0] == NULL; /* freed as it goes */
  }
  ok &= b.chunks[b.n_chunks - 1] == NULL; /* all freed at the end */
  CHECK(ok && asked == E / 256, "buffer: episodes skipped while freeing, each asked one whole");
  dprl_step_buffer_free(&b);
}

/* Many episodes of random lengths in random order: both partition passes
** (70,000 episodes: 137 blocks of 512, then 512 buckets per block) with
** their interleaved chains; every step must come back in its episode, in t
** order. */
static void test_step_buffer_large(void) {
  enum { E = 70000 };
  dprl_step_buffer b = {0};
  dprl_error err = {0};
  int *len = malloc(E * sizeof *len);
  size_t total = 0;
  for (int e = 0; e < E; e++) total += (size_t)(len[e] = (int)(lcg_unit() * 6));
  int64_t *code = malloc(total * sizeof *code);
  size_t at = 0;
  for (int e = 0; e < E; e++)
    for (int t = 0; t < len[e]; t++) code[at++] = (int64_t)e * 8 + t;
  for (size_t i = total - 1; i > 0; i--) {
    size_t j = (size_t)(lcg_unit() * (double)(i + 1));
    int64_t tmp = code[i];
    code[i] = code[j];
    code[j] = tmp;
  }
  int ok = 1;
  for (size_t i = 0; i < total; i++) {
    dprl_key k = {0, 3 * (code[i] / 8) + 7, NULL, 0};
    ok &= dprl_step_buffer_push(&b, &k, code[i] % 8, 0, (double)code[i], &err) == DPRL_OK;
  }
  ok &= dprl_step_buffer_group(&b, &err) == DPRL_OK;
  size_t seen = 0, e_out = 0;
  for (int e = 0; ok && e < E; e++) {
    if (!len[e]) continue;
    dprl_key k;
    const dprl_step *st;
    size_t n;
    dprl_step_buffer_episode_key(&b, e_out, &k);
    ok &= k.ival == 3 * (int64_t)e + 7 &&
          dprl_step_buffer_episode(&b, e_out++, &st, &n, &err) == DPRL_OK && n == (size_t)len[e];
    for (size_t i = 0; ok && i < n; i++)
      ok &= st[i].t == (int64_t)i && st[i].reward == (double)((int64_t)e * 8 + (int64_t)i);
    seen += n;
  }
  CHECK(ok && seen == total && e_out == dprl_step_buffer_episodes(&b),
        "buffer: 70,000 episodes in random order, every step back in its episode, by t");
  dprl_step_buffer_free(&b);
  free(len);
  free(code);
}

int main(void) {
  test_step_buffer();
  test_step_buffer_mixed();
  test_step_buffer_key_order();
  test_step_buffer_large_block();
  test_step_buffer_mixed_blocks();
  test_step_buffer_block_duplicates();
  test_step_buffer_done_before();
  test_step_buffer_large();
  test_key_index();
  test_stream();
  return CHECK_DONE();
}
