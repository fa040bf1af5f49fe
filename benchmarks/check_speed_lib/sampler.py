"""The reference plugin's parts: references, module builders and the seeded sampler that
picks references the way real plugins use upstream."""

from __future__ import annotations

import ast
import builtins
import random
import re
from collections import Counter, defaultdict
from dataclasses import dataclass

from .oracle import classify, ref_key

SUBPACKAGES = {
    "sglang.srt.layers.attention": "attention",
    "sglang.srt.layers.moe": "moe",
    "sglang.srt.layers.quantization": "quantization",
    "sglang.srt.layers": "layers",
    "sglang.srt.managers": "managers",
    "sglang.srt.model_executor": "model_executor",
    "sglang.srt.mem_cache": "mem_cache",
    "sglang.srt.distributed": "distributed",
    "sglang.srt.utils": "utils",
    "sglang.srt.configs": "configs",
    "sglang.srt.sampling": "sampling",
    "sglang.srt.speculative": "speculative",
    "sglang.srt.model_loader": "model_loader",
    "sglang.srt.lora": "lora",
    "sglang.srt.compilation": "compilation",
    "sglang.srt.models": "models",
}
COMMON_MODULES = (
    "sglang.srt.model_executor.forward_batch_info",
    "sglang.srt.managers.schedule_batch",
    "sglang.srt.server_args",
    "sglang.srt.utils",
    "sglang.srt.utils.common",
    "sglang.srt.distributed",
    "sglang.srt.distributed.parallel_state",
    "sglang.srt.layers.dp_attention",
    "sglang.srt.mem_cache.memory_pool",
    "sglang.srt.environ",
    "sglang.srt.layers.radix_attention",
)

HOOK_TYPES = (("AROUND", 0.4), ("AFTER", 0.3), ("BEFORE", 0.2), ("REPLACE", 0.1))
RESERVED = set(dir(builtins)) | {"logger", "logging", "os", "importlib", "self", "cls", "args", "kwargs", "result", "original_fn", "value", "obj"}


@dataclass
class Ref:
    spec: dict
    status: str  # ok | broken (oracle, new release)
    why: str
    file: str = ""
    line: int = 0
    at_import: bool = False  # executes when the module is imported (a failure there fails the import)
    style: str = ""  # how the line is written (decorator, f-string, colon, ...)
    risk: str = ""  # works, but an override lacks parameters the base now allows / a shim serves it
    anchor: Ref | None = None  # the import this line depends on (same file)
    caught: bool = False  # inside try/except (ImportError, AttributeError): never breaking

    @property
    def ambiguous(self) -> bool:
        """Works for every call the base requires, but not for optional parameters the base gained:
        breaks only if a caller passes one. Flagging it is neither a hit nor a false positive."""
        return self.status == "ok" and self.risk.startswith("the base gained")

    @property
    def primary(self) -> bool:
        """Broken, and not merely because the import it depends on is broken."""
        return self.status == "broken" and not self.caught and not (self.anchor is not None and self.anchor.status == "broken")

    @property
    def kind(self) -> str:
        return "try" if self.caught else self.spec["kind"]

    @property
    def form(self) -> str:
        return self.spec["form"]

    @property
    def target(self) -> str:
        s = self.spec
        if s["form"] == "hook":
            return s["target"]
        if s["form"] == "from":
            return f"{s['module']}.{s['name']}"
        if s["form"] == "module":
            return s["module"]
        if s["form"] in ("override", "super", "self"):
            return f"{s['module']}.{s['cls']}.{s['member']}"
        if s["form"] == "platform":
            return f"sglang.srt.platforms.interface.SRTPlatform.{s['member']}"
        if s["form"] == "key":
            return f"{s['module']}.{s['path']}[{s['item']!r}]"
        if s["form"] == "field":
            return f"{s['module']}.{s['path']}.{s['field']}"
        return f"{s['module']}.{s['path']}"


def snake(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower().strip("_") or "x"


class ModuleBuilder:
    """One generated plugin module: upstream imports first, then blocks; each reference on its own
    line, its line number fixed when the module is rendered."""

    def __init__(self, dotted: str, doc: str):
        self.dotted = dotted
        self.path = dotted.replace(".", "/") + ".py"
        self.doc = doc
        self.stdlib: list[str] = []
        self.imports: list[tuple[str, Ref | None]] = []
        self.local_imports: list[str] = []
        self.blocks: list[list[tuple[str, Ref | None]]] = []
        self.bound: dict[tuple, str] = {}
        self.bound_refs: dict[tuple, Ref] = {}
        self.names: set[str] = set(RESERVED)
        self.refs: list[Ref] = []

    def fresh(self, wanted: str) -> str:
        wanted = re.sub(r"\W", "_", wanted) or "x"
        name, n = wanted, 2
        while name in self.names or name.startswith("__"):
            name, n = f"{wanted}_{n}", n + 1
        self.names.add(name)
        return name

    def import_name(self, ref: Ref) -> str:
        """`from M import N` (once per module); the local name bound to it."""
        key = ("from", ref.spec["module"], ref.spec["name"])
        if key not in self.bound:
            local = self.fresh(ref.spec["name"])
            text = f"from {ref.spec['module']} import {ref.spec['name']}" + (f" as {local}" if local != ref.spec["name"] else "")
            ref.at_import = True
            self.imports.append((text, ref))
            self.refs.append(ref)
            self.bound[key] = local
            self.bound_refs[key] = ref
        return self.bound[key]

    def import_module(self, ref: Ref) -> str:
        key = ("module", ref.spec["module"])
        if key not in self.bound:
            local = self.fresh(ref.spec["module"].rsplit(".", 1)[-1] + "_mod")
            ref.at_import = True
            self.imports.append((f"import {ref.spec['module']} as {local}", ref))
            self.refs.append(ref)
            self.bound[key] = local
            self.bound_refs[key] = ref
        return self.bound[key]

    def block(self, lines: list[tuple[str, Ref | None]]) -> None:
        self.blocks.append(lines)
        self.refs += [ref for _, ref in lines if ref is not None]

    def has(self, key: tuple) -> bool:
        return key in self.bound

    def render(self) -> str:
        lines: list[tuple[str, Ref | None]] = [(f'"""{self.doc}"""', None), ("", None)]
        if self.stdlib:
            lines += [(text, None) for text in sorted(set(self.stdlib))] + [("", None)]
        if self.imports:
            lines += self.imports + [("", None)]
        if self.local_imports:
            lines += [(text, None) for text in self.local_imports] + [("", None)]
        for block in self.blocks:
            lines += [("", None)] + block + [("", None)]
        while lines and lines[-1][0] == "":
            lines.pop()
        for number, (_, ref) in enumerate(lines, start=1):
            if ref is not None:
                ref.file, ref.line = self.path, number
        return "\n".join(text for text, _ in lines) + "\n"


def safe_literal(text: str | None) -> str:
    """A harvested default as source text, or None when it is not a plain literal."""
    if text is None:
        return "None"
    try:
        ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return "None"
    return text


def render_params(params: list) -> str:
    """A def's parameter list reproducing an upstream signature (defaults as literals or None)."""
    out, star_done, saw_positional_only = [], False, False
    for index, (name, kind, has_default, literal) in enumerate(params):
        if kind != 0 and saw_positional_only:
            out.append("/")
            saw_positional_only = False
        if kind == 0:
            saw_positional_only = True
        if kind == 3 and not star_done:
            out.append("*")
            star_done = True
        default = f"={safe_literal(literal)}" if has_default else ""
        out.append(("*" if kind == 2 else "**" if kind == 4 else "") + name + default)
        star_done |= kind == 2
    if saw_positional_only:
        out.append("/")
    return ", ".join(out)


def super_args(params: list) -> str:
    args = []
    for name, kind, _, _ in params[1:]:
        args.append(name if kind in (0, 1) else f"*{name}" if kind == 2 else f"{name}={name}" if kind == 3 else f"**{name}")
    return ", ".join(args)


class Sampler:
    """Chooses references from the oracle-kept pool and writes them into plugin modules, steering
    the share of references that break on the new release towards `break_share`."""

    def __init__(self, pool: dict, verdicts: dict, harvest: dict, rng: random.Random, break_share: float):
        self.rng, self.break_share = rng, break_share
        self.kept: dict[str, tuple[str, str, str]] = {}
        for key, spec in pool.items():
            status, why, risk = classify(verdicts[key])
            if status in ("ok", "broken"):
                self.kept[key] = (status, why, risk)
        self.pool = pool
        self.uses: Counter = Counter()
        self.index: dict[str, dict] = defaultdict(lambda: defaultdict(list))
        for key in self.kept:
            spec = pool[key]
            if spec["form"] == "platform":
                continue
            self.index[spec["module"]][spec["form"]].append(key)
            if spec["form"] in ("override", "super", "self", "attr-class", "ctor"):
                self.index[spec["module"]][(spec["form"], spec.get("cls") or spec["path"].split(".")[0])].append(key)
        self.harvest = harvest
        self.excluded = Counter(pool[k]["kind"] for k in pool if k not in self.kept)

    # ---------------------------------------------------------------- bookkeeping
    def ref(self, key: str, anchor: Ref | None = None) -> Ref:
        status, why, risk = self.kept[key]
        self.uses[key] += 1
        return Ref(self.pool[key], status, why, risk=risk, anchor=anchor)

    def pick(self, keys: list[str], broken: bool | None, limit: int = 4) -> str | None:
        """A key from `keys` (used fewer than `limit` times), broken or not as asked when possible."""
        usable = [k for k in keys if self.uses[k] < limit]
        if broken is not None:
            preferred = [k for k in usable if (self.kept[k][0] == "broken") == broken]
            usable = preferred or ([] if broken is False else usable)
        return self.rng.choice(usable) if usable else None

    def status(self, key: str) -> str:
        return self.kept[key][0]

    def has_broken(self, module: str) -> bool:
        return any(self.status(k) == "broken" for form, keys in self.index[module].items() if isinstance(form, str) for k in keys)

    def from_key(self, module: str, name: str) -> str | None:
        spec = {"kind": "import", "form": "from", "module": module, "name": name}
        meta = self.harvest[module]["names"].get(name)
        if meta is None:
            return None
        spec.update(t=meta["t"], where=meta["where"])
        key = ref_key(spec)
        return key if key in self.kept else None

    # ---------------------------------------------------------------- units (each writes lines)
    def bind_from(self, mb: ModuleBuilder, module: str, name: str) -> tuple[str, Ref] | None:
        """`from module import name` in `mb` (written once): (local name, the import's Ref)."""
        key = ("from", module, name)
        if not mb.has(key):
            import_key = self.from_key(module, name)
            if import_key is None:
                return None
            mb.import_name(self.ref(import_key))
        return mb.bound[key], mb.bound_refs[key]

    def require_from(self, mb: ModuleBuilder, module: str, name: str) -> tuple[str, Ref]:
        """bind_from for the plugin API names every plugin needs (hook registry, platform bases)."""
        bound = self.bind_from(mb, module, name)
        if bound is None:
            raise SystemExit(f"{module}.{name} is not importable in the oracle's runtime of the old release: cannot write a plugin")
        return bound

    def unit_from(self, mb: ModuleBuilder, module: str, broken: bool) -> int:
        """`from M import N`, then a use of N that is not itself a reference (isinstance, a
        pass-through wrapper, a module constant)."""
        # Mostly names the module defines (or its package re-exports); sometimes a name it merely
        # imports itself, as plugin code copied from upstream does.
        incidental = self.rng.random() < 0.25
        keys = [k for k in self.index[module]["from"] if not mb.has(("from", module, self.pool[k]["name"])) and (incidental or self.pool[k]["where"] != "incidental")]
        key = self.pick(keys, broken)
        if key is None:
            return 0
        ref = self.ref(key)
        local = mb.import_name(ref)
        t = ref.spec["t"]
        if t == "class":
            fn = mb.fresh(f"is_{snake(local)}")
            mb.block([(f"def {fn}(obj) -> bool:", None), (f"    return isinstance(obj, {local})", None)])
        elif t == "function":
            fn = mb.fresh(f"bench_{snake(local)}")
            mb.block([(f"def {fn}(*args, **kwargs):", None), (f"    return {local}(*args, **kwargs)", None)])
        else:
            mb.block([(f"{mb.fresh('BENCH_' + local.upper())} = {local}", None)])
        return 1

    def unit_alias(self, mb: ModuleBuilder, module: str, broken: bool) -> int:
        """`import M as m`, then `m.attr` at module level or in a function, sometimes `m.f(kw=...)`."""
        module_keys = self.index[module]["module"]
        attrs = self.index[module]["attr-module"]
        if not module_keys or not attrs:
            return 0
        if broken and self.status(module_keys[0]) != "broken" and not any(self.status(k) == "broken" for k in attrs):
            return 0
        before = len(mb.refs)
        if not mb.has(("module", module)):
            mb.import_module(self.ref(module_keys[0]))
        alias, anchor = mb.bound[("module", module)], mb.bound_refs[("module", module)]
        want = broken and anchor.status != "broken"
        for n in range(self.rng.randint(1, 3)):
            key = self.pick(attrs, True if (want and n == 0) else False if anchor.status == "ok" else None)
            if key is None:
                continue
            ref = self.ref(key, anchor)
            path = ref.spec["path"]
            if self.rng.random() < 0.5:
                ref.at_import = True
                mb.block([(f"{mb.fresh('_' + snake(path).upper())} = {alias}.{path}", ref)])
            else:
                fn = mb.fresh(f"upstream_{snake(path)}")
                mb.block([(f"def {fn}():", None), (f"    return {alias}.{path}", ref)])
        calls = self.index[module]["call"]
        if calls and self.rng.random() < 0.3:
            key = self.pick(calls, False if anchor.status == "ok" and not want else None)
            if key:
                self.write_call(mb, self.ref(key, anchor), f"{alias}.{self.pool[key]['path']}")
        return len(mb.refs) - before

    def unit_class_attrs(self, mb: ModuleBuilder, module: str, broken: bool) -> int:
        """`from M import Cls`, then `Cls.ATTR` / `Enum.MEMBER` (comparisons, module constants)."""
        keys = self.index[module]["attr-class"] + self.index[module]["enum"]
        first = self.pick(keys, broken) if keys else None
        if first is None:
            return 0
        cls = self.pool[first]["path"].split(".")[0]
        before = len(mb.refs)
        bound = self.bind_from(mb, module, cls)
        if bound is None:
            return 0
        local, anchor = bound
        same_class = [k for k in keys if self.pool[k]["path"].split(".")[0] == cls and k != first]
        chosen = [first] + [k for k in (self.pick(same_class, False) for _ in range(self.rng.randint(0, 2))) if k]
        for key in dict.fromkeys(chosen):
            ref = self.ref(key, anchor)
            member = ref.spec["path"].split(".", 1)[1]
            if ref.form == "enum" and self.rng.random() < 0.7:
                fn = mb.fresh(f"is_{snake(member)}")
                mb.block([(f"def {fn}(value) -> bool:", None), (f"    return value == {local}.{member}", ref)])
            elif self.rng.random() < 0.4:
                ref.at_import = True
                mb.block([(f"{mb.fresh('_' + snake(cls + '_' + member).upper())} = {local}.{member}", ref)])
            else:
                fn = mb.fresh(f"upstream_{snake(member)}")
                mb.block([(f"def {fn}():", None), (f"    return {local}.{member}", ref)])
        return len(mb.refs) - before

    def unit_registry_key(self, mb: ModuleBuilder, module: str, broken: bool) -> int:
        """`from M import REGISTRY`, then `REGISTRY["key"]` in a function (the plugin looks up an
        upstream backend / op by name)."""
        return self._unit_on_name(mb, module, broken, "key", lambda local, spec: (
            f"lookup_{snake(spec['item'])}", "", f"{local}[{spec['item']!r}]"))

    def unit_field(self, mb: ModuleBuilder, module: str, broken: bool) -> int:
        """`from M import Cls`, then `def f(obj: Cls): return obj.field` (a hook or helper reading
        a field of an upstream object it is handed)."""
        return self._unit_on_name(mb, module, broken, "field", lambda local, spec: (
            f"read_{snake(spec['field'])}", f"obj: {local}", f"obj.{spec['field']}"))

    def _unit_on_name(self, mb: ModuleBuilder, module: str, broken: bool, form: str, write) -> int:
        """`from M import NAME`, then a function returning an expression on it: `write(local,
        spec)` gives (function name, parameters, expression). A module without references of
        `form`: any module that has some."""
        holders = [m for m in sorted(self.index) if self.index[m][form]]
        if not holders:
            return 0
        module = module if self.index[module][form] else self.rng.choice(holders)
        key = self.pick(self.index[module][form], broken, limit=1)
        if key is None:
            return 0
        before = len(mb.refs)
        bound = self.bind_from(mb, module, self.pool[key]["path"])
        if bound is None:
            return 0
        local, anchor = bound
        ref = self.ref(key, anchor)
        name, params, expression = write(local, ref.spec)
        mb.block([(f"def {mb.fresh(name)}({params}):", None), (f"    return {expression}", ref)])
        return len(mb.refs) - before

    def unit_try(self, mb: ModuleBuilder, module: str, broken: bool) -> int:
        """A module-level `try:` holding an import and a use of what it imported (an attribute of
        the imported class), handled by `except (ImportError, AttributeError)`: whatever breaks in
        it is caught, so no line of it is breaking."""
        keys = [k for k in self.index[module]["from"] if self.pool[k]["t"] == "class" and not mb.has(("from", module, self.pool[k]["name"]))]
        key = self.pick(keys, broken, limit=2)
        if key is None:
            return 0
        ref = self.ref(key)
        ref.caught = True
        local = mb.fresh(f"try_{ref.spec['name']}")
        lines = [("try:", None), (f"    from {module} import {ref.spec['name']} as {local}", ref)]
        attr_key = self.pick(self.index[module][("attr-class", ref.spec["name"])], None if ref.status == "broken" else broken, limit=2)
        if attr_key:
            attr = self.ref(attr_key, ref)
            attr.caught = True
            lines.append((f"    {mb.fresh('_TRY_' + snake(attr.spec['path']).upper())} = {local}.{attr.spec['path'].split('.', 1)[1]}", attr))
        lines += [("except (ImportError, AttributeError):", None), (f"    {local} = None", None)]
        mb.block(lines)
        return sum(1 for _, r in lines if r is not None)

    def write_call(self, mb: ModuleBuilder, ref: Ref, callee: str) -> int:
        """A wrapper whose body calls `callee` with the spec's positionals and keyword arguments,
        forwarding its own parameters (as plugin code passes variables, not literals)."""
        spec = ref.spec
        names = spec["pos_names"] + spec["kw"]
        local = {name: (f"arg_{name}" if name in RESERVED else name) for name in names}
        positional = [local[name] for name in spec["pos_names"]]
        keyword_params = [f"{local[name]}={safe_literal(spec['values'].get(name))}" for name in spec["kw"]]
        args = ", ".join(positional + [f"{name}={local[name]}" for name in spec["kw"]])
        fn = mb.fresh(f"call_{snake(spec['path'].replace('.', '_'))}")
        mb.block([(f"def {fn}({', '.join(positional + keyword_params)}):", None), (f"    return {callee}({args})", ref)])
        return 1

    def unit_call(self, mb: ModuleBuilder, module: str, broken: bool) -> int:
        """`from M import f` (or a class), then `f(a, kw=kw)` in a wrapper."""
        key = self.pick(self.index[module]["call"] + self.index[module]["ctor"], broken)
        if key is None:
            return 0
        before = len(mb.refs)
        bound = self.bind_from(mb, module, self.pool[key]["path"])
        if bound is None:
            return 0
        local, anchor = bound
        self.write_call(mb, self.ref(key, anchor), local)
        return len(mb.refs) - before

    def unit_subclass(self, mb: ModuleBuilder, module: str, broken: bool) -> int:
        """`class BenchX(X)` overriding 1-3 base methods with the base's signature (most calling
        `super().m(...)`), and helpers using `self.member` of the base."""
        overrides = self.index[module]["override"]
        if not overrides:
            return 0
        classes = sorted({self.pool[k]["cls"] for k in overrides})
        with_broken_self = [c for c in classes if any(self.status(k) == "broken" for k in self.index[module][("self", c)])]
        break_self = broken and bool(with_broken_self) and self.rng.random() < 0.35
        if break_self:
            cls = self.rng.choice(with_broken_self)
            key = self.pick(self.index[module][("override", cls)], False)
        else:
            key = self.pick(overrides, broken)
            cls = key and self.pool[key]["cls"]
        if key is None:
            return 0
        before = len(mb.refs)
        bound = self.bind_from(mb, module, cls)
        if bound is None:
            return 0
        local, anchor = bound
        same = [k for k in self.index[module][("override", cls)] if k != key]
        chosen = list(dict.fromkeys([key] + [k for k in (self.pick(same, False) for _ in range(self.rng.randint(0, 2))) if k]))
        name = mb.fresh("Bench" + cls.lstrip("_"))
        lines: list[tuple[str, Ref | None]] = [(f"class {name}({local}):", None), (f'    """benchdev variant of {cls}."""', None)]
        supers = {self.pool[k]["member"]: k for k in self.index[module][("super", cls)]}
        for override_key in chosen:
            ref = self.ref(override_key, anchor)
            member, params = ref.spec["member"], ref.spec["params"]
            lines += [("", None), (f"    def {member}({render_params(params)}):", ref)]
            super_key = supers.get(member)
            if super_key and (member == "__init__" or self.rng.random() < 0.6):
                call = f"super().__init__({super_args(params)})" if member == "__init__" else f"return super().{member}({super_args(params)})"
                lines.append((f"        {call}", self.ref(super_key, anchor)))
            else:
                lines.append(('        raise NotImplementedError("benchdev")', None))
        overridden = {self.pool[k]["member"] for k in chosen}
        for n in range(self.rng.randint(1 if break_self else 0, 2)):
            self_key = self.pick(self.index[module][("self", cls)], bool(break_self and n == 0))
            if not self_key or self.pool[self_key]["member"] in overridden:
                continue
            overridden.add(self.pool[self_key]["member"])
            ref = self.ref(self_key, anchor)
            member = ref.spec["member"]
            helper = f"_bench_{snake(member).strip('_')}"
            if ref.spec["t"] == "method":
                lines += [("", None), (f"    def {helper}(self, *args, **kwargs):", None), (f"        return self.{member}(*args, **kwargs)", ref)]
            else:
                lines += [("", None), (f"    def {helper}(self):", None), (f"        return self.{member}", ref)]
        mb.block(lines)
        return len(mb.refs) - before

    # ---------------------------------------------------------------- whole modules
    def share_of(self, builders) -> float:
        refs = [r for b in builders for r in b.refs]
        return sum(r.status == "broken" for r in refs) / max(1, len(refs))
