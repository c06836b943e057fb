"""The ICU model task (samples/icu_model/): its exact values can be trusted.

The values of the clinicians' policy, of the two rules and of the optimum
(a policy that changes with the steps left), computed by backward
induction over the simulator's dynamics, are each within 4.5 standard
errors of the mean return of simulated stays under that policy (fixed
seeds, so a pass is not luck of a draw; 4.5 standard errors of a
normal mean are exceeded with probability 7e-6); the same for the
clinicians' shares of cut and discharged stays and their mean number of
steps, which depend on the 20-step cut.  A forward computation (the state
distribution step by step) gives the same values as the backward one.
The dynamics are distributions with 2 or 3 next states per pair, the
README's table is the computed one, the log's format is the stated one
(and the command line writes the same log to SQLite and CSV), the log's
transition frequencies match the dynamics within 5 binomial standard
deviations, and the tabular model of a small hand-made log is the one the
docstring states."""
import csv
import math
import os
import re
import sqlite3
import subprocess
import sys
import tempfile

from harness import check, run

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SAMPLE = os.path.join(ROOT, "samples", "icu_model")
sys.path.insert(0, SAMPLE)
sys.dont_write_bytecode = True
import icu_model as sim  # noqa: E402

Z = 4.5
TRUTH = sim.truth()
SIM = sim.Simulator()
LOG = SIM.log(40000, 7)  # the clinicians, 40,000 stays


def stays_of(rows):
    out = {}
    for e, t, s, a, r in rows:
        out.setdefault(e, []).append((t, s, a, r))
    return list(out.values())


def within(mean, sd, n, exact, name):
    bound = Z * sd / math.sqrt(n)
    return check(abs(mean - exact) <= bound, name,
                 f"Monte Carlo {mean:.5f} (n {n}, bound {bound:.5f}), exact {exact:.5f}")


def mc(returns):
    n = len(returns)
    m = sum(returns) / n
    return m, math.sqrt(sum((x - m) ** 2 for x in returns) / (n - 1)), n


def test_dynamics():
    check(sim.N_STATES == 1440 and sim.N_ACTIONS == 8, "1,440 states, 8 actions")
    bad, nexts, outcomes = [], set(), set()
    for s in range(sim.N_STATES):
        sev, inf, circ, resp, frail = sim.decode(s)
        if sim.encode(sev, inf, circ, resp, frail) != s:
            bad.append(("encode", s))
        for a in range(sim.N_ACTIONS):
            p_dis, p_death, nxt = sim.dynamics(s, a)
            ps = [p_dis, p_death] + [p for _, p in nxt]
            if min(ps) < 0 or abs(sum(ps) - 1) > 1e-12 or min(p for _, p in nxt) <= 0:
                bad.append((s, a, ps))
            if len({s2 for s2, _ in nxt}) != len(nxt) or not all(0 <= s2 < sim.N_STATES for s2, _ in nxt):
                bad.append((s, a, nxt))
            allowed = sev <= 2 and inf <= 1 and circ == 0 and resp == 0 and not a & 6
            if (p_dis > 0) != allowed:
                bad.append((s, a, "discharge", p_dis))
            if any(sim.decode(s2)[4] != frail for s2, _ in nxt):
                bad.append((s, a, "frailty changed"))
            nexts.add(len(nxt))
            outcomes.add(len(nxt) + (p_dis > 0) + (p_death > 0))
    check(not bad, "every (state, action) is a distribution over distinct states and two outcomes, "
          "discharge only where allowed, frailty fixed", bad[:5])
    check(nexts == {2, 3} and outcomes == {3, 4, 5}, "2 or 3 next states, 3 to 5 outcomes a pair",
          (nexts, outcomes))
    start = sim.start_distribution()
    check(abs(sum(start) - 1) < 1e-12 and min(start) >= 0, "the start distribution sums to 1")


def test_values_against_monte_carlo():
    """Each policy's exact value against the mean return of its stays."""
    returns = [sum(r for *_, r in st) for st in stays_of(LOG)]
    within(*mc(returns), TRUTH["behaviour"], "behaviour: exact value = mean return of 40,000 stays")
    for k, name in enumerate(("treat_all", "cautious")):
        pol = sim.RULES[name]()
        rets = [sum(r for *_, r in rows) for _, rows in SIM.stays(20000, pol, 100 + k)]
        within(*mc(rets), TRUTH[name], f"{name}: exact value = mean return of 20,000 stays")
    value, steps = sim.Model().optimum()
    check(value == TRUTH["optimum"], "truth()'s optimum is Model().optimum()")
    pol = [sim.deterministic(act) for act in steps]
    rets = [sum(r for *_, r in rows) for _, rows in SIM.stays(20000, pol, 200, by_step=True)]
    within(*mc(rets), TRUTH["optimum"], "optimum: exact value = mean return of 20,000 stays under "
           "its step-by-step policy")
    first = sim.deterministic(steps[0])
    rets = [sum(r for *_, r in rows) for _, rows in SIM.stays(20000, first, 300)]
    within(*mc(rets), TRUTH["optimum_first_step_rule"], "the optimum's first-step rule: exact value "
           "= mean return of 20,000 stays")
    check(TRUTH["optimum"] >= max(TRUTH[k] for k in ("behaviour", "treat_all", "cautious",
                                                      "optimum_first_step_rule")),
          "the optimum is at least every rule's value")


def test_censoring_against_monte_carlo():
    """The 20-step cut: shares of cut and discharged stays, steps a stay."""
    st = stays_of(LOG)
    cut = [1.0 if len(x) == sim.HORIZON and x[-1][3] == 0 else 0.0 for x in st]
    dis = [1.0 if x[-1][3] == 1 else 0.0 for x in st]
    within(*mc(cut), TRUTH["behaviour_censored"], "share of stays cut at 20 steps")
    within(*mc(dis), TRUTH["behaviour_discharged"], "share of stays discharged")
    within(*mc([float(len(x)) for x in st]), TRUTH["behaviour_mean_steps"], "steps a stay")
    check(0.30 <= TRUTH["behaviour_censored"] <= 0.45, "30% to 45% of the clinicians' stays are cut",
          TRUTH["behaviour_censored"])


def test_forward_equals_backward():
    """V = sum_t sum_s d_t(s) sum_a pi(a|s) r(s,a), d_t the state
    distribution at step t, against backward induction."""
    m = sim.Model()
    for name, f in sim.RULES.items():
        pol = f()
        occ = m.occupancy(pol)
        fwd = sum(o * r for o, r in zip(occ, m.reward))
        check(abs(fwd - TRUTH[name]) < 1e-12, f"{name}: forward value = backward value",
              (fwd, TRUTH[name]))


def test_readme_table():
    text = open(os.path.join(SAMPLE, "README.md"), encoding="utf-8").read()
    rows = {"`behaviour`": "behaviour", "`treat_all`": "treat_all", "`cautious`": "cautious",
            "the optimum (": "optimum", "the optimum's first-step rule": "optimum_first_step_rule"}
    for label, key in rows.items():
        m = re.search(r"^\| " + re.escape(label) + r"[^|]*\| (-?[0-9.]+) \|$", text, re.M)
        check(m is not None and m.group(1) == f"{TRUTH[key]:.4f}", f"README: {key} {TRUTH[key]:.4f}",
              m and m.group(0))
    died = TRUTH["behaviour_discharged"] - TRUTH["behaviour"]
    want = (f"{TRUTH['behaviour_discharged']:.1%} of the stays end in discharge, {died:.1%} in death\n"
            f"and {TRUTH['behaviour_censored']:.1%} are cut; a stay has "
            f"{TRUTH['behaviour_mean_steps']:.2f} logged steps")
    check(want in text, "README: the shares of the outcomes and the steps a stay", want)


def test_log_format():
    st = stays_of(LOG)
    bad = []
    for x in st:
        ts = [t for t, *_ in x]
        rs = [r for *_, r in x]
        if ts != list(range(len(x))) or len(x) > sim.HORIZON:
            bad.append(("t", x))
        if any(rs[:-1]) or rs[-1] not in (-1.0, 0.0, 1.0) or (len(x) < sim.HORIZON and rs[-1] == 0):
            bad.append(("reward", x))
    check(not bad, "stays: t = 0.., at most 20 rows, a reward only on the last row, every stay "
          "shorter than 20 rows ends in an outcome", bad[:2])


def test_log_frequencies():
    """Every pair with at least 100 steps whose next state is seen: each
    outcome's frequency within 5 binomial standard deviations."""
    seen, bad, pairs = {}, [], 0
    for x in stays_of(LOG):
        for i, (t, s, a, r) in enumerate(x):
            if i + 1 < len(x):
                o = x[i + 1][1]
            elif r != 0:
                o = "discharge" if r > 0 else "death"
            else:
                continue  # cut: the move is not seen
            seen.setdefault((s, a), {}).setdefault(o, 0)
            seen[(s, a)][o] += 1
    for (s, a), got in seen.items():
        p_dis, p_death, nxt = sim.dynamics(s, a)
        want = dict(nxt, discharge=p_dis, death=p_death)
        n = sum(got.values())
        if any(o not in want or want[o] == 0 for o in got):
            bad.append((s, a, "impossible", got))
        if n < 100:
            continue
        pairs += 1
        for o, p in want.items():
            k = got.get(o, 0)
            if abs(k - n * p) > 5 * math.sqrt(n * p * (1 - p)) + 1e-9:
                bad.append((s, a, o, k, n, p))
    check(not bad and pairs > 500, f"log: outcome frequencies of {pairs} pairs within 5 binomial "
          "standard deviations of the dynamics, no impossible move", bad[:5])


def test_command_line():
    d = tempfile.mkdtemp(prefix="dprl-icu-")
    db, out = os.path.join(d, "icu.db"), os.path.join(d, "icu.csv")
    script = os.path.join(SAMPLE, "icu_model.py")
    p = subprocess.run([sys.executable, script, "--stays", "300", "--seed", "5", "--db", db, "--csv", out],
                       capture_output=True, text=True, timeout=300)
    check(p.returncode == 0 and "of 300 stays (seed 5)" in p.stdout, "icu_model.py --db --csv runs",
          p.stdout + p.stderr)
    con = sqlite3.connect(db)
    cols = [r[1] for r in con.execute("PRAGMA table_info(steps)")]
    check(cols == ["episode", "t", "state", "action", "reward"], "table steps(episode, t, state, action, "
          "reward)", cols)
    rows = con.execute("SELECT * FROM steps ORDER BY episode, t").fetchall()
    check(rows == [tuple(r) for r in SIM.log(300, 5)], "the database holds Simulator().log(300, 5)")
    with open(out, newline="") as f:
        got = list(csv.reader(f))
    typed = [(int(e), int(t), int(s), int(a), float(r)) for e, t, s, a, r in got[1:]]
    check(got[0] == cols and typed == rows, "the CSV holds the same rows")
    check(SIM.log(300, 6) != rows, "another seed, another log")
    p = subprocess.run([sys.executable, script, "--truth"], capture_output=True, text=True, timeout=300)
    check(p.returncode == 0 and '"behaviour": ' + repr(TRUTH["behaviour"]) in p.stdout,
          "icu_model.py --truth prints the exact values", p.stdout[:300])


def test_tabular():
    """A hand-made log: two stays in pair j0 = (s0, 0), one cut."""
    s0, s1 = sim.encode(5, 1, 0, 0, 0), sim.encode(4, 1, 0, 0, 0)
    j0, j1 = s0 * 8, s1 * 8
    cut = [(0, t, s0 if t % 2 == 0 else s1, 0, 0.0) for t in range(sim.HORIZON)]  # s0, s1, s0, ...
    dead = [(1, 0, s0, 0, 0.0), (1, 1, s0, 0, -1.0)]
    rows = cut + dead
    m = sim.tabular(rows, "known")
    # j0: 10 + 2 steps; next seen: s1 x10 (cut), s0 x1 (dead); 1 death; j1: 10 steps, 9 to s0, 1 cut
    check(abs(m.reward[j0] + 1 / 12) < 1e-15 and abs(m.reward[j1]) < 1e-15, "tabular: mean rewards")
    want0 = sorted([(s0, (1 - 1 / 12) / 11), (s1, (1 - 1 / 12) * 10 / 11)])
    check(len(m.trans[j0]) == 2 and all(a == b and abs(p - q) < 1e-15
                                        for (a, p), (b, q) in zip(m.trans[j0], want0)),
          "tabular, censoring known: the outcome from every step, the next state from the seen ones",
          m.trans[j0])
    check(m.trans[j1] == [(s0, 1.0)], "tabular, censoring known: a cut step is not an end", m.trans[j1])
    check(m.reward[j0 + 1] == -1.0 and m.trans[j0 + 1] == [], "tabular: an unvisited pair ends with -1")
    check(m.start[s0] == 1.0, "tabular: the start distribution")
    e = sim.tabular(rows, "as ending")
    check(e.trans[j1] == [(s0, 0.9)] and sorted(e.trans[j0]) == sorted([(s0, 1 / 12), (s1, 10 / 12)]),
          "tabular, as ending: every last step an end", (e.trans[j0], e.trans[j1]))
    k = sim.tabular(rows, "known", min_steps=11)
    check(k.reward[j1] == -1.0 and k.trans[j1] == [] and k.trans[j0] == m.trans[j0],
          "tabular, min_steps: pairs with fewer steps are pessimistic")


if __name__ == "__main__":
    run([test_dynamics, test_values_against_monte_carlo, test_censoring_against_monte_carlo,
         test_forward_equals_backward, test_readme_table, test_log_format, test_log_frequencies,
         test_command_line, test_tabular])
