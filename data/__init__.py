"""The bundled NeurIPS 2025 sample corpus (installed as ``paperscope.data``)."""
