"""The name a lookup is asked for (planner/prerequisites.py plans the lookup; this finds what it searches by).

The request names the thing an identifier argument needs ("the Website Relaunch project", "the 'Q3 Budget'
spreadsheet", "maria@example.com"); the lookup's query argument is offered that name first. Never words that
only name the tools, values the request says are something else ("in workspace 120…", "a section called
'QA'"), or the request's one identifier when the lookup itself requires one.
"""

from __future__ import annotations

import re

from planner.argkinds import classify, names_kind, ordered_tokens
from planner.catalog import ToolDef
from planner.flat_args import field_name
from planner.lexicon import lexicon
from planner.lookups import described_entity, entity_words
from planner.query_filters import filter_object
from planner.value_shapes import ADDRESS_KINDS, shaped_as
from planner.values import Candidate, RequestValues, name_tokens, rank


def id_code(c: Candidate) -> bool:
    """A code that may identify a thing: at least two digits ("CUS-4711", "cust-8841"; not "alpha-3", "utf-8")."""
    return c.kind == "code" and sum(ch.isdigit() for ch in str(c.value)) >= 2


def _finds_by(producer: ToolDef, kind: str) -> bool:
    """The lookup can find a thing by a value of this kind (an e-mail address): an argument of that kind,
    a filter object (`{"field": "email", "value": ...}`: planner/query_filters.py), or its text names the
    kind. A drive's file search by a text query cannot: "Share the 'Q3 Budget' spreadsheet with
    maria@example.com" looks the file up by its name, and the address is the call's own value."""
    for name, schema in producer.properties.items():
        if classify(name, schema).kind == kind or filter_object(schema) is not None:
            return True
    texts = [
        producer.description,
        *(str(s.get("description", "")) for s in producer.properties.values() if isinstance(s, dict)),
    ]
    return names_kind(" ".join(texts), kind)


def lookup_seed(
    tool: ToolDef,
    arg: str,
    values: RequestValues | None,
    span: tuple[int, int] | None,
    used: set[str],
    producer: ToolDef,
    *,
    cued_only: bool = False,
) -> str | None:
    """The name the request gives for `arg`: a phrase, quoted text or words after its role or name,
    never words that only name the tools themselves ("Weather forecast for Lisbon" → "Lisbon")."""
    if values is None:
        return None
    lex = lexicon("en")
    about = " ".join((tool.name, tool.description, producer.name, producer.description))
    tool_words = {lex.stem(w) for w in re.findall(r"[A-Za-z]+", about) for w in ordered_tokens(w)}

    def names_tools(c: Candidate) -> bool:
        words = re.findall(r"[A-Za-z]+", str(c.value))
        return bool(words) and all(lex.stem(w) in tool_words or w.lower() in lex.stopwords for w in words)

    options = {  # values the tool's enums take ("USD") are not names
        str(o).lower()
        for schema in tool.properties.values()
        if isinstance(schema, dict)
        for o in schema.get("enum", [])
    }
    kinds = ("phrase", "quoted", "filename", "ngram", "email", "phone", "url", "code")  # a name, or what identifies it
    names = [
        c
        for c in values.strings()
        if c.kind in kinds and c.value not in used and not _names_another(c, arg, tool, producer)
    ]
    names = [c for c in names if not names_tools(c) and str(c.value).lower() not in options]
    codes = {str(c.value) for c in names if id_code(c)}
    if len(codes) == 1 and any(classify(a, producer.properties.get(a)).is_identifier for a in producer.required):
        # the request's one identifier is the lookup's own ("the Q2 Hiring project (ws 1201987654321)": the
        # typeahead's `workspace_gid`), not the name it looks up
        names = [c for c in names if str(c.value) not in codes]
    inside = [c for c in names if span is None or c.start < 0 or span[0] <= c.start < span[1]]
    if cued_only:  # the argument has a keyword of its own ("primary"): only a value the request ties to it
        tokens = name_tokens(arg) | set(entity_words(arg, lex))
        inside = [c for c in inside if tokens & ({c.tail} | set(c.cue.split()[-2:]))]
        names = []
    # an address or a code identifies the thing better than quoted text, which is more often the new value
    # ("the contact with e-mail x@y.cn: rename it to '王丽'")
    shaped = [c for c in inside if (c.kind in ADDRESS_KINDS and _finds_by(producer, c.kind)) or id_code(c)]
    # a name written against the thing's own word before quoted text ("Add 'Buy milk' to my Groceries
    # list": the list's name; the quoted text is the new task's)
    things = thing_words(tool, arg)
    shaped = shaped or [c for c in inside if c.kind != "ngram" and _written_against(c, things)]
    shaped = shaped or [c for c in inside if c.kind in ("quoted", "filename")]
    description = str((tool.properties.get(arg) or {}).get("description", ""))
    ranked = rank(shaped or inside or names, arg, description, span=span, limit=1, lex=lex)
    return str(ranked[0].value) if ranked else None


def thing_words(tool: ToolDef, arg: str) -> set[str]:
    """The stems of what an identifier argument identifies: its name's words and its description's
    thing (`tasklist` described "Task list identifier." → tasklist, list)."""
    lex = lexicon("en")
    schema = tool.properties.get(arg)
    described = re.findall(r"[A-Za-z]+", str((schema if isinstance(schema, dict) else {}).get("description", "")))
    own = field_name(arg)
    words = (name_tokens(own) | set(entity_words(own, lex))) - lex.identifier_words
    told = described_entity(described, lex)  # "task list": its head word and the compound, not "task" alone
    return {lex.stem(w) for w in words | ({told[-1], "".join(told)} if told else set())}


def _written_against(c: Candidate, things: set[str]) -> bool:
    """The word right before or after the value is the thing (`things`: its stems, `thing_words`) ("my
    Groceries list", "the list Groceries"): the request calls the value that thing's name."""
    lex = lexicon("en")
    cue = c.cue.split()
    return bool((c.tail and lex.stem(c.tail) in things) or (cue and lex.stem(cue[-1]) in things))


def _names_another(c: Candidate, arg: str, tool: ToolDef, producer: ToolDef) -> bool:
    """The request says the value is something else: the words before it name another argument of either
    tool ("in workspace 1201987654321" for a project's lookup), or call it the name of another thing ("a
    section called 'QA'", when a project is looked up) — unless the word right after it names the thing
    looked up ("复制名为“春季促销”的单次发送": the single send's name, though 复制 glosses as "copy")."""
    lex = lexicon("en")
    own = (name_tokens(arg) | set(entity_words(arg, lex))) - lex.identifier_words
    own = own or {w for t in (tool, producer) for w in ordered_tokens(t.name)}  # a bare `id`: the tools' thing
    if c.tail and lex.stem(c.tail) in {lex.stem(w) for w in own}:  # "名为“春季促销”的单次发送": the thing it names
        return False
    cue = [w for w in c.cue.split() if w not in lex.stopwords]
    if len(cue) >= 2 and cue[-1] in lex.naming_words:
        return lex.stem(cue[-2]) not in {lex.stem(w) for w in own}
    before = set(c.cue.split()[-1:])  # the word right before it ("calendar event 'X'": the event's name)
    for t in (tool, producer):
        for other in t.required:
            kind = classify(other, t.properties.get(other))
            named = other != arg and before & (name_tokens(other) - lex.identifier_words)
            if named and (not kind.is_identifier or shaped_as(c, kind)):  # ("日历里“周会”": a name is no id)
                return True
    return False
