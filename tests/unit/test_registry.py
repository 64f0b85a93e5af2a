"""The ranker registry is the one home of ids, names, release dates, colours and dimensions."""
import pytest

from eqi_core.errors import DataError
from eqi_core.figures.theme import ranker_colours
from eqi_core.rankers import RANKERS, REGISTRY, embedding_dimension, known, ranker_spec, release_date_for


def test_live_rankers_have_builders_and_index_artifacts():
    assert list(RANKERS) == ["bm25", "minilm-l6", "minilm-l3-onnx", "splade-tiny"]
    assert all(s.live and s.index is not None for s in RANKERS.values())
    assert not any(s.live for s in REGISTRY if s.family == "run")


def test_run_names_and_aliases_resolve():
    assert release_date_for("bm25.dl19") == "1994-11"
    assert release_date_for("tas-b") == release_date_for("tasb") == "2021-04"
    assert release_date_for("someone-elses-run") == ""
    assert known("ADA2").id == "openai-ada2"


def test_colours_come_from_the_registry_and_unknown_names_are_stable():
    for spec in REGISTRY:
        assert ranker_colours([spec.id])[spec.id] == spec.colour
    assert ranker_colours(["my-run"]) == ranker_colours(["my-run"])


def test_dimensions():
    assert embedding_dimension("minilm-l6") == 384 and embedding_dimension("bm25") == 0


def test_unknown_ranker_is_one_line():
    with pytest.raises(DataError, match="unknown; expected one of bm25"):
        ranker_spec("nope")
