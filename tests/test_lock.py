"""The lock files still match pyproject.toml: every dependency it declares (and its build
requirement) is pinned, at a version its bounds allow, with the files' hashes. Offline and
instant; `make lock` refreshes the locks when this fails."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]
# Each lock and the extras it was compiled with (see `make lock`).
LOCKS = {
    "app.lock": (),
    "executor-cpu.lock": ("executor",),
    "executor-cuda.lock": ("executor",),
    "dev.lock": ("executor", "dev"),
}
PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==(\S+)")


def pins(lock: str) -> dict[str, tuple[str, int]]:
    """Each pinned package of a lock file: its version and how many hashes it lists."""
    found: dict[str, tuple[str, int]] = {}
    name = ""
    for line in lock.splitlines():
        if match := PIN.match(line):
            name = canonicalize_name(match[1])
            found[name] = (match[2], 0)
        elif name and "--hash=sha256:" in line:
            version, hashes = found[name]
            found[name] = (version, hashes + 1)
    return found


def mismatches(project: dict[str, Any], extras: tuple[str, ...], lock: str) -> list[str]:
    """What the lock lacks for pyproject.toml's requirements (empty when it matches)."""
    wanted = [*project["project"]["dependencies"], *project["build-system"]["requires"]]
    for extra in extras:
        wanted += project["project"]["optional-dependencies"][extra]
    pinned = pins(lock)
    problems = []
    for text in wanted:
        requirement = Requirement(text)
        name = canonicalize_name(requirement.name)
        if name not in pinned:
            problems.append(f"{requirement.name} is not in the lock")
            continue
        version, hashes = pinned[name]
        if not requirement.specifier.contains(version, prereleases=True):
            problems.append(f"{requirement.name}=={version} is outside {requirement.specifier}")
        if not hashes:
            problems.append(f"{requirement.name} has no hash")
    return problems


def project() -> dict[str, Any]:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


@pytest.mark.parametrize("name", list(LOCKS))
def test_the_lock_pins_what_pyproject_declares(name: str) -> None:
    lock = (ROOT / "requirements" / name).read_text()
    assert mismatches(project(), LOCKS[name], lock) == [], f"run `make lock` ({name})"


@pytest.mark.parametrize("name", list(LOCKS))
def test_every_pin_of_the_lock_lists_its_hashes(name: str) -> None:
    found = pins((ROOT / "requirements" / name).read_text())
    assert found and all(hashes for _version, hashes in found.values())


def test_a_dependency_added_to_pyproject_and_not_locked_is_caught() -> None:
    lock = (ROOT / "requirements" / "app.lock").read_text()
    changed = project()
    changed["project"]["dependencies"].append("rich>=13")
    assert mismatches(changed, (), lock) == ["rich is not in the lock"]


def test_a_bound_the_locked_version_breaks_is_caught() -> None:
    lock = (ROOT / "requirements" / "dev.lock").read_text()
    changed = project()
    changed["project"]["optional-dependencies"]["executor"] = ["torch==2.14.*", "numpy>=1.26"]
    problems = mismatches(changed, ("executor",), lock)
    assert len(problems) == 1 and problems[0].startswith("torch==2.13.0+cpu is outside")
