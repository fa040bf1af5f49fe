"""String-keyed registries: a key the plugin reads from an upstream dict (`ATTENTION_BACKENDS["dsa"]`)
is a dependency like a name: ok where upstream puts the key in (its literal, a store, a registration
decorator called with it), missing and breaking where nothing does (KeyError), unknown where upstream
adds keys computed at run time (issue 18 kind 11, what-to-build 6, F39)."""

from __future__ import annotations

import pytest
from kinds_support import check, plugin, pyproject, upstream_pair
from knowledge_support import by_target, harness_json
from real_releases import real_releases

REG = "sglang.srt.layers.attention.attention_registry"
BACKENDS = f"{REG}.ATTENTION_BACKENDS"

REGISTRY_NEW = """
    ATTENTION_BACKENDS = {"torch_native": None}
    KERNELS = dict(fused_moe=None)

    def register_attention_backend(name):
        def decorator(fn):
            ATTENTION_BACKENDS[name] = fn
            return fn
        return decorator
    """
# the older release also registers a backend that the newer one dropped
REGISTRY_OLD = REGISTRY_NEW + """

    @register_attention_backend("dual_chunk_flash_attn")
    def create_dual_chunk(runner):
        return None
    """
ELSEWHERE = {  # keys put in from another module: a store, update, and a registration call
    "sglang/srt/layers/attention/triton_backend.py": """
        from sglang.srt.layers.attention import attention_registry as reg
        from sglang.srt.layers.attention.attention_registry import ATTENTION_BACKENDS, register_attention_backend

        ATTENTION_BACKENDS["triton"] = object
        reg.ATTENTION_BACKENDS.update({"fa3": object})
        register_attention_backend("aiter")(object)
        """,
}
OPEN = {  # one more module adds a computed key: a key not found is undecided then
    "sglang/srt/layers/attention/dynamic.py": """
        from sglang.srt.layers.attention.attention_registry import ATTENTION_BACKENDS

        for name in ("a", "b"):
            ATTENTION_BACKENDS[name + "_x"] = object
        """,
}


@pytest.fixture(scope="module")
def upstreams(tmp_path_factory):
    old, new = upstream_pair(tmp_path_factory, old={f"{REG.replace('.', '/')}.py": REGISTRY_OLD, **ELSEWHERE},
                             new={f"{REG.replace('.', '/')}.py": REGISTRY_NEW, **ELSEWHERE})
    _, computed = upstream_pair(tmp_path_factory, new={f"{REG.replace('.', '/')}.py": REGISTRY_NEW, **ELSEWHERE, **OPEN})
    return old, new, computed


def key_plugin(tmp_path, keys: list[str], kernels: bool = True):
    reads = "\n".join(f"    _ = ATTENTION_BACKENDS[{k!r}]" for k in keys)
    kernel_read = '    _ = KERNELS["fused_moe"]' if kernels else ""
    return plugin(tmp_path, {
        "pyproject.toml": pyproject(plugins={"chunk": "chunk:register"}),
        "chunk/__init__.py": f"""
from sglang.srt.layers.attention.attention_registry import ATTENTION_BACKENDS, register_attention_backend
{"from sglang.srt.layers.attention.attention_registry import KERNELS" if kernels else ""}


def register():
{reads}
{kernel_read}

    @register_attention_backend("chunk_own")
    def _create(runner):
        return None

    _ = ATTENTION_BACKENDS["chunk_own"]
""",
    })


def test_a_key_upstream_drops_is_missing_and_breaking(upstreams, tmp_path):
    old, new, _ = upstreams
    root = key_plugin(tmp_path, ["dual_chunk_flash_attn"])
    code, doc = check(root, old)
    assert code == 0 and not [f for f in doc["findings"] if f["kind"] == "registry_key"], doc["findings"]
    code, doc = check(root, new)
    finding = by_target(doc["findings"])[f"{BACKENDS}['dual_chunk_flash_attn']"]
    assert finding["status"] == "missing" and finding["breaking"] is True and finding["line"] == 6, finding
    assert "KeyError" in finding["detail"] and "torch_native" in finding["detail"]
    assert code == 1


def test_keys_put_in_anywhere_are_there(upstreams, tmp_path):
    _, new, _ = upstreams
    root = key_plugin(tmp_path, ["torch_native", "triton", "fa3", "aiter"])
    code, doc = check(root, new)
    assert code == 0 and not [f for f in doc["findings"] if f["kind"] == "registry_key"], doc["findings"]


def test_a_key_the_plugin_puts_in_itself_is_there(upstreams, tmp_path):
    _, new, _ = upstreams
    root = plugin(tmp_path, {
        "pyproject.toml": pyproject(plugins={"own": "own:register"}),
        "own/__init__.py": """
            from sglang.srt.layers.attention.attention_registry import ATTENTION_BACKENDS


            def register():
                ATTENTION_BACKENDS["own_backend"] = object
                return ATTENTION_BACKENDS["own_backend"]
            """,
    })
    code, doc = check(root, new)
    assert code == 0 and not [f for f in doc["findings"] if f["kind"] == "registry_key"], doc["findings"]


def test_computed_keys_make_an_absent_key_undecided(upstreams, tmp_path):
    _, _, computed = upstreams
    root = key_plugin(tmp_path, ["dual_chunk_flash_attn"])
    code, doc = check(root, computed)
    finding = by_target(doc["findings"])[f"{BACKENDS}['dual_chunk_flash_attn']"]
    assert finding["status"] == "unknown" and not finding["breaking"] and "dynamic.py:4" in finding["detail"], finding
    assert code == 3


def test_diff_lists_the_dropped_key(upstreams, tmp_path):
    old, new, _ = upstreams
    root = key_plugin(tmp_path, ["dual_chunk_flash_attn", "triton"])
    _, doc = harness_json("diff", "--from", old, "--to", new, "--plugin", str(root), "--out", str(tmp_path / "diff"))
    keys = [f for f in doc["findings"] if f["kind"] == "registry_key"]
    assert [(f["target"], f["status"], f["preexisting"]) for f in keys] == [(f"{BACKENDS}['dual_chunk_flash_attn']", "missing", False)]


@pytest.mark.network
@pytest.mark.slow
@pytest.mark.parametrize("version", ["0.5.11", "0.5.14", "0.5.17", "0.5.23"])
def test_real_release_attention_backend_keys(tmp_path, version):
    # attention_registry.py ATTENTION_BACKENDS = {} filled by @register_attention_backend(name): 0.5.14 :243 and
    # 0.5.17 :284 register "dual_chunk_flash_attn"; 0.5.23 does not (dual_chunk_flashattention_backend.py deleted).
    # "flashinfer" is registered on every release (0.5.14 :34, 0.5.17 :42).
    real_releases(f"sglang=={version}")
    root = key_plugin(tmp_path, ["dual_chunk_flash_attn", "flashinfer"], kernels=False)
    code, doc = check(root, f"sglang=={version}", "--baseline", "none")
    keys = {f["target"]: f for f in doc["findings"] if f["kind"] == "registry_key"}
    if version == "0.5.23":
        assert list(keys) == [f"{BACKENDS}['dual_chunk_flash_attn']"] and keys[f"{BACKENDS}['dual_chunk_flash_attn']"]["breaking"], keys
        assert code == 1
    else:
        assert keys == {} and code == 0, keys


# a registry merged from other module dicts with `**` (vLLM's _VLLM_MODELS = {**_TEXT_…, **_EMBEDDING_…}),
# directly, through two levels, or with a dict literal spread: the keys of each part are there
MERGED = {
    "spread_names": """
        _TEXT = {"LlamaForCausalLM": ("llama", "LlamaForCausalLM")}
        _EMBEDDING = {"BertModel": ("bert", "BertModel")}
        MODELS = {**_TEXT, **_EMBEDDING}
        """,
    "two_levels": """
        _TEXT = {"LlamaForCausalLM": ("llama", "LlamaForCausalLM")}
        _GENERATION = {**_TEXT}
        MODELS = {**_GENERATION, "BertModel": ("bert", "BertModel")}
        """,
    "literal_spread": """
        _TEXT = {"LlamaForCausalLM": ("llama", "LlamaForCausalLM")}
        MODELS = {**_TEXT, **{"BertModel": ("bert", "BertModel")}}
        """,
}


@pytest.mark.parametrize("spelling", sorted(MERGED))
def test_keys_of_a_registry_merged_with_spreads_are_there(tmp_path_factory, tmp_path, spelling):
    _, new = upstream_pair(tmp_path_factory, new={"sglang/srt/models/merged.py": MERGED[spelling]})
    root = plugin(tmp_path, {
        "pyproject.toml": pyproject(plugins={"m": "m:register"}),
        "m/__init__.py": """
            from sglang.srt.models.merged import MODELS


            def register():
                return MODELS["BertModel"], MODELS["LlamaForCausalLM"], MODELS["GoneForCausalLM"]
            """,
    })
    code, doc = check(root, new)
    keys = {f["target"].rsplit("[", 1)[-1]: f for f in doc["findings"] if f["kind"] == "registry_key"}
    assert set(keys) == {"'GoneForCausalLM']"}, keys
    assert keys["'GoneForCausalLM']"]["status"] == "missing" and code == 1


# the key is a preset of a partial of the plugin's function (twenty-sixth set F39-f2,
# `register_attention_backend(own)(functools.partial(_delegate, upstream_name))`): the function
# reads it when upstream calls the partial, as a call passing it would -- registered, kept in a
# table, preset by keyword; the key the release keeps is fine
PARTIALS = {
    "registered_factory": "        register_attention_backend('dev_' + name)(functools.partial(_delegate, name))\n",
    "kept_in_a_table": "        FACTORIES[name] = partial(_delegate, name)\n",
    "preset_by_keyword": "        register_attention_backend('dev_' + name)(partial(_delegate, upstream_name=name))\n",
}


@pytest.mark.parametrize("spelling", sorted(PARTIALS))
def test_a_key_a_partial_presets_is_read_where_the_partial_runs(upstreams, tmp_path, spelling):
    old, new, _ = upstreams
    root = plugin(tmp_path, {
        "pyproject.toml": pyproject(plugins={"chunk": "chunk:register"}),
        "chunk/__init__.py": ("import functools\nfrom functools import partial\n\n"
                              "from sglang.srt.layers.attention.attention_registry import ATTENTION_BACKENDS, register_attention_backend\n\n"
                              "FACTORIES = {}\n\n\ndef _delegate(upstream_name, runner):\n    return ATTENTION_BACKENDS[upstream_name](runner)\n\n\n"
                              "def register():\n    for name in ('dual_chunk_flash_attn', 'torch_native'):\n" + PARTIALS[spelling]),
    })
    code, doc = check(root, old)
    assert code == 0 and not [f for f in doc["findings"] if f["kind"] == "registry_key" and f["status"] != "ok"], doc["findings"]
    code, doc = check(root, new)
    keys = {f["target"]: (f["status"], f["breaking"]) for f in doc["findings"] if f["kind"] == "registry_key" and f["status"] != "ok"}
    assert keys == {f"{BACKENDS}['dual_chunk_flash_attn']": ("missing", True)} and code == 1, doc["findings"]


# the read is the fallback of a lookup keyed by run-time data (twenty-eighth set F39-h2): it runs
# whenever the run's key picks nothing, a run-time condition, so a key gone is breaking there
FALLBACKS = {
    "or_of_a_get_keyed_by_an_env_var": ("", "    factory = ATTENTION_BACKENDS.get(os.environ.get('DEV_BACKEND', '')) or ATTENTION_BACKENDS['dual_chunk_flash_attn']\n"),
    "if_not_get_of_a_config_value": ("", "    factory = ATTENTION_BACKENDS.get(os.environ['DEV_BACKEND'])\n    if not factory:\n"
                                         "        factory = ATTENTION_BACKENDS['dual_chunk_flash_attn']\n"),
    "conditional_expression_in_a_helper": ("def _pick(name):\n    return ATTENTION_BACKENDS.get(name) if ATTENTION_BACKENDS.get(name) "
                                           "else ATTENTION_BACKENDS['dual_chunk_flash_attn']\n\n\n",
                                           "    factory = _pick(os.environ.get('DEV_BACKEND', ''))\n"),
}


@pytest.mark.parametrize("spelling", sorted(FALLBACKS))
def test_a_fallback_read_after_a_lookup_keyed_by_run_time_data_breaks_at_run_time(upstreams, tmp_path, spelling):
    _, new, _ = upstreams
    helper, body = FALLBACKS[spelling]
    root = plugin(tmp_path, {
        "pyproject.toml": pyproject(plugins={"fb": "fb:register"}),
        "fb/__init__.py": ("import os\n\nfrom sglang.srt.layers.attention.attention_registry import ATTENTION_BACKENDS\n\n\n"
                           + helper + "def register():\n" + body + "    return factory\n"),
    }, name=spelling)
    code, doc = check(root, new)
    finding = by_target(doc["findings"])[f"{BACKENDS}['dual_chunk_flash_attn']"]
    assert (finding["status"], finding["breaking"], finding["guard"]["outcome"]) == ("missing", True, "runtime") and code == 1, (finding["guard"], finding["detail"])


# keys a loop takes from what the environment's defaults make (set 34 F39-p1): a deployment that sets
# none of the variables reads each default key; one the release dropped is a KeyError on that run
DEFAULTED = {
    "alias_table_parsed_from_a_default": ("_DEFAULT = 'npu_chunk=dual_chunk_flash_attn, npu_native=torch_native'\n\n\n"
                                          "def _parse(spec):\n    return dict(item.strip().split('=', 1) for item in spec.split(',') if item.strip())\n\n\n",
                                          "    for own, name in _parse(os.environ.get('DEV_ALIASES', _DEFAULT)).items():\n"),
    "names_split_from_getenv": ("", "    names = os.getenv('DEV_BACKENDS', 'torch_native:dual_chunk_flash_attn').split(':')\n"
                                    "    for name in names:\n"),
    "a_helper_reads_the_variable": ("def _backends():\n    raw = os.environ.get('DEV_BACKENDS', default='torch_native dual_chunk_flash_attn')\n"
                                    "    return [b for b in raw.split() if b]\n\n\n", "    for name in _backends():\n"),
}


@pytest.mark.parametrize("dropped", [True, False])
@pytest.mark.parametrize("spelling", sorted(DEFAULTED))
def test_keys_from_the_environments_defaults_are_read_on_that_run(upstreams, tmp_path, spelling, dropped):
    _, new, _ = upstreams
    helper, loop = DEFAULTED[spelling]
    if not dropped:  # (the same with a default naming only keys the release has)
        helper, loop = helper.replace("dual_chunk_flash_attn", "torch_native"), loop.replace("dual_chunk_flash_attn", "torch_native")
    root = plugin(tmp_path, {
        "pyproject.toml": pyproject(plugins={"fb": "fb:register"}),
        "fb/__init__.py": ("import os\n\nfrom sglang.srt.layers.attention.attention_registry import ATTENTION_BACKENDS\n\n\n"
                           + helper + "def register():\n" + loop + "        factory = ATTENTION_BACKENDS[name]\n"),
    }, name=f"{spelling}-{dropped}")
    code, doc = check(root, new)
    keys = {f["target"]: f for f in doc["findings"] if f["kind"] == "registry_key" and f["status"] != "ok"}
    if dropped:
        finding = keys[f"{BACKENDS}['dual_chunk_flash_attn']"]
        assert (finding["status"], finding["breaking"], finding["guard"]["outcome"]) == ("missing", True, "runtime") and code == 1, finding
        assert "is not set" in finding["guard"]["condition"], finding["guard"]
    else:
        assert not keys and code == 0, keys
