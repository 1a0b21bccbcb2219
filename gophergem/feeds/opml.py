# -*- test-case-name: tests.test_feeds_opml -*-
"""
Subscriptions exchanged as OPML 2.0, the list format feed readers (and
Astronomo, for Gemini) import and export.

L{parse_opml} reads every outline that names a feed (C{xmlUrl}), folders
flattened, through defusedxml: no entity, no external reference and no
document larger than L{MAX_OPML_BYTES} is read.  L{write_opml} writes a
list that L{parse_opml} reads back unchanged.  Both are free of I/O.
"""

from __future__ import annotations

import email.utils
import re
import time
import xml.etree.ElementTree as ElementTree
from collections.abc import Iterator, Sequence
from typing import Any

import attrs
import defusedxml  # type: ignore[import-untyped]
import defusedxml.ElementTree  # type: ignore[import-untyped]

from gophergem.feeds.parse import canonical_url, clip_title
from gophergem.wire.text import sanitise_line

__all__ = ["MAX_OPML_BYTES", "OPMLError", "Outline", "parse_opml", "write_opml"]

#: The largest OPML document read: far beyond any real subscription list.
MAX_OPML_BYTES = 5 * 1024 * 1024


@attrs.frozen
class Outline:
    """
    One subscription in an OPML list.

    @ivar url: The feed's URL (the outline's C{xmlUrl}).
    @ivar title: Its sanitised title, or C{None}.
    """

    url: str
    title: str | None = None


class OPMLError(ValueError):
    """
    An OPML document that cannot be read; the message is one line saying
    what is wrong with it.
    """


# Why defusedxml refused a document, by the name of its exception.
_REFUSALS = {
    "DTDForbidden": "the document has a DTD",
    "EntitiesForbidden": "the document declares entities",
    "ExternalReferenceForbidden": "the document refers to outside resources",
}


def _one_line(error: BaseException) -> str:
    """An exception's message on one sanitised line, not too long."""
    text = " ".join(sanitise_line(str(error).replace("\n", " ")).split())
    return text[:200] or type(error).__name__


def _local_name(tag: Any) -> str:
    """An element's name without its namespace."""
    return tag.rpartition("}")[2] if isinstance(tag, str) else ""


def parse_opml(data: bytes) -> list[Outline]:
    """
    Read the feeds of an OPML document: every C{outline} with an C{xmlUrl},
    however deep in folders, in document order, each URL once (the first
    outline wins).  A title is the outline's C{title}, else its C{text}.

    @raise OPMLError: If C{data} is larger than L{MAX_OPML_BYTES}, is not
        well-formed XML, declares entities or reaches outside itself, or
        its root element is not C{<opml>}.  Nothing else is raised.
    """
    if len(data) > MAX_OPML_BYTES:
        raise OPMLError(f"too large: {len(data)} bytes, the limit is {MAX_OPML_BYTES}")
    try:
        root = defusedxml.ElementTree.fromstring(data)
    except defusedxml.DefusedXmlException as error:
        raise OPMLError(f"refused: {_REFUSALS.get(type(error).__name__, 'unsafe XML')}") from None
    except Exception as error:  # expat's ParseError, and codecs it cannot load
        raise OPMLError(f"not XML: {_one_line(error)}") from None
    name = _local_name(root.tag)
    if name != "opml":
        shown = sanitise_line(name)[:40] or "?"
        raise OPMLError(f"not OPML: root element is <{shown}>")
    return list(_unique(_outlines(root)))


def _outlines(root: Any) -> Iterator[Outline]:
    for element in root.iter():
        if _local_name(element.tag) != "outline":
            continue
        attributes = {key.lower(): value for key, value in element.attrib.items()}
        url = sanitise_line(attributes.get("xmlurl", "")).strip()
        if not url:
            continue
        url = canonical_url(url)
        title = clip_title(attributes.get("title", ""))
        if title is None:
            # The text an outline must have; when it only repeats the URL it is no title.
            text = clip_title(attributes.get("text", ""))
            title = None if text is None or canonical_url(text) == url else text
        yield Outline(url, title)


def _unique(outlines: Iterator[Outline] | Sequence[Outline]) -> Iterator[Outline]:
    seen: set[str] = set()
    for outline in outlines:
        if outline.url not in seen:
            seen.add(outline.url)
            yield outline


# Characters XML 1.0 cannot carry at all, even escaped.
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _xml_text(text: str) -> str:
    return _NOT_XML.sub("", sanitise_line(text)).strip()


def write_opml(
    outlines: Sequence[Outline],
    *,
    title: str = "gophergem subscriptions",
    created: float | None = None,
) -> bytes:
    """
    Write subscriptions as an OPML 2.0 document, UTF-8 encoded: one
    C{<outline type="rss" text="…" title="…" xmlUrl="…"/>} per URL (the
    first of repeated URLs kept; an outline without a URL left out), every
    value escaped.  Titles are sanitised first, so that what L{parse_opml}
    reads back is exactly what was written.

    @param title: The list's own title.
    @param created: When the list was made, in seconds since the epoch
        (the clock when C{None}), written as an RFC 822 C{dateCreated}.
    """
    moment = time.time() if created is None else created
    root = ElementTree.Element("opml", version="2.0")
    head = ElementTree.SubElement(root, "head")
    ElementTree.SubElement(head, "title").text = _xml_text(title)
    ElementTree.SubElement(head, "dateCreated").text = email.utils.formatdate(moment, usegmt=True)
    body = ElementTree.SubElement(root, "body")
    cleaned = (
        Outline(canonical_url(url), clip_title(_xml_text(outline.title or "")))
        for outline in outlines
        if (url := _xml_text(outline.url))
    )
    for outline in _unique(cleaned):
        label = outline.title or outline.url
        attributes = {"type": "rss", "text": label, "xmlUrl": outline.url}
        if outline.title is not None:
            attributes["title"] = outline.title
        ElementTree.SubElement(body, "outline", attributes)
    ElementTree.indent(root)
    document = ElementTree.tostring(root, encoding="unicode")
    return b'<?xml version="1.0" encoding="UTF-8"?>\n' + document.encode("utf-8") + b"\n"
