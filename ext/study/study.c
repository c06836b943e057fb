/*
** study.c: dp_plan over every mechanism, and a study's releases planned
** against a budget under its accountant (study.h, ALGORITHMS.md §12.2).
**
** A study is planned as the ledger would charge it (§12, §12.1): releases
** are taken in order; one whose unit differs from the budget's is refused;
** one that would take the budget's total past its epsilon at its delta is
** refused and charges nothing, and the later ones are planned as if it had
** not been asked.  A GROUP BY of k groups is one charge when the groups
** partition the release's unit, k charges when they cannot (per_group).
*/
#include "study/study.h"
#include "study/allocate.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/json.h"
#include "base/options.h"
#include "expert/expert_policy.h"
#include "mdp/mdp.h"
#include "ope/ope.h"
#include "policy_eval/policy_eval.h"
#include "prefix_stable/prefix_stable.h"
#include "q_learning/q_options.h"

typedef struct plan_entry {
  const char *mechanism;
  dprl_plan_fn plan;
  int keeps_mechanism; /* its options know "mechanism" (it plans several) */
} plan_entry;

static const plan_entry entries[] = {
    {"dp_lsw", dprl_pe_plan_text, 1},
    {"dp_lsl", dprl_pe_plan_text, 1},
    {"dp_lsw_from_stats", dprl_pe_plan_text, 1},
    {"dp_lsl_from_stats", dprl_pe_plan_text, 1},
    {"dp_prefix_stable", dprl_prefix_plan, 0},
    {"dp_q_learn", dprl_q_plan, 1},
    {"dp_q_noise", dprl_q_plan, 1},
    {"dp_is_value", dprl_ope_plan, 0},
    {"dp_mdp", dprl_mdp_plan, 1},
    {"dp_expert_policy", dprl_expert_plan, 0},
};
#define N_ENTRIES (sizeof entries / sizeof entries[0])

const char *const dprl_plan_mechanisms[] = {"dp_lsw", "dp_lsl", "dp_lsw_from_stats",
                                            "dp_lsl_from_stats", "dp_prefix_stable", "dp_q_learn",
                                            "dp_q_noise", "dp_is_value", "dp_mdp",
                                            "dp_expert_policy", NULL};

static const char *const study_keys[] = {"budget", "releases", "allocate", NULL};
static const char *const budget_keys[] = {"epsilon", "delta", "unit", "accountant", NULL};
static const char *const units[] = {"episode", "expert", "reward function", "unit reward change",
                                    NULL};
static const char *const accountants[] = {"zcdp", "basic", NULL};
static const char *const release_only[] = {"label", "groups", NULL};

static int mechanism_list(dprl_buf *b) {
  for (size_t i = 0; i < N_ENTRIES; i++)
    dprl_buf_printf(b, "%s\"%s\"", i ? ", " : "", entries[i].mechanism);
  return 0;
}

/* The entry for options object o (its "mechanism", dp_lsw when absent). */
static int find_entry(const char *fn, const char *where, const dprl_json *o,
                      const plan_entry **e, dprl_error *err) {
  const dprl_json *m = dprl_json_get(o, "mechanism");
  const char *name = "dp_lsw";
  if (m && m->type != DPRL_JSON_STRING)
    return dprl_fail(err, DPRL_EINVAL, "%s: %soption mechanism must be a string, got %s", fn,
                     where, dprl_json_type_name(m->type));
  if (m) name = m->str;
  for (size_t i = 0; i < N_ENTRIES; i++)
    if (strcmp(entries[i].mechanism, name) == 0 && strlen(name) == (m ? m->n : strlen(name))) {
      *e = &entries[i];
      return DPRL_OK;
    }
  dprl_buf b = {0};
  mechanism_list(&b);
  int rc = b.oom ? dprl_nomem(err)
                 : dprl_fail(err, DPRL_EINVAL, "%s: %soption mechanism must be one of %s, got "
                             "\"%.60s\"", fn, where, b.data, name);
  dprl_buf_free(&b);
  return rc;
}

/* Which of keys[0..n) are members of the JSON object text[0..len) (top
** level only), into has[]: one pass, no allocation, polled. */
static int top_level_keys(const char *text, size_t len, const char *const *keys, int n,
                          int *has, size_t *at, dprl_cancel *cancel, dprl_error *err) {
  int depth = 0;
  for (int k = 0; k < n; k++) has[k] = 0;
  for (size_t i = 0; i < len; i++) {
    if ((i & 0xfffff) == 0 && dprl_cancel_poll(cancel, 1 << 16, err)) return err->code;
    char c = text[i];
    if (c == '{' || c == '[') depth++;
    else if (c == '}' || c == ']') depth--;
    else if (c == '"') {
      size_t start = ++i;
      while (i < len && text[i] != '"') i += text[i] == '\\' ? 2 : 1;
      size_t j = i + 1;
      while (j < len && (text[j] == ' ' || text[j] == '\n' || text[j] == '\t' || text[j] == '\r')) j++;
      if (depth == 1 && j < len && text[j] == ':')
        for (int k = 0; k < n; k++)
          if (strlen(keys[k]) == i - start && memcmp(keys[k], text + start, i - start) == 0) {
            has[k] = 1;
            if (at) {
              size_t v = j + 1;
              while (v < len && (text[v] == ' ' || text[v] == '\n' || text[v] == '\t' ||
                                 text[v] == '\r'))
                v++;
              at[k] = v;
            }
          }
    }
  }
  return DPRL_OK;
}

/* Run entry e's plan on the options text[0..len): its JSON, then the keys
** every plan has, into out; its cost into cost. */
static int run_plan(const char *fn, const char *where, const plan_entry *e, const char *text,
                    size_t len, int64_t length_limit, dprl_cancel *cancel, dprl_buf *out,
                    dprl_plan_cost *cost, dprl_error *err) {
  dprl_buf plan = {0};
  int rc = DPRL_OK;
  memset(cost, 0, sizeof *cost);
  if (!rc) rc = e->plan(text, len, length_limit, cancel, &plan, cost, err);
  if (rc && where[0] && strncmp(err->msg, "dp_plan: ", 9) == 0) { /* name the release */
    char msg[sizeof err->msg];
    dprl_snprintf(msg, sizeof msg, "%s: %s%.380s", fn, where, err->msg + 9);
    memcpy(err->msg, msg, sizeof msg);
  }
  if (!rc && plan.oom) rc = dprl_nomem(err);
  if (!rc && !(plan.len >= 2 && plan.data[plan.len - 1] == '}'))
    rc = dprl_fail(err, DPRL_EINVAL, "%s: the plan of %s is not a JSON object", fn,
                   e->mechanism);
  static const char *const common[] = {"unit", "rho", "useful", "why"};
  int has[4];
  if (!rc) rc = top_level_keys(plan.data, plan.len, common, 4, has, NULL, cancel, err);
  if (!rc) { /* the keys every plan has, where the mechanism's own plan does not write them */
    dprl_buf_append(out, plan.data, plan.len - 1);
    if (!has[0]) {
      dprl_json_put_key(out, "unit");
      dprl_json_put_string(out, cost->unit);
    }
    dprl_json_put_key(out, "charged_as");
    dprl_json_put_string(out, cost->gaussian ? "rho" : "epsilon, delta");
    if (cost->gaussian && !has[1]) dprl_json_put_num(out, "rho", cost->rho);
    dprl_json_put_key(out, "per_group");
    dprl_buf_puts(out, cost->per_group ? "true" : "false");
    if (!has[2]) {
      dprl_json_put_key(out, "useful");
      dprl_buf_puts(out, cost->useful ? "true" : "false");
    }
    if (!has[3]) {
      dprl_json_put_key(out, "why");
      if (cost->useful) dprl_buf_puts(out, "null");
      else dprl_json_put_string(out, cost->why);
    }
    dprl_buf_puts(out, "}");
  }
  dprl_buf_free(&plan);
  return rc;
}

/* Plan one release from its options object: its plan's JSON into out (the
** mechanism's keys, then unit, cost and usefulness), its cost into cost. */
static int plan_one(const char *fn, const char *where, const dprl_json *o, const char *given,
                    size_t given_len, void (*release_tree)(dprl_options *),
                    dprl_options *tree_owner, int64_t length_limit, dprl_cancel *cancel,
                    dprl_buf *out, dprl_plan_cost *cost, dprl_error *err) {
  const plan_entry *e = NULL;
  dprl_buf text = {0};
  int rc = find_entry(fn, where, o, &e, err);
  if (rc) return rc;
  /* the options as the mechanism reads them: without the study's keys,
  ** and without "mechanism" where it plans one mechanism only */
  static const char *const both[] = {"mechanism", "label", "groups", NULL};
  const char *const *skip = e->keeps_mechanism ? release_only : both;
  int strip = 0;
  for (const char *const *k = skip; *k; k++) strip |= dprl_json_get(o, *k) != NULL;
  if (strip || !given) rc = dprl_json_write(&text, o, skip, cancel, err);
  else {
    /* the caller's text as it is; its parsed tree is freed before the
    ** plan runs (freeing 10^7 nodes after an interrupt would delay it) */
    if (release_tree) release_tree(tree_owner);
    dprl_buf_append(&text, given, given_len);
  }
  if (!rc && text.oom) rc = dprl_nomem(err);
  if (!rc) rc = run_plan(fn, where, e, text.data, text.len, length_limit, cancel, out, cost, err);
  dprl_buf_free(&text);
  return rc;
}


/* What the plan has charged: the budget's state with its sums kept exact
** (dprl_upsum), as the ledger adds its rows. */
typedef struct plan_sums {
  dprl_spent s;
  dprl_upsum eps, delta, rho;
} plan_sums;

static plan_sums sums_from(const dprl_spent *s) {
  plan_sums p = {*s, {s->eps_plain, 0}, {s->delta_plain, 0}, {s->rho, 0}};
  return p;
}

/* A planned release's charge added to p (k times when per group). */
static void charge(plan_sums *p, const dprl_plan_cost *c, int64_t k) {
  double n = c->per_group ? (double)k : 1.0;
  if (p->s.zcdp && c->gaussian) {
    dprl_upsum_add_times(&p->rho, n, c->rho);
    p->s.rho = dprl_upsum_total(&p->rho);
    p->s.gaussian += (int64_t)n;
  } else {
    dprl_upsum_add_times(&p->eps, n, c->epsilon);
    dprl_upsum_add_times(&p->delta, n, c->delta);
    p->s.eps_plain = dprl_upsum_total(&p->eps);
    p->s.delta_plain = dprl_upsum_total(&p->delta);
  }
  p->s.releases += (int64_t)n;
}

/* "groups": the number of groups of a GROUP BY (1 when absent). */
static int read_groups(const char *fn, const char *where, const dprl_json *o, int64_t *k,
                       dprl_error *err) {
  const dprl_json *g = dprl_json_get(o, "groups");
  *k = 1;
  if (!g) return DPRL_OK;
  if (g->type != DPRL_JSON_NUMBER || g->num != floor(g->num) || !(g->num >= 1 && g->num <= 1e9)) {
    char got[40];
    return dprl_fail(err, DPRL_EINVAL, "%s: %soption groups must be an integer in [1, 10^9] "
                     "(the groups of a GROUP BY), got %s", fn, where,
                     g->type == DPRL_JSON_NUMBER ? dprl_json_num(g->num, got, sizeof got)
                                                 : dprl_json_type_name(g->type));
  }
  *k = (int64_t)g->num;
  return DPRL_OK;
}

static void put_release_why(dprl_buf *b, const dprl_study_budget *bud, const dprl_plan_cost *c,
                            int unit_ok, int fits, const dprl_spent *after) {
  int n = 0;
  dprl_json_put_key(b, "why");
  dprl_buf_puts(b, "[");
  if (!unit_ok) {
    char t[300];
    dprl_snprintf(t, sizeof t, "its unit of privacy is one %s, and the budget protects one %s: the "
             "ledger refuses it (declare a budget of unit \"%s\" for it)", c->unit, bud->unit,
             c->unit);
    dprl_json_put_string(b, t), n++;
  } else if (!fits) {
    char t[300];
    double e = dprl_spent_epsilon(after);
    dprl_snprintf(t, sizeof t, "with it the budget's total would be epsilon %.4g at delta %.3g, "
             "more than its epsilon %.4g: the ledger refuses it and charges nothing", e,
             after->delta_b, after->eps_b);
    if (!isfinite(e))
      dprl_snprintf(t, sizeof t, "with it the releases' delta %.3g would reach the budget's delta "
               "%.3g: the ledger refuses it and charges nothing", after->delta_plain,
               after->delta_b);
    if (n) dprl_buf_puts(b, ",");
    dprl_json_put_string(b, t), n++;
  }
  if (!c->useful) {
    if (n) dprl_buf_puts(b, ",");
    dprl_json_put_string(b, c->why);
  }
  dprl_buf_puts(b, "]");
}

/* The releases (a JSON array) against bud, in order. */
static int plan_releases(const char *fn, const dprl_json *rel, int64_t length_limit,
                         const dprl_study_budget *bud, int allocated, dprl_cancel *cancel,
                         dprl_buf *out, dprl_error *err) {
  plan_sums sums = sums_from(&bud->spent);
  dprl_spent s = bud->spent;
  int64_t fit = 0, answered = 0;
  int rc = DPRL_OK;
  if (rel->type != DPRL_JSON_ARRAY || rel->n == 0)
    return dprl_fail(err, DPRL_EINVAL, "%s: releases must be a non-empty array of dp_plan "
                     "options, got %s", fn, rel->type == DPRL_JSON_ARRAY ? "an empty array"
                                                         : dprl_json_type_name(rel->type));
  dprl_buf_puts(out, "{\"budget\":{");
  if (bud->name) {
    dprl_buf_puts(out, "\"name\":");
    dprl_json_put_string(out, bud->name);
    dprl_buf_puts(out, ",");
  }
  dprl_buf_puts(out, "\"unit\":");
  dprl_json_put_string(out, bud->unit);
  dprl_json_put_key(out, "accountant");
  dprl_json_put_string(out, s.zcdp ? "zcdp" : "basic");
  dprl_json_put_num(out, "epsilon", s.eps_b);
  dprl_json_put_num(out, "delta", s.delta_b);
  dprl_json_put_num(out, "epsilon_spent_before", dprl_spent_epsilon(&s));
  dprl_buf_puts(out, allocated ? "},\"allocated\":true,\"releases\":[" : "},\"releases\":[");
  for (size_t i = 0; !rc && i < rel->n; i++) {
    const dprl_json *o = rel->items[i];
    const dprl_json *label = o->type == DPRL_JSON_OBJECT ? dprl_json_get(o, "label") : NULL;
    char where[120];
    int64_t k = 1;
    dprl_plan_cost c;
    if ((rc = dprl_cancel_poll(cancel, 100, err))) break;
    dprl_snprintf(where, sizeof where, "releases[%zu]%s%.60s%s: ", i, label ? " (" : "",
             label && label->type == DPRL_JSON_STRING ? label->str : "", label ? ")" : "");
    if (o->type != DPRL_JSON_OBJECT) {
      rc = dprl_fail(err, DPRL_EINVAL, "%s: releases[%zu] must be an object of dp_plan "
                     "options, got %s", fn, i, dprl_json_type_name(o->type));
      break;
    }
    if (dprl_json_get(o, "share")) {
      rc = dprl_fail(err, DPRL_EINVAL, "%s: %soption share is for a study with \"allocate\": "
                     "true", fn, where);
      break;
    }
    if (label && label->type != DPRL_JSON_STRING) {
      rc = dprl_fail(err, DPRL_EINVAL, "%s: %soption label must be a string, got %s", fn,
                     where, dprl_json_type_name(label->type));
      break;
    }
    if ((rc = read_groups(fn, where, o, &k, err))) break;
    if (i) dprl_buf_puts(out, ",");
    dprl_buf_printf(out, "{\"index\":%zu", i);
    if (label) {
      dprl_json_put_key(out, "label");
      dprl_json_put_string(out, label->str);
    }
    dprl_json_put_int(out, "groups", k);
    dprl_json_put_key(out, "plan");
    if ((rc = plan_one(fn, where, o, NULL, 0, NULL, NULL, length_limit, cancel, out, &c, err))) break;
    int unit_ok = strcmp(c.unit, bud->unit) == 0;
    plan_sums after = sums;
    charge(&after, &c, k);
    int fits = unit_ok && dprl_spent_fits(&after.s);
    if (fits) sums = after, s = after.s, fit++;
    answered += fits && c.useful;
    dprl_json_put_key(out, "mechanism");
    dprl_json_put_string(out, c.mechanism);
    dprl_json_put_num(out, "epsilon", c.epsilon);
    dprl_json_put_num(out, "delta", c.delta);
    dprl_json_put_int(out, "charges", c.per_group ? k : 1);
    dprl_json_put_key(out, "fits");
    dprl_buf_puts(out, fits ? "true" : "false");
    dprl_json_put_key(out, "useful");
    dprl_buf_puts(out, c.useful ? "true" : "false");
    dprl_json_put_num(out, "epsilon_total", dprl_spent_epsilon(&s));
    put_release_why(out, bud, &c, unit_ok, fits, &after.s);
    dprl_buf_puts(out, "}");
  }
  if (rc) return rc;
  double total = dprl_spent_epsilon(&s);
  dprl_buf_puts(out, "]");
  dprl_json_put_int(out, "planned", (int64_t)rel->n);
  dprl_json_put_int(out, "fit", fit);
  dprl_json_put_int(out, "answered", answered);
  dprl_json_put_num(out, "epsilon_total", total);
  dprl_json_put_key(out, "summary");
  char t[300];
  dprl_snprintf(t, sizeof t, "%lld of the %zu planned releases fit the budget (epsilon %.4g of %.4g "
           "at delta %.3g) and %lld of them can answer usefully at the planned sizes; see "
           "\"why\" of the others", (long long)fit, rel->n, total, s.eps_b, s.delta_b,
           (long long)answered);
  if (fit == (int64_t)rel->n && answered == fit)
    dprl_snprintf(t, sizeof t, "all %zu planned releases fit the budget (epsilon %.4g of %.4g at "
             "delta %.3g) and can answer usefully at the planned sizes", rel->n, total,
             s.eps_b, s.delta_b);
  dprl_json_put_string(out, t);
  dprl_buf_puts(out, "}");
  return out->oom ? dprl_nomem(err) : DPRL_OK;
}

typedef struct alloc_ctx {
  const char *fn;
  int64_t length_limit;
  dprl_cancel *cancel;
} alloc_ctx;

static int plan_for_allocation(void *ctx, size_t i, const dprl_json *opts, dprl_plan_cost *cost,
                               dprl_error *err) {
  alloc_ctx *a = ctx;
  dprl_buf scratch = {0};
  char where[40];
  dprl_snprintf(where, sizeof where, "releases[%zu]: ", i);
  int rc = plan_one(a->fn, where, opts, NULL, 0, NULL, NULL, a->length_limit, a->cancel, &scratch,
                    cost, err);
  dprl_buf_free(&scratch);
  return rc;
}

/* The releases against bud; with "allocate": true their epsilon and delta
** are chosen first (allocate.h). */
static int plan_study(const char *fn, const dprl_json *rel, const dprl_json *allocate,
                      int64_t length_limit, const dprl_study_budget *bud, dprl_cancel *cancel,
                      dprl_buf *out, dprl_error *err) {
  if (allocate && allocate->type != DPRL_JSON_TRUE && allocate->type != DPRL_JSON_FALSE)
    return dprl_fail(err, DPRL_EINVAL, "%s: option allocate must be true or false, got %s", fn,
                     dprl_json_type_name(allocate->type));
  if (!allocate || allocate->type == DPRL_JSON_FALSE || !rel)
    return plan_releases(fn, rel, length_limit, bud, 0, cancel, out, err);
  alloc_ctx a = {fn, length_limit, cancel};
  dprl_json **trees = NULL;
  int rc = dprl_study_allocate(fn, rel, &bud->spent, bud->unit, plan_for_allocation, &a, cancel,
                               &trees, err);
  if (rc) return rc;
  dprl_json arr;
  memset(&arr, 0, sizeof arr);
  arr.type = DPRL_JSON_ARRAY;
  arr.n = rel->n;
  arr.items = trees;
  rc = plan_releases(fn, &arr, length_limit, bud, 1, cancel, out, err);
  for (size_t i = 0; i < rel->n; i++) dprl_json_free(trees[i]);
  dprl_free(trees);
  return rc;
}

/* The options' "budget" object. */
static int read_budget(const dprl_json *b, dprl_study_budget *bud, dprl_cancel *cancel,
                       dprl_error *err) {
  const char *fn = "dp_plan";
  dprl_buf text = {0};
  dprl_options o;
  int u = 0, a = 0;
  memset(bud, 0, sizeof *bud);
  if (!b || b->type != DPRL_JSON_OBJECT)
    return dprl_fail(err, DPRL_EINVAL, "%s: option budget is required with releases: an "
                     "object {\"epsilon\": …, \"delta\": …, \"unit\": …, \"accountant\": …}, "
                     "got %s", fn, b ? dprl_json_type_name(b->type) : "none");
  int rc = dprl_json_write(&text, b, NULL, cancel, err);
  if (rc || text.oom) {
    dprl_buf_free(&text);
    return rc ? rc : dprl_nomem(err);
  }
  rc = dprl_options_open_polled(&o, "dp_plan: budget", text.data, text.len, budget_keys,
                                    cancel, err);
  dprl_buf_free(&text);
  if (rc) {
    dprl_options_close(&o);
    return rc;
  }
  rc = dprl_opt_number(&o, "epsilon", 1, 0, DPRL_POSITIVE, &bud->spent.eps_b);
  if (!rc) rc = dprl_opt_number(&o, "delta", 1, 0, DPRL_CLOSED_OPEN(0, 1), &bud->spent.delta_b);
  if (!rc && !dprl_opt_has(&o, "unit"))
    rc = dprl_fail(err, DPRL_EINVAL, "%s: budget: option unit is required: the unit of "
                   "privacy the budget protects, one of \"episode\", \"expert\", \"reward "
                   "function\"", fn);
  if (!rc) rc = dprl_opt_choice(&o, "unit", units, 0, &u);
  if (!rc) rc = dprl_opt_choice(&o, "accountant", accountants, 0, &a);
  dprl_options_close(&o);
  bud->unit = units[u];
  bud->spent.zcdp = a == 0;
  return rc;
}

int dprl_plan(const char *text, size_t len, int64_t length_limit, dprl_cancel *cancel,
              dprl_buf *out, dprl_error *err) {
  const char *fn = "dp_plan";
  dprl_options o;
  dprl_plan_cost cost;
  if (text) { /* one release whose options go to its plan as they are: no
              ** tree of the caller's options (10^7 numbers) is built here */
    static const char *const keys[] = {"releases", "budget", "label", "groups", "mechanism"};
    int has[5];
    size_t at[5];
    int rc = top_level_keys(text, len, keys, 5, has, at, cancel, err);
    if (rc) return rc;
    if (!has[0] && !has[1] && !has[2] && !has[3]) {
      const plan_entry *e = &entries[0];
      if (has[4]) { /* the mechanism's name: a short string value */
        size_t v = at[4], end = v + 1;
        while (end < len && text[end] != '"') end += text[end] == '\\' ? 2 : 1;
        dprl_json *name = v < len && text[v] == '"' && end < len
                              ? dprl_json_parse(text + v, end + 1 - v, err) : NULL;
        e = NULL;
        if (name) {
          char *key = "mechanism";
          dprl_json obj;
          memset(&obj, 0, sizeof obj);
          obj.type = DPRL_JSON_OBJECT;
          obj.n = 1;
          obj.items = &name;
          obj.keys = &key;
          rc = find_entry(fn, "", &obj, &e, err);
          dprl_json_free(name);
          if (rc) return rc;
        }
      }
      if (e && e->keeps_mechanism)
        return run_plan(fn, "", e, text, len, length_limit, cancel, out, &cost, err);
    }
  }
  /* the options parser gives the common errors (not JSON, not an object) */
  int rc = dprl_options_open_polled(&o, fn, text, len, NULL, cancel, err);
  if (rc) {
    dprl_options_close(&o);
    return rc;
  }
  const dprl_json *root = o.root;
  if (!dprl_json_get(root, "releases")) {
    if (dprl_json_get(root, "budget"))
      rc = dprl_fail(err, DPRL_EINVAL, "%s: option budget plans a study: give the planned "
                     "releases too ({\"budget\": {…}, \"releases\": [{…}, …]}); a plan spends "
                     "nothing", fn);
    else rc = plan_one(fn, "", root, text, len, dprl_options_close, &o, length_limit, cancel, out,
                       &cost, err);
  } else {
    dprl_study_budget bud;
    for (size_t i = 0; !rc && i < root->n; i++) {
      int known = 0;
      for (const char *const *k = study_keys; *k; k++) known |= strcmp(*k, root->keys[i]) == 0;
      if (!known)
        rc = dprl_fail(err, DPRL_EINVAL, "%s: unknown option \"%.60s\" (known: budget, "
                       "releases, allocate): in a study each release holds its own options", fn,
                       root->keys[i]);
    }
    if (!rc) rc = read_budget(dprl_json_get(root, "budget"), &bud, cancel, err);
    if (!rc) rc = plan_study(fn, dprl_json_get(root, "releases"), dprl_json_get(root, "allocate"),
                             length_limit, &bud, cancel, out, err);
  }
  dprl_options_close(&o);
  return rc;
}

int dprl_study_plan(const char *fn, const char *releases, size_t len, int64_t length_limit,
                    const dprl_study_budget *budget, dprl_cancel *cancel, dprl_buf *out,
                    dprl_error *err) {
  dprl_json *rel = dprl_json_parse_polled(releases, len, cancel, err);
  if (!rel) {
    if (err->code == DPRL_EINVAL) {
      char msg[sizeof err->msg];
      dprl_snprintf(msg, sizeof msg, "%s: releases: %.400s", fn, err->msg);
      memcpy(err->msg, msg, sizeof msg);
    }
    return err->code;
  }
  int rc = plan_releases(fn, rel, length_limit, budget, 0, cancel, out, err);
  dprl_json_free(rel);
  return rc;
}
