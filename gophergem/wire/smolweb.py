# -*- test-case-name: tests.test_wire_smolurl -*-
"""
One entry point for the small web's URLs: L{parse_url} reads a
C{finger://}, C{nex://}, C{spartan://} or C{titan://} URL into its
scheme's value, free of I/O.
"""

from __future__ import annotations

from collections.abc import Callable

from gophergem.errors import InvalidRequest
from gophergem.url import scheme_of
from gophergem.wire.finger import FINGER_DEFAULT_PORT, FingerURL
from gophergem.wire.nex import NEX_DEFAULT_PORT, NexURL
from gophergem.wire.spartan import SPARTAN_DEFAULT_PORT, SpartanURL
from gophergem.wire.titan import TITAN_DEFAULT_PORT, TitanURL

__all__ = ["DEFAULT_PORTS", "SMOLWEB_SCHEMES", "SmolwebURL", "parse_url"]

SmolwebURL = FingerURL | NexURL | SpartanURL | TitanURL

#: The schemes L{parse_url} reads.
SMOLWEB_SCHEMES = ("finger", "nex", "spartan", "titan")

#: Each scheme's default port.
DEFAULT_PORTS = {
    "finger": FINGER_DEFAULT_PORT,
    "nex": NEX_DEFAULT_PORT,
    "spartan": SPARTAN_DEFAULT_PORT,
    "titan": TITAN_DEFAULT_PORT,
}

_PARSERS: dict[str, Callable[[str], SmolwebURL]] = {
    "finger": FingerURL.from_text,
    "nex": NexURL.from_text,
    "spartan": SpartanURL.from_text,
    "titan": TitanURL.from_text,
}


def parse_url(text: str) -> SmolwebURL:
    """
    Parse a small-web URL into its scheme's value.

    @raise InvalidRequest: If C{text} is none of those schemes' URLs, or
        not a usable one.
    """
    parser = _PARSERS.get(scheme_of(text) if isinstance(text, str) else "")
    if parser is None:
        raise InvalidRequest(
            message="Expected a finger://, nex://, spartan:// or titan:// URL, "
            "written with its scheme."
        )
    return parser(text)
