# -*- test-case-name: tests.test_state_redis -*-
"""
A safe codec for the values the shared response cache holds.

Redis is shared by every replica, and whoever can write to it can put any
bytes under a cache key: what is read back must never be able to run code.
So the values are written as JSON, with a tagged form for what JSON lacks
(bytes, tuples, arrays, enum members, attrs instances), and read back only
into the types the codec was told about.  Nothing is ever imported or
looked up by a name found in the data; pickle is never used.

A value holding anything else (an unknown class, a float that JSON cannot
spell, a dict with non-string keys) cannot be encoded: the cache then keeps
it out of Redis rather than guessing.
"""

from __future__ import annotations

import base64
import enum
import json
from array import array
from collections.abc import Iterable, Mapping
from typing import Any, cast

import attrs

from gophergem.wire import gemini as gemini_wire
from gophergem.wire import gopher as gopher_wire

__all__ = ["Cacheable", "Unreadable", "ValueCodec"]

#: The envelope's format; a replica reading another number treats the entry as a miss.
FORMAT = 1

#: How deeply values may nest (a menu is three levels; this is generous).
_MAX_DEPTH = 32

#: The array type codes a value may use (integers and floats, nothing exotic).
_ARRAY_CODES = frozenset("bBhHiIlLqQfd")


class Unreadable(Exception):
    """Stored bytes that are not a value this codec wrote for these types."""


class Unencodable(Exception):
    """A value holding something the codec does not know how to write."""


def _names(names: Iterable[str]) -> frozenset[str]:
    return frozenset(names)


@attrs.frozen
class Cacheable:
    """
    A type whose values the shared cache may hold.

    @ivar type: An attrs class or an L{enum.Enum}.
    @ivar transient: Fields of an attrs class that are left out (a
        per-process memo, say); read back, they take their defaults, so each
        must have one.
    """

    type: type
    transient: frozenset[str] = attrs.field(default=frozenset(), converter=_names)


#: The value types below the fetcher that cached downloads are made of.
WIRE_TYPES: tuple[Cacheable, ...] = (
    Cacheable(gopher_wire.Category),
    Cacheable(gopher_wire.MenuItem),
    Cacheable(gopher_wire.Menu),
    Cacheable(gopher_wire.TextBody),
    Cacheable(gemini_wire.ResponseHeader),
    Cacheable(gemini_wire.MimeType),
)


@attrs.frozen
class ValueCodec:
    """
    Turn values of known types into JSON bytes and back.

    Build it with L{ValueCodec.of}.
    """

    _by_name: Mapping[str, Cacheable]
    _names: Mapping[type, str]

    @classmethod
    def of(cls, cacheable: Iterable[type | Cacheable] = ()) -> ValueCodec:
        """
        A codec for L{WIRE_TYPES} and C{cacheable} (the download types of
        the pipelines, which live above this layer and are handed in).
        """
        by_name: dict[str, Cacheable] = {}
        for entry in (*WIRE_TYPES, *cacheable):
            spec = entry if isinstance(entry, Cacheable) else Cacheable(entry)
            if not (attrs.has(spec.type) or issubclass(spec.type, enum.Enum)):
                raise TypeError(f"{spec.type!r} is neither an attrs class nor an Enum")
            name = spec.type.__qualname__
            known = by_name.get(name)
            if known is not None and known.type is not spec.type:
                raise ValueError(f"two cacheable types are named {name}")
            by_name[name] = spec
        return cls(by_name, {spec.type: name for name, spec in by_name.items()})

    def encode(self, value: object, stored_at: float) -> bytes:
        """
        Return C{value} and the time it was stored as JSON bytes.

        @raise Unencodable: When C{value} holds anything this codec does not know.
        """
        envelope = {"format": FORMAT, "at": stored_at, "value": self._out(value, 0)}
        try:
            return json.dumps(envelope, allow_nan=False, separators=(",", ":")).encode()
        except ValueError as error:
            raise Unencodable("not representable in JSON") from error

    def decode(self, data: bytes) -> tuple[object, float]:
        """
        Return C{(value, stored_at)} from bytes L{encode} wrote.

        @raise Unreadable: When C{data} is anything else.
        """
        try:
            envelope = json.loads(data)
        except (ValueError, RecursionError) as error:
            raise Unreadable("not JSON") from error
        if not isinstance(envelope, dict) or envelope.get("format") != FORMAT:
            raise Unreadable("not an entry of this format")
        stored_at = envelope.get("at")
        if not isinstance(stored_at, int | float) or isinstance(stored_at, bool):
            raise Unreadable("no time stored")
        return self._in(envelope.get("value"), 0), float(stored_at)

    # --- writing --------------------------------------------------------------------

    def _out(self, value: object, depth: int) -> Any:
        if depth > _MAX_DEPTH:
            raise Unencodable("nested too deeply")
        if value is None or isinstance(value, bool | int | str):
            return value
        if isinstance(value, float):
            return value
        inner = depth + 1
        if isinstance(value, bytes | bytearray):
            tag = "bytes" if isinstance(value, bytes) else "bytearray"
            return {"$": tag, "v": base64.b64encode(value).decode("ascii")}
        if isinstance(value, list):
            return [self._out(item, inner) for item in value]
        if isinstance(value, tuple) and type(value) is tuple:
            return {"$": "tuple", "v": [self._out(item, inner) for item in value]}
        if isinstance(value, array):
            if value.typecode not in _ARRAY_CODES:
                raise Unencodable(f"array of {value.typecode!r}")
            return {"$": "array", "c": value.typecode, "v": value.tolist()}
        if type(value) is dict:
            if not all(isinstance(key, str) for key in value):
                raise Unencodable("a dict with keys that are not strings")
            return {"$": "dict", "v": {key: self._out(item, inner) for key, item in value.items()}}
        name = self._names.get(type(value))
        if name is None:
            raise Unencodable(f"an instance of {type(value).__qualname__}")
        if isinstance(value, enum.Enum):
            return {"$": "enum", "n": name, "v": value.name}
        spec = self._by_name[name]
        fields = {
            field.name: self._out(getattr(value, field.name), inner)
            for field in _fields(type(value))
            if field.init and field.name not in spec.transient
        }
        return {"$": "attrs", "n": name, "f": fields}

    # --- reading --------------------------------------------------------------------

    def _in(self, data: Any, depth: int) -> Any:
        if depth > _MAX_DEPTH:
            raise Unreadable("nested too deeply")
        if data is None or isinstance(data, bool | int | float | str):
            return data
        inner = depth + 1
        if isinstance(data, list):
            return [self._in(item, inner) for item in data]
        if not isinstance(data, dict):
            raise Unreadable("an unknown JSON value")
        tag = data.get("$")
        try:
            if tag in ("bytes", "bytearray"):
                raw = base64.b64decode(_str(data["v"]), validate=True)
                return raw if tag == "bytes" else bytearray(raw)
            if tag == "tuple":
                return tuple(self._in(item, inner) for item in _list(data["v"]))
            if tag == "array":
                code = _str(data["c"])
                if code not in _ARRAY_CODES:
                    raise Unreadable("an unknown array type")
                return array(code, _list(data["v"]))
            if tag == "dict":
                items = data["v"]
                if not isinstance(items, dict):
                    raise Unreadable("a dict that is not one")
                return {key: self._in(item, inner) for key, item in items.items()}
            if tag == "enum":
                spec = self._spec(data)
                if not issubclass(spec.type, enum.Enum):
                    raise Unreadable("not an enum")
                return spec.type[_str(data["v"])]
            if tag == "attrs":
                return self._instance(data, inner)
        except (KeyError, TypeError, ValueError, OverflowError) as error:
            raise Unreadable(f"a malformed {tag!r} value") from error
        raise Unreadable("an unknown tag")

    def _spec(self, data: dict[str, Any]) -> Cacheable:
        spec = self._by_name.get(_str(data["n"]))
        if spec is None:
            raise Unreadable("a type this codec was not told about")
        return spec

    def _instance(self, data: dict[str, Any], depth: int) -> object:
        spec = self._spec(data)
        if not attrs.has(spec.type):
            raise Unreadable("not an attrs class")
        given = data["f"]
        if not isinstance(given, dict):
            raise Unreadable("fields that are not a mapping")
        wanted = {
            field.name: field
            for field in _fields(spec.type)
            if field.init and field.name not in spec.transient
        }
        if set(given) - set(wanted):
            raise Unreadable("fields the type does not have")
        arguments = {
            (wanted[name].alias or name): self._in(item, depth) for name, item in given.items()
        }
        return spec.type(**arguments)


def _fields(cls: type) -> tuple[attrs.Attribute[Any], ...]:
    """The attrs fields of C{cls} (an attrs class, checked when it was registered)."""
    found: tuple[attrs.Attribute[Any], ...] = attrs.fields(cast(Any, cls))
    return found


def _str(value: object) -> str:
    if not isinstance(value, str):
        raise TypeError("expected a string")
    return value


def _list(value: object) -> list[Any]:
    if not isinstance(value, list):
        raise TypeError("expected a list")
    return value
