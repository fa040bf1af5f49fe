"""Scripts the scripted LLM (harness.testing.llm) replays in the agent tests: what a model
porting the built-in example's `kv-pool-factory` feature would send, call by call."""

from __future__ import annotations

PLATFORM = "sglang_xdev/platform.py"
INTERFACE = "sglang.srt.platforms.interface"

OLD_FACTORIES = '''    def get_mha_kv_pool_cls(self) -> type:
        from sglang_xdev.memory import XdevMHATokenToKVPool

        return XdevMHATokenToKVPool

    def get_mla_kv_pool_cls(self) -> type:
        from sglang_xdev.memory import XdevMLATokenToKVPool

        return XdevMLATokenToKVPool
'''

NEW_FACTORY = '''    def get_kv_pool_cls(self, *, kind: KVPoolKind) -> type | None:
        if kind == "mha":
            from sglang_xdev.memory import XdevMHATokenToKVPool

            return XdevMHATokenToKVPool
        if kind == "mla":
            from sglang_xdev.memory import XdevMLATokenToKVPool

            return XdevMLATokenToKVPool
        return None  # dsa: the in-tree pool
'''

OLD_CAPABILITIES = '''    def support_cuda_graph(self) -> bool:
        return True

    def supports_fp8(self) -> bool:
        return False

'''


def call(name: str, **arguments) -> dict:
    return {"tool_calls": [{"name": name, "arguments": arguments}]}


def kv_port(summary: str = "Ported the per-kind KV pool factories to get_kv_pool_cls(*, kind).") -> list[dict]:
    """Read, look upstream, replace the three per-kind factories by get_kv_pool_cls(*, kind),
    move the removed capability methods to the `capabilities` struct, check, finish."""
    return [
        call("read_file", path=PLATFORM),
        call("upstream_source", target=f"{INTERFACE}.SRTPlatform.get_kv_pool_cls", version="to"),
        call("upstream_source", target=f"{INTERFACE}.SRTPlatform.get_mha_kv_pool_cls", version="from"),
        call("replace_in_file", path=PLATFORM, old=OLD_FACTORIES, new=NEW_FACTORY),
        call("replace_in_file", path=PLATFORM, old=OLD_CAPABILITIES, new=""),
        call("replace_in_file", path=PLATFORM,
             old="from sglang.srt.platforms.interface import SRTPlatform\n",
             new="from sglang.srt.platforms.interface import KVPoolKind, PlatformCapabilities, SRTPlatform\n"),
        call("replace_in_file", path=PLATFORM, old="class XdevPlatform(SRTPlatform, XdevDeviceMixin):\n",
             new="class XdevPlatform(SRTPlatform, XdevDeviceMixin):\n"
                 "    capabilities = PlatformCapabilities(graph_capture=True)\n\n"),
        call("search", pattern=r"kv_pool_cls|support_cuda_graph"),
        call("run_check"),
        call("finish", summary=summary),
    ]


def escapes() -> list[dict]:
    """Tries to get out of the worktree, malformed calls, then a harmless edit and finish."""
    return [
        call("write_file", path="../x", content="escaped"),
        call("read_file", path="/etc/hostname"),
        call("write_file", path="outside/escaped.txt", content="through a symlink"),
        call("write_file", path=".git/config", content="[core]"),
        {"tool_calls": [{"name": "write_file", "raw_arguments": "{not json"}]},
        {"tool_calls": [{"name": "shell", "arguments": {"command": "rm -rf /"}}]},
        call("replace_in_file", path=PLATFORM, old="no such text", new="x"),
        {"content": "I will call finish now."},
        call("finish", summary="Tried to leave the worktree."),
    ]


def wander(turns: int) -> list[dict]:
    """Reads forever: a model that never finishes."""
    return [call("read_file", path=PLATFORM) for _ in range(turns)]


def write_up(summary: str) -> list[dict]:
    """A write-up step's draft (alignment, operators, accuracy, performance): straight to finish."""
    return [call("finish", summary=summary)]
