"""Search-transparency workbench: the dashboard shell (navigation + shared sidebar)."""
import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import streamlit as st

from pages._common import sidebar

st.set_page_config(page_title="EQI workbench", page_icon=":material/travel_explore:", layout="wide")

navigation = st.navigation([
    st.Page("pages/collection.py", title="Collection", icon=":material/library_books:", default=True),
])
sidebar()
navigation.run()
