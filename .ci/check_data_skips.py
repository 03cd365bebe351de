"""Check a JUnit report of ``pytest -m data`` run without the real data: every test skipped, with
the data tests' reason (it names the data and MDP_DATA_DIR), none failed or errored."""

from __future__ import annotations

import sys
import xml.etree.ElementTree as ET

REASON = "needs the real Geolife/Gowalla data sets"


def main(report: str) -> int:
    cases = ET.parse(report).getroot().iter("testcase")
    total, bad = 0, []
    for case in cases:
        total += 1
        name = f"{case.get('classname')}::{case.get('name')}"
        skipped = case.find("skipped")
        if skipped is None:
            bad.append(f"{name}: not skipped")
        elif REASON not in (skipped.get("message") or "") or "MDP_DATA_DIR" not in (skipped.get("message") or ""):
            bad.append(f"{name}: skipped for another reason: {skipped.get('message')}")
    if total == 0:
        bad.append("no data test collected")
    for line in bad:
        print(line, file=sys.stderr)
    print(f"data tests without the data: {total} collected, {total - len(bad)} skipped with the "
          f"data reason")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
