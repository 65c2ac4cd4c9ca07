"""helper-96's new-user chat (stop 33): a freelance sound engineer with a band, a greyhound, a kitchen renovation and
a Lisbon trip; the bot's replies are stored as the LangChain middleware stores them, seven documents. Once the bot's
replies filled memory, three questions that name a document ("the kitchen quote", "our hotel", "our flight") passed
the usefulness check on memories and skipped the documents; on a fresh store each routed both and got its document
(criterion C20). Real model, embedded Chroma; written before the change (fails on 6f432a0).
"""

from __future__ import annotations

from typing import Any

from _chats import passages_hold, replay_fixture

USER = "jonah"
T0 = 1773820800.0  # 2026-03-18 08:00 UTC

DOCS = [{'text': 'The Fleece, 12 St Thomas Street, Bristol BS1 6JJ. Venue technical rider.\n'
          'Stage: 7.2 m wide x 4.5 m deep, 0.9 m high. Load-in via rear door on St Thomas Lane, no lift.\n'
          'Stage power: four 16 A (blue CEEform) sockets stage left, two 13 A doubles stage right; all on the same '
          'phase as FOH.\n'
          'PA: d&b Y-series, 6 x Y8 per side plus 4 x B6 subs. Monitors: 6 x M4 wedges on 6 mixes.\n'
          'FOH desk: Allen & Heath SQ-5 with DX168 stage box (48 inputs). Visiting engineers welcome; bring your '
          'show file on USB.\n'
          'DI: the house stocks 6 active DI (Radial J48) and 2 passive (Radial JDI). Bass rigs: we provide one DI '
          'per bass; if you want a DI plus a mic on the cab, tell us 48 h in advance.\n'
          'Curfew 23:00 on weekdays, 23:30 Friday and Saturday. Doors 19:30. Soundcheck from 16:00.',
  'title': 'The Fleece Bristol - Venue Technical Rider 2026'},
 {'text': 'Hartwell Kitchens Ltd, quotation Q-2291, prepared for Jonah Reyes, 14 Cotham Grove, Bristol.\n'
          "Cabinets: 9 base units and 6 wall units, shaker style, painted 'Lichen' green, soft-close hinges: 4,350 "
          'GBP.\n'
          'Worktop: 30 mm solid oak, 3.2 m run plus 1.1 m return, oiled, with undermount sink cut-out: 1,680 GBP.\n'
          'Sink: Franke single bowl undermount stainless steel, with Quooker-ready tap hole: 420 GBP (supply only; '
          "plumbing by client's plumber).\n"
          'Fitting: 4 days, 2 fitters: 1,450 GBP. Total excluding VAT: 7,900 GBP. Deposit 30 % on order; balance '
          'on completion.\n'
          'Lead time 6 weeks from deposit. Quote valid for 60 days.',
  'title': 'Hartwell Kitchens - Quotation Q-2291 for J. Reyes'},
 {'text': 'Matrix outputs. The SQ provides 3 stereo matrix outputs. To feed delay speakers, press the matrix key, '
          'select a matrix, then in Routing assign the LR main mix to the matrix with the Assign screen. Use the '
          'matrix output delay (Output > Delay, up to 682 ms) to time-align the delay speakers to the main PA: '
          'about 2.9 ms per metre of distance.\n'
          'Phantom power (48V) is switched per input in the Preamp screen of each channel. Phantom is sent from '
          'the socket the channel is patched to, so the DX168 stage box input must be patched. Always mute the '
          'channel before switching 48V on or off.\n'
          'Ground hum: the DX168 and SQ-5 audio grounds are linked; use the ground lift on the DI, not on the '
          'desk.',
  'title': 'Allen & Heath SQ-5 Reference Guide - Matrix and Phantom Power (excerpt)'},
 {'text': 'The Low Tides at The Fleece, Saturday 21 March 2026. Stage time 21:15, 45 minutes.\n'
          '1. Undertow (E minor, 96 bpm)\n'
          '2. Harbour Lights (A major, 120 bpm)\n'
          '3. Slow Bloom (D major, 78 bpm)\n'
          '4. Tin Roof (G minor, 132 bpm) - bass intro, drop-D\n'
          '5. Salt and Iron (C major, 110 bpm)\n'
          '6. Paper Moon Motel (F# minor, 88 bpm)\n'
          '7. Encore: Undertow reprise (E minor)\n'
          'Changeover notes: Jonah swaps to the fretless for Slow Bloom; capo 2 for Harbour Lights on guitar.',
  'title': 'The Low Tides - Setlist, The Fleece, Saturday 21 March 2026'},
 {'text': 'Booking reference XK7Q2P. Passengers: Jonah Reyes, Maya Okafor.\n'
          'Outbound: TP1337 London Gatwick (LGW) to Lisbon (LIS), Saturday 16 May 2026, departs 06:45, arrives '
          '09:35.\n'
          'Return: TP1338 Lisbon (LIS) to London Gatwick (LGW), Thursday 21 May 2026, departs 18:20, arrives '
          '20:55.\n'
          'Fare: Classic. Baggage: one checked bag of up to 23 kg and one cabin bag of 8 kg per passenger.\n'
          'Online check-in opens 36 hours before departure. Bag drop closes 45 minutes before departure.',
  'title': 'TAP Air Portugal - Booking confirmation XK7Q2P'},
 {'text': 'Casa do Beco, Rua dos Remedios 48, Alfama, Lisbon. Reservation for Jonah Reyes and Maya Okafor, 16 to '
          '21 May 2026, 5 nights, double room with river view, breakfast included. Total 940 EUR, paid.\n'
          'Check-in from 15:00, check-out by 11:00. Luggage storage available before check-in. From the airport: '
          'metro red line to Alameda, green line to Baixa-Chiado, about 40 minutes, or a taxi about 20 minutes.',
  'title': 'Casa do Beco, Alfama - Reservation'},
 {'text': 'Greyhounds have thin coats and very little body fat, so they overheat and get cold more easily than '
          'most dogs. Walk early in the morning or late in the evening when it is above 22 C. Above 27 C keep '
          'walks to 10-15 minutes and avoid tarmac, which burns pads. Always carry water. Signs of heatstroke: '
          'heavy panting, drooling, stumbling. In winter use a fleece-lined coat below 10 C.',
  'title': 'Greyhound Trust - Caring for your retired greyhound in hot weather'}]

SESSIONS = [(0.0,
  's1',
  [("hey! just set this up, I'm Jonah", 'Hi Jonah, nice to meet you! What can I help with?'),
   ("I'm a freelance sound engineer, mostly live gigs around Bristol, and I play bass in a band called The Low "
    'Tides',
    'Love it - sound engineer and bassist, you must spend a lot of time in venues. What kind of gigs?'),
   ('how do I solder a jack cable?',
    'Strip about 10 mm of the outer jacket, twist the shield, tin both the wires and the jack lugs, slide the jack '
    'shell on first, then solder the tip to the core and the sleeve to the shield. Check continuity before closing '
    'it up.'),
   ('thanks!', 'Any time!'),
   ("we adopted a rescue greyhound last month, she's called Pistachio but we mostly say Pip",
    'Pistachio is a brilliant name! Greyhounds make lovely couch potatoes. How is Pip settling in?'),
   ('the kitchen reno is finally happening, Kev Marsh the plumber came round today and quoted £1,240 for moving '
    'the sink and the new waste pipe',
    'Exciting! £1,240 for moving the sink and the waste sounds within the normal range for that job.'),
   ('haha yeah if it all goes to plan', 'Ha, famous last words with renovations.'),
   ('Maya and I are booking Lisbon for May, thinking 14th to the 19th',
    'Lisbon in May is lovely - warm but not too hot. Want tips on neighbourhoods?'),
   ('I sent two invoices today btw, Harbourside Events for £450 and The Fleece for £320',
    'Nice, two invoices out. Do you want a reminder to chase them in 30 days?'),
   ('ok cool, night', 'Night Jonah!')]),
 (3.0,
  's2',
  [('morning! back from the Fleece soundcheck', 'Morning! How did the soundcheck go?'),
   ("what's my dog's name?", 'Your greyhound is Pistachio - Pip for short.'),
   ('how much was the quote from the plumber?',
    'Kev Marsh quoted £1,240 for moving the sink and the new waste pipe.'),
   ('how many DI boxes will the Fleece give me for the bass rig?',
    'The Fleece provides one DI per bass; a DI plus a mic on the cab needs 48 h notice.'),
   ("and what's the stage power like there?",
    'Four 16 A CEEform sockets stage left and two 13 A doubles stage right, all on the FOH phase.'),
   ('we picked the sage green zellige tiles from Mosaic Lane for the splashback, 10x10',
    'Sage zellige will look great with the oak. 10x10 is a classic size for that.'),
   ('how do I send a matrix to the delay speakers on the SQ-5?',
    'Press the matrix key, assign LR to the matrix in Routing, then set the output delay to align.'),
   ("what's the first song in our set on saturday?", 'You open with Undertow, in E minor at 96 bpm.'),
   ('nice one', 'Break a leg on Saturday!'),
   ("what's the worktop spec in the kitchen quote?", '30 mm solid oak, a 3.2 m run plus a 1.1 m return, oiled.'),
   ('and the total?', '7,900 GBP excluding VAT, with a 30 % deposit on order.')]),
 (7.0,
  's3',
  [('hey', 'Hey Jonah!'),
   ("plumber called back, the quote's gone up to £1,410 because the waste pipe has to go through the wall",
    'Annoying, but going through the wall is real extra work. £1,410 it is.'),
   ('how much was the quote from the plumber?',
    "Kev's revised quote is £1,410 (it was £1,240 before the wall issue)."),
   ('which tile did we pick?', 'The sage green zellige from Mosaic Lane, 10x10.'),
   ('also the flights moved, TAP changed us to the 16th', 'Got it, so you now fly on the 16th of May.'),
   ('when do we fly?', 'Saturday 16 May, TP1337 from Gatwick at 06:45.'),
   ('what time is the flight?', '06:45 from Gatwick, landing 09:35 in Lisbon.'),
   ('how heavy can our checked bags be?', '23 kg checked plus an 8 kg cabin bag each.'),
   ('what was the amount on the invoice I sent?', 'The Harbourside Events invoice was £450.'),
   ('no, I meant the other invoice, the Fleece one, not Harbourside', 'Sorry - the Fleece invoice was £320.'),
   ('how far is it from Lisbon airport to Alfama?', 'About 7 km; 40 minutes on the metro or 20 by taxi.'),
   ('thanks', 'No problem!')]),
 (12.0,
  's4',
  [('gig went great btw, packed room', 'Amazing! A packed Fleece is a great feeling.'),
   ('what key do we play Tin Roof in?', 'Tin Roof is in G minor, 132 bpm, with the drop-D bass intro.'),
   ("is it safe to take her for a long walk if it's 28 degrees?",
    "Above 27 C keep Pip's walks to 10-15 minutes, avoid tarmac, and carry water."),
   ("what's the check-in time at our hotel in Lisbon?",
    "Check-in at Casa do Beco is from 15:00; they'll store your bags before that."),
   ('when do we fly again?', 'Saturday 16 May at 06:45 from Gatwick.'),
   ('what does the kitchen quote include for the sink?',
    'A Franke single-bowl undermount sink, supply only - your plumber fits it.'),
   ('cool, cheers', 'Cheers!'),
   ("who's the plumber again?", 'Kev Marsh.'),
   ('how do you get rid of ground hum from a bass DI?',
    'Try the ground lift on the DI, check for a shared power strip with lighting, and use balanced cables.'),
   ('how much is the plumber charging us now?', "Kev's quote is £1,410 now, after the waste pipe change."),
   ('how tall is the stage at the Fleece?', 'The Fleece stage is 0.9 m high, 7.2 m wide and 4.5 m deep.'),
   ('where do we stay in Lisbon?', 'Casa do Beco in Alfama, river-view double, breakfast included.'),
   ("what's the bag drop deadline for our flight?", 'Bag drop closes 45 minutes before departure.')])]

chat = replay_fixture("sound_engineer", USER, T0, DOCS, SESSIONS)


def test_a_question_naming_the_kitchen_quote_reaches_it(chat: dict[str, Any]) -> None:
    res = chat["what's the worktop spec in the kitchen quote?"]
    assert passages_hold(res, "30 mm solid oak"), res.explain()


def test_a_question_about_our_hotel_reaches_the_reservation(chat: dict[str, Any]) -> None:
    res = chat["what's the check-in time at our hotel in Lisbon?"]
    assert passages_hold(res, "Check-in from 15:00"), res.explain()


def test_a_question_about_our_flight_reaches_the_booking(chat: dict[str, Any]) -> None:
    res = chat["what's the bag drop deadline for our flight?"]
    assert passages_hold(res, "Bag drop closes 45 minutes"), res.explain()


def test_personal_questions_still_answer_from_memory(chat: dict[str, Any]) -> None:
    res = chat["what's my dog's name?"]
    assert any("Pistachio" in i.text for i in res.items if i.source == "memory"), res.explain()
    res = chat["who's the plumber again?"]
    assert any("Kev Marsh" in i.text for i in res.items if i.source == "memory"), res.explain()

