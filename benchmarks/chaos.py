"""Chaos: SIGKILL every harness command at each journal line and at random moments, recover as a
user would, check that nothing was lost, and report the per-kill failure bound the kills prove.
Prints figures; asserts nothing; exits 0.

    python benchmarks/chaos.py                                # every command: 2 kills at each line, 2 at random
    python benchmarks/chaos.py --quick                        # every command once at each line, engine up (~2-4 min)
    python benchmarks/chaos.py --trials 5 --commands approve,reject
    python benchmarks/chaos.py --example --trials 5 [--runbook R]   # the old mode: the built-in example's
                                                                    # `run --auto-approve`, killed uniformly in time
    python benchmarks/chaos.py --slurm --trials 1             # approve, reject, resume with `launcher: slurm`

The world (the default mode): the workflow tests' tiny upstream pair and plugin (a git checkout
of it), the `kv-pool` feature, a runbook serving the loopback engine (harness.testing.loopback),
and a scripted OpenAI-compatible endpoint on 127.0.0.1 (harness.testing.llm) whose agent writes
CHAOS.md in every step's sandbox and finishes, so every approval owes a commit. Each command
starts from a saved state of the world, restored in place before every trial:

    run       a fresh run, to its first gate (01-alignment)
    approve   at the 01-alignment gate: commits its patch, runs 02-interface (agent, engine, smoke)
    reject    at the 02-interface gate, with --reason: runs 02-interface attempt 2
    resume    a run killed in the middle of 02-interface
    repair    at the 05-performance gate, .harness/state.sqlite deleted (late, to keep trials short)

Kill points. `line k`: SIGKILL right after the journal gains the command's k-th new line, for
every k the command writes when not killed. The journal's size is polled every 0.5 ms (os.stat); the
residual race is that poll plus the scheduler, during which the command runs on (a few ms on an
idle machine, more on a loaded one): kills that land after a further line are counted as
`overshoot`. `engine` (the commands that serve the model: approve, reject, resume): SIGKILL as
soon as the command has recorded a process it started (.harness/runs/<run>/processes/), so the
loopback engine is up and left behind. `random`: uniform in [0, D], D the command's reference
(unkilled) duration.

After a kill, what a user does: `harness status`; `repair` when it says the resume state is gone,
`resume` when the run is interrupted, the command again when the run was never recorded; then
`approve` each gate to the end. A trial fails on any of:

    not finished       `status` exits non-zero, or the run is not finished
    commit missing     an approved attempt's agent patch is not committed on its branch (the
                       sandbox record's `committed` is the branch head, which holds CHAOS.md)
    evidence changed   a file of a step finished before the kill is gone or differs (in place, or
                       where a rejection moved its attempt), or a step's evidence no longer
                       matches its journaled hash
    journal lost       a journal line present at the kill is gone or changed afterwards
    decision doubled   two decisions journaled for one step attempt
    orphans            processes carrying the trial's environment marker alive after recovery
    staging left       reports/<run>/evidence/.staging left behind

The bound: with f failures in n kills of one kind, the one-sided 95 % Clopper-Pearson upper
bound on the per-kill failure probability, scipy.stats.beta.ppf(0.95, f + 1, n - f); for f = 0
that is 1 - 0.05^(1/n), about 3/n. The kills at one journal line are near-identical, so their
bound speaks for kills at that point, the random kills' for a kill at any moment.

The Slurm mode (`--slurm`, root with slurm-wlm and munge installed): the same world, its runbook's
engine a batch job (`launcher: kind: slurm`) on a throwaway single-node cluster
(tests/support/slurm_cluster.py). Each serving command is killed once its job is recorded (`rec`,
often still pending) and once squeue says it runs (`run`); each kill also with slurmctld stopped
for the first `harness status` after it (`-ctl`), started again before the rest of the
recovery. Besides the checks above, a trial fails on:

    record lost while unreachable   a job's record gone after that `status`
    not said                        that `status` did not say, one line a job, it left the record
    job left running                squeue still lists a job after recovery (30 s for COMPLETING)
    job record left                 a job-*.json left in the run's record after recovery

Every command (the killed one and the recovery's) runs in a multiprocessing fork server that has
imported harness's modules: each is a fresh process running `harness.cli.main` as
`python -m harness` does, minus ~6 s of imports on a loaded 2-core machine, so a trial takes
seconds and the random kill times cover the command's own work, not the interpreter's start.
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import multiprocessing
import os
import pkgutil
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil

REPO = Path(__file__).resolve().parents[1]
# the world is the workflow tests' fixture (tests/workflow/workflow_support.py)
sys.path[:0] = [str(REPO), str(REPO / "tests" / "workflow"), str(REPO / "tests" / "support")]

from harness.testing.llm import (  # after the path set-up: this checkout's harness
    ScriptedLLM,
    completion,
)

MARKER = "HARNESS_CHAOS_TRIAL"
RUN_ID = "chaos"
COMMANDS = ("run", "approve", "reject", "resume", "repair")
SERVING = ("approve", "reject", "resume")  # the commands whose 02-interface starts the engine
DECISIONS = ("approve", "reject", "reopen", "skip")
RESUME_STATE_GONE = 3  # `harness status` exit: run `harness repair` (harness.cli.workflow)
POLL_S = 0.0005
# The kills test recovery, not verdicts: every approval goes through whatever the checks say (the
# world's 02-interface fails interface.override_signatures: its kv-pool override is not on the old
# upstream). An --override of checks that did not fail is not recorded.
OVERRIDE = ("--override",)
MAX_RECOVERY_COMMANDS = 16  # a run at gate 1 needs 7 (status aside); more means it is stuck


def harness(workspace: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "harness", *args, "--workspace", str(workspace)]


def marked(token: str) -> list[psutil.Process]:
    """Live processes whose environment carries this trial's marker."""
    found = []
    for process in psutil.process_iter(["status"]):
        try:
            if process.info["status"] != psutil.STATUS_ZOMBIE and process.environ().get(MARKER) == token:
                found.append(process)
        except psutil.Error:
            continue
    return found


def journal(workspace: Path, run_id: str) -> list[dict]:
    path = workspace / ".harness" / "runs" / run_id / "journal.jsonl"
    if not path.is_file():
        return []
    events = []
    for line in path.read_text(errors="replace").splitlines():
        try:
            events.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return events


def finished_evidence(workspace: Path, run_id: str) -> dict[str, str]:
    """sha256 of every file in the final evidence dirs (steps whose attempt completed)."""
    root = workspace / "reports" / run_id / "evidence"
    digests = {}
    if root.is_dir():
        for step_dir in sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")):
            for path in sorted(step_dir.rglob("*")):
                if path.is_file():
                    digests[path.relative_to(root).as_posix()] = hashlib.sha256(path.read_bytes()).hexdigest()
    return digests


def status(workspace: Path, run_id: str, env: dict[str, str]) -> tuple[int, dict | None]:
    proc = subprocess.run(harness(workspace, "status", run_id, "--json"), check=False, capture_output=True, text=True,
                          env=env)
    try:
        return proc.returncode, json.loads(proc.stdout)
    except json.JSONDecodeError:
        return proc.returncode, None


def run_args(run_id: str, runbook: str | None) -> list[str]:
    return ["run", "--auto-approve", "--run-id", run_id, *(["--runbook", runbook] if runbook else [])]


def example_trial(workspace: Path, run_id: str, kill_at: float | None, runbook: str | None, timeout_s: float) -> dict:
    token = uuid.uuid4().hex
    # this checkout's harness, not whichever one the interpreter would find
    env = {**os.environ, MARKER: token, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    started = time.monotonic()
    process = subprocess.Popen(harness(workspace, *run_args(run_id, runbook)), env=env,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    result: dict = {"run_id": run_id, "killed": False}
    try:
        process.wait(timeout=kill_at if kill_at is not None else timeout_s)
    except subprocess.TimeoutExpired:
        if kill_at is None:
            process.kill()
            raise
        before = finished_evidence(workspace, run_id)
        process.send_signal(signal.SIGKILL)
        process.wait()
        result.update(killed=True, killed_after_s=round(time.monotonic() - started, 1),
                      left_running=len(marked(token)), snapshot=before)
        events_before = len(journal(workspace, run_id))
        # the next command: resume the run (or start it again if the kill came before it existed)
        exists = (workspace / ".harness" / "runs" / run_id / "run.json").is_file()
        command = harness(workspace, "resume", run_id) if exists else harness(workspace, *run_args(run_id, runbook))
        resumed = time.monotonic()
        process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        recovery = None
        while recovery is None:
            fresh = [e for e in journal(workspace, run_id)[events_before:] if e.get("event") != "run_resumed"]
            if fresh or process.poll() is not None:
                recovery = time.monotonic() - resumed
            else:
                time.sleep(0.02)
        result["recovery_s"] = round(recovery, 2)
        process.wait(timeout=timeout_s)
    result["exit_code"] = process.returncode
    result["orphans_left"] = len(marked(token))
    code, view = status(workspace, run_id, env)
    result["completed"] = code == 0 and view is not None and view["state"] == "finished"
    after = finished_evidence(workspace, run_id)
    lost = [p for p, digest in result.pop("snapshot", {}).items() if after.get(p) != digest]
    broken = []
    if view is not None:
        for step in view["steps"]:
            if step["evidence_changed"] or step["gate"]["valid"] is False:
                broken += [p for p in after if p.startswith(step["slug"] + "/")] or [step["slug"]]
    result["evidence_lost_or_changed"] = sorted(set(lost) | set(broken))
    result["staging_left"] = (workspace / "reports" / run_id / "evidence" / ".staging").exists()
    result["seconds"] = round(time.monotonic() - started, 1)
    return result


def example_main(args: argparse.Namespace) -> int:
    """The old mode: `harness run --auto-approve` of the built-in example, killed uniformly in
    time, then `harness resume`; real `python -m harness` processes throughout."""
    workspace = args.workspace or Path(tempfile.mkdtemp(prefix="harness-chaos-"))
    workspace.mkdir(parents=True, exist_ok=True)
    rng = random.Random(args.seed)
    print(f"workspace: {workspace}", flush=True)

    reference = example_trial(workspace, "chaos-reference", None, args.runbook, args.timeout_s)
    duration = reference["seconds"]
    print(f"reference run: {duration:.0f} s, completed: {reference['completed']}, "
          f"orphans left: {reference['orphans_left']}", flush=True)
    results = []
    for number in range(1, args.trials + 1):
        kill_at = rng.uniform(0.0, duration)
        result = example_trial(workspace, f"chaos-{number}", kill_at, args.runbook, args.timeout_s)
        results.append(result)
        print(f"trial {number}: killed after {result.get('killed_after_s', '-')} s "
              f"({result['left_running'] if result['killed'] else 0} process(es) left running), "
              f"recovery {result.get('recovery_s', '-')} s, completed {result['completed']}, "
              f"lost/changed {len(result['evidence_lost_or_changed'])}, orphans left {result['orphans_left']}",
              flush=True)

    recoveries = [r["recovery_s"] for r in results if "recovery_s" in r]
    print()
    print(f"trials: {len(results)} (reference run {duration:.0f} s; kills uniform in [0, {duration:.0f}] s)")
    print(f"runs completed: {sum(r['completed'] for r in results)}/{len(results)}")
    print(f"evidence files lost or changed: {sum(len(r['evidence_lost_or_changed']) for r in results)}")
    print(f"orphans left: {sum(r['orphans_left'] for r in results)} "
          f"(kills left {sum(r.get('left_running', 0) for r in results)} engine/bench_serving processes running; "
          f"the next command stopped them)")
    print(f"staging dirs left: {sum(r['staging_left'] for r in results)}")
    failed = sum(not r["completed"] or bool(r["evidence_lost_or_changed"]) or r["orphans_left"] > 0 or r["staging_left"]
                 for r in results)
    if results:
        print(f"failed kills: {failed} of {len(results)}; 95 % upper bound on the per-kill failure probability: "
              f"{upper_bound(failed, len(results)):.3f}")
    if recoveries:
        print(f"median recovery time: {statistics.median(recoveries):.2f} s "
              f"(min {min(recoveries):.2f}, max {max(recoveries):.2f}; `harness resume` to the next journal event)")
    (workspace / "chaos-results.json").write_text(json.dumps([reference, *results], indent=2) + "\n")
    return 0


# --------------------------------------------------------------------------- the agent mode


def upper_bound(failures: int, n: int) -> float:
    """One-sided 95 % Clopper-Pearson upper bound on a failure probability, from `failures` in `n`."""
    from scipy.stats import beta

    return 1.0 if failures >= n else float(beta.ppf(0.95, failures + 1, n - failures))


def journal_lines(path: Path) -> int:
    """Complete lines in the journal (0 before it exists)."""
    try:
        return path.read_bytes().count(b"\n")
    except FileNotFoundError:
        return 0


def grown_by(path: Path, lines: int):
    """A condition for World.kill_when: the journal holds `lines` more lines than now. It stats
    the file and reads it only when the size changed, so the poll takes little from the command."""
    base, size = journal_lines(path), -1

    def condition() -> bool:
        nonlocal size
        try:
            now = path.stat().st_size
        except FileNotFoundError:
            return False
        if now == size:
            return False
        size = now
        return journal_lines(path) - base >= lines

    return condition


def _command(argv: list[str], env: dict[str, str], log: str) -> None:
    """In a fork server child: `harness ARGV` with this environment, output to `log`."""
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)
    os.environ.clear()
    os.environ.update(env)
    sys.argv = ["harness", *argv]
    from harness.cli import main

    main()


class AgentLLM(ScriptedLLM):
    """A stateless porting agent, so a killed and repeated conversation is answered alike: its
    first turn writes CHAOS.md in the step's sandbox, any later turn finishes."""

    def _next(self, body: dict[str, Any]) -> tuple[dict[str, Any], int]:
        messages = body.get("messages", [])
        if any(m.get("role") == "tool" for m in messages):
            call = {"name": "finish", "arguments": {"summary": "wrote CHAOS.md"}}
        else:
            call = {"name": "write_file", "arguments": {"path": "CHAOS.md", "content": "made by the chaos agent\n"}}
        return completion(body, {"tool_calls": [call]}, len(messages)), 200


@dataclass
class Scenario:
    """A command under test and the saved world it starts from."""

    command: str
    snapshot: str  # the saved world it starts from
    argv: list[str]
    serves: bool = False  # runs 02-interface, whose smoke test starts the loopback engine


class World:
    """The workspace, plugin, upstreams and runbook under `base/world`, saved states of it under
    `base/snapshots`, the agent's endpoint, and the fork server the commands run in. `launcher`:
    the runbook's `launcher:` (default: local); `extra_env`: added to every command's environment."""

    def __init__(self, base: Path, llm_url: str, launcher: dict | None = None, extra_env: dict | None = None):
        import git
        import yaml
        from workflow_support import Project

        self.base = base
        self.root = base / "world"
        self.root.mkdir(parents=True)
        self.project = Project(self.root)
        self.project.env["HARNESS_CACHE_DIR"] = str(base / "cache")  # kept across restores
        self.workspace = self.project.workspace
        self.journal = self.workspace / ".harness" / "runs" / RUN_ID / "journal.jsonl"
        repo = git.Repo.init(self.project.plugin)
        repo.git.add("-A")
        repo.git.commit("-m", "xdev plugin", env={"GIT_AUTHOR_NAME": "eng", "GIT_AUTHOR_EMAIL": "e@x",
                                                   "GIT_COMMITTER_NAME": "eng", "GIT_COMMITTER_EMAIL": "e@x"})
        runbook = yaml.safe_load(self.project.runbook.read_text())
        runbook["agent"] = {"max_retries": 0, "request_timeout_s": 30}
        if launcher is not None:
            runbook["launcher"] = launcher
        self.project.env.update(extra_env or {})
        self.project.runbook.write_text(yaml.safe_dump(runbook))
        self.run_argv = self.project.run_args("--run-id", RUN_ID, "--llm-base-url", llm_url, "--llm-model", "scripted")
        self.logs = base / "logs"
        self.logs.mkdir()
        self._log_number = 0
        os.environ["COLUMNS"] = "200"  # the fork server's console width (it inherits this environment)
        self.forks = multiprocessing.get_context("forkserver")
        self.forks.set_forkserver_preload(["__main__", "harness.cli", *[m.name for m in pkgutil.walk_packages(
            [str(REPO / "harness")], "harness.") if not m.name.startswith(("harness.testing", "harness.__main__"))]])

    def scenarios(self) -> dict[str, Scenario]:
        """The commands under test, by name (module docstring)."""
        decide = ["--by", "chaos"]
        return {
            "run": Scenario("run", "fresh", self.run_argv),
            "approve": Scenario("approve", "gate-1", ["approve", RUN_ID, *decide, *OVERRIDE, "--note", "chaos approval"], True),
            "reject": Scenario("reject", "gate-2", ["reject", RUN_ID, *decide, "--reason", "chaos: try again"], True),
            "resume": Scenario("resume", "interrupted-2", ["resume", RUN_ID], True),
            "repair": Scenario("repair", "state-lost-5", ["repair", RUN_ID]),
        }

    # ---- saved states

    def save(self, name: str) -> None:
        shutil.copytree(self.root, self.base / "snapshots" / name, symlinks=True)

    def restore(self, name: str) -> None:
        """The world exactly as saved, at the same paths (records hold absolute paths)."""
        shutil.rmtree(self.root)
        shutil.copytree(self.base / "snapshots" / name, self.root, symlinks=True)

    def prepare(self) -> None:
        """Save the states the scenarios start from (one run, driven and killed on purpose)."""
        env = self.env("prepare")

        def must(argv: list[str]) -> None:
            process = self.start(argv, env)
            process.join()
            if process.exitcode != 0:
                raise SystemExit(f"chaos: preparing the world: harness {argv[0]} exited {process.exitcode}, "
                                 f"see {process.log}")

        self.save("fresh")
        must(self.run_argv)
        self.save("gate-1")
        must(["approve", RUN_ID, "--by", "chaos", *OVERRIDE, "--note", "to gate 2"])
        self.save("gate-2")
        for gate in (3, 4, 5):
            must(["approve", RUN_ID, "--by", "chaos", *OVERRIDE, "--note", f"to gate {gate}"])
        (self.workspace / ".harness" / "state.sqlite").unlink()
        self.save("state-lost-5")
        self.restore("gate-1")
        process = self.start(["approve", RUN_ID, "--by", "chaos", *OVERRIDE, "--note", "to gate 2"], env)
        self.kill_when(process, lambda: b'"step_started"' in self.journal.read_bytes().splitlines()[-1])
        kill_marked(env[MARKER])
        self.save("interrupted-2")

    # ---- commands

    def env(self, token: str) -> dict[str, str]:
        return {**self.project.env, MARKER: token}

    def start(self, argv: list[str], env: dict[str, str]) -> multiprocessing.Process:
        """Start `harness ARGV --workspace WS` in the fork server; its output goes to `.log`."""
        self._log_number += 1
        log = self.logs / f"{self._log_number:05d}-{argv[0]}.log"
        process = self.forks.Process(target=_command, args=([*argv, "--workspace", str(self.workspace)], env, str(log)))
        process.log = log
        process.start()
        return process

    def call(self, argv: list[str], env: dict[str, str]) -> tuple[int, str]:
        """Run `harness ARGV` to the end: (exit code, its output)."""
        process = self.start(argv, env)
        process.join()
        return process.exitcode, process.log.read_text(errors="replace")

    def kill_when(self, process: multiprocessing.Process, condition) -> None:
        """SIGKILL the command once `condition()` holds (polled every POLL_S), or let it end."""
        while process.is_alive():
            try:
                if condition():
                    process.kill()
                    break
            except (OSError, IndexError):  # no journal yet
                pass
            time.sleep(POLL_S)
        process.join()

    def status(self, env: dict[str, str]) -> tuple[int, dict | None]:
        """`harness status RUN --json`: (exit code, the document or None)."""
        code, out = self.call(["status", RUN_ID, "--json"], env)
        try:
            return code, json.loads(out[out.index("{"):])
        except ValueError:
            return code, None


def kill_marked(token: str) -> None:
    for process in marked(token):
        try:
            process.kill()
        except psutil.Error:
            continue


def recover(world: World, env: dict[str, str]) -> list[str]:
    """What a user does after the kill, to the end of the run: the commands run, with exit codes.
    `status` decides each next command, except after one that says which gate it waits at."""
    done: list[str] = []
    state: str | None = "unknown"
    for _ in range(MAX_RECOVERY_COMMANDS):
        if state != "waiting":
            code, view = world.status(env)
            state = (view or {}).get("state")
            if state == "finished":
                break
            if code == RESUME_STATE_GONE:
                state = "state gone"
        argv = {"state gone": ["repair", RUN_ID],
                None: world.run_argv,  # killed before the run was recorded: start it again
                "waiting": ["approve", RUN_ID, "--by", "chaos", *OVERRIDE, "--note", "recovery"],
                }.get(state, ["resume", RUN_ID])  # interrupted (or still marked running by the killed command)
        rc, out = world.call(argv, env)
        done.append(f"{argv[0]}={rc}")
        state = "waiting" if rc == 0 and "Waiting at the " in out else "unknown"
    return done


def invariants(world: World, env: dict[str, str], journal_at_kill: list[dict], evidence_at_kill: dict[str, str]) -> list[str]:
    """What went wrong, one short line each (empty: the trial passed)."""
    import git

    failures = []
    code, view = world.status(env)
    if code != 0 or view is None or view.get("state") != "finished":
        failures.append(f"not finished (status exit {code}, state {(view or {}).get('state')})")
    events = journal(world.workspace, RUN_ID)
    if events[:len(journal_at_kill)] != journal_at_kill:
        failures.append("journal lost: a line present at the kill is gone or changed")
    decided = Counter((e.get("step"), e.get("attempt")) for e in events if e.get("event") in DECISIONS)
    failures += [f"decision doubled: {step} attempt {attempt}" for (step, attempt), n in decided.items() if n > 1]
    evidence = world.workspace / "reports" / RUN_ID / "evidence"
    for event in (e for e in events if e.get("event") == "approve"):
        step, attempt = event["step"], event["attempt"]
        patch = evidence / step / "agent" / "patch.diff"
        if not patch.is_file() or not patch.read_text().strip():
            continue
        record_path = world.workspace / ".harness" / "runs" / RUN_ID / "sandbox" / f"{step}-{attempt}.sandbox.json"
        try:
            record = json.loads(record_path.read_text())
            repo = git.Repo(record["repo"] or record["path"])
            head = repo.commit(record["branch"]).hexsha if record["committed"] else None
            holds = head == record["committed"] and "CHAOS.md" in [b.path for b in repo.commit(head).tree.blobs]
        except (OSError, ValueError, KeyError, git.GitError) as exc:
            failures.append(f"commit missing: {step} attempt {attempt} ({type(exc).__name__})")
            continue
        if not record["committed"] or not holds:
            failures.append(f"commit missing: {step} attempt {attempt}"
                            + (f" ({record['commit_error']})" if record.get("commit_error") else ""))
    after = finished_evidence(world.workspace, RUN_ID)
    superseded = world.workspace / ".harness" / "runs" / RUN_ID / "superseded"

    def kept(path: str, digest: str) -> bool:
        """Unchanged in place, or moved aside unchanged because a rejection replaced its attempt."""
        slug, rest = path.split("/", 1)
        return after.get(path) == digest or any(hashlib.sha256(moved.read_bytes()).hexdigest() == digest
                                                 for moved in superseded.glob(f"{slug}.attempt-*/{rest}"))

    changed = [p for p, digest in evidence_at_kill.items() if not kept(p, digest)]
    changed += [s["slug"] for s in (view or {}).get("steps", []) if s["evidence_changed"] or s["gate"]["valid"] is False]
    if changed:
        failures.append(f"evidence changed: {', '.join(sorted(set(changed))[:3])}")
    orphans = marked(env[MARKER])
    if orphans:
        failures.append(f"orphans: {len(orphans)}")
        kill_marked(env[MARKER])
    if (evidence / ".staging").exists():
        failures.append("staging left")
    return failures


def agent_trial(world: World, scenario: Scenario, kind: str = "reference", line: int | None = None,
                at_s: float | None = None, check: bool = True) -> dict:
    """Restore the scenario's world, run its command, SIGKILL it by `kind` ("line": right after
    the journal's `line`-th new line; "engine": once it recorded a process it started;
    "random": at `at_s` s; "reference": never), then, with `check`, recover and check the
    invariants."""
    world.restore(scenario.snapshot)
    env = world.env(uuid.uuid4().hex)
    base = journal_lines(world.journal)
    reached = grown_by(world.journal, line or 0)
    records = world.journal.parent / "processes"
    recorded = len(list(records.glob("*.json")))
    started = time.monotonic()
    process = world.start(scenario.argv, env)
    if kind == "line":
        world.kill_when(process, reached)
    elif kind == "engine":
        world.kill_when(process, lambda: len(list(records.glob("*.json"))) > recorded)
    else:
        process.join(at_s)
        if process.is_alive():
            process.kill()
        process.join()
    seconds = time.monotonic() - started
    killed = process.exitcode == -signal.SIGKILL
    written = journal_lines(world.journal) - base
    events = journal(world.workspace, RUN_ID)
    result: dict[str, Any] = {
        "command": scenario.command, "kind": kind, "line": line, "at_s": at_s, "killed": killed,
        "exit": process.exitcode, "seconds": round(seconds, 3), "lines": written,
        "overshoot": line is not None and killed and written > line,
        "new_events": [e.get("event") for e in events[len(events) - written:]] if written else [],
        "left_running": len(marked(env[MARKER])),
    }
    result["log"] = str(process.log)
    if not check:
        result.update(recovery=[], recovery_s=0.0, failures=[])
        return result
    evidence_at_kill = finished_evidence(world.workspace, RUN_ID)
    recovery_started = time.monotonic()
    result["recovery"] = recover(world, env)
    result["recovery_s"] = round(time.monotonic() - recovery_started, 2)
    result["failures"] = invariants(world, env, events, evidence_at_kill)
    return result


def agent_main(args: argparse.Namespace) -> int:
    commands = [c.strip() for c in args.commands.split(",") if c.strip()]
    unknown = sorted(set(commands) - set(COMMANDS))
    if unknown:
        print(f"chaos: error: unknown command(s) {', '.join(unknown)}; choose from {', '.join(COMMANDS)}", file=sys.stderr)
        return 2
    trials = 1 if args.quick else args.trials
    base = args.workspace or Path(tempfile.mkdtemp(prefix="harness-chaos-"))
    rng = random.Random(args.seed)
    print(f"working in {base}", flush=True)
    begun = time.monotonic()
    with AgentLLM([]) as llm:
        world = World(base, llm.base_url)
        world.prepare()
        print(f"world prepared in {time.monotonic() - begun:.0f} s", flush=True)
        scenarios = world.scenarios()
        results = []
        for command in commands:
            scenario = scenarios[command]
            reference = agent_trial(world, scenario, check=not args.quick)
            results.append(reference)
            print(f"{command}: reference {reference['seconds']:.2f} s, journal lines {reference['new_events']}, "
                  f"failures {'not checked (--quick)' if args.quick else reference['failures'] or 'none'}", flush=True)
            kills = [("line", k, None) for _ in range(trials) for k in range(1, reference["lines"] + 1)]
            kills += [("engine", None, None) for _ in range(trials if scenario.serves else 0)]
            # --quick: random kills only where no journal line gives a kill point (repair)
            randoms = 0 if args.quick and reference["lines"] else trials
            kills += [("random", None, rng.uniform(0.0, reference["seconds"])) for _ in range(randoms)]
            for kind, line, at_s in kills:
                result = agent_trial(world, scenario, kind, line=line, at_s=at_s)
                results.append(result)
                where = f"at line {line}" if kind == "line" else "with the engine up" if kind == "engine" else f"at {at_s:.2f} s"
                print(f"  {command} killed {where}: {'killed' if result['killed'] else 'not killed (ended first)'}"
                      f"{' leaving ' + str(result['left_running']) + ' process(es)' if result['left_running'] else ''}"
                      f"{' (overshoot)' if result['overshoot'] else ''}, journal {result['new_events']}, "
                      f"recovery {' '.join(result['recovery'])} in {result['recovery_s']} s: "
                      f"{'; '.join(result['failures']) or 'ok'}", flush=True)
    report(results, time.monotonic() - begun)
    (base / "chaos-results.json").write_text(json.dumps(results, indent=2) + "\n")
    print(f"details: {base / 'chaos-results.json'}")
    return 0


# --------------------------------------------------------------------------- the Slurm mode


def slurm_jobs(cluster) -> list[str]:
    """'ID STATE' of every job the cluster's controller still lists (squeue: pending, running,
    completing)."""
    done = subprocess.run(["squeue", "-h", "-o", "%i %T"], capture_output=True, text=True, env=cluster.env,
                          timeout=60, check=False)
    return done.stdout.split("\n")[:-1] if done.returncode == 0 else [f"squeue failed: {done.stderr.strip()}"]


def slurm_trial(world: World, scenario: Scenario, cluster, when: str, controller_down: bool) -> dict:
    """Restore the scenario's world, run its command and SIGKILL it once it recorded its engine's
    Slurm job (`when` "recorded": at once, maybe still pending; "running": once squeue says it
    runs); with `controller_down`, stop slurmctld and run `harness status` (the record must stay,
    said in one line), then start slurmctld again; recover as `agent_trial` does, and check its
    invariants and that neither a job (squeue) nor a job record is left."""
    world.restore(scenario.snapshot)
    env = world.env(uuid.uuid4().hex)
    records = world.journal.parent / "processes"
    before = {p.name for p in records.glob("job-*.json")}
    asked = [0.0]

    def reached() -> bool:
        if not {p.name for p in records.glob("job-*.json")} - before:
            return False
        if when == "recorded":
            return True
        if time.monotonic() - asked[0] < 0.1:  # squeue asks the controller: not every POLL_S
            return False
        asked[0] = time.monotonic()
        return any(line.endswith(" RUNNING") for line in slurm_jobs(cluster))

    started = time.monotonic()
    process = world.start(scenario.argv, env)
    world.kill_when(process, reached)
    jobs = sorted(p.name for p in records.glob("job-*.json"))
    result: dict[str, Any] = {
        "command": scenario.command, "kind": f"{when[:3]}{'-ctl' if controller_down else ''}", "line": None,
        "killed": process.exitcode == -signal.SIGKILL, "seconds": round(time.monotonic() - started, 3),
        "overshoot": False, "new_events": [], "jobs_at_kill": slurm_jobs(cluster), "log": str(process.log),
    }
    events = journal(world.workspace, RUN_ID)
    evidence_at_kill = finished_evidence(world.workspace, RUN_ID)
    failures = []
    if controller_down:
        cluster.stop_controller()
        try:
            asked = time.monotonic()
            _, out = world.call(["status", RUN_ID], env)
            result["status_down_s"] = round(time.monotonic() - asked, 1)
        finally:
            cluster.start_controller()
        kept = sorted(p.name for p in records.glob("job-*.json"))
        said = [line for line in out.splitlines() if "left recorded" in line]
        if kept != jobs:
            failures.append(f"record lost while unreachable: {sorted(set(jobs) - set(kept))}")
        if len(said) != len(jobs):
            failures.append(f"not said: {len(said)} 'left recorded' lines for {len(jobs)} job(s)")
    recovery_started = time.monotonic()
    result["recovery"] = recover(world, env)
    result["recovery_s"] = round(time.monotonic() - recovery_started, 2)
    failures += invariants(world, env, events, evidence_at_kill)
    deadline = time.monotonic() + 30  # a cancelled job stays COMPLETING for KillWait and its epilog
    while (left := slurm_jobs(cluster)) and time.monotonic() < deadline:
        time.sleep(0.5)
    if left:
        failures.append(f"job left running: {', '.join(left)}")
    if list(records.glob("job-*.json")):
        failures.append("job record left")
    result["failures"] = failures
    return result


def slurm_main(args: argparse.Namespace) -> int:
    """--slurm: the serving commands with the runbook's `launcher: slurm`, on a throwaway
    single-node cluster (tests/support/slurm_cluster.py: needs slurm-wlm, munge and root)."""
    import pytest
    from slurm_cluster import SlurmCluster

    commands = [c.strip() for c in args.commands.split(",") if c.strip()]
    unknown = sorted(set(commands) - set(SERVING))
    if unknown:
        print(f"chaos: error: --slurm kills the commands that serve the engine ({', '.join(SERVING)}), "
              f"not {', '.join(unknown)}", file=sys.stderr)
        return 2
    try:
        cluster = SlurmCluster()
    except pytest.skip.Exception as exc:
        print(f"chaos: --slurm {exc}", file=sys.stderr)
        return 2
    base = args.workspace or Path(tempfile.mkdtemp(prefix="harness-chaos-"))
    print(f"working in {base}; slurm cluster in {cluster.root}", flush=True)
    begun = time.monotonic()
    results = []
    try:
        with AgentLLM([]) as llm:
            world = World(base, llm.base_url, launcher={"kind": "slurm", "pending_timeout_s": 60},
                          extra_env={"SLURM_CONF": str(cluster.conf)})
            world.prepare()
            print(f"world prepared in {time.monotonic() - begun:.0f} s", flush=True)
            scenarios = world.scenarios()
            for command in commands:
                for _ in range(args.trials):
                    for when, down in itertools.product(("recorded", "running"), (False, True)):
                        result = slurm_trial(world, scenarios[command], cluster, when, down)
                        results.append(result)
                        print(f"  {command} killed with its job {when} ({'; '.join(result['jobs_at_kill']) or 'none'})"
                              f"{', controller down for status (' + str(result['status_down_s']) + ' s)' if down else ''}: "
                              f"recovery {' '.join(result['recovery'])} in {result['recovery_s']} s: "
                              f"{'; '.join(result['failures']) or 'ok'}", flush=True)
    finally:
        cluster.stop()
    report(results, time.monotonic() - begun)
    down = [r["status_down_s"] for r in results if "status_down_s" in r]
    if down:
        print(f"slurmctld down: {len(down)} kills; `harness status` meanwhile took median {statistics.median(down):.1f} s "
              f"(scontrol's own retries), kept every record: "
              f"{not any('record lost' in f or 'not said' in f for r in results for f in r['failures'])}")
    (base / "chaos-results.json").write_text(json.dumps(results, indent=2) + "\n")
    print(f"details: {base / 'chaos-results.json'}")
    return 0


def report(results: list[dict], seconds: float) -> None:
    """The table: per command and kill kind, kills, failures and the 95 % per-kill bound."""
    print()
    print(f"{'command':<9} {'kill':<7} {'kills':>5} {'failed':>6} {'95% bound':>9}  failures (overshoot: kills after a further line)")
    rows: dict[tuple[str, str], list[dict]] = {}
    for r in results:
        if r["kind"] != "reference" and r["killed"]:
            rows.setdefault((r["command"], r["kind"]), []).append(r)
    total = [r for group in rows.values() for r in group]
    for (command, kind), group in [*rows.items(), (("all", "all"), total)]:
        failed = [r for r in group if r["failures"]]
        what = Counter(f.split(":")[0].split(" (")[0] for r in failed for f in r["failures"])
        where = Counter(f"line {r['line']} ({r['new_events'][r['line'] - 1] if len(r['new_events']) >= r['line'] else '?'})"
                        for r in failed if r["kind"] == "line")
        overshoot = sum(r["overshoot"] for r in group)
        print(f"{command:<9} {kind:<7} {len(group):>5} {len(failed):>6} {upper_bound(len(failed), len(group)):>9.3f}  "
              f"{', '.join(f'{k} x{n}' for k, n in what.items()) or '-'}"
              f"{' at ' + ', '.join(f'{k} x{n}' for k, n in sorted(where.items())) if where else ''}"
              f"{f'; overshoot {overshoot}' if overshoot else ''}")
    unkilled = sum(1 for r in results if r["kind"] != "reference" and not r["killed"])
    references = [r for r in results if r["kind"] == "reference"]
    checked = [r for r in references if r["recovery"]]
    print(f"references (unkilled, checked the same way): {len(checked)}, failed "
          f"{sum(bool(r['failures']) for r in checked)}; kills that came after the command ended: {unkilled}")
    recoveries = [r["recovery_s"] for r in results if r["kind"] != "reference" and r["killed"]]
    if recoveries:
        print(f"recovery (status, repair/resume, approve to the end): median {statistics.median(recoveries):.1f} s; "
              f"benchmark {seconds:.0f} s")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--commands", default=",".join(COMMANDS), help=f"commands to kill (default: {','.join(COMMANDS)})")
    parser.add_argument("--trials", type=int, default=2,
                        help="kills per journal line and random kills, per command (--example: killed runs; default 2)")
    parser.add_argument("--quick", action="store_true",
                        help="one kill per journal line and with the engine up, random kills only for a command that writes none; "
                             "references timed, not checked")
    parser.add_argument("--example", action="store_true",
                        help="the old mode: kill `harness run --auto-approve` of the built-in example uniformly in time")
    parser.add_argument("--slurm", action="store_true",
                        help="the serving commands with `launcher: slurm` on a throwaway single-node cluster, killed "
                             "once the engine job is recorded, with and without the controller down for `status`")
    parser.add_argument("--runbook", help="--example: runbook for the built-in example's run (default: its own)")
    parser.add_argument("--workspace", type=Path, help="where to work (default: a new temporary directory)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--timeout-s", type=float, default=1800, help="--example: limit for one run or resume")
    args = parser.parse_args()
    if args.slurm:
        if args.commands == ",".join(COMMANDS):
            args.commands = ",".join(SERVING)
        return slurm_main(args)
    return example_main(args) if args.example else agent_main(args)


if __name__ == "__main__":
    sys.exit(main())
