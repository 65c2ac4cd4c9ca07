"""helper-86's new-user chat (stop 30, through the MCP server): a freelance web developer, five sessions over three
weeks, seven private documents; replayed here on the plain API (retrieve, then store, as an app does), real model,
embedded Chroma.

Held here: a plain statement right after a turn the documents answered ("Pixel has a new name ... she's Noodle now")
was sent to the documents as a follow-up (888 tokens of passages); "and what's the check-in time there?", right after
the hotel was named (a strict xfail until stop 31), searched the documents with the message alone.
"""

from __future__ import annotations

from typing import Any

import pytest
from _chats import passages_hold, replay_fixture

USER = "priya"
T0 = 1772442000.0  # 2026-03-02 09:00 UTC

DOCS = [
    {"title": 'Marlow Tea - Web Development Agreement',
     "text": 'Web Development Agreement between Priya Raman (the Developer) and Marlow Tea Ltd (the Client), B'
              'ristol. Scope: a Django e-commerce shop for loose-leaf tea with Stripe subscriptions. Fixed fee:'
              ' GBP 8,000 excluding VAT. Payment terms: 30% deposit on signing, 40% on staging sign-off, 30% on'
              ' launch. Invoices are payable within 14 days of the invoice date. Late payments accrue interest '
              'at 2% per month. Change requests outside the scope are billed at GBP 55 per hour. Either party m'
              "ay end the agreement with 14 days' written notice; work done up to that date is billed. The Deve"
              'loper keeps the right to show the finished shop in her portfolio.'},
    {"title": 'Django deployment runbook (staging and production)',
     "text": 'Deployment runbook for Django projects. 1. Merge to main and tag the release (vX.Y.Z). 2. SSH to'
              ' the server and pull the tag. 3. Environment variables live in /etc/marlow/env; after changing a'
              'ny environment variable, run `sudo systemctl restart gunicorn-marlow` so the workers pick it up,'
              ' then check the health endpoint at /healthz. 4. Run `python manage.py migrate --noinput` and `py'
              'thon manage.py collectstatic --noinput`. 5. Smoke test checkout with a Stripe test card. Rollbac'
              'k: check out the previous tag, run `python manage.py migrate <app> <previous_migration>` if a mi'
              'gration was applied, and restart gunicorn. Never run migrations against production before they h'
              'ave passed on staging.'},
    {"title": 'EuroWeb Summit 2026 Lisbon - schedule',
     "text": 'EuroWeb Summit 2026, Lisbon, FIL Congress Centre, 9-10 April 2026. Day 1 (Thursday 9 April): reg'
              "istration and coffee 08:00; opening keynote 'The Web in 2030' by Ana Ferreira at 09:30 in Hall A"
              "; track talks from 11:00; 'Django at scale' workshop 14:00-16:00 in Room 3; welcome drinks 18:30"
              '. Day 2 (Friday 10 April): lightning talks 09:00; panel on accessibility 11:30; closing keynote '
              'at 16:00; closing party 19:00 at LX Factory.'},
    {"title": 'Booking confirmation - Casa Azulejo Hotel, Lisbon',
     "text": 'Casa Azulejo Hotel, Rua de São Miguel 12, Alfama, Lisbon. Booking confirmation CAZ-58213. Guest:'
              ' Priya Raman. Arrival Wednesday 8 April 2026, departure Saturday 11 April 2026, 3 nights, superi'
              'or double room, breakfast included (served 07:00-10:30). Check-in from 15:00; check-out by 11:00'
              '. Free cancellation until 1 April 2026; after that the first night is charged. Total EUR 486.'},
    {"title": 'Tax deadlines note (UK sole trader)',
     "text": 'Tax deadlines for my freelance business (sole trader, UK). Self Assessment online return for the'
              ' 2025-26 tax year: deadline 31 January 2027, which is also when the balancing payment and first '
              'payment on account are due. Second payment on account: 31 July 2026. Late filing penalty: GBP 10'
              '0. Keep invoices and receipts for at least 5 years. VAT registration threshold: GBP 90,000 turno'
              'ver.'},
    {"title": 'Hive Coworking - house rules',
     "text": 'Hive Coworking, Stokes Croft, Bristol. Opening hours: Monday to Friday 07:30-21:00, Saturday 09:'
              '00-17:00, closed on Sundays and bank holidays. Quiet zone upstairs; phone and video calls only i'
              'n the booths. Wi-Fi network HiveGuest, password honeycomb2026. Guest day passes GBP 15. Printing'
              ' 10p a page. No pets, except assistance dogs. Clean the kitchen after use; the fridge is emptied'
              ' on Fridays.'},
    {"title": 'Brightsmile Dental - patient information',
     "text": 'Brightsmile Dental, 4 Park Row, Bristol. Please arrive 10 minutes before your appointment. To ca'
              "ncel or move an appointment give at least 24 hours' notice; appointments missed or cancelled wit"
              'h less notice are charged a GBP 25 fee. Check-ups take 30 minutes, hygienist visits 45 minutes. '
              'Phone 0117 496 0321.'},
]

#: (day, session id, [(message, reply), ...]) as the user had the chat
SESSIONS = [
    (0, 's1', [
        ('good morning!',
         "Good morning, Priya! What's on the list today?"),
        ('I signed a new client last night: Marlow Tea, a loose-leaf tea company in Bristol. They want a Django shop with a subscription box.',
         'Congratulations! A Django shop with a subscription box - are you thinking Stripe for the recurring billing?'),
        ('Yes, Stripe. Their budget is £8,000 for the whole build.',
         '£8,000 is workable for a Django shop with Stripe subscriptions if the scope stays tight.'),
        ("For the database I'm going with PostgreSQL 16, not MySQL - I want JSONB for the tea attributes.",
         'Good call: JSONB fields suit per-tea attributes like origin, oxidation and brew time.'),
        ('what are the payment terms in the Marlow Tea contract?',
         '30% deposit on signing, 40% on staging sign-off and 30% on launch; invoices are due within 14 days.'),
        ('My cat Pixel just walked across the keyboard and sent half an email to the client 😅',
         'Ha! Pixel is clearly keen on client relations.'),
        ('haha nice',
         '😄'),
        ('Also, my dentist appointment is on 18 March at 10:30 with Dr. Okafor at Brightsmile.',
         'Noted: dentist on 18 March at 10:30 with Dr. Okafor at Brightsmile.'),
        ('And I booked the Casa Azulejo hotel in Alfama for the EuroWeb Summit in Lisbon, 8 to 11 April.',
         'Lovely - Alfama is a great area to stay in, and close to the river.'),
        ('thanks!',
         'Anytime!'),
    ]),
    (3.29167, 's2', [
        ('hey, bad afternoon - the Marlow Tea deploy just failed on staging',
         'Oh no. What does the error say?'),
        ('It says: django.db.utils.OperationalError: FATAL: password authentication failed for user "marlow_app"',
         "That's Postgres rejecting the credentials. Did the database password or DATABASE_URL change recently?"),
        ('I rotated the production database password on Monday, so maybe the env is out of sync',
         "If only production's password changed, staging shouldn't be affected - unless staging points at the production database. Check which DATABASE_URL staging uses."),
        ('no, I meant the staging database, not production - I rotated the staging one',
         'Got it - then the staging DATABASE_URL secret still holds the old staging password. Update it and redeploy.'),
        ('what does the runbook say to do after changing environment variables?',
         'Restart gunicorn with `sudo systemctl restart gunicorn-marlow`, then check /healthz.'),
        ('Fixed! The staging secret was stale. Thanks!',
         "Great - glad it's back up!"),
        ("what's the difference between a list and a tuple in Python?",
         'Lists are mutable, tuples are immutable (and hashable if their items are).'),
    ]),
    (7.98958, 's3', [
        ('good morning',
         'Morning, Priya!'),
        ("Marlow Tea want a wholesale portal as well, so they've raised the budget to £9,500.",
         'Nice bump - £9,500 including the wholesale portal.'),
        ('Brightsmile called - my dentist appointment moved to 25 March, still 10:30.',
         'Updated: dentist on 25 March at 10:30.'),
        ('what happens if I have to cancel it at short notice?',
         "Brightsmile needs 24 hours' notice; with less they charge a £25 fee."),
        ("Also, Pixel has a new name - my niece kept calling her Noodle and it stuck, so she's Noodle now.",
         'Noodle it is! Very fitting for a cat who writes emails.'),
        ('haha nice',
         '😸'),
        ('is the coworking space open on Saturdays?',
         'Yes, Hive is open 09:00-17:00 on Saturdays.'),
        ('and on Sundays?',
         "It's closed on Sundays."),
        ("when's the next self assessment deadline?",
         '31 January 2027 for the 2025-26 return.'),
    ]),
    (14.0417, 's4', [
        ('hey, morning!',
         "Morning! How's the week starting?"),
        ("what's my cat called?",
         'Noodle - she used to be Pixel.'),
        ('which hotel did I book?',
         'The Casa Azulejo in Alfama, 8-11 April.'),
        ("and what's the check-in time there?",
         'Check-in is from 15:00.'),
        ('what time is the opening keynote on the first day?',
         "09:30 in Hall A - 'The Web in 2030' by Ana Ferreira."),
        ("what's the capital of Portugal?",
         'Lisbon.'),
        ("what's the budget for the Marlow Tea project?",
         '£9,500, since they added the wholesale portal.'),
        ('thanks!',
         "You're welcome!"),
    ]),
    (21.0104, 's5', [
        ('good morning!',
         'Good morning, Priya!'),
        ("when's my dentist appointment?",
         'Wednesday 25 March at 10:30.'),
        ("and who's it with?",
         'Dr. Okafor at Brightsmile.'),
        ('what error did the deploy fail with?',
         'OperationalError: password authentication failed for user "marlow_app" - the stale staging password.'),
        ('which database am I using for the shop?',
         'PostgreSQL 16.'),
        ('how do I roll back a bad deploy?',
         'Check out the previous tag, reverse the migration if one ran, and restart gunicorn.'),
        ('how many days do Marlow Tea have to pay an invoice?',
         '14 days from the invoice date.'),
        ('how do you say thank you in Portuguese?',
         "Obrigado (or obrigada if you're a woman)."),
        ("what's the wifi password at the coworking?",
         'honeycomb2026, on the HiveGuest network.'),
        ('haha nice, thanks',
         '😄'),
        ('can I bring Noodle to the coworking space?',
         'Sadly no - Hive allows no pets except assistance dogs.'),
        ('what time do I need to check out of the hotel?',
         'By 11:00 on Saturday 11 April.'),
        ('how far is Lisbon airport from the city centre?',
         'About 7 km - 20 minutes by metro.'),
    ]),
]
#: what the passages of a turn must hold: the document answer a good assistant needs
ANSWERED_BY = {
    "and what's the check-in time there?": "Check-in from 15:00",
    "and on Sundays?": "closed on Sundays",
    "what happens if I have to cancel it at short notice?": "24 hours' notice",
}
#: plain statements right after a turn the documents answered: nothing to look up in the documents
STATEMENTS_AFTER_DOCUMENTS = [
    "Also, Pixel has a new name - my niece kept calling her Noodle and it stuck, so she's Noodle now.",
]


chat = replay_fixture("freelancer", USER, T0, DOCS, SESSIONS)


@pytest.mark.model
@pytest.mark.parametrize("question", sorted(ANSWERED_BY))
def test_document_answers_reach_the_prompt(chat: dict[str, Any], question: str) -> None:
    res = chat[question]
    assert passages_hold(res, ANSWERED_BY[question]), res.explain()


@pytest.mark.model
@pytest.mark.parametrize("statement", STATEMENTS_AFTER_DOCUMENTS)
def test_a_statement_after_a_document_answer_is_not_a_follow_up(chat: dict[str, Any], statement: str) -> None:
    res = chat[statement]
    assert "continues a turn the documents answered: the documents too" not in res.notes, res.explain()
    assert not [i for i in res.items if i.source == "corpus"], res.explain()


@pytest.mark.model
def test_personal_questions_without_recall_words_reach_memory(chat: dict[str, Any]) -> None:
    for question, needed in [("what's my cat called?", "Noodle"), ("which hotel did I book?", "Casa Azulejo"),
                             ("what error did the deploy fail with?", "password authentication failed"),
                             ("which database am I using for the shop?", "PostgreSQL 16")]:
        res = chat[question]
        assert res.route.wants_memory and needed in res.context, res.explain()
