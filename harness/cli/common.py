"""What the workflow commands and `upgrade` share: the built-in example's defaults, the
--workspace option and workspace checks, progress lines, and plugin / SPEC / runbook checks
that turn bad input into one line."""

from __future__ import annotations

import os
import re
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path

import typer
from rich.text import Text

from harness.cli.console import err
from harness.cli.paths import resolved
from harness.engines import ENGINES
from harness.errors import HarnessError
from harness.knowledge.upstream import RELEASE_SPEC, UNREACHABLE, cache_dir
from harness.record.layout import Workspace, utc_now
from harness.util.interrupts import keeping_signals, raise_kept

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
EXAMPLE_WORKSPACE = EXAMPLES / "workspace"
DEFAULT_UPSTREAM = "sglang==0.5.23"
DEFAULT_FROM = "sglang==0.5.17"
DEFAULT_FEATURE = "kv-pool-factory"

# Exit codes of `status` beyond 0 and 2 (bad input)
EVIDENCE_CHANGED = 1  # an approval is invalidated, evidence changed since its step produced it, or the run record
                      # (journal chain, run.json, runbook) changed since the run started
RESUME_STATE_GONE = 3  # an unfinished run's resume state is missing or unreadable: `harness repair`
LOG_LINE_EVERY_S = 5.0  # non-terminal output: at most one progress line this often, besides step starts

WorkspaceOpt = typer.Option(
    None, "--workspace", "-w", help="Workspace holding .harness/ state and reports/ (default: current dir)."
)


def open_workspace(path: Path | None, *, writes: bool = False) -> Workspace:
    """The workspace at `path` (default: the current directory), resolved. HarnessError when it
    cannot be resolved (a symlink loop), is not a directory, cannot be read, or — with `writes`,
    for a command that records runs — cannot hold `.harness/` (e.g. /proc)."""
    root = resolved(path or Path.cwd(), "workspace")
    if not root.is_dir():
        raise HarnessError(f"workspace {root} is not a directory")
    if not os.access(root, os.R_OK | os.X_OK):
        raise HarnessError(f"workspace {root} is not readable (permission denied)")
    ws = Workspace(root)
    if writes:
        # A probe directory in the deepest of .harness/runs, .harness, the root that exists: a
        # command that then fails on other input leaves the workspace as it found it.
        where = next(d for d in (ws.runs_dir, ws.harness_dir, root) if d.is_dir())
        try:
            os.rmdir(tempfile.mkdtemp(prefix=".probe-", dir=where))
        except OSError as exc:
            raise HarnessError(f"workspace {root} cannot hold run state: cannot create {ws.runs_dir}: "
                               f"{exc.strerror or exc}; nothing was recorded") from None
    return ws


def open_runs_workspace(path: Path | None, *, writes: bool = False) -> Workspace:
    """The workspace of a command on its runs (`writes`: one that starts or rebuilds runs), after
    stopping every process a killed harness left running there (said on stderr, as is each job
    left recorded because the Slurm controller could not be asked)."""
    from harness.record.processes import sweep_workspace

    ws = open_workspace(path, writes=writes)
    stopped, left = sweep_workspace(ws)
    for run_id, record in stopped:
        err.print(f"stopped an orphan of run {run_id} (its harness process {record.owner_pid} is gone): "
                  f"{record.describe()}")
    for line in left:
        err.print(Text(f"harness: {line}"), soft_wrap=True)  # one line, however long
    return ws


# A Slurm job submitted, requeued, running (harness.evidence.launchers): always a line, so the
# console names each job even when it starts at once (its pending lines stay in the spinner).
_JOB_LINE = re.compile(r"slurm job \d+ (submitted|requeued|running) ")


@contextmanager
def progress_lines(what: str) -> Iterator:
    """A spinner on stderr for the slow parts; each step's start is also printed as a line. A
    log or CI pipe shows no spinner: there a message becomes a line once LOG_LINE_EVERY_S seconds
    passed without one (a health wait reports every 10 s), so a long wait is never silent and a
    quick command prints nothing extra. A Ctrl-C Python swallowed in a finaliser meanwhile
    (harness.util.interrupts) is raised at the next message."""
    terminal = err.is_terminal
    last_line = [time.monotonic()]
    with keeping_signals(), err.status(Text(what)) as status:  # a str status is parsed as markup: Text keeps it text

        def update(message: str) -> None:
            raise_kept()
            now = time.monotonic()
            if message.startswith("step ") or _JOB_LINE.match(message) \
                    or (not terminal and now - last_line[0] >= LOG_LINE_EVERY_S):
                err.print(Text.assemble((utc_now(), "dim"), " ", message))
                last_line[0] = now
            status.update(Text(message))

        yield update


@contextmanager
def resumable(workspace: Workspace, run_id: str | None) -> Iterator[None]:
    """Ctrl-C inside: one line naming the command that continues run `run_id`, exit 130 (the run's
    journal keeps what finished; `resume` redoes the step it stopped in). Before the run is
    recorded (`run_id` None while `run` checks its inputs, or no run.json yet) there is nothing
    to resume, and the line says so: the user knows not to look for a run. A Ctrl-C Python
    swallowed in a finaliser on the way ends the command the same way, at the next progress
    line or when the work inside returns."""
    try:
        with keeping_signals():
            yield
            raise_kept()
    except KeyboardInterrupt:
        if run_id is not None and workspace.run(run_id).exists():
            line = f"harness: interrupted; continue run {run_id} with: harness resume {run_id}{cli_ref(workspace)}"
        else:
            line = "harness: interrupted before the run started; nothing was recorded"
        err.print(line, markup=False, highlight=False)
        raise SystemExit(130) from None


def cli_ref(workspace: Workspace) -> str:
    return "" if workspace.root == Path.cwd().resolve() else f" --workspace {workspace.root}"


# --------------------------------------------------------------------------- inputs


ENGINE = typer.Option(
    None, "--engine", metavar="|".join(ENGINES),
    help="The upstream engine; default: the one a release the command is given names (sglang==X or vllm==X, as --upstream, --from, --to or SPEC; a plugin serving both engines is read for it), else the one the plugin's entry points name, else the package its modules import most, else sglang.",
)


def use_plugin_engine(ctx: typer.Context, plugin: Path | None, spec: str | None, engine: str | None) -> None:
    """Read the plugin as a plugin of its engine (harness.engines.use_engine) until the command returns.
    HarnessError (one line) for a spec of the other engine."""
    from harness.engines import use_engine
    from harness.knowledge.model import detect_engine

    chosen = detect_engine(plugin, spec, engine) if plugin is not None else None
    if chosen is None:  # no plugin: the spec's release names the engine, else --engine
        from harness.engines import engine_named, engine_of_spec

        chosen = engine_named(engine) if engine else engine_of_spec(spec)
    if chosen is not None:
        ctx.with_resource(use_engine(chosen))


def validate_plugin(path: Path) -> Path:
    """A plugin is a project declaring the engine's entry points (sglang.srt.platforms /
    sglang.srt.plugins for SGLang; vllm.platform_plugins, vllm.general_plugins, … for vLLM)."""
    # cost: tomllib, the knowledge records
    from harness.engines import profile
    from harness.knowledge.model import read_entry_points

    path = resolved(path, "plugin path")
    if not path.is_dir():
        raise HarnessError(f"plugin path {path} is not a directory")
    if not any(read_entry_points(path, engine.groups) for engine in ENGINES.values()):
        engine = profile()
        project = enclosing_project(path)
        hint = f"; its project {project} declares them: pass --plugin {project}" if project else ""
        raise HarnessError(
            f"plugin path {path} is not {engine.article} {engine.display} plugin: no {' or '.join(engine.groups)} "
            f"entry points in pyproject.toml, setup.cfg or setup.py{hint}"
        )
    return path


def enclosing_project(path: Path, levels: int = 3) -> Path | None:
    """The nearest folder above `path` (at most `levels` up) that declares an engine's entry
    points, when `path` itself declares none and has no packaging of its own: `--plugin` given
    the package folder instead of the repo. None otherwise."""
    from harness.knowledge.model import read_entry_points

    if any((path / name).exists() for name in ("pyproject.toml", "setup.cfg", "setup.py")):
        return None
    for parent in list(path.resolve().parents)[:levels]:
        try:
            if any(read_entry_points(parent, engine.groups) for engine in ENGINES.values()):
                return parent
        except HarnessError:  # a malformed pyproject.toml above says nothing about this path
            return None
    return None


# How many uncommitted paths the plugin's commit line names before counting the rest
_DIRTY_SHOWN = 3


def plugin_commit(path: Path, workspace: Path | None = None) -> str | None:
    """The plugin checkout's HEAD (12 hex), marked when it has uncommitted changes, naming the
    first few (`git status --porcelain` paths, from the repo's top, "and N more"): the report's
    plugin line then shows what the run was made from beside the commit, e.g. the runbook.yaml
    just written. None outside git. What harness itself writes into `workspace` (reports/,
    .harness/), when that lies in the checkout (a workspace inside the plugin repo), is not a
    change of the plugin."""
    import git  # cost: gitpython loads only for `run`

    try:
        repo = git.Repo(path, search_parent_directories=True)
        head = repo.head.commit.hexsha[:12]
        top = Path(repo.working_tree_dir or path).resolve()
    except (git.InvalidGitRepositoryError, git.NoSuchPathError, ValueError):
        return None
    paths = ["--", str(path)]
    for name in ("reports", ".harness") if workspace is not None else ():
        own = (workspace / name).resolve()
        if own.is_relative_to(top):
            paths.append(f":(exclude,top){own.relative_to(top).as_posix()}")
    # -z: paths as they are (no quoting); a rename's or copy's entry is followed by its old path
    entries, dirty = iter(repo.git.status("--porcelain", "-z", *paths).split("\0")), []
    for entry in entries:
        if entry:
            dirty.append(entry[3:])
            if {"R", "C"} & set(entry[:2]):
                next(entries, None)
    if not dirty:
        return head
    more = f" and {len(dirty) - _DIRTY_SHOWN} more" if len(dirty) > _DIRTY_SHOWN else ""
    return f"{head} (with uncommitted changes: {', '.join(dirty[:_DIRTY_SHOWN])}{more})"


def default_source(spec: str) -> str:
    """The real release, from the wheel cache or the index; offline with nothing cached, one line
    on how to fill the cache."""
    from harness.knowledge.products import resolve  # cost: the knowledge engine

    try:
        resolve(spec)
        return spec
    except HarnessError as exc:
        if UNREACHABLE not in str(exc):
            raise
        raise HarnessError(
            f"{exc}, and {spec} is not in the wheel cache {cache_dir()}: on a machine that reaches the index, "
            f"run `harness fetch {DEFAULT_UPSTREAM} {DEFAULT_FROM}` and copy that cache here, or point "
            f"HARNESS_CACHE_DIR at a pre-filled one"
        ) from None


def absolute_spec(spec: str) -> str:
    """An upstream spec that means the same from any directory: PATH and PATH@REF get an
    absolute PATH (the run records it, and later commands may run elsewhere, with --workspace);
    a release spec is kept."""
    if RELEASE_SPEC.match(spec.strip()):
        return spec
    path = Path(spec).expanduser()
    if path.exists():
        return str(path.resolve())
    head, at, ref = spec.rpartition("@")
    if at and head and Path(head).expanduser().is_dir():
        return f"{Path(head).expanduser().resolve()}@{ref}"
    return spec


def checked_runbook(runbook: Path | None, engine: str | None = None, plugin: Path | None = None) -> Path | None:
    """The runbook as an absolute path, checked like a step will read it (harness.evidence.inputs),
    and, with `engine`, that it serves the engine of `plugin`; HarnessError `file:line: field:
    message` on the first problem. None stays None."""
    from harness.evidence.inputs import check_runbook  # cost: the evidence models

    if runbook is None:
        return None
    path = resolved(runbook, "runbook")
    if not path.exists():  # anything else there (a FIFO, a directory) is refused by the reader, by name
        raise HarnessError(f"runbook {path} does not exist")
    check_runbook(path, engine, f"plugin {plugin.name}" if plugin else "the plugin")
    return path


def check_feature_file(feature: str, feature_dirs: list[Path]) -> None:
    """A feature named by file (path, or ID in the feature dirs) must validate, reported as
    `file:line: field: message`, before anything else runs."""
    from harness.knowledge.products import (  # cost: the knowledge models
        feature_files,
        load_feature_file,
    )

    as_path = Path(feature)
    named = as_path.suffix in (".yaml", ".yml") and as_path.exists()  # a FIFO or directory too: refused by name
    path = as_path if named else feature_files(feature_dirs).get(feature)
    if path is not None:
        load_feature_file(path)


def new_run_id(workspace: Workspace, feature_id: str) -> str:
    slug = re.sub(r"[^A-Za-z0-9]+", "-", feature_id.split(".")[-1]).strip("-").lower()[:40] or "run"
    stamp = datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S")
    run_id, n = f"{slug}-{stamp}", 1
    while workspace.run(run_id).exists():
        n += 1
        run_id = f"{slug}-{stamp}-{n}"
    return run_id


# --------------------------------------------------------------------------- commands
