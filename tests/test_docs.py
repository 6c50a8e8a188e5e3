"""The documentation: the site builds strictly (a broken link or anchor, a page missing from the
nav, a reference that no longer generates: all fail), the README stays short, and the generated
references name every field of the models they are made from."""

from __future__ import annotations

import importlib
import importlib.util
import os
import re
import subprocess
import sys

import pytest
from pydantic import BaseModel

from tests.conftest import ROOT

README_LIMIT = 12 * 1024  # issue 29: a README a newcomer finishes


def _gen_docs():
    spec = importlib.util.spec_from_file_location("gen_docs", ROOT / "scripts" / "gen_docs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _models(module_name: str) -> list[type[BaseModel]]:
    module = importlib.import_module(module_name)
    return [
        obj
        for obj in vars(module).values()
        if isinstance(obj, type)
        and issubclass(obj, BaseModel)
        and obj.__module__ == module_name
        and obj.model_fields
    ]


def _unnamed(page: str, models: list[type[BaseModel]]) -> list[str]:
    """The fields (and models) the page does not name."""
    missing = [f"{m.__name__}" for m in models if f"# {m.__name__} " not in page]
    for model in models:
        for name, field in model.model_fields.items():
            if f"| `{field.alias or name}` |" not in page:
                missing.append(f"{model.__name__}.{name}")
    return missing


def test_site_builds_strictly(tmp_path):
    if importlib.util.find_spec("mkdocs") is None or importlib.util.find_spec("material") is None:
        pytest.skip("mkdocs-material is not installed: ./scripts/setup.sh --dev installs it")
    site = tmp_path / "site"
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-q",
         "-f", str(ROOT / "mkdocs.yml"), "-d", str(site)],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-4000:]
    for page in ("reference/scenario", "reference/formats", "reference/api", "reference/cli",
                 "reference/settings", "changelog", "benchmarks", "architecture"):  # fmt: skip
        assert (site / page / "index.html").is_file(), page


def test_readme_is_short_and_links_only_to_files_that_exist():
    readme = ROOT / "README.md"
    assert readme.stat().st_size <= README_LIMIT, f"README.md is {readme.stat().st_size} bytes"
    for target in re.findall(r"\]\(([^)#\s]+)", readme.read_text()):
        if not target.startswith(("http://", "https://")):
            assert (ROOT / target).exists(), f"README.md links to {target}, which is not there"


def test_the_scenario_reference_names_every_field():
    gen = _gen_docs()
    page = gen.scenario_page()
    models = [m for name in gen.SCENARIO_MODULES for m in _models(name)]
    assert {m.__name__ for m in models} >= {"Scenario", "Line", "CallerSpec", "Condition"}
    assert _unnamed(page, models) == []


def test_the_formats_reference_names_every_field():
    gen = _gen_docs()
    page = gen.formats_page()
    roots = [getattr(importlib.import_module(m), n) for _, m, n in gen.FORMATS]
    assert _unnamed(page, gen.models_under(roots)) == []
