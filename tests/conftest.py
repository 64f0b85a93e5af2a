"""Shared fixtures: a private artifact store per session, the tiny fixture collection, ../shared/data."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")



def _runner_wrappers_leave_their_buffers_open() -> None:
    """typer's CliRunner (0.29) wraps its capture buffers in a TextIOWrapper whose garbage collection
    closes them: when sys.stdout is displaced during an invoke, the runner's own ``getvalue()`` fails with
    "I/O operation on closed file" (pallets/click#824; click 8.3.2 made the wrapper's close a no-op,
    typer's copy of it did not). Seen in 2 of about 20 local runs of the Latent traversal AppTests
    followed by ``test_cli.py``'s --help tests, in no fresh-clone run; what displaced sys.stdout was not found."""
    import io

    import typer.testing

    wrapper = getattr(typer.testing, "_NamedTextIOWrapper", None)
    if wrapper is not None and wrapper.close is io.TextIOWrapper.close:
        wrapper.close = lambda self: None


_runner_wrappers_leave_their_buffers_open()

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = Path(__file__).resolve().parent / "fixtures"
TINY_BEIR = FIXTURES / "tiny_beir"
SHARED_DATA = ROOT.parent / "shared" / "data"


@pytest.fixture(scope="session", autouse=True)
def session_store_home(tmp_path_factory) -> Path:
    """Every test session gets its own EQI_HOME (unless one is given, e.g. to reuse a warm store)."""
    home = Path(os.environ.get("EQI_TEST_HOME") or tmp_path_factory.mktemp("eqi_home"))
    os.environ["EQI_HOME"] = str(home)
    return home


@pytest.fixture
def store(tmp_path):
    from eqi_core.store import ArtifactStore

    return ArtifactStore(tmp_path / "store")


@pytest.fixture(scope="session")
def tiny():
    from eqi_core.loaders import load_collection

    return load_collection(f"beir:{TINY_BEIR}")


@pytest.fixture(scope="session")
def shared_store(session_store_home):
    from eqi_core.store import ArtifactStore

    return ArtifactStore(session_store_home)


def shared_dataset(name: str) -> Path:
    path = SHARED_DATA / name
    if not path.is_dir():
        pytest.skip(f"{path} is absent: the ../shared/data collections are only beside the project in dev and CI")
    return path


DL19_SAMPLE_FRACTION = 0.3


@pytest.fixture(scope="session")
def dl19_sample():
    """TREC DL 2019 with a seeded 30% of its passages (4,374 of 14,581) and the judgments of those:
    a real sub-collection, so the data tests encode 4k MS MARCO passages instead of 15k (about
    four minutes less on 2 cores). Every query keeps relevant passages (asserted); ranks are among the sample."""
    import numpy as np

    from eqi_core.collection import Collection
    from eqi_core.loaders import load_collection

    full = load_collection(f"beir:{shared_dataset('trec-dl19-passage')}")
    ids = sorted(full.passages["doc_id"])
    keep = set(np.array(ids)[np.random.default_rng(19).permutation(len(ids))[:round(DL19_SAMPLE_FRACTION * len(ids))]])
    passages = full.passages[full.passages["doc_id"].isin(keep)].reset_index(drop=True)
    qrels = full.qrels[full.qrels["doc_id"].isin(keep)].reset_index(drop=True)
    relevant = qrels[qrels["relevance"] > 0]
    assert relevant["query_id"].nunique() == full.qrels["query_id"].nunique(), "a DL19 query lost all its relevant passages"
    return Collection(f"{full.name} (30% of passages)", passages, full.queries, qrels, source=f"{full.source} (sample)")
