/* steps.c: rows -> episodes, the buffered path (see steps.h); the keys are
** in key_index.c, the streaming path in episode.c. */
#include "rows/internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

_Static_assert(sizeof(dprl_step) == 24, "a buffered step must stay 24 bytes");

/* ---- buffered path ------------------------------------------------------ */

/* Address of step i.  Evaluates i twice: pass a plain variable. */
#define STEP(b, i) (&(b)->chunks[(i) >> DPRL_CHUNK_BITS][(i) & (DPRL_CHUNK - 1)])

void dprl_step_buffer_free(dprl_step_buffer *b) {
  for (size_t c = 0; c < b->n_chunks; c++) dprl_free(b->chunks[c]); /* NULL is fine */
  dprl_free(b->chunks);
  dprl_free(b->start);
  dprl_free(b->order);
  dprl_free(b->scratch);
  dprl_free(b->mark);
  dprl_free(b->fill);
  dprl_free(b->tmin);
  dprl_free(b->tmax);
  dprl_free(b->dupt);
  dprl_free(b->dupf);
  dprl_free(b->runs);
  dprl_key_index_free(&b->ep);
  dprl_buf_free(&b->stage_text);
  memset(b, 0, sizeof *b);
}

size_t dprl_step_buffer_bytes(const dprl_step_buffer *b) {
  return b->n_chunks * (DPRL_CHUNK * sizeof(dprl_step) + sizeof(dprl_step *)) +
         b->ep.n_slots * sizeof(dprl_key_slot) + b->ep.cap * 16 + b->ep.text.cap +
         b->ep.dsize * sizeof(uint32_t);
}

/* Append one step whose episode index is known. */
static int buffer_append(dprl_step_buffer *b, int64_t t, double reward, uint32_t e,
                         uint32_t state, dprl_error *err) {
  if ((b->n & (DPRL_CHUNK - 1)) == 0) { /* a new chunk */
    size_t c = b->n >> DPRL_CHUNK_BITS;
    if ((c & (c - 1)) == 0) { /* the chunk table doubles at powers of two */
      dprl_step **t2 = dprl_realloc(b->chunks, (c ? 2 * c : 1) * sizeof *t2);
      if (!t2) return dprl_nomem(err);
      b->chunks = t2;
    }
    b->chunks[c] = dprl_malloc(DPRL_CHUNK * sizeof(dprl_step));
    if (!b->chunks[c]) return dprl_nomem(err);
    b->n_chunks++;
    /* From the second chunk on the input is large: fault the chunk in at
    ** once (a page fault per 4 KB was 8% of dp_lsw on 5M steps).  Not the
    ** first: a small group of a GROUP BY touches a few pages only. */
    if (c) dprl_prefault(b->chunks[c], DPRL_CHUNK * sizeof(dprl_step));
  }
  *STEP(b, b->n) = (dprl_step){t, reward, e, state};
  b->n++;
  return DPRL_OK;
}

#define PREFETCH(p) __builtin_prefetch(p)

/* Where a staged key's lookup starts: its dmap entry or its hash slot. */
static int in_dmap(const dprl_episode_index *x, const dprl_staged *s) {
  return !s->is_text && s->ival >= 0 && (size_t)s->ival < x->dsize;
}

/* Dense integer keys need no hash (dmap); the others are hashed here. */
static void stage_prefetch(const dprl_episode_index *x, dprl_staged *s, const dprl_key *k) {
  if (in_dmap(x, s)) {
    PREFETCH(&x->dmap[s->ival]);
    return;
  }
  s->h = dprl_key_hash(k);
  if (x->hashed) PREFETCH(&x->slots[s->h & (x->n_slots - 1)]);
}

enum { STAGE_MISS, STAGE_FOUND, STAGE_CANDIDATE };

/* The staged rows, in order: pass 1 reads the prefetched dmap entries and
** hash slots (a text key's slot gives a candidate to verify, whose offset
** is prefetched), pass 2 prefetches the candidates' text, pass 3 verifies
** and appends.  A key not found (new, or a hash shared by two texts) goes
** through dprl_key_intern, which inserts it: a later row of the same stage
** with that key then finds it there. */
static int stage_flush(dprl_step_buffer *b, dprl_error *err) {
  dprl_episode_index *x = &b->ep;
  size_t n = b->n_staged;
  b->n_staged = 0;
  for (size_t i = 0; i < n; i++) {
    dprl_staged *s = &b->stage[i];
    s->found = STAGE_MISS;
    if (in_dmap(x, s) && x->dmap[s->ival]) {
      s->e = x->dmap[s->ival] - 1;
      s->found = STAGE_FOUND;
    } else if (x->hashed) {
      if (in_dmap(x, s)) s->h = dprl_key_hash(&(dprl_key){0, s->ival, NULL, 0});
      int64_t sk = s->is_text ? (int64_t)s->h : s->ival;
      for (size_t j = s->h & (x->n_slots - 1); x->slots[j].e1; j = (j + 1) & (x->n_slots - 1)) {
        const dprl_key_slot *sl = &x->slots[j];
        if (sl->key != sk || sl->is_text != s->is_text) continue;
        s->e = sl->e1 - 1;
        s->found = s->is_text ? STAGE_CANDIDATE : STAGE_FOUND;
        if (s->is_text) {
          PREFETCH(&x->ikey[s->e]);
          PREFETCH(&x->tlen[s->e]);
        }
        break;
      }
    }
  }
  for (size_t i = 0; i < n; i++)
    if (b->stage[i].found == STAGE_CANDIDATE) PREFETCH(x->text.data + x->ikey[b->stage[i].e]);
  int rc = DPRL_OK;
  for (size_t i = 0; i < n && !rc; i++) {
    dprl_staged *s = &b->stage[i];
    dprl_key k = {(int)s->is_text, s->is_text ? 0 : s->ival,
                  s->is_text ? b->stage_text.data + s->ival : NULL, s->len};
    if (s->found == STAGE_CANDIDATE &&
        !(x->tlen[s->e] == s->len && memcmp(x->text.data + x->ikey[s->e], k.text, s->len) == 0))
      s->found = STAGE_MISS;
    if (s->found == STAGE_MISS) rc = dprl_key_intern(x, &k, &s->e, err);
    if (!rc) rc = buffer_append(b, s->t, s->reward, s->e, s->state, err);
  }
  b->stage_text.len = 0;
  return rc;
}

int dprl_step_buffer_push(dprl_step_buffer *b, const dprl_key *episode,
                          int64_t t, uint32_t state, double reward,
                          dprl_error *err) {
  dprl_staged *s = &b->stage[b->n_staged];
  s->t = t;
  s->reward = reward;
  s->state = state;
  s->is_text = (uint32_t)episode->is_text;
  if (episode->is_text) {
    if (episode->len >= UINT32_MAX) return dprl_fail(err, DPRL_EINVAL, "episode key too long");
    s->ival = (int64_t)b->stage_text.len;
    s->len = (uint32_t)episode->len;
    dprl_buf_append(&b->stage_text, episode->text, episode->len);
    if (b->stage_text.oom) return dprl_nomem(err);
  } else {
    s->ival = episode->ival;
    s->len = 0;
  }
  stage_prefetch(&b->ep, s, episode);
  return ++b->n_staged == DPRL_STAGE ? stage_flush(b, err) : DPRL_OK;
}

typedef struct keyed {
  dprl_key key;
  uint32_t e;
} keyed;

static int cmp_keyed(const void *a, const void *b) {
  return dprl_key_compare(&((const keyed *)a)->key, &((const keyed *)b)->key);
}

/* order[r] = episode with the r-th smallest key.  Processing episodes in
** key order (as ORDER BY episode would) makes the floating-point sums, and
** so a seeded release, independent of the order the rows arrived in.
** The keys in dmap are already in order (a scan of dmap); only the others
** (keys that were out of dmap's range when they first came, text) are
** sorted, and the two runs merged. */
static int order_by_key(dprl_step_buffer *b, dprl_error *err) {
  const dprl_episode_index *x = &b->ep;
  size_t E = x->n, H = 0;
  keyed *k = dprl_malloc((x->hashed ? x->hashed : 1) * sizeof *k);
  uint32_t *order = dprl_malloc((E ? E : 1) * sizeof *order);
  if (!k || !order) {
    dprl_free(k);
    dprl_free(order);
    return dprl_nomem(err);
  }
  for (size_t e = 0; e < E && x->hashed; e++) {
    int64_t v = x->ikey[e];
    int in_dmap = x->tlen[e] == UINT32_MAX && v >= 0 && (size_t)v < x->dsize &&
                  x->dmap[v] == e + 1;
    if (in_dmap) continue;
    dprl_key_get(x, (uint32_t)e, &k[H].key);
    k[H++].e = (uint32_t)e;
  }
  int rc = dprl_sort(k, H, sizeof *k, cmp_keyed, b->cancel, err);
  if (rc) {
    dprl_free(k);
    dprl_free(order);
    return rc;
  }
  size_t r = 0, h = 0;
  for (size_t key = 0; key < x->dsize && r < E; key++) {
    if (!x->dmap[key]) continue;
    dprl_key dk = {0, (int64_t)key, NULL, 0};
    while (h < H && dprl_key_compare(&k[h].key, &dk) < 0) order[r++] = k[h++].e;
    order[r++] = x->dmap[key] - 1;
  }
  while (h < H) order[r++] = k[h++].e;
  dprl_free(k);
  dprl_free(b->order);
  b->order = order;
  return DPRL_OK;
}

/* In-place bucket permutation of steps[start[0]..start[nb]) by
** (episode >> shift) - base, with no second copy of the buffer.  For each
** bucket k in turn, up to CYCLE_WAYS misplaced steps are lifted out of
** k's next slots (holes); each lifted step is swapped into the next free
** slot of its own bucket, and the step it displaces carried on, until a
** step of bucket k comes along and fills the hole.  The chains are
** independent, so their cache misses overlap (one chain is a sequence of
** dependent loads through the whole buffer); every slot is claimed once,
** through next[], and every step lands in a slot of its bucket. */
#define CYCLE_WAYS 32
static void cycle_walk(dprl_step_buffer *b, const size_t *start, size_t nb,
                       size_t *next, unsigned shift, uint32_t base) {
  memcpy(next, start, (nb + 1) * sizeof *next);
  for (size_t k = 0; k < nb; k++) {
    for (;;) {
      dprl_step v[CYCLE_WAYS];
      size_t hole[CYCLE_WAYS];
      int ways = 0;
      while (ways < CYCLE_WAYS && next[k] < start[k + 1]) {
        size_t p = next[k]++;
        dprl_step x = *STEP(b, p);
        if ((x.episode >> shift) - base == k) continue; /* already in place */
        hole[ways] = p;
        v[ways++] = x;
      }
      if (!ways) break;
      for (int open = ways; open;) {
        for (int i = 0; i < ways; i++) {
          if (hole[i] == SIZE_MAX) continue;
          size_t kb = (v[i].episode >> shift) - base;
          if (kb == k) {
            *STEP(b, hole[i]) = v[i];
            hole[i] = SIZE_MAX;
            open--;
            continue;
          }
          size_t at = next[kb]++; /* STEP evaluates its index twice */
          dprl_step *dst = STEP(b, at);
          dprl_step w = *dst;
          *dst = v[i];
          v[i] = w;
        }
      }
    }
  }
}

static size_t block_first(const dprl_step_buffer *b, size_t k) {
  size_t f = k << b->bits;
  return f < b->ep.n ? f : b->ep.n;
}

/* Steps of block k (episodes k 2^bits .. (k + 1) 2^bits - 1, by rank). */
static size_t block_steps(const dprl_step_buffer *b, size_t k) {
  return b->start[block_first(b, k + 1)] - b->start[block_first(b, k)];
}

/* One pass over the buffer, a chunk at a time: each step's episode becomes
** its rank (rank[]), the steps of each episode are counted (ep.count, by
** key index), and the chunk is partitioned by block (rank >> bits) through
** a chunk-sized buffer while it is in cache; b->runs records where each
** block's run starts in each chunk.  Counting here, in a tight loop per
** chunk, lets the scattered increments overlap; the partition moves no step
** out of its chunk (a partition across the whole buffer, one cache miss a
** step, was the largest part of grouping). */
static int partition_chunks(dprl_step_buffer *b, const uint32_t *rank, size_t nb,
                            unsigned bits, dprl_error *err) {
  size_t nc = b->n_chunks, stride = nb + 1;
  /* a caller that frees as it reads gets contiguous blocks anyway
  ** (group_by_episode): no partition to do here, only the counts */
  int scatter = nb > 1 && !b->frees_as_read;
  uint32_t *runs = dprl_malloc_array(nc ? nc : 1, stride * sizeof *runs);
  uint32_t *pos = dprl_malloc_array(stride, sizeof *pos);
  dprl_step *tmp = scatter ? dprl_malloc_array(DPRL_CHUNK, sizeof *tmp) : NULL;
  int rc = DPRL_OK;
  if (!runs || !pos || (scatter && !tmp)) rc = dprl_nomem(err);
  for (size_t c = 0; c < nc && !rc; c++) {
    dprl_step *ch = b->chunks[c];
    size_t m = b->n - c * DPRL_CHUNK < DPRL_CHUNK ? b->n - c * DPRL_CHUNK : DPRL_CHUNK;
    uint32_t *r = runs + c * stride;
    memset(r, 0, stride * sizeof *r);
    for (size_t i = 0; i < m; i++) {
      dprl_step *s = &ch[i];
      if (b->ep.count[s->episode]++ == UINT32_MAX) {
        rc = dprl_fail(err, DPRL_EINVAL, "episode has more than %u steps", UINT32_MAX);
        break;
      }
      s->episode = rank[s->episode];
      r[(s->episode >> bits) + 1]++;
    }
    for (size_t k = 0; k < nb; k++) r[k + 1] += r[k];
    if (!rc && scatter) {
      memcpy(pos, r, nb * sizeof *pos);
      for (size_t i = 0; i < m; i++) tmp[pos[ch[i].episode >> bits]++] = ch[i];
      memcpy(ch, tmp, m * sizeof *ch);
    }
    if (!rc) rc = dprl_cancel_poll(b->cancel, 4 * (uint64_t)m, err);
  }
  dprl_free(tmp);
  dprl_free(pos);
  dprl_free(b->runs);
  b->runs = rc ? NULL : runs;
  b->run_stride = stride;
  if (rc) dprl_free(runs);
  return rc;
}

/* Into at most 256 blocks of 2^bits consecutive episodes (more would touch
** more pages at once than the TLB maps: 500,000 short episodes in blocks
** of 256 took twice as long), so that what follows stays in cache: a block
** of at most DPRL_BLOCK_STEPS steps is laid out by
** dprl_step_buffer_episode when first asked for (each step straight to its
** place by episode and t), from its run in every chunk; if any block is
** larger, the blocks are made contiguous in place (cycle_walk) and each
** larger one is partitioned by episode here. */
static int group_by_episode(dprl_step_buffer *b, dprl_error *err) {
  unsigned bits = 8;
  while ((b->ep.n >> bits) > 256) bits++;
  b->bits = bits;
  size_t E = b->ep.n, nblocks = (E + ((size_t)1 << bits) - 1) >> bits;
  int rc = order_by_key(b, err);
  if (rc) return rc;
  size_t *start = dprl_malloc((E + 1) * sizeof *start);
  size_t *bstart = dprl_malloc((nblocks + 1) * sizeof *bstart);
  size_t *next = dprl_malloc((nblocks + ((size_t)1 << bits) + 1) * sizeof *next);
  uint32_t *rank = dprl_malloc((E ? E : 1) * sizeof *rank);
  if (!start || !bstart || !next || !rank) {
    rc = dprl_nomem(err);
    goto done;
  }
  for (size_t r = 0; r < E; r++) rank[b->order[r]] = (uint32_t)r;
  for (size_t e = 0; e < E; e++) b->ep.count[e] = 0;
  if ((rc = partition_chunks(b, rank, nblocks, bits, err))) goto done;
  start[0] = 0;
  for (size_t r = 0; r < E; r++) start[r + 1] = start[r] + b->ep.count[b->order[r]];
  for (size_t k = 0; k <= nblocks; k++) bstart[k] = start[k << bits < E ? k << bits : E];
  dprl_free(b->start);
  b->start = start;
  start = NULL;
  int all_small = 1;
  for (size_t k = 0; k < nblocks; k++) all_small &= block_steps(b, k) <= DPRL_BLOCK_STEPS;
  if (!all_small || b->frees_as_read) { /* blocks made contiguous across the buffer, then
                                          ** the large ones by episode */
    dprl_free(b->runs);
    b->runs = NULL;
    cycle_walk(b, bstart, nblocks, next, bits, 0);
    if ((rc = dprl_cancel_poll(b->cancel, 3 * (uint64_t)b->n, err))) goto done;
    for (size_t k = 0; k < nblocks; k++) {
      if (block_steps(b, k) <= DPRL_BLOCK_STEPS) continue; /* laid out when asked for */
      size_t first = k << bits,
             count = E - first < ((size_t)1 << bits) ? E - first : ((size_t)1 << bits);
      cycle_walk(b, b->start + first, count, next, 0, (uint32_t)first);
      if ((rc = dprl_cancel_poll(b->cancel, 3 * (uint64_t)block_steps(b, k), err))) goto done;
    }
  }
  b->blk = 0;
done:
  dprl_free(start);
  dprl_free(bstart);
  dprl_free(next);
  dprl_free(rank);
  return rc;
}

int dprl_step_buffer_group(dprl_step_buffer *b, dprl_error *err) {
  int rc = stage_flush(b, err);
  return rc ? rc : group_by_episode(b, err);
}

size_t dprl_step_buffer_episodes(const dprl_step_buffer *b) { return b->ep.n; }

void dprl_step_buffer_done_before(dprl_step_buffer *b, size_t e) {
  size_t upto = SIZE_MAX; /* all done: every chunk */
  if (e < b->ep.n && b->runs) return; /* every chunk holds a run of every block */
  if (e < b->ep.n) { /* a block laid out whole is read from its first step */
    size_t k = e >> b->bits;
    upto = block_steps(b, k) <= DPRL_BLOCK_STEPS ? b->start[block_first(b, k)] : b->start[e];
  }
  for (size_t c = 0; c < b->n_chunks && (upto == SIZE_MAX || (c + 1) * DPRL_CHUNK <= upto); c++) {
    dprl_free(b->chunks[c]);
    b->chunks[c] = NULL;
  }
}

uint32_t dprl_step_buffer_entry(const dprl_step_buffer *b, size_t e) {
  return b->order ? b->order[e] : (uint32_t)e;
}

void dprl_step_buffer_episode_key(const dprl_step_buffer *b, size_t e, dprl_key *out) {
  dprl_key_get(&b->ep, dprl_step_buffer_entry(b, e), out);
}

static int duplicate_t(const dprl_step_buffer *b, size_t e, int64_t t, dprl_error *err) {
  char name[64];
  dprl_key k;
  dprl_step_buffer_episode_key(b, e, &k);
  dprl_key_describe(&k, name, sizeof name);
  return dprl_fail(err, DPRL_EINVAL, "duplicate (episode, t) = (%s, %lld)", name,
                   (long long)t);
}

/* scratch and mark for n steps; with `block`, fill, tmin and tmax for the
** 2^bits episodes of a block. */
static int scratch_reserve(dprl_step_buffer *b, size_t n, int block, dprl_error *err) {
  if (n > b->scratch_cap) {
    dprl_step *sc = dprl_realloc(b->scratch, n * sizeof *sc);
    if (sc) b->scratch = sc;
    unsigned char *mk = sc ? dprl_realloc(b->mark, n) : NULL;
    if (!mk) return dprl_nomem(err);
    b->mark = mk;
    b->scratch_cap = n;
  }
  size_t m = (size_t)1 << b->bits;
  if (block && !b->fill) {
    b->fill = dprl_malloc(m * sizeof *b->fill);
    b->tmin = dprl_malloc(m * sizeof *b->tmin);
    b->tmax = dprl_malloc(m * sizeof *b->tmax);
    b->dupt = dprl_malloc(m * sizeof *b->dupt);
    b->dupf = dprl_malloc(m);
    if (!b->fill || !b->tmin || !b->tmax || !b->dupt || !b->dupf) {
      dprl_free(b->fill);
      dprl_free(b->tmin);
      dprl_free(b->tmax);
      dprl_free(b->dupt);
      dprl_free(b->dupf);
      b->fill = NULL;
      b->tmin = b->tmax = b->dupt = NULL;
      b->dupf = NULL;
      return dprl_nomem(err);
    }
  }
  return DPRL_OK;
}

/* Is t a range of consecutive integers, one step each (the usual step
** index)?  Then each step's place is t - tmin. */
static int t_dense(size_t len, int64_t tmin, int64_t tmax) {
  return len && (uint64_t)tmax - (uint64_t)tmin == len - 1;
}

/* Episode r's key in an error, sorted at its place in scratch. */
static int sort_one(dprl_step_buffer *b, size_t r, dprl_step *steps, size_t len, dprl_error *err) {
  char name[64];
  dprl_key k;
  dprl_step_buffer_episode_key(b, r, &k);
  dprl_key_describe(&k, name, sizeof name);
  return dprl_sort_episode(steps, len, name, err);
}

/* Block k laid out in scratch: every episode at its offset, each sorted
** by t (placed at t - tmin where t is dense, else filled in and sorted).
** Two passes over the block's steps (the second from cache): the range of
** t per episode, then the placing.  Per-block arrays are indexed by rank -
** first.  An episode with a duplicate t is marked with its smallest
** duplicated t (dupf, dupt), reported only when that episode is asked for,
** as if each episode were read alone. */
/* The steps of block k (lo, n: its range in key order) as segments of
** memory: its run in every chunk, or the chunks' pieces of its range. */
static size_t block_segments(const dprl_step_buffer *b, size_t k, size_t lo, size_t n) {
  (void)k;
  if (b->runs) return b->n_chunks;
  return n ? ((lo + n - 1) >> DPRL_CHUNK_BITS) - (lo >> DPRL_CHUNK_BITS) + 1 : 0;
}
static const dprl_step *block_segment(const dprl_step_buffer *b, size_t k, size_t lo, size_t n,
                                      size_t c, size_t *len) {
  if (b->runs) {
    const uint32_t *r = b->runs + c * b->run_stride;
    *len = r[k + 1] - r[k];
    return b->chunks[c] + r[k];
  }
  size_t from = (lo >> DPRL_CHUNK_BITS) + c, at = from << DPRL_CHUNK_BITS;
  size_t a = lo > at ? lo : at, e = lo + n < at + DPRL_CHUNK ? lo + n : at + DPRL_CHUNK;
  *len = e - a;
  return STEP(b, a);
}

static int lay_out_block(dprl_step_buffer *b, size_t k, dprl_error *err) {
  size_t first = block_first(b, k), last = block_first(b, k + 1), m = last - first;
  size_t lo = b->start[first], n = b->start[last] - lo;
  int rc = scratch_reserve(b, n ? n : 1, 1, err);
  if (rc) return rc;
  b->blk = 0; /* until it is whole */
  int64_t *tmin = b->tmin, *tmax = b->tmax, *dupt = b->dupt;
  unsigned char *dupf = b->dupf;
  size_t *fill = b->fill;
  for (size_t j = 0; j < m; j++) {
    tmin[j] = INT64_MAX;
    tmax[j] = INT64_MIN;
    dupf[j] = 0;
  }
  size_t nseg = block_segments(b, k, lo, n);
  for (size_t c = 0; c < nseg; c++) {
    size_t len;
    const dprl_step *seg = block_segment(b, k, lo, n, c, &len);
    for (size_t i = 0; i < len; i++) {
      const dprl_step *s = &seg[i];
      size_t j = s->episode - first;
      tmin[j] = s->t < tmin[j] ? s->t : tmin[j];
      tmax[j] = s->t > tmax[j] ? s->t : tmax[j];
    }
  }
  for (size_t j = 0; j < m; j++) {
    size_t r = first + j;
    fill[j] = b->start[r] - lo;
    if (!t_dense(b->start[r + 1] - b->start[r], tmin[j], tmax[j])) tmax[j] = INT64_MIN;
  }
  memset(b->mark, 0, n);
  for (size_t c = 0; c < nseg; c++) {
    size_t len;
    const dprl_step *seg = block_segment(b, k, lo, n, c, &len);
    for (size_t i = 0; i < len; i++) {
      const dprl_step *s = &seg[i];
      size_t j = s->episode - first, at;
      if (tmax[j] != INT64_MIN) { /* t dense: straight to its place */
        at = fill[j] + (size_t)((uint64_t)s->t - (uint64_t)tmin[j]);
        if (b->mark[at]) { /* two steps at one t */
          if (!dupf[j] || s->t < dupt[j]) dupt[j] = s->t;
          dupf[j] = 1;
          continue;
        }
        b->mark[at] = 1;
      } else {
        at = fill[j]++;
      }
      b->scratch[at] = *s;
    }
  }
  for (size_t j = 0; j < m; j++)
    if (tmax[j] == INT64_MIN) {
      size_t r = first + j, len = b->start[r + 1] - b->start[r];
      dupf[j] = (unsigned char)dprl_steps_sort_by_t(b->scratch + (b->start[r] - lo), len, &dupt[j]);
    }
  b->blk = k + 1;
  return DPRL_OK;
}

int dprl_step_buffer_episode(dprl_step_buffer *b, size_t e, const dprl_step **steps,
                             size_t *n, dprl_error *err) {
  size_t k = e >> b->bits, lo = b->start[e], len = b->start[e + 1] - lo;
  if (block_steps(b, k) <= DPRL_BLOCK_STEPS) { /* from its block's layout */
    if (b->blk != k + 1) {
      int rc = lay_out_block(b, k, err);
      if (rc) return rc;
    }
    size_t j = e - block_first(b, k);
    if (b->dupf[j]) return duplicate_t(b, e, b->dupt[j], err);
    *steps = b->scratch + (lo - b->start[block_first(b, k)]);
    *n = len;
    return DPRL_OK;
  }
  /* a large block, already partitioned: the episode alone */
  int rc = scratch_reserve(b, len ? len : 1, 0, err);
  if (rc) return rc;
  b->blk = 0;
  *steps = b->scratch;
  *n = len;
  int64_t tmin = INT64_MAX, tmax = INT64_MIN;
  for (size_t i = 0; i < len; i++) {
    int64_t t = STEP(b, lo + i)->t;
    tmin = t < tmin ? t : tmin;
    tmax = t > tmax ? t : tmax;
  }
  if (t_dense(len, tmin, tmax)) {
    int dup = 0;
    int64_t dupt = 0;
    memset(b->mark, 0, len);
    for (size_t i = 0; i < len; i++) {
      const dprl_step *s = STEP(b, lo + i);
      size_t at = (size_t)((uint64_t)s->t - (uint64_t)tmin);
      if (b->mark[at]) { /* the smallest duplicated t, as for a small block */
        if (!dup || s->t < dupt) dupt = s->t;
        dup = 1;
        continue;
      }
      b->mark[at] = 1;
      b->scratch[at] = *s;
    }
    return dup ? duplicate_t(b, e, dupt, err) : DPRL_OK;
  }
  for (size_t i = 0; i < len; i++) b->scratch[i] = *STEP(b, lo + i);
  return sort_one(b, e, b->scratch, len, err);
}

