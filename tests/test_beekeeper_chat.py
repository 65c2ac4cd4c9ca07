"""helper-88's new-user chat (stop 31, through LlamaIndex's SimpleChatEngine + ChatRecallMemory): a hobby beekeeper
and part-time nurse, four sessions over three weeks, seven private documents; replayed here on the plain API
(retrieve, then store, as the memory does), real model, embedded Chroma. The chat's one pin (after "how long do they
go in the oven?") is not replayed: the flapjack question that used it is held by its passage alone.

Held here: personal questions without recall words answered from an earlier session ("what colour is my queen in
hive 2?", "who did I swap my shift with?", "when is my next night shift?"), the correction "no, I meant hive 3"
finding the hive-3 memory, document questions ("what's the oxalic acid dose?") and the follow-ups right after a
document answer that searched the documents again ("and when should I apply it?", "what jars do I need?"); small
talk recalls nothing; "when's the next association meeting?" and "when's the honey show entry deadline?" (strict
xfails until stop 31) reach the passage that states the date, although useful memories were found and one of them,
unrelated, held a day or a time.
"""

from __future__ import annotations

from typing import Any

import pytest
from _chats import passages_hold, replay_fixture

USER = "maya"
T0 = 1772437800.0  # 2026-03-02 07:50 UTC

DOCS = [
    {"title": 'Hive inspection checklist',
     "text": 'Hive inspection checklist. Inspect every 7 to 10 days from April to September, only on days above '
              '15°C. 1. Look for eggs and young larvae: eggs mean the colony was queenright within the last 3 day'
              's. 2. Count the frames of brood. 3. Look for queen cells: swarm cells hang from the bottom edge of'
              ' frames, supersedure cells sit in the middle of the comb. 4. Check the stores: at least two frames'
              ' of honey. 5. Check for disease: chalkbrood mummies, a sunken or perforated cappings, a ropiness t'
              'est for foulbrood. 6. Add a super when bees cover 7 of the 10 frames. Record everything in the hiv'
              'e log.'},
    {"title": 'Mid-Wessex Beekeepers Association 2026 meetings',
     "text": 'Mid-Wessex Beekeepers Association - 2026 meeting schedule. Monthly meetings are held on the second'
              ' Tuesday of the month at 7:30pm in Little Haddon Village Hall, Church Lane, Little Haddon. Parking'
              ' is behind the hall. Dates: Tuesday 10 March (swarm control talk), Tuesday 14 April (AGM), Tuesday'
              ' 12 May, Tuesday 9 June. Apiary practical sessions are on Saturdays at 10:00 at the association ap'
              'iary at Greaves Farm. Secretary: Maureen Pike.'},
    {"title": 'Varroa treatment guide',
     "text": 'Varroa treatment guide. Oxalic acid trickling: use a 3.5% oxalic acid solution in 1:1 sugar syrup,'
              ' 5 ml per seam of bees, maximum 50 ml per colony, applied once in the broodless period (late Decem'
              'ber to early January). Oxalic acid sublimation (vaporising): 2.25 g per brood box, wear a respirat'
              'or. Apivar (amitraz): 2 strips per brood box, left in for 6 to 10 weeks, applied after the honey h'
              'arvest in mid-August; never with honey supers on. Monitoring: count the natural mite drop on a var'
              'roa board; treat if more than 10 mites a day fall in summer.'},
    {"title": "St Bride's Hospital nursing shift-swap policy",
     "text": "St Bride's Hospital - Nursing shift-swap policy. Swaps must be agreed between two staff of the sam"
              'e band, logged on HealthRoster and approved by the ward manager at least 72 hours before the first'
              ' affected shift. Swap requests submitted after 12:00 noon on Thursday are not processed for the fo'
              "llowing week's rota. A maximum of 4 swaps per month. Day shifts run 07:30 to 20:00; night shifts r"
              'un 19:45 to 08:15.'},
    {"title": 'Wessex County Honey Show 2026 entry rules',
     "text": 'Wessex County Honey Show 2026 - entry rules. The show is on Saturday 19 September 2026 at Castlebu'
              'ry Showground, Hall B. Entries close on Friday 28 August 2026 at 17:00; late entries are not accep'
              'ted. Entry fee £2 per class. Jars: two identical 1 lb (454 g) clear glass jars with gold lacquered'
              ' metal lids per class; no labels except the show label, placed 1 cm from the base. Staging is on F'
              'riday 18 September from 18:00 to 21:00. Classes: light, medium, dark, set honey, cut comb, wax blo'
              'ck.'},
    {"title": 'Honey and lemon flapjacks',
     "text": 'Honey and lemon flapjacks. Ingredients: 250 g rolled oats, 125 g butter, 100 g honey, 75 g light b'
              'rown sugar, zest of 1 lemon. Melt the butter, honey and sugar, stir in the oats and zest, press in'
              'to a 20 cm square tin. Bake at 180°C (160°C fan) for 25 minutes until golden. Cool 10 minutes in t'
              'he tin before cutting into 12 squares.'},
    {"title": 'Ward 7 staff handbook: breaks and parking',
     "text": 'Ward 7 staff handbook. Breaks: 30 minutes unpaid plus 15 minutes paid per 12-hour shift, agreed wi'
              "th the nurse in charge. Handover at 07:30 and 19:45 at the nurses' station. Staff parking in car p"
              'ark P3; permits are renewed every April through the estates office.'},
]

#: (day, session id, [(message, reply), ...]) as the user had the chat. The replies are chat.py's scripted ones,
#: except the three the chat's LLM could not give (its context lacked the answer): it said it was not sure, and
#: that is what the memory stored.
SESSIONS = [
    (0, 's1', [
        ('morning!',
         'Morning! How are the bees?'),
        ('Just did my first inspection of the year. My queen in hive 2 is marked blue.',
         'Great start. Noted: the hive 2 queen is marked blue.'),
        ("Hive 3's queen is unmarked, she's a new one from last summer's swarm.",
         "Got it, hive 3 has an unmarked queen from last summer's swarm."),
        ('what should I check on an inspection?',
         'Eggs, brood frames, queen cells, stores, disease, space.'),
        ("haha nice, that's basically what I did",
         'Sounds like a thorough inspection!'),
        ("I swapped my Friday shift with Dana, so I'm on nights Saturday instead.",
         'Noted: you swapped Friday with Dana and work nights on Saturday.'),
        ('is there a deadline for logging swaps?',
         'Log it on HealthRoster, approved 72 hours before the shift.'),
        ("what's the oxalic acid dose?",
         '3.5% solution, 5 ml per seam, max 50 ml per colony.'),
        ('and when should I apply it?',
         'Once, in the broodless period, late December to early January.'),
        ('thanks!',
         "You're welcome!"),
        ("My association meets at the village hall, I'm going to the next one with my friend Priya.",
         'Lovely, enjoy the meeting with Priya.'),
        ('why do bees swarm?',
         'Swarming is how colonies reproduce, usually when crowded in spring.'),
        ('ok, off to work. bye',
         'Have a good shift!'),
    ]),
    (4.46528, 's2', [
        ('hey, back again',
         'Welcome back!'),
        ('what colour is my queen in hive 2?',
         'Your hive 2 queen is marked blue.'),
        ('no, I meant hive 3',
         "Hive 3's queen is unmarked."),
        ('who did I swap my shift with?',
         'You swapped with Dana.'),
        ('when is my next night shift?',
         'Saturday night, 19:45 to 08:15.'),
        ('what time do night shifts start?',
         'Night shifts start at 19:45.'),
        ("when's the next association meeting?",
         "I'm not sure - I don't have that information."),  # scripted: 'Tuesday 10 March at 7:30pm.'
        ('and where is it held?',
         "I'm not sure - I don't have that information."),  # scripted: 'Little Haddon Village Hall, Church Lane.'
        ('who am I going with?',
         "You're going with Priya."),
        ("lol she'll love it",
         "I'm sure she will!"),
        ("I'm thinking of entering the honey show this year.",
         'Great idea, good luck with your entry!'),
        ("when's the honey show entry deadline?",
         "I'm not sure - I don't have that information."),  # scripted: 'Friday 28 August 2026 at 17:00.'
        ('what jars do I need?',
         'Two identical 1 lb (454 g) clear jars with gold lacquered lids.'),
        ('how do you make flapjacks with honey?',
         'Oats, butter, honey, sugar, lemon zest; press into a tin and bake.'),
        ('how long do they go in the oven?',
         '25 minutes at 180°C.'),
        # (pinned here in the chat: 'Always give oven temperatures in Celsius with the fan setting too.')
        ('cool, thanks',
         'Anytime!'),
    ]),
    (11.01389, 's3', [
        ('good morning',
         'Good morning!'),
        ('Update: I requeened hive 2 yesterday, the new queen is marked green.',
         'Noted: hive 2 now has a new queen marked green.'),
        ("Also Dana couldn't do it in the end, I swapped with Marcus instead.",
         'Got it, your swap is now with Marcus.'),
        ('what colour is the queen in hive 2 now?',
         'Green - the new queen.'),
        ('who am I swapping with?',
         'Marcus.'),
        ('how many Apivar strips go in a brood box?',
         '2 strips per brood box.'),
        ('how long do they stay in?',
         '6 to 10 weeks.'),
        ("what's the capital of Australia?",
         'Canberra.'),
        ('haha ok',
         ':)'),
        ('when do honey show entries close again?',
         '28 August at 17:00.'),
        ('how many mites a day means I should treat?',
         'More than 10 mites a day in summer.'),
    ]),
    (18.44444, 's4', [
        ('hiya',
         'Hi!'),
        ("what's my hive 2 queen marked with?",
         'Green (you requeened on 12 March).'),
        ("did I tell you who I'm going to the meeting with?",
         'Yes, Priya.'),
        ('is Hall B where the show is?',
         'Yes, Hall B at Castlebury Showground.'),
        ('what temperature do the flapjacks bake at?',
         '180°C, 160°C fan.'),
        ('how do bees make honey?',
         'They collect nectar, add enzymes and evaporate the water.'),
        ('who did I end up swapping with?',
         "Marcus (Dana couldn't)."),
        ('is it true honey never goes off?',
         'Yes, properly stored honey keeps almost indefinitely.'),
        ("thanks, that's all for today!",
         'Bye, enjoy the weekend!'),
    ]),
]

#: what the passages of a turn must hold: the document answer a good assistant needs
ANSWERED_BY = {
    "what should I check on an inspection?": ("Look for queen cells",),
    "is there a deadline for logging swaps?": ("at least 72 hours before",),
    "what's the oxalic acid dose?": ("5 ml per seam of bees",),
    "what time do night shifts start?": ("night shifts run 19:45",),
    "how do you make flapjacks with honey?": ("250 g rolled oats",),
    "how many Apivar strips go in a brood box?": ("2 strips per brood box",),
    "when do honey show entries close again?": ("Friday 28 August 2026 at 17:00",),
    "how many mites a day means I should treat?": ("more than 10 mites a day",),
    "is Hall B where the show is?": ("Castlebury Showground, Hall B",),
    "what temperature do the flapjacks bake at?": ("Bake at 180°C (160°C fan)",),
    "when's the next association meeting?": ("Tuesday 10 March", "at 7:30pm"),
    "when's the honey show entry deadline?": ("Friday 28 August 2026 at 17:00",),
}
#: follow-ups right after a turn the documents answered: the documents searched again
FOLLOW_UPS = {
    "and when should I apply it?": "once in the broodless period",
    "what jars do I need?": "1 lb (454 g) clear glass jars",
    "how long do they go in the oven?": "for 25 minutes",
    "how long do they stay in?": "left in for 6 to 10 weeks",
    # stop 31 (C10): right after the meeting question got the schedule; routed to the documents, whose search with
    # the bare message found nothing
    "and where is it held?": "Little Haddon Village Hall",
}
#: personal questions answered from an earlier session's memory: question -> what the memory must hold
REMEMBERED = {
    "what colour is my queen in hive 2?": "My queen in hive 2 is marked blue",
    "no, I meant hive 3": "Hive 3's queen is unmarked",
    "who did I swap my shift with?": "with Dana",
    "when is my next night shift?": "on nights Saturday",
    "who am I going with?": "my friend Priya",
    "what's my hive 2 queen marked with?": "the new queen is marked green",
}
SMALL_TALK = ["morning!", "haha nice, that's basically what I did", "thanks!", "ok, off to work. bye",
              "hey, back again", "lol she'll love it", "cool, thanks", "good morning", "haha ok", "hiya",
              "thanks, that's all for today!"]


chat = replay_fixture("beekeeper", USER, T0, DOCS, SESSIONS)


@pytest.mark.model
@pytest.mark.parametrize("question", sorted(ANSWERED_BY))
def test_document_answers_reach_the_prompt(chat: dict[str, Any], question: str) -> None:
    res = chat[question]
    assert all(passages_hold(res, needed) for needed in ANSWERED_BY[question]), res.explain()


@pytest.mark.model
@pytest.mark.parametrize("question", sorted(FOLLOW_UPS))
def test_a_follow_up_after_a_document_answer_searches_the_documents(chat: dict[str, Any], question: str) -> None:
    res = chat[question]
    assert res.route.wants_corpus and passages_hold(res, FOLLOW_UPS[question]), res.explain()


@pytest.mark.model
@pytest.mark.parametrize("question", sorted(REMEMBERED))
def test_personal_questions_without_recall_words_reach_memory(chat: dict[str, Any], question: str) -> None:
    res = chat[question]
    assert res.route.wants_memory and any(REMEMBERED[question] in i.text for i in res.memories), res.explain()


@pytest.mark.model
@pytest.mark.parametrize("message", SMALL_TALK)
def test_small_talk_recalls_nothing(chat: dict[str, Any], message: str) -> None:
    res = chat[message]
    assert res.route.value == "none" and not res.items, res.explain()
