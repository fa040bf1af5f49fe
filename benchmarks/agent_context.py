"""Context cost of the porting agent: tokens of the initial context it gets for the built-in
example feature (`kv-pool-factory`, sglang 0.5.17 → 0.5.23) — targeted symbol sources from the
knowledge engine, the plugin's findings, the step's skill — against the naive alternative: the
same task header and skill, plus the whole upstream files that define the feature's symbols (at
both versions) and every plugin file.

    python benchmarks/agent_context.py [--from sglang==0.5.17] [--to sglang==0.5.23]

Tokens are counted with one tokenizer, available offline: SmolLM2-135M-Instruct's (a GPT-2
style BPE, 49,152 entries), read out of the example model's GGUF into a Hugging Face
tokenizer.json by `harness.evidence.local_model.prepare_tokenizer` and loaded with
`tokenizers`. Prints figures; nothing is asserted.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from tokenizers import Tokenizer

from harness.evidence.local_model import prepare_tokenizer
from harness.knowledge.model import plugin_module_files
from harness.knowledge.products import platform_map, resolve, resolve_feature
from harness.steps.drafting import SYSTEM, agent_context
from harness.steps.skills import step_skill
from harness.steps.symbols import locate

EXAMPLE = Path(__file__).resolve().parents[1] / "harness" / "examples" / "workspace"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--from", dest="old", default="sglang==0.5.17")
    parser.add_argument("--to", dest="new", default="sglang==0.5.23")
    parser.add_argument("--feature", default="kv-pool-factory")
    args = parser.parse_args()

    plugin = EXAMPLE / "plugin"
    old, new = resolve(args.old), resolve(args.new)
    feature = resolve_feature(args.feature, [EXAMPLE / "features"], old, new, plugin)
    _, skill = step_skill("interface", plugin)
    findings = list(platform_map(plugin, new).findings)
    targeted = SYSTEM + "\n\n" + agent_context("interface", feature, skill, old, new, findings)

    upstream_files = sorted({(source, found.file) for source in (old, new) for symbol in feature.symbols
                             if (found := locate(source, symbol)) is not None}, key=lambda pair: (pair[0].label, pair[1]))
    plugin_files = sorted({path for path, _ in plugin_module_files(plugin).values()} | {plugin / "pyproject.toml"})
    naive = "\n\n".join([
        SYSTEM, f"# Task: the interface step for feature `{feature.id}` — {feature.name}", feature.description, skill,
        *(f"## {source.label}: {rel}\n{(source.root / rel).read_text(encoding='utf-8')}" for source, rel in upstream_files),
        *(f"## plugin: {path.relative_to(plugin)}\n{path.read_text(encoding='utf-8')}" for path in plugin_files),
    ])

    tokenizer = Tokenizer.from_file(str(prepare_tokenizer() / "tokenizer.json"))
    count = lambda text: len(tokenizer.encode(text).ids)
    t, n = count(targeted), count(naive)
    print(f"feature {feature.id}: {len(feature.symbols)} upstream symbols, {old.label} -> {new.label}")
    print("tokenizer: SmolLM2-135M-Instruct BPE (tokenizer.json read from the example GGUF), `tokenizers`")
    print(f"targeted initial context: {t:7d} tokens ({len(targeted):7d} characters)")
    print(f"naive initial context:    {n:7d} tokens ({len(naive):7d} characters): "
          f"{len(upstream_files)} upstream files ({', '.join(f'{s.label}:{r}' for s, r in upstream_files)}), "
          f"{len(plugin_files)} plugin files")
    print(f"targeted / naive:         {t / n:7.3f}")


if __name__ == "__main__":
    main()
