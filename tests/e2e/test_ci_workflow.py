"""The upgrade bot end to end: the workflow `harness ci init --github` writes, its steps executed in
order in a GitHub-like shell, on a plugin repo checked out from its (local, bare) remote, with
harness installed from its wheel by the workflow's own install step.

What runs for real: every `run:` step, as written (bash -e, the step's env, GITHUB_OUTPUT read
back into `steps.<id>.outputs`), with GitHub's default variables set. What is emulated: the
`uses:` steps, which are not shell — checkout clones the remote; setup-python is the fresh venv
first on PATH (its dependencies borrowed, see wheel_support); cache restores nothing (releases
come from this machine's cache); upload-artifact collects the files its `path` names and sets
its `artifact-url` output — and the only `${{ }}` expressions and `if:` forms the workflow uses
(an unknown one fails the test, so a new form is emulated deliberately). `gh` is a recording
stand-in on PATH that keeps its issues in a JSON file."""

from __future__ import annotations

import functools
import http.server
import json
import os
import re
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import yaml
from wheel_support import REPO_ROOT, build_wheel, clean_env, example_releases, fresh_venv, leaks

pytestmark = pytest.mark.slow

SERVER, REPOSITORY = "https://github.example", "xdev-org/sglang-xdev"
EXAMPLE_PLUGIN = REPO_ROOT / "harness" / "examples" / "workspace" / "plugin"
EXPRESSION = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")

# A recording `gh`: each call appended to $GH_LOG (argv, and the --body-file's text); issues kept
# in $GH_ISSUES. `issue list --jq` is answered for the one filter the workflow uses (by title).
_GH = '''#!{python}
import json, os, re, sys
args = sys.argv[1:]
issues_file = os.environ["GH_ISSUES"]
issues = json.load(open(issues_file)) if os.path.exists(issues_file) else []
call = {{"argv": args, "token": os.environ.get("GH_TOKEN")}}
if "--body-file" in args:
    call["body"] = open(args[args.index("--body-file") + 1]).read()
with open(os.environ["GH_LOG"], "a") as log:
    log.write(json.dumps(call) + "\\n")
if args[:2] == ["issue", "list"]:
    prefix = re.search(r'select\\(\\.title \\| startswith\\("(.*)"\\)\\)', args[args.index("--jq") + 1]).group(1)
    print("".join(f"{{i['number']}}\\n" for i in issues if i["title"].startswith(prefix)), end="")
elif args[:2] == ["issue", "create"]:
    issues.append({{"number": len(issues) + 1, "title": args[args.index("--title") + 1]}})
    json.dump(issues, open(issues_file, "w"))
    print(f"{server}/{repository}/issues/{{len(issues)}}")
elif args[:2] != ["issue", "comment"]:
    sys.exit(f"gh stand-in: not emulated: {{args}}")
'''


class Job:
    """One execution of the workflow's job: its environment, the steps' outputs, what `uses:`
    steps would have done."""

    def __init__(self, tmp: Path, run_id: int, remote: Path, venv: Path, gh_dir: Path):
        self.workspace = tmp / f"job-{run_id}" / "sglang-xdev"
        self.temp = tmp / f"job-{run_id}" / "runner-temp"
        self.temp.mkdir(parents=True)
        self.remote, self.outputs, self.artifacts = remote, {}, {}
        self.summary = self.temp / "step-summary.md"
        self.env = clean_env(venv, GITHUB_ACTIONS="true", CI="true", GITHUB_WORKSPACE=str(self.workspace),
                             GITHUB_SERVER_URL=SERVER, GITHUB_REPOSITORY=REPOSITORY, GITHUB_RUN_ID=str(run_id),
                             GITHUB_RUN_ATTEMPT="1", GITHUB_STEP_SUMMARY=str(self.summary), RUNNER_TEMP=str(self.temp),
                             GITHUB_EVENT_NAME="schedule", GH_LOG=str(gh_dir / "calls.jsonl"),
                             GH_ISSUES=str(gh_dir / "issues.json"))
        self.env["PATH"] = os.pathsep.join([str(gh_dir), self.env["PATH"]])
        self.run_id = run_id

    def expression(self, text: str) -> str:
        """`text` with the `${{ }}` expressions the workflow uses replaced by their values."""
        def value(match: re.Match) -> str:
            expr = match[1]
            if expr == "github.token":
                return "ghs-job-token"
            step = re.fullmatch(r"steps\.([\w-]+)\.outputs\.([\w-]+)", expr)
            if step:
                return self.outputs.get(step[1], {}).get(step[2], "")
            raise AssertionError(f"expression not emulated: {expr}")
        return EXPRESSION.sub(value, text)

    def wanted(self, step: dict, failed: bool) -> bool:
        condition = step.get("if")
        if condition is None:
            return not failed  # success()
        if condition == "always()":
            return True
        wanted = False
        for term in condition.split(" || "):  # equality tests joined by ||, the one form the workflow uses
            match = re.fullmatch(r"steps\.([\w-]+)\.outputs\.([\w-]+) == '(.*)'", term)
            assert match, f"if: not emulated: {condition}"
            wanted = wanted or self.outputs.get(match[1], {}).get(match[2]) == match[3]
        return wanted

    def uses(self, step: dict) -> None:
        action, given = step["uses"].split("@")[0], step.get("with", {})
        if action == "actions/checkout":
            subprocess.run(["git", "clone", "-q", str(self.remote), str(self.workspace)], check=True)
        elif action == "actions/setup-python":
            assert given.get("python-version")  # the fresh venv is the job's Python (first on PATH)
        elif action == "actions/cache":
            pass  # nothing restored: this machine's release cache stands in for the restored one
        elif action == "actions/upload-artifact":
            files = sorted(str(p.relative_to(self.workspace)) for line in given["path"].split()
                           for p in (self.workspace / line).rglob("*") if p.is_file())
            self.artifacts[given["name"]] = files
            self.outputs[step["id"]] = {"artifact-id": "9001",
                                        "artifact-url": f"{SERVER}/{REPOSITORY}/actions/runs/{self.run_id}/artifacts/9001"}
        else:
            raise AssertionError(f"action not emulated: {action}")

    def run(self, steps: list[dict]) -> list[tuple[str, int]]:
        """Each step in order; returns (name, exit code) of the steps that ran."""
        done, failed = [], False
        for number, step in enumerate(steps):
            if not self.wanted(step, failed):
                continue
            name = step.get("name") or step.get("uses", str(number)).split("@")[0]
            if "uses" in step:
                self.uses(step)
                done.append((name, 0))
                continue
            output = self.temp / f"output-{number}"
            output.touch()
            script = self.temp / f"step-{number}.sh"
            script.write_text(self.expression(step["run"]))
            env = {**self.env, **{k: self.expression(str(v)) for k, v in step.get("env", {}).items()},
                   "GITHUB_OUTPUT": str(output)}
            shell = ["bash", "--noprofile", "--norc", "-eo", "pipefail"] if step.get("shell") == "bash" else ["bash", "-e"]
            proc = subprocess.run([*shell, str(script)], cwd=self.workspace, env=env, capture_output=True, text=True,
                                  timeout=600, check=False)
            assert proc.returncode == 0, f"step {name!r} failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}"
            if "id" in step:
                self.outputs[step["id"]] = dict(line.split("=", 1) for line in output.read_text().splitlines() if "=" in line)
            done.append((name, proc.returncode))
            failed = failed or proc.returncode != 0
        return done


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=Plugin Dev", "-c", "user.email=dev@xdev.example", *args], cwd=cwd,
                   check=True, capture_output=True)


RELATIVE_LINK = re.compile(r"\]\((?!https?://)[^)]*\)")


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:  # the test's output is pytest's
        pass


# What the job's package index lists for SGLang (PEP 503 simple page): `--to latest` reads it
# through pip, so the newest release is this test's, not whatever PyPI has today
_SGLANG_PAGE = "".join(f'<a href="../../files/sglang-{v}-py3-none-any.whl">sglang-{v}-py3-none-any.whl</a>\n'
                       for v in ("0.5.14", "0.5.17", "0.5.23", "0.5.24rc1"))


@pytest.fixture()
def loopback_index(tmp_path):
    """A loopback web server standing in for a team's package host: the harness wheel at
    `<base>/files/<wheel>` and a simple index at `<base>/simple/` listing SGLang releases.
    Yields (base URL, the wheel's URL)."""
    wheel = build_wheel(tmp_path / "build")
    www = tmp_path / "www"
    (www / "files").mkdir(parents=True)
    (www / "files" / wheel.name).write_bytes(wheel.read_bytes())
    (www / "simple" / "sglang").mkdir(parents=True)
    (www / "simple" / "sglang" / "index.html").write_text(f"<!DOCTYPE html><html><body>\n{_SGLANG_PAGE}</body></html>\n")
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(www)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    yield base, f"{base}/files/{wheel.name}"
    server.shutdown()


def test_the_generated_workflow_runs_end_to_end(tmp_path, loopback_index):
    example_releases()
    base, url = loopback_index
    # the engineer's machine: harness installed from that URL, as the README tells users (pip
    # records where from in direct_url.json; `ci init` writes that into the workflow)
    admin = tmp_path / "admin"
    fresh_venv(admin)
    subprocess.run([str(admin / "bin" / "python"), "-m", "pip", "install", "-q", "--no-deps", f"harness @ {url}"], check=True,
                   capture_output=True, text=True, env=clean_env(admin), cwd=admin, timeout=300)
    venv = tmp_path / "venv"
    python = fresh_venv(venv)  # harness is not installed: the workflow's install step does that
    gh_dir = tmp_path / "gh"
    gh_dir.mkdir()
    (gh_dir / "gh").write_text(_GH.format(python=sys.executable, server=SERVER, repository=REPOSITORY))
    (gh_dir / "gh").chmod(0o755)

    # the plugin's repository: the example plugin, the generated workflow committed, pushed to its remote
    repo, remote = tmp_path / "sglang-xdev", tmp_path / "remote.git"
    subprocess.run(["cp", "-r", str(EXAMPLE_PLUGIN), str(repo)], check=True)
    _git(repo, "init", "-q", "-b", "main")
    init = subprocess.run([str(admin / "bin" / "harness"), "ci", "init", "--github", "--plugin", str(repo)],
                          capture_output=True, text=True, check=False, env=clean_env(admin), cwd=tmp_path)
    assert init.returncode == 0, init.stderr
    assert "each job reads the SGLang it upgrades from in pyproject.toml:10 (sglang==0.5.17 now)" in init.stdout
    workflow_file = repo / ".github/workflows/sglang-upgrade.yml"
    install = next(s for s in yaml.safe_load(workflow_file.read_text())["jobs"]["upgrade"]["steps"] if s.get("name") == "Install harness")
    assert install["run"] == f"python -m pip install 'harness @ {url}'"  # one requirement, as pip reads it
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "the plugin, and the SGLang upgrade bot")
    _git(tmp_path, "init", "-q", "--bare", "-b", "main", str(remote))
    _git(repo, "push", "-q", str(remote), "main")
    steps = yaml.safe_load((repo / ".github/workflows/sglang-upgrade.yml").read_text())["jobs"]["upgrade"]["steps"]

    # pip resolves that line for real in the job, against the loopback index only
    first = Job(tmp_path, 4242, remote, venv, gh_dir)
    first.env["PIP_INDEX_URL"] = f"{base}/simple/"
    ran = [name for name, _ in first.run(steps)]
    assert ran == ["actions/checkout", "actions/setup-python", "Install harness", "SGLang release cache", "harness upgrade", "Keep the reports",
                   "Open or update the upgrade issue"]
    assert leaks(python) == []  # the job's harness is the wheel's
    assert first.outputs["upgrade"] == {"exit": "1"}  # features wait for review

    # the job page: the one-screen summary, no link that would not resolve there
    summary = first.summary.read_text()
    assert summary.startswith("# SGLang upgrade sglang==0.5.17 → sglang==0.5.23")
    assert "feature(s) to review" in summary and "## Already broken on sglang==0.5.17" in summary
    assert "`cudagraphrunner-can-run`" in summary  # the preexisting feature is listed apart, not lost
    assert not RELATIVE_LINK.findall(summary)

    # the artifact: the upgrade's reports and every review run, to approve from
    upgrade_dir = "reports/upgrade-0.5.17-to-0.5.23"
    files = first.artifacts["harness-reports"]
    assert {f"{upgrade_dir}/{name}" for name in ("summary.md", "details.md", "issue.md", "upgrade.json")} <= set(files)
    doc = json.loads((first.workspace / upgrade_dir / "upgrade.json").read_text())
    started = [f["run_id"] for f in doc["features"] if f["run_id"]]
    assert 0 < len(started) <= doc["runs"] == 10
    for run_id in started:
        assert f".harness/runs/{run_id}/journal.jsonl" in files and f"reports/{run_id}/01-alignment.md" in files

    # the issue: titled with the version pair, linking to this run's page and artifact
    calls = [json.loads(line) for line in (gh_dir / "calls.jsonl").read_text().splitlines()]
    assert [c["argv"][:2] for c in calls] == [["issue", "list"], ["issue", "create"]]
    assert all(c["token"] == "ghs-job-token" for c in calls)
    create = calls[1]
    assert create["argv"][create["argv"].index("--title") + 1] == "SGLang upgrade 0.5.17 -> 0.5.23: features wait for review"
    body = create["body"]
    assert f"Workflow run: {SERVER}/{REPOSITORY}/actions/runs/4242\n" in body
    assert f"{SERVER}/{REPOSITORY}/actions/runs/4242/artifacts/9001" in body
    assert (first.workspace / upgrade_dir / "issue.md").read_text() in body
    assert not RELATIVE_LINK.findall(body)
    assert all(run_id in body for run_id in started)
    assert f"`{upgrade_dir}/details.md`" in body  # named by its path in the artifact

    # the next scheduled run, on a fresh checkout: the open issue gets a comment, not a twin
    second = Job(tmp_path, 4243, remote, venv, gh_dir)
    second.env["PIP_INDEX_URL"] = f"{base}/simple/"
    second.run(steps)
    calls = [json.loads(line) for line in (gh_dir / "calls.jsonl").read_text().splitlines()]
    assert [c["argv"][:3] for c in calls[2:]] == [["issue", "list", "--state"], ["issue", "comment", "1"]]
    assert f"{SERVER}/{REPOSITORY}/actions/runs/4243/artifacts/9001" in calls[3]["body"]

    # a later release on which nothing certainly breaks but findings need a person (exit 3): the
    # issue step runs too, with its own title; the step script is the workflow's, as written
    third = Job(tmp_path, 4244, remote, venv, gh_dir)
    third.uses(steps[0])  # the checkout
    folder = third.workspace / "reports" / "upgrade-0.5.23-to-0.5.24"
    folder.mkdir(parents=True)
    (folder / "issue.md").write_text("# SGLang upgrade sglang==0.5.23 → sglang==0.5.24\n\n3 not decidable statically\n")
    third.outputs = {"upgrade": {"exit": "3"}, "reports": {"artifact-url": f"{SERVER}/{REPOSITORY}/actions/runs/4244/artifacts/9001"}}
    assert [name for name, _ in third.run([steps[-1]])] == ["Open or update the upgrade issue"]
    calls = [json.loads(line) for line in (gh_dir / "calls.jsonl").read_text().splitlines()]
    create = calls[-1]
    assert create["argv"][:2] == ["issue", "create"]
    assert create["argv"][create["argv"].index("--title") + 1] == "SGLang upgrade 0.5.23 -> 0.5.24: findings not decidable statically"
    assert "3 not decidable statically" in create["body"]
    # exit 0 (nothing to review) opens nothing
    quiet = Job(tmp_path, 4245, remote, venv, gh_dir)
    quiet.outputs = {"upgrade": {"exit": "0"}}
    assert quiet.run([steps[-1]]) == []
