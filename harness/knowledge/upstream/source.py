"""One notion of "an upstream engine version" (SGLang, vLLM: harness.engines), whatever the
user points at.

A SPEC is one of
  sglang==0.5.19   a release: the wheel from the package index (it carries the full source;
  vllm==0.27.1     of vLLM's 300 MB wheel only `vllm/**.py` and METADATA are unpacked),
  PATH@REF         a git clone at a tag / branch / commit, read without touching its work tree,
  PATH             a directory holding the package (`sglang/`, or `python/sglang/` as in SGLang's
                   repo; `vllm/`): the engine in force (harness.engines.profile) says which.

Releases and git trees are unpacked once into a content-addressed cache and reused; a plain
directory is read in place. What the cache holds is data read against its expected shape: a
release record (`releases/<dist>-<version>.json`) names a fingerprint only (its tree is always
`src/<fingerprint>`), a manifest lists plain relative paths inside the package; a file that is not that is ignored and rebuilt, so a shared
or CI-restored cache can never point harness outside it.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

import msgspec

from harness.engines import ENGINES, EngineProfile, profile
from harness.errors import HarnessError

UNREACHABLE = "cannot reach the package index"
RELEASE_SPEC = re.compile(
    rf"^(?P<dist>{'|'.join(re.escape(e.distribution) for e in ENGINES.values())})\s*==\s*(?P<version>[0-9][0-9A-Za-z.+\-]*)$"
)
_RELEASE_FINGERPRINT = re.compile(r"release-[0-9a-f]{20}")
# What a release's Python source may unpack to (vLLM 0.27: 4,000 files, ~40 MB): a bound a
# crafted wheel cannot push the cache past
_MEMBER_BYTES, _WHEEL_SOURCE_BYTES = 16 << 20, 1 << 30
# A path under the source root inside the package: plain names only (no `..`, `.`, empty parts).
_PACKAGE_PATH = {e.package: re.compile(rf"{re.escape(e.package)}(?:/(?!\.\.?(?:/|$))[^/\0\\]+)+") for e in ENGINES.values()}


def cache_dir() -> Path:
    """Where unpacked sources and indexes live; HARNESS_CACHE_DIR moves it (CI, tests)."""
    root = os.environ.get("HARNESS_CACHE_DIR") or Path.home() / ".cache" / "harness"
    return Path(root)


def _trusted(st: os.stat_result) -> bool:
    """What a cache entry must be for this user to read it: owned by this user (or root), and
    writable by nobody else. A shared or restored cache directory may hold files other users
    wrote or can rewrite; those are never read (the entry is rebuilt), as ssh treats keys."""
    return st.st_uid in (os.getuid(), 0) and not st.st_mode & 0o022


def read_cache_file(path: Path) -> bytes | None:
    """The bytes of cache file `path`, or None when it is absent or not to be trusted: not a
    regular file (a link, a FIFO), or owned or writable by another user (`_trusted`). The
    caller then rebuilds the entry and replaces it (`write_cache_file`)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as handle:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or not _trusted(st):
            return None
        return handle.read()


def write_cache_file(path: Path, data: bytes) -> None:
    """Write cache file `path` atomically (a temp file in its directory, renamed over it), mode
    0644 whatever the umask: a file others can write would not be read back (`read_cache_file`)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _trusted_tree(root: Path) -> bool:
    """An unpacked tree (`src/<fingerprint>`) this user may read: its directory and its
    `.complete` marker pass `_trusted` (`_unpack_atomically` leaves nothing in it writable by
    others, so nobody else can have added or changed a file since). `root` may be a link to a
    tree kept elsewhere (a cache seeded from another), when this user or root made the link."""
    try:
        link = os.lstat(root)
        if stat.S_ISLNK(link.st_mode) and link.st_uid not in (os.getuid(), 0):
            return False
        return root.is_dir() and all(_trusted(os.stat(p)) for p in (root, root / ".complete"))
    except OSError:
        return False


@dataclass(frozen=True)
class UpstreamSource:
    spec: str  # as the user gave it
    kind: str  # "release" | "git" | "path"
    label: str  # short human name: "sglang==0.5.23", "repo@v0.5.23 (abc1234)", a path
    root: Path  # the directory that contains the package (`sglang/`, `vllm/`)
    fingerprint: str  # identifies the content; keys the symbol-index cache
    version: str | None = None  # release version or git ref
    git_repo: Path | None = None
    git_commit: str | None = None
    repo_prefix: str = ""  # path of `root` inside the git repo ("python/" in SGLang's own repo)
    files: dict[str, str] = field(default_factory=dict, compare=False, repr=False)
    """relative path of every .py file under root/<package> -> content hash (blake2b-128)."""
    package: str = field(default_factory=lambda: profile().package)  # the engine's import name

    @property
    def package_dir(self) -> Path:
        return self.root / self.package

    @property
    def content_fingerprint(self) -> str:
        """Identifies the content alone. Equals `fingerprint` for releases and git trees; a
        plain directory's `fingerprint` also covers mtimes (a cheap cache key), this does not."""
        if self.kind != "path":
            return self.fingerprint
        digest = hashlib.blake2b(digest_size=10)
        for rel, content in sorted(self.files.items()):
            digest.update(f"{rel}\0{content}\n".encode())
        return f"content-{digest.hexdigest()}"


def resolve_upstream(spec: str) -> UpstreamSource:
    """The source a SPEC names (see the module docstring): a release of the engine its
    distribution names, a git tree or directory holding the package of the engine in force.
    HarnessError (one line) for a spec that names nothing."""
    spec = spec.strip()
    match = RELEASE_SPEC.match(spec)
    if match:
        return _release_source(spec, match["version"], _engine_of(match["dist"]))
    engine = profile()
    git_spec = split_git_spec(spec)
    if git_spec is not None:
        return _git_source(spec, *git_spec, engine)
    named = next((e for e in ENGINES.values() if spec.startswith(e.distribution)), None)
    if named is not None and not Path(spec).exists():
        raise HarnessError(f"upstream spec {spec!r}: write a release as {named.distribution}==X.Y.Z")
    return _path_source(spec, Path(spec).expanduser(), engine)


def split_git_spec(spec: str) -> tuple[Path, str] | None:
    """(repository, ref) of a `PATH@REF` spec whose PATH is a directory; None for any other spec."""
    path_part, at, ref = spec.strip().rpartition("@")
    if at and path_part and Path(path_part).expanduser().is_dir():
        return Path(path_part).expanduser(), ref
    return None


def _engine_of(distribution: str) -> EngineProfile:
    return next(e for e in ENGINES.values() if e.distribution == distribution)


# ----------------------------------------------------------------------------- releases


def upstream_version(source: UpstreamSource) -> str | None:
    """The upstream version of a source: the release's, else `__version__` in <package>/version.py,
    or in _version.py, which vLLM's version.py imports it from (written by its build)."""
    if source.kind == "release" and source.version:
        return source.version
    for name in ("version.py", "_version.py"):
        try:
            text = (source.package_dir / name).read_text()
        except OSError:
            continue
        match = re.search(r"""__version__\s*=\s*(?:version\s*=\s*)?["']([^"']+)["']""", text)
        if match:
            return match.group(1)
    return None


def cached_release(version: str, engine: EngineProfile | None = None) -> UpstreamSource | None:
    """The release `version` of `engine` (default: the one in force) if it is already in the
    wheel cache, else None (nothing is downloaded)."""
    engine = engine or profile()
    fingerprint = _recorded_release(version, engine)
    if fingerprint is None:
        return None
    root = cache_dir() / "src" / fingerprint
    spec = engine.release_spec(version)
    return _with_manifest(UpstreamSource(spec, "release", spec, root, fingerprint, version, package=engine.package))


def cached_versions(engine: EngineProfile | None = None) -> list[str]:
    """Versions of `engine` (default: the one in force) whose release records the wheel cache
    holds, in file-name order (not checked: cached_release tells a complete one)."""
    prefix = f"{(engine or profile()).distribution}-"
    return [record.stem.removeprefix(prefix) for record in sorted((cache_dir() / "releases").glob(f"{prefix}*.json"))]


def _recorded_release(version: str, engine: EngineProfile) -> str | None:
    """The fingerprint the wheel cache records for release `version`, when its unpacked tree
    (`src/<fingerprint>`) is complete; None for no record, or one that is not a record
    (unreadable, another shape, a fingerprint that is not `release-<20 hex>`)."""
    try:
        info = _RELEASE_RECORD.decode(read_cache_file(cache_dir() / "releases" / f"{engine.distribution}-{version}.json") or b"")
    except msgspec.DecodeError:
        return None
    if not _RELEASE_FINGERPRINT.fullmatch(info.fingerprint):
        return None
    return info.fingerprint if _trusted_tree(cache_dir() / "src" / info.fingerprint) else None


class _ReleaseRecord(msgspec.Struct):
    """releases/<dist>-<version>.json. Its `root`, written for harness versions that read it,
    is never read: the tree is always src/<fingerprint>, so a record cannot point elsewhere."""

    fingerprint: str


_RELEASE_RECORD = msgspec.json.Decoder(_ReleaseRecord)


def _release_source(spec: str, version: str, engine: EngineProfile) -> UpstreamSource:
    label = engine.release_spec(version)
    fingerprint = _recorded_release(version, engine)
    if fingerprint is not None:
        root = cache_dir() / "src" / fingerprint
        return _with_manifest(UpstreamSource(spec, "release", label, root, fingerprint, version, package=engine.package))
    record = cache_dir() / "releases" / f"{engine.distribution}-{version}.json"
    with tempfile.TemporaryDirectory(prefix="harness-wheel-") as tmp:
        wheel = _download_wheel(label, Path(tmp))
        digest = _file_digest(wheel)
        root = cache_dir() / "src" / f"release-{digest[:20]}"
        if not _trusted_tree(root):
            _unpack_atomically(root, lambda dest: _extract_wheel_source(wheel, dest, engine))
    write_cache_file(record, json.dumps({"root": str(root), "fingerprint": f"release-{digest[:20]}"}).encode())
    return _with_manifest(UpstreamSource(spec, "release", label, root, f"release-{digest[:20]}", version, package=engine.package))


def _file_digest(path: Path) -> str:
    """sha256 of a file read in chunks (a vLLM wheel is 300 MB)."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _download_wheel(release: str, dest: Path) -> Path:
    """The wheel of `release` ("dist==version") downloaded into `dest`; HarnessError (one line)
    when the index lacks it or cannot be reached."""
    dist = release.split("==", 1)[0]
    base = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--disable-pip-version-check", "-q", "-d", str(dest)]
    attempts = [
        [release],
        # The wheel is tagged for one CPython; its Python source is the same for all of them.
        ["--python-version", "3.11", "--platform", "manylinux_2_34_x86_64", "--platform", "manylinux_2_28_x86_64", "--platform", "any", release],
    ]
    error = ""
    for extra in attempts:
        proc = subprocess.run(base + extra, capture_output=True, text=True)
        wheels = sorted(dest.glob(f"{dist}-*.whl"))
        if proc.returncode == 0 and wheels:
            return wheels[0]
        error = proc.stderr + proc.stdout
    available = re.search(r"\(from versions: ([^)]*)\)", error)
    known = [v.strip() for v in available.group(1).split(",") if v.strip() != "none"] if available else []
    if known:
        raise HarnessError(f"{release}: no such release on the package index (latest known: {', '.join(known[-5:])})")
    # pip says "from versions: none" both offline and when the index has no such package at all
    if available or re.search(r"(?i)(connection|resolve|network|timed out|unreachable|Max retries)", error):
        raise HarnessError(f"{release}: {UNREACHABLE} to download the release wheel")
    last = next((line for line in reversed(error.strip().splitlines()) if line.strip()), "no output")
    raise HarnessError(f"{release}: pip download failed: {last.strip()}")


def _extract_wheel_source(wheel: Path, dest: Path, engine: EngineProfile | None = None) -> None:
    """The wheel's `<package>/**.py` files and its METADATA (what the release requires) into
    `dest`; native libraries and data are left in the wheel. A member whose name is not a plain
    path inside the package (`..`, absolute, `.` parts) is left out rather than renamed into the tree.
    `engine`: the release's (default: the one in force)."""
    engine = engine or profile()
    metadata = re.compile(rf"{re.escape(engine.distribution)}-[A-Za-z0-9_.+]+\.dist-info/METADATA")
    total = 0
    with zipfile.ZipFile(wheel) as archive:
        for member in archive.infolist():
            if not (_is_module_path(member.filename, engine.package) or metadata.fullmatch(member.filename)):
                continue
            out = dest / member.filename
            out.parent.mkdir(parents=True, exist_ok=True)
            with archive.open(member) as source, open(out, "wb") as target:
                written = 0  # counted as decompressed: a member's header size may lie
                while chunk := source.read(1 << 20):
                    written += len(chunk)
                    total += len(chunk)
                    if written > _MEMBER_BYTES or total > _WHEEL_SOURCE_BYTES:
                        raise HarnessError(f"{wheel.name}: refused: {member.filename} unpacks past "
                                           f"{'16 MiB for one file' if written > _MEMBER_BYTES else '1 GiB of source in all'}")
                    target.write(chunk)


def release_requires_python(source: UpstreamSource) -> str | None:
    """The release's Requires-Python specifier (`>=3.10`), from its wheel's METADATA or a
    `pyproject.toml` beside the package ([project] requires-python); None when neither says."""
    from email.parser import Parser

    metadata = next(iter(sorted(source.root.glob(f"{source.package}-*.dist-info/METADATA"))), None)
    if metadata is not None:
        return Parser().parsestr(metadata.read_text(errors="replace"), headersonly=True).get("Requires-Python")
    if (source.root / "pyproject.toml").is_file():
        import tomllib

        try:
            found = tomllib.loads((source.root / "pyproject.toml").read_text()).get("project", {}).get("requires-python")
        except (tomllib.TOMLDecodeError, OSError, UnicodeDecodeError):
            return None
        return found if isinstance(found, str) else None
    return None


def release_requirements(source: UpstreamSource) -> dict[str, str]:
    """Distribution (canonical name) -> version specifier the upstream requires of it, from the
    release wheel's METADATA (`Requires-Dist`, extras and other platforms left out) or a
    `pyproject.toml` beside the package ([project] dependencies). Empty when neither is there
    (a release unpacked before harness kept its METADATA, a git tree)."""
    from email.parser import Parser

    from packaging.requirements import InvalidRequirement, Requirement
    from packaging.utils import canonicalize_name

    lines: list[str] = []
    metadata = next(iter(sorted(source.root.glob(f"{source.package}-*.dist-info/METADATA"))), None)
    if metadata is not None:
        lines = Parser().parsestr(metadata.read_text(errors="replace"), headersonly=True).get_all("Requires-Dist") or []
    elif (source.root / "pyproject.toml").is_file():
        import tomllib

        try:
            lines = tomllib.loads((source.root / "pyproject.toml").read_text()).get("project", {}).get("dependencies", [])
        except (tomllib.TOMLDecodeError, OSError, UnicodeDecodeError):
            lines = []
    found: dict[str, str] = {}
    for line in lines:
        try:
            requirement = Requirement(str(line))
        except InvalidRequirement:
            continue
        if requirement.marker is not None and not requirement.marker.evaluate({"extra": ""}):
            continue
        if requirement.specifier:
            found[canonicalize_name(requirement.name)] = str(requirement.specifier)
    return found


# ----------------------------------------------------------------------------- git


def _git_source(spec: str, repo_path: Path, ref: str, engine: EngineProfile) -> UpstreamSource:
    import git  # gitpython; imported here so a plain `harness --help` stays fast

    try:
        repo = git.Repo(repo_path, search_parent_directories=False)
    except (git.InvalidGitRepositoryError, git.NoSuchPathError):
        raise HarnessError(f"{repo_path}: not a git repository (spec {spec!r})") from None
    try:
        # `REF:path` names a tree or blob, and one leading out of the tree fails inside gitpython (KeyError)
        commit = repo.commit(ref)
    except (git.BadName, ValueError, KeyError, git.GitCommandError):
        raise HarnessError(f"{repo_path}: unknown git ref {ref!r}: give a branch, tag or commit") from None
    prefix = next((p for p in engine.source_prefixes if _tree_has(commit.tree, p)), None)
    if prefix is None:
        raise HarnessError(f"{repo_path}@{ref}: no {' or '.join(p + '/' for p in engine.source_prefixes)} package in that commit")
    fingerprint = f"git-{commit.tree[prefix].hexsha[:20]}"
    extracted = cache_dir() / "src" / fingerprint
    if not _trusted_tree(extracted):

        def archive_into(dest: Path) -> None:
            # `git archive` reads the object store only: the user's work tree and index stay untouched.
            with tempfile.TemporaryFile() as tar_file:
                repo.git.archive(commit.hexsha, prefix, format="tar", output_stream=tar_file)
                tar_file.seek(0)
                with tarfile.open(fileobj=tar_file) as tar:
                    try:
                        tar.extractall(dest, filter="data")
                    except tarfile.FilterError as exc:  # a link out of the tree, a device: nothing was written outside
                        raise HarnessError(f"{repo_path}@{ref}: refused: {_member_refusal(exc)}") from None

        _unpack_atomically(extracted, archive_into)
    repo_prefix = prefix[: -len(engine.package)]
    root = extracted / repo_prefix
    label = f"{repo_path.name}@{ref} ({commit.hexsha[:7]})"
    return _with_manifest(
        UpstreamSource(spec, "git", label, root, fingerprint, ref, repo_path.resolve(), commit.hexsha, repo_prefix, package=engine.package)
    )


def _member_refusal(exc: tarfile.FilterError) -> str:
    """One line for a tree member the `data` extraction filter refused (PEP 706): its path and
    why, without the link's target text beyond what tarfile resolved."""
    name = exc.tarinfo.name
    if isinstance(exc, (tarfile.AbsoluteLinkError, tarfile.LinkOutsideDestinationError)):
        return f"{name} is a link leading outside the tree"
    if isinstance(exc, tarfile.SpecialFileError):
        return f"{name} is not a regular file, directory or link"
    return f"{name}: {type(exc).__name__}"


def _tree_has(tree, path: str) -> bool:
    try:
        tree[path]
        return True
    except KeyError:
        return False


# ----------------------------------------------------------------------------- plain directory


def _path_source(spec: str, path: Path, engine: EngineProfile) -> UpstreamSource:
    if not path.exists():
        # a tag as git writes it (v0.5.23) is the release 0.5.23: advise the spelling accepted
        hint = f" (a release is written {engine.distribution}=={spec.removeprefix('v')})" if re.fullmatch(r"v?\d+(\.\d+)+\S*", spec) else ""
        raise HarnessError(f"upstream path {str(path)!r} does not exist{hint}")
    candidates = [path / prefix for prefix in engine.source_prefixes]
    if path.name == engine.package:
        candidates.insert(0, path)
    package = next((c for c in candidates if c.is_dir()), None)
    if package is None:
        raise HarnessError(f"upstream path {str(path)!r} holds no {engine.package}/ package")
    root = package.parent.resolve()
    stat_key = hashlib.blake2b(digest_size=10)
    for rel, st in _walk_py(root, engine.package):
        stat_key.update(f"{rel}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    return _with_manifest(UpstreamSource(spec, "path", str(root), root, f"path-{stat_key.hexdigest()}", package=engine.package))


# ----------------------------------------------------------------------------- shared


def _unpack_atomically(target: Path, fill) -> None:
    """Fill a temp dir, then rename it into place, so a crash never leaves half a tree. Trees are
    named by their content (a wheel's digest, a git tree's id): where another process (a second
    `check`, a parallel test worker) finished the same tree first, its tree is kept, never removed
    under the process reading it."""
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=target.name + ".", dir=target.parent))
    try:
        fill(staging)
        if _trusted_tree(target):
            return
        (staging / ".complete").touch()
        for dirpath, _, filenames in os.walk(staging):  # nothing in it writable by others: see _trusted_tree
            os.chmod(dirpath, 0o755)
            for name in filenames:
                os.chmod(os.path.join(dirpath, name), 0o644)
        if target.is_symlink() or target.is_file():
            target.unlink()  # a planted link is replaced, what it points at left alone
        elif target.exists():
            shutil.rmtree(target)
        staging.rename(target)
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)


def _walk_py(root: Path, package: str):
    base = len(str(root)) + 1
    for dirpath, dirnames, filenames in os.walk(root / package):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        for name in sorted(filenames):
            if name.endswith(".py"):
                full = os.path.join(dirpath, name)
                yield full[base:], os.stat(full)


def _with_manifest(source: UpstreamSource) -> UpstreamSource:
    """Attach the per-file content hashes, cached per fingerprint (they never change for it)."""
    manifest_file = cache_dir() / "manifests" / f"{source.fingerprint}.json"
    cached = read_cache_file(manifest_file)
    try:
        files = _MANIFEST.decode(cached) if cached is not None else None
    except msgspec.DecodeError:
        files = None
    # a path that is not a plain one under the package would make the index read outside the tree
    if files is not None and all(_is_module_path(rel, source.package) for rel in files):
        return _replace_files(source, files)
    files = {}
    for rel, _ in _walk_py(source.root, source.package):
        with open(source.root / rel, "rb") as handle:
            files[rel] = hashlib.blake2b(handle.read(), digest_size=16).hexdigest()
    write_cache_file(manifest_file, json.dumps(files).encode())
    return _replace_files(source, files)


_MANIFEST = msgspec.json.Decoder(dict[str, str])


def _is_module_path(rel: str, package: str) -> bool:
    """`rel` names a .py/.pyi file inside `package`/ by plain names: joined to a root it stays there."""
    return rel.endswith((".py", ".pyi")) and _PACKAGE_PATH[package].fullmatch(rel) is not None


def _replace_files(source: UpstreamSource, files: dict[str, str]) -> UpstreamSource:
    return dataclasses.replace(source, files=files)


# ----------------------------------------------------------------------------- the newest release


def latest_release(engine: EngineProfile | None = None) -> str:
    """The newest final release of `engine` (default: the one in force) on the package index pip
    is configured for (pip's own `index versions`, so PIP_INDEX_URL, pip.conf and extra indexes
    count as for any install). HarnessError (one line) when the index cannot be reached or lists
    no final release."""
    from packaging.version import InvalidVersion, Version

    dist = (engine or profile()).distribution
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "index", "versions", dist, "--disable-pip-version-check"],
        capture_output=True, text=True, check=False,
    )
    where = os.environ.get("PIP_INDEX_URL") or "pip's configured index"
    listed = re.search(r"^Available versions:(.*)$", proc.stdout, re.MULTILINE)
    if proc.returncode != 0 or not listed:
        last = next((line.strip() for line in reversed((proc.stderr + proc.stdout).splitlines()) if line.strip()), "no output")
        raise HarnessError(f"{UNREACHABLE} ({where}) to find the newest {dist} release ({last}); pass --to {dist}==X")
    versions = []
    for text in listed.group(1).split(","):
        try:
            version = Version(text.strip())
        except InvalidVersion:
            continue
        if not (version.is_prerelease or version.is_devrelease):
            versions.append(version)
    if not versions:
        raise HarnessError(f"the package index ({where}) lists no final {dist} release; pass --to {dist}==X")
    return str(max(versions))
