"""The clinical sample (samples/clinical/): its SQL generator reproduces the
simulator of model.sql.  From 20,000 patients, every empirical transition
frequency is within 5 binomial standard deviations of the dynamics table
(and transitions the table forbids never happen), the clinicians' actions
follow their policies, the propensity column is the treating clinician's
probability of the action taken, and the mean return of the log is within
4 standard errors of the logged policy's exact value (exact.py).  Issue
22's log gives every clinician exactly 50 patients.  The tolerances are
derived from the sizes: the generator is deterministic, so a pass is not
luck of a draw."""
import math
import os
import sqlite3
import sys

from harness import check, run

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SAMPLE = os.path.join(ROOT, "samples", "clinical")
sys.path.insert(0, SAMPLE)
import exact  # noqa: E402


def build(patients=20000, clinicians=30, seed=1, max_steps=30):
    con = sqlite3.connect(":memory:")
    con.execute(f"CREATE TEMP TABLE clinical_config AS SELECT {patients} AS patients, "
                f"{clinicians} AS clinicians, {seed} AS seed, {max_steps} AS max_steps")
    for f in ("model.sql", "log.sql", "rules.sql"):
        con.executescript(open(os.path.join(SAMPLE, f)).read())
    return con


def transitions(con):
    """(state, action, next) for every step whose move is known: the next
    day's severity, or the outcome that ended the stay (reward +1 / -1);
    a stay cut at max_steps has no known move."""
    return con.execute("""
        SELECT s.state, s.action,
               CASE WHEN n.state IS NOT NULL THEN n.state
                    WHEN s.reward = 1 THEN 10 WHEN s.reward = -1 THEN 11 END AS next
        FROM steps s LEFT JOIN steps n ON n.episode = s.episode AND n.t = s.t + 1
        WHERE n.state IS NOT NULL OR s.reward != 0""").fetchall()


def test_model():
    con = build(patients=1)
    n = con.execute("SELECT count(*) FROM (SELECT state, action, sum(prob) p FROM dynamics "
                    "GROUP BY 1, 2 HAVING abs(p - 1) < 1e-12)").fetchone()[0]
    check(n == 20, "dynamics: 20 (state, action) distributions", n)
    bad = con.execute("SELECT count(*) FROM dynamics_cdf WHERE hi <= lo").fetchone()[0]
    check(bad == 0, "dynamics_cdf: non-empty intervals")
    r = con.execute("SELECT reward FROM rewards WHERE state = 0 AND action = 0").fetchone()[0]
    check(abs(r - 0.85) < 1e-12, "rewards: the expected reward of a step (0.85 discharge at 0)")


def test_generator_reproduces_dynamics():
    con = build()
    n_ep, n_steps = con.execute("SELECT count(DISTINCT episode), count(*) FROM steps").fetchone()
    check(n_ep == 20000, "20,000 patients", n_ep)
    counts, totals = {}, {}
    for s, a, s2 in transitions(con):
        counts[s, a, s2] = counts.get((s, a, s2), 0) + 1
        totals[s, a] = totals.get((s, a), 0) + 1
    prob = {(s, a, s2): p for s, a, s2, p in con.execute(
        "SELECT state, action, next_state, prob FROM dynamics")}
    worst, cells, impossible = 0.0, 0, 0
    for (s, a), n in totals.items():
        for s2 in range(12):
            p = prob.get((s, a, s2), 0.0)
            k = counts.get((s, a, s2), 0)
            if p == 0:
                impossible += k
                continue
            z = abs(k / n - p) / math.sqrt(p * (1 - p) / n) if p < 1 else 0
            worst = max(worst, z)
            cells += 1
    check(impossible == 0, "no transition the dynamics forbid", impossible)
    check(cells > 60 and worst < 5,
          f"{cells} transition frequencies within 5 binomial sd of the dynamics (worst {worst:.2f})")
    # the admission severity follows starts
    starts = dict(con.execute("SELECT state, prob FROM starts"))
    first = dict(con.execute("SELECT state, count(*) FROM steps WHERE t = 0 GROUP BY state"))
    zs = [abs(first.get(s, 0) / n_ep - p) / math.sqrt(p * (1 - p) / n_ep) for s, p in starts.items()]
    check(set(first) <= set(starts) and max(zs) < 5,
          f"admission severities within 5 sd of starts (worst {max(zs):.2f})")


def test_clinicians():
    con = build()
    bad = con.execute("""SELECT count(*) FROM steps s JOIN clinician_policy p
                         ON p.expert = s.expert AND p.state = s.state AND p.action = s.action
                         WHERE abs(p.prob - s.propensity) > 1e-12""").fetchone()[0]
    missing = con.execute("""SELECT count(*) FROM steps s LEFT JOIN clinician_policy p
                             ON p.expert = s.expert AND p.state = s.state AND p.action = s.action
                             WHERE p.prob IS NULL""").fetchone()[0]
    check(bad == 0 and missing == 0, "propensity = the treating clinician's pi_i(action | state)")
    # escalation frequencies against the clinicians' probabilities, pooled
    # by (above threshold?): expected count and binomial variance summed
    rows = con.execute("""SELECT s.state >= c.threshold, count(*), sum(s.action),
                                 sum(CASE WHEN s.state >= c.threshold THEN c.p_high
                                          ELSE c.p_low END / 1000.0),
                                 sum((CASE WHEN s.state >= c.threshold THEN c.p_high
                                           ELSE c.p_low END / 1000.0) *
                                     (1 - CASE WHEN s.state >= c.threshold THEN c.p_high
                                               ELSE c.p_low END / 1000.0))
                          FROM steps s JOIN clinicians c ON c.expert = s.expert
                          GROUP BY 1""").fetchall()
    zs = [abs(k - mean) / math.sqrt(var) for _, n, k, mean, var in rows]
    check(len(rows) == 2 and max(zs) < 5,
          f"escalations within 5 sd of the clinicians' probabilities (z {[round(z, 2) for z in zs]})")
    per = con.execute("SELECT min(n), max(n) FROM (SELECT expert, count(DISTINCT episode) n "
                      "FROM steps GROUP BY expert)").fetchone()
    check(per == (666, 667), "30 clinicians share 20,000 patients (666 or 667 each)", per)
    thr = dict(con.execute("SELECT threshold, count(*) FROM clinicians GROUP BY 1"))
    check(set(thr) <= {5, 6, 7} and thr.get(6, 0) >= 10, "thresholds 5, 6, 7, mostly 6", thr)


def test_logged_value():
    con = build()
    m = exact.Model(con)
    want = exact.logged_value(con, m)
    g = [r for (r,) in con.execute("SELECT sum(reward) FROM steps GROUP BY episode")]
    mean = sum(g) / len(g)
    sd = math.sqrt(sum((x - mean) ** 2 for x in g) / (len(g) - 1))
    se = sd / math.sqrt(len(g))
    check(abs(mean - want) < 4 * se,
          f"mean return {mean:.4f} within 4 se ({se:.4f}) of the exact logged value {want:.4f}")
    vals = exact.all_values(con)
    # the finite-horizon optimum may act differently on the last days: the
    # stationary new rule is within 1e-4 of it
    check(vals["new_rule"] - vals["logged"] > 0.3 and 0 <= vals["optimal"] - vals["new_rule"] < 1e-4,
          "the new rule (severity >= 4) is optimal and clearly better than the log",
          vals)
    maj = con.execute("SELECT group_concat(prob, ',') FROM (SELECT prob FROM policies "
                      "WHERE rule = 'majority' AND action = 1 ORDER BY state)").fetchone()[0]
    check(maj == ",".join(["0.0"] * 6 + ["1.0"] * 4), "the majority rule escalates at >= 6", maj)
    # the finite-horizon DP against a direct simulation of its recursion:
    # the probability of still being in the unit after H days under the
    # new rule, from the same tables
    pi = exact.rule(con, "new_rule")
    v1 = m.value(pi, horizon=1)
    want1 = sum(m.start[s] * sum(pi[s][a] * m.reward[s][a] for a in (0, 1)) for s in range(10))
    check(abs(v1 - want1) < 1e-15, "one day: the expected first reward")


def test_issue22_log():
    con = build(patients=10000, clinicians=200)
    per = con.execute("SELECT min(n), max(n), count(*) FROM (SELECT expert, "
                      "count(DISTINCT episode) n FROM steps GROUP BY expert)").fetchone()
    check(per == (50, 50, 200), "200 clinicians x 50 patients", per)
    again = build(patients=10000, clinicians=200)
    h = "SELECT total(episode * 31 + t * 7 + state * 3 + action + reward * 11) FROM steps"
    check(con.execute(h).fetchone() == again.execute(h).fetchone(), "reproducible")
    other = build(patients=10000, clinicians=200, seed=2)
    check(con.execute(h).fetchone() != other.execute(h).fetchone(), "another seed, another log")


run([test_model, test_generator_reproduces_dynamics, test_clinicians, test_logged_value,
     test_issue22_log])
