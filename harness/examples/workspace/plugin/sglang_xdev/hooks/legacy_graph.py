"""Dead since 0.3.0: the graph runner is chosen through XdevPlatform.get_graph_runner_cls."""

from sglang.srt.plugins.hook_registry import HookType, plugin_hook


@plugin_hook("sglang.srt.model_executor.cuda_graph_runner.CudaGraphRunner.can_run", type=HookType.REPLACE)
def can_run(self, forward_batch):
    return True
