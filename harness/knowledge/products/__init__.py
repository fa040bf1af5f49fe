"""What commands and steps ask the knowledge engine for: the Platform Map, `check`'s verdict,
the Feature Diff, triage into features, feature files, re-ports, and the per-process cache the
steps and the CLI read through (cache.py). The top stage: it may import every stage below."""

from harness.knowledge.products.cache import feature_diff, platform_map, resolve
from harness.knowledge.products.check import check_plugin, declared_baseline
from harness.knowledge.products.diffing import (
    FeatureDiff,
    diff_upstreams,
    write_feature_diff,
)
from harness.knowledge.products.features import (
    FeatureSpec,
    candidates,
    feature_files,
    load_feature_file,
    resolve_feature,
)
from harness.knowledge.products.mapping import map_plugin, write_platform_map
from harness.knowledge.products.port import (
    SIMILARITY_THRESHOLD,
    Port,
    port_plugin,
    similarity_of,
)
from harness.knowledge.products.port_apply import apply_ports, write_port_report
from harness.knowledge.products.triage import (
    FailsAt,
    Feature,
    FeatureKind,
    group_features,
)

__all__ = [
    "FailsAt", "Feature", "FeatureDiff", "FeatureKind", "FeatureSpec", "Port", "SIMILARITY_THRESHOLD",
    "apply_ports", "candidates", "check_plugin", "declared_baseline", "diff_upstreams", "feature_diff",
    "feature_files", "group_features", "load_feature_file", "map_plugin", "platform_map", "port_plugin", "resolve",
    "resolve_feature", "similarity_of", "write_feature_diff", "write_platform_map", "write_port_report"
]
