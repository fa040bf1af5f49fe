"""Outside bases are listed from the package installed here, which need not be the version the
release requires (sglang 0.5.23 pins transformers==5.19.0; 5.24.0 may be installed beside
harness): a member that version lacks is `unknown` with both versions named, never `missing`,
unless the installed version satisfies the release's requirement, or the installed package's
source never names it (no version of it defines it then)."""

from __future__ import annotations

from importlib.metadata import version

import pytest
from kinds_support import check, plugin, pyproject
from knowledge_support import write_tree

from harness.knowledge.upstream import UpstreamSource, release_requirements

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
            return ReleaseVersion.canonicalize_name  # a name packaging's source uses, not Version's


        def never():
            return ReleaseVersion.no_such_member_anywhere_xyz


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
def test_a_member_the_installed_version_lacks_is_unknown_when_the_release_wants_another(tmp_path, metadata):
    root = plugin(tmp_path, PLUGIN)
    code, doc = check(root, upstream(tmp_path, "packaging==0.1", metadata), "--baseline", "none")
    found = {f["target"].rsplit(".", 1)[-1]: f for f in doc["findings"]}
    drift = found["canonicalize_name"]
    assert drift["status"] == "unknown" and not drift["breaking"], drift
    assert "requires packaging==0.1" in drift["detail"] and f"packaging {version('packaging')} answered" in drift["detail"], drift
    # no version of packaging defines what its source never names: still certain
    assert found["no_such_member_anywhere_xyz"]["status"] == "missing" and found["no_such_member_anywhere_xyz"]["breaking"]
    assert code == 1


def test_the_same_member_is_missing_when_the_installed_version_is_the_required_one(tmp_path):
    root = plugin(tmp_path, PLUGIN)
    code, doc = check(root, upstream(tmp_path, f"packaging=={version('packaging')}", True), "--baseline", "none")
    finding = next(f for f in doc["findings"] if f["target"].endswith("canonicalize_name"))
    assert finding["status"] == "missing" and finding["breaking"], finding
    assert code == 1


def test_requirements_read_from_the_wheel_metadata_leave_extras_out(tmp_path):
    root = upstream(tmp_path, "Transformers==5.19.0", True)
    source = UpstreamSource(spec=root, kind="path", label=root, root=tmp_path / "wheel", fingerprint="x")
    assert release_requirements(source) == {"transformers": "==5.19.0"}
