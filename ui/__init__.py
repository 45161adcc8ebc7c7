"""The command line (``cli``), the Streamlit dashboard (``app``) and map drawing (``mapplot``)."""
