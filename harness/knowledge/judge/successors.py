"""Successors: what replaces an upstream target that no longer resolves, only with evidence.

`find_successor` names one (with `successor_reason`) only on a mention in a rename or
deprecation note, a wrapper that forwarded to a function that remains, a rename in git history,
a body at least as alike as git's rename threshold, a one-edit misspelling, or the same
qualified tail in the same module family; otherwise none: none is better than a wrong one."""

from __future__ import annotations

import ast
import difflib
import io
import os
import re
import textwrap
import tokenize
from collections import Counter
from typing import NamedTuple

from harness.engines import profile
from harness.knowledge.model import FunctionInfo, Ref, dotted, walk
from harness.knowledge.upstream import SymbolIndex, module_name

#
# A successor is named only with evidence, and `successor_reason` says which:
#   mention  a member of the same class (or function of the same module) whose docstring, comment
#            or string names the old name: "renamed from X", a deprecation message, the legacy
#            name a shim looks up with getattr;
#   wrapper  on the older release the old body was a thin wrapper calling a function of the same
#            name, which remains (0.5.17 ModelRunner.init_threads_binding -> numa_utils');
#   git      between two git refs, `git diff -M` saw the old module's file renamed, and the new
#            file defines the same qualified name;
#   content  a name new on the release whose body is like the old one the way git detects a
#            rename (_similarity >= RENAME_SIMILARITY); a body too short to tell also needs a
#            close name;
#   family   the same qualified tail (function, class, or method of a class of the same name or
#            a subclass of it) in the same module family (_same_family);
#   typo     a name no compared release defines is one edit from a member of its class/module.
# Nothing else: no close names alone, no same name in unrelated code (Compressor.forward_cuda is
# not BaseFusedOp.forward_kda; a multimodal CustomOp is not where MultiPlatformOp.dispatch_forward went).

# git's default rename threshold, -M50% (diffcore-rename.c: DEFAULT_RENAME_SCORE = 50% of MAX_SCORE)
RENAME_SIMILARITY = 0.5
_SHORT_BODY = 3  # normalised lines; fewer in common (a `pass`, a `raise NotImplementedError`) prove little alone
_CLOSE_NAME = 0.85  # difflib ratio that, with an alike short body, makes a rename
# the text of strings and comments (an f-string's text is a token of its own from Python 3.12 on)
_TEXT_TOKENS = {tokenize.STRING, tokenize.COMMENT, getattr(tokenize, "FSTRING_MIDDLE", tokenize.STRING)}
_RENAMING = re.compile(r"renam|replac|deprecat|formerly|previously|legacy|alias|instead|supersed|moved|backward|compat", re.IGNORECASE)
_WIDE_NAME = 30  # a name defined in more modules than this (forward, __init__) is searched for in its family only


class _Shape(NamedTuple):
    """The target as the older release (else the newer) shows it."""

    module: str  # the module the dotted path starts with
    kind: str  # function | class | method | toplevel (a function or a class: unknown which)
    owner: str | None  # a method's class name
    ref: Ref | None  # the function on the older release, when it was one there


def find_successor(target: str, index: SymbolIndex, old: SymbolIndex | None = None) -> tuple[str, str] | None:
    """(path, why) of what replaces `target`, which does not resolve on `index`, or None.

    `old` is the release the plugin was written against, when one is compared (diff, port,
    check --baseline): the old body and which names are new come from it, as the wrapper, git
    and content evidence need. The kinds of evidence and their order are listed above this
    function; without one there is no successor. Never the target itself."""
    target = target.replace(":", ".")
    container, _, name = target.rpartition(".")
    if not container or not name:
        return None
    shape = _shape(target, index, old)
    if shape is None:
        return None
    was_there = old is not None and old.resolve(target).ok
    found = _mentioned_in(index, old, container, name)
    if found is None and shape.ref is not None:
        found = _wrapped(index, old, shape.ref, name) or _git_renamed(index, old, shape, target) or _renamed_in_place(index, old, shape, container, name)
    if found is None and not was_there:
        found = _misspelt(index, container, name)
    if found is None:
        found = _same_tail_in_family(index, old, shape, target, name)
    if found is None and shape.ref is not None:
        found = _renamed_elsewhere(index, old, shape, target, name)
    return found if found and found[0] != target else None


def find_successors(targets: list[str], index: SymbolIndex, old: SymbolIndex | None = None) -> dict[str, tuple[str, str] | None]:
    """`find_successor` for many targets at once: the modules the searches will read are parsed
    first, together and in parallel (`SymbolIndex.index_all`), instead of one by one as each
    search reaches them; on a cold check of a large plugin the searches otherwise parse ~100
    modules serially. Returns target -> (path, why) or None, as find_successor."""
    targets = list(dict.fromkeys(t.replace(":", ".") for t in targets))
    for x in (old, index):  # the targets' own modules first: the shapes depend on them
        if x is not None:
            x.index_all(only={".".join(t.split(".")[:i]) for t in targets for i in range(1, t.count(".") + 1)})
    wanted: dict[SymbolIndex, set[str]] = {index: set()}
    for target in targets:
        container, _, name = target.rpartition(".")
        shape = _shape(target, index, old) if container and name else None
        if shape is None:
            continue
        wanted[index].update(_family_modules(index, shape, name))
        if shape.ref is not None:
            wanted[index].update(m for modules in _elsewhere_modules(index, shape, name).values() for m in modules)
    for x, modules in wanted.items():
        x.index_all(only=modules)
    return {target: find_successor(target, index, old) for target in targets}


def _shape(target: str, index: SymbolIndex, old: SymbolIndex | None) -> _Shape | None:
    """What the target names (see _Shape), or None when no compared tree has its module."""
    parts = target.split(".")
    module = next((".".join(parts[:i]) for i in range(len(parts) - 1, 0, -1)
                   if any(x is not None and ".".join(parts[:i]) in x.files for x in (old, index))), None)
    if module is None:
        return None
    # a module gone from both compared trees: its lower-case segments under a package are
    # modules by Python's naming convention (a class is CapWords)
    while any(x is not None and (x.files.get(module, ("", False))[1] or module in x.namespace_packages) for x in (old, index)):
        depth = len(module.split("."))
        if depth >= len(parts) - 1 or not parts[depth][:1].islower():
            break
        following = parts[depth]
        module = f"{module}.{following}"
    rest = parts[len(module.split(".")):]
    before = old.resolve(target) if old is not None else None
    ref = before.ref if before is not None and before.ok and before.ref.kind == "function" else None
    if len(rest) >= 2:
        return _Shape(module, "method", rest[-2], ref)
    if before is not None and before.ok and before.ref.kind in ("function", "class"):
        return _Shape(module, before.ref.kind, None, ref)
    return _Shape(module, "toplevel", None, ref)


def _members(index: SymbolIndex, container: str, mro: bool = False) -> list[tuple[Ref, FunctionInfo | None, str]]:
    """(ref, info, name) of the functions a class body (or its MRO) or a module defines."""
    resolution = index.resolve(container)
    if not resolution.ok or resolution.ref.kind not in ("class", "module"):
        return []
    ref = resolution.ref
    if ref.kind == "module":
        table = index.table(ref.module)
        return [(Ref("function", ref.module, q), f, q) for q, f in table.functions.items() if "." not in q] if table else []
    found: list[tuple[Ref, FunctionInfo | None, str]] = []
    for cls in index.mro(ref) if mro else [ref]:
        info = index.class_info(cls) if cls.kind == "class" else None
        table = index.table(cls.module) if info else None
        for member, what in (info.members.items() if info else ()):
            if what == "def" and all(member != n for _, _, n in found):
                qualname = f"{cls.qualname}.{member}"
                found.append((Ref("function", cls.module, qualname), table.functions.get(qualname), member))
    return found


def _mentioned_in(index: SymbolIndex, old: SymbolIndex | None, container: str, name: str) -> tuple[str, str] | None:
    """A public member of the class / module whose docstring, comments or strings name the old
    one (code that merely uses a name is no evidence: `self.forward_cuda(...)` in forward_hip
    calls it, it does not replace it). Across two releases only a mention that is new counts."""
    members = _members(index, container)
    if not members or not any(name in line for line in _source_lines(index, members[0][0].module)):
        return None
    for ref, info, member in members:
        if member.startswith("_") or member == name or info is None:
            continue
        line = _mention(index, ref, info, name)
        if line is None:
            continue
        before = old.resolve(ref.path) if old is not None else None
        if before is not None and before.ok and before.ref.kind == "function":
            old_info = old.function_info(before.ref)
            if old_info is not None and _mention(old, before.ref, old_info, name) is not None:
                continue  # said so before the change too
        table = index.table(ref.module)
        return f"{container}.{member}", f"{container}.{member} ({table.path}:{line}) names {name} in a docstring, comment or string"
    return None


def _mention(index: SymbolIndex, ref: Ref, info: FunctionInfo, name: str) -> int | None:
    """The line where a string or comment of the function names `name`: the whole string (the
    legacy name a shim looks up), or a word in text that speaks of a rename or deprecation (a
    comment that merely mentions it is no evidence); None if there is none."""
    lines = _source_lines(index, ref.module)[info.lineno - 1 : info.end_lineno]
    word = re.compile(rf"\b{re.escape(name)}\b")
    if not any(word.search(line) for line in lines):
        return None
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(textwrap.dedent("\n".join(lines)) + "\n").readline))
    except (tokenize.TokenError, SyntaxError):
        return None
    return next((info.lineno + t.start[0] - 1 for t in tokens
                 if t.type in _TEXT_TOKENS and (t.string.strip("'\"") == name or (word.search(t.string) and _RENAMING.search(t.string)))), None)


def _wrapped(index: SymbolIndex, old: SymbolIndex, ref: Ref, name: str) -> tuple[str, str] | None:
    """The old body was a thin wrapper (at most _SHORT_BODY statements) that called a function
    of the same name (or without its leading underscore) which the new release still has."""
    found = _function_node(old, ref)
    if found is None:
        return None
    body = _without_docstring(found[0].body)
    if len(body) > _SHORT_BODY:
        return None
    for call in (n for stmt in body for n in walk(stmt) if isinstance(n, ast.Call)):
        callee = dotted(call.func)
        if not callee or callee.split(".")[0] in ("self", "cls", "super") or callee.rsplit(".", 1)[-1] not in (name, name.lstrip("_")):
            continue
        resolution = old.resolve_in_scope(ref.module, callee)
        if resolution.ok and resolution.ref.kind == "function" and resolution.ref.path != ref.path and index.resolve(resolution.ref.path).ok:
            where = f"{old.table(ref.module).path}:{call.lineno + old.function_info(ref).lineno - 1}"
            return resolution.ref.path, f"on {old.source.label} it only called {callee} ({where}), which remains"
    return None


def _git_renamed(index: SymbolIndex, old: SymbolIndex, shape: _Shape, target: str) -> tuple[str, str] | None:
    """Two refs of one git repo: the old module's file renamed (`git diff -M`) to a file that
    defines the same qualified name."""
    renames = _git_renames(old, index)
    relpath = old.files.get(shape.module, (None,))[0]
    moved = renames.get(relpath) if relpath else None
    if moved is None:
        return None
    new_module = module_name(moved)[0]
    candidate = new_module + target[len(shape.module):]
    if index.resolve(candidate).ok:
        return candidate, f"git diff -M {old.source.git_commit[:7]}..{index.source.git_commit[:7]} renamed {relpath} to {moved}"
    return None


def _git_renames(old: SymbolIndex, new: SymbolIndex) -> dict[str, str]:
    """Old -> new relative path of the files git sees renamed between the two refs (empty unless
    both are commits of one repository)."""
    a, b = old.source, new.source
    if a.kind != "git" or b.kind != "git" or a.git_repo != b.git_repo or not a.git_commit or not b.git_commit:
        return {}
    key = (a.git_commit, b.git_commit)
    memo = new.memo.setdefault("successor-git-renames", {})
    if key not in memo:
        import git  # gitpython, as upstream/source.py reads git sources

        renames: dict[str, str] = {}
        try:
            output = git.Repo(a.git_repo).git.diff("-M", "--name-status", "--diff-filter=R", a.git_commit, b.git_commit)
        except git.GitCommandError:
            output = ""
        for line in output.splitlines():
            fields = line.split("\t")
            if len(fields) == 3 and fields[1].startswith(a.repo_prefix) and fields[2].startswith(b.repo_prefix):
                renames[fields[1][len(a.repo_prefix):]] = fields[2][len(b.repo_prefix):]
        memo[key] = renames
    return memo[key]


def _renamed_in_place(index: SymbolIndex, old: SymbolIndex, shape: _Shape, container: str, name: str) -> tuple[str, str] | None:
    """A member new on the class (the one named, or the one that defined the old method) or
    module, with a body like the old one."""
    owners = dict.fromkeys([container, *([shape.ref.path.rsplit(".", 1)[0]] if shape.kind == "method" else [])])
    candidates = [(f"{owner}.{member}", ref, member) for owner in owners for ref, info, member in _members(index, owner)
                  if member != name and info is not None and not old.resolve(f"{owner}.{member}").ok]
    return _most_alike(index, old, shape.ref, name, candidates, "a new member of the same " + ("class" if shape.kind == "method" else "module"))


def _renamed_elsewhere(index: SymbolIndex, old: SymbolIndex, shape: _Shape, target: str, name: str) -> tuple[str, str] | None:
    """A function or method of the same name (or with / without a leading underscore), new on
    the release, defined anywhere (in the module family only for a name many modules define),
    with a body like the old one: a method that became a function, or went to a renamed class,
    keeps its body."""
    candidates = []
    for short, modules in _elsewhere_modules(index, shape, name).items():
        for module in modules:
            table = index.table(module)
            for qualname in table.functions if table else ():
                path = f"{module}.{qualname}"
                # new on the release: code alike that was there before (another backend's
                # all_reduce) is a sibling, not where the old one went
                if qualname.rsplit(".", 1)[-1] == short and qualname.count(".") <= 1 and path != target and not old.resolve(path).ok:
                    candidates.append((path, Ref("function", module, qualname), short))
    return _most_alike(index, old, shape.ref, name, candidates, "the same name, new elsewhere")


def _elsewhere_modules(index: SymbolIndex, shape: _Shape, name: str) -> dict[str, list[str]]:
    """Name variant (with / without a leading underscore) -> the modules that may define it (in
    the module family only for a name many modules define)."""
    found = {}
    for short in dict.fromkeys(n for n in (name, name.lstrip("_"), "_" + name) if n):
        modules = index.modules_defining(short)
        found[short] = [m for m in modules if _same_family(shape.module, m)][:_WIDE_NAME] if len(modules) > _WIDE_NAME else modules
    return found


def _most_alike(index: SymbolIndex, old: SymbolIndex, ref: Ref, name: str, candidates: list[tuple[str, Ref, str]], where: str) -> tuple[str, str] | None:
    before = _body_lines(old, ref)
    if not before:
        return None
    scored = []
    for path, candidate, member in candidates:
        after = _body_lines(index, candidate)
        shared = _shared(before, after) if after else 0
        score = shared / max(len(before), len(after)) if after else 0.0
        close = member == name or difflib.SequenceMatcher(None, name, member).ratio() >= _CLOSE_NAME
        if score >= RENAME_SIMILARITY and (shared >= _SHORT_BODY or close):
            scored.append((score, close, path, candidate))
    scored.sort(key=lambda s: (s[0], s[1]), reverse=True)
    if not scored or (len(scored) > 1 and scored[0][:2] == scored[1][:2]):
        return None  # two equally alike: no telling which
    score, _, path, candidate = scored[0]
    location = f"{index.table(candidate.module).path}:{index.function_info(candidate).lineno}"
    return path, f"{where} ({location}) with a body {score:.0%} like the old one ({old.source.label}), the way git detects a rename"


def _misspelt(index: SymbolIndex, container: str, name: str) -> tuple[str, str] | None:
    """The one member of the class (with its bases) or module one edit away from a name that
    no compared release defines: the plugin misspelt it."""
    if len(name) < 8:
        return None
    close = [member for _, _, member in _members(index, container, mro=True) if _one_edit(name, member)]
    if len(close) != 1:
        return None
    return f"{container}.{close[0]}", f"{name} is one character from {close[0]} on {container}: a misspelling, or a leading underscore added or dropped"


def _one_edit(a: str, b: str) -> bool:
    """One insertion, deletion, substitution or swap of neighbours apart, and not a different
    short word (mha / mla name different things, backnd / backend the same)."""
    if a == b or abs(len(a) - len(b)) > 1:
        return False
    if len(a) == len(b):
        diff = [i for i in range(len(a)) if a[i] != b[i]]
        swapped = len(diff) == 2 and diff[1] == diff[0] + 1 and a[diff[0]] == b[diff[1]] and a[diff[1]] == b[diff[0]]
        if len(diff) == 1:
            start = a.rfind("_", 0, diff[0]) + 1
            end = len(a) if a.find("_", diff[0]) < 0 else a.find("_", diff[0])
            return end - start > 3
        return swapped
    short, long = sorted((a, b), key=len)
    return any(long[:i] + long[i + 1 :] == short for i in range(len(long)))


def _family_modules(index: SymbolIndex, shape: _Shape, name: str) -> list[str]:
    """The modules of the target's family that may define `name` (read as bytes, not parsed)."""
    found = []
    for module in index.modules_defining(name):
        if module != shape.module and not _same_family(shape.module, module):
            continue
        # a method's class (or a subclass) names the old owner: read before parsing, which costs more
        if shape.kind == "method" and shape.owner.encode() not in (index.source.root / index.files[module][0]).read_bytes():
            continue
        found.append(module)
    return found


def _same_tail_in_family(index: SymbolIndex, old: SymbolIndex | None, shape: _Shape, target: str, name: str) -> tuple[str, str] | None:
    """The same qualified tail, of the same kind, in a module of the same family; the nearest
    module (longest shared prefix) when there are several, the most alike body when the old
    one is known; none when that leaves a tie."""
    candidates = []
    for module in _family_modules(index, shape, name):
        table = index.table(module)
        if table is None:
            continue
        if shape.kind == "method":
            for cls_name, info in table.classes.items():
                if "." in cls_name or f"{cls_name}.{name}" not in table.functions:
                    continue
                if cls_name == shape.owner or any(base.rsplit(".", 1)[-1] == shape.owner for base in info.bases):
                    candidates.append(Ref("function", module, f"{cls_name}.{name}"))
        else:
            if shape.kind in ("function", "toplevel") and name in table.functions:
                candidates.append(Ref("function", module, name))
            if shape.kind in ("class", "toplevel") and name in table.classes:
                candidates.append(Ref("class", module, name))
    if not candidates:
        return None
    before = _body_lines(old, shape.ref) if old is not None and shape.ref is not None else None

    def rank(ref: Ref) -> tuple:
        after = _body_lines(index, ref) if before and ref.kind == "function" else None
        shared = len(os.path.commonprefix([ref.module.split("."), shape.module.split(".")]))
        return (_similarity(before, after) if after else 0.0, shared)

    ranked = sorted(((rank(c), c) for c in candidates), key=lambda r: r[0], reverse=True)
    if len(ranked) > 1 and ranked[0][0] == ranked[1][0]:
        return None
    best = ranked[0][1]
    info = index.function_info(best) if best.kind == "function" else index.class_info(best)
    kind = {"function": "method" if shape.kind == "method" else "function"}.get(best.kind, best.kind)
    return best.path, (f"the same {kind} {best.qualname} in {best.module} ({index.table(best.module).path}:{info.lineno}), "
                       f"of the family of {shape.module}")


def _same_family(a: str, b: str) -> bool:
    """Modules of one family: one lies in the other's parent package (a move sideways, into a
    subpackage or out of one: sglang.srt.layers.elementwise -> sglang.srt.layers.norm_rope,
    sglang.srt.disaggregation.encode_receiver -> sglang.srt.disaggregation.encoder.receiver),
    and that package lies inside the serving runtime's (sglang.srt.X, vllm.X), so the shared root
    is no family; or one lies in the other, a package (a name its __init__ re-exported, still
    defined in its submodule: sglang.srt.distributed -> sglang.srt.distributed.parallel_state)."""
    depth = profile().runtime.count(".") + 1
    for x, y in ((a, b), (b, a)):
        parent = x.rpartition(".")[0]
        if (parent.count(".") >= depth and y.startswith(parent + ".")) or (x.count(".") >= depth and y.startswith(x + ".")):
            return True
    return False


def _function_node(index: SymbolIndex, ref: Ref) -> tuple[ast.FunctionDef | ast.AsyncFunctionDef, list[str]] | None:
    """The function's AST and its source lines (dedented), or None."""
    info = index.function_info(ref)
    if info is None:
        return None
    lines = textwrap.dedent("\n".join(_source_lines(index, ref.module)[info.lineno - 1 : info.end_lineno]))
    try:
        node = ast.parse(lines).body[0]
    except (SyntaxError, IndexError):
        return None
    return (node, lines.splitlines()) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) else None


def _source_lines(index: SymbolIndex, module: str) -> list[str]:
    """The module's source lines, read once per index (memoised), [] when it has no file."""
    memo = index.memo.setdefault("successor-lines", {})
    if module not in memo:
        table = index.table(module)
        memo[module] = (index.source.root / table.path).read_text(errors="replace").splitlines() if table else []
    return memo[module]


def _without_docstring(body: list[ast.stmt]) -> list[ast.stmt]:
    docstring = body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str)
    return body[1:] if docstring else body


def _body_lines(index: SymbolIndex, ref: Ref) -> list[str] | None:
    """The function's body as git compares it, line by line, stripped of indentation, blank and
    comment lines and the docstring; memoised on the index; None when it is not a parsable function."""
    memo = index.memo.setdefault("successor-bodies", {})
    if ref.path not in memo:
        found = _function_node(index, ref)
        body = _without_docstring(found[0].body) if found else []
        memo[ref.path] = [line.strip() for line in found[1][body[0].lineno - 1 : body[-1].end_lineno]
                          if line.strip() and not line.strip().startswith("#")] if body else None
    return memo[ref.path]


def _similarity(a: list[str], b: list[str]) -> float:
    """Lines in common (as a multiset) over the longer body: git's rename score (diffcore-delta.c
    counts the bytes of line chunks the two share, over the larger size) with lines for chunks."""
    return _shared(a, b) / max(len(a), len(b)) if a and b else 0.0


def _shared(a: list[str], b: list[str]) -> int:
    return sum((Counter(a) & Counter(b)).values())
