"""The plugin scan's reading of the engine's registration forms (harness.engines.forms, named by
the EngineProfile): replacement registrations (`CustomOp.register_oot`), model registrations
(`ModelRegistry.register_model("Arch", "pkg.mod:Class")`) and classes handed to upstream by
qualified name (platform methods returning `"pkg.mod.Class"`, `parallel_config.worker_cls = …`).
An engine whose profile names none of them records nothing here."""

from __future__ import annotations

import ast
from dataclasses import replace

from harness.engines import QUALNAME, profile
from harness.knowledge.model import (
    AllOf,
    Dependency,
    GuardCond,
    PluginScan,
    dotted,
    is_upstream,
    walk,
)
from harness.knowledge.scan.folding import OPAQUE, Instance, Named, OneOf
from harness.knowledge.scan.syntax import arg


class Registrations:
    """Registration forms inside expressions and statements (a mixin of the scanner)."""

    files: dict
    scan: PluginScan
    parameter_replacements: list  # (module, node, owner, name, class, ctx): registrations per helper call (_replacement)

    # ------------------------------------------------------------- replacements (register_oot)

    def _replacement_call(self, module: str, call: ast.Call, ctx) -> None:
        """`Owner.register_oot(_decorated_op_cls=C, name="X")`, the call form (vllm-ascend
        utils.py register_ascend_customop). Without a class argument it is the decorator
        factory, read where it decorates (_replacement_decorator), or where it is applied at once:
        `Owner.register_oot(name="X")(C)` is the decorator written as a call."""
        registry = profile().replacements
        if registry is None:
            return
        applied = call.func if isinstance(call.func, ast.Call) and len(call.args) == 1 and not call.keywords else None
        if applied is not None and isinstance(applied.func, ast.Attribute) and applied.func.attr == registry.method:
            if arg(applied, 0, registry.class_keyword) is None:  # (with a class, the inner call registered it)
                self._replacement(module, call, applied.func.value, arg(applied, 1, registry.name_keyword), call.args[0], ctx)
            return
        if not isinstance(call.func, ast.Attribute) or call.func.attr != registry.method:
            return
        decorated = arg(call, 0, registry.class_keyword)
        if decorated is not None:
            self._replacement(module, call, call.func.value, arg(call, 1, registry.name_keyword), decorated, ctx)

    def _replacement_decorator(self, module: str, owner: ast.AST, decorator: ast.AST, ctx) -> None:
        """`@Owner.register_oot`, `@Owner.register_oot()`, `@CustomOp.register_oot(name="X")` on a class."""
        registry = profile().replacements
        if registry is None or not isinstance(owner, ast.ClassDef):
            return
        func = decorator.func if isinstance(decorator, ast.Call) else decorator
        if not isinstance(func, ast.Attribute) or func.attr != registry.method:
            return
        name = arg(decorator, 1, registry.name_keyword) if isinstance(decorator, ast.Call) else None
        self._replacement(module, decorator, func.value, name, self._function_path(module, owner, ctx), ctx)

    def _replacement(self, module: str, node: ast.AST, owner_node: ast.AST, name_node: ast.AST | None, decorated: ast.expr | str | None,
                     ctx, bound: bool = False) -> None:
        """One custom_op dependency: `decorated` the class registered (a node, or the path of the
        class a decorator is on). A key or class read from a helper's parameters or a loop over
        them (`for name, cls in self.table: CustomOp.register_oot(name=name)(cls)`) is one
        registration per call of the helper and element of the loop (finish(): _parameter_replacements)
        when the key does not fold where it is written."""
        owner = self.qualify(module, dotted(owner_node), ctx.env)
        if not is_upstream(owner):
            return
        if not bound and ctx.functions and name_node is not None and not isinstance(self.const(module, name_node, ctx.env), str) and any(
                isinstance(n, ast.Name) and n.id in ctx.local and (ctx.env.get(n.id) is OPAQUE or isinstance(ctx.env.get(n.id), Instance))
                for n in walk(name_node)):
            self.parameter_replacements.append((module, node, owner_node, name_node, decorated, ctx))
            return
        if isinstance(decorated, ast.AST):
            value = self.const(module, decorated, ctx.env)
            if isinstance(value, OneOf):  # a class a run-time test chooses: one registration per choice, under its guards
                for option, guards in value.options:
                    self._replacement(module, node, owner_node, name_node, option.path if isinstance(option, Named) else None,
                                      replace(ctx, guards=ctx.guards + guards), bound)
                return
            plugin_class = value.path if isinstance(value, Named) else self.qualify(module, dotted(decorated), ctx.env)
        else:
            plugin_class = decorated
        # the key: `name`, else the __name__ of the class the method is called on
        key = self.const(module, name_node, ctx.env) if name_node is not None else owner.rsplit(".", 1)[-1]
        self._dependency(
            "custom_op", owner, module, node, ctx, name=key if isinstance(key, str) else None,
            hook=plugin_class if plugin_class and not is_upstream(plugin_class) else None, expression=ast.unparse(node)[:160],
        )

    # ------------------------------------------------------------- model registrations

    def _model_registration(self, module: str, call: ast.Call, ctx) -> None:
        """`ModelRegistry.register_model("Arch", "pkg.mod:Class" | Class)`: the architecture it
        registers (judged like any architecture string) and, in the lazy form, the plugin class
        the string names (vllm/model_executor/models/registry.py register_model)."""
        form = profile().model_registration
        if form is None or not isinstance(call.func, ast.Attribute) or call.func.attr != form.method or len(call.args) < 2:
            return
        owner = self.qualify(module, dotted(call.func.value), ctx.env)
        # the registry object through any re-export (`from vllm import ModelRegistry`: a lazy
        # module attribute the index resolves only as a value of vllm)
        if not is_upstream(owner) or owner.rsplit(".", 1)[-1] != form.registry.rsplit(".", 1)[-1]:
            return
        architecture = self.const(module, call.args[0], ctx.env)
        model = self.const(module, call.args[1], ctx.env)
        if isinstance(architecture, str):
            self._dependency("architecture", f"{form.registry}.models", module, call, ctx, name=architecture, how="registers")
        if isinstance(model, str) and QUALNAME.match(model):
            self._named_class(module, call, ctx, model, f"model {architecture if isinstance(architecture, str) else '?'}", None, "model_registration")

    # ------------------------------------------------------------- classes named by qualified name

    def _named_class_return(self, module: str, stmt: ast.Return, ctx) -> None:
        """A qualified name returned by a method: a named-class slot of the engine's platform
        (`get_attn_backend_cls`), or any method's return of a plugin or upstream class path
        (the judge keeps those of platform classes)."""
        if ctx.method is None or ctx.cls is None or stmt.value is None:
            return
        slot = profile().named_classes.returns.get(ctx.method.name)
        for text in self.strings(module, stmt.value, ctx.env):
            if QUALNAME.match(text) and (slot is not None or self._names_code(text)):
                self._named_class(module, stmt, ctx, text, f"{ctx.method.name}()", slot.base if slot else None, "return", plugin_class=ctx.cls.path)

    def _named_class_attribute(self, module: str, target: ast.Attribute, stmt: ast.stmt, ctx) -> None:
        """`x.worker_cls = "pkg.mod.Class"`: a settings attribute that holds a class by name."""
        slot = profile().named_classes.attributes.get(target.attr)
        if slot is None or getattr(stmt, "value", None) is None:
            return
        for text in self.strings(module, stmt.value, ctx.env):
            if QUALNAME.match(text):
                self._named_class(module, stmt, ctx, text, target.attr, slot.base, "attribute")

    def _named_class(self, module: str, node: ast.AST, ctx, text: str, what: str, base: str | None, how: str, plugin_class: str | None = None) -> None:
        self._dependency(
            "named_class", text.replace(":", "."), module, node, ctx, expression=text, name=base, how=how,
            member=what, plugin_class=plugin_class,
        )

    def _names_code(self, text: str) -> bool:
        """Whether a dotted string names something in the plugin or in upstream (not a logger name, a URL…)."""
        head = text.split(".")[0].split(":")[0]
        return is_upstream(head) or any(name.split(".")[0] == head for name in self.files)

    def resolve_named_classes(self) -> None:
        """Each plugin-side qualified name, resolved the way importlib + getattr would: the
        plugin class it reaches (through re-exports) in `hook`, None when the module or the
        name is not there."""
        for dep in self.scan.dependencies:
            if dep.kind != "named_class" or is_upstream(dep.target):
                continue
            module, _, name = dep.expression.partition(":") if ":" in dep.expression else dep.expression.rpartition(".")
            if module in self.files and self.scan.modules[module].error is None:
                dep.hook = self.qualify(module, name) or None

    def named_class_roots(self, platform_classes: list[str]) -> list[tuple[str, str, str, tuple[GuardCond, ...]]]:
        """(module, why, loader, guards) for each plugin module a platform class (or a model
        registration) names a class in: upstream imports it when it needs the class, and only
        when the statement naming it runs (`guards`: its conditions as one, see _naming_guard)."""
        roots = []
        for dep in self.scan.dependencies:
            if dep.kind != "named_class" or is_upstream(dep.target):
                continue
            module = self.module_of(dep.expression)
            owner = dep.plugin_class or (dep.enclosing[0].rsplit(".", 1)[0] if dep.enclosing else "")
            if module is None:
                continue
            guards = _naming_guard(dep)
            if dep.how == "model_registration":
                roots.append((module, f"{dep.member} registered as {dep.expression} ({dep.file}:{dep.line})", "model_package", guards))
            elif any(owner == p or owner.startswith(p + ".") for p in platform_classes):
                roots.append((module, f"{dep.member} {dep.expression} named by the platform class ({dep.file}:{dep.line})", "named_class", guards))
        return roots


def _naming_guard(dep: Dependency) -> tuple[GuardCond, ...]:
    """The conditions a class is named under (`if use_v1: return "pkg.v1.Backend"`, an early
    `return` before it, a version guard), as one guard for the code of the module it names,
    which is imported only then; its text says which string and where. () when unconditional."""
    texts = list(dict.fromkeys(g.text for g in dep.guards))
    if not texts:
        return ()
    cond = dep.guards[0].cond if len(dep.guards) == 1 else AllOf(tuple(g.cond for g in dep.guards))
    return (GuardCond(cond, f"{dep.expression!r} is named only when {' and '.join(texts)} ({dep.file}:{dep.line})", dep.line),)
