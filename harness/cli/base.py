"""The `harness` Typer app and the options every command takes; command modules register on it."""

from __future__ import annotations

import os

import typer

app = typer.Typer(
    name="harness",
    help="Port upstream SGLang and vLLM features into an out-of-tree plugin, with evidence.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)

def _version(asked: bool) -> None:
    if asked:
        from importlib import metadata

        import json

        try:
            dist = metadata.distribution("harness")
            version = dist.version
            # installed from git (PEP 610): the commit says which code this is, the version never changes
            vcs = (json.loads(dist.read_text("direct_url.json") or "{}").get("vcs_info") or {})
            if vcs.get("vcs") == "git" and vcs.get("commit_id"):
                version += f" (git {str(vcs['commit_id'])[:12]})"
        except metadata.PackageNotFoundError:  # a checkout on sys.path, not installed
            version = "not installed (a source checkout)"
        except (ValueError, AttributeError):  # an unreadable direct_url.json: the version alone
            pass
        typer.echo(f"harness {version}")
        raise typer.Exit(0)


@app.callback()
def _options(
    state_url: str | None = typer.Option(
        None, "--state-url", metavar="URL",
        help="Shared run state: postgresql://… (default: $HARNESS_STATE_URL, else the workspace's SQLite file).",
    ),
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True, help="Print the version and exit."),
) -> None:
    """Options for every command (given before the command name)."""
    if state_url:
        os.environ["HARNESS_STATE_URL"] = state_url  # read where the state is opened, as from the environment
