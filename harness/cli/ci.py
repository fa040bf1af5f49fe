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
      - name: SGLang release cache
        uses: actions/cache@v4
        with:
          path: ~/.cache/harness
          key: harness-cache-${{{{ github.run_id }}}}
          restore-keys: harness-cache-
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
          # the runs' journals and evidence too: an engineer approves from this artifact
          path: |
            reports/
            .harness/runs/
          include-hidden-files: true
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


def default_install(source: Path) -> str:
    """pip arguments that install this harness in a CI job: `git+URL@COMMIT` of the git checkout
    at `source` when its `origin` is a network URL. HarnessError when there is none (a PyPI
    project named `harness` exists and is not this tool, so there is no safe default)."""
    import git  # cost: gitpython, only for `ci init`

    how = "pass --install with the pip arguments that install this tool in the job, e.g. 'git+https://host/org/harness@v0.1'"
    try:
        repo = git.Repo(source, search_parent_directories=True)
        url, commit = repo.remotes.origin.url, repo.head.commit.hexsha
    except (git.InvalidGitRepositoryError, git.NoSuchPathError, AttributeError, ValueError):
        raise HarnessError(f"this harness ({source}) is not a git checkout with an origin a CI job can reach; {how}") from None
    if not re.match(r"^(https?|ssh|git)://|^[\w.-]+@[\w.-]+:", url):
        raise HarnessError(f"this harness's origin {url} is not reachable from a CI job; {how}")
    return f"git+{url if '://' in url else 'ssh://' + url.replace(':', '/', 1)}@{commit}"


def workflow_text(schedule: str, install: str) -> str:
    """The workflow file for `schedule` (five cron fields) installing harness with `install`
    (pip arguments). HarnessError for a schedule that is not five cron fields."""
    return _TEMPLATE.format(schedule=_cron(schedule), install=install)


def _cron(schedule: str) -> str:
    fields = schedule.split()
    if len(fields) != 5 or not all(_CRON_FIELD.match(f) for f in fields):
        raise HarnessError(f"--schedule {schedule!r}: give five cron fields, e.g. \"0 6 * * *\"")
    return " ".join(fields)


@ci.command("init")
def init(
    github: bool = typer.Option(False, "--github", help="Write a GitHub Actions workflow (the one CI supported)."),
    schedule: str = typer.Option("0 6 * * *", "--schedule", metavar="CRON", help="When to check for a release (UTC)."),
    plugin: Path = typer.Option(Path("."), "--plugin", help="The plugin repo to write into."),
    install: str | None = typer.Option(None, "--install", help="pip arguments that install harness in the job "
                                       "(default: git+ORIGIN@COMMIT of this harness's checkout)."),
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
    _cron(schedule)
    if target.exists() and not force:
        raise HarnessError(f"{target} exists; pass --force to overwrite it")
    text = workflow_text(schedule, install or default_install(Path(__file__).resolve().parent))
    write_atomic(target, text)
    out.print(f"Wrote {target} (schedule \"{' '.join(schedule.split())}\"); commit it to turn the bot on.")
