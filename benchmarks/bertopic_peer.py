"""Our build against the peer, BERTopic's fit, on the same documents with the same model, side by side.

    .venv/bin/pip install bertopic   # the peer only; not a paperscope dependency
    .venv/bin/python -m benchmarks.bertopic_peer [--corpus FILE]

Two comparisons in one run: from text (BERTopic embeds with sentence-transformers on torch; we run
`paperscope build --no-cache`) and from the same precomputed embeddings (BERTopic's UMAP + HDBSCAN
+ c-TF-IDF against our map, clusters, names and keyword index). Prints a Markdown table and writes JSON.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

from benchmarks.common import parser as common_parser
from benchmarks.common import report


def main() -> None:
    """Run both tools and print the table."""
    parser = common_parser(__doc__, "bertopic_peer")
    parser.add_argument("--corpus", help="corpus file (default: the bundled sample)")
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    from bertopic import BERTopic
    from sentence_transformers import SentenceTransformer

    from paperscope import PaperIndex, locations
    from paperscope.embed.model import Encoder, bundled_model_path
    from paperscope.embed.text import embedding_texts
    from paperscope.index.build.keyword_fit import fit_keyword_index
    from paperscope.index.topics import topic_map

    inputs = [args.corpus] if args.corpus else [str(p) for p in locations.bundled_corpus()]
    folder = Path(tempfile.mkdtemp(prefix="paperscope-peer-")) / "index"
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "paperscope.ui.cli", "build", *inputs, "-o", str(folder), "--no-cache"],
        check=True,
        capture_output=True,
    )
    ours_from_text = time.perf_counter() - start
    index = PaperIndex.load(folder)
    docs, vectors = embedding_texts(index.papers), np.asarray(index.vectors)

    model = SentenceTransformer(str(bundled_model_path()), device="cpu")
    start = time.perf_counter()
    peer = BERTopic(embedding_model=model).fit(docs)
    peer_from_text = time.perf_counter() - start
    peer_topics = len(set(peer.topics_) - {-1})
    peer_outliers = sum(t == -1 for t in peer.topics_)

    start = time.perf_counter()
    BERTopic(embedding_model=model).fit(docs, vectors)
    peer_from_vectors = time.perf_counter() - start
    start = time.perf_counter()
    encode = Encoder(onnx_dir=locations.onnx_dir()).encode
    topic_map.topic_map(vectors, lambda rows: [docs[i] for i in rows], index.papers["id"].tolist(), encode)
    fit_keyword_index(docs)
    ours_from_vectors = time.perf_counter() - start

    ours = index.manifest.map.clusters
    results = {
        "papers": len(docs),
        "ours_from_text_s": ours_from_text,
        "peer_from_text_s": peer_from_text,
        "ours_from_vectors_s": ours_from_vectors,
        "peer_from_vectors_s": peer_from_vectors,
        "ours_topics": ours["count"],
        "ours_unclustered": ours["unclustered"],
        "peer_topics": peer_topics,
        "peer_outliers": peer_outliers,
    }
    report(
        [f"{len(docs):,} papers", "paperscope", "BERTopic", "ratio (BERTopic / paperscope)"],
        [
            [
                "from text: whole build / fit",
                f"{ours_from_text:.1f} s",
                f"{peer_from_text:.1f} s",
                f"{peer_from_text / ours_from_text:.2f}",
            ],
            [
                "from the same embeddings: map, clusters, names (+ our keyword index)",
                f"{ours_from_vectors:.1f} s",
                f"{peer_from_vectors:.1f} s",
                f"{peer_from_vectors / ours_from_vectors:.2f}",
            ],
            [
                "topics (unclustered papers)",
                f"{ours['count']} ({ours['unclustered']})",
                f"{peer_topics} ({peer_outliers})",
                "",
            ],
        ],
        results,
        args.json,
    )


if __name__ == "__main__":
    main()
