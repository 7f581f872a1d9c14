"""Markdown/text → overlapping chunks cut on heading and sentence boundaries.

A document is split into sections at Markdown headings; each section's body is split into
sentences (list items and paragraphs count as boundaries too) which are packed into chunks of at
most `size` characters. Consecutive chunks of a section share up to `overlap` characters of whole
sentences. The heading path of a section ("Hotel caps > Europe") is prepended to each of its
chunks, so a chunk taken out of its document still says what it is about.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")
_FENCE = re.compile(r"^\s*(```|~~~)")
_LIST_ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")
_SENTENCE_END = re.compile(r"(?<=[.!?:;])\s+(?=[\"'(\[]?[A-Z0-9])")


@dataclass(frozen=True, slots=True)
class Chunk:
    """One piece of a document, as embedded and stored."""

    text: str  # heading path + body: what is embedded and returned
    body: str  # the document's own text in this chunk
    heading: str  # " > "-joined heading path of the section, "" before the first heading
    position: int  # 0-based order of the chunk in its document


@dataclass(frozen=True, slots=True)
class _Unit:
    text: str
    new_paragraph: bool


def chunk_text(text: str, *, size: int = 800, overlap: int = 120) -> list[Chunk]:
    """Split Markdown or plain text into chunks of at most about `size` characters."""
    if size < 20:
        raise ValueError("chunk size must be at least 20 characters")
    if not 0 <= overlap < size:
        raise ValueError("chunk overlap must be >= 0 and smaller than the chunk size")
    chunks: list[Chunk] = []
    for heading, body in _sections(text):
        prefix = f"{heading}\n" if heading else ""
        for piece in _pack(_units(body), size=size, overlap=overlap):
            chunks.append(Chunk(text=prefix + piece, body=piece, heading=heading, position=len(chunks)))
    return chunks


def _sections(text: str) -> list[tuple[str, str]]:
    """(heading path, body) per section; headings inside code fences are text."""
    path: list[tuple[int, str]] = []
    sections: list[tuple[str, str]] = []
    lines: list[str] = []
    in_fence = False

    def flush() -> None:
        body = "\n".join(lines).strip()
        if body:
            sections.append((" > ".join(title for _, title in path), body))
        lines.clear()

    for line in text.replace("\r\n", "\n").split("\n"):
        if _FENCE.match(line):
            in_fence = not in_fence
        match = None if in_fence else _HEADING.match(line)
        if match is None:
            lines.append(line)
            continue
        flush()
        level = len(match.group(1))
        path = [(lvl, title) for lvl, title in path if lvl < level]
        path.append((level, match.group(2).strip()))
    flush()
    return sections


def _units(body: str) -> list[_Unit]:
    """Sentences and list items of a section body, marking where paragraphs start."""
    units: list[_Unit] = []
    for paragraph in re.split(r"\n\s*\n", body):
        new_paragraph = True
        for block in _blocks(paragraph):
            for sentence in _SENTENCE_END.split(block):
                sentence = " ".join(sentence.split())
                if sentence:
                    units.append(_Unit(sentence, new_paragraph))
                    new_paragraph = False
    return units


def _blocks(paragraph: str) -> list[str]:
    """A paragraph's lines joined, except that each list item starts a block of its own."""
    blocks: list[str] = []
    for line in paragraph.split("\n"):
        if not blocks or _LIST_ITEM.match(line):
            blocks.append(line)
        else:
            blocks[-1] += " " + line
    return blocks


def _split_long(unit: _Unit, size: int) -> list[_Unit]:
    """Hard-split a sentence longer than a chunk at word boundaries."""
    if len(unit.text) <= size:
        return [unit]
    parts: list[_Unit] = []
    current = ""
    for word in unit.text.split(" "):
        while len(word) > size:  # a single "word" longer than a chunk (a URL, a hash)
            if current:
                parts.append(_Unit(current, not parts and unit.new_paragraph))
                current = ""
            parts.append(_Unit(word[:size], not parts and unit.new_paragraph))
            word = word[size:]
        candidate = f"{current} {word}" if current else word
        if len(candidate) > size and current:
            parts.append(_Unit(current, not parts and unit.new_paragraph))
            candidate = word
        current = candidate
    if current:
        parts.append(_Unit(current, not parts and unit.new_paragraph))
    return parts


def _join(units: list[_Unit]) -> str:
    out = ""
    for i, unit in enumerate(units):
        if i:
            out += "\n" if unit.new_paragraph else " "
        out += unit.text
    return out


def _pack(units: list[_Unit], *, size: int, overlap: int) -> list[str]:
    pieces: list[str] = []
    current: list[_Unit] = []
    fresh = 0  # units in `current` not already emitted in the previous chunk
    for unit in (part for u in units for part in _split_long(u, size)):
        if current and len(_join([*current, unit])) > size:
            if fresh:
                pieces.append(_join(current))
            current = _tail(current, overlap)
            while current and len(_join([*current, unit])) > size:
                current.pop(0)
            fresh = 0
        current.append(unit)
        fresh += 1
    if current and fresh:
        pieces.append(_join(current))
    return pieces


def _tail(units: list[_Unit], overlap: int) -> list[_Unit]:
    """The last whole sentences of a chunk totalling at most `overlap` characters."""
    tail: list[_Unit] = []
    length = 0
    for unit in reversed(units):
        length += len(unit.text) + (1 if tail else 0)
        if length > overlap:
            break
        tail.insert(0, unit)
    return tail
