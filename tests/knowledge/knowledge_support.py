"""Helpers shared by the knowledge tests: write fixture trees, drive git, and run the real
`harness` CLI in a subprocess as a user (or CI) would. (A module of its own: every test
folder has a conftest.py, so `from conftest import …` would be ambiguous.)"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path


def write_tree(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"))


def git(repo: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@e"}
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True, env=env).stdout


def harness(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """Run the real CLI as a user would."""
    return subprocess.run([sys.executable, "-m", "harness", *args], capture_output=True, text=True, cwd=cwd, env=os.environ.copy())


def harness_json(*args: str, cwd: Path | None = None) -> tuple[int, dict]:
    proc = harness(*args, "--json", cwd=cwd)
    assert proc.stdout.strip(), proc.stderr
    return proc.returncode, json.loads(proc.stdout)


def by_target(findings: list[dict]) -> dict[str, dict]:
    return {f["target"]: f for f in findings}


# A vLLM-shaped tree: the platform interface and the GPU worker the tiny plugin (tests/fixtures/
# vllm_tiny) builds on; tests add a version file and the entry points' serving module.
VLLM_PLATFORM_TREE = {
    "vllm/__init__.py": "from .version import __version__\n",
    "vllm/platforms/__init__.py": "",
    "vllm/platforms/interface.py": (
        "import enum\n\n\nclass PlatformEnum(enum.Enum):\n    OOT = enum.auto()\n\n\n"
        "class Platform:\n    device_name: str\n\n    @classmethod\n    def get_device_name(cls, device_id: int = 0) -> str:\n        raise NotImplementedError\n\n"
        "    @classmethod\n    def check_and_update_config(cls, vllm_config) -> None:\n        pass\n\n"
        "    @classmethod\n    def is_cumem_allocator_available(cls) -> bool:\n        return False\n"
    ),
    "vllm/v1/__init__.py": "",
    "vllm/v1/worker/__init__.py": "",
    "vllm/v1/worker/gpu_worker.py": "class Worker:\n    def init_device(self):\n        pass\n\n    def handle_ft_command(self, command):\n        pass\n",
    "vllm/entrypoints/__init__.py": "",
}
