"""What a class's namespace holds however the plugin fills it, read as Python builds the class
(the data model, "Class objects" and "Creating the class object"):

1. A class statement nested in a class body binds a name of that body: `class A3: class Device(
   DeviceMixin): …; class Platform(Device, SRTPlatform): …` derives Platform from the plugin's
   A3.Device, and `activate()` may name it by its qualified path (`pkg.soc.A3.Platform`).
2. A class made by `type(name, bases, namespace)` with the namespace a module-level dict (a
   display, `dict(k=v)`, entries added after) or by `types.new_class(name, bases, kwds,
   exec_body)` whose callback fills the namespace it is handed (`ns["m"] = f`, `ns.update(…)`)
   has those entries as its methods: each an override of its bases' where they have one.
3. An import in a class body binds a class attribute (`class _sgl: try: from sglang.x import f`):
   `_sgl.f(…)` is upstream's f.

Fixture upstreams (tests/knowledge/kinds_support.py): 0.10.0's SRTPlatform has
get_default_attention_backend and no support_cuda_graph, so an override of the latter is
`not_on_base` and breaking (the plugin declares no release), of the former ok."""

from __future__ import annotations

import pytest
from kinds_support import check, plugin, pyproject, upstream_pair

HEAD = """
import types

from sglang.srt.platforms.device_mixin import DeviceMixin
from sglang.srt.platforms.interface import SRTPlatform


def _backend(self) -> str:
    return "torch_native"


def _graphs(self) -> bool:
    return True


def _constant(value):
    def method(self):
        return value

    return method
"""


@pytest.fixture(scope="module")
def upstream(tmp_path_factory):
    return upstream_pair(tmp_path_factory)[1]


def _overrides(tmp_path, name: str, source: str, path: str) -> dict[str, tuple[str, bool]]:
    root = plugin(tmp_path, {
        "pyproject.toml": pyproject(platforms={"p": "p:activate"}),
        "p/__init__.py": f"def activate():\n    return {path!r}\n",
        "p/soc.py": source,
    }, name=name)
    return root


def _judged(upstream, root) -> dict[str, tuple[str, bool]]:
    code, doc = check(root, upstream)
    found = {f["target"].rsplit(".", 1)[-1]: (f["status"], f["breaking"]) for f in doc["findings"] if f["kind"] == "override"}
    return found | {"<exit>": code}


NESTED = {
    # (the module, the path activate() returns)
    "a base named in the enclosing body": (HEAD + """
class A3:
    class Device(DeviceMixin):
        def get_default_attention_backend(self) -> str:
            return "torch_native"

    class Platform(Device, SRTPlatform):
        def support_cuda_graph(self) -> bool:
            return True
""", "p.soc.A3.Platform"),
    "a body alias of the nested class": (HEAD + """
class A3:
    class Device(DeviceMixin):
        get_default_attention_backend = _backend

    Base = Device

    class Platform(Base, SRTPlatform):
        support_cuda_graph = _graphs
""", "p.soc:A3.Platform"),
    "two levels down": (HEAD + """
class Vendor:
    class A3:
        class Device(DeviceMixin):
            def get_default_attention_backend(self) -> str:
                return "torch_native"

        class Platform(Device, SRTPlatform):
            def support_cuda_graph(self) -> bool:
                return True
""", "p.soc:Vendor.A3.Platform"),
}


@pytest.mark.parametrize("spelling", sorted(NESTED))
def test_a_base_nested_in_a_class_body_is_the_plugins_class(upstream, tmp_path, spelling):
    source, path = NESTED[spelling]
    found = _judged(upstream, _overrides(tmp_path, "nested", source, path))
    assert found.get("support_cuda_graph") == ("not_on_base", True) and found.get("get_default_attention_backend") == ("ok", False), found
    assert found["<exit>"] == 1, found


NAMESPACES = {
    "type() of a module-level dict": """
NAMESPACE = {"__module__": __name__, "get_default_attention_backend": _backend, "support_cuda_graph": _graphs}
Platform = type("Platform", (SRTPlatform,), NAMESPACE)
""",
    "type() of dict(k=v) with an entry added after": """
NAMESPACE = dict(get_default_attention_backend=_backend)
NAMESPACE["support_cuda_graph"] = _graphs
Platform = type("Platform", (SRTPlatform,), NAMESPACE)
""",
    "types.new_class filling ns by item": """
def _body(ns):
    ns["__module__"] = __name__
    ns["get_default_attention_backend"] = _backend
    ns["support_cuda_graph"] = _graphs


Platform = types.new_class("Platform", (SRTPlatform,), {}, _body)
""",
    "types.new_class with ns.update of a display": """
def _body(ns):
    ns.update({"get_default_attention_backend": _backend, "support_cuda_graph": _graphs})


Platform = types.new_class("Platform", (SRTPlatform,), exec_body=_body)
""",
    "types.new_class with ns.update(k=v)": """
def _body(namespace):
    namespace.update(get_default_attention_backend=_backend, support_cuda_graph=_graphs)


Platform = types.new_class("Platform", bases=(DeviceMixin, SRTPlatform), kwds=None, exec_body=_body)
""",
}


@pytest.mark.parametrize("spelling", sorted(NAMESPACES))
def test_the_namespace_type_or_new_class_is_handed_holds_the_methods(upstream, tmp_path, spelling):
    found = _judged(upstream, _overrides(tmp_path, "built", HEAD + NAMESPACES[spelling], "p.soc.Platform"))
    assert found.get("support_cuda_graph") == ("not_on_base", True) and found.get("get_default_attention_backend") == ("ok", False), found


def test_a_namespace_handed_on_is_not_listed(upstream, tmp_path):
    """An exec_body that hands the namespace to a helper fills it with what that helper does:
    not read here, so nothing is said of methods it may hold (no false `not_on_base`)."""
    source = HEAD + """
def _fill(ns):
    ns["support_cuda_graph"] = _graphs


def _body(ns):
    _fill(ns)


Platform = types.new_class("Platform", (SRTPlatform,), {}, _body)
"""
    found = _judged(upstream, _overrides(tmp_path, "handed", source, "p.soc.Platform"))
    assert "support_cuda_graph" not in found, found


CLASS_BODY_IMPORTS = {
    "a try with a None fallback": """
class _sgl:
    try:
        from sglang.srt.layers.attention.attention_registry import register_attention_backend
    except ImportError:
        register_attention_backend = None


def register():
    if _sgl.register_attention_backend is not None:
        _sgl.register_attention_backend("dev")(_make)
""",
    "a plain import under an alias": """
class _sgl:
    from sglang.srt.layers.attention.attention_registry import register_attention_backend as register_backend


def register():
    _sgl.register_backend("dev")(_make)
""",
    "a module imported into the body": """
class _sgl:
    import sglang.srt.layers.attention.attention_registry as registry


def register():
    _sgl.registry.register_attention_backend("dev")(_make)
""",
}


@pytest.mark.parametrize("spelling", sorted(CLASS_BODY_IMPORTS))
def test_an_import_in_a_class_body_is_that_class_attribute(upstream, tmp_path, spelling):
    source = "def _make(runner):\n    return None\n\n" + CLASS_BODY_IMPORTS[spelling]
    root = plugin(tmp_path, {"pyproject.toml": pyproject(plugins={"p": "p:register"}), "p/__init__.py": source}, name="body")
    code, doc = check(root, upstream)
    backend = [f for f in doc["findings"] if f["kind"] == "attention_backend"]
    assert [(f["target"], f["status"]) for f in backend] == [
        ("sglang.srt.layers.attention.attention_registry.register_attention_backend", "ok")], doc["findings"]
    assert code == 0, doc["findings"]



CHAINED = {
    # `a = b = value` binds each target to the one value (the language reference, "Assignment statements")
    "a function": "    support_cuda_graph = supports_v0_graphs = _graphs\n",
    "classmethod of a function": "    support_cuda_graph = supports_v0_graphs = classmethod(_graphs)\n",
    "a lambda": "    support_cuda_graph = supports_v0_graphs = lambda self: True\n",
}


@pytest.mark.parametrize("spelling", sorted(CHAINED))
def test_each_target_of_a_chained_class_body_assignment_is_a_method(upstream, tmp_path, spelling):
    source = HEAD + "\n\nclass Platform(SRTPlatform):\n    get_default_attention_backend = _backend\n" + CHAINED[spelling]
    found = _judged(upstream, _overrides(tmp_path, "chained", source, "p.soc.Platform"))
    assert found.get("support_cuda_graph") == ("not_on_base", True) and found.get("supports_v0_graphs") == ("not_on_base", True), found


PLATFORM = HEAD + """

class Platform(SRTPlatform):
    get_default_attention_backend = _backend
    support_cuda_graph = _graphs
"""
ACTIVATIONS = {
    # activate() returns a name it assigned in a branch (twenty-eighth set F02-h2): each path
    # assigned to it there is one activate() may return
    "memoised_in_a_module_global": ("_ACTIVATED = None\n\n\ndef _count():\n    return 1\n\n\ndef activate():\n    global _ACTIVATED\n"
                                    "    if _ACTIVATED is None and _count() > 0:\n        _ACTIVATED = 'p.soc.Platform'\n    return _ACTIVATED\n"),
    "a_local_set_in_a_branch": ("import os\n\n\ndef activate():\n    path = None\n    if os.path.exists('/dev/xdev0'):\n"
                                "        path = 'p.soc:Platform'\n    return path\n"),
    "a_local_set_under_suppress": ("import contextlib\n\n\ndef activate():\n    found = None\n    with contextlib.suppress(ImportError):\n"
                                   "        import xdev_runtime  # noqa: F401\n        found = 'p.soc.Platform'\n    return found\n"),
}


@pytest.mark.parametrize("spelling", sorted(ACTIVATIONS))
def test_a_path_activate_keeps_in_a_name_it_assigns_is_loaded(upstream, tmp_path, spelling):
    root = plugin(tmp_path, {"pyproject.toml": pyproject(platforms={"p": "p:activate"}), "p/__init__.py": ACTIVATIONS[spelling],
                             "p/soc.py": PLATFORM}, name=spelling)
    found = _judged(upstream, root)
    assert found.get("support_cuda_graph") == ("not_on_base", True) and found["<exit>"] == 1, found


def test_a_name_activate_never_assigns_a_path_loads_nothing(upstream, tmp_path):
    source = "_ACTIVATED = None\n\n\ndef activate():\n    global _ACTIVATED\n    return _ACTIVATED\n"
    root = plugin(tmp_path, {"pyproject.toml": pyproject(platforms={"p": "p:activate"}), "p/__init__.py": source, "p/soc.py": PLATFORM})
    found = _judged(upstream, root)
    assert not any(breaking for key, value in found.items() if key != "<exit>" for _, breaking in [value]), found


# `__init_subclass__(cls)` runs for each deriving class statement, `cls` that class (twenty-eighth
# set F10-h1): what it reads off cls is the subclass's (its table), what it sets on cls is the
# subclass's method
SUBCLASS_HOOKS = {
    "setattr_over_the_subclass_table": ("    TABLE = {}\n\n    def __init_subclass__(cls, **kwargs):\n        super().__init_subclass__(**kwargs)\n"
                                        "        for name, fn in cls.TABLE.items():\n            setattr(cls, name, fn)\n",
                                        "    TABLE = {'support_cuda_graph': _graphs, 'get_default_attention_backend': _backend}\n"),
    "attribute_named_by_a_class_keyword": ("    def __init_subclass__(cls, graphs=None, **kwargs):\n        super().__init_subclass__(**kwargs)\n"
                                           "        cls.support_cuda_graph = graphs\n        cls.get_default_attention_backend = _backend\n", ""),
    "a_factory_per_entry_of_the_subclass_table": ("    FLAGS = {}\n\n    def __init_subclass__(cls):\n        for name, value in cls.FLAGS.items():\n"
                                                  "            setattr(cls, name, _constant(value))\n",
                                                  "    FLAGS = {'support_cuda_graph': True, 'get_default_attention_backend': 'torch_native'}\n"),
}


@pytest.mark.parametrize("spelling", sorted(SUBCLASS_HOOKS))
def test_what_init_subclass_sets_on_cls_is_the_subclasss(upstream, tmp_path, spelling):
    mixin, body = SUBCLASS_HOOKS[spelling]
    keyword = ", graphs=_graphs" if spelling == "attribute_named_by_a_class_keyword" else ""
    source = HEAD + f"\n\nclass Mixin:\n{mixin}\n\nclass Platform(Mixin, SRTPlatform{keyword}):\n{body or '    pass'}\n"
    found = _judged(upstream, _overrides(tmp_path, "subclass-hook", source, "p.soc.Platform"))
    assert found.get("support_cuda_graph") == ("not_on_base", True) and found.get("get_default_attention_backend") == ("ok", False), found
