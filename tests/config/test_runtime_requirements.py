"""The demo (scripts/demo.sh) installs requirements.txt only (the dev pins come with scripts/test.sh): every
third-party package the application imports must be pinned there, or the README's first
command fails on a clean machine while the suite, with the dev pins, stays green."""

from __future__ import annotations

import ast
import re
import sys
from importlib.metadata import packages_distributions
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# What the server, the workers and the management commands run (not tests, benchmarks or devtools).
APPLICATION = ["analysis", "common", "config", "debates", "participants", "pilots", "studies"]


def pinned(path: Path) -> set[str]:
    names = set()
    for line in path.read_text().splitlines():
        match = re.match(r"^([A-Za-z0-9_.-]+)", line.strip())
        if match and not line.startswith("-"):
            names.add(re.sub(r"[-_.]+", "-", match.group(1)).lower())
    return names


def imported_top_level(package: str) -> set[str]:
    names = set()
    for source in (ROOT / package).rglob("*.py"):
        for node in ast.walk(ast.parse(source.read_text(), str(source))):
            if isinstance(node, ast.Import):
                names |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names.add(node.module.split(".")[0])
    return names


def test_every_package_the_application_imports_is_a_runtime_requirement():
    runtime = pinned(ROOT / "requirements.txt")
    distributions = packages_distributions()
    ours = {p.name for p in ROOT.iterdir() if p.is_dir()} | set(sys.stdlib_module_names)
    missing = {}
    for package in APPLICATION:
        for name in imported_top_level(package) - ours:
            dists = {re.sub(r"[-_.]+", "-", d).lower() for d in distributions.get(name, [])}
            if dists and not dists & runtime:
                missing[name] = sorted(dists)
    assert not missing, f"imported by the application but not in requirements.txt: {missing}"
