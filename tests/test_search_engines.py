"""
Tests for L{gophergem.search.engines}: engine settings, query URLs, the robots.txt
path, and results read from a Gemini page or a Gopher menu.  Examples built
on the shapes of real engines (TLGS, Veronica-2) plus hypothesis properties.
"""

from __future__ import annotations

from urllib.parse import unquote_to_bytes

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gophergem.search.engines import (
    DEFAULT_GEMINI_ENGINES,
    DEFAULT_GOPHER_ENGINES,
    Engine,
    SearchHit,
    default_engines,
    gemtext_hits,
    menu_hits,
    parse_engines,
    pick_engine,
    query_url,
    robots_path,
    robots_paths,
)
from gophergem.url import GeminiURL, GopherURL
from gophergem.wire.gemtext import Link, parse_gemtext
from gophergem.wire.gopher import MAX_TITLE_CHARS, MenuItem, parse_menu

TLGS = Engine("gemini://tlgs.one/search", "gemini")
VERONICA = Engine("gopher://gopher.floodgap.com/7/v2/vs", "gopher")


# --- settings ------------------------------------------------------------------------


def test_default_gemini_engines() -> None:
    """The Gemini defaults are Kennedy, TLGS and geminispace.info, in that order."""
    assert [e.url for e in default_engines("gemini")] == [
        "gemini://kennedy.gemi.dev/search",
        "gemini://tlgs.one/search",
        "gemini://geminispace.info/search",
    ]
    assert all(e.where == "gemini" for e in default_engines("gemini"))
    assert len(DEFAULT_GEMINI_ENGINES) == 3


def test_default_gopher_engine() -> None:
    """The Gopher default is Veronica-2, kept in its canonical spelling (port 70 left out)."""
    assert DEFAULT_GOPHER_ENGINES == ("gopher://gopher.floodgap.com:70/7/v2/vs",)
    assert default_engines("gopher") == (VERONICA,)


@pytest.mark.parametrize(
    "value",
    [
        "gemini://a.example/search,gemini://b.example/s",
        "gemini://a.example/search, gemini://b.example/s",
        "gemini://a.example/search gemini://b.example/s",
        " gemini://a.example/search\n\tgemini://b.example/s ,",
        '["gemini://a.example/search", "gemini://b.example/s"]',
    ],
)
def test_separators(value: str) -> None:
    """Engines are separated by commas or whitespace, or given as a JSON array."""
    assert parse_engines(value, "gemini") == (
        Engine("gemini://a.example/search", "gemini"),
        Engine("gemini://b.example/s", "gemini"),
    )


def test_canonical_and_deduplicated() -> None:
    """Engines are kept canonically; one named twice is kept once, at its first place."""
    value = "GEMINI://B.Example:1965/s gemini://a.example/x/../search gemini://b.example/s"
    assert [e.url for e in parse_engines(value, "gemini")] == [
        "gemini://b.example/s",
        "gemini://a.example/search",
    ]


@pytest.mark.parametrize(
    ("value", "where", "fragment"),
    [
        ("gopher://gopher.floodgap.com/7/v2/vs", "gemini", "is not a gemini:// URL"),
        ("gemini://tlgs.one/search", "gopher", "is not a gopher:// URL"),
        ("https://example.com/search", "gemini", "is not a gemini:// URL"),
        ("tlgs.one/search", "gemini", "is not a gemini:// URL"),
        ("gemini:///search", "gemini", "is not a usable gemini URL"),
        ("gemini://user@tlgs.one/search", "gemini", "is not a usable gemini URL"),
        ("gemini://tlgs.one/search?foo", "gemini", "already has a query"),
        ("gemini://tlgs.one/search?", "gemini", "already has a query"),
        ("gopher://gopher.floodgap.com/1/v2", "gopher", "is a type-1 item"),
        ("gopher://gopher.floodgap.com", "gopher", "is a type-1 item"),
        ("gopher://gopher.floodgap.com/7/v2/vs%09foo", "gopher", "already carries search"),
        ("gopher://gopher.floodgap.com/7/v2/vs?foo", "gopher", "already carries search"),
        ("gopher://gopher.floodgap.com:0/7/v2/vs", "gopher", "is not a usable gopher URL"),
        ("gemini://tlgs.one/" + "a" * 1100, "gemini", "leaves no room for a query"),
    ],
)
def test_bad_entry(value: str, where: str, fragment: str) -> None:
    """A bad entry is refused with one line naming it and what is wrong."""
    setting = f"gemini://ok.example/search, {value}" if where == "gemini" else value
    with pytest.raises(ValueError, match=r".") as caught:
        parse_engines(setting, where)
    message = str(caught.value)
    assert fragment in message
    assert value[:40] in message
    assert "\n" not in message


@pytest.mark.parametrize("value", ["", "  ", ",", " , ,", "[]"])
def test_names_nothing(value: str) -> None:
    """A setting that names no engine is refused, not read as an empty list."""
    with pytest.raises(ValueError, match="names no search engine"):
        parse_engines(value, "gemini")


@pytest.mark.parametrize("value", ['["gemini://a.example/s", 3]', '[{"a": 1}]', "[not json"])
def test_bad_json(value: str) -> None:
    """Text that starts like a JSON array must be an array of strings."""
    with pytest.raises(ValueError, match="JSON array"):
        parse_engines(value, "gemini")


def test_bad_where() -> None:
    """Only Gemini and Gopher can be searched."""
    with pytest.raises(ValueError, match="gemini or gopher"):
        parse_engines("gemini://tlgs.one/search", "web")
    with pytest.raises(ValueError, match="gemini or gopher"):
        default_engines("web")


def test_control_characters_are_not_echoed() -> None:
    """An entry with control or bidi characters is named without them."""
    with pytest.raises(ValueError, match="not a gemini") as caught:
        parse_engines("gemin\x1b[31mi://x\u202e", "gemini")
    assert "\x1b" not in str(caught.value)
    assert "\u202e" not in str(caught.value)


# --- picking an engine ---------------------------------------------------------------


ENGINES = default_engines("gemini") + default_engines("gopher")


def test_pick_first_by_default() -> None:
    """Without a URL, the first engine is picked."""
    assert pick_engine(ENGINES, None) == ENGINES[0]


@pytest.mark.parametrize(
    ("wanted", "url"),
    [
        ("gemini://tlgs.one/search", "gemini://tlgs.one/search"),
        ("GEMINI://TLGS.ONE:1965/search#x", "gemini://tlgs.one/search"),
        ("gopher://gopher.floodgap.com:70/7/v2/vs", "gopher://gopher.floodgap.com/7/v2/vs"),
        (" gopher://Gopher.Floodgap.com/7/v2/vs ", "gopher://gopher.floodgap.com/7/v2/vs"),
    ],
)
def test_pick_by_url(wanted: str, url: str) -> None:
    """An engine is picked by its URL, in any spelling of it."""
    assert pick_engine(ENGINES, wanted).url == url


@pytest.mark.parametrize(
    "wanted",
    ["gemini://evil.example/search", "gemini://tlgs.one/search?x", "nonsense", ""],
)
def test_pick_unknown(wanted: str) -> None:
    """A URL that names no configured engine is refused, naming it."""
    with pytest.raises(ValueError, match="is not a configured search engine") as caught:
        pick_engine(ENGINES, wanted)
    assert repr(wanted) in str(caught.value)


def test_pick_from_nothing() -> None:
    """With no engine configured, there is nothing to pick."""
    with pytest.raises(ValueError, match="no search engine is configured"):
        pick_engine((), None)


# --- query URLs ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("query", "url"),
    [
        ("gopher holes", "gemini://tlgs.one/search?gopher%20holes"),
        ("a+b", "gemini://tlgs.one/search?a%2Bb"),
        ("site:example.org", "gemini://tlgs.one/search?site%3Aexample.org"),
        ("café?&=#", "gemini://tlgs.one/search?caf%C3%A9%3F%26%3D%23"),
    ],
)
def test_gemini_query_url(query: str, url: str) -> None:
    """A Gemini query is the engine URL's query, percent-encoded with spaces as %20."""
    assert query_url(TLGS, query) == url


def test_gemini_query_too_long() -> None:
    """A query that makes the URL longer than 1024 bytes is refused, without quoting it."""
    with pytest.raises(ValueError, match=r"^query too long") as caught:
        query_url(TLGS, "secretword " * 100)
    assert "secretword" not in str(caught.value)


def test_gemini_query_at_the_limit() -> None:
    """A query that fills the URL to exactly 1024 bytes is sent."""
    room = 1024 - len("gemini://tlgs.one/search?")
    assert len(query_url(TLGS, "x" * room).encode()) == 1024
    with pytest.raises(ValueError, match="too long"):
        query_url(TLGS, "x" * (room + 1))


def test_gopher_query_url() -> None:
    """A Gopher query travels as the type-7 URL's search terms, after %09."""
    url = query_url(VERONICA, "gopher holes")
    assert url == "gopher://gopher.floodgap.com/7/v2/vs%09gopher%20holes"
    parsed = GopherURL.from_text(url)
    assert (parsed.selector, parsed.search) == (b"/v2/vs", b"gopher holes")


@pytest.mark.parametrize("query", ["a\tb", "a\r\nb", "a\x00b"])
def test_gopher_query_refuses_separators(query: str) -> None:
    """A Gopher query may not hold a tab, line break or NUL (they would end it early)."""
    with pytest.raises(ValueError, match="tab, line break or NUL"):
        query_url(VERONICA, query)


@pytest.mark.parametrize("engine", [TLGS, VERONICA])
@pytest.mark.parametrize("query", ["", "   ", "\t"])
def test_empty_query(engine: Engine, query: str) -> None:
    """An empty query is refused: the engine would only ask for one."""
    with pytest.raises(ValueError, match="query is empty"):
        query_url(engine, query)


def test_unusable_engine() -> None:
    """An engine built by hand from a bad URL gives a ValueError, like every other failure."""
    with pytest.raises(ValueError, match="not a usable gemini search engine"):
        query_url(Engine("gemini://", "gemini"), "x")
    with pytest.raises(ValueError, match="not a usable gopher search engine"):
        robots_path(Engine("gemini://tlgs.one/search", "gopher"))


# --- robots.txt ----------------------------------------------------------------------


def test_robots_path() -> None:
    """The robots.txt rule that matters is the one for the search path or selector."""
    assert robots_path(TLGS) == "/search"
    assert robots_path(VERONICA) == "/v2/vs"
    assert robots_path(Engine("gopher://h.example/7vs", "gopher")) == "/vs"


def test_robots_paths() -> None:
    """Every spelling the robots.txt gate tests covers the search path and its query form."""
    assert robots_paths(TLGS) == ["/search", "/search?"]
    assert robots_paths(VERONICA) == ["/7/v2/vs", "7/v2/vs", "/v2/vs"]


# --- results from Gemini -------------------------------------------------------------

#: The shape of a TLGS answer: navigation as relative links, ten results as
#: absolute links labelled with title, type and size.
TLGS_PAGE = """\
# TLGS Search Results
=> / 🏠 Home
=> /search 🔍 Search
=> /backlinks?gemini%3A%2F%2Fexample.org%2F Backlinks

You are searching for: "gopher holes"

=> gemini://example.org/holes.gmi Digging gopher holes (text/gemini, 3KB)
* Some snippet of the page.
=> gemini://gemlog.example.net/2024/holes/ Holes, a gemlog (text/gemini, 1KB)
=> gemini://example.org/holes.gmi Digging gopher holes, listed again
=> gemini://bare.example/
=> gopher://gopher.example.com/0/holes.txt A hole in Gopherspace
=> gemini://tlgs.one/known_hosts Known hosts
=> mailto:admin@example.org Mail the admin
=> /search/2?gopher%20holes Next page
"""


def test_tlgs_page() -> None:
    """Results are the absolute links to other hosts; the engine's navigation is left out."""
    page = "gemini://tlgs.one/search?gopher%20holes"
    document = parse_gemtext(TLGS_PAGE, GeminiURL.from_text(page))
    links = [line.link for line in document.lines if line.link is not None]
    assert gemtext_hits(TLGS, page, links) == [
        SearchHit("Digging gopher holes (text/gemini, 3KB)", "gemini://example.org/holes.gmi"),
        SearchHit("Holes, a gemlog (text/gemini, 1KB)", "gemini://gemlog.example.net/2024/holes/"),
        SearchHit("gemini://bare.example/", "gemini://bare.example/"),
        SearchHit("A hole in Gopherspace", "gopher://gopher.example.com/0/holes.txt"),
    ]


def test_page_host_is_navigation() -> None:
    """Links to the host the answer came from (after a redirect) are navigation too."""
    links = [Link("gemini://mirror.example/page2", "Next"), Link("gemini://x.example/", "X")]
    hits = gemtext_hits(TLGS, "gemini://mirror.example/search?q", links)
    assert hits == [SearchHit("X", "gemini://x.example/")]


def test_hit_urls_are_canonical() -> None:
    """Result URLs are canonical, so one page listed in two spellings is one result."""
    links = [
        Link("gemini://Example.org:1965/a/../b", "B"),
        Link("gemini://example.org/b", "B again"),
        Link("https://example.com/web", "Web"),
    ]
    assert gemtext_hits(TLGS, "gemini://tlgs.one/search?q", links) == [
        SearchHit("B", "gemini://example.org/b"),
        SearchHit("Web", "https://example.com/web"),
    ]


def test_hit_titles_are_sanitised_and_clipped() -> None:
    """A hostile title loses its control characters and is cut to a window-sized line."""
    links = [
        Link("gemini://a.example/", "\x1b[31mred\u202e text\n"),
        Link("gemini://b.example/", "x" * 5000),
    ]
    hits = gemtext_hits(TLGS, "gemini://tlgs.one/search?q", links)
    assert hits[0].title == "red text"
    assert len(hits[1].title) == MAX_TITLE_CHARS
    assert hits[1].title.endswith("…")


# --- results from Gopher -------------------------------------------------------------

#: The shape of a Veronica-2 answer: information lines, results on many
#: hosts, and links back into the engine's own service.
VERONICA_MENU = (
    b"i Veronica-2 results for: gopher holes\tfake\t(NULL)\t0\r\n"
    b"i\tfake\t(NULL)\t0\r\n"
    b"1Gopher holes directory\t/holes\texample.org\t70\r\n"
    b"0About gopher holes\t/holes.txt\texample.org\t70\r\n"
    b"7Search gopher holes\t/search\thole.example.net\t7070\r\n"
    b"3Something went wrong\t\terror.host\t1\r\n"
    b"hA web page\tURL:https://example.com/holes\texample.org\t70\r\n"
    b"1Floodgap home\t/\tgopher.floodgap.com\t70\r\n"
    b"1Gopher holes directory, again\t/holes\texample.org\t70\r\n"
    b"7New search\t/v2/vs\tgopher.floodgap.com\t70\r\n"
    b"1More results\t/v2/vs?gopher%20holes&2\tgopher.floodgap.com\t70\r\n"
    b"1About Veronica-2\t/v2\tgopher.floodgap.com\t70\r\n"
    b"0Veronica-2 statistics\t/v2/stats.txt\tgopher.floodgap.com\t70\r\n"
    b"7Another floodgap search\t/other\tgopher.floodgap.com\t70\r\n"
    b".\r\n"
)


def test_veronica_menu() -> None:
    """Every linkable item is a result, except the engine's own service and repeats."""
    menu = parse_menu(VERONICA_MENU, "gopher.floodgap.com", 70)
    assert menu_hits(VERONICA, menu.items) == [
        SearchHit("Gopher holes directory", "gopher://example.org/1/holes"),
        SearchHit("About gopher holes", "gopher://example.org/0/holes.txt"),
        SearchHit("Search gopher holes", "gopher://hole.example.net:7070/7/search"),
        SearchHit("A web page", "https://example.com/holes"),
        SearchHit("Floodgap home", "gopher://gopher.floodgap.com/1/"),
    ]


def test_engine_on_another_port() -> None:
    """The engine's selectors on another port of its host are other services, kept."""
    url = "gopher://gopher.floodgap.com:7070/7/v2/vs"
    items = [MenuItem("7", "Search", b"/v2/vs", "gopher.floodgap.com", 7070, url)]
    assert [h.url for h in menu_hits(VERONICA, items)] == [
        "gopher://gopher.floodgap.com:7070/7/v2/vs"
    ]


def test_engine_without_folder() -> None:
    """An engine whose selector has no folder drops only its own searches."""
    engine = Engine("gopher://h.example/7vs", "gopher")
    items = [
        MenuItem("7", "Again", b"vs", "h.example", 70, "gopher://h.example/7vs"),
        MenuItem("1", "Home", b"", "h.example", 70, "gopher://h.example/1"),
        MenuItem("0", "Text", b"/t.txt", "h.example", 70, "gopher://h.example/0/t.txt"),
    ]
    assert [h.title for h in menu_hits(engine, items)] == ["Home", "Text"]


# --- properties ----------------------------------------------------------------------

_URLISH = st.one_of(
    st.text(max_size=80),
    st.builds(
        lambda scheme, rest: f"{scheme}{rest}",
        st.sampled_from(["gemini://", "gopher://", "https://", "mailto:", "GEMINI://", ""]),
        st.text(max_size=60),
    ),
    st.sampled_from(
        [
            "gemini://tlgs.one/search",
            "gopher://gopher.floodgap.com:70/7/v2/vs",
            "gopher://gopher.floodgap.com/1/v2",
            "gemini://[::1]:1965/x",
            "gemini://[::1",
            "https://[::1/",
            "http://x:99999/",
            "gopher://h/7sel%09x",
        ]
    ),
)


@settings(max_examples=300, deadline=None)
@given(value=st.one_of(st.text(max_size=200), st.lists(_URLISH, max_size=5).map(",".join)))
def test_parse_engines_raises_only_value_error(value: str) -> None:
    """Any setting gives engines or a one-line ValueError, and every engine is usable."""
    for where in ("gemini", "gopher"):
        try:
            engines = parse_engines(value, where)
        except ValueError as error:
            assert "\n" not in str(error) and str(error)
            continue
        for engine in engines:
            assert engine.where == where
            assert pick_engine(engines, engine.url) == engine
            assert robots_path(engine).startswith("/")


@settings(max_examples=300, deadline=None)
@given(
    engine=st.sampled_from(default_engines("gemini") + default_engines("gopher")),
    query=st.one_of(st.text(), st.text(min_size=300, max_size=1200)),
)
def test_query_url_round_trip(engine: Engine, query: str) -> None:
    """query_url raises only ValueError, and its URL parses back to the same query."""
    try:
        url = query_url(engine, query)
    except ValueError as error:
        assert "\n" not in str(error)
        return
    if engine.where == "gemini":
        gemini = GeminiURL.from_text(url)
        assert gemini.without_query().to_text() == engine.url
        assert gemini.query is not None
        assert unquote_to_bytes(gemini.query).decode("utf-8") == query
        assert "+" not in gemini.query
        assert len(gemini.request_line()) <= 1026
    else:
        gopher = GopherURL.from_text(url)
        assert gopher.with_search(None).to_text() == engine.url
        assert gopher.search == query.encode("utf-8")


@settings(max_examples=200, deadline=None)
@given(wanted=st.one_of(st.none(), _URLISH))
def test_pick_engine_raises_only_value_error(wanted: str | None) -> None:
    """Any engine URL picks a configured engine or gives a ValueError."""
    try:
        assert pick_engine(ENGINES, wanted) in ENGINES
    except ValueError as error:
        assert "\n" not in str(error)


def _check_hits(hits: list[SearchHit], own_host: str) -> None:
    urls = [hit.url for hit in hits]
    assert len(urls) == len(set(urls))
    for hit in hits:
        assert hit.title and len(hit.title) <= MAX_TITLE_CHARS
        assert hit.title == hit.title.strip()
        assert not any(c.isspace() for c in hit.url)
        assert f"//{own_host}/" not in hit.url


@settings(max_examples=300, deadline=None)
@given(
    links=st.lists(st.builds(Link, _URLISH, st.one_of(st.none(), st.text())), max_size=8),
    page_url=_URLISH,
    engine=st.sampled_from(ENGINES),
)
def test_gemtext_hits_never_raise(links: list[Link], page_url: str, engine: Engine) -> None:
    """Any links give results with titles, unique URLs, none on the engine's host."""
    hits = gemtext_hits(engine, page_url, links)
    _check_hits(hits, "tlgs.one" if engine.url.startswith("gemini://tlgs") else "\x00")


@settings(max_examples=200, deadline=None)
@given(text=st.text(max_size=500))
def test_gemtext_hits_from_any_page(text: str) -> None:
    """Any page parsed as gemtext gives results, never an error."""
    page = GeminiURL.from_text("gemini://tlgs.one/search?q")
    links = [line.link for line in parse_gemtext(text, page).lines if line.link is not None]
    _check_hits(gemtext_hits(TLGS, page.to_text(), links), "tlgs.one")


@settings(max_examples=300, deadline=None)
@given(
    items=st.lists(
        st.builds(
            MenuItem,
            st.text(max_size=2),
            st.text(max_size=40),
            st.binary(max_size=20),
            st.text(max_size=30),
            st.integers(),
            _URLISH,
        ),
        max_size=8,
    ),
    engine=st.sampled_from(ENGINES),
)
def test_menu_hits_never_raise(items: list[MenuItem], engine: Engine) -> None:
    """Any menu items give results with titles and unique URLs."""
    _check_hits(menu_hits(engine, items), "\x00")


@settings(max_examples=200, deadline=None)
@given(data=st.binary(max_size=600))
def test_menu_hits_from_any_menu(data: bytes) -> None:
    """Any bytes parsed as a menu give results, none pointing back at Veronica-2's service."""
    hits = menu_hits(VERONICA, parse_menu(data, "gopher.floodgap.com", 70).items)
    _check_hits(hits, "\x00")
    for hit in hits:
        if hit.url.startswith("gopher://gopher.floodgap.com/"):
            item = GopherURL.from_text(hit.url)
            assert item.item_type != "7"
            assert item.selector != b"/v2" and not item.selector.startswith(b"/v2/")
