"""Reading the plugin: every module of one plugin checkout into a PluginScan (scanner.py): its
roots and liveness, registrations, classes, expressions, constant folding of guards, the uses
of names, and the annotation helpers the judge shares. Imports: model and upstream only."""

from harness.knowledge.scan.annotations import (
    WRITE,
    annotation_class,
    parameter_annotation,
    type_checking_imports,
)
from harness.knowledge.scan.folding import leaves
from harness.knowledge.scan.scanner import scan_plugin
from harness.knowledge.scan.syntax import ARCHITECTURE, bound_once, call_shape, dataclass_fields
from harness.knowledge.scan.uses import (
    module_getattr_reads,
    module_getattr_unreached,
    reads_elsewhere_only,
    reads_of,
    unnamed_private_function,
    plugin_function_params,
    registered_by_name,
    self_calls_in,
    set_on_others,
)

__all__ = [
    "ARCHITECTURE", "WRITE", "annotation_class", "bound_once", "call_shape", "dataclass_fields", "leaves", "module_getattr_reads", "parameter_annotation", "module_getattr_unreached", "reads_elsewhere_only", "reads_of", "unnamed_private_function",
    "plugin_function_params", "registered_by_name", "scan_plugin", "self_calls_in", "set_on_others", "type_checking_imports"
]
