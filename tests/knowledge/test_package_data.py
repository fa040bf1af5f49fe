"""A table the plugin reads from a JSON file it ships in its own package
(`importlib.resources.files(pkg).joinpath("kernels.json").read_text()` then `json.loads`: the
importlib.resources docs) folds to that file's content: the patches its rows name are judged
(fifteenth held-out set F22-m1). A file that is not there folds to nothing known."""

from __future__ import annotations

import json

import pytest
from kinds_support import check, plugin, pyproject, upstream_pair

GONE = "sglang.srt.layers.torchao_utils.apply_torchao_config_to_model"  # in 0.9.0, not in 0.10.0

READS = {
    "joinpath_of_package": "resources.files(__package__).joinpath('data', 'kernels.json').read_text(encoding='utf-8')",
    "slash_operator": "(resources.files('pd') / 'data' / 'kernels.json').read_text()",
    "module_name_parent": "resources.files(__name__.rpartition('.')[0] or __name__).joinpath('data/kernels.json').read_text()",
}


@pytest.fixture(scope="module")
def upstreams(tmp_path_factory):
    return upstream_pair(tmp_path_factory)


@pytest.mark.parametrize("shipped", [True, False], ids=["shipped", "absent"])
@pytest.mark.parametrize("spelling", sorted(READS))
def test_rows_of_a_json_file_the_package_ships_are_judged(upstreams, tmp_path, spelling, shipped):
    _, new = upstreams
    files = {
        "pyproject.toml": pyproject(plugins={"pd": "pd:register"}),
        "pd/__init__.py": f"""import importlib
import json
from importlib import resources


def _skip(*args, **kwargs):
    return None


def register():
    rows = json.loads({READS[spelling]})["replacements"]
    for row in rows:
        module = importlib.import_module(row["module"])
        setattr(module, row["name"], _skip)
""",
    }
    if shipped:
        files["pd/data/kernels.json"] = json.dumps({"replacements": [
            {"module": "sglang.srt.layers.torchao_utils", "name": "apply_torchao_config_to_model"}]})
    code, doc = check(plugin(tmp_path, files), new)
    patches = [f for f in doc["findings"] if f["kind"] in ("patch", "import") and f["target"].startswith("sglang.srt.layers.torchao_utils")]
    if shipped:
        assert patches and all(f["live"] for f in patches) and any(f["breaking"] for f in patches), doc["findings"]
        assert code == 1
    else:
        assert not patches and code != 1, doc["findings"]


_TOML = '[[replacements]]\nmodule = "sglang.srt.layers.torchao_utils"\nname = "apply_torchao_config_to_model"\n'
# how the rows are read: (the file's name, its parse, the table as the code keeps it)
PARSES = {
    "toml_loads": ("kernels.toml", "tomllib.loads(resources.files(__package__).joinpath('kernels.toml').read_text())", "rows"),
    "toml_load_open_file": ("kernels.toml", None, "rows"),
    "json_load_open_file_read_only_view": ("kernels.json", None, "types.MappingProxyType({'rows': rows})['rows']"),
}


@pytest.mark.parametrize("spelling", sorted(PARSES))
def test_rows_of_a_toml_or_json_file_read_through_an_open_file_are_judged(upstreams, tmp_path, spelling):
    """tomllib.loads of the file's text, tomllib.load / json.load of the file a `with
    ….open("rb") as f:` opens (importlib.resources.abc.Traversable.open), and a read-only
    types.MappingProxyType over the table: the rows are the file's (sixteenth held-out set F05-k2, F22-k2)."""
    _, new = upstreams
    name, parse, kept = PARSES[spelling]
    loader = "tomllib" if name.endswith(".toml") else "json"
    read = f"    rows = {parse}['replacements']\n" if parse else (
        f"    with resources.files(__package__).joinpath({name!r}).open('rb') as fh:\n        rows = {loader}.load(fh)['replacements']\n")
    files = {
        "pyproject.toml": pyproject(plugins={"pd": "pd:register"}),
        "pd/__init__.py": f"""import importlib
import json
import tomllib
import types
from importlib import resources


def _skip(*args, **kwargs):
    return None


def _rows():
{read}    return {kept}


def register():
    for row in _rows():
        module = importlib.import_module(row["module"])
        setattr(module, row["name"], _skip)
""",
        f"pd/{name}": _TOML if name.endswith(".toml") else json.dumps({"replacements": [
            {"module": "sglang.srt.layers.torchao_utils", "name": "apply_torchao_config_to_model"}]}),
    }
    code, doc = check(plugin(tmp_path, files), new)
    patches = [f for f in doc["findings"] if f["kind"] in ("patch", "import") and f["target"].startswith("sglang.srt.layers.torchao_utils")]
    assert patches and all(f["live"] for f in patches) and any(f["breaking"] for f in patches), doc["findings"]
    assert code == 1
