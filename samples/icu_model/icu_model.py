#!/usr/bin/python3
"""samples/icu_model/icu_model.py: an ICU-like MDP of 1,440 states and 8
actions with sparse transitions, its exact values, a log sampled from it
and the non-private tabular model of a log.

The dynamics are fixed formulas (README.md states them in prose); the log
is deterministic from its seed.  Plain Python 3, standard library only.

  icu_model.py --truth                     the exact values (JSON)
  icu_model.py --stays 20000 --seed 1 --db icu.db     the log into SQLite
  icu_model.py --stays 20000 --seed 1 --csv steps.csv the log as CSV

The log is a table steps(episode, t, state, action, reward): one row per
step, at most HORIZON = 20 steps per stay; a stay that ends in an outcome
has reward +1 (discharge) or -1 (death) on its last row, every other row
has reward 0; a stay without an outcome after 20 steps is cut there
(censored: its last row has reward 0 and no successor).

Values are over the first 20 steps, undiscounted:
V(pi) = E[sum_{t<20} r_t] = P(discharged within 20 steps) - P(died within
20 steps), from the start distribution.
"""
import argparse
import csv
import json
import random
import sqlite3

# ---- states and actions -----------------------------------------------------

N_SEV, N_INF, N_CIRC, N_RESP, N_FRAIL = 10, 4, 4, 3, 3
N_STATES = N_SEV * N_INF * N_CIRC * N_RESP * N_FRAIL  # 1,440
N_ACTIONS = 8
HORIZON = 20
GAMMA = 1.0
DISCHARGE, DEATH = "discharge", "death"

# treatments: bit 0 antibiotics (infection), bit 1 vasopressors
# (circulation), bit 2 ventilation (respiration)
SIDE = (0.3, 0.6, 1.0)       # side-effect weight of each treatment
MAX_LEVEL = (N_INF - 1, N_CIRC - 1, N_RESP - 1)
DEATH_P = (0.001, 0.001, 0.001, 0.002, 0.003, 0.005, 0.01, 0.02, 0.06, 0.18)  # by severity
DISCHARGE_P = (0.55, 0.35, 0.20)  # at severity 0, 1, 2


def encode(sev, inf, circ, resp, frail):
    return (((sev * N_INF + inf) * N_CIRC + circ) * N_RESP + resp) * N_FRAIL + frail


def decode(s):
    s, frail = divmod(s, N_FRAIL)
    s, resp = divmod(s, N_RESP)
    s, circ = divmod(s, N_CIRC)
    sev, inf = divmod(s, N_INF)
    return sev, inf, circ, resp, frail


def clamp(x, lo, hi):
    return lo if x < lo else hi if x > hi else x


def dynamics(s, a):
    """(p_discharge, p_death, [(next_state, p), ...]) of one step from state
    s under action a: two or three next states (better, same, worse),
    distinct, each with p > 0; all the probabilities sum to 1."""
    sev, inf, circ, resp, frail = decode(s)
    lev = [inf, circ, resp]
    on = [(a >> j) & 1 for j in range(3)]
    treated = [j for j in range(3) if on[j] and lev[j] > 0]
    untreated = [j for j in range(3) if not on[j] and lev[j] > 0]
    help_ = sum(lev[j] for j in treated)
    threat = sum(lev[j] for j in untreated)
    harm = sum(SIDE[j] for j in range(3) if on[j]) * (1 + frail)
    # the outcomes
    if sev <= 2 and inf <= 1 and circ == 0 and resp == 0 and not on[1] and not on[2]:
        p_dis = DISCHARGE_P[sev]
    else:
        p_dis = 0.0
    p_death = min(0.5, (DEATH_P[sev] + 0.002 * threat + 0.001 * harm) * (1 + 0.4 * frail))
    # the course, sharing what the outcomes leave
    p_better = clamp(0.22 + 0.25 * help_ - 0.05 * threat - 0.12 * harm, 0.02, 0.70)
    p_worse = clamp(0.06 + 0.14 * threat + 0.08 * harm - 0.08 * help_, 0.02, 0.70)
    if p_better + p_worse > 0.9:
        z = 0.9 / (p_better + p_worse)
        p_better, p_worse = p_better * z, p_worse * z
    rest = 1.0 - p_dis - p_death
    p_better, p_worse = p_better * rest, p_worse * rest
    p_same = rest - p_better - p_worse
    down, up = list(lev), list(lev)
    mild = [j for j in untreated if lev[j] == 1]
    if treated:  # the most severe treated problem improves (ties: the first)
        down[max(treated, key=lambda j: (lev[j], -j))] -= 1
    elif mild:   # nothing treated: a mild problem resolves by itself
        down[mild[0]] = 0
    if untreated:  # the most severe untreated problem gets worse
        j = max(untreated, key=lambda j: (lev[j], -j))
        up[j] = min(MAX_LEVEL[j], up[j] + 1)
    better = encode(max(0, sev - 1), down[0], down[1], down[2], frail)
    worse = encode(min(N_SEV - 1, sev + 1), up[0], up[1], up[2], frail)
    nxt = {}
    for s2, p in ((better, p_better), (s, p_same), (worse, p_worse)):
        nxt[s2] = nxt.get(s2, 0.0) + p
    return p_dis, p_death, sorted(nxt.items())


# admission profiles: (share, {infection: p}, {circulation: p}, {respiration: p})
PROFILES = (
    (0.40, {2: 0.5, 3: 0.5}, {1: 0.6, 2: 0.4}, {0: 0.7, 1: 0.3}),  # sepsis
    (0.30, {0: 0.5, 1: 0.5}, {0: 1.0}, {2: 1.0}),                  # respiratory failure
    (0.20, {0: 1.0}, {2: 0.5, 3: 0.5}, {0: 0.5, 1: 0.5}),          # circulatory shock
    (0.10, {0: 0.5, 1: 0.5}, {0: 1.0}, {0: 1.0}),                  # after surgery
)
ADMISSION_SEVERITY = {3: 0.10, 4: 0.15, 5: 0.20, 6: 0.20, 7: 0.20, 8: 0.15}
FRAILTY = (0.40, 0.35, 0.25)


def start_distribution():
    """P(first state): severity, admission profile and frailty independent."""
    start = [0.0] * N_STATES
    for sev, p0 in ADMISSION_SEVERITY.items():
        for share, pi, pc, pr in PROFILES:
            for i, p1 in pi.items():
                for c, p2 in pc.items():
                    for r, p3 in pr.items():
                        for f, p4 in enumerate(FRAILTY):
                            start[encode(sev, i, c, r, f)] += p0 * share * p1 * p2 * p3 * p4
    return start


# ---- policies: pi[s] = [P(a | s) for a in 0..7] -----------------------------

def bits_policy(prob_on):
    """Independent treatments: treatment j is given with probability
    prob_on(j, level_j, frail)."""
    pol = []
    for s in range(N_STATES):
        sev, inf, circ, resp, frail = decode(s)
        lev = (inf, circ, resp)
        q = [prob_on(j, lev[j], frail) for j in range(3)]
        row = []
        for a in range(N_ACTIONS):
            p = 1.0
            for j in range(3):
                p *= q[j] if (a >> j) & 1 else 1 - q[j]
            row.append(p)
        pol.append(row)
    return pol


BEHAVIOUR_ON = (0.0, 0.3, 0.8, 1.0)  # P(treat) at problem level 0, 1, 2, 3


def behaviour():
    """The clinicians: each treatment given with probability 0, 0.3, 0.8, 1
    at its problem's level 0, 1, 2, 3, independently."""
    return bits_policy(lambda j, lev, frail: BEHAVIOUR_ON[lev])


def treat_all():
    """Treat every active problem (level >= 1)."""
    return bits_policy(lambda j, lev, frail: 1.0 if lev >= 1 else 0.0)


def cautious():
    """Treat only severe problems (level >= 2)."""
    return bits_policy(lambda j, lev, frail: 1.0 if lev >= 2 else 0.0)


RULES = {"behaviour": behaviour, "treat_all": treat_all, "cautious": cautious}


def deterministic(actions):
    """A policy of one action per state as probability rows."""
    return [[1.0 if a == act else 0.0 for a in range(N_ACTIONS)] for act in actions]


# ---- the exact model and its dynamic programming ----------------------------

class Model:
    """A tabular model over the 1,440 states: reward[j] is the expected
    reward of pair j = s * 8 + a, trans[j] = [(s', p)] its non-terminal
    next states (the rest of the mass ends the stay), start[s] the
    distribution of first states.  The simulator's own model by default."""

    def __init__(self, reward=None, trans=None, start=None):
        if reward is None:
            reward, trans = [], []
            for s in range(N_STATES):
                for a in range(N_ACTIONS):
                    p_dis, p_death, nxt = dynamics(s, a)
                    reward.append(p_dis - p_death)
                    trans.append(nxt)
            start = start_distribution()
        self.reward, self.trans, self.start = reward, trans, start

    def values(self, pol, horizon=HORIZON, reward=None):
        """V_H(s) of a stationary policy (rows of probabilities), by backward
        induction: V_0 = 0, V_h(s) = sum_a pi(a|s) [r(s,a) + sum_s'
        P(s'|s,a) V_{h-1}(s')].  reward: another reward per pair."""
        rw = self.reward if reward is None else reward
        v = [0.0] * N_STATES
        for _ in range(horizon):
            nv = []
            for s in range(N_STATES):
                tot, base = 0.0, s * N_ACTIONS
                for a, pa in enumerate(pol[s]):
                    if pa:
                        j = base + a
                        tot += pa * (rw[j] + GAMMA * sum(p * v[s2] for s2, p in self.trans[j]))
                nv.append(tot)
            v = nv
        return v

    def value(self, pol, horizon=HORIZON, reward=None):
        """The value from the start distribution over the first H steps."""
        v = self.values(pol, horizon, reward)
        return sum(p * x for p, x in zip(self.start, v))

    def occupancy(self, pol, horizon=HORIZON):
        """Expected visits to each pair in one stay: sum over t < H of
        P(in the unit at s at step t) pi(a|s), by forward propagation."""
        d = list(self.start)
        occ = [0.0] * (N_STATES * N_ACTIONS)
        for _ in range(horizon):
            nd = [0.0] * N_STATES
            for s in range(N_STATES):
                if d[s]:
                    for a, pa in enumerate(pol[s]):
                        if pa:
                            j = s * N_ACTIONS + a
                            occ[j] += d[s] * pa
                            for s2, p in self.trans[j]:
                                nd[s2] += d[s] * pa * p
            d = nd
        return occ

    def optimum(self, horizon=HORIZON):
        """The optimal value over H steps and its policy: steps[t] the greedy
        actions at step t (H - t steps to go; ties to the lowest action).
        steps[0] is the first step's rule (what dp_mdp_plan returns)."""
        v, steps = [0.0] * N_STATES, []
        for _ in range(horizon):
            nv, act = [], []
            for s in range(N_STATES):
                base = s * N_ACTIONS
                q = [self.reward[j] + GAMMA * sum(p * v[s2] for s2, p in self.trans[j])
                     for j in range(base, base + N_ACTIONS)]
                best = max(q)
                act.append(min(a for a in range(N_ACTIONS) if q[a] >= best - 1e-12))
                nv.append(best)
            v = nv
            steps.insert(0, act)
        return sum(p * x for p, x in zip(self.start, v)), steps


def truth():
    """The exact values: each policy of RULES, the optimum (which may change
    with the steps left), its first step's rule used at every step, and the
    behaviour policy's shares of censored and discharged stays and its mean
    number of logged steps."""
    m = Model()
    pols = {name: f() for name, f in RULES.items()}
    out = {name: m.value(pol) for name, pol in pols.items()}
    opt, steps = m.optimum()
    out["optimum"] = opt
    out["optimum_first_step_rule"] = m.value(deterministic(steps[0]))
    beh = pols["behaviour"]
    dyn = [dynamics(s, a) for s in range(N_STATES) for a in range(N_ACTIONS)]
    out["behaviour_censored"] = 1 - m.value(beh, reward=[d[0] + d[1] for d in dyn])
    out["behaviour_discharged"] = m.value(beh, reward=[d[0] for d in dyn])
    out["behaviour_mean_steps"] = m.value(beh, reward=[1.0] * (N_STATES * N_ACTIONS))
    return out


# ---- a model estimated from a log (not private) -----------------------------

def tabular(rows, censoring="known", min_steps=1):
    """The tabular model of a log of rows (episode, t, state, action,
    reward), sorted by (episode, t).  N(s,a) counts every step in the pair,
    r(s,a) is the mean reward of those steps, the start distribution is the
    first states' frequencies.  censoring:
      "known": a stay of HORIZON rows whose last reward is 0 was cut (no
        outcome, next state unseen): P(end | s,a) = outcomes / N, and the
        rest 1 - P(end) is spread over the observed next states by their
        frequencies (when there are none, that mass ends the stay);
      "as ending": every stay's last step ends it (what a dp_mdp release
        counts without noise, read with "ends": "terminal"):
        P(s' | s,a) = n(s,a,s') / N.
    A pair with fewer than min_steps steps (by default: never visited)
    ends the stay with reward -1, as dp_mdp_value's pessimistic pairs."""
    SA = N_STATES * N_ACTIONS
    n, rsum = [0] * SA, [0.0] * SA
    nxt = [dict() for _ in range(SA)]
    cut, start = [0] * SA, [0] * N_STATES
    stays = 0
    for i, (e, t, s, a, r) in enumerate(rows):
        j = s * N_ACTIONS + a
        n[j] += 1
        rsum[j] += r
        if i == 0 or rows[i - 1][0] != e:
            start[s] += 1
            stays += 1
        last = i + 1 == len(rows) or rows[i + 1][0] != e
        if not last:
            s2 = rows[i + 1][2]
            nxt[j][s2] = nxt[j].get(s2, 0) + 1
        elif t == HORIZON - 1 and r == 0:
            cut[j] += 1
    reward, trans = [], []
    for j in range(SA):
        if n[j] < max(1, min_steps):
            reward.append(-1.0)
            trans.append([])
            continue
        reward.append(rsum[j] / n[j])
        seen = sum(nxt[j].values())
        if censoring == "known":
            ended = n[j] - seen - cut[j]  # the outcomes
            go = 1 - ended / n[j]
            trans.append(sorted((s2, go * c / seen) for s2, c in nxt[j].items()) if seen else [])
        else:
            trans.append(sorted((s2, c / n[j]) for s2, c in nxt[j].items()))
    return Model(reward, trans, [c / stays for c in start])


# ---- the log ---------------------------------------------------------------

def _cum(pairs):
    cum, acc = [], 0.0
    for o, p in pairs:
        if p > 0:
            acc += p
            cum.append((acc, o))
    return cum


def _draw(cum, u):
    for acc, o in cum:
        if u < acc:
            return o
    return cum[-1][1]


class Simulator:
    """Samples stays from the dynamics with a seeded random.Random."""

    def __init__(self):
        self.table = []
        for s in range(N_STATES):
            for a in range(N_ACTIONS):
                p_dis, p_death, nxt = dynamics(s, a)
                self.table.append(_cum([(DISCHARGE, p_dis), (DEATH, p_death)] + nxt))
        self.start = _cum(list(enumerate(start_distribution())))

    def stays(self, n, pol, seed, by_step=False):
        """n stays under pol (rows of probabilities; with by_step, a list of
        HORIZON such policies, pol[t] used at step t): yields
        (episode, [(t, state, action, reward), ...]), episodes 0..n-1."""
        rng = random.Random(seed)
        steps = pol if by_step else [pol] * HORIZON
        tables = {}
        cums = [tables.setdefault(id(p), [_cum(list(enumerate(row))) for row in p])
                for p in steps]
        for e in range(n):
            s = _draw(self.start, rng.random())
            rows = []
            for t in range(HORIZON):
                a = _draw(cums[t][s], rng.random())
                o = _draw(self.table[s * N_ACTIONS + a], rng.random())
                if o == DISCHARGE or o == DEATH:
                    rows.append((t, s, a, 1.0 if o == DISCHARGE else -1.0))
                    break
                rows.append((t, s, a, 0.0))
                s = o
            yield e, rows

    def log(self, n, seed):
        """The clinicians' log: rows (episode, t, state, action, reward)."""
        return [(e, t, s, a, r) for e, rows in self.stays(n, behaviour(), seed)
                for t, s, a, r in rows]


def write_db(con, rows, table="steps"):
    con.execute(f"DROP TABLE IF EXISTS {table}")
    con.execute(f"CREATE TABLE {table}(episode INTEGER, t INTEGER, state INTEGER, "
                f"action INTEGER, reward REAL)")
    con.executemany(f"INSERT INTO {table} VALUES (?, ?, ?, ?, ?)", rows)
    con.commit()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--stays", type=int, default=20000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--db", help="write table steps into this SQLite database")
    ap.add_argument("--csv", help="write the log as CSV (with a header)")
    ap.add_argument("--truth", action="store_true", help="print the exact values as JSON")
    a = ap.parse_args()
    if a.truth:
        print(json.dumps(truth(), indent=2))
    if a.db or a.csv:
        rows = Simulator().log(a.stays, a.seed)
        if a.db:
            con = sqlite3.connect(a.db)
            write_db(con, rows)
            con.close()
        if a.csv:
            with open(a.csv, "w", newline="") as f:
                w = csv.writer(f)
                w.writerow(["episode", "t", "state", "action", "reward"])
                w.writerows((e, t, s, act, f"{r:g}") for e, t, s, act, r in rows)
        print(f"{len(rows)} steps of {a.stays} stays (seed {a.seed})")


if __name__ == "__main__":
    main()
