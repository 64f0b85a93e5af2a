"""AppTest fixtures: the app with the fixture collections as data roots."""
import re
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from tests.conftest import FIXTURES

APP = str(Path(__file__).resolve().parents[2] / "app.py")


@pytest.fixture
def app(monkeypatch):
    monkeypatch.setenv("EQI_DATA_ROOTS", str(FIXTURES))
    return AppTest.from_file(APP, default_timeout=600)


def sidebar_select(app: AppTest, label: str):
    """The sidebar's "Collection" or "Ranker" picker (its key changes when the app switches it)."""
    return next(s for s in app.sidebar.selectbox if s.label == label)


def as_read(markdown: str) -> str:
    """What a reader sees of an escaped Markdown message (``pages._text.literal``): the backslashes gone."""
    return re.sub(r"\\(.)", r"\1", markdown)
