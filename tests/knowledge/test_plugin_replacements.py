"""What the plugin replaces is what later code binds to (issue 34, item 1's last rule): a call of
an upstream function the plugin rebinds to its own is judged against the plugin's function
(vllm-ascend's patch_triton.py sets `fla.ops.chunk_gated_delta_rule` to its kernel, which takes
`prebuilt_meta=`), written as an assignment, through an alias, or with setattr; a member of an
upstream base class the plugin replaces with its own class is there (its BalanceScheduler sets
`_disable_preemption`); and a `self.m(…)` call that upstream's `m` cannot take is not certain when a
plugin subclass's own `m` takes it (its dflash proposer). Without the replacement each breaks."""

from __future__ import annotations

import pytest
from kinds_support import check, plugin, pyproject, upstream_pair
from knowledge_support import by_target

CHUNK = "sglang.srt.layers.fla.chunk"


@pytest.fixture(scope="module")
def upstreams(tmp_path_factory):
    fla = {"sglang/srt/layers/fla.py": "def chunk(q, k, v):\n    return q\n"}
    return upstream_pair(tmp_path_factory, old=fla, new=fla)


CALLER = "from sglang.srt.layers.fla import chunk\n\n\ndef forward(q, k, v, meta):\n    return chunk(q, k, v, prebuilt_meta=meta)\n"
KERNEL = "def chunk(q, k, v, prebuilt_meta=None):\n    return q\n"
PATCHES = {
    "assign": "import sglang.srt.layers.fla\nfrom p.kernel import chunk\n\nsglang.srt.layers.fla.chunk = chunk\n",
    "alias": "import sglang.srt.layers.fla as fla\nfrom p import kernel\n\nfla.chunk = kernel.chunk\n",
    "setattr": "import sglang.srt.layers.fla as fla\nfrom p.kernel import chunk\n\nsetattr(fla, 'chunk', chunk)\n",
    # save-and-replace in one statement: the original kept, the module global set
    "tuple_swap": "import sglang.srt.layers.fla as fla\nfrom p.kernel import chunk\n\n_ORIG, fla.chunk = fla.chunk, chunk\n",
    "list_swap": "import sglang.srt.layers.fla as fla\nfrom p import kernel\n\n[_ORIG, fla.chunk] = [fla.chunk, kernel.chunk]\n",
    "global_swap": ("import sglang.srt.layers.fla as fla\nfrom p.kernel import chunk\n\n_ORIG = None\n\n\ndef install():\n"
                    "    global _ORIG\n    _ORIG, fla.chunk = fla.chunk, chunk\n"),
    "none": "",
    # the kernel is kept aside, the original stays: `fla.chunk` is read before `_KEPT` is bound
    "swap_keeps_original": "import sglang.srt.layers.fla as fla\nfrom p.kernel import chunk\n\n_ORIG, _KEPT = fla.chunk, chunk\n",
    # not on this release: the original is what the call binds (vllm-ascend patches FusedMoE only off 0.23.0)
    "guarded_off": "import sglang\nimport sglang.srt.layers.fla as fla\nfrom p.kernel import chunk\n\nif sglang.__version__ < '0.10.0':\n    fla.chunk = chunk\n",
    # the replacement looked up by name in the module's own globals (twenty-eighth set V-h3)
    "globals_by_name_over_all": ("import sglang.srt.layers.fla as fla\nfrom p.kernel import chunk\n\n__all__ = ['chunk']\n\n"
                                 "for _name in __all__:\n    setattr(fla, _name, globals()[_name])\n"),
    "globals_get_in_a_function": ("import sglang.srt.layers.fla as fla\nfrom p.kernel import chunk\n\n\ndef install():\n"
                                  "    for name in ('chunk',):\n        setattr(fla, name, globals().get(name))\n"),
    "globals_item_assigned": ("import sglang.srt.layers.fla as fla\nfrom p.kernel import chunk\n\n_NAMES = ('chunk',)\n\n"
                              "for _name in _NAMES:\n    fla.__dict__[_name] = globals()[_name]\n"),
    # a replacement defined under a module-level test that holds here
    "defined_in_if": ("import sglang\nimport sglang.srt.layers.fla as fla\n\nif sglang.__version__ >= '0.10.0':\n"
                      "    def own(*args, prebuilt_meta=None, **kwargs):\n        return args[0]\n\n    fla.chunk = own\n"),
}


@pytest.mark.parametrize("patch", sorted(PATCHES))
def test_a_call_binds_the_plugins_replacement(upstreams, tmp_path, patch):
    _, new = upstreams
    root = plugin(tmp_path, {"pyproject.toml": pyproject(plugins={"p": "p.patches:register"}), "p/__init__.py": "", "p/kernel.py": KERNEL,
                             "p/patches.py": PATCHES[patch] + "\n\ndef register():\n    install()\n    from p import model\n    return model\n"
                             + ("" if "def install" in PATCHES[patch] else "\n\ndef install():\n    pass\n"),
                             "p/model.py": CALLER})
    code, doc = check(root, new)
    call = next((f for f in doc["findings"] if f["kind"] == "call" and f["target"] == CHUNK), None)
    if patch in ("none", "guarded_off", "swap_keeps_original"):
        assert call is not None and (call["status"], call["breaking"]) == ("signature_changed", True) and code == 1
    else:
        assert call is None or not call["breaking"], call  # ok: counted, not listed
        assert code == 0


SCHEDULER = "sglang.srt.managers.scheduler.Scheduler"


@pytest.mark.parametrize("replaced", [True, False])
def test_a_member_of_a_base_the_plugin_replaces_is_there(upstreams, tmp_path, replaced):
    _, new = upstreams
    patch = ("import sglang.srt.managers.scheduler as scheduler\n\n\nclass Balance(scheduler.Scheduler):\n"
             "    def __init__(self):\n        self._no_preempt = True\n\n\nscheduler.Scheduler = Balance\n") if replaced else ""
    profiling = ("from sglang.srt.managers.scheduler import Scheduler\n\n\nclass Profiling(Scheduler):\n"
                 "    def get_next_batch(self):\n        if self._no_preempt:\n            return None\n")
    root = plugin(tmp_path, {"pyproject.toml": pyproject(plugins={"p": "p.patches:register"}), "p/__init__.py": "",
                             "p/patches.py": patch + "\n\ndef register():\n    from p import profiling\n    return profiling\n",
                             "p/profiling.py": profiling})
    code, doc = check(root, new)
    member = by_target(doc["findings"])[f"{SCHEDULER}._no_preempt"]
    assert (member["status"], member["breaking"]) == (("unknown", False) if replaced else ("missing", True)), member


@pytest.mark.parametrize("subclass_takes_it,guarded", [(True, True), (False, True), (True, False)])
def test_a_conditional_self_call_a_plugin_subclass_takes_is_not_certain(upstreams, tmp_path, subclass_takes_it, guarded):
    _, new = upstreams
    own = "self, n=None" if subclass_takes_it else "self"  # both fit upstream's (self)
    test = "if mode == 'draft': " if guarded else ""
    source = ("from sglang.srt.managers.scheduler import Scheduler\n\n\nclass Base(Scheduler):\n    def run(self, mode):\n"
              f"        {test}return self.get_next_batch(1)\n\n\n"
              f"class Drafting(Base):\n    def get_next_batch({own}):\n        return 1\n\n\n"
              "class Other(Base):\n    pass\n")
    root = plugin(tmp_path, {"pyproject.toml": pyproject(plugins={"p": "p.sched:register"}), "p/__init__.py": "",
                             "p/sched.py": source + "\n\ndef register():\n    return Other().run('x')\n"})
    code, doc = check(root, new)
    # judged in Other's context (upstream's get_next_batch there); Drafting may be self too
    found = [f for f in doc["findings"] if f["target"] == f"{SCHEDULER}.get_next_batch" and f["line"] == 6]
    # unguarded, Other's instances make the call whatever Drafting takes: certain
    breaks = not (subclass_takes_it and guarded)
    assert found and any(f["breaking"] for f in found) is breaks, found
    assert code == (1 if breaks else 0)


def test_a_base_the_plugin_instantiates_runs_with_its_own_mro(upstreams, tmp_path):
    """Base's self call is judged in Base's own context when the plugin makes a Base: there
    upstream's get_next_batch(self) is what runs, whatever Drafting overrides."""
    _, new = upstreams
    source = ("from sglang.srt.managers.scheduler import Scheduler\n\n\nclass Base(Scheduler):\n    def run(self):\n"
              "        return self.get_next_batch(1)\n\n\nclass Drafting(Base):\n    def get_next_batch(self, n=None):\n        return 1\n\n\n"
              "def register():\n    return Base().run()\n")
    root = plugin(tmp_path, {"pyproject.toml": pyproject(plugins={"p": "p.sched:register"}), "p/__init__.py": "", "p/sched.py": source})
    code, doc = check(root, new)
    call = next(f for f in doc["findings"] if f["target"] == f"{SCHEDULER}.get_next_batch" and f["line"] == 6)
    assert (call["status"], call["breaking"]) == ("signature_changed", True) and "p.sched.Base" in call["detail"] and code == 1
