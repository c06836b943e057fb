/*
** sql_q_value.c: Q_theta(s, a) of a model released by dp_q_learn (q_learn.h:
** theta_a . phi(s) on the model's public features).
**
**   SELECT dp_q_value(model, 0.3, 1) > dp_q_value(model, 0.3, 0) AS go_right
**   FROM release;
**
** Glue only: the model's JSON is parsed once per statement (auxdata) and
** evaluated by q_learn.c.
*/
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/json.h"
#include "q_learning/q_learn.h"
#include "q_learning/q_options.h"
#include "q_learning/sql_q.h"

typedef struct q_model {
  dprl_q_features feat;
  int m;
  double *theta;
} q_model;

static void q_model_free(void *p) {
  q_model *q = p;
  if (!q) return;
  dprl_free(q->theta);
  dprl_free(q);
}

static int model_bad(dprl_error *err, const char *what) {
  return dprl_fail(err, DPRL_EINVAL, "model must be a result of dp_q_learn: %s", what);
}

static int model_number(const dprl_json *obj, const char *key, double *out, dprl_error *err) {
  const dprl_json *v = dprl_json_get(obj, key);
  if (!v || v->type != DPRL_JSON_NUMBER) {
    char what[80];
    dprl_snprintf(what, sizeof what, "features.%s must be a number", key);
    return model_bad(err, what);
  }
  *out = v->num;
  return DPRL_OK;
}

/* features: kind, K, lo, hi. */
static int model_features(const dprl_json *f, q_model *q, dprl_error *err) {
  const dprl_json *kind = dprl_json_get(f, "kind");
  double K = 0;
  int rc;
  if (!kind || kind->type != DPRL_JSON_STRING ||
      (strcmp(kind->str, "tent") && strcmp(kind->str, "rbf")))
    return model_bad(err, "features.kind must be \"tent\" or \"rbf\"");
  if ((rc = model_number(f, "K", &K, err)) || (rc = model_number(f, "lo", &q->feat.lo, err)) ||
      (rc = model_number(f, "hi", &q->feat.hi, err)))
    return rc;
  if (!(K >= 2 && K <= DPRL_Q_MAX_K && K == floor(K))) {
    char what[96], got[32];
    dprl_snprintf(what, sizeof what, "features.K must be an integer in [2, %d], got %s", DPRL_Q_MAX_K,
             dprl_json_num(K, got, sizeof got));
    return model_bad(err, what);
  }
  q->feat.kind = strcmp(kind->str, "rbf") ? DPRL_QFEAT_TENT : DPRL_QFEAT_RBF;
  q->feat.K = (int)K;
  dprl_error ferr = {0};
  if (dprl_q_features_check(&q->feat, &ferr)) return model_bad(err, ferr.msg);
  return DPRL_OK;
}

/* theta: one array of K numbers per action. */
static int model_theta(const dprl_json *th, q_model *q, dprl_error *err) {
  const char *shape = "theta must hold one array of K numbers per action";
  size_t K = (size_t)q->feat.K;
  q->m = (int)th->n;
  if (!(q->theta = dprl_calloc((size_t)q->m * K, sizeof *q->theta))) return dprl_nomem(err);
  for (size_t a = 0; a < th->n; a++) {
    const dprl_json *row = th->items[a];
    if (row->type != DPRL_JSON_ARRAY || row->n != K) return model_bad(err, shape);
    for (size_t i = 0; i < K; i++) {
      if (row->items[i]->type != DPRL_JSON_NUMBER) return model_bad(err, shape);
      q->theta[a * K + i] = row->items[i]->num;
    }
  }
  return DPRL_OK;
}

static q_model *model_parse(sqlite3_value *v, dprl_error *err) {
  const char *text = (const char *)sqlite3_value_text(v);
  if (sqlite3_value_type(v) != SQLITE_TEXT) {
    char got[80];
    dprl_sql_describe(v, got, sizeof got);
    dprl_fail(err, DPRL_EINVAL, "model must be the JSON text of a dp_q_learn result, got %s",
              got);
    return NULL;
  }
  if (!text) {
    dprl_nomem(err);
    return NULL;
  }
  dprl_error perr = {0};
  dprl_json *root = dprl_json_parse(text, (size_t)sqlite3_value_bytes(v), &perr);
  if (!root) {
    if (perr.code == DPRL_ENOMEM) dprl_nomem(err);
    else dprl_fail(err, DPRL_EINVAL, "model: %s", perr.msg);
    return NULL;
  }
  q_model *q = dprl_calloc(1, sizeof *q);
  const dprl_json *f = root->type == DPRL_JSON_OBJECT ? dprl_json_get(root, "features") : NULL;
  const dprl_json *th = root->type == DPRL_JSON_OBJECT ? dprl_json_get(root, "theta") : NULL;
  int rc = DPRL_OK;
  if (!q) rc = dprl_nomem(err);
  else if (!f || f->type != DPRL_JSON_OBJECT || !th || th->type != DPRL_JSON_ARRAY ||
           th->n < 1)
    rc = model_bad(err, "it needs \"features\" and \"theta\"");
  else if (!(rc = model_features(f, q, err)))
    rc = model_theta(th, q, err);
  dprl_json_free(root);
  if (rc) {
    q_model_free(q);
    return NULL;
  }
  return q;
}

void dprl_sql_q_value(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  const char *fn = "dp_q_value";
  dprl_error err = {0};
  (void)argc;
  q_model *q = sqlite3_get_auxdata(ctx, 0);
  int fresh = !q;
  if (fresh && !(q = model_parse(argv[0], &err))) {
    dprl_sql_result_error(ctx, fn, &err);
    return;
  }
  double s = 0;
  int64_t a = 0;
  int rc = dprl_sql_real(argv[1], "state", &s, &err);
  if (!rc) rc = dprl_q_check_state(s, q->feat.lo, q->feat.hi, "state", &err);
  if (!rc) rc = dprl_sql_int(argv[2], "action", &a, &err);
  if (!rc) rc = dprl_q_check_action(a, q->m, "action", &err);
  if (rc) dprl_sql_result_error(ctx, fn, &err);
  else
    sqlite3_result_double(ctx, dprl_q_value(&q->feat, q->theta + (size_t)a * (size_t)q->feat.K,
                                            dprl_q_rescale(&q->feat, s)));
  /* Keep the parsed model for the next row (SQLite frees it if it cannot). */
  if (fresh) sqlite3_set_auxdata(ctx, 0, q, q_model_free);
}
