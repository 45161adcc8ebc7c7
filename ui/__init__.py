"""Interfaces over the index: the ``paperscope`` command line and the Streamlit app."""
