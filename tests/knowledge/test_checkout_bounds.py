"""What a plugin checkout or an upstream git tree may make harness read (issue 36, item 5):
only regular files inside the checkout, of bounded size. A FIFO (a read blocks for ever), a
device (`/dev/zero`: a read never ends), or a link leading out of the checkout is never read: a
packaging file that decides the verdict is refused in one line (exit 2); a pin source or a module
is skipped. A git ref naming a path (`HEAD:../x`) or a tree with links out is one line, exit 2."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import git
import pytest
from knowledge_support import write_tree

from harness.knowledge.model.plugin import declared_pins, read_entry_points

REPO_ROOT = Path(__file__).resolve().parents[2]
CODE = {"acme/__init__.py": "", "acme/platform.py": "from sglang.srt.platforms.interface import SRTPlatform\n"}
PYPROJECT = ('[project]\nname = "acme"\nversion = "1.0"\ndependencies = ["sglang>=0.5.17"]\n'
             '[project.entry-points."sglang.srt.platforms"]\nacme = "acme.platform:activate"\n')


def _harness(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "harness", *args], capture_output=True, text=True, timeout=120,
                          cwd=cwd, env={**os.environ, "PYTHONPATH": str(REPO_ROOT)}, check=False)


def _one_line(proc: subprocess.CompletedProcess, *fragments: str) -> None:
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1 and lines[0].startswith("harness: error: "), proc.stderr
    for fragment in fragments:
        assert fragment in lines[0], lines[0]


@pytest.mark.parametrize("kind", ["fifo", "device", "link_out"])
def test_a_packaging_file_that_is_not_a_plain_file_inside_the_checkout_is_refused_in_one_line(tmp_path, kind):
    root = tmp_path / "plugin"
    write_tree(root, CODE)
    (tmp_path / "outside.toml").write_text(PYPROJECT)
    {"fifo": lambda p: os.mkfifo(p), "device": lambda p: p.symlink_to("/dev/zero"),
     "link_out": lambda p: p.symlink_to(tmp_path / "outside.toml")}[kind](root / "pyproject.toml")
    _one_line(_harness("check", "--plugin", str(root), "--upstream", "sglang==0.5.23", cwd=tmp_path),
              "pyproject.toml: not read: not a regular file inside the plugin checkout")


def test_a_packaging_file_linked_inside_the_checkout_is_read(tmp_path):
    root = tmp_path / "plugin"
    write_tree(root, {**CODE, "packaging/pyproject.toml": PYPROJECT})
    (root / "pyproject.toml").symlink_to(root / "packaging" / "pyproject.toml")
    assert [ep.value for ep in read_entry_points(root)] == ["acme.platform:activate"]


def test_requirements_and_modules_that_are_not_plain_files_are_skipped(tmp_path):
    root = tmp_path / "plugin"
    write_tree(root, CODE)
    os.mkfifo(root / "requirements.txt")
    (root / "requirements-dev.txt").symlink_to("/dev/zero")
    (tmp_path / "outside.txt").write_text("sglang==0.5.11\n")
    (root / "requirements-ci.txt").symlink_to(tmp_path / "outside.txt")
    os.mkfifo(root / "acme" / "fifo.py")
    (root / "acme" / "zero.py").symlink_to("/dev/zero")
    (tmp_path / "elsewhere.py").write_text("import os\n")
    (root / "acme" / "linked_out.py").symlink_to(tmp_path / "elsewhere.py")
    (root / "acme" / "linked_in.py").symlink_to(root / "acme" / "platform.py")
    assert declared_pins(root) == []  # returns: nothing blocked, nothing outside read
    # the CLI on that checkout: nothing hangs; each such module is a file that cannot be read, saying why
    proc = _harness("check", "--plugin", str(root), "--upstream", "sglang==0.5.23", "--entry", "acme.platform",
                    "--json", cwd=tmp_path)
    assert proc.returncode in (0, 1, 3) and "Traceback" not in proc.stderr, proc.stderr
    unreadable = {f["file"]: f["detail"] for f in json.loads(proc.stdout)["findings"] if f["kind"] == "file"}
    assert sorted(unreadable) == ["acme/fifo.py", "acme/linked_out.py", "acme/zero.py"], unreadable
    assert "cannot be read: not a regular file (a FIFO, a device or a socket)" in unreadable["acme/fifo.py"]
    for linked in ("acme/zero.py", "acme/linked_out.py"):  # /dev/zero is outside the checkout too
        assert "cannot be read: a link leading out of the plugin checkout" in unreadable[linked]


@pytest.fixture
def upstream_repo(tmp_path) -> Path:
    repo = tmp_path / "sglang"
    write_tree(repo, {"python/sglang/__init__.py": "", "python/sglang/srt/__init__.py": ""})
    git.Repo.init(repo)
    return repo


def _commit(repo: Path) -> None:
    r = git.Repo(repo)
    r.git.add("-A")
    r.git.commit("-qm", "tree", "--author", "a <a@b>")


@pytest.mark.parametrize("ref", ["HEAD:../x", "HEAD:python", "--all", "HEAD^{tree}"])
def test_a_git_ref_that_is_not_a_commit_is_one_line(upstream_repo, tmp_path, ref):
    _commit(upstream_repo)
    proc = _harness("index", f"{upstream_repo}@{ref}", cwd=tmp_path)
    _one_line(proc, f"unknown git ref {ref!r}")


@pytest.mark.parametrize("link", ["relative_out", "absolute"])
def test_a_git_tree_with_a_link_leading_out_is_refused_and_nothing_outside_is_written(upstream_repo, tmp_path, link):
    target = "../../../../../../etc" if link == "relative_out" else "/etc/passwd"
    (upstream_repo / "python" / "sglang" / "srt" / "evil").symlink_to(target)
    _commit(upstream_repo)
    cache = tmp_path / "cache"
    proc = subprocess.run([sys.executable, "-m", "harness", "index", f"{upstream_repo}@HEAD"], capture_output=True, text=True,
                          timeout=120, cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(REPO_ROOT), "HARNESS_CACHE_DIR": str(cache)})
    _one_line(proc, f"{upstream_repo}@HEAD: refused: python/sglang/srt/evil is a link leading outside the tree")
    assert not list(cache.glob("src/git-*"))  # no half tree kept
