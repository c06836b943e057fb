/* sql_fv_agg.c: the row half of the aggregates (see sql_fv_agg.h). */
#include "policy_eval/sql_fv_agg.h"

#include <string.h>

#include "rows/print.h"

int dprl_fv_agg_start(dprl_fv_agg *a, int64_t n_states, const dprl_return_rule *rule,
                      int grouped, dprl_cancel *cancel, dprl_error *err) {
  memset(a, 0, sizeof *a);
  a->n_states = n_states;
  a->rule = *rule;
  a->grouped = grouped;
  int rc = dprl_fv_stats_init(&a->st, n_states, cancel, err);
  return rc ? rc : dprl_fv_scratch_init(&a->sc, n_states, cancel, err);
}

int dprl_fv_agg_row(dprl_fv_agg *a, sqlite3_value **argv, dprl_error *err) {
  dprl_key ep;
  int64_t t;
  uint32_t state;
  double reward;
  int rc = dprl_sql_read_step(argv, a->n_states, &ep, &t, &state, &reward, err);
  if (rc) return rc;
  a->rows++;
  if (!a->grouped) return dprl_step_buffer_push(&a->buf, &ep, t, state, reward, err);
  int finished;
  const dprl_step *steps;
  size_t n;
  rc = dprl_episode_stream_push(&a->stream, &ep, t, state, reward, &finished, &steps, &n,
                                err);
  /* the episode that ends gets its content's print, the one that starts its key */
  if (!rc && a->keep_keys && finished)
    rc = dprl_key_set_print(&a->keys, a->cur, dprl_print_steps(steps, n), err);
  if (!rc && a->keep_keys && (finished || a->rows == 1))
    rc = dprl_key_intern(&a->keys, &ep, &a->cur, err);
  if (!rc && finished)
    rc = dprl_fv_add_episode(&a->st, &a->sc, &a->rule, steps, n, NULL, NULL, err);
  return rc;
}

int dprl_fv_agg_collect(dprl_fv_agg *a, dprl_cancel *cancel, dprl_error *err) {
  int rc;
  if (a->grouped) {
    const dprl_step *steps;
    size_t n;
    rc = dprl_episode_stream_finish(&a->stream, &steps, &n, err);
    if (!rc && n && a->keep_keys)
      rc = dprl_key_set_print(&a->keys, a->cur, dprl_print_steps(steps, n), err);
    if (!rc && n) rc = dprl_fv_add_episode(&a->st, &a->sc, &a->rule, steps, n, NULL, NULL, err);
    return rc;
  }
  a->buf.cancel = cancel;
  rc = dprl_step_buffer_group(&a->buf, err);
  size_t E = rc ? 0 : dprl_step_buffer_episodes(&a->buf);
  for (size_t e = 0; e < E && !rc; e++) {
    const dprl_step *steps;
    size_t n;
    rc = dprl_step_buffer_episode(&a->buf, e, &steps, &n, err);
    if (!rc) rc = dprl_cancel_poll(cancel, 20 * (uint64_t)n + 50, err);
    if (!rc) rc = dprl_fv_add_episode(&a->st, &a->sc, &a->rule, steps, n, NULL, NULL, err);
    if (!rc && a->keep_keys) /* the episode's content, beside its key */
      rc = dprl_key_set_print(&a->buf.ep, dprl_step_buffer_entry(&a->buf, e),
                              dprl_print_steps(steps, n), err);
  }
  a->buf.cancel = NULL;
  if (!rc && a->keep_keys) { /* the keys outlive the buffer */
    a->keys = a->buf.ep;
    memset(&a->buf.ep, 0, sizeof a->buf.ep);
  }
  dprl_step_buffer_free(&a->buf); /* the statistics are all that is needed now */
  return rc;
}

dprl_episode_index *dprl_fv_agg_keys(dprl_fv_agg *a) { return a->keep_keys ? &a->keys : NULL; }

void dprl_fv_agg_free(dprl_fv_agg *a) {
  dprl_key_index_free(&a->keys);
  dprl_step_buffer_free(&a->buf);
  dprl_episode_stream_free(&a->stream);
  dprl_fv_stats_free(&a->st);
  dprl_fv_scratch_free(&a->sc);
}
