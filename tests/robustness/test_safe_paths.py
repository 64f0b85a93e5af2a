"""Paths that arrive from outside (deep links) stay inside EQI_DATA_ROOTS; no pickles are loaded."""
import subprocess

import pytest
from streamlit.testing.v1 import AppTest

from eqi_core.errors import DataError
from eqi_core.loaders.registry import check_within_roots
from tests.conftest import FIXTURES, ROOT, TINY_BEIR


def test_paths_inside_roots_only(tmp_path):
    assert check_within_roots(f"beir:{TINY_BEIR}", [FIXTURES.resolve()])
    assert check_within_roots("wordnet:full", [])
    with pytest.raises(DataError, match="outside the configured data roots"):
        check_within_roots(f"beir:{TINY_BEIR}", [tmp_path])
    with pytest.raises(DataError, match="outside the configured data roots"):
        check_within_roots(f"beir:{FIXTURES}/../fixtures/../../tests/fixtures/tiny_beir", [tmp_path])
    link = tmp_path / "link"
    link.symlink_to(TINY_BEIR)  # a symlink inside the root pointing outside it
    with pytest.raises(DataError, match="outside the configured data roots"):
        check_within_roots(f"beir:{link}", [tmp_path])


def test_deep_link_outside_roots_is_refused(monkeypatch, tmp_path):
    monkeypatch.setenv("EQI_DATA_ROOTS", str(tmp_path))
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.query_params.update({"collection": f"beir:{TINY_BEIR}"})
    at.run()
    assert not at.exception
    assert any("outside the configured data roots" in w.value for w in at.warning)
    assert at.title[0].value.startswith("WordNet")


def test_no_unsafe_deserialisation_in_the_code():
    out = subprocess.run(["git", "grep", "-nE", r"pickle\.loads?\(|torch\.load\(|allow_pickle=True", "--", "*.py"],
                         cwd=ROOT, capture_output=True, text=True, encoding="utf-8").stdout
    offending = [line_ for line_ in out.splitlines() if "weights_only=True" not in line_ and "tests/robustness" not in line_]
    assert offending == []
