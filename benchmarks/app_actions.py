"""Each action of the app timed in a browser, from the user's action to its result drawn, two checkouts side by side.

    .venv/bin/python -m benchmarks.app_actions --index DIR [--other-python /tmp/main53/.venv/bin/python]
                                               [--rounds 5] [--data DIR] [--json benchmarks/app_actions.json]

Each round starts a fresh `paperscope app` server of each checkout on the index (this one with this
Python; the other, usually today's main, with --other-python: `OTHER -m paperscope.ui.cli app`),
the checkouts taking turns to go first round by round, and clicks through one sequence in headless
Chromium at 1440x900, each step timed from the action to the DOM event that shows its result:

- first page usable: from opening the page (right after the server answers its health check) to
  the search box enabled and the map drawn (`.ps-map[data-ready='1']`);
- search: a paper's title typed in "Search by text", Enter, until the result cards show the
  index's own answer (`PaperIndex.search`, in order) and the map stars the query (the server's
  first query: it loads the query model unless the app did before);
- search again: another paper's title, the same way (the query model loaded);
- why similar: the first card's "Abstract and why similar" opened until its "Shared terms" are drawn;
- pick a paper: a click on a map point until the cards show that paper's nearest papers
  (`PaperIndex.similar`) and the map stars it with a line to each;
- show a collection: "Show a collection" (in "Collections (N)") set to the benchmark's collection
  (made from the index's papers if the index has none in that checkout's data folder) until the
  cards show its recommendations and the map its members as diamonds;
- topic level: the sidebar's "Topic level" set to fine until the map is drawn at the fine level;
- colour by a column: "Colour the map by" set to COLUMN until the map's legend names it;
- filter by a column: in "Filter by a column", Column set to COLUMN (not timed), then one of its
  values picked until the cards show the collection's recommendations among the papers with that value.

Then start-up: from launching `paperscope app` on the bundled sample (no --index) to its first page
usable, a fresh server each round. Each checkout has its own data folder (DATA/this, DATA/other:
the sample is built there once by each checkout's own code; the model's ONNX export is linked from
the usual data folder). The expected answers come from this checkout's PaperIndex on the same
index. Beside each step: how long of it the app's script ran (the page's script state "running",
from Streamlit's `data-test-script-state`: the Python of the rerun and its sending), the rest being
the browser's drawing and the wait before the rerun. Prints a Markdown table (medians of the
rounds, other | this | this ÷ other | script running) and writes JSON.

What the steps rely on in the page (keep them when the app changes): the labels "Search by text",
"Abstract and why similar" (an expander's summary), "Collections (" (an expander's summary),
"Show a collection", "Topic level" (a radio with the option "fine"), "Colour the map by",
"Filter by a column" (an expander), "Column" and "COLUMN: papers with any of these values" (select
boxes and a multiselect, options by their text); the sidebar's `stExpandSidebarButton`;
`[data-testid='stApp'][data-test-script-state]`; a result card's `.ps-result span[title]` (its paper
id, cards in rank order) and `.ps-why` ("Shared terms:") inside the card's `stExpander`;
`.ps-selected`, `.ps-collection`; the map `.ps-map` with `data-ready`, its object
`parentElement.__paperscopeMap` (`px`, `py`, `x`, `y`, `nearest`, `count`, `star`, `neighbours`,
`members`, `pending`, `payload.level`) and its legend `.ps-map .ps-legend b`.
"""

from __future__ import annotations

import contextlib
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from benchmarks.common import parser as common_parser
from benchmarks.common import report
from tests.support.servers import CHROMIUM, CHROMIUM_FLAGS, free_port

COLLECTION = "app-actions benchmark"
STEP_TIMEOUT_MS = int(os.environ.get("STEP_TIMEOUT_MS", 120_000))
START_UP = ("start-up: server healthy", "start-up: first page usable")
SIDEBAR_FIELDS = ("venue", "categories")  # filtered by the sidebar's own boxes, not "Filter by a column"
STEPS = (
    "first page usable",
    "search",
    "search again",
    "why similar",
    "pick a paper",
    "show a collection",
    "topic level",
    "colour by a column",
    "filter by a column",
)
MAP = "document.querySelector('.ps-map').parentElement.__paperscopeMap"
IDLE = "[data-testid='stApp'][data-test-script-state='notRunning']"
USABLE = """() => { const box = document.querySelector("input[aria-label='Search by text']");
  return box && !box.disabled && document.querySelector(".ps-map[data-ready='1']") !== null; }"""
CARDS_ARE = """(ids) => { const shown = [...document.querySelectorAll('.ps-result span[title]')].map((s) => s.title);
  return shown.length === ids.length && shown.every((id, i) => id === ids[i]); }"""

# In each page from its start: the app's script state (Streamlit's running, notRunning…) as it changes, with the time.
SCRIPT_LOG = """new MutationObserver((changes) => { for (const change of changes)
    (window.__psScriptLog ||= []).push([change.target.dataset.testScriptState, performance.now()]); })
  .observe(document, {subtree: true, attributes: true, attributeFilter: ['data-test-script-state']});"""
# Seconds the script ran between ``since`` (the page's performance.now()) and now.
SCRIPT_RUNNING = """(since) => { const now = performance.now(); let total = 0, begun = null;
  for (const [state, at] of window.__psScriptLog || []) {
    if (state === 'running' || state === 'rerunRequested') begun ??= Math.max(at, since);
    else if (begun !== null) { total += Math.max(at - begun, 0); begun = null; }
  }
  return (begun === null ? total : total + now - begun) / 1000; }"""


@dataclass
class Checkout:
    """A checkout to time: its name in the table, its Python, its data folder."""

    name: str
    python: str
    data: Path

    def command(self, *arguments: str) -> list[str]:
        """A paperscope command line of this checkout."""
        return [self.python, "-m", "paperscope.ui.cli", *arguments]

    def env(self) -> dict:
        """The environment its commands run in: its own data folder."""
        return os.environ | {"PAPERSCOPE_HOME": str(self.data)}


@dataclass
class Corpus:
    """What the steps ask of the index, and its own answers (from this checkout's PaperIndex)."""

    folder: str
    index: object
    queries: tuple[str, str]
    column: str
    values: list = field(default_factory=list)


@contextlib.contextmanager
def app(checkout: Checkout, index_dir: str | None, timeout: float = 300.0):
    """A fresh headless ``paperscope app`` of ``checkout`` (on ``index_dir``; None: the bundled
    sample); yields its URL once it answers its health check, stops it after."""
    from paperscope.ui.launch import wait_until_healthy

    port = free_port()
    where = ["--index", index_dir] if index_dir else []
    process = subprocess.Popen(
        checkout.command("app", *where, "--port", str(port), "--headless"),
        env=checkout.env(),
        cwd=checkout.data,  # not this repository: `-m` would import its modules before the other checkout's
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        if not wait_until_healthy(url, process, timeout, health="/_stcore/health"):
            raise RuntimeError(f"{checkout.name}: paperscope app did not answer within {timeout} s")
        yield url
    finally:
        process.terminate()
        process.wait(timeout=30)


def prepare(checkout: Checkout, corpus: Corpus, ids: list[str]) -> None:
    """Make ``checkout``'s data folder ready: the sample built by its code, the model's export linked,
    the benchmark's collection of ``ids`` on the index (when it has none), the model loaded once."""
    from paperscope import locations

    checkout.data.mkdir(parents=True, exist_ok=True)
    onnx = checkout.data / "onnx"
    if not onnx.exists() and locations.onnx_dir().is_dir():
        onnx.symlink_to(locations.onnx_dir())

    def run(*arguments: str) -> str:
        done = subprocess.run(checkout.command(*arguments), env=checkout.env(), cwd=checkout.data,
                              capture_output=True, text=True)  # fmt: skip
        if done.returncode:
            raise RuntimeError(f"{checkout.name}: paperscope {' '.join(arguments)}: {done.stderr.strip()[-2000:]}")
        return done.stdout

    run("info")  # builds the bundled sample on first use
    if COLLECTION not in run("collection", "list", "--index", corpus.folder):
        run("collection", "create", COLLECTION, *ids, "--index", corpus.folder)
    run("search", corpus.queries[0], "-k", "1", "--index", corpus.folder)


def ids_of(table) -> list[str]:
    """The ids of a lookup's answer, best first."""
    return [str(i) for i in table.to_pandas()["id"]]


def timed(page, times: dict, step: str, action, condition: str, arg=None) -> None:
    """Seconds from ``action()`` to ``condition`` (a JavaScript function of ``arg``) being true in the
    page, into ``times[step]``, and how long of it the app's script ran (``SCRIPT_LOG``) into
    ``times[step + ": script running"]``."""
    since = page.evaluate("() => performance.now()")
    start = time.perf_counter()
    action()
    page.wait_for_function(condition, arg=arg, timeout=STEP_TIMEOUT_MS, polling="raf")
    times[step] = round(time.perf_counter() - start, 3)
    times[f"{step}: script running"] = round(page.evaluate(SCRIPT_RUNNING, since), 3)


class Missed(Exception):
    """An option's list closed (a rerun) before the click on the option landed."""


def choose(page, label: str, option: str, within=None):
    """What picks ``option`` in the select box or multiselect ``label``: its list opened here (not
    timed; again if a rerun closes it first); the returned function clicks the option (``Missed``
    when it cannot)."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    box = (within or page).get_by_role("combobox", name=label)
    choice = page.get_by_role("option", name=option, exact=True)

    def click() -> None:
        try:
            choice.click(timeout=5_000)
        except PlaywrightTimeout as exc:
            raise Missed(option) from exc

    for _ in range(5):
        idle(page)
        box.evaluate("(box) => box.scrollIntoView({block: 'center'})")  # its list opens below it, in the window
        box.focus()
        box.press("ArrowDown")  # opens its list (a click near the window's foot can open and close it at once)
        try:
            choice.wait_for(timeout=5_000)
            return click
        except PlaywrightTimeout:
            continue
    raise RuntimeError(f"{option!r} never offered in {label!r}")


def timed_choice(page, times: dict, step: str, label: str, option: str, within, condition: str, arg=None) -> None:
    """``timed`` for picking ``option`` in ``label`` (``choose``): timed anew when the click missed."""
    for _ in range(3):
        try:
            return timed(page, times, step, choose(page, label, option, within), condition, arg)
        except Missed:
            continue
    raise RuntimeError(f"{option!r} in {label!r}: three clicks missed")


def idle(page) -> None:
    """Until the app runs no script (the last rerun done)."""
    page.wait_for_selector(IDLE, timeout=STEP_TIMEOUT_MS)


def map_point(page, avoid: list[int]) -> tuple[int, list[float]]:
    """A paper drawn where a click picks it (not one of ``avoid``), its row and its place on the page."""
    return page.evaluate(
        f"""(avoid) => {{ const map = {MAP}; const box = document.querySelector('.ps-map').getBoundingClientRect();
            for (let row = 0; row < map.count; row += 7) {{
              const x = map.px(map.x[row]), y = map.py(map.y[row]);
              if (!avoid.includes(row) && x > 80 && y > 80 && x < map.width - 80 && y < map.height - 80
                  && map.nearest(x, y) === row) return [row, [box.left + x, box.top + y]];
            }} }}""",
        avoid,
    )


def sequence(page, url: str, corpus: Corpus, times: dict) -> None:
    """Click through the steps (module docstring) on the app at ``url``; seconds per step into ``times``."""
    index, mode = corpus.index, corpus.index.manifest.search.search_mode
    start = time.perf_counter()
    page.goto(url)
    page.wait_for_function(USABLE, timeout=STEP_TIMEOUT_MS, polling="raf")
    times["first page usable"] = round(time.perf_counter() - start, 3)
    times["first page usable: script running"] = round(page.evaluate(SCRIPT_RUNNING, 0), 3)
    idle(page)

    box = page.get_by_label("Search by text")
    for step, query in zip(("search", "search again"), corpus.queries, strict=True):
        box.fill(query)
        expected = ids_of(index.search(query, k=10, mode=mode))
        timed(page, times, step, lambda: box.press("Enter"),
              f"(ids) => ({CARDS_ARE})(ids) && {MAP}.star && {MAP}.neighbours.length === ids.length",
              expected)  # fmt: skip
        idle(page)

    card = page.get_by_test_id("stExpander").filter(has_text="Abstract and why similar").first
    timed(
        page,
        times,
        "why similar",
        lambda: card.get_by_text("Abstract and why similar").click(),
        """() => [...document.querySelectorAll("[data-testid='stExpander']")].some((e) =>
             e.querySelector('details[open]')
             && [...e.querySelectorAll('.ps-why')].some((why) => why.textContent.startsWith('Shared terms')))""",
    )
    idle(page)

    row, point = map_point(page, index.rows(expected).tolist())
    paper = str(index.table([row], ["id"]).column("id")[0])
    expected = ids_of(index.similar([paper], k=10, mode=mode))
    timed(
        page,
        times,
        "pick a paper",
        lambda: page.mouse.click(*point),
        f"""(ids) => ({CARDS_ARE})(ids) && document.querySelector('.ps-selected') !== null
              && {MAP}.star && {MAP}.neighbours.length === ids.length""",
        expected,
    )
    idle(page)

    page.get_by_text("Collections (").click()
    idle(page)
    members = len(index.collections.members(COLLECTION).query("in_index"))
    expected = ids_of(index.collections.recommend(COLLECTION, k=10))
    timed_choice(
        page,
        times,
        "show a collection",
        "Show a collection",
        COLLECTION,
        None,
        f"""(ids) => ({CARDS_ARE})(ids) && document.querySelector('.ps-collection') !== null
              && {MAP}.members.length === {members}""",
        expected,
    )
    idle(page)

    sidebar_steps(page, corpus, expected, times)


def sidebar_steps(page, corpus: Corpus, shown: list[str], times: dict) -> None:
    """The steps of the sidebar (topic level, colour and filter by a column), the collection's
    recommendations ``shown``; seconds per step into ``times``."""
    page.get_by_test_id("stExpandSidebarButton").click()
    sidebar = page.get_by_test_id("stSidebar")
    fine = sidebar.get_by_text("fine", exact=True)
    fine.click(trial=True)  # until the sidebar has slid open (a user clicks what has stopped moving): not timed
    timed(
        page,
        times,
        "topic level",
        fine.click,
        f"() => {MAP}.payload.level === 'fine' && !{MAP}.pending",
    )
    idle(page)

    timed_choice(
        page,
        times,
        "colour by a column",
        "Colour the map by",
        corpus.column,
        sidebar,
        f"() => document.querySelector('.ps-map .ps-legend b')?.textContent === {corpus.column!r} && !{MAP}.pending",
    )
    idle(page)

    sidebar.get_by_text("Filter by a column").click()
    label = f"{corpus.column}: papers with any of these values"
    offered = "(label) => [...document.querySelectorAll('input')].some((box) => box.ariaLabel === label)"
    timed_choice(page, {}, "", "Column", corpus.column, sidebar, offered, label)  # not timed: the filter's box shown
    idle(page)
    value, expected = filtered(corpus, shown)
    timed_choice(page, times, "filter by a column", label, value, sidebar, CARDS_ARE, expected)


def filtered(corpus: Corpus, shown: list[str]) -> tuple[str, list[str]]:
    """A value of the filter column that changes the collection's recommendations ``shown``, and
    the recommendations among the papers with that value."""
    index = corpus.index
    for value in corpus.values:
        within = index.where(conditions=[f'{corpus.column} = "{value}"'])
        expected = ids_of(index.collections.recommend(COLLECTION, k=10, within=within))
        if expected != shown:
            return value, expected
    raise RuntimeError(f"no value of {corpus.column} changes the recommendations")


def start_up(browser, checkout: Checkout) -> dict[str, float]:
    """From launching ``paperscope app`` of ``checkout`` on the bundled sample to its first page usable."""
    start = time.perf_counter()
    with app(checkout, None) as url:
        healthy = time.perf_counter() - start
        page = browser.new_page(viewport={"width": 1440, "height": 900})
        page.goto(url)
        page.wait_for_function(USABLE, timeout=STEP_TIMEOUT_MS, polling="raf")
        usable = time.perf_counter() - start
        page.close()
    return {"start-up: server healthy": round(healthy, 3), "start-up: first page usable": round(usable, 3)}


def load_corpus(index_dir: str, column: str | None) -> tuple[Corpus, list[str]]:
    """The index (this checkout's PaperIndex), the queries (two papers' titles), the column to colour and
    filter by (``column``, else the first text column of 2 to 30 values but venue and categories)
    and its values, most common first; and the ids of the collection to make (a paper and its four nearest)."""
    from paperscope import PaperIndex

    index = PaperIndex.load(index_dir)
    titles = index.table(columns=["id", "title"]).to_pandas()
    counts = {
        name: index.table(columns=[name]).column(name).to_pandas().value_counts()
        for name, kind in index.columns().items()
        if kind == "text"
    }
    offered = (name for name, values in counts.items() if name not in SIDEBAR_FIELDS and 2 <= len(values) <= 30)
    column = column or next(offered, None)
    if column not in counts:
        raise SystemExit(f"paperscope: error: --column: {column} is not a text column of {index_dir}")
    paper = str(titles["id"][len(titles) // 2])
    collection = [paper, *ids_of(index.similar([paper], k=4))]
    queries = (str(titles["title"][len(titles) // 3]), str(titles["title"][2 * len(titles) // 3]))
    return Corpus(index_dir, index, queries, column, [str(v) for v in counts[column].index]), collection


def rounds(browser, checkouts: list[Checkout], corpus: Corpus, count: int) -> dict[str, list[dict]]:
    """``count`` rounds of the sequence and of the start-up per checkout, the checkouts taking turns to go first."""
    results: dict[str, list[dict]] = {checkout.name: [] for checkout in checkouts}
    for number in range(count):
        for checkout in checkouts if number % 2 == 0 else checkouts[::-1]:
            times = start_up(browser, checkout)
            context = browser.new_context(viewport={"width": 1440, "height": 900})
            context.add_init_script(SCRIPT_LOG)
            with app(checkout, corpus.folder) as url:
                try:
                    sequence(page := context.new_page(), url, corpus, times)
                except Exception as exc:  # a step the app no longer offers: the rest of the round is lost
                    times["failed"] = f"after {list(times)[-1]}: {type(exc).__name__}: {str(exc).splitlines()[0]}"
                    page.screenshot(path=f"{checkout.data}/failed.png")
            context.close()
            print(f"round {number + 1}, {checkout.name}: {times}", file=sys.stderr, flush=True)
            results[checkout.name].append(times)
    return results


def medians(runs: list[dict]) -> dict[str, float | None]:
    """Each step's median over the rounds that reached it."""
    steps = [*STEPS, *(f"{step}: script running" for step in STEPS), *START_UP]
    return {
        step: statistics.median(values) if (values := [r[step] for r in runs if step in r]) else None for step in steps
    }


def main() -> None:
    """Prepare both checkouts, run the rounds and print the table."""
    parser = common_parser(__doc__, "app_actions")
    parser.add_argument("--index", required=True, help="index folder to click through")
    parser.add_argument("--other-python", help="Python of the other checkout (today's main), with paperscope")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--column", help="text column to colour and filter by (default: the first of 2-30 values)")
    parser.add_argument("--data", default=str(Path(tempfile.gettempdir()) / "paperscope-app-actions"),
                        help="data folders of the checkouts: DATA/this, DATA/other")  # fmt: skip
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    checkouts = [Checkout("this", sys.executable, Path(args.data) / "this")]
    if args.other_python:
        checkouts.insert(0, Checkout("other", args.other_python, Path(args.data) / "other"))
    corpus, collection = load_corpus(args.index, args.column)
    for checkout in checkouts:
        prepare(checkout, corpus, collection)
    os.environ["PAPERSCOPE_HOME"] = str(checkouts[-1].data)  # this checkout's collection, for the expected answers
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
        results = rounds(browser, checkouts, corpus, args.rounds)
        browser.close()
    table = {name: medians(runs) for name, runs in results.items()}
    other, this = table.get("other", {}), table["this"]

    def shown(value):
        return "failed" if value is None else f"{value:.2f} s"

    def ran(name, step):  # how long of the step the app's script ran
        value = table.get(name, {}).get(f"{step}: script running")
        return "" if value is None else f"{value:.2f}"

    rows = [
        [step, shown(other.get(step)) if other else "", shown(this[step]),
         f"{this[step] / other[step]:.2f}" if other.get(step) and this[step] else "",
         f"{ran('other', step)} / {ran('this', step)} s" if step in STEPS else ""]
        for step in (*STEPS, *START_UP)
    ]  # fmt: skip
    report(
        [f"step ({len(corpus.index):,} papers, medians of {args.rounds})", "other (main)", "this", "this ÷ other",
         "of it, script running (other / this)"],
        rows,
        {"index": args.index, "papers": len(corpus.index), "rounds": args.rounds, "load_after": os.getloadavg(),
         "queries": corpus.queries, "column": corpus.column, "medians": table, "runs": results},
        args.json,
    )  # fmt: skip


if __name__ == "__main__":
    main()
