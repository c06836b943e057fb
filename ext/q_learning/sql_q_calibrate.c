/*
** sql_q_calibrate.c: the noise level of differentially private Q-learning
** with functional noise (Wang & Hegde 2019, Theorem 5; ALGORITHMS.md §8),
** from public parameters only.
**
**   SELECT dp_q_calibrate('{"epsilon": 1, "delta": 1e-5, "T": 5000, "B": 64,
**                           "lr": 3e-4, "rmin": 0, "rmax": 1, "k": 60, "K": 21}');
**   -- {"mechanism":"dp_q_calibrate","sigma":0.2926...,"beta":874.3...,
**   --  "delta_total":1e-05,"accountant":"gdp","proven":true,...}
**
** Glue only: options -> q_options.c -> q_calibrate.c -> JSON.
*/
#include <string.h>

#include "base/json.h"
#include "q_learning/q_options.h"
#include "q_learning/sql_q.h"

static void calibrate_json(const dprl_q_cal *c, dprl_buf *b) {
  dprl_buf_puts(b, "{\"mechanism\":\"dp_q_calibrate\"");
  dprl_q_put_relation(b, c->nb);
  dprl_q_put_calibration(b, c);
  if (c->L_computed) {
    dprl_json_put_key(b, "features");
    dprl_buf_printf(b, "{\"kind\":\"%s\",\"K\":%d}", dprl_q_feature_names[c->feat.kind],
                    c->feat.K);
    dprl_json_put_num(b, "rmin", c->rmin);
    dprl_json_put_num(b, "rmax", c->rmax);
  }
  dprl_json_put_key(b, "note");
  dprl_buf nb = {0};
  dprl_buf_puts(&nb, c->out.note);
  if (!dprl_q_fresh_paths(c)) dprl_buf_printf(&nb, "; %s", dprl_q_reuse_note);
  dprl_json_put_string(b, nb.oom ? "" : nb.data);
  if (nb.oom) b->oom = 1;
  dprl_buf_free(&nb);
  dprl_buf_puts(b, "}");
}

void dprl_sql_q_calibrate(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  const char *fn = "dp_q_calibrate";
  dprl_error err = {0};
  dprl_q_cal c;
  const char *text = (const char *)sqlite3_value_text(argv[0]);
  (void)argc;
  if (!text && sqlite3_value_type(argv[0]) != SQLITE_NULL) {
    sqlite3_result_error_nomem(ctx);
    return;
  }
  if (dprl_q_calibrate_options(text, (size_t)sqlite3_value_bytes(argv[0]), &c, &err)) {
    dprl_sql_result_error(ctx, fn, &err);
    return;
  }
  dprl_buf b = {0};
  calibrate_json(&c, &b);
  if (b.oom) sqlite3_result_error_nomem(ctx);
  else dprl_sql_result_json(ctx, b.data, (int)b.len);
  dprl_buf_free(&b);
}
