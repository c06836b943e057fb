"""The privacy ledger (sql_budget.c): a budget is declared, releases of
different functions spend it (basic composition), the release that would
exceed it is refused with nothing released, seeded calls are logged
without spending, and neither a ROLLBACK nor a failed statement can make
the ledger forget a release that was seen."""
import json
import os
import sqlite3
import tempfile

from harness import check, check_error, connect, run, sql_error

LSW = "SELECT dp_lsw(episode, t, state, reward, ?) FROM steps"
PREFIX = ("SELECT * FROM dp_prefix_stable('SELECT episode, t, state, action FROM steps', "
          "'SELECT expert, state, action, prob FROM policies', ?)")


def database():
    f = os.path.join(tempfile.mkdtemp(), "ledger.db")
    con = connect(f)
    con.isolation_level = None
    con.execute("CREATE TABLE steps(episode, t, state, reward, action)")
    con.executemany("INSERT INTO steps VALUES (?, ?, ?, ?, ?)",
                    [(e, t, (e + t) % 2, 1.0, 0) for e in range(20) for t in range(3)])
    con.execute("CREATE TABLE policies(expert, state, action, prob)")
    con.executemany("INSERT INTO policies VALUES (?, ?, ?, ?)",
                    [(x, s, a, 0.9 if a == 0 else 0.1) for x in range(5) for s in (0, 1) for a in (0, 1)])
    return con, f


def remaining(con, name):
    return json.loads(con.execute("SELECT dprl_budget_remaining(?)", (name,)).fetchone()[0])


def test_spend_and_refuse():
    con, _ = database()
    r = json.loads(con.execute("SELECT dprl_budget('icu', 3, 1e-4)").fetchone()[0])
    check(r == {"budget": "icu", "epsilon": 3, "delta": 1e-4, "accountant": "basic composition"},
          "declared", r)
    o = {"n_states": 2, "gamma": 0.5, "epsilon": 1, "delta": 1e-5, "perturb": "statistics",
         "budget": "icu"}
    check(json.loads(con.execute(LSW, (json.dumps(o),)).fetchone()[0])["private"] is True,
          "dp_lsw spends epsilon 1")
    p = {"epsilon": 1, "delta": 1e-5, "p_min": 0.05, "T": 5, "L": 3, "budget": "icu"}
    con.execute(PREFIX, (json.dumps(p),)).fetchall()
    check(remaining(con, "icu")["epsilon_spent"] == 2, "dp_prefix_stable spends epsilon 1 more")
    # a seeded call is logged, not spent
    con.execute(LSW, (json.dumps(dict(o, seed=1)),)).fetchone()
    rem = remaining(con, "icu")
    check(rem["epsilon_spent"] == 2 and rem["releases"] == 2, "seeded: logged, not spent", rem)
    # dp_q_noise: every call spends (epsilon, delta_total), here 0.5 and 1e-5
    q = {"n_actions": 2, "epsilon": 0.5, "delta": 1e-5, "T": 5000, "B": 64, "lr": 3e-4, "k": 120,
         "K": 21, "budget": "icu"}
    rows = con.execute("SELECT * FROM dp_q_noise('SELECT 0.5, 0, 1.0', ?)", (json.dumps(q),)).fetchall()
    rem = remaining(con, "icu")
    check(len(rows) == 1 and rem["epsilon_spent"] == 2.5 and rem["releases"] == 3,
          "dp_q_noise spends epsilon 0.5", rem)
    err = sql_error(con, "SELECT * FROM dp_q_noise('SELECT 0.5, 0, 1.0', ?)", (json.dumps(dict(q, epsilon=1)),))
    check(err is not None and err.startswith('dp_q_noise: budget "icu" exceeded'),
          "dp_q_noise over the budget: refused, no row returned", err)
    # the next release would need 2.5 + 1 > 3: refused, nothing released, no row
    before = con.execute("SELECT count(*) FROM dprl_ledger").fetchone()[0]
    err = sql_error(con, LSW, (json.dumps(dict(o, epsilon=1)),))
    check(err == 'dp_lsw: budget "icu" exceeded: this release needs epsilon 1, delta 1e-05; already '
          'spent epsilon 2.5 of 3 and delta 3e-05 of 0.0001 (basic composition); nothing was released',
          "over the budget: refused", err)
    check(con.execute("SELECT count(*) FROM dprl_ledger").fetchone()[0] == before,
          "a refused release leaves no ledger row")
    err = sql_error(con, PREFIX, (json.dumps(dict(p, epsilon=1)),))
    check(err is not None and "exceeded" in err, "dp_prefix_stable refused too: no rows", err)
    # exactly the rest is fine (dp_q_learn spends theta's epsilon)
    con.execute("CREATE TABLE tr(s, a, r, s_next)")
    con.execute("INSERT INTO tr VALUES (0.5, 0, 1, 0.5)")
    ql = {"n_actions": 1, "gamma": 0, "lr": 3e-4, "T": 640, "B": 64, "K": 5, "k": 60, "epsilon": 0.5,
          "delta": 1e-5, "budget": "icu"}
    con.execute("SELECT dp_q_learn(s, a, r, s_next, ?) FROM tr", (json.dumps(ql),)).fetchone()
    rem = remaining(con, "icu")
    check(rem["epsilon_remaining"] == 0 and rem["releases"] == 4, "spent exactly to the limit", rem)
    rows = con.execute("SELECT budget, function, epsilon, spent, length(options_hash) FROM "
                       "dprl_ledger ORDER BY id").fetchall()
    check(rows == [("icu", "dp_lsw", 1.0, 1, 16), ("icu", "dp_prefix_stable", 1.0, 1, 16),
                   ("icu", "dp_lsw", 1.0, 0, 16), ("icu", "dp_q_noise", 0.5, 1, 16),
                   ("icu", "dp_q_learn", 0.5, 1, 16)],
          "the ledger is the audit trail", rows)


def test_rollback_and_statements():
    con, f = database()
    con.execute("SELECT dprl_budget('b', 2, 1e-5)").fetchone()
    o = {"n_states": 2, "gamma": 0.5, "epsilon": 1, "delta": 1e-6, "perturb": "statistics",
         "budget": "b"}
    # inside an explicit transaction: refused (a ROLLBACK would erase the row)
    con.execute("BEGIN")
    err = sql_error(con, LSW, (json.dumps(o),))
    con.execute("ROLLBACK")
    check(err is not None and "cannot run inside an explicit transaction" in err,
          "explicit transaction: refused, nothing released", err)
    # a plain SELECT commits its row before returning the release
    con.execute(LSW, (json.dumps(o),)).fetchone()
    con.execute("BEGIN")
    con.execute("DELETE FROM steps WHERE episode = 0")
    con.execute("ROLLBACK")
    other = sqlite3.connect(f)
    check(other.execute("SELECT count(*) FROM dprl_ledger WHERE spent").fetchone() == (1,),
          "the row is committed: another connection sees it, a later ROLLBACK cannot touch it")
    # inside a statement that stores the release: one transaction for both
    con.execute("CREATE TABLE kept AS SELECT dp_lsw(episode, t, state, reward, ?) AS r FROM steps",
                (json.dumps(o),))
    check(other.execute("SELECT count(*) FROM dprl_ledger WHERE spent").fetchone() == (2,),
          "CREATE TABLE ... AS SELECT: the release and its row commit together")
    err = sql_error(con, "CREATE TABLE kept2 AS SELECT dp_lsw(episode, t, state, reward, ?) AS r "
                    "FROM steps", (json.dumps(o),))
    check(err is not None and "exceeded" in err and
          other.execute("SELECT count(*) FROM sqlite_schema WHERE name = 'kept2'").fetchone() == (0,),
          "over budget inside CREATE TABLE AS: no table, no row", err)


def test_errors():
    con, _ = database()
    o = {"n_states": 2, "gamma": 0.5, "epsilon": 1, "delta": 1e-6, "budget": "none"}
    check_error(con, LSW, 'dp_lsw: option budget: no budget named "none" (no dprl_budgets table in '
                'main): declare it with dprl_budget(name, epsilon, delta)', "no ledger yet", (json.dumps(o),))
    con.execute("SELECT dprl_budget('b', 1, 0)").fetchone()
    check_error(con, LSW, 'dp_lsw: option budget: no budget named "none": declare it with '
                'dprl_budget(name, epsilon, delta)', "unknown budget", (json.dumps(o),))
    check_error(con, "SELECT dprl_budget('b', 2, 0)", 'dprl_budget: budget "b" is already declared '
                'with epsilon 1, delta 0; a budget cannot be changed: declare another name',
                "a budget cannot be changed")
    check(con.execute("SELECT dprl_budget('b', 1, 0)").fetchone()[0] is not None,
          "declaring the same budget again is a no-op")
    check_error(con, "SELECT dprl_budget('', 1, 0)", "dprl_budget: name must be text of 1 to 200 "
                "characters without NUL, got text ''", "empty name")
    check_error(con, "SELECT dprl_budget('c', -1, 0)", "dprl_budget: epsilon must be > 0, got -1",
                "negative epsilon")
    check_error(con, "SELECT dprl_budget('c', 1, 1)", "dprl_budget: delta must be in [0, 1), got 1",
                "delta 1")
    check_error(con, LSW, "dp_lsw: option budget must be a name (1 to 200 characters, no NUL), got 3",
                "budget not a string", (json.dumps(dict(o, budget=3)),))
    # delta 0 budget: any release with delta > 0 is refused
    err = sql_error(con, LSW, (json.dumps(dict(o, budget="b")),))
    check(err is not None and "exceeded" in err, "a pure-epsilon budget refuses delta > 0", err)
    con.execute("CREATE VIEW v AS SELECT dprl_budget('x', 1, 0)")
    check(sql_error(con, "SELECT * FROM v") is not None, "dprl_budget is refused from a view")


run([test_spend_and_refuse, test_rollback_and_statements, test_errors])
