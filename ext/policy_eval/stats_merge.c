/*
** stats_merge.c: shards' first-visit statistics, merged and checked (see
** stats_merge.h; ALGORITHMS.md §9).
*/
#include "policy_eval/stats_merge.h"

#include <stdio.h>
#include <string.h>

int dprl_stats_merge_init(dprl_stats_merge *m, const dprl_pe_config *cfg, dprl_cancel *cancel,
                          dprl_error *err) {
  memset(m, 0, sizeof *m);
  m->cfg = cfg;
  return dprl_fv_stats_init(&m->st, cfg->n_states, cancel, err);
}

void dprl_stats_merge_free(dprl_stats_merge *m) {
  dprl_fv_stats_free(&m->st);
  dprl_free(m->rows);
  memset(m, 0, sizeof *m);
}

static int shard_row_cmp(const void *pa, const void *pb) {
  const dprl_shard_row *a = pa, *b = pb;
  if (a->lo != b->lo) return (a->lo > b->lo) - (a->lo < b->lo);
  if (a->hi != b->hi) return (a->hi > b->hi) - (a->hi < b->hi);
  return (a->state > b->state) - (a->state < b->state);
}

static int bucket_row(dprl_stats_merge *m, const dprl_stats_row *r, dprl_error *err) {
  int64_t K = m->cfg->buckets;
  if (r->bucket_k != K)
    return dprl_fail(err, DPRL_EINVAL,
                     "buckets must equal option buckets = %lld (the shard was hashed with "
                     "another K), got %lld", (long long)K, (long long)r->bucket_k);
  if (!(r->bucket_lo >= 0 && r->bucket_lo <= r->bucket_hi && r->bucket_hi <= K - 1))
    return dprl_fail(err, DPRL_EINVAL,
                     "bucket_lo..bucket_hi must be a range within 0..%lld, got %lld..%lld",
                     (long long)K - 1, (long long)r->bucket_lo, (long long)r->bucket_hi);
  if (m->n_rows == m->cap_rows) {
    size_t nc = m->cap_rows ? 2 * m->cap_rows : 64;
    dprl_shard_row *rows = dprl_realloc(m->rows, nc * sizeof *rows);
    if (!rows) return dprl_nomem(err);
    m->rows = rows;
    m->cap_rows = nc;
  }
  m->rows[m->n_rows++] = (dprl_shard_row){r->bucket_lo, r->bucket_hi, r->state};
  return DPRL_OK;
}

/* A bound for messages: "2", or "NULL (no bound)". */
static const char *bound_text(int64_t k, char *buf, size_t n) {
  if (k > 0) dprl_snprintf(buf, n, "%lld", (long long)k);
  else dprl_snprintf(buf, n, "NULL (no bound)");
  return buf;
}

/* The statistics' max_states (0 = none) against the option's. */
static int bound_row(const dprl_stats_merge *m, int64_t k, dprl_error *err) {
  int64_t want = m->cfg->rule.max_states;
  char got_s[32], want_s[32];
  if (k != want)
    return dprl_fail(err, DPRL_EINVAL,
                     "the statistics were made with max_states = %s but option max_states = "
                     "%s: release them with the contribution bound they were made with",
                     bound_text(k, got_s, sizeof got_s), bound_text(want, want_s, sizeof want_s));
  return DPRL_OK;
}

int dprl_stats_merge_row(dprl_stats_merge *m, const dprl_stats_row *r, dprl_error *err) {
  const dprl_pe_config *c = m->cfg;
  int64_t s = r->state, v = r->visits;
  int rc;
  if (s < 0 || s >= c->n_states)
    return dprl_fail(err, DPRL_EINVAL, "state must be in 0..n_states-1 = 0..%lld, got %lld",
                     (long long)c->n_states - 1, (long long)s);
  if (v < 0 || v > c->episodes)
    return dprl_fail(err, DPRL_EINVAL,
                     "visits must be in 0..episodes = 0..%lld, got %lld (state %lld)",
                     (long long)c->episodes, (long long)v, (long long)s);
  if (r->has_bound && (rc = bound_row(m, r->bound, err))) return rc;
  if (c->buckets && (rc = bucket_row(m, r, err))) return rc;
  if (m->st.visits[s] > INT64_MAX - v) /* v <= m <= 2^53: only after ~1000 rows */
    return dprl_fail(err, DPRL_EINVAL,
                     "state %lld: visits add up to more than 2^63 - 1, more than episodes = %lld",
                     (long long)s, (long long)c->episodes);
  m->st.visits[s] += v;
  m->st.return_sum[s] += r->return_sum;
  return DPRL_OK;
}

/* The shards' ranges, sorted: a state given twice by one shard (the same
** shard unioned twice), overlapping ranges, and uncovered buckets are
** errors.  Messages name buckets only, never a state. */
static int buckets_check(dprl_stats_merge *m, dprl_cancel *cancel, dprl_error *err) {
  int64_t K = m->cfg->buckets, next = 0;
  if (K == 0) return DPRL_OK;
  int rc = dprl_sort(m->rows, m->n_rows, sizeof *m->rows, shard_row_cmp, cancel, err);
  if (rc) return rc;
  for (size_t i = 0; i < m->n_rows; i++) {
    const dprl_shard_row *r = &m->rows[i];
    if (i && r->lo == r[-1].lo && r->hi == r[-1].hi) {
      if (r->state == r[-1].state)
        return dprl_fail(err, DPRL_EINVAL,
                         "the shard of buckets %lld..%lld gives a state twice (was it "
                         "unioned twice?)", (long long)r->lo, (long long)r->hi);
      continue;
    }
    if (r->lo < next)
      return dprl_fail(err, DPRL_EINVAL, "buckets %lld..%lld and %lld..%lld overlap: an episode "
                       "would count twice", (long long)r[-1].lo, (long long)r[-1].hi,
                       (long long)r->lo, (long long)r->hi);
    if (r->lo > next)
      return dprl_fail(err, DPRL_EINVAL, "bucket %lld is not covered by any shard",
                       (long long)next);
    next = r->hi + 1;
  }
  if (next < K)
    return dprl_fail(err, DPRL_EINVAL, "bucket %lld is not covered by any shard", (long long)next);
  return DPRL_OK;
}

/* With max_states = k, each episode adds at most k to the visits of all
** states together, so m episodes give sum_s |X_s| <= k m (and, with
** |X_s| <= m, any such counts can be produced: ALGORITHMS.md §9).  The sum
** is kept as q m + r, 0 <= r < m (each |X_s| <= m), so nothing overflows. */
static int bound_check(const dprl_stats_merge *m, dprl_cancel *cancel, dprl_error *err) {
  int64_t k = m->cfg->rule.max_states, n = m->cfg->episodes, q = 0, r = 0;
  if (k <= 0 || k >= m->cfg->n_states) return DPRL_OK; /* k >= N: implied by |X_s| <= m */
  for (int64_t s = 0; s < m->cfg->n_states; s++) {
    if (dprl_cancel_poll(cancel, 4, err)) return err->code;
    r += m->st.visits[s]; /* r < m, visits <= m: r < 2^54 */
    if (r >= n) {
      r -= n;
      q++;
    }
  }
  if (q > k || (q == k && r > 0))
    return dprl_fail(err, DPRL_EINVAL,
                     "the visits of all states add up to %.17g, more than option max_states x "
                     "episodes = %lld x %lld: no %lld episodes of at most %lld first-visits each "
                     "could produce them",
                     (double)q * (double)n + (double)r, (long long)k, (long long)n, (long long)n,
                     (long long)k);
  return DPRL_OK;
}

/* The merged statistics must be ones that steps could have produced. */
static int sums_check(dprl_stats_merge *m, dprl_error *err) {
  const dprl_return_rule *r = &m->cfg->rule;
  m->st.m = m->cfg->episodes;
  for (int64_t s = 0; s < m->cfg->n_states; s++) {
    double n = (double)m->st.visits[s], lo = n * r->fmin, hi = n * r->fmax;
    double slack = (hi - lo) * 1e-9 + 1e-300;
    if (m->st.visits[s] > m->cfg->episodes)
      return dprl_fail(err, DPRL_EINVAL,
                       "state %lld: visits add up to %lld, more than episodes = %lld",
                       (long long)s, (long long)m->st.visits[s], (long long)m->cfg->episodes);
    if (m->st.return_sum[s] > hi + slack || m->st.return_sum[s] < lo - slack)
      return dprl_fail(err, DPRL_EINVAL,
                       "state %lld: return_sum %.17g is outside visits x [fmin, fmax] = %lld x "
                       "[%.17g, %.17g]",
                       (long long)s, m->st.return_sum[s], (long long)m->st.visits[s], r->fmin,
                       r->fmax);
    if (m->st.return_sum[s] > hi) m->st.return_sum[s] = hi;
    if (m->st.return_sum[s] < lo) m->st.return_sum[s] = lo;
  }
  return DPRL_OK;
}

int dprl_stats_merge_finish(dprl_stats_merge *m, dprl_cancel *cancel, dprl_error *err) {
  int rc = buckets_check(m, cancel, err);
  if (!rc) rc = sums_check(m, err);
  if (!rc) rc = bound_check(m, cancel, err);
  return rc;
}
