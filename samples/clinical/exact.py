#!/usr/bin/python3
"""samples/clinical/exact.py: exact values of treatment policies in the
clinical sample's simulator, by dynamic programming over the model tables
of model.sql (plain Python, no numpy).

The value of a policy pi is the expected return of one stay,
    V = sum_s starts(s) V_H(s),
    V_k(s) = sum_a pi(a|s) [rewards(s, a) + gamma sum_{s' < 10} P(s'|s,a) V_{k-1}(s')],
    V_0 = 0,
with H = max_steps (30 days): a stay still open after H days leaves the
log with reward 0, so the finite horizon is exact for the simulator.
Undiscounted (gamma = 1) unless asked; the outcomes 10 (discharged) and
11 (died) end the stay, their reward already in rewards(s, a).

The logged policy is not one Markov policy: each patient keeps one
clinician for the whole stay.  Its exact value is the patients' average of
their clinicians' values, sum_i (n_i / N) V(pi_i).

  exact.py DB                   every rule of rules.sql and the logged policy
  exact.py DB --rule new_rule   one rule
  exact.py DB --json            the same as JSON
"""
import argparse
import json
import sqlite3

N_STATES = 10
N_ACTIONS = 2


class Model:
    """The model tables of one database."""

    def __init__(self, con):
        self.trans = [[[] for _ in range(N_ACTIONS)] for _ in range(N_STATES)]
        for s, a, s2, p in con.execute(
                "SELECT state, action, next_state, prob FROM dynamics WHERE next_state < 10"):
            self.trans[s][a].append((s2, p))
        self.reward = [[0.0] * N_ACTIONS for _ in range(N_STATES)]
        for s, a, r in con.execute("SELECT state, action, reward FROM rewards"):
            self.reward[s][a] = r
        self.start = [0.0] * N_STATES
        for s, p in con.execute("SELECT state, prob FROM starts"):
            self.start[s] = p
        self.horizon = con.execute("SELECT max_steps FROM log_config").fetchone()[0]

    def values(self, pi, gamma=1.0, horizon=None):
        """V_H(s) for every s; pi[s][a] = probability."""
        h = self.horizon if horizon is None else horizon
        v = [0.0] * N_STATES
        for _ in range(h):
            v = [sum(pi[s][a] * (self.reward[s][a] +
                                 gamma * sum(p * v[s2] for s2, p in self.trans[s][a]))
                     for a in range(N_ACTIONS) if pi[s][a])
                 for s in range(N_STATES)]
        return v

    def value(self, pi, gamma=1.0, horizon=None):
        v = self.values(pi, gamma, horizon)
        return sum(self.start[s] * v[s] for s in range(N_STATES))

    def optimal(self, gamma=1.0, horizon=None):
        """The optimal value and the first day's greedy action per state."""
        h = self.horizon if horizon is None else horizon
        v = [0.0] * N_STATES
        act = [0] * N_STATES
        for _ in range(h):
            q = [[self.reward[s][a] + gamma * sum(p * v[s2] for s2, p in self.trans[s][a])
                  for a in range(N_ACTIONS)] for s in range(N_STATES)]
            act = [max(range(N_ACTIONS), key=lambda a, s=s: q[s][a]) for s in range(N_STATES)]
            v = [max(q[s]) for s in range(N_STATES)]
        return sum(self.start[s] * v[s] for s in range(N_STATES)), act


def policy_table(con, sql, params=()):
    """pi[s][a] from rows (state, action, prob)."""
    pi = [[0.0] * N_ACTIONS for _ in range(N_STATES)]
    for s, a, p in con.execute(sql, params):
        pi[s][a] = p
    return pi


def rule(con, name):
    return policy_table(con, "SELECT state, action, prob FROM policies WHERE rule = ?", (name,))


def rules(con):
    return [r for (r,) in con.execute("SELECT DISTINCT rule FROM policies ORDER BY rule")]


def logged_value(con, model, gamma=1.0):
    """sum_i (n_i / N) V(pi_i): the value the log realises."""
    counts = dict(con.execute("SELECT expert, count(*) FROM (SELECT DISTINCT episode, expert "
                              "FROM steps) GROUP BY expert"))
    total = sum(counts.values())
    v = 0.0
    for e, n in counts.items():
        pi = policy_table(con, "SELECT state, action, prob FROM clinician_policy WHERE expert = ?",
                          (e,))
        v += n / total * model.value(pi, gamma)
    return v


def all_values(con, gamma=1.0, names=None):
    m = Model(con)
    out = {name: m.value(rule(con, name), gamma) for name in (names or rules(con))}
    if names is None:
        out["logged"] = logged_value(con, m, gamma)
        out["optimal"], _ = m.optimal(gamma)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("db")
    ap.add_argument("--rule", action="append", help="a rule of table policies (repeatable)")
    ap.add_argument("--gamma", type=float, default=1.0)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    con = sqlite3.connect(a.db)
    vals = all_values(con, a.gamma, a.rule)
    if a.json:
        print(json.dumps(vals))
    else:
        for k, v in vals.items():
            print(f"{k:16s} {v: .4f}")


if __name__ == "__main__":
    main()
