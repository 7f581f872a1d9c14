"""Generic request values (planner/values.py) and steps (planner/steps.py): no domain anywhere."""

from __future__ import annotations

from datetime import date

from planner.steps import split_steps, tool_verb
from planner.values import extract, rank

TODAY = date(2026, 12, 1)


def values_of(request: str) -> list[object]:
    return [c.value for c in extract(request, TODAY).candidates]


def test_dates_keep_the_year_as_written_and_gain_an_iso_form() -> None:
    found = values_of("Book it for March 3, 2021, then 10/05/2023 and the 10th October 2023; also June 20")
    assert "March 3, 2021" in found and "2021-03-03" in found
    assert "10/05/2023" in found and "2023-10-05" in found
    assert "10th October 2023" in found and "2023-10-10" in found
    assert "2027-06-20" in found  # no year: the next such day after today


def test_numbers_signs_decimals_percent_money_and_words() -> None:
    found = values_of("A loan of $150,000 at 4.5% for two years, temperature -5 and a bill of 10k")
    assert 150000 in found and "150000" in found
    assert 4.5 in found and 0.045 in found
    assert 2 in found and -5 in found and 10000 in found


def test_a_hyphenated_slug_is_one_code_not_an_expression_inside_it() -> None:
    """DigitalOcean-style slugs keep their digits: "ubuntu-24-04-x64" is one value, not the sum `24-04`."""
    request = "Create it with size s-2vcpu-4gb and image ubuntu-24-04-x64; what is 24-04?"
    kinds = {(c.value, c.kind) for c in extract(request, TODAY).candidates}
    assert {("s-2vcpu-4gb", "code"), ("ubuntu-24-04-x64", "code"), ("24-04", "expression")} <= kinds
    assert sum(1 for value, _ in kinds if value == "24-04") == 1  # only the free-standing one


def test_spans_a_tool_argument_typically_takes() -> None:
    found = values_of(
        "Send 'Hello John' to +1 555-123-4567 and bob@example.com, see https://www.example.com/page at 10:00 AM, "
        "code ABC123, routes ['New York', 'Boston'] and 'Rome', 'Paris', and 'Oslo'"
    )
    for value in (
        "Hello John",
        "+1 555-123-4567",
        "bob@example.com",
        "https://www.example.com/page",
        "10:00 AM",
        "ABC123",
    ):
        assert value in found
    assert ["New York", "Boston"] in found and ["Rome", "Paris", "Oslo"] in found


def test_lowercase_words_and_case_are_offered_as_written() -> None:
    found = values_of("get the latest technology news and play some jazz music by Miles Davis")
    assert "technology" in found and "jazz music" in found and "Miles Davis" in found


def test_ranking_prefers_the_value_written_after_the_argument_name() -> None:
    values = extract("Calculate the sales tax on a purchase of $50 with a tax rate of 8%", TODAY)
    assert rank(values.numbers(), "tax_rate")[0].value in (8, 0.08)
    assert rank(values.numbers(), "amount", "The purchase amount")[0].value == 50


def test_steps_follow_sequencing_words_and_action_verbs() -> None:
    steps = split_steps(
        "Calculate a 20% tip on $100, create an invoice for 'John Doe', then encrypt the invoice id. "
        "After that, send it by SMS and tell me the weather",
        [tool_verb("Invoices.CreateInvoice")],
    )
    assert [s.text.split()[0].lower() for s in steps] == ["calculate", "create", "encrypt", "send", "tell"]


def test_a_step_never_ends_inside_quoted_text() -> None:
    request = "Share the slides with ana@acme.io and leave a comment on them: 'Ana, please review the milestones.'"
    steps = split_steps(request)  # "please review" inside the quote opens no step
    assert [s.text for s in steps][-1] == "leave a comment on them: 'Ana, please review the milestones.'"
    two = split_steps('Email bob "Hi, then call me" and then delete the draft')
    assert [s.text for s in two] == ['Email bob "Hi, then call me"', "delete the draft"]


def test_a_word_no_list_holds_opens_an_implicit_step_before_its_object() -> None:
    """After "and" or a comma, a lowercase word followed by a determiner, a pronoun or a quote is a verb ("…,
    and announce 'First meeting'"): its clause is an implicit step, kept when a tool of its own fits it. A
    preposition is not a verb, and a sentence opening with one ("In course d:phys-12, add …") is the
    setting of the step after it, not a step."""
    steps = split_steps("Create a course 'Robotics', invite kim@school.edu as a teacher, and announce 'Hello' there.")
    assert [(s.text, s.implicit) for s in steps] == [
        ("Create a course 'Robotics'", False),
        ("invite kim@school.edu as a teacher", False),
        ("announce 'Hello' there", True),
    ]
    assert [s.text for s in split_steps("Find flights to Rome and with the cheapest fare")] == [
        "Find flights to Rome and with the cheapest fare"
    ]
    steps = split_steps("In course d:phys-12, add a topic called Kinematics and pin it")
    assert steps[0].text == "In course d:phys-12, add a topic called Kinematics" and not steps[0].implicit
    request = "Create a task 'Send SMS to John' due Friday, and priority 'high'"  # a parameter's name, no verb
    assert [s.text for s in split_steps(request, ["create"], ["title", "priority", "due"])] == [request]
    assert len(split_steps(request, ["create"])) == 2  # without the catalog's names: read as a verb


def test_a_connective_after_a_comma_or_and_opens_a_step_whatever_verb_follows() -> None:
    """"…, then comment on it: '…'" and "…, and then post the welcome note …" are steps of their own though
    no list holds "comment" or "post"; a sentence that opens with a pronoun ("I'd like a new course …") is
    then no setting merged into the step after the connective. "due next Friday" (no comma, no "and"),
    a name after the connective and a clause opening with "I" stay in the step before."""
    request = "In the Onboarding project add a task 'Record video' due May 20, then comment on it: 'Can you own it?'"
    assert [s.text for s in split_steps(request, ["create"])] == [
        "In the Onboarding project add a task 'Record video' due May 20",
        "comment on it: 'Can you own it?'",
    ]
    request = "I'd like a new course 'Spanish I', with me as owner, and then post the welcome note 'Hola' in it."
    steps = split_steps(request, ["classroom"])
    assert [(s.text, s.implicit) for s in steps] == [
        ("I'd like a new course 'Spanish I', with me as owner", False),
        ("post the welcome note 'Hola' in it", False),
    ]
    assert len(split_steps("Create a task 'Taxes' due next Friday")) == 1
    assert len(split_steps("Book a table for 2, then I will pick it up at 7")) == 1
    assert len(split_steps("Schedule the call for Tuesday, then Monday if it fails", ["schedule"])) == 1


def test_context_without_a_verb_joins_the_step_before() -> None:
    request = "Get me a rental car in Chicago. I will pick it up on 01/01/2024 at 7:00 AM"
    steps = split_steps(request, ["reserve"])
    assert len(steps) == 1 and request[steps[0].start : steps[0].end].endswith("7:00 AM")


def test_tool_verbs_from_names() -> None:
    assert tool_verb("Buses.BuyBusTicket") == "buy"
    assert tool_verb("get_weather") == "get"
    assert tool_verb("ReserveRestaurant") == "reserve"


def test_a_coordinate_pair_between_chinese_characters_is_read() -> None:
    points = [c.value for c in extract("计算从31.2304,121.4737到30.2741,120.1551的最短驾车路线。", TODAY).candidates
              if c.kind == "coordinates"]  # fmt: skip
    assert points == ["31.2304,121.4737", "30.2741,120.1551"]
