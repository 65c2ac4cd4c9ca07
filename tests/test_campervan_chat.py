"""helper-83's new-user chat (stop 29): a campervan restoration, a rescue greyhound and a trip, over four sessions,
with eight documents, asked as the user asked it in a fifth session (the plain API, real model, embedded Chroma).

Two of its failures are held here: memory-routed questions whose answer is in a document skipped the documents
because a loosely related memory passed the usefulness check ("is the vet open on sundays?": fixed by the opt-in
``RetrievalConfig(corpus_probe=True)``, whose cost on memory questions was over the bar set for it as a default),
and a correction ("no, I meant the other one, Kirkstall, not Hartley's") got memories about what it ruled out.
"""

from __future__ import annotations

from typing import Any

import pytest
from _chats import chat_turn

from chatrecall import ChatRecall, RetrievalConfig
from chatrecall.testing import ManualClock

USER = "lena"
T0 = 1_780_000_000.0
DAY = 86400.0

# (day offset, session id, [(user, assistant), ...]): the chat as helper-83 wrote it
SESSIONS = [
    (0, "s1", [
        ("ugh long day", "Sorry to hear that! Want to talk about it or just unwind?"),
        ("we picked up our foster greyhound today! he's called Biscuit, 4 years old, ex-racer, came from Greyhound Haven in Wakefield",
         "Congratulations! Biscuit sounds lovely. Ex-racers often take a few weeks to settle into home life, so go easy on him."),
        ("he weighs 31 kg and is terrified of the stairs lol",
         "Very common with ex-racers: many have never seen stairs. Lots of patience and treats, one step at a time."),
        ("also the rescue said he's allergic to chicken so no chicken treats at all",
         "Good to know. Fish- or lamb-based treats are usually a safe swap; check the labels, chicken hides in a lot of them."),
        ("my partner Sam wants to take him in the van this summer. we've got a 1975 VW T2 called Marigold, 4.6 m long",
         "A T2 road trip with a greyhound sounds brilliant. Marigold is compact, so plan where Biscuit will lie during the drive."),
        ("the plan is Skye with my sister Ruth, we leave on 14 June",
         "Lovely. Mid-June is a good time for Skye: long days, fewer midges than July. Do you have campsites lined up?"),
        ("thanks!", "Any time!"),
    ]),
    (7, "s2", [
        ("morning!", "Morning! How's Biscuit settling in?"),
        ("he did two stairs today!! so proud", "That's real progress! Two stairs is a big deal for an ex-racer."),
        ("bad news though, Marigold's gearbox is grinding in second. Hartley's Garage on Otley Road quoted £1,850 for a rebuild",
         "Ouch. £1,850 is in the normal range for a T2 gearbox rebuild. Did they say how long it would take?"),
        ("they said about two weeks, they're booking it in for 18 March",
         "OK, so the van should be back well before the trip in June, assuming nothing else turns up."),
        ("our vet is Dr Okafor at Meanwood Vets, she said Biscuit's booster is due in July",
         "Noted: Dr Okafor at Meanwood Vets, booster due in July. If you travel before then, he should still be covered."),
        ("we booked Glenbrittle campsite for 3 nights", "Great choice: Glenbrittle is right under the Cuillin, with the beach next to the site."),
        ("lol Sam just tried to teach him to sit, greyhounds don't really sit do they",
         "Not really! Their build makes sitting uncomfortable for many greyhounds. A 'down' is usually easier to teach."),
    ]),
    (18, "s3", [
        ("ugh. Hartley's rang, they found the gearbox casing is cracked too, new quote is £2,400",
         "That's a painful jump from £1,850. A cracked casing does push the cost up, but it may be worth a second opinion."),
        ("yeah we're moving it to Kirkstall Motors instead, they specialise in aircooled VWs, booked in for 25 March",
         "Sensible: an aircooled VW specialist is more likely to have the parts. Kirkstall Motors on 25 March it is."),
        ("Kirkstall said they can do it for the same £2,400 but with a proper warranty",
         "Then Kirkstall is the better deal at the same price. Keep the paperwork for the warranty."),
        ("so the trip has to move, we're now going to Skye on 2 August",
         "Makes sense with the van off the road. Early August is busy on Skye, so book the ferry early."),
        ("and Ruth can't come anymore, work thing. my friend Dev is coming instead",
         "Shame about Ruth, but Dev sounds like good company. Three people and a greyhound in a T2 will be cosy!"),
        ("does Dev need to be on the insurance if he drives?",
         "Usually yes: check your policy schedule for named drivers before he gets behind the wheel."),
        ("ok will check. thanks", "You're welcome!"),
    ]),
    (32, "s4", [
        ("BIG NEWS we officially adopted Biscuit!!", "That's wonderful news! Congratulations, he's found his forever home."),
        ("we renamed him Moss, Biscuit never really suited him", "Moss is a great name for a calm grey hound. Welcome to the family, Moss!"),
        ("Moss now does the whole staircase lol", "From two stairs to the full staircase. What a star."),
        ("the vet changed though, Dr Okafor left Meanwood so Moss is with Dr Patel now, same practice",
         "Got it: Dr Patel at Meanwood Vets from now on."),
        ("Sam found a 3-way fridge for the van, a Dometic RM 2350, £180 secondhand",
         "Nice find. The RM 2350 runs on 12 V, mains and gas, handy for Glenbrittle."),
        ("we're thinking of booking the 11:50 ferry from Mallaig", "The 11:50 gives you a relaxed morning drive to Mallaig. Book the vehicle space early."),
        ("Moss will probably have to go to kennels for 2 nights in July when we're at a wedding",
         "Then check what vaccinations the kennels require; many ask for kennel cough cover given some time beforehand."),
        ("night!", "Night!"),
    ]),
]

DOCS = [
    {"title": "Classic Van Cover - Policy Schedule", "text": (
        "Classic Van Cover policy schedule. Policy number CVC-448812. Insured vehicle: Volkswagen Type 2 (T2) campervan, 1975. "
        "Agreed value: £14,000. Policy excess: £250 for any claim, £500 if the vehicle is being driven by a named driver under 25. "
        "Named drivers: Lena Marsh, Sam Carter. Additional drivers must be added before they drive; adding a driver costs £35 "
        "and can be done by phone on 0800 555 0142. Annual mileage limit: 5,000 miles. "
        "Breakdown cover: roadside assistance anywhere in the UK; if the vehicle cannot be repaired at the roadside it is recovered "
        "to a garage of your choice within 50 miles, or to the nearest suitable garage. Recovery home is not included. "
        "Pets carried in the vehicle must be secured with a harness or a crate; injuries to unsecured pets are not covered. "
        "Claims must be reported within 30 days on 0800 555 0199.")},
    {"title": "Greyhound Haven - Foster to Adopt Handbook", "text": (
        "Greyhound Haven, Wakefield. Foster to adopt handbook. The adoption fee is £175 and includes neutering, vaccinations "
        "and a microchip. After adoption, the microchip registration must be transferred to you within 14 days. "
        "Greyhounds are sighthounds: never let them off the lead in an unfenced area, as they can reach 40 mph chasing small animals. "
        "Use a muzzle for the first four weeks when meeting other dogs. Feed two meals a day. A greyhound needs a coat "
        "when the temperature drops below 5 degrees C. Greyhounds overheat easily: never leave one in a parked vehicle in warm weather. "
        "For travel, greyhounds are happiest lying down on a thick bed; stop every two hours for a drink and a short walk.")},
    {"title": "Meanwood Vets - Practice Leaflet", "text": (
        "Meanwood Vets, 12 Green Road, Leeds. Opening hours: Monday to Friday 8:00 to 19:00, Saturday 9:00 to 13:00, closed on Sunday. "
        "Out of hours emergencies are handled by Vets Now Leeds on 0113 496 0321. Appointments: 0113 496 0100. "
        "Annual booster vaccinations are due every 12 months. The kennel cough vaccine must be given at least 2 weeks before boarding "
        "in kennels. Worming is recommended every 3 months. If you are travelling to the Scottish Highlands or islands, "
        "use a tick treatment from April to October and check your dog for ticks every evening.")},
    {"title": "Mallaig - Armadale Ferry Timetable (Summer)", "text": (
        "Mallaig to Armadale (Isle of Skye) summer timetable, valid 28 March to 20 October. Departures from Mallaig: "
        "09:10, 11:50, 14:30, 17:15. Departures from Armadale: 10:05, 12:45, 15:25, 18:05. The crossing takes 45 minutes. "
        "Vehicles must check in at least 30 minutes before departure or the space may be released. "
        "Fares: car or campervan up to 6 m long £31.50; vehicles over 6 m £58.00; each passenger £4.20. "
        "Dogs may stay in the vehicle on the car deck or travel in the pet area on the passenger deck, on a lead.")},
    {"title": "Glenbrittle Campsite - Booking Terms", "text": (
        "Glenbrittle Campsite, Isle of Skye. Check-in is from 14:00 to 20:00; check-out by 11:00. "
        "Dogs are welcome at £3 per dog per night and must be kept on a lead at all times on the site and on the beach. "
        "Electric hook-up costs £6 per night. Quiet hours 22:00 to 07:00. Cancellation: a full refund up to 14 days "
        "before arrival, 50% refund after that, no refund for no-shows. The drive from Armadale to Glenbrittle takes about 1 hour 15 minutes.")},
    {"title": "Kirkstall Motors - Aircooled VW Specialists", "text": (
        "Kirkstall Motors, Kirkstall Road, Leeds. Aircooled Volkswagen specialists. Opening hours: Monday to Friday 7:30 to 17:30, "
        "Saturday 8:00 to 12:00, closed Sunday. A gearbox rebuild normally takes 8 to 10 working days once parts are in. "
        "Rebuilds carry a 12 month or 12,000 mile warranty, whichever comes first. We cannot offer courtesy cars for classic vehicles. "
        "Payment: 30% deposit when work starts, balance on collection.")},
    {"title": "Hartley's Garage - Customer Information", "text": (
        "Hartley's Garage, Otley Road, Leeds. General servicing, MOTs and repairs for all makes. Opening hours: Monday to Friday "
        "8:30 to 18:00, Saturday 9:00 to 16:00, closed Sunday. Free courtesy car with any repair over £500, subject to availability. "
        "Warranty on repairs: 3 months or 3,000 miles.")},
    {"title": "Dometic RM 2350 Absorption Fridge - User Manual", "text": (
        "Dometic RM 2350 three-way absorption refrigerator. It runs on 12 V DC while driving, on 230 V mains, or on LPG gas. "
        "For cooling, the fridge must be level within 3 degrees. Pre-cool the fridge for 8 hours on mains before loading food. "
        "Do not run the fridge on gas while refuelling or on a ferry. If the fridge does not cool on gas: check that the gas "
        "cylinder is open and not empty, that the flame is lit (look through the viewing window), that the flue is not blocked, "
        "and that the vehicle is level. Defrost when the ice layer is thicker than 3 mm.")},
]

# The final session's turns before each asked question, with the replies a good assistant gives (stored, as an app
# stores them)
FINAL = [
    ("hey, back from a long weekend", "Welcome back! Hope it was restful."),
    ("which garage has the van now?", "Kirkstall Motors, the aircooled VW specialists."),
    ("what time does the garage open on saturday?", "Kirkstall Motors opens 8:00 to 12:00 on Saturdays."),
    ("and how long does the rebuild usually take?", "Normally 8 to 10 working days once the parts are in."),
    ("is it under warranty?", "Yes: 12 months or 12,000 miles, whichever comes first."),
    ("how much will the ferry be for the van?", "Marigold is 4.6 m, so £31.50, plus £4.20 per passenger."),
    ("who's his vet now?", "Dr Patel at Meanwood Vets."),
    ("is the vet open on sundays?", "No, Meanwood is closed on Sundays; out of hours call Vets Now Leeds."),
]
#: Memory-routed questions whose answer is in a document: question -> words of the answering passage
IN_A_DOCUMENT = {
    "and how long does the rebuild usually take?": "8 to 10 working days",
    "is it under warranty?": "12 month or 12,000 mile warranty",
    "how much will the ferry be for the van?": "£31.50",
    "is the vet open on sundays?": "closed on Sunday",
}


def _chat(cr: ChatRecall, clock: ManualClock) -> None:
    for day, sid, pairs in SESSIONS:
        clock.t = T0 + day * DAY
        for user, reply in pairs:
            chat_turn(cr, clock, USER, sid, user, reply, ask=False)
    cr.add_documents(DOCS)
    clock.t = T0 + 39 * DAY


def _ask(cr: ChatRecall, clock: ManualClock, question: str, reply: str) -> Any:
    return chat_turn(cr, clock, USER, "s5", question, reply)


@pytest.fixture
def chat(embedded_store: Any, st_embedder: Any) -> Any:
    def make(**retrieval: Any) -> tuple[ChatRecall, ManualClock]:
        clock = ManualClock(T0)
        cr = ChatRecall(store=embedded_store, embedder=st_embedder, clock=clock, retrieval=RetrievalConfig(**retrieval))
        _chat(cr, clock)
        return cr, clock

    return make


@pytest.mark.model
def test_with_the_corpus_probe_a_memory_turn_finds_the_document_that_answers(chat: Any) -> None:
    cr, clock = chat(corpus_probe=True)
    found, notes = {}, {}
    for question, reply in FINAL:
        res = _ask(cr, clock, question, reply)
        if question in IN_A_DOCUMENT:
            found[question] = any(i.source == "corpus" and IN_A_DOCUMENT[question] in i.text for i in res.items)
            notes[question] = res.notes
    assert sum(found.values()) >= 3, (found, notes)
    cr.close()


@pytest.mark.model
def test_by_default_a_useful_memory_skips_the_documents_only_when_it_answers(chat: Any) -> None:
    # Until stop 31 the vet question skipped the documents: the garage's "opens 8:00 to 12:00 on Saturdays" held
    # opening hours. Hours count only in a memory about the question (it shares one of its words besides "open").
    cr, clock = chat()
    res = None
    for question, reply in FINAL:
        res = _ask(cr, clock, question, reply)
    assert res is not None and res.gate.route.value == "memory"
    assert any(i.source == "corpus" and "closed on Sunday" in i.text for i in res.items), res.explain()
    res = _ask(cr, clock, "sorry, what time does the garage open on saturday again?", "8:00 to 12:00.")
    assert any(i.source == "memory" and "opens 8:00 to 12:00" in i.text for i in res.items), res.explain()
    assert not [i for i in res.items if i.source == "corpus"], res.explain()
    cr.close()


@pytest.mark.model
def test_a_correction_leaves_out_what_it_rules_out(chat: Any) -> None:
    cr, clock = chat()
    for question, reply in FINAL[2:4]:
        _ask(cr, clock, question, reply)
    res = _ask(cr, clock, "no, I meant the other one, Kirkstall, not Hartley's", "Sorry: Kirkstall's, then.")
    texts = [i.text for i in res.items if i.source in ("memory", "corpus")]
    assert not [t for t in texts if "Hartley" in t and "Kirkstall" not in t], res.explain()
    assert any("Kirkstall" in t for t in texts), res.explain()
    assert any(i.why.startswith("the correction rules out") for i in res.rejected), res.explain()
    cr.close()


@pytest.mark.model
@pytest.mark.parametrize(("question", "passage"), [
    ("is the vet open on sundays?", "closed on Sunday"),
    ("what are Kirkstall's opening hours on saturday?", "Saturday 8:00 to 12:00"),
])
def test_a_memory_without_opening_hours_lets_the_document_in(chat: Any, question: str, passage: str) -> None:
    cr, clock = chat()
    for q, reply in FINAL[:2]:
        _ask(cr, clock, q, reply)
    res = _ask(cr, clock, question, "Let me check.")
    assert res.gate.route.value == "memory", res.explain()
    assert any(i.source == "corpus" and passage in i.text for i in res.items), res.explain()
    assert [i for i in res.items if i.source == "memory"], res.explain()
    assert any("holds no opening hours" in n for n in res.notes), res.notes
    cr.close()
