"""Evidence runners: they drive the served model or read its output and write evidence files —
the runbook schema and what `harness run` checks of it before step 1 (`inputs`), the
served-model lifecycle (which confirms the engine answering is the one started, and records its
process group), smoke requests, lm-eval accuracy, bench_serving, the fallback scan with its
Operator Recipes, traces and golden tensors, and the built-in example's CPU engine
(`local_model`). The steps read their checks back from those files (`harness.steps`)."""
