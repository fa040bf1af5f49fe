"""One error type for everything a user can get wrong.

The CLI prints a HarnessError as a single line and exits non-zero; anything else is a bug
and keeps its traceback.
"""


class HarnessError(Exception):
    """A user-facing failure: bad input, unreachable source, a server that never started."""

    exit_code = 2


class InputError(HarnessError):
    """An input file the run depends on (runbook, recipes, feature file, baseline, data) is
    unusable. A step that could not run because of one says so, and its gate refuses approval."""


class Signalled(SystemExit):
    """SIGTERM / SIGHUP unwinding the process like Ctrl-C (exit code 128 + signal). Code that
    runs a library's own command-line entry in this process and catches its SystemExit (bench_serving's
    cli_main) must let this one through, or a cancelled job would carry on."""
