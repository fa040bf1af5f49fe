"""A method the plugin calls on an upstream object whose class it knows (issue 34, item 1: one
definition of "breaking"; the Kunlun tree's `pool.set_kv_buffer(…, dcp_kv_mask=)`) is judged
against the method's signature, not only for being there: a call the method cannot take raises
TypeError on every run that makes it. Held on three ways the class is known (a parameter's
annotation, a field the class keeps from an annotated constructor argument, an annotated local)
and three ways the call passes what the new release dropped (a keyword, a position, a keyword on
the runs under the plugin's own test). An object annotated with a base whose subclass takes the
call may be that subclass (unknown); a plugin patch of the method is what the call binds."""

from __future__ import annotations

import pytest
from kinds_support import check, plugin, pyproject, upstream_pair

POOL = "sglang.srt.mem_cache.pool"
OLD_POOL = """
    class KVCache:
        def write(self, loc, k, v, scale=None):
            raise NotImplementedError


    class MHAPool(KVCache):
        def write(self, loc, k, v, scale=None):
            return loc
    """
# the new release drops `scale` (the pool keeps it itself)
NEW_POOL = """
    class KVCache:
        def write(self, loc, k, v):
            raise NotImplementedError


    class MHAPool(KVCache):
        def write(self, loc, k, v):
            return loc
    """
# a subclass that still takes it: an object annotated KVCache may be one
NEW_POOL_WITH_SCALED = NEW_POOL + """

    class ScaledPool(KVCache):
        def write(self, loc, k, v, scale=None):
            return loc


    class ForwardingPool(MHAPool):
        def write(self, loc, k, v, *args, **kwargs):
            return super().write(loc, k, v, *args, **kwargs)
    """


@pytest.fixture(scope="module")
def upstreams(tmp_path_factory):
    tree = {"sglang/srt/mem_cache/__init__.py": ""}
    return upstream_pair(tmp_path_factory, old={**tree, "sglang/srt/mem_cache/pool.py": OLD_POOL},
                         new={**tree, "sglang/srt/mem_cache/pool.py": NEW_POOL})


@pytest.fixture(scope="module")
def scaled(tmp_path_factory):
    tree = {"sglang/srt/mem_cache/__init__.py": ""}
    return upstream_pair(tmp_path_factory, old={**tree, "sglang/srt/mem_cache/pool.py": OLD_POOL},
                         new={**tree, "sglang/srt/mem_cache/pool.py": NEW_POOL_WITH_SCALED})[1]


# how the plugin knows the receiver's class ({call} is the call on it)
RECEIVERS = {
    "parameter_annotation": "def write(pool: MHAPool, loc, k, v, s):\n    {call}\n",
    "field_from_annotated_init": ("class Writer:\n    def __init__(self, pool: MHAPool):\n        self.pool = pool\n\n"
                                  "    def write(self, loc, k, v, s):\n        {call}\n"),
    "annotated_local": "def write(pools, loc, k, v, s):\n    pool: MHAPool = pools[0]\n    {call}\n",
}
# how the call passes the scale the new release dropped
CALLS = {
    "keyword": "{receiver}.write(loc, k, v, scale=s)",
    "position": "{receiver}.write(loc, k, v, s)",
    "keyword_on_some_runs": '{receiver}.write(loc, k, v, **({{"scale": s}} if s is not None else {{}}))',
}


def _source(receiver: str, call: str, annotation: str = "MHAPool") -> str:
    held = "self.pool" if receiver == "field_from_annotated_init" else "pool"
    body = RECEIVERS[receiver].replace("MHAPool", annotation).format(call=CALLS[call].format(receiver=held))
    return f"from sglang.srt.mem_cache.pool import {annotation}\n\n\n{body}\n\ndef register():\n    pass\n"


def _calls(doc: dict) -> list[dict]:
    return [f for f in doc["findings"] if f["kind"] == "call" and f["target"].endswith(".write")]


@pytest.mark.parametrize("call", sorted(CALLS))
@pytest.mark.parametrize("receiver", sorted(RECEIVERS))
def test_a_method_call_on_a_typed_object_is_judged_against_the_methods_signature(upstreams, tmp_path, receiver, call):
    old, new = upstreams
    root = plugin(tmp_path, {"pyproject.toml": pyproject(plugins={"p": "p:register"}), "p/__init__.py": _source(receiver, call)})
    code, doc = check(root, old)
    assert code == 0 and not _calls(doc), doc["findings"]  # the old release's write takes the scale
    code, doc = check(root, new)
    found = _calls(doc)
    assert len(found) == 1 and found[0]["status"] == "signature_changed" and found[0]["breaking"] is True, doc["findings"]
    assert found[0]["target"] == f"{POOL}.MHAPool.write" and code == 1
    detail = found[0]["detail"]
    assert ("unexpected keyword argument 'scale'" in detail if call != "position" else "takes 3 positional arguments, the call passes 4" in detail), detail
    if call == "keyword_on_some_runs":  # the keyword is passed only when the plugin's test holds
        assert found[0]["guard"]["outcome"] == "runtime", found[0]


@pytest.mark.parametrize("receiver", sorted(RECEIVERS))
def test_a_call_the_method_takes_is_not_a_finding(upstreams, tmp_path, receiver):
    _, new = upstreams
    source = _source(receiver, "keyword").replace(", scale=s)", ")")
    code, doc = check(plugin(tmp_path, {"pyproject.toml": pyproject(plugins={"p": "p:register"}), "p/__init__.py": source}), new)
    assert code == 0 and not _calls(doc), doc["findings"]


@pytest.mark.parametrize("receiver", sorted(RECEIVERS))
def test_a_subclass_that_takes_the_call_leaves_it_unknown(scaled, tmp_path, receiver):
    # annotated with the base: the object may be a ScaledPool (ForwardingPool's *args, **kwargs
    # only hand the call on to MHAPool's write, which refuses it)
    source = _source(receiver, "keyword", annotation="KVCache")
    code, doc = check(plugin(tmp_path, {"pyproject.toml": pyproject(plugins={"p": "p:register"}), "p/__init__.py": source}), scaled)
    found = _calls(doc)
    assert len(found) == 1 and found[0]["status"] == "unknown" and found[0]["breaking"] is False, doc["findings"]
    assert "ScaledPool.write" in found[0]["detail"] and "ForwardingPool" not in found[0]["detail"]
    # annotated with MHAPool: only ForwardingPool derives from it, and it forwards
    source = _source(receiver, "keyword")
    code, doc = check(plugin(tmp_path / "mha", {"pyproject.toml": pyproject(plugins={"p": "p:register"}), "p/__init__.py": source}), scaled)
    assert [f["breaking"] for f in _calls(doc)] == [True] and code == 1, doc["findings"]


PATCHES = {
    "assign": "MHAPool.write = _write",
    "setattr": 'setattr(MHAPool, "write", _write)',
    "module_alias": "pool_module.MHAPool.write = _write",
}


@pytest.mark.parametrize("spelling", sorted(PATCHES))
def test_the_plugins_patch_of_the_method_is_what_the_call_binds(upstreams, tmp_path, spelling):
    _, new = upstreams
    source = (_source("parameter_annotation", "keyword").replace("def register():\n    pass\n", "")
              + "\nimport sglang.srt.mem_cache.pool as pool_module\n\n\ndef _write(self, loc, k, v, scale=None):\n    return loc\n\n\n"
              + f"def register():\n    {PATCHES[spelling]}\n    write(None, 0, 1, 2, 3)\n")
    code, doc = check(plugin(tmp_path, {"pyproject.toml": pyproject(plugins={"p": "p:register"}), "p/__init__.py": source}), new)
    assert not [f for f in _calls(doc) if f["breaking"]] and code == 0, doc["findings"]


# a keyword passed only on the runs under the plugin's own test (`**({"scale": s} if c else {})`):
# each arm is a call under its test, through super(), self or a typed object alike
ARMED = {
    "super": ("class Mine(MHAPool):\n    def write(self, loc, k, v, s=None):\n        return super().write(loc, k, v, {spread})\n",
              "Mine().write(0, 1, 2)"),
    "self": ("class Mine(MHAPool):\n    def put(self, loc, k, v, s=None):\n        return self.write(loc, k, v, {spread})\n",
             "Mine().put(0, 1, 2)"),
    "typed_object": ("def put(pool: MHAPool, loc, k, v, s=None):\n    return pool.write(loc, k, v, {spread})\n", "put(None, 0, 1, 2)"),
}
# the test: decided by the release (false on the new one), run-time data, none at all
TESTS = {
    "release": ('**({{"scale": s}} if _TAKES_SCALE else {{}})', False, None),
    "run_time": ('**({{"scale": s}} if s is not None else {{}})', True, "runtime"),
    "run_time_key_in_the_else_arm": ('**({{}} if s is None else {{"scale": s}})', True, "runtime"),
    "always": ('scale=s', True, None),
}


@pytest.mark.parametrize("test", sorted(TESTS))
@pytest.mark.parametrize("spelling", sorted(ARMED))
def test_a_keyword_passed_on_some_runs_is_judged_under_its_test(upstreams, tmp_path, spelling, test):
    _, new = upstreams
    spread, breaks, outcome = TESTS[test]
    source = ("from packaging.version import Version\n\nimport sglang\nfrom sglang.srt.mem_cache.pool import MHAPool\n\n"
              '_TAKES_SCALE = Version(sglang.__version__) < Version("0.10.0")\n\n\n'
              + ARMED[spelling][0].format(spread=spread.format()) + f"\n\ndef register():\n    {ARMED[spelling][1]}\n")
    code, doc = check(plugin(tmp_path, {"pyproject.toml": pyproject(plugins={"p": "p:register"}), "p/__init__.py": source}), new)
    found = [f for f in doc["findings"] if "argument 'scale'" in (f["detail"] or "") and f["target"].endswith(".write")]
    assert found and any(f["breaking"] for f in found) is breaks and code == (1 if breaks else 0), doc["findings"]
    if outcome is not None:
        assert {f["guard"]["outcome"] for f in found if f["breaking"]} == {outcome}, found
