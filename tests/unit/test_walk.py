"""The dashboard's random walker (``tests/walk.py``, ``make walk``) finds what breaks a page."""
import random

from streamlit.testing.v1 import AppTest

from tests.walk import link_names, walk_widgets

BREAKS_ON_B = '''
import streamlit as st
choice = st.selectbox("Pick", ["a", "b"], key="pick", format_func=str.upper)
st.checkbox("Harmless", key="box")
if choice == "b":
    raise RuntimeError("b is broken")
'''


def test_a_walk_finds_an_option_shown_under_another_name_that_breaks_the_page():
    at = AppTest.from_string(BREAKS_ON_B).run()
    found = walk_widgets(at, random.Random(0), 30)
    assert found and found[-1].startswith("b is broken") and any("pick -> 'B'" in step for step in found)


def test_a_walk_over_a_sound_page_finds_nothing():
    at = AppTest.from_string(BREAKS_ON_B.replace('raise RuntimeError("b is broken")', 'st.write("b")')).run()
    assert walk_widgets(at, random.Random(0), 30) == []


def test_a_pages_link_names_are_read_from_its_url_spec():
    assert link_names("latent") == ["decoder", "k", "mode", "query", "stop", "target", "weights"]


PICKER = '''
import streamlit as st
spec = st.sidebar.selectbox("Collection", ["wordnet", "beir:a", "beir:b"], key="collection_spec__widget0",
                            format_func={"wordnet": "WordNet (default)", "beir:a": "a (BEIR)", "beir:b": "b (BEIR)"}.get)
st.write(spec)
'''


def test_a_tour_switches_only_among_the_other_fixture_collections():
    """A tour's collection move picks a collection other than the shown one, and never WordNet (minutes to build)."""
    from tests.walk import _switch_collection

    at = AppTest.from_string(PICKER).run()
    seen = []
    for seed in range(6):
        seen.append(_switch_collection(random.Random(seed), at))
        at.run()
        assert at.markdown[0].value == {"a (BEIR)": "beir:a", "b (BEIR)": "beir:b"}[seen[-1]]
    assert all(a != b for a, b in zip(seen, seen[1:])) and set(seen) == {"a (BEIR)", "b (BEIR)"}
