"""The wheel cache is data, never code: a file planted in a shared HARNESS_CACHE_DIR (the README
suggests one, and the generated CI workflow restores one with `restore-keys`) can at worst be
rejected and rebuilt. It never runs code, never makes harness read or write outside the cache,
and never turns `harness check`/`diff` into a traceback (issue 17, item 4)."""

from __future__ import annotations

import json
import os
import pickle
import shutil
import zipfile
from pathlib import Path

import pytest
from knowledge_support import by_target, harness, harness_json

from harness.knowledge.upstream.source import _extract_wheel_source

SCHED = "sglang.srt.managers.scheduler.Scheduler"
# Every kind of file the knowledge engine keeps under the cache directory.
CACHE_KINDS = ("index", "diffs", "checks", "manifests", "external", "releases")


class _Payload:
    """Unpickling this creates `marker`: what a planted cache file would do to the next reader."""

    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return exec, (f"open({str(self.marker)!r}, 'w').close()",)


def _cache_files(cache: Path) -> list[Path]:
    return sorted(p for kind in CACHE_KINDS for p in (cache / kind).glob("*") if p.is_file())


def _plant_pickles(cache: Path, marker: Path) -> dict[Path, bytes]:
    """Replace every symbol-index and diff cache file (and a legacy `.pickle` beside each) with a
    code-running pickle, under the exact names the next run loads."""
    planted = pickle.dumps(_Payload(marker), protocol=pickle.HIGHEST_PROTOCOL)
    files = [p for p in _cache_files(cache) if p.parent.name in ("index", "diffs")]
    assert any(p.parent.name == "index" for p in files), "the first run must have cached its index"
    written = {}
    for path in files:
        for target in (path, path.with_suffix(".pickle")):
            target.write_bytes(planted)
            written[target] = planted
    # the names pickle caches had before they became data (index v10, diff v10.2)
    for path in [p for p in files if p.parent.name == "index"]:
        legacy = path.parent / f"{path.name.split('.')[0]}.v10.pickle"
        legacy.write_bytes(planted)
    for path in [p for p in files if p.parent.name == "diffs"]:
        legacy = path.parent / f"{path.name.split('.')[0]}.v10.2.pickle"
        legacy.write_bytes(planted)
    return written


def _without_clock(doc: dict) -> dict:
    return {k: v for k, v in doc.items() if k not in ("generated_at", "seconds")}


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    """A cache of this test's own (the shared one is warmed by other tests)."""
    root = tmp_path / "cache"
    monkeypatch.setenv("HARNESS_CACHE_DIR", str(root))
    return root


def test_planted_pickles_never_run_in_check(upstream_repo, plugin_dir, cache, tmp_path):
    args = ("check", "--plugin", str(plugin_dir), "--upstream", f"{upstream_repo}@v2")
    code, clean = harness_json(*args)
    assert code == 1 and clean["passed"] is False
    marker = tmp_path / "pwned"
    planted = _plant_pickles(cache, marker)
    shutil.rmtree(cache / "checks")  # the verdict memo (JSON) is for unchanged inputs: a new plugin commit misses it

    code, again = harness_json(*args)

    assert not marker.exists(), "a planted cache file ran code"
    assert code == 1 and _without_clock(again) == _without_clock(clean)
    assert by_target(again["findings"])["sglang.srt.model_executor.model_runner.ModelRunner.init_threads_binding"]["status"] == "missing"
    live = [p for p in _cache_files(cache) if p.suffix != ".pickle"]
    index_files = [p for p in live if p.parent.name == "index"]
    assert index_files and all(p.read_bytes() != planted.get(p) for p in index_files), "the planted index was not replaced"


def test_planted_pickles_never_run_in_diff(upstream_repo, plugin_dir, cache, tmp_path):
    args = ("diff", "--from", f"{upstream_repo}@v1", "--to", f"{upstream_repo}@v2", "--plugin", str(plugin_dir), "--out", str(tmp_path / "out"))
    code, clean = harness_json(*args)
    assert code == 0 and clean["changes"]
    marker = tmp_path / "pwned"
    planted = _plant_pickles(cache, marker)

    code, again = harness_json(*args)

    assert not marker.exists(), "a planted cache file ran code"
    assert code == 0 and _without_clock(again) == _without_clock(clean)
    assert by_target(again["findings"])[f"{SCHED}.update_running"]["status"] == "body_changed"
    diffs = [p for p in _cache_files(cache) if p.parent.name == "diffs" and p.suffix != ".pickle"]
    assert diffs and all(p.read_bytes() != planted.get(p) for p in diffs), "the planted diff cache was not replaced"


@pytest.mark.parametrize("damage", ["truncated", "garbage", "empty", "wrong shape"])
def test_torn_cache_files_are_rebuilt(upstream_repo, plugin_dir, cache, tmp_path, damage):
    args = ("diff", "--from", f"{upstream_repo}@v1", "--to", f"{upstream_repo}@v2", "--plugin", str(plugin_dir), "--out", str(tmp_path / "out"))
    code, clean = harness_json(*args)
    assert code == 0
    for path in _cache_files(cache):
        data = path.read_bytes()
        path.write_bytes({
            "truncated": data[: len(data) // 2],
            "garbage": os.urandom(max(len(data), 64)),
            "empty": b"",
            # valid JSON, valid msgpack (fixarray of 3 ints), not the shape a cache record has
            "wrong shape": b"[1, 2, 3]" if path.suffix == ".json" else b"\x93\x01\x02\x03",
        }[damage])

    proc = harness(*args, "--json")

    assert proc.returncode == 0, proc.stderr
    assert _without_clock(json.loads(proc.stdout)) == _without_clock(clean)
    code, check = harness_json("check", "--plugin", str(plugin_dir), "--upstream", f"{upstream_repo}@v1")
    assert code == 0 and check["passed"] is True


def _outside_tree(root: Path) -> Path:
    """A complete-looking unpacked release outside the cache."""
    package = root / "sglang"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("__version__ = 'outside'\n")
    (root / ".complete").touch()
    return root


def test_release_record_cannot_point_outside_the_cache(plugin_dir, cache, tmp_path, monkeypatch):
    monkeypatch.setenv("PIP_NO_INDEX", "1")  # the honest fallback, a download, fails at once and offline
    outside = _outside_tree(tmp_path / "outside")
    record = cache / "releases" / "sglang-9.9.9.json"
    record.parent.mkdir(parents=True)
    # root: a tree outside the cache; fingerprint: a name that climbs out of manifests/ and index/
    record.write_text(json.dumps({"root": str(outside), "fingerprint": "../../outside/escaped"}))

    proc = harness("check", "--plugin", str(plugin_dir), "--upstream", "sglang==9.9.9")

    escaped = sorted(p.name for p in outside.iterdir() if p.name not in ("sglang", ".complete"))
    assert escaped == [], f"harness wrote outside the cache: {escaped}"
    assert proc.returncode == 2 and "cannot reach the package index" in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


def test_garbage_release_record_is_not_a_traceback(plugin_dir, cache, monkeypatch):
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    record = cache / "releases" / "sglang-9.9.9.json"
    record.parent.mkdir(parents=True)
    record.write_bytes(b"\x80\x04not json")

    proc = harness("check", "--plugin", str(plugin_dir), "--upstream", "sglang==9.9.9")

    assert proc.returncode == 2 and "cannot reach the package index" in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr


def test_manifest_cannot_name_files_outside_the_source(upstream_repo, cache, tmp_path):
    spec = f"{upstream_repo}@v1"
    code, clean = harness_json("index", spec)
    assert code == 0
    secret = tmp_path / "secret.py"
    secret.write_text("this is not python and must never be read (\n")
    [manifest] = (cache / "manifests").glob("*.json")
    files = json.loads(manifest.read_text())
    src = next((cache / "src").iterdir())
    climb = os.path.relpath(secret, src / "python")  # the source root is <src>/python
    files[climb] = "0" * 32
    files["sglang/../" + climb] = "0" * 32
    manifest.write_text(json.dumps(files))
    for path in (cache / "index").glob("*"):
        path.unlink()

    code, doc = harness_json("index", spec)

    assert code == 0
    assert doc["modules"] == clean["modules"] and doc["unparsable"] == clean["unparsable"] == []
    assert climb not in json.loads(manifest.read_text()), "the planted manifest was kept"


def test_wheel_members_outside_the_package_are_not_extracted(tmp_path):
    wheel = tmp_path / "sglang-0.0.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("sglang/__init__.py", "")
        archive.writestr("sglang/srt/ok.py", "x = 1\n")
        archive.writestr("sglang/../../evil.py", "boom\n")
        archive.writestr("/sglang/abs.py", "boom\n")
        archive.writestr("sglang/srt/../../sglang/shadow.py", "boom\n")
        archive.writestr("sglang-0.0.0.dist-info/METADATA", "Name: sglang\nRequires-Dist: torch==2.9.1\n")  # kept: what the release requires
        archive.writestr("sglang-0.0.0.dist-info/../../METADATA", "boom\n")
        archive.writestr("sglang-0.0.0.dist-info/RECORD", "")
    dest = tmp_path / "dest"
    dest.mkdir()

    _extract_wheel_source(wheel, dest)

    extracted = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*.py"))
    assert extracted == ["dest/sglang/__init__.py", "dest/sglang/srt/ok.py"]
    assert sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*") if p.is_file() and p.suffix != ".py" and p.name != wheel.name) == [
        "dest/sglang-0.0.0.dist-info/METADATA"]
