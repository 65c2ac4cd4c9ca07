"""helper-87's new-user chat (stop 30, a plain LangChain chain): a chemistry teacher, five sessions over four weeks,
eight private documents; replayed here on the plain API (retrieve, then store, as the chain does), real model,
embedded Chroma.

Held here: a deadline ("What's the bag drop deadline on race day?") was not asked as a day or time, so the race
passage that states it was dropped; "What time does my wave start?" (a strict xfail until stop 31) was answered from
memory by the coach's departure time, reached through the user's earlier "What time does it leave?".
"""

from __future__ import annotations

from typing import Any

import pytest
from _chats import passages_hold, replay_fixture

USER = "tom"
T0 = 1772478000.0  # 2026-03-02 19:00 UTC

DOCS = [
    {"title": 'Hillcrest Academy Science Department - Risk assessment: acid-alkali titration (Year 11)',
     "text": 'Risk assessment RA-CH-014. Activity: acid-alkali titration using a burette and pipette, Year 11 '
              'GCSE chemistry. Reagents: sodium hydroxide solution 0.1 mol/dm3 (irritant to eyes), hydrochloric'
              ' acid 0.1 mol/dm3 (low hazard at this concentration), phenolphthalein indicator in ethanol (high'
              'ly flammable, keep away from Bunsen flames). Control measures: eye protection must be worn by al'
              'l pupils and staff for the whole practical. Fill burettes below eye level, standing on the floor'
              ' not on a stool, using a small funnel that is removed before titrating. Pipette fillers must be '
              'used; mouth pipetting is forbidden. Clamp burettes securely in stands. Numbers: a maximum of 24 '
              'pupils per laboratory, with one teacher and one technician available. Spills: dilute small spill'
              's with plenty of water and wipe up; report alkali splashes to the eye immediately and irrigate a'
              't the eyewash station for at least 10 minutes. Broken glass goes in the glass bin, never the gen'
              'eral waste. Disposal: neutralised solutions may be poured down the sink with plenty of water. Re'
              'viewed by the head of department, January 2026.'},
    {"title": 'Letter to parents: Year 10 trip to the Science Museum, London (revised date)',
     "text": 'Dear Parent/Carer, we are pleased to confirm the Year 10 science trip to the Science Museum in L'
              'ondon, now on Thursday 2 April 2026 (revised from the original date because of a coach booking p'
              'roblem). The coach departs from the school front gate at 8:15am sharp; pupils must be in the spo'
              'rts hall for registration by 7:55am. We expect to return to school at approximately 5:30pm. The '
              'cost is £18 per pupil, which covers coach travel and entry to the Wonderlab gallery. Please pay '
              'via ParentPay by Friday 20 March. Pupils eligible for free school meals will be offered the trip'
              ' free of charge. Pupils should bring a packed lunch and a drink in a disposable bag, wear school'
              ' uniform and bring a coat. Mobile phones are allowed but must stay on silent. Trip leader: Mr T.'
              ' Whitfield. Yours faithfully, Ms A. Okoye, Head of Science.'},
    {"title": 'Exam board specification extract: GCSE Chemistry required practical activities',
     "text": 'Students must carry out all required practical activities listed in the specification. Required '
              'practical activity 2 (chemistry only, not combined science): determination of the reacting volum'
              'es of solutions of a strong acid and a strong alkali by titration. Students should use a burette'
              ' and a volumetric pipette, repeat titrations until concordant results (within 0.10 cm3) are obta'
              'ined, and calculate a mean titre. Required practical activity 1: preparation of a pure, dry samp'
              'le of a soluble salt from an insoluble oxide or carbonate. Records: students must keep a lab boo'
              'k or practical record sheet for each required practical, showing the method, raw results and any'
              ' calculations. Centres must confirm to the exam board by 15 May that every student has been give'
              'n the opportunity to carry out each required practical. At least 15% of the marks in the written'
              ' exams assess knowledge of the practical work.'},
    {"title": 'Greenway Veterinary Surgery - opening hours and price list',
     "text": 'Greenway Veterinary Surgery, 14 Mill Lane. Vets: Dr Sian Morgan, Dr Raj Chaudhry. Opening hours:'
              ' Monday to Friday 8:00am - 7:00pm; Saturday 9:00am - 1:00pm; closed on Sundays and bank holidays'
              '. Out of hours emergencies: call Vets Now on 0800 123 4567. Price list (dogs): standard consulta'
              'tion £48; annual booster vaccination £62 (includes a health check); kennel cough vaccine £38; na'
              'il clip £12; microchipping £25; flea and worming plan £14 per month. Payment is due at the time '
              'of treatment. New clients are asked to bring previous vaccination records to their first appoint'
              'ment.'},
    {"title": 'Riverside Vets - fees for dogs',
     "text": 'Riverside Vets, 2 Quay Street. Opening hours: Monday to Saturday 8:30am - 6:00pm, Sunday 10:00am'
              ' - 12:00pm. Fees for dogs: consultation £42; booster vaccination £55; nail clip £10; dental scal'
              'e and polish from £280. Dr Anil Patel, Dr Emma Reid.'},
    {"title": 'Riverside Half Marathon 2026 - race information for runners',
     "text": 'Riverside Half Marathon, Sunday 19 April 2026. Distance 13.1 miles (21.1 km), a flat course alon'
              'g the river with two out-and-back loops. Start waves by predicted finish time: Wave A (under 1:4'
              '5) starts at 8:30am; Wave B (1:45 to 2:00) starts at 8:45am; Wave C (2:00 to 2:30) starts at 9:0'
              '0am; Wave D (over 2:30) starts at 9:15am. Bag drop is at the Town Hall car park and closes at 8:'
              '00am. Race numbers can be collected on Saturday 18 April 10am-4pm, or posted for £3. Water stati'
              'ons at 5 km, 10 km and 16 km; energy gels at 12 km. The course closes 3 hours 15 minutes after t'
              'he last wave starts. Headphones are discouraged. Medals and T-shirts at the finish.'},
    {"title": 'Tenancy agreement, Flat 3, 22 Elm Road - clause 9: repairs',
     "text": '9.1 The Landlord (Mr D. Hughes) is responsible for keeping in repair the structure and exterior '
              'of the flat and the installations for the supply of water, gas, electricity, space heating and h'
              'ot water, including the boiler. 9.2 The Tenant must report any disrepair to the Landlord in writ'
              'ing (email or text is acceptable) as soon as reasonably practicable. 9.3 Where the Tenant has no'
              ' heating or no hot water, the Landlord will arrange for a qualified engineer to attend within 24'
              ' hours of the report; other repairs will be completed within a reasonable time, normally 14 days'
              '. 9.4 The Landlord or his contractors may enter the flat to inspect or carry out repairs at reas'
              "onable times of day after giving the Tenant at least 24 hours' notice in writing, except in an e"
              'mergency. 9.5 The Tenant is responsible for replacing light bulbs, fuses and smoke-alarm batteri'
              'es.'},
    {"title": 'Science department procedure: booking practical equipment with the technicians',
     "text": 'All practical requests must be submitted to the prep room on the green requisition form at least'
              ' five working days before the lesson. Requests for titration kits (burettes, pipettes, conical f'
              'lasks) are limited to 12 sets per lesson. Late requests cannot be guaranteed. Technicians work 8'
              ':00am to 4:00pm. Decisions on priority between classes are made by the head of department.'},
]

#: (day, session id, [(message, reply), ...]) as the user had the chat
SESSIONS = [
    (0, 's1', [
        ("Morning! Well, evening really. I'm Tom, I teach chemistry at Hillcrest Academy.",
         'Hi Tom! Chemistry at Hillcrest Academy, noted. What can I help with?'),
        ("This term I've got Year 10 set 2 on Tuesdays and Thursdays, and my Year 11 group are doing the titration practical in a couple of weeks.",
         'Sounds busy: Year 10 set 2 twice a week and the Year 11 titration practical coming up. Happy to help with either.'),
        ('Ms Okoye, our head of department, has decided the Year 11 titration will be assessed through the practical write-up, not a test.',
         'Got it: Ms Okoye wants the Year 11 titration assessed through the write-up rather than a test.'),
        ("Also we're taking Year 10 to the Science Museum on Thursday 26 March.",
         'A Science Museum trip for Year 10 on Thursday 26 March, lovely.'),
        ("What's the formula for sulfuric acid?",
         'H2SO4: two hydrogen atoms, one sulfur and four oxygen.'),
        ('cheers',
         'Any time!'),
        ("Outside school I'm training for the Riverside Half in April, aiming for 1:55.",
         'Nice, a 1:55 target for the Riverside Half. Good luck with the training!'),
        ('How many km in a half marathon?',
         '21.0975 km, about 13.1 miles.'),
        ('My dog Mabel is registered with Riverside Vets at the moment, Dr Patel sees her.',
         'Noted: Mabel is with Riverside Vets and sees Dr Patel.'),
        ('And the boiler in my flat has packed in again. The landlord, Mr Hughes, says an engineer will come on Tuesday 10 March.',
         'Annoying! So Mr Hughes has an engineer booked for Tuesday 10 March.'),
        ('Does the tenancy agreement say how quickly he has to fix it?',
         'Clause 9.3 says that with no heating or hot water he must get an engineer out within 24 hours of your written report; other repairs within a reasonable time, normally 14 days.'),
        ('lol he never does. Night!',
         'Ha, fingers crossed this time. Night, Tom!'),
    ]),
    (6.53125, 's2', [
        ('morning!',
         'Morning Tom!'),
        ('What safety precautions do I need for the titration practical?',
         'From the risk assessment: eye protection for everyone throughout, fill burettes below eye level with the funnel removed, pipette fillers only, keep phenolphthalein away from flames, and irrigate any alkali splash to the eye for 10 minutes.'),
        ('And how many pupils can I have in the lab for it?',
         'The risk assessment caps it at 24 pupils per lab, with a teacher and a technician.'),
        ('Which required practical is titration for the exam board?',
         "It's required practical activity 2, chemistry only (not combined science): reacting volumes of a strong acid and strong alkali by titration."),
        ("Mr Hughes just texted, the boiler engineer can't come tomorrow, it's moved to Tuesday 17 March.",
         'Ugh, another week. So the boiler repair is now Tuesday 17 March.'),
        ('Ms Okoye also wants me to be trip lead for the museum visit.',
         'Congratulations, trip lead for the Science Museum visit!'),
        ("What's the chemical formula for sodium hydroxide?",
         'NaOH.'),
        ('cheers, have a good day',
         'You too!'),
    ]),
    (14.0417, 's3', [
        ('Evening. Bit of news: the Science Museum trip has been moved to Thursday 2 April because the coach firm double-booked.',
         'Noted, the Science Museum trip is now Thursday 2 April.'),
        ('What time does it leave?',
         'The coach leaves the school front gate at 8:15am, with registration in the sports hall by 7:55am.'),
        ('And how much is it per pupil?',
         '£18 per pupil, covering the coach and Wonderlab entry; free for pupils on free school meals.'),
        ("When's the boiler being fixed?",
         'The engineer is now coming on Tuesday 17 March, so tomorrow.'),
        ("Also I've moved Mabel to Greenway Vets, Dr Morgan is her vet now. Riverside kept cancelling.",
         'Makes sense. Mabel is now at Greenway Vets with Dr Morgan.'),
        ('Is the vet open on Saturdays?',
         'Greenway is open Saturday 9:00am to 1:00pm (closed Sundays).'),
        ("My long run went well, 18 km at a steady pace, so I'm dropping my target to 1:50.",
         'Brilliant, new target 1:50!'),
        ('What time does my wave start?',
         "With a 1:50 target you're in Wave B (1:45 to 2:00), which starts at 8:45am."),
        ("lol ok I'd better get some sleep",
         'Good idea. Night!'),
    ]),
    (21.9167, 's4', [
        ('Hi again',
         'Hi Tom!'),
        ("Can you help me plan Year 11's lesson on Thursday? They're revising rates of reaction.",
         'Sure: a collision-theory retrieval starter, then the sodium thiosulfate disappearing-cross practical, then exam questions on rate graphs.'),
        ("No, I meant Year 10, not Year 11 - it's set 2 that's doing rates.",
         "Got it, Year 10 set 2. I'll pitch it a bit lower: more scaffolding on collision theory and a simpler graph task."),
        ('What did Ms Okoye decide about assessing the titration?',
         'She decided the Year 11 titration is assessed through the practical write-up, not a test.'),
        ("The boiler's finally fixed by the way, the engineer came on the 17th.",
         "Finally! Glad you've got heating again."),
        ("What's my target time?",
         '1:50 for the Riverside Half.'),
        ("Who's Mabel's vet now?",
         'Dr Morgan at Greenway Vets.'),
        ('How many moles are in 20 g of sodium hydroxide?',
         'NaOH is 40 g/mol, so 20 g is 0.5 mol.'),
        ('cheers',
         'No problem!'),
    ]),
    (28.0208, 's5', [
        ('Evening!',
         'Evening Tom!'),
        ("When's the Science Museum trip?",
         'Thursday 2 April, this week.'),
        ('What time does the coach get back?',
         'Around 5:30pm back at school.'),
        ('Do pupils need to bring anything?',
         'A packed lunch and a drink in a disposable bag, school uniform and a coat.'),
        ('How much does a booster jab cost for Mabel?',
         'At Greenway the annual booster is £62, including a health check.'),
        ("What's the bag drop deadline on race day?",
         'Bag drop at the Town Hall car park closes at 8:00am.'),
        ("What's the boiling point of ethanol?",
         'About 78 degrees C.'),
        ('Does the landlord have to give notice before coming in to check the boiler?',
         "Yes, clause 9.4: at least 24 hours' notice in writing, except in an emergency."),
        ("Who's my head of department?",
         'Ms Okoye.'),
        ("lol thanks, that's everything. Night!",
         'Night Tom, have a great trip!'),
    ]),
]

#: what the passages of a turn must hold: the document answer a good assistant needs
ANSWERED_BY = {
    "What time does my wave start?": "8:45am",
    "What's the bag drop deadline on race day?": "closes at 8:00am",
}


chat = replay_fixture("teacher", USER, T0, DOCS, SESSIONS)


@pytest.mark.model
@pytest.mark.parametrize("question", sorted(ANSWERED_BY))
def test_document_answers_reach_the_prompt(chat: dict[str, Any], question: str) -> None:
    res = chat[question]
    assert passages_hold(res, ANSWERED_BY[question]), res.explain()


@pytest.mark.model
def test_personal_questions_without_recall_words_reach_memory(chat: dict[str, Any]) -> None:
    for question, needed in [("What's my target time?", "1:50"), ("Who's Mabel's vet now?", "Greenway")]:
        res = chat[question]
        assert res.route.wants_memory and needed in res.context, res.explain()
