/* key_index.c: episode keys interned to dense numbers (see steps.h). */
#include "rows/internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_EPISODES 0xFFFFFFF0u

void dprl_key_describe(const dprl_key *k, char *out, size_t n) {
  if (!k->is_text) dprl_snprintf(out, n, "%lld", (long long)k->ival);
  else if (k->len > 40) dprl_snprintf(out, n, "'%.40s...'", k->text);
  else dprl_snprintf(out, n, "'%.*s'", (int)k->len, k->text);
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

static void index_free(dprl_episode_index *x);


static void index_key(const dprl_episode_index *x, uint32_t e, dprl_key *k) {
  k->is_text = x->tlen[e] != UINT32_MAX;
  k->ival = x->ikey[e];
  k->text = k->is_text ? x->text.data + x->ikey[e] : NULL;
  k->len = k->is_text ? x->tlen[e] : 0;
}

/* What a slot stores for k: the integer itself, or the text's hash. */
static int64_t slot_key(const dprl_key *k, uint64_t h) {
  return k->is_text ? (int64_t)h : k->ival;
}

static int slot_matches(const dprl_episode_index *x, const dprl_key_slot *sl,
                        const dprl_key *k, int64_t sk) {
  if (sl->key != sk || sl->is_text != (uint32_t)k->is_text) return 0;
  if (!k->is_text) return 1;
  uint32_t e = sl->e1 - 1;
  return x->tlen[e] == k->len && memcmp(x->text.data + x->ikey[e], k->text, k->len) == 0;
}

static int index_grow_table(dprl_episode_index *x) {
  size_t ns = x->n_slots ? x->n_slots * 2 : 1024;
  dprl_key_slot *slots = dprl_calloc(ns, sizeof *slots);
  if (!slots) return 0;
  for (size_t i = 0; i < x->n_slots; i++) {
    if (!x->slots[i].e1) continue;
    dprl_key k;
    index_key(x, x->slots[i].e1 - 1, &k);
    size_t j = dprl_key_hash(&k) & (ns - 1);
    while (slots[j].e1) j = (j + 1) & (ns - 1);
    slots[j] = x->slots[i];
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
  if (x->print) {
    uint64_t *pr = dprl_realloc(x->print, nc * sizeof *pr);
    if (!pr) return 0;
    memset(pr + x->cap, 0, (nc - x->cap) * sizeof *pr);
    x->print = pr;
  }
  x->cap = nc;
  return 1;
}

/* Remember episode e (key k) as the last one seen. */
static void set_last(dprl_episode_index *x, uint32_t e, const dprl_key *k) {
  x->last = e + 1;
  x->last_int = !k->is_text;
  x->last_ival = k->ival;
}

static int index_add(dprl_episode_index *x, const dprl_key *k, uint32_t *out,
                     dprl_error *err) {
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
  set_last(x, e, k);
  *out = e;
  return DPRL_OK;
}

/* Grow dmap to cover key k if that keeps it dense: at most 4 entries per
** episode plus 64K. */
static int dmap_cover(dprl_episode_index *x, int64_t k) {
  if (k < 0 || (uint64_t)k >= 4 * ((uint64_t)x->n + 1) + 65536) return 0;
  if ((size_t)k < x->dsize) return 1;
  size_t ns = x->dsize ? x->dsize : 65536;
  while (ns <= (size_t)k) ns *= 2;
  uint32_t *d = dprl_realloc(x->dmap, ns * sizeof *d);
  if (!d) return -1;
  memset(d + x->dsize, 0, (ns - x->dsize) * sizeof *d);
  x->dmap = d;
  x->dsize = ns;
  return 1;
}

static int index_lookup_hash(dprl_episode_index *x, const dprl_key *k, uint64_t h,
                             size_t *slot) {
  int64_t sk = slot_key(k, h);
  size_t i = h & (x->n_slots - 1);
  for (; x->slots[i].e1; i = (i + 1) & (x->n_slots - 1))
    if (slot_matches(x, &x->slots[i], k, sk)) break;
  *slot = i;
  return x->slots[i].e1 != 0;
}

static int index_intern(dprl_episode_index *x, const dprl_key *k, uint32_t *out,
                        dprl_error *err) {
  if (x->last && x->last_int && !k->is_text && x->last_ival == k->ival) {
    *out = x->last - 1; /* rows mostly come grouped: no lookup at all */
    return DPRL_OK;
  }
  if (!k->is_text && k->ival >= 0 && (size_t)k->ival < x->dsize && x->dmap[k->ival]) {
    *out = x->dmap[k->ival] - 1;
    set_last(x, *out, k);
    return DPRL_OK;
  }
  uint64_t h = dprl_key_hash(k);
  size_t slot = 0;
  if (x->hashed && index_lookup_hash(x, k, h, &slot)) {
    *out = x->slots[slot].e1 - 1;
    set_last(x, *out, k);
    return DPRL_OK;
  }
  /* A new episode. */
  int dense = k->is_text ? 0 : dmap_cover(x, k->ival);
  if (dense < 0) return dprl_nomem(err);
  if (dense) {
    int rc = index_add(x, k, out, err);
    if (!rc) x->dmap[k->ival] = *out + 1;
    return rc;
  }
  if ((x->hashed + 1) * 2 > x->n_slots && !index_grow_table(x)) return dprl_nomem(err);
  index_lookup_hash(x, k, h, &slot); /* the empty slot to fill */
  int rc = index_add(x, k, out, err);
  if (!rc) {
    x->slots[slot] = (dprl_key_slot){slot_key(k, h), *out + 1, (uint32_t)k->is_text};
    x->hashed++;
  }
  return rc;
}

int dprl_key_intern(dprl_episode_index *x, const dprl_key *k, uint32_t *out,
                    dprl_error *err) {
  return index_intern(x, k, out, err);
}

int dprl_key_find(dprl_episode_index *x, const dprl_key *k, uint32_t *out) {
  if (!k->is_text && k->ival >= 0 && (size_t)k->ival < x->dsize && x->dmap[k->ival]) {
    *out = x->dmap[k->ival] - 1;
    return 1;
  }
  size_t slot;
  if (x->hashed && index_lookup_hash(x, k, dprl_key_hash(k), &slot)) {
    *out = x->slots[slot].e1 - 1;
    return 1;
  }
  return 0;
}

void dprl_key_get(const dprl_episode_index *x, uint32_t i, dprl_key *out) {
  index_key(x, i, out);
}

void dprl_key_index_free(dprl_episode_index *x) { index_free(x); }

int dprl_key_set_print(dprl_episode_index *x, uint32_t i, uint64_t print, dprl_error *err) {
  if (!x->print && !(x->print = dprl_calloc(x->cap ? x->cap : 1, sizeof *x->print)))
    return dprl_nomem(err);
  if (i < x->n) x->print[i] = print;
  return DPRL_OK;
}

unsigned dprl_key_kinds(const dprl_episode_index *x) {
  unsigned k = 0;
  for (size_t i = 0; i < x->n && k != (DPRL_KEY_INT | DPRL_KEY_TEXT); i++)
    k |= x->tlen[i] == UINT32_MAX ? DPRL_KEY_INT : DPRL_KEY_TEXT;
  return k;
}

static void index_free(dprl_episode_index *x) {
  dprl_free(x->slots);
  dprl_free(x->dmap);
  dprl_free(x->ikey);
  dprl_free(x->tlen);
  dprl_free(x->count);
  dprl_free(x->print);
  dprl_buf_free(&x->text);
  memset(x, 0, sizeof *x);
}
