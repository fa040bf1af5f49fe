"""Tables some of whose keys only a run gives (`{n: None for n in os.environ["X"].split(",")}`,
`dict.fromkeys(names_from_a_config, False)`), layered over the plugin's own with ChainMap: a
known key holds its entry or, where a run gives it in the earlier map, that map's value; a loop
meets the known keys and then the unseen ones, which hold the run-time map's value. A test that
rules None out (`if m is None: continue`, `if m:`) leaves the entry. A plugin module `pd.legacy`
imports `sglang.srt.layers.torchao_utils`, which 0.10.0 dropped: where a loop over such a table
imports it, `check` on 0.10.0 is red; where nothing does, the unseen keys change nothing and it is
green (not unknown). `filter(pred, items)` with a plugin predicate keeps what the predicate is not
decided false for (one reading the environment may keep anything) (eighteenth held-out set)."""

from __future__ import annotations

import pytest
from kinds_support import judge_legacy, upstream_pair

@pytest.fixture(scope="module")
def upstreams(tmp_path_factory):
    return upstream_pair(tmp_path_factory)


HEAD = "import collections\nimport importlib\nimport os\n\n"
TABLES = {
    # (the plugin's __init__, whether pd.legacy is imported)
    "comprehension_is_none_continue": (
        HEAD + "DEFAULTS = {'legacy': 'pd.legacy', 'fast': 'pd.fast'}\n\n\ndef register():\n"
        "    off = {n: None for n in filter(None, os.environ.get('PD_OFF', '').split(','))}\n"
        "    table = collections.ChainMap(off, DEFAULTS)\n    for name in sorted(table):\n        module = table[name]\n"
        "        if module is None:\n            continue\n        importlib.import_module(module)\n", True),
    "fromkeys_if_body": (
        HEAD + "def _disabled():\n    return dict.fromkeys(os.environ['PD_OFF'].split(','))\n\n\ndef register():\n"
        "    table = collections.ChainMap(_disabled(), {'fast': 'pd.fast', 'legacy': 'pd.legacy'})\n    for name in table:\n"
        "        module = table.get(name)\n        if module:\n            importlib.import_module(module)\n", True),
    "fromkeys_false_flags": (
        HEAD + "ON = {'legacy': True, 'fast': True}\n\n\ndef register():\n"
        "    switches = collections.ChainMap(dict.fromkeys(os.environ.get('PD_OFF', '').split(','), False), ON)\n"
        "    for name in list(switches):\n        if not switches[name]:\n            continue\n        importlib.import_module(f'pd.{name}')\n", True),
    "unseen_keys_skipped": (
        HEAD + "DEFAULTS = {'fast': 'pd.fast'}\n\n\ndef register():\n"
        "    off = {n: None for n in os.environ.get('PD_OFF', '').split(',')}\n"
        "    table = collections.ChainMap(off, DEFAULTS)\n    for name in sorted(table):\n        module = table[name]\n"
        "        if module is None:\n            continue\n        importlib.import_module(module)\n", False),
    "unseen_keys_hold_a_module": (
        HEAD + "def register():\n    extra = {n: 'pd.fast' for n in os.environ.get('PD_EXTRA', '').split(',')}\n"
        "    for name in collections.ChainMap(extra, {'base': 'pd.fast'}):\n        importlib.import_module(extra.get(name, 'pd.fast'))\n", False),
}


@pytest.mark.parametrize("spelling", sorted(TABLES))
def test_modules_imported_from_a_table_a_run_adds_keys_to(upstreams, tmp_path, spelling):
    """Known keys keep their entries under a run-time override; unseen keys hold the override's
    value, so a loop that skips it never meets an unknown module."""
    judge_legacy(tmp_path, upstreams[1], *TABLES[spelling])


FILTERS = {
    # (the plugin's __init__, whether pd.legacy is imported): filter() with a plugin predicate keeps the items it
    # is not decided false for (eighteenth set V-h1)
    "method_of_records_reading_the_environment": (
        "import dataclasses\nimport importlib\nimport os\n\n\n@dataclasses.dataclass(frozen=True)\nclass Part:\n    module: str\n"
        "    flag: str\n    default_on: bool = True\n\n    def enabled(self):\n        raw = os.environ.get(self.flag)\n"
        "        if raw is None:\n            return self.default_on\n        return raw != '0'\n\n\nPARTS = (Part('.legacy', 'PD_LEGACY'), Part('.fast', 'PD_FAST'))\n\n\n"
        "def register():\n    for part in filter(Part.enabled, PARTS):\n        importlib.import_module(part.module, __name__)\n", True),
    "function_of_names_decided_false": (
        "import importlib\n\nOFF = {'legacy'}\n\n\ndef _on(name):\n    return name not in OFF\n\n\n"
        "def register():\n    for name in filter(_on, ('legacy', 'fast')):\n        importlib.import_module('pd.' + name)\n", False),
    "function_of_names_decided_true": (
        "import importlib\n\nON = ('legacy',)\n\n\ndef _on(name):\n    return name in ON\n\n\n"
        "def register():\n    list(map(importlib.import_module, [f'pd.{n}' for n in filter(_on, ['legacy', 'fast'])]))\n", True),
}


@pytest.mark.parametrize("spelling", sorted(FILTERS))
def test_modules_imported_from_what_a_plugin_predicate_keeps(upstreams, tmp_path, spelling):
    judge_legacy(tmp_path, upstreams[1], *FILTERS[spelling])
