"""The `harness` command line. Each command group lives in its own module and registers
itself on `app`; `main` turns a HarnessError into one line on stderr and a non-zero exit."""

from __future__ import annotations

import json
import sys

import typer

from harness.errors import HarnessError

app = typer.Typer(
    name="harness",
    help="Port upstream SGLang features into an out-of-tree plugin, with evidence.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)

# Command modules register on import; keep this list the single place they are wired.
from harness.cli import fetch as _fetch  # noqa: E402,F401
from harness.cli import knowledge as _knowledge  # noqa: E402,F401
from harness.cli import workflow as _workflow  # noqa: E402,F401


def main() -> None:
    """The `harness` entry point: a HarnessError is one line on stderr and its exit code (2: bad
    input)."""
    try:
        app()
    except HarnessError as exc:
        print(f"harness: error: {exc}", file=sys.stderr)
        if "--json" in sys.argv[1:]:  # a JSON reader in CI gets a document, not empty input
            print(json.dumps({"error": str(exc), "exit": exc.exit_code}))
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        print("harness: interrupted", file=sys.stderr)
        sys.exit(130)
