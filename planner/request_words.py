"""What the request's words name: an enum option ("in euros" → `EUR`) or a boolean flag ("non-stop" → `nonStop`).

Matched closely, by the words themselves (English endings for plurals; the lexicon's stems for flags and
for a one-word option, never through a naming word such as "named"):
the evidence rules (planner/evidence.py) write such an argument only when the naming is clear.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from planner.argkinds import ordered_tokens
from planner.lexicon import Lexicon, lexicon_for


class RequestWords:
    """The request's words, lower case, in order."""

    def __init__(self, text: str, lex: Lexicon) -> None:
        self.lex = lex
        glossed = lexicon_for(text).glossed(text)  # a request in another language: its glossary's English words
        self.words = [w.lower() for w in re.findall(r"[A-Za-z]+", glossed)]
        self.numbers = set(re.findall(r"\d+", glossed))
        lead = lex.polite_prefix.match(text.strip())  # "Please like the video": the request's own verb is "like"
        opening = re.match(r"[A-Za-z]+", text.strip()[lead.end() if lead else 0 :])
        self.opening = opening.group(0).lower() if opening else ""

    def names_option(self, option: str, arg: str = "") -> bool:
        """The request's words name an enum option: its words in a row (plurals allowed), without the words
        it repeats from the argument's name ("hide it" → `labelListVisibility: labelHide`), or an upper-case
        code of up to four letters that starts a word ("EUR" ← "euros")."""
        words = ordered_tokens(option)
        if words == [self.opening] and len(words[0]) > 2:  # the verb the request opens with ("Like the video"
            return True  # → `rating: like`), a stopword elsewhere ("I'd like to …")
        if not words or all(w in self.lex.stopwords for w in words):  # "all" in "an all-day event" names nothing
            return False
        said = [_singular(w) for w in self.words]
        wanted = [_singular(w) for w in words]
        if _in_a_row(said, wanted):
            return True
        own = {_singular(w) for w in ordered_tokens(arg.rpartition(".")[2])}
        rest = [w for w in wanted if w not in own]
        if (
            rest
            and len(rest) < len(wanted)
            and any(w not in self.lex.stopwords for w in rest)
            and _in_a_row(said, rest)
        ):
            return True
        if len(wanted) == 1 and len(wanted[0]) > 3:  # one word by its stem ("returned" → RETURN), never a naming
            stem = self.lex.stem(wanted[0])  # word ("named" is no option `name`)
            if any(self.lex.stem(w) == stem for w in said if w not in self.lex.naming_words):
                return True
        if self.names_direction(option):
            return True
        code = option.lower()
        return (
            option.isupper()
            and option.isalpha()
            and 2 < len(option) <= 4
            and any(w.startswith(code) and len(w) <= len(code) + 3 for w in self.words)
        )

    def named_by_gloss(self, glosses: Mapping[str, str]) -> str | None:
        """The one option whose explanation shares the most content words with the request ("the last four
        weeks" → `short_term`: "approximately last 4 weeks"; "the past year" → `long_term`: "~1 year of
        data"), numbers written as words or digits alike, a word of two explanations counting for neither; None
        when none shares a word, or two share as many."""
        said = {self._content(w) for w in self.words if w not in self.lex.stopwords}
        said |= {str(self.lex.number_words[w]) for w in self.words if w in self.lex.number_words}
        said |= self.numbers
        content = {
            option: {self._content(w.lower()) for w in re.findall(r"[A-Za-z]+|\d+", gloss)} - self.lex.stopwords
            for option, gloss in glosses.items()
        }
        seen: dict[str, int] = {}
        for words in content.values():
            for w in words:
                seen[w] = seen.get(w, 0) + 1
        scores: dict[str, int] = {}  # words of one explanation only count ("last" is in two of them)
        for option, words in content.items():
            scores[option] = len({w for w in words if seen[w] == 1} & said)
        best = max(scores.values(), default=0)
        top = [o for o, n in scores.items() if n == best]
        return top[0] if best > 0 and len(top) == 1 else None

    def _content(self, word: str) -> str:
        return word if word.isdigit() else self.lex.stem(_singular(word))

    def heard(self, arg: str) -> int:
        """How many distinct words of an argument's name (a field's own name) the request uses."""
        said = {_singular(w) for w in self.words}
        return len({_singular(w) for w in ordered_tokens(arg.rpartition(".")[2])} & said)

    def longest(self, options: list[str]) -> list[str]:
        """Named options less those whose words lie inside another named option's ("free ebooks" names
        `free-ebooks`, not also `ebooks`)."""
        spelled = {o: [_singular(w) for w in ordered_tokens(o)] for o in options}
        return [
            o
            for o in options
            if not any(len(spelled[p]) > len(spelled[o]) and _in_a_row(spelled[p], spelled[o]) for p in options)
        ]

    def names_direction(self, option: str) -> bool:
        """A sort-direction option (`desc`, `DESCENDING`: one word that is a direction of the lexicon's
        `order_phrases` or a one-word phrase of it) is named by a phrase of that direction ("newest first"
        → `desc`)."""
        words = ordered_tokens(option)
        if len(words) != 1:
            return False
        return any(
            (words[0] == direction or (words[0],) in phrases) and any(_in_a_row(self.words, list(p)) for p in phrases)
            for direction, phrases in self.lex.order_phrases.items()
        )

    def language_named(self) -> str | None:
        """The ISO 639-1 code of the one language the request names (the lexicon's `language_names`), if
        it names exactly one."""
        return self.one_named(self.lex.language_names)

    def media_type_named(self) -> str | None:
        """The media type of the one file format the request names (the lexicon's `media_types`: "as PDF"
        → application/pdf), if it names exactly one."""
        return self.one_named(self.lex.media_types)

    def one_named(self, table: Mapping[str, frozenset[str]]) -> str | None:
        """The key of `table` whose words the request uses, when exactly one key's are used."""
        said = set(self.words)
        codes = [code for code, names in table.items() if names & said]
        return codes[0] if len(codes) == 1 else None

    def names_by_action(self, option: str, ignored: set[str]) -> bool:
        """A one-word option that is an agent noun is named by its action ("so she can edit it" → `writer`,
        "view-only" → `reader`, "as an editor" → `writer`): the verb under the option and under each request
        word ("writer" → write, "editor" → edit), met directly or through the lexicon's verb synonyms.
        `ignored`: words that name the tool's own action ("send" never names the option `sender` of a
        send tool)."""
        words = ordered_tokens(option)
        if len(words) != 1:
            return False
        wanted = self._actions(words[0])
        if not wanted:
            return False
        for word in self.words:
            if word in ignored or self.lex.stem(word) in ignored:
                continue
            heard = self._actions(word) | {self.lex.stem(word)}
            if wanted & self._with_synonyms(heard):
                return True
        return False

    def keyword_for(self, keyword: str, arg: str) -> bool:
        """The request writes a description's keyword as a word and names the argument it goes to ("with
        me as the owner", "owned by me", 所有者是我 → `ownerId: "me"`): a word of the argument's name but
        the identifier word, or the action under it ("owner" → own); or says it as the subject of that
        action right before it ("a course that I own": the lexicon's `subject_forms`)."""
        wanted: set[str] = set()
        for token in ordered_tokens(arg):
            if token not in self.lex.identifier_words and len(token) > 2:
                wanted |= {self.lex.stem(token), self.lex.stem(token[:-2]) if token.endswith(("er", "or")) else ""}
        wanted.discard("")
        if keyword.lower() not in self.words:
            subject = self.lex.subject_forms.get(keyword.lower())
            pairs = zip(self.words, self.words[1:], strict=False)
            return subject is not None and any(w == subject and self.lex.stem(n) in wanted for w, n in pairs)
        return any(self.lex.stem(w) in wanted for w in self.words)

    def _actions(self, word: str) -> set[str]:
        """The stems of the verb under an agent noun ("writer" → writ, "commenter" → comment); empty for a
        word that is not one (or whose verb is shorter than four letters)."""
        if len(word) < 6 or not word.endswith(("er", "or")):
            return set()
        bases = {word[:-2], word[:-1]} if word.endswith("er") else {word[:-2]}
        return {self.lex.stem(b) for b in bases if len(b) >= 4}

    def _with_synonyms(self, stems: set[str]) -> set[str]:
        out = set(stems)
        for verb, synonyms in self.lex.verb_synonyms.items():
            group = {self.lex.stem(w) for w in (verb, *synonyms)}
            if stems & group:
                out |= group
        return out

    def flag_value(self, arg: str) -> bool | None:
        """True when the request uses every distinctive word of a boolean's name ("non-stop" →
        `nonStop`), False when a negation comes right before them, or when the name is one word and the
        request says its opposite instead (the lexicon's `flag_antonyms`: "private" → `public: false`);
        None when it does not use them."""
        lex = self.lex
        field = arg.rpartition(".")[2]  # a field of an object (planner/flat_args.py): by its own name
        named = [w for w in ordered_tokens(field) if w not in lex.flag_words and w not in lex.stopwords]
        words = [w for w in named if w not in lex.action_verbs] or named
        if not words:
            return None
        stems = [lex.stem(w) for w in self.words]
        opposite = lex.flag_antonyms.get(words[0]) if len(words) == 1 else None
        if opposite is not None and lex.stem(words[0]) not in stems and lex.stem(opposite) in stems:
            at = stems.index(lex.stem(opposite))  # "a private playlist" → `public: false`; "not hidden" → true
            return bool(set(self.words[max(0, at - 2) : at]) & lex.negations)
        positions = []
        for word in words:
            stem = lex.stem(word)
            if stem not in stems:
                return None
            positions.append(stems.index(stem))
        # the phrase starts at its verb when the request writes it there ("do not send notifications")
        verbs = [i for w in named if w not in words and (i := _index(stems, lex.stem(w))) is not None]
        first = min([p for p in verbs if min(positions) - 3 < p < min(positions)] + positions)
        before = set(self.words[max(0, first - 2) : first]) - set(words)
        return not bool(before & lex.negations)


def _in_a_row(said: list[str], wanted: list[str]) -> bool:
    """`wanted` occurs in `said` as consecutive words."""
    return any(said[i : i + len(wanted)] == wanted for i in range(len(said) - len(wanted) + 1))


def _index(items: list[str], item: str) -> int | None:
    return items.index(item) if item in items else None


def _singular(word: str) -> str:
    """A plural's singular by its English ending only ("euros" → "euro", "classes" → "class"): enum options
    are matched closely, "named" never names the option "name"."""
    if word.endswith("es") and word[:-2].endswith(("s", "x", "ch", "sh")):
        return word[:-2]
    return word[:-1] if word.endswith("s") and not word.endswith("ss") and len(word) > 3 else word
