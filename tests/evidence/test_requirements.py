"""unmet_requirements: what a runbook's `server.requires` lacks here, read from installed
distributions' metadata — a distribution missing or of another version, and through an extra
the requirements that extra adds (markers evaluated), as pip arguments."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.util.requirements import unmet_requirements


def _dist(site: Path, name: str, version: str, *requires: str) -> None:
    info = site / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True)
    lines = [f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"] + [f"Requires-Dist: {r}\n" for r in requires]
    (info / "METADATA").write_text("".join(lines))


@pytest.fixture
def site(tmp_path, monkeypatch) -> Path:
    monkeypatch.syspath_prepend(str(tmp_path))
    _dist(tmp_path, "engine-zz", "1.4.0", "base-dep-zz", 'gpu-kernels-zz>=2; extra == "gpu"',
          'tok-zz; extra == "gpu"', 'old-python-zz; extra == "gpu" and python_version < "3"', 'engine-zz[cli]; extra == "gpu"',
          'cli-zz>=1; extra == "cli"')
    _dist(tmp_path, "tok-zz", "0.1")
    _dist(tmp_path, "gpu-kernels-zz", "1.0")
    return tmp_path


def test_an_extra_is_checked_through_what_it_adds_and_the_base_is_not(site):
    # base-dep-zz is a base requirement (installed with the distribution, or not: not this check's
    # business); gpu-kernels-zz is there but too old; cli-zz comes in through engine-zz[cli]
    assert unmet_requirements(["engine-zz[gpu]"]) == ["gpu-kernels-zz>=2", "cli-zz>=1"]
    assert unmet_requirements(["engine-zz"]) == []
    assert unmet_requirements(["engine-zz>=1.4,<2", "tok-zz==0.1"]) == []


def test_a_missing_distribution_or_a_version_outside_the_specifier_is_named_as_pip_takes_it(site):
    assert unmet_requirements(["engine-zz>=2", "absent-zz[x]>=3", "tok-zz", "absent-zz[x]>=3"]) == ["engine-zz>=2", "absent-zz[x]>=3"]
    assert unmet_requirements(['absent-zz; python_version < "3"']) == []  # not for this interpreter


def test_text_that_is_not_a_requirement_is_a_value_error(site):
    with pytest.raises(ValueError, match="is not a PEP 508 requirement"):
        unmet_requirements(["engine-zz[gpu"])
