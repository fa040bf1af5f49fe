"""Upstream SPECs and the symbol index, on a small SGLang-shaped git repo."""

from __future__ import annotations

import pytest
from knowledge_support import git

from harness.errors import HarnessError
from harness.knowledge.upstream.index import load_index
from harness.knowledge.upstream.source import resolve_upstream


def test_git_ref_is_read_without_touching_the_work_tree(upstream_repo):
    (upstream_repo / "python/sglang/srt/managers/scheduler.py").write_text("# uncommitted edit\n")
    (upstream_repo / "scratch.txt").write_text("untracked\n")
    status_before = git(upstream_repo, "status", "--porcelain")
    head_before = git(upstream_repo, "rev-parse", "HEAD")
    try:
        v1 = resolve_upstream(f"{upstream_repo}@v1")
        assert v1.kind == "git" and v1.repo_prefix == "python/"
        assert "def update_running(self, batch):" in (v1.package_dir / "srt/managers/scheduler.py").read_text()
        assert git(upstream_repo, "status", "--porcelain") == status_before
        assert git(upstream_repo, "rev-parse", "HEAD") == head_before
    finally:
        git(upstream_repo, "checkout", "--", "python/sglang/srt/managers/scheduler.py")
        (upstream_repo / "scratch.txt").unlink()


def test_same_tree_is_cached_by_content(upstream_repo):
    first = resolve_upstream(f"{upstream_repo}@v2")
    second = resolve_upstream(f"{upstream_repo}@main")
    assert first.fingerprint == second.fingerprint and first.root == second.root


def test_plain_directory_spec(upstream_repo, tmp_path):
    source = resolve_upstream(str(upstream_repo / "python"))
    assert source.kind == "path" and "sglang/srt/server_args.py" in source.files
    assert resolve_upstream(str(upstream_repo)).root == source.root  # repo root with python/sglang


@pytest.mark.parametrize(
    "spec, message",
    [
        ("{repo}@no-such-tag", "unknown git ref 'no-such-tag'"),
        ("/definitely/not/here", "does not exist"),
        ("{empty}", "holds no sglang/ package"),
        ("sglang-0.5.1", "write a release as sglang==X.Y.Z"),
    ],
)
def test_bad_specs_raise_one_clear_error(spec, message, upstream_repo, tmp_path):
    with pytest.raises(HarnessError, match=message):
        resolve_upstream(spec.format(repo=upstream_repo, empty=tmp_path))


def test_resolution_follows_runtime_rules(upstream_repo):
    v1 = load_index(resolve_upstream(f"{upstream_repo}@v1"))
    v2 = load_index(resolve_upstream(f"{upstream_repo}@v2"))
    # sglang.srt is a namespace package (no __init__.py) and still resolves
    assert v1.resolve("sglang.srt.managers.scheduler.Scheduler.admit").ok
    # a star re-export through a package __init__
    memory = v2.resolve("sglang.srt.utils.get_available_memory")
    assert memory.ok and memory.ref.path == "sglang.srt.utils.memory.get_available_memory"
    # private names are not star-exported
    assert not v1.resolve("sglang.srt.utils._private_helper").ok
    # a method that moved into a base class in another module resolves through inheritance
    admit = v2.resolve("sglang.srt.managers.scheduler.Scheduler.admit")
    assert admit.ok and admit.owner == "sglang.srt.managers.base.BaseScheduler"
    # a method on the mixin resolves through the platform base
    assert v2.resolve("sglang.srt.platforms.interface.SRTPlatform.empty_cache").owner == "sglang.srt.platforms.device_mixin.DeviceMixin"
    missing = v2.resolve("sglang.srt.model_executor.model_runner.ModelRunner.init_threads_binding")
    assert not missing.ok and "has no attribute 'init_threads_binding'" in missing.note


def test_index_is_cached_per_fingerprint(upstream_repo, tmp_path, monkeypatch):
    monkeypatch.setenv("HARNESS_CACHE_DIR", str(tmp_path))  # other tests warm the shared cache
    source = resolve_upstream(f"{upstream_repo}@v1")
    index = load_index(source)
    assert index.index_all(workers=1) > 0
    index.save()
    again = load_index(source)
    assert again.index_all(workers=1) == 0  # everything came from the cache
    assert again.resolve("sglang.srt.platforms.interface.SRTPlatform.get_mha_kv_pool_cls").ok
