"""What a new user meets in the first hour with `run` and `check`: `--from auto` read as `upgrade`
reads it, an unknown --feature answered with the ids that would do, Ctrl-C at any point saying
what to do next, and the baseline `check` picked named with the line that declared it."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys

import yaml
from loopback_cli import invoke_cli
from workflow_support import cached_release, FEATURE_FILE, one_line_error


def _release(project, version: str) -> str:
    return cached_release(project, project.old, version)


def _declare(project, requirement: str) -> str:
    """The plugin's pyproject.toml requires `requirement`; where it says so (`pyproject.toml:LINE`)."""
    pyproject = project.plugin / "pyproject.toml"
    line = f'dependencies = ["{requirement}"]'
    text = pyproject.read_text().replace('version = "0.1.0"\n', f'version = "0.1.0"\n{line}\n')
    pyproject.write_text(text)
    return f"pyproject.toml:{text.splitlines().index(line) + 1}"


def _without_from(args: list[str]) -> list[str]:
    at = args.index("--from")
    return args[:at] + args[at + 2:]


# ----------------------------------------------------------------------------- run --from auto


def test_run_from_auto_takes_the_release_the_plugin_declares_and_says_where(project):
    release = _release(project, "0.5.17")
    where = _declare(project, "sglang>=0.5.17")
    started = project.cli(*_without_from(project.run_args("--run-id", "a")), "--from", "auto")
    assert f"--from auto: {release} (declared in {where})" in started.stdout
    assert "Waiting at the 01-alignment gate" in started.stdout
    assert project.status("a")["inputs"]["from_upstream"] == release


def test_run_from_auto_without_a_declared_release_says_what_to_pass(project):
    proc = project.cli(*_without_from(project.run_args()), "--from", "auto", check=False, subprocess_=True)
    one_line_error(proc, "no declared sglang version in", "pass --from sglang==X")
    assert not list(project.workspace.rglob("run.json"))  # refused before anything was recorded


# ----------------------------------------------------------------------------- unknown --feature


def test_an_unknown_feature_names_ids_that_would_do_and_the_command_listing_them_all(project):
    for n in range(12):  # more feature files than the error lists
        (project.workspace / "features" / f"f{n:02}.yaml").write_text(yaml.safe_dump(FEATURE_FILE))
    args = project.run_args()
    args[args.index("kv-pool")] = "kv-pol"
    proc = project.cli(*args, check=False, subprocess_=True)
    one_line_error(proc, "unknown feature 'kv-pol'", "known: f00, f01, ", " and 5 more; ")  # 13 files, 2 Feature Diff features
    listing = proc.stderr.strip().split("; all of them: ", 1)[1]
    # the command given lists every id, the Feature Diff's among them, and runs as printed
    listed = invoke_cli(shlex.split(listing)[1:] + ["--limit", "0"])
    assert listed.returncode == 0, listed.stderr
    for feature_id in ("kv-pool", "f11", "get-kv-pool-cls", "scheduler-process-batch"):
        assert feature_id in listed.stdout


def test_an_unknown_feature_without_from_names_the_feature_files_and_the_from_to_give(project):
    args = _without_from(project.run_args())
    args[args.index("kv-pool")] = "nope"
    proc = project.cli(*args, check=False)
    one_line_error(proc, "unknown feature 'nope'", "known: kv-pool; ",
                   f"all of them: harness features --from SPEC --to {project.new} --plugin {project.plugin}")


# ----------------------------------------------------------------------------- Ctrl-C


def _interrupted(project, target: str, *args: str) -> subprocess.CompletedProcess:
    """`harness ARGS --workspace WS` in a process of its own whose `target` (module.function)
    raises KeyboardInterrupt when called, as a Ctrl-C there would: the whole CLI sees it."""
    module, name = target.rsplit(".", 1)
    code = (f"import sys, {module}\n"
            f"def ctrl_c(*args, **kwargs):\n    raise KeyboardInterrupt\n"
            f"{module}.{name} = ctrl_c\n"
            f"from harness.cli import main\nsys.argv = ['harness', *sys.argv[1:]]\nmain()\n")
    return subprocess.run([sys.executable, "-c", code, *args, "--workspace", str(project.workspace)],
                          check=False, capture_output=True, text=True, env=project.env, timeout=240)


def test_ctrl_c_before_the_run_is_recorded_says_nothing_was(project):
    proc = _interrupted(project, "harness.workflow.runs.check_workspace", *project.run_args("--run-id", "early"))
    assert proc.returncode == 130
    assert proc.stderr.strip().splitlines() == ["harness: interrupted before the run started; nothing was recorded"]
    assert "No runs in" in project.cli("status").stdout


def test_ctrl_c_once_the_run_is_recorded_names_the_resume_that_continues_it(project):
    proc = _interrupted(project, "harness.workflow.runs._advance", *project.run_args("--run-id", "rec"))
    assert proc.returncode == 130
    assert proc.stderr.strip().splitlines()[-1] == \
        f"harness: interrupted; continue run rec with: harness resume rec --workspace {project.workspace}"
    assert "Waiting at the 01-alignment gate" in project.cli("resume", "rec").stdout


def test_a_ctrl_c_python_swallows_in_a_finaliser_still_ends_the_run(project):
    """A Ctrl-C that lands while a finaliser runs (GitPython's `Repo.__del__` during a collection)
    is passed by Python to sys.unraisablehook, which would print "Exception ignored in …" with a
    traceback and drop it; the run must still end as the user asked, with the resume line alone,
    not go on to its gate and exit 0."""
    code = ("import signal, sys, harness.workflow.runs as runs\n"
            "advance = runs._advance\n"
            "class Finaliser:\n"
            "    def __del__(self):\n"
            "        signal.raise_signal(signal.SIGINT)\n"
            "        for _ in range(100):  # the handler runs here, inside __del__\n"
            "            pass\n"
            "def swallowed(*args, **kwargs):\n"
            "    Finaliser()\n"
            "    return advance(*args, **kwargs)\n"
            "runs._advance = swallowed\n"
            "from harness.cli import main\nsys.argv = ['harness', *sys.argv[1:]]\nmain()\n")
    proc = subprocess.run([sys.executable, "-c", code, *project.run_args("--run-id", "fin"), "--workspace", str(project.workspace)],
                          check=False, capture_output=True, text=True, env=project.env, timeout=240)
    assert proc.returncode == 130, proc.stderr
    assert "Traceback" not in proc.stderr and "Exception ignored" not in proc.stderr, proc.stderr
    assert proc.stderr.strip().splitlines()[-1] == \
        f"harness: interrupted; continue run fin with: harness resume fin --workspace {project.workspace}"


def test_ctrl_c_in_a_command_without_its_own_handler_still_says_interrupted(project):
    project.cli(*project.run_args("--run-id", "r"))
    proc = _interrupted(project, "harness.workflow.runs.run_status", "status")
    assert proc.returncode == 130
    assert proc.stderr.strip().splitlines() == ["harness: interrupted"]


# ----------------------------------------------------------------------------- check --baseline auto


def test_check_names_the_line_that_declared_its_baseline(project):
    release = _release(project, "0.5.17")
    where = _declare(project, "sglang>=0.5.17")
    args = ["check", "--plugin", str(project.plugin), "--upstream", str(project.new)]
    shown = invoke_cli(args)
    assert f"baseline: {release} (declared in {where}; " in " ".join(shown.stdout.split()), shown.stdout
    doc = json.loads(invoke_cli([*args, "--json"]).stdout)
    assert (doc["baseline"], doc["baseline_declared_in"]) == (release, where)
