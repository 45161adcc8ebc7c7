"""The script Streamlit runs for ``paperscope app``: the dashboard itself is the module
``paperscope.ui.app``, imported once per server and compiled ahead like any module. Streamlit
compiles the script it runs itself, once per server, on the first page (with its "magic", an AST
pass): the dashboard's 750 lines took 0.35 s of a first page at 50,000 papers, these three nothing."""

from paperscope.ui.app import main

main()
