/*
** tally.c: the experts' rows -> the exact votes and counts in grid steps
** (expert_policy.h, ALGORITHMS.md §16.2).
**
** The rows are sorted by (expert, episode, t), which finds duplicates, and
** then each expert's run by (state, action): the expert's counts n_i(s) and
** n_i(s, a) are runs of that order, so nothing per expert is S x A dense.
** An expert's k states are chosen from its own runs only.
*/
#include <math.h>
#include <string.h>

#include "expert/expert_policy.h"
#include "rows/print.h"

int dprl_ep_rows_push(dprl_ep_rows *r, const dprl_ep_row *row, dprl_error *err) {
  if (r->n == r->cap) {
    if (r->n >= DPRL_EP_MAX_ROWS)
      return dprl_fail(err, DPRL_EINVAL,
                       "more than %zu rows: a release keeps every row in memory (24 bytes "
                       "each) and takes at most 2^26", DPRL_EP_MAX_ROWS);
    size_t nc = r->cap ? r->cap * 2 : 1024;
    if (nc > DPRL_EP_MAX_ROWS) nc = DPRL_EP_MAX_ROWS;
    dprl_ep_row *v = dprl_realloc(r->v, nc * sizeof *v);
    if (!v) return dprl_nomem(err);
    r->v = v;
    r->cap = nc;
  }
  r->v[r->n++] = *row;
  return DPRL_OK;
}

void dprl_ep_rows_free(dprl_ep_rows *r) {
  dprl_free(r->v);
  memset(r, 0, sizeof *r);
}

void dprl_ep_tally_free(dprl_ep_tally *t) {
  dprl_free(t->votes);
  dprl_free(t->experts);
  dprl_free(t->exact);
  memset(t, 0, sizeof *t);
}

static int cmp_u32(uint32_t a, uint32_t b) { return (a > b) - (a < b); }

static int by_expert_episode_t(const void *pa, const void *pb) {
  const dprl_ep_row *a = pa, *b = pb;
  int c = cmp_u32(a->expert, b->expert);
  if (!c) c = cmp_u32(a->episode, b->episode);
  if (!c) c = (a->t > b->t) - (a->t < b->t);
  return c;
}

static int by_state_action(const void *pa, const void *pb) {
  const dprl_ep_row *a = pa, *b = pb;
  int c = cmp_u32(a->state, b->state);
  return c ? c : cmp_u32(a->action, b->action);
}

/* One of an expert's states and its number of steps there. */
typedef struct visited {
  int64_t n;
  uint32_t state;
} visited;

/* The most visited first; ties to the lower state. */
static int most_visited(const void *pa, const void *pb) {
  const visited *a = pa, *b = pb;
  if (a->n != b->n) return a->n < b->n ? 1 : -1;
  return cmp_u32(a->state, b->state);
}

/* One expert's rows v[0..n), sorted by (state, action): its contribution
** at its k most visited states (marked with `mark` in chosen[]). */
static int add_expert(const dprl_ep_row *v, size_t n, int64_t n_actions, int64_t k, int bits,
                      uint32_t mark, uint32_t *chosen, visited *scratch, dprl_ep_tally *t,
                      dprl_cancel *cancel, dprl_error *err) {
  size_t nd = 0;
  for (size_t i = 0; i < n;) { /* the expert's states, with their steps */
    size_t j = i;
    while (j < n && v[j].state == v[i].state) j++;
    scratch[nd].state = v[i].state;
    scratch[nd++].n = (int64_t)(j - i);
    i = j;
  }
  if (dprl_cancel_poll(cancel, 4 * (uint64_t)n, err)) return err->code;
  if ((int64_t)nd > k) {
    int rc = dprl_sort(scratch, nd, sizeof *scratch, most_visited, cancel, err);
    if (rc) return rc;
    nd = (size_t)k;
  }
  for (size_t i = 0; i < nd; i++) chosen[scratch[i].state] = mark;
  uint64_t unit = (uint64_t)1 << bits;
  for (size_t i = 0; i < n;) {
    uint32_t s = v[i].state;
    size_t j = i;
    while (j < n && v[j].state == s) j++;
    if (chosen[s] == mark) {
      uint64_t ns = (uint64_t)(j - i);
      t->experts[s]++;
      for (size_t a0 = i; a0 < j;) {
        size_t a1 = a0;
        while (a1 < j && v[a1].action == v[a0].action) a1++;
        uint64_t nsa = (uint64_t)(a1 - a0);
        /* round(nsa 2^b / ns), half up, exactly: nsa 2^b <= 2^51 */
        uint64_t q = (2 * nsa * unit + ns) / (2 * ns);
        size_t cell = (size_t)s * (size_t)n_actions + v[a0].action;
        t->votes[cell] += (int64_t)q;
        if (t->exact) t->exact[cell] += (double)nsa / (double)ns;
        a0 = a1;
      }
    }
    i = j;
  }
  return dprl_cancel_poll(cancel, 8 * (uint64_t)n, err);
}

/* The print of one expert's rows v[0..n), sorted by (episode, t): its
** episodes' prints over (t, state, action), as a multiset, so that neither
** the episodes' keys nor their order count. */
static uint64_t expert_print(const dprl_ep_row *v, size_t n) {
  uint64_t sum = 0, episodes = 0;
  for (size_t i = 0; i < n;) {
    size_t j = i;
    while (j < n && v[j].episode == v[i].episode) j++;
    uint64_t h = dprl_print_start(j - i);
    for (; i < j; i++) {
      h = dprl_print_int(h, v[i].t);
      h = dprl_print_word(h, v[i].state);
      h = dprl_print_word(h, v[i].action);
    }
    sum = dprl_print_add(sum, h);
    episodes++;
  }
  return dprl_print_end(sum, episodes);
}

int dprl_ep_tally_rows(dprl_ep_rows *rows, int64_t n_states, int64_t n_actions, int64_t k,
                       int bits, int want_exact, dprl_ep_tally *t, dprl_ep_dup *dup,
                       uint64_t *prints, dprl_cancel *cancel, dprl_error *err) {
  memset(t, 0, sizeof *t);
  if (!(n_states >= 1 && n_actions >= 1 && n_states * n_actions <= DPRL_EP_MAX_CELLS &&
        k >= 1 && bits >= 0 && bits <= 25))
    return dprl_fail(err, DPRL_EINVAL, "tally: sizes out of range");
  size_t cells = (size_t)(n_states * n_actions), n = rows->n;
  uint32_t *chosen = NULL;
  visited *scratch = NULL;
  t->votes = dprl_calloc_polled(cells, sizeof *t->votes, cancel, err);
  if (t->votes) t->experts = dprl_calloc_polled((size_t)n_states, sizeof *t->experts, cancel, err);
  if (t->experts && want_exact) t->exact = dprl_calloc_polled(cells, sizeof *t->exact, cancel, err);
  if (t->experts && (t->exact || !want_exact))
    chosen = dprl_calloc_polled((size_t)n_states, sizeof *chosen, cancel, err);
  int rc = chosen ? DPRL_OK : err->code ? err->code : dprl_nomem(err);
  /* an expert's distinct states: at most its rows and at most S */
  size_t most = n < (size_t)n_states ? n : (size_t)n_states;
  if (!rc && n && !(scratch = dprl_malloc_array(most, sizeof *scratch))) rc = dprl_nomem(err);
  if (!rc) rc = dprl_sort(rows->v, n, sizeof *rows->v, by_expert_episode_t, cancel, err);
  for (size_t i = 1; !rc && i < n; i++) {
    if ((rc = dprl_cancel_poll(cancel, 4, err))) break;
    if (by_expert_episode_t(&rows->v[i - 1], &rows->v[i]) == 0) {
      dup->expert = rows->v[i].expert;
      dup->episode = rows->v[i].episode;
      dup->t = rows->v[i].t;
      rc = dprl_fail(err, DPRL_EINVAL, "a duplicate (expert, episode, t)");
    }
  }
  uint32_t mark = 0;
  for (size_t i = 0; !rc && i < n;) {
    size_t j = i;
    while (j < n && rows->v[j].expert == rows->v[i].expert) j++;
    if (prints) prints[rows->v[i].expert] = expert_print(rows->v + i, j - i);
    rc = dprl_sort(rows->v + i, j - i, sizeof *rows->v, by_state_action, cancel, err);
    if (!rc)
      rc = add_expert(rows->v + i, j - i, n_actions, k, bits, ++mark, chosen, scratch, t,
                      cancel, err);
    t->n_experts++;
    i = j;
  }
  dprl_free(chosen);
  dprl_free(scratch);
  if (rc) dprl_ep_tally_free(t);
  return rc;
}
