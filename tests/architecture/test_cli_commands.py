"""`harness <command>` imports only the module that registers the command (start-up is most of a
cached `check`), so the command table in harness/cli/__init__.py must name every registration."""

from __future__ import annotations

import subprocess
import sys


def test_the_command_table_names_every_registered_command_and_group():
    from harness.cli import COMMANDS, app

    registered = {c.name or c.callback.__name__: c.callback.__module__ for c in app.registered_commands}
    registered.update({g.name: g.typer_instance.registered_commands[0].callback.__module__ for g in app.registered_groups})
    assert {name: f"harness.cli.{module}" for name, module in COMMANDS.items()} == registered


def test_a_command_loads_only_its_own_module():
    code = ("import sys; from harness.cli import load_commands; load_commands(['--state-url', 'x', 'check', '--plugin', 'p']); "
            "print(sorted(m for m in sys.modules if m.startswith('harness.cli.') and m not in ('harness.cli.base',)))")
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "harness.cli.knowledge" in loaded
    assert "harness.cli.workflow" not in loaded and "harness.cli.upgrade" not in loaded and "harness.cli.ci" not in loaded
