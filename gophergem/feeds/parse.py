# -*- test-case-name: tests.test_feeds_parse -*-
"""
What a subscribed page offers, read without I/O.

A page someone follows is one of six kinds (L{FEED_TYPES}):

  - C{gemsub}: a gemtext page (over Gemini, Spartan or Nex) whose link
    lines start their labels with a date, the Gemini subscription
    convention (L{parse_gemtext_feed});
  - C{atom} and C{rss}: an Atom, RSS or RDF document served over any of
    them, read by feedparser (L{parse_xml_feed});
  - C{phlog}: a Gopher menu whose items carry dates (L{parse_menu_feed});
  - C{plan}: a Finger answer, whose every new text is one entry
    (L{parse_plan_feed});
  - C{page}: anything else, followed for its new links.

L{detect_feed} picks the reader from what a fetch returned.  Whatever the
server sent, the result is a L{Feed}: the readers never raise on content.
Every title is sanitised like all server text and clipped; every link is
absolute, and canonical when it is a URL of a scheme gophergem reads.  Nothing here
fetches anything: feedparser is only ever handed the bytes, never a URL or
a path.

A feed is read for its first L{MAX_ENTRIES} entries in document order (Atom
entries, RSS items, gemtext links, menu items that link somewhere), as many
as a store keeps of one feed: nothing after them is sanitised, dated or
resolved.  An Atom or RSS document is cut before feedparser sees it, right
where entry L{MAX_ENTRIES} + 1 starts (L{cut_entries}); the size of what is
left to cut is bounded by the fetch's response size cap.  The work takes
seconds for a large feed: the caller runs it off the reactor's thread.
"""

from __future__ import annotations

import hashlib
import html
import io
import re
import time
from collections.abc import Iterable, Iterator, Sequence
from itertools import islice
from typing import Any
from urllib.parse import urljoin
from xml.parsers import expat

import attrs

from gophergem.errors import InvalidRequest
from gophergem.feeds.dates import (
    is_future,
    iso_from_struct_time,
    parse_date,
    selector_date,
)
from gophergem.url import GeminiURL, GopherURL, scheme_of
from gophergem.wire.finger import FingerURL
from gophergem.wire.gemtext import Link, feed_entry, parse_gemtext
from gophergem.wire.gopher import MAX_TITLE_CHARS, MenuItem
from gophergem.wire.nex import NexURL
from gophergem.wire.smolweb import parse_url
from gophergem.wire.spartan import SpartanURL
from gophergem.wire.text import decode_text, sanitise_line

__all__ = [
    "FEED_TYPES",
    "FOLLOWED_SCHEMES",
    "MAX_ENTRIES",
    "NO_PLAN",
    "PLAN_DIGEST_CHARS",
    "XML_FEED_TYPES",
    "Entry",
    "Feed",
    "canonical_url",
    "clip_title",
    "cut_entries",
    "detect_feed",
    "parse_date",
    "parse_gemtext_feed",
    "parse_menu_feed",
    "parse_plan_feed",
    "parse_xml_feed",
    "plan_of",
    "plan_version",
    "sniff_xml_feed",
]

#: What a followed page can be, see the module docstring.
FEED_TYPES = ("gemsub", "atom", "rss", "phlog", "plan", "page")

#: The schemes of the pages that can be followed.
FOLLOWED_SCHEMES = ("gemini", "gopher", "spartan", "nex", "finger")

#: The small web's schemes L{canonical_url} spells anew (Titan's URLs are
#: uploads, not pages).
_SMOL_SCHEMES = frozenset(FOLLOWED_SCHEMES) - {"gemini", "gopher"}

#: The most entries a feed is read for (the first ones in the document): as
#: many as a store remembers of one feed (C{store.MAX_ENTRIES_PER_FEED}).
MAX_ENTRIES = 2000

#: Media types under which a capsule may serve an Atom or RSS document.
XML_FEED_TYPES = frozenset(
    {"application/atom+xml", "application/rss+xml", "application/xml", "text/xml"}
)


@attrs.frozen
class Entry:
    """
    One entry of a feed: a post, or a link of a followed page.

    @ivar url: Its absolute URL (canonical for C{gemini:} and C{gopher:}).
    @ivar title: Its sanitised title; never empty (the URL when it has none).
    @ivar published: When it was published, C{YYYY-MM-DDTHH:MM:SSZ} in UTC,
        or C{None} when the feed does not say (the links of a page).
    """

    url: str
    title: str
    published: str | None


@attrs.frozen
class Feed:
    """
    What a followed page offers.

    @ivar feed_type: One of L{FEED_TYPES}.
    @ivar title: The feed's own title, sanitised, or C{None}.
    @ivar entries: Its entries in document order, one per URL (the first
        one wins).
    """

    feed_type: str
    title: str | None
    entries: tuple[Entry, ...]


# --- shared helpers -------------------------------------------------------------------


def clip_title(text: str) -> str | None:
    """
    Sanitise server text for a title (one line, no control or format
    characters, no surrounding spaces) and cut it to C{MAX_TITLE_CHARS};
    C{None} when nothing is left.
    """
    title = sanitise_line(text).strip()
    if len(title) > MAX_TITLE_CHARS:
        title = title[: MAX_TITLE_CHARS - 1].rstrip() + "…"
    return title or None


def canonical_url(text: str) -> str:
    """
    The canonical spelling of an absolute Gemini, Gopher, Spartan, Nex or
    Finger URL, as L{gophergem.url} and L{gophergem.wire.smolweb} print it
    (C{finger://user@host} becomes C{finger://host/user}); any other text
    comes back as it is.
    """
    try:
        scheme = scheme_of(text)
        if scheme == "gemini":
            return GeminiURL.from_text(text).to_text()
        if scheme == "gopher":
            return GopherURL.from_text(text).to_text()
        if scheme in _SMOL_SCHEMES:
            return parse_url(text).to_text()
    except InvalidRequest:
        pass
    return text


_ABSOLUTE = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*:")


def resolve_link(base: str, reference: str) -> str | None:
    """
    Resolve a link found in a feed against the feed's URL; C{None} when
    there is no link or it cannot be made absolute.  Never raises.

    The standard library cannot join C{gemini:} URLs, so L{GeminiURL} does,
    and a Spartan or Nex URL resolves against itself; C{gopher:} bases go
    through C{urljoin}, which knows that scheme.
    """
    reference = sanitise_line(reference).strip()
    if not reference:
        return None
    if _ABSOLUTE.match(reference):
        return canonical_url(reference)
    try:
        if scheme_of(base) == "gemini":
            return GeminiURL.from_text(base).resolve(reference)
        if scheme_of(base) == "gopher":
            GopherURL.from_text(base)
            return canonical_url(urljoin(base, reference))
        if scheme_of(base) == "spartan":
            return canonical_url(SpartanURL.from_text(base).resolve(reference))
        if scheme_of(base) == "nex":
            return canonical_url(NexURL.from_text(base).resolve(reference))
    except (InvalidRequest, ValueError):
        pass
    return None


#: The title of an entry whose own title and URL leave nothing printable.
UNTITLED = "(untitled)"


def _entry(url: str, title: str | None, published: str | None) -> Entry:
    return Entry(url, clip_title(title or "") or clip_title(url) or UNTITLED, published)


def _unique(entries: Iterable[Entry]) -> tuple[Entry, ...]:
    """The entries without repeated URLs, the first of each kept, in order."""
    seen: set[str] = set()
    kept: list[Entry] = []
    for entry in entries:
        if entry.url not in seen:
            seen.add(entry.url)
            kept.append(entry)
    return tuple(kept)


# --- gemtext --------------------------------------------------------------------------

# A base for parse_gemtext when the page's own URL is not a Gemini URL (a
# gemtext file served over Gopher): its links are then resolved here.
_NOWHERE = GeminiURL(host="gemini.invalid")


def parse_gemtext_feed(url: str, text: str, *, max_entries: int = MAX_ENTRIES) -> Feed:
    """
    Read a gemtext page as a feed.  Never raises.

    It is a C{gemsub} when at least one link line follows the subscription
    convention: its label starts with a real C{YYYY-MM-DD} day, then a
    separator and at least one more character (C{=> post.gmi 2026-01-02 -
    Notes}).  The entries are then those links only, titled by the label
    without the date, published at noon UTC that day.  Otherwise it is a
    C{page} whose entries are all its links, undated.  The title is the
    first level-1 heading.  Only the first C{max_entries} links are read.

    @param url: The page's URL, against which relative links are resolved.
    @param text: The decoded page.
    """
    try:
        base = GeminiURL.from_text(url)
    except InvalidRequest:
        base = None
    document = parse_gemtext(text, base or _NOWHERE)
    title: str | None = None
    links: list[Link] = []
    for line in document.lines:
        if line.type == "heading1" and title is None:
            title = clip_title(line.text or "")
        elif line.type == "link" and line.link is not None and len(links) < max_entries:
            if base is None:
                target = resolve_link(url, line.content[2:].split(maxsplit=1)[0])
                if target is None:
                    continue
                links.append(Link(target, line.link.text))
            else:
                links.append(Link(canonical_url(line.link.url), line.link.text))
    dated: list[Entry] = []
    for link in links:
        post = feed_entry(link)
        # The convention wants a character after the date and one more.
        if post is None or link.text is None or len(link.text) < 12:
            continue
        dated.append(_entry(link.url, post.title, parse_date(post.date)))
    if dated:
        return Feed("gemsub", title, _unique(dated))
    return Feed("page", title, _unique(_entry(link.url, link.text, None) for link in links))


# --- Atom and RSS ---------------------------------------------------------------------

# What may come before the root element: a byte order mark, whitespace, the
# XML declaration, processing instructions, comments and a DOCTYPE.
_PROLOGUE = re.compile(
    rb"(?:\s+|<\?.*?\?>|<!--.*?-->|<!DOCTYPE[^>\[]*(?:\[.*?\])?\s*>)*",
    re.DOTALL | re.IGNORECASE,
)
_ROOT = re.compile(rb"<(?:[A-Za-z_][\w.\-]*:)?(feed|rss|RDF)[\s/>]")
_SNIFF_BYTES = 65536
_BOMS = (
    (b"\xef\xbb\xbf", "utf-8"),
    (b"\xff\xfe", "utf-16-le"),
    (b"\xfe\xff", "utf-16-be"),
)


def sniff_xml_feed(body: bytes) -> str | None:
    """
    Whether C{body} is an Atom or RSS document, by its root element:
    C{<feed>} is C{"atom"}; C{<rss>} and C{<rdf:RDF>} are C{"rss"}.
    Anything else is C{None}.  Never raises.
    """
    head = body[:_SNIFF_BYTES]
    for bom, codec in _BOMS:
        if head.startswith(bom):
            head = head[len(bom) :]
            if codec != "utf-8":
                head = head.decode(codec, errors="replace").encode("utf-8")
            break
    prologue = _PROLOGUE.match(head)
    start = prologue.end() if prologue is not None else 0
    root = _ROOT.match(head, start)
    if root is None:
        return None
    return "atom" if root.group(1) == b"feed" else "rss"


_TAG = re.compile(r"<[^>]*>")
# Elements whose content is no text either (feedparser's sanitiser drops them whole).
_HIDDEN = re.compile(r"<(script|style|applet)\b[^>]*>.*?</\1\s*>", re.IGNORECASE | re.DOTALL)
_HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})


def _text_of(value: Any, detail: Any) -> str:
    """
    A feedparser title as plain text: markup removed when it is HTML (with
    the content of C{script}, C{style} and C{applet} elements).
    """
    if not isinstance(value, str):
        return ""
    text: str = value
    kind = detail.get("type") if isinstance(detail, dict) else None
    if kind in _HTML_TYPES:
        text = html.unescape(_TAG.sub("", _HIDDEN.sub("", text)))
    return text


class _Enough(Exception):
    """Raised inside expat's handlers: stop reading here."""


def cut_entries(body: bytes, max_entries: int = MAX_ENTRIES) -> bytes:
    """
    An Atom or RSS document with only its first C{max_entries} entries:
    cut where the next entry starts (an C{entry} or C{item} element that is
    a child of the root or of the root's child), the elements still open
    there closed.  Never raises.

    expat reads the document only up to that point.  The body comes back
    whole when it has no more entries, and when expat cannot read up to
    the cut (a document ill-formed before it, an encoding expat cannot
    read, UTF-16, or a DOCTYPE with an internal subset, whose entities are
    left to feedparser's own guard): feedparser then reads it all, as
    large as the response size cap lets it be.
    """
    head = body[:4]
    if head.startswith((b"\xff\xfe", b"\xfe\xff")) or b"\x00" in head:
        return body  # UTF-16 or wider: the closing tags would need its encoding
    parser = expat.ParserCreate()
    parser.SetParamEntityParsing(expat.XML_PARAM_ENTITY_PARSING_NEVER)
    open_elements: list[str] = []
    seen = 0
    cut = -1

    def doctype(name: str, system: str | None, public: str | None, internal: int) -> None:
        if internal:
            raise _Enough  # no cut: entities are feedparser's to defuse

    def start(name: str, attributes: object) -> None:
        nonlocal seen, cut
        if len(open_elements) in (1, 2) and name.rpartition(":")[2] in ("entry", "item"):
            seen += 1
            if seen > max_entries:
                cut = parser.CurrentByteIndex
                raise _Enough
        open_elements.append(name)

    def end(name: str) -> None:
        open_elements.pop()

    parser.StartDoctypeDeclHandler = doctype
    parser.StartElementHandler = start
    parser.EndElementHandler = end
    try:
        parser.Parse(body, True)
    except _Enough:
        pass
    except Exception:  # expat's errors on any input, and whatever else it raises
        return body
    if cut < 0:
        return body
    closing = "".join(f"</{name}>" for name in reversed(open_elements))
    return body[:cut] + closing.encode("ascii", errors="replace")


def parse_xml_feed(url: str, body: bytes, *, max_entries: int = MAX_ENTRIES) -> Feed | None:
    """
    Read an Atom, RSS or RDF document.  Never raises.

    The body is sniffed first (L{sniff_xml_feed}); feedparser reads only a
    document that passed, from memory.  An entry without a link is left
    out (an Atom C{id} or RSS C{guid} serves as one only when it is an
    absolute C{gemini:} or C{gopher:} URL); a relative link is resolved
    against C{url} here (feedparser cannot join C{gemini:} URLs).  An entry
    is published at its C{published} time, else its C{updated} time, else
    C{None}.  An ill-formed document is read as far as feedparser's lenient
    parser gets.  Only the first C{max_entries} entries are read: the
    document is cut after them first (L{cut_entries}).

    @return: The feed (C{atom}, or C{rss} for RSS and RDF), or C{None} when
        the body is not a feed.
    """
    feed_type = sniff_xml_feed(body)
    if feed_type is None:
        return None
    try:
        # Imported here: it costs tens of milliseconds, and a server that
        # never reads an XML feed should not pay them at start-up.
        import feedparser  # type: ignore[import-untyped]

        document = cut_entries(body, max_entries)
        # No HTML sanitising: only titles are kept, and _text_of makes them plain text.
        result = feedparser.parse(
            io.BytesIO(document), resolve_relative_uris=False, sanitize_html=False
        )
    except Exception:  # feedparser's lenient parsers on hostile input
        return Feed(feed_type, None, ())
    return _xml_feed(url, feed_type, result, max_entries)


def _xml_feed(url: str, feed_type: str, result: Any, max_entries: int) -> Feed:
    channel = result.get("feed") or {}
    title = clip_title(_text_of(channel.get("title"), channel.get("title_detail")))
    items = islice(result.get("entries") or (), max_entries)
    return Feed(feed_type, title, _unique(_xml_entries(url, items)))


# The schemes of an entry id (Atom id, RSS guid) that is also its link.
_ID_SCHEMES = frozenset({"gemini", "gopher"})


def _xml_entries(url: str, items: Iterable[Any]) -> Iterator[Entry]:
    for item in items:
        link = item.get("link")
        if not isinstance(link, str):
            continue
        if item.get("guidislink") and scheme_of(link.strip()) not in _ID_SCHEMES:
            # feedparser took the link from the id: only a capsule's own URL is one.
            continue
        target = resolve_link(url, link)
        if target is None:
            continue
        # dict.get: feedparser's own would map a missing published to updated, with a warning.
        published = iso_from_struct_time(dict.get(item, "published_parsed"))
        if published is None:
            published = iso_from_struct_time(dict.get(item, "updated_parsed"))
        title = _text_of(item.get("title"), item.get("title_detail"))
        yield _entry(target, title, published)


# --- Finger plans ---------------------------------------------------------------------

#: How many hex digits of a plan's SHA-256 name its version (the fragment of
#: its entry's URL): 64 bits, so two texts of one plan never share one.
PLAN_DIGEST_CHARS = 16

#: The title of a plan entry whose plan is empty (or "No Plan.").
NO_PLAN = "(no plan)"

_PLAN_HEADING = re.compile(r"[ \t]*plan:[ \t]*(.*)", re.IGNORECASE)
_NO_PLAN_LINE = re.compile(r"[ \t]*no plan\.?[ \t]*", re.IGNORECASE)


def plan_of(text: str) -> str:
    """
    The plan a Finger answer holds.  A daemon that describes the account
    first (BSD fingerd and its kin: login, shell, idle time, mail, which
    change by the minute) puts the plan after a line C{Plan:}, or says
    C{No Plan.}: then only the plan counts (C{""} for none).  Any other
    answer (the small web's Finger servers send the plan file itself) is
    the plan.  Trailing spaces and the blank lines around it are left out.
    Never raises.
    """
    lines = [line.rstrip() for line in text.splitlines()]
    for index, line in enumerate(lines):
        heading = _PLAN_HEADING.fullmatch(line)
        if heading is not None:
            lines = [heading.group(1).strip(), *lines[index + 1 :]]
            break
        if _NO_PLAN_LINE.fullmatch(line):
            return ""
    return "\n".join(lines).strip("\n")


def _plan_owner(url: str) -> str | None:
    """C{user@host} (or C{host}, for its list of users) of a finger:// URL, else C{None}."""
    try:
        finger = parse_url(url)
    except InvalidRequest:
        return None
    if not isinstance(finger, FingerURL):
        return None
    return f"{finger.user}@{finger.host}" if finger.user else finger.host


def parse_plan_feed(url: str, text: str) -> Feed:
    """
    Read a Finger answer as a feed of one entry: its plan (L{plan_of}) as
    it is now, titled by its first line, undated (a store dates it when
    first seen).  The entry's URL is C{url} with the plan's digest as its
    fragment, so every new text of the plan is a new entry, while the
    URL still fetches the plan (a fragment is never sent).  The feed's
    title is C{user@host}.  Never raises.
    """
    plan = plan_of(text)
    digest = hashlib.sha256(plan.encode("utf-8", "replace")).hexdigest()[:PLAN_DIGEST_CHARS]
    first = next((line for line in plan.splitlines() if line.strip()), "")
    entry = Entry(f"{url.partition('#')[0]}#{digest}", clip_title(first) or NO_PLAN, None)
    return Feed("plan", _plan_owner(url), (entry,))


def plan_version(current: Entry, known: Iterable[tuple[str, str]]) -> Entry:
    """
    The entry to record for a plan read now (C{current}, from
    L{parse_plan_feed}), given the plan's entries kept so far as
    C{(url, first_seen)} pairs: the kept one when the plan reads as the
    one seen last, else a new one, even when the plan went back to a text
    it had before (its URL then gets a C{.2}, C{.3}, ... after the digest).
    """
    kept = list(known)
    if not kept:
        return current
    digest = current.url.partition("#")[2]
    latest = max(seen for _, seen in kept)
    for url, seen in kept:
        if seen == latest and url.partition("#")[2].partition(".")[0] == digest:
            return attrs.evolve(current, url=url)
    used = {url for url, _ in kept}
    url, count = current.url, 1
    while url in used:
        count += 1
        url = f"{current.url}.{count}"
    return attrs.evolve(current, url=url)


# --- Gopher menus ---------------------------------------------------------------------


def _linkable(item: MenuItem) -> bool:
    """Whether C{item} links somewhere: not info or error, a URL with something printable."""
    return item.item_type not in ("i", "3") and clip_title(item.next_url) is not None


def _menu_post(item: MenuItem, now: float) -> Entry | None:
    """
    The phlog post C{item} is, when it carries a date: a day leading its
    display text (then left out of the title), else one in its selector.
    """
    url = canonical_url(item.next_url)
    post = feed_entry(Link(url, item.title))
    if post is not None:
        published = parse_date(post.date)
        if published is not None and not is_future(published, now):
            return _entry(url, post.title, published)
    published = selector_date(item.selector)
    if published is not None and not is_future(published, now):
        return _entry(url, item.title, published)
    return None


def parse_menu_feed(
    url: str,
    items: Sequence[MenuItem],
    *,
    now: float | None = None,
    max_entries: int = MAX_ENTRIES,
) -> Feed:
    """
    Read a Gopher menu as a feed.  Never raises.

    It is a C{phlog} when at least one item that links somewhere carries a
    date: a C{YYYY-MM-DD} leading its display text, else a C{YYYYMMDD} or
    C{YYYY-MM-DD} in its selector.  A day that does not exist, or that is
    more than one day after C{now}, is no date.  The entries are then the
    dated items.  Otherwise it is a C{page} whose entries are all the items
    that link somewhere (not C{i} or C{3}).  The title is the first
    non-blank info line.  Only the first C{max_entries} items that link
    somewhere are read.

    @param url: The menu's URL (its items carry their own absolute URLs).
    @param now: The current time in seconds since the epoch (for the rule
        on future dates); the clock when C{None}.
    """
    del url  # every item already names its own URL
    moment = time.time() if now is None else now
    title = next(
        (t for item in items if item.item_type == "i" and (t := clip_title(item.title))),
        None,
    )
    linkable = list(islice((item for item in items if _linkable(item)), max_entries))
    posts = [post for item in linkable if (post := _menu_post(item, moment)) is not None]
    if posts:
        return Feed("phlog", title, _unique(posts))
    return Feed(
        "page",
        title,
        _unique(_entry(canonical_url(item.next_url), item.title, None) for item in linkable),
    )


# --- one entry point ------------------------------------------------------------------


def _media_type(mime: str | None) -> tuple[str, str | None]:
    """The bare media type, lower case, and the charset it declares."""
    if not mime:
        return "", None
    kind, *parameters = mime.split(";")
    charset = None
    for parameter in parameters:
        name, _, value = parameter.partition("=")
        if name.strip().lower() == "charset":
            charset = value.strip().strip('"') or None
    return kind.strip().lower(), charset


def detect_feed(
    url: str,
    *,
    mime: str | None,
    body: bytes | None = None,
    text: str | None = None,
    items: Sequence[MenuItem] | None = None,
    now: float | None = None,
) -> Feed:
    """
    Read whatever a fetch of C{url} returned as a feed.  Never raises on
    content.

    A Gopher menu goes to L{parse_menu_feed}.  An XML media type, or a body
    whose root element is C{<feed>}, C{<rss>} or C{<rdf:RDF>}, goes to
    L{parse_xml_feed}.  C{text/gemini} goes to L{parse_gemtext_feed}.
    Anything else (and an XML document that is not a feed) is a C{page}
    without entries: it can still be followed, for new links it will never
    have.

    @param mime: The media type the server declared (Gemini's META), or
        C{None} (Gopher).
    @param body: The raw body, when there is one.
    @param text: The decoded body, when the caller has it.
    @param items: The items of a Gopher menu.
    @param now: The current time (see L{parse_menu_feed}).
    """
    if items is not None:
        return parse_menu_feed(url, items, now=now)
    kind, charset = _media_type(mime)
    raw = body
    if raw is None and text is not None:
        raw = text.encode("utf-8", errors="replace")
    if raw is not None and (kind in XML_FEED_TYPES or sniff_xml_feed(raw) is not None):
        feed = parse_xml_feed(url, raw)
        if feed is not None:
            return feed
    if kind == "text/gemini":
        if text is None:
            text = decode_text(body or b"", charset)[0]
        return parse_gemtext_feed(url, text)
    return Feed("page", None, ())
