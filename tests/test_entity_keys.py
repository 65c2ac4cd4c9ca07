"""Pins the stored-key contract: :mod:`chatrecall.core._entity_keys` output, exactly.

Entity keys are stored. Every record keeps the keys of its entities
(``Record.entities``): in the store (Chroma metadata ``entities``) and in the
index snapshots. A query finds a stored record by entity only when the
query's keys, folded today, equal the record's keys, folded when it was
written. A change to :func:`fold_key`, :func:`date_key`, :func:`qty_key`
(or to the word tables beside them) therefore does not fail loudly anywhere
else: old records just stop matching new queries, silently.

**A failing test here means existing indexes would be invalidated.** If the
change is intended:

1. bump ``FORMAT`` in ``chatrecall/core/_snapshot.py`` (the only format
   version there is: snapshots carry the records' keys and are rebuilt from
   the store when the version differs);
2. say in the changelog that stored memories need re-adding for entity
   matching to see them (the keys in the store itself carry no version yet,
   so a rebuilt snapshot still holds the old keys);
3. only then update the expected values below.

The tables were computed from the implementation as it stood when the module
was split out of ``_entities.py`` (behaviour unchanged by the move).
"""

from __future__ import annotations

import pytest

from chatrecall.core import _entities, _entity_keys
from chatrecall.core._entities import RegexEntityExtractor
from chatrecall.core._entity_keys import date_key, fold_key, qty_key

# (surface form, key): case, plurals, possessives, accents, whitespace,
# punctuation, unicode (NFKD, Greek, Cyrillic, CJK) and empty-ish input.
FOLD_KEYS: list[tuple[str, str]] = [
    ("TriBridConfig", "tribridconfig"),
    ("TRIBRIDCONFIGS", "tribridconfig"),
    ("tribridconfigs", "tribridconfig"),
    ("Postgres", "postgres"),
    ("  Libraries ", "library"),
    ("movies", "movie"),
    ("cookies", "cookie"),
    ("caches", "cache"),
    ("teaches", "teach"),
    ("headaches", "headache"),
    ("heroes", "hero"),
    ("potatoes", "potato"),
    ("analyses", "analysis"),
    ("statuses", "status"),
    ("buses", "bus"),
    ("gas", "gas"),
    ("glasses", "glass"),
    ("boxes", "box"),
    ("quizzes", "quiz"),
    ("knives", "knife"),
    ("news", "news"),
    ("series", "series"),
    ("excuses", "excuse"),
    ("houses", "house"),
    ("prospectuses", "prospectus"),
    ("APIs", "api"),
    ("GPUs", "gpu"),
    ("kids", "kid"),
    ("Caroline's", "caroline"),
    ("James’s", "james"),
    ("the boss's", "the boss"),
    ("Bob's laptops", "bob's laptop"),
    ("José  García", "jose garcia"),
    ("Zoë's", "zoe"),
    ("naïve café", "naive cafe"),
    ("Ångström", "angstrom"),
    ("New   York\tCity \n", "new york city"),
    ('"config.yaml"', "config.yaml"),
    ("(Postgres)!", "postgres"),
    ("«Le Monde»", "le monde"),
    ("「東京」", "東京"),
    ("src/app/main.py", "src/app/main.py"),
    ("May 8th, 2023", "may 8th, 2023"),
    ("1990s", "1990s"),
    ("10%", "10%"),
    ("Straße", "strasse"),
    ("İstanbul", "istanbul"),
    ("ﬁles", "file"),
    ("Ｐｙｔｈｏｎ", "python"),
    ("がぎ", "がぎ"),
    ("Αθήνα", "αθηνα"),
    ("ΟΔΥΣΣΕΥΣ", "οδυσσευσ"),  # casefold keeps the medial sigma at the end (no "ς")
    ("Москва", "москва"),
    ("Ёлки", "елки"),
    ("Йогурты", "иогурты"),  # U+0306 is in the stripped block: "й" loses its breve
    ("", ""),
    ("   ", ""),
    ("'s", "s"),  # too short to be a possessive
    ("...", ""),
    ("()", ""),
    ("s", "s"),
    ("?!", ""),
]

# (pattern kind the extractor matched, matched text, key)
DATE_KEYS: list[tuple[str, str, str]] = [
    ("dmy", "8 May, 2023", "2023-05-08"),
    ("dmy", "8th of march", "march 8"),
    ("md", "May 8th 2023", "2023-05-08"),
    ("md", "Sept. 2021", "2021-09"),
    ("md", "December the 25th", "december 25"),
    ("iso", "2023-05-08 10:00", "2023-05-08"),
    ("time", "3pm", "15:00"),
    ("time", "12:30 am", "00:30"),
    ("time", "7 p.m.", "19:00"),
    ("time", "12 PM", "12:00"),
    ("rel", "Last Week", "last week"),
    ("num", "05/08/2023", "05/08/2023"),
    ("wd", "Mondays", "monday"),
]

# (number and unit, key)
QUANTITY_KEYS: list[tuple[str, str]] = [
    ("5 GB", "5 gb"),
    ("200ms", "200 ms"),
    ("3 kids", "3 kid"),
    ("1,000 users", "1000 user"),
    ("10%", "10%"),
    ("10 percent", "10%"),
    ("5-10 min", "5-10 min"),
    ("3 – 4 hours", "3-4 hour"),
    ("2.5 kg", "2.5 kg"),
    ("42", "42"),
]

# (text, the keys add() stores for it), end to end through the extractor
EXTRACTED_KEYS: list[tuple[str, tuple[str, ...]]] = [
    ("Hey Mel! I moved to New York City in May 2023 with 3 kids", ("mel", "new york city", "2023-05", "3 kid")),
    ("Caroline fixed ValueError in src/app/main.py yesterday", ("caroline", "valueerror", "src/app/main.py", "main.py", "yesterday")),
    ("HTTP 404 and status code 500 on 8 May, 2023 at 3pm", ("http 404", "http 500", "2023-05-08", "15:00")),
    ("It cost $1,200 and took two hours; then ECONNREFUSED again", ("$1200", "2 hour", "econnrefused")),
    ("We met at 7 p.m. last Friday, 10 days ago, at José's café", ("19:00", "last friday", "10 days ago", "jose")),
    ("Straße in Αθήνα and Москва with the TriBridConfigs", ("strasse", "αθηνα", "москва", "tribridconfig")),
]


@pytest.mark.parametrize(("text", "key"), FOLD_KEYS)
def test_fold_key_is_pinned(text: str, key: str) -> None:
    assert fold_key(text) == key


@pytest.mark.parametrize(("kind", "text", "key"), DATE_KEYS)
def test_date_key_is_pinned(kind: str, text: str, key: str) -> None:
    assert date_key(kind, text) == key


@pytest.mark.parametrize(("text", "key"), QUANTITY_KEYS)
def test_qty_key_is_pinned(text: str, key: str) -> None:
    assert qty_key(text) == key


@pytest.mark.parametrize(("text", "keys"), EXTRACTED_KEYS)
def test_extracted_keys_are_pinned(text: str, keys: tuple[str, ...]) -> None:
    # What add() stores: the extractor's keys, made by the functions above.
    assert RegexEntityExtractor().keys(text) == keys


def test_entities_re_exports_the_one_fold_key() -> None:
    assert _entities.fold_key is _entity_keys.fold_key
    assert "fold_key" in _entities.__all__
