"""A small SGLang-shaped upstream in two versions (0.9.0 -> 0.10.0) for the tests of the
finding kinds of issue 18 (exception scope, plugin-private platform methods, generated
constructors, members set at run time, liveness, false unknowns), and the helpers that write a
plugin and run `harness check` on it as a user would."""

from __future__ import annotations

from pathlib import Path

from knowledge_support import harness_json, write_tree
from sglang_api import DEVICE_MIXIN, HOOK_REGISTRY

IFACE = "sglang.srt.platforms.interface.SRTPlatform"

COMMON = {
    "sglang/__init__.py": "from sglang.version import __version__\n",
    "sglang/srt/platforms/__init__.py": """
        current_platform = None
        """,
    "sglang/srt/platforms/device_mixin.py": DEVICE_MIXIN,
    "sglang/srt/platforms/interface.py": """
        from sglang.srt.platforms.device_mixin import DeviceMixin

        class SRTPlatform(DeviceMixin):
            def get_default_attention_backend(self) -> str:
                raise NotImplementedError

            def get_mha_kv_pool_cls(self) -> type:
                raise NotImplementedError

            def init_backend(self) -> None:
                pass
        """,
    "sglang/srt/plugins/__init__.py": "",
    "sglang/srt/plugins/hook_registry.py": HOOK_REGISTRY,
    "sglang/srt/layers/__init__.py": "",
    "sglang/srt/layers/sampler.py": """
        from torch import nn

        class Sampler(nn.Module):
            def forward(self, logits, *, temperature=1.0):
                return logits
        """,
    "sglang/srt/layers/attention/__init__.py": "",
    "sglang/srt/layers/attention/attention_registry.py": """
        ATTENTION_BACKENDS = {}

        def register_attention_backend(name):
            def decorator(fn):
                ATTENTION_BACKENDS[name] = fn
                return fn
            return decorator
        """,
    "sglang/srt/models/__init__.py": "",
    "sglang/srt/managers/__init__.py": "",
    "sglang/srt/managers/scheduler.py": """
        class Scheduler:
            def get_next_batch(self):
                return None
        """,
}

OLD = {
    **COMMON,
    "sglang/version.py": '__version__ = "0.9.0"\n',
    "sglang/srt/layers/torchao_utils.py": """
        def apply_torchao_config_to_model(model, torchao_config, filter_fn=None):
            return model

        FILTERS = []
        """,
    "sglang/srt/layers/quantization/__init__.py": "",
    "sglang/srt/layers/quantization/fp8_utils.py": """
        def fp8_gemm(a, b):
            return a
        """,
}

# 0.10.0's platform interface in the tests where it drops get_mha_kv_pool_cls
INTERFACE_WITHOUT_MHA_POOL = {"sglang/srt/platforms/interface.py": """
    from sglang.srt.platforms.device_mixin import DeviceMixin

    class SRTPlatform(DeviceMixin):
        def get_default_attention_backend(self) -> str:
            raise NotImplementedError

        def init_backend(self) -> None:
            pass
    """}

NEW = {
    **COMMON,
    "sglang/version.py": '__version__ = "0.10.0"\n',
    # torchao_utils and fp8_utils are gone
    "sglang/srt/layers/quantization/__init__.py": "",
}


def upstream_pair(tmp_path_factory, old: dict | None = None, new: dict | None = None) -> tuple[str, str]:
    """Write the two versions (plus extra or replaced files) and return their paths."""
    old_dir, new_dir = tmp_path_factory.mktemp("up-old"), tmp_path_factory.mktemp("up-new")
    write_tree(old_dir, {**OLD, **(old or {})})
    write_tree(new_dir, {**NEW, **(new or {})})
    return str(old_dir), str(new_dir)


def plugin(tmp_path: Path, files: dict[str, str], name: str = "p") -> Path:
    root = tmp_path / name
    write_tree(root, files)
    return root


def pyproject(plugins: dict[str, str] | None = None, platforms: dict[str, str] | None = None) -> str:
    text = '[project]\nname = "p"\nversion = "0.1"\n'
    for group, table in (("sglang.srt.platforms", platforms), ("sglang.srt.plugins", plugins)):
        if table:
            text += f'[project.entry-points."{group}"]\n' + "".join(f'{k} = "{v}"\n' for k, v in table.items())
    return text


def check(root: Path, upstream: str, *extra: str) -> tuple[int, dict]:
    """`harness check --json` on the plugin: (exit code, document)."""
    return harness_json("check", "--plugin", str(root), "--upstream", upstream, *extra)


# A plugin module `pd.legacy` importing `sglang.srt.layers.torchao_utils`, which 0.10.0 dropped, and
# a `pd.fast` that imports nothing: what a spelling imports decides whether `check` is red.
LEGACY = "import sglang.srt.layers.torchao_utils as torchao_utils\n\n\ndef quantize(model):\n    return torchao_utils.apply_torchao_config_to_model(model, 'int8')\n"
FAST = "def quantize(model):\n    return model\n"


def judge_legacy(tmp_path: Path, upstream: str, source: str, imported: bool, extra: dict[str, str] | None = None) -> None:
    """`check` of a plugin whose pd/__init__.py is `source` (plus `extra` files): pd.legacy's
    dropped import is live and breaking (exit 1) where `imported`, not breaking (exit 0) where
    not. (pd/__init__ also imports the sampler: a live dependency either way, so a green check
    checked something.)"""
    files = {"pyproject.toml": pyproject(plugins={"pd": "pd:register"}), "pd/__init__.py": "from sglang.srt.layers.sampler import Sampler\n" + source,
             "pd/legacy.py": LEGACY, "pd/fast.py": FAST, **(extra or {})}
    code, doc = check(plugin(tmp_path, files), upstream)
    legacy = [f for f in doc["findings"] if f["file"] == "pd/legacy.py" and f["target"].startswith("sglang.srt.layers.torchao_utils")]
    assert legacy, doc["findings"]
    assert (any(f["live"] and f["breaking"] for f in legacy), code) == ((True, 1) if imported else (False, 0)), doc["findings"]


def judge_torchao_patch(tmp_path: Path, upstreams: tuple[str, str], source: str, extra: dict[str, str] | None = None) -> None:
    """`check` of a plugin whose p/__init__.py is `source` (plus `extra` files), patching upstream's
    torchao_utils.apply_torchao_config_to_model through a module it imports by name: the patch ok
    on 0.9.0 (exit 0), the module's import missing on 0.10.0 (exit 1)."""
    root = plugin(tmp_path, {"pyproject.toml": pyproject(plugins={"p": "p:register"}), "p/__init__.py": source, **(extra or {})})
    found = {}
    for upstream in upstreams:
        code, doc = check(root, upstream)
        found[upstream] = (code, sorted((f["kind"], f["status"]) for f in doc["findings"] if f["target"].startswith("sglang.srt.layers.torchao_utils")))
    old, new = upstreams
    assert found[old][0] == 0 and ("patch", "ok") in found[old][1], found
    assert found[new][0] == 1 and ("import", "missing") in found[new][1], found
