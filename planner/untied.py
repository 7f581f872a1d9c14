"""Values no argument's name or role ties to, placed by their kind: an address to the first argument of its
kind, quoted text to the first argument named like a name or title, else like a query (a tool that lists or
finds things) or like written content (one that changes things). planner/evidence.py builds the options;
this fills the ones nothing else filled."""

from __future__ import annotations

from dataclasses import replace

from planner.arg_options import ArgOptions
from planner.argkinds import names_kind, ordered_tokens
from planner.catalog import ToolDef
from planner.flat_args import field_depth
from planner.lexicon import Lexicon
from planner.ties import Ties
from planner.value_shapes import shape
from planner.values import Candidate


def place_untied(
    out: dict[str, ArgOptions],
    tool: ToolDef,
    inside: list[Candidate],
    ties: Ties,
    lex: Lexicon,
    *,
    lists: bool,
    searched: frozenset[str] = frozenset(),
) -> None:
    """An address no argument's name or role ties ("Email ana@example.com ...") goes to the first
    argument of its kind that has no value yet (`to` before `cc`: the tool's own order); quoted text
    no argument is tied to ("Add 'Quarterly review' to my calendar") to the first argument named like a
    name or title (the lexicon's `name_args`: `summary`, `name`, `title`...), else, on a tool that
    lists or finds things, to the first named like a query (`query_words`: `q`, `query`, `search`) unless
    an earlier node already wrote it (`searched`: the book found, its title is no shelf's query), and
    on one that does not, to the first named like written content (`content_args`: `Body`, `text`)."""
    for c in inside:
        if c.kind != "quoted" or not c.written or ties.strongest(c) > 0:
            continue
        if any(o.values == (c.value,) for o in out.values()):
            continue
        named = _free_text(out, lex.name_args, lex, required=False)
        taken = c.value in searched or any(c.value in o.values for o in out.values() if o.required)
        if not named and lists and not taken:
            # a search's terms ("… for 'invoice 4471'": `q`)
            named = _free_text(out, frozenset(lex.query_words), lex, required=False)
        if not named and not lists:
            # what is written ("发一条消息：“会议改到三点”": `Body`)
            named = _free_text(out, lex.content_args, lex, required=True)
        if named:  # the least nested first (`body.summary` before `body.attachments.0.title`)
            arg = min(named, key=field_depth)
            out[arg] = replace(out[arg], values=(c.value,), typed=True, closed=True, supported=True)
    for address in ("email", "url", "phone"):
        for c in inside:
            if not c.written or shape(c) != address or ties.strongest(c) > 0:
                continue
            if any(o.values == (c.value,) for o in out.values()):
                continue  # (an identifier offered every value of its shape has not taken it)
            free = [a for a, o in out.items() if not o.values and not o.refs and not o.unwritable]
            takers = [a for a in free if out[a].kind.kind == address] or [
                a for a in free if out[a].kind.is_identifier and _described_as(tool, a, address)
            ]  # "Invite li.ming@school.cn": `userId`, "the email address of the user" one of its forms
            if takers:
                arg = takers[0]
                out[arg] = replace(out[arg], values=(c.value,), typed=True, closed=True, supported=True)


def _described_as(tool: ToolDef, arg: str, kind: str) -> bool:
    """The argument's description names the value kind (an identifier that may be "the email address
    of the user")."""
    schema = tool.properties.get(arg)
    text = str(schema.get("description", "")) if isinstance(schema, dict) else ""
    return names_kind(text, kind)


def _names_the_thing(arg: str, lex: Lexicon) -> bool:
    """`arg` is a field of the thing the tool acts on: an argument of its own, or a field of a body
    argument (`body.summary`), not of another object inside it (`author.displayName`)."""
    parts = [p for p in arg.split(".") if not p.isdigit()]
    return len(parts) == 1 or (len(parts) == 2 and parts[0].lower() in lex.body_args)


def _free_text(out: dict[str, ArgOptions], words: frozenset[str], lex: Lexicon, *, required: bool) -> list[str]:
    """Text arguments of the thing itself, named by one of `words`, that have no value yet; with `required`
    a required one too (written content: left open, the model copied the file key into Figma's `message`;
    not a required name or title, whose value the model takes from ties this placement does not see:
    "the lyrics of 'Imagine' by 'John Lennon'" is no `title: John Lennon`)."""
    return [
        arg
        for arg, options in out.items()
        if set(ordered_tokens(arg.rpartition(".")[2])) & words
        and _names_the_thing(arg, lex)
        and options.kind.kind == "text"
        and (required or not options.required)
        and not options.values
        and not options.refs
        and not options.unwritable
    ]
