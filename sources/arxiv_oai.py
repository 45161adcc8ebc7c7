"""arXiv by OAI-PMH (oaipmh-scythe): a category's papers, in bulk, as arXiv asks bulk harvests to go.

``ListRecords`` in the ``arXivRaw`` format (the one with every version and its date; the first
category is the primary) over the category's set (``cs.LG`` → ``cs:cs:LG``, ``cs`` → ``cs:cs``,
``hep-th`` → ``physics:hep-th``), from and until a date (a record's datestamp: its last change).
Each page is committed with the resumption token that follows it. arXiv's tokens die at midnight
UTC: a dead one (``badResumptionToken``) asks the query again from the last date reached, the
records seen twice kept once. A deleted header is a deleted line; a last version whose comments say
the paper is withdrawn makes it "withdrawn".
"""

from __future__ import annotations

import email.utils
import re
import unicodedata
from datetime import date, timedelta
from typing import TYPE_CHECKING

from paperscope.errors import ServiceFailed, UserError, shown
from paperscope.settings import FetchOptions, SourceQuery
from paperscope.sources.http import PoliteSession, ends_with
from paperscope.sources.state import FetchWriter, now_iso

if TYPE_CHECKING:
    from oaipmh_scythe import Scythe

OAI_URL = "https://oaipmh.arxiv.org/oai"
OAI = "{http://www.openarchives.org/OAI/2.0/}"
RAW = "{http://arxiv.org/OAI/arXivRaw/}"
# arXiv's archives; those of physics sit in the "physics" group of sets, the others in their own.
OWN_GROUP = {"cs", "econ", "eess", "math", "q-bio", "q-fin", "stat"}
PHYSICS = {
    "astro-ph", "cond-mat", "gr-qc", "hep-ex", "hep-lat", "hep-ph", "hep-th", "math-ph", "nlin",
    "nucl-ex", "nucl-th", "physics", "quant-ph",
}  # fmt: skip
CATEGORY = re.compile(r"([a-z-]+)(?:\.([A-Za-z-]+))?")
# A withdrawal in a paper's comments (said at the start of the comments or of a sentence: "…, which has been
# withdrawn" of another paper is not): what tells by the API, and by OAI-PMH when no version has a source type.
WITHDRAWN = re.compile(
    r"(?:^|[.;]\s*)\W*(?:this (?:paper|article|submission|manuscript|version|preprint|work) (?:has been|is|was) "
    r"withdrawn|(?:paper |article |submission )?withdrawn\b|the authors? (?:have|has) withdrawn)",
    re.IGNORECASE,
)
SUFFIXES = {"jr", "jr.", "sr", "sr.", "ii", "iii", "iv"}  # "J. Smith, Jr.": a part of the name before it
# TeX in arXivRaw's author names (the API gives them in Unicode): accents over a letter, "\'a", "\'{a}",
# "{\"o}", "\c{c}", "{\v s}", and letters of their own, "{\o}", "\ss{}"
ACCENTS = {"'": "\u0301", "`": "\u0300", "^": "\u0302", '"': "\u0308", "~": "\u0303", "=": "\u0304",
           ".": "\u0307", "c": "\u0327", "v": "\u030c", "H": "\u030b", "u": "\u0306", "r": "\u030a",
           "k": "\u0328"}  # fmt: skip
TEX_ACCENT = re.compile(r"""\\([`'^"~=.]|[cvHurk](?![A-Za-z]))\s*(?:\{\s*(\\?[A-Za-z])\s*\}|(\\?[A-Za-z]))""")
TEX_LETTERS = {"o": "ø", "O": "Ø", "l": "ł", "L": "Ł", "ss": "ß", "aa": "å", "AA": "Å", "ae": "æ", "AE": "Æ",
               "oe": "œ", "OE": "Œ", "i": "\u0131", "j": "\u0237"}  # fmt: skip
TEX_LETTER = re.compile(r"\\(" + "|".join(sorted(TEX_LETTERS, key=len, reverse=True)) + r")(?![A-Za-z])(?:\{\})?")
AFFILIATION = re.compile(r"\([^()]*\)")


def oai_set(category: str) -> str:
    """The OAI-PMH set of an arXiv category or archive ("cs.LG" → "cs:cs:LG", "cs" → "cs:cs",
    "astro-ph.GA" → "physics:astro-ph:GA"); a UserError for anything else."""
    match = CATEGORY.fullmatch(category)
    archive = match.group(1) if match else None
    if match is None or archive not in OWN_GROUP | PHYSICS:
        raise UserError(
            f"--category: '{shown(category)}' is not an arXiv category or archive "
            "(such as cs.LG, math.AG, hep-th or cs)"
        )
    group = archive if archive in OWN_GROUP else "physics"
    return ":".join(filter(None, [group, archive, match.group(2)]))


def check(query: SourceQuery) -> None:
    """A UserError for a category arXiv has no set for, or since after until."""
    oai_set(query.get("category") or "")
    since, until = query.get("since"), query.get("until")
    if since and until and since > until:
        raise UserError(f"--since {since} is after --until {until}")


def since(query: SourceQuery, watermark: str) -> SourceQuery:
    """The same category from the day before ``watermark`` (the responseDate of the last harvest:
    a day's overlap, records seen again kept once), with no end."""
    day = date.fromisoformat(watermark[:10]) - timedelta(days=1)
    return query.with_filters(since=day.isoformat(), until=None)


def day_of(text: str | None) -> str | None:
    """ "Mon, 07 Oct 2024 10:45:05 GMT" (a version's date) as "2024-10-07"; None for none."""
    try:
        return email.utils.parsedate_to_datetime(text).date().isoformat() if text else None
    except (TypeError, ValueError):
        return None


def clean(text: str | None) -> str:
    """Text with arXiv's line wrapping undone."""
    return " ".join((text or "").split())


def untex(text: str) -> str:
    """TeX's accents and letters in a name as Unicode ("Bal\\'{a}zs" → "Balázs"), braces dropped."""
    if "\\" not in text:
        return text
    text = TEX_ACCENT.sub(lambda found: (found.group(2) or found.group(3)).lstrip("\\") + ACCENTS[found.group(1)], text)
    text = TEX_LETTER.sub(lambda found: TEX_LETTERS[found.group(1)], text)
    return unicodedata.normalize("NFC", text.replace("{", "").replace("}", ""))


def author_names(text: str) -> list[str]:
    """arXivRaw's "A. B (MIT), C. D and E. F" as ["A. B", "C. D", "E. F"], TeX made Unicode."""
    text = untex(AFFILIATION.sub("", AFFILIATION.sub("", clean(text))))  # twice: "(a (b))"
    names: list[str] = []
    for name in (part.strip() for part in re.split(r",|\band\b", text)):
        if name.lower() in SUFFIXES and names:
            names[-1] = f"{names[-1]}, {name}"
        elif name:
            names.append(name)
    return names


def paper(
    arxiv_id: str, version: str, published: str | None, updated: str | None, withdrawn: bool | None = None, **fields
) -> dict:
    """A paper's line with the columns every arXiv record has (by OAI-PMH or the API): ``fields``
    given (title, abstract, authors, categories, comments, …) with the empty ones left out, its
    links, year and status: "withdrawn" when ``withdrawn`` (the record says; None: it does not,
    and the comments tell)."""
    categories = fields.get("categories") or []
    if withdrawn is None:
        withdrawn = bool(WITHDRAWN.search(fields.get("comments") or ""))
    record = {
        "id": arxiv_id,
        **{key: value for key, value in fields.items() if value not in (None, "", [])},
        "published": published,
        "updated": updated,
        "year": int(published[:4]) if published else None,
        "venue": "arXiv",
        "url": f"https://arxiv.org/abs/{arxiv_id}",
        "pdf_url": f"https://arxiv.org/pdf/{arxiv_id}{version}",
        "primary_category": categories[0] if categories else None,
        "version": version,
        "source": "arxiv",
        "status": "withdrawn" if withdrawn else "active",
    }
    return {key: value for key, value in record.items() if value is not None}


def to_record(element) -> dict:
    """One ``<record>`` of an arXivRaw ListRecords page as a paper's line (a deleted header: the
    id, "deleted" and its datestamp)."""
    header = element.find(f"{OAI}header")
    arxiv_id = (header.findtext(f"{OAI}identifier") or "").removeprefix("oai:arXiv.org:")
    if header.get("status") == "deleted":
        return {"id": arxiv_id, "status": "deleted", "source": "arxiv", "updated": header.findtext(f"{OAI}datestamp")}
    raw = element.find(f"{OAI}metadata/{RAW}arXivRaw")
    versions = [
        {
            "version": version.get("version"),
            "created": version.findtext(f"{RAW}date"),
            "size": version.findtext(f"{RAW}size"),
            "source_type": version.findtext(f"{RAW}source_type"),
        }
        for version in raw.iterfind(f"{RAW}version")
    ]
    names = ("comments", "journal-ref", "doi", "license", "report-no", "msc-class", "acm-class")
    text = {name: clean(raw.findtext(f"{RAW}{name}")) for name in names}
    dois = text["doi"].split()
    typed = [version["source_type"] for version in versions if version["source_type"] is not None]
    return paper(
        arxiv_id,
        versions[-1]["version"] if versions else "v1",
        day_of(versions[0]["created"]) if versions else None,
        day_of(versions[-1]["created"]) if versions else None,
        # arXiv gives a withdrawn version the source type "I" (arXiv/oaipmh): the last one's decides
        withdrawn="I" in (versions[-1]["source_type"] or "") if typed else None,
        title=clean(raw.findtext(f"{RAW}title")),
        abstract=clean(raw.findtext(f"{RAW}abstract")),
        authors=author_names(raw.findtext(f"{RAW}authors") or ""),
        categories=(raw.findtext(f"{RAW}categories") or "").split(),
        doi=dois[0] if dois else None,
        dois=dois if len(dois) > 1 else None,  # an erratum's too, space-separated in the record
        comments=text["comments"],
        journal_ref=text["journal-ref"],
        report_no=text["report-no"],
        msc_class=text["msc-class"],
        acm_class=text["acm-class"],
        license=text["license"],
        versions=[{key: value for key, value in version.items() if value is not None} for version in versions],
    )


def _scythe(endpoint: str, session: PoliteSession) -> Scythe:
    """A Scythe whose every request goes through ``session`` (its pacing, retries, page check and
    user agent: one place for the rules) rather than its own httpx client, which retries 503 only."""
    import httpx2
    from oaipmh_scythe import Scythe

    class PoliteScythe(Scythe):
        def _request(self, query: dict[str, str]) -> httpx2.Response:
            answer = session.get(self.endpoint, params=query)
            kept = [(key, value) for key, value in answer.headers.items() if key.lower() == "content-type"]
            return httpx2.Response(
                answer.status_code, headers=kept, content=answer.content, request=httpx2.Request("GET", answer.url)
            )

    return PoliteScythe(endpoint)


def _first_request(query: SourceQuery, cursor: dict) -> dict[str, str]:
    """The ListRecords request that begins ``query``; after a dead token (``cursor`` without one),
    from the last day it reached."""
    asked = {"from": cursor.get("reached") or query.get("since"), "until": query.get("until")}
    return {
        "verb": "ListRecords",
        "metadataPrefix": "arXivRaw",
        "set": oai_set(query.get("category") or ""),
        **{key: value for key, value in asked.items() if value},
    }


def fetch_pages(query: SourceQuery, options: FetchOptions, writer: FetchWriter) -> None:
    """Every page of ``query`` from the writer's cursor on, each committed with its token."""
    import httpx2
    from oaipmh_scythe.exceptions import BadResumptionToken, NoRecordsMatch, OAIPMHException

    session = PoliteSession("arxiv", options, check=ends_with("</OAI-PMH>"))
    cursor, restarted_at = dict(writer.state.cursor), None
    with _scythe(query.base_url or OAI_URL, session) as scythe:
        while True:
            token = cursor.get("token")
            asked = {"verb": "ListRecords", "resumptionToken": token} if token else _first_request(query, cursor)
            try:
                page = scythe.harvest(asked)
            except BadResumptionToken as exc:  # expired at midnight UTC: ask again from the last day reached
                if restarted_at is not None and restarted_at == cursor.get("reached"):  # and no further since
                    raise ServiceFailed(f"arxiv: the OAI-PMH service refused its own token: {shown(exc)}") from exc
                cursor = {"reached": (restarted_at := cursor.get("reached"))}
                continue
            except NoRecordsMatch:
                writer.commit([], {}, watermark=now_iso(), complete=True)
                return
            except OAIPMHException as exc:
                raise ServiceFailed(f"arxiv: the OAI-PMH service refused the request: {shown(exc)}") from exc
            except httpx2.HTTPStatusError as exc:
                raise ServiceFailed(f"arxiv: {exc.request.url} answered HTTP {exc.response.status_code}") from exc
            cursor = _commit(page.xml, cursor, writer)
            if not cursor.get("token"):
                return


def _commit(root, cursor: dict, writer: FetchWriter) -> dict:
    """Commit one page (``root``: its XML) and return the cursor after it: its token (empty on the
    last page), the last datestamp reached, and the list size an old-style token announces."""
    listing = root.find(f"{OAI}ListRecords")
    elements = [] if listing is None else list(listing.iterfind(f"{OAI}record"))
    records = [to_record(element) for element in elements]
    stamps = [element.findtext(f"{OAI}header/{OAI}datestamp") or "" for element in elements]
    found = None if listing is None else listing.find(f"{OAI}resumptionToken")
    token = (found.text or "").strip() if found is not None else ""
    size = found.get("completeListSize") if found is not None else None
    after = {"token": token, "reached": max([cursor.get("reached") or "", *stamps]) or None}
    writer.commit(
        records,
        after,
        watermark=root.findtext(f"{OAI}responseDate"),
        total=int(size) if size and size.isdigit() else None,
        complete=not token,
    )
    return after
