"""The `harness` command line. Each command group lives in its own module and registers
itself on `base.app`; `main` turns a HarnessError into one line on stderr and a non-zero exit."""

from __future__ import annotations

import gc
import importlib
import inspect
import json
import logging
import os
import signal
import sys

import typer

from harness.cli import base
from harness.errors import HarnessError, Signalled
from harness.util.files import is_write_error, write_error_line

# The modules that register commands on `app`, and which command each registers: `main` imports
# only the module of the command invoked (a cached `check` is mostly start-up, and the workflow
# and upgrade commands import the run records, LangGraph and rich's markdown), every module for
# help or an unknown name. tests/architecture checks this table against the registrations.
COMMANDS: dict[str, str] = {
    "ci": "ci", "fetch": "fetch", "golden": "golden",
    "map": "knowledge", "diff": "knowledge", "check": "knowledge", "index": "knowledge", "port": "knowledge",
    "upgrade": "upgrade", "profile": "profile",
    "run": "workflow", "features": "workflow", "status": "workflow", "approve": "workflow", "reject": "workflow",
    "resume": "workflow", "repair": "workflow", "runbook": "runbook",
}


# The commands that read a plugin and an upstream and print (or write) what they found, all
# before they return: the interpreter's teardown after them only frees the module tables and
# parsed trees one by one (1-3 s after a cold `check`), so they leave with os._exit instead.
FAST_EXIT = frozenset(name for name, module in COMMANDS.items() if module == "knowledge")


def command_name(argv: list[str]) -> str | None:
    """The command `argv` (the arguments after `harness`) invokes, if it names one."""
    args = list(argv)
    while args:
        arg = args.pop(0)
        if arg == "--state-url":  # the one option before the command that takes a value
            args = args[1:]
        elif not arg.startswith("-"):
            return arg
    return None


def load_commands(argv: list[str] | None = None) -> typer.Typer:
    """Register the commands `argv` (the arguments after `harness`) invokes, or all of them
    when `argv` is None or names none; returns the app."""
    name = command_name(argv or [])
    modules = [COMMANDS[name]] if argv is not None and name in COMMANDS else sorted(set(COMMANDS.values()))
    for module in modules:
        importlib.import_module(f"harness.cli.{module}")
    for command in base.app.registered_commands:
        # the command list shows the docstring's first paragraph with its line breaks kept (rich
        # help): one line per command, wrapped by the terminal, reads as a sentence
        doc = inspect.cleandoc(command.help or (command.callback.__doc__ if command.callback else None) or "")
        if command.short_help is None and doc:
            command.short_help = " ".join(doc.split("\n\n")[0].split())
    return base.app


# The exit status of a Ctrl-C (128 + SIGINT); no command exits with it otherwise
INTERRUPTED = 130

# generation-0 allocations before a collection, and young collections per older one
GC_THRESHOLDS = (50_000, 20, 20)


def __getattr__(name: str):
    if name == "app":  # `from harness.cli import app` (tests, CliRunner): every command
        return load_commands()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class _Never(Exception):
    """Stands for an exception class the click in use does not have."""


def _click_exceptions() -> tuple[type[BaseException], type[BaseException], type[BaseException]]:
    """(NoArgsIsHelpError, UsageError, Abort) of the click that typer runs on: typer 0.2x vendors
    its own copy (typer._click), whose classes are not click's; one it lacks is _Never."""
    try:
        from typer._click import exceptions
    except ImportError:
        from click import exceptions
    return tuple(getattr(exceptions, name, _Never) for name in ("NoArgsIsHelpError", "UsageError", "Abort"))


def _run(argv: list[str]) -> int:
    """Run the command `argv` names; its exit status. Click's usage errors (a missing or unknown
    option, a bad value) are raised, for main to print as one line."""
    result = load_commands(argv)(args=argv, prog_name="harness", standalone_mode=False)
    return result if isinstance(result, int) else 0


def _fast_exit(code: int | str | None) -> None:
    """Leave as SystemExit(code) would, without the interpreter's teardown: flush what was
    written, stop the parse pools' workers, then os._exit."""
    if isinstance(code, str):  # SystemExit("message"): the message on stderr, exit 1
        print(code, file=sys.stderr)
    from harness.knowledge.upstream import stop_parse_pools

    stop_parse_pools()
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code if isinstance(code, int) else 0 if code is None else 1)


def _exit_on_signal(signum: int, _frame: object) -> None:
    raise Signalled(128 + signum)


def main() -> None:
    """The `harness` entry point: a HarnessError, or a write the machine refused (read-only or
    full disk, no permission), is one line on stderr and exit 2. SIGTERM and SIGHUP unwind like
    Ctrl-C, so every engine and load generator a step started is stopped on the way out."""
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, _exit_on_signal)
    # The knowledge engine holds hundreds of thousands of long-lived objects (module tables,
    # parsed modules); under CPython's default thresholds (700, 10, 10) the cyclic collector
    # walked them ~1,500 times in a cold `check`, 40 % of its time. They are freed by
    # reference counting (trees and tables hold no cycles), so collect far less often.
    gc.set_threshold(*GC_THRESHOLDS)
    argv = sys.argv[1:]
    no_args, usage_error, abort = _click_exceptions()
    try:
        code = _run(argv)
        if code == INTERRUPTED:  # typer ends a command Ctrl-C'd outside a handler of its own silently, with 130
            print("harness: interrupted", file=sys.stderr)
        if command_name(argv) in FAST_EXIT:
            _fast_exit(code)
        sys.exit(code)
    except SystemExit as exc:  # a command's own sys.exit
        if command_name(argv) in FAST_EXIT:
            _fast_exit(exc.code)
        raise
    except no_args as exc:  # `harness ci`: the group's help, as click prints it
        print(exc.ctx.get_help() if exc.ctx else exc.format_message(), file=sys.stderr)
        sys.exit(2)
    except usage_error as exc:  # a missing or unknown option: one line, not click's boxed block
        where = exc.ctx.command_path if exc.ctx else "harness"
        print(f"harness: error: {exc.format_message()} (see `{where} --help`)", file=sys.stderr)
        if "--json" in argv:
            print(json.dumps({"error": exc.format_message(), "exit": 2}))
        sys.exit(2)
    except abort:  # Ctrl-C while click itself was prompting or parsing
        print("harness: interrupted", file=sys.stderr)
        sys.exit(INTERRUPTED)
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
        sys.exit(INTERRUPTED)
