"""A local arXiv on pytest-httpserver: OAI-PMH (``/oai``, ``ListRecords`` in the arXivRaw format) and the
search API (``/api/query``, Atom with OpenSearch totals), answering as arXiv's do.

Built from the services' documentation (openarchives.org/OAI/openarchivesprotocol.html; arXiv's
OAI-PMH server github.com/arXiv/oaipmh: ``arXivRaw`` records with every version and its date, sets
such as ``cs:cs:LG``, new-style pages whose ``<resumptionToken expires=…>`` is empty on the last
page, old-style ones with ``cursor`` and ``completeListSize``; info.arxiv.org/help/api/user-manual:
the Atom feed). The faults a fetch must survive are switched on one by one (``faults``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from xml.sax.saxutils import escape

from werkzeug import Request, Response

from tests.support.corpora import sample_abstracts
from tests.support.recorded import RecordedService

RESPONSE_DATE = "2025-01-20T04:05:06Z"
WITHDRAWAL = "This paper has been withdrawn by the authors due to an error in the proof of Theorem 2"


def arxiv_id(number: int) -> str:
    return f"2501.{number:05d}"


def version_date(day: int) -> str:
    """A version's date as arXivRaw writes it (RFC 2822), on 2025-01-``day``."""
    weekday = ("Wed", "Thu", "Fri", "Sat", "Sun", "Mon", "Tue")[(day - 1) % 7]
    return f"{weekday}, {day:02d} Jan 2025 10:45:05 GMT"


def raw_record(
    number: int, day: int = 6, versions: int = 1, comments: str = "12 pages, 3 figures", extra: str = ""
) -> str:
    """One ``<record>`` in the arXivRaw format: ``versions`` versions, the first on 2025-01-``day``,
    one a day after another; its datestamp the last one's day. With the comments of a ``WITHDRAWAL``,
    the last version is the withdrawal arXiv makes (0kb, source type "I"); ``extra``: more fields."""
    abstract = sample_abstracts()[number % 38]
    withdrawn = comments == WITHDRAWAL

    def source(n: int) -> str:
        last_withdrawn = withdrawn and n == versions - 1
        return (
            "<size>0kb</size><source_type>I</source_type>"
            if last_withdrawn
            else (f"<size>{200 + n}kb</size><source_type>D</source_type>")
        )

    dated = "".join(
        f'<version version="v{n + 1}"><date>{version_date(day + n)}</date>{source(n)}</version>'
        for n in range(versions)
    )
    return f"""<record><header><identifier>oai:arXiv.org:{arxiv_id(number)}</identifier>
<datestamp>2025-01-{day + versions - 1:02d}</datestamp><setSpec>cs:cs:LG</setSpec><setSpec>stat:stat:ML</setSpec>
</header><metadata><arXivRaw xmlns="http://arxiv.org/OAI/arXivRaw/" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">
<id>{arxiv_id(number)}</id><submitter>Ada Author</submitter>{dated}
<title>Paper {number}: {escape(" ".join(abstract.split()[:6]))}
  on two lines</title>
<authors>Ada Author (MIT), Bo Builder and Cy Coder</authors>
<categories>cs.LG stat.ML</categories>
<comments>{escape(comments)}</comments>
<journal-ref>NeurIPS 2025</journal-ref>
<doi>10.0000/paper.{number}</doi>
<license>http://creativecommons.org/licenses/by/4.0/</license>{extra}
<abstract>  {escape(abstract)}
</abstract></arXivRaw></metadata></record>"""


def deleted_record(number: int, day: int = 7) -> str:
    """A deleted record: a header with ``status="deleted"`` and no metadata (OAI-PMH 2.0, 2.5)."""
    return f"""<record><header status="deleted"><identifier>oai:arXiv.org:{arxiv_id(number)}</identifier>
<datestamp>2025-01-{day:02d}</datestamp><setSpec>cs:cs:LG</setSpec></header></record>"""


def oai_page(
    records: list[str], token: str, old_style: tuple[int, int] | None = None, response_date: str = RESPONSE_DATE
) -> str:
    """A ListRecords page: ``token`` the next page's (empty on the last); ``old_style`` (cursor,
    completeListSize) as the old server and the OAI-PMH spec put them, else ``expires`` as the new;
    answered at ``response_date``."""
    if old_style:
        attributes = f'cursor="{old_style[0]}" completeListSize="{old_style[1]}"'
    else:
        attributes = 'expires="2025-01-21T00:00:00Z"'
    return f"""<?xml version="1.0" encoding="UTF-8"?>
<OAI-PMH xmlns="http://www.openarchives.org/OAI/2.0/" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">
<responseDate>{response_date}</responseDate>
<request verb="ListRecords" metadataPrefix="arXivRaw">https://oaipmh.arxiv.org/oai</request>
<ListRecords>{"".join(records)}<resumptionToken {attributes}>{token}</resumptionToken></ListRecords>
</OAI-PMH>
"""


def oai_error(code: str, message: str) -> str:
    """An OAI-PMH error answer (``noRecordsMatch``, ``badResumptionToken``, …)."""
    return f"""<?xml version="1.0" encoding="UTF-8"?>
<OAI-PMH xmlns="http://www.openarchives.org/OAI/2.0/"><responseDate>{RESPONSE_DATE}</responseDate>
<request verb="ListRecords">https://oaipmh.arxiv.org/oai</request><error code="{code}">{message}</error></OAI-PMH>
"""


def atom_entry(number: int, version: int = 1, comment: str = "12 pages") -> str:
    """One ``<entry>`` of the API's Atom feed: version ``version`` (its id's suffix), first posted 2025-01-06."""
    abstract = sample_abstracts()[number % 38]
    versioned = f"{arxiv_id(number)}v{version}"
    return f"""<entry><id>http://arxiv.org/abs/{versioned}</id>
<updated>2025-01-{5 + version:02d}T10:45:05Z</updated><published>2025-01-06T10:45:05Z</published>
<title>Paper {number}: {escape(" ".join(abstract.split()[:6]))}</title>
<summary>  {escape(abstract)}
</summary><author><name>Ada Author</name><arxiv:affiliation>MIT</arxiv:affiliation></author>
<author><name>Bo Builder</name></author><arxiv:doi>10.0000/paper.{number}</arxiv:doi>
<link title="doi" href="https://doi.org/10.0000/paper.{number}" rel="related"/>
<link href="http://arxiv.org/abs/{versioned}" rel="alternate" type="text/html"/>
<link title="pdf" href="http://arxiv.org/pdf/{versioned}" rel="related" type="application/pdf"/>
<arxiv:comment>{escape(comment)}</arxiv:comment><arxiv:journal_ref>NeurIPS 2025</arxiv:journal_ref>
<arxiv:primary_category term="cs.LG" scheme="http://arxiv.org/schemas/atom"/>
<category term="stat.ML" scheme="http://arxiv.org/schemas/atom"/>
<category term="cs.LG" scheme="http://arxiv.org/schemas/atom"/></entry>"""


def atom_feed(entries: list[str], total: int, start: int) -> str:
    """The API's answer: ``entries`` from ``start`` of ``total``."""
    return f"""<?xml version="1.0" encoding="UTF-8"?>
<feed xmlns="http://www.w3.org/2005/Atom" xmlns:opensearch="http://a9.com/-/spec/opensearch/1.1/"
 xmlns:arxiv="http://arxiv.org/schemas/atom">
<id>https://arxiv.org/api/x</id><title>arXiv Query</title><updated>2025-01-20T00:00:00Z</updated>
<opensearch:totalResults>{total}</opensearch:totalResults><opensearch:startIndex>{start}</opensearch:startIndex>
<opensearch:itemsPerPage>{len(entries)}</opensearch:itemsPerPage>{"".join(entries)}
</feed>
"""


@dataclass
class ArxivService(RecordedService):
    """arXiv on ``server``: ``pages`` of OAI-PMH records (page ``n``'s token is ``page-n``; a request
    with ``from`` begins at the first page holding a datestamp on or after it), ``entries`` of the
    API by number; ``response_date``: the OAI-PMH answers' (the day it is). ``faults``: "busy" (the
    first request a 503 with Retry-After: 1), "cut" (the second page's first answer cut mid-record,
    its length as sent), "expired" (page 2's token refused once as expired), "dead" (every token
    refused), "empty" (every OAI request: noRecordsMatch), "hole" (the API's page from offset 2 served
    empty once, as arXiv's API does at times), "holes" (that page always empty). Its ``url`` is the
    API's root; OAI-PMH is at ``url + "/oai"``."""

    pages: list[list[str]] = field(default_factory=list)
    entries: dict[str, str] = field(default_factory=dict)
    old_style: bool = False
    response_date: str = RESPONSE_DATE
    api_page: int = 100  # the API's page at most (arXiv's own: 2,000)
    faults: set[str] = field(default_factory=set)
    _done: set[str] = field(default_factory=set)

    def __post_init__(self):
        self.server.expect_request("/oai").respond_with_handler(self.answer)
        self.server.expect_request("/api/query").respond_with_handler(self.answer)

    def _once(self, fault: str) -> bool:
        """Whether ``fault`` is on and has not struck yet (it strikes now)."""
        if fault in self.faults and fault not in self._done:
            self._done.add(fault)
            return True
        return False

    def answer(self, request: Request) -> Response:
        """One request's answer, as arXiv (and its faults) give it."""
        self.record(request)
        if self._once("busy"):
            return Response("Retry after 1 second", 503, {"Retry-After": "1"}, content_type="text/plain")
        if request.path == "/api/query":
            return self._api(request)
        return Response(self._oai(request), 200, content_type="text/xml; charset=utf-8")

    def _oai(self, request: Request) -> str:
        if "empty" in self.faults:
            return oai_error("noRecordsMatch", "No records match the query")
        token = request.args.get("resumptionToken")
        if token and ("dead" in self.faults or (token == "page-2" and self._once("expired"))):
            return oai_error("badResumptionToken", "The resumption token has expired")
        if token:
            number = int(token.removeprefix("page-"))
        else:
            since = request.args.get("from", "")
            number = next(n for n, page in enumerate(self.pages) if any(day >= since for day in _datestamps(page)))
        last = number == len(self.pages) - 1
        before = sum(len(page) for page in self.pages[:number])
        text = oai_page(
            self.pages[number],
            "" if last else f"page-{number + 1}",
            (before, sum(map(len, self.pages))) if self.old_style else None,
            self.response_date,
        )
        if number == 1 and self._once("cut"):
            return text[: text.index("<abstract>") + 40]
        return text

    def _api(self, request: Request) -> Response:
        wanted = [part for part in request.args.get("id_list", "").split(",") if part]
        listed = [self.entries[key] for key in wanted if key in self.entries] if wanted else list(self.entries.values())
        start = int(request.args.get("start", 0))
        size = min(int(request.args.get("max_results", 10)), self.api_page)
        if start == 2 and ("holes" in self.faults or self._once("hole")):
            size = 0  # the total as ever, no entries
        text = atom_feed(listed[start : start + size], len(listed), start)
        return Response(text, 200, content_type="application/atom+xml; charset=utf-8")


def _datestamps(page: list[str]) -> list[str]:
    return [record.split("<datestamp>")[1][:10] for record in page]
