"""Values the folder calls (the nineteenth held-out set): a lambda kept in a record field, bound
to a name or called where it is written (`Closure`: its body folded with its parameters bound,
over what it read where it was made); the truth of an immutable folded value (`if (m :=
_module_for(n)):` of a helper returning a name or None, Python's truth testing); a generator
method of a record (`for target, hook in self._hooks():`); an `operator.methodcaller` /
`attrgetter` / `itemgetter` a function binds to a local and then calls. A plugin module
`pd.legacy` imports `sglang.srt.layers.torchao_utils`, which 0.10.0 dropped: where the spelling
imports it on 0.10.0, `check` is red; where it does not, green."""

from __future__ import annotations

import pytest
from kinds_support import judge_legacy, upstream_pair

COMPAT = "from sglang.version import __version__\n\nOLD = __version__ == '0.9.0'\n"


@pytest.fixture(scope="module")
def upstreams(tmp_path_factory):
    return upstream_pair(tmp_path_factory)


RECORD = ("import dataclasses\nimport importlib\nfrom typing import Callable\n\nfrom pd import compat\n\n\n"
          "@dataclasses.dataclass\nclass Backend:\n    module: str\n    enabled: Callable[[], bool] = lambda: True\n\n\n")
LAMBDAS = {
    # (the plugin's __init__, whether pd.legacy is imported on 0.10.0)
    "record_field_lambda_old_only": (RECORD + "BACKENDS = [Backend('pd.legacy', lambda: compat.OLD), Backend('pd.fast')]\n\n\n"
                                     "def register():\n    for b in BACKENDS:\n        if b.enabled():\n            importlib.import_module(b.module)\n", False),
    "record_field_lambda_new_only": (RECORD + "BACKENDS = [Backend('pd.legacy', lambda: not compat.OLD), Backend('pd.fast')]\n\n\n"
                                     "def register():\n    for b in BACKENDS:\n        if b.enabled():\n            importlib.import_module(b.module)\n", True),
    "name_bound_lambda_with_a_parameter": ("import importlib\n\nfrom pd import compat\n\nwanted = lambda name: name != 'legacy' or compat.OLD\n\n\n"
                                           "def register():\n    for n in ('legacy', 'fast'):\n        if wanted(n):\n            importlib.import_module('pd.' + n)\n", False),
    "lambda_called_where_written": ("import importlib\n\nfrom pd import compat\n\n\ndef register():\n"
                                    "    if (lambda: not compat.OLD)():\n        importlib.import_module('pd.legacy')\n", True),
}


@pytest.mark.parametrize("spelling", sorted(LAMBDAS))
def test_a_lambda_is_called_as_its_body(upstreams, tmp_path, spelling):
    """A lambda reading a flag the release decides (`lambda: compat.OLD`): calling it is its body,
    decided the same way, wherever the lambda is kept."""
    source, imported = LAMBDAS[spelling]
    judge_legacy(tmp_path, upstreams[1], source, imported, extra={"pd/compat.py": COMPAT})


HELPER = ("import importlib\nfrom typing import Optional\n\nCONFIG = {'legacy': {'enabled': {on}}, 'fast': {'enabled': True}}\n\n\n"
          "def _module_for(name: str) -> Optional[str]:\n    if not CONFIG[name]['enabled']:\n        return None\n    return 'pd.' + name\n\n\n")
TRUTHS = {
    "walrus_in_a_comprehension": "def register():\n    for m in [m for n in CONFIG if (m := _module_for(n))]:\n        importlib.import_module(m)\n",
    "if_of_the_helper_in_a_loop": "def register():\n    for n in CONFIG:\n        if _module_for(n):\n            importlib.import_module('pd.' + n)\n",
    "conditional_expression": "def register():\n    for n in CONFIG:\n        importlib.import_module(_module_for(n) if _module_for(n) else 'pd.fast')\n",
}


@pytest.mark.parametrize("on", [True, False])
@pytest.mark.parametrize("spelling", sorted(TRUTHS))
def test_a_folded_name_or_none_is_tested_for_its_truth(upstreams, tmp_path, spelling, on):
    """`if (m := _module_for(n)):` where the helper returns a module name or None as a constant
    table says: a name is true, None false (a disabled entry imports nothing)."""
    judge_legacy(tmp_path, upstreams[1], HELPER.replace("{on}", str(on)) + TRUTHS[spelling], on, extra={"pd/compat.py": COMPAT})


GENERATOR = ("import importlib\n\n\nclass Loader:\n    def __init__(self, names):\n        self.names = names\n\n"
             "    def _modules(self):\n{body}\n\n    def load(self):\n        for module in self._modules():\n            importlib.import_module(module)\n\n\n"
             "def register():\n    Loader({names}).load()\n")
GENERATORS = {
    "yield_in_a_loop": "        for name in self.names:\n            yield 'pd.' + name",
    "yield_from_a_comprehension": "        yield from ['pd.' + name for name in self.names]",
    "yields_one_by_one": "        yield 'pd.fast'\n        if 'legacy' in self.names:\n            yield 'pd.legacy'",
}


@pytest.mark.parametrize("names,imported", [("('legacy', 'fast')", True), ("('fast',)", False)])
@pytest.mark.parametrize("spelling", sorted(GENERATORS))
def test_a_generator_method_of_an_object_yields_what_it_is_made_with(upstreams, tmp_path, spelling, names, imported):
    """`for module in self._modules():` of a generator method: what it yields with the fields the
    construction gave."""
    judge_legacy(tmp_path, upstreams[1], GENERATOR.format(body=GENERATORS[spelling], names=names), imported, extra={"pd/compat.py": COMPAT})


GETTERS = {
    "methodcaller": ("import importlib\nimport operator\n\n\nclass Spec:\n    def __init__(self, module):\n        self.module = module\n\n"
                     "    def load(self, reason):\n        importlib.import_module(self.module)\n\n\n"
                     "def register():\n    load = operator.methodcaller('load', 'startup')\n    for spec in (Spec({m!r}),):\n        load(spec)\n"),
    "attrgetter": ("import importlib\nimport operator\n\n\nclass Spec:\n    def __init__(self, module):\n        self.module = module\n\n\n"
                   "def register():\n    module_of = operator.attrgetter('module')\n    for spec in (Spec({m!r}),):\n        importlib.import_module(module_of(spec))\n"),
    "itemgetter": ("import importlib\nfrom operator import itemgetter\n\n\n"
                   "def register():\n    module_of = itemgetter('module')\n    for spec in ({{'module': {m!r}}},):\n        importlib.import_module(module_of(spec))\n"),
}


@pytest.mark.parametrize("module,imported", [("pd.legacy", True), ("pd.fast", False)])
@pytest.mark.parametrize("spelling", sorted(GETTERS))
def test_a_getter_a_function_binds_to_a_local_is_applied(upstreams, tmp_path, spelling, module, imported):
    """`load = methodcaller("load", importer)` then `load(spec)` is `spec.load(importer)`; a local
    attrgetter / itemgetter the same (the operator docs)."""
    judge_legacy(tmp_path, upstreams[1], GETTERS[spelling].format(m=module), imported, extra={"pd/compat.py": COMPAT})
