"""helper-103's new-user chat (stop 34): Priya, a chemistry teacher, with her partner Sam, a cat, a half marathon, a
bathroom renovation (the contractor's quote) and a school trip (a risk assessment and the museum's booking); the bot's
replies stored as a chatbot stores them, the three documents private to her. Real model, embedded Chroma.

"remind me what the quote said about the deposit?" (a later session; "deposit" said only in the quote) kept no
passage: the word was inside the continuity match "the deposit?", and the corpus probe's lacked-word rule (C20e)
dropped every word a continuity pattern matched (criterion C25; written before the change, fails on b06ba44).
"""

from __future__ import annotations

from typing import Any

from _chats import passages_hold, replay_fixture

USER = "priya"
T0 = 1788804000.0  # 2026-09-07 18:00 UTC, a Monday

DOCS = [{'id': 'bathroom-quote-q2291',
  'title': 'Harrow & Sons Bathrooms - Quote Q-2291',
  'text': 'Harrow & Sons Bathrooms Ltd. Quotation Q-2291 for Ms P. Sharma, 14 Crookes Road, Sheffield. Date of '
          'quote: 8 September 2026. Valid for 30 days.\n'
          '\n'
          'Scope of works: full bathroom renovation.\n'
          '1. Strip out existing bath, basin, WC and wall tiles, skip hire included: £450.\n'
          '2. Tiling: walls and floor, 18 square metres, porcelain tiles supplied by client, adhesive and grout '
          'included: £1,240.\n'
          '3. Supply and fit walk-in shower tray and 8 mm glass screen: £890.\n'
          '4. Plumbing, first and second fix, including thermostatic mixer valve: £760.\n'
          '5. Electrics: extractor fan and shaver socket, Part P certified: £220.\n'
          '\n'
          'Total: £3,560 plus VAT (£4,272 including VAT).\n'
          'Payment terms: 30% deposit on acceptance, balance on completion.\n'
          'Earliest start date: Monday 2 November 2026. Duration: 8 working days. The bathroom will be out of use '
          'for the whole duration.\n'
          'Contact: Dave Harrow, 0114 496 0321.'},
 {'id': 'risk-assessment-y10-science-museum',
  'title': 'Risk assessment - Year 10 trip to the Science Museum',
  'text': 'Educational visit risk assessment. Visit: Year 10 chemistry trip to the Science Museum, London. Date of '
          'visit: Friday 13 November 2026. Visit leader: Ms P. Sharma. Group: 42 students, 5 staff (ratio 1:8.4). '
          'First aider: Mr Okafor.\n'
          '\n'
          'Travel: private coach from school. Coach departs school car park at 06:45 and returns at approximately '
          '18:30.\n'
          'Hazard: road crossings on Exhibition Road. Control: students cross only at the pedestrian lights in '
          'staff-led groups.\n'
          "Hazard: crowds and a lost student. Control: every student carries a card with the visit leader's phone "
          'number; meeting point is the Information Desk in the Energy Hall.\n'
          'Hazard: allergies. Two students have a severe nut allergy; their adrenaline auto-injectors (EpiPens) '
          'are carried by Mr Okafor, spares by Ms Sharma. Packed lunches must be nut-free.\n'
          "Hazard: live demonstrations in Wonderlab. Control: students follow museum explainers' instructions; no "
          'open flames are used by students.\n'
          'Emergency contact at school: Mrs Bell, deputy head.'},
 {'id': 'science-museum-booking-SCM448812',
  'title': 'Science Museum group booking confirmation SCM-448812',
  'text': 'Science Museum Learning - Group booking confirmation. Booking reference: SCM-448812. School: '
          'Hillsborough Park Academy. Lead teacher: Priya Sharma.\n'
          'Date: Friday 13 November 2026.\n'
          'Arrival: please arrive at the Group Entrance on Exhibition Road at 10:15. Late arrivals may lose their '
          'session slot.\n'
          'Wonderlab: The Equinor Gallery session 11:00 to 12:00.\n'
          'Lunch room: basement picnic area, slot 12:30 to 13:00.\n'
          'Departure: please leave the building by 14:30.\n'
          'Price: Wonderlab £6 per student, 42 students, total £252. Accompanying teachers free.\n'
          'Cancellations: free up to 14 days before the visit.'}]

SESSIONS = [(0.0,
  's1-intro',
  [('hi!', 'Hi! How can I help this evening?'),
   ("I'm Priya, I teach chemistry at a secondary school in Sheffield.",
    'Nice to meet you, Priya! Chemistry teaching in Sheffield sounds great.'),
   ('I live with my partner Sam and our rescue cat, Biscuit.', 'Lovely - how long have you had Biscuit?'),
   ("About a year. She's a ginger tabby and a total menace at 5am.", 'Ha, ginger tabbies have a reputation!'),
   ('haha yes', 'Anything I can help with tonight?'),
   ("I'm training for the Sheffield Half Marathon, it's on 5 October.",
    'Good luck with the training! Four weeks to go then.'),
   ("what's the boiling point of ethanol?", 'Ethanol boils at about 78.4 °C at standard pressure.'),
   ('nice one', 'Happy to help!'),
   ('ok cool, night', 'Good night, Priya!')]),
 (3.0,
  's2-bathroom',
  [('evening!', "Evening! What's up?"),
   ("We're finally renovating the bathroom. I've uploaded the contractor's quote from Harrow & Sons.",
    'Exciting! I can see the quote - ask me anything about it.'),
   ('how much was the tiling in the quote?', 'The tiling (walls and floor, 18 m²) is £1,240.'),
   ('and when can they start?', 'The earliest start date is Monday 2 November.'),
   ('thanks!', "You're welcome!"),
   ('Sam works at the university library, by the way, so he can let the builders in on his days off.',
    'Handy! That makes access much easier.'),
   ('where does Sam work?', 'Sam works at the university library.'),
   ('ok cool, night', 'Night!')]),
 (10.0,
  's3-museum',
  [('morning', 'Morning, Priya!'),
   ("I'm organising a Year 10 trip to the Science Museum. I've uploaded the risk assessment and the booking "
    'confirmation.',
    "Great, I've got both documents."),
   ('what time do we arrive at the museum?', 'You need to be at the Group Entrance on Exhibition Road by 10:15.'),
   ('how many staff are coming?', 'Five staff for 42 students.'),
   ("who's carrying the epipens?", 'Mr Okafor carries the EpiPens; you carry the spares.'),
   ("what's the booking reference?", "It's SCM-448812."),
   ('how much does it cost in total?', 'Wonderlab is £6 per student, so £252 in total; teachers go free.'),
   ('no, I meant the bathroom quote, not the museum',
    'Sorry! The bathroom quote totals £3,560 plus VAT, £4,272 including VAT.'),
   ('haha yes', ':)')]),
 (17.0,
  's4-updates',
  [('hey', 'Hey Priya!'),
   ('Actually, the half marathon moved to 12 October - the council changed the road closures.',
    'Noted - an extra week of training then.'),
   ('Update: Sam got the job in Leeds! He starts at the Leeds Central Library next month.',
    "Congratulations to Sam! That's brilliant news."),
   ('Also Biscuit is officially Biscuit-Bean now, the vet registered her under that name.',
    'Biscuit-Bean is a great name.'),
   ("She's been diagnosed with a mild thyroid issue, so she's on tablets twice a day with breakfast and dinner.",
    "Poor thing - glad it's mild and manageable."),
   ('when is my race?', 'Your half marathon is on 12 October.'),
   ('where does Sam work now?', "Sam's starting at Leeds Central Library next month."),
   ("what's my cat called?", "She's Biscuit-Bean now."),
   ('how do I taper before a half marathon?',
    'Cut weekly volume by about 20-30% each week over the final 2 weeks while keeping some pace work.'),
   ('ok cool, night', 'Night!')]),
 (30.0,
  's5-mixed',
  [('hi again', 'Hi Priya!'),
   ('given my race date, how many weeks of taper do I have left?',
    "Your race is on 12 October, so you're right at the start of a two-week taper."),
   ('How long will the bathroom work take, and will it clash with the museum trip?',
    '8 working days from 2 November, so it will still be going on during the 13 November trip.'),
   ("what's the lunch slot at the museum?", '12:30 to 13:00 in the basement picnic area.'),
   ('is ethanol more volatile than water?', 'Yes - it has a lower boiling point and higher vapour pressure.'),
   ('Could I do the ethanol whoosh-bottle demo with my Year 10s on the trip, or does the risk assessment rule that '
    'out?',
    "The risk assessment says students don't use open flames at the museum, so save the whoosh bottle for the "
    'lab.'),
   ('thanks!', 'Any time!'),
   ('how often does the cat need her tablets?', 'Twice a day, with breakfast and dinner.'),
   ('nice one', ':)')]),
 (45.0,
  's6-later',
  [('good morning!', 'Morning Priya!'),
   ('remind me what the quote said about the deposit?', '30% deposit on acceptance, balance on completion.'),
   ('which city is Sam commuting to?', 'Leeds.'),
   ('what did I name the cat again?', 'Biscuit-Bean.'),
   ("what's the difference between an exothermic and endothermic reaction?",
    'Exothermic reactions release heat; endothermic ones absorb it.'),
   ('cheers, bye', 'Bye!')])]

chat = replay_fixture("chemistry_teacher", USER, T0, DOCS, SESSIONS)


def test_a_question_about_the_quote_reaches_it_in_a_later_session(chat: dict[str, Any]) -> None:
    res = chat["remind me what the quote said about the deposit?"]
    assert passages_hold(res, "30% deposit on acceptance"), res.explain()


def test_personal_questions_answer_from_memory(chat: dict[str, Any]) -> None:
    res = chat["what did I name the cat again?"]
    assert any("Biscuit-Bean" in i.text for i in res.items if i.source == "memory"), res.explain()
    res = chat["how often does the cat need her tablets?"]
    assert any("twice a day" in i.text for i in res.items if i.source == "memory"), res.explain()


def test_casual_turns_search_nothing(chat: dict[str, Any]) -> None:
    for message in ("nice one", "ok cool, night", "haha yes", "thanks!", "cheers, bye"):
        assert chat[message].route.value == "none", chat[message].explain()
