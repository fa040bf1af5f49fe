"""Hook tables a plugin object keeps (`self._table`, filled by its own methods, read by another of
them): the object the plugin makes once is that construction's object, its list or dict fields
holding what the calls of its methods on it add (a chain of calls returning self, statements on a
local or a global, a decorator its method returns); calls on another object of the class add
nothing to it, and a method called on one named object runs on that object alone. Before, the
registration read `self._table` as unknown ("could not be evaluated statically"), exit 3."""

from __future__ import annotations

import pytest
from kinds_support import check, plugin, pyproject, upstream_pair

GOOD, GONE = "sglang.srt.layers.sampler.Sampler.forward", "sglang.srt.layers.sampler.Sampler.forward_gone"

TABLE = """
    from sglang.srt.plugins.hook_registry import HookRegistry, HookType


    def fast_forward(original_fn, self, logits, *args, **kwargs):
        return original_fn(self, logits, *args, **kwargs)


    def old_forward(original_fn, self, logits, *args, **kwargs):
        return original_fn(self, logits, *args, **kwargs)


    class KernelTable:
        def __init__(self, owner="sglang.srt.layers.sampler"):
            self.owner = owner
            self._table = {}

        def add(self, qualname, impl):
            self._table[(self.owner, qualname)] = impl
            return self

        def install(self):
            for (owner, qualname), impl in self._table.items():
                HookRegistry.register(".".join((owner, qualname)), impl, HookType.AROUND)
    """

SPELLINGS = {
    "chained calls returning self": TABLE + """

    KERNELS = KernelTable().add("Sampler.forward", fast_forward).add("Sampler.forward_gone", old_forward)


    def register():
        KERNELS.install()
    """,
    "statements on a local object": TABLE + """

    def register():
        table = KernelTable()
        table.add("Sampler.forward", fast_forward)
        table.add("Sampler.forward_gone", old_forward)
        table.install()
    """,
    "statements on a module global": TABLE + """

    KERNELS = KernelTable("sglang.srt.layers.sampler")
    KERNELS.add("Sampler.forward", fast_forward)
    KERNELS.add("Sampler.forward_gone", old_forward)


    def register():
        KERNELS.install()
    """,
    "a decorator its method returns": """
    from sglang.srt.plugins.hook_registry import HookRegistry, HookType


    class Patcher:
        def __init__(self, prefix):
            self.prefix = prefix
            self.patches = []

        def around(self, name):
            def deco(fn):
                self.patches.append((self.prefix + "." + name, fn))
                return fn
            return deco

        def apply(self):
            for target, fn in self.patches:
                HookRegistry.register(target, fn, HookType.AROUND)


    SAMPLER = Patcher("sglang.srt.layers.sampler.Sampler")


    @SAMPLER.around("forward")
    def fast_forward(original_fn, self, logits, *args, **kwargs):
        return original_fn(self, logits, *args, **kwargs)


    @SAMPLER.around("forward_gone")
    def old_forward(original_fn, self, logits, *args, **kwargs):
        return original_fn(self, logits, *args, **kwargs)


    def register():
        SAMPLER.apply()
    """,
}


@pytest.fixture(scope="module")
def upstreams(tmp_path_factory):
    return upstream_pair(tmp_path_factory)


def _hooks(root, upstream) -> tuple[int, dict[str, list[dict]]]:
    code, doc = check(root, upstream)
    hooks: dict[str, list[dict]] = {}
    for finding in doc["findings"]:
        if finding["kind"] == "hook":
            hooks.setdefault(finding["target"] or "?", []).append(finding)
    return code, hooks


@pytest.mark.parametrize("spelling", sorted(SPELLINGS))
def test_a_hook_table_an_object_keeps_is_read_with_what_its_methods_add(upstreams, tmp_path, spelling):
    root = plugin(tmp_path, {"pyproject.toml": pyproject(plugins={"kt": "kt:register"}), "kt/__init__.py": SPELLINGS[spelling]})
    code, hooks = _hooks(root, upstreams[0])
    assert set(hooks) == {GOOD, GONE}, hooks
    assert [f["status"] for f in hooks[GOOD]] == ["ok"], hooks[GOOD]
    assert [f["status"] for f in hooks[GONE]] == ["missing"] and hooks[GONE][0]["breaking"], hooks[GONE]
    assert code == 1


def test_calls_on_another_object_add_nothing_to_the_installed_one(upstreams, tmp_path):
    # the second table is filled but never installed: its hook is never registered
    source = TABLE + """

    KERNELS = KernelTable().add("Sampler.forward", fast_forward)
    SPARE = KernelTable().add("Sampler.forward_gone", old_forward)


    def register():
        KERNELS.install()
    """
    root = plugin(tmp_path, {"pyproject.toml": pyproject(plugins={"kt": "kt:register"}), "kt/__init__.py": source})
    code, hooks = _hooks(root, upstreams[0])
    assert set(hooks) == {GOOD}, hooks
    assert [f["status"] for f in hooks[GOOD]] == ["ok"] and code == 0, hooks


# A field only the object's own __init__ stores, read in a method the plugin never calls itself
# (upstream calls it: an entry point naming the object, or one of its bound methods): the field
# holds what the one construction handed it. Before, the hook's target read as unknown, exit 3.
INSTALLER = """
    from sglang.srt.plugins.hook_registry import HookRegistry, HookType


    def fast_forward(original_fn, self, logits, *args, **kwargs):
        return original_fn(self, logits, *args, **kwargs)


    class Installer:
        def __init__(self, owner, method="forward"):
            self.owner, self.method = owner, method

        def __call__(self):
            HookRegistry.register(f"{self.owner}.Sampler.{self.method}", fast_forward, HookType.AROUND)

        def register(self):
            self()
    """

FIELD_SPELLINGS = {
    "the entry point names the object": (INSTALLER + """

    PACKAGE = "sglang.srt"
    plugin = Installer(f"{PACKAGE}.layers.sampler", method="forward_gone")
    """, "kt:plugin"),
    "the entry point names a bound method of it": (INSTALLER + """

    register = Installer("sglang.srt.layers.sampler", "forward_gone").register
    """, "kt:register"),
    "an alias of the object": (INSTALLER + """

    _installer = Installer(owner="sglang.srt.layers.sampler", method="_".join(("forward", "gone")))
    plugin = _installer
    """, "kt:plugin"),
}


@pytest.mark.parametrize("spelling", sorted(FIELD_SPELLINGS))
def test_a_field_only_init_stores_is_what_the_construction_handed_it(upstreams, tmp_path, spelling):
    source, entry = FIELD_SPELLINGS[spelling]
    root = plugin(tmp_path, {"pyproject.toml": pyproject(plugins={"kt": entry}), "kt/__init__.py": source})
    code, hooks = _hooks(root, upstreams[0])
    assert set(hooks) == {GONE}, hooks
    assert [f["status"] for f in hooks[GONE]] == ["missing"] and hooks[GONE][0]["breaking"] and code == 1, hooks[GONE]


def test_a_field_another_method_stores_is_not_the_constructions(upstreams, tmp_path):
    source = INSTALLER + """

        def retarget(self, method):
            self.method = method


    plugin = Installer("sglang.srt.layers.sampler", method="forward_gone")
    """
    root = plugin(tmp_path, {"pyproject.toml": pyproject(plugins={"kt": "kt:plugin"}), "kt/__init__.py": source})
    code, hooks = _hooks(root, upstreams[0])
    assert [f["status"] for found in hooks.values() for f in found] == ["unknown"] and code == 3, hooks
