"""`harness runbook init`: a commented Validation Runbook to start from, for the plugin's engine."""

from __future__ import annotations

import tempfile
from pathlib import Path

import typer

from harness.cli.base import app
from harness.cli.common import ENGINE
from harness.cli.console import out
from harness.cli.paths import resolved
from harness.errors import HarnessError
from harness.util.files import write_atomic

# how each engine's server is started (its documented CLI); harness fills {host}, {port}, {model}
_SERVER_COMMANDS = {
    "sglang": "python -m sglang.launch_server --model-path {model} --host {host} --port {port}",
    "vllm": "vllm serve {model} --host {host} --port {port}",
}

runbook = typer.Typer(help="Validation Runbooks: what the served steps start and measure.", no_args_is_help=True)
app.add_typer(runbook, name="runbook")


@runbook.command("init")
def init(
    plugin: Path = typer.Option(Path("."), "--plugin", help="The plugin repo the runbook is for (its engine and declared release)."),
    out_file: Path = typer.Option(Path("runbook.yaml"), "--out", help="Where to write it."),
    force: bool = typer.Option(False, "--force", help="Overwrite an existing file."),
    engine: str | None = ENGINE,
) -> None:
    """Write a commented runbook template for the plugin's engine (SGLang or vLLM) and declared release: the
    server command, smoke prompts, a gsm8k accuracy suite and a load test, with TODOs for the device and model.
    It loads as it is written (`harness approve RUN --runbook F` accepts it); fill the TODOs before a real run."""
    from harness.engines import use_engine
    from harness.evidence.inputs import check_runbook
    from harness.knowledge.model import declared_pins, detect_engine
    from harness.util.templates import render

    root = resolved(plugin, "plugin repo")
    if not root.is_dir():
        raise HarnessError(f"plugin repo {root} is not a directory")
    chosen = detect_engine(root, None, engine)
    with use_engine(chosen):
        pin = next((p for p in declared_pins(root) if p.form == "release"), None)
    target = resolved(out_file, "runbook")
    if target.exists() and not force:
        raise HarnessError(f"{target} exists; pass --force to overwrite it")
    version = pin.value if pin else "TODO"
    text = render("runbook.yaml.j2", engine=chosen, version=version, plugin_name=_project_name(root), out_name=out_file.name,
                  command=_SERVER_COMMANDS[chosen.name], requirement=f"{chosen.distribution}=={version}" if pin else chosen.distribution)
    with tempfile.TemporaryDirectory() as scratch:  # the template is a runbook as the steps read it, before it lands
        draft = Path(scratch) / target.name
        draft.write_text(text, encoding="utf-8")
        check_runbook(draft, chosen.name)
    write_atomic(target, text)
    said = f"{chosen.distribution}=={version}" + (f" (declared in {pin.source})" if pin else " (the plugin declares none: set engine_version)")
    out.print(f"Wrote {target}: {chosen.display} runbook for {said}; fill in its TODOs (device, model) before a real run.")


def _project_name(root: Path) -> str:
    """The plugin's project name (pyproject.toml's [project] name), else its folder's name; made
    safe for a runbook `name:` (letters, digits, '-', '_', '.')."""
    import re
    import tomllib

    try:
        name = tomllib.loads((root / "pyproject.toml").read_text()).get("project", {}).get("name")
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError, AttributeError):
        name = None
    return re.sub(r"[^A-Za-z0-9._-]+", "-", name if isinstance(name, str) and name.strip() else root.name).strip("-") or "plugin"
