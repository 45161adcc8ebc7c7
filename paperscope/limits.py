"""Fixed limits and thresholds, grouped by the room that applies them: bounds on what a user gives,
on corpus files, on servers, and the thresholds measured once and kept (docs/benchmarks.md gives
the measurements). None of them is a setting a user chooses (those are ``paperscope.settings``);
importing this module costs nothing.
"""

from __future__ import annotations

import os

# --- what a user gives: lookups, queries, names -----------------------------------------------
MAX_RESULTS = 1_000  # k of every lookup (Python, the command line, the service): 1 to this
MAX_QUERY_CHARS = 20_000  # characters of a query (about ten abstracts)
MAX_NAME_CHARS = 200  # a name a person gives (a topic, a seed topic, a collection): 1 to this many characters

# --- corpus files (embed/streams.py, embed/readers/) ------------------------------------------
# Every reader streams, record by record; a .gz is decompressed as it is read. A .gz whose output
# passes GZIP_MAX_RATIO times the compressed bytes read so far, once more than GZIP_RATIO_FROM_BYTES
# came out, is refused as a compression bomb: JSON lines like the arXiv snapshot's compress 3 to 5
# times (2.9 for 300,000 generated records of 1 KB), a bomb 1,000 times; the first 32 MiB are let
# through whatever their ratio (a small file of repeated lines), so a bomb is stopped with at most
# 32 MiB out (and 100 times the compressed bytes: the app's 50 MB upload, 5 GB).
GZIP_MAX_RATIO = 100
GZIP_RATIO_FROM_BYTES = 32 * 1024**2
WHOLE_FILE_MAX_BYTES = 2 * 1024**3  # decompressed bytes of a format read whole (BibTeX, RIS, CSL-JSON, a JSON object)
MAX_LINE_BYTES = 64 * 1024**2  # one line of a text format (a JSON line, a CSV row's line)
MAX_ABSTRACT_CHARS = 200_000  # longer "abstracts" are whole papers pasted by mistake
STREAM_HEAD_RECORDS = 1_000  # records read before the fields are chosen: their keys name the columns...
STREAM_HEAD_BYTES = 16 * 1024**2  # ...or fewer, those in the first 16 MiB (the head is held until then)
PARQUET_BATCH_ROWS = 10_000  # rows of a Parquet file converted at a time
# A file of JSON lines this large is mapped by several processes (Reading.workers), READ_BLOCK_CHARS of
# lines at a time: starting them costs ~1 s each, a 64 MiB file of the arXiv snapshot's 4 s to read alone.
PARALLEL_READ_BYTES = 64 * 1024**2
READ_BLOCK_CHARS = 4 * 1024**2
READ_WORKERS = min(os.cpu_count() or 1, 8)  # a build's (and add's) reading processes

# --- builds -------------------------------------------------------------------------------------
# Presets chosen by size, by measurement (benchmarks/presets.py, benchmarks/presets.json; docs/benchmarks.md,
# "Build presets"): an int8 preset is the default at a size where it loses at most 0.01 of IJCAI P@10 and
# of topic AMI (coarse and fine, the mean over 5 layout seeds) against "exact". From this many papers a
# build takes "balanced", which passes at every size measured from here (1,000: P@10 -0.000, AMI +0.012
# coarse, 0.000 fine; 2,000: +0.001, +0.020, -0.001; 2,690: +0.002, -0.005, -0.008; 20,000: -0.002,
# +0.005, +0.012); at 300 it loses more (+0.004, -0.017, -0.013), so a smaller build takes exact.
AUTO_BALANCED_PAPERS = 1_000
# From this many papers a build takes "fast" (20,000: P@10 +0.012, AMI -0.007 coarse, +0.005 fine); below it
# fast does not pass at every size (2,690: P@10 -0.008, AMI -0.019 coarse, -0.016 fine).
AUTO_FAST_PAPERS = 20_000
# The int8 presets embed this many times as fast as the exact one (300 IJCAI abstracts, one process), for
# IJCAI P@10 (similar, hybrid) of exact then fast (the whole corpus, 2,690 papers). A build that would
# embed with the exact preset for over a minute quotes them.
FAST_SPEEDUP = 4.3
BALANCED_SPEEDUP = 1.9
FAST_P_AT_10 = (0.544, 0.536)
SEED_SURE = 0.45  # with its words, a paper this close joins whatever its seed's spread (a seed of many papers)

# --- analyses -----------------------------------------------------------------------------------
DUPLICATE_THRESHOLD = 0.92  # cosine similarity from which two papers are near-duplicates (docs/benchmarks.md)
# A saved search's matches (``paperscope watch``): papers whose cosine with its query (its text's vector, or the
# mean of its papers') is at least this. Measured on IJCAI 2021-24 (2,690 papers, 5 labelled areas; every paper
# as a one-paper watch and every title as a text watch, benchmarks/watch_threshold.py): the lowest similarity
# from which every 0.02-wide band has a majority of matches in the query paper's area, 0.54 for both kinds (at
# 0.50: 45% and 47%); a query gets ~4 (ids) and ~2 (text) matches per 1,000 papers above it (docs/recommend.md).
WATCH_THRESHOLD = 0.54

# --- servers shared with a group (docs/serving.md, "For a group") ------------------------------
# The service's requests a minute per token (per client address without tokens), in each worker
# process; the app's uploads. Both are the defaults of a server other machines reach; on a loopback
# address there is no limit unless asked (settings.AccessSettings.on).
RATE_LIMIT_PER_MINUTE = 120  # two a second, sustained; a burst of 120 at once (a page of lookups)
MAX_UPLOAD_MB = 50  # one upload to the app (Streamlit's server.maxUploadSize too)
UPLOADS_PER_HOUR = 10  # builds from uploads per app server in any hour: each keeps both cores busy a while
