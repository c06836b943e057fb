/*
** test_prefix_stable_examined.c: which trajectories dp_prefix_stable
** examines (prefix_stable/examined.c, ALGORITHMS.md section 7.1): the
** draws against a release run on the same seed, key order against a list
** written out, the one-pass sample replayed by hand and its law, deferred
** errors raised only for examined episodes, and the read mode.
**
** Fixed seeds throughout; every test whose outcome depends on noise states,
** in a comment and in a CHECK, a margin that bounds its failure probability
** below 1e-12.
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "util_prefix_stable.h"
#include "prefix_stable/prefix_stable.h"
#include "prefix_stable/examined.h"

/* ---- which trajectories are examined (examined.c, ALGORITHMS.md 7.1) -- */

/* The T runs of the two-pass read: the draws are those of
** dprl_prefix_release_run on the same seed (run over n trajectories), the
** chosen keys are exactly the distinct draws in order of first draw, and
** the stream is left where T calls of dprl_rng_below(n) leave it. */
static void test_examined_choose(void) {
  dprl_error err = {0};
  dprl_policy_table pt;
  int64_t m = 3, S = 4, A = 2, L = 5;
  build_policies(&pt, m, S, A, uniform_policy, &A);
  int64_t ns[] = {1, 2, 7, 40}, Ts[] = {1, 3, 40, 100};
  int draws_ok = 1, set_ok = 1, order_ok = 1, stream_ok = 1, drawn_ok = 1, bound_ok = 1;
  for (size_t a = 0; a < sizeof ns / sizeof ns[0]; a++) {
    int64_t n = ns[a];
    traj_buf tb = {0};
    for (int64_t j = 0; j < n; j++) {
      tb_begin(&tb);
      for (int64_t t = 0, len = xs_below(2 * L); t < len; t++)
        tb_step(&tb, xs_below(S), xs_below(A));
    }
    dprl_trajectories tr = tb_view(&tb);
    for (size_t b = 0; b < sizeof Ts / sizeof Ts[0]; b++) {
      int64_t T = Ts[b];
      for (uint64_t seed = 1; seed <= 5; seed++) {
        dprl_prefix_params pp;
        dprl_prefix_params_derive(50, 1e-3, 0.05, A, T, L, DPRL_PREFIX_OPTIMAL, &pp, &err);
        dprl_rng rng;
        dprl_prefix_release rel;
        dprl_rng_init_seeded(&rng, seed, DPRL_STREAM_PREFIX);
        if (dprl_prefix_release_run(&pt, &tr, &pp, &rng, &rel, &err)) {
          CHECK(0, "examined: the reference release runs");
          printf("#   error: %s\n", err.msg);
          continue;
        }
        int64_t run[100], K = -1;
        uint32_t chosen[100];
        dprl_rng_init_seeded(&rng, seed, DPRL_STREAM_PREFIX);
        int rc = dprl_examined_choose(&rng, n, T, run, chosen, &K, &err);
        /* the words T draws use, by hand */
        dprl_rng ref;
        dprl_rng_init_seeded(&ref, seed, DPRL_STREAM_PREFIX);
        for (int64_t c = 0; c < T; c++) dprl_rng_below(&ref, (uint64_t)n);
        if (dprl_rng_u64(&rng) != dprl_rng_u64(&ref)) stream_ok = 0;
        if (rc || K < 1 || K > T || K > n) {
          bound_ok = 0;
          dprl_prefix_release_free(&rel);
          continue;
        }
        int seen[40] = {0}, distinct = 0;
        for (int64_t c = 0; c < T; c++) {
          if (run[c] < 0 || run[c] >= K || chosen[run[c]] != (uint32_t)rel.traj[c]) draws_ok = 0;
          else if (!seen[rel.traj[c]]++) {
            /* a first draw: the next chosen key */
            if (run[c] != distinct) order_ok = 0;
            distinct++;
          }
        }
        if (distinct != K) set_ok = 0;
        for (int64_t i = 0; i < K; i++)
          if (!seen[chosen[i]]) set_ok = 0;
        /* the glue's form: only the chosen trajectories, in that order */
        traj_buf tb2 = {0};
        for (int64_t i = 0; i < K; i++) {
          tb_begin(&tb2);
          for (int64_t p = tr.offsets[chosen[i]]; p < tr.offsets[chosen[i] + 1]; p++)
            tb_step(&tb2, tr.states[p], tr.actions[p]);
        }
        dprl_trajectories tr2 = tb_view(&tb2);
        dprl_prefix_release again;
        if (dprl_prefix_release_drawn(&pt, &tr2, &pp, &rng, run, &again, &err)) drawn_ok = 0;
        else {
          for (int64_t c = 0; c < T; c++)
            if (again.k[c] != rel.k[c]) drawn_ok = 0;
          dprl_prefix_release_free(&again);
        }
        tb_free(&tb2);
        dprl_prefix_release_free(&rel);
      }
    }
    tb_free(&tb);
  }
  CHECK(bound_ok, "examined: 1 <= K <= min(T, n)");
  CHECK(draws_ok, "examined: run c's chosen key is dprl_prefix_release_run's draw for run c");
  CHECK(set_ok, "examined: the chosen keys are exactly the set of draws");
  CHECK(order_ok, "examined: chosen in order of first draw");
  CHECK(stream_ok, "examined: the draws use the words of T dprl_rng_below(n)");
  CHECK(drawn_ok, "examined: release_drawn over the chosen = release_run (same seed)");

  /* no trajectory: T runs of none, no randomness used */
  dprl_rng rng, ref;
  int64_t run[4] = {7, 7, 7, 7}, K = -1;
  uint32_t chosen[1];
  dprl_rng_init_seeded(&rng, 9, DPRL_STREAM_PREFIX);
  dprl_rng_init_seeded(&ref, 9, DPRL_STREAM_PREFIX);
  int rc = dprl_examined_choose(&rng, 0, 4, run, chosen, &K, &err);
  CHECK(rc == DPRL_OK && K == 0 && run[0] == -1 && run[1] == -1 && run[2] == -1 && run[3] == -1,
        "examined: n = 0 gives K = 0 and every run -1");
  CHECK(dprl_rng_u64(&rng) == dprl_rng_u64(&ref), "examined: n = 0 uses no randomness");
  dprl_policy_free(&pt);
}

/* Key order: SQLite's (integers by value, then BINARY text: bytes
** unsigned, a prefix first), whatever the order the keys were interned. */
static void test_examined_key_order(void) {
  static const char *texts[] = {"", "A", "Z", "a", "ab", "abc", "b", "\xc3\xa9"};
  static const int64_t ints[] = {INT64_MIN, -5, -1, 0, 3, 42, 1000, INT64_MAX};
  enum { NI = 8, NT = 8, N = NI + NT };
  dprl_key sorted[N]; /* the expected order, written out */
  for (int i = 0; i < NI; i++) sorted[i] = (dprl_key){0, ints[i], NULL, 0};
  for (int i = 0; i < NT; i++) sorted[NI + i] = (dprl_key){1, 0, texts[i], strlen(texts[i])};
  int ok = 1, perm_ok = 1;
  for (int round = 0; round < 20; round++) {
    int perm[N];
    for (int i = 0; i < N; i++) perm[i] = i;
    for (int i = N - 1; i > 0; i--) { /* interned in a shuffled order */
      int j = (int)xs_below(i + 1), t = perm[i];
      perm[i] = perm[j];
      perm[j] = t;
    }
    dprl_episode_index ids = {0};
    dprl_error err = {0};
    uint32_t got, order[N];
    for (int i = 0; i < N; i++) dprl_key_intern(&ids, &sorted[perm[i]], &got, &err);
    int rc = dprl_examined_key_order(&ids, order, NULL, &err);
    int hit[N] = {0};
    for (int i = 0; !rc && i < N; i++) {
      if (order[i] >= N || hit[order[i]]++) perm_ok = 0;
      else if (perm[order[i]] != i) ok = 0; /* id order[i] holds sorted[perm[order[i]]] */
    }
    if (rc || ids.n != N) ok = 0;
    dprl_key_index_free(&ids);
  }
  CHECK(perm_ok, "key order: a permutation of the ids");
  CHECK(ok, "key order: integers by value, then text bytewise, a prefix first");
}

/* Algorithm R replayed by hand on its own stream: the members after each
** key, and then the draw of the T runs. */
static void reservoir_replay(uint64_t seed, int64_t T, uint32_t n, uint32_t *res, size_t *res_n,
                             int64_t *run, int64_t *K) {
  dprl_rng rng;
  dprl_rng_init_seeded(&rng, seed, DPRL_STREAM_PREFIX);
  *res_n = 0;
  for (uint32_t i = 0; i < n; i++) {
    if ((int64_t)*res_n < T) res[(*res_n)++] = i;
    else {
      uint64_t j = dprl_rng_below(&rng, (uint64_t)i + 1);
      if (j < (uint64_t)T) res[j] = i;
    }
  }
  for (uint64_t i = *res_n; i > 1; i--) { /* Fisher-Yates from the top */
    uint64_t j = dprl_rng_below(&rng, i);
    uint32_t t = res[i - 1];
    res[i - 1] = res[j];
    res[j] = t;
  }
  int64_t d = 0;
  for (int64_t c = 0; c < T; c++) {
    if (!n) {
      run[c] = -1;
      continue;
    }
    uint64_t u = dprl_rng_below(&rng, n);
    run[c] = u < (uint64_t)d ? (int64_t)u : d++;
  }
  *K = d;
}

static void test_reservoir(void) {
  dprl_error err = {0};
  /* the replay, with repeated rows of earlier keys between new ones */
  int replay_ok = 1, member_ok = 1, examined_ok = 1;
  for (uint64_t seed = 1; seed <= 30; seed++) {
    int64_t T = 1 + (int64_t)(seed % 7);
    uint32_t n = (uint32_t)(seed % 13) * 3;
    dprl_reservoir r;
    dprl_rng rng;
    dprl_reservoir_init(&r, T);
    dprl_rng_init_seeded(&rng, seed, DPRL_STREAM_PREFIX);
    int in_now[40] = {0};
    for (uint32_t i = 0; i < n; i++) {
      int in;
      if (dprl_reservoir_see(&r, &rng, i, &in, &err)) replay_ok = 0;
      if (in) { /* the member it may have replaced is out */
        for (uint32_t k = 0; k < i; k++) {
          int was;
          dprl_reservoir_see(&r, &rng, k, &was, &err);
          in_now[k] = was;
        }
      }
      in_now[i] = in;
      uint32_t old = (uint32_t)xs_below(i + 1); /* a row of an earlier key */
      int again;
      dprl_reservoir_see(&r, &rng, old, &again, &err);
      if (again != in_now[old]) member_ok = 0;
    }
    int64_t run[8], K;
    dprl_reservoir_draw(&r, &rng, run, &K);
    uint32_t res[8];
    size_t res_n;
    int64_t run2[8], K2;
    reservoir_replay(seed, T, n, res, &res_n, run2, &K2);
    if (r.res_n != res_n || K != K2 || (res_n && memcmp(r.res, res, res_n * sizeof *res)))
      replay_ok = 0;
    for (int64_t c = 0; c < T; c++)
      if (run[c] != run2[c]) replay_ok = 0;
    if ((uint64_t)K > (uint64_t)(T < (int64_t)n ? T : (int64_t)n)) examined_ok = 0;
    for (int64_t c = 0; c < T; c++)
      if (n ? run[c] < 0 || run[c] >= K : run[c] != -1) examined_ok = 0;
    dprl_reservoir_free(&r);
  }
  CHECK(replay_ok, "reservoir: sample and draw = Algorithm R and the draw replayed by hand");
  CHECK(member_ok, "reservoir: a key seen again is a member iff it is in the sample");
  CHECK(examined_ok, "reservoir: K <= min(T, n), every run in 0..K-1 (or -1 with no key)");

  /* T >= n: every key kept, no randomness until the draw */
  {
    dprl_reservoir r;
    dprl_rng rng, ref;
    dprl_reservoir_init(&r, 10);
    dprl_rng_init_seeded(&rng, 4, DPRL_STREAM_PREFIX);
    dprl_rng_init_seeded(&ref, 4, DPRL_STREAM_PREFIX);
    int all = 1, in;
    for (uint32_t i = 0; i < 6; i++) all &= !dprl_reservoir_see(&r, &rng, i, &in, &err) && in;
    CHECK(all && r.res_n == 6, "reservoir: T >= n keeps every key");
    CHECK(dprl_rng_u64(&rng) == dprl_rng_u64(&ref), "reservoir: T >= n draws nothing");
    dprl_error e2 = {0};
    CHECK(dprl_reservoir_see(&r, &rng, 8, &in, &e2) == DPRL_EINVAL && strstr(e2.msg, "key 8"),
          "reservoir: a key numbered out of order is refused");
    dprl_reservoir_free(&r);
  }

  /* The law: min(T, n) keys uniformly without replacement, then each run
  ** uniform on the n keys, independently. 20000 trials; by Hoeffding each
  ** frequency is within 0.04 of its probability but with probability
  ** 2 exp(-2 * 20000 * 0.04^2) < 1e-27 (38 frequencies in all). */
  {
    enum { TRIALS = 20000, NK = 10, TT = 3 };
    static int kept[NK], first[NK], pair;
    for (uint64_t seed = 1; seed <= TRIALS; seed++) {
      dprl_reservoir r;
      dprl_rng rng;
      int in;
      int64_t run[TT], K;
      dprl_reservoir_init(&r, TT);
      dprl_rng_init_seeded(&rng, seed, DPRL_STREAM_PREFIX);
      for (uint32_t i = 0; i < NK; i++) dprl_reservoir_see(&r, &rng, i, &in, &err);
      for (size_t i = 0; i < r.res_n; i++) kept[r.res[i]]++;
      dprl_reservoir_draw(&r, &rng, run, &K);
      first[r.res[run[0]]]++;
      pair += r.res[run[1]] == r.res[run[2]];
      dprl_reservoir_free(&r);
    }
    int ok_kept = 1, ok_first = 1;
    for (int i = 0; i < NK; i++) {
      ok_kept &= fabs(kept[i] / (double)TRIALS - (double)TT / NK) <= 0.04;
      ok_first &= fabs(first[i] / (double)TRIALS - 1.0 / NK) <= 0.04;
    }
    CHECK(ok_kept, "reservoir: each key sampled with probability T/n (within 0.04)");
    CHECK(ok_first, "reservoir: a run's key uniform on the n keys (within 0.04)");
    CHECK(fabs(pair / (double)TRIALS - 1.0 / NK) <= 0.04,
          "reservoir: two runs draw the same key with probability 1/n (with replacement)");
  }
}

/* Deferred errors: kept while read, raised only for an examined key, the
** first in the order the rows were taken. */
static void test_reservoir_deferred(void) {
  int only_examined = 1, fired_when_due = 1, first_ok = 1, skip_ok = 1, any_fired = 0,
      any_quiet = 0;
  for (uint64_t seed = 1; seed <= 200; seed++) {
    enum { NK = 6 };
    int64_t T = 2;
    dprl_reservoir r;
    dprl_rng rng;
    dprl_error err = {0};
    dprl_reservoir_init(&r, T);
    dprl_rng_init_seeded(&rng, seed, DPRL_STREAM_PREFIX);
    uint64_t bad_row[NK] = {0}; /* 1 + the row of each key's deferred error */
    uint64_t rows = 0;
    for (uint32_t i = 0; i < NK; i++) {
      int in, read;
      dprl_reservoir_see(&r, &rng, i, &in, &err);
      for (int row = 0; in && row < 2; row++) { /* two rows a key, taken while a member */
        dprl_reservoir_take(&r, i, &read, &err);
        rows++;
        if (read != !bad_row[i]) skip_ok = 0;
        if (read && (i + seed) % 2 == 0) { /* even keys' (for odd seeds, odd keys') rows fail */
          dprl_fail(&err, DPRL_EINVAL, "row %llu of key %u fails", (unsigned long long)rows, i);
          if (dprl_reservoir_defer(&r, i, &err) || err.code || err.msg[0]) skip_ok = 0;
          bad_row[i] = rows;
        }
      }
    }
    int64_t run[2], K;
    dprl_reservoir_draw(&r, &rng, run, &K);
    int examined[NK] = {0};
    for (int64_t c = 0; c < T; c++) examined[r.res[run[c]]] = 1;
    uint64_t want_row = 0;
    uint32_t want_key = 0;
    for (uint32_t i = 0; i < NK; i++)
      if (examined[i] && bad_row[i] && (!want_row || bad_row[i] < want_row)) {
        want_row = bad_row[i];
        want_key = i;
      }
    dprl_error e2 = {0};
    int rc = dprl_reservoir_bad_examined(&r, &e2);
    char want[64];
    snprintf(want, sizeof want, "row %llu of key %u fails", (unsigned long long)want_row,
             want_key);
    if (rc && !want_row) only_examined = 0;
    if (!rc && want_row) fired_when_due = 0;
    if (rc && want_row && (rc != DPRL_EINVAL || strcmp(e2.msg, want) != 0)) first_ok = 0;
    any_fired |= rc != 0;
    any_quiet |= !rc && r.n_bad > 0; /* a deferred error left unraised */
    dprl_reservoir_free(&r);
  }
  CHECK(any_fired && any_quiet, "deferred: the seeds cover both outcomes");
  CHECK(only_examined, "deferred: no error unless an examined key failed a check");
  CHECK(fired_when_due, "deferred: an examined key's failed row raises its error");
  CHECK(first_ok, "deferred: the error raised is the first examined one, message as given");
  CHECK(skip_ok, "deferred: err cleared; a key's rows after its failure are skipped");

  dprl_reservoir r;
  dprl_error err = {0};
  int read = 7;
  dprl_reservoir_init(&r, 1);
  CHECK(dprl_reservoir_take(&r, 0, &read, &err) == DPRL_EINVAL && read == 0,
        "deferred: a row of a key never sampled is refused");
  dprl_reservoir_free(&r);
}

/* The examined trajectories into the core's arrays: chosen keys in their
** order, steps by t, other episodes skipped (a duplicate t there is not
** seen), a chosen key without rows empty. Expected arrays written from
** the rows directly. */
static void test_examined_flatten(void) {
  enum { NE = 12, LEN = 6 };
  int ok = 1, skip_ok = 1;
  for (int round = 0; round < 10; round++) {
    dprl_step_buffer buf = {0};
    dprl_error err = {0};
    /* episode e (key 10 e, or text for odd e): t = 0..LEN-1 with state 100 e + t,
    ** action e + t; rows pushed in a shuffled order; episode 3 has a
    ** duplicate t and is never chosen */
    int rows[NE * LEN + 1][2], nr = 0;
    char names[NE][8];
    for (int e = 0; e < NE; e++) {
      snprintf(names[e], sizeof names[e], "k%02d", e);
      for (int t = 0; t < LEN; t++) rows[nr][0] = e, rows[nr++][1] = t;
    }
    rows[nr][0] = 3, rows[nr++][1] = 2;
    for (int i = nr - 1; i > 0; i--) {
      int j = (int)xs_below(i + 1), a = rows[i][0], b = rows[i][1];
      rows[i][0] = rows[j][0], rows[i][1] = rows[j][1];
      rows[j][0] = a, rows[j][1] = b;
    }
    dprl_key keys[NE + 1];
    for (int e = 0; e < NE; e++)
      keys[e] = e % 2 ? (dprl_key){1, 0, names[e], 3} : (dprl_key){0, 10 * e, NULL, 0};
    keys[NE] = (dprl_key){0, -77, NULL, 0}; /* chosen, no rows */
    for (int i = 0; i < nr; i++) {
      int e = rows[i][0], t = rows[i][1];
      dprl_step_buffer_push(&buf, &keys[e], t, (uint32_t)(100 * e + t), (double)(e + t), &err);
    }
    buf.frees_as_read = round % 2;
    if (dprl_step_buffer_group(&buf, &err)) ok = 0;
    /* chosen: a few episodes (never 3) in a shuffled order, and -77 */
    int pick[NE + 1], K = 0;
    for (int e = 0; e < NE; e++)
      if (e != 3 && xs_below(3) > 0) pick[K++] = e;
    pick[K++] = NE;
    for (int i = K - 1; i > 0; i--) {
      int j = (int)xs_below(i + 1), a = pick[i];
      pick[i] = pick[j];
      pick[j] = a;
    }
    dprl_episode_index chosen = {0};
    uint32_t got;
    for (int c = 0; c < K; c++) dprl_key_intern(&chosen, &keys[pick[c]], &got, &err);
    int64_t *off = NULL, *st = NULL, *ac = NULL;
    int rc = dprl_examined_flatten(&buf, &chosen, K, &off, &st, &ac, &err);
    if (rc) {
      skip_ok = 0;
      printf("#   error: %s\n", err.msg);
    }
    int64_t at = 0;
    for (int c = 0; !rc && c < K; c++) {
      int e = pick[c], len = e == NE ? 0 : LEN;
      if (off[c] != at || off[c + 1] != at + len) ok = 0;
      for (int t = 0; t < len && off[c] == at; t++)
        if (st[at + t] != 100 * e + t || ac[at + t] != e + t) ok = 0;
      at += len;
    }
    dprl_free(off);
    dprl_free(st);
    dprl_free(ac);
    dprl_key_index_free(&chosen);
    dprl_step_buffer_free(&buf);
  }
  CHECK(skip_ok, "flatten: an episode not chosen is not read (its duplicate t unseen)");
  CHECK(ok, "flatten: chosen order, steps by t, state and action index, a key without rows empty");

  /* a chosen episode with a duplicate t is refused, the arrays left NULL */
  dprl_step_buffer buf = {0};
  dprl_error err = {0};
  dprl_key k = {0, 5, NULL, 0};
  dprl_step_buffer_push(&buf, &k, 1, 0, 0, &err);
  dprl_step_buffer_push(&buf, &k, 1, 0, 0, &err);
  dprl_step_buffer_group(&buf, &err);
  dprl_episode_index chosen = {0};
  uint32_t got;
  dprl_key_intern(&chosen, &k, &got, &err);
  int64_t *off = (int64_t *)&got, *st = off, *ac = off;
  int rc = dprl_examined_flatten(&buf, &chosen, 1, &off, &st, &ac, &err);
  CHECK(rc == DPRL_EINVAL && !off && !st && !ac, "flatten: a chosen duplicate t is refused");
  dprl_key_index_free(&chosen);
  dprl_step_buffer_free(&buf);
}

static void test_read_mode(void) {
  CHECK(dprl_prefix_reads_once(DPRL_PREFIX_READ_ONCE, 0) == 1 &&
            dprl_prefix_reads_once(DPRL_PREFIX_READ_ONCE, 1) == 1,
        "read: once reads once, seeded or not");
  CHECK(dprl_prefix_reads_once(DPRL_PREFIX_READ_TWICE, 0) == 0 &&
            dprl_prefix_reads_once(DPRL_PREFIX_READ_TWICE, 1) == 0,
        "read: twice reads twice, seeded or not");
  CHECK(dprl_prefix_reads_once(DPRL_PREFIX_READ_AUTO, 1) == 0,
        "read: auto, seeded: two passes (independent of the rows' order)");
  CHECK(dprl_prefix_reads_once(DPRL_PREFIX_READ_AUTO, 0) == -1,
        "read: auto, unseeded: the plan decides");
  CHECK(strcmp(dprl_prefix_read_names[DPRL_PREFIX_READ_AUTO], "auto") == 0 &&
            strcmp(dprl_prefix_read_names[DPRL_PREFIX_READ_ONCE], "once") == 0 &&
            strcmp(dprl_prefix_read_names[DPRL_PREFIX_READ_TWICE], "twice") == 0 &&
            dprl_prefix_read_names[3] == NULL,
        "read: the option's names in enum order");
}

int main(void) {
  test_examined_choose();
  test_examined_key_order();
  test_reservoir();
  test_reservoir_deferred();
  test_examined_flatten();
  test_read_mode();
  return CHECK_DONE();
}
