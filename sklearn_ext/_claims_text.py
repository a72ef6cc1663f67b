"""Where the package's texts quote figures: references, generated regions, bare figures.

Texts quote a figure of the claims ledger in one of three ways:

- reStructuredText (the user guide, docstrings, the examples' text blocks):
  the role ``:claim:`ID``` (``:claim:`ID:ci``` adds the interval,
  ``:claim:`ID:interval``` gives the interval alone, ``:claim:`ID:peer``` the
  peer's score), rendered by Sphinx from the ledger;
- a generated region, rewritten by ``python -m sklearn_ext claims --write``
  (``make claims``) and compared by ``--check``:

  * in Markdown (the README), a template in an HTML comment with
    ``{claim:ID}`` placeholders (the same modifiers), followed by its output::

        <!-- claims:template NAME
        ... {claim:ID} ...
        -->
        <!-- claims:begin NAME -->
        (generated)
        <!-- claims:end NAME -->

  * in reStructuredText (the user guide), a results table::

        .. claims:table RESULTS
           columns: COLUMN; COLUMN; ...
           rows: FIRST-COLUMN VALUE; ...      (optional: all rows by default)

        (generated list-table)

        .. claims:end

A *bare figure* is a number that reads like a measurement (a decimal, a
percentage, a ratio such as ``3x``, a time or a memory size, "4 of 5 seeds")
outside code, roles, links and generated regions. The README and the user
guide may quote none; docstrings and the examples' text may quote none in a
paragraph that speaks of quality or speed. A setting is written as code
(````beta=0.01````), which is not a figure.
"""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

import ast
import re
from dataclasses import dataclass
from pathlib import Path

from sklearn_ext._claims_code import docstring_owners

__all__ = [
    "Finding",
    "bare_figures",
    "claim_references",
    "md_regions",
    "rst_tables",
    "text_sources",
]

ROLE = re.compile(r":claim:`([^`]+)`")
PLACEHOLDER = re.compile(r"\{claim:([^}]+)\}")

_INT = r"[+\-−]?\d+(?:,\d{3})*"
_NUM = _INT + r"(?:\.\d+)?"
FIGURE = re.compile(
    r"(?<![\w.\-/])(?:"
    rf"{_NUM}\s?%"  # a percentage
    rf"|{_NUM}x(?![\w])"  # a ratio
    rf"|{_NUM}\s?(?:ms|s|min|minutes|seconds|hours?|MB|GB|KB|MiB|GiB)(?![\w/])"
    r"|\d+\s+(?:seeds?\s+)?of\s+\d+\s+seeds?"
    r"|\d+\s+seeds?\s+of\s+\d+"
    rf"|{_NUM}\s+times\s+(?:faster|slower|more|less|larger|smaller|fewer|as)\b"
    rf"|{_NUM}[eE][+\-−]?\d+"  # scientific notation
    rf"|{_INT}\.\d+(?!\.\d)"  # a decimal (not a version)
    r")(?![\w.]\d)"
)
# Software versions are not figures.
VERSION = re.compile(
    r"(?i)\b(?:python|scikit-learn|sklearn|torch|pytorch|numpy|scipy|pandas|"
    r"version|cuda|flower|flwr|opacus|sphinx|skops|faiss|faiss-cpu|gymnasium|"
    r"mo-gymnasium|statsmodels|tensorly|mapie|nilearn|skorch|cvxpy|optuna|"
    r"pymoo|implicit|joblib|dask|ray|graspologic|scikit-multilearn|"
    r"sentence-transformers|transformers|dp-accounting|networkx|pot|lcdb|"
    r"oneapi|mkl|openmp|h100|h200|avx|cc by(?:-sa)?|icml)"
    r"\s*\(?\s*(?:[<>=!~]=?\s*)?v?\d+(?:\.\d+)+"
)
# Confidence levels and quantile levels are settings, not figures.
LEVEL = re.compile(
    r"(?i)\b\d+(?:\.\d+)?\s?%\s+(?:[\w-]+\s+){0,3}?"
    r"(?:intervals?|confidence|CIs?|quantiles?|level)\b"
)
# Docstrings and examples quote a figure only where they speak of results.
RESULT_WORDS = re.compile(
    r"(?i)\b(?:acc|accuracy|nmi|ari|f1|macro-f1|micro-f1|mrr|mrr@10|ndcg|recall|"
    r"precision|auc|mse|rmse|mae|regret|hypervolume|hv|faster|slower|speed-?up|"
    r"against|versus|vs|beats?|outperforms?|benchmark|measured|wins?|"
    r"queries/s|closes|closed)\b"
)
WINDOW = 60
# A parameter's default in a numpydoc type line is a setting, not a figure.
_DEFAULT = re.compile(r"default\s*=\s*\S+|default \(?[\d.,\s()]+\)?")
# Inline spans that are not prose (their numbers are code, links or references).
_RST_INLINE = re.compile(
    r"``.+?``"  # literal
    r"|:[\w:.+-]+:`[^`]*`"  # a role, :claim: included
    r"|`[^`]*<[^>]*>`_{1,2}"  # a link with a target
    r"|`[^`]*`_{0,2}"  # interpreted text / reference
    r"|\|[^|\s][^|]*\|"  # substitution
    r"|https?://\S+"
)
_MD_INLINE = re.compile(r"`[^`]*`|\]\([^)]*\)|https?://\S+|<[^>]+>")
# Directives whose content is code, markup or data rather than prose.
_CODE_DIRECTIVES = re.compile(
    r"^\s*\.\.\s+(?:code-block|code|sourcecode|math|plot|image|figure|toctree|"
    r"autosummary|currentmodule|automodule|autoclass|autofunction|literalinclude|"
    r"include|raw|testcode|testoutput|doctest|only|highlight|csv-table|"
    r"list-table|table|rubric|_[\w-]+|\|[^|]+\|)\b"
)


@dataclass
class Finding:
    """A place in a text: file, 1-based line and what was found there."""

    path: str
    line: int
    text: str

    def __str__(self):
        return f"{self.path}:{self.line}: {self.text}"


def text_sources(root):
    """``(relative path, kind)`` of every text that may quote figures.

    ``kind`` is ``"md"`` (the README), ``"rst"`` (the docs), ``"example"``
    or ``"python"`` (docstrings of the package, but for the ledger's own
    modules, whose docstrings show its syntax).
    """
    root = Path(root)
    out = []
    if (root / "README.md").exists():
        out.append(("README.md", "md"))
    skip = ("_build", "generated", "auto_examples")
    for path in sorted((root / "docs").rglob("*.rst")):
        rel = path.relative_to(root)
        if any(part in skip for part in rel.parts) or rel.name == "api.rst":
            continue
        out.append((rel.as_posix(), "rst"))
    out += [
        (p.relative_to(root).as_posix(), "example")
        for p in sorted((root / "examples").glob("*.py"))
    ]
    out += [
        (p.relative_to(root).as_posix(), "python")
        for p in sorted((root / "sklearn_ext").rglob("*.py"))
        if not p.name.startswith("_claims")
    ]
    return out


_LITERAL = re.compile(r"``.+?``")


def claim_references(path, text):
    """``(line, claim id, modifier)`` of every role and placeholder in ``text``.

    A role shown as code (inside a double-backquoted literal) is an example of
    the syntax, not a reference.
    """
    out = []
    for number, line in enumerate(text.splitlines(), start=1):
        line = _LITERAL.sub(" ", line)
        for pattern in (ROLE, PLACEHOLDER):
            for match in pattern.finditer(line):
                ident, _, modifier = match.group(1).strip().partition(":")
                out.append((number, ident.strip(), modifier.strip()))
    return out


# -- generated regions --------------------------------------------------------


@dataclass
class Region:
    """A generated region: its name, template or spec, and where its body lies."""

    name: str
    spec: str
    start: int  # index of the first character of the body
    end: int  # index one past the body's last character
    line: int  # 1-based line of the region's opening marker

    def body(self, text):
        return text[self.start : self.end]


_MD_REGION = re.compile(
    r"<!-- claims:template (?P<name>[\w-]+)\n(?P<spec>.*?)\n-->\n"
    r"<!-- claims:begin (?P=name) -->\n(?P<body>.*?)<!-- claims:end (?P=name) -->",
    re.S,
)
_RST_REGION = re.compile(
    r"^\.\. claims:table (?P<name>[\w-]+)\n(?P<spec>(?:   [^\n]*\n)*)"
    r"(?P<body>.*?)^\.\. claims:end *$",
    re.S | re.M,
)


def _regions(pattern, text):
    return [
        Region(
            m.group("name"),
            m.group("spec"),
            m.start("body"),
            m.end("body"),
            text.count("\n", 0, m.start()) + 1,
        )
        for m in pattern.finditer(text)
    ]


def md_regions(text):
    """The generated regions of a Markdown text."""
    return _regions(_MD_REGION, text)


def rst_tables(text):
    """The generated results tables of a reStructuredText text."""
    return _regions(_RST_REGION, text)


def parse_table_spec(spec):
    """``{"columns": [...], "rows": [...] or None, ...}`` of a table's spec lines."""
    out = {"columns": None, "rows": None}
    for line in spec.splitlines():
        key, sep, value = line.strip().partition(":")
        if not sep:
            continue
        items = [v.strip() for v in value.split(";") if v.strip()]
        out[key.strip()] = items
    return out


def replace_regions(text, regions, bodies):
    """``text`` with each region's body replaced by the matching body."""
    out, last = [], 0
    for region, body in zip(regions, bodies):
        out += [text[last : region.start], body]
        last = region.end
    out.append(text[last:])
    return "".join(out)


def _mask_regions(text, regions):
    """``text`` with each region's body blanked (its line count kept)."""
    chars = list(text)
    for region in regions:
        for i in range(region.start, region.end):
            if chars[i] != "\n":
                chars[i] = " "
    return "".join(chars)


# -- prose --------------------------------------------------------------------


def _indent(line):
    return len(line) - len(line.lstrip())


def _rst_prose(text):
    """``(line number, line)`` of the prose lines of a reStructuredText text.

    Literal blocks (after ``::``), code-like directives and their content,
    comments, doctest blocks and their output are left out.
    """
    lines = text.splitlines()
    out, skip_indent, i = [], None, 0
    while i < len(lines):
        line = lines[i]
        stripped = line.strip()
        if skip_indent is not None:
            if stripped and _indent(line) <= skip_indent:
                skip_indent = None
            else:
                i += 1
                continue
        if stripped.startswith((">>>", "...")) and (
            stripped.startswith(">>>") or out and i > 0
        ):
            # A doctest block and its output run to the next blank line.
            while i < len(lines) and lines[i].strip():
                i += 1
            continue
        if stripped.startswith(".."):
            is_comment = not re.match(r"^\s*\.\.\s+[\w:-]+::", line)
            if is_comment or _CODE_DIRECTIVES.match(line):
                skip_indent = _indent(line)
                i += 1
                continue
        if stripped.endswith("::"):
            out.append((i + 1, line[: line.rstrip().rfind("::")]))
            skip_indent = _indent(line)
            i += 1
            continue
        out.append((i + 1, line))
        i += 1
    return out


def _md_prose(text):
    lines = text.splitlines()
    out, fenced, comment = [], False, False
    for number, line in enumerate(lines, start=1):
        stripped = line.strip()
        if stripped.startswith("```"):
            fenced = not fenced
            continue
        if "<!--" in line and "-->" not in line[line.index("<!--") :]:
            comment = True
            continue
        if comment:
            comment = "-->" not in line
            continue
        if fenced or line.startswith("    "):
            continue
        out.append((number, line))
    return out


def _docstrings(source):
    """``(first line, text)`` of the module, class and function docstrings."""
    return [
        (node.body[0].lineno, node.body[0].value.value)
        for node in docstring_owners(ast.parse(source))
    ]


def _example_text(source):
    """``(first line, text)`` of an example's docstring and comment blocks."""
    out = _docstrings(source)[:1]
    block, start = [], None
    for number, line in enumerate(source.splitlines(), start=1):
        stripped = line.strip()
        if stripped.startswith("#") and not stripped.startswith("# %%"):
            if start is None:
                start = number
            block.append(stripped.lstrip("#")[1:] if len(stripped) > 1 else "")
        else:
            if block:
                out.append((start, "\n".join(block)))
            block, start = [], None
    if block:
        out.append((start, "\n".join(block)))
    return out


def _drop_sections(text, names=("Examples",)):
    """A numpydoc docstring without the named sections (doctests live there)."""
    lines = text.splitlines()
    out, skipping = [], False
    for i, line in enumerate(lines):
        nxt = lines[i + 1].strip() if i + 1 < len(lines) else ""
        if nxt and set(nxt) == {"-"} and line.strip():
            skipping = line.strip() in names
        out.append("" if skipping else line)
    return "\n".join(out)


def _blank(match):
    return "".join(c if c == "\n" else " " for c in match.group(0))


def _figures_in(prose, mask, path, strict):
    """Bare figures in ``(line, text)`` prose lines, paragraph by paragraph.

    Code, links, versions, defaults and confidence levels are blanked over
    the whole paragraph (they may run across lines). Outside ``strict`` texts
    a figure counts only when a word about results (``RESULT_WORDS``) stands
    within ``WINDOW`` characters of it in its paragraph.
    """
    found, paragraph = [], []

    def flush():
        if not paragraph:
            return
        joined = "\n".join(line for _, line in paragraph)
        for pattern in (mask, VERSION, _DEFAULT, LEVEL):
            joined = pattern.sub(_blank, joined)
        starts = [0]
        for _, line in paragraph[:-1]:
            starts.append(starts[-1] + len(line) + 1)
        for match in FIGURE.finditer(joined):
            if not strict:
                window = joined[max(0, match.start() - WINDOW) : match.end() + WINDOW]
                if not RESULT_WORDS.search(window):
                    continue
            index = max(i for i, start in enumerate(starts) if start <= match.start())
            number, line = paragraph[index]
            found.append(
                Finding(
                    path,
                    number,
                    f"bare figure {match.group(0).strip()!r} in: {line.strip()[:90]}",
                )
            )
        paragraph.clear()

    for number, line in prose:
        if not line.strip():
            flush()
            continue
        paragraph.append((number, line))
    flush()
    return found


def bare_figures(path, kind, text):
    """The bare figures of one text (see the module docstring)."""
    if kind == "md":
        regions = md_regions(text)
        found = []
        for region in regions:
            # A template is prose too: its figures must be placeholders.
            first = region.line + 1
            lines = [
                (first + n, PLACEHOLDER.sub(" ", line))
                for n, line in enumerate(region.spec.splitlines())
            ]
            found += _figures_in(lines, _MD_INLINE, path, strict=True)
        text = _mask_regions(text, regions)
        return found + _figures_in(_md_prose(text), _MD_INLINE, path, strict=True)
    if kind == "rst":
        text = _mask_regions(text, rst_tables(text))
        return _figures_in(_rst_prose(text), _RST_INLINE, path, strict=True)
    pieces = _docstrings(text) if kind == "python" else _example_text(text)
    found = []
    for first, piece in pieces:
        piece = _drop_sections(piece)
        prose = [(first + n, line) for n, line in _rst_prose(piece)]
        found += _figures_in(prose, _RST_INLINE, path, strict=False)
    return found
