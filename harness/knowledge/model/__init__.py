"""The knowledge engine's records, at the bottom of its stages (model < upstream < scan < judge
< products): findings and their statuses, references, risk, the plugin's records (plugin.py) and
the symbol records an upstream index keeps. Nothing here reads a tree; every stage above speaks
in these types (and in the engine profiles of harness.engines, the layer below)."""

from harness.knowledge.model.findings import BREAKING, Finding, Guard, GuardOutcome, Status
from harness.knowledge.model.plugin import (
    CLASS_USE_BASE,
    CLASS_USE_CHECK,
    CLASS_USES,
    UNDECIDED,
    AllOf,
    AnyOf,
    CallShape,
    Catch,
    Cond,
    Const,
    Dependency,
    EntryPoint,
    FieldPresent,
    GuardCond,
    HasAttr,
    HasKey,
    ImportsResolve,
    MethodDecl,
    ModuleExists,
    Not,
    ParamFieldPresent,
    PluginClass,
    PluginModule,
    PluginScan,
    Root,
    Runtime,
    Scope,
    SelfFlag,
    SelfRef,
    Undecided,
    Unknown,
    VersionCompare,
    declared_pins,
    declared_version,
    detect_engine,
    is_upstream,
    pin_sources,
    plugin_module_files,
    read_entry_points,
    run_entries,
    run_entry_sources,
)
from harness.knowledge.model.refs import Outcome, Ref, Resolution
from harness.knowledge.model.risk import risk_of
from harness.knowledge.model.symbol_records import (
    EMPTY_BODIES,
    Binding,
    ClassInfo,
    FunctionInfo,
    InstanceAttributes,
    ModuleTable,
    Param,
    body_fingerprint,
    decode_table,
    dotted,
    encode_table,
    function_params,
    parse_source,
    raises_only,
    resolve_relative,
    signature_text,
    walk,
)

__all__ = [
    "AllOf", "AnyOf", "BREAKING", "Binding", "CLASS_USES", "CLASS_USE_BASE", "CLASS_USE_CHECK", "CallShape",
    "Catch", "ClassInfo", "Cond", "Const", "Dependency", "EMPTY_BODIES", "EntryPoint",
    "FieldPresent", "Finding", "FunctionInfo", "Guard", "GuardCond", "GuardOutcome", "HasAttr", "HasKey", "ImportsResolve",
    "InstanceAttributes", "MethodDecl", "ModuleExists", "ModuleTable", "Not", "Outcome", "Param",
    "ParamFieldPresent", "PluginClass", "PluginModule", "PluginScan", "Ref", "Resolution", "Root", "Runtime",
    "Scope", "SelfFlag", "SelfRef", "Status", "UNDECIDED", "Undecided", "Unknown", "VersionCompare",
    "body_fingerprint", "declared_pins", "declared_version", "decode_table", "detect_engine", "dotted",
    "encode_table", "function_params", "is_upstream", "parse_source",
    "pin_sources", "plugin_module_files", "raises_only", "read_entry_points", "resolve_relative",
    "run_entries", "run_entry_sources",
    "risk_of", "signature_text", "walk"
]
