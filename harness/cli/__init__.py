"""The `harness` command line. Each command group lives in its own module and registers
itself on `app`; `main` turns a HarnessError into one line on stderr and a non-zero exit."""

from __future__ import annotations

import json
import os
import signal
import sys

import typer

from harness.errors import HarnessError, Signalled
from harness.util.files import is_write_error, write_error_line

app = typer.Typer(
    name="harness",
    help="Port upstream SGLang features into an out-of-tree plugin, with evidence.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)

@app.callback()
def _options(
    state_url: str | None = typer.Option(
        None, "--state-url", metavar="URL",
        help="Shared run state: postgresql://… (default: $HARNESS_STATE_URL, else the workspace's SQLite file).",
    ),
) -> None:
    """Options for every command (given before the command name)."""
    if state_url:
        os.environ["HARNESS_STATE_URL"] = state_url  # read where the state is opened, as from the environment


# Command modules register on import; keep this list the single place they are wired.
from harness.cli import ci as _ci  # noqa: E402,F401
from harness.cli import fetch as _fetch  # noqa: E402,F401
from harness.cli import golden as _golden  # noqa: E402,F401
from harness.cli import knowledge as _knowledge  # noqa: E402,F401
from harness.cli import upgrade as _upgrade  # noqa: E402,F401
from harness.cli import workflow as _workflow  # noqa: E402,F401


def _exit_on_signal(signum: int, _frame: object) -> None:
    raise Signalled(128 + signum)


def main() -> None:
    """The `harness` entry point: a HarnessError, or a write the machine refused (read-only or
    full disk, no permission), is one line on stderr and exit 2. SIGTERM and SIGHUP unwind like
    Ctrl-C, so every engine and load generator a step started is stopped on the way out."""
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, _exit_on_signal)
    try:
        app()
    except HarnessError as exc:
        print(f"harness: error: {exc}", file=sys.stderr)
        if "--json" in sys.argv[1:]:  # a JSON reader in CI gets a document, not empty input
            print(json.dumps({"error": str(exc), "exit": exc.exit_code}))
        sys.exit(exc.exit_code)
    except OSError as exc:
        if not is_write_error(exc):
            raise
        print(f"harness: error: {write_error_line(exc)}", file=sys.stderr)
        sys.exit(2)
    except KeyboardInterrupt:
        print("harness: interrupted", file=sys.stderr)
        sys.exit(130)
