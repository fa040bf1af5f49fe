"""What the workflow tests build: two tiny SGLang-shaped upstream versions, a plugin written
against the real plugin API names, a feature file, and a runbook whose server is the loopback
engine — so every gate sees evidence produced by real components. (A module of its own, not
conftest, so test modules can import it without clashing with other test dirs' conftest.)"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import yaml
from loopback_cli import invoke_cli
from sglang_api import DEVICE_MIXIN, HOOK_REGISTRY

REPO_ROOT = Path(__file__).resolve().parents[2]

_INTERFACE_OLD = '''
from sglang.srt.platforms.device_mixin import DeviceMixin


class SRTPlatform(DeviceMixin):
    def get_mha_kv_pool_cls(self):
        from sglang.srt.mem_cache.memory_pool import MHATokenToKVPool
        return MHATokenToKVPool

    def get_default_attention_backend(self) -> str:
        return "triton"
'''

_INTERFACE_NEW = '''
from sglang.srt.platforms.device_mixin import DeviceMixin


class SRTPlatform(DeviceMixin):
    def get_kv_pool_cls(self, *, kind: str):
        from sglang.srt.mem_cache.memory_pool import MHATokenToKVPool
        return MHATokenToKVPool

    def get_default_attention_backend(self) -> str:
        return "triton"
'''

_SCHEDULER_OLD = '''
class Scheduler:
    def process_batch(self, batch):
        return [request for request in batch]
'''

_SCHEDULER_NEW = '''
class Scheduler:
    def process_batch(self, batch, *, overlap: bool = False):
        ready = [request for request in batch if request is not None]
        return ready
'''

_MEMORY_POOL = '''
class MHATokenToKVPool:
    def __init__(self, size: int):
        self.size = size
'''


def write_tree(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip())
    return root


def upstream_files(new: bool) -> dict[str, str]:
    # sglang/srt has no __init__.py, as in the real wheels (a namespace package).
    return {
        "sglang/__init__.py": "",
        "sglang/srt/platforms/__init__.py": "",
        "sglang/srt/platforms/device_mixin.py": DEVICE_MIXIN,
        "sglang/srt/platforms/interface.py": _INTERFACE_NEW if new else _INTERFACE_OLD,
        "sglang/srt/plugins/__init__.py": "",
        "sglang/srt/plugins/hook_registry.py": HOOK_REGISTRY,
        "sglang/srt/managers/__init__.py": "",
        "sglang/srt/managers/scheduler.py": _SCHEDULER_NEW if new else _SCHEDULER_OLD,
        "sglang/srt/mem_cache/__init__.py": "",
        "sglang/srt/mem_cache/memory_pool.py": _MEMORY_POOL,
    }


PLUGIN_FILES = {
    "pyproject.toml": '''
        [project]
        name = "xdev-plugin"
        version = "0.1.0"

        [project.entry-points."sglang.srt.platforms"]
        xdev = "xdev_plugin:activate"

        [project.entry-points."sglang.srt.plugins"]
        xdev_hooks = "xdev_plugin.hooks:register"
    ''',
    "xdev_plugin/__init__.py": '''
        def activate():
            return "xdev_plugin.platform:XdevPlatform"
    ''',
    "xdev_plugin/platform.py": '''
        from sglang.srt.platforms.interface import SRTPlatform


        class XdevPlatform(SRTPlatform):
            device_type = "cuda"

            def get_mha_kv_pool_cls(self):
                from xdev_plugin.kv_pool import XdevKVPool
                return XdevKVPool

            def get_default_attention_backend(self) -> str:
                return "xdev"
    ''',
    "xdev_plugin/kv_pool.py": '''
        from sglang.srt.mem_cache.memory_pool import MHATokenToKVPool


        class XdevKVPool(MHATokenToKVPool):
            pass
    ''',
    "xdev_plugin/hooks.py": '''
        from sglang.srt.plugins.hook_registry import HookRegistry, HookType

        _SCHEDULER = "sglang.srt.managers.scheduler.Scheduler"


        def _around_process_batch(original, self, batch, **kwargs):
            return original(self, batch, **kwargs)


        def register():
            HookRegistry.register(f"{_SCHEDULER}.process_batch", _around_process_batch, HookType.AROUND)
    ''',
}

FEATURE_FILE = {
    "name": "KV pool factory",
    "description": "Upstream replaced get_mha_kv_pool_cls by get_kv_pool_cls(*, kind).",
    "upstream": {
        "symbols": [
            "sglang.srt.platforms.interface.SRTPlatform.get_kv_pool_cls",
            "sglang.srt.platforms.interface.SRTPlatform.get_mha_kv_pool_cls",
        ]
    },
    "models": ["loopback-model"],
}


EXAMPLE_DATA = REPO_ROOT / "harness/examples/workspace/data"


def loopback_runbook(path: Path, *flags: str, accuracy: bool = False) -> Path:
    """A runbook serving the loopback engine with `flags` (its fault switches). With `accuracy`,
    the engine answers from the example gsm8k key and the runbook gates a gsm8k suite on it."""
    command = "python -m harness.testing.loopback --host {host} --port {port} --model {model}"
    if accuracy:
        flags = (*flags, "--answers", str(EXAMPLE_DATA / "gsm8k_mini_test.jsonl"))
    if flags:
        command += " " + " ".join(flags)
    data: dict = {
        "name": "loopback",
        "environment": {"device": "loopback", "engine_version": "fixture"},
        "server": {
            "command": command,
            "model": "loopback-model",
            "startup_timeout_s": 20,
            "shutdown_grace_s": 2,
            "env": {"PYTHONPATH": str(REPO_ROOT)},
        },
        "smoke": {"prompts": ["The capital of France is", "Say something about the sea."], "max_tokens": 8},
    }
    if accuracy:
        data["accuracy"] = [{
            "name": "gsm8k-mini",
            "task": "gsm8k",
            "num_fewshot": 1,
            "data_files": {
                "test": str(EXAMPLE_DATA / "gsm8k_mini_test.jsonl"),
                "train": str(EXAMPLE_DATA / "gsm8k_mini_train.jsonl"),
            },
            "gen_kwargs": {"max_gen_toks": 64},
            "baseline": {"score": 0.95, "n": 20, "source": "fixture"},
            "margin": 0.5,
        }]
        data["profiling"] = {"num_steps": 3, "activities": ["CPU", "GPU"]}
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


class Project:
    """A workspace plus everything `harness run` needs, and a way to drive the CLI."""

    def __init__(self, root: Path):
        self.root = root
        self.workspace = root / "ws"
        self.workspace.mkdir()
        self.old = write_tree(root / "upstream-old", upstream_files(new=False))
        self.new = write_tree(root / "upstream-new", upstream_files(new=True))
        self.plugin = write_tree(root / "plugin", PLUGIN_FILES)
        features = self.workspace / "features"
        features.mkdir()
        (features / "kv-pool.yaml").write_text(yaml.safe_dump(FEATURE_FILE, sort_keys=False))
        self.runbook = loopback_runbook(root / "runbook.yaml")
        self.env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")])),
            "HARNESS_CACHE_DIR": str(root / "cache"),
            "COLUMNS": "200",
        }

    def run_args(self, *extra: str, runbook: Path | None = None) -> list[str]:
        return [
            "run", "--feature", "kv-pool", "--plugin", str(self.plugin), "--upstream", str(self.new),
            "--from", str(self.old), "--runbook", str(runbook or self.runbook), *extra,
        ]

    def command(self, *args: str) -> list[str]:
        return [sys.executable, "-m", "harness", *args, "--workspace", str(self.workspace)]

    def cli(self, *args: str, check: bool = True, subprocess_: bool = False) -> subprocess.CompletedProcess:
        """Run `harness ARGS --workspace WS`: in-process through Typer's CliRunner (fast), or as
        a real `python -m harness` subprocess where the process boundary is the point."""
        if subprocess_:
            proc = subprocess.run(self.command(*args), capture_output=True, text=True, env=self.env, timeout=240)
        else:
            proc = self._in_process(*args)
        if check and proc.returncode != 0:
            raise AssertionError(f"harness {' '.join(args)} exited {proc.returncode}\n{proc.stdout}\n{proc.stderr}")
        return proc

    def _in_process(self, *args: str) -> subprocess.CompletedProcess:
        proc = invoke_cli([*args, "--workspace", str(self.workspace)])
        return subprocess.CompletedProcess(args, proc.returncode, proc.stdout, proc.stderr)

    def status(self, run_id: str) -> dict:
        import json

        return json.loads(self.cli("status", run_id, "--json").stdout)

    def reports(self, run_id: str) -> Path:
        return self.workspace / "reports" / run_id

    def journal(self, run_id: str) -> list[dict]:
        import json

        path = self.workspace / ".harness" / "runs" / run_id / "journal.jsonl"
        return [json.loads(line) for line in path.read_text().splitlines()]


def cached_release(project: Project, tree: Path, version: str) -> str:
    """`tree` (one of the fixture's upstreams) in the test's wheel cache as the release
    sglang==VERSION, as `harness fetch` leaves it there, so `--from auto`, `--baseline auto` and a
    run's target resolve offline; returns that spec."""
    import json
    import shutil

    cache = Path(project.env["HARNESS_CACHE_DIR"])
    fingerprint = "release-" + version.replace(".", "").rjust(20, "0")
    shutil.copytree(tree, cache / "src" / fingerprint)
    (cache / "src" / fingerprint / ".complete").touch()
    (cache / "releases").mkdir(parents=True, exist_ok=True)
    (cache / "releases" / f"sglang-{version}.json").write_text(json.dumps({"fingerprint": fingerprint}))
    return f"sglang=={version}"


def one_line_error(proc: subprocess.CompletedProcess, *fragments: str) -> None:
    """The command failed with one line on stderr, `harness: error: ...`, holding `fragments`."""
    assert proc.returncode != 0
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("harness: error: "), proc.stderr
    for fragment in fragments:
        assert fragment in lines[0], lines[0]


def wait_for(predicate, what: str, limit_s: float = 60) -> None:
    """Bounded poll for an external process to reach a state; not a timing assertion."""
    deadline = time.monotonic() + limit_s
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up waiting for {what}")
        time.sleep(0.1)


def tree_bytes(root: Path) -> dict[str, bytes]:
    """Every file under `root` (relative POSIX path -> bytes): a tree compared before and after."""
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}
