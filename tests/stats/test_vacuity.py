"""A metric that measured nothing cannot certify a port (0 vs 0, outputs all identical or all
empty), on the paired, the paired-score, the sequential and the unpaired paths; the result says
why. Field case F11: gsm8k strict-match is 0 on both runs when the answers lack '#### N'."""

from __future__ import annotations

import json

import pytest

from harness.evidence.accuracy import SampleRecord, decide_samples, gate_samples
from harness.evidence.runbook import AccuracySuite
from harness.stats.accuracy import decide, vacuity
from harness.stats.sequential import sequential_design

SUITE = AccuracySuite(name="gsm8k", task="gsm8k", metric="exact_match,strict-match", gate="paired", margin=0.02,
                      alpha=0.05)


def records(scores: list[float], responses: list[str] | None = None) -> list[SampleRecord]:
    responses = responses or [f"answer text {i}" for i in range(len(scores))]
    return [SampleRecord(doc_id=i, question_hash=f"q{i}", target=f"#### {i}", response=text, score=score,
                         correct=bool(score)) for i, (score, text) in enumerate(zip(scores, responses, strict=True))]


def test_zero_vs_zero_is_inconclusive_and_says_why():
    result = decide_samples(records([0.0] * 200), records([0.0] * 200), SUITE)
    assert result.outcome == "inconclusive"  # the statistics alone would pass it
    assert "0 vs 0" in result.vacuous and "measured nothing" in result.vacuous
    assert "This cannot certify the port" in result.summary and "0 vs 0" in result.summary
    assert result.more_questions is None  # more questions cannot fix a metric that measures nothing
    assert gate_samples is decide_samples  # the name the field cases import


@pytest.mark.parametrize("side", ["baseline", "candidate"])
def test_identical_outputs_on_either_side_never_pass(side):
    same = ["I cannot answer that."] * 150
    varied = [f"The answer is {i}." for i in range(150)]
    base, cand = (same, varied) if side == "baseline" else (varied, same)
    # Scores that would pass on their own: the candidate no worse than the baseline.
    result = decide_samples(records([1.0] * 150, base), records([1.0] * 150, cand), SUITE)
    assert result.outcome == "inconclusive"
    assert f"every {side} output is the same text" in result.vacuous
    assert "'I cannot answer that.'" in result.summary


def test_empty_outputs_never_pass_and_a_real_drop_still_fails():
    empty = decide_samples(records([0.0] * 100), records([0.0] * 100, [""] * 100), SUITE)
    assert empty.outcome == "inconclusive" and "0 vs 0" in empty.vacuous
    # an empty candidate against a working baseline: the drop is evident, and it stays failed
    dropped = decide_samples(records([1.0] * 100), records([0.0] * 100, ["  "] * 100), SUITE)
    assert dropped.outcome == "failed"
    assert "every candidate output is empty" in dropped.vacuous and "empty" in dropped.summary


def test_continuous_scores_take_the_same_rule():
    # F1-like scores: identical nonzero scores but every candidate answer the same text
    scores = [0.5] * 30
    result = decide_samples(records(scores), records(scores, ["same"] * 30), SUITE.model_copy(update={}))
    assert "paired" in result.rule and result.outcome == "inconclusive"


def test_sequential_path_never_passes_a_vacuous_measurement():
    design = sequential_design([50, 100])
    result = decide([0.0] * 100, [0.0] * 100, candidate_outputs=[f"a{i}" for i in range(100)], design=design)
    assert result.outcome == "inconclusive" and result.vacuous
    assert result.sequential is not None


def test_unpaired_path_zero_aggregate_and_degenerate_outputs():
    texts = [f"answer text {i}" for i in range(200)]
    zero = decide([0.0] * 200, baseline_score=0.0, baseline_n=200, candidate_outputs=texts)
    assert zero.outcome == "inconclusive" and "0 vs 0" in zero.vacuous and not zero.paired
    result = decide([1.0] * 200, baseline_score=0.5, baseline_n=200, candidate_outputs=["42"] * 200)
    assert result.outcome == "inconclusive" and "every candidate output is the same text" in result.vacuous
    # a measurement of something is untouched: 100 % measured vs 50 % recorded passes
    assert decide([1.0] * 200, baseline_score=0.5, baseline_n=200, candidate_outputs=texts).outcome == "passed"


def test_a_real_measurement_is_not_vacuous():
    assert vacuity([1.0, 0.0, 1.0], [1.0, 1.0, 0.0]) is None
    assert vacuity([1.0] * 5, [1.0] * 5, candidate_outputs=[f"#### {i}" for i in range(5)]) is None
    assert vacuity([0.0], [0.0], candidate_outputs=["x"]) is not None  # 0 vs 0 on one question too


# every response is the prompt sent, echoed back with nothing generated (twenty-sixth set F11-f1:
# a gateway with max_tokens 0 and echo on): each differs, a filter even reads a "right" number out
# of some echoed questions, the same on both sides -- it measured nothing. lm-eval's samples rows
# carry the prompt in `arguments` (0.4.x dict form, the older list form); a response that goes on
# past the prompt is an answer.
ARGUMENTS = {
    "dict_form": lambda prompt: {"gen_args_0": {"arg_0": prompt, "arg_1": {"until": ["Question:"]}}},
    "list_form": lambda prompt: [[prompt, {"until": ["Question:"]}]],
    "dict_form_trailing_newline": lambda prompt: {"gen_args_0": {"arg_0": prompt + "\n", "arg_1": {}}},
}


def _rows(spelling: str, answered: bool) -> list[dict]:
    rows = []
    for i in range(120):
        prompt = f"Question: Tom has {i} apples and eats none. How many are left?\nAnswer:"
        response = prompt + (f" He has {i}. #### {i}" if answered else "")
        right = answered or i % 10 == 0  # (a filter reading the question's own number: right by chance)
        rows.append({"doc_id": i, "doc": {"question": prompt}, "target": f"#### {i}", "arguments": ARGUMENTS[spelling](prompt),
                     "resps": [[response]], "filtered_resps": [str(i)], "filter": "flexible-extract",
                     "exact_match": 1.0 if right else 0.0})
    return rows


@pytest.mark.parametrize("spelling", sorted(ARGUMENTS))
def test_responses_that_only_echo_the_prompt_measured_nothing(spelling):
    from harness.evidence.lmeval import sample_records

    key = "exact_match,flexible-extract"
    echoed = sample_records({"samples": {"gsm8k": _rows(spelling, answered=False)}}, "gsm8k", key)
    assert all(r.echoed and r.generated == "" for r in echoed)
    result = decide_samples(echoed, echoed, SUITE)
    assert result.outcome == "inconclusive" and "echoed back" in result.vacuous, result.summary
    answered = sample_records({"samples": {"gsm8k": _rows(spelling, answered=True)}}, "gsm8k", key)
    assert not any(r.echoed for r in answered) and decide_samples(answered, answered, SUITE).vacuous is None


# every request capped generation below the length of any reference answer (twenty-seventh set
# F11-g1: gsm8k run with `--gen_kwargs max_gen_toks=1`): the outputs are first tokens, some even
# the right number, the same on both sides -- nothing a port could get wrong past its first token
# was measured. The cap comes from lm-eval's samples rows (`arguments`, the gen_kwargs).
CAPS = {
    "one_token_dict_form": lambda prompt: {"gen_args_0": {"arg_0": prompt, "arg_1": {"until": ["Question:"], "max_gen_toks": 1}}},
    "one_token_list_form": lambda prompt: [[prompt, {"max_gen_toks": 1, "do_sample": False}]],
    "four_tokens": lambda prompt: {"gen_args_0": {"arg_0": prompt, "arg_1": {"max_gen_toks": 4}}},
}


def _capped_rows(arguments) -> list[dict]:
    rows = []
    for i in range(120):
        prompt = f"Question: Tom has {i} apples and eats none. How many are left?\nAnswer:"
        first = str(i) if i % 10 == 0 else "Tom"
        rows.append({"doc_id": i, "doc": {"question": prompt}, "target": f"Tom had {i} apples and ate none, so {i} are left.\n#### {i}",
                     "arguments": arguments(prompt), "resps": [[first]], "filtered_resps": [first], "filter": "flexible-extract",
                     "exact_match": 1.0 if first == str(i) else 0.0})
    return rows


@pytest.mark.parametrize("spelling", sorted(CAPS))
def test_outputs_capped_below_every_reference_answer_measured_nothing(spelling):
    from harness.evidence.lmeval import sample_records

    key = "exact_match,flexible-extract"
    capped = sample_records({"samples": {"gsm8k": _capped_rows(CAPS[spelling])}}, "gsm8k", key)
    full = sample_records({"samples": {"gsm8k": _capped_rows(lambda p: {"gen_args_0": {"arg_0": p, "arg_1": {"max_gen_toks": 256}}})}}, "gsm8k", key)
    for baseline, candidate in ((capped, capped), (full, capped), (capped, full)):
        result = decide_samples(baseline, candidate, SUITE)
        assert result.outcome == "inconclusive" and "max_gen_toks" in result.vacuous, result.summary
    # a cap the answers fit under, or none recorded, says nothing
    assert decide_samples(full, full, SUITE).vacuous is None
    unrecorded = sample_records({"samples": {"gsm8k": _capped_rows(lambda p: [[p, {}]])}}, "gsm8k", key)
    assert decide_samples(unrecorded, unrecorded, SUITE).vacuous is None


# every response only repeats text of its prompt (twenty-eighth set F11-h2: a decode loop says the
# question's last sentence over and over until max_gen_toks cuts it): each differs, a filter reads
# the question's own number -- right by chance on some, the same on both sides. A short answer that
# merely names a number or a line the prompt also holds is still an answer.
FEW_SHOT = "Question: Ann has 3 pens and buys 3 more. How many pens? Answer: She has 3 + 3 = 6 pens. The answer is 6.\n\n"
REPEATS = {
    "last_sentence_until_cut": lambda i, q: (q.split(". ")[-1] + " ") * 9 + q.split()[0],
    "whole_question_twice_newlines": lambda i, q: q.replace(". ", ".\n") + "\n\n" + q,
    "a_few_shot_line_then_the_question": lambda i, q: "She has 3 + 3 = 6 pens. " + q,
}


def _repeat_rows(answer) -> list[dict]:
    rows = []
    for i in range(120):
        question = f"A baker makes {2 * i} rolls and sells {i} of them. How many rolls are left?"
        prompt = FEW_SHOT + f"Question: {question} Answer:"
        response = answer(i, question)
        right = i % 10 == 0  # (a filter reading the question's own number: right by chance)
        rows.append({"doc_id": i, "doc": {"question": question}, "target": f"#### {i}",
                     "arguments": {"gen_args_0": {"arg_0": prompt, "arg_1": {"max_gen_toks": 256}}},
                     "resps": [[response]], "filtered_resps": [str(i) if right else "[invalid]"], "filter": "flexible-extract",
                     "exact_match": 1.0 if right else 0.0})
    return rows


@pytest.mark.parametrize("spelling", sorted(REPEATS))
def test_responses_that_only_repeat_the_prompt_measured_nothing(spelling):
    from harness.evidence.lmeval import sample_records

    key = "exact_match,flexible-extract"
    repeated = sample_records({"samples": {"gsm8k": _repeat_rows(REPEATS[spelling])}}, "gsm8k", key)
    assert all(r.echoed and r.generated == "" for r in repeated)
    result = decide_samples(repeated, repeated, SUITE)
    assert result.outcome == "inconclusive" and "repeated" in result.vacuous, result.summary


@pytest.mark.parametrize("answer", [
    lambda i, q: f"The baker sells {i} of {2 * i} rolls, so {2 * i} - {i} = {i} are left. The answer is {i}.",
    lambda i, q: f"The answer is {i % 7}.",  # (for 6: a line the prompt holds, yet an answer)
    lambda i, q: str(i),  # a number the question holds
])
def test_answers_that_quote_the_prompt_are_answers(answer):
    from harness.evidence.lmeval import sample_records

    answered = sample_records({"samples": {"gsm8k": _repeat_rows(answer)}}, "gsm8k", "exact_match,flexible-extract")
    assert not any(r.echoed for r in answered) and decide_samples(answered, answered, SUITE).vacuous is None


# a multiple-choice task whose choices all score the same loglikelihood on every question
# (twenty-eighth set F11-h1: a prompt-logprob kernel copying the context's last position into the
# continuation): lm-eval's argmax picks the first choice, so acc is the share of questions whose
# answer is A, the same questions on both sides. lm-eval 0.4.x rows hold one (ll, is_greedy) per
# choice: as a saved samples file writes them (strings), in memory (numbers, bools), or nested.
TIES = {
    "saved_strings": lambda ll: [[f"{ll:.4f}", "False"]] * 4,
    "in_memory_pairs": lambda ll: [(ll, False)] * 4,
    "nested_two_choices": lambda ll: [[[ll, False]]] * 2,
}


def _choice_rows(choices) -> list[dict]:
    rows = []
    for i in range(120):
        ll = -0.2 - (i % 17) / 5  # one value per question, differing from question to question
        row_choices = choices(ll, i) if choices.__code__.co_argcount == 2 else choices(ll)
        rows.append({"doc_id": i, "doc": {"question": f"Which organelle {i}?"}, "target": i % 4,
                     "arguments": {f"gen_args_{k}": {"arg_0": f"Which organelle {i}?\nAnswer:", "arg_1": f" {'ABCD'[k]}"}
                                   for k in range(len(row_choices))},
                     "resps": [[c] for c in row_choices], "filtered_resps": row_choices, "filter": "none",
                     "acc": 1.0 if i % 4 == 0 else 0.0})
    return rows


@pytest.mark.parametrize("spelling", sorted(TIES))
def test_choices_that_all_tie_measured_nothing(spelling):
    from harness.evidence.lmeval import sample_records

    tied = sample_records({"samples": {"mmlu": _choice_rows(TIES[spelling])}}, "mmlu", "acc,none")
    assert all(r.tied and r.generated == "" and not r.echoed for r in tied)
    result = decide_samples(tied, tied, SUITE)
    assert result.outcome == "inconclusive" and "tie of every choice" in result.vacuous, result.summary
    # choices told apart (on each question one scores higher) are answers
    told_apart = sample_records({"samples": {"mmlu": _choice_rows(
        lambda ll, i: [(ll - (k != i % 4), False) for k in range(4)])}}, "mmlu", "acc,none")
    assert not any(r.tied for r in told_apart) and decide_samples(told_apart, told_apart, SUITE).vacuous is None


# every response is a worked answer to ANOTHER question of the run (thirtieth set F11-j2: a server
# numbering a batch's choices in the order they finished, lm-eval filing each text under that
# index): right only where two questions share an answer, the same on both sides. Each response
# repeats more numbers of the question it answers than of its own: it holds no answer to its own.
def _marble_rows(answered) -> list[dict]:
    rows, n = [], 64
    for i in range(n):
        j = answered(i, n)
        a, b = 3 + i, 1000 + 7 * i
        ja, jb = 3 + j, 1000 + 7 * j
        name = "K" + chr(97 + i // 26) + chr(97 + i % 26)
        question = f"{name} has {a} marbles and wins {b} more at the fair. How many marbles now?"
        prompt = f"Question: {question}\nAnswer:"
        response = f" They start with {ja} marbles and win {jb:,} more, so {ja} + {jb} = {ja + jb:,} marbles.\n#### {ja + jb}"
        right = ja + jb == a + b or i % 10 == 0  # (filed where the answers happen to agree: right by chance)
        rows.append({"doc_id": i, "doc": {"question": question}, "target": f"#### {a + b}",
                     "arguments": {"gen_args_0": {"arg_0": prompt, "arg_1": {"max_gen_toks": 256}}},
                     "resps": [[response]], "filtered_resps": [str(ja + jb)], "filter": "flexible-extract",
                     "exact_match": 1.0 if right else 0.0})
    return rows


MISFILED = {
    "the_next_question": lambda i, n: (i + 1) % n,
    "the_batch_reversed": lambda i, n: (i // 8) * 8 + 7 - i % 8,
    "a_distant_question": lambda i, n: (i + n // 2) % n,
}


@pytest.mark.parametrize("spelling", sorted(MISFILED))
def test_responses_that_answer_other_questions_measured_nothing(spelling, tmp_path):
    from harness.evidence.accuracy_baseline import load_baseline_samples
    from harness.evidence.lmeval import sample_records

    key = "exact_match,flexible-extract"
    rows = _marble_rows(MISFILED[spelling])
    misfiled = sample_records({"samples": {"gsm8k": rows}}, "gsm8k", key)
    assert all(r.misfiled and r.generated == "" for r in misfiled)
    result = decide_samples(misfiled, misfiled, SUITE)
    assert result.outcome == "inconclusive" and "another question" in result.vacuous, result.summary
    # lm-eval's own samples file, loaded as a baseline: read as one run too
    (tmp_path / "samples.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    assert all(r.misfiled for r in load_baseline_samples(tmp_path / "samples.jsonl", key).values())


def test_answers_to_their_own_questions_are_answers():
    from harness.evidence.lmeval import sample_records

    key = "exact_match,flexible-extract"
    own = sample_records({"samples": {"gsm8k": _marble_rows(lambda i, n: i)}}, "gsm8k", key)
    assert not any(r.misfiled for r in own) and decide_samples(own, own, SUITE).vacuous is None
    # half of them misfiled: the other half still answers, so the run measured something
    half = sample_records({"samples": {"gsm8k": _marble_rows(lambda i, n: i if i % 2 else (i + 2) % n)}}, "gsm8k", key)
    assert sum(r.misfiled for r in half) == 32 and decide_samples(half, half, SUITE).vacuous is None


# every response is token ids printed instead of text (thirty-first set F11-k1: the server ran
# with --skip-tokenizer-init and the front end returned str(output_ids)): a filter reads the last
# id as the answer, right by chance on a few, the same on both sides
TOKEN_IDS = {
    "python_list": lambda i: str([791, 4320 + i, 374, 13]),
    "space_separated": lambda i: f"791 {4320 + i} 374 13",
    "tuple": lambda i: str((791, 4320 + i, 13)),
}


@pytest.mark.parametrize("spelling", sorted(TOKEN_IDS))
def test_responses_that_are_token_ids_measured_nothing(spelling):
    from harness.evidence.lmeval import sample_records

    rows = _repeat_rows(lambda i, q: TOKEN_IDS[spelling](i))
    undecoded = sample_records({"samples": {"gsm8k": rows}}, "gsm8k", "exact_match,flexible-extract")
    assert all(r.undecoded and r.generated == "" for r in undecoded)
    result = decide_samples(undecoded, undecoded, SUITE)
    assert result.outcome == "inconclusive" and "token ids" in result.vacuous, result.summary


@pytest.mark.parametrize("answer", ["#### {i}", "{i}", "3 + {i} = {j}", "[{i}]"])
def test_short_numeric_answers_are_not_token_ids(answer):
    from harness.evidence.lmeval import sample_records

    rows = _repeat_rows(lambda i, q: answer.format(i=i, j=i + 3))
    answered = sample_records({"samples": {"gsm8k": rows}}, "gsm8k", "exact_match,flexible-extract")
    assert not any(r.undecoded for r in answered)


# every response is a reply body of the serving stack, each one different (a request id, a
# timestamp, a retry delay, token counts), not text the model wrote: a gateway's or server's error
# reply (thirty-second set F11-m2), a streamed reply's event stream or a completion object stored
# whole (thirty-third set F11-n1). A filter reads a number out of it, right by chance on a few, the
# same on both sides
REPLY_BODIES = {
    "nginx_html_page": lambda i: ("<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n<center><h1>502 Bad Gateway</h1></center>\r\n"
                                  f"<hr><center>nginx/1.25.{i % 5}</center>\r\n<!-- request {i} -->\r\n</body>\r\n</html>"),
    "openai_error_json": lambda i: json.dumps({"error": {"message": f"upstream timed out after {30 + i} s (request {9000 + i})",
                                                          "type": "server_error", "code": 504}}),
    "vllm_error_object": lambda i: json.dumps({"object": "error", "message": f"Request {i} exceeded the queue after {i} s",
                                               "type": "ServiceUnavailableError", "param": None, "code": 503}),
    "status_line_text": lambda i: f"Error 429: Too Many Requests - retry after {i % 60} seconds (request id {7000 + i})",
    "reason_phrase_then_code": lambda i: f"Gateway Timeout (504) at 2026-12-07T10:{i % 60:02d}:00Z, trace {i}",
    "proxy_plain_text": lambda i: f"upstream connect error or disconnect/reset before headers. reset reason: connection timeout {i}",
    "event_stream_of_an_empty_completion": lambda i: (
        f'data: {{"id": "cmpl-{i:x}", "object": "text_completion", "created": {1765000000 + i}, "choices": [{{"index": 0, "text": ""}}]}}\n\n'
        f'data: {{"id": "cmpl-{i:x}", "choices": [], "usage": {{"prompt_tokens": {200 + i}, "total_tokens": {200 + i}}}}}\n\ndata: [DONE]\n\n'),
    "event_stream_with_events": lambda i: f"event: message\nid: {i}\ndata: {{\"delta\": \"\", \"tokens\": {i}}}\n\n: keep-alive\nevent: done\ndata: [DONE]",
    "completion_object_stored_whole": lambda i: json.dumps({"id": f"chatcmpl-{i}", "object": "chat.completion", "created": 1765000000 + i,
                                                             "choices": [{"index": 0, "message": {"role": "assistant", "content": ""}}],
                                                             "usage": {"completion_tokens": 0, "total_tokens": 180 + i}}),
}


@pytest.mark.parametrize("spelling", sorted(REPLY_BODIES))
def test_responses_that_are_reply_bodies_measured_nothing(spelling):
    from harness.evidence.lmeval import sample_records

    rows = _repeat_rows(lambda i, q: REPLY_BODIES[spelling](i))
    replies = sample_records({"samples": {"gsm8k": rows}}, "gsm8k", "exact_match,flexible-extract")
    assert all(r.raw_reply and r.generated == "" for r in replies)
    result = decide_samples(replies, replies, SUITE)
    assert result.outcome == "inconclusive" and "reply body" in result.vacuous, result.summary


@pytest.mark.parametrize("answer", [
    "The error was 404 apples too many: 504 - 100 = {i}. #### {i}",
    "She pays $500 and gets {i} back. Not found in the store, she buys {j} more.\n#### {j}",
    "{{\"answer\": {i}}}",
    "Step 1: 3 * {i} = {j}. The exception is the last box. #### {j}",
    "data: the table shows {i} boxes and {j} crates. #### {j}",
])
def test_answers_that_mention_a_status_or_an_error_are_answers(answer):
    from harness.evidence.lmeval import sample_records

    rows = _repeat_rows(lambda i, q: answer.format(i=i, j=i + 3))
    answered = sample_records({"samples": {"gsm8k": rows}}, "gsm8k", "exact_match,flexible-extract")
    assert not any(r.raw_reply for r in answered)


# every response answers the same thing in varied words (thirty-third set F11-n2: a front end cut
# every prompt to its first few-shot exemplar, which the model answers, sampled): the extracted
# answer is one number for every question, right only where a reference happens to be it
ONE_ANSWER = {
    "worked_in_varied_words": lambda i: f" We start with {15 + i % 3} trees{',' * (i % 2)} and end with 21, so 21 - 15 = 6.\n#### 6",
    "stated_answer": lambda i: [" The answer is 6.", " So the answer is 6.", " It is 6 in the end."][i % 3],
    "boxed": lambda i: f" Planting brings the grove from 15 to 21 (step {i}): \\boxed{{6}}" if i % 2 else " 21 - 15: \\boxed{6}",
}


def _one_answer_rows(answer) -> list[dict]:
    rows = _repeat_rows(lambda i, q: answer(i))
    for i, row in enumerate(rows):
        row["filtered_resps"] = ["6." if i % 2 else "6"]  # (one answer as the metric reads it)
        row["exact_match"] = 1.0 if row["target"] == "#### 6" else 0.0
    return rows


@pytest.mark.parametrize("spelling", sorted(ONE_ANSWER))
def test_one_answer_to_every_question_measured_nothing(spelling):
    from harness.evidence.lmeval import sample_records

    records = sample_records({"samples": {"gsm8k": _one_answer_rows(ONE_ANSWER[spelling])}}, "gsm8k", "exact_match,flexible-extract")
    assert sum(r.correct for r in records) == 1 and len({r.response for r in records}) > 1
    result = decide_samples(records, records, SUITE)
    assert result.outcome == "inconclusive" and "do not depend on the question" in result.vacuous, result.summary


def test_answers_that_differ_or_questions_with_one_reference_are_measured():
    from harness.evidence.lmeval import one_answer, sample_records

    key = "exact_match,flexible-extract"
    varied = sample_records({"samples": {"gsm8k": _repeat_rows(lambda i, q: f"{2 * i} - {i} = {i}. #### {i}")}}, "gsm8k", key)
    for record in varied:
        record.filtered = str(record.doc_id)
    assert one_answer(varied) is None
    same_reference = _one_answer_rows(ONE_ANSWER["stated_answer"])
    for row in same_reference:
        row["target"], row["exact_match"] = "#### 6", 1.0
    assert one_answer(sample_records({"samples": {"gsm8k": same_reference}}, "gsm8k", key)) is None


# outputs that do not answer what was asked (set 34 F11-p1, F11-p2): text that shares no more words
# and numbers with its own question than with the next one, a number in it right by chance
def _off_topic_rows(text, n: int = 120) -> list[dict]:
    rows = []
    for i in range(n):
        a, b = 3 + i, 1000 + 7 * i
        name = "K" + chr(97 + i // 26) + chr(97 + i % 26)
        question = f"{name} has {a} marbles and wins {b} more at the fair. How many marbles now?"
        response, said = text(i, a, b)
        rows.append({"doc_id": i, "doc": {"question": question}, "target": f"#### {a + b}",
                     "arguments": {"gen_args_0": {"arg_0": f"Question: {question}\nAnswer:", "arg_1": {"max_gen_toks": 256}}},
                     "resps": [[response]], "filtered_resps": [str(said)], "filter": "flexible-extract",
                     "exact_match": 1.0 if said == a + b else 0.0})
    return rows


def _said(i: int, a: int, b: int) -> int:
    return a + b if i % 9 == 0 else 40 + i  # (right on every ninth question by chance)


OFF_TOPIC = {
    # the prompts never reached the model as text: it continues some web page
    "unrelated_web_text": lambda i, a, b: (f"The {1960 + i % 50} season was Hartley Rovers' {(i * 7) % 40 + 200}th in the league; they finished "
                                           f"the year with {_said(i, a, b)} points.", _said(i, a, b)),
    # random weights: pieces of the vocabulary
    "random_vocabulary": lambda i, a, b: (" ".join(["ertools", "Verwalt", "ciudad", "}});", "的", "ensibly", "_REF", "ajax", "ного"][(i + k) % 9]
                                                   for k in range(30)) + f" {_said(i, a, b)} kę", _said(i, a, b)),
    # worked answers to another task's questions (a runbook pointing the server at the wrong prompts)
    "another_tasks_answers": lambda i, a, b: (f"A train leaves the station at {i % 12 + 1} pm travelling {i % 7 + 40} km per hour, so after "
                                              f"the journey it has covered {_said(i, a, b)} km.\n#### {_said(i, a, b)}", _said(i, a, b)),
}
ON_TOPIC = {
    "worked_answers": lambda i, a, b: (f"They start with {a} marbles and win {b} more, so {a} + {b} = {a + b} marbles.\n#### {a + b}", a + b),
    # answers in another language keep the question's numbers
    "answers_in_chinese": lambda i, a, b: (f"他一开始有 {a} 颗弹珠，又赢了 {b} 颗，所以一共有 {a} + {b} = {a + b} 颗弹珠。 #### {a + b}", a + b),
    # terse answers are too short to judge: a model answering with the number alone
    "terse_answers": lambda i, a, b: (f"#### {_said(i, a, b)}", _said(i, a, b)),
}


@pytest.mark.parametrize("spelling", sorted(OFF_TOPIC) + sorted(ON_TOPIC))
def test_outputs_that_do_not_answer_their_questions_measured_nothing(spelling):
    from harness.evidence.lmeval import sample_records

    key = "exact_match,flexible-extract"
    records = sample_records({"samples": {"gsm8k": _off_topic_rows({**OFF_TOPIC, **ON_TOPIC}[spelling])}}, "gsm8k", key)
    result = decide_samples(records, records, SUITE)
    if spelling in OFF_TOPIC:
        assert result.outcome != "passed" and "do not answer what was asked" in result.vacuous, result.summary
    else:
        assert result.vacuous is None, result.summary


# outputs that run on past the stop sequences their requests sent (thirty-fifth set F11-q2: a gateway
# dropping `stop`): each answer is followed by a made-up next exemplar, whose number a filter reading
# the last one (flexible-extract) takes -- right by chance, the same on both sides. A server honouring
# `stop` never returns one; lm-eval sends at most four to a chat endpoint.
def _overrun_rows(tail, until, n: int = 120) -> list[dict]:
    rows = []
    for i in range(n):
        a, b = 3 + i, 10 + i
        response = f"{a} + {b} = {a + b}.\n#### {a + b}" + tail(i)
        said = int(response.split()[-1].strip(".")) if response.split()[-1].strip(".").isdigit() else a + b
        rows.append({"doc_id": i, "doc": {"question": f"Kai has {a} shells and finds {b} more. How many now?"}, "target": f"#### {a + b}",
                     "arguments": {"gen_args_0": {"arg_0": "Question: …\nAnswer:", "arg_1": {"until": until, "max_gen_toks": 256}}},
                     "resps": [[response]], "filtered_resps": [str(said)], "filter": "flexible-extract",
                     "exact_match": 1.0 if said == a + b else 0.0})
    return rows


_EXEMPLAR = lambda i: f"\n\nQuestion: A jar holds {i % 9 + 2} cups. How many cups in 3 jars?\nAnswer: #### {3 * (i % 9 + 2)}"  # noqa: E731
OVERRUN = {
    "next_question_after_the_answer": (_EXEMPLAR, ["Question:", "</s>", "<|im_end|>"]),
    "one_stop_as_a_string": (lambda i: "\n\n" + _EXEMPLAR(i).strip(), "\n\n"),
    "end_of_turn_token_then_more": (lambda i: "<|im_end|>\n<|im_start|>user" + _EXEMPLAR(i), ["<|im_end|>"]),
}
STOPPED = {
    "stopped_before_the_next_question": (lambda i: "", ["Question:", "</s>", "<|im_end|>"]),
    # a stop past the four a chat request sends may be in the text: it was never sent
    "a_fifth_stop_not_sent": (lambda i: "\nQ: and then?", ["Question:", "</s>", "<|im_end|>", "<|eot_id|>", "Q:"]),
    # a few runs on (a sampled `stop` race): not most of the run
    "a_few_run_on": (lambda i: _EXEMPLAR(i) if i % 5 == 0 else "", ["Question:"]),
}


@pytest.mark.parametrize("spelling", sorted(OVERRUN) + sorted(STOPPED))
def test_outputs_past_their_stop_sequences_measured_nothing(spelling):
    from harness.evidence.lmeval import sample_records

    tail, until = {**OVERRUN, **STOPPED}[spelling]
    records = sample_records({"samples": {"gsm8k": _overrun_rows(tail, until)}}, "gsm8k", "exact_match,flexible-extract")
    result = decide_samples(records, records, SUITE)
    if spelling in OVERRUN:
        assert result.outcome != "passed" and "ignored `stop`" in result.vacuous, result.summary
    else:
        assert result.vacuous is None, result.summary


def test_a_prompt_echoed_before_the_answer_is_no_run_on():
    # a completions server echoing its few-shot prompt (which holds "Question:") before the answer
    from harness.evidence.lmeval import sample_records

    rows = _overrun_rows(lambda i: "", ["Question:"])
    for row in rows:
        row["resps"] = [["Question: …\nAnswer: " + row["resps"][0][0]]]
    records = sample_records({"samples": {"gsm8k": rows}}, "gsm8k", "exact_match,flexible-extract")
    assert not any(r.overran for r in records) and decide_samples(records, records, SUITE).vacuous is None
