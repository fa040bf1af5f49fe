"""An override narrower than its base (a parameter the base leaves optional made required) is
judged by the calls upstream makes of the method. For a name called in more modules than the
receivers can be placed in (`forward`, `run`), each call is still read for its argument list
(the nineteenth held-out set, V-g5): when every call of that name binds the override, wherever
it lands, nothing can raise (not unknown); a call that upstream's own method could not take
either (one argument too many) is a call of another method of that name and is left out; a call
that leaves the parameter out may land on the override: undecided (exit 3)."""

from __future__ import annotations

import pytest
from kinds_support import check, plugin, pyproject, upstream_pair

from harness.knowledge.judge.callsites import MAX_MODULES

PROC = "class Proc:\n    def run(self, a, b=None):\n        return a\n"
CALLERS = MAX_MODULES + 4


def _tree(extra: str) -> dict[str, str]:
    files = {"sglang/srt/proc.py": PROC}
    files.update({f"sglang/srt/callers/m{i}.py": f"def use(x):\n    return x.run(1, {i})\n" for i in range(CALLERS)})
    files["sglang/srt/callers/__init__.py"] = ""
    files["sglang/srt/callers/extra.py"] = extra
    return files


EXTRAS = {
    # (an extra caller, the exit code)
    "every_call_binds": ("def use(x):\n    return x.run(1, b=2)\n", 0),
    "another_method_of_that_name": ("def use(x):\n    return x.run(1, 2, 3, 4)\n", 0),
    "a_call_leaving_it_out": ("def use(x):\n    return x.run(1)\n", 3),
}


@pytest.mark.parametrize("spelling", sorted(EXTRAS))
def test_an_override_of_a_common_method_name_is_judged_by_the_calls_of_that_name(tmp_path_factory, tmp_path, spelling):
    extra, expected = EXTRAS[spelling]
    _, new = upstream_pair(tmp_path_factory, new=_tree(extra))
    source = "from sglang.srt.proc import Proc\n\n\nclass Mine(Proc):\n    def run(self, a, b):\n        return a\n\n\ndef register():\n    return Mine\n"
    code, doc = check(plugin(tmp_path, {"pyproject.toml": pyproject(plugins={"p": "p:register"}), "p/__init__.py": source}), new)
    found = [f for f in doc["findings"] if f["target"] == "sglang.srt.proc.Proc.run"]
    assert found and not found[0]["breaking"] and code == expected, doc["findings"]
    assert (found[0]["status"] == "unknown") is (expected == 3), found
