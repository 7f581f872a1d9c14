from __future__ import annotations

import pytest

from retrieval.chunking import chunk_text

DOC = """# Hotel caps

Intro sentence about hotels. Second sentence here.

## Europe

London: 210 pounds. Paris: 190 euros. Berlin: 140 euros.

### Notes

- first item of a list
- second item of a list

```
# not a heading inside a fence
```
"""


def test_sections_keep_heading_path_as_context() -> None:
    chunks = chunk_text(DOC, size=200, overlap=0)
    assert [c.heading for c in chunks] == ["Hotel caps", "Hotel caps > Europe", "Hotel caps > Europe > Notes"]
    assert chunks[1].text.startswith("Hotel caps > Europe\n")
    assert "Paris: 190 euros." in chunks[1].body
    assert "# not a heading" in chunks[2].body  # fenced code is text, not a heading
    assert [c.position for c in chunks] == [0, 1, 2]


def test_long_section_split_on_sentences_with_overlap() -> None:
    sentences = [f"Sentence number {i} talks about rule {i}." for i in range(40)]
    chunks = chunk_text("# Rules\n\n" + " ".join(sentences), size=200, overlap=60)
    assert len(chunks) > 5
    for chunk in chunks:
        assert len(chunk.body) <= 200
        assert chunk.body.endswith(".")  # cut at sentence boundaries
        assert chunk.text.startswith("Rules\n")
    for prev, nxt in zip(chunks, chunks[1:], strict=False):
        last_sentence = prev.body.rsplit(". ", 1)[-1]
        assert nxt.body.startswith(last_sentence.rstrip(".")) or last_sentence in nxt.body
    covered = " ".join(c.body for c in chunks)
    assert all(s in covered for s in sentences)


def test_no_overlap_means_no_repeated_sentences() -> None:
    sentences = [f"Fact {i} is true." for i in range(30)]
    chunks = chunk_text(" ".join(sentences), size=100, overlap=0)
    joined = " ".join(c.body for c in chunks)
    assert joined.split() == " ".join(sentences).split()
    assert all(c.heading == "" for c in chunks)


def test_overlong_word_is_hard_split() -> None:
    chunks = chunk_text("x" * 450, size=100, overlap=10)
    assert all(len(c.body) <= 100 for c in chunks)
    assert "".join(c.body for c in chunks).count("x") >= 450


def test_empty_and_invalid() -> None:
    assert chunk_text("   \n\n") == []
    with pytest.raises(ValueError):
        chunk_text("text", size=100, overlap=100)
