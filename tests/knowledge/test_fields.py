"""Fields of upstream objects the plugin reads (`forward_batch.token_to_kv_pool`,
`server_args.cuda_graph_bs`) are checked against what the class declares (issue 18 kind 12): the
class is known from the plugin's annotation, from the same-named parameter of the upstream
function a hook or an override stands in for, or because the variable is `server_args`. A field
is there when the class or a base declares it in any form Python finds on an instance; unknown
when the class answers names it does not list; missing, and breaking on a live unguarded read,
when it is certainly gone. A `hasattr` guard or a `try/except AttributeError` keeps it from
breaking; `getattr(v, "x", default)` is no dependency at all."""

from __future__ import annotations

import pytest
from kinds_support import check, plugin, pyproject, upstream_pair
from knowledge_support import harness_json

from harness.knowledge.upstream.index import load_index
from harness.knowledge.judge.core import Judge, dependencies
from harness.knowledge.scan.scanner import scan_plugin
from harness.knowledge.upstream.source import resolve_upstream

FBI = "sglang.srt.model_executor.forward_batch_info"
FB = f"{FBI}.ForwardBatch"
SA = "sglang.srt.server_args.ServerArgs"

FORWARD_BATCH = """
    from dataclasses import dataclass
    from typing import Optional

    import msgspec
    from pydantic import BaseModel


    class ForwardBatchMixin:
        mixin_level = 1

        def prepare_mixin(self):
            self.set_by_mixin = True


    @dataclass
    class ForwardBatch(ForwardBatchMixin):
        batch_size: int
        {OLD_FIELD}
        seq_lens: Optional[object] = None

        def __post_init__(self):
            self.set_in_init = 1
            setattr(self, "set_by_setattr", 2)

        @property
        def is_decode(self):
            return True

        def get_spec(self):
            return None


    class Slotted:
        __slots__ = ("slot_a",)


    class Settings(BaseModel):
        pydantic_field: int = 0


    class Packed(msgspec.Struct):
        struct_field: int = 0


    class Lazy:
        def __getattr__(self, name):
            return None


    class Filled:
        def __init__(self, names):
            for name in names:
                setattr(self, name, None)


    class KVCache:
        def get_key_buffer(self, layer_id):
            raise NotImplementedError


    class MHATokenToKVPool(KVCache):
        def __init__(self):
            self.k_buffer = []
    """
MODEL_RUNNER = """
    from sglang.srt.model_executor.forward_batch_info import ForwardBatch


    class ModelRunner:
        def forward(self, forward_batch: ForwardBatch, skip_attn_backend_init: bool = False):
            return None


    class AttentionBackend:
        def forward_decode(self, q, layer, forward_batch: "ForwardBatch", save_kv_cache=True):
            return q
    """
SERVER_ARGS = """
    import dataclasses
    from typing import List, Optional


    @dataclasses.dataclass
    class ServerArgs:
        model_path: str = ""
        {OLD_FIELD}
    """


def _files(forward_batch_field: str, server_args_field: str) -> dict[str, str]:
    return {
        "sglang/srt/model_executor/__init__.py": "",
        "sglang/srt/model_executor/forward_batch_info.py": FORWARD_BATCH.replace("{OLD_FIELD}", forward_batch_field),
        "sglang/srt/model_executor/model_runner.py": MODEL_RUNNER,
        "sglang/srt/server_args.py": SERVER_ARGS.replace("{OLD_FIELD}", server_args_field),
        # upstream code that sets a field on forward batches from outside the class
        "sglang/srt/managers/spec_worker.py": """
            def draft(forward_batch, pool):
                forward_batch.draft_pool = pool
            """,
    }


@pytest.fixture(scope="module")
def upstreams(tmp_path_factory):
    # 0.10.0 dropped ForwardBatch.token_to_kv_pool and ServerArgs.cuda_graph_bs
    return upstream_pair(
        tmp_path_factory,
        old=_files("token_to_kv_pool: object = None", "cuda_graph_bs: Optional[List[int]] = None"),
        new=_files("", ""),
    )


READS = """
from typing import Optional

import sglang.srt.model_executor.forward_batch_info as fbi
from sglang.srt.model_executor.forward_batch_info import ForwardBatch, Settings, Packed, Slotted, Lazy, Filled
from sglang.srt.model_executor.model_runner import AttentionBackend
from sglang.srt.plugins.hook_registry import HookRegistry, plugin_hook
from sglang.srt.server_args import ServerArgs


def annotated(fb: ForwardBatch):
    return fb.token_to_kv_pool


def annotated_optional(fb: Optional["fbi.ForwardBatch"]):
    return fb.token_to_kv_pool


def declared_forms(fb: ForwardBatch, settings: Settings, packed: Packed, slotted: Slotted):
    return (fb.batch_size, fb.seq_lens, fb.set_in_init, fb.set_by_setattr, fb.set_by_mixin, fb.mixin_level,
            fb.is_decode, fb.get_spec(), settings.pydantic_field, packed.struct_field, slotted.slot_a)


def undecided(lazy: Lazy, filled: Filled):
    return lazy.anything, filled.anything


def local_annotation():
    args: ServerArgs = make()
    return args.cuda_graph_bs


def server_args_by_name(server_args):
    return server_args.cuda_graph_bs


@plugin_hook("sglang.srt.model_executor.model_runner.ModelRunner.forward", type="before")
def before_forward(self, forward_batch, skip_attn_backend_init=False):
    return forward_batch.token_to_kv_pool


def around_forward(original_fn, self, forward_batch, **kwargs):
    return forward_batch.token_to_kv_pool


HookRegistry.register("sglang.srt.model_executor.model_runner.ModelRunner.forward", around_forward, "around")


class XpuBackend(AttentionBackend):
    def forward_decode(self, q, layer, forward_batch, save_kv_cache=True):
        return forward_batch.token_to_kv_pool


def untyped(batch, other):
    return batch.token_to_kv_pool, other.token_to_kv_pool


def make():
    return None


def register():
    pass


def pools(pool: fbi.KVCache):
    return pool.k_buffer, pool.v_buffer


def set_elsewhere(fb: ForwardBatch):
    return fb.draft_pool
"""


def _check(tmp_path, upstream: str, body: str) -> tuple[int, list[dict]]:
    root = plugin(tmp_path, {"pyproject.toml": pyproject(plugins={"fp": "fp:register"}), "fp/__init__.py": body})
    code, doc = check(root, upstream)
    return code, [f for f in doc["findings"] if f["kind"] == "field"]


def _judged(tmp_path, upstream: str, body: str) -> list[dict]:
    """Every field finding, ok ones included (the commands list plain uses only when wrong)."""
    root = plugin(tmp_path, {"pyproject.toml": pyproject(plugins={"fp": "fp:register"}), "fp/__init__.py": body})
    index = load_index(resolve_upstream(upstream))
    scan = scan_plugin(root, index)
    judge = Judge(index, scan)
    return [f.model_dump(mode="json") for f in map(judge, dependencies(scan)) if f is not None and f.kind == "field"]


def test_each_form_of_evidence_and_of_declaration(upstreams, tmp_path):
    old, new = upstreams
    on_old = {(f["line"], f["target"]): f for f in _judged(tmp_path / "old", old, READS)}
    statuses = {key: f["status"] for key, f in on_old.items()}
    # the base release declares every field read, in each form
    assert set(statuses.values()) == {"ok", "unknown", "missing"}, statuses
    assert [key for key, status in statuses.items() if status == "missing"] == [(66, f"{FBI}.KVCache.v_buffer")]
    declared = {target.rsplit(".", 1)[-1] for (line, target), status in statuses.items() if line in (19, 20)}
    assert declared == {"batch_size", "seq_lens", "set_in_init", "set_by_setattr", "set_by_mixin", "mixin_level",
                        "is_decode", "get_spec", "pydantic_field", "struct_field", "slot_a"}, declared
    assert statuses[(24, f"{FBI}.Lazy.anything")] == "unknown" and "__getattr__" in on_old[(24, f"{FBI}.Lazy.anything")]["detail"]
    assert statuses[(24, f"{FBI}.Filled.anything")] == "unknown" and "setattr" in on_old[(24, f"{FBI}.Filled.anything")]["detail"]
    # each form of evidence names the class: own annotation (also Optional["mod.X"]), a local
    # annotation, `server_args`, a decorator hook, a registered hook, an override
    assert {(line, target) for (line, target) in statuses if target.endswith((".token_to_kv_pool", ".cuda_graph_bs"))} == {
        (11, f"{FB}.token_to_kv_pool"), (15, f"{FBI}.ForwardBatch.token_to_kv_pool"), (29, f"{SA}.cuda_graph_bs"),
        (33, f"{SA}.cuda_graph_bs"), (38, f"{FB}.token_to_kv_pool"), (42, f"{FB}.token_to_kv_pool"), (50, f"{FB}.token_to_kv_pool"),
    }
    # parameters with no evidence (line 54) are not dependencies
    assert not [key for key in statuses if key[0] == 54]
    # a field only a subclass declares (the object may be one) is not certain to be missing
    subclass = on_old[(66, f"{FBI}.KVCache.k_buffer")]
    assert subclass["status"] == "unknown" and "MHATokenToKVPool" in subclass["detail"]
    assert statuses[(66, f"{FBI}.KVCache.v_buffer")] == "missing"
    # a field upstream sets on instances from outside the class (on some path) is not certain either
    outside = on_old[(70, f"{FB}.draft_pool")]
    assert outside["status"] == "unknown" and "spec_worker.py:2" in outside["detail"], outside

    code, findings = _check(tmp_path / "new", new, READS)
    missing = {(f["line"], f["target"]) for f in findings if f["status"] == "missing"}
    assert missing == {
        (11, f"{FB}.token_to_kv_pool"), (15, f"{FBI}.ForwardBatch.token_to_kv_pool"), (29, f"{SA}.cuda_graph_bs"),
        (33, f"{SA}.cuda_graph_bs"), (38, f"{FB}.token_to_kv_pool"), (42, f"{FB}.token_to_kv_pool"), (50, f"{FB}.token_to_kv_pool"),
        (66, f"{FBI}.KVCache.v_buffer"),
    }
    assert all(f["breaking"] for f in findings if f["status"] == "missing")
    assert "AttributeError" in next(f for f in findings if f["line"] == 11)["detail"]
    assert code == 1


def test_a_plugin_reading_only_declared_fields_is_green_on_its_base(upstreams, tmp_path):
    old, _ = upstreams
    body = READS.replace("return lazy.anything, filled.anything", "return None").replace("return pool.k_buffer, pool.v_buffer", "return None").replace(
        "return fb.draft_pool", "return None")
    root = plugin(tmp_path, {"pyproject.toml": pyproject(plugins={"fp": "fp:register"}), "fp/__init__.py": body})
    code, doc = check(root, old)
    # all 18 reads were judged (`checked` counts dependencies by kind) and none is reported
    assert doc["checked"]["field"] == 18 and not [f for f in doc["findings"] if f["kind"] == "field"] and code == 0, doc


GUARDED = """
from sglang.srt.model_executor.forward_batch_info import ForwardBatch


def guarded(fb: ForwardBatch):
    if hasattr(fb, "token_to_kv_pool"):
        return fb.token_to_kv_pool
    return None


def early_exit(fb: ForwardBatch):
    if not hasattr(fb, "token_to_kv_pool"):
        return None
    return fb.token_to_kv_pool


def with_default(fb: ForwardBatch):
    return getattr(fb, "token_to_kv_pool", None)


def without_default(fb: ForwardBatch):
    return getattr(fb, "token_to_kv_pool")


def caught(fb: ForwardBatch):
    try:
        return fb.token_to_kv_pool
    except AttributeError:
        return None


def set_by_the_plugin(fb: ForwardBatch):
    fb.plugin_cache = {}
    return fb.plugin_cache


def register():
    pass
"""


def test_guards_handlers_defaults_and_the_plugins_own_fields(upstreams, tmp_path):
    _, new = upstreams
    code, findings = _check(tmp_path, new, GUARDED)
    by_line = {f["line"]: f for f in findings}
    assert by_line[6]["status"] == "missing" and by_line[6]["guard"]["outcome"] == "skipped" and not by_line[6]["breaking"]
    assert by_line[13]["status"] == "missing" and by_line[13]["guard"]["outcome"] == "skipped" and not by_line[13]["breaking"]
    assert 17 not in by_line  # getattr with a default: no dependency
    assert by_line[21]["status"] == "missing" and by_line[21]["breaking"]
    assert by_line[26]["guard"]["outcome"] == "caught" and not by_line[26]["breaking"]
    assert 32 not in by_line and 33 not in by_line  # the plugin sets it itself
    judged = {f["line"]: f for f in _judged(tmp_path / "all", new, GUARDED)}
    assert 17 not in judged
    assert judged[33]["status"] == "ok" and "fp/__init__.py:32" in judged[33]["detail"], judged[33]
    assert [f["line"] for f in findings if f["breaking"]] == [21] and code == 1


def test_diff_shows_a_dropped_field_as_an_impact(upstreams, tmp_path):
    old, new = upstreams
    root = plugin(tmp_path, {"pyproject.toml": pyproject(plugins={"fp": "fp:register"}), "fp/__init__.py": READS})
    code, doc = harness_json("diff", "--from", old, "--to", new, "--plugin", str(root), "--out", str(tmp_path / "out"))
    assert code == 0, doc
    fields = [f for f in doc["findings"] if f["kind"] == "field"]
    dropped = {(f["line"], f["target"]) for f in fields if f["status"] == "missing" and f["breaking"] and not f["preexisting"]}
    assert (11, f"{FB}.token_to_kv_pool") in dropped and (33, f"{SA}.cuda_graph_bs") in dropped
    assert not [f for f in fields if f["successor"]]  # a same-named member elsewhere is no evidence of one
    # a field that is there on both sides is not an impact
    assert not [f for f in fields if f["target"].endswith((".batch_size", ".seq_lens"))]


# a write through the server-args name is a server_arg; one on an item of it (`args[2].x`, a
# hook's positional arguments; F30 variant u2) or on another object's attribute is not
WRITES = {
    "server_args_itself": ("server_args.cuda_graph_bs = 4", 1),
    "args_itself": ("args.cuda_graph_bs = 4", 1),
    "item_of_args": ("args[2].is_all_greedy = True", 0),
    "item_of_server_args": ("server_args[0].cuda_graph_bs = 4", 0),
    # setattr with a name that folds (twenty-eighth set F34-h1: a loop over a table of defaults)
    "setattr_of_a_constant": ("setattr(server_args, 'cuda_graph_bs', 4)", 1),
    "setattr_over_a_table": ("for name, value in {'cuda_graph_bs': 4}.items():\n        setattr(server_args, name, value)", 1),
    "setattr_over_a_comprehension": ("[setattr(args, name, None) for name in ('cuda_graph_bs',)]", 1),
    "setattr_of_a_name_a_run_gives": ("setattr(server_args, args.name, 4)", 0),
}


@pytest.mark.parametrize("spelling", sorted(WRITES))
def test_only_a_write_on_the_server_args_name_is_a_server_arg(upstreams, tmp_path, spelling):
    old, _ = upstreams
    statement, counted = WRITES[spelling]
    root = plugin(tmp_path, {"pyproject.toml": pyproject(plugins={"fp": "fp:register"}),
                             "fp/__init__.py": ("from sglang.srt.server_args import ServerArgs  # noqa: F401\n\n\n"
                                                f"def tune(server_args, args):\n    {statement}\n\n\ndef register():\n    pass\n")})
    code, doc = check(root, old)
    assert doc["checked"].get("server_arg", 0) == counted and code == 0, doc
