"""Choices a test of the upstream makes, decided on each release (the eighteenth held-out set): a
table keyed by a module-level `hasattr` flag (`[HAS]`, `.get(HAS)`), `next(n for n in NAMES if
hasattr(C, n))`, a filtered list's first element. The test upstream drops
SRTPlatform.get_mha_kv_pool_cls in 0.10.0 (and torchao_utils, which `pd.legacy` imports): the
module the choice imports on a release is the one judged there, the other is dead code."""

from __future__ import annotations

import pytest
from kinds_support import INTERFACE_WITHOUT_MHA_POOL, check, plugin, pyproject, upstream_pair

LEGACY = "import sglang.srt.layers.torchao_utils as torchao_utils\n\n\ndef quantize(model):\n    return torchao_utils.apply_torchao_config_to_model(model, 'int8')\n"
FAST = "def quantize(model):\n    return model\n"


@pytest.fixture(scope="module")
def upstreams(tmp_path_factory):
    return upstream_pair(tmp_path_factory, new=INTERFACE_WITHOUT_MHA_POOL)


HEAD = "import importlib\n\nfrom sglang.srt.platforms.interface import SRTPlatform\n\n"
# {when}: the module imported where SRTPlatform has get_mha_kv_pool_cls (0.9.0), `{other}` where it has not
CHOICES = {
    "table_keyed_by_a_flag": "HAS_POOL = hasattr(SRTPlatform, 'get_mha_kv_pool_cls')\nMODULES = {{True: 'pd.{when}', False: 'pd.{other}'}}\n\n\n"
                             "def register():\n    importlib.import_module(MODULES[HAS_POOL])\n",
    "get_of_a_flag": "MODULES = {{True: 'pd.{when}', False: 'pd.{other}'}}\n\n\n"
                     "def register():\n    has_pool = hasattr(SRTPlatform, 'get_mha_kv_pool_cls')\n    importlib.import_module(MODULES.get(has_pool))\n",
    "next_of_a_probe": "CANDIDATES = (('get_mha_kv_pool_cls', 'pd.{when}'), ('init_backend', 'pd.{other}'))\n\n\n"
                       "def _first(cls, pairs):\n    return next((module for method, module in pairs if hasattr(cls, method)), None)\n\n\n"
                       "def register():\n    importlib.import_module(_first(SRTPlatform, CANDIDATES))\n",
    "filtered_list": "CANDIDATES = [('get_mha_kv_pool_cls', 'pd.{when}'), ('init_backend', 'pd.{other}')]\n\n\n"
                     "def register():\n    found = [m for n, m in CANDIDATES if hasattr(SRTPlatform, n)]\n    importlib.import_module(found[0])\n",
}


@pytest.mark.parametrize("legacy_when", ["pool_present", "pool_gone"])
@pytest.mark.parametrize("spelling", sorted(CHOICES))
def test_the_module_a_release_probe_chooses_is_the_one_judged(upstreams, tmp_path, spelling, legacy_when):
    """On 0.10.0 (no get_mha_kv_pool_cls) the probe picks the other module: pd.legacy is live,
    and red, only where the choice names it for a release without the method."""
    when, other = ("legacy", "fast") if legacy_when == "pool_present" else ("fast", "legacy")
    source = HEAD + CHOICES[spelling].format(when=when, other=other)
    files = {"pyproject.toml": pyproject(plugins={"pd": "pd:register"}), "pd/__init__.py": source, "pd/legacy.py": LEGACY, "pd/fast.py": FAST}
    code, doc = check(plugin(tmp_path, files), upstreams[1])
    legacy = [f for f in doc["findings"] if f["file"] == "pd/legacy.py" and f["target"].startswith("sglang.srt.layers.torchao_utils")]
    assert legacy, doc["findings"]
    live = legacy_when == "pool_gone"
    assert (any(f["live"] and f["breaking"] for f in legacy), code) == ((True, 1) if live else (False, 0)), doc["findings"]


BASES = {
    # the module-level binding of Base that the release's test picks (`{this}` on 0.10.0, `{other}` elsewhere)
    "import_or_assignment": "if __version__ == '0.10.0':\n    {this}\nelse:\n    {other}\n",
    "negated_test_import_in_try": "if __version__ != '0.10.0':\n    {other}\nelse:\n    try:\n        {this}\n    except ImportError:\n        Base = object\n",
    "nested_release_tests": "if __version__.startswith('0.'):\n    if __version__ == '0.10.0':\n        {this}\n    else:\n        {other}\n"
                            "    if not isinstance(Base, type):\n        Base = object\nelse:\n    Base = object\n",
}
SAMPLER_BASE = "from sglang.srt.layers.sampler import Sampler as Base"


@pytest.mark.parametrize("base_here", ["Sampler", "object"])
@pytest.mark.parametrize("spelling", sorted(BASES))
def test_a_class_base_a_release_test_picks_is_that_release_binding(upstreams, tmp_path, spelling, base_here):
    """`class S(Base)` where an `if` on the running version binds Base: the base is the binding
    that `if` runs on this release, not the module's last one; on Sampler, a super() call with a
    keyword Sampler.forward lacks breaks."""
    this, other = (SAMPLER_BASE, "Base = object") if base_here == "Sampler" else ("Base = object", SAMPLER_BASE)
    block = BASES[spelling].replace("{this}", this).replace("{other}", other)
    source = ("from sglang.version import __version__\n\n" + block + "\n\nclass S(Base):\n    def run(self, logits):\n"
              "        return super().forward(logits, temperature=2.0, top_p=0.9)\n\n\ndef register():\n    return S().run(None)\n")
    files = {"pyproject.toml": pyproject(plugins={"pd": "pd:register"}), "pd/__init__.py": source}
    code, doc = check(plugin(tmp_path, files), upstreams[1])
    forward = [f for f in doc["findings"] if f["target"] == "sglang.srt.layers.sampler.Sampler.forward" and f["breaking"]]
    assert (bool(forward), code) == ((True, 1) if base_here == "Sampler" else (False, 0)), doc["findings"]


PROBES = {
    # the first of NAMES loaded, with the module the walrus binds in the filter (eighteenth set F32-h2)
    "next_of_a_walrus_generator": "next((m for n in NAMES if (m := sys.modules.get(n)) is not None), None)",
    "first_of_a_walrus_list": "next(iter([m for n in NAMES if (m := sys.modules.get(n)) is not None]), None)",
    "next_of_a_walrus_in_a_helper": "_first(NAMES)",
}


@pytest.mark.parametrize("spelling", sorted(PROBES))
def test_a_patch_lands_in_the_first_module_a_walrus_probe_finds(upstreams, tmp_path, spelling):
    """0.10.0 has no torchao_utils: the probe (newest name last here) finds the sampler module,
    and the patch is judged there; torchao_utils' absence is no finding."""
    source = ("import sys\n\nNAMES = ('sglang.srt.layers.torchao_utils', 'sglang.srt.layers.sampler')\n\n\n"
              "def _first(names):\n    return next((m for n in names if (m := sys.modules.get(n)) is not None), None)\n\n\n"
              "def mine(*args, **kwargs):\n    return None\n\n\n"
              f"def register():\n    module = {PROBES[spelling]}\n    if module is None:\n        return\n    setattr(module, 'Sampler', mine)\n")
    files = {"pyproject.toml": pyproject(plugins={"pd": "pd:register"}), "pd/__init__.py": source}
    code, doc = check(plugin(tmp_path, files), upstreams[1])
    patches = {f["target"]: f for f in doc["findings"] if f["kind"] == "patch"}
    assert "sglang.srt.layers.sampler.Sampler" in patches and not any("torchao" in t for t in patches), doc["findings"]
    assert code == 0, doc["findings"]


OVERRIDES = {
    # an object that splits "pkg.mod.attr" into its fields and patches there from a method (eighteenth set F32-h3)
    "post_init_unpacked_or_import": (
        "import dataclasses\nimport importlib\nimport sys\n\n\n@dataclasses.dataclass\nclass Override:\n    path: str\n"
        "    value: object\n    module: str = dataclasses.field(init=False)\n    attr: str = dataclasses.field(init=False)\n\n"
        "    def __post_init__(self):\n        self.module, _, self.attr = self.path.rpartition('.')\n\n"
        "    def target(self):\n        return sys.modules.get(self.module) or importlib.import_module(self.module)\n\n"
        "    def apply(self):\n        setattr(self.target(), self.attr, self.value)\n\n\n"),
    "init_unpacked_import": (
        "import importlib\n\n\nclass Override:\n    def __init__(self, path, value):\n        self.module, self.attr = path.rsplit('.', 1)\n"
        "        self.value = value\n\n    def apply(self):\n        setattr(importlib.import_module(self.module), self.attr, self.value)\n\n\n"),
    "init_partition_loaded_module": (
        "import sys\n\n\nclass Override:\n    def __init__(self, path, value):\n        self.module, _, self.attr = path.partition(':')\n"
        "        self.value = value\n\n    def owner(self):\n        return sys.modules[self.module]\n\n"
        "    def apply(self):\n        setattr(self.owner(), self.attr, self.value)\n\n\n"),
}


@pytest.mark.parametrize("target", ["gone", "kept"])
@pytest.mark.parametrize("spelling", sorted(OVERRIDES))
def test_a_patch_an_object_applies_from_its_own_fields(upstreams, tmp_path, spelling, target):
    """The module and attribute a method patches are the fields its object's constructor (or
    __post_init__) unpacked from a path: the patch is judged there, missing on 0.10.0 where the
    module is gone, fine where it is kept."""
    module, attr = ("sglang.srt.layers.torchao_utils", "apply_torchao_config_to_model") if target == "gone" else ("sglang.srt.layers.sampler", "Sampler")
    sep = ":" if spelling == "init_partition_loaded_module" else "."
    source = (OVERRIDES[spelling] + "def _mine(*args, **kwargs):\n    return None\n\n\nPATHS = [" + repr(f"{module}{sep}{attr}") + "]\n\n\n"
              "def register():\n    for path in PATHS:\n        Override(path, _mine).apply()\n")
    files = {"pyproject.toml": pyproject(plugins={"pd": "pd:register"}), "pd/__init__.py": source}
    code, doc = check(plugin(tmp_path, files), upstreams[1])
    patch = next((f for f in doc["findings"] if f["kind"] == "patch" and f["target"] == f"{module}.{attr}"), None)
    assert patch is not None, doc["findings"]
    assert (patch["status"], patch["breaking"], code) == (("missing", True, 1) if target == "gone" else ("ok", False, 0)), patch


COMPAT = {
    "suppress_module_alias": "import contextlib\n\nregistry = None\nwith contextlib.suppress(ImportError):\n"
                             "    import sglang.srt.layers.attention.attention_registry as registry\n",
    "try_module_alias": "try:\n    from sglang.srt.layers.attention import attention_registry as registry\nexcept ImportError:\n    registry = None\n",
}
INSTALLS = {
    "object_attribute": "class _Installer:\n    def __init__(self, registry):\n        self.registry = registry\n\n    def install(self):\n"
                        "        if self.registry is None:\n            return\n        for name in ('mine', 'mine_mla'):\n"
                        "            self.registry.register_attention_backend(name)(_make)\n\n\ndef register():\n    _Installer(registry).install()\n",
    "helper_parameter": "def _install(reg, names):\n    for name in names:\n        reg.register_attention_backend(name)(_make)\n\n\n"
                        "def register():\n    if registry is not None:\n        _install(registry, ['mine'])\n",
}


@pytest.mark.parametrize("install", sorted(INSTALLS))
@pytest.mark.parametrize("compat", sorted(COMPAT))
def test_a_registry_module_imported_with_a_fallback_and_handed_on_is_judged_as_upstreams(upstreams, tmp_path, compat, install):
    """A module imported under `suppress(ImportError)` / `try` with None before it is upstream's
    module where the import resolves on this release (eighteenth set F36-h1); its
    register_attention_backend called through an object's attribute or a helper's parameter is
    upstream's (not a name `self` that is no part of upstream)."""
    source = COMPAT[compat] + "\n\ndef _make(runner):\n    return None\n\n\n" + INSTALLS[install]
    files = {"pyproject.toml": pyproject(plugins={"pd": "pd:register"}), "pd/__init__.py": source}
    code, doc = check(plugin(tmp_path, files), upstreams[1])
    assert doc["checked"].get("attention_backend", 0) >= 1, doc
    assert not [f for f in doc["findings"] if f["kind"] == "attention_backend" and f["status"] != "ok"] and code == 0, doc["findings"]


NONE_READS = {
    # (the plugin module, whether the read runs unguarded where the import failed)
    "module_attribute_in_a_helper": ("try:\n    from sglang.srt.layers import torchao_utils\nexcept ImportError:\n    torchao_utils = None\n\n\n"
                                     "def _install():\n    torchao_utils.FILTERS.append(len)\n\n\ndef register():\n    _install()\n", True),
    "class_method_read_kept": ("try:\n    from sglang.srt.layers.torchao_utils import apply_torchao_config_to_model as apply\nexcept (ImportError, AttributeError):\n"
                               "    apply = None\n\n\ndef register():\n    original = apply.__wrapped__\n    return original\n", True),
    "getattr_spelled": ("try:\n    import sglang.srt.layers.torchao_utils as tu\nexcept ImportError:\n    tu = None\n\n\n"
                        "def register():\n    return getattr(tu, 'FILTERS')\n", True),
    "read_under_a_none_test": ("try:\n    from sglang.srt.layers import torchao_utils\nexcept ImportError:\n    torchao_utils = None\n\n\n"
                               "def register():\n    if torchao_utils is not None:\n        torchao_utils.FILTERS.append(len)\n", False),
}


@pytest.mark.parametrize("spelling", sorted(NONE_READS))
def test_a_read_of_a_name_a_caught_import_leaves_none(upstreams, tmp_path, spelling):
    """`try: import x / except ImportError: x = None`, then `x.attr` (eighteenth set F36-h2): on a
    release where the import fails x is None and the read raises AttributeError, breaking,
    unless a test of x guards it."""
    source, breaks = NONE_READS[spelling]
    files = {"pyproject.toml": pyproject(plugins={"pd": "pd:register"}), "pd/__init__.py": source}
    code, doc = check(plugin(tmp_path, files), upstreams[1])
    assert (any(f["breaking"] and "None" in (f["detail"] or "") for f in doc["findings"]), code) == ((True, 1) if breaks else (False, 0)), doc["findings"]


HANDLERS = {
    # (the except clause, whether it runs where the module is there but the name is not)
    "module_not_found": ("except ModuleNotFoundError:", False),
    "module_not_found_in_a_tuple": ("except (ModuleNotFoundError,):", False),
    "module_not_found_bound": ("except ModuleNotFoundError as exc:", False),
    "import_error": ("except ImportError:", True),
}


@pytest.mark.parametrize("spelling", sorted(HANDLERS))
def test_a_module_not_found_handler_runs_only_where_a_module_is_missing(upstreams, tmp_path, spelling):
    """A name gone from a module that is still there raises plain ImportError, which `except
    ModuleNotFoundError` lets through (eighteenth set F07-h1): that handler's own import never
    runs there (the try's import is the break); `except ImportError` runs, and its import of a
    module 0.10.0 dropped breaks too."""
    clause, runs = HANDLERS[spelling]
    source = (f"try:\n    from sglang.srt.layers.sampler import gone_helper\n{clause}\n"
              "    from sglang.srt.layers.torchao_utils import apply_torchao_config_to_model as gone_helper\n\n\n"
              "def register():\n    return gone_helper\n")
    files = {"pyproject.toml": pyproject(plugins={"pd": "pd:register"}), "pd/__init__.py": source}
    code, doc = check(plugin(tmp_path, files), upstreams[1])
    handler = [f for f in doc["findings"] if f["kind"] == "import" and "torchao_utils" in f["target"]]
    assert handler and any(f["breaking"] for f in handler) is runs, doc["findings"]
