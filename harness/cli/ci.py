"""`harness ci init --github`: the upgrade bot as a GitHub Actions workflow in the plugin repo."""

from __future__ import annotations

import json
import re
import shlex
import unicodedata
from pathlib import Path

import typer

from harness.cli.base import app
from harness.cli.common import ENGINE
from harness.cli.console import out
from harness.cli.paths import resolved
from harness.engines import SGLANG, EngineProfile
from harness.errors import HarnessError
from harness.util.files import write_atomic

ci = typer.Typer(help="Set up CI for the plugin repo.", no_args_is_help=True)
app.add_typer(ci, name="ci")

WORKFLOWS = Path(".github") / "workflows"
_CRON_FIELD = re.compile(r"^[0-9*,/\-A-Za-z]+$")

_TEMPLATE = """\
# Written by `harness ci init --github`: follows {follows}. On schedule (and by hand), it runs
# `harness upgrade` on this plugin, publishes the summary on the job page, keeps reports/ as an
# artifact, and opens (or updates) one issue per version pair while features wait for review,
# linking to this run's page and artifact.
{feed}name: {display} upgrade

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
      # Actions are pinned to the commits their release tags named (tag in the comment): a moved
      # tag cannot change what runs here. The checkout keeps no token: no step pushes with git,
      # and the one step that needs the API gets GH_TOKEN explicitly.
      - uses: actions/checkout@11bd71901bbe5b1630ceea73d27597364c9af683 # v4.2.2
        with:
          persist-credentials: false
      - uses: actions/setup-python@0b93645e9fea7318ecaed2b359559ac225c90a2b # v5.3.0
        with:
          python-version: "3.11"
      - name: Install harness
        run: {install_run}
      - name: {display} release cache
        uses: actions/cache@1bd1e32a3bdc45362d1e726936510720a7c30a8d # v4.2.0
        with:
          # the release cache only: data that is checked on load (never code, never a model)
          path: |
            ~/.cache/harness
            !~/.cache/harness/models
          key: {cache_key}${{{{ github.run_id }}}}
          restore-keys: {cache_key}
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
        id: reports
        if: always()
        uses: actions/upload-artifact@b4b15b8c7c6ac21ea08fcf65892d2ee8c75cf6ee # v4.4.3
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
          ARTIFACT_URL: ${{{{ steps.reports.outputs.artifact-url }}}}
        run: |
          # issue.md is the summary without relative links (they do not resolve in an issue):
          # the body links to this run's page and its artifact instead. Only the upgrade's
          # folder holds one (a feature run's folder may also match upgrade-*-to-*)
          folder=$(dirname "$(ls reports/upgrade-*-to-*/issue.md | head -n 1)")
          pair=$(basename "$folder" | sed -e 's/^upgrade-//' -e 's/-to-/ -> /')
          title="{display} upgrade $pair: features wait for review"
          run_url="$GITHUB_SERVER_URL/$GITHUB_REPOSITORY/actions/runs/$GITHUB_RUN_ID"
          body="$RUNNER_TEMP/upgrade-issue.md"
          {{
            echo "Workflow run: $run_url"
            echo "Reports and review runs (artifact \\`harness-reports\\`): ${{ARTIFACT_URL:-$run_url}}"
            echo
            cat "$folder/issue.md"
          }} > "$body"
          number=$(gh issue list --state open --limit 100 --json number,title \\
            --jq ".[] | select(.title == \\"$title\\") | .number" | head -n 1)
          if [ -n "$number" ]; then
            gh issue comment "$number" --body-file "$body"
          else
            gh issue create --title "$title" --body-file "$body"
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


def workflow_text(schedule: str, install: str, engine: EngineProfile = SGLANG) -> str:
    """The workflow file for a plugin of `engine` (its name in the workflow's name, job names,
    cache key and issue title; its pip name and release feed in the header), for `schedule`
    (five cron fields), installing harness with `install` (pip arguments, split as a shell
    would). HarnessError for a schedule that is not five cron fields, or an `install` that is
    not one line of pip arguments (`install_command`)."""
    feed = f"# Releases: pip name `{engine.distribution}`, feed {engine.release_feed}\n" if engine.release_feed else ""
    # A JSON string is a YAML double-quoted scalar: no `: `, `#` or quote in it can end the value
    return _TEMPLATE.format(schedule=_cron(schedule), install_run=json.dumps(install_command(install)), follows=f"{engine.display} releases", feed=feed,
                            display=engine.display, cache_key=engine.ci_cache_key)


def install_command(install: str) -> str:
    """The job's shell line `python -m pip install ARGS`, each of `install`'s arguments quoted
    (shlex) so pip receives them as written and the shell runs nothing else. HarnessError for
    a value that is empty, not one line (a newline or other control character would add a YAML
    step or hide text), holds a GitHub expression `${{` (expanded before the shell runs), or
    does not split (an unbalanced quote)."""
    bad = next((c for c in install if unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp")), None)
    if bad is not None:
        raise HarnessError(f"--install holds the control character {bad!r}: give pip arguments on one line")
    if "${{" in install:
        raise HarnessError("--install holds '${{', which GitHub would expand as an expression: give plain pip arguments")
    try:
        args = shlex.split(install)
    except ValueError as exc:
        raise HarnessError(f"--install {install!r}: {exc}") from None
    if not args:
        raise HarnessError("--install is empty: give the pip arguments that install harness in the job")
    return f"python -m pip install {shlex.join(args)}"


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
    engine: str | None = ENGINE,
) -> None:
    """Write .github/workflows/<engine>-upgrade.yml (sglang-upgrade.yml, vllm-upgrade.yml: the engine the plugin's
    entry points name) into the plugin repo: on schedule and by hand it runs `harness upgrade --plugin . --github-summary`,
    uploads reports/, and on exit 1 opens or updates one issue."""
    from harness.knowledge.model import detect_engine

    if not github:
        raise HarnessError("name the CI to set up: --github (the only one supported)")
    root = resolved(plugin, "plugin repo")
    if not root.is_dir():
        raise HarnessError(f"plugin repo {root} is not a directory")
    chosen = detect_engine(root, None, engine)
    target = root / WORKFLOWS / chosen.ci_workflow
    _cron(schedule)
    if install is not None:
        install_command(install)  # a bad value is refused before anything is looked up or written
    if target.exists() and not force:
        raise HarnessError(f"{target} exists; pass --force to overwrite it")
    text = workflow_text(schedule, install or default_install(Path(__file__).resolve().parent), chosen)
    write_atomic(target, text)
    out.print(f"Wrote {target} (schedule \"{' '.join(schedule.split())}\"); commit it to turn the bot on.")
