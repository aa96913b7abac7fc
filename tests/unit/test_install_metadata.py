"""`make run` installs what running needs, and the package metadata is in the form today's setuptools reads
without deprecation warnings (issue 20, item 13)."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import tomllib
from pathlib import Path

from packaging.licenses import canonicalize_license_expression
from packaging.requirements import Requirement
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[2]


def _plan(make: str, target: str) -> subprocess.CompletedProcess[str]:
    # under `make test` the parent's MAKEFLAGS/MAKELEVEL would add "Entering/Leaving directory" lines
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")}
    return subprocess.run(
        [make, "--no-print-directory", "-n", "-B", target],
        cwd=ROOT, capture_output=True, text=True, timeout=60, check=True, env=env,
    )  # fmt: skip


def test_make_run_installs_rocketq_without_the_test_and_spark_extras() -> None:
    make = shutil.which("make")
    assert make is not None, "make is one of the two set-up commands"
    # -n: print the recipe, run nothing; -B: as if nothing were installed yet
    plan = _plan(make, "run")
    installs = [shlex.split(line) for line in plan.stdout.splitlines() if " pip install " in line]
    targets = [words[words.index("-e") + 1] for words in installs if "-e" in words]
    assert targets == ["."], plan.stdout  # rocketq alone: orjson and uvloop come as its dependencies
    assert plan.stdout.splitlines()[-1].endswith("rocketq standalone --dir ./data listenHost=127.0.0.1")  # loopback


def test_make_test_still_installs_the_extras() -> None:
    make = shutil.which("make")
    assert make is not None
    plan = _plan(make, "test")
    assert "-e '.[test,spark,bench]'" in plan.stdout


def test_license_is_an_spdx_expression_and_the_build_needs_a_setuptools_that_reads_it() -> None:
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())
    license_ = meta["project"]["license"]
    assert isinstance(license_, str), "a TOML table here is deprecated: setuptools prints a warning wall"
    assert canonicalize_license_expression(license_) == license_ == "Apache-2.0"
    (setuptools,) = [Requirement(r) for r in meta["build-system"]["requires"] if Requirement(r).name == "setuptools"]
    # setuptools reads a string license from 77.0 on; an older one accepted by the pin would refuse to build
    assert Version("76.1") not in setuptools.specifier and Version("77.0.3") in setuptools.specifier
