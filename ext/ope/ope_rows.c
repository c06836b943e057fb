/* ope_rows.c: dp_is_value's rows, in any order, into per-episode sums (ope.h). */
#include "ope/ope.h"
#include "rows/print.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* One allocation holds every row (SQLite's allocator grants at most
** DPRL_MAX_ALLOC bytes at once). */
#define MAX_ROWS (DPRL_MAX_ALLOC / sizeof(dprl_ope_step))

int dprl_ope_rows_push(dprl_ope_rows *r, const dprl_key *episode, int64_t t, double reward,
                       double behavior_prob, double target_prob, dprl_error *err) {
  uint32_t e;
  int rc = dprl_key_intern(&r->keys, episode, &e, err);
  if (rc) return rc;
  if (r->n == r->cap) {
    if (r->cap >= MAX_ROWS)
      return dprl_fail(err, DPRL_EINVAL,
                       "dp_is_value: more than %zu rows (steps) in one group: release a public "
                       "partition of the episodes group by group (GROUP BY)", (size_t)MAX_ROWS);
    size_t nc = r->cap ? r->cap * 2 : 4096;
    if (nc > MAX_ROWS) nc = MAX_ROWS;
    dprl_ope_step *v = dprl_realloc(r->v, nc * sizeof *v);
    if (!v) return dprl_nomem(err);
    r->v = v;
    r->cap = nc;
  }
  dprl_ope_step *s = &r->v[r->n++];
  s->t = t;
  s->reward = reward;
  /* a ratio as a difference of logs: a product of many never overflows */
  s->log_ratio = target_prob > 0 ? log(target_prob) - log(behavior_prob) : -INFINITY;
  s->behavior = behavior_prob;
  s->episode = e;
  s->pad = 0;
  return DPRL_OK;
}

static int by_episode_t(const void *a, const void *b) {
  const dprl_ope_step *x = a, *y = b;
  if (x->episode != y->episode) return x->episode < y->episode ? -1 : 1;
  return (x->t > y->t) - (x->t < y->t);
}

/* The logged rows of one episode, sorted by t. */
static uint64_t episode_print(const dprl_ope_step *v, size_t n) {
  uint64_t h = dprl_print_start(n);
  for (size_t i = 0; i < n; i++) {
    h = dprl_print_int(h, v[i].t);
    h = dprl_print_double(h, v[i].reward);
    h = dprl_print_double(h, v[i].behavior);
  }
  return h;
}

int dprl_ope_rows_collect(dprl_ope_rows *r, const dprl_ope_config *c, dprl_cancel *cancel,
                          dprl_error *err) {
  size_t units = r->keys.n;
  r->episodes = 0;
  r->w = dprl_malloc_array(units ? units : 1, sizeof *r->w);
  r->g = dprl_malloc_array(units ? units : 1, sizeof *r->g);
  int rc = !r->w || !r->g ? dprl_nomem(err) : DPRL_OK;
  if (!rc && r->n) rc = dprl_sort(r->v, r->n, sizeof *r->v, by_episode_t, cancel, err);
  for (size_t i = 0; !rc && i < r->n;) {
    size_t j = i + 1;
    while (j < r->n && r->v[j].episode == r->v[i].episode) {
      if (r->v[j].t == r->v[j - 1].t) {
        dprl_key k;
        char what[64];
        dprl_key_get(&r->keys, r->v[i].episode, &k);
        dprl_key_describe(&k, what, sizeof what);
        return dprl_fail(err, DPRL_EINVAL,
                         "%s: duplicate (episode, t): episode %s has two rows with t = %lld",
                         c->fn, what, (long long)r->v[j].t);
      }
      j++;
    }
    if (c->budget)
      rc = dprl_key_set_print(&r->keys, r->v[i].episode, episode_print(r->v + i, j - i), err);
    if (rc) break;
    dprl_ope_episode(c, r->v + i, j - i, &r->w[r->episodes], &r->g[r->episodes]);
    r->episodes++;
    rc = dprl_cancel_poll(cancel, 20 * (uint64_t)(j - i) + 50, err);
    i = j;
  }
  dprl_free(r->v);
  r->v = NULL;
  r->n = r->cap = 0;
  return rc;
}

void dprl_ope_rows_sum(const dprl_ope_rows *r, const dprl_ope_config *c, const dprl_ope_noise *nz,
                       dprl_ope_sums *sums) {
  memset(sums, 0, sizeof *sums);
  for (size_t e = 0; e < r->episodes; e++) {
    int clipped = r->w[e] > c->weight_max;
    dprl_ope_sums_add(c, nz, sums, clipped ? c->weight_max : r->w[e], r->g[e], clipped);
  }
}

int dprl_ope_choose_weight(dprl_ope_config *c, dprl_ope_noise *nz, const dprl_ope_rows *r,
                           dprl_rng *rng, dprl_error *err) {
  int64_t bins[DPRL_GRIDQ_EDGES_MAX] = {0};
  /* an episode of weight 0 (an action the target never takes) is in no
  ** bin: W is a quantile of the weights that count */
  for (size_t e = 0; e < r->episodes; e++)
    if (r->w[e] > 0) bins[dprl_gridq_bin(&c->gq, r->w[e])]++;
  c->weight_max = dprl_gridq_choose(&c->gq, bins, rng);
  return dprl_ope_calibrate(c, nz, err);
}

void dprl_ope_rows_free(dprl_ope_rows *r) {
  dprl_free(r->v);
  dprl_free(r->w);
  dprl_free(r->g);
  r->v = NULL, r->w = r->g = NULL;
  r->n = r->cap = 0;
  dprl_key_index_free(&r->keys);
}
