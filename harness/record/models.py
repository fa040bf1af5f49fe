"""The run record, typed: what a run is given, what each step recorded, every gate decision, and
the one view of a run that `status`, the reports and the CLI read.

    run.json                       RunInputs (written once, at `run`)
    journal.jsonl                  the trajectory: StepRecord and GateDecision lines, in order
                                   (`harness.record.trajectory`)
    evidence/NN-step/step.json     StepResult (the checks and facts a step's report shows)
    `harness status --json`        RunView, built only by `harness.workflow.runs.run_status`

Reports render from run.json, the journal and the evidence tree; LangGraph's sqlite store is
its resume store only (RunState: where the graph stands).
"""

from __future__ import annotations

from typing import Any, Literal, TypedDict

from pydantic import BaseModel, Field, computed_field

from harness.knowledge.products import FeatureSpec
from harness.record.checks import Check, CheckStatus


class UpstreamPin(BaseModel):
    """What an upstream spec resolved to when the run started (see `harness.record.pins`)."""

    spec: str
    kind: Literal["release", "git", "path"]
    fingerprint: str  # the content fingerprint: equal content, equal fingerprint
    git_commit: str | None = None


class AgentSettings(BaseModel):
    """The porting agent's endpoint and budgets, resolved when the run starts (options, then the
    environment, then the runbook's `agent:` section) and kept in run.json, so every later
    command of the run drafts with the same ones. The API key is never recorded: it is read
    from the environment variable `api_key_env` each time a step drafts."""

    base_url: str | None = None  # None: the openai client's default (api.openai.com)
    model: str
    source: str  # where the endpoint came from, e.g. "--llm-base-url/--llm-model"
    api_key_env: str = "OPENAI_API_KEY"
    max_turns: int = 30
    max_tokens: int = 200_000
    max_wall_s: float = 900
    max_retries: int = 3
    request_timeout_s: float = 120


class RunInputs(BaseModel):
    run_id: str
    feature: FeatureSpec
    plugin: str  # absolute path of the plugin checkout
    plugin_commit: str | None = None
    upstream: str  # the spec the steps resolve, e.g. sglang==0.5.23 or a path
    from_upstream: str | None = None
    # later processes must resolve --upstream / --from to the same content (harness.record.pins)
    upstream_pin: UpstreamPin | None = None
    from_pin: UpstreamPin | None = None
    runbook: str | None = None  # absolute path
    auto_approve: bool = False
    agent: AgentSettings | None = None  # the LLM endpoint the drafts use; None: not configured
    notes: list[str] = Field(default_factory=list)  # what the run wants a reader told up front
    created_at: str
    # "chained": every journal line carries the hash of the line before it (runs started since
    # chaining; harness.record.trajectory); "plain": a legacy journal
    journal: Literal["plain", "chained"] = "plain"


DraftStatus = Literal["drafted", "not_run", "not_finished"]


class Draft(BaseModel):
    """What the step's drafting hook proposed: `drafted` (the agent finished), `not_finished`
    (a budget ran out; `reason` says which, everything it did is kept) or `not_run` (`reason`:
    no endpoint configured, unreachable, refused). The agent's fields name evidence files."""

    status: DraftStatus
    reason: str | None = None
    text: str | None = None
    summary: str | None = None  # the agent's `finish(summary)`
    patch: str | None = None  # evidence file: the `git diff` of the sandbox
    transcript: str | None = None  # evidence file: every request, response and tool result (JSONL)
    branch: str | None = None  # the sandbox branch the patch is on
    turns: int = 0
    tokens: int = 0
    tools: dict[str, int] = Field(default_factory=dict)  # tool name -> calls
    refusals: list[str] = Field(default_factory=list)  # tool calls refused (outside the worktree)


class StepResult(BaseModel):
    """Written as `step.json` into the step's evidence: the checks and the facts the report shows."""

    step: str
    number: int
    title: str
    attempt: int
    rejection_reason: str | None = None  # the reviewer's reason that triggered this attempt
    started_at: str
    finished_at: str
    verdict: CheckStatus
    checks: list[Check]
    facts: dict[str, Any] = Field(default_factory=dict)  # step-specific, rendered by its template
    commands: list[str] = Field(default_factory=list)  # how to reproduce the evidence
    environment: dict[str, str] = Field(default_factory=dict)
    draft: Draft


Decision = Literal["approve", "reject", "reopen", "skip"]


class GateDecision(BaseModel):
    """One human (or --auto-approve) decision at a step's gate.

    `reject` sends the step the run waits at back with `reason`; `reopen` rejects an earlier,
    already approved step (`harness reject --step`): it reruns, and so does every step after it.
    `skip` is the harness passing a gate with nothing to decide (`Step.skip_gate`; `reason` says
    why), e.g. the knowledge write-back when no LLM endpoint is configured.
    `evidence_hash` is what the decision was taken on; an approval counts only while the
    step's evidence still hashes to it (`harness.record.gates`)."""

    decision: Decision
    by: str
    at: str
    automatic: bool = False
    evidence_hash: str | None = None
    attempt: int
    note: str | None = None  # approvals
    reason: str | None = None  # rejections, reopenings and skips
    override: bool = False  # an approval of failed checks, asked for with `approve --override`


class StepRecord(BaseModel):
    """What the step node recorded in the graph state when an attempt finished."""

    attempt: int
    verdict: CheckStatus
    report: str  # workspace-relative path of the step's report
    evidence_dir: str  # workspace-relative
    evidence_hash: str | None
    finished_at: str


GateState = Literal["none", "pending", "approve", "reject", "reopen", "skip"]


class GateView(BaseModel):
    """Where a step's gate stands now: the last decision, judged against the evidence on disk."""

    decision: GateState
    valid: bool | None = None  # approvals only: does the evidence still hash to what was approved?
    by: str | None = None
    at: str | None = None
    automatic: bool = False
    evidence_hash: str | None = None  # what the decision was taken on
    attempt: int | None = None
    note: str | None = None
    reason: str | None = None
    label: str = "—"  # one line for tables: "approved", "waiting for review", ...


class StepView(BaseModel):
    step: str
    number: int
    slug: str
    title: str
    attempt: int | None
    verdict: Literal["passed", "failed", "inconclusive", "not_run", "pending"]
    checks: list[Check]
    report: str | None
    evidence_dir: str | None
    recorded_hash: str | None  # the evidence hash when the step finished
    evidence_hash: str | None  # the evidence hash now
    evidence_changed: bool
    gate: GateView
    history: list[GateDecision]

    @computed_field
    @property
    def current_hash(self) -> str | None:
        """Same as `evidence_hash`: kept in `status --json`, which scripts already read."""
        return self.evidence_hash

    @computed_field
    @property
    def gate_decision(self) -> str:
        """Same as `gate.label`: kept in `status --json`, which scripts already read."""
        return self.gate.label

    @computed_field
    @property
    def approver(self) -> str | None:
        return self.gate.by if self.gate.decision == "approve" else None

    @computed_field
    @property
    def automatic(self) -> bool:
        return self.gate.automatic


RunStateName = Literal["finished", "waiting", "running", "interrupted"]
ResumeStateName = Literal["ok", "stale", "missing", "corrupt"]


class ResumeView(BaseModel):
    """LangGraph's resume cache for a run, against where its journal says it stands: `ok`
    (they agree), `stale` (a killed process left it behind; the next command puts it right),
    `missing` (the state file, or this run in it, is gone) or `corrupt` (unreadable). Missing
    and corrupt need `harness repair` before a gate decision; the sign-off record is unaffected."""

    state: ResumeStateName
    note: str  # one line: what was found


class ProcessView(BaseModel):
    """A process group a step started that is still alive (`harness.record.processes`)."""

    role: str
    step: str | None
    pid: int
    command: list[str]
    owner_pid: int
    owner_running: bool  # False: an orphan a sweep could not stop
    job: str | None = None  # a Slurm job id (the engine runs on the cluster; pid is 0)


class RunView(BaseModel):
    """A run as it stands: built in one place (`harness.workflow.views.view_of`) from run.json,
    the journal, each step.json and the evidence on disk; `status` adds the resume cache and
    the processes still alive."""

    run_id: str
    workspace: str
    state: RunStateName
    waiting_at: str | None
    finished_at: str | None
    running: str | None  # who advances it right now ("pid N")
    inputs: RunInputs
    steps: list[StepView]
    resume: ResumeView | None = None  # only `status` inspects it
    # Only `status` fills these: the evidence stays on the disk of the workspace that ran the
    # step, while the run state may be a team database (HARNESS_STATE_URL).
    evidence_root: str | None = None
    state_store: str | None = None
    processes: list[ProcessView] = Field(default_factory=list)
    torn_journal_lines: int = 0
    # what changed in the run record since it started (harness.record.pins.record_changes): a
    # broken journal chain, an edited run.json or runbook; no decision is taken while any remain
    record_changed: list[str] = Field(default_factory=list)
    commits_owed: list[str] = Field(default_factory=list)  # approved steps whose commit the next command makes
    reports_stale: str | None = None  # `status` could not re-render the reports: why

    def step(self, slug: str) -> StepView:
        return next(s for s in self.steps if s.slug == slug)

    @computed_field
    @property
    def checkpointed(self) -> bool:
        """Whether LangGraph holds a checkpoint of the run: kept in `status --json`, which
        scripts already read."""
        return self.resume is not None and self.resume.state in ("ok", "stale")

    @property
    def invalidated(self) -> list[StepView]:
        """The steps whose approval no longer covers their evidence."""
        return [s for s in self.steps if s.gate.valid is False]

    @property
    def tampered(self) -> list[StepView]:
        """The steps whose evidence changed: since it was approved, or since it was produced."""
        return [s for s in self.steps if s.gate.valid is False or s.evidence_changed]

    @property
    def resume_lost(self) -> bool:
        """An unfinished run whose resume cache is missing or unreadable (`harness repair`)."""
        return self.state != "finished" and self.resume is not None and self.resume.state in ("missing", "corrupt")


class RunState(TypedDict, total=False):
    """LangGraph's state: nothing but the run's id. What happened is in the journal; the
    checkpoints only record where the graph stands (the gate it waits at), so it can resume."""

    run_id: str
