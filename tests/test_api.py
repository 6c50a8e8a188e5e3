"""The public API: every name in ``turnscope.__all__`` resolves, and the README's ten-line
script runs as written."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import turnscope
from tests.conftest import ROOT


def test_every_public_name_resolves():
    for name in turnscope.__all__:
        assert getattr(turnscope, name) is not None, name


def test_import_turnscope_stays_light():
    code = (
        "import sys, turnscope; print(sorted(m for m in sys.modules"
        " if m.split('.')[0] in ('aiortc', 'faster_whisper', 'turnscope')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout.replace("'", '"')) == ["turnscope"]


def test_the_readme_script_runs(tmp_path):
    readme = (ROOT / "README.md").read_text()
    script = re.search(r"```python\n(# replay_and_check\.py.*?)```", readme, re.S)
    assert script, "the README's API example is missing"
    path = tmp_path / "replay_and_check.py"
    path.write_text(script.group(1))
    done = subprocess.run(
        [sys.executable, str(path), str(ROOT / "recordings" / "refund-call.wav"),
         str(tmp_path / "out")],
        capture_output=True, text=True, timeout=300, cwd=ROOT,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "verdict: pass" in done.stdout and (tmp_path / "out" / "result.json").exists()
