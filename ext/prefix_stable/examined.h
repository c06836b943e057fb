/*
** examined.h: which trajectories dp_prefix_stable's T runs examine, decided
** while the rows are read (ALGORITHMS.md section 7.1). Plain C over key
** indices and arrays; the SQL layer reads the values, numbers the distinct
** episode keys 0, 1, 2, ... in order of first appearance (a
** dprl_episode_index) and calls these.
**
** Each run examines a trajectory drawn uniformly with replacement; the
** others take no part in the release, so only the drawn ones are read.
** Two ways to find them, with the same law:
**  - two passes: every distinct key first; dprl_examined_key_order puts
**    them in key order (as the grouped step buffer numbers episodes), and
**    dprl_examined_choose draws the T runs with the generator exactly as
**    dprl_prefix_release_run does and names the K <= T distinct keys drawn,
**    whose rows alone are then read (seeded: the same release as reading
**    everything, whatever the order of the rows);
**  - one pass: a dprl_reservoir samples min(T, n) keys without
**    replacement at their first row (Algorithm R) and the rows of its
**    members are read; at the end dprl_reservoir_draw shuffles the sample
**    and turns it into T draws with replacement. A row of a member that
**    fails its checks is deferred (dprl_reservoir_defer): the key may leave
**    the reservoir, and an episode that is not examined raises nothing,
**    as with two passes where its rows are never read.
*/
#ifndef DPRL_EXAMINED_H
#define DPRL_EXAMINED_H

#include <stddef.h>
#include <stdint.h>

#include "base/core.h"
#include "dp/noise.h"
#include "rows/steps.h"

/* The "read" option: how the examined trajectories are found. */
typedef enum dprl_prefix_read {
  DPRL_PREFIX_READ_AUTO = 0,
  DPRL_PREFIX_READ_ONCE = 1,
  DPRL_PREFIX_READ_TWICE = 2
} dprl_prefix_read;

/* "auto", "once", "twice", NULL: the option's values, in enum order. */
extern const char *const dprl_prefix_read_names[];

/* 1: one pass; 0: two passes; -1: two passes if index seeks find the keys
** (a loose index scan then costs less than one full scan), else one.
** "auto" reads once unless the call is seeded: two passes make a seeded
** release independent of the order of the rows. */
int dprl_prefix_reads_once(int read, int seeded);

/* ---- Two passes ------------------------------------------------------- */

/* order[i] = the index in ids of the i-th key in key order
** (dprl_key_compare: SQLite's order, integers before BINARY text); order
** has room for ids->n. */
int dprl_examined_key_order(const dprl_episode_index *ids, uint32_t *order,
                            dprl_cancel *cancel, dprl_error *err);

/* The T runs over n keys (0..n-1, n <= UINT32_MAX): each draws one by
** dprl_prefix_draw, the words of the stream dprl_prefix_release_run uses
** for n trajectories. Then run[c] is the place of run c's key among the
** distinct keys drawn, in order of first draw (-1 when n = 0), chosen[0..
** *K-1] those keys, and *K <= min(T, n) (chosen has room for that). */
int dprl_examined_choose(dprl_rng *rng, int64_t n, int64_t T, int64_t *run,
                         uint32_t *chosen, int64_t *K, dprl_error *err);

/* ---- The examined trajectories, for the release ------------------------ */

/* The K examined trajectories as the core's arrays (dprl_trajectories),
** from a grouped step buffer (dprl_step_buffer_group done) whose steps
** hold the state in .state and the action index in .reward: trajectory c
** is the key of place c in chosen (order of first draw; ids 0..K-1), its
** steps sorted by t. An episode of buf that is not chosen is skipped
** unread, so not checked (one pass: a key that left the sample); a chosen
** key without rows is an empty trajectory. The episodes are consumed in
** order (dprl_step_buffer_done_before). *offsets (K + 1 entries),
** *states and *actions are allocated here, freed with dprl_free; on error
** they are NULL. Errors: a duplicate (episode, t) of a chosen episode,
** memory, an interrupt. */
int dprl_examined_flatten(dprl_step_buffer *buf, dprl_episode_index *chosen, int64_t K,
                          int64_t **offsets, int64_t **states, int64_t **actions,
                          dprl_error *err);

/* ---- One pass --------------------------------------------------------- */

/* A row that failed its checks, kept until the draw says whether its key is
** examined. */
typedef struct dprl_deferred {
  uint32_t id;
  uint64_t row; /* its place among the rows taken */
  char *msg;
} dprl_deferred;

typedef struct dprl_reservoir {
  int64_t T;
  uint64_t n_keys;      /* distinct keys seen: ids 0..n_keys-1 */
  uint32_t *res;        /* the sample, min(T, n_keys) ids */
  size_t res_n, res_cap;
  unsigned char *flag;  /* per id: member now, failed a check, examined */
  size_t flag_cap;
  dprl_deferred *bad;   /* in the order the rows were taken */
  size_t n_bad, cap_bad;
  uint64_t rows;        /* rows taken */
} dprl_reservoir;

/* Empty, for T runs (T >= 1); dprl_reservoir_free releases it. A zeroed
** dprl_reservoir may also be freed. */
void dprl_reservoir_init(dprl_reservoir *r, int64_t T);
void dprl_reservoir_free(dprl_reservoir *r);

/* A row of key id. id = n_keys: a new key, sampled now: the i-th distinct
** key (i = id + 1) enters while the sample has fewer than T members, and
** otherwise replaces member j for j = dprl_rng_below(i) when j < T
** (probability T/i). A key left out never enters later, so every row of a
** final member is read. id < n_keys: a key seen before, no randomness.
** *in = 1 if the key is a member now. Refused: id > n_keys (keys are
** numbered in order of first appearance). */
int dprl_reservoir_see(dprl_reservoir *r, dprl_rng *rng, uint32_t id, int *in,
                       dprl_error *err);

/* A row of member id is taken (counted): *read = 0 if the key already
** failed a check (the rest of its rows are skipped), 1 otherwise. */
int dprl_reservoir_take(dprl_reservoir *r, uint32_t id, int *read, dprl_error *err);

/* The row just taken of key id failed its check, whose message is in err:
** kept (not raised) as the key's deferred error, err cleared. Errors:
** memory only. */
int dprl_reservoir_defer(dprl_reservoir *r, uint32_t id, dprl_error *err);

/* The end of the pass: the members shuffled with the generator (an
** ordered uniform sample without replacement S), then T runs: run c draws
** u = dprl_rng_below(n_keys) and repeats the u-th distinct key taken so
** far if u < d, else takes S[d], the next fresh key (d so far). Then
** run[c] is run c's place among the K = d fresh keys (-1 when no key was
** seen), which are r->res[0..K-1] in that order and are the examined. */
void dprl_reservoir_draw(dprl_reservoir *r, dprl_rng *rng, int64_t *run, int64_t *K);

/* After dprl_reservoir_draw: the first deferred error (in the order the
** rows were taken) of an examined key, which two passes would have met
** first too, into err; DPRL_OK if there is none. */
int dprl_reservoir_bad_examined(const dprl_reservoir *r, dprl_error *err);

#endif
