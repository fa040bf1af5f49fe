"""Resolution on real SGLang release wheels (0.5.11 and 0.5.23, read through the product's own
resolver): classes rebuilt by calls, members of torch.nn.Module subclasses, colon targets,
instance attributes, and every name a release binds resolving without a crash."""

from __future__ import annotations

import pytest

from harness.errors import HarnessError
from harness.knowledge.upstream.external import ExternalMembers
from harness.knowledge.upstream.index import Outcome, Ref, SymbolIndex
from harness.knowledge.upstream.source import UNREACHABLE, resolve_upstream

pytestmark = [pytest.mark.network, pytest.mark.slow]

RMSNORM = "sglang.srt.layers.layernorm.RMSNorm"
SAMPLER = "sglang.srt.layers.sampler.Sampler"
SERVER_ARGS = "sglang.srt.server_args.ServerArgs"


@pytest.fixture(scope="module")
def sources(tmp_path_factory):
    # the same cache as the autouse isolated_cache (module fixtures run before it)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HARNESS_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "harness-cache"))
        try:
            return {version: resolve_upstream(f"sglang=={version}") for version in ("0.5.11", "0.5.23")}
        except HarnessError as exc:
            if UNREACHABLE in str(exc):
                pytest.skip(str(exc))
            raise


@pytest.fixture(scope="module")
def members_cache(tmp_path_factory):
    return tmp_path_factory.mktemp("external") / "members.json"


def index(sources, version: str, members_cache) -> SymbolIndex:
    return SymbolIndex(sources[version], external=ExternalMembers(cache_file=members_cache))


@pytest.mark.parametrize(
    "version, target, outcome, owner",
    [
        # Sampler(nn.Module): the method is gone by 0.5.17, and torch.nn.Module does not have it
        ("0.5.11", f"{SAMPLER}._attach_logprobs_to_output", Outcome.resolved, SAMPLER),
        ("0.5.23", f"{SAMPLER}._attach_logprobs_to_output", Outcome.missing, None),
        ("0.5.11", f"{RMSNORM}.forward_cuda_typo", Outcome.missing, None),
        ("0.5.23", f"{RMSNORM}.forward_cuda_typo", Outcome.missing, None),
        ("0.5.11", f"{RMSNORM}.forward", Outcome.resolved, "sglang.srt.layers.utils.multi_platform.MultiPlatformOp"),
        ("0.5.23", f"{RMSNORM}.forward", Outcome.resolved, "sglang.kernels.fused_op.BaseFusedOp"),
        ("0.5.11", f"{RMSNORM}.to", Outcome.resolved, "torch.nn.Module"),
        ("0.5.23", f"{RMSNORM}.parameters", Outcome.resolved, "torch.nn.Module"),
        ("0.5.23", f"{RMSNORM}.__name__", Outcome.resolved, "builtins.type"),
        # ServerArgs = msgspec.defstruct("ServerArgs", …, namespace={… vars(ServerArgs) …}) in 0.5.23
        ("0.5.23", f"{SERVER_ARGS}.add_cli_args", Outcome.resolved, SERVER_ARGS),
        ("0.5.23", f"{SERVER_ARGS}.resolve_once", Outcome.resolved, SERVER_ARGS),
        ("0.5.23", f"{SERVER_ARGS}.__post_init__", Outcome.resolved, SERVER_ARGS),
        ("0.5.23", f"{SERVER_ARGS}.__struct_fields__", Outcome.resolved, "msgspec.defstruct()"),
        ("0.5.23", f"{SERVER_ARGS}.not_a_field_or_method", Outcome.undecided, None),  # fields computed at import
        ("0.5.11", f"{SERVER_ARGS}.resolve_once", Outcome.missing, None),  # a plain dataclass there
        ("0.5.11", f"{SERVER_ARGS}.__dataclass_fields__", Outcome.resolved, "@dataclasses.dataclass"),
        # a namedtuple built by a call
        ("0.5.11", "sglang.srt.distributed.parallel_state.TensorMetadata._make", Outcome.resolved, "collections.namedtuple()"),
        ("0.5.23", "sglang.srt.distributed.parallel_state.TensorMetadata.dtype", Outcome.resolved, None),
        # colon targets: pkgutil.resolve_name semantics
        ("0.5.23", "sglang.srt.managers.scheduler:Scheduler.__init__", Outcome.resolved, "sglang.srt.managers.scheduler.Scheduler"),
        ("0.5.23", "sglang.srt.managers.scheduler:Scheduler.no_such_method", Outcome.missing, None),
        ("0.5.23", "sglang.srt.utils.common:get_device_name", Outcome.resolved, None),
    ],
)
def test_real_targets(sources, members_cache, version, target, outcome, owner):
    resolution = index(sources, version, members_cache).resolve(target)
    assert resolution.outcome is outcome, resolution
    if owner:
        assert resolution.owner == owner, resolution
    if outcome is Outcome.missing and "Sampler" in target:
        assert "members of torch.nn.Module from" in resolution.note


def test_outside_members_are_asked_once_per_cache(sources, members_cache):
    warm = index(sources, "0.5.23", members_cache)
    assert warm.resolve(f"{RMSNORM}.forward_cuda_typo").outcome is Outcome.missing
    cached = index(sources, "0.5.11", members_cache)
    for name in ("forward_cuda_typo", "to", "state_dict", "__name__"):
        assert cached.resolve(f"{RMSNORM}.{name}").outcome is not Outcome.undecided
    assert cached.external.spawned == 0


def test_hook_targets_as_hook_registry_applies_them(sources, members_cache):
    upstream = index(sources, "0.5.23", members_cache)
    assert upstream.resolve_hook_target("sglang.srt.managers.scheduler:Scheduler.__init__").ok
    wrong = upstream.resolve_hook_target("sglang.srt.utils.common:get_device_name")
    assert wrong.outcome is Outcome.missing and "'common:get_device_name'" in wrong.note


def test_instance_attributes_of_a_real_class(sources, members_cache):
    upstream = index(sources, "0.5.23", members_cache)
    scheduler = upstream.resolve("sglang.srt.managers.scheduler.Scheduler").ref
    found = upstream.instance_attributes(scheduler)
    assert {"server_args", "enable_overlap", "page_size"} <= set(found.names)
    assert found.names["server_args"] > upstream.class_info(scheduler).lineno


@pytest.mark.parametrize("version", ["0.5.11", "0.5.23"])
def test_every_name_a_release_binds_resolves(sources, members_cache, version):
    """No crash, and never `missing`, for what the release's own modules bind: module-level
    names and class-body members under sglang/srt."""
    upstream = index(sources, version, members_cache)
    undecided = []
    for module in sorted(m for m in upstream.files if m.startswith("sglang.srt.")):
        table = upstream.table(module)
        for name in table.names:
            resolution = upstream.resolve(f"{module}.{name}")
            assert resolution.outcome is not Outcome.missing, resolution
            if resolution.outcome is Outcome.undecided:
                undecided.append(resolution)
        for qualname, info in table.classes.items():
            for name in info.members:
                assert upstream.member(Ref("class", module, qualname), name).ok
    # only names a module-level __getattr__ answers stay open
    assert all("__getattr__" in r.note for r in undecided), undecided[:3]
