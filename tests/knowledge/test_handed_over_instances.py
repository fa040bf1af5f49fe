"""An instance upstream builds by a name the plugin rebinds, then hands to another class's
constructor, which keeps it and calls it (vLLM 0.17: GPUModelRunner builds `self.sampler =
Sampler(…)`, then `RejectionSampler(self.sampler)`, whose `__init__` keeps `self.sampler =
sampler` and whose forward calls `self.sampler(…, predict_bonus_token=True)`): those calls reach
the plugin's class too, through nn.Module.__call__ (fifteenth held-out set V-m6)."""

from __future__ import annotations

import pytest
from kinds_support import check, plugin, pyproject, upstream_pair

RUNNER = """
from sglang.srt.layers.rejection import RejectionSampler, TreeRejectionSampler
from sglang.srt.layers.sampler import Sampler


class ModelRunner:
    def __init__(self, tree=False):
        self.sampler = Sampler()
        {handover}
"""

HANDOVERS = {
    "positional": "self.rejection = RejectionSampler(self.sampler)",
    "keyword": "self.rejection = RejectionSampler(sampler=self.sampler)",
    "subclass_makes_the_call": "self.rejection = TreeRejectionSampler(self.sampler, 2)",
}

REJECTION = """
import torch.nn as nn


class RejectionSampler(nn.Module):
    def __init__(self, sampler):
        super().__init__()
        self.sampler = sampler


class TreeRejectionSampler(RejectionSampler):
    def __init__(self, sampler, depth):
        super().__init__(sampler)
        self.depth = depth

    def forward(self, logits):
        return self.sampler(logits, temperature=0.5, bonus=True)
"""


@pytest.mark.parametrize("fits", [False, True], ids=["narrow", "takes_kwargs"])
@pytest.mark.parametrize("spelling", sorted(HANDOVERS))
def test_calls_a_class_makes_on_an_instance_handed_to_it_reach_the_plugin_class(tmp_path_factory, tmp_path, spelling, fits):
    rejection = REJECTION if spelling == "subclass_makes_the_call" else REJECTION.replace(
        "        self.sampler = sampler\n", "        self.sampler = sampler\n\n    def forward(self, logits):\n        return self.sampler(logits, temperature=0.5, bonus=True)\n", 1)
    _, new = upstream_pair(tmp_path_factory, new={
        # the base's forward takes the new keyword the handed-over caller passes
        "sglang/srt/layers/sampler.py": "from torch import nn\n\n\nclass Sampler(nn.Module):\n"
                                        "    def forward(self, logits, *, temperature=1.0, bonus=False):\n        return logits\n",
        "sglang/srt/layers/rejection.py": rejection,
        "sglang/srt/model_executor/__init__.py": "",
        "sglang/srt/model_executor/runner.py": RUNNER.format(handover=HANDOVERS[spelling]),
    })
    params = "self, logits, **kwargs" if fits else "self, logits, *, temperature=1.0"
    root = plugin(tmp_path, {
        "pyproject.toml": pyproject(plugins={"ho": "ho:register"}),
        "ho/__init__.py": f"""import sglang.srt.model_executor.runner as runner
from sglang.srt.layers.sampler import Sampler


class DeviceSampler(Sampler):
    def forward({params}):
        return logits


def register():
    runner.Sampler = DeviceSampler
""",
    })
    code, doc = check(root, new)
    forward = [f for f in doc["findings"] if f["kind"] in ("override", "subclass") and f["target"].endswith("Sampler.forward")]
    if fits:
        assert not [f for f in forward if f["breaking"]] and code == 0, forward
    else:
        assert forward and forward[0]["breaking"] and "rejection.py" in forward[0]["detail"] and code == 1, doc["findings"]
