"""What a click on a chart reports to a page (pages/_exports.py), in the shape Streamlit gives it."""
from pages._exports import clicked_data


def test_the_first_clicked_point_with_customdata():
    state = {"selection": {"points": [{"x": 1, "y": 2}, {"x": 3, "customdata": [0.2, 0.3, 0.99]},
                                      {"customdata": [0.9, 0.9, 0.1]}]}}
    assert clicked_data(state) == [0.2, 0.3, 0.99]
    assert clicked_data({"selection": {"points": [{"customdata": "q7"}]}}) == ["q7"]  # one value, as a list
    # a row of a numeric numpy customdata, as Streamlit reports it
    assert clicked_data({"selection": {"points": [{"customdata": {"1": 10, "0": 42}}]}}) == [42, 10]


def test_no_click_is_none():
    for state in (None, {}, {"selection": None}, {"selection": {"points": []}}, {"selection": {"points": [{"x": 1}]}}):
        assert clicked_data(state) is None
