"""`harness ci init --github`: the upgrade bot as a GitHub Actions workflow in the plugin repo."""

from __future__ import annotations

import json
import re
import shlex
import unicodedata
from pathlib import Path

import typer

from harness.cli.base import app
from harness.cli.console import err, out
from harness.cli.paths import resolved
from harness.engines import ENGINES, SGLANG, EngineProfile
from harness.errors import HarnessError
from harness.util.files import write_atomic

ci = typer.Typer(help="Set up CI for the plugin repo.", no_args_is_help=True)
app.add_typer(ci, name="ci")

WORKFLOWS = Path(".github") / "workflows"
_CRON_FIELD = re.compile(r"^[0-9*,/\-A-Za-z]+$")

_TEMPLATE = """\
# Written by `harness ci init --github`: follows {follows}. On schedule (and by hand), it runs
# `harness upgrade` on this plugin, publishes the summary on the job page, keeps reports/ as an
# artifact, and opens (or updates) one issue per version pair while features wait for review or
# findings could not be decided statically, linking to this run's page and artifact.
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
          harness upgrade --plugin .{from_option} --github-summary
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
        # 1: features wait for review; 3: nothing certain breaks, but findings need a person
        if: steps.upgrade.outputs.exit == '1' || steps.upgrade.outputs.exit == '3'
        shell: bash
        env:
          GH_TOKEN: ${{{{ github.token }}}}
          ARTIFACT_URL: ${{{{ steps.reports.outputs.artifact-url }}}}
          UPGRADE_EXIT: ${{{{ steps.upgrade.outputs.exit }}}}
        run: |
          # issue.md is the summary without relative links (they do not resolve in an issue):
          # the body links to this run's page and its artifact instead. Only the upgrade's
          # folder holds one (a feature run's folder may also match upgrade-*-to-*)
          folder=$(dirname "$(ls reports/upgrade-*-to-*/issue.md | head -n 1)")
          pair=$(basename "$folder" | sed -e 's/^upgrade-//' -e 's/-to-/ -> /')
          what="features wait for review"
          if [ "$UPGRADE_EXIT" = 3 ]; then what="findings not decidable statically"; fi
          # one issue per version pair, whatever this run found: a later run comments on it
          prefix="{display} upgrade $pair:"
          title="$prefix $what"
          run_url="$GITHUB_SERVER_URL/$GITHUB_REPOSITORY/actions/runs/$GITHUB_RUN_ID"
          body="$RUNNER_TEMP/upgrade-issue.md"
          {{
            echo "Workflow run: $run_url"
            echo "Reports and review runs (artifact \\`harness-reports\\`): ${{ARTIFACT_URL:-$run_url}}"
            echo
            cat "$folder/issue.md"
          }} > "$body"
          number=$(gh issue list --state open --limit 100 --json number,title \\
            --jq ".[] | select(.title | startswith(\\"$prefix\\")) | .number" | head -n 1)
          if [ -n "$number" ]; then
            gh issue comment "$number" --body-file "$body"
          else
            gh issue create --title "$title" --body-file "$body"
          fi
"""


_HOW = "pass --install with the pip arguments that install this tool in the job, e.g. 'harness @ git+https://host/org/harness@COMMIT'"
_REACHABLE = re.compile(r"^(https?|ssh|git)://|^[\w.-]+@[\w.-]+:")
# The placeholders the README and docs/install.md (`git+https://github.com/OWNER/harness@COMMIT`),
# docs/commands/ci-init.md (`git+URL@COMMIT`) and _HOW write: a URL path segment OWNER, a git
# ref COMMIT. Copied as they are, pip fails in every scheduled job, not here.
_PLACEHOLDER = re.compile(r"(?<=/)OWNER(?=/)|(?<=@)COMMIT\b")


def default_install(package: Path) -> str:
    """The requirement that installs this harness in a CI job (a PEP 508 direct reference, one
    pip argument): how pip installed the distribution whose files are this code, from its PEP 610
    `direct_url.json` (`harness @ git+URL@COMMIT` for a git install, `harness @ URL` for an
    archive); else, for an editable install or a checkout run from source, the git checkout
    holding `package` (the harness package folder): `harness @ git+ORIGIN@HEAD`. HarnessError when
    the source is not reachable from a CI job (a local path or wheel, a checkout without a network
    origin): a PyPI project named `harness` exists and is not this tool, so there is no safe
    default."""
    recorded = _installed_from(package)
    if recorded is not None:
        return recorded
    import git  # cost: gitpython, only for `ci init`

    try:
        repo = git.Repo(package, search_parent_directories=True)
        url, commit = repo.remotes.origin.url, repo.head.commit.hexsha
    except (git.InvalidGitRepositoryError, git.NoSuchPathError, AttributeError, ValueError):
        raise HarnessError(f"this harness ({package}) is not a git checkout with an origin a CI job can reach; {_HOW}") from None
    if not _REACHABLE.match(url):
        raise HarnessError(f"this harness's origin {url} is not reachable from a CI job; {_HOW}")
    return f"harness @ git+{url if '://' in url else 'ssh://' + url.replace(':', '/', 1)}@{commit}"


def _installed_from(package: Path) -> str | None:
    """The direct reference pip recorded for the installed `harness` distribution (PEP 610), when
    that distribution's files are the code at `package`; None for an editable install, a
    checkout on sys.path, or no installed distribution. HarnessError for an install a CI job
    cannot repeat (from a local path or wheel, or the package index's namesake)."""
    from importlib import metadata

    try:
        dist = metadata.distribution("harness")
        installed = Path(str(dist.locate_file("harness/__init__.py"))).resolve()
    except (metadata.PackageNotFoundError, OSError):
        return None
    if installed != (package / "__init__.py").resolve():
        return None  # this code runs from a checkout (editable, or on sys.path)
    try:
        recorded = json.loads(dist.read_text("direct_url.json") or "null")
    except ValueError:
        recorded = None
    if not isinstance(recorded, dict):
        raise HarnessError(f"this harness was installed without a source URL (pip records none for the package index); {_HOW}")
    if (recorded.get("dir_info") or {}).get("editable"):
        return None
    url, vcs = str(recorded.get("url", "")), recorded.get("vcs_info") or {}
    if not _REACHABLE.match(url):
        commit = str(vcs.get("commit_id", ""))
        how = _HOW.replace("@COMMIT", f"@{commit}") if re.fullmatch(r"[0-9a-f]{40}", commit) else _HOW
        raise HarnessError(f"this harness was installed from {url}, which a CI job cannot reach; {how}")
    if vcs.get("vcs") == "git" and re.fullmatch(r"[0-9a-f]{40}", str(vcs.get("commit_id", ""))):
        return f"harness @ git+{url}@{vcs['commit_id']}"
    if "archive_info" in recorded:
        return f"harness @ {url}"
    raise HarnessError(f"this harness was installed from {url} in a way a CI job cannot repeat; {_HOW}")


def workflow_text(schedule: str, install: str, engine: EngineProfile = SGLANG, from_spec: str = "auto") -> str:
    """The workflow file for a plugin of `engine` (its name in the workflow's name, job names,
    cache key and issue title; its pip name and release feed in the header), for `schedule`
    (five cron fields), installing harness with `install` (pip arguments, split as a shell
    would), running `harness upgrade --from from_spec` (`auto`: what the plugin declares, so
    the option is left out). HarnessError for a schedule that is not five cron fields, an
    `install` that is not one line of pip arguments (`install_command`), or a `from_spec` that
    is not `auto` or a release of `engine` (`dist==X`)."""
    feed = f"# Releases: pip name `{engine.distribution}`, feed {engine.release_feed}\n" if engine.release_feed else ""
    # A JSON string is a YAML double-quoted scalar: no `: `, `#` or quote in it can end the value
    return _TEMPLATE.format(schedule=_cron(schedule), install_run=json.dumps(install_command(install)), follows=f"{engine.display} releases", feed=feed,
                            display=engine.display, cache_key=engine.ci_cache_key, from_option=_from_option(from_spec, engine))


def _from_option(from_spec: str, engine: EngineProfile) -> str:
    """` --from dist==X` for the workflow's upgrade line ("" for auto). HarnessError for anything
    but `auto` or a release of `engine`: a path or git ref would not exist in the job."""
    from harness.knowledge.upstream import RELEASE_SPEC

    if from_spec == "auto":
        return ""
    match = RELEASE_SPEC.match(from_spec.strip())
    if match is None or match["dist"] != engine.distribution:
        raise HarnessError(f"--from {from_spec!r}: give auto or a release of {engine.display}, e.g. {engine.distribution}==0.5.17"
                           if engine is SGLANG else f"--from {from_spec!r}: give auto or a release of {engine.display}, e.g. {engine.distribution}==X")
    return f" --from {match['dist']}=={match['version']}"


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
    return f"python -m pip install {shlex.join(_requirements(args))}"


def _requirements(args: list[str]) -> list[str]:
    """`args` with each PEP 508 direct reference written with spaces (`harness[all] @ git+URL`,
    which a shell splits in three) joined back into the one argument pip reads. HarnessError for
    a direct reference pip would refuse, or one still holding the docs' placeholders (_PLACEHOLDER)."""
    from packaging.requirements import InvalidRequirement, Requirement

    joined: list[str] = []
    for arg in args:
        if len(joined) >= 2 and joined[-1] == "@" and not joined[-2].startswith("-"):
            joined[-2:] = [f"{joined[-2]} @ {arg}"]
        elif joined and arg.startswith("@") and len(arg) > 1 and not joined[-1].startswith("-"):
            joined[-1] = f"{joined[-1]} @ {arg[1:].lstrip()}"
        else:
            joined.append(arg)
    for arg in joined:
        if arg.startswith("-"):
            continue
        placeholders = list(dict.fromkeys(_PLACEHOLDER.findall(arg)))
        if placeholders:
            raise HarnessError(f"--install {arg!r} still holds the README's placeholder{'s' * (len(placeholders) > 1)} {' and '.join(placeholders)}: write this "
                               "harness's repository owner and the commit (or tag) to install in its place")
        try:
            requirement = Requirement(arg)
        except InvalidRequirement as exc:
            if " @ " in arg:
                raise HarnessError(f"--install: {arg!r} is not a requirement pip reads ({str(exc).splitlines()[0]})") from None
            continue  # a URL, a path or a pip option's value: pip's to read
        if requirement.name.lower() == "harness" and requirement.url is None:
            raise HarnessError(f"--install {arg!r} would install PyPI's `harness`, another project: give this tool's source, "
                               "e.g. 'harness @ git+https://host/org/harness@COMMIT'")
        if requirement.url is not None and not _REACHABLE.match(requirement.url.removeprefix("git+")):
            raise HarnessError(f"--install: {requirement.url} is not reachable from a CI job (a local path or file: URL); {_HOW}")
    if joined[-1:] == ["@"]:
        raise HarnessError("--install ends in '@': give the URL after it, e.g. 'harness @ git+https://host/org/harness@v0.1'")
    return joined


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
    install: str | None = typer.Option(None, "--install", help="pip arguments that install harness in the job (default: "
                                       "where pip installed this harness from, as its PEP 610 direct_url.json records it; "
                                       "for a checkout, its git origin at HEAD)."),
    force: bool = typer.Option(False, "--force", help="Overwrite an existing workflow file."),
    from_: str = typer.Option("auto", "--from", help="The upstream release the plugin targets, written into the workflow "
                              "(auto: what the plugin declares, read in each job; give X==Y when it declares none)."),
    # not the shared ENGINE option: ci init takes no --upstream, and its --from release is what can name the engine
    engine: str | None = typer.Option(None, "--engine", metavar="|".join(ENGINES), help="The plugin's upstream engine; "
                                      "default: the one a --from release names, else the one the plugin's entry points "
                                      "name, else the package its modules import most."),
) -> None:
    """Write .github/workflows/<engine>-upgrade.yml (sglang-upgrade.yml, vllm-upgrade.yml: the engine the plugin's
    entry points name) into the plugin repo: on schedule and by hand it runs `harness upgrade --plugin . --github-summary`,
    uploads reports/, and on exit 1 (features wait for review) or 3 (findings not decidable) opens or updates one issue."""
    from harness.engines import use_engine
    from harness.knowledge.model import declared_pins, detect_engine

    if not github:
        raise HarnessError("name the CI to set up: --github (the only one supported)")
    root = resolved(plugin, "plugin repo")
    if not root.is_dir():
        raise HarnessError(f"plugin repo {root} is not a directory")
    chosen = detect_engine(root, None if from_ == "auto" else from_, engine, option="--from")
    target = root / WORKFLOWS / chosen.ci_workflow
    _cron(schedule)
    _from_option(from_, chosen)
    if install is not None:
        install_command(install)  # a bad value is refused before anything is looked up or written
        if re.search(r"\[[^\]]*\b(all|serve)\b", install):
            err.print("note: --install names the `serve` extra (or `all`): each job would compile llama-cpp-python, about "
                      "30 minutes; the bot needs no extra", markup=False, highlight=False)
    if target.exists() and not force:
        raise HarnessError(f"{target} exists; pass --force to overwrite it")
    said = ""
    if from_ == "auto":
        with use_engine(chosen):
            pin = next((p for p in declared_pins(root) if p.form == "release"), None)
        if pin is None:  # every scheduled job would stop at `--from auto` (exit 2)
            raise HarnessError(f"{root} declares no {chosen.distribution} version the job could read (packaging, Dockerfile, "
                               f"install scripts, README): pass --from {chosen.distribution}==X, written into the workflow")
        said = f"; each job reads the {chosen.display} it upgrades from in {pin.source} ({chosen.distribution}=={pin.value} now)"
    import harness

    text = workflow_text(schedule, install or default_install(Path(harness.__file__).resolve().parent), chosen, from_)
    write_atomic(target, text)
    out.print(f"Wrote {target} (schedule \"{' '.join(schedule.split())}\"{said}); commit it to turn the bot on.")
