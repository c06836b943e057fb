"""make utility: what the reward-function relation allows on the paper's
Q-learning task, and what dp_q_learn gets (docs/q-learning.md, "What is
inherent, what is this algorithm").

The task (Wang & Hegde 2019, E.1): states in [0, 1], uniform start, two
actions moving by U[0, 1/4] left or right (clipped), 50 steps, reward
r = 0.5 - |s' - 0.5|.  Its mirror r' = |s' - 0.5| is in [0, 0.5] too and
r + r' = 0.5 at every step, so G_r(pi) + G_r'(pi) = 25 for every policy pi;
under the relation of dp_q_learn (any two reward functions in [rmin, rmax],
or the paper's ||r - r'||_inf <= 1) the log and its mirror are neighbours.

Columns, per epsilon (delta 1e-5):
- cap: the most an (epsilon, delta)-DP release can guarantee in expected
  return on BOTH the task and its mirror.  Every policy's pair of returns
  is (g, 25 - g) with g in [g_min, g_max] (the two tasks' optima, by dynamic
  programming), so a release is, after post-processing, a choice between
  the two optimal policies, with P(task's) = p on the log and q on the
  mirror log; the cap is max over feasible (p, q) of min(g_min + p W,
  25 - g_max + (1 - q) W), W = g_max - g_min.  Exact (a 2-variable LP).
- randomized response: the comparison u_middle > u_edges (below) of two
  policies fixed in advance, "steer to the middle" and "steer to the
  edges", reported truthfully with probability e^eps / (1 + e^eps).  Every
  two logs are neighbours here, so this is epsilon-DP whatever the
  comparison; it earns (the comparison being right on the log) the cap's
  value at delta = 0 for a release that is right with the same odds on
  both logs.
- exponential mechanism: the same choice by the exponential mechanism on
  u_i = the mean logged reward of the transitions whose action is the one
  policy i takes there (each u_i moves by at most rmax - rmin = 0.5
  between neighbours).
  Both selections' returns are exact given the log; on the mirror log each
  earns more in the mirror than it does here (its optimum is higher).
- dp_q_learn: the greedy policy of seeded releases at the paper's settings
  on the same log (T = 50 n, B = 64, lr 3e-4, 21 tents, k 200), its return
  by dynamic programming; mean over the releases and how many beat random.

Returns are exact expectations over the task (dynamic programming on a grid
of 2001 states), so the table depends only on the log and the seeds.  A
seeded release is NOT private: seeds only make the table reproducible.

usage: DPRL_SO=./dprl.so python3 tests/utility/q_impossibility.py [--quick]
  (--quick, or DPRL_QUICK=1: a 100-episode log, 2 releases, a few seconds)
"""
import json
import math
import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from utility import connect, paper_log, table_rows  # noqa: E402

QUICK = "--quick" in sys.argv or os.environ.get("DPRL_QUICK") == "1"
EPISODES = 100 if QUICK else 1000
SEEDS = 2 if QUICK else 20
DELTA = 1e-5
EPSILONS = (0.9, 3, 10) if QUICK else (0.9, 1, 3, 10, 100, 1000, 1e4)
NG = 401 if QUICK else 2001  # grid of [0, 1]; a move of 1/4 spans (NG - 1)/4 steps
HORIZON = 50


def task(s):
    return 0.5 - abs(s - 0.5)


def mirror(s):
    return abs(s - 0.5)


# ---- dynamic programming on the grid ---------------------------------------

def step_values(h):
    """E[h(s')] after each action from each node: 4 int_0^{1/4} h(clip(s -+ u)) du
    of the piecewise-linear interpolant of h (exact by cumulative trapezoids;
    s -+ 1/4 falls on a node, and the clipped mass sits at the edge)."""
    dx, w = 1.0 / (NG - 1), (NG - 1) // 4
    F = [0.0] * NG
    for i in range(1, NG):
        F[i] = F[i - 1] + 0.5 * dx * (h[i] + h[i - 1])
    left, right = [0.0] * NG, [0.0] * NG
    for i in range(NG):
        hi, lo = i + w, i - w
        right[i] = 4 * (F[hi] - F[i]) if hi <= NG - 1 else 4 * (F[NG - 1] - F[i] + (hi - NG + 1) * dx * h[NG - 1])
        left[i] = 4 * (F[i] - F[lo]) if lo >= 0 else 4 * (F[i] + (-lo) * dx * h[0])
    return left, right


def expected_return(reward, choose):
    """E[sum of the 50 rewards] from a uniform start; choose(i, left, right)
    gives the value kept at node i (max: the optimum; a fixed action or the
    mean: a policy)."""
    r = [reward(i / (NG - 1)) for i in range(NG)]
    V = [0.0] * NG
    for _ in range(HORIZON):
        left, right = step_values([a + b for a, b in zip(r, V)])
        V = [choose(i, left[i], right[i]) for i in range(NG)]
    return sum(0.5 * (V[i] + V[i + 1]) for i in range(NG - 1)) / (NG - 1)


def policy_return(reward, act):
    """A stationary policy act(s) in {0 (left), 1 (right)}."""
    acts = [act(i / (NG - 1)) for i in range(NG)]
    return expected_return(reward, lambda i, l, r: r if acts[i] else l)


# ---- the cap: a 2-variable linear program -----------------------------------

def cap(eps, g_min, g_max):
    W, e = g_max - g_min, math.exp(min(eps, 700.0))  # beyond, e^eps only loosens the constraints

    def t(q):
        p = min(1.0, e * q + DELTA, 1 - max(0.0, 1 - q - DELTA) / e)
        return min(g_min + p * W, HORIZON * 0.5 - g_max + (1 - q) * W)

    # t is concave and piecewise linear in q: a dense scan, then a golden search around its best
    best = max((i / 4000 for i in range(4001)), key=t)
    lo, hi = max(0.0, best - 1 / 4000), min(1.0, best + 1 / 4000)
    for _ in range(100):
        m1, m2 = lo + (hi - lo) * 0.382, lo + (hi - lo) * 0.618
        if t(m1) < t(m2):
            lo = m1
        else:
            hi = m2
    return t((lo + hi) / 2)


# ---- two private selections between two policies fixed in advance -----------

def middle(s):
    return 1 if s < 0.5 else 0


def edges(s):
    return 0 if s < 0.5 else 1


def scores(log, reward_of):
    """u_i: the mean reward of the logged transitions whose action is pi_i's."""
    u = []
    for pol in (middle, edges):
        rs = [reward_of(s2) for (_, _, s, a, _, s2) in log if a == pol(s)]
        u.append(sum(rs) / len(rs))
    return u


def randomized_response(u, eps, returns):
    """returns = (G(middle), G(edges)); the truthful answer with odds e^eps : 1."""
    p = 1 / (1 + math.exp(-min(eps, 700.0)))
    right, wrong = (returns[0], returns[1]) if u[0] > u[1] else (returns[1], returns[0])
    return p * right + (1 - p) * wrong


def exponential(u, eps, returns):
    """P(middle) by the exponential mechanism with sensitivity 0.5."""
    x = eps * (u[0] - u[1]) / (2 * 0.5)
    p = 1 / (1 + math.exp(-x)) if x > -700 else 0.0
    return p * returns[0] + (1 - p) * returns[1]


# ---- dp_q_learn at the paper's settings --------------------------------------

def greedy_return(con, model):
    """The greedy policy of a release read on 201 states, by dynamic programming."""
    grid = []
    for i in range(201):
        q0, q1 = con.execute("SELECT dp_q_value(?1, ?2, 0), dp_q_value(?1, ?2, 1)", (model, i / 200)).fetchone()
        grid.append(1 if q1 > q0 else 0)
    return policy_return(task, lambda s: grid[round(s * 200)])


def q_learn(con, eps, n):
    rets = []
    for seed in range(1, SEEDS + 1):
        o = {"n_actions": 2, "gamma": 0.9, "rmin": 0, "rmax": 0.5, "lr": 3e-4, "T": 50 * n, "B": 64, "K": 21,
             "k": 200, "epsilon": eps, "delta": DELTA, "seed": seed}
        m = con.execute("SELECT dp_q_learn(state, action, reward, s_next, ?) FROM task",
                        (json.dumps(o),)).fetchone()[0]
        rets.append(greedy_return(con, m))
    return rets


def main():
    g_max = expected_return(task, lambda i, l, r: max(l, r))
    m_max = expected_return(mirror, lambda i, l, r: max(l, r))
    g_min = HORIZON * 0.5 - m_max
    g_rand = expected_return(task, lambda i, l, r: 0.5 * (l + r))
    g_mid, g_edge = policy_return(task, middle), policy_return(task, edges)
    log = paper_log(EPISODES)
    con = connect()
    con.execute("CREATE TABLE task(episode, t, state, action, reward, s_next)")
    con.executemany("INSERT INTO task VALUES (?, ?, ?, ?, ?, ?)", log)
    u = scores(log, task)
    rows = []
    for eps in EPSILONS:
        rets = q_learn(con, eps, EPISODES)
        rows.append([f"{eps:g}", f"{cap(eps, g_min, g_max):.1f}",
                     f"{randomized_response(u, eps, (g_mid, g_edge)):.1f}",
                     f"{exponential(u, eps, (g_mid, g_edge)):.1f}",
                     f"{sum(rets) / len(rets):.1f}", f"{sum(r > g_rand for r in rets)}/{SEEDS}"])
    table_rows(f"The paper's task, whose log and mirror log (r' = 0.5 - r) are neighbours; delta {DELTA:g}, "
               f"a log of {EPISODES} episodes of a random policy; expected return of a 50-step episode "
               f"(optimum {g_max:.2f}, random {g_rand:.2f}, the mirror's optimal policy {g_min:.2f}; the "
               f"mirror's optimum {m_max:.2f}). cap: the most any (epsilon, delta)-DP release can earn on "
               f"both; randomized response and exponential mechanism: epsilon-DP choices between 'steer to "
               f"the middle' ({g_mid:.2f}) and 'steer to the edges' ({g_edge:.2f}); dp_q_learn: its greedy "
               f"policy, {SEEDS} seeded releases",
               ["epsilon", "cap (task and mirror)", "randomized response", "exponential mechanism",
                "dp_q_learn", "beat random"], rows)


if __name__ == "__main__":
    main()
