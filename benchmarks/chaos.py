"""Chaos: SIGKILL the harness at random points of the built-in example, resume, and count what was
lost. Prints figures; asserts nothing.

    python benchmarks/chaos.py --trials 5                 # the built-in example (SmolLM2 on llama.cpp)
    python benchmarks/chaos.py --trials 20 --runbook R    # the same run, another runbook (e.g. loopback)

First one reference run (`harness run --auto-approve`, never killed) gives the run's duration D.
Then each trial starts the same run under a new id, kills it with SIGKILL at a uniformly random
moment in [0, D], records every evidence file of the steps finished by then (sha256), and runs
`harness resume` until the run finishes. Every process the harness starts inherits a marker in
its environment, so orphans are counted by looking at the machine, not at the harness's record.

    runs completed      trials whose run finished, with `status` exit 0 (no evidence changed,
                        nothing left to repair)
    evidence lost or changed   files of steps finished before the kill that are gone or differ
                        afterwards, plus files of any step whose evidence no longer hashes to its
                        journaled record (goal 0)
    orphans left        marked processes alive after the next command (goal 0); the count of
                        those a kill left running before it is printed beside
    recovery time       from starting `harness resume` to the run's next journal event (work
                        again under way), median over trials
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import psutil

MARKER = "HARNESS_CHAOS_TRIAL"


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
    proc = subprocess.run(harness(workspace, "status", run_id, "--json"), capture_output=True, text=True, env=env)
    try:
        return proc.returncode, json.loads(proc.stdout)
    except json.JSONDecodeError:
        return proc.returncode, None


def run_args(run_id: str, runbook: str | None) -> list[str]:
    return ["run", "--auto-approve", "--run-id", run_id, *(["--runbook", runbook] if runbook else [])]


def trial(workspace: Path, run_id: str, kill_at: float | None, runbook: str | None, timeout_s: float) -> dict:
    token = uuid.uuid4().hex
    env = {**os.environ, MARKER: token}
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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=5, help="killed runs (after one reference run)")
    parser.add_argument("--runbook", help="runbook for the built-in example's run (default: its own)")
    parser.add_argument("--workspace", type=Path, help="workspace (default: a new temporary directory)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--timeout-s", type=float, default=1800, help="limit for one run or resume")
    args = parser.parse_args()
    workspace = args.workspace or Path(tempfile.mkdtemp(prefix="harness-chaos-"))
    workspace.mkdir(parents=True, exist_ok=True)
    rng = random.Random(args.seed)
    print(f"workspace: {workspace}", flush=True)

    reference = trial(workspace, "chaos-reference", None, args.runbook, args.timeout_s)
    duration = reference["seconds"]
    print(f"reference run: {duration:.0f} s, completed: {reference['completed']}, "
          f"orphans left: {reference['orphans_left']}", flush=True)
    results = []
    for number in range(1, args.trials + 1):
        kill_at = rng.uniform(0.0, duration)
        result = trial(workspace, f"chaos-{number}", kill_at, args.runbook, args.timeout_s)
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
    if recoveries:
        print(f"median recovery time: {statistics.median(recoveries):.2f} s "
              f"(min {min(recoveries):.2f}, max {max(recoveries):.2f}; `harness resume` to the next journal event)")
    (workspace / "chaos-results.json").write_text(json.dumps([reference, *results], indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
