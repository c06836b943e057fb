/*
** made_with.c: the parameters first-visit statistics carry (made_with.h).
*/
#include <stdio.h>
#include <string.h>

#include "base/json.h"
#include "rows/made_with.h"

static const char *const keys[] = {"gamma", "rmin", "rmax", "fmin", "fmax", "n_states",
                                   "max_states", "dialect", "version", NULL};

void dprl_made_with_write(dprl_buf *b, const dprl_return_rule *rule, int64_t n_states,
                          const char *dialect, const char *version) {
  dprl_buf_puts(b, "{\"gamma\":");
  dprl_json_put_double(b, rule->gamma);
  dprl_json_put_num(b, "rmin", rule->rmin);
  dprl_json_put_num(b, "rmax", rule->rmax);
  dprl_json_put_num(b, "fmin", rule->fmin);
  dprl_json_put_num(b, "fmax", rule->fmax);
  dprl_json_put_int(b, "n_states", n_states);
  dprl_json_put_key(b, "max_states");
  if (rule->max_states > 0) dprl_buf_printf(b, "%lld", (long long)rule->max_states);
  else dprl_buf_puts(b, "null");
  dprl_json_put_key(b, "dialect");
  dprl_json_put_string(b, dialect);
  dprl_json_put_key(b, "version");
  dprl_json_put_string(b, version);
  dprl_buf_puts(b, "}");
}

/* s for a message: at most n - 4 bytes of printable ASCII, anything else
** as '?', "..." when cut (a key or dialect is the caller's text). */
static const char *printable(const char *s, char *out, size_t n) {
  size_t i = 0;
  for (; s[i] && i + 4 < n; i++)
    out[i] = s[i] >= 0x20 && s[i] < 0x7f && s[i] != '"' && s[i] != '\\' ? s[i] : '?';
  if (s[i]) memcpy(out + i, "...", 3), i += 3;
  out[i] = 0;
  return out;
}

/* "the statistics of buckets 4..7" or "the statistics" */
static const char *whose(const char *shard, char *buf, size_t n) {
  if (!shard) return "the statistics";
  dprl_snprintf(buf, n, "the statistics of %s", shard);
  return buf;
}

int dprl_made_with_check(const char *text, size_t len, const dprl_return_rule *rule,
                         int64_t n_states, const char *fn, const char *shard, int64_t *bound,
                         dprl_error *err) {
  char who[96], a[32], b[32], name[48], by[28];
  const char *w = whose(shard, who, sizeof who);
  dprl_error perr = {0};
  *bound = 0;
  dprl_json *v = dprl_json_parse(text, len, &perr);
  if (!v)
    return perr.code == DPRL_ENOMEM
               ? dprl_nomem(err)
               : dprl_fail(err, DPRL_EINVAL, "%s: made_with of %s must be its JSON object: %s",
                           fn, w, perr.msg);
  int rc = DPRL_OK;
  if (v->type != DPRL_JSON_OBJECT)
    rc = dprl_fail(err, DPRL_EINVAL, "%s: made_with of %s must be a JSON object, got a %s", fn,
                   w, dprl_json_type_name(v->type));
  for (size_t i = 0; !rc && i < v->n; i++) {
    size_t k = 0;
    while (keys[k] && strcmp(keys[k], v->keys[i])) k++;
    if (!keys[k])
      rc = dprl_fail(err, DPRL_EINVAL, "%s: made_with of %s has the key \"%s\", which this "
                     "dprl does not know (known: gamma, rmin, rmax, fmin, fmax, n_states, "
                     "max_states, dialect, version)", fn, w,
                     printable(v->keys[i], name, sizeof name));
  }
  const double want[] = {rule->gamma, rule->rmin, rule->rmax, rule->fmin, rule->fmax};
  const int defaulted[] = {0, 0, 0, !rule->has_fmin, !rule->has_fmax};
  const dprl_json *d = rc ? NULL : dprl_json_get(v, "dialect");
  printable(d && d->type == DPRL_JSON_STRING ? d->str : "?", by, sizeof by);
  for (int k = 0; !rc && keys[k]; k++) {
    const dprl_json *x = dprl_json_get(v, keys[k]);
    int text_key = k >= 7, bound_key = k == 6;
    if (!x || (text_key && x->type != DPRL_JSON_STRING) ||
        (!text_key && !(x->type == DPRL_JSON_NUMBER || (bound_key && x->type == DPRL_JSON_NULL)))) {
      rc = dprl_fail(err, DPRL_EINVAL, "%s: made_with of %s needs \"%s\" as a %s, got %s", fn,
                     w, keys[k], text_key ? "string" : bound_key ? "number or null" : "number",
                     x ? dprl_json_type_name(x->type) : "none");
    } else if (k < 5) {
      if (x->num != want[k])
        rc = dprl_fail(err, DPRL_EINVAL, "%s: %s (made_with, dialect %s) were made with %s = "
                       "%s, but option %s = %s%s: statistics made with other parameters "
                       "cannot be merged", fn, w, by, keys[k],
                       dprl_json_num(x->num, a, sizeof a), keys[k],
                       dprl_json_num(want[k], b, sizeof b), defaulted[k] ? " (the default)" : "");
    } else if (k == 5) {
      if (x->num != (double)n_states)
        rc = dprl_fail(err, DPRL_EINVAL, "%s: %s (made_with, dialect %s) were made with "
                       "n_states = %s, but option n_states = %lld", fn, w, by,
                       dprl_json_num(x->num, a, sizeof a), (long long)n_states);
    } else if (bound_key && x->type == DPRL_JSON_NUMBER) {
      if (!(x->num >= 1 && x->num <= 2147483647.0 && x->num == (double)(int64_t)x->num))
        rc = dprl_fail(err, DPRL_EINVAL, "%s: made_with of %s has max_states = %s: it must be "
                       "null (no bound) or an integer >= 1", fn, w,
                       dprl_json_num(x->num, a, sizeof a));
      else
        *bound = (int64_t)x->num;
    }
  }
  if (!rc && *bound != rule->max_states) {
    if (*bound) dprl_snprintf(a, sizeof a, "%lld", (long long)*bound);
    if (rule->max_states) dprl_snprintf(b, sizeof b, "%lld", (long long)rule->max_states);
    rc = dprl_fail(err, DPRL_EINVAL, "%s: %s (made_with, dialect %s) were made with max_states = "
                   "%s, but option max_states = %s: release them with the contribution bound "
                   "they were made with", fn, w, by, *bound ? a : "null (no bound)",
                   rule->max_states ? b : "none");
  }
  dprl_json_free(v);
  return rc;
}
