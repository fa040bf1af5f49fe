"""Factory-made hooks and sys.modules patches (issue 18 kinds 7 and 8):
- `HookRegistry.register(target, make_hook(cfg), AROUND)`: the hook is the closure the factory
  returns, judged against the wrapper's call, not the factory's own signature;
- a patch reached through `sys.modules.get("sglang.x")` on a module the release does not have
  never happens: it is reported (missing), not silently dropped."""

from __future__ import annotations

import pytest
from kinds_support import check, plugin, pyproject, upstream_pair


@pytest.fixture(scope="module")
def upstreams(tmp_path_factory):
    return upstream_pair(tmp_path_factory)


def test_a_hook_made_by_a_factory_is_the_function_it_returns(upstreams, tmp_path):
    old, _ = upstreams
    root = plugin(tmp_path, {
        "pyproject.toml": pyproject(plugins={"fa": "fa:register"}),
        "fa/__init__.py": """
            from sglang.srt.plugins.hook_registry import HookRegistry, HookType


            def make_hook(config=None):
                greedy = bool(config)

                def _forward(original_fn, self, logits, *args, **kwargs):
                    return original_fn(self, logits, *args, **kwargs) if greedy else logits

                return _forward


            def make_bad_hook(config=None):
                def _too_narrow(original_fn, self):
                    return original_fn(self)

                return _too_narrow


            def register():
                HookRegistry.register("sglang.srt.layers.sampler.Sampler.forward", make_hook({"x": 1}), HookType.AROUND)
                HookRegistry.register("sglang.srt.layers.sampler.Sampler.forward", make_bad_hook(), HookType.AROUND)
            """,
    })
    code, doc = check(root, old)
    hooks = {f["line"]: f for f in doc["findings"] if f["kind"] == "hook"}
    assert hooks[21]["status"] == "ok", hooks[21]
    assert hooks[22]["status"] == "signature_changed" and "_too_narrow" in hooks[22]["detail"], hooks[22]
    assert hooks[22]["breaking"] and code == 1


def test_a_patch_through_sys_modules_on_a_module_gone_is_reported(upstreams, tmp_path):
    old, new = upstreams
    root = plugin(tmp_path, {
        "pyproject.toml": pyproject(plugins={"sm": "sm:register"}),
        "sm/__init__.py": """
            import sys


            def _skip(model, torchao_config, filter_fn=None):
                return model


            def register():
                sys.modules["sglang.srt.layers.quantization.fp8_utils"].fp8_gemm = _skip
                module = sys.modules.get("sglang.srt.layers.torchao_utils")
                if module is None:
                    return
                module.apply_torchao_config_to_model = _skip
            """,
    })
    code, doc = check(root, old)
    assert code == 0, doc["findings"]
    code, doc = check(root, new)
    patches = {f["line"]: f for f in doc["findings"] if f["kind"] == "patch"}
    skipped = patches[13]
    assert skipped["status"] == "missing" and skipped["target"] == "sglang.srt.layers.torchao_utils.apply_torchao_config_to_model"
    assert skipped["guard"]["outcome"] == "skipped" and not skipped["breaking"]
    # sys.modules[...] of a module never imported raises KeyError
    assert patches[9]["status"] == "missing" and patches[9]["breaking"]


# The hook is whatever object upstream's wrapper calls (hook_registry._wrap_fn: AROUND calls
# hook(original_fn, *args, **kwargs)), however the plugin makes it: each maker below is written
# so that it fits Sampler.forward ("fits") or cannot take (original_fn, self, logits) ("narrow").
MAKERS = {
    "closure": ("def make(cfg):\n    def hook({params}):\n        return original_fn(self, logits)\n    return hook\n", "make(1)"),
    "partial_from_factory": ("def _impl(cfg, {params}):\n    return original_fn(self, logits)\n\n\n"
                             "def make(cfg):\n    return functools.partial(_impl, cfg)\n", "make(1)"),
    "lambda_from_factory": ("def make(cfg):\n    return lambda {params}: original_fn(self, logits)\n", "make(1)"),
    "callable_instance": ("class Hook:\n    def __init__(self, cfg):\n        self.cfg = cfg\n\n"
                          "    def __call__(hook_self, {params}):\n        return original_fn(self, logits)\n", "Hook(1)"),
    # a curried factory (set 21 F30-e2): configured first, bound second -- called in one
    # expression, through a name holding the inner factory, three levels deep
    "curried_call": ("def make(cfg=False):\n    def bind(log):\n        def hook({params}):\n            return original_fn(self, logits)\n"
                     "        return hook\n    return bind\n", "make(cfg=True)(print)"),
    "curried_through_a_name": ("def make(cfg=False):\n    def bind(log):\n        def hook({params}):\n            return original_fn(self, logits)\n"
                               "        return hook\n    return bind\n\n\nBIND = make(cfg=True)\n", "BIND(print)"),
    "curried_three_levels": ("def make(cfg):\n    def level(n):\n        def bind(log):\n            def hook({params}):\n"
                             "                return original_fn(self, logits)\n            return hook\n        return bind\n    return level\n",
                             "make(1)(2)(print)"),
}
PARAMS = {"fits": "original_fn, self, logits, *args, **kwargs", "narrow": "original_fn, self"}


def _judged(hook: dict, fit: str, code: int) -> None:
    """A hook whose parameters fit the wrapper's call is ok (exit 0); a narrow one cannot bind it
    (signature_changed, breaking, exit 1)."""
    if fit == "fits":
        assert hook["status"] == "ok" and code == 0, hook
    else:
        assert hook["status"] == "signature_changed" and hook["breaking"] and code == 1, hook


@pytest.mark.parametrize("fit", sorted(PARAMS))
@pytest.mark.parametrize("maker", sorted(MAKERS))
def test_a_hook_is_judged_as_the_object_the_wrapper_calls(upstreams, tmp_path, maker, fit):
    old, _ = upstreams
    source, made = MAKERS[maker]
    root = plugin(tmp_path, {
        "pyproject.toml": pyproject(plugins={"fa": "fa.hooks:register"}),
        "fa/__init__.py": "",
        "fa/hooks.py": ("import functools\n\nfrom sglang.srt.plugins.hook_registry import HookRegistry, HookType\n\n\n"
                        + source.format(params=PARAMS[fit])
                        + f"\n\ndef register():\n    HookRegistry.register('sglang.srt.layers.sampler.Sampler.forward', {made}, HookType.AROUND)\n"),
    }, name=f"{maker}-{fit}")
    code, doc = check(root, old)
    hook = next(f for f in doc["findings"] if f["kind"] == "hook")
    _judged(hook, fit, code)


# a bound method of a plugin object registered as the hook: self is bound, so the wrapper's
# arguments fill the parameters after it
BOUND = {
    "object_made_inline": "HookRegistry.register(TARGET, Patch(cfg).{m}, HookType.AROUND)",
    "object_in_a_local": "patch = Patch(cfg)\n                HookRegistry.register(TARGET, patch.{m}, HookType.AROUND)",
    "method_of_a_plugin_base": "patch = Derived(cfg)\n                HookRegistry.register(TARGET, patch.{m}, HookType.AROUND)",
    # a classmethod read off the class (cls bound), directly, through a subclass, or set by assignment
    "classmethod_on_the_class": "HookRegistry.register(TARGET, Policy.{m}, HookType.AROUND)",
    "classmethod_on_a_subclass": "HookRegistry.register(TARGET, DerivedPolicy.{m}, HookType.AROUND)",
    "classmethod_on_an_instance": "policy = Policy()\n                HookRegistry.register(TARGET, policy.{m}, HookType.AROUND)",
    # a factory returning the bound method of an object it makes (FACTORIES)
    "factory_returns_a_locals_method": "HookRegistry.register(TARGET, make_from_local(cfg), HookType.AROUND)",
    "factory_returns_a_new_objects_method": "HookRegistry.register(TARGET, make_inline(cfg), HookType.AROUND)",
    "factory_returns_it_through_a_name": "HookRegistry.register(TARGET, make_through_name(cfg), HookType.AROUND)",
    # kept in a module global: of an object made there, of a module-level object, in a tuple of them
    "module_global_of_a_new_object": "HookRegistry.register(TARGET, _MADE, HookType.AROUND)",
    "module_global_of_a_module_object": "HookRegistry.register(TARGET, _OF_OBJECT, HookType.AROUND)",
    "module_global_tuple": "HookRegistry.register(TARGET, _PAIR[1], HookType.AROUND)",
}

FACTORIES = """
            def make_from_local(cfg):
                patch = Patch(cfg)
                return patch.{m}


            def make_inline(cfg):
                return Patch(cfg).{m}


            def make_through_name(cfg):
                hook = Derived(cfg).{m}
                return hook


            _MADE = Patch(None).{m}
            _OBJECT = Derived(None)
            _OF_OBJECT = _OBJECT.{m}
            _PAIR = (TARGET, _OBJECT.{m})

"""


@pytest.mark.parametrize("spelling", sorted(BOUND))
@pytest.mark.parametrize("method, fits", [("around", True), ("too_narrow", False)])
def test_a_bound_method_hook_is_judged_without_self(upstreams, tmp_path, spelling, method, fits):
    old, _ = upstreams
    root = plugin(tmp_path, {
        "pyproject.toml": pyproject(plugins={"bm": "bm:register"}),
        "bm/__init__.py": """
            from sglang.srt.plugins.hook_registry import HookRegistry, HookType

            TARGET = "sglang.srt.layers.sampler.Sampler.forward"


            class Patch:
                def __init__(self, cfg):
                    self.cfg = cfg

                def around(self, original_fn, sampler, logits, *args, **kwargs):
                    return original_fn(sampler, logits, *args, **kwargs)

                def too_narrow(self, original_fn, sampler):
                    return original_fn(sampler)


            class Derived(Patch):
                pass


            class Policy:
                @classmethod
                def around(cls, original_fn, sampler, logits, *args, **kwargs):
                    return original_fn(sampler, logits, *args, **kwargs)

                @classmethod
                def too_narrow(cls, original_fn, sampler):
                    return original_fn(sampler)


            class DerivedPolicy(Policy):
                pass

            """ + FACTORIES.format(m=method) + """
            def register(cfg=None):
                """ + BOUND[spelling].format(m=method) + "\n",
    })
    code, doc = check(root, old)
    hook = next(f for f in doc["findings"] if f["kind"] == "hook")
    if fits:
        assert hook["status"] == "ok" and code == 0, hook
    else:
        assert hook["status"] == "signature_changed" and hook["breaking"] and code == 1, hook


# a class-based registrar: the target and kind kept on the object by __init__, the hook given
# to its __call__ (called at once, or used as a decorator)
REGISTRARS = {
    "called_at_once": ("", "Registrar(TARGET, HookType.AROUND)({fn})\n"),
    "decorator": ("@Registrar(TARGET, kind=HookType.AROUND)\n", ""),
    "keyword_target": ("", "Registrar(kind=HookType.AROUND, target=TARGET)({fn})\n"),
}


@pytest.mark.parametrize("spelling", sorted(REGISTRARS))
@pytest.mark.parametrize("params, fits", [("original_fn, sampler, logits, *args, **kwargs", True), ("original_fn, sampler", False)])
def test_a_hook_registered_by_a_registrar_object_is_judged(upstreams, tmp_path, spelling, params, fits):
    old, _ = upstreams
    decorator, call = REGISTRARS[spelling]
    root = plugin(tmp_path, {
        "pyproject.toml": pyproject(plugins={"rg": "rg.hooks"}),
        "rg/__init__.py": "",
        "rg/hooks.py": "from sglang.srt.plugins.hook_registry import HookRegistry, HookType\n\n"
                       "TARGET = 'sglang.srt.layers.sampler.Sampler.forward'\n\n\n"
                       "class Registrar:\n    def __init__(self, target, kind):\n        self.target, self.kind = target, kind\n\n"
                       "    def __call__(self, fn):\n        HookRegistry.register(self.target, fn, self.kind)\n        return fn\n\n\n"
                       f"{decorator}def forward({params}):\n    return original_fn(sampler)\n\n\n{call.format(fn='forward')}",
    })
    code, doc = check(root, old)
    hooks = [f for f in doc["findings"] if f["kind"] == "hook"]
    assert [h["target"] for h in hooks] == ["sglang.srt.layers.sampler.Sampler.forward"], hooks
    assert hooks[0]["hook_type"] == "AROUND" and hooks[0]["status"] == ("ok" if fits else "signature_changed"), hooks[0]
    assert code == (0 if fits else 1)


# the factory a method of a plugin class (its module also defines another function of the same
# name): the hook is the closure that method returns
METHOD_FACTORIES = {
    "called_with_an_object": "HookRegistry.register(TARGET, HookFactory.sampler_forward(HookFactory()), HookType.AROUND)",
    "keyword_hook_argument": "HookRegistry.register(TARGET, hook=HookFactory.sampler_forward(HookFactory()), hook_type=HookType.AROUND)",
    "table_of_unbound_methods": ("for target, make in [(TARGET, HookFactory.sampler_forward)]:\n"
                                 "        HookRegistry.register(target, make(HookFactory()), HookType.AROUND)"),
}


@pytest.mark.parametrize("spelling", sorted(METHOD_FACTORIES))
@pytest.mark.parametrize("params, fits", [("original_fn, sampler, logits, *args, **kwargs", True), ("original_fn, sampler", False)])
def test_a_hook_made_by_a_factory_method_is_the_closure_it_returns(upstreams, tmp_path, spelling, params, fits):
    old, _ = upstreams
    root = plugin(tmp_path, {
        "pyproject.toml": pyproject(plugins={"mf": "mf:register"}),
        "mf/__init__.py": "from sglang.srt.plugins.hook_registry import HookRegistry, HookType\n\n"
                          "TARGET = 'sglang.srt.layers.sampler.Sampler.forward'\n\n\n"
                          "def sampler_forward(x):\n    return x\n\n\n"
                          f"class HookFactory:\n    def sampler_forward(self):\n        def _forward({params}):\n"
                          "            return original_fn(sampler)\n\n        return _forward\n\n\n"
                          f"def register():\n    {METHOD_FACTORIES[spelling]}\n",
    })
    code, doc = check(root, old)
    hook = next(f for f in doc["findings"] if f["kind"] == "hook")
    assert hook["status"] == ("ok" if fits else "signature_changed") and code == (0 if fits else 1), hook


# hooks queued in a module-level list by module-level code (a decorator factory's closure, a
# plain decorator, a registering call), registered later by a loop over the list (F20 variant x2)
QUEUED = {
    "decorator_factory": ("""
        def around(target):
            def deco(fn):
                _PENDING.append((target, fn))
                return fn
            return deco


        @around(TARGET)
        def _forward({params}):
            return original_fn(self, logits)
        """),
    "decorator_factory_wrapper": ("""
        def around(target):
            def deco(fn):
                @functools.wraps(fn)
                def hook({params}):
                    return fn(original_fn, self, logits)
                _PENDING.append((target, hook))
                return hook
            return deco


        @around(target=TARGET)
        def _forward(original_fn, self, logits, *args, **kwargs):
            return original_fn(self, logits)
        """),
    "registering_call": ("""
        def queue(target, fn):
            _PENDING.append((target, fn))


        def _forward({params}):
            return original_fn(self, logits)


        queue(TARGET, fn=_forward)
        """),
}


@pytest.mark.parametrize("fit", sorted(PARAMS))
@pytest.mark.parametrize("spelling", sorted(QUEUED))
def test_a_hook_queued_by_module_level_code_is_judged_where_the_queue_is_registered(upstreams, tmp_path, spelling, fit):
    old, _ = upstreams
    root = plugin(tmp_path, {
        "pyproject.toml": pyproject(plugins={"fa": "fa:register"}),
        "fa/__init__.py": """
            from sglang.srt.plugins.hook_registry import HookRegistry, HookType

            from fa.queue import _PENDING


            def register():
                from fa import hooks  # noqa: F401  (fills _PENDING)

                for target, hook in _PENDING:
                    HookRegistry.register(target, hook, HookType.AROUND)
            """,
        "fa/queue.py": "_PENDING = []\n",
        "fa/hooks.py": "import functools\n\nfrom fa.queue import _PENDING\n\nTARGET = 'sglang.srt.layers.sampler.Sampler.forward'\n\n"
                       + QUEUED[spelling].replace("\n        ", "\n").format(params=PARAMS[fit]),
    }, name=f"{spelling}-{fit}")
    code, doc = check(root, old)
    hooks = [f for f in doc["findings"] if f["kind"] == "hook"]
    assert [h["target"] for h in hooks] == ["sglang.srt.layers.sampler.Sampler.forward"], hooks
    _judged(hooks[0], fit, code)



# hooks queued per HookType name in a grouped registry, registered `HookType[kind]` in a loop over
# its items(): a defaultdict(list) edited `Q[k].append(v)` / `.extend([v])`, or a dict edited
# `Q.setdefault(k, []).append(v)`
GROUPED = {
    "defaultdict_decorator_factory": ("collections.defaultdict(list)", """
        def around(target):
            def deco(fn):
                _PENDING["AROUND"].append((target, fn))
                return fn
            return deco


        @around(TARGET)
        def _forward({params}):
            return original_fn(self, logits)
        """),
    "setdefault_registering_call": ("{}", """
        def queue(kind, target, fn):
            _PENDING.setdefault(kind, []).append((target, fn))


        def _forward({params}):
            return original_fn(self, logits)


        queue("AROUND", TARGET, _forward)
        """),
    "defaultdict_extend_in_a_loop": ("collections.defaultdict(list)", """
        def _forward({params}):
            return original_fn(self, logits)


        def _queue_all():
            for kind, target, fn in (("AROUND", TARGET, _forward),):
                _PENDING[kind].extend([(target, fn)])


        _queue_all()
        """),
}


@pytest.mark.parametrize("fit", sorted(PARAMS))
@pytest.mark.parametrize("spelling", sorted(GROUPED))
def test_a_hook_queued_under_its_kind_in_a_grouped_registry_is_judged(upstreams, tmp_path, spelling, fit):
    old, _ = upstreams
    made, code_text = GROUPED[spelling]
    root = plugin(tmp_path, {
        "pyproject.toml": pyproject(plugins={"fa": "fa:register"}),
        "fa/__init__.py": """
            from sglang.srt.plugins.hook_registry import HookRegistry, HookType

            from fa.queue import _PENDING


            def register():
                from fa import hooks  # noqa: F401  (fills _PENDING)

                for kind, entries in _PENDING.items():
                    for target, hook in entries:
                        HookRegistry.register(target, hook, HookType[kind])
            """,
        "fa/queue.py": f"import collections\n\n_PENDING = {made}\n",
        # the module path built with a str method: a string, never a (module, kernel) key
        "fa/hooks.py": "from fa.queue import _PENDING\n\nTARGET = ''.join(['sglang.srt.layers.', 'sampler']) + '.Sampler.forward'\n\n"
                       + code_text.replace("\n        ", "\n").format(params=PARAMS[fit]),
    }, name=f"{spelling}-{fit}")
    code, doc = check(root, old)
    assert not [f for f in doc["findings"] if f["kind"] == "kernel"], doc["findings"]
    hooks = [f for f in doc["findings"] if f["kind"] == "hook"]
    assert [h["target"] for h in hooks] == ["sglang.srt.layers.sampler.Sampler.forward"], hooks
    _judged(hooks[0], fit, code)

# a table of hook specs spread into register(): keyword dicts (a literal, dict(...)) with `**`,
# NamedTuple records or tuples with `*` (F16 variant z1, F06 variant z1)
SPREADS = {
    "dict_literals": ('SPECS = [{"target": TARGET, "hook": hook, "hook_type": HookType.AROUND}]', "HookRegistry.register(**spec)"),
    "dict_calls": ("SPECS = [dict(target=TARGET, hook=hook, hook_type=HookType.AROUND)]", "HookRegistry.register(**spec)"),
    "named_tuples": ("class Spec(NamedTuple):\n    target: str\n    hook: Callable\n    hook_type: HookType\n\n\n"
                     "SPECS = (Spec(TARGET, hook, HookType.AROUND),)", "HookRegistry.register(*spec)"),
    "tuple_and_keyword": ("SPECS = [(TARGET, hook)]", "HookRegistry.register(*spec, hook_type=HookType.AROUND)"),
}


@pytest.mark.parametrize("fit", sorted(PARAMS))
@pytest.mark.parametrize("spelling", sorted(SPREADS))
def test_a_hook_spec_spread_into_register_is_judged(upstreams, tmp_path, spelling, fit):
    old, _ = upstreams
    table, registration = SPREADS[spelling]
    root = plugin(tmp_path, {
        "pyproject.toml": pyproject(plugins={"fa": "fa:register"}),
        "fa/__init__.py": ("from typing import Callable, NamedTuple\n\nfrom sglang.srt.plugins.hook_registry import HookRegistry, HookType\n\n"
                           "TARGET = 'sglang.srt.layers.sampler.Sampler.forward'\n\n\n"
                           f"def hook({PARAMS[fit]}):\n    return original_fn(self, logits)\n\n\n{table}\n\n\n"
                           f"def register():\n    for spec in SPECS:\n        {registration}\n"),
    }, name=f"{spelling}-{fit}")
    code, doc = check(root, old)
    hooks = [f for f in doc["findings"] if f["kind"] == "hook"]
    assert [(h["target"], h["hook_type"]) for h in hooks] == [("sglang.srt.layers.sampler.Sampler.forward", "AROUND")], hooks
    _judged(hooks[0], fit, code)


# fourteenth held-out set (F27-n2, F30-n1, F34-n1): the hook an installer registers from what it
# keeps — an instance a classmethod factory builds, a table `__init__` stores on self and a method
# loops over, a table a helper takes by default — with the hook type named by the member's name
INSTALLERS = {
    "classmethod_factory_in_a_dict": (
        "class Hook:\n    def __init__(self, cfg=None):\n        self.cfg = cfg\n\n    @classmethod\n    def from_env(cls):\n"
        "        return cls(os.environ.get('FA_CFG', ''))\n\n    def __call__(hook_self, {params}):\n        return original_fn(self, logits)\n\n\n"
        "def _table():\n    return {{TARGET: Hook.from_env()}}\n\n\n"
        "def register():\n    for target, hook in _table().items():\n        HookRegistry.register(target, hook, HookType.AROUND)\n"),
    "table_kept_on_self": (
        "@dataclasses.dataclass(frozen=True)\nclass Hook:\n    on: bool = False\n\n    @classmethod\n    def from_env(cls):\n"
        "        return cls(on=os.environ.get('FA_ON') == '1')\n\n    def __call__(hook_self, {params}):\n        return original_fn(self, logits)\n\n\n"
        "class Installer:\n    def __init__(self):\n        self.table = {{TARGET: (Hook.from_env(), HookType.AROUND)}}\n\n"
        "    def install(self):\n        for target, (hook, kind) in self.table.items():\n            HookRegistry.register(target, hook, kind)\n\n\n"
        "def register():\n    Installer().install()\n"),
    "default_table_by_member_name": (
        "class Spec(typing.NamedTuple):\n    target: str\n    fn: object\n    kind: str\n\n\n"
        "def hook({params}):\n    return original_fn(self, logits)\n\n\nTABLE = (Spec(TARGET, hook, 'AROUND'),)\n\n\n"
        "def install_all(table=TABLE):\n    for spec in table:\n        HookRegistry.register(spec.target, spec.fn, HookType[spec.kind])\n\n\n"
        "def register():\n    install_all()\n"),
}


@pytest.mark.parametrize("fit", sorted(PARAMS))
@pytest.mark.parametrize("spelling", sorted(INSTALLERS))
def test_a_hook_an_installer_keeps_is_judged(upstreams, tmp_path, spelling, fit):
    old, _ = upstreams
    root = plugin(tmp_path, {
        "pyproject.toml": pyproject(plugins={"fa": "fa.hooks:register"}),
        "fa/__init__.py": "",
        "fa/hooks.py": ("import dataclasses\nimport os\nimport typing\n\nfrom sglang.srt.plugins.hook_registry import HookRegistry, HookType\n\n"
                        "TARGET = 'sglang.srt.layers.sampler.Sampler.forward'\n\n\n" + INSTALLERS[spelling].format(params=PARAMS[fit])),
    }, name=f"{spelling}-{fit}")
    code, doc = check(root, old)
    hook = next(f for f in doc["findings"] if f["kind"] == "hook")
    assert hook["hook_type"] == "AROUND", hook
    _judged(hook, fit, code)


# a late patch applied from a table of specs by a method the installer calls per spec (fourteenth
# set F32-n2): `sys.modules[spec.module]` under suppress(KeyError), `setattr(mod, spec.attr, …)`,
# the spec a dataclass copy (dataclasses.replace), a NamedTuple copy (`_replace`) or a plain tuple
LATE_SPECS = {
    "dataclass_replace": ("@dataclasses.dataclass(frozen=True)\nclass Spec:\n    module: str\n    attr: str\n    fn: object\n\n\n"
                          "_BASE = Spec(module=LAYERS + '.{mod}', attr='', fn=_keep)\nSPECS = (dataclasses.replace(_BASE, attr='{attr}'),)\n", "spec"),
    "namedtuple_replace": ("class Spec(typing.NamedTuple):\n    module: str\n    attr: str\n    fn: object\n\n\n"
                           "SPECS = [Spec(LAYERS + '.{mod}', '', _keep)._replace(attr='{attr}')]\n", "spec"),
    "plain_tuples": ("SPECS = ((LAYERS + '.{mod}', '{attr}', _keep),)\n", "tuple"),
}


@pytest.mark.parametrize("target", ["gone", "kept"])
@pytest.mark.parametrize("spelling", sorted(LATE_SPECS))
def test_a_late_patch_from_a_spec_table_is_a_dependency(upstreams, tmp_path, spelling, target):
    old, new = upstreams
    mod, attr = ("torchao_utils", "apply_torchao_config_to_model") if target == "gone" else ("attention.attention_registry", "register_attention_backend")
    table, form = LATE_SPECS[spelling]
    apply = ("    def _apply_one(self, spec):\n        with contextlib.suppress(KeyError):\n            module = sys.modules[spec.module]\n"
             "            setattr(module, spec.attr, spec.fn)\n" if form == "spec" else
             "    def _apply_one(self, spec):\n        name, attr, fn = spec\n        with contextlib.suppress(KeyError):\n"
             "            setattr(sys.modules[name], attr, fn)\n")
    root = plugin(tmp_path, {"pyproject.toml": pyproject(plugins={"lp": "lp:register"}), "lp/__init__.py": (
        "import contextlib\nimport dataclasses\nimport sys\nimport typing\n\nLAYERS = 'sglang.srt.layers'\n\n\n"
        "def _keep(model, *args, **kwargs):\n    return model\n\n\n" + table.format(mod=mod, attr=attr)
        + "\n\nclass LatePatcher:\n    def __init__(self, specs):\n        self.specs = tuple(specs)\n\n" + apply
        + "\n    def run(self):\n        for spec in self.specs:\n            self._apply_one(spec)\n\n\n"
        "def register():\n    LatePatcher(SPECS).run()\n")}, name=f"{spelling}-{target}")
    path = f"sglang.srt.layers.{mod}.{attr}"
    for upstream, status in ((old, "ok"), (new, "missing" if target == "gone" else "ok")):
        code, doc = check(root, upstream)
        patches = [f for f in doc["findings"] if f["kind"] == "patch" and f["target"] == path]
        assert patches and all(f["status"] == status and not f["breaking"] for f in patches) and code == 0, doc["findings"]


# "module:Qual.name" specs applied to loaded modules: the owner is the module or an attribute of
# it, chosen by whether the qualified name has a dot (fifteenth set F32-m2); each spelling of that
# choice folds per spec: a conditional expression over operator.attrgetter or getattr, or a loop
OWNERS = {
    "attrgetter_if_dotted": "    owner = operator.attrgetter(owner_path)(module) if owner_path else module\n",
    "getattr_if_dotted": "    owner = getattr(module, owner_path) if owner_path else module\n",
    "getattr_loop": "    owner = module\n    for part in filter(None, owner_path.split('.')):\n        owner = getattr(owner, part)\n",
}


@pytest.mark.parametrize("spelling", sorted(OWNERS))
def test_a_patch_of_a_module_colon_qualname_spec_reaches_its_owner(upstreams, tmp_path, spelling):
    old, new = upstreams
    root = plugin(tmp_path, {"pyproject.toml": pyproject(plugins={"lp": "lp:register"}), "lp/__init__.py": (
        "import itertools\nimport operator\nimport sys\n\n\ndef _keep(*args, **kwargs):\n    return None\n\n\n"
        "_A = (('sglang.srt.layers.sampler:Sampler.forward', _keep),)\n"
        "_B = (('sglang.srt.layers.torchao_utils:apply_torchao_config_to_model', _keep),)\n\n\n"
        "def _apply(spec, replacement):\n    module_name, _, qualname = spec.partition(':')\n"
        "    module = sys.modules.get(module_name)\n    if module is None:\n        return False\n"
        "    owner_path, _, attr = qualname.rpartition('.')\n" + OWNERS[spelling]
        + "    setattr(owner, attr, replacement)\n    return True\n\n\n"
        "def register():\n    return [spec for spec, fn in itertools.chain(_A, _B) if _apply(spec, fn)]\n")}, name=spelling)
    code, doc = check(root, new)
    patches = {f["target"]: f["status"] for f in doc["findings"] if f["kind"] == "patch"}
    assert patches == {"sglang.srt.layers.sampler.Sampler.forward": "ok",
                       "sglang.srt.layers.torchao_utils.apply_torchao_config_to_model": "missing"}, doc["findings"]


# A factory returning one of its closures by what a run gives (the twentieth held-out set,
# F30-f2): either may be the hook, so each is judged, a narrow one breaking under the choice; a
# test the factory's arguments decide picks the one it returns.
CHOOSERS = {
    "conditional_expression": "    return _first if options.get('fast') else _second\n",
    "if_then_return": "    if options.get('fast'):\n        return _first\n    return _second\n",
    "if_else_returns": "    if not options.get('fast'):\n        return _second\n    else:\n        return _first\n",
    "table_of_closures": "    return {True: _first, False: _second}[bool(options.get('fast'))]\n",
    "and_or": "    return options.get('fast') and _first or _second\n",
}
CHOSEN = ("import os\n\nfrom sglang.srt.plugins.hook_registry import HookRegistry, HookType\n\n\n"
          "def make(**options):\n    def _first(original_fn, self, logits, *args, **kwargs):\n        return original_fn(self, logits, *args, **kwargs)\n\n"
          "    def _second({second}):\n        return original_fn(self)\n\n{chooser}\n\n"
          "def register():\n    HookRegistry.register(target='sglang.srt.layers.sampler.Sampler.forward', hook=make(**{options}), hook_type=HookType.AROUND)\n")


@pytest.mark.parametrize("second,options,fit", [
    ("original_fn, self", "{'fast': os.environ.get('FA_FAST') == '1'}", "narrow"),
    ("original_fn, self, logits, *args, **kwargs", "{'fast': os.environ.get('FA_FAST') == '1'}", "fits"),
    ("original_fn, self", "{'fast': True}", "fits"),
])
@pytest.mark.parametrize("chooser", sorted(CHOOSERS))
def test_each_closure_a_factory_may_return_is_judged(upstreams, tmp_path, chooser, second, options, fit):
    old, _ = upstreams
    source = CHOSEN.format(second=second, chooser=CHOOSERS[chooser], options=options)
    root = plugin(tmp_path, {"pyproject.toml": pyproject(plugins={"fa": "fa:register"}), "fa/__init__.py": source})
    code, doc = check(root, old)
    hooks = [f for f in doc["findings"] if f["kind"] == "hook"]
    narrow = [f for f in hooks if f["status"] != "ok"]
    _judged(narrow[0] if narrow else hooks[0], fit, code)
    if fit == "narrow":
        assert "_second" in narrow[0]["detail"], narrow


# `isinstance(m, ModuleType)` (or `inspect.ismodule(m)`) of `m = sys.modules.get(M)`: true exactly where M is loaded (the
# default is None), as `m is not None` is: a patch after it is skipped where M is gone.
LOADED_TESTS = {
    "continue_unless_a_module": "        if not isinstance(module, ModuleType):\n            continue\n        setattr(module, attr, fn)\n",
    "patch_under_the_test": "        if isinstance(module, types.ModuleType):\n            setattr(module, attr, fn)\n",
    "early_return": "        if not isinstance(module, ModuleType):\n            return\n        setattr(module, attr, fn)\n",
    "inspect_ismodule": "        if inspect.ismodule(module):\n            setattr(module, attr, fn)\n",
}


@pytest.mark.parametrize("spelling", sorted(LOADED_TESTS))
def test_a_module_type_test_of_a_loaded_module_guards_its_patch(upstreams, tmp_path, spelling):
    old, new = upstreams
    source = ("import inspect\nimport sys\nimport types\nfrom types import ModuleType\n\n\ndef _skip(model, torchao_config, filter_fn=None):\n    return model\n\n\n"
              "PATCHES = (('sglang.srt.layers.torchao_utils', 'apply_torchao_config_to_model', _skip),)\n\n\n"
              "def register():\n    for name, attr, fn in PATCHES:\n        module = sys.modules.get(name)\n" + LOADED_TESTS[spelling])
    root = plugin(tmp_path, {"pyproject.toml": pyproject(plugins={"sm": "sm:register"}), "sm/__init__.py": source})
    results = []
    for upstream in (old, new):
        code, doc = check(root, upstream)
        patch = next(f for f in doc["findings"] if f["kind"] == "patch")
        results.append((code, patch["status"], patch["breaking"]))
    assert results == [(0, "ok", False), (0, "missing", False)], results


# the factory a method of a plugin OBJECT, whichever object it is: every object of the class runs
# the class's method (an enum member looked up by a run-time value, a construction, a local
# bound once to one)
OBJECT_FACTORIES = {
    "enum_member_by_value": ("class Mode(enum.Enum):\n    NATIVE = 'native'\n    GREEDY = 'greedy'\n",
                             "HookRegistry.register(TARGET, Mode(os.environ.get('MODE', 'native')).sampler_forward(), HookType.AROUND)"),
    "enum_member_by_name_in_a_local": ("class Mode(enum.Enum):\n    NATIVE = 'native'\n    GREEDY = 'greedy'\n",
                                       "mode = Mode[os.environ['MODE'].upper()]\n    HookRegistry.register(TARGET, mode.sampler_forward(), HookType.AROUND)"),
    "constructed_with_run_time_data": ("class Mode:\n    def __init__(self, name):\n        self.name = name\n",
                                       "HookRegistry.register(TARGET, hook=Mode(os.environ.get('MODE')).sampler_forward(), hook_type=HookType.AROUND)"),
    # a module global made once, annotated with the base whose method the subclass overrides
    # (twenty-eighth set F30-h2): the object's own class's method
    "module_global_typed_as_its_base": ("class Base:\n    def sampler_forward(self):\n        raise NotImplementedError\n\n\nclass Mode(Base):\n",
                                        "HookRegistry.register(TARGET, POLICY.sampler_forward(), HookType.AROUND)\n\n\nPOLICY: Base = Mode()"),
}


@pytest.mark.parametrize("spelling", sorted(OBJECT_FACTORIES))
@pytest.mark.parametrize("params, fits", [("original_fn, sampler, logits, *args, **kwargs", True), ("original_fn, sampler", False)])
def test_a_hook_made_by_a_method_of_a_plugin_object_is_the_closure_it_returns(upstreams, tmp_path, spelling, params, fits):
    old, _ = upstreams
    header, call = OBJECT_FACTORIES[spelling]
    root = plugin(tmp_path, {
        "pyproject.toml": pyproject(plugins={"of": "of:register"}),
        "of/__init__.py": "import enum\nimport os\n\nfrom sglang.srt.plugins.hook_registry import HookRegistry, HookType\n\n"
                          "TARGET = 'sglang.srt.layers.sampler.Sampler.forward'\n\n\n"
                          f"{header}\n    def sampler_forward(self):\n        def _forward({params}):\n"
                          "            return original_fn(sampler)\n\n        return _forward\n\n\n"
                          f"def register():\n    {call}\n",
    })
    code, doc = check(root, old)
    hook = [f for f in doc["findings"] if f["kind"] == "hook"]
    assert len(hook) == 1 and hook[0]["status"] == ("ok" if fits else "signature_changed") and code == (0 if fits else 1), hook


# an entry point's parameters hold their defaults: the engine calls it with no arguments
DEFAULTED_ENTRY_POINTS = {
    "positional_default": "def register(make_hook=make_sampler_hook):\n    HookRegistry.register(TARGET, make_hook(64), HookType.AROUND)\n",
    "keyword_only_default": "def register(*, factory=make_sampler_hook, cap=64):\n    HookRegistry.register(TARGET, factory(cap), HookType.AROUND)\n",
    "a_tuple_of_factories": ("def register(factories=(make_sampler_hook,)):\n    for make in factories:\n"
                             "        HookRegistry.register(TARGET, make(64), HookType.AROUND)\n"),
}


@pytest.mark.parametrize("spelling", sorted(DEFAULTED_ENTRY_POINTS))
@pytest.mark.parametrize("params, fits", [("original_fn, sampler, logits, *args, **kwargs", True), ("original_fn, sampler", False)])
def test_a_factory_an_entry_point_takes_by_default_makes_the_hook(upstreams, tmp_path, spelling, params, fits):
    old, _ = upstreams
    root = plugin(tmp_path, {
        "pyproject.toml": pyproject(plugins={"de": "de:register"}),
        "de/__init__.py": "from sglang.srt.plugins.hook_registry import HookRegistry, HookType\n\n"
                          "TARGET = 'sglang.srt.layers.sampler.Sampler.forward'\n\n\n"
                          f"def make_sampler_hook(cap):\n    def _forward({params}):\n        return original_fn(sampler)\n\n    return _forward\n\n\n"
                          + DEFAULTED_ENTRY_POINTS[spelling],
    })
    code, doc = check(root, old)
    hook = [f for f in doc["findings"] if f["kind"] == "hook"]
    assert len(hook) == 1 and hook[0]["status"] == ("ok" if fits else "signature_changed") and code == (0 if fits else 1), hook


@pytest.mark.parametrize("params, fits", [("original_fn, sampler, logits, *args, **kwargs", True), ("original_fn, sampler", False)])
def test_a_hook_each_subclass_statement_registers_reads_the_subclasss_attributes(upstreams, tmp_path, params, fits):
    """`__init_subclass__(cls)` registers `cls.hook` on `cls.target` (twenty-eighth set F16-h2):
    the base's own empty target is never registered, each subclass's is."""
    old, _ = upstreams
    source = ("from sglang.srt.plugins.hook_registry import HookRegistry, HookType\n\n\n"
              "class Patch:\n    owner = 'sglang.srt.layers.sampler:Sampler'\n    method = ''\n    kind = HookType.AFTER\n\n"
              "    def __init_subclass__(cls, **kwargs):\n        super().__init_subclass__(**kwargs)\n"
              "        HookRegistry.register(f'{cls.owner}.{cls.method}', cls.hook, cls.kind)\n\n\n"
              f"class ForwardPatch(Patch):\n    method = 'forward'\n    kind = HookType.AROUND\n\n    @staticmethod\n    def hook({params}):\n"
              "        return original_fn(sampler)\n\n\ndef register():\n    pass\n")
    root = plugin(tmp_path, {"pyproject.toml": pyproject(plugins={"sp": "sp:register"}), "sp/__init__.py": source})
    code, doc = check(root, old)
    hooks = [(f["target"].replace(":", "."), f["status"]) for f in doc["findings"] if f["kind"] == "hook"]
    assert hooks == [("sglang.srt.layers.sampler.Sampler.forward", "ok" if fits else "signature_changed")] and code == (0 if fits else 1), doc["findings"]


# the factory's hook kept in a module global that a setup function fills through `global`, and
# registered by that global's name after the setup ran (twenty-ninth set F30-i1): the module binds
# None only as a placeholder; the hook is what the setup function sets
GLOBAL_SETTERS = {
    "annotated_placeholder": ("_HOOK: Optional[Callable] = None",
                              "    global _HOOK\n    greedy = os.environ.get('FA_GREEDY', '1') == '1'\n    _HOOK = {factory}(greedy)"),
    "plain_placeholder_keyword": ("_HOOK = None",
                                  "    global _HOOK\n    every = int(os.environ.get('FA_EVERY', '0'))\n    _HOOK = {factory}(config=every)"),
    "partial_of_the_factory": ("_HOOK = None  # set by _setup()",
                               "    global _HOOK\n    build = functools.partial({factory}, None)\n    _HOOK = build()"),
}


@pytest.mark.parametrize("factory", ["make_hook", "make_bad_hook"])
@pytest.mark.parametrize("spelling", sorted(GLOBAL_SETTERS))
def test_a_hook_a_setup_function_keeps_in_a_global_is_what_it_sets(upstreams, tmp_path, spelling, factory):
    old, _ = upstreams
    placeholder, setter = GLOBAL_SETTERS[spelling]
    root = plugin(tmp_path, {
        "pyproject.toml": pyproject(plugins={"fa": "fa:register"}),
        "fa/__init__.py": f"""import functools
import os
from typing import Callable, Optional

from sglang.srt.plugins.hook_registry import HookRegistry, HookType

{placeholder}


def make_hook(config=None):
    def _forward(original_fn, self, logits, *args, **kwargs):
        return original_fn(self, logits, *args, **kwargs)

    return _forward


def make_bad_hook(config=None):
    def _too_narrow(original_fn, self):
        return original_fn(self)

    return _too_narrow


def _setup():
{setter.format(factory=factory)}


def register():
    _setup()
    HookRegistry.register("sglang.srt.layers.sampler.Sampler.forward", _HOOK, HookType.AROUND)
""",
    })
    code, doc = check(root, old)
    hook = next(f for f in doc["findings"] if f["kind"] == "hook")
    if factory == "make_hook":
        assert hook["status"] == "ok" and code == 0, hook
    else:
        assert hook["status"] == "signature_changed" and "_too_narrow" in hook["detail"] and hook["breaking"] and code == 1, hook


# the factory defines the hook under one name in both branches of an `if` on its parameter and
# returns that name (twenty-ninth set F30-i2): either def may be the hook, the run decides
BRANCHED = {
    "if_else_then_return": ("    if trace:\n{narrow}\n    else:\n{wide}\n    return _forward\n"),
    "negated_test_wrapped": ("    if not trace:\n{wide}\n    else:\n{narrow}\n    _forward.__doc__ = 'device sampler'\n    return _forward\n"),
    "wraps_decorated": ("    if trace:\n        @functools.wraps(make_hook)\n{narrow}\n    else:\n        @functools.wraps(make_hook)\n{wide}\n    return _forward\n"),
}
NARROW = "        def _forward(original_fn, self):\n            return original_fn(self)"
WIDE = "        def _forward(original_fn, self, logits, *args, **kwargs):\n            return original_fn(self, logits, *args, **kwargs)"


@pytest.mark.parametrize("narrow", [True, False])
@pytest.mark.parametrize("spelling", sorted(BRANCHED))
def test_a_hook_a_factory_defines_in_either_branch_is_judged_per_branch(upstreams, tmp_path, spelling, narrow):
    old, _ = upstreams
    body = BRANCHED[spelling].format(narrow=NARROW if narrow else WIDE, wide=WIDE)
    root = plugin(tmp_path, {
        "pyproject.toml": pyproject(plugins={"fa": "fa:register"}),
        "fa/__init__.py": f"""import functools
import os

from sglang.srt.plugins.hook_registry import HookRegistry, HookType


def make_hook(trace):
{body}

def register():
    trace = os.environ.get("FA_TRACE") == "1"
    HookRegistry.register("sglang.srt.layers.sampler.Sampler.forward", make_hook(trace), HookType.AROUND)
""",
    })
    code, doc = check(root, old)
    broken = [f for f in doc["findings"] if f["kind"] == "hook" and f["breaking"]]
    if narrow:
        assert len(broken) == 1 and broken[0]["status"] == "signature_changed" and code == 1, doc["findings"]
    else:
        assert not broken and code == 0, broken


# a generator function yields (target, hook) pairs, each hook a def of its own body, and a loop
# registers them (thirty-second set F30-m2): each hook is the def the generator yields, judged
# against its target, as a closure a factory returns
YIELDED_DEFS = {
    "def_per_target_in_a_loop": ("def _around_hooks(targets):\n    for target in targets:\n"
                                 "        def _hook({params}):\n            return original_fn(self, *args)\n\n"
                                 "        yield target, _hook\n"),
    "defs_then_yields": ("def _around_hooks(targets):\n    def _forward({params}):\n        return original_fn(self, *args)\n\n"
                         "    def _batch(original_fn, self, *args, **kwargs):\n        return original_fn(self, *args)\n\n"
                         "    yield targets[0], _forward\n    yield targets[1], _batch\n"),
    "yield_from_pairs": ("def _around_hooks(targets):\n    def _hook({params}):\n        return original_fn(self, *args)\n\n"
                         "    yield from [(target, _hook) for target in targets]\n"),
    "a_generator_method_of_an_object": ("class _Hooks:\n    def around(self, targets):\n        for target in targets:\n"
                                        "            def _hook({params}):\n                return original_fn(self, *args)\n\n"
                                        "            yield target, _hook\n\n\ndef _around_hooks(targets):\n    return _Hooks().around(targets)\n"),
}


@pytest.mark.parametrize("fits", [True, False])
@pytest.mark.parametrize("spelling", sorted(YIELDED_DEFS))
def test_a_hook_a_generator_yields_as_its_own_def_is_judged(upstreams, tmp_path, spelling, fits):
    old, _ = upstreams
    params = "original_fn, self, *args, **kwargs" if fits else "original_fn, self"
    root = plugin(tmp_path, {
        "pyproject.toml": pyproject(plugins={"gy": "gy:register"}),
        "gy/__init__.py": "from sglang.srt.plugins.hook_registry import HookRegistry, HookType\n\n"
                          "TARGETS = ('sglang.srt.layers.sampler.Sampler.forward', 'sglang.srt.managers.scheduler.Scheduler.get_next_batch')\n\n\n"
                          + YIELDED_DEFS[spelling].format(params=params) + "\n\n"
                          "def register():\n    for target, hook in _around_hooks(TARGETS):\n"
                          "        HookRegistry.register(target, hook, HookType.AROUND)\n",
    })
    code, doc = check(root, old)
    hooks = sorted((f["target"], f["status"]) for f in doc["findings"] if f["kind"] == "hook")
    expected = [("sglang.srt.layers.sampler.Sampler.forward", "ok" if fits else "signature_changed"),
                ("sglang.srt.managers.scheduler.Scheduler.get_next_batch", "ok")]
    assert sorted(set(hooks)) == expected and code == (0 if fits else 1), doc["findings"]


# a classmethod registered as a REPLACE hook after travelling through a table or a name
# (thirty-third set F27-n2): read off its class it is bound, so `cls` is no parameter the
# wrapper's call must fill
CLASSMETHOD_HOOKS = {
    "table_value_in_a_loop": ("_REPLACEMENTS = {TARGET: Picker.pick}\n\n\ndef register():\n"
                              "    for target, fn in _REPLACEMENTS.items():\n        HookRegistry.register(target, fn, hook_type=HookType.REPLACE)\n"),
    "module_alias": "_pick = Picker.pick\n\n\ndef register():\n    HookRegistry.register(TARGET, _pick, HookType.REPLACE)\n",
    "list_of_pairs": ("HOOKS = [(TARGET, Picker.pick)]\n\n\ndef register():\n"
                      "    for target, fn in HOOKS:\n        HookRegistry.register(target, fn, HookType.REPLACE)\n"),
}


@pytest.mark.parametrize("fits", [True, False])
@pytest.mark.parametrize("spelling", sorted(CLASSMETHOD_HOOKS))
def test_a_classmethod_hook_is_bound_to_its_class(upstreams, tmp_path, spelling, fits):
    old, _ = upstreams
    params = "cls, model, torchao_config, filter_fn=None" if fits else "cls, model"
    root = plugin(tmp_path, {
        "pyproject.toml": pyproject(plugins={"cm": "cm:register"}),
        "cm/__init__.py": "from sglang.srt.plugins.hook_registry import HookRegistry, HookType\n\n"
                          "TARGET = 'sglang.srt.layers.torchao_utils.apply_torchao_config_to_model'\n\n\n"
                          f"class Picker:\n    @classmethod\n    def pick({params}):\n        return model\n\n\n"
                          + CLASSMETHOD_HOOKS[spelling],
    })
    code, doc = check(root, old)
    hook = [f for f in doc["findings"] if f["kind"] == "hook"]
    # (nothing in this upstream calls the target: a hook too narrow is reported, not certain to fail)
    assert len(hook) == 1 and hook[0]["status"] == ("ok" if fits else "signature_changed") and code == 0, hook


# a hook an object keeps from its construction and registers from a method guarded by a flag the
# method sets after registering (set 34 F30-p2): called on the construction itself, the method
# starts from what `__init__` set (the flag off), so the hook is registered and judged; the flag
# set later in the method does not decide the test before it
ONCE = {
    "return_when_installed": ("        if self.installed:\n            return\n        {register}\n        self.installed = True\n"),
    "register_inside_not_applied": ("        if not self.installed:\n            {register}\n            self.installed = True\n"),
    "assert_not_installed": ("        assert not self.installed, 'install once'\n        {register}\n        self.installed = True\n"),
}


@pytest.mark.parametrize("fit", sorted(PARAMS))
@pytest.mark.parametrize("spelling", sorted(ONCE))
def test_a_hook_kept_on_an_object_and_registered_once_is_judged(upstreams, tmp_path, spelling, fit):
    old, _ = upstreams
    method = ONCE[spelling].format(register="HookRegistry.register(TARGET, self.hook, HookType.AROUND)")
    root = plugin(tmp_path, {
        "pyproject.toml": pyproject(plugins={"fa": "fa.hooks:register"}),
        "fa/__init__.py": "",
        "fa/hooks.py": ("import os\n\nfrom sglang.srt.plugins.hook_registry import HookRegistry, HookType\n\n"
                        "TARGET = 'sglang.srt.layers.sampler.Sampler.forward'\n\n\n"
                        f"def make_hook(cfg):\n    def hook({PARAMS[fit]}):\n        return original_fn(self, logits)\n    return hook\n\n\n"
                        "class Plugin:\n    def __init__(self, cfg):\n        self.hook = make_hook(cfg)\n        self.installed = False\n\n"
                        f"    def install(self):\n{method}\n\n"
                        "def register():\n    Plugin(os.environ.get('FA_CFG')).install()\n"),
    }, name=f"{spelling}-{fit}")
    code, doc = check(root, old)
    hook = next(f for f in doc["findings"] if f["kind"] == "hook")
    _judged(hook, fit, code)
