from __future__ import annotations

import pytest

from pr_context.models import ParsedFile
from pr_context.parse.docs import MAX_SECTION_CHARS, parse_markdown, parse_rst

_GUIDE_MD = """\
# httpx-lite

A small HTTP client. Call `Client.get(url)` or `fetch()`.

## Install

```bash
# this is a shell comment, not a heading
pip install httpx-lite
```

### From source

```python
# Clone first
from httpx_lite import Client
client = Client(timeout=3.0)
response = client.get("https://example.com")
```

Usage
-----

See {py:func}`httpx_lite.fetch` for details.

~~~
## not a heading either
~~~

API reference
=============

::: httpx_lite.client.Client
"""

_GUIDE_RST = """\
==========
httpx-lite
==========

Intro with ``Client.close()`` and `default_role`.

Installation
============

Install it::

    pip install httpx-lite
    httpx_lite.configure(debug=True)

Quick start
-----------

.. code-block:: python

   Title
   =====
   client = httpx_lite.Client()

API
===

.. currentmodule:: httpx_lite

.. autoclass:: httpx_lite.Client
   :members:

.. py:method:: Client.get(url, **kwargs)

Use :meth:`~httpx_lite.Client.get` or :func:`the helper <httpx_lite.fetch>`.

>>> httpx_lite.fetch("x")

Errors
------

Raised as :exc:`httpx_lite.HTTPError`.
"""


def _outline(parsed: ParsedFile) -> list[tuple[int, int, str]]:
    return [(c.start_line, c.end_line, c.context) for c in parsed.chunks]


def _refs(parsed: ParsedFile) -> list[tuple[str, str, str | None, int, int, str | None]]:
    return [(r.name, r.kind, r.receiver, r.line, r.column, r.enclosing) for r in parsed.references]


def test_markdown_sections() -> None:
    parsed = parse_markdown("docs/guide.md", _GUIDE_MD, "docs")
    assert (parsed.language, parsed.role) == ("markdown", "docs")
    assert _outline(parsed) == [
        (1, 3, "path: docs/guide.md\nsection: httpx-lite"),
        (5, 10, "path: docs/guide.md\nsection: httpx-lite > Install"),
        (12, 19, "path: docs/guide.md\nsection: httpx-lite > Install > From source"),
        (21, 28, "path: docs/guide.md\nsection: httpx-lite > Usage"),
        (30, 33, "path: docs/guide.md\nsection: API reference"),
    ]
    assert all(c.kind == "section" and c.symbol is None for c in parsed.chunks)
    assert parsed.chunks[2].text.startswith("### From source\n\n```python\n# Clone first\n")


def test_markdown_references() -> None:
    parsed = parse_markdown("docs/guide.md", _GUIDE_MD, "docs")
    assert _refs(parsed) == [
        ("get", "mention", "Client", 3, 34, "httpx-lite"),
        ("fetch", "mention", None, 3, 48, "httpx-lite"),
        ("Client", "mention", None, 17, 9, "httpx-lite > Install > From source"),
        ("get", "mention", "client", 18, 18, "httpx-lite > Install > From source"),
        ("httpx_lite.fetch", "directive", None, 24, 14, "httpx-lite > Usage"),
        ("httpx_lite.client.Client", "directive", None, 33, 4, "API reference"),
    ]
    assert parsed.definitions == parsed.imports == ()


def test_rst_sections() -> None:
    parsed = parse_rst("docs/index.rst", _GUIDE_RST, "docs")
    assert parsed.language == "rst"
    assert _outline(parsed) == [
        (1, 5, "path: docs/index.rst\nsection: httpx-lite"),
        (7, 13, "path: docs/index.rst\nsection: httpx-lite > Installation"),
        (15, 22, "path: docs/index.rst\nsection: httpx-lite > Installation > Quick start"),
        (24, 36, "path: docs/index.rst\nsection: httpx-lite > API"),
        (38, 41, "path: docs/index.rst\nsection: httpx-lite > API > Errors"),
    ]


def test_rst_references() -> None:
    parsed = parse_rst("docs/index.rst", _GUIDE_RST, "docs")
    api = "httpx-lite > API"
    assert _refs(parsed) == [
        ("close", "mention", "Client", 5, 20, "httpx-lite"),
        ("default_role", "mention", None, 5, 35, "httpx-lite"),
        ("configure", "mention", "httpx_lite", 13, 15, "httpx-lite > Installation"),
        ("Client", "mention", "httpx_lite", 22, 23,
         "httpx-lite > Installation > Quick start"),
        ("httpx_lite", "directive", None, 27, 19, api),
        ("httpx_lite.Client", "directive", None, 29, 15, api),
        ("Client.get", "directive", None, 32, 15, api),
        ("httpx_lite.Client.get", "directive", None, 34, 12, api),
        ("httpx_lite.fetch", "directive", None, 34, 57, api),
        ("fetch", "mention", "httpx_lite", 36, 15, api),
        ("httpx_lite.HTTPError", "directive", None, 41, 16, "httpx-lite > API > Errors"),
    ]


@pytest.mark.parametrize(
    ("text", "outline"),
    [
        # text before the first heading is its own section; closing hashes are dropped
        ("Preface.\n\n# Title #\nBody\n", [(1, 1, None), (3, 4, "Title")]),
        # skipped levels: an h2 after an h3 pops back to its h1
        ("# A\n### B\n## C\n", [(1, 1, "A"), (2, 2, "A > B"), (3, 3, "A > C")]),
        # no space after # is a hashtag; indented four spaces is code
        ("#hashtag\n    # code\ntext\n", [(1, 3, None)]),
        # front matter is not a setext heading
        ("---\ntitle: x\n---\n# Real\n", [(1, 3, None), (4, 4, "Real")]),
        # a rule after a list item is a thematic break, not a heading
        ("# T\n\n- item\n---\nafter\n", [(1, 5, "T")]),
        # a heading inside an HTML comment or a four-backtick fence does not count
        ("# T\n<!--\n# hidden\n-->\n````md\n```\n# shown as code\n```\n````\n",
         [(1, 9, "T")]),
        # a two-line paragraph underlined becomes one setext heading
        ("intro\n\nTwo line\ntitle\n========\nbody\n", [(1, 1, None), (3, 6, "Two line title")]),
        # an unclosed fence runs to the end
        ("# T\n```\n# in code\n", [(1, 3, "T")]),
    ],
)
def test_markdown_heading_rules(text: str, outline: list[tuple[int, int, str | None]]) -> None:
    chunks = parse_markdown("a.md", text, "docs").chunks
    assert [(c.start_line, c.end_line, _section(c.context)) for c in chunks] == outline


@pytest.mark.parametrize(
    ("text", "outline"),
    [
        # levels follow the order adornment styles first appear; overline+underline differs
        ("Top\n***\n\nA\n===\n\nB\n---\n\nC\n===\n",
         [(1, 2, "Top"), (4, 5, "Top > A"), (7, 8, "Top > A > B"), (10, 11, "Top > C")]),
        ("=====\nOuter\n=====\n\nInner\n=====\n", [(1, 3, "Outer"), (5, 6, "Outer > Inner")]),
        # docutils accepts a short underline of at least 4 characters, not fewer
        ("Long title\n----\n", [(1, 2, "Long title")]),
        ("Long title\n--\n", [(1, 2, None)]),
        # a transition between paragraphs and an underline in a literal block
        ("Para one.\n\n----------\n\nPara two::\n\n    Code\n    ====\n", [(1, 8, None)]),
        # the second line of a paragraph cannot be a title
        ("One\nTwo\n===\n", [(1, 3, None)]),
    ],
)
def test_rst_heading_rules(text: str, outline: list[tuple[int, int, str | None]]) -> None:
    chunks = parse_rst("a.rst", text, "docs").chunks
    assert [(c.start_line, c.end_line, _section(c.context)) for c in chunks] == outline


def _section(context: str) -> str | None:
    _, _, section = context.partition("\nsection: ")
    return section or None


def _paragraph(tag: str, lines: int) -> str:
    return "\n".join(f"{tag} line {i} of prose." for i in range(lines))


def test_oversized_section_splits_at_blank_lines_outside_code() -> None:
    code = "```python\n" + "\n\n".join(f"value_{i} = compute({i})" for i in range(29)) + "\n```"
    text = "# Big\n\n" + "\n\n".join([_paragraph("a", 30), code, _paragraph("b", 30)]) + "\n"
    chunks = parse_markdown("docs/big.md", text, "docs").chunks
    assert [(c.start_line, c.end_line) for c in chunks] == [(1, 32), (34, 92), (94, 123)]
    assert {c.context for c in chunks} == {"path: docs/big.md\nsection: Big"}
    assert chunks[1].text.startswith("```python") and chunks[1].text.endswith("```")


def test_code_block_too_big_alone_splits_at_line_boundaries() -> None:
    code = "```python\n" + "\n".join(f"x{i} = f({i})" for i in range(198)) + "\n```"
    chunks = parse_markdown("a.md", "# Huge\n\n" + code, "docs").chunks
    assert [(c.start_line, c.end_line) for c in chunks] == [(1, 1), (3, 82), (83, 162),
                                                            (163, 202)]


def test_character_limit_splits_long_paragraphs() -> None:
    text = "# Wide\n" + "\n".join("w" * 499 for _ in range(20)) + "\n"
    chunks = parse_markdown("a.md", text, "docs").chunks
    assert [(c.start_line, c.end_line) for c in chunks] == [(1, 8), (9, 16), (17, 21)]
    assert all(len(c.text) <= MAX_SECTION_CHARS for c in chunks)


@pytest.mark.parametrize(
    ("line", "found"),
    [
        ("`pkg.mod.f()`", [("f", "mention", "pkg.mod")]),
        ("`@app.route`", [("route", "mention", "app")]),
        ("`Client::new()`", [("new", "mention", "Client")]),
        ("`pip install x`, `--verbose`, `x = 1`, `None`", []),
        ("edit `setup.py` and `config.yaml`", []),
        (":meth:`!pkg.C.m` and :class:`.Session`", [("pkg.C.m", "directive", None),
                                                     ("Session", "directive", None)]),
        (".. autofunction:: pkg.mod.f(a, b)", [("pkg.mod.f", "directive", None)]),
        (".. automodule:: pkg.mod", [("pkg.mod", "directive", None)]),
        (".. function:: make(x)", [("make", "directive", None)]),
    ],
)
def test_rst_line_references(line: str, found: list[tuple[str, str, str | None]]) -> None:
    refs = parse_rst("a.rst", line + "\n", "docs").references
    assert [(r.name, r.kind, r.receiver) for r in refs] == found


@pytest.mark.parametrize(
    ("block", "found"),
    [
        ("```py\nif (x): return self.session.send(req)\n```",
         [("send", "self.session")]),
        ("```js\nconst app = express();\napp.use(router);\n```",
         [("express", None), ("use", "app")]),
        ("```python\nb = pp.Literal('b').set_name('bbb')\nx = 1.5e3\n```",
         [("Literal", "pp"), ("set_name", None)]),
        ("```json\n{\"call\": \"pkg.f()\"}\n```", []),
        ("```bash\npython -m pkg.cli run\n```", []),
        ("```{autofunction} pkg.api.get\n:noindex:\n```", []),
    ],
)
def test_markdown_code_block_mentions(block: str, found: list[tuple[str, str | None]]) -> None:
    refs = parse_markdown("a.md", block + "\n", "docs").references
    assert [(r.name, r.receiver) for r in refs if r.kind == "mention"] == found


def test_myst_directive_fence_is_a_directive() -> None:
    refs = parse_markdown("a.md", "```{autofunction} pkg.api.get\n```\n", "docs").references
    assert [(r.name, r.kind, r.line, r.column) for r in refs] == [
        ("pkg.api.get", "directive", 1, 18)
    ]


def test_crlf_and_empty_input() -> None:
    parsed = parse_markdown("a.md", "# T\r\nUse `f()`\r\n", "docs")
    assert _outline(parsed) == [(1, 2, "path: a.md\nsection: T")]
    assert _refs(parsed) == [("f", "mention", None, 2, 5, "T")]
    assert parse_markdown("a.md", "", "docs").chunks == ()
    assert parse_rst("a.rst", "\n\n", "docs").chunks == ()
