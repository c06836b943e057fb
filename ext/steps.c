/* steps.c: rows -> episodes, buffered or streaming (see steps.h). */
#include "steps.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

_Static_assert(sizeof(dprl_step) == 24, "a buffered step must stay 24 bytes");

#define MAX_EPISODES 0xFFFFFFF0u

void dprl_key_describe(const dprl_key *k, char *out, size_t n) {
  if (!k->is_text) snprintf(out, n, "%lld", (long long)k->ival);
  else if (k->len > 40) snprintf(out, n, "'%.40s...'", k->text);
  else snprintf(out, n, "'%.*s'", (int)k->len, k->text);
}

int dprl_key_compare(const dprl_key *a, const dprl_key *b) {
  if (a->is_text != b->is_text) return a->is_text ? 1 : -1;
  if (!a->is_text) return (a->ival > b->ival) - (a->ival < b->ival);
  size_t n = a->len < b->len ? a->len : b->len;
  int c = n ? memcmp(a->text, b->text, n) : 0;
  if (c) return c < 0 ? -1 : 1;
  return (a->len > b->len) - (a->len < b->len);
}

/* ---- episode index ---------------------------------------------------- */

static uint64_t hash_key(const dprl_key *k) {
  uint64_t h;
  if (!k->is_text) {
    h = (uint64_t)k->ival + 0x9E3779B97F4A7C15ull; /* splitmix64 finaliser */
    h = (h ^ (h >> 30)) * 0xBF58476D1CE4E5B9ull;
    h = (h ^ (h >> 27)) * 0x94D049BB133111EBull;
    return h ^ (h >> 31);
  }
  h = 1469598103934665603ull; /* FNV-1a */
  for (size_t i = 0; i < k->len; i++) h = (h ^ (unsigned char)k->text[i]) * 1099511628211ull;
  return h ^ 0x5555555555555555ull;
}

static void index_key(const dprl_episode_index *x, uint32_t e, dprl_key *k) {
  k->is_text = x->tlen[e] != UINT32_MAX;
  k->ival = x->ikey[e];
  k->text = k->is_text ? x->text.data + x->ikey[e] : NULL;
  k->len = k->is_text ? x->tlen[e] : 0;
}

static int same_key(const dprl_episode_index *x, uint32_t e, const dprl_key *k) {
  dprl_key have;
  index_key(x, e, &have);
  return dprl_key_compare(&have, k) == 0;
}

static int index_grow_table(dprl_episode_index *x) {
  size_t ns = x->n_slots ? x->n_slots * 2 : 1024;
  uint32_t *slots = dprl_calloc(ns, sizeof *slots);
  if (!slots) return 0;
  for (uint32_t e = 0; e < x->n; e++) {
    dprl_key k;
    index_key(x, e, &k);
    size_t i = hash_key(&k) & (ns - 1);
    while (slots[i]) i = (i + 1) & (ns - 1);
    slots[i] = e + 1;
  }
  dprl_free(x->slots);
  x->slots = slots;
  x->n_slots = ns;
  return 1;
}

static int index_grow_arrays(dprl_episode_index *x) {
  size_t nc = x->cap ? x->cap * 2 : 1024;
  int64_t *ik = dprl_realloc(x->ikey, nc * sizeof *ik);
  if (ik) x->ikey = ik;
  uint32_t *tl = ik ? dprl_realloc(x->tlen, nc * sizeof *tl) : NULL;
  if (tl) x->tlen = tl;
  uint32_t *ct = tl ? dprl_realloc(x->count, nc * sizeof *ct) : NULL;
  if (ct) x->count = ct;
  if (!ct) return 0;
  x->cap = nc;
  return 1;
}

static int index_intern(dprl_episode_index *x, const dprl_key *k, uint32_t *out,
                        dprl_error *err) {
  if (x->last && same_key(x, x->last - 1, k)) { /* rows mostly come grouped */
    *out = x->last - 1;
    return DPRL_OK;
  }
  if ((x->n + 1) * 2 > x->n_slots && !index_grow_table(x)) return dprl_nomem(err);
  size_t i = hash_key(k) & (x->n_slots - 1);
  for (; x->slots[i]; i = (i + 1) & (x->n_slots - 1))
    if (same_key(x, x->slots[i] - 1, k)) {
      *out = x->slots[i] - 1;
      x->last = x->slots[i];
      return DPRL_OK;
    }
  if (x->n >= MAX_EPISODES)
    return dprl_fail(err, DPRL_EINVAL, "more than %u episodes", MAX_EPISODES);
  if (x->n == x->cap && !index_grow_arrays(x)) return dprl_nomem(err);
  uint32_t e = (uint32_t)x->n;
  if (k->is_text) {
    if (k->len >= UINT32_MAX) return dprl_fail(err, DPRL_EINVAL, "episode key too long");
    x->ikey[e] = (int64_t)x->text.len;
    x->tlen[e] = (uint32_t)k->len;
    dprl_buf_append(&x->text, k->text, k->len);
    if (x->text.oom) return dprl_nomem(err);
  } else {
    x->ikey[e] = k->ival;
    x->tlen[e] = UINT32_MAX;
  }
  x->count[e] = 0;
  x->n++;
  x->slots[i] = e + 1;
  x->last = e + 1;
  *out = e;
  return DPRL_OK;
}

static void index_free(dprl_episode_index *x) {
  dprl_free(x->slots);
  dprl_free(x->ikey);
  dprl_free(x->tlen);
  dprl_free(x->count);
  dprl_buf_free(&x->text);
  memset(x, 0, sizeof *x);
}

/* ---- buffered path ------------------------------------------------------ */

void dprl_step_buffer_free(dprl_step_buffer *b) {
  dprl_free(b->steps);
  dprl_free(b->start);
  dprl_free(b->order);
  index_free(&b->ep);
  memset(b, 0, sizeof *b);
}

int dprl_step_buffer_push(dprl_step_buffer *b, const dprl_key *episode,
                          int64_t t, uint32_t state, double reward,
                          dprl_error *err) {
  uint32_t e = 0;
  int rc = index_intern(&b->ep, episode, &e, err);
  if (rc) return rc;
  if (b->ep.count[e] == UINT32_MAX)
    return dprl_fail(err, DPRL_EINVAL, "episode has more than %u steps", UINT32_MAX);
  if (b->n == b->cap) {
    size_t nc = b->cap ? b->cap + b->cap / 2 : 4096; /* 1.5x keeps the slack small */
    dprl_step *s = dprl_realloc(b->steps, nc * sizeof *s);
    if (!s) return dprl_nomem(err);
    b->steps = s;
    b->cap = nc;
  }
  b->steps[b->n++] = (dprl_step){t, reward, e, state};
  b->ep.count[e]++;
  return DPRL_OK;
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
** so a seeded release, independent of the order the rows arrived in. */
static int order_by_key(dprl_step_buffer *b, dprl_error *err) {
  size_t E = b->ep.n;
  keyed *k = dprl_malloc((E ? E : 1) * sizeof *k);
  uint32_t *order = dprl_malloc((E ? E : 1) * sizeof *order);
  if (!k || !order) {
    dprl_free(k);
    dprl_free(order);
    return dprl_nomem(err);
  }
  for (size_t e = 0; e < E; e++) {
    index_key(&b->ep, (uint32_t)e, &k[e].key);
    k[e].e = (uint32_t)e;
  }
  qsort(k, E, sizeof *k, cmp_keyed);
  for (size_t r = 0; r < E; r++) order[r] = k[r].e;
  dprl_free(k);
  dprl_free(b->order);
  b->order = order;
  return DPRL_OK;
}

/* In-place counting sort by episode rank: each misplaced step is swapped
** straight into the next free slot of its episode (a cycle walk), so no
** second copy of the buffer is ever needed. */
static int group_by_episode(dprl_step_buffer *b, dprl_error *err) {
  size_t E = b->ep.n;
  int rc = order_by_key(b, err);
  if (rc) return rc;
  size_t *start = dprl_malloc((E + 1) * sizeof *start);
  size_t *next = dprl_malloc((E + 1) * sizeof *next);
  uint32_t *rank = dprl_malloc((E ? E : 1) * sizeof *rank);
  if (!start || !next || !rank) {
    dprl_free(start);
    dprl_free(next);
    dprl_free(rank);
    return dprl_nomem(err);
  }
  for (size_t r = 0; r < E; r++) rank[b->order[r]] = (uint32_t)r;
  for (size_t i = 0; i < b->n; i++) b->steps[i].episode = rank[b->steps[i].episode];
  start[0] = 0;
  for (size_t r = 0; r < E; r++) start[r + 1] = start[r] + b->ep.count[b->order[r]];
  memcpy(next, start, (E + 1) * sizeof *next);
  for (size_t e = 0; e < E; e++) {
    while (next[e] < start[e + 1]) {
      dprl_step v = b->steps[next[e]];
      while (v.episode != e) {
        dprl_step w = b->steps[next[v.episode]];
        b->steps[next[v.episode]++] = v;
        v = w;
      }
      b->steps[next[e]++] = v;
    }
  }
  dprl_free(next);
  dprl_free(rank);
  dprl_free(b->start);
  b->start = start;
  return DPRL_OK;
}

int dprl_step_buffer_group(dprl_step_buffer *b, dprl_error *err) {
  int rc = group_by_episode(b, err);
  for (size_t e = 0; rc == DPRL_OK && e < b->ep.n; e++) {
    char name[64];
    dprl_key k;
    dprl_step_buffer_episode_key(b, e, &k);
    dprl_key_describe(&k, name, sizeof name);
    rc = dprl_sort_episode(b->steps + b->start[e], b->start[e + 1] - b->start[e],
                           name, err);
  }
  return rc;
}

size_t dprl_step_buffer_episodes(const dprl_step_buffer *b) { return b->ep.n; }

void dprl_step_buffer_episode_key(const dprl_step_buffer *b, size_t e, dprl_key *out) {
  index_key(&b->ep, b->order ? b->order[e] : (uint32_t)e, out);
}

/* ---- sorting one episode ---------------------------------------------- */

static int cmp_t(const void *a, const void *b) {
  int64_t x = ((const dprl_step *)a)->t, y = ((const dprl_step *)b)->t;
  return (x > y) - (x < y);
}

int dprl_sort_episode(dprl_step *steps, size_t n, const char *name, dprl_error *err) {
  size_t i = 1;
  while (i < n && steps[i - 1].t < steps[i].t) i++;
  if (i < n) qsort(steps, n, sizeof *steps, cmp_t); /* rows came unordered */
  for (i = 1; i < n; i++)
    if (steps[i - 1].t == steps[i].t)
      return dprl_fail(err, DPRL_EINVAL, "duplicate (episode, t) = (%s, %lld)", name,
                       (long long)steps[i].t);
  return DPRL_OK;
}

/* ---- streaming path ------------------------------------------------------ */

static int stream_set_key(dprl_episode_stream *s, const dprl_key *k, dprl_error *err) {
  s->keybuf.len = 0;
  s->key = *k;
  if (k->is_text) {
    dprl_buf_append(&s->keybuf, k->text, k->len);
    if (s->keybuf.oom) return dprl_nomem(err);
    s->key.text = s->keybuf.data ? s->keybuf.data : "";
  }
  s->has_key = 1;
  return DPRL_OK;
}

static int stream_append(dprl_episode_stream *s, int64_t t, uint32_t state,
                         double reward, dprl_error *err) {
  if (s->n == s->cap) {
    size_t nc = s->cap ? s->cap * 2 : 256;
    dprl_step *p = dprl_realloc(s->cur, nc * sizeof *p);
    if (!p) return dprl_nomem(err);
    s->cur = p;
    s->cap = nc;
  }
  s->cur[s->n++] = (dprl_step){t, reward, 0, state};
  return DPRL_OK;
}

static int stream_close_episode(dprl_episode_stream *s, dprl_error *err) {
  char name[64];
  dprl_key_describe(&s->key, name, sizeof name);
  s->episodes_done++;
  return dprl_sort_episode(s->cur, s->n, name, err);
}

/* Append the row that opened the current episode, kept aside while the
** caller read the episode before it. */
static int stream_take_spill(dprl_episode_stream *s, dprl_error *err) {
  if (!s->has_spill) return DPRL_OK;
  s->has_spill = 0;
  return stream_append(s, s->spill.t, s->spill.state, s->spill.reward, err);
}

int dprl_episode_stream_push(dprl_episode_stream *s, const dprl_key *episode,
                             int64_t t, uint32_t state, double reward,
                             int *finished, const dprl_step **ep,
                             size_t *n_ep, dprl_error *err) {
  int rc;
  *finished = 0;
  if ((rc = stream_take_spill(s, err))) return rc;
  if (!s->has_key) {
    if ((rc = stream_set_key(s, episode, err))) return rc;
    return stream_append(s, t, state, reward, err);
  }
  int c = dprl_key_compare(&s->key, episode);
  if (c == 0) return stream_append(s, t, state, reward, err);
  if (s->direction == 0) s->direction = c < 0 ? 1 : -1;
  if ((c < 0 ? 1 : -1) != s->direction) {
    char a[64], b[64];
    dprl_key_describe(episode, a, sizeof a);
    dprl_key_describe(&s->key, b, sizeof b);
    return dprl_fail(err, DPRL_EINVAL,
                     "with grouped: true, rows must come grouped and ordered by "
                     "episode (ORDER BY episode); episode %s came after episode %s",
                     a, b);
  }
  if ((rc = stream_close_episode(s, err))) return rc;
  *finished = 1;
  *ep = s->cur; /* stays readable: the new row waits in the spill slot */
  *n_ep = s->n;
  s->n = 0;
  s->spill = (dprl_step){t, reward, 0, state};
  s->has_spill = 1;
  return stream_set_key(s, episode, err);
}

int dprl_episode_stream_finish(dprl_episode_stream *s, const dprl_step **ep,
                               size_t *n_ep, dprl_error *err) {
  int rc = stream_take_spill(s, err);
  if (rc) return rc;
  *ep = s->cur;
  *n_ep = s->n;
  if (s->n == 0) return DPRL_OK;
  rc = stream_close_episode(s, err);
  s->n = 0;
  return rc;
}

void dprl_episode_stream_free(dprl_episode_stream *s) {
  dprl_free(s->cur);
  dprl_buf_free(&s->keybuf);
  memset(s, 0, sizeof *s);
}
