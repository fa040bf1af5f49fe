"""A plugin helper that wraps an upstream method keeps the original first, `original =
getattr(owner, name)` without a default, then `setattr(owner, name, wrapper)` (the thirty-sixth
held-out set's F05 variant). Where the member is gone the getattr raises AttributeError before
anything is set: the wrap needs the member, as a hook target does, however the helper learns owner
and name (a decorator factory's closure, a direct call, a loop over a table)."""

from __future__ import annotations

import pytest
from kinds_support import check, plugin, pyproject, upstream_pair

HELPER = '''
import functools


def wrap(owner, name, fn):
    original = getattr(owner, name)

    @functools.wraps(original)
    def wrapper(*args, **kwargs):
        return fn(original, *args, **kwargs)

    setattr(owner, name, wrapper)
    return fn


def wraps_method(owner, name):
    def deco(fn):
        original = getattr(owner, name)

        def wrapper(*args, **kwargs):
            return fn(original, *args, **kwargs)

        setattr(owner, name, wrapper)
        return fn

    return deco
'''

# {member}: the Scheduler method the plugin wraps
SPELLINGS = {
    "decorator_factory": '''
from sglang.srt.managers.scheduler import Scheduler

from p._patching import wraps_method


@wraps_method(Scheduler, "{member}")
def _timed(original, self):
    return original(self)


def register():
    pass
''',
    "direct_call": '''
from sglang.srt.managers.scheduler import Scheduler

from p import _patching


def _timed(original, self):
    return original(self)


def register():
    _patching.wrap(Scheduler, "{member}", _timed)
''',
    "loop_over_a_table": '''
from sglang.srt.managers.scheduler import Scheduler

from p._patching import wrap


def _timed(original, self):
    return original(self)


WRAPPED = {{"{member}": _timed}}


def register():
    for name, fn in WRAPPED.items():
        wrap(Scheduler, name, fn)
''',
}


@pytest.fixture(scope="module")
def new(tmp_path_factory):
    return upstream_pair(tmp_path_factory)[1]


@pytest.mark.parametrize("member, breaks", [("get_next_batch", False), ("get_next_batch_v0", True)], ids=["there", "gone"])
@pytest.mark.parametrize("spelling", sorted(SPELLINGS))
def test_a_wrap_that_reads_the_original_first_needs_the_member(new, tmp_path, spelling, member, breaks):
    root = plugin(tmp_path, {"pyproject.toml": pyproject(plugins={"p": "p:register"}), "p/_patching.py": HELPER,
                             "p/__init__.py": SPELLINGS[spelling].format(member=member)})
    code, doc = check(root, new)
    target = f"sglang.srt.managers.scheduler.Scheduler.{member}"
    reads = [f for f in doc["findings"] if f["kind"] == "reference" and f["target"] == target]
    if breaks:
        assert [(f["status"], f["breaking"], f["file"]) for f in reads] == [("missing", True, "p/_patching.py")], doc["findings"]
        assert code == 1
    else:
        assert not [f for f in doc["findings"] if f["breaking"]] and code == 0, doc["findings"]
