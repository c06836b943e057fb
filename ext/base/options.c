/* options.c: typed reading of the JSON options argument (see options.h). */
#include "base/options.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int dprl_options_open(dprl_options *o, const char *fn, const char *text,
                      size_t len, const char *const *known, dprl_error *err) {
  return dprl_options_open_polled(o, fn, text, len, known, NULL, err);
}

int dprl_options_open_polled(dprl_options *o, const char *fn, const char *text, size_t len,
                             const char *const *known, dprl_cancel *cancel, dprl_error *err) {
  o->fn = fn;
  o->root = NULL;
  o->err = err;
  if (!text)
    return dprl_fail(err, DPRL_EINVAL,
                     "%s: options must be JSON text, got NULL", fn);
  dprl_error perr = {0};
  o->root = dprl_json_parse_polled(text, len, cancel, &perr);
  if (!o->root) {
    if (perr.code == DPRL_ENOMEM) return dprl_nomem(err);
    if (perr.code == DPRL_EINTR) return dprl_fail(err, DPRL_EINTR, "%s", perr.msg);
    return dprl_fail(err, DPRL_EINVAL, "%s: options: %s", fn, perr.msg);
  }
  if (o->root->type != DPRL_JSON_OBJECT) {
    char got[64];
    dprl_json_describe(o->root, got, sizeof got);
    return dprl_fail(err, DPRL_EINVAL, "%s: options must be a JSON object, got %s", fn, got);
  }
  for (size_t i = 0; known && i < o->root->n; i++) {
    const char *k = o->root->keys[i];
    int ok = 0;
    for (const char *const *p = known; *p; p++)
      if (strcmp(*p, k) == 0) ok = 1;
    if (!ok) {
      char list[300] = "";
      for (const char *const *p = known; *p; p++) {
        if (p != known) strncat(list, ", ", sizeof list - strlen(list) - 1);
        strncat(list, *p, sizeof list - strlen(list) - 1);
      }
      return dprl_fail(err, DPRL_EINVAL, "%s: unknown option \"%.60s\" (known: %s)",
                       fn, k, list);
    }
  }
  return DPRL_OK;
}

void dprl_options_close(dprl_options *o) {
  dprl_json_free(o->root);
  o->root = NULL;
}

const dprl_json *dprl_opt_get(const dprl_options *o, const char *key) {
  return dprl_json_get(o->root, key);
}

int dprl_opt_has(const dprl_options *o, const char *key) {
  return dprl_opt_get(o, key) != NULL;
}

void dprl_json_describe(const dprl_json *v, char *out, size_t n) {
  if (!v) dprl_snprintf(out, n, "nothing");
  else if (v->type == DPRL_JSON_NUMBER && fabs(v->num) >= 1e15 && fabs(v->num) < 1e21) {
    dprl_snprintf(out, n, "%.0f", v->num); /* an integer: every digit (2^60, not 1.15e+18) */
    return;
  } else if (v->type == DPRL_JSON_NUMBER) dprl_snprintf(out, n, "%.17g", v->num);
  else if (v->type == DPRL_JSON_ARRAY && v->n == 0) dprl_snprintf(out, n, "an empty array");
  else if (v->type == DPRL_JSON_STRING) dprl_snprintf(out, n, "\"%.40s\"", v->str);
  else dprl_snprintf(out, n, "%s", dprl_json_type_name(v->type));
  /* Trim %.17g noise such as 0.10000000000000001 back to 0.1. */
  if (v && v->type == DPRL_JSON_NUMBER) {
    char shorter[40];
    dprl_snprintf(shorter, sizeof shorter, "%.15g", v->num);
    if (dprl_strtod(shorter, NULL) == v->num) dprl_snprintf(out, n, "%s", shorter);
  }
}

void dprl_range_describe(dprl_range r, char *out, size_t n) {
  if (isinf(r.hi) && isinf(r.lo)) dprl_snprintf(out, n, "a finite number");
  else if (isinf(r.hi)) dprl_snprintf(out, n, "%s %g", r.lo_open ? ">" : ">=", r.lo);
  else if (isinf(r.lo)) dprl_snprintf(out, n, "%s %g", r.hi_open ? "<" : "<=", r.hi);
  else dprl_snprintf(out, n, "in %c%g, %g%c", r.lo_open ? '(' : '[', r.lo, r.hi,
                r.hi_open ? ')' : ']');
}

int dprl_range_contains(dprl_range r, double x) {
  if (!isfinite(x)) return 0;
  if (r.lo_open ? !(x > r.lo) : !(x >= r.lo)) return 0;
  if (r.hi_open ? !(x < r.hi) : !(x <= r.hi)) return 0;
  return 1;
}

static int missing(const dprl_options *o, const char *key) {
  return dprl_fail(o->err, DPRL_EINVAL, "%s: option %s is required", o->fn, key);
}

static int bad(const dprl_options *o, const char *key, const char *want,
               const dprl_json *v) {
  char got[64];
  dprl_json_describe(v, got, sizeof got);
  return dprl_fail(o->err, DPRL_EINVAL, "%s: option %s must be %s, got %s", o->fn,
                   key, want, got);
}

int dprl_opt_number(const dprl_options *o, const char *key, int required,
                    double dflt, dprl_range r, double *out) {
  const dprl_json *v = dprl_opt_get(o, key);
  char want[64];
  dprl_range_describe(r, want, sizeof want);
  if (!v) {
    if (required) return missing(o, key);
    *out = dflt;
    return DPRL_OK;
  }
  if (v->type != DPRL_JSON_NUMBER) return bad(o, key, "a number", v);
  if (!dprl_range_contains(r, v->num)) return bad(o, key, want, v);
  *out = v->num;
  return DPRL_OK;
}

int dprl_opt_int(const dprl_options *o, const char *key, int required,
                 int64_t dflt, dprl_range r, int64_t *out) {
  const dprl_json *v = dprl_opt_get(o, key);
  if (!v) {
    if (required) return missing(o, key);
    *out = dflt;
    return DPRL_OK;
  }
  if (v->type != DPRL_JSON_NUMBER || v->num != floor(v->num))
    return bad(o, key, "an integer", v);
  if (fabs(v->num) > 9007199254740992.0) { /* not exact in a double: name the range */
    char want[64];
    dprl_range_describe(r, want, sizeof want);
    return bad(o, key, dprl_range_contains(r, v->num) ? "an integer of at most 2^53" : want, v);
  }
  double x;
  int rc = dprl_opt_number(o, key, 1, 0, r, &x);
  if (rc) return rc;
  *out = (int64_t)x;
  return DPRL_OK;
}

int dprl_opt_bool(const dprl_options *o, const char *key, int dflt, int *out) {
  const dprl_json *v = dprl_opt_get(o, key);
  if (!v) *out = dflt;
  else if (v->type == DPRL_JSON_TRUE) *out = 1;
  else if (v->type == DPRL_JSON_FALSE) *out = 0;
  else return bad(o, key, "true or false", v);
  return DPRL_OK;
}

int dprl_opt_choice(const dprl_options *o, const char *key,
                    const char *const *choices, int dflt, int *out) {
  const dprl_json *v = dprl_opt_get(o, key);
  char want[200] = "one of";
  for (const char *const *p = choices; *p; p++) {
    size_t used = strlen(want);
    dprl_snprintf(want + used, sizeof want - used, "%s \"%s\"", p == choices ? "" : ",", *p);
  }
  if (!v) {
    *out = dflt;
    return DPRL_OK;
  }
  if (v->type == DPRL_JSON_STRING)
    for (int i = 0; choices[i]; i++)
      if (strcmp(choices[i], v->str) == 0) {
        *out = i;
        return DPRL_OK;
      }
  return bad(o, key, want, v);
}

int dprl_opt_number_array(const dprl_options *o, const char *key, size_t n,
                          dprl_range r, double **out) {
  const dprl_json *v = dprl_opt_get(o, key);
  char want[80];
  *out = NULL;
  if (!v) return DPRL_OK;
  if (v->type != DPRL_JSON_ARRAY || v->n != n) {
    char got[64];
    if (v->type == DPRL_JSON_ARRAY) dprl_snprintf(got, sizeof got, "an array of %zu", v->n);
    else dprl_json_describe(v, got, sizeof got);
    return dprl_fail(o->err, DPRL_EINVAL,
                     "%s: option %s must be an array of %zu numbers (one per state), got %s",
                     o->fn, key, n, got);
  }
  dprl_range_describe(r, want, sizeof want);
  for (size_t i = 0; i < n; i++) {
    const dprl_json *x = v->items[i];
    if (x->type != DPRL_JSON_NUMBER || !dprl_range_contains(r, x->num)) {
      char got[64];
      dprl_json_describe(x, got, sizeof got);
      return dprl_fail(o->err, DPRL_EINVAL, "%s: option %s[%zu] must be %s, got %s",
                       o->fn, key, i, x->type == DPRL_JSON_NUMBER ? want : "a number",
                       got);
    }
  }
  double *a = dprl_malloc(n * sizeof *a);
  if (!a) return dprl_nomem(o->err);
  for (size_t i = 0; i < n; i++) a[i] = v->items[i]->num;
  *out = a;
  return DPRL_OK;
}

int dprl_opt_seed(const dprl_options *o, int *has_seed, uint64_t *seed) {
  int64_t s = 0;
  const dprl_json *v = dprl_opt_get(o, "seed");
  *has_seed = v != NULL;
  *seed = 0;
  /* Below 2^53 every integer is a double: from 2^53 on, neighbouring
  ** integers read as one double, so two seeds would give one release. */
  if (v && !(v->type == DPRL_JSON_NUMBER && v->num == floor(v->num) && v->num >= 0 &&
             v->num < 9007199254740992.0))
    return bad(o, "seed", "an integer in [0, 2^53 - 1]", v);
  int rc = dprl_opt_int(o, "seed", 0, 0, DPRL_CLOSED(0, 9007199254740991.0), &s);
  *seed = (uint64_t)s;
  return rc;
}

int dprl_opt_name(const dprl_options *o, const char *key, char **out) {
  const dprl_json *v = dprl_opt_get(o, key);
  *out = NULL;
  if (!v) return DPRL_OK;
  size_t chars = 0; /* characters, not bytes */
  for (size_t i = 0; v->type == DPRL_JSON_STRING && i < v->n; i++)
    chars += ((unsigned char)v->str[i] & 0xC0) != 0x80;
  if (v->type != DPRL_JSON_STRING || v->n == 0 || strlen(v->str) != v->n || chars > 200) {
    char got[64];
    dprl_json_describe(v, got, sizeof got);
    return dprl_fail(o->err, DPRL_EINVAL,
                     "%s: option %s must be a name (1 to 200 characters, no NUL), got %s",
                     o->fn, key, got);
  }
  if (!(*out = dprl_malloc(v->n + 1))) return dprl_nomem(o->err);
  memcpy(*out, v->str, v->n + 1);
  return DPRL_OK;
}

int dprl_opt_reward_bounds(const dprl_options *o, double *rmin, double *rmax) {
  static const char *const keys[] = {"rmin", "rmax"};
  for (int i = 0; i < 2; i++)
    if (!dprl_opt_has(o, keys[i]))
      return dprl_fail(o->err, DPRL_EINVAL,
                       "%s: option %s is required: rewards are clamped to the public range "
                       "[rmin, rmax], and a release's noise is scaled to it. State the range your "
                       "rewards can take from what you know of their source (e.g. \"rmin\": -15, "
                       "\"rmax\": 15 for a score in [-15, 15]), never from the data: a range read "
                       "from the data reveals it, and a range too narrow silently clamps it",
                       o->fn, keys[i]);
  int rc = dprl_opt_number(o, "rmin", 1, 0, DPRL_ANY, rmin);
  if (!rc) rc = dprl_opt_number(o, "rmax", 1, 0, DPRL_ANY, rmax);
  if (!rc && !(*rmax > *rmin)) {
    char a[32], b[32];
    return dprl_fail(o->err, DPRL_EINVAL, "%s: option rmax must be > rmin = %s, got %s", o->fn,
                     dprl_json_num(*rmin, a, sizeof a), dprl_json_num(*rmax, b, sizeof b));
  }
  return rc;
}
