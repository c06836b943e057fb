/*
** steps.h: rows -> episodes.  The first stage of the data path.
**
** Rows arrive one step at a time, in any order.  Two ways to turn them into
** episodes:
**  - dprl_step_buffer (rows in any order): every step is kept in 24 bytes
**    (episode as a dense 32-bit index, t, state, reward); at the end one
**    in-place counting sort by episode and a sort by t inside each episode.
**    Memory: 24 bytes a step plus O(episodes) for the episode index.
**  - dprl_episode_stream (rows grouped by episode, e.g. ORDER BY episode or
**    an index on episode): only the current episode is kept, O(longest
**    episode).  A key that goes back in order means the rows were not
**    grouped: that is an error, detected exactly, never silently merged.
** Duplicate (episode, t) is an error in both.
*/
#ifndef DPRL_STEPS_H
#define DPRL_STEPS_H

#include "base/core.h"

typedef struct dprl_step {
  int64_t t;
  double reward;
  uint32_t episode; /* dense index given by dprl_episode_index */
  uint32_t state;
} dprl_step;

/* An episode key as SQL gives it: an integer or a text. */
typedef struct dprl_key {
  int is_text;
  int64_t ival;
  const char *text;
  size_t len;
} dprl_key;

/* Describe a key for messages: 42 or 'abc' (text truncated). */
void dprl_key_describe(const dprl_key *k, char *out, size_t n);
/* SQLite's order for integers and BINARY text: integers first. */
int dprl_key_compare(const dprl_key *a, const dprl_key *b);

/* Interning episode keys to dense indices 0..n-1. */
typedef struct dprl_key_slot {
  int64_t key;  /* integer key, or the hash of a text key */
  uint32_t e1;  /* episode index + 1; 0 = empty */
  uint32_t is_text;
} dprl_key_slot;

typedef struct dprl_episode_index {
  dprl_key_slot *slots; /* open addressing */
  size_t n_slots;       /* power of two */
  int64_t *ikey;        /* per episode: integer key, or offset into text */
  uint32_t *tlen;       /* per episode: text length; UINT32_MAX = integer key */
  uint32_t *count;      /* per episode: number of steps */
  uint64_t *print;      /* per episode: its content's print (rows/print.h), or NULL */
  size_t n, cap;
  dprl_buf text;        /* text keys, back to back */
  uint32_t last;        /* cache: index of the last key seen (+1, 0 = none) */
  int last_int;         /* ... and, when it is an integer key, that key */
  int64_t last_ival;    /* (kept here: no load from the arrays per row) */
  /* Dense non-negative integer keys (the usual episode ids) skip hashing:
  ** dmap[k] = episode + 1 for 0 <= k < dsize, dsize kept within a constant
  ** factor of the number of episodes.  Other keys go to the hash table. */
  uint32_t *dmap;
  size_t dsize;
  size_t hashed; /* keys in the hash table */
} dprl_episode_index;

/* The same index for any keys (experts, states, actions): intern assigns
** 0, 1, 2, ... in order of first appearance; find never inserts. */
int dprl_key_intern(dprl_episode_index *x, const dprl_key *k, uint32_t *out,
                    dprl_error *err);
int dprl_key_find(dprl_episode_index *x, const dprl_key *k, uint32_t *out);
void dprl_key_get(const dprl_episode_index *x, uint32_t i, dprl_key *out);
void dprl_key_index_free(dprl_episode_index *x);
/* The print of entry i's content, beside its key: a release that names
** its units sets one for every entry (x->print is NULL until the first). */
int dprl_key_set_print(dprl_episode_index *x, uint32_t i, uint64_t print, dprl_error *err);
/* Which kinds of key the index holds: DPRL_KEY_INT | DPRL_KEY_TEXT. */
#define DPRL_KEY_INT 1u
#define DPRL_KEY_TEXT 2u
unsigned dprl_key_kinds(const dprl_episode_index *x);

/* Steps live in fixed chunks of 2^16 (1.5 MB): no realloc slack, no copy
** when the buffer grows. */
#define DPRL_CHUNK_BITS 16
#define DPRL_CHUNK (1u << DPRL_CHUNK_BITS)

/* Rows wait in a stage of DPRL_STAGE before their keys are looked up, so
** the lookups of a whole stage overlap (each is a cache miss when rows come
** in random order): a stage prefetches its table entries while SQLite
** reads the next rows, then resolves them in a few passes. */
#define DPRL_STAGE 32

/* Largest block of episodes laid out at once (1.5 MB of steps). */
#define DPRL_BLOCK_STEPS ((size_t)1 << 16)
typedef struct dprl_staged {
  int64_t t, ival; /* ival: integer key, or offset of the text in stage_text */
  double reward;
  uint64_t h;     /* hash of the key */
  uint32_t state, len, is_text;
  uint32_t e;     /* pass results: episode, and how it was found */
  int found;
} dprl_staged;

typedef struct dprl_step_buffer {
  dprl_step **chunks;
  size_t n_chunks, n;
  dprl_episode_index ep;
  dprl_staged stage[DPRL_STAGE];
  size_t n_staged;
  dprl_buf stage_text; /* the staged rows' text keys */
  /* After grouping, episodes are numbered in key order: the e-th holds
  ** steps start[e]..start[e+1]-1, its key index is order[e]. */
  size_t *start;
  uint32_t *order;
  /* Episodes come in blocks of 2^bits (by rank).  A block of at most
  ** DPRL_BLOCK_STEPS steps is laid out whole, each episode sorted by t, in
  ** scratch when one of its episodes is asked for (blk = its number + 1);
  ** a larger block was partitioned by episode in place, and each of its
  ** episodes is sorted into scratch alone. */
  unsigned bits;
  size_t blk;
  dprl_step *scratch;
  unsigned char *mark;
  size_t *fill;         /* per episode of a block: its next free slot */
  int64_t *tmin, *tmax; /* per episode of a block: the range of its t */
  int64_t *dupt;        /* per episode of a block: its smallest duplicated t, */
  unsigned char *dupf;  /* if dupf says it has one */
  size_t scratch_cap;
  /* When every block is laid out whole (the usual case), the steps are not
  ** moved across the buffer: each chunk is partitioned by block on its own,
  ** in cache, and block k is the run runs[c * run_stride + k .. + 1) of
  ** every chunk c (offsets in the chunk).  NULL: blocks are contiguous. */
  uint32_t *runs;
  size_t run_stride;
  /* Set before grouping by a caller that frees with done_before as it
  ** reads: the blocks are then made contiguous, so that chunks can go. */
  int frees_as_read;
  dprl_cancel *cancel; /* asked while grouping (NULL: never stops) */
} dprl_step_buffer;

void dprl_step_buffer_free(dprl_step_buffer *b);
int dprl_step_buffer_push(dprl_step_buffer *b, const dprl_key *episode,
                          int64_t t, uint32_t state, double reward,
                          dprl_error *err);
/* Partition into episodes, in key order (looks up the staged rows first;
** an error of theirs, e.g. out of memory, is reported here).  Once per
** buffer: after it, the buffer is read, not pushed to. */
int dprl_step_buffer_group(dprl_step_buffer *b, dprl_error *err);
size_t dprl_step_buffer_episodes(const dprl_step_buffer *b);
void dprl_step_buffer_episode_key(const dprl_step_buffer *b, size_t e,
                                  dprl_key *out);
/* Episode e's (after grouping) entry in the key index b->ep. */
uint32_t dprl_step_buffer_entry(const dprl_step_buffer *b, size_t e);
/* Episode e (after grouping) sorted by t, valid until the next call;
** fails on duplicate (episode, t). */
int dprl_step_buffer_episode(dprl_step_buffer *b, size_t e,
                             const dprl_step **steps, size_t *n,
                             dprl_error *err);
/* After grouping, when episodes are consumed in order (some may be
** skipped): episodes before e will not be asked for again, so free the
** chunks that no later episode needs, and a copy of the data never
** coexists with the whole buffer.  Frees nothing before the end unless
** frees_as_read was set before grouping. */
void dprl_step_buffer_done_before(dprl_step_buffer *b, size_t e);
/* Bytes held, for the benchmark's accounting. */
size_t dprl_step_buffer_bytes(const dprl_step_buffer *b);

/* Streaming over rows grouped by episode. */
typedef struct dprl_episode_stream {
  dprl_step *cur; /* steps of the current episode */
  size_t n, cap;
  int has_key, direction; /* direction: 0 unknown, +1 ascending, -1 desc */
  dprl_key key;           /* current episode (text copied into keybuf) */
  dprl_buf keybuf;
  dprl_step spill; /* the row that opened the current episode */
  int has_spill;
  int64_t episodes_done;
} dprl_episode_stream;

/* Push one row.  *finished = 1 when this row starts a new episode: the
** previous episode is then in (*ep, *n_ep), sorted by t, valid until the
** next call.  The new row itself is kept for the next episode. */
int dprl_episode_stream_push(dprl_episode_stream *s, const dprl_key *episode,
                             int64_t t, uint32_t state, double reward,
                             int *finished, const dprl_step **ep,
                             size_t *n_ep, dprl_error *err);
/* At the end: the last episode (n_ep = 0 if there were no rows). */
int dprl_episode_stream_finish(dprl_episode_stream *s, const dprl_step **ep,
                               size_t *n_ep, dprl_error *err);
void dprl_episode_stream_free(dprl_episode_stream *s);

/* Sort one episode's steps by t; DPRL_EINVAL naming `name` on a duplicate. */
int dprl_sort_episode(dprl_step *steps, size_t n, const char *name,
                      dprl_error *err);

#endif
