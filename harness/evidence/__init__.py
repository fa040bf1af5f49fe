"""Evidence runners: they drive the served model or read its output and write evidence files —
the runbook schema and what `harness run` checks of it before step 1 (`inputs`), the
served-model lifecycle (which confirms the engine answering is the one started, and records its
process group), smoke requests, lm-eval accuracy, bench_serving, profiling, the fallback scan
with its Operator Recipes, traces, golden tensors and their capture, and the built-in example's
CPU engine (`local_model`). Each runner follows one contract and is registered by name
(`runner`); the steps run them and read their checks back from the files they write."""
