"""Three kinds of fault the judge missed in variants of field cases F27, F30 and F10, each
stated as a general rule and checked here however the plugin (or the shim upstream) spells it:

1. `*args` takes a base parameter only by position (F27-v4: `lambda *args: …` as the REPLACE
   hook of filter_duplicate_safetensors_files, whose caller at 0.5.23 model_loader/loader.py:568
   passes `allow_patterns=`): without **kwargs or a parameter of that name a keyword-passed one
   does not bind, so upstream's calls decide: one passing it by keyword breaks, calls passing
   it only by position do not.
2. A hook that cannot bind even the target's required parameters (F30-v5: the AROUND closure
   `(original_fn, self, logits_output, sampling_info)` for Sampler.forward) fails whichever
   valid call upstream makes: breaking without placing a call site. A hook lacking only an
   optional parameter stays judged by the calls.
3. An override of a method upstream no longer declares but still calls through a deprecation
   shim (F10-v6: 0.5.23 platforms/interface.py SRTPlatform.get_kv_pool_cls, `legacy =
   getattr(self, hook, None)` … `return legacy()`) is bound against the shim's calls: where
   none binds it is signature_changed and breaking, as against the declared method before.

Fixture upstreams (tests/knowledge/kinds_support.py), not a real release."""

from __future__ import annotations

import textwrap

import pytest
from kinds_support import check, plugin, pyproject, upstream_pair
from knowledge_support import by_target

from harness.knowledge.model import Param

HEAD = "import functools\nfrom sglang.srt.plugins.hook_registry import HookRegistry, HookType\n\n\n"


def hook_plugin(tmp_path, name, source):
    return plugin(tmp_path, {"pyproject.toml": pyproject(plugins={"p": "p.hooks:register"}), "p/__init__.py": "", "p/hooks.py": HEAD + source}, name=name)


# --- 1. *args binds only what comes by position ------------------------------------------

FILTER = "sglang.srt.model_loader.weight_utils.filter_files"
UTILS = """
    def filter_files(hf_weights_files, hf_folder, index_file, allow_patterns=None):
        return hf_weights_files
    """


def _loader(call):
    return {
        "sglang/srt/model_loader/__init__.py": "",
        "sglang/srt/model_loader/weight_utils.py": UTILS,
        "sglang/srt/model_loader/loader.py": f"""
            from sglang.srt.model_loader.weight_utils import filter_files


            def load(files, folder, index, patterns):
                return {call}
            """,
    }


@pytest.fixture(scope="module")
def loaders(tmp_path_factory):
    """(a release whose caller passes allow_patterns= by keyword, one whose callers pass it
    only by position)"""
    _, keyword = upstream_pair(tmp_path_factory, new=_loader("filter_files(files, folder, index, allow_patterns=patterns)"))
    _, positional = upstream_pair(tmp_path_factory, new=_loader("filter_files(files, folder, index, patterns) or filter_files(files, folder, index)"))
    return keyword, positional


VARARGS = {
    # (the hooks module, whether it breaks against a keyword call of allow_patterns)
    "lambda": ("def keep(files, folder, index):\n    return files\n\n\n"
               f"def register():\n    HookRegistry.register({FILTER!r}, lambda *args: keep(*args), HookType.REPLACE)\n", True),
    "function": ("def keep(*args):\n    return args[0]\n\n\n"
                 f"def register():\n    HookRegistry.register({FILTER!r}, keep, HookType.REPLACE)\n", True),
    "named_then_varargs": ("def keep(hf_weights_files, *args):\n    return hf_weights_files\n\n\n"
                           f"def register():\n    HookRegistry.register({FILTER!r}, keep, HookType.REPLACE)\n", True),
    "closure_other_keyword": ("def make(strict):\n    def keep(*args, strict=strict):\n        return args[0]\n    return keep\n\n\n"
                              f"def register():\n    HookRegistry.register({FILTER!r}, make(True), HookType.REPLACE)\n", True),
    "after_varargs": ("def keep(result, *args):\n    return result\n\n\n"
                      f"def register():\n    HookRegistry.register({FILTER!r}, keep, HookType.AFTER)\n", True),
    # a positional-only parameter (PEP 570) takes it only by position too (F27 variant w5)
    "positional_only": ("def keep(hf_weights_files, hf_folder, index_file, allow_patterns=None, /):\n    return hf_weights_files\n\n\n"
                        f"def register():\n    HookRegistry.register({FILTER!r}, keep, HookType.REPLACE)\n", True),
    "positional_only_lambda": (f"def register():\n    HookRegistry.register({FILTER!r}, lambda files, folder, index, allow_patterns=None, /: files, "
                               "HookType.REPLACE)\n", True),
    "positional_only_partial": ("def keep(strict, hf_weights_files, hf_folder, index_file, allow_patterns=None, /):\n    return hf_weights_files\n\n\n"
                                f"def register():\n    HookRegistry.register({FILTER!r}, functools.partial(keep, True), HookType.REPLACE)\n", True),
    # negatives: **kwargs, or a parameter of that name, takes the keyword
    "positional_only_varkw": ("def keep(hf_weights_files, hf_folder, index_file, allow_patterns=None, /, **kwargs):\n    return hf_weights_files\n\n\n"
                              f"def register():\n    HookRegistry.register({FILTER!r}, keep, HookType.REPLACE)\n", False),
    "varkw": (f"def register():\n    HookRegistry.register({FILTER!r}, lambda *args, **kwargs: args[0], HookType.REPLACE)\n", False),
    "named_keyword": ("def keep(*args, allow_patterns=None):\n    return args[0]\n\n\n"
                      f"def register():\n    HookRegistry.register({FILTER!r}, keep, HookType.REPLACE)\n", False),
}


def test_varargs_takes_a_base_parameter_only_by_position(loaders, tmp_path):
    keyword, positional = loaders
    for spelling, (source, breaks) in VARARGS.items():
        root = hook_plugin(tmp_path, spelling, source)
        code, doc = check(root, keyword)
        hook = by_target(doc["findings"])[FILTER]
        assert hook["breaking"] is breaks, (spelling, hook)
        if breaks:
            assert hook["status"] == "signature_changed" and "allow_patterns" in hook["detail"] and code == 1, (spelling, hook)
        else:
            assert code == 0, (spelling, hook)
        # calls passing it only by position bind whatever the spelling
        code, doc = check(root, positional)
        hook = by_target(doc["findings"])[FILTER]
        assert hook["breaking"] is False and code == 0, (spelling, hook)


def test_varargs_rule_in_the_signature_comparison():
    from harness.knowledge.judge.signatures import signature_incompatibility

    base = (Param("files", "pos", None), Param("folder", "pos", None), Param("allow_patterns", "pos", "None"))
    for override in ((Param("args", "var", None),),
                     (Param("files", "pos", None), Param("args", "var", None)),
                     (Param("args", "var", None), Param("strict", "kwonly", "False"))):
        problem = signature_incompatibility(base, override)
        assert problem is not None and problem[0] is False and "only by position" in problem[1], override
    for override in ((Param("args", "var", None), Param("kwargs", "varkw", None)),
                     (Param("files", "pos", None), Param("folder", "pos", None), Param("args", "var", None), Param("allow_patterns", "kwonly", "None")),
                     (Param("files", "pos", None), Param("folder", "pos", None), Param("allow_patterns", "pos", "None"))):
        assert signature_incompatibility(base, override) is None, override
    # parameters that always come by position (self, original_fn) go to *args whatever their name
    assert signature_incompatibility((Param("self", "pos", None),), (Param("args", "var", None),), positional_only=1) is None


# --- 2. a hook that cannot take the target's required parameters --------------------------

SAMPLER = "sglang.srt.layers.sampler.Sampler.forward"


@pytest.fixture(scope="module")
def sampler(tmp_path_factory):
    """Sampler.forward called through nn.Module.__call__ (no call site of `forward` to place)
    and by name on a receiver the scan cannot place."""
    _, new = upstream_pair(tmp_path_factory, new={
        "sglang/srt/layers/sampler.py": """
            from torch import nn

            class Sampler(nn.Module):
                def forward(self, logits_output, sampling_info, return_logprob, positions, *, logprob_logits=None):
                    return logits_output
            """,
        "sglang/srt/model_executor/__init__.py": "",
        "sglang/srt/model_executor/model_runner.py": """
            from sglang.srt.layers.sampler import Sampler


            class ModelRunner:
                def __init__(self):
                    self.sampler = Sampler()

                def sample(self, logits, info, positions, extra=None):
                    return self.sampler(logits, info, False, positions, **({"logprob_logits": extra} if extra is not None else {}))


            def run_any(module, *args):
                return module.forward(*args)
            """,
    })
    return new


AROUND = {
    # (the hooks module, "breaking" when no valid call binds it, else "calls": judged by the calls)
    "closure": ("def make(config=None):\n    def around(original_fn, self, logits_output, sampling_info):\n"
                "        return original_fn(self, logits_output, sampling_info)\n    return around\n\n\n"
                f"def register():\n    HookRegistry.register({SAMPLER!r}, make({{}}), HookType.AROUND)\n", "breaking"),
    "function": ("def around(original_fn, self, logits_output):\n    return original_fn(self, logits_output)\n\n\n"
                 f"def register():\n    HookRegistry.register({SAMPLER!r}, around, HookType.AROUND)\n", "breaking"),
    "lambda": (f"def register():\n    HookRegistry.register({SAMPLER!r}, lambda fn, self, lo, si: fn(self, lo, si), HookType.AROUND)\n", "breaking"),
    "required_keyword": ("def around(original_fn, self, logits_output, sampling_info, return_logprob, positions, *, strict):\n    return strict\n\n\n"
                         f"def register():\n    HookRegistry.register({SAMPLER!r}, around, HookType.AROUND)\n", "breaking"),
    # lacking only the optional keyword leaves it to the calls: the one upstream makes passes it on
    # some runs (`**({"logprob_logits": x} if … else {})`), a TypeError on those; a hook that fits is fine
    "lacks_optional": ("def around(original_fn, self, logits_output, sampling_info, return_logprob, positions):\n"
                       "    return original_fn(self, logits_output, sampling_info, return_logprob, positions)\n\n\n"
                       f"def register():\n    HookRegistry.register({SAMPLER!r}, around, HookType.AROUND)\n", "calls"),
    "fits": ("def around(original_fn, self, *args, **kwargs):\n    return original_fn(self, *args, **kwargs)\n\n\n"
             f"def register():\n    HookRegistry.register({SAMPLER!r}, around, HookType.AROUND)\n", "ok"),
}


def test_a_hook_that_cannot_take_the_required_parameters_breaks_without_a_call_site(sampler, tmp_path):
    for spelling, (source, verdict) in AROUND.items():
        code, doc = check(hook_plugin(tmp_path, spelling, source), sampler)
        hook = by_target(doc["findings"])[SAMPLER]
        if verdict == "breaking":
            assert hook["status"] == "signature_changed" and hook["breaking"] is True and code == 1, (spelling, hook)
            # the proof: no valid call binds it, or a call upstream makes (`self.sampler(…)`, which
            # nn.Module.__call__ hands to forward) that does not
            assert ("no call that upstream's own signature accepts binds it" in hook["detail"]
                    or "a TypeError on that path" in hook["detail"]), (spelling, hook)
        elif verdict == "calls":
            assert "no call that upstream's own signature accepts" not in hook["detail"], (spelling, hook)
            assert hook["breaking"] is True and "unexpected keyword argument 'logprob_logits' (on the runs that pass it)" in hook["detail"], (spelling, hook)
        else:
            assert hook["status"] == "ok" and code == 0, (spelling, hook)


def test_binds_no_call_tries_every_valid_call():
    from harness.knowledge.judge.signatures import binds_no_call

    p = Param
    base = (p("original_fn", "pos", None), p("self", "pos", None), p("lo", "pos", None), p("si", "pos", None), p("temp", "kwonly", "1.0"))
    unbindable = [
        (p("fn", "pos", None), p("self", "pos", None), p("lo", "pos", None)),  # too few positionals
        (p("fn", "pos", None), p("self", "pos", None), p("args", "var", None), p("strict", "kwonly", None)),  # a required keyword upstream never passes
        (p("fn", "pos", None), p("self", "pos", None), p("lo", "pos", None), p("si", "pos", None), p("extra", "pos", None)),  # a required extra parameter
    ]
    for hook in unbindable:
        assert binds_no_call(base, hook, positional_only=2) is not None, hook
    bindable = [
        (p("fn", "pos", None), p("self", "pos", None), p("lo", "pos", None), p("si", "pos", None)),  # lacks only the optional keyword
        (p("fn", "pos", None), p("self", "pos", None), p("lo", "pos", None), p("si", "kwonly", None)),  # si= by keyword binds
        (p("fn", "pos", None), p("self", "pos", None), p("lo", "pos", None), p("si", "pos", None), p("temp", "kwonly", None)),  # temp= passed when wanted
        (p("fn", "pos", None), p("args", "var", None)),
    ]
    for hook in bindable:
        assert binds_no_call(base, hook, positional_only=2) is None, hook
    # a base taking *args or **kwargs accepts calls of any shape: not decided
    assert binds_no_call((p("self", "pos", None), p("args", "var", None)), (p("self", "pos", None),), positional_only=1) is None


# --- 3. an override still called through a legacy shim -----------------------------------

SHIMS = {
    # upstream spellings of the shim: the looked-up method called through a name, a walrus, directly
    "table_and_name": """
        _LEGACY = {"mha": "get_mha_kv_pool_cls"}

        class SRTPlatform(DeviceMixin):
            def get_default_attention_backend(self) -> str:
                raise NotImplementedError

            def get_kv_pool_cls(self, *, kind):
                hook = _LEGACY[kind]
                legacy = getattr(self, hook, None)
                if legacy is None:
                    return None
                return legacy()
        """,
    "walrus": """
        _LEGACY = {"mha": "get_mha_kv_pool_cls"}

        class SRTPlatform(DeviceMixin):
            def get_default_attention_backend(self) -> str:
                raise NotImplementedError

            def get_kv_pool_cls(self, *, kind):
                if (legacy := getattr(self, _LEGACY[kind], None)) is not None:
                    return legacy()
                return None
        """,
    "direct": """
        class SRTPlatform(DeviceMixin):
            def get_default_attention_backend(self) -> str:
                raise NotImplementedError

            def get_kv_pool_cls(self, *, kind):
                if kind == "mha" and hasattr(self, "get_mha_kv_pool_cls"):
                    return getattr(self, "get_mha_kv_pool_cls")()
                return None
        """,
}
POOL = "sglang.srt.platforms.interface.SRTPlatform.get_mha_kv_pool_cls"
OVERRIDES = {
    # (the override's parameters, whether the shim's call `legacy()` fails)
    "required": ("self, model_config", True),
    "required_keyword": ("self, *, config", True),
    "required_then_optional": ("self, a, b=None", True),
    "none": ("self", False),
    "optional": ("self, model_config=None", False),
    "any": ("self, *args, **kwargs", False),
}


@pytest.fixture(scope="module")
def shims(tmp_path_factory):
    return {name: upstream_pair(tmp_path_factory, new={
        "sglang/srt/platforms/interface.py": "from sglang.srt.platforms.device_mixin import DeviceMixin\n" + textwrap.dedent(body),
        "sglang/srt/mem_cache/__init__.py": "",
        "sglang/srt/mem_cache/configurator.py": """
            from sglang.srt.platforms import current_platform


            def pool_cls():
                return current_platform.get_kv_pool_cls(kind="mha")
            """,
    })[1] for name, body in SHIMS.items()}


def test_an_override_is_bound_against_the_legacy_shims_call(shims, tmp_path):
    for shim, upstream in shims.items():
        for spelling, (params, breaks) in OVERRIDES.items():
            root = plugin(tmp_path, {
                "pyproject.toml": pyproject(platforms={"leg": "leg:activate"}),
                "leg/__init__.py": f"""
                    from sglang.srt.platforms.interface import SRTPlatform


                    class LegPlatform(SRTPlatform):
                        def get_default_attention_backend(self) -> str:
                            return "torch_native"

                        def get_mha_kv_pool_cls({params}):
                            return object


                    def activate():
                        return "leg:LegPlatform"
                    """,
            }, name=f"{shim}-{spelling}")
            code, doc = check(root, upstream)
            found = by_target(doc["findings"])[POOL]
            if breaks:
                assert found["status"] == "signature_changed" and found["breaking"] is True and code == 1, (shim, spelling, found)
                assert "shim" in found["detail"] and "get_kv_pool_cls" in found["detail"], (shim, spelling, found)
            else:
                assert found["status"] == "deprecated" and found["breaking"] is False and code == 0, (shim, spelling, found)


INSTANCE_HOOKS = {
    # how the platform's __init__ puts the legacy hook on every instance: (the statement, whether the shim's call fails)
    "partial_of_a_method": ('self.get_mha_kv_pool_cls = functools.partial(self._pool_for, "mha")', False),
    "bound_method": ("self.get_mha_kv_pool_cls = self._mha_pool", False),
    "lambda": ("self.get_mha_kv_pool_cls = lambda: object", False),
    "module_function": ("self.get_mha_kv_pool_cls = _mha_pool", False),
    # a partial that leaves the picker's `kind` unbound, a lambda wanting an argument: legacy() fails
    "partial_leaving_a_parameter": ("self.get_mha_kv_pool_cls = functools.partial(self._pool_for)", True),
    "lambda_with_a_parameter": ("self.get_mha_kv_pool_cls = lambda config: object", True),
}


@pytest.mark.parametrize("spelling", sorted(INSTANCE_HOOKS))
def test_a_hook_the_platforms_init_puts_on_the_instance_is_its_override(shims, tmp_path, spelling):
    """F10's kind with the hook bound per instance: `self.m = <function>` in the platform's own
    `__init__` is found before the class attribute and called without self, so the shim's
    `legacy()` calls it (deprecated where it binds, signature_changed where it does not)."""
    statement, breaks = INSTANCE_HOOKS[spelling]
    root = plugin(tmp_path, {
        "pyproject.toml": pyproject(platforms={"leg": "leg:activate"}),
        "leg/__init__.py": f"""
            import functools

            from sglang.srt.platforms.interface import SRTPlatform


            def _mha_pool():
                return object


            class LegPlatform(SRTPlatform):
                def __init__(self):
                    super().__init__()
                    {statement}

                def get_default_attention_backend(self) -> str:
                    return "torch_native"

                def _pool_for(self, kind):
                    return object

                def _mha_pool(self):
                    return object


            def activate():
                return "leg:LegPlatform"
            """,
    }, name=spelling)
    code, doc = check(root, shims["table_and_name"])
    found = by_target(doc["findings"]).get(POOL)
    assert found is not None, (spelling, doc["findings"])
    if breaks:
        assert found["status"] == "signature_changed" and found["breaking"] is True and code == 1, (spelling, found)
    else:
        assert found["status"] == "deprecated" and found["breaking"] is False and code == 0, (spelling, [f for f in doc["findings"] if f["breaking"]])


def test_an_instance_attribute_that_is_not_a_function_is_no_override(shims, tmp_path):
    """What `__init__` sets that is not a function it can read (an upstream call's result, a value
    under a branch) is no override: nothing is said about the legacy hook."""
    root = plugin(tmp_path, {
        "pyproject.toml": pyproject(platforms={"leg": "leg:activate"}),
        "leg/__init__.py": """
            import os

            from sglang.srt.platforms.interface import SRTPlatform


            class LegPlatform(SRTPlatform):
                def __init__(self):
                    super().__init__()
                    self.get_mha_kv_pool_cls = os.environ.get("POOL")
                    if os.environ.get("LEGACY"):
                        self.get_mla_kv_pool_cls = lambda config: object

                def get_default_attention_backend(self) -> str:
                    return "torch_native"


            def activate():
                return "leg:LegPlatform"
            """,
    })
    code, doc = check(root, shims["table_and_name"])
    assert POOL not in by_target(doc["findings"]) and code == 0, doc["findings"]
