"""lm-eval against a served endpoint: the task it runs, the call, and its per-question records.

lm-eval runs through its Python API (`lm_eval.simple_evaluate`) with `local-completions` or
`local-chat-completions` and `tokenizer_backend=None`, so nothing is downloaded for the model.
When a suite names local `data_files`, a task YAML is written that `include:`s the built-in
task by absolute path (lm-eval 0.4.13 resolves includes relative to the including file, or
absolute) and points `dataset_path: json` at the files; a TaskManager with `include_path`
picks it up, so the built-in prompt, filters and metrics are used unchanged, offline.

The accuracy runner (`harness.evidence.accuracy`) drives these and applies the decision rule.
"""

from __future__ import annotations

import contextlib
import hashlib
import http
import importlib.metadata
import importlib.util
import json
import logging
import re
import traceback
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel

import harness
from harness.evidence.runbook import AccuracySuite, Api

_AGGREGATE_KEYS = {"name", "alias", "sample_len", "samples"}


@dataclass(frozen=True)
class Endpoint:
    """Where the served model answers: the server root (http://host:port) and the model name."""

    base_url: str
    model: str
    api: Api = "completions"
    request_timeout_s: int = 300
    max_retries: int = 3

    def url(self) -> str:
        root = re.sub(r"/v1(/(chat/)?completions)?/?$", "", self.base_url.rstrip("/"))
        return root + ("/v1/chat/completions" if self.api == "chat" else "/v1/completions")


class SampleRecord(BaseModel):
    doc_id: int
    question_hash: str  # sha256 of the question text (or of lm-eval's doc hash when no `question`)
    doc_hash: str | None = None
    target: str
    response: str
    filtered: str | None = None  # the answer lm-eval's filter extracted
    score: float
    correct: bool | None = None  # None when the metric is not right/wrong (e.g. F1)
    # the response only repeats text of the prompt sent (a server echoing its input with
    # max_tokens 0, a decode loop saying the question over and over until the length limit):
    # no answer, whatever a filter reads out of the repeated question
    echoed: bool = False
    # a multiple-choice question whose choices' loglikelihoods all tie: the model told none of
    # them apart (lm-eval's argmax then picks the first choice, whatever the question)
    tied: bool = False
    # the response answers another question of the run, not its own (a server numbering a
    # batch's choices out of order, lm-eval filing each text under that index): answers_another
    misfiled: bool = False
    # the response is token ids, not text (a server run with --skip-tokenizer-init, a front end
    # printing output_ids): no answer, whatever number a filter reads out of it (token_ids)
    undecoded: bool = False
    # the response is a reply body of the serving stack, not text the model wrote: an error reply
    # (a gateway's "502 Bad Gateway" page, an OpenAI-style {"error": …}), an event stream or an
    # API response object stored as the text: no answer, whatever number a filter reads out of
    # its request id, timestamp or token counts (raw_reply)
    raw_reply: bool = False
    # the generation cap its request set (lm-eval's gen_kwargs `max_gen_toks`), None when not recorded
    max_gen_toks: int | None = None
    # the response holds a stop sequence its request sent (gen_kwargs `until`): a server honouring
    # `stop` ends the text before it (the OpenAI API), so this one ran on past its answer (past_stops)
    overran: bool = False
    # for a generated text of eight words or more beside a known question: how many of its words
    # and numbers its own question has, and how many the run's next question has (topic;
    # off_topic compares them), None otherwise
    own_overlap: int | None = None
    next_overlap: int | None = None

    @property
    def generated(self) -> str:
        """What the model generated for this question: the response, or "" when it only
        repeated the prompt, scored every choice the same, answers another question, is token
        ids or is a reply body of the server."""
        return "" if self.echoed or self.tied or self.misfiled or self.undecoded or self.raw_reply else self.response


class AccuracyNotRun(Exception):
    """Something needed to run is missing; recorded as `not_run`."""


class UnusableInput(AccuracyNotRun):
    """An input of the suite (data file, baseline, task name, its pairing) is unusable; recorded
    as `not_run` with `unusable_input`, so the step's gate refuses approval."""


class AccuracyFailed(Exception):
    """lm-eval or the endpoint failed; recorded as `failed`."""


# ------------------------------------------------------------------------- task setup


@dataclass
class PreparedTask:
    name: str
    include_path: Path | None  # directory holding the generated task YAML
    config: dict[str, Any]  # what the YAML says (or the built-in task's name)


def prepare_task(suite: AccuracySuite, work_dir: Path) -> PreparedTask:
    """The built-in task as is, or a YAML including it with the dataset pointed at local files."""
    if not suite.data_files:
        return PreparedTask(name=suite.task, include_path=None, config={"task": suite.task})
    missing = [f"{split}: {path}" for split, path in suite.data_files.items() if not Path(path).is_file()]
    if missing:
        raise UnusableInput(f"data file(s) not found: {', '.join(missing)}")
    builtin = builtin_task_yaml(suite.task)
    name = "harness_" + re.sub(r"\W+", "_", suite.name)
    config = {
        "include": str(builtin),
        "task": name,
        "dataset_path": "json",
        "dataset_name": None,
        "dataset_kwargs": {"data_files": {split: str(Path(p).resolve()) for split, p in suite.data_files.items()}},
    }
    task_dir = work_dir / "task"
    task_dir.mkdir(parents=True, exist_ok=True)
    (task_dir / f"{name}.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    return PreparedTask(name=name, include_path=task_dir, config=config)


def builtin_task_yaml(task: str) -> Path:
    """The YAML file defining a built-in lm-eval task.

    A plain text search: indexing every built-in task with TaskManager() takes 20 s or more,
    and the generated YAML includes this file by path, so lm-eval never needs that index. Nor is
    lm-eval imported (2 s): `harness run` checks task names before step 1.
    """
    spec = importlib.util.find_spec("lm_eval")  # optional (the `eval` extra)
    if spec is None or not spec.submodule_search_locations:
        raise AccuracyNotRun("lm-eval is not installed; pip install 'lm-eval==0.4.13'")
    pattern = re.compile(rf"^task:\s*['\"]?{re.escape(task)}['\"]?\s*$", re.MULTILINE)
    root = Path(spec.submodule_search_locations[0]) / "tasks"
    # Tasks usually live in a folder named after their prefix (gsm8k/, longbench/): look there first.
    likely = root / task.split("_")[0]
    candidates = (
        [*sorted(likely.rglob("*.yaml")), *sorted(root.rglob("*.yaml"))]
        if likely.is_dir()
        else sorted(root.rglob("*.yaml"))
    )
    for path in candidates:
        if pattern.search(path.read_text(errors="replace")):
            return path.resolve()
    raise UnusableInput(f"lm-eval {lm_eval_version()} has no built-in task named {task!r}")


class _TaskLoader(yaml.SafeLoader):
    """Reads lm-eval task YAML, whose `!function` tags name Python callables, as plain data."""


_TaskLoader.add_multi_constructor("!", lambda loader, suffix, node: None)


def task_metrics(task: str) -> tuple[list[str], list[str]] | None:
    """(metric names, filter names) a built-in lm-eval task reports — the two halves of a
    'metric,filter' key — read from its YAML (and one `include`d YAML), with 'none' as the only
    filter of a task without a filter_list. None when lm-eval is not installed or the YAML does
    not say (e.g. metrics computed by a `process_results` function); AccuracyNotRun subclass
    UnusableInput for an unknown task."""
    try:
        path = builtin_task_yaml(task)
    except UnusableInput:
        raise
    except AccuracyNotRun:
        return None
    config = yaml.load(path.read_text(errors="replace"), Loader=_TaskLoader) or {}
    include = config.get("include")
    if isinstance(include, str) and (path.parent / include).is_file():
        config = {**(yaml.load((path.parent / include).read_text(errors="replace"), Loader=_TaskLoader) or {}),
                  **config}
    metrics = [m.get("metric") for m in config.get("metric_list") or [] if isinstance(m, dict)]
    if not metrics or not all(isinstance(m, str) for m in metrics):
        return None
    filters = [f.get("name") for f in config.get("filter_list") or [] if isinstance(f, dict)] or ["none"]
    return metrics, [f for f in filters if isinstance(f, str)]


# -------------------------------------------------------------------------- lm-eval


def evaluate_arguments(
    suite: AccuracySuite, endpoint: Endpoint, task: PreparedTask, doc_ids: Sequence[int] | None
) -> dict[str, Any]:
    """Keyword arguments for simple_evaluate (task_manager added by the caller)."""
    model_args = {
        "base_url": endpoint.url(),
        "model": endpoint.model,
        "tokenizer_backend": None,  # no tokenizer download; requests go as strings
        "tokenized_requests": False,
        "num_concurrent": suite.num_concurrent,
        "max_retries": endpoint.max_retries,
        "timeout": endpoint.request_timeout_s,
    }
    arguments: dict[str, Any] = {
        "model": "local-chat-completions" if endpoint.api == "chat" else "local-completions",
        "model_args": model_args,
        "tasks": [task.name],
        "num_fewshot": suite.num_fewshot,
        "log_samples": True,
        "apply_chat_template": endpoint.api == "chat",
        "gen_kwargs": suite.gen_kwargs or None,
    }
    if doc_ids is not None:
        arguments["samples"] = {task.name: list(doc_ids)}
    elif suite.limit is not None:
        arguments["limit"] = suite.limit
    return arguments


def reproduce_script(arguments: dict[str, Any], task: PreparedTask) -> str:
    """A standalone Python script that repeats the simple_evaluate call (same arguments, same task
    config)."""
    include = f"include_path={str(task.include_path)!r}, include_defaults=False" if task.include_path else ""
    lines = [
        f"# Reproduces this accuracy run (harness {harness.__version__}, lm-eval {lm_eval_version()}).",
        "import json",
        "",
        "import lm_eval",
        "from lm_eval.tasks import TaskManager",
        "",
        "results = lm_eval.simple_evaluate(",
        *(f"    {key}={value!r}," for key, value in arguments.items()),
        f"    task_manager=TaskManager({include}),",
        ")",
        "print(json.dumps(results['results'], indent=2, default=str))",
        "",
    ]
    return "\n".join(lines)


def lm_eval_version() -> str:
    try:
        return importlib.metadata.version("lm_eval")  # optional (the `eval` extra)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


@contextlib.contextmanager
def _captured_output(log_path: Path) -> Iterator[None]:
    """Send lm-eval's logging, progress bars and prints to the evidence log."""
    with log_path.open("a") as log:
        handler = logging.StreamHandler(log)
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        loggers = [logging.getLogger(name) for name in ("lm_eval", "lm-eval")]
        for logger in loggers:
            logger.addHandler(handler)
        try:
            with contextlib.redirect_stdout(log), contextlib.redirect_stderr(log):
                yield
        finally:
            for logger in loggers:
                logger.removeHandler(handler)


def run_lm_eval(arguments: dict[str, Any], task: PreparedTask, log_path: Path) -> dict[str, Any]:
    try:
        import lm_eval  # optional (the `eval` extra)
        from lm_eval.tasks import TaskManager
    except ImportError as exc:
        raise AccuracyNotRun(f"lm-eval is not installed ({exc}); pip install 'lm-eval==0.4.13'") from None
    with _captured_output(log_path):
        try:
            # The generated YAML includes the built-in one by path: no need to index the defaults.
            manager = (
                TaskManager(include_path=str(task.include_path), include_defaults=False)
                if task.include_path
                else TaskManager()
            )
            results = lm_eval.simple_evaluate(**arguments, task_manager=manager)
        except ImportError as exc:  # a task's own extra dependencies (e.g. lm_eval[longbench])
            traceback.print_exc()
            raise AccuracyNotRun(f"lm-eval task {task.name} cannot load: {_first_line(exc)}") from exc
        except Exception as exc:  # any lm-eval or endpoint error is evidence
            traceback.print_exc()
            raise AccuracyFailed(f"lm-eval failed: {type(exc).__name__}: {_first_line(exc)}") from exc
    if not results or task.name not in results.get("results", {}):
        raise AccuracyFailed(f"lm-eval returned no results for task {task.name}")
    return results


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0][:300] if text else repr(exc)


def metric_key(results: dict[str, Any], task_name: str, requested: str | None) -> str:
    """The 'metric,filter' key gated on: the requested one, or the task's first metric."""
    available = [k for k in results["results"][task_name] if k not in _AGGREGATE_KEYS and "_stderr" not in k]
    if requested is None:
        if not available:
            raise AccuracyFailed(f"lm-eval reported no metric for task {task_name}")
        return available[0]
    if requested not in available:
        raise AccuracyFailed(f"metric {requested!r} not reported by {task_name}; available: {', '.join(available)}")
    return requested


def _first_text(arguments: Any) -> str | None:
    """The prompt of an lm-eval sample row's `arguments` (0.4.x: {"gen_args_0": {"arg_0":
    prompt, "arg_1": gen_kwargs}}, older: [[prompt, gen_kwargs]]): its first string."""
    if isinstance(arguments, str):
        return arguments
    values = arguments.values() if isinstance(arguments, dict) else arguments if isinstance(arguments, (list, tuple)) else ()
    return next((text for value in values if (text := _first_text(value)) is not None), None)


def _gen_kwarg(arguments: Any, name: str, valid: Callable[[Any], bool]) -> Any:
    """The gen_kwargs value `name` an lm-eval sample row's `arguments` hand the model (0.4.x:
    {"gen_args_0": {"arg_1": {"max_gen_toks": N, "until": […], …}}}), the first one `valid`
    accepts; None when they name none."""
    if isinstance(arguments, dict):
        if name in arguments and valid(arguments[name]):
            return arguments[name]
        arguments = arguments.values()
    if isinstance(arguments, (list, tuple, type({}.values()))):
        return next((found for value in arguments if (found := _gen_kwarg(value, name, valid)) is not None), None)
    return None


def _generation_cap(arguments: Any) -> int | None:
    """The `max_gen_toks` a sample row's request set (_gen_kwarg), None when it names none."""
    return _gen_kwarg(arguments, "max_gen_toks", lambda cap: type(cap) is int)


def _after_echo(response: str, prompt: str | None) -> str:
    """What `response` holds after its prompt, where it opens with the prompt (a completions
    server echoing its input): the stop sequences a few-shot prompt holds are no run-on."""
    text, source = response.lstrip(), (prompt or "").strip()
    return text[len(source):] if source and text.startswith(source) else response


def _stop_sequences(arguments: Any) -> tuple[str, ...]:
    """The stop sequences a sample row's request sent the server: the first four of its gen_kwargs
    `until` (lm-eval's chat-completions payload sends `stop[:4]`, the OpenAI limit; its completions
    payload all of them), empty strings left out; () when it names none."""
    until = _gen_kwarg(arguments, "until", lambda v: isinstance(v, str) or isinstance(v, (list, tuple)) and all(isinstance(s, str) for s in v))
    stops = [until] if isinstance(until, str) else list(until or ())
    return tuple(s for s in stops[:4] if s)


_SENTENCE_END = re.compile(r"(?<=[.?!])\s+")


def repeats_prompt(response: str, prompt: str | None) -> bool:
    """Whether `response` only repeats text of `prompt`: every sentence of it (split after . ? !,
    whitespace folded) is text of the prompt, the last one maybe cut off by the length limit,
    and one is at least five words long, so a short answer that merely names a choice or a
    number the prompt also holds ("B", "The answer is 6.") is still an answer."""
    said, source = " ".join(response.split()), " ".join((prompt or "").split())
    if not said or not source:
        return False
    pieces = _SENTENCE_END.split(said)
    return all(piece in source for piece in pieces) and max(len(piece.split()) for piece in pieces) >= 5


_NUMBER = re.compile(r"\d+(?:\.\d+)?")


def token_ids(response: str) -> bool:
    """Whether `response` is a printed sequence of token ids rather than text: three or more
    integers and nothing else but brackets, commas and whitespace ("[791, 4320, 374]", "791 4320
    374"); a bare number or "#### 5" is an answer."""
    parts = [p for p in re.split(r"[\s,]+", response.strip().strip("[]()")) if p]
    return len(parts) >= 3 and all(p.isdigit() for p in parts)


# 4xx and 5xx statuses with their reason phrases (RFC 9110 section 15, as http.HTTPStatus names them)
_ERROR_PHRASES = {str(status.value): status.phrase.lower() for status in http.HTTPStatus if status.value >= 400}
_STATUS_CODE = re.compile(r"(?<![\d.])([45]\d\d)(?![\d.])")
# the first words of a reply that states a failure: "HTTP/1.1 503", "Error 429:", "error: …",
# "Traceback (most recent call last):", a proxy's "upstream connect error …"
_FAILURE_OPENING = re.compile(
    r"^(?:http(?:/\d(?:\.\d)?)?\s*[45]\d\d\b|(?:error|exception)\s*(?:[:#\[(-]|[45]\d\d\b)"
    r"|traceback \(most recent call last\)|(?:no healthy )?upstream\b.*\b(?:error|timeout|timed out|reset|unavailable)\b)")
_EVENT_FIELD = re.compile(r"^(?:(?:data|event|id|retry)\s*:|:)")


def raw_reply(response: str) -> bool:
    """Whether `response` is a reply body of the serving stack rather than text a model wrote:
    - a JSON object of an error body (OpenAI's {"error": {...}}, vLLM's {"object": "error", ...},
      FastAPI's {"detail": ...}) or of a whole API response (a completion object: "choices", or
      "object" "text_completion" / "chat.completion[.chunk]");
    - a server-sent-event stream (every line a `data:`, `event:`, `id:` or `retry:` field or a
      `:` comment: the WHATWG HTML standard's event stream format; each data a JSON object or
      OpenAI's closing `[DONE]`), as a streamed reply stored whole;
    - a reply whose first line (an HTML page's text, tags dropped) names a 4xx/5xx status with
      its reason phrase ("502 Bad Gateway", "Gateway Timeout (504)") or opens by stating a
      failure ("HTTP/1.1 503", "Error 429: …", "error: …", a Python traceback, a proxy's
      "upstream connect error …").
    A worked answer that mentions a number or the word "error" later is an answer."""
    text = response.strip()
    if text.startswith("{"):
        with contextlib.suppress(ValueError):
            body = json.loads(text)
            if isinstance(body, dict) and (body.keys() & {"error", "errors", "detail", "choices"}
                                           or body.get("object") in ("error", "text_completion", "chat.completion", "chat.completion.chunk")):
                return True
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    data = [line[5:].strip() for line in lines if line.startswith("data:")]
    if data and all(_EVENT_FIELD.match(line) for line in lines) and all(payload == "[DONE]" or _json_object(payload) for payload in data):
        return True
    if text.startswith("<"):  # an HTML page: its text, a line per element
        text = re.sub(r"<[^>]*>", "\n", text)
    first = next((" ".join(line.split()) for line in text.splitlines() if line.strip()), "").lower()
    if _FAILURE_OPENING.match(first):
        return True
    return any(code in _ERROR_PHRASES and _ERROR_PHRASES[code] in first for code in _STATUS_CODE.findall(first))


def _json_object(text: str) -> bool:
    try:
        return isinstance(json.loads(text), dict)
    except ValueError:
        return False


def numbers_in(text: str) -> frozenset[str]:
    """The numbers written in `text` (thousands separators dropped): "1,200 + 3.5" -> {"1200", "3.5"}."""
    return frozenset(_NUMBER.findall(text.replace(",", "")))


def answers_another(response: str, question: frozenset[str], others: Sequence[frozenset[str]]) -> bool:
    """Whether `response` answers another of the run's questions instead of its own: it repeats
    at least two numbers of one of them (`others`, each question's numbers_in) and more of that
    one's than of its own `question`'s (a worked answer restates the numbers it computes with)."""
    said = numbers_in(response)
    if len(said) < 2:
        return False
    own = len(said & question)
    return any(len(shared := said & other) >= 2 and len(shared) > own for other in others)


def _choice_scores(filtered: Any) -> list[float] | None:
    """The loglikelihood of each choice of a multiple-choice row's `filtered_resps` (lm-eval
    0.4.x: one (ll, is_greedy) pair per choice, numbers and bools or the strings a saved samples
    file holds, api/task.py process_results), None when the row is not one (a generation's text)."""
    if not isinstance(filtered, (list, tuple)) or len(filtered) < 2:
        return None
    scores = []
    for choice in filtered:
        while isinstance(choice, (list, tuple)) and len(choice) == 1:
            choice = choice[0]
        if not (isinstance(choice, (list, tuple)) and len(choice) == 2 and str(choice[1]) in ("True", "False")):
            return None
        try:
            scores.append(float(choice[0]))
        except (TypeError, ValueError):
            return None
    return scores


def cut_short(records: Sequence[SampleRecord]) -> str | None:
    """Why one side's outputs could not hold an answer, or None: every request capped generation
    (max_gen_toks) below the word count of the shortest reference answer of the run, so each
    output stops before any answer as long as a reference could be written (a token is at most
    one word), e.g. gsm8k run with `max_gen_toks=1`: what is compared is the first token."""
    caps = {r.max_gen_toks for r in records}
    words = [len(r.target.split()) for r in records if r.target.strip()]
    if not records or None in caps or not words or max(caps) >= min(words):
        return None
    return (f"every request capped generation at max_gen_toks={max(caps)}, fewer tokens than the words of the shortest "
            f"reference answer ({min(words)}): the outputs stop before an answer could be written, so they cannot tell "
            "a working port from a broken one; rerun with the task's own generation length")


def one_answer(records: Sequence[SampleRecord]) -> str | None:
    """Why one side's answers do not depend on its questions, or None: the answer lm-eval's
    filter extracted (`filtered`) is the same for every question whose output holds generated
    text, over two or more such questions whose reference answers differ (a front end that cut
    every prompt to its first few-shot exemplar, answered in varied words): right only where a
    reference happens to be that answer, the same on both sides. Answers compare as gsm8k's
    exact_match does (lm-eval tasks/gsm8k/gsm8k.yaml: case ignored, `regexes_to_ignore` ",", "$",
    "(?s).*#### " and a final "."), so "6" and "6." are one answer."""
    answered = [r for r in records if r.generated.strip()]
    if len(answered) < 2 or any(r.filtered is None for r in answered) or len({r.target for r in answered}) < 2:
        return None
    answers = {re.sub(r"(?s).*#### |[,$]|\.$", "", r.filtered.strip()).strip().lower() for r in answered}
    if len(answers) != 1:
        return None
    shown = next(iter(answers))
    return (f"the answer extracted from every output is the same ({shown[:40]!r}, {len(answered)} questions with different "
            "reference answers): the model's answers do not depend on the question")


# words too common to tie a text to a question (English function words)
_COMMON_WORDS = frozenset(
    "the and for are was were with that this these those from have has had not but you your they their them what which "
    "who whom how many much more less than then when where will would can could each per into out about also there here "
    "its his her she him our one two any all some does did get got just only very".split())
_LETTERS = re.compile(r"[^\W\d_]{3,}")  # a word of three or more letters, any script


def topic(text: str) -> frozenset[str]:
    """The words (three or more letters, lower-cased, a final "s" dropped, common words left out)
    and numbers (numbers_in) of `text`: what ties an answer to the question it answers."""
    words = {w.lower().removesuffix("s") for w in _LETTERS.findall(text)} - _COMMON_WORDS
    return frozenset(words) | numbers_in(text)


def off_topic(records: Sequence[SampleRecord]) -> str | None:
    """Why one side's outputs do not answer their questions, or None: over its generated texts of
    eight words or more (at least 20, and half the run: a model answering tersely, "18", is not
    judged), a text has more words and numbers in common with its own question than with the
    run's next question no more often than the other way round (a one-sided exact binomial test
    at 5 %, scipy's binomtest, on the texts where the two differ): the model wrote text that does
    not depend on what it was asked (prompts that never reached it as text, random weights),
    right only where a number in it happens to be the reference. A worked answer restates its
    question's numbers and nouns."""
    from scipy.stats import binomtest

    judged = [r for r in records if r.own_overlap is not None and r.next_overlap is not None and r.generated.strip()]
    if len(judged) < 20 or 2 * len(judged) < len(records):
        return None
    own = sum(r.own_overlap > r.next_overlap for r in judged)
    other = sum(r.next_overlap > r.own_overlap for r in judged)
    if own + other and binomtest(own, own + other, 0.5, alternative="greater").pvalue < 0.05:
        return None
    return (f"the outputs share no more words or numbers with their own questions than with other questions of the run "
            f"({own} closer to their own, {other} to the next one, of {len(judged)} texts): they do not answer what was asked "
            "(prompts that never reached the model as text, random weights), so a right answer is chance")


def past_stops(records: Sequence[SampleRecord]) -> str | None:
    """Why one side's outputs are not what lm-eval scores on a working server, or None: more than
    half of its generated texts hold a stop sequence their request sent (SampleRecord.overran). A
    server honouring `stop` never returns one (the OpenAI API ends the text before it; lm-eval's
    API models send `until` as `stop` and do not cut the text themselves), so these run on past
    the answer into text the model made up (gsm8k's next "Question:"), and a filter reading the
    last number (flexible-extract) reads that text: right only by chance."""
    generated = [r for r in records if r.generated.strip()]
    overran = [r for r in generated if r.overran]
    if not generated or 2 * len(overran) <= len(generated):
        return None
    return (f"{len(overran)} of {len(generated)} outputs run on past a stop sequence their request sent: the server ignored "
            "`stop`, so what a filter reads may come from text the model made up after its answer; fix the serving stack's "
            "stop handling and rerun")


def measured_nothing(records: Sequence[SampleRecord]) -> str | None:
    """Why one side's records measured nothing that their texts alone do not show (cut_short,
    one_answer, off_topic, past_stops), or None."""
    return cut_short(records) or one_answer(records) or off_topic(records) or past_stops(records)


def sample_records(results: dict[str, Any], task_name: str, key: str) -> list[SampleRecord]:
    """One SampleRecord per question of `task_name` for the 'metric,filter' `key`, sorted by doc_id;
    KeyError/ValueError on rows lacking the metric."""
    metric, _, filter_name = key.partition(",")
    records, asked = [], []
    for row in results["samples"][task_name]:
        if filter_name and row.get("filter") != filter_name:
            continue
        doc = row.get("doc") or {}
        question = doc.get("question") if isinstance(doc, dict) else None
        digest_source = question if isinstance(question, str) else str(row.get("doc_hash", row["doc_id"]))
        score = float(row[metric])
        responses = row.get("resps") or [[""]]
        filtered = row.get("filtered_resps") or [None]
        response = str(responses[0][0] if responses and responses[0] else "")
        prompt = _first_text(row.get("arguments"))
        choice_scores = _choice_scores(row.get("filtered_resps"))
        asked.append(question if isinstance(question, str) and choice_scores is None else None)
        records.append(
            SampleRecord(
                doc_id=int(row["doc_id"]),
                question_hash=hashlib.sha256(digest_source.encode()).hexdigest(),
                doc_hash=row.get("doc_hash"),
                target=str(row.get("target", "")),
                response=response,
                filtered=None if filtered[0] is None else str(filtered[0]),
                score=score,
                correct=bool(score) if score in (0.0, 1.0) else None,
                echoed=choice_scores is None and (bool(prompt and prompt.strip()) and response.strip() == prompt.strip()
                                                  or repeats_prompt(response, prompt)),
                tied=choice_scores is not None and len(set(choice_scores)) == 1,
                undecoded=choice_scores is None and token_ids(response),
                raw_reply=choice_scores is None and raw_reply(response),
                max_gen_toks=_generation_cap(row.get("arguments")),
                overran=choice_scores is None and any(stop in _after_echo(response, prompt) for stop in _stop_sequences(row.get("arguments"))),
            )
        )
    numbers = {r.doc_id: numbers_in(question) for r, question in zip(records, asked) if question}
    for record in records:  # (a generation's text only: a choice's loglikelihoods name no numbers)
        if record.doc_id in numbers and not record.echoed:
            record.misfiled = answers_another(record.response, numbers[record.doc_id], [n for doc, n in numbers.items() if doc != record.doc_id])
    posed = sorted(((r.doc_id, r, topic(question)) for r, question in zip(records, asked) if question), key=lambda t: t[0])
    for at, (_, record, own) in enumerate(posed):  # (the next question in doc order; the last one's is the first)
        said = topic(record.response)
        if len(posed) > 1 and len(record.response.split()) >= 8:
            record.own_overlap, record.next_overlap = len(said & own), len(said & posed[(at + 1) % len(posed)][2])
    return sorted(records, key=lambda r: r.doc_id)

