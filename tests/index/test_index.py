"""The index folder: build, load, lookups, cache, atomic writes, integrity checks."""

import gc
import json
import os
import shutil
import threading
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from paperscope import BuildSettings, PaperIndex, UserError, build_index, locations, settings
from paperscope.embed.text import embedding_texts
from paperscope.index.build import shards
from paperscope.index.common.papers import as_numpy
from paperscope.index.search.encoding import QueryEncoder
from paperscope.index.store import generations
from paperscope.index.store.generations import read_generation
from paperscope.index.store.manifest import FORMAT_VERSION, LongTextInfo, PresetInfo
from paperscope.limits import MAX_RESULTS
from paperscope.settings import Smoothing
from paperscope.ui import cli
from tests.conftest import paperscope
from tests.support.corpora import read_corpus


def test_folder_holds_vectors_faiss_metadata_and_manifest(sample_index_dir, sample_index):
    manifest = sample_index.manifest
    assert manifest.format_version == FORMAT_VERSION and manifest.count == 38
    assert manifest.dimension == 384
    assert manifest.model.name == "sentence-transformers/all-MiniLM-L6-v2"
    assert len(manifest.model.fingerprint) == 16
    assert manifest.long_text == LongTextInfo(strategy="mean", long_texts=17, max_tokens=254)
    assert manifest.preset == PresetInfo(  # below 1,000 papers: fp32, the whole of each text
        name="exact", how="chosen by size: fewer than 1,000 papers", quantize=None, long_text="mean"
    )
    assert set(manifest.files) >= {"faiss.index", "papers.arrow", "smoothing_neighbours.npy"}
    assert "vectors.npy" not in manifest.files  # a flat FAISS index's storage is the vectors
    assert set(manifest.versions) >= {"faiss-cpu", "numpy", "sentence-transformers"}
    vectors = sample_index.vectors
    assert vectors.dtype == np.float32 and vectors.shape == (38, 384) and not vectors.flags.writeable
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert sample_index.papers["id"].is_unique and len(sample_index.papers) == 38


@pytest.mark.slow
def test_rows_of_vectors_and_metadata_agree(sample_index, encoder):
    row = 7
    text = sample_index.papers["abstract"][row]
    np.testing.assert_allclose(sample_index.vectors[row], encoder.encode([text])[0], atol=1e-5)
    assert sample_index.search(text, k=1).to_pandas()["id"][0] == sample_index.papers["id"][row]


def test_similar_excludes_the_paper_and_scores_are_cosines(sample_index):
    paper_id = sample_index.papers["id"][0]
    results = sample_index.similar(paper_id, k=5, mode="dense").to_pandas()
    assert results["rank"].tolist() == [1, 2, 3, 4, 5]
    assert paper_id not in results["id"].tolist()
    expected = sample_index.vectors[[int(sample_index.rows(i)[0]) for i in results["id"]]] @ sample_index.vectors[0]
    np.testing.assert_allclose(results["score"], expected, atol=1e-5)
    assert (np.diff(results["score"]) <= 1e-7).all()
    assert {"title", "abstract", "venue", "source"} <= set(results.columns)
    hybrid = sample_index.similar(paper_id, k=5).to_pandas()
    np.testing.assert_allclose(
        hybrid["cosine"],
        sample_index.vectors[[int(sample_index.rows(i)[0]) for i in hybrid["id"]]] @ sample_index.vectors[0],
        atol=1e-5,
    )
    assert len(sample_index.similar(paper_id, k=1000).to_pandas()) == 37  # clamped to the corpus


def test_free_text_search_finds_the_topic(sample_index):
    results = sample_index.search("speculative decoding to accelerate diffusion transformers", k=3).to_pandas()
    assert results["title"][0].startswith("ASDSV")
    graph = sample_index.search("graph neural networks message passing", k=3).to_pandas()
    assert all("GNN" in abstract or "graph" in abstract.lower() for abstract in graph["abstract"])


def test_unknown_id_suggests_close_ids_and_titles(sample_index):
    real = sample_index.papers["id"][0]
    with pytest.raises(UserError, match=f"did you mean {real}"):
        sample_index.similar(real[:-1] + "x").to_pandas()
    with pytest.raises(UserError, match=r"did you mean .*Jenga"):
        sample_index.similar("Jenga").to_pandas()


@pytest.mark.parametrize("k", [0, -3, 2.5, "10", True, MAX_RESULTS + 1])
def test_bad_k_is_a_user_error(sample_index, k):
    with pytest.raises(UserError, match="k must be a whole number from 1 to 1,000"):
        sample_index.similar(sample_index.papers["id"][0], k=k).to_pandas()


def test_one_limit_on_k_for_python_the_command_line_and_the_service():
    from paperscope.ui import service, service_library

    assert service.MAX_K == MAX_RESULTS == 1_000
    assert service_library.RecommendRequest.model_fields["k"].metadata[-1].le == MAX_RESULTS
    lookups = cli.make_parser()._subparsers._group_actions[0].choices
    for command in ("similar", "search", "recommend", "bridges"):
        assert "1 to 1,000" in lookups[command].format_help(), command


@pytest.mark.parametrize("query", ["", "   \n\t ", "\x00\x01\x02", "x" * 100_000])
def test_bad_queries_are_user_errors(sample_index, query):
    with pytest.raises(UserError, match="query"):
        sample_index.search(query).to_pandas()


@pytest.mark.slow
def test_rebuild_with_five_new_abstracts_embeds_exactly_five(tmp_path):
    build_index(locations.bundled_corpus(), tmp_path / "first")
    extra = tmp_path / "extra.txt"
    extra.write_text(
        "\n\n".join(f"Paper {i} studies protein design number {i} with language models." for i in range(5))
    )
    report = build_index([*locations.bundled_corpus(), extra], tmp_path / "second")
    assert (report.count, report.embedded) == (43, 5)
    again = build_index([*locations.bundled_corpus(), extra], tmp_path / "second")
    assert again.embedded == 0
    assert len(PaperIndex.load(tmp_path / "second")) == 43


@pytest.mark.slow
def test_a_build_in_many_shards_equals_a_build_in_one(sample_index, tmp_path, monkeypatch):

    monkeypatch.setattr(shards, "SHARD_ROWS", 10)  # 38 papers: four shards instead of one
    progress = []
    build_index(
        locations.bundled_corpus(), tmp_path / "sharded", on_progress=lambda fraction, stage: progress.append(fraction)
    )
    sharded = PaperIndex.load(tmp_path / "sharded")
    assert sharded.papers.drop(columns="added").equals(sample_index.papers.drop(columns="added"))  # but when built
    np.testing.assert_array_equal(sharded.vectors, sample_index.vectors)
    assert (
        read_generation(sharded.folder).keyword.matrix != read_generation(sample_index.folder).keyword.matrix
    ).nnz == 0
    assert sharded.manifest.corpus.fingerprint == sample_index.manifest.corpus.fingerprint
    assert progress == sorted(progress) and progress[-1] == 1.0
    assert not [p for p in (tmp_path / "sharded").iterdir() if p.name.startswith(".tmp")]  # the shards are gone


@pytest.mark.slow
def test_a_build_reads_each_file_once_with_progress_on_bytes(tmp_path):
    """A named pipe can be read only once: a build that read its files twice (say, to count
    papers first) would wait for a second writer forever."""
    pipe, text = tmp_path / "corpus.txt", "\n\n".join(p.read_text() for p in locations.bundled_corpus())
    os.mkfifo(pipe)
    writer = threading.Thread(target=pipe.write_text, args=(text,), daemon=True)
    writer.start()
    fractions = []
    report = build_index([pipe], tmp_path / "index", on_progress=lambda fraction, stage: fractions.append(fraction))
    writer.join(timeout=5)
    (tmp_path / "plain.txt").write_text(text)
    assert report.count == len(read_corpus([tmp_path / "plain.txt"])[0]) and not writer.is_alive()
    assert fractions == sorted(fractions) and fractions[-1] == 1.0


def _copy(folder, tmp_path):
    target = tmp_path / "copy"
    shutil.copytree(folder, target)
    return target, target / generations.current_generation_name(target)


@pytest.mark.slow
def test_a_failed_rebuild_leaves_the_previous_index_answering(sample_index_dir, tmp_path):
    folder, generation = _copy(sample_index_dir, tmp_path)
    (tmp_path / "empty.csv").write_text("")
    with pytest.raises(UserError, match="empty"):
        build_index([tmp_path / "empty.csv"], folder)
    (folder / ".tmp-deadbeef").mkdir()  # what a killed build leaves behind
    (folder / "gen-killed").mkdir()
    assert generations.current_generation_name(folder) == generation.name
    assert len(PaperIndex.load(folder).similar(PaperIndex.load(folder).papers["id"][0], k=3).to_pandas()) == 3
    build_index(locations.bundled_corpus(), folder)
    assert sorted(p.name for p in folder.iterdir() if p.name.startswith(("gen-", ".tmp-"))) == [
        generations.current_generation_name(folder)
    ]


def test_a_second_build_into_the_same_folder_fails_clearly(tmp_path):
    with generations.build_lock(tmp_path / "busy"), pytest.raises(UserError, match="another build is writing"):
        build_index(locations.bundled_corpus(), tmp_path / "busy")


@pytest.mark.parametrize(
    "damage, message",
    [
        ("truncate", "truncated"),
        ("delete", "missing"),
        ("version", "index format 99"),
        ("no-pointer", "not a paperscope index"),
        ("neighbours", "smoothing_neighbours.npy: names papers the index lacks"),
    ],
)
def test_damaged_index_is_a_clear_error(sample_index_dir, tmp_path, damage, message):
    folder, generation = _copy(sample_index_dir, tmp_path)
    if damage == "truncate":
        faiss_file = generation / "faiss.index"
        faiss_file.write_bytes(faiss_file.read_bytes()[:-100])
    elif damage == "delete":
        (generation / "papers.arrow").unlink()
    elif damage == "neighbours":  # a row past the last paper: a search would fail on it
        neighbours = generation / "smoothing_neighbours.npy"
        np.save(neighbours, np.load(neighbours) + 38)
    elif damage == "version":
        manifest = json.loads((generation / "manifest.json").read_text())
        (generation / "manifest.json").write_text(json.dumps({**manifest, "format_version": 99}))
    else:
        (folder / "CURRENT").unlink()
    with pytest.raises(UserError, match=message) as error:
        PaperIndex.load(folder)
    assert "rebuild" in str(error.value) or "build one" in str(error.value)


@pytest.mark.parametrize("file_name", ["keyword.csr.data.npy", "papers.arrow", "keyword.csc.data.npy", "faiss.index"])
def test_verify_finds_a_flipped_byte_that_loading_does_not_read(sample_index_dir, tmp_path, file_name):
    folder, generation = _copy(sample_index_dir, tmp_path)
    assert "match their checksums" in paperscope("verify", "--index", folder, here=True, check=True).stdout
    data = bytearray((generation / file_name).read_bytes())
    data[len(data) // 2] ^= 0xFF  # inside the data, not a header: a bit rot loading cannot see
    (generation / file_name).write_bytes(bytes(data))
    PaperIndex.load(folder)  # loading checks sizes and shapes only: milliseconds at any size
    corrupted = paperscope("verify", "--index", folder, here=True)
    assert corrupted.returncode == 2
    assert corrupted.stderr.strip().splitlines() == [
        f"paperscope: error: {generation / file_name}: checksum does not match the manifest (corrupted); "
        f"rebuild the index (build one with: paperscope build -o {folder})"
    ]


def _memory_mapped(array) -> bool:
    while isinstance(array, np.ndarray):
        if isinstance(array, np.memmap):
            return True
        array = array.base
    return False


def _mapped_from(array: np.ndarray) -> str | None:
    """The file whose mapping into this process holds ``array``'s memory, if any."""
    address = array.__array_interface__["data"][0]
    for line in Path("/proc/self/maps").read_text().splitlines():
        span, *_, path = line.split(maxsplit=5)
        low, high = (int(bound, 16) for bound in span.split("-"))
        if low <= address and address + array.nbytes <= high:
            return path.strip()
    return None


def test_a_loaded_index_reads_its_arrays_memory_mapped(sample_index_dir):
    sample_index = PaperIndex.load(sample_index_dir)
    sample_index.similar(sample_index.ids()[0]).to_pandas()
    sample_index.search("diffusion transformers").to_pandas()
    assert _mapped_from(sample_index.vectors) == str(
        sample_index.folder / generations.current_generation_name(sample_index.folder) / generations.FAISS_FILE
    )  # the FAISS index's flat storage, read memory-mapped: the vectors, no copy beside it
    assert _memory_mapped(read_generation(sample_index.folder).smoothed.neighbours)
    assert all(
        _memory_mapped(getattr(read_generation(sample_index.folder).keyword.matrix, name))
        for name in ("data", "indices", "indptr")
    )
    assert _memory_mapped(read_generation(sample_index.folder).keyword.by_term.indices)
    assert "papers" not in sample_index.__dict__  # the DataFrame is decoded only when asked for


def test_as_numpy_reads_a_column_as_arrow_does(sample_index):
    """The app's map reads its columns with ``as_numpy`` (Arrow's ``to_numpy`` imports pandas): the
    same values and types, over chunks and slices, text as objects, a null as None or NaN."""
    numbers = pa.chunked_array([pa.array([1.5, 2.5, 3.5], pa.float32()).slice(1), pa.array([4.5], pa.float32())])
    assert as_numpy(numbers).dtype == np.float32 and as_numpy(numbers).tolist() == [2.5, 3.5, 4.5]
    small = pa.chunked_array([pa.array([-1, 7], pa.int16())])
    assert as_numpy(small).dtype == np.int16 and as_numpy(small).tolist() == [-1, 7]
    assert as_numpy(pa.chunked_array([["a", None], ["b"]])).tolist() == ["a", None, "b"]
    assert np.isnan(as_numpy(pa.chunked_array([[1.0, None]]))).tolist() == [False, True]
    assert len(as_numpy(pa.chunked_array([], pa.float64()))) == 0
    table = sample_index.table(columns=["x", "cluster", "title"])
    for name in table.column_names:
        assert as_numpy(table.column(name)).tolist() == table.column(name).to_numpy(zero_copy_only=False).tolist()


def test_the_vectors_outlive_the_index_they_came_from(sample_index_dir):
    vectors = PaperIndex.load(sample_index_dir).vectors  # the FAISS index's memory; the index itself is dropped
    gc.collect()
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


def test_a_different_model_is_refused_for_queries(sample_index_dir, tmp_path):
    folder, generation = _copy(sample_index_dir, tmp_path)
    manifest = json.loads((generation / "manifest.json").read_text())
    manifest["model"]["fingerprint"] = "0" * 16
    (generation / "manifest.json").write_text(json.dumps(manifest))
    index = PaperIndex.load(folder)
    assert len(index.similar(index.papers["id"][0], k=2).to_pandas()) == 2  # lookups by id need no model
    with pytest.raises(UserError, match="not the one this index was built with"):
        index.search("diffusion").to_pandas()


@pytest.mark.slow
def test_a_100000_character_abstract_is_embedded_whole(tmp_path, caplog):
    sentences = [f"Section {i} studies sparse attention for long documents in topic {i % 7}." for i in range(1500)]
    long_abstract = " ".join(sentences)[:100_000]
    corpus = tmp_path / "long.jsonl"
    corpus.write_text(
        json.dumps({"id": "long", "abstract": long_abstract})
        + "\n"
        + json.dumps({"id": "short", "abstract": "Protein folding with graph networks."})
        + "\n"
    )
    with caplog.at_level("INFO", logger="paperscope"):
        build_index([corpus], tmp_path / "index")
    assert any(line.startswith("1 of 2 texts are longer") for line in caplog.messages)
    index = PaperIndex.load(tmp_path / "index")
    assert len(index.papers["abstract"][0]) == 100_000
    assert index.search("sparse attention for long documents", k=1).to_pandas()["id"][0] == "long"


@pytest.mark.slow
def test_any_local_model_folder_is_accepted_and_recorded(tmp_path, encoder):
    model_copy = tmp_path / "my-model"
    shutil.copytree(encoder.path, model_copy)
    build_index(locations.bundled_corpus()[:1], tmp_path / "index", BuildSettings(model_path=model_copy))
    index = PaperIndex.load(tmp_path / "index")
    assert index.manifest.model.path == str(model_copy) and index.manifest.model.name == "my-model"
    assert index.manifest.model.fingerprint == encoder.fingerprint  # same weights, same fingerprint
    assert len(index.search("diffusion", k=2).to_pandas()) == 2
    with pytest.raises(UserError, match="not a sentence-transformers model folder"):
        build_index(locations.bundled_corpus(), tmp_path / "other", BuildSettings(model_path=tmp_path))


def test_a_failed_first_build_leaves_no_folder(tmp_path):
    (tmp_path / "empty.txt").write_text("")
    with pytest.raises(UserError):
        build_index([tmp_path / "empty.txt"], tmp_path / "new-index")
    assert not (tmp_path / "new-index").exists()


@pytest.mark.slow
def test_faiss_index_is_chosen_by_size_and_approximate_recall_is_measured(tmp_path):
    from paperscope.index.build.ann import EXACT_LIMIT, choose_factory

    assert choose_factory(EXACT_LIMIT) == "Flat" and choose_factory(EXACT_LIMIT + 1) == "HNSW32,Flat"
    assert choose_factory(10, "IVF4,Flat") == "IVF4,Flat"
    build_index(locations.bundled_corpus(), tmp_path / "hnsw", BuildSettings(faiss_factory="HNSW32,Flat"))
    index = PaperIndex.load(tmp_path / "hnsw")
    search = index.manifest.search
    assert search.faiss == "HNSW32,Flat" and search.recall_at_10 >= 0.95 and search.ef_search >= 32
    paper_id = index.papers["id"][0]
    assert len(index.similar(paper_id, k=5, mode="dense").to_pandas()) == 5
    with pytest.raises(UserError, match="not a FAISS index_factory string"):
        build_index(locations.bundled_corpus(), tmp_path / "bad", BuildSettings(faiss_factory="Nonsense99"))
    with pytest.raises(UserError, match="cannot be trained on 38 papers"):
        build_index(locations.bundled_corpus(), tmp_path / "bad", BuildSettings(faiss_factory="IVF256,Flat"))


def query_model(index: PaperIndex):
    """The model ``index`` embeds queries with, as its search room loads it."""
    return QueryEncoder(index.manifest.model, index.manifest.long_text.strategy).encoder


@pytest.mark.slow
def test_int8_build_records_its_fidelity_and_queries_with_the_same_model(tmp_path, encoder):
    build_index(locations.bundled_corpus(), tmp_path / "int8", BuildSettings(quantize="int8"))
    index = PaperIndex.load(tmp_path / "int8")
    model = index.manifest.model
    assert model.quantize == "int8" and model.backend == "onnx"
    fidelity = model.int8_fidelity
    assert fidelity["sample"] == 38 and fidelity["cosine_mean"] >= 0.99 and fidelity["top10_overlap"] >= 0.85
    exact = encoder.encode(embedding_texts(index.papers), long_text="mean")  # fp32, the same texts
    cosines = (np.asarray(index.vectors) * exact).sum(axis=1)
    assert cosines.mean() == pytest.approx(fidelity["cosine_mean"], abs=2e-3)
    assert query_model(index).quantize == "int8"
    assert (
        index.search("speculative decoding for diffusion transformers", k=1).to_pandas()["title"][0].startswith("ASDSV")
    )


@pytest.mark.slow
def test_the_fast_preset_embeds_the_first_126_word_pieces_with_int8_and_queries_alike(tmp_path, encoder):
    build_index(locations.bundled_corpus(), tmp_path / "fast", BuildSettings(preset="fast"))
    index = PaperIndex.load(tmp_path / "fast")
    assert index.manifest.preset == PresetInfo(
        name="fast", how="asked for", quantize="int8", long_text="truncate", window=126
    )  # fmt: skip
    assert index.manifest.long_text.max_tokens == 126
    assert (query_model(index).quantize, query_model(index).window) == ("int8", 126)
    first = index.papers["abstract"][0]
    window, pieces = query_model(index).windows(first)[0]
    assert pieces <= 126 and first.startswith(window)
    assert index.search(first, k=1, mode="dense").to_pandas()["id"][0] == index.papers["id"][0]
    assert (
        index.search("speculative decoding for diffusion transformers", k=1).to_pandas()["title"][0].startswith("ASDSV")
    )


@pytest.mark.slow
def test_a_large_corpus_takes_the_fast_preset_unless_exact_is_asked_for(tmp_path, monkeypatch, caplog):
    monkeypatch.setattr(settings, "AUTO_FAST_PAPERS", 30)  # the sample's 38 papers count as large here
    with caplog.at_level("INFO", logger="paperscope"):
        build_index(locations.bundled_corpus(), tmp_path / "auto")
    assert PaperIndex.load(tmp_path / "auto").manifest.preset.how == "chosen by size: 30 papers or more"
    said = [r.getMessage() for r in caplog.records if "embedding with the fast preset" in r.getMessage()]
    assert len(said) == 1 and "30 papers or more" in said[0] and "--preset exact" in said[0]  # which, and why
    build_index(locations.bundled_corpus(), tmp_path / "exact", BuildSettings(preset="exact"))
    assert PaperIndex.load(tmp_path / "exact").manifest.preset.name == "exact"
    with pytest.raises(UserError, match="--preset sets --long-text"):
        build_index(locations.bundled_corpus(), tmp_path / "both", BuildSettings(preset="fast", quantize="int8"))


@pytest.mark.slow
def test_a_middle_sized_corpus_takes_the_balanced_preset_and_a_vector_is_its_text_alone(tmp_path, monkeypatch, caplog):
    monkeypatch.setattr(settings, "AUTO_BALANCED_PAPERS", 30)  # the sample's 38 papers: middle-sized here
    with caplog.at_level("INFO", logger="paperscope"):
        build_index(locations.bundled_corpus(), tmp_path / "auto")
    index = PaperIndex.load(tmp_path / "auto")
    how = "chosen by size: 30 to 19,999 papers"
    assert index.manifest.preset == PresetInfo(name="balanced", how=how, quantize="int8", long_text="truncate")
    assert index.manifest.long_text.max_tokens == 254 and query_model(index).quantize == "int8"
    said = [r.getMessage() for r in caplog.records if "embedding with the balanced preset" in r.getMessage()]
    assert len(said) == 1 and "30 to 19,999 papers" in said[0] and "--preset exact" in said[0]  # which, and why
    # int8 scales each token alone: a paper's vector does not depend on the papers batched with it
    texts = embedding_texts(index.papers)
    alone = np.stack([query_model(index).encode([text], long_text="truncate")[0] for text in texts[:5]])
    np.testing.assert_allclose(np.asarray(index.vectors[:5]), alone, atol=1e-5)


@pytest.mark.slow
def test_hybrid_ranks_on_smoothed_vectors_and_dense_on_raw_ones(sample_index_dir, tmp_path):
    smoothed = PaperIndex.load(sample_index_dir)
    assert smoothed.manifest.search.smoothing == Smoothing() and read_generation(smoothed.folder).smoothed is not None
    norms = np.linalg.norm(np.asarray(read_generation(smoothed.folder).smoothed), axis=1)
    assert np.allclose(norms, 1, atol=1e-5) and not np.allclose(
        read_generation(smoothed.folder).smoothed, smoothed.vectors
    )
    build_index(locations.bundled_corpus(), tmp_path / "raw", BuildSettings(smoothing=None))
    raw = PaperIndex.load(tmp_path / "raw")
    assert (
        read_generation(raw.folder).smoothed is None
        and not (tmp_path / "raw" / generations.current_generation_name(tmp_path / "raw"))
        .joinpath(generations.NEIGHBOURS_FILE)
        .exists()
    )
    paper_id = raw.papers["id"][0]
    dense = {
        index: index.similar(paper_id, mode="dense").to_pandas().drop(columns="added") for index in (smoothed, raw)
    }
    assert dense[smoothed].equals(dense[raw])  # the same papers and scores (each build has its own time)
    with_smoothing, without = smoothed.similar(paper_id, k=5).to_pandas(), raw.similar(paper_id, k=5).to_pandas()
    assert np.allclose(
        with_smoothing["cosine"],
        raw.similar(paper_id, k=37).to_pandas().set_index("id").loc[with_smoothing["id"], "cosine"],
    )
    assert not np.allclose(with_smoothing["score"], without.set_index("id").reindex(with_smoothing["id"])["score"])


def test_a_smoothed_vector_is_its_paper_plus_half_the_mean_of_its_three_nearest_others(sample_index_dir):
    generation = read_generation(sample_index_dir)  # the index keeps the neighbours; the vectors are made
    vectors = np.asarray(generation.vectors)
    cosines = vectors @ vectors.T
    np.fill_diagonal(cosines, -np.inf)
    nearest = np.argsort(-cosines, axis=1, kind="stable")[:, :3]
    expected = vectors + 0.5 * vectors[nearest].mean(axis=1)
    expected /= np.linalg.norm(expected, axis=1, keepdims=True)
    smoothed = generation.smoothed
    np.testing.assert_allclose(np.asarray(smoothed), expected, atol=1e-6)
    np.testing.assert_allclose(smoothed[[5, 2]], expected[[5, 2]], atol=1e-6)
    np.testing.assert_allclose(smoothed[7], expected[7], atol=1e-6)
    np.testing.assert_allclose(smoothed[np.arange(38) % 2 == 0], expected[::2], atol=1e-6)
