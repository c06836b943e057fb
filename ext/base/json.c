/* json.c: strict JSON reader and writer helpers (see json.h). */
#include "base/json.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define JSON_MAX_DEPTH 64

typedef struct parser {
  const char *s;
  size_t len, pos;
  int depth;
  dprl_error *err;
  dprl_cancel *cancel;
  int compact;         /* arrays of numbers as nums[] (dprl_json_parse_compact) */
  double *scratch;     /* the numbers of the array being read, in compact mode */
  size_t scratch_cap;
} parser;

static dprl_json *parse_value(parser *p);

static void skip_ws(parser *p) {
  while (p->pos < p->len) {
    char c = p->s[p->pos];
    if (c != ' ' && c != '\t' && c != '\n' && c != '\r') break;
    p->pos++;
  }
}

static dprl_json *syntax(parser *p, const char *what) {
  if (p->pos >= p->len)
    dprl_fail(p->err, DPRL_EINVAL, "malformed JSON: %s, got end of text", what);
  else {
    char got[16];
    dprl_fail(p->err, DPRL_EINVAL, "malformed JSON at offset %zu: %s, got %s", p->pos, what,
              dprl_char_shown((const unsigned char *)p->s + p->pos, p->len - p->pos, got));
  }
  return NULL;
}

static dprl_json *new_node(parser *p, dprl_json_type t) {
  dprl_json *v = dprl_calloc(1, sizeof *v);
  if (!v) {
    dprl_nomem(p->err);
    return NULL;
  }
  v->type = t;
  return v;
}

static int literal(parser *p, const char *word) {
  size_t n = strlen(word);
  if (p->len - p->pos < n || memcmp(p->s + p->pos, word, n) != 0) return 0;
  p->pos += n;
  return 1;
}

/* Read the number at p->pos into *out and move past it.  0 with err set
** when malformed. */
static int read_number(parser *p, double *out, int *integer) {
  const char *expected;
  size_t at, start = p->pos;
  size_t n = dprl_json_scan_number(p->s + start, p->len - start, out, integer, &expected, &at);
  if (!n) {
    p->pos = start + at;
    syntax(p, expected);
    return 0;
  }
  p->pos = start + n;
  if (n >= 64) {
    dprl_fail(p->err, DPRL_EINVAL, "malformed JSON at offset %zu: number too long", start);
    return 0;
  }
  return 1;
}

static dprl_json *parse_number(parser *p) {
  double x;
  int integer;
  if (!read_number(p, &x, &integer)) return NULL;
  dprl_json *v = new_node(p, DPRL_JSON_NUMBER);
  if (!v) return NULL;
  v->num = x;
  v->is_integer = integer;
  return v;
}

static int hex4(parser *p, unsigned *out) {
  if (p->len - p->pos < 4) return 0;
  unsigned u = 0;
  for (int i = 0; i < 4; i++) {
    char c = p->s[p->pos + i];
    u <<= 4;
    if (c >= '0' && c <= '9') u |= (unsigned)(c - '0');
    else if (c >= 'a' && c <= 'f') u |= (unsigned)(c - 'a' + 10);
    else if (c >= 'A' && c <= 'F') u |= (unsigned)(c - 'A' + 10);
    else return 0;
  }
  p->pos += 4;
  *out = u;
  return 1;
}

static void put_utf8(dprl_buf *b, unsigned cp) {
  char o[4];
  size_t n;
  if (cp < 0x80) { o[0] = (char)cp; n = 1; }
  else if (cp < 0x800) { o[0] = (char)(0xC0 | (cp >> 6)); o[1] = (char)(0x80 | (cp & 0x3F)); n = 2; }
  else if (cp < 0x10000) { o[0] = (char)(0xE0 | (cp >> 12)); o[1] = (char)(0x80 | ((cp >> 6) & 0x3F)); o[2] = (char)(0x80 | (cp & 0x3F)); n = 3; }
  else { o[0] = (char)(0xF0 | (cp >> 18)); o[1] = (char)(0x80 | ((cp >> 12) & 0x3F)); o[2] = (char)(0x80 | ((cp >> 6) & 0x3F)); o[3] = (char)(0x80 | (cp & 0x3F)); n = 4; }
  dprl_buf_append(b, o, n);
}

/* Decode a string starting at the opening quote into a new buffer. */
static char *parse_string_raw(parser *p, size_t *out_len) {
  dprl_buf b = {0};
  p->pos++; /* opening quote */
  for (;;) {
    if (p->pos >= p->len) { syntax(p, "unterminated string"); goto fail; }
    unsigned char c = (unsigned char)p->s[p->pos++];
    if (c == '"') break;
    if (c < 0x20) { p->pos--; syntax(p, "control character in string"); goto fail; }
    if (c != '\\') { dprl_buf_append(&b, (const char *)&c, 1); continue; }
    if (p->pos >= p->len) { syntax(p, "unterminated escape"); goto fail; }
    char e = p->s[p->pos++];
    const char *simple = strchr("\"\\/bfnrt", e);
    if (e && simple) {
      static const char map[] = "\"\\/\b\f\n\r\t";
      dprl_buf_append(&b, &map[simple - "\"\\/bfnrt"], 1);
    } else if (e == 'u') {
      unsigned cp, lo;
      if (!hex4(p, &cp)) { syntax(p, "bad \\u escape"); goto fail; }
      if (cp >= 0xD800 && cp < 0xDC00) {
        if (!literal(p, "\\u") || !hex4(p, &lo) || lo < 0xDC00 || lo > 0xDFFF) {
          syntax(p, "unpaired surrogate in \\u escape");
          goto fail;
        }
        cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
      } else if (cp >= 0xDC00 && cp < 0xE000) {
        syntax(p, "unpaired surrogate in \\u escape");
        goto fail;
      }
      put_utf8(&b, cp);
    } else {
      p->pos--;
      syntax(p, "unknown escape");
      goto fail;
    }
  }
  dprl_buf_append(&b, "", 0); /* allocates even for "" */
  if (b.oom) {
    dprl_nomem(p->err);
    goto fail;
  }
  *out_len = b.len;
  return b.data;
fail:
  dprl_buf_free(&b);
  return NULL;
}

static int push_item(parser *p, dprl_json *v, dprl_json *item, char *key,
                     size_t *cap) {
  if (v->n == *cap) {
    size_t nc = *cap ? *cap * 2 : 4;
    dprl_json **ni = dprl_realloc(v->items, nc * sizeof *ni);
    if (!ni) return dprl_nomem(p->err), 0;
    v->items = ni;
    if (v->type == DPRL_JSON_OBJECT) {
      char **nk = dprl_realloc(v->keys, nc * sizeof *nk);
      if (!nk) return dprl_nomem(p->err), 0;
      v->keys = nk;
    }
    *cap = nc;
  }
  v->items[v->n] = item;
  if (v->type == DPRL_JSON_OBJECT) v->keys[v->n] = key;
  v->n++;
  return 1;
}

/* Duplicate keys are an error (an option given twice is ambiguous).  One
** pass with an open-addressing hash set of the keys: linear in the number
** of keys (a pairwise check is quadratic, seconds for 10^5 keys). */
static int keys_distinct(parser *p, const dprl_json *v) {
  if (v->n < 2) return 1;
  size_t cap = 4;
  while (cap < 2 * v->n) cap *= 2;
  const char **slot = dprl_calloc(cap, sizeof *slot);
  if (!slot) return dprl_nomem(p->err), 0;
  int ok = 1;
  for (size_t i = 0; i < v->n && ok; i++) {
    const char *k = v->keys[i];
    uint64_t h = 1469598103934665603u; /* FNV-1a */
    for (const unsigned char *c = (const unsigned char *)k; *c; c++)
      h = (h ^ *c) * 1099511628211u;
    for (size_t j = (size_t)h & (cap - 1);; j = (j + 1) & (cap - 1)) {
      if (!slot[j]) {
        slot[j] = k;
        break;
      }
      if (strcmp(slot[j], k) == 0) {
        dprl_fail(p->err, DPRL_EINVAL, "malformed options: key \"%.60s\" given twice", k);
        ok = 0;
        break;
      }
    }
  }
  dprl_free(slot);
  return ok;
}

/* Compact mode: an array whose items are all numbers is read straight into
** v->nums (one allocation, no node per number).  1: done; -1: an item is
** not a number (the caller reads the array again as nodes); 0: error. */
static int is_ws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

static int number_array(parser *p, dprl_json *v) {
  size_t n = 0;
  const char *s = p->s, *end = s + p->len, *c = s + p->pos;
  for (;;) { /* the cursor is local: 10^7 numbers pass through here */
    while (c < end && is_ws(*c)) c++;
    if (c >= end || !(*c == '-' || (*c >= '0' && *c <= '9'))) {
      p->pos = (size_t)(c - s);
      return -1;
    }
    if (dprl_cancel_poll(p->cancel, 30, p->err)) return 0;
    double x;
    int integer;
    const char *expected;
    size_t at, len = dprl_json_scan_number(c, (size_t)(end - c), &x, &integer, &expected, &at);
    if (!len || len >= 64) {
      p->pos = (size_t)(c - s);
      return read_number(p, &x, &integer); /* 0: the same error as elsewhere */
    }
    c += len;
    if (n == p->scratch_cap) {
      size_t nc = p->scratch_cap ? 2 * p->scratch_cap : 64;
      double *ns = dprl_realloc(p->scratch, nc * sizeof *ns);
      if (!ns) return dprl_nomem(p->err), 0;
      p->scratch = ns;
      p->scratch_cap = nc;
    }
    p->scratch[n++] = x;
    while (c < end && is_ws(*c)) c++;
    if (c < end && *c == ',') {
      c++;
      continue;
    }
    p->pos = (size_t)(c - s);
    if (c < end && *c == ']') {
      p->pos++;
      break;
    }
    syntax(p, "expected ',' or ']'");
    return 0;
  }
  if (!(v->nums = dprl_malloc_array(n, sizeof *v->nums))) return dprl_nomem(p->err), 0;
  memcpy(v->nums, p->scratch, n * sizeof *v->nums);
  v->n = n;
  return 1;
}

static dprl_json *parse_container(parser *p, int is_object) {
  dprl_json *v = new_node(p, is_object ? DPRL_JSON_OBJECT : DPRL_JSON_ARRAY);
  size_t cap = 0;
  char close = is_object ? '}' : ']';
  if (!v) return NULL;
  if (++p->depth > JSON_MAX_DEPTH) {
    dprl_fail(p->err, DPRL_EINVAL, "malformed JSON: nested deeper than %d",
              JSON_MAX_DEPTH);
    goto fail;
  }
  p->pos++;
  skip_ws(p);
  if (p->pos < p->len && p->s[p->pos] == close) {
    p->pos++;
    p->depth--;
    return v;
  }
  if (!is_object && p->compact) {
    size_t first = p->pos;
    int r = number_array(p, v);
    if (r == 0) goto fail;
    if (r == 1) {
      p->depth--;
      return v;
    }
    p->pos = first; /* not all numbers: read it again as nodes */
  }
  for (;;) {
    char *key = NULL;
    size_t klen;
    skip_ws(p);
    if (is_object) {
      if (p->pos >= p->len || p->s[p->pos] != '"') { syntax(p, "expected a key string"); goto fail; }
      if (!(key = parse_string_raw(p, &klen))) goto fail;
      if (memchr(key, 0, klen)) { /* keys are compared as C strings */
        dprl_free(key);
        dprl_fail(p->err, DPRL_EINVAL, "malformed JSON: an object key contains \\u0000");
        goto fail;
      }
      skip_ws(p);
      if (p->pos >= p->len || p->s[p->pos] != ':') { dprl_free(key); syntax(p, "expected ':'"); goto fail; }
      p->pos++;
    }
    /* 10^7 numbers take seconds: ask whether to stop */
    if (dprl_cancel_poll(p->cancel, 100, p->err)) {
      dprl_free(key);
      goto fail;
    }
    dprl_json *item = parse_value(p);
    if (!item || !push_item(p, v, item, key, &cap)) {
      dprl_free(key);
      dprl_json_free(item);
      goto fail;
    }
    skip_ws(p);
    if (p->pos < p->len && p->s[p->pos] == ',') { p->pos++; continue; }
    if (p->pos < p->len && p->s[p->pos] == close) { p->pos++; break; }
    syntax(p, is_object ? "expected ',' or '}'" : "expected ',' or ']'");
    goto fail;
  }
  if (is_object && !keys_distinct(p, v)) goto fail;
  p->depth--;
  return v;
fail:
  dprl_json_free(v);
  return NULL;
}

static dprl_json *parse_value(parser *p) {
  skip_ws(p);
  if (p->pos >= p->len) return syntax(p, "expected a value");
  char c = p->s[p->pos];
  if (c == '{') return parse_container(p, 1);
  if (c == '[') return parse_container(p, 0);
  if (c == '"') {
    dprl_json *v = new_node(p, DPRL_JSON_STRING);
    if (v && !(v->str = parse_string_raw(p, &v->n))) {
      dprl_free(v);
      return NULL;
    }
    return v;
  }
  if (c == '-' || (c >= '0' && c <= '9')) return parse_number(p);
  if (literal(p, "true")) return new_node(p, DPRL_JSON_TRUE);
  if (literal(p, "false")) return new_node(p, DPRL_JSON_FALSE);
  if (literal(p, "null")) return new_node(p, DPRL_JSON_NULL);
  return syntax(p, "expected a value");
}

dprl_json *dprl_json_parse(const char *text, size_t len, dprl_error *err) {
  return dprl_json_parse_polled(text, len, NULL, err);
}

static dprl_json *parse_text(const char *text, size_t len, dprl_cancel *cancel, int compact,
                             dprl_error *err) {
  parser p = {text, len, 0, 0, err, cancel, compact, NULL, 0};
  dprl_json *v = parse_value(&p);
  dprl_free(p.scratch);
  if (!v) return NULL;
  skip_ws(&p);
  if (p.pos != p.len) {
    dprl_json_free(v);
    return syntax(&p, "unexpected text after the value");
  }
  return v;
}

dprl_json *dprl_json_parse_polled(const char *text, size_t len, dprl_cancel *cancel,
                                  dprl_error *err) {
  return parse_text(text, len, cancel, 0, err);
}

dprl_json *dprl_json_parse_compact(const char *text, size_t len, dprl_cancel *cancel,
                                   dprl_error *err) {
  return parse_text(text, len, cancel, 1, err);
}

void dprl_json_free(dprl_json *v) {
  if (!v) return;
  for (size_t i = 0; i < v->n && v->items; i++) {
    dprl_json_free(v->items[i]);
    if (v->keys) dprl_free(v->keys[i]);
  }
  dprl_free(v->items);
  dprl_free(v->nums);
  dprl_free(v->keys);
  dprl_free(v->str);
  dprl_free(v);
}

const dprl_json *dprl_json_get(const dprl_json *obj, const char *key) {
  if (!obj || obj->type != DPRL_JSON_OBJECT) return NULL;
  for (size_t i = 0; i < obj->n; i++)
    if (strcmp(obj->keys[i], key) == 0) return obj->items[i];
  return NULL;
}

const char *dprl_json_type_name(dprl_json_type t) {
  static const char *names[] = {"null", "false", "true", "a number",
                                "a string", "an array", "an object"};
  return names[t];
}

static void put_string_n(dprl_buf *b, const char *s, size_t n) {
  dprl_buf_append(b, "\"", 1);
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c == '"' || c == '\\') {
      char e[2] = {'\\', (char)c};
      dprl_buf_append(b, e, 2);
    } else if (c < 0x20) {
      dprl_buf_printf(b, "\\u%04x", c);
    } else {
      dprl_buf_append(b, (const char *)&c, 1);
    }
  }
  dprl_buf_append(b, "\"", 1);
}

void dprl_json_put_string(dprl_buf *b, const char *s) { put_string_n(b, s, strlen(s)); }

int dprl_json_write(dprl_buf *b, const dprl_json *v, const char *const *skip,
                    dprl_cancel *cancel, dprl_error *err) {
  int rc = DPRL_OK;
  switch (v->type) {
  case DPRL_JSON_NULL: dprl_buf_puts(b, "null"); break;
  case DPRL_JSON_FALSE: dprl_buf_puts(b, "false"); break;
  case DPRL_JSON_TRUE: dprl_buf_puts(b, "true"); break;
  case DPRL_JSON_NUMBER: dprl_json_put_double(b, v->num); break;
  case DPRL_JSON_STRING: put_string_n(b, v->str, v->n); break;
  case DPRL_JSON_ARRAY:
    dprl_buf_puts(b, "[");
    for (size_t i = 0; !rc && i < v->n; i++) {
      if (i) dprl_buf_puts(b, ",");
      rc = dprl_cancel_poll(cancel, 1, err);
      if (!rc) rc = dprl_json_write(b, v->items[i], NULL, cancel, err);
    }
    dprl_buf_puts(b, "]");
    break;
  case DPRL_JSON_OBJECT: {
    int first = 1;
    dprl_buf_puts(b, "{");
    for (size_t i = 0; !rc && i < v->n; i++) {
      int drop = 0;
      for (const char *const *k = skip; k && *k && !drop; k++) drop = strcmp(*k, v->keys[i]) == 0;
      if (drop) continue;
      if (!first) dprl_buf_puts(b, ",");
      first = 0;
      dprl_json_put_string(b, v->keys[i]);
      dprl_buf_puts(b, ":");
      rc = dprl_json_write(b, v->items[i], NULL, cancel, err);
    }
    dprl_buf_puts(b, "}");
    break;
  }
  }
  return rc;
}

void dprl_json_put_double(dprl_buf *b, double x) {
  if (!isfinite(x)) {
    dprl_buf_puts(b, "null");
    return;
  }
  char tmp[40];
  dprl_buf_puts(b, dprl_json_num(x, tmp, sizeof tmp));
}

void dprl_json_put_double_array(dprl_buf *b, const double *x, size_t n) {
  dprl_json_put_double_array_polled(b, x, n, NULL, NULL);
}

int dprl_json_put_double_array_polled(dprl_buf *b, const double *x, size_t n,
                                      dprl_cancel *cancel, dprl_error *err) {
  int rc = DPRL_OK;
  dprl_buf_append(b, "[", 1);
  for (size_t i = 0; i < n && !rc; i++) {
    if (i) dprl_buf_append(b, ",", 1);
    dprl_json_put_double(b, x[i]);
    rc = dprl_cancel_poll(cancel, 150, err); /* %.15g..%.17g and strtod: ~0.3 us */
  }
  dprl_buf_append(b, "]", 1);
  return rc;
}

void dprl_json_put_int_array(dprl_buf *b, const int64_t *x, size_t n) {
  dprl_buf_append(b, "[", 1);
  for (size_t i = 0; i < n; i++) {
    if (i) dprl_buf_append(b, ",", 1);
    dprl_buf_printf(b, "%lld", (long long)x[i]);
  }
  dprl_buf_append(b, "]", 1);
}

/* ---- numbers and object members ------------------------------------------ */

const char *dprl_json_num(double x, char *buf, size_t n) {
  /* Shortest of %.15g/%.16g/%.17g that reads back exactly. */
  for (int prec = 15; prec <= 17; prec++) {
    dprl_snprintf(buf, n, "%.*g", prec, x);
    if (dprl_strtod(buf, NULL) == x) break;
  }
  return buf;
}

void dprl_json_put_key(dprl_buf *b, const char *k) {
  dprl_buf_puts(b, ",");
  dprl_json_put_string(b, k);
  dprl_buf_puts(b, ":");
}

void dprl_json_put_num(dprl_buf *b, const char *k, double x) {
  dprl_json_put_key(b, k);
  dprl_json_put_double(b, x);
}

void dprl_json_put_int(dprl_buf *b, const char *k, int64_t x) {
  dprl_json_put_key(b, k);
  dprl_buf_printf(b, "%lld", (long long)x);
}
