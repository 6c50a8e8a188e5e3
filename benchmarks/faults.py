"""Every fault and bad-input case of the new surfaces, by kind, with its result.

    .venv/bin/python benchmarks/faults.py

Runs the fault tests (credentials, untrusted input, evidence kept, bounded resources, the
terminal) through pytest with a JUnit report and prints one row per case: its kind, the test,
passed or failed, and its time. The tests themselves hold the cases; this is their roll call.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
KINDS = {
    "test_credentials.py": "credential written or sent",
    "test_untrusted_input.py": "untrusted input (depth, size, numbers, floods)",
    "test_evidence_kept.py": "evidence lost / outputs / internal errors",
    "test_bounded.py": "hangs and runaway resources",
    "test_terminal.py": "a person's terminal (hang, Ctrl-S, SIGHUP)",
}


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "junit.xml"
        files = [str(ROOT / "tests" / name) for name in KINDS]
        subprocess.run(
            [sys.executable, "-m", "pytest", *files, "-q", f"--junitxml={report}"],
            cwd=ROOT, capture_output=True, text=True,
        )  # fmt: skip
        cases = ET.parse(report).getroot().iter("testcase")
        rows = []
        for case in cases:
            file = case.get("classname", "").rsplit(".", 1)[-1] + ".py"
            failed = case.find("failure") is not None or case.find("error") is not None
            skipped = case.find("skipped") is not None
            result = "FAILED" if failed else "skipped" if skipped else "passed"
            rows.append((KINDS.get(file, file), case.get("name", ""), result, case.get("time")))
    print("| kind | case | result | s |")
    print("|---|---|---|---|")
    for kind, name, result, secs in sorted(rows):
        print(f"| {kind} | {name} | {result} | {float(secs or 0):.1f} |")
    passed = sum(1 for r in rows if r[2] == "passed")
    print(f"\n{passed} of {len(rows)} cases passed")


if __name__ == "__main__":
    main()
