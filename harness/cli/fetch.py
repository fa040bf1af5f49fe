"""`harness fetch SPEC...`: download and unpack releases into the wheel cache, for offline use."""

from __future__ import annotations

import typer

from harness.cli.base import app
from harness.cli.console import step


@app.command()
def fetch(specs: list[str] = typer.Argument(..., metavar="SPEC...", help="Releases to cache, e.g. sglang==0.5.23, vllm==0.27.1.")) -> None:
    """Download and unpack upstream releases into the wheel cache (~/.cache/harness, moved by
    HARNESS_CACHE_DIR), so `run`, `check`, `map` and `diff` work on them offline."""
    from harness.knowledge.upstream import cache_dir, resolve_upstream  # cost: the knowledge engine

    for spec in specs:
        with step(f"fetching {spec}"):
            source = resolve_upstream(spec)
        typer.echo(f"{source.label}: {len(source.files)} modules in {source.root}")
    typer.echo(f"cache: {cache_dir()}")
