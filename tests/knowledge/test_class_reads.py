"""A member read on a plugin class itself, `DevRunner.snapshot` (the twenty-sixth held-out set,
F06-f2: a table of the steps a wrapper runs, built at import): no plugin class of its MRO
defines it, so it is what the upstream bases give -- judged there as `cls.snapshot` in its
methods is. A member the release drops is `missing` (AttributeError at the read), one it keeps
is fine; the plugin's own members and the type's (`__name__`, `mro`) are not upstream's."""

from __future__ import annotations

import pytest
from kinds_support import check, plugin, pyproject, upstream_pair

RUNNER = "sglang/srt/managers/runner.py"
OLD = "class Runner:\n    def step(self):\n        return 1\n\n    def snapshot(self):\n        return 2\n"
NEW = "class Runner:\n    def step(self):\n        return 1\n"


@pytest.fixture(scope="module")
def upstreams(tmp_path_factory):
    return upstream_pair(tmp_path_factory, old={RUNNER: OLD}, new={RUNNER: NEW})


HEAD = ("from sglang.srt.managers.runner import Runner\n\n\nclass Base(Runner):\n    def own_base(self):\n        return 0\n\n\n"
        "class DevRunner(Base):\n    def step(self):\n        return 3\n\n\n")
READS = {
    "module_level_tuple": "STEPS = (DevRunner.step, DevRunner.snapshot, DevRunner.own_base, DevRunner.__name__)\n",
    "default_argument": "def replay(runner, step=DevRunner.snapshot, name=DevRunner.__qualname__):\n    return step(runner)\n",
    "called_with_the_instance": "def replay(runner):\n    DevRunner.own_base(runner)\n    return DevRunner.snapshot(runner)\n",
    "getattr_of_a_constant": "NAME = 'snapshot'\n\n\ndef replay(runner):\n    return getattr(DevRunner, NAME)(runner)\n",
}


@pytest.mark.parametrize("spelling", sorted(READS))
def test_a_member_read_on_a_plugin_class_is_judged_on_its_upstream_bases(upstreams, tmp_path, spelling):
    old, new = upstreams
    source = HEAD + READS[spelling] + "\n\ndef register():\n    return DevRunner\n"
    root = plugin(tmp_path, {"pyproject.toml": pyproject(plugins={"p": "p:register"}), "p/__init__.py": source})
    code, doc = check(root, old)
    assert code == 0 and not [f for f in doc["findings"] if f["status"] not in ("ok", "extension")], doc["findings"]
    code, doc = check(root, new)
    found = [(f["target"].rsplit(".", 1)[-1], f["status"], f["breaking"]) for f in doc["findings"] if f["kind"] == "subclass"]
    assert found == [("snapshot", "missing", True)] and code == 1, doc["findings"]
