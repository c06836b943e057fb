/* episode.c: one episode sorted by t, and the streaming path, rows that
** come grouped by episode (see steps.h). */
#include "rows/internal.h"

#include <stdlib.h>
#include <string.h>

/* ---- sorting one episode ---------------------------------------------- */

static int cmp_t(const void *a, const void *b) {
  int64_t x = ((const dprl_step *)a)->t, y = ((const dprl_step *)b)->t;
  return (x > y) - (x < y);
}

int dprl_steps_sort_by_t(dprl_step *steps, size_t n, int64_t *dup) {
  size_t i = 1;
  while (i < n && steps[i - 1].t < steps[i].t) i++;
  if (i < n && n > 32) {
    qsort(steps, n, sizeof *steps, cmp_t); /* rows came unordered */
  } else if (i < n) {
    for (; i < n; i++) { /* insertion sort from the first step out of order */
      dprl_step v = steps[i];
      size_t j = i;
      for (; j > 0 && steps[j - 1].t > v.t; j--) steps[j] = steps[j - 1];
      steps[j] = v;
    }
  }
  for (i = 1; i < n; i++)
    if (steps[i - 1].t == steps[i].t) {
      *dup = steps[i].t;
      return 1;
    }
  return 0;
}

int dprl_sort_episode(dprl_step *steps, size_t n, const char *name, dprl_error *err) {
  int64_t t;
  if (dprl_steps_sort_by_t(steps, n, &t))
    return dprl_fail(err, DPRL_EINVAL, "duplicate (episode, t) = (%s, %lld)", name, (long long)t);
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
