"""Speed and recall of `harness check` on a realistic generated plugin, beside a pyright diff.

    PYTHONPATH=. python benchmarks/check_speed.py [--modules 200] [--refs 1000] [--seed 0]
        [--skip-pyright] [--keep DIR] [--repeat 3] [--old 0.5.17] [--new 0.5.23]

Prints figures; asserts nothing (issue 7, Acceptance, third bullet). What it does:

1. Runtime harvest. In a subprocess running the *old* release's source (with the versions of a few
   light dependencies the release pins -- transformers, tokenizers, xgrammar, einops, ... -- in a
   side directory, see `prepare_runtime`, and torchvision mocked, see
   `_probe_install_torchvision_mock`), import every module of the plugin-facing parts of
   sglang/srt and record what it defines: classes with their members and signatures, functions
   with their parameters, constants, enum members.
2. Oracle. Every candidate reference built from that harvest (an import, an attribute through a
   module/class/enum, a call with keyword arguments, an override / `super()` call / `self.` member of
   an upstream base, a hook target, a platform override; issue 18's kinds: a registry read by key,
   a field of a dataclass read through an annotated parameter, lines inside a caught `try`) is
   *executed* against each release in a subprocess: `importlib.import_module` + `getattr`,
   `inspect.signature(...).bind(...)` with exactly the arguments the generated line passes,
   `inspect.getattr_static` on the base, the hook registry's own `pkgutil.resolve_name` + `getattr`,
   the platform class built mixin-first as Python builds it, `key in REGISTRY` once the modules
   filled it, `dataclasses.fields(cls)`.
   A reference is kept only when it works on the old release and, on the new one, either works or
   fails for an upstream reason (its module fails with ModuleNotFoundError naming that very sglang
   module and the file is gone). Verdicts are cached per release and reference.
3. Reference plugin. A seeded sampler writes ~N modules with ~R references the way real plugins
   are written (see `generate_plugin`), each reference on its own line, biased so that ~15 % of
   them break on the new release. The truth table is (file, line) -> oracle verdict.
4. Cross-check of the oracle with the real loader: the generated plugin is imported and its hooks
   applied (`HookRegistry.apply_hooks`) on both releases; every module must load on the old one, and
   the modules/hooks that fail on the new one must be exactly those the oracle predicts.
5. Timings, as ratios to `ast.parse` of every .py file of the new release on one core, measured in
   the same run: `harness check --json` cold (fresh HARNESS_CACHE_DIR holding only the unpacked
   release record and its manifest, as right after a fetch) and cached (second run).
6. Recall / false positives of the check vs the oracle, per kind, and the same for a pyright
   diagnostics diff (old vs new release as import root). Recall is printed on all breaking lines
   and on primary breakages only (a line that fails only because the import it uses fails is not
   primary). Overrides that still fit every call the base requires but lack optional parameters
   the base gained are "at risk": flagging them counts neither as a hit nor as a false positive.

Caches (harvest, oracle verdicts, runtime side directories, a HARNESS_CACHE_DIR seed holding the
unpacked release) live in --cache (~/.cache/harness-bench); nothing is written into the repo
unless --keep points there.

The code is in check_speed_lib/: probe.py (the subprocess of steps 1, 2 and 4), oracle.py (1, 2),
sampler.py and plugin.py (3, 4), measure.py (5), scoring.py (6, pyright), report.py (the printout
and --keep's files), results.py (what a run found), run.py (the command line and the order).
"""

import sys

if __name__ == "__main__":
    # sys.path[0] is benchmarks/ here (and in the probe subprocess, which runs this file again)
    if len(sys.argv) > 2 and sys.argv[1] == "_probe":
        from check_speed_lib.probe import probe_main

        probe_main(sys.argv[2])
    else:
        from check_speed_lib.run import main

        main()
