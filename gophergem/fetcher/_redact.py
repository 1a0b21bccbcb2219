# -*- test-case-name: tests.test_fetcher_gemini -*-
"""
Keeping a secret input answer out of what a capsule says back.

A status-11 prompt asks for something sensitive (a password, a token), and
many capsules echo what they were sent: "Welcome back, <name>", a redirect to
C{/home?token=<answer>}, a link carrying it.  L{Scrubber} finds every
spelling of the answer a capsule could plausibly echo and replaces it with
L{MARKER}:

  - the answer as it is, in any letter case (a page may shout it back);
  - percent-encoded, character by character, in either case of hex digits
    (C{%C3%A9} or C{%c3%a9}), with C{+} or C{%20} for a space: so a link
    or redirect that carries it, whole or partly encoded, is caught;
  - as HTML character references (C{&#104;}, C{&#x68;}, C{&amp;}), which
    some capsules copy from web templates;
  - as the sanitiser leaves it: control characters of the answer dropped,
    a tab as a space.

Every answer is scrubbed whatever its length: a one-letter answer makes the
page hard to read, and that is the price of never handing the secret to a
model.  The count of replacements is reported in C{request_info}.
"""

from __future__ import annotations

import re
from typing import Any

import attrs

from gophergem.errors import GophergemError
from gophergem.results import (
    CertificateResult,
    FetchFailure,
    GeminiRequestInfo,
    GeminiResult,
    GemtextResult,
    InputResult,
    PartialLineResult,
    RedirectResult,
    SuccessResult,
)
from gophergem.wire.gemtext import FeedEntry, GemtextLine, Link
from gophergem.wire.text import sanitise_line

__all__ = ["MARKER", "Scrubber"]

#: What replaces every occurrence of a secret answer.
MARKER = "[redacted]"

_NAMED_ENTITIES = {"&": "amp", "<": "lt", ">": "gt", '"': "quot", "'": "apos", "\xa0": "nbsp"}


def _spellings(char: str) -> list[str]:
    """Regular expressions for every way C{char} may come back."""
    options = [re.escape(char)]
    encoded = char.encode("utf-8", "surrogatepass")
    options.append("".join(f"%{byte:02x}" for byte in encoded))
    if char == " ":
        options.append(r"\+")
    code = ord(char)
    options.append(f"&#0*{code};")
    options.append(f"&#x0*{code:x};")
    if char in _NAMED_ENTITIES:
        options.append(f"&{_NAMED_ENTITIES[char]};")
    shown = sanitise_line(char)
    if shown and shown != char:
        options.append(re.escape(shown))
    pattern = "(?:" + "|".join(options) + ")"
    return [pattern if shown else pattern + "?"]


@attrs.define
class Scrubber:
    """
    Replace every spelling of one secret with L{MARKER}, counting.

    @ivar count: How many replacements were made so far.
    """

    _pattern: re.Pattern[str] | None
    count: int = 0

    @classmethod
    def for_answer(cls, answer: str) -> Scrubber:
        """A scrubber for C{answer}; it scrubs nothing when C{answer} has no visible character."""
        parts = [piece for char in answer for piece in _spellings(char)]
        if all(part.endswith("?") for part in parts):
            return cls(None)  # empty, or all control characters: nothing would show
        return cls(re.compile("".join(parts), re.IGNORECASE))

    def text(self, text: str) -> str:
        """C{text} with every spelling of the secret replaced."""
        if self._pattern is None or not text:
            return text
        cleaned, found = self._pattern.subn(MARKER, text)
        self.count += found
        return cleaned

    def optional(self, text: str | None) -> str | None:
        """As L{text}, passing C{None} through."""
        return None if text is None else self.text(text)

    def result(self, result: GeminiResult) -> GeminiResult:
        """
        C{result} with the secret scrubbed from everything the capsule
        controls: lines, links, feed entries, content, prompt, redirect
        target, certificate message, and an error's message, meta and
        advice.  Its C{request_info.input_redacted} says how many times the
        secret was found: what it already said (the body scrubbed before it
        was cut into windows) plus this scrubber's count.
        """
        clean = self.text
        if isinstance(result, GemtextResult):
            result = attrs.evolve(
                result,
                lines=tuple(self._line(line) for line in result.lines),
                links=tuple(self._link(link) for link in result.links),
                feed_entries=tuple(self._entry(entry) for entry in result.feed_entries),
                lang=self.optional(result.lang),
            )
        elif isinstance(result, PartialLineResult):
            result = attrs.evolve(result, text=clean(result.text))
        elif isinstance(result, SuccessResult):
            mime = attrs.evolve(
                result.mime,
                lang=self.optional(result.mime.lang),
                params=self._quietly(result.mime.params),
            )
            result = attrs.evolve(result, content=clean(result.content), mime=mime)
        elif isinstance(result, InputResult):
            result = attrs.evolve(result, prompt=clean(result.prompt))
        elif isinstance(result, RedirectResult):
            result = attrs.evolve(result, new_url=clean(result.new_url))
        elif isinstance(result, CertificateResult):
            result = attrs.evolve(result, message=clean(result.message))
        elif isinstance(result, FetchFailure):
            result = attrs.evolve(result, error=self.error(result.error))
        request_info = result.request_info
        assert isinstance(request_info, GeminiRequestInfo)  # a Gemini result's
        before = request_info.input_redacted or 0
        info = attrs.evolve(request_info, input_redacted=before + self.count)
        return attrs.evolve(result, request_info=info)

    def _quietly(self, params: dict[str, str]) -> dict[str, str]:
        """
        C{params} scrubbed without counting: they repeat what C{charset} and
        C{lang} say (counted there) or are never shown, but a library caller
        may read them.
        """
        count = self.count
        try:
            return {name: self.text(value) for name, value in params.items()}
        finally:
            self.count = count

    def error(self, error: GophergemError) -> GophergemError:
        """C{error} with the secret scrubbed from its message, meta and advice."""
        scrubbed: Any = attrs.evolve(
            error,
            message=self.text(error.message),
            meta=self.optional(error.meta),
            next_step=self.optional(error.next_step),
        )
        scrubbed.__cause__ = error.__cause__
        return scrubbed  # type: ignore[no-any-return]

    def _link(self, link: Link) -> Link:
        return Link(self.text(link.url), self.optional(link.text))

    def _line(self, line: GemtextLine) -> GemtextLine:
        return attrs.evolve(
            line,
            content=self.text(line.content),
            text=self.optional(line.text),
            link=None if line.link is None else self._link(line.link),
            alt_text=self.optional(line.alt_text),
            language=self.optional(line.language),
        )

    def _entry(self, entry: FeedEntry) -> FeedEntry:
        return FeedEntry(self.text(entry.date), self.text(entry.title), self.text(entry.url))
