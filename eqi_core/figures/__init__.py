"""Pure figure functions: data in, plotly Figure out (no loading, no Streamlit)."""
