"""samples/python_example.py: dprl from Python's own sqlite3 module.

    make && /usr/bin/python3 samples/python_example.py

Needs a Python whose sqlite3 has enable_load_extension (Debian's
/usr/bin/python3 does; builds configured without
--enable-loadable-sqlite-extensions, such as pyenv's default, do not).
"""
import json
import os
import sqlite3

HERE = os.path.dirname(os.path.abspath(__file__))
EXTENSION = os.environ.get("DPRL_SO", os.path.join(HERE, "..", "dprl"))

# One row per step: (episode, t, state, reward).  Plain Python lists.
rows = []
for patient in range(3000):
    state = patient % 4
    for t in range(6):
        reward = 1.0 if state == 0 else 0.0
        rows.append((patient, t, state, reward))
        state = max(0, state - 1) if (patient + t) % 3 else min(3, state + 1)

con = sqlite3.connect(":memory:")
if not hasattr(con, "enable_load_extension"):
    raise SystemExit("this Python's sqlite3 cannot load extensions; use /usr/bin/python3")
con.enable_load_extension(True)
con.load_extension(os.path.abspath(EXTENSION))
con.enable_load_extension(False)

con.execute("CREATE TABLE steps(episode, t, state, reward)")
con.executemany("INSERT INTO steps VALUES (?, ?, ?, ?)", rows)

options = {"n_states": 4, "gamma": 0.9, "rmin": 0, "rmax": 1, "epsilon": 1.0, "delta": 1e-5}
(result,) = con.execute(
    "SELECT dp_lsw(episode, t, state, reward, ?) FROM steps", (json.dumps(options),)
).fetchone()
release = json.loads(result)
print(f"{release['mechanism']}, private={release['private']}, "
      f"epsilon={release['epsilon']}, episodes={release['episodes']}")
for state, value in enumerate(release["values"]):
    print(f"state {state}: private value {value:.3f}")
