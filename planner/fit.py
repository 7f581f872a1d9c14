"""How well a tool's name and parameters fit a request's steps, beside the embedding similarity.

Both scores are added to the similarity of every (step, tool) pair in planner/selection.py; their
weights are data (`selection` in configs/lexicon/weights.yaml). Each is counted relative to the
candidate that fits least, so it ranks tools without moving the best one across `step_min`.

- `name_fit`: the words of a tool's name that a step writes, and those the whole request never writes
  (claims the request does not make: `getTrafficRoute` beside `getRoute` for "a route").
- `value_fit`: the kinds of value a step holds (a date or time, an e-mail address, a URL, a phone
  number, coordinates) that some parameter of the tool takes, nested ones included ("Add 'Review' to
  my calendar on March 3 from 10:00" fits the events tool with `start.dateTime`, not the calendars one).
- `option_fit`: a step that writes an option one of the tool's enum parameters offers ("take a snapshot").
- `parameter_fit`: a step that writes a parameter's whole name of two words or more ("the time zone" →
  `timeZone`).
- `deprecated_fit`: a tool its service marks deprecated (OpenAPI `deprecated: true`, which the importer
  writes as a description opening "Deprecated.") yields to a live one that fits about as well (Spotify's
  `add-tracks-to-playlist` beside `add-items-to-playlist`), and is still chosen where nothing else fits.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import lru_cache
from typing import Any

import numpy as np

from planner.argkinds import classify, ordered_tokens
from planner.catalog import ToolCatalog, ToolDef
from planner.lexicon import Lexicon, lexicon, lexicon_for, weights
from planner.lookups import name_verbs
from planner.steps import Step
from planner.values import RequestValues

# an HTTP method opening a name generated from a route: `post-payments-…`, `postWebhook` (a method, then a capital)
_ROUTE_METHOD = re.compile(r"((?i:get|post|put|patch|delete))(?:[-_]|[A-Z])")
# value kinds (planner/values.py) → the argument kinds (planner/argkinds.py) that take them
_TAKES = {
    "date": {"date", "datetime", "epoch"},
    "datetime": {"date", "datetime", "epoch"},
    "time": {"time", "datetime"},
    "email": {"email"},
    "url": {"url"},
    "phone": {"phone"},
}
_DEPTH = 3  # nested parameter levels read (an event's `start.dateTime`)
_PARAMETERS = 200  # parameters read per tool at most
_BRANCHES = ("allOf", "anyOf", "oneOf")  # composed schemas: their branches' parameters are the tool's too
_BRANCHES_READ = 16  # branches read per composed schema at most


def _stem(word: str, lex: Lexicon) -> str:
    """The lexicon's stem of the singular, so that a word and its plural meet ("refund" and "refunds",
    "attendee" and "attendees": the stem alone cuts each pair differently)."""
    word = word.lower()
    if word.endswith("ies") and len(word) > 4:
        word = word[:-3] + "y"
    elif word.endswith(("sses", "xes", "ches", "shes")):
        word = word[:-2]
    elif word.endswith("s") and not word.endswith(("ss", "us", "is")) and len(word) > 3:
        word = word[:-1]
    return lex.stem(word)


def _said(text: str, lex: Lexicon) -> set[str]:
    """The stems a text writes, and the stem of each pair of adjacent words written as one ("task list" →
    `tasklist`, as in `tasks_tasklists_insert`), and the API noun each says through the lexicon's
    `noun_synonyms` ("meeting" → `event`)."""
    words = [x for x in re.findall(r"[a-z]+", text.lower()) if x not in lex.stopwords]
    stems = {_stem(x, lex) for x in words} | {_stem(a + b, lex) for a, b in zip(words, words[1:], strict=False)}
    nouns = _noun_synonyms(lex.language)
    return stems | {nouns[x] for x in stems if x in nouns}


@lru_cache(maxsize=8)
def _noun_synonyms(language: str) -> dict[str, str]:
    """Stem of a word a request says → stem of the API noun it names (the lexicon's `noun_synonyms`), built
    once per language: `_said` runs for every step of every request."""
    lex = lexicon(language)
    return {_stem(word, lex): _stem(noun, lex) for noun, words in lex.noun_synonyms.items() for word in words}


def _claims(name: str, tool: ToolDef) -> list[str]:
    """The words of a tool's name but those of a parameter named in it: an id generated from a route
    (`post-payments-paymentPspReference-refunds`) holds its path parameters, which are slots, not claims."""
    parameters = {p.lower() for p in tool.properties}
    return [w for part in re.split(r"[-_.]+", name) if part.lower() not in parameters for w in ordered_tokens(part)]


# a step that opens with a verb whose object is quoted text ("Post 'Your order has shipped' in …")
_QUOTED_OBJECT = re.compile(r"^\s*([A-Za-z]+)\s+[\"'‘“]")


def _writes_content(step: str, lex: Lexicon) -> bool:
    """Whether the step's verb is one that writes content (`content_verbs`: post, send, reply…) and its
    object is quoted text: the text is a message, a comment or a note, so a tool named for such content
    (`CreateConversationMessage`) is not claiming something the request does not say."""
    m = _QUOTED_OBJECT.match(step)
    return m is not None and m.group(1).lower() in lex.content_verbs


def name_fit(request: str, steps: list[Step], catalog: ToolCatalog) -> np.ndarray:
    """Per step and tool, from the words of the tool's name (stems compared; a request in another language
    is read through its lexicon's English glosses):

    - `name_word` for each word of the name but its verb that the step writes, and `name_verb` when the
      step writes the name's verb or a synonym of it ("create a payment link" → `post-paymentLinks`; the
      lexicon's `verb_synonyms`);
    - minus `name_unsaid` for each such word, and `verb_unsaid` for each such verb, that the whole request
      never writes (`ScheduleSingleSend` beside `CreateSingleSend` for "create a single send"). A step whose
      verb is one of the lexicon's `content_verbs` and whose object is quoted text ("Post 'Your order has
      shipped'") writes content: the `content_args` words (message, comment, note, …) count as said. The method
      that starts an id generated from a route (`post-payments-…`) is not counted as a claim."""
    lex, w = lexicon("en"), weights().selection
    out = np.zeros((len(steps), len(catalog)), dtype=np.float32)
    if not len(catalog) or not any(w.get(k) for k in ("name_word", "name_verb", "name_unsaid", "verb_unsaid")):
        return out
    gloss = lexicon_for(request)
    content = {_stem(x, lex) for x in lex.content_args}
    said = [_said(gloss.glossed(s.text), lex) | (content if _writes_content(s.text, lex) else set()) for s in steps]
    whole = _said(gloss.glossed(request), lex).union(*said) if said else _said(gloss.glossed(request), lex)
    stop = {_stem(x, lex) for x in lex.stopwords}
    unsaid = np.zeros(len(catalog), dtype=np.float32)
    for j, tool in enumerate(catalog):
        name = tool.name.rsplit(".", 1)[-1]
        verbs = name_verbs(name, lex)
        words = {_stem(x, lex) for x in _claims(name, tool) if len(x) > 2 and x not in verbs} - stop
        verb_words = {v: {_stem(x, lex) for x in (v, *lex.verb_synonyms.get(v, ()))} for v in verbs}
        said_verbs = set().union(*verb_words.values())
        claimed = verbs - {m.group(1).lower()} if (m := _ROUTE_METHOD.match(name)) else verbs
        for i, step_words in enumerate(said):
            out[i, j] = w.get("name_word", 0.0) * len(words & step_words)
            out[i, j] += w.get("name_verb", 0.0) if said_verbs & step_words else 0.0
        unsaid[j] = w.get("name_unsaid", 0.0) * len(words - whole)
        unsaid[j] += w.get("verb_unsaid", 0.0) * sum(1 for v in claimed if not verb_words[v] & whole)
    return out - (unsaid - unsaid.min())


def _parameters(schema: Any, depth: int = 0) -> Iterator[tuple[str, dict[str, Any]]]:
    """(name, schema) of every parameter of an object schema, nested objects, array items and the branches of
    `allOf`/`anyOf`/`oneOf` included, to `_DEPTH` levels (a parameter several branches declare comes once per
    branch; the callers count kinds and options, not occurrences)."""
    if not isinstance(schema, dict) or depth > _DEPTH:
        return
    for key in _BRANCHES:  # a body that is one of several shapes (DigitalOcean's droplet actions) has each one's
        branches = schema.get(key)
        if isinstance(branches, list):
            for branch in branches[:_BRANCHES_READ]:
                yield from _parameters(branch, depth + 1)
    items = schema.get("items")
    if isinstance(items, dict):
        yield from _parameters(items, depth + 1)
    properties = schema.get("properties")
    if not isinstance(properties, dict):
        return
    for name, sub in properties.items():
        if isinstance(sub, dict):
            yield str(name), sub
            yield from _parameters(sub, depth + 1)


def taken_kinds(tool: ToolDef) -> set[str]:
    """The value kinds (planner/values.py) some parameter of the tool takes."""
    kinds: set[str] = set()
    for count, (name, schema) in enumerate(_parameters(dict(tool.parameters))):
        if count >= _PARAMETERS:
            break
        kind = classify(name, schema).kind
        kinds |= {value for value, takers in _TAKES.items() if kind in takers}
    return kinds


def value_fit(values: RequestValues, steps: list[Step], catalog: ToolCatalog) -> np.ndarray:
    """Per step and tool: `value_kind` for each kind of value written inside the step that some parameter
    of the tool takes, above the candidate that takes the fewest of them."""
    out = np.zeros((len(steps), len(catalog)), dtype=np.float32)
    weight = weights().selection.get("value_kind", 0.0)
    if not weight or not len(catalog):
        return out
    taken = [taken_kinds(tool) for tool in catalog]
    for i, step in enumerate(steps):
        held = {
            c.kind
            for c in values.candidates
            if c.written and c.kind in _TAKES and step.start <= c.start and c.end <= step.end
        }
        if held:
            row = np.array([len(held & kinds) for kinds in taken], dtype=np.float32)
            out[i] = weight * (row - row.min())
    return out


def option_fit(request: str, steps: list[Step], catalog: ToolCatalog) -> np.ndarray:
    """Per step and tool: `option_word` when the step writes every word of an option some enum parameter of
    the tool offers ("take a snapshot of droplet 42" → `post_droplet_action` with `type: snapshot`, "power
    cycle it" → `power_cycle`), above the candidate that offers the fewest such options. Action endpoints
    that one `type` switches between are named by their options, not by their own name."""
    lex, weight = lexicon("en"), weights().selection.get("option_word", 0.0)
    out = np.zeros((len(steps), len(catalog)), dtype=np.float32)
    if not weight or not len(catalog):
        return out
    gloss = lexicon_for(request)
    said = [_said(gloss.glossed(s.text), lex) for s in steps]
    stop = {_stem(x, lex) for x in lex.stopwords}
    offered: list[list[set[str]]] = []
    for tool in catalog:
        options: list[set[str]] = []
        for count, (_, schema) in enumerate(_parameters(dict(tool.parameters))):
            if count >= _PARAMETERS:
                break
            for option in _options(schema):
                words = {_stem(x, lex) for x in ordered_tokens(str(option)) if len(x) > 2} - stop
                if words:
                    options.append(words)
        offered.append(options)
    for i, step_words in enumerate(said):
        row = np.array([sum(1 for o in options if o <= step_words) for options in offered], dtype=np.float32)
        out[i] = weight * (np.minimum(row, 1) - min(1, row.min()))
    return out


def _options(schema: dict[str, Any]) -> list[Any]:
    """The options an enum parameter offers, its own or its items' (an array of enum values: Books'
    `acquireMethod: ["PURCHASED"]`), at most 64."""
    items = schema.get("items")
    enum = schema.get("enum", items.get("enum") if isinstance(items, dict) else None)
    return enum[:64] if isinstance(enum, list) else []


def parameter_fit(request: str, steps: list[Step], catalog: ToolCatalog) -> np.ndarray:
    """Per step and tool: `parameter_name` for each parameter (nested ones by their own name) of two words or
    more, words of the tool's own name aside, every one of which the step writes, at most `parameter_names_counted`,
    above the candidate with the fewest ("change the time zone of calendar X" → the calendars tool with
    `timeZone`, not the access-rule tool beside it). A word every candidate has, in its parameters or its
    name (`calendarId` beside `calendars_patch`), says nothing about which tool is meant and is not counted."""
    w = weights().selection
    weight, most = w.get("parameter_name", 0.0), int(w.get("parameter_names_counted", 0))
    out = np.zeros((len(steps), len(catalog)), dtype=np.float32)
    if not weight or most <= 0 or len(catalog) < 2:
        return out
    lex, gloss = lexicon("en"), lexicon_for(request)
    stop = {_stem(x, lex) for x in lex.stopwords}
    named: list[list[frozenset[str]]] = []
    every: list[set[str]] = []  # each tool's words, name and parameters
    for tool in catalog:
        own = {_stem(x, lex) for x in ordered_tokens(tool.name)}
        words_of_tool = set(own)
        names: set[frozenset[str]] = set()
        for count, (name, _) in enumerate(_parameters(dict(tool.parameters))):
            if count >= _PARAMETERS:
                break
            words = frozenset(_stem(x, lex) for x in ordered_tokens(name) if len(x) > 2) - stop
            if len(words - own) > 1:  # one word (`name`, `type`) is ordinary speech; two are a claim
                names.add(words - own)
            words_of_tool |= words
        named.append(list(names))
        every.append(words_of_tool)
    shared = set.intersection(*every)
    for i, step in enumerate(steps):
        said = _said(gloss.glossed(step.text), lex) - shared
        row = np.array([min(most, sum(1 for n in names if n <= said)) for names in named], dtype=np.float32)
        out[i] = weight * (row - row.min())
    return out


def names_a_parameter(request: str, step: Step, tool: ToolDef) -> bool:
    """The step writes a word of one of the tool's parameter names (nested ones included) that is not a
    word of the tool's own name: "…, and add priya@example.com as an attendee" after a step given
    `calendar_events_insert` fills its `attendees`, where "and add a task 'Pack'" after `tasks_insert`
    is another call."""
    return bool(named_parameters(request, step, tool, first=True))


def named_parameters(request: str, step: Step, tool: ToolDef, *, first: bool = False) -> list[str]:
    """The tool's parameters (nested ones by their own name) of which the step writes a word that is not a
    word of the tool's own name ("… the way it looked in the most recent saved version" → `version`);
    `first`: stop at the first."""
    lex = lexicon("en")
    said = _said(lexicon_for(request).glossed(step.text), lex)
    own = {_stem(x, lex) for x in ordered_tokens(tool.name)}
    stop = {_stem(x, lex) for x in lex.stopwords}
    found: list[str] = []
    for count, (name, _) in enumerate(_parameters(dict(tool.parameters))):
        if count >= _PARAMETERS:
            break
        words = {_stem(x, lex) for x in ordered_tokens(name) if len(x) > 2} - own - stop
        if words & said:
            found.append(name)
            if first:
                break
    return found


def deprecated(tool: ToolDef) -> bool:
    """The tool's description opens by saying it is deprecated (the importer's mark, or the tool author's)."""
    return (tool.description or "").lstrip().lower().startswith("deprecated")


def deprecated_fit(steps: list[Step], catalog: ToolCatalog) -> np.ndarray:
    """Per step and tool: minus `deprecated` for a deprecated tool when some candidate is live, and minus
    `deprecated_replaced` when its description names a live candidate as its replacement ("Use [Add Items to
    Playlist](/…/add-items-to-playlist) instead": the service says which tool to call)."""
    w = weights().selection
    out = np.zeros((len(steps), len(catalog)), dtype=np.float32)
    tools = list(catalog)
    live = {_words_of(t.name): t.name for t in tools if not deprecated(t)}
    if not live or not (w.get("deprecated") or w.get("deprecated_replaced")):
        return out
    for j, tool in enumerate(tools):
        if deprecated(tool):
            said = _words_of(tool.description or "")
            replaced = any(f" {words} " in f" {said} " for words in live)
            out[:, j] = -w.get("deprecated_replaced" if replaced else "deprecated", 0.0)
    return out


def _words_of(text: str) -> str:
    """A name or text as lower-case words joined by spaces, whatever the naming style."""
    return " ".join(w for part in re.findall(r"[A-Za-z0-9]+", text) for w in ordered_tokens(part))
