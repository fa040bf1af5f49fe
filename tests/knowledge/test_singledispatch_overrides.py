"""An override that is a `functools.singledispatchmethod` (issue 34, item 1; the thirty-fifth
held-out set's F29 variant) runs the implementation registered for the class of the argument
after self, else its decorated def (Lib/functools.py, singledispatchmethod.__get__). It is judged
by the implementation upstream's calls reach: the one registered for the class upstream annotates
that parameter with. Held on three ways of registering (`@m.register` with an annotation,
`@m.register(T)`, a `m.register(T, f)` statement naming a module function) and both answers; a
base parameter without an annotation leaves a mixed answer unknown; the dispatcher needs the
argument by position."""

from __future__ import annotations

import textwrap

import pytest
from kinds_support import IFACE, check, plugin, pyproject, upstream_pair

# the new release's platform: an annotated parameter and one without an annotation, each called
# with one positional argument on the engine's platform instance
INTERFACE = {
    "sglang/srt/platforms/interface.py": """
        from sglang.srt.platforms.device_mixin import DeviceMixin

        class SRTPlatform(DeviceMixin):
            def get_default_attention_backend(self) -> str:
                raise NotImplementedError

            def get_device_uuid(self, device_id: int = 0) -> str:
                raise NotImplementedError

            def describe_device(self, device) -> str:
                raise NotImplementedError
        """,
    "sglang/srt/entrypoints/__init__.py": "",
    "sglang/srt/entrypoints/engine.py": """
        from sglang.srt.platforms import current_platform


        def device_uuid(gpu_id):
            return current_platform.get_device_uuid(gpu_id)


        def device_text(gpu_id):
            return current_platform.describe_device(gpu_id)
        """,
}

# {method}: the dispatching method's name; {int_params}: the int implementation's parameters after
# self; each spelling registers it for int and a one-argument one for str
REGISTRATIONS = {
    "annotated_decorator": """
        @{method}.register
        def _(self, device: int{int_params}) -> str:
            return f"dev-{{device}}"

        @{method}.register
        def _(self, device: str) -> str:
            return device
        """,
    "class_in_the_decorator": """
        @{method}.register(int)
        def _by_index(self, device{int_params}) -> str:
            return f"dev-{{device}}"

        @{method}.register(str)
        def _by_bus_id(self, device) -> str:
            return device
        """,
    "register_call_with_a_module_function": """
        {method}.register(int, _by_index)
        {method}.register(str, _by_bus_id)
        """,
}


def _plugin(tmp_path, spelling: str, method: str, int_params: str, fallback_body: str = "raise TypeError(type(device))"):
    registrations = textwrap.indent(textwrap.dedent(REGISTRATIONS[spelling]).format(method=method, int_params=int_params), "    ")
    source = (
        "import functools\n\nfrom sglang.srt.platforms.interface import SRTPlatform\n\n\n"
        f"def _by_index(self, device{int_params}):\n    return f'dev-{{device}}'\n\n\n"
        "def _by_bus_id(self, device):\n    return device\n\n\n"
        "class P(SRTPlatform):\n"
        "    def get_default_attention_backend(self) -> str:\n        return 'torch_native'\n\n"
        f"    @functools.singledispatchmethod\n    def {method}(self, device) -> str:\n        {fallback_body}\n\n"
        f"{registrations}\n\n"
        "def activate():\n    return 'p:P'\n"
    )
    return plugin(tmp_path, {"pyproject.toml": pyproject(platforms={"p": "p:activate"}), "p/__init__.py": source})


@pytest.fixture(scope="module")
def new(tmp_path_factory):
    return upstream_pair(tmp_path_factory, new=INTERFACE)[1]


@pytest.mark.parametrize("spelling", sorted(REGISTRATIONS))
@pytest.mark.parametrize("int_params, breaks", [("", False), (", partition", True)], ids=["takes_the_call", "needs_more"])
def test_the_implementation_registered_for_upstreams_annotated_class_is_judged(new, tmp_path, spelling, int_params, breaks):
    code, doc = check(_plugin(tmp_path, spelling, "get_device_uuid", int_params), new)
    finding = next(f for f in doc["findings"] if f["target"] == f"{IFACE}.get_device_uuid")
    assert "upstream's device_id: int runs the implementation registered for int" in finding["detail"], finding
    assert finding["breaking"] is breaks and code == (1 if breaks else 0), finding
    if breaks:
        assert finding["status"] == "signature_changed" and "missing required argument 'partition'" in finding["detail"]
        assert "engine.py" in finding["detail"]  # the upstream call that fails


def test_a_class_with_no_registration_runs_the_decorated_def(new, tmp_path):
    # only str is registered: an int argument runs the decorated def, which takes it
    source = (
        "import functools\n\nfrom sglang.srt.platforms.interface import SRTPlatform\n\n\n"
        "class P(SRTPlatform):\n"
        "    def get_default_attention_backend(self) -> str:\n        return 'torch_native'\n\n"
        "    @functools.singledispatchmethod\n    def get_device_uuid(self, device, partition) -> str:\n        return str(device)\n\n"
        "    @get_device_uuid.register\n    def _(self, device: str) -> str:\n        return device\n\n\n"
        "def activate():\n    return 'p:P'\n"
    )
    code, doc = check(plugin(tmp_path, {"pyproject.toml": pyproject(platforms={"p": "p:activate"}), "p/__init__.py": source}), new)
    finding = next(f for f in doc["findings"] if f["target"] == f"{IFACE}.get_device_uuid")
    assert "runs the decorated def" in finding["detail"] and finding["breaking"] is True and code == 1, finding


@pytest.mark.parametrize("spelling", sorted(REGISTRATIONS))
def test_without_upstreams_annotation_a_mixed_answer_is_unknown(new, tmp_path, spelling):
    # describe_device(self, device): nothing says what upstream passes; the int implementation
    # refuses one argument, the str one takes it
    code, doc = check(_plugin(tmp_path, spelling, "describe_device", ", partition"), new)
    finding = next(f for f in doc["findings"] if f["target"] == f"{IFACE}.describe_device")
    assert finding["status"] == "unknown" and finding["breaking"] is False and code == 3, finding  # unverified
    assert "depends on the class of the value upstream passes as device" in finding["detail"], finding
    # every implementation taking the call: not a finding to act on
    code, doc = check(_plugin(tmp_path / "all", spelling, "describe_device", ""), new)
    finding = next(f for f in doc["findings"] if f["target"] == f"{IFACE}.describe_device")
    assert finding["status"] == "ok" and code == 0, finding


def test_the_dispatcher_needs_the_argument_by_position(tmp_path_factory, tmp_path):
    # upstream passes it by keyword: singledispatchmethod reads args[0], which is not there
    keyword = {**INTERFACE, "sglang/srt/entrypoints/engine.py": INTERFACE["sglang/srt/entrypoints/engine.py"].replace(
        "get_device_uuid(gpu_id)", "get_device_uuid(device_id=gpu_id)")}
    new = upstream_pair(tmp_path_factory, new=keyword)[1]
    code, doc = check(_plugin(tmp_path, "annotated_decorator", "get_device_uuid", ""), new)
    finding = next(f for f in doc["findings"] if f["target"] == f"{IFACE}.get_device_uuid")
    assert finding["breaking"] is True and code == 1, finding
