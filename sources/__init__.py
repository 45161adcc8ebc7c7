"""Corpus files from the services researchers take papers from: ``paperscope fetch``.

Each source is a module (``arxiv_oai``, ``arxiv_api``, ``openreview``, ``openalex``) that drives the
client made for its service and turns each record into a paper's JSON line, with every useful field
the service has as columns. What they share: the polite HTTP session (``http``: one request at a
time, the delay each service asks for, ``Retry-After`` honoured, a contact in the user agent) and
the resumable file (``state``: pages appended and committed with the cursor that follows them, so
that a killed fetch goes on from the last page it kept).
"""
