"""A vLLM plugin on its own base release is red only for what really fails there (issue 21, with
issue 18's standard). Kinds found false on the real Kunlun plugin (vllm-kunlun 0.11.1 on vllm
0.11.0), each on a small tree shaped like the release's code:
- a patch that sets a name its upstream object does not have: an addition of the plugin's own
  (`setattr(configs, "KimiK25Config", …)`, looked up later through the plugin's registry of
  names), `unknown` without evidence, `missing` when the baseline had it or the release still
  names it;
- an override of a method declared on a typing Protocol (`SupportsPP.forward`): an interface,
  breaking only through a call upstream makes;
- upstream calls that cannot land on an override: `super().m(…)` in another upstream subclass,
  `self.m(…)` inside a method the plugin class redefines;
- `Base[T].method(self, …)` is a method call through a generic class, not a constructor call;
- a member upstream assigns on the layer handed to it (`layer.weight_block_size = …` in
  create_weights): undecided, as a field set from outside the class is;
- code inside a plugin method nothing calls (a leftover `is_hpu` override; a CustomOp's
  `forward_kunlun`, which vLLM's dispatch_forward never picks, though an unrelated plugin class
  reads its own `self.forward_kunlun`) cannot fail; one read through a receiver of unknown class
  (`op.forward_xpu`) may run;
- a class the platform names only in one branch (`if use_v1: return "…v1…"` else the V0 backend)
  whose module cannot even be imported on the release (names it imports were dropped): a plugin
  run there cannot be taking that branch, so what the module holds is undecided, not breaking;
  the other branch's module, which imports, and a class named unconditionally stay breaking;
- a field read on an upstream object that a plugin subclass of its class declares (vllm-spyre's
  scheduler reads `tkv` off the ModelRunnerOutput its CBSpyreModelRunnerOutput adds it to): the
  object may be the plugin's, so undecided, not missing; so is one the plugin sets by name on some
  object (vllm-rbln's create_weights: `layer.register_parameter("w13_weight_scale_inv", …)`);
- a platform method no base declares that upstream calls on the current platform
  (`current_platform.discover_numa_topology()`, which only upstream's CpuPlatform defines): the
  plugin's platform provides it, an extension, not a method upstream stopped calling;
- what the plugin itself provides: a name its patch adds to a class that its patched methods read
  through self; a plugin method grafted onto an upstream class (`QwenGDN._forward_core =
  AscendGDN._forward_core`, vllm-ascend), whose self is then a QwenGDN; a member only a plugin
  subclass defines; a self member read under `hasattr(self, …)`;
- an override narrowing a parameter (`send(self, tensor, dst)` over `dst=None`) whose upstream
  calls go through an attribute annotated with the base class (`device_communicator:
  Optional[DeviceCommunicatorBase]`) and all pass it: those calls are placed, and bind; calls of
  the same name on an unrelated class's instance (a parameter annotated `GroupCoordinator`, what
  `get_tp_group() -> GroupCoordinator` returns) or on another library's object (a zmq socket made
  by `Context().socket(SUB)`) cannot reach it; one on a receiver the source cannot place
  (`sock = make_socket(path)`) leaves the verdict `unknown`, not breaking.
"""

from __future__ import annotations

import pytest
from knowledge_support import by_target, harness_json, write_tree

LINEAR = "vllm.model_executor.layers.linear"
CONFIGS = "vllm.transformers_utils.configs"
PROC = "vllm.model_executor.models.processing"

UPSTREAM = {
    "vllm/__init__.py": "from .version import __version__\n",
    "vllm/version.py": "__version__ = '0.11.0'\n",
    "vllm/platforms/__init__.py": "current_platform = None\n",
    "vllm/platforms/interface.py": """
        import enum


        class PlatformEnum(enum.Enum):
            CUDA = enum.auto()
            OOT = enum.auto()


        class Platform:
            _enum: PlatformEnum

            def is_cuda(self) -> bool:
                return self._enum == PlatformEnum.CUDA

            @classmethod
            def get_device_name(cls, device_id: int = 0) -> str:
                raise NotImplementedError
        """,
    "vllm/transformers_utils/__init__.py": "",
    "vllm/transformers_utils/configs/__init__.py": """
        class ChatGLMConfig:
            pass
        """,
    "vllm/transformers_utils/config.py": """
        _CONFIG_REGISTRY = {"chatglm": "ChatGLMConfig"}


        def get_config(model_type):
            import vllm.transformers_utils.configs as configs

            return getattr(configs, _CONFIG_REGISTRY[model_type])()
        """,
    "vllm/attention/__init__.py": "",
    "vllm/attention/backends/__init__.py": "",
    "vllm/attention/backends/utils.py": """
        def get_num_prefill_decode_query_kv_tokens(attn_metadata):
            return 0
        """,
    "vllm/v1/__init__.py": "",
    "vllm/v1/attention/__init__.py": "",
    "vllm/v1/outputs.py": """
        from dataclasses import dataclass


        @dataclass
        class ModelRunnerOutput:
            req_ids: list
        """,
    "vllm/v1/attention/backend.py": """
        class AttentionBackend:
            @staticmethod
            def get_name() -> str:
                raise NotImplementedError
        """,
    "vllm/distributed/__init__.py": "",
    "vllm/distributed/device_communicators/__init__.py": "",
    "vllm/distributed/device_communicators/base_device_communicator.py": """
        class DeviceCommunicatorBase:
            def __init__(self, cpu_group, device=None):
                self.cpu_group = cpu_group

            def send(self, tensor, dst=None):
                pass

            def recv(self, size, src=None):
                pass

            def gather(self, input_, dst=0):
                pass
        """,
    "vllm/distributed/parallel_state.py": """
        from typing import Optional

        import torch.distributed

        from vllm.distributed.device_communicators.base_device_communicator import DeviceCommunicatorBase


        class GroupCoordinator:
            device_communicator: Optional[DeviceCommunicatorBase]

            def send(self, tensor, dst):
                self.device_communicator.send(tensor, dst)

            def barrier(self, tensor):
                torch.distributed.send(tensor)

            def recv(self, size, src):
                return self.device_communicator.recv(size, src)

            def gather(self, input_, dst):
                return self.device_communicator.gather(input_, dst)


        def get_tp_group() -> GroupCoordinator:
            return GroupCoordinator()


        def gather_all(tensor, cp_group: Optional["GroupCoordinator"]):
            get_tp_group().send(tensor)
            return cp_group.gather(tensor)
        """,
    "vllm/distributed/device_communicators/shm_broadcast.py": """
        from zmq import SUB, Context


        class MessageQueue:
            def __init__(self, remote):
                context = Context()
                self.socket = context.socket(SUB) if remote else None

            def wait(self):
                self.socket.send(b"READY")
                return self.socket.recv()
        """,
    "vllm/distributed/nixl.py": """
        from vllm.platforms import current_platform


        def cores():
            return current_platform.discover_numa_topology()
        """,
    "vllm/distributed/kv_connector.py": """
        def make_socket(path):
            return path


        def query(path):
            sock = make_socket(path)
            return sock.recv()
        """,
    "vllm/tool_parsers/__init__.py": "",
    "vllm/tool_parsers/ds_parser.py": """
        class DSParser:
            def extract(self, text):
                return text
        """,
    "vllm/tool_parsers/other_parser.py": """
        class OtherParser:
            def _convert_param_value(self, value):
                return value
        """,
    "vllm/model_executor/layers/gdn.py": """
        class GDNBase:
            def __init__(self, prefix):
                self.prefix = prefix


        class QwenGDN(GDNBase):
            def __init__(self, prefix):
                super().__init__(prefix)
                self.conv1d = None
        """,
    "vllm/model_executor/__init__.py": "",
    "vllm/model_executor/layers/__init__.py": "",
    "vllm/model_executor/layers/linear.py": """
        class LinearBase:
            def __init__(self, quant_method):
                self.quant_method = quant_method
                self.quant_method.create_weights(self)


        class ColumnParallelLinear(LinearBase):
            def weight_loader(self, param):
                assert hasattr(self, "weight_block_size")
                return self.weight_block_size


        class RowParallelLinear(LinearBase):
            def weight_loader_v2(self, param):
                return param


        class ReplicatedLinear(LinearBase):
            pass
        """,
    "vllm/model_executor/layers/quantization/__init__.py": "",
    "vllm/model_executor/layers/quantization/fp8.py": """
        class Fp8LinearMethod:
            def create_weights(self, layer):
                layer.weight_block_size = None
        """,
    "vllm/model_executor/custom_op.py": """
        class CustomOp:
            def forward_native(self, *args, **kwargs):
                raise NotImplementedError

            def forward_cuda(self, *args, **kwargs):
                raise NotImplementedError

            def dispatch_forward(self):
                return self.forward_cuda
        """,
    "vllm/model_executor/models/__init__.py": "",
    "vllm/model_executor/models/interfaces.py": """
        from typing import Protocol, runtime_checkable


        @runtime_checkable
        class SupportsPP(Protocol):
            def forward(self, *, intermediate_tensors):
                ...
        """,
    "vllm/model_executor/models/processing.py": """
        from typing import Generic, TypeVar

        _I = TypeVar("_I")


        class BaseProcessor(Generic[_I]):
            def __init__(self, info, dummy_inputs, *, cache=None):
                self.info = info

            def _validate(self, placeholders, counts):
                pass


        class OmniProcessor(BaseProcessor[int]):
            def _validate(self, placeholders, counts, use_audio=False):
                pass

            def _apply(self, placeholders, counts):
                self._validate(placeholders, counts, use_audio=True)


        class InfoBase:
            def frames(self, seq_len, counts, max_frames=4):
                return max_frames

            def max_tokens(self, seq_len, counts):
                return self.frames(seq_len, counts, max_frames=2)


        class Info3(InfoBase):
            def frames(self, seq_len, counts):
                return super().frames(seq_len, counts, max_frames=8)
        """,
}

# the release the plugin was written against: ReplicatedLinear still had get_weights
BASELINE = {
    **UPSTREAM,
    "vllm/version.py": "__version__ = '0.10.0'\n",
    "vllm/model_executor/layers/linear.py": UPSTREAM["vllm/model_executor/layers/linear.py"] + """

        def _weights(self):
            return None


        ReplicatedLinear.get_weights = _weights
        """,
}

PLUGIN = {
    "pyproject.toml": """
        [project]
        name = "kp"
        version = "0.11.0"

        [project.entry-points."vllm.platform_plugins"]
        kp = "kp:register"

        [project.entry-points."vllm.general_plugins"]
        kp_models = "kp.models:load"
        """,
    "kp/__init__.py": """
        def register():
            import vllm.transformers_utils.config as config_module
            import vllm.transformers_utils.configs as configs_module

            from kp.configs import KConfig, KVisionConfig
            from kp.registry import REGISTRY

            config_module._CONFIG_REGISTRY = REGISTRY
            setattr(configs_module, "KConfig", KConfig)
            setattr(configs_module, "KVisionConfig", KVisionConfig)
            return "kp.platform.KPlatform"
        """,
    "kp/registry.py": """
        REGISTRY = {"chatglm": "ChatGLMConfig", "k": "KConfig"}
        """,
    "kp/configs.py": """
        class KVisionConfig:
            pass


        class KConfig:
            sub_configs = {"vision_config": KVisionConfig}
        """,
    "kp/platform.py": """
        from vllm.platforms.interface import Platform, PlatformEnum


        class KPlatform(Platform):
            _enum = PlatformEnum.CUDA

            def is_hpu(self) -> bool:
                return self._enum == PlatformEnum.HPU

            def is_kunlun(self) -> bool:
                return self._enum == PlatformEnum.XPU

            @classmethod
            def get_attn_backend_cls(cls, selected_backend, head_size, dtype, kv_cache_dtype, block_size, use_v1, use_mla):
                if use_v1:
                    return "kp.attn_v1.KBackend"
                return "kp.attn_v0.KBackendV0"

            @classmethod
            def get_device_communicator_cls(cls) -> str:
                return "kp.comm.KCommunicator"

            @classmethod
            def discover_numa_topology(cls):
                return []
        """,
    "kp/parser_patch.py": """
        from vllm.tool_parsers.ds_parser import DSParser


        def _convert_param_value(self: DSParser, value):
            return value


        def _emit_delta(self: DSParser, value):
            return self._convert_param_value(value)


        DSParser._convert_param_value = _convert_param_value
        DSParser._emit_delta = _emit_delta
        """,
    "kp/gdn.py": """
        from vllm.model_executor.layers.gdn import GDNBase, QwenGDN


        class KGDN(GDNBase):
            def _forward_core(self, x):
                return self.conv1d(x)

            def run(self, x):
                return self._nz_view(x), self.state()

            def sizes(self):
                if hasattr(self, "output_sizes"):
                    return self.output_sizes
                return []

            def state(self):
                return self.no_such_state


        class KGDNPlain(KGDN):
            pass


        class KGDNSub(KGDN):
            def _nz_view(self, x):
                return x


        QwenGDN._forward_core = KGDN._forward_core
        """,
    "kp/attn_v1.py": """
        from vllm.v1.attention.backend import AttentionBackend


        class KBackend(AttentionBackend):
            @staticmethod
            def get_name() -> str:
                return AttentionBackend.no_such_helper()
        """,
    "kp/attn_v0.py": """
        from vllm.attention.backends.utils import compute_slot_mapping
        from vllm.v1.attention.backend import AttentionBackend


        class KBackendV0(AttentionBackend):
            @staticmethod
            def get_name() -> str:
                return compute_slot_mapping.__name__
        """,
    "kp/comm.py": """
        from vllm.distributed.device_communicators.base_device_communicator import DeviceCommunicatorBase
        from vllm.distributed.parallel_state import get_world_group


        class KCommunicator(DeviceCommunicatorBase):
            def send(self, tensor, dst):
                return get_world_group, tensor, dst

            def recv(self, size, src):
                return size, src

            def gather(self, input_, dst):
                return input_, dst
        """,
    "kp/linear.py": """
        from vllm.model_executor.layers.linear import ColumnParallelLinear, ReplicatedLinear


        def get_weights(self):
            return self.weight


        def _loader_v2(self, param):
            return param


        ReplicatedLinear.get_weights = get_weights
        ColumnParallelLinear.weight_loader_v2 = _loader_v2


        class KQKVLinear(ColumnParallelLinear):
            def weight_loader(self, param):
                block = self.weight_block_size
                return self.no_such_member, block


        import kp.gdn  # noqa: E402,F401
        import kp.ops  # noqa: E402,F401
        import kp.runner  # noqa: E402,F401
        import kp.parser_patch  # noqa: E402,F401
        """,
    "kp/runner.py": """
        from dataclasses import dataclass

        from vllm.model_executor.layers.linear import LinearBase
        from vllm.v1.outputs import ModelRunnerOutput


        @dataclass
        class KRunnerOutput(ModelRunnerOutput):
            tkv: int = 0


        def update(output: ModelRunnerOutput):
            return output.tkv, output.no_such_field


        class KMoEMethod:
            def create_weights(self, layer):
                layer.register_parameter("w13_scale_inv", None)

            def apply(self, layer: LinearBase):
                return layer.w13_scale_inv
        """,
    "kp/ops.py": """
        from vllm.model_executor.custom_op import CustomOp


        class KGELU(CustomOp):
            def forward_cuda(self, x):
                return x

            def forward_kunlun(self, x):
                from vllm._kunlun_ops import KunlunOps

                return KunlunOps.gelu(x)


        class KSiLU(CustomOp):
            def forward_xpu(self, x):
                from vllm._kunlun_ops import KunlunOps

                return KunlunOps.silu(x)


        class KSampler:
            def __init__(self):
                self.forward = self.forward_kunlun

            def forward_kunlun(self, x):
                return x


        def pick(op):
            return op.forward_xpu
        """,
    "kp/models.py": """
        from vllm.model_executor.models.interfaces import SupportsPP
        from vllm.model_executor.models.processing import BaseProcessor, InfoBase, OmniProcessor
        from vllm.platforms import current_platform

        import kp.linear  # noqa: F401


        class KModel(SupportsPP):
            def forward(self, input_ids, positions, intermediate_tensors=None):
                return input_ids


        class KProcessor(OmniProcessor):
            def _apply(self, placeholders, counts):
                self._validate(placeholders, counts)

            def _validate(self, placeholders, counts):
                BaseProcessor[int]._validate(self, placeholders, counts)


        class KInfo3(InfoBase):
            def frames(self, seq_len, counts):
                return super().frames(seq_len, counts, max_frames=8)

            def max_tokens(self, seq_len, counts):
                return self.frames(seq_len, counts)


        class KInfoStale(InfoBase):
            def frames(self, seq_len, counts):
                return 1


        def load():
            return current_platform.is_kunlun()
        """,
}


@pytest.fixture(scope="module")
def trees(tmp_path_factory):
    root = tmp_path_factory.mktemp("own-base")
    write_tree(root / "up", UPSTREAM)
    write_tree(root / "baseline", BASELINE)
    write_tree(root / "plugin", PLUGIN)
    return root


@pytest.fixture(scope="module")
def checked(trees):
    code, doc = harness_json("check", "--plugin", str(trees / "plugin"), "--upstream", str(trees / "up"), "--baseline", "none")
    return code, by_target(doc["findings"]), doc


def test_a_patch_adding_a_name_the_plugin_looks_up_is_its_own(checked):
    _, found, _ = checked
    added = found[f"{CONFIGS}.KConfig"]
    assert (added["status"], added["breaking"]) == ("extension", False), added
    assert "kp/registry.py:1" in added["detail"]
    # added, but read by nothing the scan sees, and no baseline: undecided, not breaking
    for target in (f"{CONFIGS}.KVisionConfig", f"{LINEAR}.ReplicatedLinear.get_weights"):
        assert (found[target]["status"], found[target]["breaking"]) == ("unknown", False), found[target]
        assert "--baseline" in found[target]["detail"]
    # a name the release still has elsewhere (RowParallelLinear.weight_loader_v2): a replacement gone from here
    moved = found[f"{LINEAR}.ColumnParallelLinear.weight_loader_v2"]
    assert (moved["status"], moved["breaking"]) == ("missing", True), moved


def test_a_patch_over_what_the_baseline_had_stays_missing(trees):
    code, doc = harness_json("check", "--plugin", str(trees / "plugin"), "--upstream", str(trees / "up"), "--baseline", str(trees / "baseline"))
    found = by_target(doc["findings"])
    replaced = found[f"{LINEAR}.ReplicatedLinear.get_weights"]
    assert (replaced["status"], replaced["breaking"]) == ("missing", True), replaced
    # the baseline lacked it too: an addition
    added = found[f"{CONFIGS}.KVisionConfig"]
    assert (added["status"], added["breaking"]) == ("extension", False), added
    assert code == 1


def test_an_override_of_a_protocol_method_breaks_only_through_a_call(checked):
    _, found, _ = checked
    forward = found["vllm.model_executor.models.interfaces.SupportsPP.forward"]
    assert (forward["status"], forward["breaking"]) == ("signature_changed", False), forward
    assert "typing.Protocol" in forward["detail"]


def test_calls_that_cannot_reach_an_override_do_not_break_it(checked):
    _, found, doc = checked
    overrides = {(f["file"], f["line"]): f for f in doc["findings"] if f["kind"] == "subclass" and f["status"] == "signature_changed"}
    # upstream's OmniProcessor._apply calls self._validate(…, use_audio=True), but KProcessor has its own _apply
    validate = found[f"{PROC}.OmniProcessor._validate"]
    assert not validate["breaking"] and "processing.py:" in validate["detail"] and "cannot reach" in validate["detail"], validate
    # Info3's super().frames(…) runs InfoBase.frames; KInfo3 redefines max_tokens, the other caller
    info3 = overrides[("kp/models.py", 22)]
    assert not info3["breaking"] and "super()" in info3["detail"], info3
    # KInfoStale keeps InfoBase.max_tokens, whose self.frames(…, max_frames=2) lands on its override
    stale = overrides[("kp/models.py", 30)]
    assert stale["breaking"] and "max_frames" in stale["detail"], stale


def test_a_method_called_through_a_subscripted_generic_is_not_a_constructor_call(checked):
    _, found, doc = checked
    assert f"{PROC}.BaseProcessor" not in found, found.get(f"{PROC}.BaseProcessor")
    assert not any(f["kind"] == "call" and f["breaking"] for f in doc["findings"]), [f for f in doc["findings"] if f["kind"] == "call"]


def test_a_member_upstream_assigns_on_the_layer_handed_to_it(checked):
    _, found, _ = checked
    # there on the path through create_weights (as on upstream's own ColumnParallelLinear): not certain either way
    block = found[f"{LINEAR}.ColumnParallelLinear.weight_block_size"]
    assert (block["status"], block["breaking"]) == ("unknown", False) and "fp8.py:3" in block["detail"], block
    gone = found[f"{LINEAR}.ColumnParallelLinear.no_such_member"]
    assert (gone["status"], gone["breaking"]) == ("missing", True), gone


def test_code_in_a_method_nothing_calls_cannot_fail(checked):
    code, found, _ = checked
    hpu = found["vllm.platforms.interface.PlatformEnum.HPU"]
    assert hpu["status"] == "missing" and not hpu["breaking"] and "nothing calls" in hpu["detail"], hpu
    # is_kunlun is called by the plugin (models.load): its missing enum member breaks
    xpu = found["vllm.platforms.interface.PlatformEnum.XPU"]
    assert xpu["status"] == "missing" and xpu["breaking"], xpu
    assert code == 1


def test_a_class_named_in_one_branch_is_imported_only_then(checked):
    _, found, _ = checked
    v0 = found["vllm.attention.backends.utils.compute_slot_mapping"]
    assert (v0["status"], v0["breaking"]) == ("missing", False), v0
    assert v0["guard"]["outcome"] == "undecided" and "not (use_v1)" in v0["guard"]["condition"], v0["guard"]
    assert "kp/platform.py" in v0["guard"]["condition"] and "kp/attn_v0.py cannot be imported" in v0["guard"]["condition"], v0["guard"]
    # the other branch's module imports on this release: judged as any other, so it breaks
    v1 = found["vllm.v1.attention.backend.AttentionBackend.no_such_helper"]
    assert (v1["status"], v1["breaking"], v1["guard"]) == ("missing", True, None), v1
    # named whatever the arguments: its module's failures break
    world = found["vllm.distributed.parallel_state.get_world_group"]
    assert (world["status"], world["breaking"], world["guard"]) == ("missing", True, None), world


def test_calls_through_an_annotated_attribute_are_placed(checked):
    _, found, _ = checked
    send = found["vllm.distributed.device_communicators.base_device_communicator.DeviceCommunicatorBase.send"]
    assert (send["status"], send["breaking"]) == ("signature_changed", False), send
    assert "parallel_state.py:12" in send["detail"] and "binds" in send["detail"], send


def test_what_the_plugin_provides_itself_is_not_missing(checked):
    _, found, doc = checked
    added = found["vllm.tool_parsers.ds_parser.DSParser._convert_param_value"]
    assert (added["status"], added["breaking"]) == ("extension", False), added
    assert "only outside vllm.tool_parsers.ds_parser" in added["detail"], added
    # its patched _emit_delta reads it through self: set by the plugin, so no missing field
    read = [f for f in doc["findings"] if f["kind"] == "field" and f["target"].endswith("DSParser._convert_param_value") and f["status"] != "ok"]
    assert not read, read
    gdn = {f["target"].rsplit(".", 1)[-1]: f for f in doc["findings"] if f["kind"] == "subclass" and f["file"] == "kp/gdn.py"}
    # grafted onto QwenGDN, whose instances have conv1d
    assert (gdn["conv1d"]["status"], gdn["conv1d"]["breaking"]) == ("unknown", False), gdn["conv1d"]
    assert "QwenGDN._forward_core (patched at kp/gdn.py:" in gdn["conv1d"]["detail"], gdn["conv1d"]
    # only the plugin's subclass defines it
    assert (gdn["_nz_view"]["status"], gdn["_nz_view"]["breaking"]) == ("unknown", False) and "kp.gdn.KGDNSub" in gdn["_nz_view"]["detail"], gdn["_nz_view"]
    # read under hasattr(self, ...): undecided, not breaking
    assert not gdn["output_sizes"]["breaking"] and gdn["output_sizes"]["guard"]["condition"].startswith("hasattr(self"), gdn["output_sizes"]
    # nothing provides it
    assert (gdn["no_such_state"]["status"], gdn["no_such_state"]["breaking"]) == ("missing", True), gdn["no_such_state"]


def test_calls_on_unrelated_or_foreign_receivers_do_not_count(checked):
    _, found, _ = checked
    base = "vllm.distributed.device_communicators.base_device_communicator.DeviceCommunicatorBase"
    # GroupCoordinator's own send / gather (get_tp_group(), cp_group) and the zmq socket's send: other objects
    for name, placed in (("send", "parallel_state.py:12"), ("gather", "parallel_state.py:21")):
        finding = found[f"{base}.{name}"]
        assert (finding["status"], finding["breaking"]) == ("signature_changed", False), finding
        assert placed in finding["detail"] and "binds" in finding["detail"], finding
        assert "shm_broadcast" not in finding["detail"] and "parallel_state.py:3" not in finding["detail"], finding
    # `sock = make_socket(path)`: what sock holds is not shown, but its `recv()` passes nothing,
    # which upstream's own recv(size, dtype) could not take: a call of another recv (the release
    # runs), so only the placed call decides, and it binds
    recv = found[f"{base}.recv"]
    assert (recv["status"], recv["breaking"]) == ("signature_changed", False), recv
    assert "parallel_state.py:18" in recv["detail"] and "kv_connector.py:7" not in recv["detail"], recv
    assert "shm_broadcast" not in recv["detail"], recv


def test_a_method_read_only_through_self_of_unrelated_classes_is_uncalled(checked):
    _, _, doc = checked
    ops = {f["runs_in"]: f for f in doc["findings"] if f["file"] == "kp/ops.py" and f["target"].startswith("vllm._kunlun_ops")}
    gelu = ops["kp.ops.KGELU.forward_kunlun"]
    assert (gelu["status"], gelu["breaking"]) == ("missing", False) and "nothing calls" in gelu["detail"], gelu
    silu = ops["kp.ops.KSiLU.forward_xpu"]
    assert (silu["status"], silu["breaking"]) == ("missing", True), silu


def test_a_field_a_plugin_subclass_declares_is_undecided(checked):
    _, found, _ = checked
    tkv = found["vllm.v1.outputs.ModelRunnerOutput.tkv"]
    assert (tkv["status"], tkv["breaking"]) == ("unknown", False) and "kp.runner.KRunnerOutput" in tkv["detail"], tkv
    gone = found["vllm.v1.outputs.ModelRunnerOutput.no_such_field"]
    assert (gone["status"], gone["breaking"]) == ("missing", True), gone


def test_a_field_the_plugin_registers_by_name_is_undecided(checked):
    _, found, _ = checked
    scale = found[f"{LINEAR}.LinearBase.w13_scale_inv"]
    assert (scale["status"], scale["breaking"]) == ("unknown", False) and "kp/runner.py:18" in scale["detail"], scale


def test_a_platform_method_upstream_calls_on_the_current_platform_is_an_extension(checked):
    _, found, _ = checked
    numa = found["vllm.platforms.interface.Platform.discover_numa_topology"]
    assert (numa["status"], numa["breaking"]) == ("extension", False) and "nixl.py:5" in numa["detail"], numa
