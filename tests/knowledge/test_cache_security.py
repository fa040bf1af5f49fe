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


# ----------------------------------------------------------------------------- another user's entries (issue 36, item 3)

def _hand_over(path: Path, how: str) -> None:
    """Make `path` what another user of a shared cache could have left: a file they own (needs
    root to stage: CI runs as root), or one anyone may rewrite."""
    if how == "other_owner":
        if os.getuid() != 0:
            pytest.skip("not run: staging another user's file needs root")
        os.chown(path, 4242, 4242)
    else:
        path.chmod(0o666)


@pytest.mark.parametrize("how", ["other_owner", "writable_by_others"])
def test_another_users_table_of_an_older_release_cannot_flip_check(upstream_repo, plugin_dir, cache, how):
    """The index table planted for the target release is v1's (a well-formed table, so shape checks
    pass): check must still fail on v2. Then the verdict memo itself, planted clean, is not returned."""
    args = ("check", "--plugin", str(plugin_dir), "--upstream", f"{upstream_repo}@v2")
    code, clean = harness_json(*args)
    assert code == 1
    code, _ = harness_json("check", "--plugin", str(plugin_dir), "--upstream", f"{upstream_repo}@v1")
    by_name = {p.name.split(".")[0]: p for p in (cache / "index").glob("*.msgpack")}
    old_tree, new_tree = (_tree_fingerprint(upstream_repo, tag) for tag in ("v1", "v2"))
    shutil.copyfile(by_name[old_tree], by_name[new_tree])  # v1's tables under v2's name
    _hand_over(by_name[new_tree], how)
    shutil.rmtree(cache / "checks")
    code, again = harness_json(*args)
    assert code == 1 and _without_clock(again) == _without_clock(clean), "a planted table changed the verdict"

    memo = next((cache / "checks").glob("*.json"))
    doc = json.loads(memo.read_text())
    memo.write_text(json.dumps({**doc, "findings": [f for f in doc["findings"] if not f.get("breaking")]}))
    _hand_over(memo, how)
    code, again = harness_json(*args)
    assert code == 1 and _without_clock(again) == _without_clock(clean), "a planted verdict was returned"


def _tree_fingerprint(repo: Path, tag: str) -> str:
    from harness.knowledge.upstream.source import resolve_upstream

    return resolve_upstream(f"{repo}@{tag}").fingerprint


def test_cache_entries_are_written_for_this_user_alone_whatever_the_umask(upstream_repo, plugin_dir, cache):
    old = os.umask(0o002)  # a group-writable default (Debian's user private groups)
    try:
        code, _ = harness_json("check", "--plugin", str(plugin_dir), "--upstream", f"{upstream_repo}@v2")
    finally:
        os.umask(old)
    assert code == 1
    # every file, and every directory of an unpacked tree (its files are read as the upstream): only
    # the kind folders (src/, index/, ...) may be group-writable, and what another user puts there is theirs
    written = [p for p in cache.rglob("*") if p.is_file() or p.is_relative_to(cache / "src") and p.parent != cache]
    assert any(p.parent.name == "index" for p in written)
    assert not [p for p in written if p.stat().st_mode & 0o022 and p != cache / "src"], "a cache entry others could rewrite"


def test_a_wheel_whose_source_unpacks_past_the_bound_is_refused(tmp_path):
    """A 16 MiB-plus module compresses to a few kB: the member is refused as it is decompressed,
    never written whole (the header's size is not trusted)."""
    from harness.errors import HarnessError

    wheel = tmp_path / "sglang-9.9.9-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("sglang/__init__.py", "")
        archive.writestr("sglang/big.py", b"#" * (17 << 20))
    assert wheel.stat().st_size < 200_000
    with pytest.raises(HarnessError, match=r"sglang-9.9.9-py3-none-any.whl: refused: sglang/big.py unpacks past 16 MiB"):
        _extract_wheel_source(wheel, tmp_path / "out")
    assert (tmp_path / "out" / "sglang" / "big.py").stat().st_size <= 16 << 20


def test_an_unpacked_tree_is_trusted_through_a_link_this_user_made_not_through_anothers(tmp_path):
    """A cache seeded from another (`src/<fp>` a link to a tree kept elsewhere, as the speed
    benchmarks do) is read; a tree or `.complete` others can rewrite is not."""
    from harness.knowledge.upstream.source import _trusted_tree

    tree = tmp_path / "kept" / "release-0123456789abcdef0123"
    (tree / "sglang").mkdir(parents=True)
    (tree / ".complete").touch()
    for path in (tree, tree / "sglang"):
        path.chmod(0o755)
    (tree / ".complete").chmod(0o644)
    link = tmp_path / "cache" / "src" / tree.name
    link.parent.mkdir(parents=True)
    link.symlink_to(tree, target_is_directory=True)
    assert _trusted_tree(tree) and _trusted_tree(link)
    (tree / ".complete").chmod(0o666)
    assert not _trusted_tree(link)
    (tree / ".complete").chmod(0o644)
    tree.chmod(0o775)
    assert not _trusted_tree(link)
    if os.getuid() == 0:  # another user's link (staging one needs root)
        tree.chmod(0o755)
        os.lchown(link, 4242, 4242)
        assert not _trusted_tree(link)


def test_a_tree_another_process_unpacked_first_is_kept_for_its_readers(tmp_path):
    """Two checks fetching the same release at once: the one finishing second keeps the first's
    tree (same content, named by it) instead of removing it under the first's feet."""
    from harness.knowledge.upstream.source import _unpack_atomically

    target = tmp_path / "src" / "release-abc"

    def fill(version):
        def write(dest: Path) -> None:
            (dest / "sglang").mkdir()
            (dest / "sglang" / "__init__.py").write_text(f"v = {version}\n")
            if version == 2:  # the other process finishes while this one still fills
                _unpack_atomically(target, fill(1))
                held.append(os.stat(target).st_ino)
        return write

    held: list[int] = []
    _unpack_atomically(target, fill(2))
    assert os.stat(target).st_ino == held[0]
    assert (target / "sglang" / "__init__.py").read_text() == "v = 1\n"
    assert [p.name for p in target.parent.iterdir()] == ["release-abc"]  # no staging left behind
