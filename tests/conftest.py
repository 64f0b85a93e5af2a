"""Shared fixtures: a private artifact store per session, the tiny fixture collection, ../shared/data."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

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
