/*
** examined.c: which trajectories the T runs of dp_prefix_stable examine
** (ALGORITHMS.md section 7.1); see examined.h.
*/
#include <string.h>

#include "prefix_stable/examined.h"
#include "prefix_stable/prefix_stable.h"

const char *const dprl_prefix_read_names[] = {"auto", "once", "twice", NULL};

int dprl_prefix_reads_once(int read, int seeded) {
  if (read == DPRL_PREFIX_READ_ONCE) return 1;
  if (read != DPRL_PREFIX_READ_AUTO || seeded) return 0;
  return -1;
}

/* ---- Two passes ------------------------------------------------------- */

typedef struct keyed {
  dprl_key key;
  uint32_t i;
} keyed;

static int keyed_cmp(const void *a, const void *b) {
  return dprl_key_compare(&((const keyed *)a)->key, &((const keyed *)b)->key);
}

int dprl_examined_key_order(const dprl_episode_index *ids, uint32_t *order,
                            dprl_cancel *cancel, dprl_error *err) {
  size_t n = ids->n;
  keyed *k = dprl_calloc(n ? n : 1, sizeof *k);
  if (!k) return dprl_nomem(err);
  for (size_t i = 0; i < n; i++) {
    dprl_key_get(ids, (uint32_t)i, &k[i].key);
    k[i].i = (uint32_t)i;
  }
  int rc = dprl_sort(k, n, sizeof *k, keyed_cmp, cancel, err);
  for (size_t i = 0; !rc && i < n; i++) order[i] = k[i].i;
  dprl_free(k);
  return rc;
}

int dprl_examined_choose(dprl_rng *rng, int64_t n, int64_t T, int64_t *run,
                         uint32_t *chosen, int64_t *K, dprl_error *err) {
  *K = 0;
  if (n < 0 || (uint64_t)n > UINT32_MAX)
    return dprl_fail(err, DPRL_EINVAL, "examined: %lld keys (at most %lu)", (long long)n,
                     (unsigned long)UINT32_MAX);
  /* place[i] = 1 + key i's place in chosen, 0 while it is not drawn */
  uint32_t *place = dprl_calloc(n ? (size_t)n : 1, sizeof *place);
  if (!place) return dprl_nomem(err);
  dprl_prefix_draw(rng, n, T, run);
  int64_t d = 0;
  for (int64_t c = 0; c < T; c++) {
    int64_t i = run[c];
    if (i < 0) continue;
    if (!place[i]) {
      chosen[d] = (uint32_t)i;
      place[i] = (uint32_t)++d;
    }
    run[c] = (int64_t)place[i] - 1;
  }
  dprl_free(place);
  *K = d;
  return DPRL_OK;
}

/* ---- The examined trajectories, for the release ------------------------ */

int dprl_examined_flatten(dprl_step_buffer *buf, dprl_episode_index *chosen, int64_t K,
                          int64_t **offsets, int64_t **states, int64_t **actions,
                          dprl_error *err) {
  size_t E = dprl_step_buffer_episodes(buf), n = buf->n;
  /* place[e]: episode e's place in chosen, UINT32_MAX when not examined */
  uint32_t *place = dprl_calloc(E ? E : 1, sizeof *place);
  int64_t *off = dprl_calloc((size_t)K + 1, sizeof *off);
  int64_t *st = dprl_malloc_array(n ? n : 1, sizeof *st);
  int64_t *ac = dprl_malloc_array(n ? n : 1, sizeof *ac);
  int rc = !place || !off || !st || !ac ? dprl_nomem(err) : DPRL_OK;
  for (size_t e = 0; !rc && e < E; e++) { /* lengths, at the chosen places */
    dprl_key k;
    dprl_step_buffer_episode_key(buf, e, &k);
    if (!dprl_key_find(chosen, &k, &place[e]) || (int64_t)place[e] >= K) place[e] = UINT32_MAX;
    else off[place[e] + 1] = (int64_t)(buf->start[e + 1] - buf->start[e]);
  }
  for (int64_t c = 0; !rc && c < K; c++) off[c + 1] += off[c];
  for (size_t e = 0; !rc && e < E; e++) {
    const dprl_step *steps;
    size_t len;
    /* only the examined are read (and so checked for a duplicate t) */
    if (place[e] != UINT32_MAX) {
      if ((rc = dprl_step_buffer_episode(buf, e, &steps, &len, err))) break;
      for (size_t j = 0, at = (size_t)off[place[e]]; j < len; j++, at++) {
        st[at] = steps[j].state;
        ac[at] = (int64_t)steps[j].reward; /* the action index */
      }
    }
    dprl_step_buffer_done_before(buf, e + 1);
  }
  dprl_free(place);
  if (rc) {
    dprl_free(off);
    dprl_free(st);
    dprl_free(ac);
    off = st = ac = NULL;
  }
  *offsets = off;
  *states = st;
  *actions = ac;
  return rc;
}

/* ---- One pass --------------------------------------------------------- */

enum { IN = 1, BAD = 2, EXAMINED = 4 }; /* r->flag bits */

void dprl_reservoir_init(dprl_reservoir *r, int64_t T) {
  memset(r, 0, sizeof *r);
  r->T = T;
}

void dprl_reservoir_free(dprl_reservoir *r) {
  for (size_t i = 0; i < r->n_bad; i++) dprl_free(r->bad[i].msg);
  dprl_free(r->bad);
  dprl_free(r->res);
  dprl_free(r->flag);
  memset(r, 0, sizeof *r);
}

int dprl_reservoir_see(dprl_reservoir *r, dprl_rng *rng, uint32_t id, int *in,
                       dprl_error *err) {
  *in = 0;
  if (id < r->n_keys) {
    *in = r->flag[id] & IN;
    return DPRL_OK;
  }
  if (id > r->n_keys)
    return dprl_fail(err, DPRL_EINVAL, "reservoir: key %lu before key %llu",
                     (unsigned long)id, (unsigned long long)r->n_keys);
  if (id >= r->flag_cap) { /* one flag per key seen */
    size_t fc = r->flag_cap ? 2 * r->flag_cap : 1024;
    unsigned char *f = dprl_realloc(r->flag, fc);
    if (!f) return dprl_nomem(err);
    r->flag = f;
    r->flag_cap = fc;
  }
  if (r->res_n == r->res_cap && (int64_t)r->res_n < r->T) { /* min(T, n) slots */
    size_t rc = r->res_cap ? 2 * r->res_cap : 64;
    if ((int64_t)rc > r->T) rc = (size_t)r->T;
    uint32_t *s = dprl_realloc(r->res, rc * sizeof *s);
    if (!s) return dprl_nomem(err);
    r->res = s;
    r->res_cap = rc;
  }
  r->n_keys++;
  r->flag[id] = 0;
  if ((int64_t)r->res_n < r->T) {
    r->res[r->res_n++] = id;
    r->flag[id] = IN;
  } else {
    uint64_t j = dprl_rng_below(rng, r->n_keys);
    if (j < (uint64_t)r->T) {
      r->flag[r->res[j]] &= (unsigned char)~IN;
      r->res[j] = id;
      r->flag[id] = IN;
    }
  }
  *in = r->flag[id] & IN;
  return DPRL_OK;
}

int dprl_reservoir_take(dprl_reservoir *r, uint32_t id, int *read, dprl_error *err) {
  *read = 0;
  if (id >= r->n_keys || !(r->flag[id] & IN))
    return dprl_fail(err, DPRL_EINVAL, "reservoir: a row of key %lu, not a member",
                     (unsigned long)id);
  r->rows++;
  *read = !(r->flag[id] & BAD);
  return DPRL_OK;
}

int dprl_reservoir_defer(dprl_reservoir *r, uint32_t id, dprl_error *err) {
  /* the message moves out of err first, so that an allocation failing
  ** below is reported as such */
  char msg_now[sizeof err->msg];
  memcpy(msg_now, err->msg, sizeof msg_now);
  err->code = DPRL_OK;
  err->msg[0] = 0;
  if (id >= r->n_keys)
    return dprl_fail(err, DPRL_EINVAL, "reservoir: a deferred error of key %lu, never seen",
                     (unsigned long)id);
  if (r->n_bad == r->cap_bad) {
    size_t nc = r->cap_bad ? 2 * r->cap_bad : 16;
    dprl_deferred *b = dprl_realloc(r->bad, nc * sizeof *b);
    if (!b) return dprl_nomem(err);
    r->bad = b;
    r->cap_bad = nc;
  }
  size_t len = strnlen(msg_now, sizeof msg_now - 1);
  char *msg = dprl_malloc(len + 1);
  if (!msg) return dprl_nomem(err);
  memcpy(msg, msg_now, len);
  msg[len] = 0;
  r->bad[r->n_bad++] = (dprl_deferred){id, r->rows, msg};
  r->flag[id] |= BAD;
  return DPRL_OK;
}

void dprl_reservoir_draw(dprl_reservoir *r, dprl_rng *rng, int64_t *run, int64_t *K) {
  dprl_rng_shuffle_u32(rng, r->res, (uint64_t)r->res_n);
  uint64_t n = r->n_keys, d = 0;
  for (int64_t c = 0; c < r->T; c++) {
    uint64_t u = n ? dprl_rng_below(rng, n) : 0;
    if (!n) run[c] = -1;
    else if (u < d) run[c] = (int64_t)u;
    else {
      r->flag[r->res[d]] |= EXAMINED; /* d < min(T, n) = res_n */
      run[c] = (int64_t)d++;
    }
  }
  *K = (int64_t)d;
}

int dprl_reservoir_bad_examined(const dprl_reservoir *r, dprl_error *err) {
  const dprl_deferred *first = NULL;
  for (size_t i = 0; i < r->n_bad; i++)
    if ((r->flag[r->bad[i].id] & EXAMINED) && (!first || r->bad[i].row < first->row))
      first = &r->bad[i];
  return first ? dprl_fail(err, DPRL_EINVAL, "%s", first->msg) : DPRL_OK;
}
