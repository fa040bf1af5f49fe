"""`harness map`, `diff` and `check` end to end through the CLI, on the fixture upstream and plugin."""

from __future__ import annotations

import yaml
from knowledge_support import by_target, harness, harness_json, write_tree

SCHED = "sglang.srt.managers.scheduler.Scheduler"


def test_map_reads_every_plugin_pattern(upstream_repo, plugin_dir, tmp_path):
    code, doc = harness_json("map", "--plugin", str(plugin_dir), "--upstream", f"{upstream_repo}@v1", "--out", str(tmp_path))
    assert code == 0 and doc["command"] == "map"
    findings = by_target(doc["findings"])
    for finding in doc["findings"]:  # the documented JSON shape
        assert {"kind", "target", "status", "live", "file", "line"} <= finding.keys()
    # f-string from an imported constant; decorator form
    assert findings[f"{SCHED}.schedule"]["hook_type"] == "AROUND"
    # concatenation inside a table, registered in a loop
    assert findings[f"{SCHED}.update_running"]["hook_type"] == "REPLACE"
    assert findings[f"{SCHED}.admit"]["hook_type"] == "BEFORE"
    # module constant + concatenation inside a function that runs at load
    threads = findings["sglang.srt.model_executor.model_runner.ModelRunner.init_threads_binding"]
    assert threads["live"] and threads["file"] == "xplug/hooks/__init__.py"
    # hook modules imported by name from a list are live; an unlisted one is dead
    assert findings[f"{SCHED}.schedule"]["live"]
    dead = findings[f"{SCHED}.gone_method"]
    assert dead["live"] is False and dead["status"] == "missing"
    # patches outside the registry, kernel and attention-backend registrations, server args
    assert findings["sglang.srt.distributed.parallel_state.ensure_model_parallel_initialized"]["kind"] == "patch"
    assert findings["sglang.srt.server_args.ATTENTION_BACKEND_CHOICES"]["kind"] == "patch"
    assert findings["sglang.srt.layers.activation.silu_and_mul"]["kind"] == "kernel"
    assert findings["sglang.srt.layers.attention.attention_registry.register_attention_backend"]["kind"] == "attention_backend"
    assert findings["sglang.srt.server_args.ServerArgs.attention_backend"]["status"] == "ok"
    # an override whose signature cannot stand in for the base's
    compile_backend = findings["sglang.srt.platforms.interface.SRTPlatform.get_compile_backend"]
    assert compile_backend["status"] == "signature_changed" and "mode" in compile_backend["detail"]
    # private helpers are not platform API
    assert not any(t.endswith("._private_helper") for t in findings)
    platform_map = yaml.safe_load((tmp_path / "platform-map.yaml").read_text())
    assert platform_map["platform_classes"] == ["xplug.platform:XPlatform"]
    assert {m["name"]: m["live"] for m in platform_map["modules"]}["xplug.hooks.dead"] is False
    assert "Platform Map" in (tmp_path / "platform-map.md").read_text()


def test_curated_fields_survive_regeneration(upstream_repo, plugin_dir, tmp_path):
    args = ("map", "--plugin", str(plugin_dir), "--upstream", f"{upstream_repo}@v1", "--out", str(tmp_path))
    assert harness(*args).returncode == 0
    path = tmp_path / "platform-map.yaml"
    data = yaml.safe_load(path.read_text())
    key = f"hook:AROUND:{SCHED}.schedule"
    data["curated"] = {"notes": "Owned by the runtime team.", "owners": {"hooks": "alice"}, "known_conflicts": ["xattn vs flashinfer"], "entries": {key: "keep: perf counters"}}
    path.write_text(yaml.safe_dump(data))
    assert harness(*args).returncode == 0
    regenerated = yaml.safe_load(path.read_text())
    assert regenerated["curated"]["owners"] == {"hooks": "alice"}
    assert regenerated["curated"]["entries"][key] == "keep: perf counters"
    markdown = (tmp_path / "platform-map.md").read_text()
    assert "Owned by the runtime team." in markdown and "keep: perf counters" in markdown and "xattn vs flashinfer" in markdown


def test_diff_gives_each_dependency_one_status(upstream_repo, plugin_dir, tmp_path):
    code, doc = harness_json("diff", "--from", f"{upstream_repo}@v1", "--to", f"{upstream_repo}@v2", "--plugin", str(plugin_dir), "--out", str(tmp_path))
    assert code == 0
    findings = by_target(doc["findings"])
    status = {target: f["status"] for target, f in findings.items()}
    assert status[f"{SCHED}.schedule"] == "signature_changed"
    assert status[f"{SCHED}.update_running"] == "body_changed"
    assert status[f"{SCHED}.admit"] == "inherited"
    assert findings[f"{SCHED}.admit"]["defined_in"] == "sglang.srt.managers.base.BaseScheduler"
    assert status["sglang.srt.utils.get_available_memory"] == "moved"
    assert findings["sglang.srt.utils.get_available_memory"]["defined_in"] == "sglang.srt.utils.memory.get_available_memory"
    assert status["sglang.srt.layers.activation.silu_and_mul"] == "ok"
    # a plain assignment onto a name that became a re-export patches nothing upstream calls
    rebound = findings["sglang.srt.utils.common.get_available_memory"]
    assert rebound["kind"] == "patch" and rebound["status"] == "moved" and "rebinds a re-export only" in rebound["detail"]
    assert rebound["risk"] > findings["sglang.srt.utils.get_available_memory"]["risk"]
    # a server-arg default is set on the instance: only whether the field exists matters
    assert status["sglang.srt.server_args.ServerArgs.attention_backend"] == "ok"
    threads = findings["sglang.srt.model_executor.model_runner.ModelRunner.init_threads_binding"]
    assert threads["status"] == "missing" and threads["successor"] == "sglang.srt.utils.numa.init_threads_binding"
    kv_pool = findings["sglang.srt.platforms.interface.SRTPlatform.get_mha_kv_pool_cls"]
    assert kv_pool["status"] == "not_on_base" and kv_pool["successor"] == "sglang.srt.platforms.interface.SRTPlatform.get_kv_pool_cls"
    assert findings["sglang.srt.platforms.interface.SRTPlatform.support_cuda_graph"]["status"] == "not_on_base"
    assert status["sglang.srt.distributed.parallel_state.ensure_model_parallel_initialized"] == "missing"
    # risk: a REPLACE of a changed body outranks a pass-through AROUND on a changed signature
    assert findings[f"{SCHED}.update_running"]["risk"] > findings[f"{SCHED}.schedule"]["risk"]
    order = [f["target"] for f in doc["findings"]]
    assert order.index(f"{SCHED}.update_running") < order.index(f"{SCHED}.schedule")
    # both sources are git: the commits that touched each impacted symbol
    assert any("drop finished requests" in c for c in findings[f"{SCHED}.update_running"]["commits"])
    assert any("get_kv_pool_cls" in c for c in kv_pool["commits"])
    markdown = (tmp_path / "feature-diff.md").read_text()
    assert "Migration checklist" in markdown and "`harness port` merges upstream's change into the hook" in markdown
    changes = yaml.safe_load((tmp_path / "feature-diff.yaml").read_text())["changes"]
    kinds = {(c["symbol"], c["change"]) for c in changes}
    assert ("sglang.srt.platforms.interface.SRTPlatform.get_kv_pool_cls", "added") in kinds
    assert ("sglang.srt.managers.scheduler.Scheduler.admit", "moved_to_base") in kinds
    assert ("sglang.srt.utils.memory.get_available_memory", "moved") in kinds
    assert ("sglang.srt.managers.scheduler.Scheduler.schedule", "signature_changed") in kinds


def test_check_fails_only_on_live_breakage(upstream_repo, plugin_dir):
    # v1: only the dead module's hook is broken -> reported, exit 0
    code, doc = harness_json("check", "--plugin", str(plugin_dir), "--upstream", f"{upstream_repo}@v1")
    assert code == 0 and doc["passed"] is True
    assert by_target(doc["findings"])[f"{SCHED}.gone_method"]["status"] == "missing"
    # v2: live hooks and overrides break -> exit 1
    code, doc = harness_json("check", "--plugin", str(plugin_dir), "--upstream", f"{upstream_repo}@v2")
    assert code == 1 and doc["passed"] is False
    plain = harness("check", "--plugin", str(plugin_dir), "--upstream", f"{upstream_repo}@v2")
    # the report is on stdout: the hook on ModelRunner.init_threads_binding (the table wraps its target)
    assert plain.returncode == 1 and "FAIL" in plain.stdout and "xplug/hooks/__init__.py:14" in plain.stdout
    assert "missing" in plain.stdout and "[red]" not in plain.stdout and "[/" not in plain.stdout  # styled, not markup


def test_bad_inputs_give_one_line_and_nonzero_exit(upstream_repo, plugin_dir, tmp_path):
    not_plugin = tmp_path / "not-a-plugin"
    not_plugin.mkdir()
    (not_plugin / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "pyproject.toml").write_text("[project\n")
    duplicated = tmp_path / "duplicated"
    duplicated.mkdir()
    (duplicated / "setup.cfg").write_text("[options.entry_points]\n[options.entry_points]\n")
    not_a_map = tmp_path / "not-a-map"
    not_a_map.mkdir()
    (not_a_map / "platform-map.yaml").write_text("- just\n- a list\n")
    cases = [
        (("map", "--plugin", str(plugin_dir), "--upstream", f"{upstream_repo}@v1", "--out", str(not_a_map)), "not a Platform Map"),
        (("check", "--plugin", str(duplicated), "--upstream", f"{upstream_repo}@v1"), "setup.cfg: malformed"),
        (("check", "--plugin", "/no/such/plugin", "--upstream", f"{upstream_repo}@v1"), "is not a directory"),
        (("check", "--plugin", str(not_plugin), "--upstream", f"{upstream_repo}@v1"), "not an SGLang plugin"),
        (("check", "--plugin", str(broken), "--upstream", f"{upstream_repo}@v1"), "malformed TOML"),
        (("check", "--plugin", str(plugin_dir), "--upstream", f"{upstream_repo}@v9"), "unknown git ref"),
        (("diff", "--from", "/nowhere", "--to", f"{upstream_repo}@v2"), "does not exist"),
        (("check", "--plugin", str(plugin_dir), "--upstream", "0.5.23"), "does not exist (a release is written sglang==0.5.23)"),
        # a git tag's spelling: the advice is the spelling harness accepts, not sglang==v0.5.23
        (("check", "--plugin", str(plugin_dir), "--upstream", "v0.5.23"), "does not exist (a release is written sglang==0.5.23)"),
        # the plugin path is checked before any release is fetched: no download, no progress line
        (("check", "--plugin", "/no/such/plugin", "--upstream", "sglang==9.9.9"), "plugin path '/no/such/plugin' is not a directory"),
        (("diff", "--plugin", "/no/such/plugin", "--from", "sglang==9.9.8", "--to", "sglang==9.9.9"), "is not a directory"),
    ]
    for args, message in cases:
        proc = harness(*args)
        assert proc.returncode == 2, (args, proc.stderr)
        lines = [line for line in proc.stderr.splitlines() if line.startswith("harness: error:")]
        assert len(lines) == 1 and message in lines[0], proc.stderr
        assert "Traceback" not in proc.stderr and "9.9.9" not in proc.stderr.replace(message, ""), proc.stderr


def test_tricky_patterns_are_judged_like_the_runtime_would(upstream_repo, tricky_plugin_dir):
    code, doc = harness_json("check", "--plugin", str(tricky_plugin_dir), "--upstream", f"{upstream_repo}@v1")
    findings = by_target(doc["findings"])
    # hook modules found by pkgutil auto-discovery are live
    assert all(f["live"] for f in doc["findings"] if f["file"].startswith("tricky/hooks/"))
    # a name neither RMSNorm nor its outside base torch.nn.Module defines is missing
    typo = findings["sglang.srt.layers.layernorm.RMSNorm.forward_typo"]
    assert typo["status"] == "missing" and "torch" in typo["detail"]
    # `except ImportError: X = None` does not hide the import; an alias is the same class
    assert findings["sglang.srt.models.registry.RMSNorm.forward_native"]["status"] == "ok"
    assert findings["sglang.srt.models.registry.RMSNorm.forward_native"]["hook_type"] == "AROUND"
    assert findings["sglang.srt.models.registry.Norm.forward_native"]["status"] == "ok"
    # HookRegistry refuses a non-REPLACE hook on a class target
    class_target = findings["sglang.srt.layers.layernorm.RMSNorm"]
    assert class_target["status"] == "missing" and "only REPLACE" in class_target["detail"]
    # patches made inside a function, through a local import and import_module()
    assert findings["sglang.srt.distributed.parallel_state.no_such_function"]["status"] == "missing"
    assert findings["sglang.srt.layers.activation.silu_and_mul"]["kind"] == "patch"
    # a property overriding a base class attribute is on the base
    assert findings["sglang.srt.platforms.interface.SRTPlatform.device_name"]["status"] == "ok"
    assert code == 1 and doc["breaking"] == 3 and doc["unverified"] == 0


def test_check_exit_code_3_when_only_unverifiable(upstream_repo, tmp_path):
    write_tree(tmp_path, {
        "pyproject.toml": '[project]\nname = "u"\n[project.entry-points."sglang.srt.plugins"]\nu = "u:load"\n',
        "u/__init__.py": """
            import os

            from sglang.srt.plugins.hook_registry import HookRegistry, HookType

            def target_for(name):
                # the method named by the deployment: nothing here can say which
                return "sglang.srt.managers.scheduler.Scheduler." + os.environ[name]

            def load():
                HookRegistry.register(target_for("U_SCHEDULER_METHOD"), lambda r, *a, **k: r, HookType.AFTER)
            """,
    })
    proc = harness("check", "--plugin", str(tmp_path), "--upstream", f"{upstream_repo}@v1")
    assert proc.returncode == 3 and "UNVERIFIED" in proc.stdout
