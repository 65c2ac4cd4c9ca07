"""helper-84's new-user chat (stop 29, through LangChain's agent middleware): a bakery owner training her first
employee, four sessions, eight private documents; replayed here on the plain API (retrieve, then store, as the
middleware does), real model, embedded Chroma.

Held here: "What time do we open on Sunday?" (a weak lookup; the corpus not strong, so the opening-hours passage was
dropped), and follow-ups to a turn the documents answered ("and what's the pitch fee there?") that skipped the
documents.
"""

from __future__ import annotations

from typing import Any

import pytest
from _chats import chat_turn

from chatrecall import ChatRecall
from chatrecall.testing import ManualClock

USER = "priya"
T0 = 1_780_000_000.0
DAY = 86400.0

DOCS = [
    {"title": "Yorkshire Mills Flour - trade price list 2026",
     "text": "Yorkshire Mills Flour Ltd. Trade price list, valid from 1 April 2026. Prices exclude VAT.\n"
             "Strong white bread flour, 16 kg sack: £18.40. Stoneground wholemeal, 16 kg sack: £19.75. "
             "Dark rye flour, 16 kg sack: £21.10. Type 00 pizza flour, 16 kg sack: £22.30. "
             "Spelt flour, 16 kg sack: £27.90.\n"
             "Deliveries to LS postcodes on Tuesdays and Fridays only. Orders must be placed by 2pm the day "
             "before the delivery day. Minimum order for free delivery: £150 excluding VAT; below that a "
             "£12 delivery charge applies. Payment terms: 30 days from invoice. "
             "Account manager: Dave Holroyd, 0113 496 0721."},
    {"title": "Employment contract - Tomasz Wójcik, Bakery Assistant",
     "text": "Contract of employment between Crumb & Co Bakery (employer) and Tomasz Wójcik (employee). "
             "Job title: Bakery Assistant. Start date: 11 May 2026. Place of work: 14 Otley Road, Headingley, "
             "Leeds.\nHours: 32 hours per week, four shifts of 8 hours, starting at 5:30am. "
             "Pay: £11.80 per hour during the probationary period, reviewed at its end.\n"
             "Probationary period: 4 weeks. During probation either party may end the employment with "
             "1 week's written notice. After probation, the notice period is 4 weeks on either side.\n"
             "Holiday: 28 days per year including bank holidays, pro rata for part-time hours. "
             "Sick pay: statutory sick pay only. Uniform and safety shoes are provided by the employer."},
    {"title": "Crumb & Co opening hours",
     "text": "Crumb & Co Bakery, 14 Otley Road, Headingley. Opening hours: Monday closed. Tuesday to "
             "Friday 7:00am to 4:00pm. Saturday 7:30am to 3:00pm. Sunday 8:00am to 1:00pm. Closed on bank "
             "holidays. Bread orders for collection must be placed 24 hours in advance."},
    {"title": "Recipe card - Country sourdough loaf (batch of 4)",
     "text": "Country sourdough, batch of 4 loaves. Ingredients: 1000 g strong white flour (or 850 g white "
             "plus 150 g wholemeal), 750 g water at 26°C, 200 g mature levain (100% hydration), 22 g fine "
             "sea salt.\nMethod: autolyse flour and 700 g water for 45 minutes. Add levain, then salt with "
             "the remaining 50 g water. Bulk ferment 4 hours at 24°C with 4 sets of stretch and folds in the "
             "first 2 hours. Divide into 4 x 490 g, pre-shape, rest 20 minutes, shape as bâtards. Cold retard "
             "in bannetons at 4°C for 12 to 16 hours. Bake in the deck oven at 250°C for 20 minutes with "
             "steam, then 230°C for 20 to 25 minutes without steam. Core temperature at least 96°C."},
    {"title": "Food safety and allergen policy",
     "text": "Crumb & Co food safety and allergen policy. Fridges must hold food at 5°C or below; check "
             "and record temperatures at opening and closing. The walk-in freezer must hold -18°C or "
             "below; if it reads above -15°C for more than one check, move stock and call the engineer. "
             "Hot-held food must stay above 63°C. Wash hands before starting work and after handling raw "
             "eggs.\nAllergens: Crumb & Co is a nut-free bakery. No tree nuts, peanuts or products with "
             "nut traces may enter the premises. Sesame, gluten, milk and egg are handled on site; the "
             "allergen matrix is kept by the till and must be updated whenever a recipe changes. New staff "
             "must complete Level 2 Food Hygiene training within their first 2 weeks."},
    {"title": "Market trading timetable 2026 - Kirkgate and Otley",
     "text": "Leeds Kirkgate Market outdoor Saturday stalls: set-up from 6:30am, trading 8:00am to 3:00pm, "
             "pitch fee £45 per day, vehicles off the square by 7:45am.\n"
             "Otley Farmers' Market: last Sunday of each month, Market Place, Otley. Set-up from 7:00am, "
             "trading 9:00am to 1:00pm. Pitch fee £32 per market, payable to Otley Town Council in advance. "
             "Gazebos must be weighted with at least 15 kg per leg."},
    {"title": "Wedding cake order form - Helen Okafor",
     "text": "Celebration cake order. Customer: Helen Okafor. Event: wedding reception at Harewood Barn. "
             "Cake: 3 tiers, lemon sponge with elderflower buttercream, semi-naked finish, fresh flowers "
             "supplied by the florist. Price: £380. Deposit of £120 paid on 6 May 2026. Balance of £260 "
             "due 7 days before the event. Delivery and set-up at the venue by 1pm on the day; delivery "
             "charge £25 included."},
    {"title": "Rational deck oven quick guide - error codes",
     "text": "Deck oven quick guide. Error E1: door open during bake. Error E2: temperature sensor fault, "
             "call service. Error E4: steam generator low water - check the water supply tap is open and "
             "descale the steam generator. Error E7: fan motor overheated, switch off for 30 minutes. "
             "Descale the steam generator every 3 months. Service line: 0800 555 0199."},
]

SESSIONS: list[tuple[int, list[Any]]] = [
    # (day offset, turns) - turn = (user text, [replies])
    (0, [
        ("Hi! I'm Priya, I run a little bakery called Crumb & Co in Headingley.",
         ["Hi Priya, lovely to meet you! How can I help with Crumb & Co?"]),
        ("I've just hired my first proper employee, Tomasz. He starts next Monday, 11 May.",
         ["Congratulations on your first hire! Let's get Tomasz set up."]),
        ("He's on £11.80 an hour while he's on his trial, and his day off will be Wednesday.",
         ["Got it: £11.80 an hour on trial, Wednesdays off."]),
        ("From now on, always remember that we are a completely nut-free bakery - never suggest anything with nuts.",
         [{"name": "pin_constraint", "args": {"text": "Crumb & Co is completely nut-free: never suggest anything containing nuts."}, "id": "c1"},
          "Pinned: nothing with nuts, ever."]),
        ("I also do a Saturday stall at Kirkgate Market with my sister Meera.",
         ["Nice, a Saturday stall is great for visibility. Meera helps you there?"]),
        ("Yes, she's brilliant with customers. I'm hopeless at small talk at 7am lol",
         ["Ha, 7am small talk is a skill of its own!"]),
        ("Big news: Helen Okafor booked a wedding cake for 14 June, three tiers, lemon and elderflower.",
         ["Lovely order! Three tiers, lemon and elderflower, for 14 June."]),
        ("I'm also thinking of stocking coffee beans from Kessel Coffee, a roaster in Kirkstall.",
         ["Local beans would pair well with your bread. Kessel sounds a good fit."]),
        ("ok that's me for today, thanks!", ["Bye Priya, good luck with the prep!"]),
    ]),
    (5, [
        ("Morning! Quick one, I've uploaded a load of my paperwork for you.",
         ["Morning! Thanks, I can see it. What do you need?"]),
        ("Tomasz had his first taster shift yesterday. His shaping is really rough, the batards keep spreading.",
         ["Very normal at first; tighter pre-shape and more surface tension usually fix spreading."]),
        ("He's keen though. He used to work in a warehouse in Bradford so early starts don't bother him.",
         ["That's a big plus in a bakery."]),
        ("My oven is flashing E4 again, that's the third time this month.",
         ["E4 usually points at the steam generator's water supply; worth descaling it."]),
        ("Meera can't do the stall on the 23rd, so my neighbour Joanne will help instead.",
         ["Good that Joanne can cover the 23rd."]),
        ("Weather's been gorgeous, sold out of focaccia by 11!",
         ["Sold out by 11 is a great problem to have!"]),
        ("I want to put the sourdough price up from £4.20 to £4.60. Too much?",
         ["£4.60 is in line with other artisan bakeries around Leeds; I think it's fine."]),
    ]),
    (12, [
        ("Hiya, update on Tomasz: he passed his trial! I'm bumping him up to £12.60 an hour.",
         ["Brilliant news! £12.60 an hour from now on."]),
        ("Also he asked to swap his day off to Thursday because of his college course, so it's Thursdays now.",
         ["Noted: Tomasz is off on Thursdays now."]),
        ("His shaping has got loads better, he did all 40 batards on Saturday on his own.",
         ["That's fast progress!"]),
        ("Helen rang - the wedding's moved to 21 June because the venue double-booked. And she wants a fourth tier now.",
         ["OK: 21 June, four tiers. I'd re-quote for the extra tier."]),
        ("I've decided to stop the Kirkgate stall and do Otley Farmers' Market instead, less hassle with parking.",
         ["Otley is a lovely market; good call on the parking."]),
        ("Kessel Coffee sent samples, the Ethiopian one is gorgeous.",
         ["Sounds like a winner for the counter."]),
        ("I'm knackered, it's been a long week", ["You've earned a rest, Priya."]),
    ]),
    (19, [
        ("Hi again. My daughter Anika turns 9 next Friday, I need to plan her party.",
         ["How fun! What's she into?"]),
        ("She loves unicorns, so I'll do a rainbow layer cake for her.",
         ["A rainbow layer cake is perfect for a unicorn fan."]),
        ("Tomasz is going to do Level 2 Food Hygiene online next week.",
         ["Good, that's a solid step."]),
        ("The flour bill was painful this month, we went through 22 sacks of strong white.",
         ["That's a lot of bread! Worth checking the delivery minimum to save on charges."]),
        ("I've agreed to quote Helen £470 for the four tiers.",
         ["£470 for four tiers sounds fair."]),
        ("lol Meera says I talk about bread more than I talk about my own kid",
         ["Ha! Sisters are honest."]),
    ]),
]

#: The final session as the user asked it, with the replies a good assistant gives
FINAL = [
    ("How much am I paying Tomasz an hour now?", "You're paying Tomasz £12.60 an hour since he passed his trial."),
    ("When's Helen's wedding?", "Helen's wedding is on 21 June now - it moved from the 14th."),
    ("and how many tiers is it now?", "Four tiers now; she added a fourth when the date moved."),
    ("Which day is Tomasz off?", "Tomasz has Thursdays off now."),
    ("What time do we open on Sunday?", "On Sundays you open 8am to 1pm."),
    ("How much salt goes in the country loaf?", "22 g of fine sea salt per batch of four loaves."),
    ("Tomasz wants to try it at 80% hydration, how much water would that be for the usual batch?",
     "At 80% hydration on 1000 g flour that's 800 g water instead of 750 g."),
    ("What time do I need to be set up at the market?", "At Otley Farmers' Market you can set up from 7am."),
    ("and what's the pitch fee there?", "Otley's pitch fee is £32 per market, paid to the town council in advance."),
]
#: question -> words of the passage that answers it
ANSWERED_BY = {
    "What time do we open on Sunday?": "Sunday 8:00am to 1:00pm",
    "Tomasz wants to try it at 80% hydration, how much water would that be for the usual batch?": "750 g water",
    "and what's the pitch fee there?": "Pitch fee £32",
}


@pytest.fixture
def bakery(embedded_store: Any, st_embedder: Any) -> Any:
    clock = ManualClock(T0)
    cr = ChatRecall(store=embedded_store, embedder=st_embedder, clock=clock)
    for n, (day, turns) in enumerate(SESSIONS, 1):
        clock.t = T0 + day * DAY
        if n == 2:
            cr.add_documents(DOCS, user_id=USER)  # her paperwork, private to her
        for user, replies in turns:
            chat_turn(cr, clock, USER, f"s{n}", user, [r for r in replies if isinstance(r, str)][-1])
    clock.t = T0 + 26 * DAY
    yield cr, clock
    cr.close()


@pytest.mark.model
def test_the_final_session_finds_the_documents_it_needs(bakery: Any) -> None:
    cr, clock = bakery
    for question, reply in FINAL:
        res = chat_turn(cr, clock, USER, "s5", question, reply)
        assert res is not None
        passages = [i.text for i in res.items if i.source == "corpus"]
        if question in ANSWERED_BY:
            assert any(ANSWERED_BY[question] in t for t in passages), res.explain()
            assert [i for i in res.items if i.source == "memory"], res.explain()
        if question == "and how many tiers is it now?":  # a follow-up to a memory answer: the memories answer it
            # Until stop 43 no passage came either. Since T1 (a document's title is searched) the order form, titled
            # "Wedding cake order form - Helen Okafor", is a strong passage (0.40) for it and comes after the
            # memories that answer. Since stop 46's F1c the memory search adds "Helen" from the question the follow-up
            # follows ("When's Helen's wedding?"): a third memory, the first booking (14 June, three tiers), comes
            # too, after the passage (it ranks below both answers; until then every memory came before the passage).
            memories = [i for i in res.items if i.source == "memory"]
            assert res.items[0].source == "memory" and any("four tiers" in i.text for i in memories), res.explain()
            first_passage = next(n for n, i in enumerate(res.items) if i.source == "corpus")
            answers = [n for n, i in enumerate(res.items) if i.source == "memory" and ("four tiers" in i.text
                                                                                       or "21 June" in i.text)]
            assert answers and max(answers) < first_passage, res.explain()
        if question == "and what's the pitch fee there?":
            assert "continues a turn the documents answered: the documents too" in res.notes, res.notes
