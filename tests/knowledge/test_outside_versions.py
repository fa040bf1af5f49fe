"""Outside bases are listed from the package installed here, which need not be the version the
release requires (sglang 0.5.23 pins transformers==5.19.0; 5.24.0 may be installed beside
harness). The verdict stays what the installed version says (a name it lacks is most likely
absent from its neighbours too), but a `missing` that rests on another version says so, naming
both, so a reader can tell such a finding from a certain one."""

from __future__ import annotations

from importlib.metadata import version

import pytest
from kinds_support import check, plugin, pyproject
from knowledge_support import write_tree

from harness.knowledge.upstream.source import UpstreamSource, release_requirements

UPSTREAM = {
    "sglang/__init__.py": "",
    "sglang/srt/__init__.py": "",
    "sglang/srt/configs/__init__.py": "",
    "sglang/srt/configs/release_version.py": """
        from packaging.version import Version


        class ReleaseVersion(Version):
            pass
        """,
}
PLUGIN = {
    "pyproject.toml": pyproject(plugins={"pv": "pv:register"}),
    "pv/__init__.py": """
        from sglang.srt.configs.release_version import ReleaseVersion


        def tag():
            return ReleaseVersion.no_such_member


        def register():
            return tag
        """,
}


def upstream(tmp_path, requirement: str, metadata: bool) -> str:
    root = tmp_path / ("wheel" if metadata else "tree")
    files = dict(UPSTREAM)
    if metadata:  # as harness unpacks a release wheel
        files["sglang-9.9.dist-info/METADATA"] = f"Metadata-Version: 2.4\nName: sglang\nVersion: 9.9\nRequires-Dist: {requirement}\nRequires-Dist: pytest; extra == 'test'\n"
    else:  # a source tree with its pyproject beside sglang/
        files["pyproject.toml"] = f'[project]\nname = "sglang"\nversion = "9.9"\ndependencies = ["{requirement}"]\n'
    write_tree(root, files)
    return str(root)


@pytest.mark.parametrize("metadata", [True, False], ids=["wheel-metadata", "pyproject"])
def test_a_missing_member_of_an_outside_base_of_another_version_says_so(tmp_path, metadata):
    code, doc = check(plugin(tmp_path, PLUGIN), upstream(tmp_path, "packaging==0.1", metadata), "--baseline", "none")
    finding = next(f for f in doc["findings"] if f["target"].endswith("no_such_member"))
    assert finding["status"] == "missing" and finding["breaking"], finding
    assert f"requires packaging==0.1, packaging {version('packaging')} answered" in finding["detail"], finding
    assert code == 1


def test_the_required_version_answering_is_plainly_missing(tmp_path):
    code, doc = check(plugin(tmp_path, PLUGIN), upstream(tmp_path, f"packaging=={version('packaging')}", True), "--baseline", "none")
    finding = next(f for f in doc["findings"] if f["target"].endswith("no_such_member"))
    assert finding["status"] == "missing" and "requires" not in finding["detail"], finding
    assert code == 1


def test_requirements_read_from_the_wheel_metadata_leave_extras_out(tmp_path):
    root = upstream(tmp_path, "Transformers==5.19.0", True)
    source = UpstreamSource(spec=root, kind="path", label=root, root=tmp_path / "wheel", fingerprint="x")
    assert release_requirements(source) == {"transformers": "==5.19.0"}
