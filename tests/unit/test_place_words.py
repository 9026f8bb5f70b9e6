"""Words that are also places ("Media", "Mac", "Name", "Monster", "Google", "Reading", "Nice",
"Bath", "AND", "ARE", "EST", "CAN"): none is read as a place in a title, a brief or a query —
a place is read only where a text names one (a location field, "in Bath", "Toronto, CAN") —
and the real places in the same sentences still read."""

from __future__ import annotations

import pytest

from shortlist import places
from shortlist.listings import jobpost
from shortlist.talent.brief import find_location

# Each text uses one of the words, and names no place.
NO_PLACE = {
    "Media": "Social Media Manager",
    "Mac": "Senior Mac Developer (Swift)",
    "Name": "Test for Comma and Name Bugs",
    "Monster": "Monster Energy Field Sales Representative",
    "Google": "Google Ads Specialist",
    "Reading": "Reading Specialist, Grades K-5",
    "Nice": "Backend Engineer - Nice to have: Kafka",
    "Bath": "Bath Fitter Installer",
    "AND": "DATA AND ANALYTICS LEAD",
    "ARE": "WORK FROM HOME. WE ARE HIRING",
    "EST": "Support Agent, 9am-5pm EST",
    "CAN": "CAN YOU BUILD APIS? Backend Developer",
}
# The same words with a real place in the sentence: the place reads, the word does not.
WITH_PLACE = {
    "Media": ("Social Media Manager in Lisbon", "Lisbon"),
    "Mac": ("Senior Mac Developer, Munich", "Munich"),
    "Name": ("Name Brand Buyer in Toronto", "Toronto"),
    "Monster": ("Monster Energy Field Sales Representative - Chicago", "Chicago"),
    "Google": ("Google Ads Specialist in Berlin", "Berlin"),
    "Reading": ("Reading Specialist in Boston", "Boston"),
    "Nice": ("Nice to have: Kafka. Engineer based in Madrid", "Madrid"),
    "Bath": ("Bath Fitter Installer in Denver", "Denver"),
    "AND": ("DATA AND ANALYTICS LEAD in Dublin", "Dublin"),
    "ARE": ("WE ARE HIRING: Nurse in Houston", "Houston"),
    "EST": ("Support Agent, 9am-5pm EST, in Atlanta", "Atlanta"),
    "CAN": ("Backend Developer, Toronto, CAN", "Toronto"),
}
# Where the text names the place, the common word is one.
NAMED = {
    "in Reading": ("Nurse in Reading", "Reading"),
    "in Nice": ("Chef de partie in Nice", "Nice"),
    "in Bath": ("Teacher in Bath", "Bath"),
}


@pytest.fixture(scope="module", autouse=True)
def gazetteer() -> None:
    places.load()


def test_the_corpus_covers_every_word() -> None:
    assert set(NO_PLACE) == set(WITH_PLACE) == {
        "Media", "Mac", "Name", "Monster", "Google", "Reading", "Nice", "Bath", "AND", "ARE",
        "EST", "CAN",
    }  # fmt: skip


@pytest.mark.parametrize("word", list(NO_PLACE))
def test_no_place_in_a_title(word: str) -> None:
    title = NO_PLACE[word]
    assert jobpost.city_of(None, [title]) is None
    assert jobpost.title_without_place(title) == title.strip(" ,-–—(")


@pytest.mark.parametrize("word", list(NO_PLACE))
def test_no_place_in_a_brief(word: str) -> None:
    assert find_location(f"Find me a {NO_PLACE[word]}") is None
    assert find_location(NO_PLACE[word].lower()) is None


@pytest.mark.parametrize("word", list(NO_PLACE))
def test_no_place_in_a_query(word: str) -> None:
    for query in (NO_PLACE[word], NO_PLACE[word].lower()):
        assert places.locate_place(query) is None, query
        assert places.without_place(query) == query


@pytest.mark.parametrize("word", list(WITH_PLACE))
def test_the_real_place_in_the_same_sentence_still_reads(word: str) -> None:
    text, city = WITH_PLACE[word]
    found = places.locate_place(text)
    assert found is not None and found.place.name == city, (text, found)
    assert jobpost.city_of(None, [text]) == city
    assert find_location(text) == city
    # A title is cut only around the place it names: the word stays (", Toronto, CAN" is one
    # address: the code is part of the place there).
    title = jobpost.title_without_place(text)
    assert (title == "Backend Developer") if word == "CAN" else word.lower() in title.lower()
    assert city not in places.without_place(text)


@pytest.mark.parametrize("phrase", list(NAMED))
def test_a_place_phrase_names_the_common_word_as_a_place(phrase: str) -> None:
    text, city = NAMED[phrase]
    assert places.find_place(text) is not None
    assert places.find_place(text).name == city  # type: ignore[union-attr]


def test_codes_read_in_an_address_and_a_location_field() -> None:
    assert places.resolve("Toronto, CAN").country_code == "CA"  # type: ignore[union-attr]
    assert jobpost.city_of("Bath, UK", []) == "Bath"
    assert jobpost.city_of("Reading", []) == "Reading"  # a location field names a place


@pytest.mark.parametrize(
    ("text", "label"),
    [
        ("Engineer in London", "London, England, United Kingdom"),
        ("Engineer in London. You will work from our Ontario office.", "London, Ontario, Canada"),
        ("Nurse in Portland. Oregon residents preferred.", "Portland, Oregon, United States"),
        ("Nurse in Portland, Maine", "Portland, Maine, United States"),
    ],
)
def test_an_ambiguous_name_is_read_by_population_and_the_texts_other_places(
    text: str, label: str
) -> None:
    found = places.locate_place(text)
    assert found is not None and found.place.label() == label
