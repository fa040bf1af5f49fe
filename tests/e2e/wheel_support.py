"""harness as a user or CI job installs it: a wheel built from this checkout, installed with
`--no-deps` into a fresh virtualenv.

Installing every dependency from the index takes longer than the whole CI may (torch, langgraph,
pandas, …), so the fresh venv borrows the dependencies of the interpreter running the tests: one
`.pth` line names that interpreter's site-packages. Python reads a `.pth` line as a plain path
and does not process the `.pth` files inside the directory it names, so the test venv's
editable install of harness (its `__editable__` finder, a `.pth` there) never activates: harness
itself can only come from the wheel. `leaks` checks that."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

from real_releases import real_releases

REPO_ROOT = Path(__file__).resolve().parents[2]
# What a wheel is built from: a `pip install git+URL` clone holds these (and tests/, docs, … that
# the build does not read).
_SOURCES = ("pyproject.toml", "README.md", "harness")


def build_wheel(dest: Path) -> Path:
    """The wheel of this checkout, built in a copy under `dest` (the checkout gets no build/ or
    egg-info) with the build backend of the interpreter running the tests (no index needed).
    CalledProcessError when the build fails."""
    source = dest / "source"
    for name in _SOURCES:
        path = REPO_ROOT / name
        if path.is_dir():
            shutil.copytree(path, source / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            source.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, source / name)
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                    str(source), "-w", str(dest / "dist")], check=True, capture_output=True, text=True, timeout=300)
    (wheel,) = (dest / "dist").glob("harness-*.whl")
    return wheel


def fresh_venv(path: Path) -> Path:
    """A new virtualenv at `path` (no pip of its own, nothing installed) whose dependencies are
    the test interpreter's site-packages (one `.pth` line, after its own site-packages: what the
    venv installs wins). Returns its python."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(path)], check=True, timeout=120)
    python = path / "bin" / "python"
    own = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                         capture_output=True, text=True, check=True, env=clean_env(path)).stdout.strip()
    borrowed = dict.fromkeys([sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]])
    Path(own, "ci-dependencies.pth").write_text("".join(f"{p}\n" for p in borrowed))
    return python


def clean_env(venv: Path, **extra: str) -> dict[str, str]:
    """The environment of a shell in `venv` (its bin first on PATH), with nothing that points
    Python at the checkout (PYTHONPATH, an activated venv)."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    env["PATH"] = os.pathsep.join([str(venv / "bin"), env.get("PATH", "")])
    return {**env, "COLUMNS": "200", **extra}


def install_wheel(python: Path, wheel: Path) -> None:
    """`python -m pip install --no-deps WHEEL` in the venv (pip itself is one of the borrowed packages)."""
    venv = python.parent.parent
    subprocess.run([str(python), "-m", "pip", "install", "-q", "--no-deps", str(wheel)], check=True,
                   capture_output=True, text=True, env=clean_env(venv), cwd=venv, timeout=300)


_WHERE = """
import json, sys, harness
print(json.dumps({"file": harness.__file__, "path": sys.path,
                  "finders": [type(f).__name__ + ":" + getattr(f, "__name__", "") for f in sys.meta_path]}))
"""


def leaks(python: Path) -> list[str]:
    """What, in the venv of `python`, would make harness come from anywhere but the wheel: a
    harness outside the venv, the checkout on sys.path, an editable finder installed. Empty: none."""
    venv = python.parent.parent
    where = json.loads(subprocess.run([str(python), "-c", _WHERE], capture_output=True, text=True, check=True,
                                      env=clean_env(venv), cwd=venv, timeout=120).stdout)
    found = []
    if not Path(where["file"]).resolve().is_relative_to(venv.resolve()):
        found.append(f"harness imported from {where['file']}")
    found += [f"sys.path holds the checkout: {p}" for p in where["path"]
              if p and Path(p).resolve() == REPO_ROOT]
    found += [f"an editable finder is installed: {f}" for f in where["finders"] if "editable" in f.lower()]
    return found


EXAMPLE_PLUGIN_PATH = ("import pathlib, harness; "
                       "print(pathlib.Path(harness.__file__).parent / 'examples' / 'workspace' / 'plugin')")
"""The README's way to find the installed example plugin."""


def example_releases() -> None:
    """The example's releases (0.5.17, 0.5.23) from the wheel cache or the index; skips the test
    when the index cannot be reached and they are not cached."""
    real_releases("sglang==0.5.17", "sglang==0.5.23")
