"""`harness ci init --github`: the upgrade bot as a GitHub Actions workflow in the plugin repo."""

from __future__ import annotations

import re
from pathlib import Path

import typer

from harness.cli import app
from harness.cli.console import out
from harness.errors import HarnessError
from harness.util.files import write_atomic

ci = typer.Typer(help="Set up CI for the plugin repo.", no_args_is_help=True)
app.add_typer(ci, name="ci")

WORKFLOW = Path(".github") / "workflows" / "sglang-upgrade.yml"
_CRON_FIELD = re.compile(r"^[0-9*,/\-A-Za-z]+$")

_TEMPLATE = """\
# Written by `harness ci init --github`: follows SGLang releases. On schedule (and by hand), it runs
# `harness upgrade` on this plugin, publishes the summary on the job page, keeps reports/ as an
# artifact, and opens (or updates) one issue per version pair while features wait for review.
name: SGLang upgrade

on:
  schedule:
    - cron: "{schedule}"
  workflow_dispatch:

permissions:
  contents: read
  issues: write

jobs:
  upgrade:
    runs-on: ubuntu-latest
    timeout-minutes: 60
    steps:
      - uses: actions/checkout@v4
      - uses: actions/setup-python@v5
        with:
          python-version: "3.11"
      - name: Install harness
        run: python -m pip install {install}
      - name: harness upgrade
        id: upgrade
        shell: bash
        run: |
          set +e
          harness upgrade --plugin . --github-summary
          code=$?
          echo "exit=$code" >> "$GITHUB_OUTPUT"
          # 0: up to date or nothing impacted; 1: features wait for review; 3: some targets unchecked
          if [ "$code" -ne 0 ] && [ "$code" -ne 1 ] && [ "$code" -ne 3 ]; then exit "$code"; fi
      - name: Keep the reports
        if: always()
        uses: actions/upload-artifact@v4
        with:
          name: harness-reports
          path: reports/
          if-no-files-found: ignore
      - name: Open or update the upgrade issue
        if: steps.upgrade.outputs.exit == '1'
        shell: bash
        env:
          GH_TOKEN: ${{{{ github.token }}}}
        run: |
          summary=$(ls -d reports/upgrade-*-to-*/summary.md | head -n 1)
          pair=$(basename "$(dirname "$summary")" | sed -e 's/^upgrade-//' -e 's/-to-/ -> /')
          title="SGLang upgrade $pair: features wait for review"
          number=$(gh issue list --state open --limit 100 --json number,title \\
            --jq ".[] | select(.title == \\"$title\\") | .number" | head -n 1)
          if [ -n "$number" ]; then
            gh issue comment "$number" --body-file "$summary"
          else
            gh issue create --title "$title" --body-file "$summary"
          fi
"""


def workflow_text(schedule: str, install: str) -> str:
    """The workflow file for `schedule` (five cron fields) installing harness with `install`
    (pip arguments). HarnessError for a schedule that is not five cron fields."""
    fields = schedule.split()
    if len(fields) != 5 or not all(_CRON_FIELD.match(f) for f in fields):
        raise HarnessError(f"--schedule {schedule!r}: give five cron fields, e.g. \"0 6 * * *\"")
    return _TEMPLATE.format(schedule=" ".join(fields), install=install)


@ci.command("init")
def init(
    github: bool = typer.Option(False, "--github", help="Write a GitHub Actions workflow (the one CI supported)."),
    schedule: str = typer.Option("0 6 * * *", "--schedule", metavar="CRON", help="When to check for a release (UTC)."),
    plugin: Path = typer.Option(Path("."), "--plugin", help="The plugin repo to write into."),
    install: str = typer.Option("harness", "--install", help="pip arguments that install harness in the job."),
    force: bool = typer.Option(False, "--force", help="Overwrite an existing workflow file."),
) -> None:
    """Write .github/workflows/sglang-upgrade.yml into the plugin repo: on schedule and by hand it runs
    `harness upgrade --plugin . --github-summary`, uploads reports/, and on exit 1 opens or updates one issue."""
    if not github:
        raise HarnessError("name the CI to set up: --github (the only one supported)")
    root = plugin.expanduser().resolve()
    if not root.is_dir():
        raise HarnessError(f"plugin repo {root} is not a directory")
    target = root / WORKFLOW
    text = workflow_text(schedule, install)
    if target.exists() and not force:
        raise HarnessError(f"{target} exists; pass --force to overwrite it")
    write_atomic(target, text)
    out.print(f"Wrote {target} (schedule \"{' '.join(schedule.split())}\"); commit it to turn the bot on.")
