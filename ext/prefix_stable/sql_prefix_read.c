/*
** sql_prefix_read.c: which of the caller's trajectories dp_prefix_stable
** reads (ALGORITHMS.md section 7.1), and how their ids are checked; the
** rest of the call is in sql_prefix_stable.c, which calls into this file
** (never the other way).
*/
#include <stdio.h>
#include <string.h>

#include "prefix_stable/sql_prefix_stable.h"

/* An integer id (state or action) as a key. */
int ps_int_key(sqlite3_value *v, const char *what, dprl_key *k, dprl_error *err) {
  int64_t x;
  int rc = dprl_sql_int(v, what, &x, err);
  *k = (dprl_key){0, x, NULL, 0};
  return rc;
}

/* A trajectory's state or action must be one the policies describe. */
int ps_lookup(dprl_episode_index *x, sqlite3_value *v, const char *what, uint32_t *out,
              dprl_error *err) {
  dprl_key k;
  int rc = ps_int_key(v, what, &k, err);
  if (rc) return rc;
  if (!dprl_key_find(x, &k, out))
    return dprl_fail(err, DPRL_EINVAL,
                     "trajectories_sql: %s %lld is not in the policy table (policies_sql)",
                     what, (long long)k.ival);
  return DPRL_OK;
}

/* ---- which trajectories are read (ALGORITHMS.md section 7.1) ------------
** Each of the T runs examines a trajectory drawn uniformly with
** replacement; the others take no part in it.  So the call reads the
** distinct episode keys first (pass 1), orders them as the grouped buffer
** used to (key order), draws the T runs' keys with the generator exactly
** as dprl_prefix_release_run does, and then reads the rows of the K <= T
** distinct drawn keys only (pass 2): the same law (and, seeded, the same
** release) as reading everything.
** Pass 2 wraps the caller's query as
**   WITH dprl_ps_rows(e, t, s, a) AS (<trajectories_sql>)
**   SELECT e, t, s, a FROM dprl_ps_rows WHERE e COLLATE BINARY IN (?, ...)
** which SQLite pushes into the caller's query, when an index orders the
** episode column (pass 1 is then a loose index scan: one seek per key).
** Without one, both passes are a scan of the caller's query filtered by
** dprl_prefix_key(?1, e), a function that collects the keys (pass 1) or
** tells the drawn keys' rows (pass 2) in C: half the cost of SQL's
** DISTINCT and IN.  One pass ("read": "once", the default when the call
** is unseeded and no index seeks) does both in one scan: the same filter
** samples each key at its first row (Algorithm R, without replacement) and
** lets through the rows of the keys in the sample, which is shuffled at
** the end and turned into T draws with replacement: the same law, half
** the reading.  The choices themselves (key order, the draws, the sample,
** the deferred errors) are made in examined.c over key indices; the keys
** never leave this file. */

#define PS_WITH "WITH dprl_ps_rows(e, t, s, a) AS (\n"

/* A row's values v = (episode, t, state, action), checked, into the
** buffer. */
static int ps_push_values(sqlite3_value **v, ps_state *ps) {
  dprl_key ek;
  int64_t t;
  uint32_t s, a;
  if (dprl_sql_key(v[0], "trajectories_sql: episode", &ek, &ps->err) ||
      dprl_sql_int(v[1], "trajectories_sql: t", &t, &ps->err) ||
      ps_lookup(&ps->states, v[2], "state", &s, &ps->err) ||
      ps_lookup(&ps->actions, v[3], "action", &a, &ps->err) ||
      dprl_step_buffer_push(&ps->buf, &ek, t, s, (double)a, &ps->err))
    return ps->err.code;
  return DPRL_OK;
}

/* A row of a statement whose columns are (episode, t, state, action). */
static int ps_take_row(sqlite3_stmt *st, ps_state *ps) {
  sqlite3_value *v[4];
  for (int i = 0; i < 4; i++) v[i] = sqlite3_column_value(st, i);
  return ps_push_values(v, ps);
}

/* Prepare PS_WITH body ")\n" tail (dprl_query_wrap). */
static sqlite3_stmt *ps_wrap(sqlite3 *db, const ps_state *ps, const char *tail, int ncol,
                             int *oom) {
  return dprl_query_wrap(db, PS_WITH, ps->body, tail, ncol, oom);
}

/* 1 if every step of st's plan seeks (SEARCH) and none sorts: then one run
** costs a few index probes, not a scan. */
static int ps_plan_seeks(sqlite3 *db, sqlite3_stmt *st) {
  const char *sql = sqlite3_sql(st);
  char *eqp = sql ? sqlite3_mprintf("EXPLAIN QUERY PLAN %s", sql) : NULL;
  sqlite3_stmt *q = NULL;
  int ok = eqp && sqlite3_prepare_v2(db, eqp, -1, &q, NULL) == SQLITE_OK && q, rows = 0;
  while (ok && sqlite3_step(q) == SQLITE_ROW) {
    const char *d = (const char *)sqlite3_column_text(q, 3);
    rows++;
    ok = d && strncmp(d, "SEARCH ", 7) == 0 && !strstr(d, "TEMP B-TREE");
  }
  sqlite3_finalize(q);
  sqlite3_free(eqp);
  return ok && rows > 0;
}

/* A row's episode key into ps->ids (every row's key is checked: an integer
** or text); *id its index (0, 1, 2, ... in order of first appearance). */
static int ps_see_id(sqlite3_value *v, ps_state *ps, uint32_t *id) {
  dprl_key k;
  if (ps->last_ok && sqlite3_value_type(v) == SQLITE_INTEGER &&
      sqlite3_value_int64(v) == ps->last_key) {
    *id = ps->last_id;
    return DPRL_OK;
  }
  if (dprl_sql_key(v, "trajectories_sql: episode", &k, &ps->err) ||
      dprl_key_intern(&ps->ids, &k, id, &ps->err))
    return ps->err.code;
  ps->last_ok = !k.is_text;
  ps->last_key = k.ival;
  ps->last_id = *id;
  return DPRL_OK;
}

/* One episode key seen by pass 1. */
static int ps_add_id(sqlite3_value *v, ps_state *ps) {
  uint32_t id;
  return ps_see_id(v, ps, &id);
}

/* One pass: a row's key checked and sampled (dprl_reservoir_see).  1 if the
** key is in the sample now, 0 if not, -1 on error. */
static int ps_sample_row(sqlite3_value *v, ps_state *ps) {
  uint32_t id;
  int in;
  if (ps_see_id(v, ps, &id) || dprl_reservoir_see(&ps->once, &ps->rng, id, &in, &ps->err))
    return -1;
  return in;
}

/* Run st to the end, adding column 0 of each row as a key. */
static int ps_ids_from(sqlite3_stmt *st, ps_state *ps, char **pzErr) {
  dprl_query q = {st, "trajectories_sql"};
  int rc;
  while ((rc = dprl_query_step(&q, FN, pzErr)) == SQLITE_ROW)
    if (ps_add_id(sqlite3_column_value(st, 0), ps)) return dprl_sql_vtab_error(pzErr, FN, &ps->err);
  return rc == SQLITE_DONE ? SQLITE_OK : rc;
}

/* dprl_prefix_key(state, e) and dprl_prefix_key(state, e, t, s, a): what
** the scans call per row.  The state is a pointer bound by this file
** (sqlite3_bind_pointer), which SQL cannot make: called from SQL, the
** function is NULL and does nothing.
** Where a call has a side effect (collecting a key, sampling it, taking
** a row), it is an aggregate's argument, never a WHERE term: SQLite may
** test a WHERE term of the wrapper at any loop of the caller's joins,
** before the caller's own conditions, so it would see rows the caller's
** query does not return; an aggregate's argument is evaluated only for
** the rows that query returns.  Only the pure test of pass 2 (is this key
** drawn?) is a WHERE term. */

static int ps_row_chosen(sqlite3_value *v, ps_state *ps);
static int ps_take_once(sqlite3_value **v, ps_state *ps);

void ps_key_fn(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  /* the pointer, checked once per statement (its type check is a strcmp),
  ** then kept as the argument's auxiliary data */
  ps_state *ps = sqlite3_get_auxdata(ctx, 0);
  if (!ps) {
    if (!(ps = sqlite3_value_pointer(argv[0], PS_KEY_PTR))) {
      sqlite3_result_null(ctx);
      return;
    }
    sqlite3_set_auxdata(ctx, 0, ps, NULL);
  }
  int in = 0;
  if (argc == 5) in = ps_take_once(argv + 1, ps) ? -1 : 1; /* one pass: take the row */
  else if (ps->picking == PS_PICK) in = ps_row_chosen(argv[1], ps); /* -1: an error */
  else if (ps->picking == PS_SAMPLE) in = ps_sample_row(argv[1], ps);
  else if (ps_add_id(argv[1], ps)) in = -1; /* collect */
  if (in < 0) sqlite3_result_error(ctx, ps->err.msg, -1); /* stops the scan */
  else sqlite3_result_int(ctx, in);
}

/* Run a scan through dprl_prefix_key (bound to ps as ?1); rows it lets
** through go to `row` (pass 2); the aggregate scans return one row, for
** no callback. */
static int ps_scan(sqlite3_stmt *st, ps_state *ps, int (*row)(sqlite3_stmt *, ps_state *),
                   char **pzErr) {
  dprl_query q = {st, "trajectories_sql"};
  int rc = sqlite3_bind_pointer(st, 1, ps, PS_KEY_PTR, NULL);
  if (rc != SQLITE_OK) return rc;
  while ((rc = dprl_query_step(&q, FN, pzErr)) == SQLITE_ROW)
    if (row && row(st, ps)) return dprl_sql_vtab_error(pzErr, FN, &ps->err);
  if (rc != SQLITE_DONE && ps->err.code) return dprl_sql_vtab_error(pzErr, FN, &ps->err);
  return rc == SQLITE_DONE ? SQLITE_OK : rc;
}

/* Step q once: the value of column 0 (a copy) in *v, or *v = NULL at the
** end. */
static int ps_next_key(dprl_query *q, sqlite3_value **v, char **pzErr) {
  int rc = dprl_query_step(q, FN, pzErr);
  *v = NULL;
  if (rc == SQLITE_DONE) return SQLITE_OK;
  if (rc != SQLITE_ROW) return rc;
  *v = sqlite3_value_dup(sqlite3_column_value(q->stmt, 0));
  return *v ? SQLITE_OK : SQLITE_NOMEM;
}

/* The loose index scan: the smallest key (NULL first, as in ORDER BY),
** then repeatedly the next larger one (next: "... > ?1 ... LIMIT 1"). */
static int ps_ids_by_seeks(sqlite3_stmt *first, sqlite3_stmt *next, ps_state *ps,
                           char **pzErr) {
  dprl_query q = {first, "trajectories_sql"};
  sqlite3_value *v = NULL;
  int rc = ps_next_key(&q, &v, pzErr);
  q.stmt = next;
  while (rc == SQLITE_OK && v) {
    if (ps_add_id(v, ps)) rc = dprl_sql_vtab_error(pzErr, FN, &ps->err);
    else if (sqlite3_reset(next), (rc = sqlite3_bind_value(next, 1, v)) == SQLITE_OK) {
      sqlite3_value_free(v);
      rc = ps_next_key(&q, &v, pzErr);
    }
  }
  sqlite3_value_free(v);
  return rc;
}

/* Pass 1: every distinct episode key into ps->ids. */
int ps_read_ids(sqlite3 *db, sqlite3_value *sql, ps_state *ps, char **pzErr) {
  int oom = 0, rc;
  sqlite3_stmt *first = NULL, *next = NULL, *scan = NULL;
  if (ps->body) {
    next = ps_wrap(db, ps, "SELECT e FROM dprl_ps_rows WHERE e COLLATE BINARY > ?1 "
                   "ORDER BY e COLLATE BINARY LIMIT 1", 1, &oom);
    if (next && ps_plan_seeks(db, next))
      first = ps_wrap(db, ps, "SELECT e FROM dprl_ps_rows ORDER BY e COLLATE BINARY LIMIT 1",
                      1, &oom);
    if (!first && !oom)
      scan = ps_wrap(db, ps, "SELECT count(" PS_KEY_FN "(?1, e)) FROM dprl_ps_rows", 1, &oom);
  }
  ps->picking = PS_COLLECT;
  if (oom) rc = SQLITE_NOMEM;
  else if (first) {
    ps->seeks = 1;
    rc = ps_ids_by_seeks(first, next, ps, pzErr);
  } else if (scan) rc = ps_scan(scan, ps, NULL, pzErr);
  else { /* the caller's query as it is: every row's key */
    dprl_query q;
    if (!(rc = dprl_query_open(&q, db, "trajectories_sql", sql, 4, FN, pzErr))) {
      rc = ps_ids_from(q.stmt, ps, pzErr);
      dprl_query_close(&q);
    }
  }
  sqlite3_finalize(first);
  sqlite3_finalize(next);
  sqlite3_finalize(scan);
  return rc;
}

/* The draw (dprl_examined_key_order, dprl_examined_choose): the K distinct
** drawn keys go to ps->chosen in order of first draw, and ps->run[c] is run
** c's place there. */
int ps_choose(ps_state *ps, int64_t T, int64_t *K) {
  size_t n = ps->ids.n, most = (uint64_t)T < n ? (size_t)T : n;
  uint32_t *order = dprl_malloc((n ? n : 1) * sizeof *order);
  uint32_t *chosen = dprl_malloc((most ? most : 1) * sizeof *chosen);
  int rc = !order || !chosen ? dprl_nomem(&ps->err) : DPRL_OK;
  *K = 0;
  if (!rc) rc = dprl_examined_key_order(&ps->ids, order, &ps->cancel.base, &ps->err);
  if (!rc) rc = dprl_examined_choose(&ps->rng, (int64_t)n, T, ps->run, chosen, K, &ps->err);
  for (int64_t c = 0; !rc && c < *K; c++) {
    dprl_key k;
    uint32_t got;
    dprl_key_get(&ps->ids, order[chosen[c]], &k);
    rc = dprl_key_intern(&ps->chosen, &k, &got, &ps->err);
  }
  if (rc) *K = 0;
  dprl_free(order);
  dprl_free(chosen);
  return rc;
}

/* Is this row's episode one of the examined?  Integers and text by their
** exact key; a REAL equal to an examined integer key is that episode's row
** (as SQL's IN would say), read so that its check reports it. */
static int ps_row_chosen(sqlite3_value *v, ps_state *ps) {
  dprl_key k;
  uint32_t c;
  int type = sqlite3_value_type(v);
  if (type == SQLITE_INTEGER || type == SQLITE_TEXT) {
    if (dprl_sql_key(v, "trajectories_sql: episode", &k, &ps->err)) return -1;
    return dprl_key_find(&ps->chosen, &k, &c);
  }
  if (type == SQLITE_FLOAT) {
    double x = sqlite3_value_double(v);
    if (x >= -0x1p63 && x < 0x1p63 && x == (double)(int64_t)x) {
      k = (dprl_key){0, (int64_t)x, NULL, 0};
      return dprl_key_find(&ps->chosen, &k, &c);
    }
  }
  return 0;
}


/* One pass: a row of a key in the sample (ps->last_id, just sampled).  A
** row that fails its checks is not an error yet: it is deferred
** (dprl_reservoir_defer), and the rest of its key's rows skipped; other
** errors (memory, interrupt) stop the scan. */
static int ps_take_once(sqlite3_value **v, ps_state *ps) {
  uint32_t id = ps->last_id;
  dprl_key k, sampled;
  int read;
  if (ps->picking != PS_SAMPLE || id >= ps->ids.n)
    return dprl_fail(&ps->err, DPRL_EINVAL, "dprl_prefix_key: not sampling");
  /* the row's key is the one just sampled (SQLite evaluates the episode
  ** column again for the row: it must give the same key) */
  dprl_key_get(&ps->ids, id, &sampled);
  if (dprl_sql_key(v[0], "trajectories_sql: episode", &k, &ps->err)) return ps->err.code;
  if (dprl_key_compare(&k, &sampled) != 0)
    return dprl_fail(&ps->err, DPRL_EINVAL,
                     "trajectories_sql: the episode column must give the same value each "
                     "time it is read (not random())");
  if (dprl_reservoir_take(&ps->once, id, &read, &ps->err) || !read) return ps->err.code;
  int rc = ps_push_values(v, ps);
  return rc == DPRL_EINVAL ? dprl_reservoir_defer(&ps->once, id, &ps->err) : rc;
}

/* A row of the caller's query: its values if its key was drawn. */
static int ps_filter_row(sqlite3_stmt *st, ps_state *ps) {
  int in = ps_row_chosen(sqlite3_column_value(st, 0), ps);
  return in < 0 ? ps->err.code : in ? ps_take_row(st, ps) : DPRL_OK;
}

/* Pass 2: the rows of the K examined trajectories, each checked, into the
** buffer (rows of other episodes are skipped unread). */
int ps_read_trajectories(sqlite3 *db, sqlite3_value *sql, ps_state *ps, int64_t K,
                                char **pzErr) {
  dprl_query q = {NULL, "trajectories_sql"};
  int rc, oom = 0, all = (size_t)K == ps->ids.n;
  ps->picking = PS_PICK;
  if (!all && ps->seeks && K <= sqlite3_limit(db, SQLITE_LIMIT_VARIABLE_NUMBER, -1)) {
    /* the drawn keys by index seeks */
    dprl_buf b = {0};
    dprl_buf_puts(&b, "SELECT e, t, s, a FROM dprl_ps_rows WHERE e COLLATE BINARY IN (");
    for (int64_t c = 0; c < K; c++) dprl_buf_puts(&b, c ? ",?" : "?");
    dprl_buf_puts(&b, ")");
    if (b.oom) oom = 1;
    else q.stmt = ps_wrap(db, ps, b.data, 4, &oom);
    dprl_buf_free(&b);
    for (int64_t c = 0; q.stmt && c < K; c++) {
      dprl_key k;
      dprl_key_get(&ps->chosen, (uint32_t)c, &k);
      int r = k.is_text ? sqlite3_bind_text(q.stmt, (int)c + 1, k.text, (int)k.len, SQLITE_STATIC)
                        : sqlite3_bind_int64(q.stmt, (int)c + 1, k.ival);
      if (r != SQLITE_OK) {
        dprl_query_close(&q);
        oom = r == SQLITE_NOMEM;
      }
    }
  } else if (!all && ps->body) { /* a scan filtered by dprl_prefix_key */
    sqlite3_stmt *st = ps_wrap(db, ps, "SELECT e, t, s, a FROM dprl_ps_rows WHERE " PS_KEY_FN
                               "(?1, e)", 4, &oom);
    if (st) {
      rc = ps_scan(st, ps, ps_filter_row, pzErr);
      sqlite3_finalize(st);
      return rc;
    }
  }
  if (oom) return SQLITE_NOMEM;
  /* Otherwise the caller's query as it is (every trajectory examined, or a
  ** text that cannot be wrapped). */
  if (!q.stmt && (rc = dprl_query_open(&q, db, "trajectories_sql", sql, 4, FN, pzErr)))
    return rc;
  while ((rc = dprl_query_step(&q, FN, pzErr)) == SQLITE_ROW)
    if (ps_filter_row(q.stmt, ps)) {
      rc = dprl_sql_vtab_error(pzErr, FN, &ps->err);
      break;
    }
  dprl_query_close(&q);
  return rc == SQLITE_DONE ? SQLITE_OK : rc;
}

/* 1 if the wrapped query finds each next key by an index seek (pass 1's
** loose index scan, then pass 2's seeks: cheaper than one full scan). */
int ps_has_seeks(sqlite3 *db, const ps_state *ps, int *oom) {
  sqlite3_stmt *next = ps->body ? ps_wrap(db, ps, "SELECT e FROM dprl_ps_rows WHERE e COLLATE "
                                          "BINARY > ?1 ORDER BY e COLLATE BINARY LIMIT 1", 1, oom)
                                : NULL;
  int seeks = next && ps_plan_seeks(db, next);
  sqlite3_finalize(next);
  return seeks;
}

/* One pass (ALGORITHMS.md 7.1): every row's key is checked and sampled
** (ps_sample_row); the rows of keys in the sample at the time are read
** into the buffer.  Then dprl_reservoir_draw turns the sample into the T
** runs; the K keys they examine, in order of first draw, are ps->chosen,
** and a deferred error of one of them is raised. */
int ps_read_once(sqlite3 *db, sqlite3_value *sql, ps_state *ps, int64_t T, int64_t *K,
                        char **pzErr) {
  int oom = 0, rc;
  dprl_reservoir_init(&ps->once, T);
  ps->picking = PS_SAMPLE;
  sqlite3_stmt *st =
      ps->body ? ps_wrap(db, ps, "SELECT count(CASE WHEN " PS_KEY_FN "(?1, e) THEN " PS_KEY_FN
                         "(?1, e, t, s, a) END) FROM dprl_ps_rows", 1, &oom)
               : NULL;
  *K = 0;
  if (oom) return SQLITE_NOMEM;
  if (st) { /* the rows are taken inside the scan */
    rc = ps_scan(st, ps, NULL, pzErr);
    sqlite3_finalize(st);
  } else { /* the caller's query as it is: the same, row by row in C */
    dprl_query q;
    if ((rc = dprl_query_open(&q, db, "trajectories_sql", sql, 4, FN, pzErr))) return rc;
    while ((rc = dprl_query_step(&q, FN, pzErr)) == SQLITE_ROW) {
      sqlite3_value *v[4];
      for (int i = 0; i < 4; i++) v[i] = sqlite3_column_value(q.stmt, i);
      int in = ps_sample_row(v[0], ps);
      if (in < 0 || (in && ps_take_once(v, ps))) {
        rc = dprl_sql_vtab_error(pzErr, FN, &ps->err);
        break;
      }
    }
    dprl_query_close(&q);
    if (rc == SQLITE_DONE) rc = SQLITE_OK;
  }
  if (rc) return rc;
  int64_t d;
  dprl_reservoir_draw(&ps->once, &ps->rng, ps->run, &d);
  for (int64_t c = 0; c < d; c++) { /* the examined keys, in order of first draw */
    dprl_key k;
    uint32_t got;
    dprl_key_get(&ps->ids, ps->once.res[c], &k);
    if (dprl_key_intern(&ps->chosen, &k, &got, &ps->err))
      return dprl_sql_vtab_error(pzErr, FN, &ps->err);
  }
  if (dprl_reservoir_bad_examined(&ps->once, &ps->err))
    return dprl_sql_vtab_error(pzErr, FN, &ps->err);
  *K = d;
  return SQLITE_OK;
}
