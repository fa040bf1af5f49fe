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
    assert [(p.value, p.source) for p in declared_pins(tmp_path)] == [("0.5.19", "pyproject.toml"), ("0.5.17", "Dockerfile:1")]


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
