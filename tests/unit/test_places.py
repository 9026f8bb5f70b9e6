"""The gazetteer (shortlist.places): places named by people, and how near two places are."""

from __future__ import annotations

import pytest

from shortlist.places import Nearness, PlaceKind, find_place, nearness, resolve


@pytest.mark.parametrize(
    ("text", "canonical"),
    [
        ("Munich", "munich, bavaria, germany"),
        ("München", "munich, bavaria, germany"),
        ("munich, bavaria, germany", "munich, bavaria, germany"),
        ("Munich, Germany", "munich, bavaria, germany"),
        ("Lisboa", "lisbon, lisbon, portugal"),
        ("Aberdeen", "aberdeen, scotland, united kingdom"),
        ("Austin, TX", "austin, texas, united states"),
        ("San Francisco Bay Area", "san francisco, california, united states"),
        ("Toronto, Canada", "toronto, ontario, canada"),
        ("Bavaria", "bavaria, germany"),
        ("UK", "united kingdom"),
        ("Deutschland", "germany"),
    ],
)
def test_resolve_names_aliases_and_languages(text: str, canonical: str) -> None:
    place = resolve(text)
    assert place is not None
    assert place.canonical() == canonical


def test_resolve_kinds_and_nothing() -> None:
    assert resolve("Germany").kind is PlaceKind.country  # type: ignore[union-attr]
    assert resolve("Bavaria").kind is PlaceKind.region  # type: ignore[union-attr]
    assert resolve("Remote").kind is PlaceKind.remote  # type: ignore[union-attr]
    assert resolve("Qwxzv") is None
    assert resolve("") is None
    assert resolve("x" * 10_000) is None


def test_a_region_after_an_unknown_town_still_places_the_person() -> None:
    place = resolve("Somewhere Tiny, Bavaria, Germany")
    assert place is not None and place.kind is PlaceKind.region and place.region == "bavaria"


@pytest.mark.parametrize(
    ("brief", "canonical"),
    [
        ("Senior FPGA engineer in Munich, 5+ years SystemVerilog", "munich, bavaria, germany"),
        ("data engineer in Lisbon", "lisbon, lisbon, portugal"),
        ("nurse in toronto", "toronto, ontario, canada"),
        ("Marine geophysicist, Aberdeen, 7+ years", "aberdeen, scotland, united kingdom"),
        ("Munich-based FPGA engineer", "munich, bavaria, germany"),
        ("backend engineer based in Munich, Germany with Go", "munich, bavaria, germany"),
        ("Java developer London", "london, england, united kingdom"),
        ("remote Python developer", "remote"),
    ],
)  # fmt: skip
def test_find_place_in_free_text(brief: str, canonical: str) -> None:
    place = find_place(brief)
    assert place is not None
    assert place.canonical() == canonical


@pytest.mark.parametrize(
    "brief",
    ["Data Engineer with Spark", "Reading specialist", "5 years of experience in mobile apps"],
)
def test_find_place_ignores_words_that_only_look_like_places(brief: str) -> None:
    assert find_place(brief) is None


@pytest.mark.parametrize(
    ("held", "expected"),
    [
        ("Munich", Nearness.city),
        ("München, Deutschland", Nearness.city),
        ("Garching, Bavaria, Germany", Nearness.metro),
        ("Freising, Germany", Nearness.metro),
        ("Augsburg, Germany", Nearness.region),
        ("Somewhere Tiny, Bavaria, Germany", Nearness.region),
        ("Berlin, Germany", Nearness.country),
        ("Lisbon, Portugal", Nearness.elsewhere),
        ("Remote", Nearness.unknown),
    ],
)
def test_nearness_to_a_city(held: str, expected: Nearness) -> None:
    munich = resolve("Munich")
    assert munich is not None
    assert nearness(munich, resolve(held)) is expected


def test_nearness_to_a_country_a_region_and_remote() -> None:
    germany, bavaria, remote = resolve("Germany"), resolve("Bavaria"), resolve("remote")
    assert germany is not None and bavaria is not None and remote is not None
    assert nearness(germany, resolve("Berlin")) is Nearness.country
    assert nearness(bavaria, resolve("Nuremberg")) is Nearness.region
    assert nearness(bavaria, resolve("Berlin")) is Nearness.country
    assert nearness(remote, resolve("Remote")) is Nearness.remote
    assert nearness(remote, resolve("Berlin")) is Nearness.unknown
    assert nearness(germany, None) is Nearness.unknown


def test_label_is_the_display_form() -> None:
    place = resolve("munich, bavaria, germany")
    assert place is not None
    assert place.label() == "Munich, Bavaria, Germany"
