"""Write ``tests/durations.json`` (seconds per test file, setup and teardown included) from a run's
JUnit XML, the order ``tests/conftest.py`` hands test files to the workers in:

    .venv/bin/python -m pytest -n 3 --dist loadfile --junitxml=/tmp/junit.xml
    .venv/bin/python tests/durations.py /tmp/junit.xml

Rough numbers are enough (the order matters, not the seconds): refresh it when a file's cost
changes a lot, e.g. after a new slow test file.
"""

from __future__ import annotations

import json
import sys
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path

OUT = Path(__file__).with_name("durations.json")


def per_file(junit: Path) -> dict[str, float]:
    """Seconds per test file of a pytest JUnit XML (each test case's time is its setup, call and
    teardown: pytest's ``junit_duration_report`` default)."""
    seconds: Counter = Counter()
    for case in ET.parse(junit).iter("testcase"):
        name = case.get("file") or case.get("classname", "").replace(".", "/") + ".py"
        seconds[name] += float(case.get("time") or 0)
    return {name: round(s, 1) for name, s in seconds.most_common()}


if __name__ == "__main__":
    OUT.write_text(json.dumps(per_file(Path(sys.argv[1])), indent=0) + "\n")
    print(f"{OUT}: {len(json.loads(OUT.read_text()))} files")
