"""State an `__init__` override skips (issue 34: "an attribute of base-class state that an
`__init__` override skips"): a plugin runner that rebuilds its upstream base's state by hand
instead of calling `super().__init__()` lacks what the release's `__init__` starts setting; an
inherited method reading it fails. Skipped five ways (no call; an outside base's
`nn.Module.__init__(self)`; a grand-base's `Base.__init__(self)`; `super(Runner, self)` or
`super(Base, self)`, whose lookup starts after the class named); not skipped when the override
runs the next `__init__` (`super().__init__()`, `super(Cls, self).__init__()`, the direct base by
name) or sets the attribute itself. Only state new since the baseline is told."""

from __future__ import annotations

import pytest
from kinds_support import check, plugin, pyproject, upstream_pair

RUNNER = "sglang.srt.managers.runner"
OLD = ("from torch import nn\n\n\nclass Base(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.device = 'cpu'\n\n\n"
       "class Runner(Base):\n    def __init__(self):\n        super().__init__()\n        self.a = 1\n\n"
       "    def step(self):\n        return self.a\n")
NEW = OLD.replace("        self.a = 1\n", "        self.a = 1\n        self.pending = []\n").replace(
    "        return self.a\n", "        return self.a, self.pending\n")

SKIPS = {
    "no_call": "",
    "outside_base": "        nn.Module.__init__(self)\n",
    "grand_base": "        Base.__init__(self)\n",
    # the lookup of super(C, self) starts after C (the twentieth held-out set, V-f8): C's own __init__ is skipped
    "super_after_the_base": "        super(Runner, self).__init__()\n",
    "super_after_the_grand_base": "        super(Base, self).__init__()\n",
}
RUNS = {
    "super": "        super().__init__()\n",
    "super_explicit": "        super(Mine, self).__init__()\n",
    "direct_base": "        Runner.__init__(self)\n",
    "sets_it": "        self.pending = []\n",
}


@pytest.fixture(scope="module")
def upstreams(tmp_path_factory):
    return upstream_pair(tmp_path_factory, old={"sglang/srt/managers/runner.py": OLD}, new={"sglang/srt/managers/runner.py": NEW})


def _plugin(tmp_path, init_line: str, calls_step: bool = True):
    source = (f"from torch import nn\nfrom {RUNNER} import Base, Runner\n\n\nclass Mine(Runner):\n    def __init__(self):\n"
              f"{init_line}        self.a = 2\n        self.device = 'npu'\n\n"
              + ("    def run(self):\n        return self.step()\n\n" if calls_step else "")
              + "\ndef register():\n    return Mine()\n")
    return plugin(tmp_path, {"pyproject.toml": pyproject(plugins={"p": "p.runner:register"}), "p/__init__.py": "", "p/runner.py": source})


def _init(doc: dict) -> dict | None:
    return next((f for f in doc["findings"] if f["target"] == f"{RUNNER}.Runner.__init__"), None)


def _assert_verdict(found: dict | None, code: int, breaks: bool) -> None:
    """The skipped-__init__ finding breaks naming self.pending (exit 1), or nothing breaks (exit 0)."""
    if breaks:
        assert found is not None and (found["status"], found["breaking"]) == ("missing", True) and code == 1, found
        assert "self.pending" in found["detail"]
    else:
        assert (found is None or not found["breaking"]) and code == 0, found


@pytest.mark.parametrize("skip", sorted(SKIPS))
def test_state_new_in_a_skipped_init_breaks_the_inherited_method_that_reads_it(upstreams, tmp_path, skip):
    old, new = upstreams
    root = _plugin(tmp_path, SKIPS[skip])
    code, doc = check(root, new, "--baseline", old)
    found = _init(doc)
    assert found is not None and (found["status"], found["breaking"]) == ("missing", True), found
    assert "self.pending" in found["detail"] and f"{RUNNER}.Runner.step" in found["detail"] and "sglang/srt/managers/runner.py:" in found["detail"]
    assert code == 1
    # on its base the same plugin runs: nothing to tell
    code, doc = check(root, old, "--baseline", old)
    assert _init(doc) is None or not _init(doc)["breaking"]


@pytest.mark.parametrize("runs", sorted(RUNS))
def test_an_init_that_runs_the_next_one_or_sets_the_state_is_fine(upstreams, tmp_path, runs):
    _, new = upstreams
    old, _ = upstreams
    code, doc = check(_plugin(tmp_path, RUNS[runs]), new, "--baseline", old)
    assert _init(doc) is None or _init(doc)["status"] == "ok", _init(doc)
    assert code == 0


def test_an_inherited_method_only_upstream_may_call_is_unknown(upstreams, tmp_path):
    old, new = upstreams
    code, doc = check(_plugin(tmp_path, "", calls_step=False), new, "--baseline", old)
    found = _init(doc)
    assert found is not None and (found["status"], found["breaking"]) == ("unknown", False), found
    assert "not traced" in found["detail"] and code != 1


# the `__init__` that runs is the first of the MRO (set 21 V-e8): one a plugin mixin listed before
# the upstream base writes, directly or through a plugin base, skips Runner's as the class's own
# would; a mixin after the upstream base never runs its own
MIXINS = {
    "mixin_first": ("class _State:\n    def __init__(self):\n        nn.Module.__init__(self)\n        self.a = 2\n\n\n", "_State, Runner", True),
    "mixin_of_a_plugin_base": ("class _Init:\n    def __init__(self):\n        Base.__init__(self)\n        self.a = 2\n\n\n"
                               "class _State(_Init):\n    pass\n\n\n", "_State, Runner", True),
    "mixin_with_a_keyword_only_init": ("class _State:\n    def __init__(self, *, a=2):\n        nn.Module.__init__(self)\n        self.a = a\n\n\n",
                                       "_State, Runner", True),
    "mixin_after_the_upstream_base": ("class _State:\n    def __init__(self):\n        nn.Module.__init__(self)\n        self.a = 2\n\n\n",
                                      "Runner, _State", False),
}


@pytest.mark.parametrize("spelling", sorted(MIXINS))
def test_an_init_a_plugin_mixin_gives_is_the_one_that_runs(upstreams, tmp_path, spelling):
    old, new = upstreams
    mixin, bases, skips = MIXINS[spelling]
    source = (f"from torch import nn\nfrom {RUNNER} import Base, Runner\n\n\n{mixin}class Mine({bases}):\n"
              "    def run(self):\n        return self.step()\n\n\ndef register():\n    return Mine()\n")
    root = plugin(tmp_path, {"pyproject.toml": pyproject(plugins={"p": "p.runner:register"}), "p/__init__.py": "", "p/runner.py": source})
    code, doc = check(root, new, "--baseline", old)
    found = _init(doc)
    if skips:
        assert found is not None and (found["status"], found["breaking"]) == ("missing", True), found
        assert "self.pending" in found["detail"] and code == 1
    else:
        assert found is None or not found["breaking"], found
        assert code == 0, doc["findings"]


# the class's own `super().__init__()` reaches a plugin op base, whose __init__ decides (twenty-
# third set V-c8, vLLM's `class DevCustomOp(CustomOp)` calling `CustomOp.__init__(self)`): followed
# through it; the inherited method called class-qualified (`Runner.step(self)`) is the plugin's own call
CHAINS = {
    "plugin_base_names_the_grand_base": ("class _OpBase(Base):\n    def __init__(self):\n        Base.__init__(self)\n        self.stream = None\n\n\n",
                                         "super().__init__()", True),
    "plugin_base_skips_everything": ("class _OpBase(nn.Module):\n    def __init__(self):\n        nn.Module.__init__(self)\n\n\n",
                                     "super(Mine, self).__init__()", True),
    "through_two_plugin_bases": ("class _Root(Base):\n    def __init__(self):\n        Base.__init__(self)\n\n\n"
                                 "class _OpBase(_Root):\n    def __init__(self):\n        super().__init__()\n\n\n", "super().__init__()", True),
    # negative: the plugin base is cooperative, the upstream chain runs whole
    "cooperative_plugin_base": ("class _OpBase(Base):\n    def __init__(self):\n        super().__init__()\n        self.stream = None\n\n\n",
                                "super().__init__()", False),
}


@pytest.mark.parametrize("qualified", [False, True], ids=["self_call", "class_qualified_call"])
@pytest.mark.parametrize("spelling", sorted(CHAINS))
def test_an_init_chain_through_a_plugin_base_is_followed(upstreams, tmp_path, spelling, qualified):
    old, new = upstreams
    base, call, skips = CHAINS[spelling]
    runs = "Runner.step(self)" if qualified else "self.step()"
    source = (f"from torch import nn\nfrom {RUNNER} import Base, Runner\n\n\n{base}class Mine(_OpBase, Runner):\n"
              f"    def __init__(self):\n        {call}\n        self.a = 2\n\n    def run(self):\n        return {runs}\n\n\n"
              "def register():\n    return Mine()\n")
    root = plugin(tmp_path, {"pyproject.toml": pyproject(plugins={"p": "p.runner:register"}), "p/__init__.py": "", "p/runner.py": source})
    code, doc = check(root, new, "--baseline", old)
    found = next((f for f in doc["findings"] if f["target"].endswith(".__init__") and "self.pending" in (f["detail"] or "")), None)
    if skips:
        assert found is not None and (found["status"], found["breaking"]) == ("missing", True), doc["findings"]
        assert code == 1
    else:
        assert found is None and code == 0, doc["findings"]


# an `__init__` the class body binds to a module function (twenty-fourth set V-d8, `__init__ =
# init_dev_quant_fp8` from another plugin module): that function is the `__init__` that runs
ASSIGNED = {
    "same_module": ("", "def _init_mine(self):\n{body}\n\n", "_init_mine"),
    "another_module_by_name": ("from p.state import init_mine\n", "", "init_mine"),
    "another_module_through_it": ("from p import state\n", "", "state.init_mine"),
    # a functools.partialmethod of it with a preset (thirty-first set V-k8): that function runs
    "partialmethod_same_module": ("import functools\n", "def _init_mine(self, fused=False):\n{body}\n\n", "functools.partialmethod(_init_mine, fused=True)"),
    "partialmethod_another_module": ("from functools import partialmethod\n\nfrom p.state import init_mine\n", "", "partialmethod(init_mine)"),
}


@pytest.mark.parametrize("spelling", sorted(ASSIGNED))
@pytest.mark.parametrize("runs_runner", [False, True])
def test_an_init_bound_by_assignment_is_the_one_that_runs(upstreams, tmp_path, spelling, runs_runner):
    old, new = upstreams
    imports, local, name = ASSIGNED[spelling]
    body = ("    Runner.__init__(self)\n" if runs_runner else "    Base.__init__(self)\n") + "    self.a = 2"
    source = (f"from torch import nn\nfrom {RUNNER} import Base, Runner\n{imports}\n\n" + local.format(body=body)
              + f"class Mine(Runner):\n    __init__ = {name}\n\n    def run(self):\n        return self.step()\n\n\ndef register():\n    return Mine()\n")
    state = f"from {RUNNER} import Base, Runner\n\n\ndef init_mine(self):\n{body}\n"
    root = plugin(tmp_path, {"pyproject.toml": pyproject(plugins={"p": "p.runner:register"}), "p/__init__.py": "",
                             "p/runner.py": source, "p/state.py": state})
    code, doc = check(root, new, "--baseline", old)
    found = _init(doc)
    if runs_runner:
        assert (found is None or found["status"] == "ok") and code == 0, found
    else:
        assert found is not None and (found["status"], found["breaking"]) == ("missing", True) and "self.pending" in found["detail"], found
        assert code == 1


# the class overrides the method that reads the state, and its override runs upstream's through
# super() (twenty-sixth set V-f8: a quant method's create_weights calling the base's): upstream's
# body still reads it -- super(), super(Cls, self), a local bound to the super() method; an override
# that does not call upstream's reads nothing of it
OVERRIDES = {
    "super_call": ("        return super().step()\n", True),
    "super_explicit": ("        out = super(Mine, self).step()\n        return out\n", True),
    "super_method_in_a_local": ("        run = super().step\n        return run()\n", True),
    "own_body_only": ("        return self.a\n", False),
}


@pytest.mark.parametrize("spelling", sorted(OVERRIDES))
def test_an_override_running_the_inherited_method_through_super_reads_the_skipped_state(upstreams, tmp_path, spelling):
    old, new = upstreams
    body, breaks = OVERRIDES[spelling]
    source = (f"from {RUNNER} import Runner\n\n\nclass Mine(Runner):\n    def __init__(self):\n        self.a = 2\n        self.device = 'npu'\n\n"
              f"    def step(self):\n{body}\n\ndef register():\n    return Mine().step()\n")
    root = plugin(tmp_path, {"pyproject.toml": pyproject(plugins={"p": "p.runner:register"}), "p/__init__.py": "", "p/runner.py": source})
    code, doc = check(root, new, "--baseline", old)
    _assert_verdict(_init(doc), code, breaks)


# the override keeps upstream's bound method on self in its __init__ and calls it later
# (twenty-seventh set V-g8: `self._vllm_forward = super().forward`): the same read of the skipped state
KEPT = {
    "kept_from_super": ("        self._base_step = super().step\n", "        return self._base_step()\n", True),
    "kept_from_super_of_the_class": ("        self._base_step = super(Mine, self).step\n", "        out = self._base_step()\n        return out\n", True),
    "kept_and_called_in_a_helper": ("        self._base_step = super().step\n", "        return self._run()\n\n    def _run(self):\n        return self._base_step()\n", True),
    "kept_never_called": ("        self._base_step = super().step\n", "        return self.a\n", False),
}


@pytest.mark.parametrize("spelling", sorted(KEPT))
def test_upstreams_method_kept_on_self_and_called_later_reads_the_skipped_state(upstreams, tmp_path, spelling):
    old, new = upstreams
    kept, body, breaks = KEPT[spelling]
    source = (f"from {RUNNER} import Runner\n\n\nclass Mine(Runner):\n    def __init__(self):\n        self.a = 2\n        self.device = 'npu'\n{kept}\n"
              f"    def step(self):\n{body}\n\ndef register():\n    return Mine().step()\n")
    root = plugin(tmp_path, {"pyproject.toml": pyproject(plugins={"p": "p.runner:register"}), "p/__init__.py": "", "p/runner.py": source}, name=spelling)
    code, doc = check(root, new, "--baseline", old)
    _assert_verdict(_init(doc), code, breaks)


# the plugin calls the inherited method on an object of its class it makes itself, outside the
# class (twenty-ninth set V-i8: a worker's `drafter = DevMedusaProposer(...)`, then
# `drafter.load_model(...)`): that call runs upstream's body on the instance whose state was skipped
CALLERS = {
    "local_bound_to_a_construction": "def drive():\n    mine = Mine()\n    return mine.step()\n",
    "construction_called_at_once": "def drive():\n    return Mine().step()\n",
    "through_the_module": "import p.runner as runners\n\n\ndef drive():\n    made = runners.Mine()\n    return made.step()\n",
}


@pytest.mark.parametrize("spelling", sorted(CALLERS))
def test_an_inherited_method_the_plugin_calls_on_an_object_it_makes_reads_the_skipped_state(upstreams, tmp_path, spelling):
    old, new = upstreams
    source = (f"from torch import nn\nfrom {RUNNER} import Base, Runner\n\n\nclass Mine(Runner):\n    def __init__(self):\n"
              "        self.a = 2\n        self.device = 'npu'\n\n\ndef register():\n    return Mine\n")
    root = plugin(tmp_path, {"pyproject.toml": pyproject(plugins={"p": "p.runner:register", "q": "p.worker:drive"}), "p/__init__.py": "",
                             "p/runner.py": source, "p/worker.py": "from p.runner import Mine\n\n\n" + CALLERS[spelling]})
    code, doc = check(root, new, "--baseline", old)
    found = _init(doc)
    assert found is not None and (found["status"], found["breaking"]) == ("missing", True), found
    assert code == 1
    # calling another method on it is no read of the skipped state: still not traced
    (root / "p" / "worker.py").write_text("from p.runner import Mine\n\n\n" + CALLERS[spelling].replace(".step()", ".eval()"))
    code, doc = check(root, new, "--baseline", old)
    assert (_init(doc)["status"], _init(doc)["breaking"]) == ("unknown", False)


# the __init__ is the one @dataclass writes for the plugin subclass (thirtieth set V-j8): it sets
# the fields, runs __post_init__ and never the base's __init__ (the dataclasses docs, "Post-init
# processing"); a __post_init__ calling super().__init__() runs it, and init=False writes none
DATACLASSES = {
    "plain_decorator": ("@dataclass\nclass Mine(Runner):\n    a: int = 2\n    device: str = 'npu'\n\n"
                        "    def run(self):\n        return self.step()\n", True),
    "called_options_post_init_super_step": ("@dataclasses.dataclass(eq=False)\nclass Mine(Runner):\n    device: str = 'npu'\n\n"
                                            "    def __post_init__(self):\n        self.a = 2\n\n"
                                            "    def step(self):\n        return super().step()\n", True),
    "made_and_called_outside": ("@dataclass(repr=False)\nclass Mine(Runner):\n    a: int = 2\n\n\ndef drive():\n    return Mine().step()\n", True),
    "post_init_runs_the_base": ("@dataclass\nclass Mine(Runner):\n    device: str = 'npu'\n\n"
                                "    def __post_init__(self):\n        super().__init__()\n\n    def run(self):\n        return self.step()\n", False),
    "init_false_keeps_the_base": ("@dataclass(init=False)\nclass Mine(Runner):\n    a: int = 2\n\n    def run(self):\n        return self.step()\n", False),
}


@pytest.mark.parametrize("spelling", sorted(DATACLASSES))
def test_the_init_a_dataclass_writes_skips_the_bases(upstreams, tmp_path, spelling):
    old, new = upstreams
    body, breaks = DATACLASSES[spelling]
    source = f"import dataclasses\nfrom dataclasses import dataclass\n\nfrom {RUNNER} import Runner\n\n\n{body}\n\ndef register():\n    return Mine\n"
    root = plugin(tmp_path, {"pyproject.toml": pyproject(plugins={"p": "p.runner:register"}), "p/__init__.py": "", "p/runner.py": source}, name=spelling)
    code, doc = check(root, new, "--baseline", old)
    _assert_verdict(_init(doc), code, breaks)
    code, doc = check(root, old, "--baseline", old)  # on its base the same plugin runs
    assert _init(doc) is None or not _init(doc)["breaking"]
