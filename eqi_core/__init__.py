"""eqi_core: search transparency for a collection and its rankers.

The nouns and verbs a notebook needs, imported on first use (``import eqi_core`` stays light):

- collections: ``load_collection``, ``Collection``, ``Qrels``; rankers: ``build_ranker``, ``RANKERS``;
  runs: ``Run`` (``Run.from_trec``, ``run.to_trec``), ``run_all_queries``; the store: ``ArtifactStore``
- exposure: ``compute_exposure_map`` -> ``ExposureMap``, ``prepare_exposure`` -> ``ExposureSetup``,
  ``passage_exposure`` (``patience_grids``), ``exact_exposure`` and ``exposure_change`` (two rankers),
  ``relq``, ``RelqSpec`` (``RelqSpec.parse("RELQ_RBP,RBP(0.5,0.9)@100")``), ``relq_rbp``
- coverage: ``compute_matrix``, ``tasc``, ``tasc_table``
- latent space: ``open_space``, ``load_decoder``, ``traverse``; query suggestions: ``suggestion_table``
- errors: ``DataError`` (bad input, one line)
"""
from __future__ import annotations

import importlib
import os

# OpenBLAS's idle threads busy-wait ~0.1 s after each call by default, taking the cores from the
# torch / onnxruntime work that follows (top-k after a GEMM, encoding after a search). Read once,
# when numpy loads OpenBLAS, so it only applies where eqi_core is imported first (the `eqi` CLI,
# `make run`); see `eqi bench exposure` (README, Benchmarks).
os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "4")
# onnxruntime (1.29 and later) uploads usage events to Microsoft (mobile.events.data.microsoft.com) on
# Linux, under a device id it writes to ~/.cache/Microsoft, unless this is set before it starts; a
# workbench that audits searches sends nothing anywhere (README, Reliability). Set here, before any
# eqi_core module imports onnxruntime; a user who wants the events can set it to 0.
os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")

_EXPORTS = {
    "ArtifactStore": "eqi_core.store",
    "Collection": "eqi_core.collection",
    "DataError": "eqi_core.errors",
    "load_collection": "eqi_core.loaders",
    "Qrels": "eqi_core.qrels",
    "Run": "eqi_core.runs",
    "RANKERS": "eqi_core.rankers",
    "build_ranker": "eqi_core.rankers",
    "load_encoder": "eqi_core.rankers",
    "run_all_queries": "eqi_core.rankers",
    "ExposureMap": "eqi_core.exposure.exact",
    "compute_exposure_map": "eqi_core.exposure.distributed",
    "ExposureSetup": "eqi_core.exposure.setup",
    "prepare_exposure": "eqi_core.exposure.setup",
    "passage_exposure": "eqi_core.exposure.lookup",
    "exact_exposure": "eqi_core.exposure.lookup",
    "exposure_change": "eqi_core.exposure.lookup",
    "patience_grids": "eqi_core.exposure.lookup",
    "RelqSpec": "eqi_core.exposure.relq",
    "relq": "eqi_core.exposure.relq",
    "relq_rbp": "eqi_core.exposure.relq",
    "relq_exh_ndcg": "eqi_core.exposure.relq",
    "compute_matrix": "eqi_core.coverage",
    "tasc": "eqi_core.coverage",
    "tasc_table": "eqi_core.coverage",
    "open_space": "eqi_core.decoder.space",
    "load_decoder": "eqi_core.decoder",
    "traverse": "eqi_core.decoder.traversal",
    "suggestion_table": "eqi_core.suggestion.panel",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name in _EXPORTS:
        value = getattr(importlib.import_module(_EXPORTS[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'eqi_core' has no attribute {name!r}")


def __dir__() -> list[str]:
    return __all__
