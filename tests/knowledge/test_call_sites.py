"""Call sites: a hook, or a platform override, is judged by the calls the release makes of its
target (`f(…)`, `mod.f(…)`, `self.m(…)`, `super().m(…)`, `Cls.m(…)`, `current_platform.m(…)`), not
only by the target's signature: breaking when a call upstream makes cannot bind to the plugin's
callable (F27), fine when every call passes what the plugin requires (F29); the finding names the
calls it checked (issue 18 kind 6, what-to-build 2)."""

from __future__ import annotations

import pytest
from kinds_support import IFACE, check, plugin, pyproject, upstream_pair
from knowledge_support import by_target
from real_releases import real_releases

from harness.knowledge.judge.callsites import call_sites
from harness.knowledge.upstream.index import SymbolIndex, load_index
from harness.knowledge.upstream.source import resolve_upstream

WU = "sglang.srt.model_loader.weight_utils"
SCHED = "sglang.srt.managers.scheduler.Scheduler"

OLD_LOADER = {
    "sglang/srt/model_loader/__init__.py": "",
    "sglang/srt/model_loader/weight_utils.py": """
        def filter_files(files, folder, index_file):
            return files
        """,
    "sglang/srt/model_loader/loader.py": """
        from sglang.srt.model_loader.weight_utils import filter_files


        def load(files, folder, index_file):
            return filter_files(files, folder, index_file)
        """,
    "sglang/srt/managers/scheduler.py": """
        class Scheduler:
            def get_next_batch(self):
                self._evict(None)
                return None

            def _evict(self, req):
                pass
        """,
}
NEW_LOADER = {
    "sglang/srt/model_loader/__init__.py": "",
    "sglang/srt/model_loader/weight_utils.py": """
        def filter_files(files, folder, index_file, allow_patterns=None):
            return files
        """,
    "sglang/srt/model_loader/loader.py": """
        import sglang.srt.model_loader.weight_utils as wu
        from sglang.srt.model_loader.weight_utils import filter_files


        def load(files, folder, index_file, patterns):
            files = wu.filter_files(files, folder, index_file)
            return filter_files(
                files,
                folder,
                index_file,
                allow_patterns=patterns,
            )
        """,
    "sglang/srt/managers/scheduler.py": """
        class Scheduler:
            def get_next_batch(self):
                self._evict(None, eviction_interval=3)
                return None

            def _evict(self, req, *, eviction_interval=None):
                pass


        class Other:
            # its own _evict: these calls never reach Scheduler._evict
            def run(self):
                self._evict(None, bogus=1)

            def _evict(self, req, bogus=0):
                pass


        class Base:
            def prepare(self, batch, flag=False):
                pass


        class Child(Base):
            def prepare(self, batch, flag=False):
                return super().prepare(batch, flag=flag)
        """,
    "sglang/srt/layers/head.py": """
        from torch import nn


        class Head(nn.Module):
            def forward(self, x, scale=1.0):
                return x


        def project(head, x):
            return Head.forward(head, x, 2.0)
        """,
}


@pytest.fixture(scope="module")
def upstreams(tmp_path_factory):
    return upstream_pair(tmp_path_factory, old=OLD_LOADER, new=NEW_LOADER)


def hooks_plugin(tmp_path, body: str):
    return plugin(tmp_path, {
        "pyproject.toml": pyproject(plugins={"shardev": "shardev:register"}),
        "shardev/__init__.py": """
            from sglang.srt.plugins.hook_registry import HookRegistry, HookType


            """ + body,
    })


def test_a_replace_hook_lacking_a_keyword_a_caller_passes_is_breaking(upstreams, tmp_path):
    old, new = upstreams
    root = hooks_plugin(tmp_path, """
            def keep(files, folder, index_file):
                return files


            def register():
                HookRegistry.register("sglang.srt.model_loader.weight_utils.filter_files", keep, HookType.REPLACE)
            """)
    code, doc = check(root, old)
    assert by_target(doc["findings"])[f"{WU}.filter_files"]["status"] == "ok" and code == 0
    code, doc = check(root, new)
    finding = by_target(doc["findings"])[f"{WU}.filter_files"]
    assert finding["status"] == "signature_changed" and finding["breaking"] is True, finding
    assert "sglang/srt/model_loader/loader.py:7" in finding["detail"] and "allow_patterns" in finding["detail"], finding["detail"]
    assert code == 1


def test_a_hook_requiring_what_a_caller_leaves_out_is_breaking(upstreams, tmp_path):
    _, new = upstreams
    root = hooks_plugin(tmp_path, """
            def keep(files, folder, index_file, *, allow_patterns):
                return files


            def register():
                HookRegistry.register("sglang.srt.model_loader.weight_utils.filter_files", keep, HookType.REPLACE)
            """)
    _, doc = check(root, new)
    finding = by_target(doc["findings"])[f"{WU}.filter_files"]
    # `allow_patterns` is required where upstream's is optional, but wu.filter_files(…) at :6 leaves it out
    assert finding["breaking"] is True and "loader.py:6" in finding["detail"], finding
    root = hooks_plugin(tmp_path / "b", """
            def keep(files, folder, index_file, allow_patterns=None, *, strict):
                return files


            def register():
                HookRegistry.register("sglang.srt.model_loader.weight_utils.filter_files", keep, HookType.REPLACE)
            """)
    _, doc = check(root, new)
    finding = by_target(doc["findings"])[f"{WU}.filter_files"]
    assert finding["breaking"] is True and "'strict'" in finding["detail"]


def test_method_calls_through_self_and_super_and_not_another_classs_own(upstreams, tmp_path):
    old, new = upstreams
    root = hooks_plugin(tmp_path, """
            def after_evict(result, self, req):
                return result


            def before_prepare(self, batch, flag):
                pass


            def register():
                HookRegistry.register("sglang.srt.managers.scheduler.Scheduler._evict", after_evict, HookType.AFTER)
                HookRegistry.register("sglang.srt.managers.scheduler.Base.prepare", before_prepare, HookType.BEFORE)
            """)
    code, doc = check(root, old)
    assert by_target(doc["findings"])[f"{SCHED}._evict"]["breaking"] is False
    code, doc = check(root, new)
    findings = by_target(doc["findings"])
    evict = findings[f"{SCHED}._evict"]
    assert evict["breaking"] is True and "scheduler.py:3" in evict["detail"] and "eviction_interval" in evict["detail"], evict
    assert "bogus" not in evict["detail"]  # Other._evict's own call is not a call of Scheduler._evict
    # `flag` is required where upstream's is optional, but the one call, super().prepare(batch, flag=flag),
    # passes it: the hook fits this release (`ok`), the mismatch kept as a note
    prepare = findings["sglang.srt.managers.scheduler.Base.prepare"]
    assert prepare["status"] == "ok" and prepare["breaking"] is False, prepare
    assert "every upstream call of it binds" in prepare["detail"] and "scheduler.py:26" in prepare["detail"], prepare["detail"]
    assert code == 1


def test_a_member_a_framework_calls_keeps_its_verdict(upstreams, tmp_path):
    # Head is a torch.nn.Module: head(x) runs forward without naming it, so the one call found
    # (head.py:10, which passes scale) does not clear a hook that requires scale
    _, new = upstreams
    root = hooks_plugin(tmp_path, """
            def fwd(self, x, scale):
                return x


            def register():
                HookRegistry.register("sglang.srt.layers.head.Head.forward", fwd, HookType.REPLACE)
            """)
    _, doc = check(root, new)
    finding = by_target(doc["findings"])["sglang.srt.layers.head.Head.forward"]
    assert finding["breaking"] is True and "head.py:10" in finding["detail"] and "cannot see" in finding["detail"], finding


def test_the_index_lists_calls_with_their_shapes(upstreams):
    _, new = upstreams
    index = load_index(resolve_upstream(new))
    sites = call_sites(index, index.resolve(f"{WU}.filter_files").ref)
    assert [(s.where, s.shape.positional, s.shape.keywords) for s in sites.calls] == [
        ("sglang/srt/model_loader/loader.py:6", 3, ()),
        ("sglang/srt/model_loader/loader.py:7", 3, ("allow_patterns",)),
    ]
    sites = call_sites(index, index.resolve(f"{SCHED}._evict").ref)
    assert [(s.where, s.receiver, s.bound) for s in sites.calls] == [("sglang/srt/managers/scheduler.py:3", "self", True)]
    sites = call_sites(index, index.resolve("sglang.srt.managers.scheduler.Base.prepare").ref)
    assert [(s.receiver, s.shape.keywords) for s in sites.calls] == [("super()", ("flag",))]


def platform_plugin(tmp_path):
    return plugin(tmp_path, {
        "pyproject.toml": pyproject(platforms={"dev": "dev:activate"}),
        "dev/__init__.py": """
            from sglang.srt.platforms.interface import SRTPlatform


            class DevPlatform(SRTPlatform):
                def get_default_attention_backend(self) -> str:
                    return "torch_native"

                def get_device_name(self, index):
                    return "dev"


            def activate():
                return "dev:DevPlatform"
            """,
    })


CALLER = """
        from sglang.srt.platforms import current_platform


        def describe(gpu_id):
            return current_platform.get_device_name(gpu_id)
        """


@pytest.fixture(scope="module")
def platform_upstreams(tmp_path_factory):
    # old: nothing calls get_device_name; new: every call passes the id; third: one leaves it out
    old, new = upstream_pair(tmp_path_factory, new={"sglang/srt/managers/describe.py": CALLER})
    _, left_out = upstream_pair(tmp_path_factory, new={"sglang/srt/managers/describe.py": CALLER + """

        def default():
            return current_platform.get_device_name()
        """})
    return old, new, left_out


def test_an_override_requiring_what_every_caller_passes_is_fine(platform_upstreams, tmp_path):
    old, new, left_out = platform_upstreams
    root = platform_plugin(tmp_path)
    for upstream, where in ((old, "nothing in"), (new, "sglang/srt/managers/describe.py:5")):
        code, doc = check(root, upstream)
        finding = by_target(doc["findings"])[f"{IFACE}.get_device_name"]
        assert finding["status"] == "signature_changed" and finding["breaking"] is False, finding
        assert where in finding["detail"], finding["detail"]
        assert code == 0
    code, doc = check(root, left_out)
    finding = by_target(doc["findings"])[f"{IFACE}.get_device_name"]
    assert finding["breaking"] is True and "describe.py:9" in finding["detail"], finding
    assert code == 1


# the override is a property handing back a bound method of the instance (thirty-first set F29-k1):
# `current_platform.get_device_name(i)` reads the property and calls what it returns, so each such
# method is judged against the calls (one chosen by a flag, the only one, a cached_property); a
# method that cannot take the call breaks
PROPERTY_METHODS = {
    "chosen_by_a_flag": ("@property\n    def get_device_name(self):\n        return self._from_sysfs if self.has_sysfs else self._synthetic\n\n"
                         "    def _from_sysfs(self, index):\n        return 'sysfs'\n\n    def _synthetic(self, index):\n        return 'dev'\n"),
    "the_only_one": "@property\n    def get_device_name(self):\n        return self._name\n\n    def _name(self, index, /):\n        return 'dev'\n",
    "cached_property": ("@functools.cached_property\n    def get_device_name(self):\n        return self._name\n\n"
                        "    def _name(self, index):\n        return 'dev'\n"),
}


@pytest.mark.parametrize("takes_the_id", [True, False], ids=["takes_the_id", "takes_nothing"])
@pytest.mark.parametrize("spelling", sorted(PROPERTY_METHODS))
def test_a_property_returning_a_bound_method_is_judged_as_that_method(platform_upstreams, tmp_path, spelling, takes_the_id):
    _, new, _ = platform_upstreams
    body = PROPERTY_METHODS[spelling] if takes_the_id else PROPERTY_METHODS[spelling].replace("(self, index, /)", "(self)").replace("(self, index)", "(self)")
    root = plugin(tmp_path, {
        "pyproject.toml": pyproject(platforms={"dev": "dev:activate"}),
        "dev/__init__.py": ("import functools\n\nfrom sglang.srt.platforms.interface import SRTPlatform\n\n\nclass DevPlatform(SRTPlatform):\n"
                            "    has_sysfs = False\n\n    " + body + "\n\ndef activate():\n    return 'dev:DevPlatform'\n"),
    }, name=f"{spelling}-{takes_the_id}")
    code, doc = check(root, new)
    found = [f for f in doc["findings"] if f["target"] == f"{IFACE}.get_device_name"]
    assert found and all(f["breaking"] is not takes_the_id for f in found) and code == (0 if takes_the_id else 1), found


@pytest.mark.network
@pytest.mark.slow
@pytest.mark.parametrize("version", ["0.5.11", "0.5.14", "0.5.17", "0.5.23"])
def test_real_release_filter_duplicate_safetensors_files(tmp_path, version):
    # 0.5.11 / 0.5.14 / 0.5.17 weight_utils.filter_duplicate_safetensors_files(hf_weights_files, hf_folder, index_file),
    # called positionally (0.5.14 weight_utils.py:642, loader.py:510, :2975; 0.5.17 loader.py:531, :3962); 0.5.23 weight_utils.py:757 adds allow_patterns=None and
    # loader.py:568 passes it -> the 3-parameter REPLACE hook is a TypeError there.
    real_releases(f"sglang=={version}")
    root = hooks_plugin(tmp_path, """
            def keep_indexed_shards(hf_weights_files, hf_folder, index_file):
                return hf_weights_files


            def register():
                HookRegistry.register("sglang.srt.model_loader.weight_utils.filter_duplicate_safetensors_files", keep_indexed_shards, HookType.REPLACE)
            """)
    code, doc = check(root, f"sglang=={version}", "--baseline", "none")
    finding = by_target(doc["findings"])[f"{WU}.filter_duplicate_safetensors_files"]
    if version == "0.5.23":
        assert finding["breaking"] is True and "sglang/srt/model_loader/loader.py:568" in finding["detail"], finding
        assert code == 1
    else:
        assert finding["status"] == "ok" and code == 0, finding


@pytest.mark.network
@pytest.mark.slow
@pytest.mark.parametrize("version", ["0.5.11", "0.5.14", "0.5.17", "0.5.23"])
def test_real_release_get_device_uuid_always_passed(tmp_path, version):
    # DeviceMixin.get_device_uuid(self, device_id=0) (0.5.14 device_mixin.py:182, 0.5.17 :186, 0.5.23 :199); 0.5.23
    # calls it positionally only (engine.py:794, :835, weight_cache/daemon.py:181, ...); 0.5.14 only on another
    # class's own method (checkpoint_engine_worker.py:77), 0.5.17 not at all.
    real_releases(f"sglang=={version}")
    root = plugin(tmp_path, {
        "pyproject.toml": pyproject(platforms={"dev": "dev:activate"}),
        "dev/__init__.py": """
            from sglang.srt.platforms.interface import SRTPlatform


            class DevPlatform(SRTPlatform):
                def get_default_attention_backend(self) -> str:
                    return "torch_native"

                def get_device_uuid(self, index):
                    return "uuid"


            def activate():
                return "dev:DevPlatform"
            """,
    })
    _, doc = check(root, f"sglang=={version}", "--baseline", "none")
    finding = by_target(doc["findings"]).get(f"{IFACE}.get_device_uuid")
    if finding is None:  # a release whose base has no get_device_uuid: the method is the plugin's own
        return
    assert finding["breaking"] is False, finding
    if version == "0.5.23":
        assert "sglang/srt/entrypoints/engine.py:794" in finding["detail"], finding["detail"]


def test_call_sites_are_kept_with_the_index(upstreams, tmp_path):
    # a second check of the release reads the calls from the index cache, not the sources
    _, new = upstreams
    source = resolve_upstream(new)
    index = load_index(source)
    ref = index.resolve(f"{WU}.filter_files").ref
    first = call_sites(index, ref)
    index.save()
    again = load_index(source)
    assert again.cached_analysis(f"call_sites:function:{WU}:filter_files") is not None
    assert call_sites(again, ref) == first and again._sources is None


def test_a_method_name_called_all_over_the_release_is_not_scanned(upstreams, monkeypatch):
    # each candidate module is parsed: past the cap a method's calls are unsure (their receivers
    # cannot all be placed) and a verdict stands as it was; a module-level function's calls are
    # always placed (each reaches it through an import of its module or name)
    from harness.knowledge.judge import callsites

    monkeypatch.setattr(callsites, "MAX_MODULES", 0)
    _, new = upstreams
    index = SymbolIndex(resolve_upstream(new), use_cache=False)  # not the answer an earlier check kept
    # up to MAX_SHAPED modules each call is still read for its argument list, its receiver not placed
    sites = call_sites(index, index.resolve(f"{SCHED}._evict").ref)
    assert sites.calls == [] and {s.receiver.split(" (")[0] for s in sites.unsure} == {"self._evict"} and all(s.call_read for s in sites.unsure), sites
    monkeypatch.setattr(callsites, "MAX_SHAPED", 0)
    index = SymbolIndex(resolve_upstream(new), use_cache=False)
    sites = call_sites(index, index.resolve(f"{SCHED}._evict").ref)
    assert sites.calls == [] and "not scanned" in sites.unsure[0].receiver
    placed = call_sites(index, index.resolve(f"{WU}.filter_files").ref)
    assert {s.path for s in placed.calls} == {"sglang/srt/model_loader/loader.py"} and not placed.unsure, placed
