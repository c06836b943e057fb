"""dp_mdp, the patient-level model release (ALGORITHMS.md §13): its keys,
the statistics against a reference written here from the definitions
(first H steps by t, the terminal column, clamped and centred rewards,
tent features), sigma against an independent bisection of the analytic
Gaussian, seeded reproducibility, errors that name the argument and the
value, the ledger (charged once with unit "episode", refused for another
unit, one row for a GROUP BY over a partition), and neighbouring-episode
attacks: over many seeded releases of two logs that differ by adding one
episode, or by replacing one, the best linear test separates them by no
more than the claimed mu = sensitivity / sigma."""
import json
import math
import os
import sqlite3
import tempfile

from harness import check, check_close, check_error, connect, interrupted, run, sized, sql_error

MDP = "SELECT dp_mdp(episode, t, state, action, reward, ?) FROM steps"
BASE = {"n_states": 2, "n_actions": 2, "gamma": 0.9, "rmin": 0, "rmax": 2, "epsilon": 1,
        "delta": 1e-5, "horizon": 2, "clip": "none"}
# episode 5 ends after 2 steps; 9 is cut after 2 (its 3rd state is the last
# transition's next state); 2 ends at once; rewards outside [0, 2] clamped
ROWS = [(5, 10, 0, 1, 2.0), (5, 11, 1, 0, 0.0), (9, 0, 1, 1, 1.5), (9, 4, 1, 1, 3.0),
        (9, 7, 0, 0, 0.0), (2, -3, 0, 0, -1.0)]
CONTRACT = {"mechanism", "private", "unit", "n_states", "n_actions", "gamma", "rmin", "rmax",
            "epsilon", "delta", "horizon", "clip", "sensitivity", "sigma", "reward_sigma",
            "reward_center", "start", "counts", "reward_sums", "features"}
EXTRA = {"neighbours", "grid", "rho"}
EXACT = {"episodes", "clipped", "exact_start", "exact_counts", "exact_reward_sums"}


def table(con, rows, name="steps", extra=""):
    con.execute(f"CREATE TABLE {name}(episode, t, state, action, reward{extra})")
    n = 5 + (1 if extra else 0)
    con.executemany(f"INSERT INTO {name} VALUES ({','.join('?' * n)})", rows)


def release(con, o, sql=MDP):
    return json.loads(con.execute(sql, (json.dumps(o),)).fetchone()[0])


def tent_phi(x, K, lo, hi):
    x = min(max(x, lo), hi)
    h = (hi - lo) / (K - 1)
    return [max(0.0, 1 - abs(x - (lo + k * h)) / h) for k in range(K)]


def reference(rows, o):
    """start, counts, reward sums from the definitions (ALGORITHMS.md §13)."""
    S, A, H = o["n_states"], o["n_actions"], o.get("horizon")
    lo, hi = o["rmin"], o["rmax"]
    tent = isinstance(o.get("features"), dict)
    phi = ((lambda x: tent_phi(x, S, o["features"]["low"], o["features"]["high"])) if tent
           else (lambda s: [1.0 if k == s else 0.0 for k in range(S)]))
    start = [0.0] * S
    counts = [[[0.0] * (S + 1) for _ in range(A)] for _ in range(S)]
    rsum = [[0.0] * A for _ in range(S)]
    episodes = {}
    for e, t, s, a, r in rows:
        episodes.setdefault(e, []).append((t, s, a, r))
    for steps in episodes.values():
        steps.sort()
        L = len(steps) if H is None else min(len(steps), H)
        w0 = phi(steps[0][1])
        for k in range(S):
            start[k] += w0[k]
        for i in range(L):
            _, s, a, r = steps[i]
            w = phi(s)
            nxt = phi(steps[i + 1][1]) + [0.0] if i + 1 < len(steps) else [0.0] * S + [1.0]
            for k in range(S):
                for j in range(S + 1):
                    counts[k][a][j] += w[k] * nxt[j]
                rsum[k][a] += w[k] * (min(max(r, lo), hi) - (lo + hi) / 2)
    return start, counts, rsum


def gauss_sigma1(eps, delta):
    """sigma of the analytic Gaussian for sensitivity 1 (Balle & Wang 2018, Theorem 8)."""
    Phi = lambda x: 0.5 * math.erfc(-x / math.sqrt(2))
    d = lambda s: Phi(1 / (2 * s) - eps * s) - math.exp(eps) * Phi(-1 / (2 * s) - eps * s)
    lo, hi = 1e-3, 1e3
    for _ in range(300):
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if d(mid) <= delta else (mid, hi)
    return hi


def flat(r, prefix=""):
    b = (r["rmax"] - r["rmin"]) / 2
    out = list(r[prefix + "start"])
    for s in r[prefix + "counts"]:
        for a in s:
            out.extend(a)
    for s in r[prefix + "reward_sums"]:
        out.extend(x / b for x in s)
    return out


def test_keys_and_statistics():
    con = connect()
    table(con, ROWS)
    r = release(con, BASE)
    check(set(r) == CONTRACT | EXTRA, "a private release: the contract's keys and grid, rho, "
          "neighbours", sorted(set(r) ^ (CONTRACT | EXTRA)))
    check(r["mechanism"] == "dp_mdp" and r["private"] is True and "seeded" not in r
          and r["unit"] == "episode" and r["features"] == "tabular" and r["horizon"] == 2
          and r["clip"] is None, "mechanism, private, unit, features, horizon, clip", r)
    check(len(r["start"]) == 2 and len(r["counts"]) == 2 and len(r["counts"][0]) == 2
          and len(r["counts"][0][0]) == 3 and len(r["reward_sums"]) == 2
          and len(r["reward_sums"][1]) == 2,
          "shapes: start [S], counts [S][A][S+1], reward_sums [S][A]")
    d = release(con, dict(BASE, release="diagnostic", seed=4))
    check(set(d) == CONTRACT | EXTRA | EXACT | {"seeded"} and d["private"] is False,
          "diagnostic: the exact statistics too, not private", sorted(set(d) ^ (CONTRACT | EXTRA)))
    start, counts, rsum = reference(ROWS, BASE)
    check(d["exact_start"] == start and d["exact_counts"] == counts,
          "exact start and counts = the definitions (first H steps by t, terminal column)",
          (d["exact_start"], d["exact_counts"], start, counts))
    check_close(d["exact_reward_sums"], rsum, "exact reward sums = sum of clamp(r) - c",
                abs_=1e-6)
    check(d["episodes"] == 3 and d["clipped"] == 0, "3 episodes, none clipped (exact path)", d)
    # sigma, independently: both relations, the larger is replacement's,
    # Delta = sqrt(4 H^2 + H + 3) + sqrt(2 touched) g, g = 2^-12 here
    check(r["neighbours"] == "add, remove or replace one episode", "neighbours", r["neighbours"])
    s1 = gauss_sigma1(1, 1e-5)
    touched = 1 + 2 + 2  # start, H counts, H rewards
    sens = math.sqrt(4 * 2 ** 2 + 2 + 3) + math.sqrt(2 * touched) * 2 ** -12
    check_close(r["sensitivity"], sens, "sensitivity = sqrt(4 H^2 + H + 3) + sqrt(2 touched) g",
                rel=1e-15)
    check(r["grid"] == 2 ** -12 and sens * s1 * (1 - 1e-9) <= r["sigma"] < sens * s1 + r["grid"]
          and (r["sigma"] / r["grid"]).is_integer(),
          "sigma = sensitivity sigma1 (independent bisection), rounded up to the grid",
          (r["sigma"], sens * s1))
    check(r["reward_sigma"] == r["sigma"] * (2 - 0) / 2 and r["reward_center"] == 1,
          "reward_sigma = sigma (rmax - rmin)/2, reward_center = (rmin + rmax)/2", r)
    check_close(r["rho"], (r["sensitivity"] / r["sigma"]) ** 2 / 2, "rho = (Delta/sigma)^2 / 2",
                rel=1e-12)
    # the noise is on the grid, around the exact values
    check(all((x / r["grid"]).is_integer() for x in flat(d)), "every noisy entry is on the grid")
    # no rows: nothing to release
    check(con.execute("SELECT dp_mdp(episode, t, state, action, reward, ?) FROM steps "
                      "WHERE 0", (json.dumps(BASE),)).fetchone()[0] is None, "no rows: NULL")


def test_tent_and_clip():
    con = connect()
    rows = [(1, 0, 0.25, 0, 1.0), (1, 1, 0.9, 1, 0.0), (1, 2, 3.0, 0, 0.5),
            (2, 0, -1.0, 1, 1.0), (3, 0, 0.5, 0, 0.2), (3, 1, 0.5, 0, 0.2)]
    table(con, rows)
    o = dict(BASE, n_states=3, rmin=0, rmax=1, horizon=5,
             features={"tent": 3, "low": 0, "high": 1}, release="diagnostic", seed=1)
    d = release(con, o)
    start, counts, rsum = reference(rows, o)
    check(d["features"] == {"tent": 3, "low": 0, "high": 1} and d["n_states"] == 3,
          "tent: features and n_states = K", d["features"])
    check_close(d["exact_start"], start, "tent: start = sum of phi(s0)", abs_=1e-6)
    check_close([x for s in d["exact_counts"] for a in s for x in a],
                [x for s in counts for a in s for x in a],
                "tent: counts = sum of phi(s) (x) phi(s'), states clamped to [low, high]",
                abs_=1e-6)
    check_close([x for s in d["exact_reward_sums"] for x in s], [x for s in rsum for x in s],
                "tent: reward sums = sum of phi(s) (r - c)", abs_=1e-6)
    # a clip that binds: the long episode is scaled down to the clip
    con2 = connect()
    long_ = [(1, t, 0, 0, 2.0) for t in range(30)] + [(2, 0, 1, 1, 0.0)]
    table(con2, long_)
    no_h = {k: v for k, v in BASE.items() if k != "horizon"}
    d = release(con2, dict(no_h, clip=4, release="diagnostic", seed=1))
    v = flat(d, "exact_")
    # episode 1 alone: start 1, counts[0][0][0] = 29, [0][0][end] = 1, reward 30 (in b units)
    norm1 = math.sqrt(1 + 29 ** 2 + 1 + 30 ** 2)
    want = 4 * (1 - 2 ** -20) / norm1
    check(d["clip"] == 4 and d["horizon"] is None and d["clipped"] == 1
          and abs(d["exact_counts"][0][0][0] - 29 * want) < 1e-6
          and abs(d["exact_start"][1] - 1) < 1e-12,
          "clip 4: the 30-step episode scaled to norm 4, the short one left whole", d["exact_counts"])
    check(d["sensitivity"] > 8 and d["sensitivity"] < 8 * (1 + 1e-3),
          "clip without a horizon: sensitivity = 2 clip (replacement) + sqrt(dim) g",
          d["sensitivity"])


def test_seeded():
    con = connect()
    table(con, ROWS)
    a = con.execute(MDP, (json.dumps(dict(BASE, seed=7)),)).fetchone()[0]
    b = con.execute(MDP, (json.dumps(dict(BASE, seed=7)),)).fetchone()[0]
    c = con.execute(MDP, (json.dumps(dict(BASE, seed=8)),)).fetchone()[0]
    check(a == b and a != c, "the same seed gives the same release, another seed another")
    r = json.loads(a)
    check(r["private"] is False and r["seeded"] is True, "seeded: private false, seeded true", r)
    u1, u2 = release(con, BASE), release(con, BASE)
    check(u1["start"] != u2["start"], "unseeded: fresh noise every call")
    # rows in another order, the same seeded release
    con2 = connect()
    table(con2, list(reversed(ROWS)))
    check(con2.execute(MDP, (json.dumps(dict(BASE, seed=7)),)).fetchone()[0] == a,
          "the seeded release does not depend on the order of the rows")


def test_errors():
    con = connect()
    table(con, ROWS)
    o = json.dumps(BASE)
    cases = [
        ("state out of range", "SELECT dp_mdp(episode, t, state + 1, action, reward, ?) FROM steps",
         "dp_mdp: state must be in 0..n_states-1 = 0..1, got 2 (row with episode 5, t 11)"),
        ("action out of range", "SELECT dp_mdp(episode, t, state, action - 1, reward, ?) FROM steps",
         "dp_mdp: action must be in 0..n_actions-1 = 0..1, got -1 (row with episode 5, t 11)"),
        ("a NULL action", "SELECT dp_mdp(episode, t, state, NULL, reward, ?) FROM steps",
         "dp_mdp: action must be an integer, got NULL (row with episode 5, t 10)"),
        ("a reward that is not finite", "SELECT dp_mdp(episode, t, state, action, 1e999, ?) FROM steps",
         "dp_mdp: reward must be a finite number, got inf (row with episode 5, t 10)"),
        ("a duplicate (episode, t)", "SELECT dp_mdp(episode, 0, state, action, reward, ?) FROM steps",
         "dp_mdp: duplicate (episode, t) = (5, 0)"),
    ]
    for name, sql, want in cases:
        msg = sql_error(con, sql, (o,))
        check(msg is not None and msg.startswith(want), name, f"got  {msg}\nwant {want}")
    bad = [
        ("missing bounds", {k: v for k, v in BASE.items() if k != "rmax"},
         "dp_mdp: option rmax is required"),
        ("no horizon, no clip", {k: v for k, v in BASE.items() if k not in ("horizon", "clip")},
         "dp_mdp: option horizon (only the first H steps of an episode count) or option clip"),
        ("clip none without a horizon", {k: v for k, v in BASE.items() if k != "horizon"},
         "dp_mdp: option clip \"none\" needs option horizon (only the first H steps of an "
         "episode count)"),
        ("gamma", dict(BASE, gamma=-0.1), "dp_mdp: option gamma must be in [0, 1], got -0.1"),
        ("horizon 0", dict(BASE, horizon=0), "dp_mdp: option horizon must be in [1, "),
        ("tent K vs n_states", dict(BASE, features={"tent": 4, "low": 0, "high": 1}),
         "dp_mdp: option n_states = 2 must equal features.tent = 4"),
        ("tent without high", dict(BASE, features={"tent": 2, "low": 0}),
         "dp_mdp: option features needs \"high\""),
        ("features of the wrong form", dict(BASE, features="linear"),
         "dp_mdp: option features must be \"tabular\", {\"aggregate\": k}, {\"map\": "
         "[g_0, ..., g_{R-1}]} or {\"tent\": K, \"low\": lo, \"high\": hi}, got \"linear\""),
        ("an unknown option", dict(BASE, horizn=3), "dp_mdp: unknown option \"horizn\""),
        ("release", dict(BASE, release="exact"), "dp_mdp: option release must be one of"),
    ]
    for name, opts, want in bad:
        msg = sql_error(con, MDP, (json.dumps(opts),))
        check(msg is not None and msg.startswith(want), name, f"got  {msg}\nwant {want}")
    # the result's size is checked from the options, before any row
    con.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, 1000000)
    msg = sql_error(con, MDP, (json.dumps(dict(BASE, n_states=100, n_actions=10, transitions="dense")),))
    check(msg is not None and "make a model of S + S A (S + 1) + S A = 102100 numbers" in msg
          and "SQLITE_LIMIT_LENGTH (1000000 bytes)" in msg,
          "a model too large for SQLITE_LIMIT_LENGTH: refused from the options", msg)
    msg2 = sql_error(con, MDP.replace("FROM steps", "FROM steps WHERE episode = 2"),
                     (json.dumps(dict(BASE, n_states=100, n_actions=10, transitions="dense")),))
    check(msg == msg2, "... with the same message whatever the rows", msg2)
    con.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, 1000000000)
    # tent: a state that is not a number
    msg = sql_error(con, "SELECT dp_mdp(episode, t, 'x', action, reward, ?) FROM steps",
                    (json.dumps(dict(BASE, features={"tent": 2, "low": 0, "high": 1})),))
    check(msg is not None and msg.startswith("dp_mdp: state must be a number, got text 'x'"),
          "tent: a state that is not a number", msg)
    msg = sql_error(con, "SELECT dp_mdp(episode, t, state, action, reward, "
                    "json_set(?, '$.seed', t)) FROM steps", (o,))
    check(msg == "dp_mdp: options must be the same for every row", "options that change", msg)


def budget(con, name, eps, delta, unit="episode", accountant="zcdp"):
    con.execute("SELECT dprl_budget(?, ?, ?, ?)",
                (name, eps, delta, json.dumps({"unit": unit, "accountant": accountant}))).fetchone()


def ledger(path, name):
    c = sqlite3.connect(path)
    r = c.execute("SELECT count(*), total(epsilon), total(rho) FROM dprl_ledger WHERE budget = ?",
                  (name,)).fetchone()
    c.close()
    return r


def test_budget():
    f = os.path.join(tempfile.mkdtemp(), "ledger.db")
    con = connect(f)
    con.isolation_level = None
    con.execute("PRAGMA journal_mode = wal")
    rows = [(e, t, (e + t) % 2, t % 2, 1.0 + e / 100, e % 4)  # each episode its own rows
            for e in range(40) for t in range(3)]
    table(con, rows, extra=", g")
    budget(con, "icu", 3, 1e-4)
    r = release(con, dict(BASE, budget="icu"))
    n, eps, rho = ledger(f, "icu")
    check(r["private"] is True and n == 1 and eps == 1 and abs(rho - r["rho"]) <= 1e-12 * rho,
          "charged once: one ledger row, epsilon 1, the release's rho", (n, eps, rho, r["rho"]))
    unit = sql_error(con, MDP, (json.dumps(dict(BASE, budget="icu")),))
    check(unit is None, "a second release on the same budget", unit)
    budget(con, "experts", 3, 1e-4, unit="expert")
    msg = sql_error(con, MDP, (json.dumps(dict(BASE, budget="experts")),))
    check(msg is not None and "the budget protects one expert, and dp_mdp protects one episode" in msg
          and ledger(f, "experts")[0] == 0, "a budget of another unit: refused, nothing charged", msg)
    msg = sql_error(con, MDP, (json.dumps(dict(BASE, budget="icu", seed=1)),))
    check(msg is not None and "option seed makes this release not private" in msg,
          "seeded under a budget: refused", msg)
    msg = sql_error(con, MDP, (json.dumps(dict(BASE, budget="icu", release="diagnostic")),))
    check(msg is not None and 'option release ("diagnostic") makes this release not private' in msg,
          "diagnostic under a budget: refused", msg)
    # GROUP BY over a partition of the episodes (g is constant in each): one row
    budget(con, "study", 3, 1e-4, accountant="basic")
    got = con.execute("SELECT g, dp_mdp(episode, t, state, action, reward, ?) FROM steps GROUP BY g",
                      (json.dumps(dict(BASE, budget="study")),)).fetchall()
    check(len(got) == 4 and all(json.loads(v)["private"] for _, v in got)
          and ledger(f, "study")[:2] == (1, 1.0),
          "GROUP BY over 4 groups of episodes: 4 releases, one ledger row", ledger(f, "study"))
    # GROUP BY t is no partition of the episodes: refused at the second group
    msg = sql_error(con, "SELECT t, dp_mdp(episode, t, state, action, reward, ?) FROM steps "
                    "GROUP BY t", (json.dumps(dict(BASE, budget="study")),))
    check(msg is not None and "an episode appears in two groups" in msg,
          "GROUP BY t (episodes in several groups): refused", msg)


def attack(o, rows, x, y, norm2, what):
    """Logs D + x and D + y (y empty: removal).  The best linear test of the
    two Gaussian releases projects on the difference of the exact sums; its
    mean shift in units of its sd must stay within mu = sensitivity /
    sigma, up to the sampling error of the draws, and attain the
    difference's norm / sigma."""
    con, con2 = connect(), connect()
    table(con, rows + y)
    table(con2, rows + x)
    d0 = release(con, dict(o, release="diagnostic", seed=0))
    d1 = release(con2, dict(o, release="diagnostic", seed=0))
    v = [b - a for a, b in zip(flat(d0, "exact_"), flat(d1, "exact_"))]
    nv = math.sqrt(sum(t * t for t in v))
    check(abs(nv - math.sqrt(norm2)) < 1e-6, f"{what}: the exact sums differ by sqrt({norm2})", nv)
    w = [t / nv for t in v]
    N = sized(20000, 2000)  # the margins below are derived from N
    stat = lambda c, seed: sum(a * b for a, b in zip(w, flat(release(c, dict(o, seed=seed)))))
    t0 = [stat(con, s) for s in range(N)]
    t1 = [stat(con2, s) for s in range(N, 2 * N)]
    m0, m1 = sum(t0) / N, sum(t1) / N
    sd = math.sqrt((sum((t - m0) ** 2 for t in t0) + sum((t - m1) ** 2 for t in t1)) / (2 * N - 2))
    sep = (m1 - m0) / sd
    mu = d0["sensitivity"] / d0["sigma"]
    margin = 4 * math.sqrt(2 / N)  # 4 standard errors of the estimated shift
    check(abs(sd / d0["sigma"] - 1) < 4 / math.sqrt(N), f"{what}: the statistic's sd is sigma", sd)
    check(sep <= mu + margin, f"{what}: the best linear test separates by {sep:.3f} <= mu = "
          f"{mu:.3f} (+ {margin:.3f})", sep)
    check(sep >= nv / d0["sigma"] - margin, f"{what}: ... and the attack attains the shift", sep)


def test_neighbour_attack():
    """Adding x, the add/remove worst case (one state and action for more
    than H steps at rmax: norm sqrt(1 + 2 H^2)); replacing x' (the same at
    rmin) by y (alternating between two states, rmax in the first, rmin in
    the second), the worst pair of the exhaustive search: distance^2 40 at
    H = 3, within 4 H^2 + H + 3 = 42."""
    o = dict(BASE, epsilon=2, horizon=3)
    rows = [(e, t, (e * 7 + t) % 2, (e + t) % 2, (e % 5) / 2.0) for e in range(6) for t in range(4)]
    x = [(99, t, 0, 0, 2.0) for t in range(5)]
    attack(o, rows, x, [], 1 + 2 * 9, "add one episode")
    x = [(99, t, 0, 0, 0.0) for t in range(5)]
    y = [(99, t, t % 2, 0, 2.0 - 2.0 * (t % 2)) for t in range(5)]
    attack(o, rows, x, y, 40, "replace one episode")


def test_interrupt():
    # 600 states x 5 actions: 1.8 million entries to draw and write (about a
    # second); 200,000 steps in random order to group before that
    con = connect()
    con.execute("CREATE TABLE steps AS WITH RECURSIVE i(n) AS (SELECT 0 UNION ALL SELECT n + 1 "
                "FROM i WHERE n < 199999) SELECT n % 20000 AS episode, n / 20000 AS t, "
                "n * 7 % 600 AS state, n % 5 AS action, (n % 3) / 2.0 AS reward FROM i "
                "ORDER BY random()")
    o = dict(BASE, n_states=600, n_actions=5, horizon=10, transitions="dense")
    for after in (0.05, 0.4):
        late, err = interrupted(con, "SELECT length(dp_mdp(episode, t, state, action, reward, ?)) "
                                "FROM steps", (json.dumps(o),), after)
        check(err == ("interrupted", sqlite3.SQLITE_INTERRUPT) and late < 0.5,
              f"an interrupt {after} s in stops dp_mdp within 0.5 s (CPU)", (late, err))


run([test_keys_and_statistics, test_tent_and_clip, test_seeded, test_errors, test_budget,
     test_neighbour_attack, test_interrupt])
