"""Data only: how a user says a change replaces a named thing ("sold the Eureka", "switched from Vodafone", "the
ThinkPad died"), read by :func:`chatrecall.core._index._replaced_words`.

The verbs and word lists were written from nu45's grinder turn and general English (stop 44), before the held-out
sets in ``benchmarks/data/changes_replaced`` existed. Someone else's thing (:data:`OTHERS`, :data:`OTHER_PEOPLE`,
:data:`THE_USER`) was added after a control of each of the first two sets failed ("my brother finally sold his
Subaru", "my roommate switched from notion"), and judged on the third, written after it (docs/benchmarks.md, "R1c").
"""

from __future__ import annotations

import re

#: The thing replaced, after a verb that gives it up: up to three words (group ``thing``), the determiners before
#: them skipped (group ``whose``). A pronoun ("replaced it with a MacBook") names nothing here.
REPLACED_AFTER_VERB = re.compile(
    r"\b(?:sold|ditched|dumped|scrapped|retired|cancell?ed|quit|got rid of|gave away|traded in|traded|swapped out|"
    r"replaced|upgraded from|downgraded from|switched (?:away )?from|moved (?:away )?from|changed from|"
    r"stopped using|stopped going to|no longer (?:use|using|have|go to|with|at|on)|(?:am|are|'m|'re) done with|"
    r"instead of|rather than)\s+"
    r"(?P<whose>(?:(?:the|my|our|his|her|their|that|this|those|these|old|an?)\s+){0,3})"
    r"(?P<thing>[^\W\d_][\w+'-]*(?:\s+[\w+'-]+){0,2})",
    re.IGNORECASE,
)

#: The thing replaced, before what ended it: "the ThinkPad finally died", "my Corolla got written off". Not "is
#: gone": "the error is gone" is a problem solved, not a thing replaced (tests/test_ranking.py's error question).
REPLACED_BEFORE_END = re.compile(
    r"\b(?P<whose>the|my|our|old)\s+(?:old\s+)?(?P<thing>[^\W\d_][\w+'-]*)\s+(?:\w+\s+)?"
    r"(?:died|broke(?: down)?|was stolen|got stolen|stopped working|is dead|gave up|"
    r"(?:got|was) written off|(?:got|was) totall?ed)\b",
    re.IGNORECASE,
)

#: Determiners that make the thing someone else's ("my brother sold his Subaru"): not the user's thing replaced.
OTHERS = frozenset({"his", "her", "their"})

#: A subject that is another person, among the words before the verb in its clause ("my roommate switched from
#: notion", "she sold the Kindle"); given names are read from ``data/given_names.txt``.
OTHER_PEOPLE = frozenset({
    "he", "she", "they", "he's", "she's", "they're", "they've", "he'd", "she'd",
    "brother", "sister", "mom", "mum", "mother", "dad", "father", "parents", "son", "daughter", "kids", "wife",
    "husband", "partner", "boyfriend", "girlfriend", "fiance", "fiancé", "fiancee", "roommate", "flatmate",
    "housemate", "friend", "friends", "buddy", "mate", "cousin", "uncle", "aunt", "grandma", "grandpa", "nan",
    "neighbour", "neighbours", "neighbor", "neighbors", "coworker", "coworkers", "co-worker", "colleague",
    "colleagues", "boss", "manager", "team", "client", "landlord", "in-laws", "everyone", "somebody", "someone",
})

#: The user among those words ("my wife and I sold the Corolla"): the thing is the user's.
THE_USER = frozenset({"i", "we", "i've", "we've", "i'm", "we're", "i'd", "we'd", "me", "us"})

#: Words that end the replaced thing's name ("sold the Eureka and bought ...", "switched from Vodafone to Three").
THING_ENDS = frozenset({
    "and", "or", "but", "to", "for", "with", "at", "in", "on", "by", "from", "into", "because", "since", "so",
    "then", "last", "this", "yesterday", "today", "a", "an", "the", "after", "before", "when", "while", "as", "we",
    "i", "it", "they", "now", "finally", "recently", "already", "just", "week", "month", "year", "ago",
})

#: Words that are never the thing itself ("left early", "quit smoking" name no thing of the user's).
NOT_A_THING = frozenset({
    "it", "them", "that", "this", "one", "ones", "thing", "things", "stuff", "early", "late", "work", "home",
    "smoking", "drinking", "everything", "something", "anything", "nothing", "him", "her", "me", "us", "you",
})
