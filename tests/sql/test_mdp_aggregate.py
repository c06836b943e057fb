"""dp_mdp's grouped features, {"aggregate": k} and {"map": [...]}
(ALGORITHMS.md §13.1): a release of a log with a public map from each
state to a group is, number for number, the tabular release of the log
whose states were mapped first (same seed; dense and sparse, private and
diagnostic, with a clip), so its calibration is the tabular one over the
groups; the exact statistics against counts of the mapped log computed
here; the features echoed; the errors from the options and the row
errors naming the row; the map's echo counted against
SQLITE_LIMIT_LENGTH; dp_mdp_value and dp_mdp_plan over the groups; and
dp_plan's calibration with the same features."""
import json
import random

from harness import check, check_error, connect, run

S_RAW, A, H = 12, 2, 4
MAP = [2, 0, 1, 1, 0, 2, 3, 3, 0, 1, 2, 3]  # 12 states into 4 groups
K = 3  # {"aggregate": 3}: 12 states into 4 groups too
G = 4
BASE = {"n_states": G, "n_actions": A, "gamma": 0.9, "rmin": -1, "rmax": 1, "epsilon": 2,
        "delta": 1e-5, "horizon": H, "clip": "none"}
MDP = "SELECT dp_mdp(episode, t, {state}, action, reward, ?) FROM steps"


def steps_log(n, seed=1):
    """Episodes of 1 to 6 steps over the 12 raw states."""
    rnd = random.Random(seed)
    rows = []
    for e in range(n):
        s = rnd.randrange(S_RAW)
        for t in range(rnd.randrange(1, 7)):
            a = rnd.randrange(A)
            rows.append((e, t, s, a, round(rnd.uniform(-1, 1), 3)))
            s = (s + rnd.choice((0, 1, 5, a + 2))) % S_RAW
    return rows


def setup(rows):
    con = connect()
    con.execute("CREATE TABLE steps(episode, t, state, action, reward)")
    con.executemany("INSERT INTO steps VALUES (?, ?, ?, ?, ?)", rows)
    con.execute("CREATE TABLE groups(state INTEGER PRIMARY KEY, g INTEGER)")
    con.executemany("INSERT INTO groups VALUES (?, ?)", list(enumerate(MAP)))
    return con


def release(con, o, state="state"):
    return json.loads(con.execute(MDP.format(state=state), (json.dumps(o),)).fetchone()[0])


MAPPED = {"aggregate": "state / 3", "map": "(SELECT g FROM groups WHERE groups.state = steps.state)"}
FEATURES = {"aggregate": {"aggregate": K}, "map": {"map": MAP}}


def test_same_as_mapped_first():
    con = setup(steps_log(300))
    for form in ("aggregate", "map"):
        for extra, what in (({"transitions": "dense"}, "dense"),
                            ({"transitions": "sparse"}, "sparse"),
                            ({"transitions": "dense", "clip": 2.5}, "dense with a clip"),
                            ({"transitions": "sparse", "clip": 2.5}, "sparse with a clip"),
                            ({"transitions": "dense", "release": "diagnostic"}, "dense diagnostic"),
                            ({"transitions": "sparse", "release": "diagnostic"}, "sparse diagnostic")):
            o = dict(BASE, seed=7, **extra)
            grouped = release(con, dict(o, features=FEATURES[form]))
            mapped = release(con, o, MAPPED[form])
            echo = grouped.pop("features")
            mapped.pop("features")
            check(grouped == mapped,
                  f"{form}, {what}: the release is the tabular release of the mapped states, "
                  "number for number (same seed): the same noise, sensitivity, sigma and threshold",
                  sorted(k for k in grouped if grouped.get(k) != mapped.get(k)))
            check(echo == FEATURES[form], f"{form}, {what}: the features are echoed as given", echo)
    # with the outcome argument: the censored flag rides on the group's pair
    out = "CASE WHEN episode % 3 = 0 THEN 'censored' ELSE 'terminal' END"
    for form in ("aggregate", "map"):
        for lay in ("dense", "sparse"):
            o = dict(BASE, seed=7, transitions=lay)
            sql = ("SELECT dp_mdp(episode, t, {state}, action, reward, " + out + ", ?) FROM steps")
            grouped = json.loads(con.execute(sql.format(state="state"),
                                             (json.dumps(dict(o, features=FEATURES[form])),)).fetchone()[0])
            mapped = json.loads(con.execute(sql.format(state=MAPPED[form]),
                                            (json.dumps(o),)).fetchone()[0])
            grouped.pop("features")
            mapped.pop("features")
            check(grouped == mapped and grouped.get("outcome") == "per episode" and
                  len(grouped["censored"]) == G,
                  f"{form}, {lay}, with the outcome argument: the release is the tabular release of "
                  "the mapped states with the same outcomes, its censored ends over the groups",
                  sorted(k for k in grouped if grouped.get(k) != mapped.get(k)))
    # the slow path (a state given as 3.0) maps alike
    o = dict(BASE, seed=7, features={"map": MAP})
    check(release(con, o, "state * 1.0") == release(con, o),
          "a state given as a real number with an integer value counts in its group")


def test_exact_counts():
    rows = steps_log(200, seed=2)
    con = setup(rows)
    d = release(con, dict(BASE, seed=1, transitions="dense", release="diagnostic",
                          features={"map": MAP}))
    start = [0] * G
    counts = [[[0] * (G + 1) for _ in range(A)] for _ in range(G)]
    rsum = [[0.0] * A for _ in range(G)]
    eps = {}
    for e, t, s, a, r in rows:
        eps.setdefault(e, []).append((t, s, a, r))
    for e, st in eps.items():
        st.sort()
        start[MAP[st[0][1]]] += 1
        for i, (t, s, a, r) in enumerate(st[:H]):
            nxt = MAP[st[i + 1][1]] if i + 1 < len(st) else G
            counts[MAP[s]][a][nxt] += 1
            rsum[MAP[s]][a] += r
    check(d["exact_start"] == start and d["exact_counts"] == counts,
          "the exact start and counts are those of the groups (counted here from the log)")
    check(all(abs(d["exact_reward_sums"][g][a] - rsum[g][a]) < 1e-5 * (1 + abs(rsum[g][a]))
              for g in range(G) for a in range(A)),
          "the exact reward sums are those of the groups (ticks of 2^-24)")


def test_errors():
    con = setup(steps_log(20))
    sql = MDP.format(state="state")
    forms = ("\"tabular\", {\"aggregate\": k}, {\"map\": [g_0, ..., g_{R-1}]} or {\"tent\": K, "
             "\"low\": lo, \"high\": hi}")
    cases = [
        ({"aggregate": 0}, "features.aggregate must be an integer in [1, 2^31 - 1] (the states a "
                           "group holds: state s counts in group floor(s / k)), got 0"),
        ({"aggregate": 1.5}, "features.aggregate must be an integer in [1, 2^31 - 1] (the states "
                             "a group holds: state s counts in group floor(s / k)), got 1.5"),
        ({"aggregate": "3"}, "features.aggregate must be an integer in [1, 2^31 - 1] (the states "
                             "a group holds: state s counts in group floor(s / k)), got \"3\""),
        ({"map": 3}, "features.map must be a non-empty array of group numbers, one per state "
                     "(state s counts in group map[s]), got 3"),
        ({"map": []}, "features.map must be a non-empty array of group numbers, one per state "
                      "(state s counts in group map[s]), got an empty array"),
        ({"map": [0, 1, 4, 2, 3]}, "features.map[2] must be a group, an integer in "
                                   "0..n_states-1 = 0..3, got 4"),
        ({"map": [0, -1, 2, 3]}, "features.map[1] must be a group, an integer in "
                                 "0..n_states-1 = 0..3, got -1"),
        ({"map": [0, 1, 2, 2.5]}, "features.map[3] must be a group, an integer in "
                                  "0..n_states-1 = 0..3, got 2.5"),
        ({"map": [0, 1, 3, 1]}, "features.map gives group 2 to no state: the groups are the "
                                "model's n_states = 4 states, each some state's group (the map "
                                "uses 3 of them)"),
        ({"map": [0, 1, 2]}, "features.map has 3 states for n_states = 4 groups: each group "
                             "must be some state's, so n_states is at most the map's length"),
        ({"aggregate": 3, "map": MAP}, "option features {\"aggregate\": ...} takes no other key, "
                                       f"got 2 keys (the forms: {forms})"),
        ({"map": MAP, "low": 0}, "option features {\"map\": ...} takes no other key, got 2 keys "
                                 f"(the forms: {forms})"),
        ({"groups": MAP}, "option features has an unknown key \"groups\" (known: aggregate, map, "
                          "or tent, low, high)"),
        ("aggregate", f"option features must be {forms}, got \"aggregate\""),
    ]
    for f, msg in cases:
        check_error(con, sql, "dp_mdp: " + msg, f"features {json.dumps(f)[:40]}: refused",
                    (json.dumps(dict(BASE, features=f)),))
    check_error(con, "SELECT dp_plan(?)", "dp_plan: features.map[2] must be a group, an integer "
                "in 0..n_states-1 = 0..3, got 4", "dp_plan: the same check of the map",
                (json.dumps(dict(BASE, mechanism="dp_mdp", episodes=100,
                                 features={"map": [0, 1, 4, 2, 3]})),))


def first_row_at(rows, s):
    return next((e, t) for e, t, st, a, r in rows if st == s)


def test_row_errors():
    rows = steps_log(40, seed=3)
    con = setup(rows)
    e, t = first_row_at(rows, S_RAW - 1)
    check_error(con, MDP.format(state="state + 1"),
                "dp_mdp: state must be in 0..R-1 = 0..11 (the R states of features.map), got 12 "
                f"(row with episode {e}, t {t})",
                "map: a state beyond the map is a row error naming the row",
                (json.dumps(dict(BASE, features={"map": MAP})),))
    check_error(con, MDP.format(state="state + 1"),
                "dp_mdp: state must be in 0..k n_states-1 = 0..11 (features.aggregate k: state s "
                f"counts in group floor(s / k)), got 12 (row with episode {e}, t {t})",
                "aggregate: a state at k n_states or above is a row error naming the row",
                (json.dumps(dict(BASE, features={"aggregate": K})),))
    e, t = first_row_at(rows, 0)
    check_error(con, MDP.format(state="state - 1"),
                "dp_mdp: state must be in 0..R-1 = 0..11 (the R states of features.map), got -1 "
                f"(row with episode {e}, t {t})", "map: a negative state is a row error",
                (json.dumps(dict(BASE, features={"map": MAP})),))
    check_error(con, MDP.format(state="'x'"),
                "dp_mdp: state must be an integer, got text 'x' (row with episode 0, t 0)",
                "map: a state that is not an integer is a row error", (json.dumps(dict(BASE, features={"map": MAP})),))


def compact(o):
    return json.dumps(o, separators=(",", ":"))


def test_length_limit():
    con = setup(steps_log(20))
    con.setlimit(0, 20000)  # SQLITE_LIMIT_LENGTH
    small = {"n_states": 2, "n_actions": 1, "gamma": 0.9, "rmin": -1, "rmax": 1, "epsilon": 1,
             "delta": 1e-5, "horizon": 2, "transitions": "dense", "clip": "none"}
    sql = "SELECT dp_mdp(episode, t, state % 2, 0, reward, ?) FROM steps"
    big = [i % 2 for i in range(8000)]
    echo = len(json.dumps(big, separators=(",", ":")))  # 16001 bytes, beyond 20000 - 4096
    check_error(con, sql, f"dp_mdp: features.map of 8000 states is echoed in the result in {echo} "
                "bytes, more than this connection's SQLITE_LIMIT_LENGTH (20000 bytes) leaves "
                "beside the model", "a map whose echo cannot fit the result is refused",
                (compact(dict(small, features={"map": big})),))
    fits = [i % 2 for i in range(3000)]
    r = json.loads(con.execute(sql, (compact(dict(small, seed=1, features={"map": fits})),)).fetchone()[0])
    check(r["features"] == {"map": fits}, "a map that fits is echoed whole")
    # sparse: the default max_cells is what fits beside the dense parts and the echo
    o = dict(small, transitions="sparse", seed=1, features={"map": fits})
    r = json.loads(con.execute(sql, (compact(o),)).fetchone()[0])
    e3000 = len(json.dumps(fits, separators=(",", ":")))
    room = (20000 - 4096 - e3000 - (2 + 3 * 2) * 25) // 64
    check(r["cells_max"] == min(room, 4), f"sparse: cells_max is the room beside the echo "
          f"({room} cells, at most S A S = 4)", r["cells_max"])
    many = [i % 2 for i in range(7000)]  # echo 14001: 1903 bytes left, 76 numbers
    check_error(con, sql, None, "a map that leaves room for the model's 2 + 2 + 2 = 6 numbers is taken",
                (compact(dict(small, seed=1, features={"map": many})),))


def test_value_and_plan():
    con = setup(steps_log(2000, seed=4))
    o = dict(BASE, epsilon=8, seed=3, transitions="dense")
    con.execute("CREATE TABLE rel(name, model)")
    con.execute("INSERT INTO rel SELECT 'grouped', dp_mdp(episode, t, state, action, reward, ?) "
                "FROM steps", (json.dumps(dict(o, features={"map": MAP})),))
    con.execute(f"INSERT INTO rel SELECT 'mapped', dp_mdp(episode, t, {MAPPED['map']}, action, "
                "reward, ?) FROM steps", (json.dumps(o),))
    pol = json.dumps([0, 1, 1, 0])  # one action per group
    vo = '{"bootstrap": 0, "horizon": 5}'
    v = dict(con.execute("SELECT name, json_extract(dp_mdp_value(model, ?, ?), '$.value') FROM rel",
                         (pol, vo)).fetchall())
    check(v["grouped"] == v["mapped"] and v["grouped"] is not None,
          "dp_mdp_value: a policy over the groups, valued as on the tabular model of the groups", v)
    p = dict(con.execute("SELECT name, json_extract(dp_mdp_plan(model, ?), '$.policy') FROM rel",
                         ('{"horizon": 5}',)).fetchall())
    check(p["grouped"] == p["mapped"] and len(json.loads(p["grouped"])) == G,
          "dp_mdp_plan: one action per group, as on the tabular model of the groups", p)
    check_error(con, "SELECT dp_mdp_value(model, ?) FROM rel WHERE name = 'grouped'",
                "dp_mdp_value: policy must be an array with one entry per state (n_states = 4): an "
                "action number or an array of n_actions = 2 probabilities, got 12 items", "a policy over the raw states is refused: the model's states are the "
                "groups", (json.dumps([0] * S_RAW),))


def test_plan():
    con = connect()
    keys = ("sigma", "sensitivity", "threshold", "rho")
    for tr in ("dense", "sparse"):
        want = json.loads(con.execute("SELECT dp_plan(?)", (json.dumps(
            dict(BASE, mechanism="dp_mdp", episodes=100, transitions=tr)),)).fetchone()[0])
        for f in ({"aggregate": K}, {"map": MAP}):
            got = json.loads(con.execute("SELECT dp_plan(?)", (json.dumps(
                dict(BASE, mechanism="dp_mdp", episodes=100, transitions=tr, features=f)),)).fetchone()[0])
            check(all(got.get(k) == want.get(k) for k in keys),
                  f"dp_plan, {tr}, features {list(f)[0]}: the tabular calibration over the groups",
                  {k: (got.get(k), want.get(k)) for k in keys})


if __name__ == "__main__":
    run([test_same_as_mapped_first, test_exact_counts, test_errors, test_row_errors,
         test_length_limit, test_value_and_plan, test_plan])
