"""`harness port`: names the copied function imports in its own body are bound, not undefined,
also when the merge conflicts elsewhere in the copy (issue 18 kind 13, F38)."""

from __future__ import annotations

import pytest
from kinds_support import plugin, pyproject, upstream_pair
from knowledge_support import harness_json
from real_releases import real_releases

CONFIG = "sglang.srt.model_executor.cuda_graph_config"
RUNTIME = {
    "sglang/srt/runtime_context.py": """
        def get_exec():
            return None
        """,
    "sglang/srt/model_executor/__init__.py": "",
}
OLD_CONFIG = '''
    class Phase:
        ALL = ("prefill", "decode")


    def check_cuda_graph_backend(phase: str, backend: str) -> bool:
        """True if the published config uses `backend` for `phase`."""
        from sglang.srt.runtime_context import get_exec

        try:
            cfg = get_exec().graph.cuda_graph_config
        except ValueError:
            return False
        if cfg is None or phase not in Phase.ALL:
            return False
        return getattr(cfg, phase).backend == backend
    '''
# the new release imports get_exec at module level and drops the line from the body
NEW_CONFIG = "\n    from sglang.srt.runtime_context import get_exec\n" + OLD_CONFIG.replace("        from sglang.srt.runtime_context import get_exec\n\n", "")

# the copy edits the get_exec line (conflicting with its removal) and imports Phase further down
COPY = '''
    from sglang.srt.plugins.hook_registry import HookRegistry, HookType
    from sglang.srt.runtime_context import get_exec


    def check_cuda_graph_backend_dev(phase: str, backend: str) -> bool:
        """True if the published config uses `backend` for `phase`."""
        from sglang.srt.runtime_context import get_exec  # noqa: F811  (lazy, as upstream does)

        try:
            cfg = get_exec().graph.cuda_graph_config
        except ValueError:
            return False
        from sglang.srt.model_executor.cuda_graph_config import Phase

        if cfg is None or phase not in {phase_alias}:
            return False
        return getattr(cfg, phase).backend == backend


    def register():
        HookRegistry.register("{target}", check_cuda_graph_backend_dev, HookType.REPLACE)
    '''


def copy_plugin(tmp_path, phase_alias="Phase.ALL"):
    return plugin(tmp_path, {
        "pyproject.toml": pyproject(plugins={"graphdev": "graphdev:register"}),
        "graphdev/__init__.py": COPY.replace("{target}", f"{CONFIG}.check_cuda_graph_backend").replace("{phase_alias}", phase_alias),
    })


def port(root, old, new):
    code, doc = harness_json("port", "--plugin", str(root), "--from", old, "--to", new)
    (entry,) = doc["ports"]
    return code, entry


@pytest.fixture(scope="module")
def upstreams(tmp_path_factory):
    return upstream_pair(tmp_path_factory,
                         old={**RUNTIME, "sglang/srt/model_executor/cuda_graph_config.py": OLD_CONFIG},
                         new={**RUNTIME, "sglang/srt/model_executor/cuda_graph_config.py": NEW_CONFIG})


def test_a_name_imported_in_the_copys_body_is_bound_despite_a_conflict(upstreams, tmp_path):
    code, entry = port(copy_plugin(tmp_path), *upstreams)
    assert entry["status"] == "conflict", entry
    assert entry["undefined_names"] == [], entry["undefined_names"]
    assert code == 1  # the conflict still needs a person


def test_a_name_neither_the_copy_nor_its_module_binds_is_still_undefined(upstreams, tmp_path):
    # `Phases` is bound nowhere the copy can see: still listed, with upstream's import when it has one
    _, entry = port(copy_plugin(tmp_path, phase_alias="Phases.ALL"), *upstreams)
    assert [u["name"] for u in entry["undefined_names"]] == ["Phases"], entry


IMPORT = "from sglang.srt.model_executor.cuda_graph_config import Phase"
# where the copy binds Phase, by Python's scopes (F38 variant z2): another scope's binding is not
# the copy's; its own, read from a nested scope, is
SCOPES = {
    "nested_function": (f"def _known(p):\n            {IMPORT}\n            return p in Phase.ALL\n\n", "Phase.ALL", True),
    "nested_class_body": (f"class _Known:\n            {IMPORT}\n\n", "Phase.ALL", True),
    "comprehension_variable": ("_ = [Phase for Phase in ()]\n\n", "Phase.ALL", True),
    "own_import_read_by_a_closure": (f"{IMPORT}\n\n        def _known(p):\n            return p in Phase.ALL\n\n", "Phase.ALL", False),
    # an import only a type checker runs (F38 variant v2): TYPE_CHECKING is False at run time;
    # read only in an annotation, the name is a hint and binds nothing that runs
    "type_checking_import": (f"if TYPE_CHECKING:\n            {IMPORT}\n\n", "Phase.ALL", True),
    "typing_type_checking_import": (f"if typing.TYPE_CHECKING:\n            {IMPORT}\n\n", "Phase.ALL", True),
    "type_checking_import_in_a_hint": (f"if TYPE_CHECKING:\n            {IMPORT}\n        marker: Phase = None\n\n", "('prefill', 'decode')", False),
    # `global Phase` then a binding in the body binds the module's Phase before the read (F38 variant t1)
    "global_then_import": (f"global Phase\n        {IMPORT}\n\n", "Phase.ALL", False),
    "global_then_assignment": ("global Phase\n        import sglang.srt.model_executor.cuda_graph_config as _c\n        Phase = _c.Phase\n\n", "Phase.ALL", False),
    "global_then_guarded_import": (f"global Phase\n        try:\n            {IMPORT}\n        except ImportError:\n            Phase = None\n\n", "Phase.ALL", False),
    # the copy's own binding comes after a read (F38 variant t2): Python runs the body in order, so the
    # read raises UnboundLocalError (a local) or NameError (a global the module does not bind)
    "read_then_import": (f"early = Phase.ALL\n        {IMPORT}\n\n", "early", True),
    "read_then_assignment": ("early = Phase.ALL\n        import sglang.srt.model_executor.cuda_graph_config as _c\n        Phase = _c.Phase\n\n", "early", True),
    "global_read_then_import": (f"global Phase\n        early = Phase.ALL\n        {IMPORT}\n\n", "early", True),
    # a read that a loop runs again after the binding, or that a closure runs later, is not before it
    "read_in_a_loop_that_binds": (f"for _ in (1, 2):\n            early = Phase.ALL if _ == 2 else ()\n            {IMPORT}\n\n", "early", False),
    "read_by_a_closure_defined_first": (f"def _known(p):\n            return p in Phase.ALL\n        {IMPORT}\n\n", "Phase.ALL", False),
    # bound only in a block that leaves the function (F38 variant q2): nothing after it sees the binding
    "import_in_a_returning_handler": (f"try:\n            pass\n        except ValueError:\n            {IMPORT}\n            return Phase\n\n", "Phase.ALL", True),
    "import_in_a_raising_branch": (f"if backend == 'none':\n            {IMPORT}\n            raise ValueError(Phase.ALL)\n\n", "Phase.ALL", True),
    "import_in_a_returning_else": (f"if backend:\n            pass\n        else:\n            {IMPORT}\n            return False\n\n", "Phase.ALL", True),
    # one path binds it and falls through: bound there
    "import_in_both_branches": (f"if backend:\n            {IMPORT}\n        else:\n            {IMPORT}\n            return False\n\n", "Phase.ALL", False),
}


@pytest.mark.parametrize("spelling", sorted(SCOPES))
def test_a_name_bound_in_another_scope_is_undefined_in_the_copy(upstreams, tmp_path, spelling):
    binding, read, undefined = SCOPES[spelling]
    source = "\n    import typing\n    from typing import TYPE_CHECKING\n" + COPY.replace(
        "        from sglang.srt.model_executor.cuda_graph_config import Phase\n\n", "        " + binding)
    root = plugin(tmp_path, {
        "pyproject.toml": pyproject(plugins={"graphdev": "graphdev:register"}),
        "graphdev/__init__.py": source.replace("{target}", f"{CONFIG}.check_cuda_graph_backend").replace("{phase_alias}", read),
    })
    _, entry = port(root, *upstreams)
    assert [u["name"] for u in entry["undefined_names"]] == (["Phase"] if undefined else []), entry


@pytest.mark.network
@pytest.mark.slow
def test_real_release_check_cuda_graph_backend_copy(tmp_path):
    # 0.5.17 sglang/srt/model_executor/cuda_graph_config.py:181-193 check_cuda_graph_backend imports get_exec
    # in its body; 0.5.23 :210-221 does not (module level, :29). The copy imports Phase (:30) in its body.
    real_releases("sglang==0.5.17", "sglang==0.5.23")
    root = plugin(tmp_path, {
        "pyproject.toml": pyproject(plugins={"graphdev": "graphdev:register"}),
        "graphdev/__init__.py": '''
            from sglang.srt.plugins.hook_registry import HookRegistry, HookType
            from sglang.srt.runtime_context import get_exec


            def check_cuda_graph_backend_dev(phase: str, backend: str) -> bool:
                """True if cuda_graph_config[phase].backend == backend on the
                published config. Returns False if the config has not been published
                yet (e.g. unit tests, early startup)."""
                from sglang.srt.runtime_context import get_exec  # noqa: F811  (lazy, as upstream 0.5.17 does)

                try:
                    cfg = get_exec().graph.cuda_graph_config
                except ValueError:
                    return False
                from sglang.srt.model_executor.cuda_graph_config import Phase

                if cfg is None or phase not in Phase.ALL:
                    return False
                return getattr(cfg, phase).backend == backend


            def register():
                HookRegistry.register(
                    "sglang.srt.model_executor.cuda_graph_config.check_cuda_graph_backend",
                    check_cuda_graph_backend_dev,
                    HookType.REPLACE,
                )
            ''',
    })
    _, entry = port(root, "sglang==0.5.17", "sglang==0.5.23")
    assert entry["status"] == "conflict" and entry["undefined_names"] == [], entry
