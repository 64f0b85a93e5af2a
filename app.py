"""Search-transparency workbench: the dashboard shell. Each page draws the shared sidebar itself
(pages/_sidebar.py), so collection and ranker choices follow the user from page to page."""
import os
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import streamlit as st

# the icon as a file the server serves: Streamlit fetches a ":material/...:" page icon from fonts.gstatic.com,
# a request to Google on every page view (and a blank tab icon offline)
st.set_page_config(page_title="EQI workbench", page_icon=str(Path(__file__).parent / "assets" / "favicon.png"), layout="wide")


@st.cache_resource(show_spinner=False)
def _warm_umap() -> bool:
    """Compile UMAP's numba kernels on a background thread once per server process, so the first
    trajectory map on the Latent traversal page does not wait for them."""
    from eqi_core.projection import warm_up

    warm_up(background=True)
    return True


_warm_umap()
navigation = st.navigation([
    st.Page("pages/collection.py", title="Collection", icon=":material/library_books:", default=True),
    st.Page("pages/exposure.py", title="Exposure", icon=":material/visibility:"),
    st.Page("pages/exposure_eval.py", title="Exposure evaluation", icon=":material/analytics:"),
    st.Page("pages/latent.py", title="Latent traversal", icon=":material/route:"),
    st.Page("pages/suggestions.py", title="Query suggestions", icon=":material/tips_and_updates:"),
    st.Page("pages/coverage.py", title="Ranker coverage", icon=":material/compare_arrows:"),
])
navigation.run()
