"""The upgrade bot: from the SGLang release a plugin declares to a newer one, find what breaks,
group it into features, start review runs (each driven to its first gate) for the first N
features in triage order — blockers first — one after another, or up to --parallel at once (each
then in its own process), and publish one report: summary.md (one screen), details.md (every feature,
the checklist, totals), issue.md (the summary without relative links, for an issue or a job
summary) and upgrade.json.

Idempotent: a feature's run id is made from the target version, the feature and a fingerprint
of the plugin's files, so a rerun on the same plugin content and target reuses its runs (a run
a killed process left mid-step is resumed); a changed plugin gets new runs."""

from __future__ import annotations

import hashlib
import os
import re
import shlex
from collections.abc import Callable
from pathlib import Path
from typing import Literal

from packaging.version import InvalidVersion, Version
from pydantic import BaseModel, Field, computed_field

from harness.agent.config import NOT_CONFIGURED
from harness.engines import profile
from harness.evidence.server import ServerRecord
from harness.errors import HarnessError
from harness.knowledge.model import declared_pins, module_source, plugin_module_files
from harness.knowledge.products import (
    FailsAt,
    Feature,
    FeatureDiff,
    FeatureKind,
    FeatureSpec,
    feature_diff,
    group_features,
    resolve,
)
from harness.knowledge.upstream import (
    RELEASE_SPEC,
    Commit,
    UpstreamSource,
    first_parent_commits,
    latest_release,
    split_git_spec,
    step_ends,
)
from harness.record.layout import Workspace, check_run_id, utc_now
from harness.record.models import AgentSettings, RunView
from harness.steps.served import SERVER_DIR
from harness.util.files import write_atomic
from harness.util.templates import render
from harness.workflow.fanout import Failed, run_all
from harness.workflow.runs import (
    check_workspace,
    decide,
    new_inputs,
    resume_run,
    run_status,
    start_run,
)

Progress = Callable[[str], None]
Through = Literal["alignment", "interface"]
UpgradeOutcome = Literal["up_to_date", "nothing_impacted", "waiting_for_review", "unverified"]
EXIT = {"up_to_date": 0, "nothing_impacted": 0, "waiting_for_review": 1, "unverified": 3}
BOT = "harness upgrade --through interface"
SHOWN = 8  # rows per list in summary.md: one screen; details.md has them all
DEFAULT_RUNS = 10  # review runs started per upgrade (the CLI's --runs default): a team reads the top first
_PACKAGING = ("pyproject.toml", "setup.cfg", "setup.py")


Severity = Literal["blocker", "path", "warning"]


class UpgradeStep(BaseModel):
    """One step of a git range split with --steps / --step-commits: the plugin checked against
    upstream at its last commit."""

    index: int  # 1-based
    range: str  # "<previous step's end>..<this step's end>" (10-hex shas): what `git log`/`git bisect` take
    upstream: str  # the spec it was checked at, "PATH@sha"
    commits: int  # first-parent commits in the range
    subject: str  # its last commit's subject
    introduced: list[str] = Field(default_factory=list)  # keys of findings first seen at this step


class Introduced(BaseModel):
    """Where a feature's first finding first appears along the stepped range."""

    step: int  # UpgradeStep.index
    range: str  # the step's range
    # the range's commits that touched its targets (`touching`), else the range's own, at most SHOWN
    commits: list[Commit] = Field(default_factory=list)
    touching: bool = False
    more: int = 0  # commits of the range not listed


class EngineJob(BaseModel):
    """The Slurm job a review run's engine ran in (a runbook with `launcher: slurm`), from the
    served step's server.json."""

    step: str  # the step slug, "02-interface"
    job_id: str
    node: str | None = None  # the head node Slurm chose
    started_at: float | None = None  # Unix seconds: the engine's launch (job submitted) ...
    stopped_at: float | None = None  # ... and its stop


class UpgradeFeature(BaseModel):
    """One feature of the upgrade (triage's Feature) and where its review run stands."""

    id: str
    title: str
    kind: FeatureKind = "impacted"  # "preexisting": already broken on --from
    risk: int
    why: str
    targets: list[str]
    breaking: bool
    fails_at: FailsAt | None = None  # when the plugin fails (triage); None: not decided
    fails_reason: str | None = None
    proof: str | None = None  # the upstream call site that proves it, "path/file.py:line"
    sites: list[str] = Field(default_factory=list)  # the plugin sites it touches, "file:line"
    run_id: str | None = None  # None: no run (not started yet, or nothing to review)
    # the run's state (waiting, finished, …); "not_started": beyond --runs, `start` starts it;
    # "not_run": no review run applies (undecidable, dead modules only, or preexisting); "error":
    # its run failed (`error` says why; `start` retries it, resuming what the run kept)
    state: str
    error: str | None = None
    verdicts: dict[str, str] = Field(default_factory=dict)  # step slug -> verdict, for the steps that ran
    reused: bool = False  # the run existed: same plugin content and target
    jobs: list[EngineJob] = Field(default_factory=list)  # launcher slurm: the job of each engine the run started
    report: str | None = None  # the run's summary.md, relative to the upgrade's folder
    approve: str | None = None  # the command that approves the gate it waits at
    start: str | None = None  # the one command that starts its run (state "not_started")
    introduced: Introduced | None = None  # with --steps: the step of the range that introduced it
    # "sha10 subject" of the upstream commit it comes from (the newest touching its target, `git
    # log -L`): two git upstreams of one repository only; SGLang's subjects end in "(#PR)"
    commit: str | None = None

    @property
    def commit_label(self) -> str | None:
        """"sha10 (PR #N)" (the PR number from the subject's trailing "(#N)"), "sha10" without one."""
        if self.commit is None:
            return None
        sha, _, subject = self.commit.partition(" ")
        pr = re.search(r"\(#(\d+)\)\s*$", subject)
        return f"{sha} (PR #{pr.group(1)})" if pr else sha

    @computed_field  # in upgrade.json too: what a reader of the JSON sorts and filters by
    @property
    def severity(self) -> Severity:
        """blocker: fails at import or engine start; path: breaks a model/feature path (or breaks,
        when not decided); warning: never fails."""
        if self.fails_at in ("import", "startup"):
            return "blocker"
        if self.fails_at == "path" or (self.fails_at is None and self.breaking):
            return "path"
        return "warning"


class UpgradeReport(BaseModel):
    """What `harness upgrade` found and did; `--json` prints it."""

    plugin: str
    plugin_fingerprint: str
    engine: str = "SGLang"  # the upstream engine's display name (EngineProfile.display, harness.engines)
    from_spec: str
    from_source: str | None = None  # where `--from auto` read from_spec ("Dockerfile:2"); None: given
    to_spec: str
    outcome: UpgradeOutcome
    exit_code: int
    through: Through
    through_note: str | None = None  # why a later step did not run
    commits_note: str | None = None  # why no feature names its upstream commit (release wheels carry no history)
    runs: int = DEFAULT_RUNS  # --runs: review runs started for the first N features
    # every feature a review decides, in triage order (blockers first); those beyond --runs have
    # no run yet: state "not_started" and the command that starts one
    features: list[UpgradeFeature] = Field(default_factory=list)
    unchecked: list[UpgradeFeature] = Field(default_factory=list)  # could not be decided statically
    dead: list[UpgradeFeature] = Field(default_factory=list)  # only in modules the engine never loads: no run
    preexisting: list[UpgradeFeature] = Field(default_factory=list)  # already broken on --from: no run
    steps: list[UpgradeStep] = Field(default_factory=list)  # --steps / --step-commits: the range, step by step
    checklist: list[str] = Field(default_factory=list)
    totals: dict[str, int] = Field(default_factory=dict)
    summary: str | None = None  # path of summary.md
    details: str | None = None  # path of details.md
    generated_at: str

    def severity_counts(self) -> dict[Severity, int]:
        """How many features of `features` are blockers, break a path, or only warn."""
        counts: dict[Severity, int] = {"blocker": 0, "path": 0, "warning": 0}
        for feature in self.features:
            counts[feature.severity] += 1
        return counts


def from_spec_of(plugin: Path, given: str, to: str | None = None, progress: Progress = lambda m: None) -> tuple[str, str | None]:
    """--from as (spec, where the plugin declares it: "Dockerfile:2"; None when `given` is not
    `auto`). `auto` reads what the plugin declares (model.plugin.declared_pins): the commit of
    upstream main it pins, in the repository of a `--to PATH@REF` (a main-to-main job), else the
    first release it pins (a range: its lower bound). HarnessError (one line, naming the engine's
    pip name) when it declares none."""
    if given != "auto":
        return given, None
    engine = profile()
    pins = declared_pins(plugin)
    git_to = split_git_spec(to) if to else None
    pin = next((p for p in pins if p.form == "commit"), None) if git_to else None
    pin = pin or next((p for p in pins if p.form == "release"), None)
    if pin is None:
        where = ", ".join(["requirements", "packaging metadata", *engine.pin_files, "docs conf.py", "version.py",
                           "Dockerfile/Containerfile", "install scripts", "README"])
        raise HarnessError(f"no declared {engine.distribution} version in {plugin} ({where}): cannot tell which "
                           f"{engine.display} the plugin targets; pass --from {engine.distribution}==X")
    spec = f"{git_to[0]}@{pin.value}" if pin.form == "commit" else engine.release_spec(pin.value)
    progress(f"--from auto: {spec} (declared in {pin.source})")
    return spec, pin.source


def to_spec_of(given: str, progress: Progress) -> str:
    """--to: `latest` asks the package index pip is configured for."""
    if given != "latest":
        return given
    progress(f"asking the package index for the newest {profile().distribution} release")
    latest = profile().release_spec(latest_release())
    progress(f"resolving --to latest: {latest}")
    return latest


def _version(spec: str) -> Version | None:
    match = RELEASE_SPEC.match(spec.strip())
    try:
        return Version(match["version"]) if match else None
    except InvalidVersion:
        return None


def _label(spec: str) -> str:
    version = _version(spec)
    return str(version) if version else re.sub(r"[^A-Za-z0-9.]+", "-", spec).strip("-")[-40:]


def plugin_fingerprint(plugin: Path) -> str:
    """The plugin's content: its module files and packaging files, by content."""
    digest = hashlib.blake2b(digest_size=8)
    files = sorted(path for path, _ in plugin_module_files(plugin).values()) + [plugin / n for n in _PACKAGING]
    for path in files:
        try:  # what the scan would read: a FIFO, a device or a link out counts as unreadable
            digest.update(f"{path.relative_to(plugin)}\0".encode() + module_source(path, plugin) + b"\0")
        except OSError:
            continue
    return digest.hexdigest()


def upgrade_dir(workspace: Workspace, from_spec: str, to_spec: str) -> Path:
    """reports/upgrade-<from>-to-<to>/ under the workspace."""
    return workspace.root / _folder(from_spec, to_spec)


def _folder(from_spec: str, to_spec: str) -> str:
    return f"reports/upgrade-{_label(from_spec)}-to-{_label(to_spec)}"


def run_upgrade(workspace: Workspace, plugin: Path, from_spec: str, to_spec: str, *, through: Through = "alignment",
                runbook: Path | None = None, plugin_commit: str | None = None, agent: AgentSettings | None = None,
                runs: int = DEFAULT_RUNS, only: list[str] | None = None, steps: int | None = None,
                step_commits: int | None = None, progress: Progress = lambda m: None,
                from_source: str | None = None, parallel: int = 1) -> UpgradeReport:
    """Diff `from_spec` → `to_spec` with the plugin, start (or reuse) a run, up to its first gate,
    for each of the first `runs` features in triage order (or, with `only`, for exactly the
    features of those ids), write summary.md, details.md, issue.md and upgrade.json; returns the
    report. A feature whose run exists from an earlier upgrade is always reported with it. With
    `through="interface"` and an `agent`, each run goes on through the interface step (the
    agent's draft, checked on its worktree) and waits at the interface gate; the alignment gate
    is then approved by the bot, in its name, so the journal and report say who passed it.
    With `steps` (N steps) or `step_commits` (a step per K commits) on two git refs of one
    repository, the plugin is also checked at the end of each step of the first-parent range
    (one check per step, each said on `progress`) and every feature names the step, commit range
    and commits that introduced it (`steps_through`).
    With `parallel` above 1, up to that many runs go at once, each in its own process
    (harness.workflow.fanout), their progress messages prefixed "[<feature id>] "; the report is
    the same as one after another. A run that fails is its feature's state "error" with the
    reason, the others go on.
    HarnessError for `runs` below 0, `parallel` below 1, an `only` id that is not a feature with a
    review to start, or steps asked of anything but two refs of one git repository."""
    if runs < 0:
        raise HarnessError(f"--runs {runs}: give 0 or more review runs to start")
    if parallel < 1:
        raise HarnessError(f"--parallel {parallel}: give 1 or more review runs at once")
    stepped = steps is not None or step_commits is not None
    if stepped:
        _check_stepping(from_spec, to_spec, steps, step_commits)
    fingerprint = plugin_fingerprint(plugin)
    old_v, new_v = _version(from_spec), _version(to_spec)
    base = {"plugin": str(plugin), "plugin_fingerprint": fingerprint, "engine": profile().display,
            "from_spec": from_spec, "from_source": from_source, "to_spec": to_spec,
            "through": through, "runs": runs, "generated_at": utc_now()}
    if old_v is not None and new_v is not None and new_v <= old_v:
        return UpgradeReport(**base, outcome="up_to_date", exit_code=0)
    check_workspace(workspace)  # before any run is recorded: writable, state store reachable
    progress(f"resolving {from_spec} (download unless cached)")
    old = resolve(from_spec)
    progress(f"resolving {to_spec} (download unless cached)")
    new = resolve(to_spec)
    progress(f"diffing {old.label} → {new.label} with the plugin")
    diff = feature_diff(old, new, plugin, progress)
    grouped = group_features(diff, old, new)
    upgrade_steps, introduced = steps_through(old, new, plugin, diff, steps, step_commits, progress) if stepped else ([], {})
    impacted = [f for f in grouped if f.kind == "impacted"]
    # already broken on --from: not this upgrade's doing, listed apart and never reviewed as its work
    preexisting = [f for f in grouped if f.kind == "preexisting"]
    runnable = [f for f in impacted if any(not (x.status.value == "unknown" or x.unverified) for x in f.findings)]
    unchecked = [f for f in impacted if f not in runnable]
    # a dependency only dead modules hold breaks nothing SGLang loads: listed, no review to start
    dead = [f for f in runnable if not any(x.live for x in f.findings)]
    runnable = [f for f in runnable if f not in dead]
    wanted = _wanted(runnable, unchecked + dead + preexisting, runs, only)
    drive = through == "interface" and agent is not None
    note = f"interface: not run: {NOT_CONFIGURED}" if through == "interface" and agent is None else None
    start = _start_command(workspace, plugin, from_spec, to_spec, through)
    run_ids = {f.id: _run_id(to_spec, f, fingerprint) for f in runnable}
    # an earlier upgrade's run (a larger --runs, or --feature) stays reported: reruns agree
    to_run = [f for f in runnable if f.id in wanted or workspace.run(run_ids[f.id]).exists()]
    tasks = [(f.id, ReviewTask(workspace=workspace.root, feature=f, run_id=run_ids[f.id], plugin=plugin,
                               from_spec=from_spec, to_spec=to_spec, fingerprint=fingerprint, runbook=runbook,
                               plugin_commit=plugin_commit, agent=agent if drive else None)) for f in to_run]
    done = run_all(review, tasks, parallel=parallel, progress=progress)
    features = []
    for f in runnable:
        retry = f"{start} --feature {shlex.quote(f.id)}"
        outcome = done.get(f.id)
        if isinstance(outcome, Failed):
            features.append(_not_run(f, "error", start=retry).model_copy(update={"error": outcome.reason}))
        else:
            features.append(outcome or _not_run(f, "not_started", start=retry))
    first_seen = {f.id: _first_seen(f, introduced) for f in grouped}
    features = [f.model_copy(update={"introduced": first_seen.get(f.id)}) for f in features]
    started = [f for f in features if f.run_id is not None]
    outcome: UpgradeOutcome = "waiting_for_review" if features else "unverified" if unchecked else "nothing_impacted"
    same_repo = old.kind == "git" and new.kind == "git" and old.git_repo == new.git_repo
    commits_note = None if same_repo else (f"no upstream commit named: {'release wheels carry' if 'release' in (old.kind, new.kind) else 'the upstreams carry'} "
                                           f"no history; give --from/--to as PATH@REF of one {profile().display} git checkout")
    report = UpgradeReport(
        **base, outcome=outcome, exit_code=EXIT[outcome], through_note=note, commits_note=commits_note, features=features,
        unchecked=[_not_run(f, introduced=first_seen.get(f.id)) for f in unchecked],
        dead=[_not_run(f, introduced=first_seen.get(f.id)) for f in dead],
        preexisting=[_not_run(f) for f in preexisting], steps=upgrade_steps, checklist=diff.checklist(),
        totals={"features": len(features), "breaking": sum(f.breaking for f in features), "runs": len(started),
                "not_started": sum(f.state == "not_started" for f in features),
                "failed_runs": sum(f.state == "error" for f in features), "reused_runs": sum(f.reused for f in features),
                "unchecked": len(unchecked), "dead_only": len(dead), "preexisting": len(preexisting),
                "impacted_dependencies": len(diff.impacted), "upstream_changes": len(diff.changes)},
    )
    return _write(workspace, report)


def _check_stepping(from_spec: str, to_spec: str, steps: int | None, step_commits: int | None) -> None:
    """HarnessError (one line) unless exactly one of steps / step_commits is given, at least 1,
    and both specs are refs of one git repository."""
    if steps is not None and step_commits is not None:
        raise HarnessError("--steps and --step-commits: give one (N steps, or a step per K commits)")
    given = f"--steps {steps}" if steps is not None else f"--step-commits {step_commits}"
    if (steps if steps is not None else step_commits) < 1:
        raise HarnessError(f"{given}: give 1 or more")
    old, new = split_git_spec(from_spec), split_git_spec(to_spec)
    if old is None or new is None or old[0].resolve() != new[0].resolve():
        raise HarnessError(f"{given}: splits a git range: give --from PATH@REF and --to PATH@REF of one upstream "
                           f"repository (got --from {from_spec} --to {to_spec})")


def steps_through(old: UpstreamSource, new: UpstreamSource, plugin: Path, diff: FeatureDiff, steps: int | None,
                  step_commits: int | None, progress: Progress) -> tuple[list[UpgradeStep], dict[str, Introduced]]:
    """The range old → new (two git sources of one repository) in steps along the first-parent
    history: the plugin is checked (a Feature Diff from `old`) at each step's last commit, the
    last step being `new` itself (`diff`, already made). Returns the steps, each with the keys
    of the findings of `diff.impacted` first seen there, and, per such key, where it was
    introduced: the step, its range, and the range's commits that touched the target (from
    Finding.commits, `git log -L` of the target) or, when none did, the range's commits."""
    commits = first_parent_commits(old.git_repo, old.git_commit, new.git_commit)
    ends = step_ends(len(commits), steps, step_commits)
    wanted = {f.key: f for f in diff.impacted}
    first_step: dict[str, int] = {}
    result: list[UpgradeStep] = []
    spans: dict[int, list[Commit]] = {}
    start = 0
    previous = old.git_commit
    for index, end in enumerate(ends, 1):
        commit = commits[end]
        span = spans[index] = commits[start:end + 1]
        spec = f"{old.git_repo}@{commit.sha}"
        progress(f"range step {index}/{len(ends)}: {commit.sha[:10]} ({len(span)} commit(s), "
                 f"{commit.subject[:60]!r}): checking the plugin")
        if end == len(commits) - 1:
            seen = set(wanted)
        else:
            step_diff = feature_diff(old, resolve(spec), plugin, progress)
            seen = {f.key for f in step_diff.impacted} & set(wanted)
        new_keys = sorted(seen - set(first_step))
        first_step.update(dict.fromkeys(new_keys, index))
        result.append(UpgradeStep(index=index, range=f"{previous[:10]}..{commit.sha[:10]}", upstream=spec,
                                  commits=len(span), subject=commit.subject, introduced=new_keys))
        start, previous = end + 1, commit.sha
    introduced = {}
    for key, index in first_step.items():
        span = spans[index]
        touched = {line.split(" ", 1)[0] for line in wanted[key].commits}
        touching = [c for c in span if c.sha[:10] in touched]
        listed = touching or span
        introduced[key] = Introduced(step=index, range=result[index - 1].range, commits=listed[:SHOWN],
                                     touching=bool(touching), more=max(0, len(listed) - SHOWN))
    return result, introduced


def _first_seen(feature: Feature, introduced: dict[str, Introduced]) -> Introduced | None:
    """The earliest step any of the feature's findings was introduced at (None: not stepped)."""
    found = [introduced[f.key] for f in feature.findings if f.key in introduced]
    return min(found, key=lambda i: i.step) if found else None


def _wanted(runnable: list[Feature], unrunnable: list[Feature], runs: int, only: list[str] | None) -> set[str]:
    """The ids of the features to start runs for: `only`, checked, else the first `runs`."""
    if not only:
        return {f.id for f in runnable[:runs]}
    ids = {f.id for f in runnable}
    for name in only:
        if name in ids:
            continue
        other = next((f for f in unrunnable if f.id == name), None)
        if other is not None:
            raise HarnessError(f"--feature {name}: has no review run to start ({_no_run_reason(other)})")
        raise HarnessError(f"--feature {name}: not a feature of this upgrade (its summary.md lists them)")
    return set(only)


def _no_run_reason(feature: Feature) -> str:
    if feature.kind == "preexisting":
        return "already broken on the release it upgrades from"
    if not any(x.live for x in feature.findings):
        return f"only modules {profile().display} never imports depend on it"
    return "it cannot be decided statically: check it by hand"


def _start_command(workspace: Workspace, plugin: Path, from_spec: str, to_spec: str, through: Through) -> str:
    """`harness upgrade` for this upgrade, as typed where the bot ran (paths relative to its cwd)."""
    cwd = Path.cwd().resolve()
    where = os.path.relpath(plugin, cwd) if plugin.is_relative_to(cwd) else str(plugin)
    ref = "" if workspace.root == cwd else f" --workspace {shlex.quote(str(workspace.root))}"
    how = " --through interface" if through == "interface" else ""
    return (f"harness upgrade --plugin {shlex.quote(where)} --from {shlex.quote(from_spec)} "
            f"--to {shlex.quote(to_spec)}{how}{ref}")


def _run_id(to_spec: str, feature: Feature, fingerprint: str) -> str:
    return check_run_id(f"upgrade-{_label(to_spec)}-{feature.id}"[:82] + f"-{fingerprint[:12]}")


class ReviewTask(BaseModel):
    """One feature's review run to start (or reuse) and drive: what `review` needs, in this
    process or a worker's."""

    workspace: Path
    feature: Feature
    run_id: str
    plugin: Path
    from_spec: str
    to_spec: str
    fingerprint: str  # the plugin's content (plugin_fingerprint), noted in the run
    runbook: Path | None = None
    plugin_commit: str | None = None
    agent: AgentSettings | None = None  # set: drive it through the interface draft


def review(task: ReviewTask, progress: Progress) -> UpgradeFeature:
    """Start the feature's run (or reuse the one that exists, resuming it where a killed process
    left it) up to its first gate; with an agent, pass alignment on in the bot's name and go on
    through the interface draft. The feature with where its run stands."""
    workspace, feature, run_id, agent = Workspace(task.workspace), task.feature, task.run_id, task.agent
    reused = workspace.run(run_id).exists()
    if reused:
        progress(f"reusing run {run_id} (same plugin content and target)")
        # a no-op unless a killed process left it mid-step; a --runbook reaches a run started without one
        view = resume_run(workspace, run_id, progress, runbook=task.runbook)
        view = run_status(workspace, run_id)
    else:
        spec = FeatureSpec(id=feature.id, source="feature_diff", name=feature.title, description=feature.why,
                           symbols=feature.targets)
        inputs = new_inputs(run_id, spec, task.plugin, task.to_spec, task.from_spec, plugin_commit=task.plugin_commit,
                            runbook=task.runbook, agent=agent,
                            notes=[f"started by `harness upgrade` {task.from_spec} → {task.to_spec} "
                                   f"(plugin content {task.fingerprint})"])
        view = start_run(workspace, inputs, progress)
    if agent is not None and view.waiting_at is not None and view.waiting_at.endswith("-alignment"):
        if view.inputs.agent is None:  # a run an earlier `upgrade` started without an agent
            progress(f"run {run_id} was started without an agent: it stays at its alignment gate")
        else:
            progress(f"{run_id}: passing alignment on to the interface draft")
            # a failed alignment is what an upgrade expects (the feature breaks): passed on as an override, recorded so
            failed = next((s.verdict == "failed" for s in view.steps if s.slug == view.waiting_at), False)
            view = decide(workspace, run_id, approve=True, by=BOT, progress=progress, override=failed,
                          text="approved by the upgrade bot (--through interface) so the porting agent drafts the "
                               "interface; reject --step 01-alignment to revisit it")
    return _feature_view(workspace, feature, view, reused)


def _feature_view(workspace: Workspace, feature: Feature, view: RunView, reused: bool) -> UpgradeFeature:
    ref = "" if workspace.root == Path.cwd().resolve() else f" --workspace {workspace.root}"
    waiting = next((s for s in view.steps if s.slug == view.waiting_at), None)
    note = ' --override --note "..."' if waiting is not None and waiting.verdict == "failed" else ""  # approve demands both
    return _not_run(feature, view.state).model_copy(update={
        "run_id": view.run_id, "reused": reused, "report": f"../{view.run_id}/summary.md",
        "jobs": _engine_jobs(workspace, view),
        "verdicts": {s.slug: s.verdict for s in view.steps if s.attempt is not None},
        "approve": f"harness approve {view.run_id} --by YOUR_NAME{ref}{note}" if view.state == "waiting" else None,
    })


def _engine_jobs(workspace: Workspace, view: RunView) -> list[EngineJob]:
    """The Slurm job of each engine the run's steps started: the job id the launcher recorded in
    the step's server.json (none for a local engine, or a step that served nothing)."""
    jobs = []
    for step in view.steps:
        if step.attempt is None:
            continue
        record = ServerRecord.read(workspace.run(view.run_id).evidence_dir(step.slug) / SERVER_DIR / "server.json")
        if record is not None and record.job_id is not None:
            jobs.append(EngineJob(step=step.slug, job_id=record.job_id, node=record.node, started_at=record.started_at,
                                  stopped_at=record.stopped_at))
    return jobs


def _not_run(feature: Feature, state: str = "not_run", start: str | None = None,
             introduced: Introduced | None = None) -> UpgradeFeature:
    return UpgradeFeature(id=feature.id, title=feature.title, kind=feature.kind, risk=feature.risk, why=feature.why,
                          targets=feature.targets, breaking=feature.breaking, fails_at=feature.fails_at,
                          fails_reason=feature.fails_reason, proof=feature.proof, sites=feature.sites, state=state,
                          start=start, introduced=introduced, commit=feature.commit)


def _write(workspace: Workspace, report: UpgradeReport) -> UpgradeReport:
    folder = upgrade_dir(workspace, report.from_spec, report.to_spec)
    report = report.model_copy(update={"summary": str(folder / "summary.md"), "details": str(folder / "details.md")})
    write_atomic(folder / "summary.md", render_summary(report))
    write_atomic(folder / "details.md", render("upgrade-details.md.j2", report=report))
    write_atomic(folder / "issue.md", render_summary(report, links=False))
    write_atomic(folder / "upgrade.json", report.model_dump_json(indent=2) + "\n")
    return report


def render_summary(report: UpgradeReport, *, links: bool = True) -> str:
    """The upgrade's summary.md, one screen: counts, the blockers, the features that break a
    path, warnings, then what has no run (preexisting, undecidable, dead-only), each list cut
    at SHOWN rows with the rest in details.md. `links=False`: issue.md, for a GitHub issue or
    job summary, where relative links do not resolve — files are named by their path in the
    workspace (the workflow's artifact) instead."""
    return render("upgrade.md.j2", report=report, links=links, shown=SHOWN,
                  folder=_folder(report.from_spec, report.to_spec))
