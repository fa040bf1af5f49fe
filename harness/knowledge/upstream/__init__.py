"""Reading one upstream tree: release wheels, git trees and directories (source.py), git
ranges, symbol extraction, class factories, instance attributes, module tables, the symbol
index and its MRO, and outside bases (packages installed beside harness). Imports: model only."""

from harness.knowledge.upstream.external import TABLE_FILE, describe_here, display
from harness.knowledge.upstream.git_range import Commit, first_parent_commits, step_ends
from harness.knowledge.upstream.index import ENUM_MEMBER_ATTRIBUTES, MEMBER_DECORATORS, SymbolIndex, load_index
from harness.knowledge.upstream.lookups import KeyedLookup, keyed_lookup
from harness.knowledge.upstream.mro import c3
from harness.knowledge.upstream.name_reads import (
    optional_read,
    reads_attribute,
    reads_module_global,
)
from harness.knowledge.upstream.source import (
    RELEASE_SPEC,
    UNREACHABLE,
    UpstreamSource,
    cache_dir,
    cached_release,
    cached_versions,
    latest_release,
    read_cache_file,
    resolve_upstream,
    split_git_spec,
    upstream_version,
    write_cache_file,
)
from harness.knowledge.upstream.symbols import extract_module
from harness.knowledge.upstream.tables import (
    CACHE_VERSION,
    module_name,
    stop_parse_pools,
)

__all__ = [
    "KeyedLookup", "keyed_lookup",
    "CACHE_VERSION", "Commit", "ENUM_MEMBER_ATTRIBUTES", "MEMBER_DECORATORS", "RELEASE_SPEC", "SymbolIndex", "TABLE_FILE", "UNREACHABLE",
    "UpstreamSource", "c3", "cache_dir", "cached_release", "cached_versions", "describe_here", "display",
    "extract_module", "first_parent_commits", "latest_release", "load_index", "module_name", "optional_read",
    "read_cache_file", "reads_attribute", "reads_module_global", "resolve_upstream", "upstream_version", "split_git_spec", "step_ends",
    "stop_parse_pools", "write_cache_file",
]
