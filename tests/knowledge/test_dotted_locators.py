"""A dotted-path locator that imports the longest importable prefix of a path and reads the rest
as attributes (hydra's `_locate`; F22 variant k1): each `try: import_module(prefix)` runs its body
where the prefix is a module of the plugin or the release, its `except ImportError` handler
(`continue`, `break`) where it names no module, so the owner it returns is folded and the patch
made through it judged. Before, the try made the locator unknown and its patches unseen."""

from __future__ import annotations

import pytest
from kinds_support import check, plugin, pyproject, upstream_pair

TARGET = "sglang.srt.layers.torchao_utils.apply_torchao_config_to_model"  # in 0.9.0, not in 0.10.0
LOCATORS = {
    # longest prefix first, `continue` past each that does not import
    "longest_first_continue": '''
def _owner(dotted):
    parts = dotted.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        prefix = ".".join(parts[:cut])
        try:
            owner = importlib.import_module(prefix)
        except ImportError:
            continue
        for attr in parts[cut:-1]:
            owner = getattr(owner, attr)
        return owner, parts[-1]
    raise ImportError(dotted)


def apply(target, impl):
    owner, name = _owner(target)
    setattr(owner, name, impl)
''',
    # hydra.utils._locate: `break` at the first prefix that imports, the object by getattr after the loop
    "hydra_break": '''
def _locate(path):
    parts = [part for part in path.split(".") if part]
    for n in reversed(range(1, len(parts) + 1)):
        mod = ".".join(parts[:n])
        try:
            obj = importlib.import_module(mod)
        except Exception as exc_import:
            if n == 1:
                raise ImportError(path) from exc_import
            continue
        break
    for m in range(n, len(parts)):
        obj = getattr(obj, parts[m])
    return obj


def apply(target, impl):
    parent, _, leaf = target.rpartition(".")
    setattr(_locate(parent), leaf, impl)
''',
    # shortest prefix first, walking down until an import fails
    "shortest_first_walk": '''
def _owner_of(target):
    parts = target.split(".")
    owner = importlib.import_module(parts[0])
    depth = 1
    for depth in range(1, len(parts)):
        try:
            owner = importlib.import_module(".".join(parts[: depth + 1]))
        except ModuleNotFoundError:
            break
    for attr in parts[depth:-1]:
        owner = getattr(owner, attr)
    return owner


def apply(target, impl):
    setattr(_owner_of(target), target.rsplit(".", 1)[1], impl)
''',
}


@pytest.fixture(scope="module")
def upstreams(tmp_path_factory):
    return upstream_pair(tmp_path_factory)


@pytest.mark.parametrize("spelling", sorted(LOCATORS))
def test_a_patch_through_a_dotted_path_locator_is_judged(upstreams, tmp_path, spelling):
    source = f'import importlib\n{LOCATORS[spelling]}\n\ndef fast(model, torchao_config, filter_fn=None):\n    return model\n\n\ndef register():\n    apply("{TARGET}", fast)\n'
    root = plugin(tmp_path, {"pyproject.toml": pyproject(plugins={"p": "p:register"}), "p/__init__.py": source})
    found = {}
    for upstream in upstreams:
        code, doc = check(root, upstream)
        found[upstream] = code, sorted((f["kind"], f["status"], f["breaking"]) for f in doc["findings"] if f["target"] == TARGET)
    old, new = upstreams
    # the prefixes the locator tries are no findings of their own (a probe of an object's name is no lost module)
    assert found[old] == (0, [("patch", "ok", False)]), found
    assert found[new][0] == 1 and [k for k, _, breaking in found[new][1] if breaking] == ["patch"], found
