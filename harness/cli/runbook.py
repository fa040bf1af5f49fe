"""`harness runbook init`: a commented Validation Runbook to start from, for the plugin's engine."""

from __future__ import annotations

import re
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
    engine_version: str | None = typer.Option(
        None, "--engine-version", help="The engine release the server runs, e.g. 0.5.23 for a port to it "
        "(default: the plugin's declared release); also the runbook's pinned requirement."),
    engine: str | None = ENGINE,
) -> None:
    """Write a commented runbook template for the plugin's engine (SGLang or vLLM) and declared release (or
    --engine-version): the server command and the engine it requires, smoke prompts, a gsm8k accuracy suite and
    a load test, with TODO placeholders for the device and the model. Its shape is checked as the steps read it; a run
    (or `approve`/`resume --runbook`) refuses it until every TODO is filled in."""
    from harness.engines import use_engine
    from harness.evidence.inputs import check_runbook
    from harness.evidence.runbook import PLACEHOLDER
    from harness.knowledge.model import declared_pins, detect_engine
    from harness.util.templates import render

    if engine_version is not None and not re.fullmatch(r"[0-9][0-9A-Za-z.+-]*", engine_version):
        raise HarnessError(f"--engine-version {engine_version!r}: give the release alone, e.g. 0.5.23")
    root = resolved(plugin, "plugin repo")
    if not root.is_dir():
        raise HarnessError(f"plugin repo {root} is not a directory")
    chosen = detect_engine(root, None, engine)
    with use_engine(chosen):
        pin = next((p for p in declared_pins(root) if p.form == "release"), None)
    target = resolved(out_file, "runbook")
    if target.exists() and not force:
        raise HarnessError(f"{target} exists; pass --force to overwrite it")
    version = engine_version or (pin.value if pin else None)
    # with no release known, engine_version is a placeholder a run refuses, and the engine is required unpinned
    text = render("runbook.yaml.j2", engine=chosen, version=version or PLACEHOLDER, placeholder=PLACEHOLDER,
                  plugin_name=_project_name(root), out_name=out_file.name, command=_SERVER_COMMANDS[chosen.name],
                  requirement=f"{chosen.distribution}=={version}" if version else chosen.distribution)
    # the template is a runbook as the steps read it, before it lands; its placeholders are refused only when it
    # is used for a run (harness.evidence.runbook.refuse_placeholders), so this check passes with them
    with tempfile.TemporaryDirectory() as scratch:
        draft = Path(scratch) / target.name
        draft.write_text(text, encoding="utf-8")
        check_runbook(draft, chosen.name)
    write_atomic(target, text)
    if engine_version is not None:
        said = f"{chosen.distribution}=={version} (--engine-version" + (f"; the plugin declares {pin.value})" if pin else ")")
    elif pin:
        said = f"{chosen.distribution}=={version} (declared in {pin.source}); for a port, --engine-version X writes one for release X"
    else:
        said = f"{chosen.distribution} (the plugin declares no release: set engine_version, or pass --engine-version)"
    fields = "the device, the model" + ("" if version else ", engine_version")
    out.print(f"Wrote {target}: {chosen.display} runbook for {said}; fill in its {PLACEHOLDER} placeholders ({fields}): "
              "a run refuses it until then.")


def _project_name(root: Path) -> str:
    """The plugin's project name (pyproject.toml's [project] name), else its folder's name; made
    safe for a runbook `name:` (letters, digits, '-', '_', '.')."""
    import tomllib

    try:
        name = tomllib.loads((root / "pyproject.toml").read_text()).get("project", {}).get("name")
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError, AttributeError):
        name = None
    return re.sub(r"[^A-Za-z0-9._-]+", "-", name if isinstance(name, str) and name.strip() else root.name).strip("-") or "plugin"
