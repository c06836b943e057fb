/*
** util_mdp.h: what the unit tests of mdp/ share: dp_mdp's options parsed
** (mdp/mdp.h), and a released model written as the release writes it,
** read back and estimated (mdp/model.h, mdp_eval.h), with a hand-made one.
*/

#ifndef DPRL_TEST_UTIL_MDP_H
#define DPRL_TEST_UTIL_MDP_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "base/json.h"
#include "mdp/mdp.h"
#include "mdp/mdp_eval.h"
#include "mdp/model.h"

#define T_ DPRL_MDP_TICK

static inline int parse(dprl_mdp_config *c, const char *json, dprl_error *err) {
  memset(err, 0, sizeof *err);
  return dprl_mdp_config_parse(c, "dp_mdp", json, strlen(json), 0, 0, NULL, err);
}

/* ---- a model as the release writes it ------------------------------------------ */

typedef struct spec {
  int S, A, horizon;
  double gamma, rmin, rmax, sigma, rsig;
  double *counts; /* S*A*(S+1) */
  double *rsums;  /* S*A, sums of (r - c) */
  double *start;  /* S */
} spec;

static inline void spec_alloc(spec *p, int S, int A) {
  memset(p, 0, sizeof *p);
  p->S = S;
  p->A = A;
  p->gamma = 0.9;
  p->rmax = 1;
  p->counts = calloc((size_t)(S * A * (S + 1)), sizeof *p->counts);
  p->rsums = calloc((size_t)(S * A), sizeof *p->rsums);
  p->start = calloc((size_t)S, sizeof *p->start);
}

static inline void spec_free(spec *p) {
  free(p->counts);
  free(p->rsums);
  free(p->start);
}

static inline void put_array(dprl_buf *b, const double *x, int n) {
  dprl_json_put_double_array(b, x, (size_t)n);
}

/* The JSON of the contract for p; the caller frees .data. */
static inline dprl_buf model_json(const spec *p) {
  dprl_buf b = {0};
  int S = p->S, A = p->A;
  dprl_buf_printf(&b,
                  "{\"mechanism\":\"dp_mdp\",\"private\":false,\"seeded\":true,\"unit\":\"episode\","
                  "\"n_states\":%d,\"n_actions\":%d,\"epsilon\":1,\"delta\":1e-5,\"clip\":null,"
                  "\"sensitivity\":2",
                  S, A);
  dprl_json_put_num(&b, "gamma", p->gamma);
  dprl_json_put_num(&b, "rmin", p->rmin);
  dprl_json_put_num(&b, "rmax", p->rmax);
  dprl_json_put_num(&b, "sigma", p->sigma);
  dprl_json_put_num(&b, "reward_sigma", p->rsig);
  dprl_json_put_num(&b, "reward_center", 0.5 * (p->rmin + p->rmax));
  if (p->horizon) dprl_json_put_int(&b, "horizon", p->horizon);
  else dprl_buf_puts(&b, ",\"horizon\":null");
  dprl_buf_puts(&b, ",\"features\":\"tabular\",\"start\":");
  put_array(&b, p->start, S);
  dprl_buf_puts(&b, ",\"reward_sums\":[");
  for (int s = 0; s < S; s++) {
    if (s) dprl_buf_puts(&b, ",");
    put_array(&b, p->rsums + s * A, A);
  }
  dprl_buf_puts(&b, "],\"counts\":[");
  for (int s = 0; s < S; s++) {
    dprl_buf_puts(&b, s ? ",[" : "[");
    for (int a = 0; a < A; a++) {
      if (a) dprl_buf_puts(&b, ",");
      put_array(&b, p->counts + (s * A + a) * (S + 1), S + 1);
    }
    dprl_buf_puts(&b, "]");
  }
  dprl_buf_puts(&b, "]}");
  return b;
}

static inline int read_spec(const spec *p, dprl_mdpv_model *m, dprl_error *err) {
  dprl_buf b = model_json(p);
  int rc = dprl_mdpv_model_read(m, b.data, b.len, NULL, err);
  dprl_buf_free(&b);
  return rc;
}

static inline int setup(const spec *p, dprl_mdpv_model *m, dprl_mdpv_opts *o, dprl_mdpv_est *e,
                 const char *opts, int plan) {
  dprl_error err = {0};
  memset(e, 0, sizeof *e);
  int rc = read_spec(p, m, &err);
  if (!rc) rc = dprl_mdpv_options("t", opts, strlen(opts), plan, m, o, &err);
  double *scratch = malloc(sizeof(double) * (size_t)(p->S + 1));
  if (!rc) rc = dprl_mdpv_estimate(m, &o->est, NULL, scratch, e, NULL, &err);
  free(scratch);
  if (rc) printf("# setup: %s\n", err.msg);
  return rc;
}

/* State 0: action 0 stays (reward 0), action 1 moves to state 1 (reward
** 0).  State 1: action 0 stays with reward 1, action 1 ends (reward 0).
** Rewards 0..1, so sums of r - 0.5. */
static inline void hand_spec(spec *p) {
  spec_alloc(p, 2, 2);
  double c[] = {10, 0, 0, 0, 10, 0, 0, 10, 0, 0, 0, 10};
  memcpy(p->counts, c, sizeof c);
  double r[] = {-5, -5, 5, -5};
  memcpy(p->rsums, r, sizeof r);
  p->start[0] = 10;
}

#endif
