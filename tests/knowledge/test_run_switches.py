"""What a run decides and what the release decides (the nineteenth held-out set):
- a test of the process environment (`os.environ.get("X_DISABLE", "0") == "1"`, `os.getenv`,
  `"X" in os.environ`) is a deployment's switch: run-time data, as a config value is. Code under
  it runs on some runs: a failure there is breaking, the condition named (the decision table's
  `runtime_condition`), also when it names the platform class whose module cannot import;
- an environment write naming the external model package under a test the release decides
  false is never made: the package's modules are not imported there;
- activate() choosing between full class paths by a test the release decides loads only the one
  chosen: a class named only by its path among the alternatives is never loaded on this release."""

from __future__ import annotations

import pytest
from kinds_support import INTERFACE_WITHOUT_MHA_POOL, check, plugin, pyproject, upstream_pair


@pytest.fixture(scope="module")
def upstreams(tmp_path_factory):
    return upstream_pair(tmp_path_factory, new=INTERFACE_WITHOUT_MHA_POOL)


PLATFORM = ("from sglang.srt.platforms.interface import SRTPlatform\n\nfrom p import legacy  # noqa: F401\n\n\n"
            "class P(SRTPlatform):\n    def get_default_attention_backend(self) -> str:\n        return 'torch_native'\n")
LEGACY = "import sglang.srt.layers.torchao_utils as torchao_utils\n"
SWITCHES = {
    # (activate()'s test for returning None, whether the platform loads on some run of 0.10.0)
    "environ_get_equals": ("os.environ.get('P_DISABLE', '0') == '1'", True),
    "getenv": ("os.getenv('P_DISABLE')", True),
    "in_environ": ("'P_DISABLE' in os.environ", True),
    "lowered_environ_value": ("os.environ.get('P_DISABLE', '').lower() in ('1', 'true')", True),
    "release_test": ("__version__ == '0.10.0'", False),
}


@pytest.mark.parametrize("spelling", sorted(SWITCHES))
def test_a_platform_an_environment_switch_turns_off_still_breaks_where_it_is_on(upstreams, tmp_path, spelling):
    """activate() returns None under the test, else the class whose module imports p.legacy,
    whose import 0.10.0 lacks: the platform cannot load on the runs that leave the switch off
    (breaking, the switch named); a release test decided true turns it off on 0.10.0."""
    test, loads = SWITCHES[spelling]
    init = (f"import os\n\nfrom sglang.version import __version__\n\n\ndef activate():\n    if {test}:\n        return None\n    return 'p.platform.P'\n")
    root = plugin(tmp_path, {"pyproject.toml": pyproject(platforms={"p": "p:activate"}), "p/__init__.py": init,
                             "p/platform.py": PLATFORM, "p/legacy.py": LEGACY})
    code, doc = check(root, upstreams[1])
    legacy = [f for f in doc["findings"] if f["file"] == "p/legacy.py"]
    assert legacy and all(f["breaking"] is loads for f in legacy), doc["findings"]
    if loads:
        assert code == 1 and legacy[0]["decided_by"] in ("runtime_condition", "runs"), legacy
    else:
        assert code != 1, doc["findings"]


WRITES = {
    "environ_item": "os.environ['SGLANG_EXTERNAL_MODEL_PACKAGE'] = 'p.zoo'",
    "environ_setdefault": "os.environ.setdefault('SGLANG_EXTERNAL_MODEL_PACKAGE', 'p.zoo')",
    "environ_update": "os.environ.update(SGLANG_EXTERNAL_MODEL_PACKAGE='p.zoo')",
}


@pytest.mark.parametrize("test,loaded", [("__version__ == '0.9.0'", False), ("__version__ != '0.9.0'", True)])
@pytest.mark.parametrize("spelling", sorted(WRITES))
def test_a_model_package_named_under_a_release_test_is_loaded_only_where_it_holds(upstreams, tmp_path, spelling, test, loaded):
    init = (f"import os\n\nfrom sglang.srt.layers.sampler import Sampler\nfrom sglang.version import __version__\n\nOLD = {test}\n\n\n"
            f"def register():\n    if OLD:\n        {WRITES[spelling]}\n")
    root = plugin(tmp_path, {"pyproject.toml": pyproject(plugins={"p": "p:register"}), "p/__init__.py": init,
                             "p/zoo/__init__.py": "", "p/zoo/tiny.py": LEGACY + "\nEntryClass = None\n"})
    code, doc = check(root, upstreams[1])
    zoo = [f for f in doc["findings"] if f["file"] == "p/zoo/tiny.py" and f["kind"] == "import"]
    assert zoo and [f["breaking"] for f in zoo] == [loaded] and code == (1 if loaded else 0), doc["findings"]


CLASSES = ("from sglang.srt.platforms.interface import SRTPlatform\n\n\n"
           "class Current(SRTPlatform):\n    def get_default_attention_backend(self) -> str:\n        return 'torch_native'\n\n\n"
           "class Legacy(Current):\n    def get_mha_kv_pool_cls(self):\n        return object\n")
CHOOSERS = {
    "enum_member_values": ("import enum\n\nfrom sglang.version import __version__\n\n\nclass Gen(enum.Enum):\n    LEGACY = 'p.platform.Legacy'\n"
                           "    CURRENT = 'p.platform.Current'\n\n\ndef activate():\n    return (Gen.LEGACY if {test} else Gen.CURRENT).value\n"),
    "table_of_paths": ("from sglang.version import __version__\n\nPATHS = {{'legacy': 'p.platform:Legacy', 'current': 'p.platform:Current'}}\n\n\n"
                       "def activate():\n    return PATHS['legacy' if {test} else 'current']\n"),
    "if_else_returns": ("from sglang.version import __version__\n\n\ndef activate():\n    if {test}:\n        return 'p.platform.Legacy'\n"
                        "    return 'p.platform.Current'\n"),
}


@pytest.mark.parametrize("test,chosen", [("__version__ == '0.9.0'", False), ("__version__ != '0.9.0'", True)])
@pytest.mark.parametrize("spelling", sorted(CHOOSERS))
def test_a_platform_class_activate_does_not_choose_on_the_release_is_not_loaded(upstreams, tmp_path, spelling, test, chosen):
    """Legacy overrides get_mha_kv_pool_cls, which 0.10.0's SRTPlatform dropped (0.9.0 had it):
    breaking where activate() chooses Legacy on 0.10.0, nothing where it chooses Current."""
    old, new = upstreams
    root = plugin(tmp_path, {"pyproject.toml": pyproject(platforms={"p": "p:activate"}), "p/__init__.py": CHOOSERS[spelling].format(test=test),
                             "p/platform.py": CLASSES})
    code, doc = check(root, new, "--baseline", old)
    pool = [f for f in doc["findings"] if f["target"].endswith(".get_mha_kv_pool_cls") and f["breaking"]]
    assert (bool(pool), code) == ((True, 1) if chosen else (False, 0)), doc["findings"]
