"""Whether a callable fits: a call's arguments against parameters (as inspect.Signature.bind),
an override or hook against the base it stands in for, and a signature problem against the calls
the release actually makes (harness.knowledge.judge.callsites)."""

from __future__ import annotations

import io
import re
import tokenize
import weakref
from dataclasses import dataclass

from harness.knowledge.judge.callsites import (
    CallSite,
    CallSites,
    call_sites,
    conditions_at,
)
from harness.knowledge.model import CallShape, Outcome, Param, Ref
from harness.knowledge.upstream import SymbolIndex

# The detail for a plugin callable whose body is one `raise` (symbol_records.raises_only): a
# call of it fails whatever it passes, so a parameter list that no longer fits changes nothing
# unless upstream certainly makes such a call (then that path fails either way: reported).
RAISES_ONLY = "{what} only raises: any call of it fails, whatever arguments it gets; its parameters are not compared"


def signature_incompatibility(base: tuple[Param, ...], override: tuple[Param, ...], positional_only: int = 0) -> tuple[bool, str] | None:
    """Why `override` cannot stand in for `base` (every call valid for base must be valid for
    it), or None. Returns (certain, why): certain when *every* call fails with a TypeError,
    not only calls that use an optional parameter or pass an argument by a renamed keyword.
    The first `positional_only` parameters of base are always passed by position (self, a
    hook's original_fn or result)."""
    def positional(params):
        return [p for p in params if p.kind in ("posonly", "pos")]

    base_pos, over_pos = positional(base), positional(override)
    over_names = {p.name: p for p in override}
    base_names = {p.name for p in base}
    has_var = any(p.kind == "var" for p in override)
    has_varkw = any(p.kind == "varkw" for p in override)
    base_var = any(p.kind == "var" for p in base)
    base_varkw = any(p.kind == "varkw" for p in base)
    problems: list[tuple[bool, str]] = []
    for i, param in enumerate(base_pos):
        if i >= len(over_pos):
            if has_var:
                # `*args` takes the parameter only when it comes by position: a call that passes
                # it by keyword (0.5.23 model_loader/loader.py:568 passes `allow_patterns=` to
                # filter_duplicate_safetensors_files) binds only to **kwargs or a parameter of
                # that name. Whether one does is for upstream's calls to say (against_calls).
                taker = over_names.get(param.name)
                if i >= positional_only and param.kind == "pos" and not has_varkw and (taker is None or taker.kind not in ("pos", "kwonly")):
                    problems.append((False, f"takes {param.name!r} only by position, in *args: a call passing {param.name}= fails"))
                continue
            if i < positional_only:
                problems.append((True, f"takes {len(over_pos)} positional arguments, every call passes at least {positional_only}"))
            elif param.name in over_names and over_names[param.name].kind == "kwonly":
                problems.append((False, f"takes {param.name!r} only by keyword"))
            else:
                problems.append((param.default is None, f"drops positional parameter {param.name!r}"))
        else:
            if i >= positional_only and over_pos[i].kind == "posonly" and param.kind == "pos" and not has_varkw:
                # `def f(a, b=None, /)`: a call passing b= fails (PEP 570); upstream's calls decide
                problems.append((False, f"takes {over_pos[i].name!r} only by position (before `/`): a call passing {param.name}= fails"))
            elif i >= positional_only and over_pos[i].name != param.name and param.kind == "pos" and not has_varkw:
                problems.append((False, f"parameter {i + 1} is {over_pos[i].name!r}, base calls it {param.name!r}"))
            if i >= positional_only and over_pos[i].default is None and param.default is not None:
                # upstream defines the default so that its calls can leave the argument out
                problems.append((True, f"{over_pos[i].name!r} is required where the base's {param.name!r} is optional: calls that leave it out fail"))
    generic = base_var and base_varkw  # a base taking (*args, **kwargs) says nothing about its calls
    for param in base:
        if param.kind == "kwonly" and param.name not in over_names and not has_varkw:
            problems.append((param.default is None, f"does not accept keyword {param.name!r}"))
        if param.kind == "var" and not has_var and not generic:
            problems.append((False, "does not accept *args"))
        if param.kind == "varkw" and not has_varkw and not generic:
            problems.append((False, "does not accept **kwargs"))
    for param in over_pos[len(base_pos) :]:
        if param.default is None and param.name not in base_names:
            problems.append((not (base_var or base_varkw), f"adds required parameter {param.name!r}"))
    optional = {p.name for p in base if p.default is not None}
    for param in override:
        if param.kind == "kwonly" and param.default is None and param.name not in base_names:
            problems.append((not base_varkw, f"adds required keyword {param.name!r}"))
        elif param.kind == "kwonly" and param.default is None and param.name in optional:
            # as for a positional one: the calls that leave it out fail (upstream's calls decide)
            problems.append((True, f"keyword {param.name!r} is required where the base's is optional: calls that leave it out fail"))
    if not problems:
        return None
    certain = [p for p in problems if p[0]]
    return (certain or problems)[0]


def binds_no_call(base: tuple[Param, ...], override: tuple[Param, ...], positional_only: int = 0) -> str | None:
    """Why no call that upstream's own signature `base` accepts can bind to `override` (a hook
    with fewer parameters than the target's required ones: the AROUND closure
    `(original_fn, self, logits_output, sampling_info)` for 0.5.23's Sampler.forward, whose
    every call passes return_logprob ... positions), or None when some such call binds. Unlike
    signature_incompatibility's certain problems, this needs no call site: whichever call
    upstream makes, it fails. A hook that lacks only an optional parameter binds the calls that
    leave it out, so it stays judged by the calls upstream makes. Decided by trying, for each
    number k of leading parameters passed by position (at least the `positional_only` ones and
    every positional-only one that is required), the call that passes the rest of the required
    ones by keyword, and an optional one by keyword only where `override` requires that name.
    A base with *args or **kwargs accepts calls of any shape: not decided (None)."""
    if any(p.kind in ("var", "varkw") for p in base):
        return None
    base_pos = [p for p in base if p.kind in ("posonly", "pos")]
    required_posonly = [i + 1 for i, p in enumerate(base_pos) if p.kind == "posonly" and p.default is None]
    lowest = max([positional_only, *required_posonly])
    over_pos = [p for p in override if p.kind in ("posonly", "pos")]
    wanted = {p.name for p in override if p.default is None and p.kind in ("pos", "kwonly")}
    plain = max([lowest, *(i + 1 for i, p in enumerate(base_pos) if p.default is None)])
    reasons: dict[int, str] = {}
    for k in range(min(lowest, len(base_pos)), len(base_pos) + 1):
        taken = {p.name for p in over_pos[:k]}
        rest = [p for p in base_pos[k:] if p.kind == "pos"] + [p for p in base if p.kind == "kwonly"]
        keywords = tuple(p.name for p in rest if p.default is None or (p.name in wanted and p.name not in taken))
        problem = bind_problem(override, CallShape(k, keywords, False, False), False)
        if problem is None or not problem[0]:
            return None
        reasons[k] = problem[1]
    if not reasons:
        return None
    k = plain if plain in reasons else min(reasons)
    shown = ", ".join([*(p.name for p in base_pos[:k]), *(f"{p.name}=" for p in base if p.default is None and p not in base_pos[:k] and p.kind in ("pos", "kwonly"))])
    return f"no call that upstream's own signature accepts binds it (the plain call ({shown}): {reasons[k]})"


@dataclass(frozen=True)
class Unreached:
    """What `reaches(site)` answers for a call that cannot land on the callable, with the reason
    the finding gives (a plain False gives none)."""

    why: str


def failing_call(index: SymbolIndex, ref: Ref, bind, reaches) -> CallSite | None:
    """The first call the release makes of `ref` (harness.knowledge.judge.callsites) that lands on the
    callable standing in for it (`reaches(site)` is True) and certainly cannot bind to it
    (`bind(site)`, see against_calls); None when there is none."""
    for site in call_sites(index, ref).calls:
        problem = bind(site)
        if problem is not None and problem[0] and reaches(site) is True:
            return site
    return None


def against_calls(index: SymbolIndex, ref: Ref, problem: tuple[bool, str], bind, reaches=None, extra: CallSites | None = None,
                  unbound: str | None = None, skipped=None) -> tuple[bool | None, str]:
    """A signature `problem` (certain, why) of a callable standing in for upstream's `ref`, judged
    by the calls the release makes of `ref` (harness.knowledge.judge.callsites); `bind(site)` is
    bind_problem for one call; `reaches(site)`, when given, tells the calls that can land on the
    callable (an override: not upstream's `super()` calls): True, False, None (only through
    calls not placed) or a reason it may not (undecided, like None). Certain when a call upstream makes
    cannot bind (that path raises TypeError); not breaking when every call binds and nothing else
    may call it; None (undecided) for a certain problem when no placed call fails but calls of the
    same name could not be placed (another receiver, too many modules to scan), bar those
    upstream's own `ref` could not take (a call of another method of that name); otherwise the
    problem as it was. The detail names the calls checked (file:line). `extra`: calls that reach
    the callable another way (callsites.instance_calls), judged with the rest. `unbound`: why
    no call valid for upstream's own signature binds the callable (binds_no_call), given only
    where every call of `ref` lands on it (a hook: HookRegistry patches the target itself):
    then whichever call upstream makes fails, so it is breaking without placing one, unless
    nothing calls `ref` at all."""
    certain, message = problem
    if skipped is not None:  # a call that never runs with the plugin active reaches nothing
        placed = reaches

        def reaches(site: CallSite):
            # (the module-wide reasons, which read the whole release, only for a call that would fail)
            why = skipped(site, deep=bind(site) is not None)
            return Unreached(why) if why else placed(site) if placed is not None else True
    sites = call_sites(index, ref)
    if extra is not None and (extra.calls or extra.unsure):
        # (a call both ways found, by name and on an instance, is one call)
        sites = CallSites(sorted(dict.fromkeys(sites.calls + extra.calls), key=lambda s: (s.path, s.line)), list(dict.fromkeys(sites.unsure + extra.unsure)))
    own = index.function_info(ref)
    if own is not None and sites.unsure:
        # a call of that name, not placed, that upstream's own method could not take is a call of
        # another method of that name (the release runs): it never lands here
        sites = CallSites(sites.calls, [s for s in sites.unsure if not (s.call_read and bind_problem(own.params, s.shape, s.bound) is not None)])
    verdicts = [reaches(site) for site in sites.calls] if reaches is not None else [True] * len(sites.calls)
    passed = [site for site, reached in zip(sites.calls, verdicts) if reached is False]
    refused = [(site, reached.why) for site, reached in zip(sites.calls, verdicts) if isinstance(reached, Unreached)]
    maybe = [site for site, reached in zip(sites.calls, verdicts) if reached is None]
    doubted = [(site, reached) for site, reached in zip(sites.calls, verdicts) if isinstance(reached, str)]
    if passed or refused or maybe or doubted:
        # a call that reaches it only through calls not placed counts as one not placed
        sites = CallSites([site for site, reached in zip(sites.calls, verdicts) if reached is True], sites.unsure + maybe + [s for s, _ in doubted])
        if passed:
            message += f"; upstream calls that cannot reach it: {', '.join(f'{s.where} ({s.receiver})' for s in passed[:4])}"
        for why in dict.fromkeys(why for _, why in refused):
            those = [s for s, reason in refused if reason == why]
            message += f"; upstream calls that cannot reach it: {', '.join(f'{s.where} ({s.receiver})' for s in those[:4])}{' …' if len(those) > 4 else ''}: {why}"
        if maybe:
            message += f"; upstream calls that reach it only through calls that could not be placed: {', '.join(f'{s.where} ({s.receiver})' for s in maybe[:4])}"
        for why in dict.fromkeys(why for _, why in doubted):
            those = [s for s, reason in doubted if reason == why]
            message += f"; upstream calls that may not reach it: {', '.join(f'{s.where} ({s.receiver})' for s in those[:4])}{' …' if len(those) > 4 else ''}: {why}"
        if not sites.calls and not sites.unsure and not _called_implicitly(index, ref) and _never_called(index, ref):
            return False, message
    failing = [(site, found) for site in sites.calls if (found := bind(site)) is not None]
    sure = [(site, why) for site, (is_certain, why) in failing if is_certain]
    if sure:
        # an unconditional failing call first; a conditional one is still breaking, its condition named
        sure.sort(key=lambda found: len(conditions_at(index, found[0])) > 0)
        site, why = sure[0]
        more = f" (and {len(sure) - 1} more call(s): {', '.join(s.where for s, _ in sure[1:5])})" if len(sure) > 1 else ""
        under = conditions_at(index, site)
        when = f" when {' and '.join(f'`{c}`' for c in under)}" if under else ""
        return True, f"{message}; upstream calls it at {site.describe()}: {why}, a TypeError on that path{when}{more}"
    checked = ", ".join(s.describe() for s in sites.calls[:6]) + (f" and {len(sites.calls) - 6} more" if len(sites.calls) > 6 else "")
    if unbound is not None and (sites.calls or sites.unsure or _called_implicitly(index, ref) or not _never_called(index, ref)):
        return True, f"{message}; {unbound}, so every call upstream makes of it raises TypeError (calls found: {checked or 'none placed'})"
    if sites.unsure or failing:
        unplaced = ", ".join(f"{s.where} ({s.receiver})" for s in sites.unsure[:4])
        if not failing and all(site.call_read and bind(site) is None for site in sites.unsure):
            # wherever the calls of that name land, each binds: none can raise TypeError
            return False, f"{message}; but every upstream call of that name binds, placed or not: {checked or 'none placed'}; not placed: {unplaced}"
        if certain and sites.unsure:
            # no placed call fails; whether the unplaced ones reach it is not known
            return None, f"{message}; upstream calls checked: {checked or 'none found'}; calls of the same name not placed, undecided whether they reach it: {unplaced}"
        return certain, f"{message}; upstream calls checked: {checked or 'none found'}" + (f"; calls of the same name not placed: {unplaced}" if unplaced else "")
    if certain and _called_implicitly(index, ref):
        return certain, f"{message}; upstream calls checked: {checked or 'none found'}, but it is also called in ways a source scan cannot see"
    if sites.calls:
        return False, f"{message}; but every upstream call of it binds: {checked}"
    if certain and not _never_called(index, ref):
        # called in ways a source scan cannot see (nn.Module.__call__, a dunder, by name); what
        # nothing calls cannot fail, even where no call could bind (it fails only where it runs)
        return problem
    return False, f"{message}; but nothing in {index.source.label} calls it (no call, reference or name string found)"


def _called_implicitly(index: SymbolIndex, ref: Ref) -> bool:
    """Python or a framework calls it without naming it: a dunder, or a method that a base
    outside the source has too (torch.nn.Module.__call__ runs `forward`; nn.Module's own code
    calls its `extra_repr`, `_apply`, ...). Outside code calls the names it defines, so a method
    such as DeepseekV4Attention.forward_mqa over nn.Module, or any method over abc.ABC or
    typing.Generic, is called only where the source calls it; an outside base whose members
    are not known (or a base not determined) may call anything."""
    owner, _, name = ref.qualname.rpartition(".")
    if name.startswith("__"):
        return True
    outside = [klass for klass in index.mro(Ref("class", ref.module, owner)) if klass.kind != "class"] if owner else []
    return any(index.member(klass, name).outcome is not Outcome.missing for klass in outside)


def _never_called(index: SymbolIndex, ref: Ref) -> bool:
    """Nothing upstream can call `ref` unseen by the call-site scan (which found no call): its
    name in no string literal of the release (getattr by name); a method never named as `.name`
    without a call (passed on as a value); a function named in no other module (imported to be
    passed on). Mentions in comments and inside longer strings (a docstring's "``X.name``") are
    no use: a module the text search flags is tokenized to confirm. Callers rule out implicit
    calls first (_called_implicitly)."""
    owner, _, name = ref.qualname.rpartition(".")
    quoted = (f'"{name}"', f"'{name}'")
    word = re.escape(name.encode())
    named = re.compile(rb"\." + word + rb"\b(?![ \t]*\()" if owner else rb"\b" + word + rb"\b")
    for module, text in index.sources().items():
        in_string = any(q.encode() in text for q in quoted)
        in_code = (owner or module != ref.module) and named.search(text) is not None
        if (in_string or in_code) and _named_in_code(text, name, quoted, method=bool(owner), as_name=in_code):
            return False
    return True


def named_in_a_string(index: SymbolIndex, name: str) -> str | None:
    """The first module of the release with a string literal that is exactly `name` in its
    code (not a comment, not inside a longer string): a method looked up or dispatched by name
    (`collective_rpc("start_worker_execution_loop")`, `getattr(obj, "name")`). None when none.
    Memoised per index and name (a module is tokenized only when its bytes hold the quote)."""
    found = _STRINGS.setdefault(index, {})
    if name not in found:
        quoted = (f'"{name}"', f"'{name}'")
        needles = tuple(q.encode() for q in quoted)
        found[name] = next((module for module, text in index.sources().items()
                            if any(n in text for n in needles) and _named_in_code(text, name, quoted, method=True, as_name=False)), None)
    return found[name]


_STRINGS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _named_in_code(text: bytes, name: str, quoted: tuple[str, ...], method: bool, as_name: bool) -> bool:
    """Whether `text`'s tokens name `name`: a string literal that is exactly it, or (`as_name`)
    the name in code, after a `.` and not called (`method`) or anywhere. Text that does not
    tokenize counts as naming it."""
    skip = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.ENCODING}
    try:
        tokens = [t for t in tokenize.tokenize(io.BytesIO(text).readline) if t.type not in skip]
    except (tokenize.TokenError, SyntaxError, UnicodeDecodeError):
        return True
    for i, token in enumerate(tokens):
        if token.type == tokenize.STRING and token.string in quoted:
            return True
        if as_name and token.type == tokenize.NAME and token.string == name:
            if not method:
                return True
            after = tokens[i + 1].string if i + 1 < len(tokens) else ""
            if i and tokens[i - 1].string == "." and after != "(":
                return True
    return False


def bind_problem(params: tuple[Param, ...], call: CallShape, bound: bool) -> tuple[bool, str] | None:
    """Whether a call with this shape binds to `params` (as inspect.Signature.bind would);
    `bound` drops the first parameter (self/cls). Returns (certain, why) or None. With `*args`
    or `**kwargs` unpacked at the call site only the explicit keywords are certain."""
    params = params[1:] if bound and params and params[0].kind in ("pos", "posonly") else params
    names = {p.name: p for p in params}
    positional = [p for p in params if p.kind in ("posonly", "pos")]
    takes_var = any(p.kind == "var" for p in params)
    takes_varkw = any(p.kind == "varkw" for p in params)
    for keyword in (*call.keywords, *call.sometimes):
        param = names.get(keyword)
        if (param is None or param.kind in ("posonly", "var", "varkw")) and not takes_varkw:
            return True, f"unexpected keyword argument {keyword!r}" + (" (on the runs that pass it)" if keyword in call.sometimes else "")
        if param is not None and param in positional[: call.positional]:
            return True, f"multiple values for argument {keyword!r} (passed by position and by keyword)"
    if call.positional > len(positional) and not takes_var:
        return True, f"takes {len(positional)} positional arguments, the call passes {call.positional}"
    if call.star_args or call.star_kwargs:
        return None
    supplied = {p.name for p in positional[: call.positional]} | set(call.keywords)
    missing = [p.name for p in params if p.default is None and p.kind in ("posonly", "pos", "kwonly") and p.name not in supplied]
    if missing:
        return True, f"missing required argument {missing[0]!r}" + (" (on the runs that do not pass it)" if missing[0] in call.sometimes else "")
    return None
