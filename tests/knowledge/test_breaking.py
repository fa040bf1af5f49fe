"""One definition of "breaking" (harness/knowledge/judge/breaking.py, docs/static-check.md "What
breaks"): the table in the docs is the table in the code, each row decides as written, and the two
rules it changed are held on the same semantics written three ways: a failure under a run-time data
condition breaks the plugin (the condition named), and an override already absent on the baseline
is a dead override, never red (issue 34, item 1)."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest
from kinds_support import IFACE, INTERFACE_WITHOUT_MHA_POOL, check, plugin, pyproject, upstream_pair
from knowledge_support import by_target

from harness.knowledge.judge import ROWS, BreakingFacts, decide
from harness.knowledge.judge.conditions import evaluate
from harness.knowledge.model import AllOf, AnyOf, Const, Not, Runtime, Status, Unknown

DOC = Path(__file__).resolve().parents[2] / "docs" / "static-check.md"
GONE = "sglang.srt.layers.torchao_utils.apply_torchao_config_to_model"  # in 0.9.0, not in 0.10.0


def doc_rows() -> list[tuple[str, str, bool]]:
    text = DOC.read_text()
    table = text[text.index("| row | when | breaking |"):].split("\n\n", 1)[0]
    rows = []
    for line in table.splitlines()[2:]:
        name, when, breaking = (cell.strip() for cell in line.strip("|").split(" | "))
        rows.append((name.strip("`"), when, breaking == "yes"))
    return rows


def test_the_documented_table_is_the_one_the_code_decides_with():
    assert doc_rows() == [(row.name, row.when, row.breaking) for row in ROWS]


# one case per row: facts that reach it and no earlier row
ROW_CASES = {
    "dead_module": BreakingFacts(Status.missing, certain=True, live=False),
    "not_taken": BreakingFacts(Status.missing, certain=True, guard="skipped"),
    "handled": BreakingFacts(Status.missing, certain=True, guard="caught"),
    "uncalled": BreakingFacts(Status.missing, certain=True, uncalled="p.X.helper"),
    "fits": BreakingFacts(Status.dead_override, certain=False),
    "falls_back": BreakingFacts(Status.missing, certain=False, falls_back=True),
    "not_certain": BreakingFacts(Status.signature_changed, certain=False),
    "undecided_guard": BreakingFacts(Status.missing, certain=True, guard="undecided"),
    "runtime_condition": BreakingFacts(Status.missing, certain=True, guard="runtime"),
    "runs": BreakingFacts(Status.not_on_base, certain=True),
}


@pytest.mark.parametrize("row", [row.name for row in ROWS])
def test_each_row_decides_as_documented(row):
    decided = decide(ROW_CASES[row])
    assert decided.name == row
    assert decided.breaking is next(r.breaking for r in ROWS if r.name == row)


def test_earlier_rows_win():
    # a dead module's certain failure under a run-time condition is still not breaking
    assert decide(BreakingFacts(Status.missing, certain=True, live=False, guard="runtime")).name == "dead_module"
    # a condition false on this release beats one that cannot be decided
    assert decide(BreakingFacts(Status.missing, certain=True, guard="skipped")).name == "not_taken"
    # an unknown under a run-time condition is not certain: unverified, not breaking
    assert decide(BreakingFacts(Status.unknown, certain=False, guard="runtime")).name == "not_certain"


@pytest.fixture(scope="module")
def upstreams(tmp_path_factory):
    # 0.10.0 drops get_mha_kv_pool_cls (and torchao_utils)
    return upstream_pair(tmp_path_factory, new=INTERFACE_WITHOUT_MHA_POOL)


RUNTIME_SPELLINGS = {
    # a comparison of a parameter, or a parameter's truth
    "compare": """
        def prepare(n, enable_x):
            if n == 0 or not enable_x:
                from sglang.srt.layers.torchao_utils import apply_torchao_config_to_model
                return apply_torchao_config_to_model
        """,
    # an attribute of a parameter against self's, in a method
    "dtype": """
        class Cache:
            def store(self, cache_k):
                if cache_k.dtype != self.dtype:
                    from sglang.srt.layers.torchao_utils import apply_torchao_config_to_model
                    return apply_torchao_config_to_model


        def save(cache: Cache, k):
            return cache.store(k)
        """,
    # an early exit on a local's `is None`, then a method of a parameter
    "early_exit": """
        def run(batch):
            mode = batch.forward_mode
            if mode is None:
                return None
            if mode.is_decode() and len(batch.reqs) > 1:
                from sglang.srt.layers.torchao_utils import apply_torchao_config_to_model
                return apply_torchao_config_to_model
        """,
    # the test kept in a local first, then `if` on the local (alone, or negated)
    "local_test": """
        def reduce(input_, dim, world_size):
            needs_fallback = input_.dim() != 2 or input_.shape[dim] % world_size != 0
            if needs_fallback:
                from sglang.srt.layers.torchao_utils import apply_torchao_config_to_model
                return apply_torchao_config_to_model
        """,
    "annotated_local_test": """
        def reduce(input_, world_size):
            fallback: bool = input_.shape[0] % world_size != 0
            if fallback:
                from sglang.srt.layers.torchao_utils import apply_torchao_config_to_model
                return apply_torchao_config_to_model
        """,
    # the value a walrus binds, tested at once
    "walrus": """
        def reduce(input_):
            if (n := input_.numel()) == 0:
                from sglang.srt.layers.torchao_utils import apply_torchao_config_to_model
                return apply_torchao_config_to_model, n
        """,
    # EAFP (twenty-fourth set V-d5): the handler of a lookup in run-time data runs for the
    # inputs the lookup fails on (a dict by a dtype, list.index, an item)
    "key_error_handler": """
        class Attention:
            _kernels = {"float16": "f16"}

            def forward(self, x):
                try:
                    kernel = self._kernels[x.dtype]
                except KeyError:
                    from sglang.srt.layers.torchao_utils import apply_torchao_config_to_model
                    return apply_torchao_config_to_model
                return kernel


        def run(attention: Attention, x):
            return attention.forward(x)
        """,
    "value_error_handler": """
        def position(names, name):
            try:
                at = names.index(name)
            except ValueError:
                from sglang.srt.layers.torchao_utils import apply_torchao_config_to_model
                return apply_torchao_config_to_model
            return at
        """,
    "index_error_handler": """
        def first(batch):
            try:
                head = batch.reqs[0]
            except (IndexError, AttributeError):
                from sglang.srt.layers.torchao_utils import apply_torchao_config_to_model
                return apply_torchao_config_to_model
            return head
        """,
    # run-time data OR a question nothing here decides: the data alone can make it true
    "or_a_machine_question": """
        import os

        def is_npu():
            return os.path.exists("/dev/davinci0")

        def reduce(input_):
            if input_.numel() == 0 or not is_npu():
                from sglang.srt.layers.torchao_utils import apply_torchao_config_to_model
                return apply_torchao_config_to_model
        """,
    "or_a_flag_set_from_the_environment": """
        import os

        class Communicator:
            def __init__(self):
                self.use_dev_kernels = os.environ.get("DEV_KERNELS", "1") == "1"

            def all_gather(self, input_):
                if (n := input_.numel()) == 0 or not self.use_dev_kernels:
                    from sglang.srt.layers.torchao_utils import apply_torchao_config_to_model
                    return apply_torchao_config_to_model, n


        def gather(comm: Communicator, x):
            return comm.all_gather(x)
        """,
    "negated_local_test": """
        def reduce(input_, world_size):
            fast = not (input_.dim() == 2 and world_size > 1)
            if not fast:
                from sglang.srt.layers.torchao_utils import apply_torchao_config_to_model
                return apply_torchao_config_to_model
        """,
    # a negated conjunction of data and a question nothing here decides (vLLM variant s9): `not
    # (a and b)` is `not a or not b`, true for some data whatever b is; also with the machine
    # question, and as `not a or not b` written out
    "negated_conjunction_with_a_flag": """
        import os

        class Communicator:
            def __init__(self):
                self.use_p2p = os.environ.get("DEV_P2P", "1") == "1"

            def send(self, tensor):
                if not (tensor.is_contiguous() and self.use_p2p):
                    from sglang.srt.layers.torchao_utils import apply_torchao_config_to_model
                    return apply_torchao_config_to_model


        def send(comm: Communicator, x):
            return comm.send(x)
        """,
    "negated_conjunction_with_the_machine": """
        from p.util import is_npu

        def reduce(input_):
            if not (is_npu() and input_.dim() == 2):
                from sglang.srt.layers.torchao_utils import apply_torchao_config_to_model
                return apply_torchao_config_to_model
        """,
    # the entry a run-time key picks from a plugin table (twenty-fifth set V-e5): a tuple key with a
    # part only a run gives, its `.get` and a test of it; a dict of str keys read with a run-time
    # name; a tuple key read inline in the test
    "table_get_of_a_run_time_tuple_key": """
        KERNELS = {("bf16", False): "fused_bf16", ("fp16", False): "fused_fp16"}

        def forward(x, scale=None):
            kernel = KERNELS.get((x.dtype, scale is not None))
            if kernel is None:
                from sglang.srt.layers.torchao_utils import apply_torchao_config_to_model
                return apply_torchao_config_to_model
        """,
    "table_get_of_a_run_time_name": """
        KERNELS = {"bf16": "fused_bf16"}

        def forward(x):
            if (kernel := KERNELS.get(str(x.dtype))) is None:
                from sglang.srt.layers.torchao_utils import apply_torchao_config_to_model
                return apply_torchao_config_to_model
        """,
    "table_membership_of_a_run_time_tuple": """
        KERNELS = {("bf16", 1): "fused_bf16"}

        def forward(x, n):
            if (x.dtype, n) not in KERNELS:
                from sglang.srt.layers.torchao_utils import apply_torchao_config_to_model
                return apply_torchao_config_to_model
        """,
    "negated_disjunction_early_exit": """
        from p.util import is_npu

        def reduce(input_):
            if not (is_npu() or input_.numel() > 0):
                return None
            from sglang.srt.layers.torchao_utils import apply_torchao_config_to_model
            return apply_torchao_config_to_model
        """,
}


@pytest.mark.parametrize("spelling", sorted(RUNTIME_SPELLINGS))
def test_a_failure_under_a_run_time_condition_breaks_and_names_it(upstreams, tmp_path, spelling):
    _, new = upstreams
    root = plugin(tmp_path, {
        "pyproject.toml": pyproject(plugins={"p": "p.ops:register"}),
        "p/__init__.py": "",
        "p/util.py": "import os\n\n\ndef is_npu():\n    return os.path.exists('/dev/davinci0')\n",
        "p/ops.py": textwrap.dedent(RUNTIME_SPELLINGS[spelling]) + "\n\ndef register():\n    pass\n",
    })
    code, doc = check(root, new)
    finding = by_target(doc["findings"])[GONE]
    assert (finding["status"], finding["breaking"], finding["guard"]["outcome"]) == ("missing", True, "runtime"), finding
    assert finding["guard"]["condition"] in finding["detail"] and "a run-time condition" in finding["detail"]
    assert code == 1


UNDECIDED_OR_FALSE = {
    # a free function's result: a question about the machine, not the inputs
    "machine": ("""
        from p.util import is_npu

        def prepare():
            if is_npu():
                from sglang.srt.layers.torchao_utils import apply_torchao_config_to_model
                return apply_torchao_config_to_model
        """, "undecided", 3),
    # a capability test of upstream, false on 0.10.0
    "capability": ("""
        import sglang.srt.layers as layers

        def prepare():
            if hasattr(layers, "torchao_utils"):
                from sglang.srt.layers.torchao_utils import apply_torchao_config_to_model
                return apply_torchao_config_to_model
        """, "skipped", 0),
    # a version test, false on 0.10.0
    "version": ("""
        import sglang

        def prepare(n):
            if sglang.__version__ < "0.10.0" and n > 0:
                from sglang.srt.layers.torchao_utils import apply_torchao_config_to_model
                return apply_torchao_config_to_model
        """, "skipped", 0),
    # the same tests kept in a local first: a capability false here, a machine question beside data
    "capability_in_a_local": ("""
        import sglang.srt.layers as layers

        def prepare(n):
            usable = hasattr(layers, "torchao_utils") and n > 0
            if usable:
                from sglang.srt.layers.torchao_utils import apply_torchao_config_to_model
                return apply_torchao_config_to_model
        """, "skipped", 0),
    # `not (machine or data)`: needs the machine question false -- not data alone
    "negated_disjunction_with_the_machine": ("""
        from p.util import is_npu

        def prepare(n):
            if not (is_npu() or n > 0):
                from sglang.srt.layers.torchao_utils import apply_torchao_config_to_model
                return apply_torchao_config_to_model
        """, "undecided", 3),
    # a try whose body asks the machine (a free function), not the inputs: its handler is not data's
    "handler_of_a_machine_question": ("""
        from p.util import is_npu

        def prepare(n):
            try:
                found = is_npu()
            except OSError:
                from sglang.srt.layers.torchao_utils import apply_torchao_config_to_model
                return apply_torchao_config_to_model
            return found
        """, "undecided", 3),
    # a handler for an error no lookup in data raises: not the inputs' condition
    "import_error_handler_of_a_lookup": ("""
        def pick(kernels, x):
            try:
                kernel = kernels[x.dtype]
            except ImportError:
                from sglang.srt.layers.torchao_utils import apply_torchao_config_to_model
                return apply_torchao_config_to_model
            return kernel
        """, "undecided", 3),
    "machine_in_a_local": ("""
        from p.util import is_npu

        def prepare(n):
            npu = is_npu() and n > 0
            if npu:
                from sglang.srt.layers.torchao_utils import apply_torchao_config_to_model
                return apply_torchao_config_to_model
        """, "undecided", 3),
}


@pytest.mark.parametrize("spelling", sorted(UNDECIDED_OR_FALSE))
def test_conditions_on_the_upstream_or_the_machine_are_not_run_time_data(upstreams, tmp_path, spelling):
    _, new = upstreams
    source, outcome, exit_code = UNDECIDED_OR_FALSE[spelling]
    root = plugin(tmp_path, {
        "pyproject.toml": pyproject(plugins={"p": "p.ops:register"}),
        "p/__init__.py": "",
        "p/util.py": "import os\n\n\ndef is_npu():\n    return os.path.exists('/dev/davinci0')\n",
        "p/ops.py": textwrap.dedent(source) + "\n\ndef register():\n    pass\n",
    })
    code, doc = check(root, new)
    finding = by_target(doc["findings"])[GONE]
    assert (finding["breaking"], finding["guard"]["outcome"]) == (False, outcome), finding
    assert code == exit_code


DEAD_OVERRIDE_PLATFORM = {
    "p/__init__.py": """
        from sglang.srt.platforms.interface import SRTPlatform


        class P(SRTPlatform):
            def get_default_attention_backend(self) -> str:
                return "torch_native"

            def supports_v0_scheduling(self) -> bool:
                return True


        def activate():
            return "p:P"
        """,
}


@pytest.mark.parametrize("baseline", ["own_base", "older_release", "subclass_on_own_base"])
def test_an_override_already_absent_on_the_baseline_is_a_dead_override_never_red(upstreams, tmp_path, baseline):
    old, new = upstreams
    if baseline == "subclass_on_own_base":
        files = {"pyproject.toml": pyproject(plugins={"p": "p:register"}), "p/__init__.py": """
            from sglang.srt.layers.sampler import Sampler


            class P(Sampler):
                def forward_v0(self, logits):
                    return logits


            def register():
                return P
            """}
        target = "sglang.srt.layers.sampler.Sampler.forward_v0"
    else:
        files = {"pyproject.toml": pyproject(platforms={"p": "p:activate"}), **DEAD_OVERRIDE_PLATFORM}
        target = f"{IFACE}.supports_v0_scheduling"
    root = plugin(tmp_path, files)
    code, doc = check(root, new, "--baseline", old if baseline == "older_release" else new)
    finding = by_target(doc["findings"]).get(target)
    if finding is None:  # a subclass method no base declares and nothing calls is not reported at all
        assert baseline == "subclass_on_own_base" and code == 0
        return
    assert (finding["status"], finding["breaking"]) == ("dead_override", False), finding
    assert "dead code" in finding["detail"] and code == 0


def test_an_override_the_baseline_called_and_this_release_dropped_breaks(upstreams, tmp_path):
    old, new = upstreams
    files = {"pyproject.toml": pyproject(platforms={"p": "p:activate"}), "p/__init__.py": """
        from sglang.srt.platforms.interface import SRTPlatform


        class P(SRTPlatform):
            def get_mha_kv_pool_cls(self):
                return object


        def activate():
            return "p:P"
        """}
    root = plugin(tmp_path, files)
    code, doc = check(root, new, "--baseline", old)
    finding = by_target(doc["findings"])[f"{IFACE}.get_mha_kv_pool_cls"]
    assert (finding["status"], finding["breaking"]) == ("not_on_base", True) and code == 1
    # with no baseline at all the answer is today's: not_on_base, breaking (field case F02)
    code, doc = check(plugin(tmp_path, {"pyproject.toml": pyproject(platforms={"p": "p:activate"}), **DEAD_OVERRIDE_PLATFORM}, "q"),
                      new, "--baseline", "none")
    finding = by_target(doc["findings"])[f"{IFACE}.supports_v0_scheduling"]
    assert (finding["status"], finding["breaking"]) == ("not_on_base", True) and code == 1
    assert re.search(r"not defined on .*SRTPlatform", finding["detail"])


UNCALLED = {
    # a method nothing names, plain or under a decorator that registers nothing (vllm-kunlun's
    # KunlunCommunicator.change_state, a @contextmanager): what it reads cannot fail
    "plain": ("    def unused(self):\n        return self.gone_state\n", False),
    "contextmanager": ("    @contextlib.contextmanager\n    def unused(self):\n        yield self.gone_state\n", False),
    # the same read in a method the plugin calls
    "called": ("    def used(self):\n        return self.gone_state\n\n    def get_next_batch(self):\n        return self.used()\n", True),
}


@pytest.mark.parametrize("method", sorted(UNCALLED))
def test_a_read_in_a_method_nothing_calls_does_not_break(upstreams, tmp_path, method):
    _, new = upstreams
    body, breaks = UNCALLED[method]
    source = ("import contextlib\n\nfrom sglang.srt.managers.scheduler import Scheduler\n\n\nclass Mine(Scheduler):\n" + body
              + "\n\ndef register():\n    return Mine\n")
    root = plugin(tmp_path, {"pyproject.toml": pyproject(plugins={"p": "p.sched:register"}), "p/__init__.py": "", "p/sched.py": source})
    code, doc = check(root, new)
    read = by_target(doc["findings"])["sglang.srt.managers.scheduler.Scheduler.gone_state"]
    assert (read["status"], read["breaking"]) == ("missing", breaks), read
    assert code == (1 if breaks else 0)


CERTAIN_CALLS = {
    # (the test around a call no signature of fp8_gemm binds, the row, the exit code)
    "machine": ("is_npu()", "undecided_guard", 3),
    "machine_in_a_local": ("npu_run", "undecided_guard", 3),
    "run_time_data": ("n > 0", "runtime_condition", 1),
    "none": ("True", "runs", 1),
}


@pytest.mark.parametrize("spelling", sorted(CERTAIN_CALLS))
def test_a_certain_failure_under_an_undecided_test_is_unverified(upstreams, tmp_path, spelling):
    """The `undecided_guard` row: a call that cannot bind, under a test nothing here decides
    (a question about the machine), is unverified (exit 3), not passed and not breaking."""
    old, _ = upstreams  # 0.9.0 has fp8_gemm(a, b)
    test, row, exit_code = CERTAIN_CALLS[spelling]
    root = plugin(tmp_path, {
        "pyproject.toml": pyproject(plugins={"p": "p.ops:register"}),
        "p/__init__.py": "",
        "p/util.py": "import os\n\n\ndef is_npu():\n    return os.path.exists('/dev/davinci0')\n",
        "p/ops.py": ("from sglang.srt.layers.quantization.fp8_utils import fp8_gemm\n\nfrom p.util import is_npu\n\n\n"
                     f"def gemm(a, b, n):\n    npu_run = is_npu() and n > 0\n    if {test}:\n        return fp8_gemm(a, b, n)\n    return a\n\n\n"
                     "def register():\n    pass\n"),
    })
    code, doc = check(root, old)
    call = next(f for f in doc["findings"] if f["target"].endswith("fp8_gemm") and f["kind"] == "call")
    assert (call["status"], call["decided_by"]) == ("signature_changed", row), call
    assert call["breaking"] is (exit_code == 1) and code == exit_code, call


# the same path written with an elif, nested ifs, and an early return: it runs when every test
# on it holds, and the finding names them all (V variants u9, u10)
RUNTIME_PATHS = {
    "elif": "    if n == 1:\n        return a\n    elif b is None or not fast:\n        return fp8_gemm(a, b, n)\n    return a\n",
    "nested": "    if n != 1:\n        if b is None or not fast:\n            return fp8_gemm(a, b, n)\n    return a\n",
    "conjunction": "    if n != 1 and (b is None or not fast):\n        return fp8_gemm(a, b, n)\n    return a\n",
}


@pytest.mark.parametrize("spelling", sorted(RUNTIME_PATHS))
def test_a_failure_on_a_path_of_several_run_time_tests_names_each(upstreams, tmp_path, spelling):
    old, _ = upstreams  # 0.9.0 has fp8_gemm(a, b)
    root = plugin(tmp_path, {
        "pyproject.toml": pyproject(plugins={"p": "p.ops:register"}),
        "p/__init__.py": "",
        "p/ops.py": ("from sglang.srt.layers.quantization.fp8_utils import fp8_gemm\n\n\n"
                     f"def gemm(a, b, n, fast=False):\n{RUNTIME_PATHS[spelling]}\n\ndef register():\n    pass\n"),
    })
    code, doc = check(root, old)
    call = next(f for f in doc["findings"] if f["target"].endswith("fp8_gemm") and f["kind"] == "call")
    assert (call["breaking"], call["guard"]["outcome"], code) == (True, "runtime", 1), call
    assert "n" in call["guard"]["condition"] and "not fast" in call["guard"]["condition"], call["guard"]


# a loop's `else:` clause runs only when the loop ends without a `break` (thirtieth set V-j5): a
# call there runs under the negation of each break's test (run-time data, named); a loop with no
# break always reaches it
LOOP_ELSE = {
    "for_else": ("    for k in (1, 2):\n        if n == k:\n            break\n    else:\n        return fp8_gemm(a, b, n)\n    return a\n", "n == k"),
    "while_else": ("    while n > 4:\n        if fast:\n            break\n        n -= 1\n    else:\n        return fp8_gemm(a, b, n)\n    return a\n", "fast"),
    "for_else_two_breaks": ("    for k in range(n):\n        if b is None:\n            break\n        if k > 8:\n            a = a + 1\n            break\n"
                            "    else:\n        return fp8_gemm(a, b, n)\n    return a\n", "b is None"),
    "for_else_without_break": ("    for k in (1, 2):\n        a = a + k\n    else:\n        return fp8_gemm(a, b, n)\n", None),
}


@pytest.mark.parametrize("spelling", sorted(LOOP_ELSE))
def test_a_call_in_a_loops_else_runs_when_no_break_was_taken(upstreams, tmp_path, spelling):
    old, _ = upstreams  # 0.9.0 has fp8_gemm(a, b)
    body, named = LOOP_ELSE[spelling]
    root = plugin(tmp_path, {
        "pyproject.toml": pyproject(plugins={"p": "p.ops:register"}),
        "p/__init__.py": "",
        "p/ops.py": ("from sglang.srt.layers.quantization.fp8_utils import fp8_gemm\n\n\n"
                     f"def gemm(a, b, n, fast=False):\n{body}\n\ndef register():\n    pass\n"),
    })
    code, doc = check(root, old)
    call = next(f for f in doc["findings"] if f["target"].endswith("fp8_gemm") and f["kind"] == "call")
    assert call["breaking"] and code == 1, call
    if named is None:
        assert call["decided_by"] == "runs", call
    else:
        assert call["guard"]["outcome"] == "runtime" and named in call["guard"]["condition"], call["guard"]


# the method chosen by a conditional expression and called through a local (twenty-sixth set
# V-f5, `update = super().update_metadata if mapping.is_prefill else self._decode`): the super()
# call runs under that test, judged against the base's signature (Sampler.forward takes one
# positional argument besides self)
CHOSEN_METHODS = {
    "super_first": "run = super().forward if logits.is_cuda else self._own\n        return run(logits, 0.5)",
    "super_second": "run = self._own if not logits.is_cuda else super().forward\n        return run(logits, 0.5)",
    "with_keywords": "run = super().forward if logits.is_cuda else self._own\n        out = run(logits, 0.5, temperature=1.0)\n        return out",
}


@pytest.mark.parametrize("spelling", sorted(CHOSEN_METHODS))
def test_a_super_method_a_condition_chooses_is_judged_under_it(upstreams, tmp_path, spelling):
    _, new = upstreams
    root = plugin(tmp_path, {
        "pyproject.toml": pyproject(plugins={"p": "p:register"}),
        "p/__init__.py": ("from sglang.srt.layers.sampler import Sampler\n\n\nclass DevSampler(Sampler):\n"
                          f"    def forward(self, logits, *, temperature=1.0):\n        {CHOSEN_METHODS[spelling]}\n\n"
                          "    def _own(self, logits, t, temperature=None):\n        return logits\n\n\ndef register():\n    return DevSampler\n"),
    })
    code, doc = check(root, new)
    calls = [f for f in doc["findings"] if f["kind"] == "subclass" and f["target"].endswith("Sampler.forward") and f["breaking"]]
    assert [(f["status"], f["guard"]["outcome"]) for f in calls] == [("signature_changed", "runtime")] and code == 1, doc["findings"]
    assert "logits.is_cuda" in calls[0]["guard"]["condition"]


def test_a_formula_with_many_shared_leaves_is_decided_operand_by_operand():
    # the guards of a module imported along several chains (vllm-ascend 0.23.0's v2 runner): more
    # than six run-time tests each read twice, and beside them a flag __init__ clears on this
    # release (`self.v2 = cfg.v2; if self.v2 and on_0_23: self.v2 = False`): false whatever they hold
    tests = [Runtime(f"t{i}") for i in range(7)]
    v2 = Unknown("worker.py: self.v2")
    cleared = AnyOf((AllOf((v2, Const(True), Const(False))), AllOf((Not(AllOf((v2, Const(True)))), v2))))
    chain = AnyOf(tuple(tests))
    assert evaluate(None, AllOf((chain, AnyOf(tuple(reversed(tests))), cleared))) is False
    assert evaluate(None, AnyOf((AllOf((chain, cleared)), AllOf((AnyOf(tuple(reversed(tests))), cleared))))) is False
    # an operand that may hold keeps the whole undecided
    assert evaluate(None, AnyOf((AllOf((chain, cleared)), AllOf((AnyOf(tuple(reversed(tests))), v2))))) is None



# the base's method kept in a local functools.partial (twenty-eighth set V-h5,
# `run = functools.partial(super().forward, temperature=t)`), called under a run-time test: the
# super() call with the presets first, judged against the base's signature under that test
PARTIAL_SUPERS = {
    "keyword_preset": "run = functools.partial(super().forward, temperature=1.0, top_k=4)\n        if logits.is_cuda:\n            return run(logits)\n        return logits",
    "positional_preset": "run = partial(super().forward, logits, 0.5)\n        if logits.is_cuda:\n            return run()\n        return logits",
    "preset_and_call_keywords": "run = functools.partial(super().forward, logits)\n        return run(top_k=4) if logits.is_cuda else logits",
}


@pytest.mark.parametrize("spelling", sorted(PARTIAL_SUPERS))
def test_a_super_method_kept_in_a_partial_is_judged_where_it_is_called(upstreams, tmp_path, spelling):
    _, new = upstreams
    root = plugin(tmp_path, {
        "pyproject.toml": pyproject(plugins={"p": "p:register"}),
        "p/__init__.py": ("import functools\nfrom functools import partial\n\nfrom sglang.srt.layers.sampler import Sampler\n\n\nclass DevSampler(Sampler):\n"
                          f"    def forward(self, logits, *, temperature=1.0):\n        {PARTIAL_SUPERS[spelling]}\n\n\ndef register():\n    return DevSampler\n"),
    }, name=spelling)
    code, doc = check(root, new)
    calls = [f for f in doc["findings"] if f["kind"] == "subclass" and f["target"].endswith("Sampler.forward") and f["breaking"]]
    assert [(f["status"], f["guard"]["outcome"]) for f in calls] == [("signature_changed", "runtime")] and code == 1, doc["findings"]
