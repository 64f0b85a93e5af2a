"""Ranker coverage: per-query metric matrices (ir_measures), TaSC, significance, drill-down."""
from eqi_core.coverage.per_query import MetricMatrix, compute_matrix, parse_measure
from eqi_core.coverage.tasc import TascResult, reference_sets, tasc, tasc_table

__all__ = ["MetricMatrix", "compute_matrix", "parse_measure", "TascResult", "reference_sets", "tasc", "tasc_table"]
