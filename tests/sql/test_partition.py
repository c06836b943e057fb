"""Parallel composition (ALGORITHMS.md section 12): the groups of one
statement share one ledger row only when they hold different episodes, and
an episode is its rows, not its key.  The same episodes under other keys
are refused at the first group that brings them, before its value, with
nothing more charged: integer 7 and text '7' (two imports of one log), the
keys episode * 10 + k of a cross join, keys renamed from the outer row by
a correlated subquery, dp_is_value over episode || '/' || rule.  A
partition (a hospital split) is still charged once, for dp_lsw (rows in any
order and grouped), dp_mdp, dp_is_value and, per expert, dp_expert_policy,
also when some of a group's episodes have the rows of another group's."""
import json
import os
import sqlite3
import tempfile

from harness import check, connect, run

LSW = {"n_states": 3, "gamma": 0.5, "rmin": 0, "rmax": 1, "epsilon": 1, "delta": 1e-6,
       "perturb": "statistics"}
MDP = {"n_states": 3, "n_actions": 2, "gamma": 0.9, "rmin": 0, "rmax": 1, "epsilon": 1,
       "delta": 1e-5, "horizon": 4}
OPE = {"gamma": 1, "rmin": 0, "rmax": 1, "gmin": 0, "gmax": 4, "horizon": 4, "weight_max": 5,
       "epsilon": 1, "delta": 1e-5}
EXP = {"n_states": 3, "n_actions": 2, "epsilon": 1, "delta": 1e-6, "default_action": 0}
KS = "(SELECT 0 AS k UNION ALL SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3)"


def database():
    """Twenty episodes of distinct rows (each its own rewards), in four
    hospitals; steps2 is the same log imported with text keys."""
    f = os.path.join(tempfile.mkdtemp(), "ledger.db")
    con = connect(f)
    con.isolation_level = None
    con.execute("PRAGMA journal_mode = wal")
    con.execute("CREATE TABLE steps(episode, t, state, action, reward, behavior, hospital)")
    rows = [(e, t, (e + t) % 3, (e >> t) % 2, ((e * 7 + t * 3) % 11) / 10 + e / 1000, 0.5, e % 4)
            for e in range(20) for t in range(3)]
    con.executemany("INSERT INTO steps VALUES (?, ?, ?, ?, ?, ?, ?)", rows)
    con.execute("CREATE TABLE steps2 AS SELECT CAST(episode AS TEXT) AS episode, t, state, "
                "action, reward, behavior, hospital FROM steps")
    con.execute("CREATE TABLE rules(rule, state, action, prob)")
    con.executemany("INSERT INTO rules VALUES (?, ?, ?, ?)",
                    [(r, s, a, (0.2 + 0.6 * a) if r == "A" else (0.8 - 0.6 * a))
                     for r in ("A", "B") for s in range(3) for a in range(2)])
    con.execute("CREATE TABLE hospitals(h)")
    con.executemany("INSERT INTO hospitals VALUES (?)", [(h,) for h in range(4)])
    for b in ("b", "x"):
        con.execute("SELECT dprl_budget(?, 100, 1e-3, ?)",
                    (b, json.dumps({"unit": "expert" if b == "x" else "episode",
                                    "accountant": "basic"}))).fetchone()
    return con, f


def ledger(f, budget="b"):
    c = sqlite3.connect(f)
    n = c.execute("SELECT count(*) FROM dprl_ledger WHERE budget = ?", (budget,)).fetchone()[0]
    c.close()
    return n


def attempt(con, sql, params):
    """The rows returned before an error, and the error (or None)."""
    got, msg = [], None
    try:
        for r in con.execute(sql, params):
            got.append(r)
    except sqlite3.Error as e:
        msg = str(e)
    return got, msg


def refused(con, f, sql, params, says, name, budget="b"):
    before = ledger(f, budget)
    got, msg = attempt(con, sql, params)
    check(msg is not None and says in msg and len(got) <= 1 and ledger(f, budget) == before + 1,
          name + ": refused at its second group, one row charged for the first",
          f"{len(got)} rows, {ledger(f, budget) - before} charged, {msg}")
    return msg


SAME = "the rows of every episode of this group are those of an episode of an earlier group"
MIXED = "mix integer and text"


def test_partition_charged_once():
    con, f = database()
    o = json.dumps(dict(LSW, budget="b"))
    got = con.execute("SELECT hospital, dp_lsw(episode, t, state, reward, ?) FROM steps "
                      "GROUP BY hospital", (o,)).fetchall()
    check(len(got) == 4 and ledger(f) == 1, "dp_lsw by hospital: 4 releases, one row", ledger(f))
    con.execute("CREATE INDEX steps_h ON steps(hospital, episode, t)")
    got = con.execute("SELECT hospital, dp_lsw(episode, t, state, reward, ?) FROM steps "
                      "GROUP BY hospital", (json.dumps(dict(LSW, budget="b", grouped=True)),)).fetchall()
    check(len(got) == 4 and ledger(f) == 2, "dp_lsw grouped by hospital: one row", ledger(f))
    got = con.execute("SELECT hospital, dp_mdp(episode, t, state, action, reward, ?) FROM steps "
                      "GROUP BY hospital", (json.dumps(dict(MDP, budget="b")),)).fetchall()
    check(len(got) == 4 and ledger(f) == 3, "dp_mdp by hospital: one row", ledger(f))
    got = con.execute("SELECT hospital, dp_is_value(episode, t, reward, behavior, prob, ?) "
                      "FROM steps JOIN rules USING (state, action) WHERE rule = 'A' "
                      "GROUP BY hospital", (json.dumps(dict(OPE, budget="b")),)).fetchall()
    check(len(got) == 4 and ledger(f) == 4, "dp_is_value by hospital: one row", ledger(f))
    # experts: the episode is the expert here, the hospital its own
    got = con.execute("SELECT hospital, dp_expert_policy(episode, t, t, state, action, ?) "
                      "FROM steps GROUP BY hospital", (json.dumps(dict(EXP, budget="x")),)).fetchall()
    check(len(got) == 4 and ledger(f, "x") == 1, "dp_expert_policy by hospital: one row",
          ledger(f, "x"))


def test_alike_episodes():
    # distinct patients with the same rows (short stays over few states are
    # often alike): a group that shares some of its episodes' rows with an
    # earlier group is still a partition's; one made only of such is a copy
    con, f = database()
    con.executemany("INSERT INTO steps VALUES (?, ?, ?, ?, ?, ?, ?)",
                    [(100 + h, 0, 1, 0, 1.0, 0.5, h) for h in range(4)])
    o = json.dumps(dict(LSW, budget="b"))
    got = con.execute("SELECT hospital, dp_lsw(episode, t, state, reward, ?) FROM steps "
                      "GROUP BY hospital", (o,)).fetchall()
    check(len(got) == 4 and ledger(f) == 1,
          "a patient in each hospital with the same single step: still one row", ledger(f))
    con.execute("INSERT INTO steps VALUES (200, 0, 1, 0, 1.0, 0.5, 9)")
    refused(con, f, "SELECT hospital, dp_lsw(episode, t, state, reward, ?) FROM steps "
            "WHERE hospital IN (0, 9) GROUP BY hospital", (o,), SAME,
            "a group whose only episode has the rows of an earlier group's")


def test_two_imports():
    # the log imported twice, integer keys and text keys: 7 and '7'
    con, f = database()
    both = ("SELECT src, dp_lsw(episode, t, state, reward, ?) FROM "
            "(SELECT 1 AS src, * FROM steps UNION ALL SELECT 2, * FROM steps2) GROUP BY src")
    refused(con, f, both, (json.dumps(dict(LSW, budget="b")),), MIXED,
            "dp_lsw over integer 7 and text '7'")
    # the two imports of one hospital each: other episodes, but the kinds mix
    halves = ("SELECT src, dp_lsw(episode, t, state, reward, ?) FROM "
              "(SELECT 1 AS src, * FROM steps WHERE hospital = 0 UNION ALL "
              " SELECT 2, * FROM steps2 WHERE hospital = 1) GROUP BY src")
    refused(con, f, halves, (json.dumps(dict(LSW, budget="b")),), MIXED,
            "integer keys in one group, text keys in another")
    # text both times, renamed: the rows are the same
    renamed = ("SELECT src, dp_mdp(episode, t, state, action, reward, ?) FROM "
               "(SELECT 1 AS src, * FROM steps2 UNION ALL "
               " SELECT 2, 'p' || episode, t, state, action, reward, behavior, hospital "
               " FROM steps2) GROUP BY src")
    msg = refused(con, f, renamed, (json.dumps(dict(MDP, budget="b")),), SAME,
                  "dp_mdp over '7' and 'p7'")
    check(msg is not None and "'" not in msg.split(":", 1)[1] and "7" not in msg,
          "the message names no key and no value", msg)


def test_cross_join():
    con, f = database()
    for grouped in (False, True):
        o = json.dumps(dict(LSW, budget="b", grouped=grouped))
        sql = (f"SELECT k, dp_lsw(episode * 10 + k, t, state, reward, ?) FROM "
               f"(SELECT * FROM steps, {KS} ORDER BY k, episode, t) GROUP BY k")
        refused(con, f, sql, (o,), SAME, f"dp_lsw over episode * 10 + k (grouped {grouped})")
    sql = (f"SELECT k, dp_mdp(episode * 10 + k, t, state, action, reward, ?) FROM steps, {KS} "
           "GROUP BY k")
    refused(con, f, sql, (json.dumps(dict(MDP, budget="b")),), SAME,
            "dp_mdp over episode * 10 + k")
    # an expert's content is its episodes, whatever their keys
    sql = (f"SELECT k, dp_expert_policy(episode * 10 + k, t * 100 + k, t, state, action, ?) "
           f"FROM steps, {KS} GROUP BY k")
    msg = refused(con, f, sql, (json.dumps(dict(EXP, budget="x")),),
                  "the rows of every expert of this group are those of an expert of an earlier group",
                  "dp_expert_policy over expert * 10 + k, episodes renamed", budget="x")


def test_correlated_subquery():
    con, f = database()
    sql = ("SELECT h, (SELECT dp_lsw(episode + 100 * h, t, state, reward, ?) FROM steps) "
           "FROM hospitals")
    refused(con, f, sql, (json.dumps(dict(LSW, budget="b")),), SAME,
            "dp_lsw in a correlated subquery renaming the keys from the outer row")


def test_is_value_per_rule():
    con, f = database()
    sql = ("SELECT rule, dp_is_value(episode || '/' || rule, t, reward, behavior, prob, ?) "
           "FROM steps JOIN rules USING (state, action) GROUP BY rule")
    refused(con, f, sql, (json.dumps(dict(OPE, budget="b")),), SAME,
            "dp_is_value over episode || '/' || rule (each rule a target policy)")


run([test_partition_charged_once, test_alike_episodes, test_two_imports, test_cross_join, test_correlated_subquery,
     test_is_value_per_rule])
