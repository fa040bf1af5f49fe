"""Exception scope: a statement after a failing one inside the same `try` never runs. When the
`except` catches that failure, every dependency after it in the try body (a patch, a hook
registration, a call) is caught with it: reported, never breaking (issue 18 kind 1)."""

from __future__ import annotations

import pytest
from kinds_support import check, plugin, pyproject, upstream_pair

from harness.knowledge.model.findings import Status


@pytest.fixture(scope="module")
def upstreams(tmp_path_factory):
    return upstream_pair(tmp_path_factory)


PLUGIN = {
    "pyproject.toml": pyproject(plugins={"tao": "tao:register"}),
    "tao/__init__.py": """
        import logging

        from sglang.srt.plugins.hook_registry import HookRegistry, HookType

        log = logging.getLogger(__name__)


        def _skip(model, torchao_config, filter_fn=None):
            return model


        def _gemm(a, b):
            return a


        try:
            import sglang.srt.layers.torchao_utils as tu

            tu.apply_torchao_config_to_model = _skip
            tu.FILTERS.append(_skip)
        except Exception as exc:
            log.warning("skipped: %s", exc)

        try:
            import sglang.srt.layers.quantization.fp8_utils as fu
            HookRegistry.register("sglang.srt.layers.quantization.fp8_utils.fp8_gemm", _gemm, HookType.REPLACE)
            setattr(fu, "fp8_gemm", _gemm)
        except ImportError:
            pass


        def register():
            try:
                import sglang.srt.layers.torchao_utils as inner

                inner.apply_torchao_config_to_model = _skip
            except (ImportError, AttributeError):
                log.info("no torchao")
        """,
}


def test_dependencies_after_a_caught_failing_import_are_caught(upstreams, tmp_path):
    old, new = upstreams
    root = plugin(tmp_path, PLUGIN)
    code, doc = check(root, old)
    assert code == 0, [f for f in doc["findings"] if f["status"] != "ok"]
    code, doc = check(root, new)
    assert code == 0, [f for f in doc["findings"] if f["breaking"]]
    by_line = {(f["kind"], f["line"]): f for f in doc["findings"]}
    # the patches, the REPLACE hook and the setattr each sit after an import that fails on
    # 0.10.0 in the same try: none of them runs, all are reported as caught
    for kind, line in (("patch", 19), ("hook", 26), ("patch", 27), ("patch", 36)):
        finding = by_line[(kind, line)]
        assert finding["status"] == Status.missing.value, finding
        assert finding["breaking"] is False and finding["guard"]["outcome"] == "caught", finding
        assert "fails first" in finding["guard"]["condition"], finding
    # the import itself is caught by its handler, as before
    assert by_line[("import", 17)]["guard"]["outcome"] == "caught"


def test_a_failure_the_handler_does_not_catch_still_breaks(upstreams, tmp_path):
    _, new = upstreams
    root = plugin(tmp_path, {
        "pyproject.toml": pyproject(plugins={"tao": "tao:register"}),
        "tao/__init__.py": """
            def _skip(model, torchao_config, filter_fn=None):
                return model


            try:
                import sglang.srt.layers.torchao_utils as tu
            except ValueError:
                tu = None
            tu.apply_torchao_config_to_model = _skip


            def register():
                pass
            """,
    })
    code, doc = check(root, new)
    assert code == 1
    imports = [f for f in doc["findings"] if f["kind"] == "import"]
    assert imports and imports[0]["breaking"] is True  # ValueError does not catch the ImportError


def test_statements_after_a_handler_that_returns_are_skipped_when_the_import_fails(upstreams, tmp_path):
    old, new = upstreams
    root = plugin(tmp_path, {
        "pyproject.toml": pyproject(plugins={"tao": "tao:register"}),
        "tao/__init__.py": """
            from sglang.srt.plugins.hook_registry import HookRegistry, HookType


            def _gemm(a, b):
                return a


            def register():
                try:
                    import sglang.srt.layers.quantization.fp8_utils  # noqa: F401
                except ImportError:
                    return
                HookRegistry.register("sglang.srt.layers.quantization.fp8_utils.fp8_gemm", _gemm, HookType.REPLACE)
            """,
    })
    code, doc = check(root, old)
    assert code == 0, [f for f in doc["findings"] if f["status"] != "ok"]
    code, doc = check(root, new)
    hook = next(f for f in doc["findings"] if f["kind"] == "hook")
    assert hook["status"] == "missing" and hook["guard"]["outcome"] == "skipped" and not hook["breaking"], hook
    assert code == 0
