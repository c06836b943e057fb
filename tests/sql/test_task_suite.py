"""tests/utility/suite.py --quick (make utility's task suite) runs: one row
per task of the five, each over its 4 intervals (2 logs, 2 rules), with
dp_is_value's column, and its figure is an SVG with one panel per task."""
import os
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

from harness import check, run


def test_quick():
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    svg = os.path.join(tempfile.mkdtemp(), "suite.svg")
    p = subprocess.run([sys.executable, os.path.join(root, "tests", "utility", "suite.py"), "--quick",
                        "--svg", svg], capture_output=True, text=True, timeout=900,
                       env=dict(os.environ, DPRL_SO=os.environ.get("DPRL_SO", os.path.join(root, "dprl"))))
    rows = [line for line in p.stdout.splitlines() if line.startswith("| ") and "of 4" in line]
    tasks = {r.split(" | ")[0][2:] for r in rows}
    check(p.returncode == 0 and len(rows) == 5 and len(tasks) == 5
          and all(r.split(" | ")[6] not in ("-", "") for r in rows),
          "suite.py --quick: five tasks, each its row at 1,000 patients with dp_is_value's RMSE",
          (p.returncode, p.stdout[-1500:], p.stderr[-800:]))
    doc = ET.parse(svg).getroot()
    titles = [t.text for t in doc.iter("{http://www.w3.org/2000/svg}text") if t.get("font-weight") == "bold"]
    check(len(titles) == 5 and len(list(doc.iter("{http://www.w3.org/2000/svg}circle"))) >= 10,
          "the figure: one panel per task, its points drawn", titles)


run([test_quick])
