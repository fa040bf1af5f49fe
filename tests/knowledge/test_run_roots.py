"""Modules the plugin team runs directly are live (issue 34, item 6): a console script, and
`python -m pkg.mod` in the plugin's CI, build files or docs, each with its reason, the same
semantics written several ways; a module no command runs stays dead."""

from __future__ import annotations

import pytest
from kinds_support import check, plugin, pyproject, upstream_pair
from knowledge_support import by_target

GONE = "sglang.srt.layers.torchao_utils.apply_torchao_config_to_model"  # in 0.9.0, not in 0.10.0
TOOL = """
    from sglang.srt.layers.torchao_utils import apply_torchao_config_to_model


    def main():
        return apply_torchao_config_to_model
    """
HOOKS = "from sglang.srt.layers.sampler import Sampler\n\n\ndef register():\n    return Sampler\n"


@pytest.fixture(scope="module")
def upstreams(tmp_path_factory):
    return upstream_pair(tmp_path_factory)


SPELLINGS = {
    "project_scripts": ({"pyproject.toml": pyproject(plugins={"p": "p.hooks:register"}) + '[project.scripts]\np-bench = "p.tools.bench:main"\n'},
                        "console script p-bench ([project.scripts] in pyproject.toml)"),
    "setup_cfg_console_scripts": ({"pyproject.toml": pyproject(plugins={"p": "p.hooks:register"}),
                                   "setup.cfg": "[options.entry_points]\nconsole_scripts =\n    p-bench = p.tools.bench:main\n"},
                                  "console script p-bench (console_scripts in setup.cfg)"),
    "ci_workflow": ({"pyproject.toml": pyproject(plugins={"p": "p.hooks:register"}),
                     ".github/workflows/ci.yml": "jobs:\n  bench:\n    steps:\n      - run: pip install .\n      - run: python3 -m p.tools.bench --steps 3\n"},
                    "run with `python -m p.tools.bench` (.github/workflows/ci.yml:5)"),
    "readme_torchrun": ({"pyproject.toml": pyproject(plugins={"p": "p.hooks:register"}),
                         "README.md": "# p\n\nBenchmark two cards:\n\n    torchrun --nproc-per-node 2 -m p.tools.bench\n"},
                        "run with `python -m p.tools.bench` (README.md:5)"),
    # a command folded over lines (YAML `>-`, a shell `\` line end), CI files ending .yaml, docs below the top
    "buildkite_yaml_folded": ({"pyproject.toml": pyproject(plugins={"p": "p.hooks:register"}),
                               ".buildkite/pipeline.yaml": "steps:\n  - label: bench\n    command: >-\n      python3\n      -m p.tools.bench\n"},
                              "run with `python -m p.tools.bench` (.buildkite/pipeline.yaml:5)"),
    "examples_readme_continued": ({"pyproject.toml": pyproject(plugins={"p": "p.hooks:register"}),
                                   "examples/README.md": "# bench\n\n    CUDA_VISIBLE_DEVICES=0 python \\\n        -m p.tools.bench --steps 3\n"},
                                  "run with `python -m p.tools.bench` (examples/README.md:4)"),
    # a local composite action the workflow uses (vLLM variant s12)
    "github_composite_action": ({"pyproject.toml": pyproject(plugins={"p": "p.hooks:register"}),
                                 ".github/workflows/ci.yml": "jobs:\n  smoke:\n    steps:\n      - uses: ./.github/actions/smoke\n",
                                 ".github/actions/smoke/action.yml": "runs:\n  using: composite\n  steps:\n    - run: python -m p.tools.bench\n      shell: bash\n"},
                                "run with `python -m p.tools.bench` (.github/actions/smoke/action.yml:4)"),
    "circleci": ({"pyproject.toml": pyproject(plugins={"p": "p.hooks:register"}),
                  ".circleci/config.yml": "jobs:\n  bench:\n    steps:\n      - run:\n          command: |\n            python -m p.tools.bench\n"},
                 "run with `python -m p.tools.bench` (.circleci/config.yml:6)"),
    # the interpreter named by a make or shell variable (V variant q11)
    "makefile_variable": ({"pyproject.toml": pyproject(plugins={"p": "p.hooks:register"}),
                           "Makefile": "PYTHON ?= python3\n\n.PHONY: bench\nbench:\n\tP_PLUGINS=p $(PYTHON) -m p.tools.bench --steps 4\n"},
                          "run with `python -m p.tools.bench` (Makefile:5)"),
    "shell_variable_braced": ({"pyproject.toml": pyproject(plugins={"p": "p.hooks:register"}),
                               "scripts/bench.sh": "#!/bin/sh\nPY=${PY:-python3}\n\"${PY}\" -m p.tools.bench\n"},
                              "run with `python -m p.tools.bench` (scripts/bench.sh:3)"),
    "shell_variable_bare": ({"pyproject.toml": pyproject(plugins={"p": "p.hooks:register"}),
                             "docs/bench.md": "# Bench\n\n    $PYTHON_BIN -m p.tools.bench\n"},
                            "run with `python -m p.tools.bench` (docs/bench.md:3)"),
    # the module a GitHub Actions matrix names (V variant r12): the job runs once per value
    "matrix_list": ({"pyproject.toml": pyproject(plugins={"p": "p.hooks:register"}),
                     ".github/workflows/probes.yml": "jobs:\n  probe:\n    strategy:\n      matrix:\n        probe: [p.tools.other, p.tools.bench]\n"
                                                     "    steps:\n      - run: python -m ${{ matrix.probe }} --steps 8\n"},
                    "run with `python -m p.tools.bench` (matrix.probe, .github/workflows/probes.yml:5)"),
    "matrix_include": ({"pyproject.toml": pyproject(plugins={"p": "p.hooks:register"}),
                        ".github/workflows/probes.yml": "jobs:\n  probe:\n    strategy:\n      matrix:\n        include:\n          - tool: p.tools.bench\n"
                                                        "            steps: 3\n    steps:\n      - run: python3 -u -m ${{matrix.tool}}\n"},
                       "run with `python -m p.tools.bench` (matrix.tool, .github/workflows/probes.yml:6)"),
    "matrix_folded_block": ({"pyproject.toml": pyproject(plugins={"p": "p.hooks:register"}),
                             ".github/workflows/probes.yaml": "jobs:\n  probe:\n    strategy:\n      matrix:\n        probe:\n          - p.tools.bench\n"
                                                              "    steps:\n      - run: >-\n          python\n          -m ${{ matrix.probe }}\n"},
                            "run with `python -m p.tools.bench` (matrix.probe, .github/workflows/probes.yaml:6)"),
    # uv's `run -m` (V variant o12), an exec-form list (a Dockerfile's ENTRYPOINT, V variant o11; a compose command)
    "uv_run_module": ({"pyproject.toml": pyproject(plugins={"p": "p.hooks:register"}),
                       "README.md": "# p\n\n```bash\nuv run --extra bench -m p.tools.bench --steps 3\n```\n"},
                      "run with `python -m p.tools.bench` (README.md:4)"),
    "dockerfile_exec_form": ({"pyproject.toml": pyproject(plugins={"p": "p.hooks:register"}),
                              "Dockerfile": 'FROM python:3.11-slim\nCOPY . .\nRUN pip install .\nENTRYPOINT ["python3", "-m", "p.tools.bench"]\n'},
                             "run with `python -m p.tools.bench` (Dockerfile:4)"),
    # any other CI's layout (the twentieth held-out set, V-f6): a Jenkins steps file under a hidden folder,
    # a Jenkinsfile at the top, a top-level pipeline YAML
    "jenkins_steps_yaml": ({"pyproject.toml": pyproject(plugins={"p": "p.hooks:register"}),
                            ".jenkins/test_config.yaml": "stages:\n  - name: smoke\n    steps:\n    - name: bench\n      command: P=1 python -m p.tools.bench --n 2\n"},
                           "run with `python -m p.tools.bench` (.jenkins/test_config.yaml:5)"),
    "jenkinsfile": ({"pyproject.toml": pyproject(plugins={"p": "p.hooks:register"}),
                     "Jenkinsfile": "pipeline {\n  stages {\n    stage('bench') {\n      steps { sh 'python3 -m p.tools.bench' }\n    }\n  }\n}\n"},
                    "run with `python -m p.tools.bench` (Jenkinsfile:4)"),
    "azure_pipelines": ({"pyproject.toml": pyproject(plugins={"p": "p.hooks:register"}),
                         "azure-pipelines.yml": "steps:\n- script: python -m p.tools.bench\n  displayName: bench\n"},
                        "run with `python -m p.tools.bench` (azure-pipelines.yml:2)"),
    "compose_command_list": ({"pyproject.toml": pyproject(plugins={"p": "p.hooks:register"}),
                              "docker-compose.yml": 'services:\n  bench:\n    build: .\n    command: ["python", "-u", "-m", "p.tools.bench"]\n'},
                             "run with `python -m p.tools.bench` (docker-compose.yml:4)"),
    # a noxfile's session runs it (twenty-fifth set V-e6): the leading string arguments of
    # session.run, in either quote style, a loop variable after them; subprocess with a tuple
    "noxfile_session_run": ({"pyproject.toml": pyproject(plugins={"p": "p.hooks:register"}),
                             "noxfile.py": ("import nox\n\n\n@nox.session\ndef smoke(session):\n    for n in (1, 2):\n"
                                            "        session.run('python', '-m', 'p.tools.bench', '--n', str(n))\n")},
                            "run with `python -m p.tools.bench` (noxfile.py:7)"),
    "noxfile_double_quotes_over_lines": ({"pyproject.toml": pyproject(plugins={"p": "p.hooks:register"}),
                                          "noxfile.py": ('import nox\n\n\n@nox.session\ndef smoke(session):\n    session.run(\n'
                                                         '        "python",\n        "-m",\n        "p.tools.bench",\n    )\n')},
                                         "run with `python -m p.tools.bench` (noxfile.py:9)"),
    # a test CI runs starts it (twenty-sixth set V-f6): subprocess with sys.executable, another
    # quote style and depth
    "test_subprocess_sys_executable": ({"pyproject.toml": pyproject(plugins={"p": "p.hooks:register"}),
                                        "tests/e2e/test_tools.py": ("import subprocess\nimport sys\n\n\ndef test_bench():\n"
                                                                    "    subprocess.run(\n        [sys.executable, \"-m\", \"p.tools.bench\", \"--n\", \"2\"],\n        check=True,\n    )\n")},
                                       "run with `python -m p.tools.bench` (tests/e2e/test_tools.py:7)"),
    "test_check_call_single_quotes": ({"pyproject.toml": pyproject(plugins={"p": "p.hooks:register"}),
                                       "tests/test_cli.py": "import subprocess\n\n\ndef test_cli():\n    subprocess.check_call(['python3', '-m', 'p.tools.bench'])\n"},
                                      "run with `python -m p.tools.bench` (tests/test_cli.py:5)"),
    "noxfile_subprocess_tuple": ({"pyproject.toml": pyproject(plugins={"p": "p.hooks:register"}),
                                  "noxfile.py": ("import subprocess\n\n\ndef smoke(session):\n"
                                                 "    subprocess.run((\"python3\", \"-m\", \"p.tools.bench\"), check=True)\n")},
                                 "run with `python -m p.tools.bench` (noxfile.py:5)"),
    # a test runs it with runpy (thirty-second set V-m6): run_module by position, by keyword,
    # imported from runpy by name
    "runpy_run_module": ({"pyproject.toml": pyproject(plugins={"p": "p.hooks:register"}),
                          "tests/test_tools.py": "import runpy\n\n\ndef test_bench():\n    runpy.run_module('p.tools.bench', run_name='__main__')\n"},
                         "run with `runpy.run_module('p.tools.bench')`, as `python -m` runs it (tests/test_tools.py:5)"),
    "runpy_mod_name_keyword": ({"pyproject.toml": pyproject(plugins={"p": "p.hooks:register"}),
                                "tests/test_tools.py": ('import runpy\n\n\ndef test_bench():\n    runpy.run_module(\n'
                                                        '        mod_name="p.tools.bench", run_name="__main__", alter_sys=True)\n')},
                               "run with `runpy.run_module('p.tools.bench')`, as `python -m` runs it (tests/test_tools.py:5)"),
    "run_module_imported_by_name": ({"pyproject.toml": pyproject(plugins={"p": "p.hooks:register"}),
                                     "tests/test_tools.py": "from runpy import run_module\n\n\ndef test_bench():\n    run_module('p.tools.bench')\n"},
                                    "run with `runpy.run_module('p.tools.bench')`, as `python -m` runs it (tests/test_tools.py:5)"),
    # a task runner's script runs it (thirty-first set V-k6): hatch env scripts, pdm scripts in
    # pyproject.toml, a justfile recipe; the workflow names only the script
    "hatch_env_script": ({"pyproject.toml": pyproject(plugins={"p": "p.hooks:register"})
                          + '[tool.hatch.envs.smoke.scripts]\nbench = "python -m p.tools.bench --n 2"\n'},
                         "run with `python -m p.tools.bench` (pyproject.toml:7)"),
    "pdm_script_table": ({"pyproject.toml": pyproject(plugins={"p": "p.hooks:register"})
                          + '[tool.pdm.scripts]\nbench = {cmd = "python -m p.tools.bench"}\n'},
                         "run with `python -m p.tools.bench` (pyproject.toml:7)"),
    "justfile_recipe": ({"pyproject.toml": pyproject(plugins={"p": "p.hooks:register"}),
                         "justfile": "# smoke tools\nbench n='2':\n    python -m p.tools.bench --n {{n}}\n"},
                        "run with `python -m p.tools.bench` (justfile:3)"),
}


@pytest.mark.parametrize("spelling", sorted(SPELLINGS))
def test_a_module_the_team_runs_is_live(upstreams, tmp_path, spelling):
    _, new = upstreams
    files, why = SPELLINGS[spelling]
    root = plugin(tmp_path, {**files, "p/__init__.py": "", "p/hooks.py": HOOKS,
                             "p/tools/__init__.py": "", "p/tools/bench.py": TOOL})
    code, doc = check(root, new)
    finding = by_target(doc["findings"])[GONE]
    assert (finding["live"], finding["breaking"]) == (True, True), finding
    assert "the plugin's own command that runs it" in finding["detail"]
    assert {"module": "p.tools.bench", "why": why} in doc["roots"]
    assert code == 1


# `python -m <package>` runs the package's __main__ module (runpy); a console script naming the
# package (`p.tools:main`) imports only its __init__
PACKAGE_RUNS = {
    "readme_package": ({"README.md": "# p\n\n    python -m p.tools --report\n"}, True),
    "ci_package_with_options": ({".github/workflows/ci.yml": "jobs:\n  t:\n    steps:\n      - run: python -u -m p.tools --steps 3\n"}, True),
    "makefile_package": ({"Makefile": "bench:\n\tpython3 -m p.tools\n"}, True),
    "console_script_naming_the_package": ({"setup.cfg": "[options.entry_points]\nconsole_scripts =\n    p-bench = p.tools:main\n"}, False),
}


@pytest.mark.parametrize("spelling", sorted(PACKAGE_RUNS))
def test_a_package_run_with_python_m_runs_its_main_module(upstreams, tmp_path, spelling):
    _, new = upstreams
    files, runs_main = PACKAGE_RUNS[spelling]
    root = plugin(tmp_path, {"pyproject.toml": pyproject(plugins={"p": "p.hooks:register"}), **files,
                             "p/__init__.py": "", "p/hooks.py": HOOKS, "p/tools/__init__.py": "def main():\n    pass\n",
                             "p/tools/__main__.py": TOOL})
    code, doc = check(root, new)
    finding = by_target(doc["findings"])[GONE]
    assert (finding["live"], finding["breaking"]) == (runs_main, runs_main), finding
    assert ("p.tools.__main__" in [r["module"] for r in doc["roots"]]) is runs_main
    assert code == (1 if runs_main else 0)


def test_a_module_no_command_runs_stays_dead(upstreams, tmp_path):
    _, new = upstreams
    root = plugin(tmp_path, {
        "pyproject.toml": pyproject(plugins={"p": "p.hooks:register"}),
        # pytest is not a plugin module; p.tools.bench is named, not run
        ".github/workflows/ci.yml": "jobs:\n  t:\n    steps:\n      - run: python -m pytest tests\n      - run: echo p.tools.bench\n",
        # (a test importing it runs it under pytest, not as the plugin runs)
        "tests/test_bench.py": "from p.tools import bench\n\n\ndef test_bench():\n    assert bench\n",
        "p/__init__.py": "", "p/hooks.py": HOOKS, "p/tools/__init__.py": "", "p/tools/bench.py": TOOL,
    })
    code, doc = check(root, new)
    finding = by_target(doc["findings"])[GONE]
    assert (finding["live"], finding["breaking"]) == (False, False)
    assert [r["module"] for r in doc["roots"]] == ["p.hooks"]
    assert code == 0


# a commented-out command runs nothing (twenty-third set V-c6): tox.ini (`#` and `;`), a workflow,
# a Makefile, a shell script, a fenced block of the README; the same line uncommented runs
COMMENTED = {
    "tox_ini_hash": ("tox.ini", "[testenv:smoke]\ncommands =\n    pytest -q\n{mark}    python -m p.tools.bench\n", "#"),
    "tox_ini_semicolon": ("tox.ini", "[testenv:smoke]\ncommands =\n    pytest -q\n{mark}    python -m p.tools.bench\n", ";"),
    "workflow": (".github/workflows/ci.yml", "jobs:\n  t:\n    steps:\n      - run: pytest\n{mark}      - run: python -m p.tools.bench\n", "#"),
    "makefile": ("Makefile", "bench:\n{mark}\tpython3 -m p.tools.bench\n", "#"),
    "shell_script": ("scripts/smoke.sh", "#!/bin/sh\nset -e\n{mark}python -m p.tools.bench\n", "#"),
    "readme_fence": ("README.md", "# p\n\n```bash\n{mark}python -m p.tools.bench\n```\n", "# "),
}


@pytest.mark.parametrize("commented", [True, False])
@pytest.mark.parametrize("spelling", sorted(COMMENTED))
def test_a_commented_out_command_runs_nothing(upstreams, tmp_path, spelling, commented):
    _, new = upstreams
    name, text, mark = COMMENTED[spelling]
    root = plugin(tmp_path, {"pyproject.toml": pyproject(plugins={"p": "p.hooks:register"}), name: text.format(mark=mark if commented else ""),
                             "p/__init__.py": "", "p/hooks.py": HOOKS, "p/tools/__init__.py": "", "p/tools/bench.py": TOOL})
    code, doc = check(root, new)
    finding = by_target(doc["findings"])[GONE]
    assert (finding["live"], finding["breaking"]) == (not commented, not commented), finding
    assert code == (0 if commented else 1)


def test_a_command_inside_the_git_folder_is_not_a_run(upstreams, tmp_path):
    """Hidden folders are read for CI files, but not git's own (hooks a clone does not run)."""
    _, new = upstreams
    root = plugin(tmp_path, {"pyproject.toml": pyproject(plugins={"p": "p.hooks:register"}), ".git/hooks/pre-push.sh": "python -m p.tools.bench\n",
                             "p/__init__.py": "", "p/hooks.py": HOOKS, "p/tools/__init__.py": "", "p/tools/bench.py": TOOL})
    code, doc = check(root, new)
    assert by_target(doc["findings"])[GONE]["live"] is False and code == 0


def test_a_run_file_that_is_a_symlink_is_not_read(upstreams, tmp_path):
    _, new = upstreams
    outside = tmp_path / "outside.md"
    outside.write_text("python -m p.tools.bench\n")
    root = plugin(tmp_path, {"pyproject.toml": pyproject(plugins={"p": "p.hooks:register"}), "p/__init__.py": "",
                             "p/hooks.py": HOOKS, "p/tools/__init__.py": "", "p/tools/bench.py": TOOL})
    (root / "README.md").symlink_to(outside)
    code, doc = check(root, new)
    assert by_target(doc["findings"])[GONE]["live"] is False and code == 0


# a module's `if __name__ == "__main__":` block runs only when the module itself is run as a
# script (F03 variant s2): what it alone imports is not live where the module is only imported,
# however the test is written; run with `python -m` (the team's CI), it is
MAIN_BLOCKS = {
    "name_equals_main": "if __name__ == '__main__':\n    import p.tools.bench  # noqa: F401\n",
    "main_equals_name": 'if "__main__" == __name__:\n    from p.tools import bench  # noqa: F401\n',
    "import_module_in_main": "if __name__ == '__main__':\n    import importlib\n\n    importlib.import_module('p.tools.bench')\n",
}


@pytest.mark.parametrize("run_as_main", [False, True])
@pytest.mark.parametrize("spelling", sorted(MAIN_BLOCKS))
def test_what_a_main_block_imports_is_live_only_when_the_module_runs_as_a_script(upstreams, tmp_path, spelling, run_as_main):
    _, new = upstreams
    files = {
        "pyproject.toml": pyproject(plugins={"p": "p.hooks:register"}),
        "p/__init__.py": "",
        "p/hooks.py": HOOKS + "\n\n" + MAIN_BLOCKS[spelling],
        "p/tools/__init__.py": "",
        "p/tools/bench.py": TOOL,
    }
    if run_as_main:
        files[".github/workflows/ci.yml"] = "jobs:\n  smoke:\n    steps:\n      - run: python -m p.hooks\n"
    code, doc = check(plugin(tmp_path, files), new)
    found = by_target(doc["findings"]).get(GONE)
    assert (found is not None and found["live"] and found["breaking"]) is run_as_main, doc["findings"]
    assert code == (1 if run_as_main else 0)


# a private helper with a function-local import, called only from the module's own main block:
# imported by the engine, nothing calls it; run as a script, the block calls it
MAIN_CALLS = {
    "called": "if __name__ == '__main__':\n    _compare()\n",
    "exit_code_of_a_call": "if __name__ == '__main__':\n    import sys\n\n    sys.exit(_compare())\n",
    "bound_then_called": "if '__main__' == __name__:\n    run = _compare\n    run()\n",
}


@pytest.mark.parametrize("run_as_main", [False, True])
@pytest.mark.parametrize("spelling", sorted(MAIN_CALLS))
def test_a_helper_only_the_main_block_calls_runs_only_when_the_module_runs_as_a_script(upstreams, tmp_path, spelling, run_as_main):
    _, new = upstreams
    helper = ("\n\ndef _compare():\n    from sglang.srt.layers.torchao_utils import apply_torchao_config_to_model\n\n"
              "    return apply_torchao_config_to_model\n\n\n")
    files = {
        "pyproject.toml": pyproject(plugins={"p": "p.hooks:register"}),
        "p/__init__.py": "",
        "p/hooks.py": HOOKS + helper + MAIN_CALLS[spelling],
    }
    if run_as_main:
        files[".github/workflows/ci.yml"] = "jobs:\n  smoke:\n    steps:\n      - run: python -m p.hooks\n"
    code, doc = check(plugin(tmp_path, files), new)
    found = by_target(doc["findings"]).get(GONE)
    assert found is not None and found["status"] == "missing", doc["findings"]
    assert found["breaking"] is run_as_main, found
    assert code == (1 if run_as_main else 0)
