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
    # and says so: the handler takes the error, so the plugin is not skipped (F17-f2 of the twentieth held-out set)
    assert "skips the whole plugin" not in by_line[("import", 17)]["detail"] and "caught" in by_line[("import", 17)]["detail"]


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


NOT_FOUND = {
    # the module named after `from` is there, the name is not (a submodule gone): "cannot import
    # name", a plain ImportError that `except ModuleNotFoundError` does not catch
    "from_package_import_gone_submodule": ("from sglang.srt.layers import torchao_utils as tu", True),
    "from_module_import_gone_name": ("from sglang.srt.layers.quantization import fp8_utils as tu", True),
    # the module itself is not found: ModuleNotFoundError, caught
    "import_gone_module": ("import sglang.srt.layers.torchao_utils as tu", False),
    "from_gone_module_import_name": ("from sglang.srt.layers.torchao_utils import apply_torchao_config_to_model as tu", False),
}


# the errors caught named by a module constant: here, imported from a compat module, spread into suppress
CONSTANT_HANDLERS = {
    "module_tuple": ("ERRORS = (ImportError, AttributeError)\n", "try:\n    {import_}\nexcept ERRORS:\n    tu = None\n"),
    "imported_tuple": ("from tao.compat import OPTIONAL_ERRORS as ERRORS\n", "try:\n    {import_}\nexcept ERRORS:\n    tu = None\n"),
    "suppress_spread": ("import contextlib\n\nERRORS = [ModuleNotFoundError, AttributeError]\n",
                        "tu = None\nwith contextlib.suppress(*ERRORS):\n    {import_}\n"),
    "tuple_without_import_errors": ("ERRORS = (KeyError, AttributeError)\n", "try:\n    {import_}\nexcept ERRORS:\n    tu = None\n"),
}


def _import_verdict(upstream: str, tmp_path, files: dict) -> tuple[bool, int]:
    """(whether the torchao_utils import breaks, the exit code) of `harness check` on `upstream`
    of a plugin `tao` made of `files`."""
    code, doc = check(plugin(tmp_path, {"pyproject.toml": pyproject(plugins={"tao": "tao:register"}), **files}), upstream)
    imports = [f for f in doc["findings"] if f["kind"] == "import"]
    assert imports, doc["findings"]
    return imports[0]["breaking"], code


@pytest.mark.parametrize("spelling", sorted(CONSTANT_HANDLERS))
def test_errors_named_by_a_module_constant_are_caught(upstreams, tmp_path, spelling):
    _, new = upstreams
    head, body = CONSTANT_HANDLERS[spelling]
    breaks, code = _import_verdict(new, tmp_path, {
        "tao/compat.py": "OPTIONAL_ERRORS = (ImportError, AttributeError)\n",
        "tao/__init__.py": head + "\n" + body.format(import_="import sglang.srt.layers.torchao_utils as tu") + "\n\ndef register():\n    pass\n",
    })
    escapes = spelling == "tuple_without_import_errors"
    assert breaks is escapes and code == (1 if escapes else 0)


# a handler that always raises lets the error leave the try (F07 variant y2), as does one that re-raises
# whenever the module not found is upstream's; one that may fall through catches it
HANDLERS = {
    "raise_from": ('raise ImportError("tao needs torchao_utils") from exc', True),
    "bare_raise": ('log.error("no torchao_utils")\n                raise', True),
    "raise_other_in_both_branches": (('if STRICT:\n                    raise RuntimeError("strict") from exc\n'
                                      '                else:\n                    raise ImportError("no torchao_utils") from exc'), True),
    "raise_only_when_strict": ('if STRICT:\n                    raise\n                tu = None', False),
    # a re-raise under a test of the module not found (F07 variant p1): upstream's module is never the vendor runtime
    "reraise_unless_vendor_runtime": ('if exc.name != "torch_npu":\n                    raise\n                tu = None', True),
    "reraise_exc_unless_optional": ('if exc.name not in OPTIONAL:\n                    raise exc\n                tu = None', True),
    "reraise_when_upstream": ('if exc.name and exc.name.startswith("sglang."):\n                    raise\n                tu = None', True),
    "reraise_only_the_vendor_runtime": ('if exc.name == "torch_npu":\n                    raise\n                tu = None', False),
}


@pytest.mark.parametrize("spelling", sorted(HANDLERS))
def test_a_handler_that_always_raises_catches_nothing(upstreams, tmp_path, spelling):
    _, new = upstreams
    handler, escapes = HANDLERS[spelling]
    breaks, code = _import_verdict(new, tmp_path, {
        "tao/__init__.py": f"""
            import logging
            import os

            log = logging.getLogger(__name__)
            STRICT = os.environ.get("TAO_STRICT") == "1"
            OPTIONAL = ("torch_npu", "torch_mlu")

            try:
                import sglang.srt.layers.torchao_utils as tu
            except ImportError as exc:
                {handler}


            def register():
                pass
            """,
    })
    assert breaks is escapes and code == (1 if escapes else 0)


# a handler in a loader function that re-raises under a setting the plugin's own values decide (F25
# variant p1): a config's field default, a local flag, a module constant after a log line
SETTINGS = {
    "config_field_in_a_local": ("cfg = CONFIG", "if cfg.strict:\n                            raise", True),
    "local_flag": ("strict = not CONFIG.lenient", "if strict:\n                            raise exc", True),
    "constant_after_a_log_line": ("", 'log.warning("no %s", name)\n                        if STRICT_IMPORTS:\n                            raise', True),
    "config_field_that_is_false": ("cfg = CONFIG", "if cfg.lenient:\n                            raise", False),
}


@pytest.mark.parametrize("spelling", sorted(SETTINGS))
def test_a_handler_re_raising_on_the_plugins_own_setting_catches_nothing(upstreams, tmp_path, spelling):
    _, new = upstreams
    setting, handler, escapes = SETTINGS[spelling]
    breaks, code = _import_verdict(new, tmp_path, {
        "tao/__init__.py": f"""
            import dataclasses
            import importlib
            import logging

            log = logging.getLogger(__name__)
            STRICT_IMPORTS = True


            @dataclasses.dataclass(frozen=True)
            class _Config:
                strict: bool = True
                lenient: bool = False


            CONFIG = _Config()


            def register():
                {setting}
                for name in ("tao.quant",):
                    try:
                        importlib.import_module(name)
                    except ImportError as exc:
                        {handler}
            """,
        "tao/quant.py": "import sglang.srt.layers.torchao_utils as tu\n",
    })
    assert breaks is escapes and code == (1 if escapes else 0)


@pytest.mark.parametrize("spelling", sorted(NOT_FOUND))
def test_except_module_not_found_catches_only_a_module_not_found(upstreams, tmp_path, spelling):
    _, new = upstreams
    statement, escapes = NOT_FOUND[spelling]
    breaks, code = _import_verdict(new, tmp_path, {
        "tao/__init__.py": f"""
            try:
                {statement}
            except ModuleNotFoundError:
                tu = None


            def register():
                pass
            """,
    })
    assert breaks is escapes and code == (1 if escapes else 0)


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


# `try: <imports> except ImportError: … else: <patch>`: the else runs only when every import of
# the body resolved, with what they bound (F17 variant w3). The patch of a module gone on 0.10.0
# is reported and skipped there, however the else reaches the module.
ELSE_PATCHES = {
    "module_alias_in_function": ("def register():\n    try:\n        import sglang.srt.layers.torchao_utils as t\n"
                                 "    except ModuleNotFoundError:\n        pass\n    else:\n        t.apply_torchao_config_to_model = _skip\n"),
    "from_import_in_function": ("def register():\n    try:\n        from sglang.srt.layers import torchao_utils\n"
                                "    except ImportError:\n        return\n    else:\n        setattr(torchao_utils, 'apply_torchao_config_to_model', _skip)\n"),
    "at_module_level": ("try:\n    import sglang.srt.layers.torchao_utils as t\nexcept ImportError:\n    t = None\n"
                        "else:\n    t.apply_torchao_config_to_model = _skip\n\n\ndef register():\n    return None\n"),
}


@pytest.mark.parametrize("spelling", sorted(ELSE_PATCHES))
def test_a_patch_in_the_else_of_a_guarded_import_runs_only_when_it_resolves(upstreams, tmp_path, spelling):
    old, new = upstreams
    root = plugin(tmp_path, {
        "pyproject.toml": pyproject(plugins={"tao": "tao:register"}),
        "tao/__init__.py": "def _skip(model, torchao_config, filter_fn=None):\n    return model\n\n\n" + ELSE_PATCHES[spelling],
    }, name=spelling)
    target = "sglang.srt.layers.torchao_utils.apply_torchao_config_to_model"
    code, doc = check(root, old)
    patch = next(f for f in doc["findings"] if f["kind"] == "patch")
    assert patch["target"] == target and patch["status"] == Status.ok.value and code == 0, patch
    code, doc = check(root, new)
    patch = next(f for f in doc["findings"] if f["kind"] == "patch")
    assert patch["target"] == target and patch["status"] == Status.missing.value, patch
    assert patch["guard"]["outcome"] == "skipped" and not patch["breaking"] and code == 0, patch


# A helper whose every call sits in a try that catches its failure (F17 variant w6): the error
# leaves the helper and is handled at the call, so its import and the patch after it are caught.
HELPER = ("def _skip(model, torchao_config, filter_fn=None):\n    return model\n\n\n"
          "def _install():\n    from sglang.srt.layers import torchao_utils\n\n    torchao_utils.apply_torchao_config_to_model = _skip\n\n\n")
CALLERS = {
    "module_level_try": ("try:\n    _install()\nexcept ImportError:\n    pass\n\n\ndef register():\n    return None\n", False),
    "try_in_register": ("def register():\n    try:\n        _install()\n    except (ImportError, RuntimeError):\n        return\n", False),
    "suppress_in_register": ("import contextlib\n\n\ndef register():\n    with contextlib.suppress(ImportError):\n        _install()\n", False),
    # negatives: a call outside any try, or the helper handed on as a callback (called unseen)
    "one_call_unguarded": ("def register():\n    try:\n        _install()\n    except ImportError:\n        pass\n    _install()\n", True),
    "also_a_callback": ("HOOKS = [_install]\n\n\ndef register():\n    try:\n        _install()\n    except ImportError:\n        pass\n", True),
}


@pytest.mark.parametrize("spelling", sorted(CALLERS))
def test_a_helper_called_only_inside_a_catching_try_is_caught_there(upstreams, tmp_path, spelling):
    _, new = upstreams
    caller, breaks = CALLERS[spelling]
    root = plugin(tmp_path, {
        "pyproject.toml": pyproject(plugins={"tao": "tao:register"}),
        "tao/__init__.py": HELPER + caller,
    }, name=spelling)
    code, doc = check(root, new)
    findings = {f["kind"]: f for f in doc["findings"] if f["kind"] in ("import", "patch")}
    assert findings["import"]["status"] == Status.missing.value, doc["findings"]
    assert findings["import"]["breaking"] is breaks, findings["import"]
    assert code == (1 if breaks else 0)
    if not breaks:
        assert findings["import"]["guard"]["outcome"] == findings["patch"]["guard"]["outcome"] == "caught"


# The try is in the plugin's own wrapper around the code (twenty-third set F17-c1, F17-c2): a
# @contextmanager whose `yield` a try handles (the block's exception is thrown in there), a
# decorator whose wrapper calls the function in a try, a decorator factory making such a
# decorator. Negatives: a handler that re-raises, a handler of another error.
CONTEXT = '''
import contextlib
import functools
import logging


@contextlib.contextmanager
def optional(feature):
    try:
        yield
    except {caught} as exc:
        logging.getLogger(__name__).info("%s skipped: %s", feature, exc)
        {then}


def skip_if_absent(install):
    @functools.wraps(install)
    def run(*args, **kwargs):
        try:
            return install(*args, **kwargs)
        except {caught}:
            {then}
    return run


def optional_for(feature):
    def decorate(install):
        def run():
            try:
                install()
            except {caught}:
                {then}
        return run
    return decorate


def _skip(model, torchao_config, filter_fn=None):
    return model

'''
WRAPPED = {
    "contextmanager": "def register():\n    with optional('torchao'):\n        from sglang.srt.layers import torchao_utils\n\n"
                      "        torchao_utils.apply_torchao_config_to_model = _skip\n",
    "decorator": "@skip_if_absent\ndef _install():\n    from sglang.srt.layers import torchao_utils\n\n"
                 "    torchao_utils.apply_torchao_config_to_model = _skip\n\n\ndef register():\n    _install()\n",
    "decorator_factory": "@optional_for('torchao')\ndef _install():\n    from sglang.srt.layers import torchao_utils\n\n"
                         "    torchao_utils.apply_torchao_config_to_model = _skip\n\n\ndef register():\n    _install()\n",
}


@pytest.mark.parametrize("handler", ["catches", "re-raises", "another error"])
@pytest.mark.parametrize("spelling", sorted(WRAPPED))
def test_a_failure_the_plugins_own_wrapper_handles_is_caught(upstreams, tmp_path, spelling, handler):
    _, new = upstreams
    caught, then = {"catches": ("ImportError", "return None"), "re-raises": ("ImportError", "raise"),
                    "another error": ("RuntimeError", "return None")}[handler]
    root = plugin(tmp_path, {
        "pyproject.toml": pyproject(plugins={"tao": "tao:register"}),
        "tao/__init__.py": CONTEXT.format(caught=caught, then=then) + WRAPPED[spelling],
    }, name=spelling)
    code, doc = check(root, new)
    findings = {f["kind"]: f for f in doc["findings"] if f["kind"] in ("import", "patch")}
    assert findings["import"]["status"] == Status.missing.value, doc["findings"]
    breaks = handler != "catches"
    assert findings["import"]["breaking"] is breaks and code == (1 if breaks else 0), findings["import"]
    if not breaks:
        assert findings["import"]["guard"]["outcome"] == findings["patch"]["guard"]["outcome"] == "caught"


# The context manager is a plugin class (twenty-fourth session's left item): its `__exit__`
# returning true swallows the block's exception (the data model's object.__exit__). A return of
# the test, `return True` under an `if` naming the class, a class constant read through self,
# and `return True` with no test (everything); a factory function building the object. Negatives:
# a test of another error, `return False`, a true return under a test that names no exception.
EXITS = {
    "return_the_test": "return exc_type is not None and issubclass(exc_type, {caught})",
    "true_under_an_if": "if exc_type is not None and issubclass(exc_type, ({caught}, AttributeError)):\n"
                        "            log.info('skipped: %s', exc)\n            return True\n        return False",
    "class_constant": "return isinstance(exc, self.SWALLOWED)",
    "everything": "return True",
}


@pytest.mark.parametrize("handler", ["catches", "another error", "returns false"])
@pytest.mark.parametrize("spelling", sorted(EXITS))
def test_a_failure_a_plugin_context_manager_class_swallows_is_caught(upstreams, tmp_path, spelling, handler):
    _, new = upstreams
    caught = "RuntimeError" if handler == "another error" else "ImportError"
    body = "return False" if handler == "returns false" else EXITS[spelling].format(caught=caught)
    if spelling == "everything" and handler == "another error":
        body = "if self.quiet:\n            return True\n        return None"  # a true return under a test naming no error
    root = plugin(tmp_path, {
        "pyproject.toml": pyproject(plugins={"tao": "tao:register"}),
        "tao/__init__.py": f'''
import logging

log = logging.getLogger(__name__)


class Optional:
    SWALLOWED = ({caught}, AttributeError)

    def __init__(self, feature, quiet=True):
        self.feature, self.quiet = feature, quiet

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        {body}


class OptionalFeature(Optional):
    pass


def optional(feature):
    return OptionalFeature(feature)


def _skip(model, torchao_config, filter_fn=None):
    return model


def register():
    with optional("torchao"):
        from sglang.srt.layers import torchao_utils

        torchao_utils.apply_torchao_config_to_model = _skip
''',
    }, name=spelling)
    code, doc = check(root, new)
    findings = {f["kind"]: f for f in doc["findings"] if f["kind"] in ("import", "patch")}
    assert findings["import"]["status"] == Status.missing.value, doc["findings"]
    breaks = handler != "catches"
    assert findings["import"]["breaking"] is breaks and code == (1 if breaks else 0), findings["import"]


# The failing import is in what the try calls or imports (twenty-sixth set F17-f1, F17-f2): a
# helper returning the module, its one call the first statement of the caller's try, the patch
# after it in that try; a plugin module whose every import sits in a try catching ImportError,
# its top-level import and patch after it. The error leaves the helper or the module and is
# handled there: the patch never runs. Negatives: the call, or an import of the module, outside
# any try.
LOADER = ("import importlib\n\n\ndef _skip(model, torchao_config, filter_fn=None):\n    return model\n\n\n"
          "def _torchao():\n    import sglang.srt.layers.torchao_utils as tu\n\n    return tu\n\n\n"
          "def _torchao_by_name():\n    return importlib.import_module('sglang.srt.layers.torchao_utils')\n\n\n")
CALLED_IN_TRY = {
    "local_from_a_helper": ("def register():\n    try:\n        tu = _torchao()\n        tu.apply_torchao_config_to_model = _skip\n"
                            "    except ImportError:\n        return\n", False),
    "helper_by_import_module": ("def register():\n    try:\n        tu = _torchao_by_name()\n"
                                "        setattr(tu, 'apply_torchao_config_to_model', _skip)\n    except (ImportError, AttributeError):\n        pass\n", False),
    "module_level_try": ("try:\n    _tu = _torchao()\n    _tu.apply_torchao_config_to_model = _skip\nexcept ImportError:\n    _tu = None\n\n\n"
                         "def register():\n    return _tu\n", False),
    "call_outside_the_try": ("def register():\n    tu = _torchao()\n    try:\n        tu.apply_torchao_config_to_model = _skip\n"
                             "    except ImportError:\n        return\n", True),
}


@pytest.mark.parametrize("spelling", sorted(CALLED_IN_TRY))
def test_a_patch_after_a_failing_helper_call_in_the_same_try_is_caught(upstreams, tmp_path, spelling):
    _, new = upstreams
    caller, breaks = CALLED_IN_TRY[spelling]
    root = plugin(tmp_path, {"pyproject.toml": pyproject(plugins={"tao": "tao:register"}), "tao/__init__.py": LOADER + caller}, name=spelling)
    code, doc = check(root, new)
    patch = next(f for f in doc["findings"] if f["kind"] == "patch")
    assert (patch["status"], patch["breaking"]) == (Status.missing.value, breaks), doc["findings"]
    assert code == (1 if breaks else 0), doc["findings"]


OPTIONAL_MODULE = ("from sglang.srt.layers import torchao_utils\n\n\ndef _skip(model, torchao_config, filter_fn=None):\n    return model\n\n\n"
                   "torchao_utils.apply_torchao_config_to_model = _skip\n")
IMPORTERS = {
    "from_import_in_register": ("def register():\n    try:\n        from tao import optional  # noqa: F401\n    except ImportError as exc:\n"
                                "        print(exc)\n", False),
    "import_statement_at_module_level": ("try:\n    import tao.optional  # noqa: F401\nexcept ModuleNotFoundError:\n    pass\n"
                                         "except ImportError:\n    pass\n\n\ndef register():\n    return None\n", False),
    "import_module_in_a_loop": ("import importlib\n\n\ndef register():\n    for name in ('tao.optional',):\n        try:\n"
                                "            importlib.import_module(name)\n        except ImportError:\n            continue\n", False),
    "also_imported_unguarded": ("def register():\n    try:\n        from tao import optional  # noqa: F401\n    except ImportError:\n        pass\n\n\n"
                                "def warm():\n    import tao.optional  # noqa: F401\n\n\nwarm()\n", True),
}


@pytest.mark.parametrize("spelling", sorted(IMPORTERS))
def test_a_module_imported_only_inside_a_catching_try_fails_into_it(upstreams, tmp_path, spelling):
    _, new = upstreams
    importer, breaks = IMPORTERS[spelling]
    root = plugin(tmp_path, {"pyproject.toml": pyproject(plugins={"tao": "tao:register"}), "tao/__init__.py": importer,
                             "tao/optional.py": OPTIONAL_MODULE}, name=spelling)
    code, doc = check(root, new)
    findings = {f["kind"]: f for f in doc["findings"] if f["kind"] in ("import", "patch")}
    assert findings["import"]["status"] == Status.missing.value and findings["import"]["live"], doc["findings"]
    assert (findings["import"]["breaking"], findings["patch"]["breaking"], code) == (breaks, breaks, 1 if breaks else 0), doc["findings"]


# a handler that turns the import's failure into the plugin's own error, inside a try that catches
# that error (twenty-eighth set F17-h2): the failure is caught further out, and what follows the
# import in the outer try never runs; an outer try catching something else lets it through
TRANSLATED = {
    "own_error_from_exc": ("class UpstreamMissing(RuntimeError):\n    pass\n", "raise UpstreamMissing('torchao_utils') from exc", "UpstreamMissing", False),
    "own_error_of_a_base_the_outer_catches": ("class UpstreamMissing(RuntimeError):\n    pass\n", "raise UpstreamMissing('torchao_utils')", "RuntimeError", False),
    "builtin_error": ("", "raise RuntimeError('no torchao_utils') from exc", "RuntimeError", False),
    "outer_catches_another_error": ("class UpstreamMissing(RuntimeError):\n    pass\n", "raise UpstreamMissing('x') from exc", "KeyError", True),
}


@pytest.mark.parametrize("spelling", sorted(TRANSLATED))
def test_an_import_failure_turned_into_an_error_the_outer_try_catches_is_caught(upstreams, tmp_path, spelling):
    _, new = upstreams
    head, handler, outer, breaks = TRANSLATED[spelling]
    source = (head + "\n\ndef _mine(model, torchao_config, filter_fn=None):\n    return model\n\n\ntry:\n    try:\n"
              "        import sglang.srt.layers.torchao_utils as tu\n    except ImportError as exc:\n        " + handler + "\n"
              "    tu.apply_torchao_config_to_model = _mine\nexcept " + outer + ":\n    tu = None\n\n\ndef register():\n    pass\n")
    root = plugin(tmp_path, {"pyproject.toml": pyproject(plugins={"tr": "tr:register"}), "tr/__init__.py": source}, name=spelling)
    code, doc = check(root, new)
    torchao = [f for f in doc["findings"] if f["target"].startswith("sglang.srt.layers.torchao_utils")]
    assert torchao and any(f["breaking"] for f in torchao) is breaks and code == (1 if breaks else 0), torchao


# The try sits under a run-time test that leaves early (twenty-ninth set F17-i2: an installer
# object's `if self.installed: return`): the patch after the failing import is under the same test,
# so whenever it would run the import has failed first -- caught, whatever the data says.
RUNTIME_GUARDED = {
    "callable_object_flag": ("class _Installer:\n    def __init__(self):\n        self.installed = False\n\n"
                             "    def __call__(self):\n        if self.installed:\n            return\n{body}\n        self.installed = True\n\n\n"
                             "register = _Installer()\n", "        "),
    "environment_switch": ("import os\n\n\ndef register():\n    if os.environ.get('TAO_OFF'):\n        return\n{body}\n", "    "),
    "parameter_inside_if": ("def register(enabled=True):\n    if enabled:\n{body}\n", "        "),
}


@pytest.mark.parametrize("spelling", sorted(RUNTIME_GUARDED))
def test_a_patch_after_a_failing_import_under_a_run_time_test_is_caught(upstreams, tmp_path, spelling):
    _, new = upstreams
    template, indent = RUNTIME_GUARDED[spelling]
    body = "\n".join(indent + line for line in (
        "try:", "    import sglang.srt.layers.torchao_utils as tu", "    tu.apply_torchao_config_to_model = _skip",
        "except ImportError:", "    return"))
    code, doc = check(plugin(tmp_path, {
        "pyproject.toml": pyproject(plugins={"tao": "tao:register"}),
        "tao/__init__.py": "def _skip(model, torchao_config, filter_fn=None):\n    return model\n\n\n" + template.format(body=body),
    }), new)
    patch = next(f for f in doc["findings"] if f["kind"] == "patch")
    assert patch["status"] == "missing" and not patch["breaking"] and "fails first" in patch["guard"]["condition"], patch
    assert code == 0, [f for f in doc["findings"] if f["breaking"]]
