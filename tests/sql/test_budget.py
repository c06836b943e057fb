"""The privacy ledger (sql_budget.c): a budget is declared, releases of
different functions spend it (basic composition), the release that would
exceed it is refused with nothing released, releases that are not private
are refused under a budget, and no budgeted value is ever seen unless its
ledger row was committed first: not through a statement that fails or is
interrupted after the value was computed, a RETURNING clause, a CHECK
constraint, a kill -9, a lock held by another connection, or a trigger.
Concurrent spenders (threads and processes, WAL and rollback journal) spend
exactly the budget."""
import json
import math
import os
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time

from harness import SO, check, check_error, connect, run, sql_error

LSW = "SELECT dp_lsw(episode, t, state, reward, ?) FROM steps"
PREFIX = ("SELECT * FROM dp_prefix_stable('SELECT episode, t, state, action FROM steps', "
          "'SELECT expert, state, action, prob FROM policies', ?)")
O = {"n_states": 2, "gamma": 0.5, "rmin": 0, "rmax": 1, "epsilon": 1, "delta": 1e-6,
     "perturb": "statistics", "budget": "b"}
BUSY = 5  # SQLITE_BUSY
INTERRUPT = 9  # SQLITE_INTERRUPT


def database(journal=None, groups=1):
    f = os.path.join(tempfile.mkdtemp(), "ledger.db")
    con = connect(f)
    con.isolation_level = None
    if journal:
        con.execute(f"PRAGMA journal_mode = {journal}")
    con.execute("CREATE TABLE steps(episode, t, state, reward, action, g)")
    con.executemany("INSERT INTO steps VALUES (?, ?, ?, ?, ?, ?)",
                    [(e, t, (e + t) % 2, 1.0 - e / 100, 0, e % groups)  # each episode its own rows
                     for e in range(20) for t in range(3)])
    con.execute("CREATE TABLE policies(expert, state, action, prob)")
    con.executemany("INSERT INTO policies VALUES (?, ?, ?, ?)",
                    [(x, s, a, 0.9 if a == 0 else 0.1) for x in range(5) for s in (0, 1) for a in (0, 1)])
    return con, f


def remaining(con, name):
    return json.loads(con.execute("SELECT dprl_budget_remaining(?)", (name,)).fetchone()[0])


def ledger_rows(path, schema="main"):
    c = sqlite3.connect(path)
    n = c.execute(f"SELECT count(*) FROM {schema}.dprl_ledger").fetchone()[0]
    c.close()
    return n


def error(con, sql, params=()):
    try:
        con.execute(sql, params).fetchall()
    except sqlite3.Error as e:
        return str(e), getattr(e, "sqlite_errorcode", None)
    return None, None


def budget(con, name, eps, delta, unit="episode", accountant="basic"):
    return json.loads(con.execute("SELECT dprl_budget(?, ?, ?, ?)", (
        name, eps, delta, json.dumps({"unit": unit, "accountant": accountant}))).fetchone()[0])


def test_spend_and_refuse():
    con, _ = database()
    r = budget(con, "icu", 3, 1e-4)
    check(r == {"budget": "icu", "epsilon": 3, "delta": 1e-4, "unit": "episode",
                "accountant": "basic composition"}, "declared", r)
    o = dict(O, budget="icu")
    check(json.loads(con.execute(LSW, (json.dumps(o),)).fetchone()[0])["private"] is True,
          "dp_lsw spends epsilon 1")
    # one unit of privacy per budget: an expert-level release cannot spend it
    p = {"epsilon": 1, "delta": 1e-5, "p_min": 0.05, "T": 5, "L": 3, "budget": "icu"}
    err = sql_error(con, PREFIX, (json.dumps(p),))
    check(err is not None and 'the budget protects one episode, and dp_prefix_stable protects one '
          'expert' in err and remaining(con, "icu")["releases"] == 1,
          "dp_prefix_stable on an episode budget: refused, naming both units", err)
    budget(con, "experts", 3, 1e-4, unit="expert")
    con.execute(PREFIX, (json.dumps(dict(p, budget="experts")),)).fetchall()
    check(remaining(con, "experts")["epsilon_spent"] == 1, "dp_prefix_stable spends its expert budget")
    # the reward function: dp_q_noise and dp_q_learn
    budget(con, "rf", 1, 1e-4, unit="reward function")
    q = {"n_actions": 2, "epsilon": 0.5, "delta": 1e-5, "T": 5000, "B": 64, "lr": 3e-4, "rmin": 0, "rmax": 1, "k": 120,
         "K": 21, "budget": "rf"}
    rows = con.execute("SELECT * FROM dp_q_noise('SELECT 0.5, 0, 1.0', ?)", (json.dumps(q),)).fetchall()
    rem = remaining(con, "rf")
    check(len(rows) == 1 and rem["epsilon_spent"] == 0.5 and rem["releases"] == 1,
          "dp_q_noise spends epsilon 0.5", rem)
    err = sql_error(con, "SELECT * FROM dp_q_noise('SELECT 0.5, 0, 1.0', ?)", (json.dumps(dict(q, epsilon=1)),))
    check(err is not None and err.startswith('dp_q_noise: budget "rf" exceeded'),
          "dp_q_noise over the budget: refused, no row returned", err)
    con.execute("CREATE TABLE tr(s, a, r, s_next)")
    con.execute("INSERT INTO tr VALUES (0.5, 0, 1, 0.5)")
    ql = {"n_actions": 1, "gamma": 0, "rmin": 0, "rmax": 1, "lr": 3e-4, "T": 640, "B": 64, "K": 5, "k": 60, "epsilon": 0.5,
          "delta": 1e-5, "budget": "rf"}
    con.execute("SELECT dp_q_learn(s, a, r, s_next, ?) FROM tr", (json.dumps(ql),)).fetchone()
    rem = remaining(con, "rf")
    check(rem["epsilon_remaining"] == 0 and rem["releases"] == 2, "spent exactly to the limit", rem)
    # episode budget to its end
    con.execute(LSW, (json.dumps(o),)).fetchall()
    con.execute(LSW, (json.dumps(o),)).fetchall()
    before = con.execute("SELECT count(*) FROM dprl_ledger").fetchone()[0]
    err = sql_error(con, LSW, (json.dumps(o),))
    check(err == 'dp_lsw: budget "icu" exceeded: this release needs epsilon 1, delta 1e-06; already '
          'spent epsilon 3 of 3 and delta 3e-06 of 0.0001 (basic composition); this release was not returned',
          "over the budget: refused", err)
    check(con.execute("SELECT count(*) FROM dprl_ledger").fetchone()[0] == before,
          "a refused release leaves no ledger row")
    rows = con.execute("SELECT budget, function, epsilon, spent, length(options_hash) FROM "
                       "dprl_ledger ORDER BY id").fetchall()
    check(rows == [("icu", "dp_lsw", 1.0, 1, 16), ("experts", "dp_prefix_stable", 1.0, 1, 16),
                   ("rf", "dp_q_noise", 0.5, 1, 16), ("rf", "dp_q_learn", 0.5, 1, 16),
                   ("icu", "dp_lsw", 1.0, 1, 16), ("icu", "dp_lsw", 1.0, 1, 16)],
          "the ledger is the audit trail", rows)


def test_not_private_refused():
    # A seeded release on a known log cancels its own noise, and a
    # diagnostic one prints exact values: under a budget both are refused,
    # as is a release whose sigma was given rather than calibrated.
    con, _ = database()
    con.execute("SELECT dprl_budget('b', 1, 1e-5, '{\"unit\": \"episode\", \"accountant\": \"basic\"}')").fetchone()
    q = {"n_actions": 2, "epsilon": 0.5, "delta": 1e-5, "T": 5000, "B": 64, "lr": 3e-4, "rmin": 0, "rmax": 1, "k": 120,
         "K": 21, "budget": "b"}
    con.execute("CREATE TABLE tr(s, a, r, s_next)")
    con.execute("INSERT INTO tr VALUES (0.5, 0, 1, 0.5)")
    ql = {"n_actions": 1, "gamma": 0, "rmin": 0, "rmax": 1, "lr": 3e-4, "T": 640, "B": 64, "K": 5, "sigma": 1,
          "beta": 1, "budget": "b"}
    cases = [
        ("dp_lsw seeded", LSW, dict(O, seed=1), "option seed makes this release not private"),
        ("dp_lsw diagnostic", LSW, dict(O, release="diagnostic"),
         'option release ("diagnostic") makes this release not private'),
        ("dp_prefix_stable seeded", PREFIX,
         {"epsilon": 1, "delta": 1e-5, "p_min": 0.05, "T": 5, "L": 3, "budget": "b", "seed": 3},
         "option seed makes"),
        ("dp_q_noise seeded", "SELECT * FROM dp_q_noise('SELECT 0.5, 0, 1.0', ?)", dict(q, seed=2),
         "option seed makes"),
        ("dp_q_learn with sigma", "SELECT dp_q_learn(s, a, r, s_next, ?) FROM tr", ql,
         "option sigma makes this release not private"),
    ]
    for name, sql, o, want in cases:
        err = sql_error(con, sql, (json.dumps(o),))
        check(err is not None and want in err and "a budget only counts private releases" in err,
              f"{name} under a budget: refused", err)
    rem = remaining(con, "b")
    check(rem["releases"] == 0 and con.execute("SELECT count(*) FROM dprl_ledger").fetchone()[0] == 0,
          "nothing logged, nothing released", rem)
    # without a budget, a seeded release still works (tests and examples)
    o = dict(O, seed=1)
    del o["budget"]
    check(json.loads(con.execute(LSW, (json.dumps(o),)).fetchone()[0])["seeded"] is True,
          "seeded without a budget: allowed, marked seeded")


def test_statement_fails_after_release():
    # Rule: no budgeted value is observable unless its ledger row is
    # committed first, whatever the caller's statement does afterwards.
    con, f = database()
    con.execute("SELECT dprl_budget('b', 2, 1e-5, '{\"unit\": \"episode\", \"accountant\": \"basic\"}')").fetchone()
    o = json.dumps(O)
    # A statement that writes to the ledger's database: refused before any
    # value is computed into it (its write lock is the one the row needs).
    con.execute("CREATE TABLE out(v)")
    reader = sqlite3.connect(f)
    reader.execute("BEGIN")
    reader.execute("SELECT count(*) FROM steps").fetchone()  # holds a read lock
    seen = 0
    for _ in range(3):
        try:
            seen += len(con.execute("INSERT INTO out SELECT dp_lsw(episode, t, state, reward, ?) "
                                    "FROM steps RETURNING v", (o,)).fetchall())
        except sqlite3.Error as e:
            msg = str(e)
    reader.execute("ROLLBACK")
    check(seen == 0 and 'writes to "main", the database of the ledger' in msg,
          "INSERT ... RETURNING into the ledger's database: refused, nothing seen", msg)
    # A CHECK constraint on a function of the release, retried until it
    # passes: every attempt that computed a value is charged first.
    con.execute("CREATE TABLE sane(v CHECK (json_extract(v, '$.values[0]') > 100))")
    err = sql_error(con, "INSERT INTO sane SELECT dp_lsw(episode, t, state, reward, ?) FROM steps", (o,))
    check(err is not None and "writes to" in err and ledger_rows(f) == 0,
          "CHECK constraint retries in the ledger's database: refused, nothing charged", err)
    # in a transaction: refused (a ROLLBACK would erase the row)
    con.execute("BEGIN")
    err = sql_error(con, LSW, (o,))
    con.execute("ROLLBACK")
    check(err is not None and "cannot run inside a transaction" in err,
          "explicit transaction: refused, nothing released", err)
    # a plain SELECT commits its row before returning the release
    con.execute(LSW, (o,)).fetchone()
    check(ledger_rows(f) == 1, "plain SELECT: the row is committed (another connection sees it)")


def test_wal_store_releases():
    # In WAL the row is committed by a connection of the ledger's own, so
    # a release can be stored in a TEMP table; a CHECK that fails after the
    # value was computed still leaves the charge, so retries run out.
    con, f = database("wal")
    con.execute("SELECT dprl_budget('b', 2, 1e-5, '{\"unit\": \"episode\", \"accountant\": \"basic\"}')").fetchone()
    o = json.dumps(O)
    con.execute("CREATE TEMP TABLE sane(v CHECK (json_extract(v, '$.values[0]') > 100))")
    attempts, msgs = 0, []
    for _ in range(6):
        err = sql_error(con, "INSERT INTO sane SELECT dp_lsw(episode, t, state, reward, ?) FROM steps", (o,))
        msgs.append(err)
        attempts += err is not None and "CHECK constraint failed" in err
    check(attempts == 2 and ledger_rows(f) == 2 and all("exceeded" in m for m in msgs[2:]),
          "a CHECK retried 6 times against epsilon 2: 2 values computed, 2 charged, 4 refused",
          f"{attempts} {ledger_rows(f)} {msgs}")


def test_group_by_returning_interrupted():
    # INSERT ... SELECT ... GROUP BY ... RETURNING read one row at a time,
    # then interrupted: the statement's groups share one row, committed
    # before the first group was returned.
    con, f = database("wal", groups=4)
    con.execute("SELECT dprl_budget('b', 10, 1e-4, '{\"unit\": \"episode\", \"accountant\": \"basic\"}')").fetchone()
    con.execute("CREATE TEMP TABLE out(g, v)")
    cur = con.execute("INSERT INTO temp.out SELECT g, dp_lsw(episode, t, state, reward, ?) FROM steps "
                      "GROUP BY g RETURNING g", (json.dumps(O),))
    first = cur.fetchone()
    con.set_progress_handler(lambda: 1, 1)
    try:
        cur.fetchall()
    except sqlite3.Error:
        pass
    con.set_progress_handler(None, 1)
    check(first is not None and ledger_rows(f) == 1,
          "GROUP BY ... RETURNING interrupted after a row: the statement's one row is there",
          ledger_rows(f))
    # A budgeted SELECT while an INSERT ... RETURNING into main is half read
    # on the same connection: refused (its row would join that writer).
    con.execute("CREATE TABLE w(x)")
    cur = con.execute("INSERT INTO w VALUES (1), (2) RETURNING x")
    cur.fetchone()
    con2 = con.cursor()
    err = sql_error(con2, LSW, (json.dumps(O),))
    cur.fetchall()
    check(err is not None and "writes to" in err and ledger_rows(f) == 1,
          "a SELECT while a writer on the same connection is half read: refused", err)


def spent(path, budget):
    c = sqlite3.connect(path)
    r = c.execute("SELECT count(*), total(epsilon) FROM dprl_ledger WHERE budget = ?",
                  (budget,)).fetchone()
    c.close()
    return r


def test_sum_at_the_boundary():
    # basic composition adds the epsilons exactly as they are (doubles): two
    # at 0.5 spend a budget of 1 to its end; the double 0.1 is above 1/10, so
    # ten at 0.1 exceed it (rounded to nearest their sum is 0.9999999999999999)
    con, _ = database()
    budget(con, "halves", 1, 1e-4)
    o = dict(O, perturb="output", budget="halves", epsilon=0.5)
    for _ in range(2):
        con.execute(LSW, (json.dumps(o),)).fetchall()
    rem = remaining(con, "halves")
    check(rem["releases"] == 2 and rem["epsilon_remaining"] == 0, "two halves fit a budget of 1", rem)
    budget(con, "tenths", 1, 1e-4)
    o = dict(O, perturb="output", budget="tenths", epsilon=0.1)
    for _ in range(9):
        con.execute(LSW, (json.dumps(o),)).fetchall()
    msg = sql_error(con, LSW, (json.dumps(o),))
    check(msg is not None and "exceeded" in msg and remaining(con, "tenths")["releases"] == 9,
          "the tenth release at epsilon 0.1 exceeds a budget of 1: refused", msg)
    # the deltas are added exactly and rounded up once: the double 1e-6 is
    # below 10^-6 and the double 1e-5 above 10^-5, so ten fit (rounded up at
    # every addition their sum exceeded 1e-5)
    budget(con, "millionths", 100, 1e-5)
    o = dict(O, perturb="output", budget="millionths", epsilon=1, delta=1e-6)
    for _ in range(10):
        con.execute(LSW, (json.dumps(o),)).fetchall()
    rem = remaining(con, "millionths")
    check(rem["releases"] == 10 and sql_error(con, LSW, (json.dumps(o),)) is not None,
          "ten releases at delta 1e-6 fit a delta of 1e-5, an eleventh does not", rem)


def test_group_by_charged_once():
    # Six hospitals, a partition of the episodes: one statement, one row, one
    # epsilon (parallel composition, ALGORITHMS.md section 12).
    con, f = database("wal", groups=6)
    con.execute("SELECT dprl_budget('study', 3, 1e-5, '{\"unit\": \"episode\", \"accountant\": \"basic\"}')").fetchone()
    o = json.dumps(dict(O, budget="study"))
    by_g = "SELECT g, dp_lsw(episode, t, state, reward, ?) FROM steps GROUP BY g"
    rows = con.execute(by_g, (o,)).fetchall()
    check(len(rows) == 6 and all(json.loads(v)["private"] for _, v in rows)
          and spent(f, "study") == (1, 1.0),
          "GROUP BY over 6 groups: 6 releases, one ledger row of epsilon 1", spent(f, "study"))
    con.execute(by_g, (o,)).fetchall()  # the same statement again: another release
    check(spent(f, "study") == (2, 2.0), "the statement run again is charged again",
          spent(f, "study"))
    # grouped (streaming) rows, in the order of an index on (g, episode, t)
    con.execute("CREATE INDEX steps_g ON steps(g, episode, t)")
    og = json.dumps(dict(O, budget="study", grouped=True))
    rows = con.execute(by_g, (og,)).fetchall()
    check(len(rows) == 6 and spent(f, "study") == (3, 3.0),
          "grouped: true: the statement's 6 groups share one row", spent(f, "study"))
    # all or nothing: the budget is spent, so the first group is refused,
    # nothing is returned, nothing is charged, and the message says so
    got, msg = [], None
    try:
        for r in con.execute(by_g, (o,)):
            got.append(r)
    except sqlite3.Error as e:
        msg = str(e)
    check(got == [] and msg and "exceeded" in msg and "this release was not returned" in msg
          and spent(f, "study") == (3, 3.0),
          "a GROUP BY over an exhausted budget: no group returned, none charged", msg)


def test_group_by_not_a_partition():
    con, f = database("wal", groups=2)
    con.execute("SELECT dprl_budget('p', 10, 1e-5, '{\"unit\": \"episode\", \"accountant\": \"basic\"}')").fetchone()
    o = json.dumps(dict(O, budget="p"))
    # every episode has a step at t = 0, 1, 2: the groups of t share episodes
    # (Python's cursor steps one row ahead, so the error may come before the
    # first group's row reaches the loop)
    got, msg = [], None
    try:
        for r in con.execute("SELECT t, dp_lsw(episode, t, state, reward, ?) FROM steps GROUP BY t",
                             (o,)):
            got.append(r)
    except sqlite3.Error as e:
        msg = str(e)
    check(msg and "an episode appears in two groups" in msg and len(got) <= 1
          and spent(f, "p") == (1, 1.0),
          "GROUP BY t (not a partition of episodes): the second group is refused", f"{got} {msg}")
    # the same with grouped rows (an index on (t, episode))
    con.execute("CREATE INDEX steps_t ON steps(t, episode)")
    msg = sql_error(con, "SELECT t, dp_lsw(episode, t, state, reward, ?) FROM steps GROUP BY t",
                    (json.dumps(dict(O, budget="p", grouped=True)),))
    check(msg and "an episode appears in two groups" in msg and spent(f, "p") == (2, 2.0),
          "grouped: true, GROUP BY t: refused at the second group", msg)
    # options that differ per group are different releases: each its own row
    rows = con.execute("SELECT g, dp_lsw(episode, t, state, reward, json_set(?, '$.epsilon', 0.5 + g)) "
                       "FROM steps GROUP BY g", (o,)).fetchall()
    check(len(rows) == 2 and spent(f, "p") == (4, 4.0),  # 2 + 0.5 + 1.5
          "GROUP BY with options that differ per group: each group charged alone", spent(f, "p"))
    # two call sites in one statement: two releases, each charged once
    ol = json.dumps(dict(O, budget="p", epsilon=0.5, **{"lambda": 30}))
    rows = con.execute("SELECT g, dp_lsw(episode, t, state, reward, ?), "
                       "dp_lsl(episode, t, state, reward, ?) FROM steps GROUP BY g", (o, ol)).fetchall()
    check(len(rows) == 2 and spent(f, "p") == (6, 5.5),  # 4 + 1 + 0.5
          "dp_lsw and dp_lsl in one GROUP BY: one row each", spent(f, "p"))


def test_group_by_per_group_charges():
    # dp_q_learn's neighbours may change every reward of every group at once:
    # k groups are k releases, and are charged as such.
    con, f = database("wal", groups=3)
    con.execute("SELECT dprl_budget('q', 10, 1e-3, '{\"unit\": \"reward function\", \"accountant\": \"basic\"}')").fetchone()
    q = {"n_actions": 1, "gamma": 0.9, "rmin": 0, "rmax": 1, "lr": 3e-4, "T": 64, "B": 64,
         "K": 5, "k": 60, "epsilon": 1, "delta": 1e-5, "budget": "q"}
    rows = con.execute("SELECT g, dp_q_learn(state * 0.5, action, reward, state * 0.5, ?) FROM steps "
                       "GROUP BY g", (json.dumps(q),)).fetchall()
    check(len(rows) == 3 and spent(f, "q") == (3, 3.0),
          "dp_q_learn GROUP BY over 3 groups: 3 rows, epsilon 3", spent(f, "q"))


def cks_eps(rho, delta):
    """epsilon of rho-zCDP at delta (Canonne, Kamath, Steinke 2020, Corollary 13),
    by golden-section search over log(alpha - 1): independent of dp/zcdp.c."""
    f = lambda a: a * rho + (math.log(1 / delta) + (a - 1) * math.log(1 - 1 / a) - math.log(a)) / (a - 1)
    lo, hi = -20.0, 20.0
    g = (math.sqrt(5) - 1) / 2
    for _ in range(300):
        x1, x2 = hi - g * (hi - lo), lo + g * (hi - lo)
        if f(1 + math.exp(x1)) < f(1 + math.exp(x2)):
            hi = x2
        else:
            lo = x1
    return max(0.0, f(1 + math.exp((lo + hi) / 2)))


def gauss_sigma1(eps, delta):
    """sigma of the analytic Gaussian for sensitivity 1 (Balle & Wang 2018, Theorem 8)."""
    Phi = lambda x: 0.5 * math.erfc(-x / math.sqrt(2))
    d = lambda s: Phi(1 / (2 * s) - eps * s) - math.exp(eps) * Phi(-1 / (2 * s) - eps * s)
    lo, hi = 1e-3, 1e3
    for _ in range(300):
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if d(mid) <= delta else (mid, hi)
    return hi


def test_zcdp_accountant():
    con, f = database("wal")
    r = json.loads(con.execute("SELECT dprl_budget('z', 3.5, 1e-5, '{\"unit\": \"episode\"}')").fetchone()[0])
    check(r["accountant"] == "zcdp", "zCDP is the default accountant", r)
    rho1 = 1 / (2 * gauss_sigma1(1, 1e-6) ** 2)
    o = json.dumps(dict(O, budget="z"))  # statistics perturbation at (1, 1e-6)
    n, msg = 0, None
    for _ in range(12):
        try:
            con.execute(LSW, (o,)).fetchall()
            n += 1
        except sqlite3.Error as e:
            msg = str(e)
            break
    rem = remaining(con, "z")
    want = cks_eps(10 * rho1, 1e-5)
    check(n == 10 and msg and "exceeded" in msg and "rho" in msg,
          "ten statistics releases at (1, 1e-6) fit epsilon 3.5 at delta 1e-5; the eleventh is refused",
          f"{n} {msg}")
    check(abs(rem["rho_spent"] - 10 * rho1) < 1e-9 * rho1 and abs(rem["epsilon_spent"] - want) < 1e-6
          and rem["epsilon_spent"] <= 3.5 and want < 3.45,
          "the total is the CKS conversion of rho = 10/(2 sigma1^2) (independent computation)",
          f"{rem} want {want}")
    rows = con.execute("SELECT rho FROM dprl_ledger WHERE budget = 'z'").fetchall()
    check(len(rows) == 10 and all(abs(x - rho1) < 1e-9 * rho1 for (x,) in rows),
          "each ledger row records its rho", rows[:2])
    # the same ten under basic composition: three fit in epsilon 3.5
    budget(con, "basic", 3.5, 1e-5)
    ob = json.dumps(dict(O, budget="basic"))
    n = 0
    for _ in range(5):
        if sql_error(con, LSW, (ob,)) is None:
            n += 1
    check(n == 3, "basic composition: 3 of them fit epsilon 3.5", n)
    # plain (epsilon, delta) releases add to the converted Gaussian part
    budget(con, "mix", 4, 1e-5, accountant="zcdp")
    om = dict(O, budget="mix")
    con.execute(LSW, (json.dumps(om),)).fetchall()
    con.execute(LSW, (json.dumps(om),)).fetchall()
    op = dict(om, perturb="output", epsilon=0.5, delta=2e-6)
    con.execute(LSW, (json.dumps(op),)).fetchall()
    rem = remaining(con, "mix")
    want = 0.5 + cks_eps(2 * rho1, 1e-5 - 2e-6)
    check(abs(rem["epsilon_spent"] - want) < 1e-6 and rem["delta_plain_spent"] == 2e-6
          and rem["gaussian_releases"] == 2,
          "output perturbation is plain (epsilon, delta): added after the conversion at the delta left",
          f"{rem} want {want}")


ZSPENDER = r"""
import json, sqlite3, sys
con = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=30)
con.enable_load_extension(True)
con.load_extension(sys.argv[2])
n = 0
for _ in range(8):
    try:
        con.execute("SELECT dp_lsw(episode, t, state, reward, ?) FROM steps", (sys.argv[3],)).fetchall()
        n += 1
    except sqlite3.Error as e:
        if "exceeded" not in str(e):
            raise
print(n)
"""


def test_zcdp_concurrent_spenders():
    # three processes, eight statistics releases each, against the tight total
    # of ten: exactly ten are released and charged
    con, f = database("wal")
    con.execute("SELECT dprl_budget('zc', 3.5, 1e-5, '{\"unit\": \"episode\"}')").fetchone()
    con.close()
    o = json.dumps(dict(O, budget="zc"))
    ps = [subprocess.Popen([sys.executable, "-c", ZSPENDER, f, os.path.abspath(SO), o],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(3)]
    outs = [p.communicate(timeout=300) for p in ps]
    got = sum(int(out.strip() or 0) for out, _ in outs)
    check(got == 10 and ledger_rows(f) == 10, "3 processes x 8 against zCDP epsilon 3.5: 10 released, 10 charged",
          f"{got} {ledger_rows(f)} {[e[-200:] for _, e in outs if e]}")


def test_older_tables():
    # tables of the previous definitions: a new declaration upgrades them; an
    # old budget has no unit, and releases against it are refused
    con, f = database()
    con.execute("CREATE TABLE dprl_budgets(name TEXT PRIMARY KEY, epsilon REAL NOT NULL, delta REAL "
                "NOT NULL, accountant TEXT NOT NULL, created TEXT NOT NULL, in_memory INTEGER NOT NULL "
                "DEFAULT 0)")
    con.execute("CREATE TABLE dprl_ledger(id INTEGER PRIMARY KEY, time TEXT NOT NULL, budget TEXT NOT "
                "NULL, function TEXT NOT NULL, epsilon REAL NOT NULL, delta REAL NOT NULL, options_hash "
                "TEXT NOT NULL, spent INTEGER NOT NULL)")
    con.execute("INSERT INTO dprl_budgets VALUES ('old', 5, 1e-4, 'basic composition', 'then', 0)")
    err = sql_error(con, LSW, (json.dumps(dict(O, budget="old")),))
    check(err is not None and "made by an older dprl" in err, "older tables: refused until upgraded", err)
    budget(con, "new", 2, 1e-5)
    err = sql_error(con, LSW, (json.dumps(dict(O, budget="old")),))
    check(err is not None and "without a unit of privacy" in err and ledger_rows(f) == 0,
          "an upgraded budget of an older dprl has no unit: refused", err)
    check(sql_error(con, LSW, (json.dumps(dict(O, budget="new")),)) is None and ledger_rows(f) == 1,
          "the upgraded tables take the new budget's releases")
    err = sql_error(con, "SELECT dprl_budget('x', 1, 1e-5)")
    check(err is not None and "unit of privacy the budget protects is required" in err,
          "the unit is required", err)
    err = sql_error(con, "SELECT dprl_budget('x', 1, 1e-5, '{\"unit\": \"patient\"}')")
    check(err is not None and 'option unit must be one of "episode", "expert", "reward function"' in err,
          "an unknown unit is named", err)


KILL_CHILD = r"""
import json, os, sqlite3, sys, time
con = sqlite3.connect(sys.argv[1], isolation_level=None)
con.enable_load_extension(True)
con.load_extension(sys.argv[2])
con.execute("CREATE TEMP TABLE out(g, v)")
sql = "SELECT g, dp_lsw(episode, t, state, reward, ?) AS v FROM steps GROUP BY g"
if sys.argv[4] == "wal":  # a statement that writes, read a row at a time
    sql = "INSERT INTO temp.out " + sql + " RETURNING g"
cur = con.execute(sql, (sys.argv[3],))
print(cur.fetchone()[0], flush=True)
time.sleep(60)
"""


def test_kill_after_first_row():
    for journal in ("wal", "delete"):
        con, f = database(journal, groups=3)
        con.execute("SELECT dprl_budget('b', 10, 1e-4, '{\"unit\": \"episode\", \"accountant\": \"basic\"}')").fetchone()
        con.close()
        p = subprocess.Popen([sys.executable, "-c", KILL_CHILD, f, os.path.abspath(SO), json.dumps(O),
                              journal],
                             stdout=subprocess.PIPE, text=True)
        line = p.stdout.readline()
        p.send_signal(signal.SIGKILL)
        p.wait()
        check(line.strip() != "" and ledger_rows(f) >= 1,
              f"{journal}: kill -9 after the first group was printed: its row is in the ledger",
              f"{line!r} rows={ledger_rows(f)}")


def test_triggers_and_shape():
    con, f = database()
    con.execute("SELECT dprl_budget('b', 1, 1e-5, '{\"unit\": \"episode\", \"accountant\": \"basic\"}')").fetchone()
    o = json.dumps(O)
    con.execute("CREATE TRIGGER zero AFTER INSERT ON dprl_ledger BEGIN "
                "UPDATE dprl_ledger SET spent = 0 WHERE id = new.id; END")
    err = sql_error(con, LSW, (o,))
    check(err is not None and "a trigger could change what a release spends" in err and
          ledger_rows(f) == 0, "a trigger on dprl_ledger: refused, nothing released", err)
    con.execute("DROP TRIGGER zero")
    con.execute("CREATE TEMP TRIGGER tz AFTER INSERT ON main.dprl_budgets BEGIN SELECT 1; END")
    err = sql_error(con, LSW, (o,))
    check(err is not None and "TEMP trigger" in err, "a TEMP trigger on dprl_budgets: refused", err)
    con.execute("DROP TRIGGER tz")
    check(json.loads(con.execute(LSW, (o,)).fetchone()[0])["private"], "without triggers: released")
    # a table of another shape
    con2, f2 = database()
    con2.execute("CREATE TABLE dprl_budgets(name, epsilon, delta, accountant, created)")
    con2.execute("INSERT INTO dprl_budgets VALUES ('b', 9, 0.1, 'basic composition', '')")
    err = sql_error(con2, LSW, (o,))
    check(err is not None and "main.dprl_budgets is not the table dprl created" in err,
          "a dprl_budgets of another definition: refused", err)
    # a dropped ledger is named as such
    con3, _ = database()
    con3.execute("SELECT dprl_budget('b', 1, 1e-5, '{\"unit\": \"episode\", \"accountant\": \"basic\"}')").fetchone()
    con3.execute("DROP TABLE dprl_ledger")
    err = sql_error(con3, LSW, (o,))
    check(err == 'dp_lsw: option budget "b": the table main.dprl_ledger is missing (dropped?): dprl '
          'will not charge a budget whose ledger is gone', "a dropped dprl_ledger is named", err)
    err = sql_error(con3, "SELECT dprl_budget_remaining('b')")
    check(err is not None and "dprl_ledger is missing" in err, "dprl_budget_remaining names it too", err)


def test_schemas():
    d = tempfile.mkdtemp()
    clinic = os.path.join(d, "clinic.db")
    # :memory: main, the data and the ledger in an attached file
    con = connect(":memory:")
    con.isolation_level = None
    err = sql_error(con, "SELECT dprl_budget('b', 1, 1e-5, '{\"unit\": \"episode\", \"accountant\": \"basic\"}')")
    check(err is not None and 'the database "main" is in memory' in err and "in_memory" in err,
          "a budget in an in-memory main: refused unless asked for", err)
    err = sql_error(con, "SELECT dprl_budget('temp.b', 1, 1e-5, '{\"unit\": \"episode\", \"accountant\": \"basic\"}')")
    check(err is not None and "is temporary" in err, "a budget in temp: refused", err)
    err = sql_error(con, "SELECT dprl_budget('nowhere.b', 1, 1e-5, '{\"unit\": \"episode\", \"accountant\": \"basic\"}')")
    check(err is not None and err.startswith('dprl_budget: name "nowhere.b": no attached database '
                                             'named "nowhere" (a dot separates'),
          "an unknown schema is named", err)
    con.execute("ATTACH ? AS clinic", (clinic,))
    con.execute("CREATE TABLE clinic.steps(episode, t, state, reward)")
    con.execute("INSERT INTO clinic.steps VALUES (1, 0, 0, 1.0), (2, 0, 1, 0.5)")
    r = json.loads(con.execute("SELECT dprl_budget('clinic.icu', 1.5, 1e-5, '{\"unit\": \"episode\", \"accountant\": \"basic\"}')").fetchone()[0])
    check(r["budget"] == "icu" and r["schema"] == "clinic", "declared in the attached file", r)
    o = json.dumps(dict(O, budget="clinic.icu"))
    con.execute("SELECT dp_lsw(episode, t, state, reward, ?) FROM clinic.steps", (o,)).fetchone()
    con.close()
    # a new session (a fresh :memory: main) sees what was spent
    con = connect(":memory:")
    con.isolation_level = None
    con.execute("ATTACH ? AS clinic", (clinic,))
    rem = remaining(con, "clinic.icu")
    check(rem["epsilon_spent"] == 1 and rem["releases"] == 1, "a new session sees the spent budget", rem)
    err = sql_error(con, "SELECT dp_lsw(episode, t, state, reward, ?) FROM clinic.steps", (o,))
    check(err is not None and "exceeded" in err, "and cannot overspend it", err)
    # asked for explicitly: a budget for this connection only
    r = json.loads(con.execute("SELECT dprl_budget('m', 1, 1e-5, '{\"in_memory\": true, \"unit\": \"episode\", \"accountant\": \"basic\"}')").fetchone()[0])
    con.execute("CREATE TABLE steps(episode, t, state, reward)")
    con.execute("INSERT INTO steps VALUES (1, 0, 0, 1.0)")
    con.execute("SELECT dp_lsw(episode, t, state, reward, ?) FROM steps",
                (json.dumps(dict(O, budget="m")),)).fetchone()
    check(remaining(con, "m")["epsilon_spent"] == 1, "an in-memory budget, declared as such, spends")
    check_error(con, "SELECT dprl_budget('x', 1, 0, '{\"in_memory\": 1, \"unit\": \"episode\"}')",
                "dprl_budget: option in_memory must be true or false, got 1", "in_memory is a boolean")


def test_name_polish():
    con, _ = database()
    check_error(con, "SELECT dprl_budget(x'6162', 1, 0, '{\"unit\": \"episode\", \"accountant\": \"basic\"}')", "dprl_budget: name must be text, got a blob of 2 bytes x'6162'",
                "a BLOB name is refused")
    check_error(con, "SELECT dprl_budget_remaining(x'6162')",
                "dprl_budget_remaining: name must be text, got a blob of 2 bytes x'6162'", "and by dprl_budget_remaining")
    check_error(con, "SELECT dprl_budget('', 1, 0, '{\"unit\": \"episode\", \"accountant\": \"basic\"}')", "dprl_budget: name must be 1 to 200 characters, got 0",
                "empty name")
    long = "é" * 200  # 200 characters, 400 bytes
    check(json.loads(con.execute("SELECT dprl_budget(?, 1, 1e-5, '{\"unit\": \"episode\", \"accountant\": \"basic\"}')", (long,)).fetchone()[0])["budget"] == long,
          "200 characters of two bytes each: a valid name")
    check_error(con, "SELECT dprl_budget(?, 1, 0, '{\"unit\": \"episode\", \"accountant\": \"basic\"}')", "dprl_budget: name must be 1 to 200 characters, got 201",
                "201 characters: refused, counted in characters", ("é" * 201,))
    o = dict(O, budget=long)
    check(json.loads(con.execute(LSW, (json.dumps(o),)).fetchone()[0])["private"],
          "the option budget counts characters too")


def test_errors():
    con, _ = database()
    o = dict(O, budget="none")
    check_error(con, LSW, 'dp_lsw: option budget: no budget named "none" (no dprl_budgets table in '
                'main): declare it with dprl_budget(name, epsilon, delta, options)', "no ledger yet", (json.dumps(o),))
    con.execute("SELECT dprl_budget('b', 1, 0, '{\"unit\": \"episode\", \"accountant\": \"basic\"}')").fetchone()
    check_error(con, LSW, 'dp_lsw: option budget: no budget named "none": declare it with '
                'dprl_budget(name, epsilon, delta, options)', "unknown budget", (json.dumps(o),))
    check_error(con, "SELECT dprl_budget('b', 2, 0, '{\"unit\": \"episode\", \"accountant\": \"basic\"}')", 'dprl_budget: budget "b" is already declared '
                'with epsilon 1, delta 0; a budget cannot be changed: declare another name',
                "a budget cannot be changed")
    check(con.execute("SELECT dprl_budget('b', 1, 0, '{\"unit\": \"episode\", \"accountant\": \"basic\"}')").fetchone()[0] is not None,
          "declaring the same budget again is a no-op")
    check_error(con, "SELECT dprl_budget('c', -1, 0, '{\"unit\": \"episode\", \"accountant\": \"basic\"}')", "dprl_budget: epsilon must be > 0, got -1",
                "negative epsilon")
    check_error(con, "SELECT dprl_budget('c', 1, 1, '{\"unit\": \"episode\", \"accountant\": \"basic\"}')", "dprl_budget: delta must be in [0, 1), got 1",
                "delta 1")
    check_error(con, LSW, "dp_lsw: option budget must be a name (1 to 200 characters, no NUL), got 3",
                "budget not a string", (json.dumps(dict(o, budget=3)),))
    err = sql_error(con, LSW, (json.dumps(dict(o, budget="b")),))
    check(err is not None and "exceeded" in err, "a pure-epsilon budget refuses delta > 0", err)
    con.execute("CREATE VIEW v AS SELECT dprl_budget('x', 1, 0, '{\"unit\": \"episode\", \"accountant\": \"basic\"}')")
    check(sql_error(con, "SELECT * FROM v") is not None, "dprl_budget is refused from a view")


def test_waits():
    # WAL: the release waits for another connection's write lock as the
    # busy timeout says, succeeds once it is free, survives commits made
    # since its scan began, stops on interrupt, and gives up with BUSY.
    con, f = database("wal")
    con.execute("SELECT dprl_budget('b', 100, 1e-3, '{\"unit\": \"episode\", \"accountant\": \"basic\"}')").fetchone()
    o = json.dumps(O)
    con.execute("PRAGMA busy_timeout = 10000")
    holder = sqlite3.connect(f, isolation_level=None, check_same_thread=False)
    holder.execute("BEGIN IMMEDIATE")
    threading.Timer(0.5, lambda: holder.execute("COMMIT")).start()
    t0 = time.monotonic()
    msg, code = error(con, LSW, (o,))
    took = time.monotonic() - t0
    check(msg is None and 0.4 < took < 5 and ledger_rows(f) == 1,
          "WAL: a write lock held 0.5 s delays the release, which then succeeds", f"{msg} {took:.2f}")
    # a commit by another connection after the scan began
    other = sqlite3.connect(f, isolation_level=None)
    cur = con.execute("SELECT dp_lsw(episode, t, state, reward, ?), (SELECT count(*) FROM steps) "
                      "FROM steps", (o,))
    other.execute("INSERT INTO policies VALUES (9, 0, 0, 1)")
    check(cur.fetchone() is not None and ledger_rows(f) == 2,
          "WAL: a commit made since the scan began does not fail the release")
    # interrupted while waiting
    holder.execute("BEGIN IMMEDIATE")
    threading.Timer(0.3, con.interrupt).start()
    t0 = time.monotonic()
    msg, code = error(con, LSW, (o,))
    took = time.monotonic() - t0
    check(code == INTERRUPT and took < 2.5 and ledger_rows(f) == 2,
          "interrupted while waiting for the ledger: SQLITE_INTERRUPT soon, nothing charged",
          f"{msg} {code} {took:.2f}")
    # the busy timeout ends the wait with SQLITE_BUSY
    con.execute("PRAGMA busy_timeout = 300")
    t0 = time.monotonic()
    msg, code = error(con, LSW, (o,))
    took = time.monotonic() - t0
    holder.execute("ROLLBACK")
    check(code == BUSY and 0.25 < took < 3 and "this release was not returned: retry" in msg,
          "the busy timeout ends the wait: SQLITE_BUSY, retry", f"{msg} {code} {took:.2f}")
    # attached files locked by others do not hold the release up
    aux = os.path.join(os.path.dirname(f), "aux.db")
    con.execute("ATTACH ? AS aux", (aux,))
    con.execute("CREATE TABLE aux.x(y)")
    locker = sqlite3.connect(aux, isolation_level=None)
    locker.execute("BEGIN EXCLUSIVE")
    con.execute("PRAGMA busy_timeout = 10000")
    t0 = time.monotonic()
    msg, code = error(con, LSW, (o,))
    took = time.monotonic() - t0
    locker.execute("ROLLBACK")
    check(msg is None and took < 2, "an attached file locked by another connection: no wait",
          f"{msg} {took:.2f}")
    # rollback journal: a reader cannot wait for a writer (SQLite's rule);
    # SQLITE_BUSY at once, with a message that says what to do
    con2, f2 = database("delete")
    con2.execute("SELECT dprl_budget('b', 100, 1e-3, '{\"unit\": \"episode\", \"accountant\": \"basic\"}')").fetchone()
    con2.execute("PRAGMA busy_timeout = 10000")
    w = sqlite3.connect(f2, isolation_level=None)
    w.execute("BEGIN IMMEDIATE")
    t0 = time.monotonic()
    msg, code = error(con2, LSW, (o,))
    took = time.monotonic() - t0
    w.execute("ROLLBACK")
    check(code == BUSY and took < 2 and "WAL" in msg and ledger_rows(f2) == 0,
          "rollback journal, another writer: SQLITE_BUSY at once, nothing charged", f"{msg} {code}")


SPENDER = r"""
import json, sqlite3, sys, time
path, so, opts, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
con = sqlite3.connect(path, isolation_level=None, timeout=20)
con.enable_load_extension(True)
con.load_extension(so)
ok = refused = 0
for i in range(n):
    while True:
        try:
            con.execute("SELECT dp_lsw(episode, t, state, reward, ?) FROM steps", (opts,)).fetchone()
            ok += 1
            break
        except sqlite3.OperationalError as e:
            if getattr(e, "sqlite_errorcode", 0) == 5:  # SQLITE_BUSY: retry
                time.sleep(0.001)
                continue
            if "exceeded" in str(e):
                refused += 1
                break
            print("error", e, flush=True)
            sys.exit(1)
print(ok, refused, flush=True)
"""


def test_concurrent_spenders():
    # 3 processes x 2 threads each x 8 releases of epsilon 0.25 against a
    # budget of 5: exactly 20 succeed, the rest are refused, in both modes.
    o = json.dumps(dict(O, epsilon=0.25))
    for journal in ("wal", "delete"):
        con, f = database(journal)
        con.execute("SELECT dprl_budget('b', 5, 1e-3, '{\"unit\": \"episode\", \"accountant\": \"basic\"}')").fetchone()
        con.close()
        procs = [subprocess.Popen([sys.executable, "-c", SPENDER, f, os.path.abspath(SO), o, "8"],
                                  stdout=subprocess.PIPE, text=True) for _ in range(3)]
        results = []

        def thread_spender():
            c = connect(f)
            c.isolation_level = None
            c.execute("PRAGMA busy_timeout = 20000")
            ok = ref = 0
            for _ in range(8):
                while True:
                    msg, code = error(c, LSW, (o,))
                    if code == BUSY:
                        time.sleep(0.001)
                        continue
                    ok += msg is None
                    ref += msg is not None and "exceeded" in msg
                    break
            results.append((ok, ref))
        ts = [threading.Thread(target=thread_spender) for _ in range(2)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        for p in procs:
            out, _ = p.communicate(timeout=300)
            results.append(tuple(int(x) for x in out.split()) if p.returncode == 0 else (-999, 0))
        ok = sum(r[0] for r in results)
        ref = sum(r[1] for r in results)
        c = sqlite3.connect(f)
        spent = c.execute("SELECT total(epsilon), count(*) FROM dprl_ledger").fetchone()
        check(ok == 20 and ref == 20 and spent == (5.0, 20),
              f"{journal}: 5 spenders x 8 releases of 0.25 against 5: exactly 20 released and charged",
              f"ok={ok} refused={ref} ledger={spent} {results}")


SHARED_CACHE_CHILD = r"""
import json, sqlite3, sys, warnings
warnings.simplefilter("ignore")
sqlite3.enable_shared_cache(True)
con = sqlite3.connect(sys.argv[1], isolation_level=None)
con.enable_load_extension(True)
con.load_extension(sys.argv[2])
con.execute("SELECT dprl_budget('b', 5, 1e-4, '{\"unit\": \"episode\", \"accountant\": \"basic\"}')").fetchone()
print(json.loads(con.execute("SELECT dp_lsw(episode, t, state, reward, ?) FROM steps",
                             (sys.argv[3],)).fetchone()[0])["private"], flush=True)
"""


def test_review_findings():
    o = json.dumps(O)
    # a schema name of invalid UTF-8 (one "character" by a naive count,
    # 5001 bytes) overflowed a stack buffer
    con, f = database()
    bad = "CAST(x'61' || zeroblob(0) || x'" + "80" * 5000 + "' || '.b' AS TEXT)"
    for sql in ("SELECT dprl_budget(" + bad + ", 1, 0, '{\"unit\": \"episode\"}')", f"SELECT dprl_budget_remaining({bad})"):
        err = sql_error(con, sql)
        check(err is not None and err.endswith("name must be valid UTF-8"), "invalid UTF-8 name: refused",
              err)
    err = sql_error(con, "SELECT dp_lsw(episode, t, state, reward, json_set(?, '$.budget', "
                    f"{bad})) FROM steps", (o,))
    check(err is not None and "must be valid UTF-8" in err, "invalid UTF-8 budget option: refused", err)
    # a file's budget copied into memory (backup, deserialize) cannot be charged there
    con.execute("SELECT dprl_budget('b', 1, 1e-5, '{\"unit\": \"episode\", \"accountant\": \"basic\"}')").fetchone()
    mem = connect(":memory:")
    mem.isolation_level = None
    con.backup(mem)
    err = sql_error(mem, LSW, (o,))
    check(err is not None and "this copy of it is in memory" in err and ledger_rows(f) == 0,
          "a file's budget backed up into memory: refused", err)
    # triggers and tables named in another case
    con.execute("CREATE TRIGGER z AFTER INSERT ON DPRL_LEDGER BEGIN UPDATE dprl_ledger SET spent = 0; END")
    err = sql_error(con, LSW, (o,))
    check(err is not None and "a trigger could change what a release spends" in err,
          "a trigger on DPRL_LEDGER (another case): refused", err)
    con.execute("DROP TRIGGER z")
    con2, _ = database()
    con2.execute("CREATE TABLE DPRL_BUDGETS(name, epsilon, delta, accountant, created, in_memory)")
    err = sql_error(con2, LSW, (o,))
    check(err is not None and "is not the table dprl created" in err,
          "a DPRL_BUDGETS of the user's: named as not dprl's", err)
    # query_only
    con.execute("PRAGMA query_only = 1")
    err = sql_error(con, LSW, (o,))
    con.execute("PRAGMA query_only = 0")
    check(err is not None and "query_only is on" in err, "PRAGMA query_only: refused, said so", err)
    # the ledger's file attached a second time, the budget named through it
    con.execute("ATTACH ? AS again", (f,))
    con.execute("PRAGMA busy_timeout = 3000")
    t0 = time.monotonic()
    msg, code = error(con, LSW, (json.dumps(dict(O, budget="again.b")),))
    took = time.monotonic() - t0
    check(msg is None and took < 1.5 and ledger_rows(f) == 1,
          "the same file attached twice: no wait on the connection's own lock", f"{msg} {took:.2f}")
    con.execute("DETACH again")
    # journal modes a crash could corrupt the ledger in
    for mode in ("memory", "off"):
        con.execute(f"PRAGMA journal_mode = {mode}")
        err = sql_error(con, LSW, (o,))
        check(err is not None and f"journal_mode {mode}" in err, f"journal_mode {mode}: refused", err)
    con.execute("PRAGMA journal_mode = delete")
    con.execute("PRAGMA synchronous = OFF")
    con.execute("SELECT dprl_budget('b2', 5, 1e-3, '{\"unit\": \"episode\", \"accountant\": \"basic\"}')").fetchone()
    con.execute(LSW, (json.dumps(dict(O, budget="b2")),)).fetchone()
    check(con.execute("PRAGMA synchronous").fetchone()[0] == 0,
          "the ledger row is written with synchronous FULL, the connection's OFF restored")
    # the largest busy timeout still waits
    con.execute("PRAGMA busy_timeout = 2147483647")
    holder = sqlite3.connect(f, isolation_level=None, check_same_thread=False)
    holder.execute("BEGIN")
    holder.execute("SELECT count(*) FROM steps").fetchone()  # a reader: the commit waits for it
    threading.Timer(0.4, lambda: holder.execute("COMMIT")).start()
    t0 = time.monotonic()
    msg, code = error(con, LSW, (json.dumps(dict(O, budget="b2")),))
    took = time.monotonic() - t0
    check(msg is None and 0.3 < took < 5, "busy_timeout 2^31-1: the commit waits for a reader",
          f"{msg} {took:.2f}")
    # rollback journal: the commit's wait for a reader stops on interrupt
    con.execute("PRAGMA busy_timeout = 4000")
    holder.execute("BEGIN")
    holder.execute("SELECT count(*) FROM steps").fetchone()
    threading.Timer(0.3, con.interrupt).start()
    t0 = time.monotonic()
    msg, code = error(con, LSW, (json.dumps(dict(O, budget="b2")),))
    took = time.monotonic() - t0
    holder.execute("COMMIT")
    check(code == INTERRUPT and took < 2, "rollback journal: the commit's wait stops on interrupt",
          f"{msg} {code} {took:.2f}")
    con.execute("PRAGMA busy_timeout = 0")
    w = sqlite3.connect(f, isolation_level=None)
    w.execute("BEGIN IMMEDIATE")
    msg, code = error(con, LSW, (json.dumps(dict(O, budget="b2")),))
    w.execute("ROLLBACK")
    check(code == BUSY and "no busy timeout" in msg, "no busy timeout: the message says how to set one",
          msg)
    # shared cache: the ledger's connection has a cache of its own (it hung)
    _, f3 = database()
    p = subprocess.run([sys.executable, "-c", SHARED_CACHE_CHILD, f3, os.path.abspath(SO), o],
                       capture_output=True, text=True, timeout=60)
    check(p.returncode == 0 and p.stdout.strip() == "True", "process-wide shared cache: no hang",
          p.stdout + p.stderr)
    # dp_q_noise with paths reused (J < T/B) is not covered by its accountant
    con.execute("SELECT dprl_budget('q', 5, 1e-3, '{\"unit\": \"reward function\", \"accountant\": \"basic\"}')").fetchone()
    q = {"n_actions": 2, "epsilon": 0.5, "delta": 1e-5, "T": 5000, "B": 64, "lr": 3e-4, "k": 120,
         "K": 21, "rmin": 0, "rmax": 1, "J": 2, "budget": "q"}
    err = sql_error(con, "SELECT * FROM dp_q_noise('SELECT 0.5, 0, 1.0', ?)", (json.dumps(q),))
    check(err is not None and "option J (below T/B) makes this release not private" in err,
          "dp_q_noise with J < T/B under a budget: refused", err)


def plan_of(o, visits):
    """dp_plan options of a planned release like the release options o."""
    p = {k: v for k, v in o.items() if k != "budget"}
    return dict(p, episodes=5000, visits=visits)


def test_study_plan():
    """A study's plan: it fits or refuses exactly as the ledger then does,
    with the totals of an independent computation."""
    con, f = database("wal", groups=4)
    rho1 = 1 / (2 * gauss_sigma1(1, 1e-6) ** 2)
    stat = plan_of(O, [5000, 4000])  # rho does not depend on the sizes, usefulness does
    out = plan_of(dict(O, perturb="output", epsilon=0.5, delta=2e-6), [5000, 4000])
    study = {"budget": {"epsilon": 3.5, "delta": 1e-5, "unit": "episode"},
             "releases": [dict(stat, label=f"s{i}") for i in range(10)]
             + [dict(stat, label="eleventh"), dict(out, label="output")]}
    p = json.loads(con.execute("SELECT dp_plan(?)", (json.dumps(study),)).fetchone()[0])
    fits = [r["fits"] for r in p["releases"]]
    check(fits == [True] * 10 + [False, False] and p["fit"] == 10,
          "ten statistics releases fit epsilon 3.5 at 1e-5; the eleventh and a plain 0.5 do not", fits)
    check(abs(p["epsilon_total"] - cks_eps(10 * rho1, 1e-5)) < 1e-6,
          "the plan's total is the CKS conversion of 10 rho (independent computation)",
          (p["epsilon_total"], cks_eps(10 * rho1, 1e-5)))
    why = p["releases"][10]["why"]
    check(len(why) == 1 and "more than its epsilon 3.5" in why[0], "the refusal says why", why)
    # the ledger then does what the plan said: ten fit, the eleventh is refused
    budget(con, "z", 3.5, 1e-5, accountant="zcdp")
    o = json.dumps(dict(O, budget="z"))
    n = sum(1 for _ in range(11) if sql_error(con, LSW, (o,)) is None)
    rem = remaining(con, "z")
    check(n == 10 and abs(rem["epsilon_spent"] - p["epsilon_total"]) < 1e-9,
          "the ledger charges what the plan planned", (n, rem["epsilon_spent"], p["epsilon_total"]))
    # dprl_budget_plan starts from the ledger: nothing more fits, but a plain
    # release fits a fresh budget's remainder
    q = json.loads(con.execute("SELECT dprl_budget_plan('z', ?)",
                               (json.dumps([dict(stat, label="more")]),)).fetchone()[0])
    check(q["budget"]["name"] == "z" and abs(q["budget"]["epsilon_spent_before"] - rem["epsilon_spent"]) < 1e-12
          and q["releases"][0]["fits"] is False,
          "dprl_budget_plan plans from what the ledger has spent", q["budget"])
    budget(con, "mix", 4, 1e-5, accountant="zcdp")
    con.execute(LSW, (json.dumps(dict(O, budget="mix")),)).fetchall()
    q = json.loads(con.execute("SELECT dprl_budget_plan('mix', ?)",
                               (json.dumps([stat, out]),)).fetchone()[0])
    want = 0.5 + cks_eps(2 * rho1, 1e-5 - 2e-6)
    con.execute(LSW, (json.dumps(dict(O, budget="mix")),)).fetchall()
    con.execute(LSW, (json.dumps(dict(O, budget="mix", perturb="output", epsilon=0.5, delta=2e-6)),)).fetchall()
    check(abs(q["epsilon_total"] - want) < 1e-6 and abs(remaining(con, "mix")["epsilon_spent"] - want) < 1e-6,
          "a mix of rho and plain releases: plan, ledger and independent total agree",
          (q["epsilon_total"], want))
    # units: an expert-level release does not fit an episode budget, whatever is left
    study = {"budget": {"epsilon": 10, "delta": 1e-5, "unit": "episode"},
             "releases": [dict(stat, mechanism="dp_lsw"), dict(stat, label="x", groups=4)]}
    p = json.loads(con.execute("SELECT dp_plan(?)", (json.dumps(study),)).fetchone()[0])
    check(p["releases"][1]["charges"] == 1 and p["fit"] == 2
          and abs(p["epsilon_total"] - cks_eps(2 * rho1, 1e-5)) < 1e-6,
          "a GROUP BY of 4 groups over a partition is planned as one charge", p["releases"][1])
    study["budget"]["unit"] = "expert"
    p = json.loads(con.execute("SELECT dp_plan(?)", (json.dumps(study),)).fetchone()[0])
    check(p["fit"] == 0 and "one episode, and the budget protects one expert" in p["releases"][0]["why"][0],
          "a release of another unit does not fit, and the plan names both units", p["releases"][0]["why"])
    # _from_stats is charged per group: 4 groups are 4 charges, under basic composition 4 epsilon
    st = dict(stat, mechanism="dp_lsw_from_stats", groups=4)
    study = {"budget": {"epsilon": 3.5, "delta": 1e-5, "unit": "episode", "accountant": "basic"},
             "releases": [st, dict(stat, groups=4)]}
    p = json.loads(con.execute("SELECT dp_plan(?)", (json.dumps(study),)).fetchone()[0])
    check([r["charges"] for r in p["releases"]] == [4, 1] and [r["fits"] for r in p["releases"]] == [False, True]
          and p["epsilon_total"] == 1,
          "basic composition: a _from_stats GROUP BY of 4 is 4 charges (does not fit 3.5), dp_lsw's one",
          [(r["charges"], r["fits"]) for r in p["releases"]])
    # usefulness: the output perturbation at 20 episodes is mostly noise, and the plan says so
    r = p["releases"][1]["plan"]
    check(r["useful"] is True, "the statistics perturbation at these sizes is useful", r["why"])
    small = dict(out, episodes=20, visits=[20, 20])
    p = json.loads(con.execute("SELECT dp_plan(?)", (json.dumps(small),)).fetchone()[0])
    check(p["useful"] is False and "mostly noise" in p["why"] and p["charged_as"] == "epsilon, delta",
          "a plan that would return noise says so before anything is spent", p["why"])


def test_ledger_index():
    """A release reads its own budget's rows through an index, not a scan of
    every budget's; a ledger made without the index gets it at dprl_budget."""
    with tempfile.TemporaryDirectory() as d:
        con = connect(os.path.join(d, "l.db"))
        con.isolation_level = None
        con.execute("SELECT dprl_budget('b', 3, 1e-5, '{\"unit\": \"episode\"}')")
        plan = " ".join(r[3] for r in con.execute(
            "EXPLAIN QUERY PLAN SELECT dprl_ledger_total(epsilon) FROM dprl_ledger "
            "WHERE budget = 'b' AND spent = 1"))
        check("USING INDEX dprl_ledger_budget" in plan or "USING COVERING INDEX dprl_ledger_budget" in plan,
              "the spent sum of one budget reads the index dprl_ledger_budget", plan)
        con.execute("DROP INDEX dprl_ledger_budget")
        con.execute("SELECT dprl_budget('b', 3, 1e-5, '{\"unit\": \"episode\"}')")
        n = con.execute("SELECT count(*) FROM sqlite_schema WHERE type = 'index' "
                        "AND name = 'dprl_ledger_budget'").fetchone()[0]
        check(n == 1, "dprl_budget adds the index to a ledger made without it", n)
        con.close()


run([test_spend_and_refuse, test_not_private_refused, test_statement_fails_after_release,
     test_wal_store_releases, test_group_by_returning_interrupted, test_kill_after_first_row,
     test_triggers_and_shape, test_schemas, test_name_polish, test_errors, test_waits,
     test_concurrent_spenders, test_review_findings, test_sum_at_the_boundary,
     test_group_by_charged_once,
     test_group_by_not_a_partition, test_group_by_per_group_charges, test_zcdp_accountant,
     test_zcdp_concurrent_spenders, test_older_tables, test_study_plan, test_ledger_index])
