"""`--from auto` reads the upstream a plugin names outside its packaging (issue 35, item 2): a
container file's `ARG`/`ENV` variable, its `FROM` image tag or a pip line in it, an install script,
a README's install line — each said with its file:line. Packaging metadata stays first; a pin
file that is a symlink, a FIFO or a device is not read (a checkout is not trusted)."""

from __future__ import annotations

import os

import pytest
from knowledge_support import write_tree

from harness.engines import ENGINES, use_engine
from harness.errors import HarnessError
from harness.knowledge.model.plugin import declared_pins
from harness.workflow.upgrade import from_spec_of

CODE = {"acme/__init__.py": "", "acme/platform.py": "from sglang.srt.platforms.interface import SRTPlatform\n"}
SPELLINGS = {
    "dockerfile_arg": ({"Dockerfile": "FROM python:3.11-slim\nARG SGLANG_VERSION=0.5.17\nRUN pip install sglang==${SGLANG_VERSION}\n"}, "Dockerfile:2"),
    "containerfile_env": ({"docker/Containerfile": "FROM ubuntu:24.04\nENV SGLANG_REF=\"v0.5.17\"\n"}, "docker/Containerfile:2"),
    "from_image": ({"Dockerfile.xpu": "FROM lmsysorg/sglang:v0.5.17-cu126 AS base\n"}, "Dockerfile.xpu:1"),
    "run_pip": ({"Dockerfile": "FROM python:3.11\nRUN pip install --no-cache-dir 'sglang[all]==0.5.17' torch\n"}, "Dockerfile:2"),
    "install_script": ({"scripts/setup_env.sh": "#!/bin/bash\nset -e\nuv pip install \"sglang[srt]>=0.5.17\"\n"}, "scripts/setup_env.sh:3"),
    "readme": ({"README.md": "# acme\n\nTested with SGLang:\n\n```bash\npip install sglang==0.5.17\npip install -e .\n```\n"}, "README.md:6"),
}


@pytest.mark.parametrize("spelling", sorted(SPELLINGS))
def test_auto_reads_the_pin_outside_packaging_with_its_line(tmp_path, spelling):
    files, where = SPELLINGS[spelling]
    write_tree(tmp_path, {**CODE, **files})
    said = []
    assert from_spec_of(tmp_path, "auto", "sglang==0.5.23", said.append)[0] == "sglang==0.5.17"
    assert said == [f"--from auto: sglang==0.5.17 (declared in {where})"]


def test_packaging_metadata_outranks_a_container_file(tmp_path):
    write_tree(tmp_path, {**CODE, "pyproject.toml": '[project]\nname = "acme"\ndependencies = ["sglang==0.5.19"]\n',
                          "Dockerfile": "ARG SGLANG_VERSION=0.5.17\n"})
    assert [(p.value, p.source) for p in declared_pins(tmp_path)] == [("0.5.19", "pyproject.toml:3"), ("0.5.17", "Dockerfile:1")]


# A release's own suffix (post, rc, dev: PEP 440) is part of the pin; a build variant after `-` is not
SUFFIXED = {
    "from_post": ("FROM lmsysorg/sglang:v0.5.14.post1-cu126\n", "0.5.14.post1"),
    "arg_post": ("FROM python:3.11\nARG SGLANG_VERSION=0.5.14.post1\n", "0.5.14.post1"),
    "env_tag_rc": ("FROM python:3.11\nENV SGLANG_TAG=v0.5.18rc1-cu126-srt\n", "0.5.18rc1"),
    "run_pip_dev": ("FROM python:3.11\nRUN pip install sglang==0.5.18.dev0\n", "0.5.18.dev0"),
}


@pytest.mark.parametrize("spelling", sorted(SUFFIXED))
def test_a_post_rc_or_dev_release_is_read_whole(tmp_path, spelling):
    dockerfile, version = SUFFIXED[spelling]
    write_tree(tmp_path, {**CODE, "Dockerfile": dockerfile})
    assert from_spec_of(tmp_path, "auto", "sglang==0.5.23")[0] == f"sglang=={version}"


# A variable pins the engine when a word naming it (SGLANG, SGL; VLLM) is directly followed by a
# version word (VERSION, VER, TAG, REF, RELEASE), in any case
@pytest.mark.parametrize("name", ["SGL_VERSION", "sglang_ver", "BASE_SGLANG_TAG"])
def test_a_variable_named_for_the_engine_and_a_version_pins_it(tmp_path, name):
    write_tree(tmp_path, {**CODE, "Dockerfile": f"FROM python:3.11\nARG {name}=0.5.14\n"})
    assert [(p.value, p.source) for p in declared_pins(tmp_path)] == [("0.5.14", "Dockerfile:2")]


def test_a_variable_of_another_project_or_setting_is_not_a_pin(tmp_path):
    write_tree(tmp_path, {**CODE, "Dockerfile": ("FROM python:3.11\nARG SGL_KERNEL_VERSION=0.3.16\nENV SGLANG_SERVER_PORT=30000\n"
                                                 "ARG SGLANG_REPO_VERSION_URL=https://x/sglang.git\n")})
    assert declared_pins(tmp_path) == []
    write_tree(tmp_path, {"Dockerfile": "ARG VLLM_ASCEND_VERSION=0.23.0rc1\nARG VLLM_TAG=v0.23.0\n"})  # the plugin's own version
    with use_engine(ENGINES["vllm"]):
        assert [(p.value, p.source) for p in declared_pins(tmp_path)] == [("0.23.0", "Dockerfile:2")]


# The image that ships is the last stage: its pins come first, then the global ARGs it may read,
# then the earlier stages (builders it may copy from), latest first
STAGES = {
    "from_images": (["FROM lmsysorg/sglang:v0.5.14-cu126 AS build", "RUN make", "FROM lmsysorg/sglang:v0.5.17-cu126"], "0.5.17", "Dockerfile:3"),
    "stage_args": (["FROM python:3.11 AS build", "ARG SGLANG_VERSION=0.5.14", "FROM python:3.11", "ARG SGLANG_VERSION=0.5.17",
                    "RUN pip install sglang==${SGLANG_VERSION}"], "0.5.17", "Dockerfile:4"),
    "global_arg_read_by_the_final_stage": (["ARG SGLANG_VERSION=0.5.17", "FROM python:3.11 AS build", "RUN pip wheel sglang==0.5.14",
                                            "FROM python:3.11", "ARG SGLANG_VERSION", "RUN pip install sglang==${SGLANG_VERSION}"],
                                           "0.5.17", "Dockerfile:1"),
    "builders_latest_first": (["FROM python:3.11 AS wheels", "RUN pip wheel sglang==0.5.14 -w /w", "FROM lmsysorg/sglang:v0.5.16 AS old",
                               "FROM python:3.11-slim", "COPY --from=wheels /w /w"], "0.5.16", "Dockerfile:3"),
}


@pytest.mark.parametrize("layout", sorted(STAGES))
def test_the_final_stage_of_a_multi_stage_dockerfile_wins(tmp_path, layout):
    lines, version, where = STAGES[layout]
    write_tree(tmp_path, {**CODE, "Dockerfile": "\n".join(lines) + "\n"})
    said = []
    assert from_spec_of(tmp_path, "auto", "sglang==0.5.23", said.append)[0] == f"sglang=={version}"
    assert said == [f"--from auto: sglang=={version} (declared in {where})"]


# A requirement's source names its line wherever its text is found in the file
REQUIREMENTS = {
    "pyproject": ({"pyproject.toml": '[project]\nname = "acme"\n# "sglang>=0.5.19" before the port\ndependencies = [\n'
                                     '    "torch",\n    "sglang>=0.5.19",\n]\n'}, "pyproject.toml:6"),
    "setup_cfg": ({"setup.cfg": "[metadata]\nname = acme\n\n[options]\ninstall_requires =\n    torch\n    sglang==0.5.19\n"}, "setup.cfg:7"),
    "requirements": ({"requirements.txt": "# pins\ntorch==2.13.0\nsglang==0.5.19  # tested\n"}, "requirements.txt:3"),
    # a TOML string written with escapes is not found as written: the file alone, never a wrong line
    "pyproject_escaped": ({"pyproject.toml": '[project]\nname = "acme"\ndependencies = ["sglang==0.5.19; python_version >= \\"3.10\\""]\n'},
                          "pyproject.toml"),
}


@pytest.mark.parametrize("form", sorted(REQUIREMENTS))
def test_a_requirement_is_declared_at_its_line(tmp_path, form):
    files, where = REQUIREMENTS[form]
    write_tree(tmp_path, {**CODE, **files})
    said = []
    assert from_spec_of(tmp_path, "auto", "sglang==0.5.23", said.append)[0] == "sglang==0.5.19"
    assert said == [f"--from auto: sglang==0.5.19 (declared in {where})"]


def test_a_vllm_plugin_tag_in_a_dockerfile(tmp_path):
    write_tree(tmp_path, {"acme/__init__.py": "", "Dockerfile": "ARG PY=3.11\nARG VLLM_TAG=v0.23.0\nARG VLLM_REPO=https://x/vllm.git\n"})
    with use_engine(ENGINES["vllm"]):
        assert from_spec_of(tmp_path, "auto", "vllm==0.24.0")[0] == "vllm==0.23.0"


def test_pin_files_that_are_not_regular_files_inside_the_checkout_are_not_read(tmp_path):
    outside = tmp_path / "outside.txt"
    outside.write_text("pip install sglang==0.5.11\n")
    root = tmp_path / "plugin"
    write_tree(root, CODE)
    (root / "README.md").symlink_to(outside)
    os.mkfifo(root / "Dockerfile")  # a read would block for ever
    (root / "install.sh").symlink_to("/dev/zero")
    (root / "acme" / "version.py").symlink_to(outside)
    assert declared_pins(root) == []
    with pytest.raises(HarnessError, match=r"no declared sglang version .*Dockerfile/Containerfile, install scripts, README\): .*; pass --from sglang==X"):
        from_spec_of(root, "auto", "sglang==0.5.23")


# A Poetry project declares its dependencies under [tool.poetry.dependencies] (twenty-ninth set
# V-i1): a bare version is exact, a caret or tilde one bounds the base from below, a table gives
# `version`; each said with its line, as a [project] pin is
POETRY = {
    "bare_version_is_exact": ('sglang = "0.5.17"', "0.5.17"),
    "caret": ('sglang = "^0.5.17"', "0.5.17"),
    "table_with_tilde": ('sglang = { version = "~0.5.17", extras = ["srt"] }', "0.5.17"),
}


@pytest.mark.parametrize("spelling", sorted(POETRY))
def test_a_poetry_dependency_declares_the_base(tmp_path, spelling):
    line, version = POETRY[spelling]
    write_tree(tmp_path, {**CODE, "pyproject.toml": f'[tool.poetry]\nname = "acme"\n\n[tool.poetry.dependencies]\npython = ">=3.10"\n{line}\n'})
    assert [(p.value, p.source) for p in declared_pins(tmp_path)][:1] == [(version, "pyproject.toml:6")]
    # a path or git dependency declares no version
    write_tree(tmp_path, {"pyproject.toml": '[tool.poetry.dependencies]\nsglang = { git = "https://example.invalid/sglang.git" }\n'})
    assert not [p for p in declared_pins(tmp_path) if p.source.startswith("pyproject.toml")]


# a requirement naming a series (thirty-first set V-k1: `vllm==0.23.*`): the base is the series'
# first release, its missing parts zero (PEP 440 prefix matching; `~=0.23`, `>=0.23` bound it
# from below); a full version is read whole
SERIES = {
    "wildcard": ("vllm==0.23.*", "0.23.0"),
    "compatible_release": ("vllm~=0.23", "0.23.0"),
    "lower_bound_two_parts": ("vllm>=0.23,<0.25", "0.23.0"),
    "full_version": ("vllm==0.23.1", "0.23.1"),
}


@pytest.mark.parametrize("spelling", sorted(SERIES))
def test_a_series_pin_declares_its_first_release(tmp_path, spelling):
    requirement, version = SERIES[spelling]
    write_tree(tmp_path, {"acme/__init__.py": "", "pyproject.toml": f'[project]\nname = "acme"\ndependencies = ["{requirement}"]\n'})
    with use_engine(ENGINES["vllm"]):
        assert [p.value for p in declared_pins(tmp_path)][:1] == [version]
