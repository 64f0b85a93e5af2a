"""Collection loaders and the spec strings that name collections (CLI, dashboard, cache keys).

Specs: ``wordnet`` (default subset), ``wordnet:full``, ``wordnet:<n synsets>``,
``beir:<folder or .zip>[#split]``, ``msmarco:<folder>[#split]``, ``irds:<ir_datasets id>``,
or a bare path whose layout is detected.
"""
from eqi_core.loaders.registry import (
    CollectionSpec,
    discover_collections,
    load_collection,
    parse_spec,
)

__all__ = ["CollectionSpec", "discover_collections", "load_collection", "parse_spec"]
