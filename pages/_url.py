"""Deep links: every page's state lives in the URL.

Values arriving in the URL (a shared link, a curated example) are applied to the widgets before
they are drawn; after drawing, the URL is rewritten from the widgets, so copying the address bar
(or the "Copy link" box) reopens the same view.
"""
from __future__ import annotations

import math

import streamlit as st

from pages._text import literal

_WRITTEN = "_url_written"  # this session's last few rewrites: [(page, params), ...], newest last
_KEEP_WRITES = 2  # the stale address is the one before the latest
URL_NAMES = {"collection_spec": "collection", "ranker_id": "ranker"}  # the sidebar's widgets


def _page() -> str:
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    ctx = get_script_run_ctx()
    return ctx.page_script_hash if ctx is not None else ""


def incoming() -> dict[str, str]:
    """URL parameters that did not come from one of our own recent rewrites of this page (a new link,
    or the first load).

    The browser sends its address with every rerun. A widget that reruns the page before the
    browser has applied our latest rewrite sends the one before: that stale address is ours, not a
    link, and must not switch the view back.
    """
    current = {k: st.query_params.get(k) for k in st.query_params}
    return {} if (_page(), current) in st.session_state.get(_WRITTEN, []) else current


def url_state(spec: dict[str, tuple[str, type, object]]) -> None:
    """Initialise widgets ``{widget_key: (url_name, cast, default)}`` from the URL, else their default."""
    arriving = incoming()
    for key, (name, cast, default) in spec.items():
        if name in arriving:
            try:
                if "\x00" in str(arriving[name]):  # no value of ours holds one; a path with it fails in os.stat
                    raise ValueError("a NUL character")
                value = cast(arriving[name])
                if isinstance(value, float) and not math.isfinite(value):  # nan passes every range check
                    raise ValueError("not a finite number")
            except (TypeError, ValueError):
                st.warning(f"Ignoring the link's {literal(name)}={literal(repr(arriving[name]))}: not a valid value.")
                value = default
            st.session_state[key] = value
        else:
            st.session_state.setdefault(key, default)
    st.session_state.setdefault("_url_spec", {}).update({k: (n, c) for k, (n, c, _) in spec.items()})


def within(key: str, low, high):
    """Bring a linked number inside its widget's range before the widget is drawn: a link made for a
    deeper map, or edited by hand, would otherwise stop the page with Streamlit's range error.
    Returns the value used."""
    value = st.session_state.get(key)
    if value is None:
        return value
    inside = min(max(value, low), high)
    if inside != value:
        name = st.session_state.get("_url_spec", {}).get(key, (key,))[0]
        st.warning(f"The link's {name}={value} is outside {low}–{high} here; using {inside}.")
        st.session_state[key] = inside
    return inside


def flag(text: str) -> bool:
    """A checkbox's value in a link: written "1"/"0"; "true"/"false" (any case) read too."""
    said = str(text).strip().lower()
    if said not in ("1", "0", "true", "false"):
        raise ValueError(f"{text!r}: expected 1 or 0")
    return said in ("1", "true")


def as_list(text: str) -> list[str]:
    return [t for t in str(text).split(",") if t]


def _url_value(value) -> str:
    if isinstance(value, bool):  # a checkbox: str() would write "True", which ``int`` cannot read back
        return str(int(value))
    return ",".join(map(str, value)) if isinstance(value, (list, tuple)) else str(value)


def sync_url(spec: dict[str, tuple[str, type, object]] | None = None) -> dict[str, str]:
    """Rewrite the URL from the sidebar and the page's widgets; returns the parameters."""
    params = {name: _url_value(st.session_state[key]) for key, name in URL_NAMES.items() if key in st.session_state}
    for key, (name, _cast, _default) in (spec or {}).items():
        if key in st.session_state and st.session_state[key] not in (None, "", []):
            params[name] = _url_value(st.session_state[key])
    if {k: st.query_params.get(k) for k in st.query_params} != params:
        st.query_params.from_dict(params)
    written = [w for w in st.session_state.get(_WRITTEN, []) if w != (_page(), params)]
    st.session_state[_WRITTEN] = [*written, (_page(), params)][-_KEEP_WRITES:]
    return params


def copy_link(params: dict[str, str]) -> None:
    """A box with this view's full address (its copy icon puts it on the clipboard)."""
    from urllib.parse import urlencode

    base = (st.context.url or "").split("?")[0]
    with st.popover("Copy link", icon=":material/link:"):
        st.caption("This address reopens exactly this view:")
        st.code(f"{base}?{urlencode(params)}", language=None, wrap_lines=True)


def page_header(title: str, caption: str, url_spec: dict):
    """Title, caption and URL state of a page; returns the column that holds its Copy-link box."""
    url_state(url_spec)
    head, link = st.columns([5, 1])
    head.title(title)
    st.caption(caption)
    return link


def link_onward(where, page: str, label: str, icon: str, **params) -> None:
    """A link to another page on the same collection and ranker, opening on ``params`` (those that
    are not None): how one page hands its passage or query on to the page that asks the next question."""
    from eqi_core.rankers import DEFAULT_RANKER
    from pages._sidebar import COLLECTION_KEY, RANKER_KEY

    base = {"collection": st.session_state[COLLECTION_KEY], "ranker": st.session_state.get(RANKER_KEY, DEFAULT_RANKER)}
    where.page_link(page, label=label, icon=icon, query_params=base | {k: str(v) for k, v in params.items() if v is not None})
