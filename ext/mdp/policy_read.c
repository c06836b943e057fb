/* policy_read.c: the policies given to dp_mdp_value (model.h's
** dprl_mdpv_policies_read): one policy or an object of named ones, each an
** action per state or a distribution per state, checked against the
** model's sizes. */
#include <math.h>
#include <string.h>

#include "base/options.h"
#include "mdp/model.h"
#include "mdp/model_internal.h"

/* One policy into q (pi[S*A] or act[S], allocated here); who is "policy" or
** "policy \"name\"". */
static int policy_one(const dprl_json *v, const char *who, int64_t S, int64_t A,
                      dprl_mdpv_policy *q, dprl_error *err) {
  char g[96];
  if (v->type != DPRL_JSON_ARRAY || v->n != (size_t)S) {
    if (v->type == DPRL_JSON_ARRAY) dprl_mdpv_plural(g, sizeof g, v->n, "item");
    else dprl_json_describe(v, g, sizeof g);
    return dprl_fail(err, DPRL_EINVAL,
                     "%s must be an array with one entry per state (n_states = %lld): an "
                     "action number or an array of n_actions = %lld probabilities, got %s",
                     who, (long long)S, (long long)A, g);
  }
  int actions = v->items[0]->type == DPRL_JSON_NUMBER;
  int32_t *act = actions ? dprl_malloc_array((size_t)S, sizeof *act) : NULL;
  double *pi = actions ? NULL : dprl_calloc((size_t)(S * A), sizeof *pi);
  if (!act && !pi) return dprl_nomem(err);
  q->act = act;
  q->pi = pi;
  for (int64_t s = 0; s < S; s++) {
    const dprl_json *x = v->items[s];
    if (actions) {
      if (x->type != DPRL_JSON_NUMBER || !(x->num >= 0 && x->num <= (double)(A - 1)) ||
          x->num != floor(x->num)) {
        dprl_json_describe(x, g, sizeof g);
        return dprl_fail(err, DPRL_EINVAL,
                         "%s[%lld] must be an action: an integer in 0..%lld (n_actions - 1), "
                         "got %s",
                         who, (long long)s, (long long)(A - 1), g);
      }
      act[s] = (int32_t)x->num;
      continue;
    }
    if (x->type != DPRL_JSON_ARRAY || x->n != (size_t)A) {
      if (x->type == DPRL_JSON_ARRAY) dprl_mdpv_plural(g, sizeof g, x->n, "item");
      else dprl_json_describe(x, g, sizeof g);
      return dprl_fail(err, DPRL_EINVAL,
                       "%s[%lld] must be an array of n_actions = %lld probabilities (as state "
                       "0's), got %s",
                       who, (long long)s, (long long)A, g);
    }
    double sum = 0;
    for (int64_t a = 0; a < A; a++) {
      const dprl_json *p = x->items[a];
      if (p->type != DPRL_JSON_NUMBER || !(p->num >= 0) || !isfinite(p->num)) {
        dprl_json_describe(p, g, sizeof g);
        return dprl_fail(err, DPRL_EINVAL,
                         "%s[%lld][%lld] must be a probability (a finite number >= 0), got %s",
                         who, (long long)s, (long long)a, g);
      }
      pi[s * A + a] = p->num;
      sum += p->num;
    }
    if (!(fabs(sum - 1) <= 1e-9)) {
      dprl_json_num(sum, g, sizeof g);
      return dprl_fail(err, DPRL_EINVAL,
                       "%s: the probabilities of state %lld sum to %s; a distribution sums to 1 "
                       "(within 1e-9)",
                       who, (long long)s, g);
    }
    /* a distribution, so that gamma P_pi is a gamma-contraction (§14.2) */
    for (int64_t a = 0; a < A; a++) pi[s * A + a] /= sum;
  }
  return DPRL_OK;
}

int dprl_mdpv_policies_read(const char *text, size_t len, const dprl_mdpv_model *m,
                            dprl_mdpv_policies *p, dprl_error *err) {
  memset(p, 0, sizeof *p);
  if (!text) return dprl_fail(err, DPRL_EINVAL, "policy must be JSON text");
  dprl_error perr = {0};
  dprl_json *root = dprl_json_parse(text, len, &perr);
  if (!root) {
    if (perr.code != DPRL_EINVAL) {
      *err = perr;
      return perr.code;
    }
    return dprl_fail(err, DPRL_EINVAL, "policy: %s", perr.msg);
  }
  int named = root->type == DPRL_JSON_OBJECT, rc = DPRL_OK;
  p->n = named ? root->n : 1;
  if (named && !p->n) {
    rc = dprl_fail(err, DPRL_EINVAL, "policy: an object of named policies needs at least one");
    goto done;
  }
  p->pol = dprl_calloc(p->n, sizeof *p->pol);
  p->names = named ? dprl_calloc(p->n, sizeof *p->names) : NULL;
  if (!p->pol || (named && !p->names)) {
    rc = dprl_nomem(err);
    goto done;
  }
  for (size_t i = 0; i < p->n && !rc; i++) {
    char who[96];
    if (named) {
      size_t k = strlen(root->keys[i]);
      if (!(p->names[i] = dprl_malloc(k + 1))) {
        rc = dprl_nomem(err);
        break;
      }
      memcpy(p->names[i], root->keys[i], k + 1);
      dprl_snprintf(who, sizeof who, "policy \"%.60s\"", root->keys[i]);
    } else {
      dprl_snprintf(who, sizeof who, "policy");
    }
    rc = policy_one(named ? root->items[i] : root, who, m->S, m->A, &p->pol[i], err);
  }
done:
  dprl_json_free(root);
  if (rc) dprl_mdpv_policies_free(p);
  return rc;
}

void dprl_mdpv_policies_free(dprl_mdpv_policies *p) {
  for (size_t i = 0; i < p->n; i++) {
    if (p->pol) {
      dprl_free((void *)p->pol[i].pi);
      dprl_free((void *)p->pol[i].act);
    }
    if (p->names) dprl_free(p->names[i]);
  }
  dprl_free(p->pol);
  dprl_free(p->names);
  memset(p, 0, sizeof *p);
}
