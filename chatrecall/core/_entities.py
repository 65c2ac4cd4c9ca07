"""LLM-free entity extraction: compiled regexes plus word lists.

The extractor runs on every stored turn and on every query, so it is built
for speed. Every regex is compiled once at import and starts with a literal or
a narrow character class, so the regex engine skips the text in C; passes
that cannot match (no digit, no slash, no quote, no date word...) are skipped
with a substring or set test.

Passes run in priority order and claim the characters they match, so a later
pass never re-reads them (``src/app/main.py`` is one path, not a path plus an
identifier plus a name):

1. paths (URLs, e-mails, Windows/Unix paths, file names, dotfiles)
2. errors (exception names, error codes, HTTP statuses, errno names)
3. dates (absolute, relative, weekdays, months, times, decades)
4. identifiers (dotted, snake/SCREAMING, CamelCase, ``call()``)
5. quantities (``5 GB``, ``200ms``, ``3 kids``, ``$40``, ``10%``)
6. bare years (``in 2022``)
7. names (capitalised words, multi-word proper nouns, acronyms)

Quoted text (``"..."``, ``'...'``, backticks) is found independently and does
not claim characters, so entities inside a quote are found as well.

A capitalised word that starts a sentence is only a name when it is not a
common English word: a stopword list covers function words everywhere, and a
8,000-word lexicon of frequent lowercase English words (taken from the
frequency order of a BPE vocabulary, minus proper nouns and first names)
covers sentence openers such as "Painting", "Great" or "Setbacks".

Keys are folded with :func:`fold_key` (case, accents, plurals, possessives),
except dates, times, quantities and HTTP statuses, which get a canonical key
so that ``8 May, 2023`` and ``May 8th 2023`` both map to ``2023-05-08``.
"""

from __future__ import annotations

import re
import unicodedata

from ._errors import InvalidInputError
from ._types import Entity

__all__ = ["DEFAULT_STOPWORDS", "RegexEntityExtractor", "fold_key"]


# --------------------------------------------------------------------------
# Word lists
# --------------------------------------------------------------------------

def _words(s: str) -> frozenset[str]:
    return frozenset(s.split())


#: Words that are never an entity on their own: function words, pronouns,
#: question words, auxiliaries, interjections, chat slang and titles. A
#: capitalised word in this list is never a name, wherever it appears.
DEFAULT_STOPWORDS: frozenset[str] = _words("""
    i me my mine myself you your yours yourself yourselves he him his himself she her hers herself
    it its itself we us our ours ourselves they them their theirs themselves one ones someone somebody
    something anyone anybody anything everyone everybody everything noone nobody nothing y'all ya
    a an the this that these those some any each every either neither no none all both few many much
    more most less least several such other others another own same
    about above across after against along amid among around as at before behind below beneath beside
    besides between beyond but by despite down during except for from in inside into like near of off on
    onto out outside over past per since than through throughout till to toward towards under underneath
    unlike until up upon via with within without
    and or nor so yet because although though while whereas whether if unless once
    when whenever where wherever why how what which who whom whose whatever whichever whoever
    am is are was were be been being have has had having do does did doing done will would shall should
    can could may might must need ought let lets let's get got gets getting go goes going went gone
    make made
    not yes yeah yea yep yup nope nah very really just also too then there here now still even only
    already ever never always often sometimes usually maybe perhaps probably quite rather almost again
    else anyway anyways actually basically literally totally definitely absolutely certainly sure surely
    indeed well oh ah aw aww awww ahh uh uhh um umm hmm hmmm hm huh wow whoa woah yay hey heya hi hiya
    hello howdy yo bye goodbye thanks thank thx ty please pls plz sorry ok okay okey alright
    lol lmao rofl haha hahaha hehe heh omg omfg btw imo imho fyi tbh idk ikr smh np asap aka etc ie eg
    vs dear congrats congratulations cheers welcome good nice cool awesome amazing fantastic wonderful
    lovely glad oops ugh yikes phew meh xd ha hah woohoo woot yippee hooray whew eek ew eww argh ahem oof ooh
    ooo ouch yum yummy mmm mm bummer ttyl lmk brb
    mr mrs ms mx dr prof sir madam jr sr st mt ft
    im ive ill id dont cant wont didnt doesnt isnt arent wasnt werent havent hasnt couldnt wouldnt
    shouldnt thats whats lets youre theyre were weve youve theyve hes shes its gonna wanna gotta
    first second third last next previous
""")

#: Common words that are capitalised only because they start a sentence
#: ("Painting is fun", "Sounds great"). They are dropped when they lead a
#: sentence, but kept mid-sentence, where a capital means a name ("Will",
#: "Hope", "Art"). Words that start multi-word place names (New, North, San,
#: Great, United...) are deliberately absent.
_SENTENCE_COMMON: frozenset[str] = _words("""
    traceback absolutely accept according actually add added adding additionally after afterwards again agree
    agreed aha alright also although always amazing any anyhow anyway anyways appreciate apparently
    are aren arent around art ask asked asking assume at awesome back bad based basically be beautiful
    because been before being believe best better big birthday blessed books both bought brilliant bring
    brings brought build busy but by call called calling calm can cannot careful caring catch cause
    certainly change check cheers chilling clearly close coffee college come comes coming compare
    configure congrats congratulations consider considering cooking cool could count create cute cuz dad
    daily dancing deal dear definitely delete deploy describe did different dinner do does doing done
    dogs cats during each earlier either else enjoy enjoyed enough especially essentially even
    eventually ever every everyone everything exactly excellent excited exciting except explain exploring
    family fantastic feel feeling feels felt finally find finding fine finished first fix following food
    for forget found frankly free friends from fun funny furthermore gave generally generate get gets
    getting gift give given giving glad go goes going gonna good got gotta grateful guess guys had hah
    haha hahaha happily happy hard has hasn have haven having he health hear heard hello help helping
    hence her here hers hey hi hiking his hmm home honest honestly hope hopefully how however huge
    hungry i ideally if ignore imagine important impressive in incredible indeed install instead
    interesting interestingly is isn it its job just keep keeping kids kind kinda know knowing last
    lately later learn learned learning least leave left lemme let lets life like likewise list listen
    listening literally living load look looking looks lots love loved lovely loving lucky luckily lunch
    made mainly make makes making many maybe me mean meanwhile meeting might mine more moreover morning
    most mostly movie movies much music must my myself nature neat need needed needs nervous never
    nevertheless next nice night no nobody none nonetheless nope nor not note nothing notice now of off
    often oh ok okay on once one only open or other others otherwise our ours out over overall painting
    parents party people perfect perhaps personally pets photo photos picture pictures play playing
    please plus pretty print probably proud quite rather read reading ready really recall recently
    recommend regarding relaxing remember remind remove return right running sad same saw save say saying
    says school search see seeing seems seen send set seriously sharing she should show shows simply
    since so some someone something sometimes song songs soon sorry sounds speaking start started staying
    still such suggest summarise summarize super support suppose sure surely surprisingly sweet take
    taking talk talking tell telling test thank thankful thankfully thanks that the their theirs them
    then there therefore these they thing things think thinking this those though thought through thus
    time tired to together too totally translate travel traveling travelling tried trip true truly try
    trying twice two um unfortunately until up update us use used using usually vacation very wait want
    wanted wanting was watch watching way we well went were what whatever when whenever where wherever
    whether which while who whoever why will wish with without wonderful work working works would wow
    write writing yay yeah year years yep yes yet yoga you your yours yup
""")

#: Frequent lowercase English words (8,000 lemmas), used only for capitalised
#: sentence openers: a sentence-initial single word found here is not a name.
_LEXICON: frozenset[str] = _words("""
    abandon abandoned abc abdominal ability able abnormal aboard abortion abroad abrupt abs absence absent
    absolute absorb absorbed absorption abstract absurd abundance abundant abuse abused abusive academic acc
    accelerate accelerated acceleration accent accept acceptable acceptance accepted accepting access accessed
    accessibility accessible accessory accident accidental accidentally acclaimed accommodate accommodation
    accompanied accompany accompanying accomplish accomplished accord accordance according accordingly account
    accountability accountable accounted accounting accredited accumulate accumulated accumulation accuracy
    accurate accurately accused accusing accustomed ace achieve achieved achievement achieving acid acknowledge
    acknowledged acoustic acquire acquired acquiring acquisition acre act acted acting action activate activated
    activation active actively activism activist activity actor actress actual acute ada adapt adaptation
    adapted adaptive add added addict addicted addiction adding addition additional address addressed addressing
    adequate adequately adhere adjacent adjust adjustable adjusted adjusting adjustment administer administered
    administration administrative administrator admire admission admit admitted admitting adolescent adopt
    adopted adopting adoption adorable ads adult advance advanced advancement advancing advantage advent
    adventure adverse advertised advertisement advertising advice advise advised adviser advisor advisory
    advocacy advocate aerial aesthetic affair affect affected affecting affection affiliate affiliated
    affiliation affinity afford affordable aforementioned afraid aftermath afternoon afterward afterwards age
    aged agency agenda agent aggregate aggregation aggression aggressive aggressively aging ago agree agreed
    agreeing agreement agricultural agriculture ahead aid aide aim aimed aiming ain air aircraft aired airline
    airplane airport ajax akin alarm albeit album alcohol alcoholic alert algebra algorithm alias alien align
    aligned alignment alike alive alla allegations alleged allegedly allergic alley allied allocated allocation
    allow allowance allowed allowing alloy ally alone alongside alpha alphabet als alt alta altar alter altered
    alternate alternative altitude alto altogether aluminium aluminum alumni amateur amazed ambassador ambient
    ambiguous ambition ambitious ambulance amend amended amendments amenities ami amino ammunition amongst amor
    amount amp ample amplitude anal analog analogy analysis analyst analytical analyze analyzed analyzing
    ancestor anchor ancient ang anger angle angry animal animated animation animator anime ankle annex
    anniversary announce announced announcement announcing annoyed annoying annual annually anonymous answer
    answered answering ant antenna anterior anthem anti antibiotics anticipated anticipation antique anxiety
    anxious anymore anytime anywhere apart apartment aperture api apologize apologized apology app apparatus
    apparel apparent apparently appeal appealed appealing appear appearance appeared appearing appetite apples
    appliances applicable applicant application applied apply applying appoint appointed appointment appreciate
    appreciated appreciation approach approached approaches approaching appropriate appropriately approval
    approve approved approx approximate approximately approximation apt arbitrary arbitration arc arcade arch
    architect architectural architecture archive archived area aren arena arguably argue argued arguing argument
    aria arise arising arithmetic arm armed armies armor armour aroma arose arrange arranged arrangement array
    arrest arrested arrival arrive arrived arriving arrow arte arthritis article artifact artificial artillery
    artist artistic artwork ascending ashamed aside ask asked asking asleep aspect asphalt aspirations ass
    assassination assault assaulted assemble assembled assert asserted asserting assertion assess assessed
    assessing assessment asset assign assigned assignment assist assistance assistant assisted assisting
    associate associated associations assortment assume assumed assuming assumption assurance assure assured
    asteroid asthma aston astonishing astro astronaut asylum ate athlete athletic atmosphere atmospheric atom
    atomic atop attach attached attachment attack attacked attacker attacking attain attempt attempted
    attempting attend attendance attended attendees attending attention attitude attorney attract attracted
    attracting attraction attractive attribute attributed auction audience audio audit auditor auf augmented
    aunt aura aus authentic authentication authenticity author authority authorization authorized autism auto
    automated automatic automatically automation automobile automotive autonomous autonomy autumn aux auxiliary
    avail availability available avant avatar average averaged averaging aviation avid avoid avoided avoiding
    await awaiting awake award awarded aware awareness away awe awful awhile awkward axe axis babe baby back
    backdrop backed background backing backlash backpack backup backward backyard bacon bacteria bacterial bad
    badge badly bag bail bait baked baking bal balance balanced balancing balcony ball balloon ballot bam ban
    banana banco band bandwidth bank banking bankrupt bankruptcy banned banner banning bar bard bare barely
    bargain bargaining bark barr barrel barrier bas base baseball based baseline basement basic basin basis
    basket basketball bass bat batch bath bathroom batter battery batting battle battlefield battling beach
    beaches beacon beads beam bean bear beard bearing beast beat beaten beating beautiful beautifully beauty
    became become becoming bed bedroom bee beef beer beforehand beg began begin beginning begun behalf behave
    behavior behavioral behaviour behold bei bel belief believe believed believing belly belong belonged
    belonging beloved belt bench bend bending beneficial benefit benefited bent best bet beta betray better
    betting beverage bey bias biased biblical bicycle bid bidding bien big bigger biggest bike bikini bilateral
    billed billing billion billionaire bills bin binary bind binding bio biography biological biology bird birth
    birthday bis bisexual bit bitch bite bitter bizarre black blade blah blame blamed bland blank blanket blast
    bleeding blend blended blending bless blessed blessing blew blind blink bloc block blocked blocking blog
    blogger blond blonde blood bloody blow blowing blown blue blunt blur board boarding boasts boat bodily body
    bog boil boiler boiling bold bolt bomb bomber bombing bon bond bone bonus boo book booked booking boom boost
    booster boot booth border bore bored boring born borrow borrowed borrowing boss bot bother bothered bottle
    bottom bought bounce bound boundary bounty bourgeois bout boutique bow bowl box boxing boy boycott boyfriend
    bra brace bracket brain brake bran branch brand branded branding brass brave breach bread breadth break
    breakdown breakfast breaking breakthrough breast breath breathe breathing bred breed breeding breeze brew
    brewery brick bride bridge brief briefing briefly bright brighter brightness brilliant bring bringing bro
    broad broadband broadcast broadcasting broader broadly broke broken broker bronze brother brought brows
    browser brunette brush brutal bubble buck bucket budget buff buffer bug build builder building built bulb
    bulk bull bullet bullshit bullying bump bun bunch bundle bundled bunk burden burger burial buried burn
    burned burning burnt burst bury bus business businessman bust busy butt butter butterfly button buy buyer
    buying buzz bypass byte cab cabin cabinet cable cache cad caf cafe cage cake cal calcium calculate
    calculated calculating calculation calendar call called caller calling calm cam came camel camera camp
    campaign campaigning camping campo campus canal cancel canceled cancellation cancelled cancer candidate
    candle candy cannabis cannon cannot canonical canvas cap capability capable capacity capita capital
    capitalism capitalist capsule capt capture captured capturing car cara carbon card cardboard cardiac
    cardiovascular care cared career careful carefully cargo caring carousel carp carpet carriage carried
    carrier carry carrying cart cartoon cartridge carved cas casa cascade case cash casino cast casting casual
    cat catalog catalogue catalyst catastrophic catch catching category cater catering cattle caught cause
    caused causing caution cautious cave cavity cease ceiling celebrate celebrated celebrating celebration
    celebrity cell cellular cement censorship census cent center centered central centre centro century ceramic
    ceremony certain certainty certificate certification certified cha chain chair chairman chalk challenge
    challenged challenging chamber champ champion chan chance chang change changed changing channel chant chaos
    chaotic chapter char character characteristic characterized charge charged charging charitable charity charm
    charming chart charter chasing chassis chat chatting che cheap cheaper cheat cheating check checked checking
    checkpoint cheek cheer cheese chef chemical chemistry cher cherry chess chest chew chi chick chicken chief
    child childhood children chill chin chip cho chocolate choice choose choosing chop chopped chord chorus
    chose chosen chromosome chronic chunk church cid cigar cigarette cinema cinnamon cipher circa circle circuit
    circular circulating circulation circumstance citation cite cited citing citizen citizenship city ciudad
    civic civil civilian civilization claim claimed claiming clan clarify clarity clash class classic classical
    classification classified classify classroom clause claw clean cleaned cleaner cleaning cleanup clear
    clearance cleared clearer clearing clearly clerk clever click clicked clicking client climate climb climbed
    climbing clinic clinical clip clock clone close closed closely closer closest closet closing closure cloth
    clothes clothing cloud club clue cluster clutch coach coaches coaching coal coalition coarse coast coastal
    coat coated coating cocaine cock cocktail coconut cod code coded coding coefficient coffee cognitive
    coherent coil coin coincidence col cold collaborate collaboration collaborative collapse collapsed collar
    collateral colleague collect collected collecting collection collective collectively collector college
    collision colon colonial colony color colored colorful coloring colour column columnist com comb combat
    combination combine combined combining combo come comeback comedian comedy comfort comfortable comfortably
    comic coming command commanded commander commence comment commentary commented commenting commercial
    commercially commissioned commissions commit commitment committed committees committing commodity common
    commonly communal communicate communicating communication community como compact companion company
    comparable comparative compare compared comparing comparison compartment compass compassion compatibility
    compatible compelled compelling compensate compensation compete competence competent competing competition
    competitive competitor compilation compiled compiler compiling complain complained complaining complaint
    complement complementary complete completed completely completing completion complex complexity compliance
    compliant complicated complications compliment comply component compose composed composer composite
    composition compound comprehend comprehensive compressed compression comprise comprised comprising
    compromise compromised computation computational compute computed computer computing con conceal concealed
    conceived concentrate concentrated concentration concept conception conceptual concern concerned concerning
    concert conclude concluded conclusion concrete concurrent condemn condemned condition conditional
    conditioning condo condom conduct conducted conducting cone conference confess confession confidence
    confident confidential configuration configured confined confirm confirmation confirmed confirming conflict
    conflicting conform confront confrontation confronted confused confusing confusion congestion congressional
    conjunction connect connected connecting connection connectivity connector conquer conscience conscious
    consciousness consecutive consensus consent consequence consequently conservation conservative consider
    considerable considerably consideration considered considering consist consisted consistency consistent
    consistently consisting console conspiracy constant constantly constitute constitution constitutional
    constrained constraint construct constructed constructing construction constructive consult consultant
    consultation consulting consume consumed consumer consuming consumption contact contacted contain contained
    container containing containment contaminated contamination contemporary contempt contend contender content
    contention contest contested context continent continental continually continuation continue continued
    continuing continuity continuous continuously contra contract contracted contractor contradiction contrary
    contrast contribute contributed contributing contribution contributor control controlled controller
    controlling controversial controversy convenience convenient convent convention conventional convergence
    conversation conversion convert converted converting convey convicted conviction convince convinced
    convincing cook cooked cookie cooking cooler cooling cooperate cooperation cooperative coordinate
    coordinated coordination coordinator cop cope copied copper copy copying coral cord core corn corner
    corporate corporations corpse corpus correct corrected correction correctly correlated correlation
    correspond correspondence correspondent corresponding corridor corrosion corrupt corrupted corruption cortex
    cosmetic cosmic cost costing costly costume cot cottage cotton couch cough couldn counsel counseling count
    countdown counted counter counterpart counties counting countless country countryside coup couple coupled
    courage course court courtesy cousin cover coverage covered covering covert cow cozy cpu crack cracked
    cracking craft crafted crank crap crash crashed crashing crate crawl crazy cream creamy create created
    creating creation creative creativity creator creature credentials credibility credible credit credited
    creep creepy crew cricket cried crime criminal crisis crisp criteria criterion critic critical critically
    criticism criticized critique crop crore cross crossed crossing crossover crow crowd crowded crown crucial
    crude cruel cruelty cruise crunch crush crushed crushing crust cry crying crypt crystals cube cubic cue
    cuisine culinary cult cultivation cultural culture cum cumulative cup curated curb cure curiosity curious
    curl currency current currently curriculum curse curtain curve curved cushion custody custom customer
    customized cut cute cutting cyber cycle cycling cylinder dad daemon dagger daily dairy dal dam damage
    damaged damaging damn damp dance dancing danger dangerous dans dare dark darker darkness das dash dat data
    database date dated dating daughter day daylight dead deadline deadly deaf deal dealer dealing dealt death
    debate debris debt debut debuted dec decade decay deceased decent decide decided deciding decimal decision
    decisive deck declaration declare declared declaring decline declined declining decor decorate decorated
    decoration decorative decrease decreased decreasing dedicated dedication dee deed deemed deep deeper deepest
    deeply deer def default defeat defeated defeating defect defence defend defendant defended defender
    defending defense defensive deficiency deficit define defined defining definite definition definitive
    degradation degree dei del delay delayed delegate delegation deleted deliberate deliberately delicate
    delicious delight delighted delightful deliver delivered delivering delivery dell della delle delta dem
    demand demanded demanding dementia demo democracy demographic demon demonstrate demonstrated demonstrating
    demonstration den denial denied dense density dent dental dentist deny denying depart departed departments
    departure depend dependence dependency dependent depending depict depicted deploy deployed deployment
    deposit deposited depot depressed depression dept depth deputy der derivative derive derived des descend
    descending descent describe described describing description descriptive desert deserve deserved design
    designated designation designed designer designing desirable desire desired desk desktop despair desperate
    desperately dessert destination destined destiny destroy destroyed destroying destruction destructive det
    detached detail detailed detailing detained detect detected detecting detection detective detector detention
    deter determination determine determined determining deux dev devastating develop developed developer
    developing development developmental deviation device devil devote devoted devotion dia diabetes diagnosed
    diagnosis diagnostic diagonal diagram dial dialect dialogue diameter diamond diary dice dictator didn die
    died diesel diet dietary differ difference different differential differentiate differently difficult
    difficulty diffuse diffusion dig digest digging digit digital dignity dil dilemma dim dimension dimensional
    diminished din dining dinner dioxide dip diplomatic dir dire direct directed directing direction directive
    directly director directory dirt dirty disability disabled disadvantage disagree disappear disappearance
    disappeared disappointed disappointing disappointment disaster disastrous disc discarded discharge
    discharged disciplinary discipline disclose disclosed disclosure disco discomfort disconnected discount
    discourse discover discovered discovering discovery discrete discretion discrimination discuss discussed
    discussing discussion disease disgusting dish disk dislike dismiss dismissed disorder dispatch dispatched
    displaced displacement display displayed displaying disposal disposed disposition dispute disputed disrupt
    disruption dissent dissertation dissolved distance distant distinct distinction distinctive distinguish
    distinguished distortion distracted distraction distress distribute distributed distributing distribution
    distributor district disturb disturbed disturbing ditch dive diver diverse diversity divert divide divided
    dividing divine diving division divorce divorced doc dock doctor document documentary documentation
    documented dod doesn dog doi doll dollar dom domain dome domestic dominance dominant dominate dominated
    domination donate donated donation donor doomed door dorm dos dose dot double doubled doubt dough dove
    download downloaded downstream downtown downward dozen draft drafted drag dragged dragging drain drainage
    drama dramatic dramatically drank drastically draw drawer drawing drawn dread dream dreamed dreaming dress
    dressed dressing dried drift drill drilling drink drinking drive driven driver driveway driving drone drop
    dropped dropping drought drove drug drum drunk dry drying dual dubbed duck duct dude due dug dull dumb dummy
    dump dumped dungeon duo duplicate durable duration dust duty dvd dwarf dwell dwelling dye dying dynamic
    dysfunction eager ear earlier earliest early earn earned earnest earning earthquake ease easier easiest
    easily easing easy eat eaten eating ebony ebook eccentric echo echoed eco ecological economic economically
    economist economy ecosystem edge edit edited editing edition editor editorial educate educated education
    educational effect effective effectively effectiveness efficacy efficiency efficient efficiently effort egg
    ego eight eighth ein eine elaborate elastic elbow elder elderly elect elected election electoral electric
    electrical electricity electro electron electronic elegant element elementary elephant elevated elevation
    elevator eleven elf eligibility eligible eliminate eliminated eliminating elimination elite elle elm
    elsewhere email embarrassed embarrassing embassy embedded embrace embraced embracing emerge emerged
    emergence emergency emerging emission emitted emotion emotional emotionally empathy emphasis emphasize
    emphasized empirical employ employed employee employer employing employment empty enable enabled enabling
    enacted enclosed encoded encoding encompass encore encounter encountered encourage encouraged encouragement
    encouraging encryption end endangered endeavor ended ending endless endorsed endorsement endurance endure
    endured enduring enemy energetic energy enforce enforced enforcement eng engage engaged engagement engaging
    engine engineer engineered engineering enhance enhanced enhancement enhancing enjoy enjoyable enjoyed
    enjoying enjoyment enormous enough enroll enrolled enrollment ensemble ensure ensuring enter entered
    entering enterprise entertain entertaining entertainment enthusiasm enthusiastic entire entirely entirety
    entitled entity entrance entrepreneur entropy entry envelope environment environmental environmentally
    enzyme epic epidemic episode epoch eps epsilon equal equality equally equation equilibrium equipment
    equipped equity equivalent era erase erect erosion erotic error esa escape escaped escaping escort
    especially essay essence essential essentially est establish established establishing establishment estate
    este estimate estimated estimation eta eternal ethical ethics ethnic ethnicity euro evaluate evaluated
    evaluating evaluation evening evenly event eventual eventually everyday everywhere evidence evident evil
    evolution evolutionary evolve evolved evolving exact exactly exam examination examine examined examining
    example exceed exceeded exceeding excellence excellent exceptional exceptionally exceptions excerpt excess
    excessive exchange exchanged excited excitement exciting exclude excluded excluding exclusion exclusive
    exclusively excuse execute executed executing execution executive exempt exemption exercise exercising
    exhaust exhausted exhibit exhibited exhibition exist existed existence existing exit exited exiting exotic
    expand expanded expanding expansion expect expectation expected expecting expedition expenditure expense
    expensive experience experienced experiencing experiment experimental expert expertise expired explain
    explained explaining explanation explicit explicitly explode exploded exploit exploitation exploited
    exploration explore explored exploring explosion explosive export exported expose exposed exposing exposure
    expressed expressing expression extend extended extending extension extensive extensively extent exterior
    external extinction extra extract extracted extraction extraordinary extreme extremely eye fabric fabulous
    face faced facial facilitate facility facing fact faction factor factory faculty fade faded fail failed
    failing failure faint fair fairly fairness fairy faithful fake fall fallen falling false fame familiar
    family famous famously fan fancy fantasy far fare farm farmer farming farther fascinating fashion fast
    faster fastest fat fatal fate father fatigue fatty fault faulty faux favor favorable favored favorite favour
    favourite fear feared feasible feast feat feather feature featured featuring fed federal fee feed feedback
    feeder feeding feel feeling feet fell fellow felony felt female feminine feminism feminist femme fen fence
    ferry fertility fest festivals fetch feud fever fewer fiat fiber fibre fiction fictional field fierce
    fifteen fifth fifty fig fight fighter fighting figure figured figuring file filed filing fill filled filling
    film filmed filming filmmaker filter filtered filtering fin final finale finally finance financial
    financially financing find finding fine fined finest finger finish finished finishing finite fir fire
    firearm fired firefighters fireplace fireworks firing firm firmly fis fiscal fish fishing fist fit fitness
    fitted fitting five fix fixed fixing fixture flag flagship flame flash flashing flat flavor flavour flaw
    flawed fled flee fleeing fleet flesh flew flex flexibility flexible flick flight flip flipped flirt float
    floating flock flood flooded flooding floor floral flour flow flower flowing flown flu fluid flush flux fly
    flying foam focal focus focused focusing foe fog foil fold folded folder folding folk follow followed
    follower following fond font foo food fool foolish foot footage football footprint forbidden force forced
    forcing fore forecast forefront forehead foreign foreigners foremost forensic forest forever forge forged
    forget forgive forgiveness forgot forgotten fork form formal formally format formation formed former
    formerly formidable forming formula formulation forth forthcoming fortunate fortune forty forum forward
    fossil foster fought foul found foundations founded founder founding fountain four fourth fra fraction
    fragile fragment fragrance frame framed framework fran francais franchise frankly fraud fraudulent freak
    free freed freedom freelance freely freeze freezing freight frequency frequent frequently fresh freshly
    freshman friction fridge friend friendly friendship fries fright frightening fringe front frontier frozen
    fruit frustrated frustrating frustration fuck fucked fucking fuel fulfill fulfilled fulfilling fulfillment
    full fully fun function functional functionality functioning fund fundamental fundamentally funded funding
    fundraising funeral funny fur furious furnace furnished furniture further fuse fusion future fuzzy gag gain
    gained gaining gall gallery gallon gambling game gameplay gaming gamma gan gang gap garage garbage garden
    garlic garner gas gasoline gate gateway gather gathered gathering gauge gave gay gaze gear gee geek gel gem
    gen gender generally generate generated generating generation generator generic generous genes genetic
    genetically genius genocide genome genre gentle gentleman gently genuine genuinely geo geographic
    geographical geography geometric geometry gesture ghost giant gift gifted gig gin ginger girl girlfriend
    give given giving glance glass glimpse glitter global globally globe glorious glory gloss glove glow glowing
    glucose glue goal goat goddess gods gold golf goodness gorgeous gospel gossip gotten govern governance
    governed governing government governmental governor gps grab grabbed grabbing grade gradient gradual
    gradually graduate graduated graduating graduation grain gram grammar gran grand grandchildren grande
    grandfather grandmother grandparents granite grant granted granting grape graph graphic graphical grasp
    grass grassroots grateful gratitude grave gravel gravity gray graz great greater greatest greatly greed
    greedy green greenhouse greet greeted greeting grew grey grid grief grill grim grind grinding grip grit
    grocery groom groove gross ground grounded group grouped grouping grow growing grown growth grunt grupo
    guarantee guaranteed guard guess guessed guessing guest gui guidance guide guided guidelines guiding guild
    guilt guilty guitar gulp gum gun gust gut guy gym habit habitat hack hacked hacker hacking hadn hai hair
    hairy hal half halfway halls hallway halt hammer han hand handed handful handgun handing handle handled
    handler handling handsome handy hang hanging happen happened happening happier happily happiness happy
    harassment hard hardcore harder hardest hardly hardware hardwood harm harmful harmless harmon harmony
    harness harsh harvest hash hasn hat hatch hate hated hatred haul haunted haven hay hazard hazardous head
    headache headed header heading headline headquarters heal healing health healthcare healthy heap hear heard
    hearing heart heartbeat heat heated heating heaven heavier heavily heavy heck hedge heel height heir held
    helicopter hell helmet help helped helpful helping hem hence herb herbal heritage hero heroic heroin
    hesitate het hid hidden hide hiding hierarchy high higher highest highlight highlighted highlighting highly
    highway hike hiking hilarious hint hip hire hired hiring historia historian historic historical historically
    history hit hitting hobby hockey hog hold holder holding hole holiday hollow home homeless homemade hometown
    homework homicide homme homo homosexual homosexuality hon honest honestly honesty honey honor honored honour
    hood hook hooked hop hope hoped hopeful hopefully hoping horizon horizontal hormone horn horrible horrific
    horror horse hose hospital hospitality host hosted hostile hosting hot hotel hottest hour hourly house
    housed household housing http hub hue hug huge hugely hull hum human humanitarian humanity humble humidity
    humor humour hundred hung hunger hungry hunt hunters hunting hurry hurt hurting husband hybrid hydraulic
    hydro hydrogen hygiene hyper hypothesis ice ich icon iconic idea ideal ideally identical identification
    identified identify identifying identity ideological ideology idiot idle idol ign ignorance ignorant ignore
    ignored ignoring ile illegal illegally illness illusion illustrate illustrated illustration image imagery
    imaginary imagination imagine imagined imaging immediate immediately immense immigrant immigration imminent
    immune immunity imp impact impacted impaired impairment imperative implant implement implementation
    implemented implementing implicit implied imply import importance important importantly imported impose
    imposed imposing impossible impress impressed impression impressive imprisoned imprisonment improper improve
    improved improvement improving impulse inability inaccurate inactive inadequate inappropriate inaugural inc
    incapable incentive inception inch incidence incident inclined include included including inclusion
    inclusive income incoming incompatible incomplete inconsistent incorporate incorporated incorporating
    incorrect incorrectly increase increased increasing increasingly incredible incredibly incumbent incurred
    ind indefinitely independence independent independently index indexed indicate indicated indicating
    indication indicator indictment indie indigenous indirect indirectly individual individually indo indoor
    induce induced induction industrial industry ineffective inequality inevitable inevitably inexpensive
    infamous infant infantry infected infection infectious inference inferior infinite inflammation inflammatory
    inflation influence influenced influential influx info inform informal information informed infrastructure
    infringement ing ingredient inhabit inhabitants inherent inherently inherit inheritance inherited initial
    initially initiate initiated initiative injected injection injured injury injustice ink inline inn inner
    inning innocence innocent innovation innovative input inquiry ins insane inscription insect insert inserted
    insertion insight insist insisted inspect inspection inspiration inspirational inspire inspired inspiring
    instability install installation installed installing installment instance instant instantly instead
    instinct institution institutional instructed instruction instructor instrument instrumental insufficient
    insulation insulin insult insurance int intact intake integers integral integrate integrated integrating
    integration integrity intel intellect intellectual intelligence intelligent intend intended intense
    intensity intensive intent intention intentional intentionally inter interact interacting interaction
    interactive intercept interchange intercourse interest interested interesting interface interfere
    interference interim interior intermediate intern internal internally international internationally internet
    interpret interpretation interpreted interpreter interrupt interrupted intersect intersection interval
    intervene intervention interview interviewed intimate intra intricate intriguing intrinsic intro introduce
    introduced introducing introduction intuition intuitive invalid invariant invasion invasive invented
    invention inventory inverse inversion inverted invest invested investigate investigated investigating
    investigation investigative investigator investing investment investor invisible invitation invite invited
    inviting invoked involve involved involvement involving ion iphone iron irony irregular irrelevant isn iso
    isolate isolated isolation iss issue issued issuing ist item iteration jacket jail jailed jar jaw jazz
    jealous jeans jed jelly jerk jerseys jet jewelry jihad job join joined joining joint jointly joke joking
    journal journalism journalist journey judge judged judgement judging judgment judicial jug juice juicy jump
    jumped jumping junction jungle junior junk juris jurisdiction jury justification justified justify juvenile
    kan keen keep keeper keeping kept kernel key keyboard kick kicked kicking kid kidding kidnapped kidney kill
    killed killer killing kilometers kilometres kin kind kinda kindly kindness kiss kissing kit kitchen knee
    knew knife knit knock knocked knocking knot know knowing knowledge known kun lab label labeled labeling
    labor laboratory lac lace lack lacked lacking lad ladder lady laid lam lamp lan land landed landing landlord
    landmark landscape lane lang lange language lap laptop large largely larger largest las laser lasted lasting
    latch late lately later lateral latest latitude latter lattice laugh laughed laughing laughter launch
    launched launcher launching laundry lava law lawful lawn lawsuit lawyer lay layer laying layout lazy lbs lcd
    lead leader leadership leading leaf leagues leak leaked leaking lean leaned leaning leap lear learn learned
    learners learning learnt lease leather leave leaving lecture led ledger left leg legacy legal legally legend
    legendary legislation legislative legislators legislature legitimacy legitimate leisure lemon len lend
    lending length lengthy lens lent les lesbian lesson lethal letter letting lev level lever leverage lex lia
    liability liable liberal liberation libertarian liberty library libre licence licenses licensing lid lie
    lied lieu life lifelong lifestyle lifetime lift lifted lifting light lighter lighting lightly lightning
    lightweight liked likelihood likely likewise liking lim limb lime limestone limit limitation limited
    limiting line linear linebacker lined linen liner lineup ling linger lining link linked linking lip liquid
    liquor list listed listen listened listener listening listing lit liter literacy literal literary literature
    lithium litigation litter little liv live lived lively livestock living load loaded loading loan lobby
    lobbying local localized locally locate located location lock locked locker locking log logged logging logic
    logical logistics logo lok lone lonely long longer longest longevity longitude longtime look looked looking
    loop loose lore los lose losing loss lost lot lottery loud loudly lounge love loved lover loving low lower
    lowered lowering lowest loyal loyalty luck lucky lucrative luggage lump lunar lunch lung lure lush lust lux
    luxurious luxury lying mach machine machinery macro madness mag magazine magic magical magnet magnetic
    magnificent magnitude mai maid mail main mainland mainly mainstream maintain maintained maintaining
    maintenance maison maj major majority maker makeup making male malicious mama mammals man mana manage
    managed management manager managing mandate mandatory mane maneuver manga manifest manipulate manipulated
    manipulation mankind manner mansion manual manually manufacture manufactured manufacturer manufacturing
    manuscript map mapped mapping marathon marble mare margin marginal mari marijuana maritime marked marker
    market marketing marketplace marking marks marriage married marry marsh martial mas mask masked mass
    massacre massage massive mast master mat match matched matching mate mater material maternal mathematical
    mathematics matrix matter mattress mature maturity maxim maximal maximize maximum mayor maze meal mean
    meaning meaningful meaningless means meant meantime measure measured measurement measuring meat mechanic
    mechanical mechanism med media median medical medication medicinal medicine medieval meditation medium meet
    meeting meg mein melee melt melted melting member membership membrane memo memoir memorable memory men meng
    mental mentally mention mentioned mentioning mentor menu mer merchandise merchant mercy mere merely merge
    merged merger merging merit mesh mess message messaging messy met meta metabolic metabolism metadata metal
    metallic metaphor meter method methodology metric mic mice micro microphone microwave mid middle midfield
    midfielder midi midnight midst mig mighty migrant migrate migration mil milano mild mile milestone militant
    military militia milk mill milling million mimic min mind miner mineral mini miniature minimal minimize
    minimum mining ministers minor minority mint minus minute mir miracle mirror mis misconduct miserable misery
    misleading miss missed missile missing mission mist mistake mistaken mit mix mixed mixer mixing mixture mob
    mobile mobility mock mocked mod mode model modeling moderate modern modest modification modified modify
    modifying modular module moi moist moisture mold mole molecular molecule mom moment momentum mon monde
    monetary money monitor monitored monitoring monkey monopoly monster month monthly monument mood mor moral
    morality morally morning mort mortal mortality mortar mortgage mosque mosquito mostly mother motion
    motivated motivation motive motor motorcycle mount mountain mounted mounting mouse mouth move moved movement
    movie moving mph mud mug multi multimedia multiplayer multiple multiplication multiplied multitude mum mundo
    municipal municipality murder murdered muscle muscular muse museums mushroom music musical musician mutation
    mute mutual mutually myriad mysterious mystery myth nad nail naive nak naked nam name named namely naming
    nan nano nap narrative narrow nas nasty nat nation nationalist nationally nationals nationwide native
    natural naturally nature naughty naval nave navigate navigation nearby nearest nearly neat nec necessarily
    necessary necessity neck necklace ned needed needing needle negative negatively neglect neglected negotiate
    negotiated negotiating negotiation neighbor neighborhood neighboring neighbour neighbourhood neo neon nerve
    nervous nest net network networking neue neural neurons neutral neutrality new newborn newer newest newly
    news newsletter newspaper nic nicely niche nickel nickname night nightmare nine ninth nitrogen noble nod
    nodded nodes noir noise noisy nominal nominated nomination nominee non nonetheless nonprofit nonsense noon
    norm normal normally northeast nos nose notable notably notation notch note notebook noted notice noticeable
    noticed notification notified noting notion notorious notre noun nouveau nouvelle novel novo nowadays
    nowhere nuclear nude nueva nuevo null numb number numbered numerical numerous nun nur nurse nursery nursing
    nut nutrient nutrition nutritional nylon oath obesity obey object objection objective obligation obliged
    obscure observation observe observed observer observing obsessed obsession obsolete obstacle obtain obtained
    obtaining obvious obviously occasion occasional occasionally occupation occupied occupy occur occurred
    occurrence occurring ocean och odd oder odor offence offended offender offense offensive offer offered
    offering office officer official officially offset offshore offspring oil old older oldest ole omega omitted
    onboard oneself ongoing onion online onset opaque open opened opener opening openly operate operated
    operating operation operational operator opinion opponent opportunity oppose opposed opposing opposite
    opposition oppression ops opt opted optical optimal optimism optimistic optimization option optional oral
    orange orb orbit order ordered ordering ordinance ordinary ore org organ organic organisation organised
    organism organization organizational organize organized organizer organizing orgasm orient orientation
    oriented origin original originally originated orphan oslo otherwise ounce outbreak outcome outdated outdoor
    outer outfit outgoing outlet outline outlined outlook output outrage outrageous outreach outright
    outstanding outward oven overall overcome overhaul overhead overlap overlapping overlook overlooked
    overlooking overly overnight overseas oversee oversight overtime overview overwhelmed overwhelming
    overwhelmingly owe owed owing owl owned owner ownership owning oxide oxygen pace pack package packaged
    packaging packed packet packing pad padded paddle page paid pain painful paint painted painter painting pair
    paired pairing pal palette palm pan panel panic panties pants paper paperwork par para parade paradigm
    paradox paragraph parallel parameter parc parcel parent parental parenting parish parked parking parks
    parliamentary parole part partial partially participant participate participated participating participation
    particle particular particularly partisan partition partly partner partnered partnership party pas pass
    passage passed passenger passing passion passionate passive passport password pasta paste pastor patch
    patent path pathway patience patient patio patrol patron pattern pause paused pawn pay paying payload
    payment payroll pdf peace peaceful peak peanut peculiar pedal pedestrian pediatric peek peel peer peg pen
    penal penalty pencil pendant pending penetration peng penis pension people peppers perceive perceived
    percent percentage perception perch perfect perfection perfectly perform performance performed performer
    performing perimeter period periodic periodically peripheral permanent permanently permission permit
    permitted persecution persist persisted persistence persistent person persona personal personality
    personally personnel perspective persuade pertaining pest pet petit petite petition petrol pharmaceutical
    pharmacy phase phenomena phenomenon phi philosopher philosophical philosophy phone photo photograph
    photographed photographer photography phrase physical physically physician physics physiological piano pic
    pick picked picking pickup picnic picture pictured pie piece pig pile pill pillow pilot pin pinch pine ping
    pink pinned pioneer pip pipe pipeline pirate piss pistol pit pitch pitched pitcher pitching pity pixel pizza
    place placed placement placing plague plain plaintiff plan plane planet planned planner planning plant
    planted planting plasma plastic plate platform plausible play playable playback played player playful
    playground playing playoff plea pleaded pleasant pleased pleasing pleasure pledge pledged plenty plot
    plotting plug plum plumbing plural plus pocket pod podcast poem poet poetry point pointed pointer pointing
    poised poison poisoning poke poker pol polar pole police policing policy polished polite political
    politically politician politics poll polling pollution poly polymer polynomial pond ponder pont pony pool
    poor poorly pop popped popping popular popularity populated population por porch pork porn pornography port
    portable portal portfolio portion portrait portray portrayed pose posed posing position positioned
    positioning positive positively possess possessed possession possibility possible possibly post postal
    posted poster posterior posting postseason posture pot potato potent potential potentially pouch pound pour
    poured pouring poverty pow powder power powered powerful practical practically practice practiced practicing
    practitioner praise praised pray prayer praying pre preceded precedence precedent preceding precious precise
    precisely precision predecessor predict predictable predicted predicting prediction predominantly prefer
    preference preferred prefix pregnancy pregnant prejudice preliminary prem premature premiere premise premium
    prep preparation prepare prepared preparing prescribed prescription preseason presence present presentation
    presented presenter presenting presently preservation preserve preserved preserving presidency president
    presidential press pressed pressing pressure prestigious presumably pretend pretending pretty prevalence
    prevalent prevent prevented preventing prevention preview previously prey pri price priced pricing pride
    priest prima primarily primary prime primera primitive principal principle print printed printer printing
    prior priority prison prisoner privacy private privately privilege privileged prix prize pro probability
    probable probation probe problem problematic procedure proceed proceeded proceeding process processed
    processing processor procurement produce produced producer producing product production productive
    productivity profession professional professionally professor profile profit profitable profound program
    programme programmed programmer programming progress progression progressive prohibit prohibited prohibition
    project projected projectile projection proliferation prolonged prom prominent promised promises promising
    promo promote promoted promoting promotion promotional prompt prompted prompting promptly prone pronounced
    proof prop propaganda propagation proper properly property proportion proportional proposal propose proposed
    proposing proposition proprietary prosecuted prosecution prosecutor prospect prospective prosperity prostate
    prostitution protagonist protect protected protecting protection protective protein protest protesters proto
    protocol prototype proud proudly prove proved proven provide provided provider providing province provincial
    proving provision proximity proxy pseudo psi psychiatric psychic psycho psychological psychologist
    psychology pts pub public publication publicity publicly publish published publisher publishing puck pull
    pulled pulling pulse pump pumping pumpkin pun punch punish punished punishment punk punt pup puppet puppy
    purchase purchased purchasing pure purely purge purity purple purpose purse pursuant pursue pursued pursuing
    pursuit push pushed pushing pussy put putting puzzle pyramid quad qualification qualified qualify qualifying
    quality quantitative quantity quantum quarry quarter quarterback quarterly quartz quasi que queer query
    quest question questionable questioned questioning queue qui quick quicker quickly quiet quietly quit quiz
    quo quota quote quoted quoting rabbit race racial racing racism racist rack radar radial radiation radical
    radio radius raft rag rage raid rail railroad railway rain rainfall raise raised raising rally ramp ran
    ranch rand random randomly rang range ranged ranging rank ranked ranking ransom rap rape raped rapid rapidly
    rapper rare rarely ras rash rat rate rated rating ratio rational raw rays reach reached reaches reaching
    reacted reaction reactor read reader readily reading ready real realise realised realistic reality
    realization realize realized realizing realm rear reason reasonable reasonably reasoning rebel rebellion
    rebound rebuild rebuilding rec recall recalled receipt receive received receiver receiving recent recently
    reception receptor recess recession recipe recipient reckless reclaim recognise recognised recognition
    recognize recognized recognizing recommend recommendation recommended reconciliation reconstruction record
    recorded recorder recording recover recovered recovering recovery recreated recreation recreational recruit
    recruited recruiting recruitment rectangular recurring recycled recycling red redemption redesign reduce
    reduced reducing reduction redundant reel ref refer referee reference referenced referencing referendum
    referred referring refined reflect reflected reflecting reflection reflective reflex reform refrain
    refreshing refrigerator refuge refugee refusal refuse refused refusing reg regain regard regarded regarding
    regardless regime region regional register registered registering registration registry regression regret
    regular regularly regulate regulated regulating regulation regulator regulatory rehab rehabilitation reign
    rein reinforce reinforced reject rejected rejection relate related relating relation relationship relative
    relatively relax relaxation relaxed relaxing relay release released releasing relevance relevant reliability
    reliable reliance relied relief relieve relieved religion religious reluctant rely relying remain remainder
    remained remaining remark remarkable remarkably remedy remember remembered remembering remind reminded
    reminder reminiscent remote remotely removal remove removed removing ren renamed render rendered rendering
    renew renewable renewal renewed renovated renovation renowned rent rental rented rep repair repaired repay
    repeal repeat repeated repeatedly repeating repetition replace replaced replacement replacing replay replica
    replicate replication replied reply report reported reportedly reporter reporting repository represent
    representation representative represented representing reproduce reproduced reproduction reproductive
    reputation request requested requesting require required requirement requiring res rescue rescued research
    researched researcher researching resemble reservation reserve reserved reservoir reset reside residence
    residency resident residential residual residue resign resignation resigned resin resist resistance
    resistant resolution resolve resolved resolving resonance resort resource respect respected respectful
    respective respectively respiratory respond responded respondents responding response responsibility
    responsible responsive rest restart restaurant resting restoration restore restored restoring restrict
    restricted restriction restrictive result resulted resulting resume resumed retail retailer retain retained
    retaining retention retire retired retirement retreat retrieval retrieve retrieved retro return returned
    returning reunion rev reveal revealed revealing revelation revenge revenue reverse reversed review reviewed
    reviewer reviewing revised revision revival revolution revolutionary reward rewarded rhetoric rhythm rib
    ribbon ric rice richest rid ride rider ridiculous riding rifle rig right righteous rigid rigorous rim ring
    riot rip ripe ripped rise risen rising risk risky ritual rival rivers road roasted robbery robot robust rock
    rocket rode rods roi role roll rolled roller rolling rom romance romantic roof rookie room root rooted rope
    roster rot rotate rotated rotating rotation rough roughly round rounded rounding route routine routinely
    routing row royalty rpm rub rubber rubbing rude rue rug rugby rugged ruin ruined rule ruled ruler ruling rum
    run runner running runway rural rush rushed rushing rustic saber sac sack sacred sacrifice sad sadly sadness
    safe safeguard safely safer safety saga sage said sail sailing sake sal salad salary sale salmon salon salt
    salvation sample sampled sampling sanctions sanctuary sandwich sang sanity sap sat satellite satisfaction
    satisfied satisfy satisfying saturated sauce save saved saving saw say saying scale scaled scaling scan
    scandal scanned scanning scar scare scared scary scattered scenario scene scenery scent schedule scheduled
    scheduling scheme schizophrenia scholar scholarship school sci science scientific scientist scoop scope
    score scored scoring scrap scrape scratch scream screaming screen screened screening screw screwed script
    scroll scrolling scrub scrutiny sculpture sea seafood seal sealed seam search searched searching season
    seasonal seasoned seat seated seating secondary secret secretly sect section sector secular secure secured
    securely securing security sedan see seed seeing seek seeking seem seemed seemingly seen segment segunda
    seine seize seized seizure seldom select selected selecting selection selective selector self selfish sell
    seller selling semantic semester semi seminar senators send sending senior sensation sense sensible
    sensitive sensitivity sensor sensory sent sentence sentenced sentencing sentiment separate separated
    separately separating separation sequel sequence sequential ser sera serial serialized serie series serious
    seriously serum servant serve served server service serving session set setting settle settled settlement
    settling setup seven seventh severe severely severity sewing sex sexual sexuality sexually sexy sha shade
    shadow shaft shake shaking shallow shame shape shaped shaping share shared sharing shark sharp sharply
    shattered shed sheep sheer sheet shelf shell shelter shield shift shifted shifting shine shining shiny ship
    shipment shipped shipping shirt shit shock shocked shocking shoe shook shoot shooter shooting shop shopping
    shore short shortage shorter shortest shortly shot shotgun shoulder shouldn shout shouted shouting show
    showcase showed shower showing shown shrimp shrink shuffle shut shutter shutting shuttle shy sibling sic
    sick sickness sid side sidewalk siege sigh sighed sight sigma sign signal signaling signature signed
    significance significant significantly signing silence silent silently silhouette silk silly silver sim
    similar similarity similarly simple simpler simplest simplicity simplified simply simulate simulated
    simulation simulator simultaneous simultaneously sin sincere sing singer singing single singleton singular
    sink sino sip sis sister sit site sitting situ situated situation six sixth sixty size ska skate skeleton
    skeptical sketch ski skill skilled skin skinny skip skipped skipping skirt skull sky slab slam slammed slap
    slash slate slated slaughter slave slavery sleek sleep sleeping sleeve slept slice sliced slick slide
    sliding slight slightly slim slip slipped slogan slope slot slow slowed slower slowing slowly slug small
    smaller smallest smart smarter smartphone smashed smell smile smiled smiling smoke smoked smoking smooth
    smoothly sms snack snake snap snapped sneak sniff snow soap sob sober soc soccer social socialism socialist
    socially society socio sock socket soda sodium sofa soft softly software soil sol solar sold soldier sole
    solely solid solidarity solitary solo solution solve solved solving someday somehow sometime somewhat
    somewhere son song soo soon sooner sophisticated sophomore sore sorrow sort sorted sorting sought soul sound
    sounded sounding soundtrack soup sour source sourced sous sovereign sovereignty soy spa space spacecraft
    spacious span spanning spare sparked sparse spatial spawn spawned speak speaker speaking spear spec special
    specialist specialized specializes specializing specially specialty species specific specifically
    specification specified specify specimen spectacle spectacular spectral spectrum speculation speech speed
    speeding spell spelling spend spending spent sperm sphere spice spicy spike spill spin spinal spine spinning
    spiral spirit spiritual spit spite splash split splitting spoke spoken spokesman spokesperson sponsor
    sponsored sponsorship spontaneous spoon sport sporting spot spotlight spotted spouse spray spread spreading
    spring sprint spun spy squad square squared squat squeeze stab stabbed stability stable stack stacked staff
    stage staged staggering staging stain stainless stair stake stakeholders stale stalk stall stamp stance
    stand standalone standard standardized standing staple star stare stared staring stark starring start
    started starter starting startup stat state stated statement statewide static stating station stationary
    statistical statistics statue status statute statutory stay stayed staying steadily steady steak steal
    stealing stealth steam steel steep steer steering stellar stem step stepped stepping stereo stereotypes
    stick sticking sticky stiff stimulate stimulation stimuli stimulus sting stir stirring stitch stock stole
    stolen stomach stone stood stop stopped stopping storage store stored storing storm story storyline
    storytelling stove straight straightforward strain strand strange stranger strap strategic strategy straw
    streak stream streaming streets strength strengthen strengthening stress stressed stretch stretched
    stretching strict strictly stride strike striker striking string strip stripe stripped strive stroke strong
    stronger strongest strongly struck structural structure structured struggle struggled struggling sts stu
    stubborn stuck stud student studied studio study studying stuff stuffed stumbled stunned stunning stupid
    sturdy style styled styling sub subject subjected subjective submarine submission submit submitted
    subscribers subscription subsequent subsequently subset subsidiary substance substantial substantially
    substitute substitution substrate subtle suburb suburban subway succeed succeeded success successful
    successfully succession successive successor suck sucked sucking sudden suddenly sued suffer suffered
    suffering sufficient sufficiently suffix sugar suggest suggested suggesting suggestion suicide suit suitable
    suite suited sul sum summary summer summit summon summoned sun sung sunlight sunny sunset sunshine super
    superb superhero superior supermarket supernatural superstar supervision supervisor supplement supplied
    supplier supply supplying support supported supporter supporting supportive suppose supposed supposedly
    suppress suppressed suppression sur surf surface surfaced surge surgeon surgery surgical surname surplus
    surprise surprised surprising surprisingly surrender surround surrounded surrounding surveillance survey
    surveyed survival survive survived surviving survivor susceptible suspect suspected suspend suspended
    suspension suspicion suspicious sustain sustainability sustainable sustained swallow swap swapped swear
    sweat sweep sweeping sweet swelling swept swiftly swim swimming swing swinging switch switched switching
    sword sworn symbol symbolic symmetric symmetry sympathetic sympathy symptoms syn sync synchronized syndrome
    syntax synth synthesis synthetic syrup systematic systemic systems tab table tablet tack tackle tactic
    tactical tag tagged tail tailor tailored tak take taken taking tal tale talent talented talk talked talking
    tall taller tally tam tan tang tangible tank tap tape tapped tapping tar target targeted targeting task
    tasked taste tasting tattoo tau taught tax taxation taxi taxpayer tea teach teacher teaches teaching team
    teammate tear tearing tech technical technically technician technique technological technology tee teen
    teenage teenager teeth tel telephone telescope television tell telling temper temperature template temples
    tempo temporal temporarily temporary temps tempted ten tenant tend tended tendency tender tennis tense
    tension tensor tent tenth tenure ter term terminal terminate terminated termination terminology terrace
    terrain terrible terribly terrific terrified terrifying territorial territory terror terrorism terrorist
    test tested testified testify testimony testing testosterone tex text textbook texture tha thai thanked
    thankful theater thee theft theme themed theology theoretical theory therapeutic therapist therapy
    thereafter thereby therefore thereof thermal thesis theta thick thickness thigh thin thing think thinking
    thirst thirty tho thorough thoroughly thou thought thoughtful thousand thread threat threaten threatened
    threatening three threshold threw thrill thrilled thriller thrilling thrive thriving throat throne throttle
    throw throwing thrown thru thrust thumb thus thy thyroid tick ticket tide tie tied tier tight tightly til
    tile tilt time timed timeless timeline timely timer timing tin ting tiny tip tire tired tissue title titled
    tits tobacco tod today toe together toilet token told tolerance tolerate toll tomato tomb tomorrow ton tone
    tong tongue tonight tonnes took tool tooth top topic topology topped tor torn tornado torque torture
    tortured toss tossed total touch touchdown touched touching tough tour touring tourism tourist tournament
    tow towel tower town toxic toxicity toy trace traced tracing track tracked tracker tracking tract traction
    trade traded trademark trader trading tradition traditional traditionally traffic trafficking tragedy tragic
    trail trailer trailing train trained trainer training trait trajectory tram tran transaction transcript
    transcription transfer transferred transferring transform transformation transformed transforming
    transgender transient transit transition translate translated translation translator transmission transmit
    transmitted transparency transparent transplant transport transportation transported trap trapped trash
    trauma traumatic travel traveled traveling travelled travelling travers traverse tray tre tread treasure
    treat treated treating treatment treaty tree tremendous trench trend tri trial triangle tribal tribe tribute
    trick tricky tried trigger triggered triggering trillion trilogy trim trimmed trio trip triple triumph
    trivial trois troll trophy tropical trouble troubled truck true truly trunk trust trusted truth try trying
    tub tube tuition tumor tun tune tuned tuning tunnel turbo turn turned turning turnout turnover turtle tutor
    twelve twenty twice twin twist twisted two type typed typical typically typing ugly ultimate ultimately
    ultra umbrella una unable unacceptable unauthorized unavailable unaware unbelievable uncertain uncertainty
    unchanged uncle unclear uncomfortable uncommon unconscious unconstitutional uncover uncovered und undercover
    undergo undergoing undergraduate underground underlying undermine understand understanding understood
    undertake undertaken undertaking underwater underway underwear underwent undo undoubtedly une unemployed
    unemployment unexpected unexpectedly unfair unfamiliar unfortunate unhappy unicode unified uniform unions
    unique uniquely unit unite universal universe universities unknown unlawful unlikely unlimited unlock
    unlocked unnamed unnecessary uno unofficial unpaid unpleasant unprecedented unpredictable unrelated unsafe
    unsigned unspecified unstable unsuccessful unsure unto unused unusual unusually unveiled unwanted unwilling
    upcoming update updated upgrade upgraded upgrading uploaded upper upright ups upset upside upstairs upstream
    upward uranium urban urge urged urgency urgent urging urine usa usable usage usb use used useful useless
    user using usual utility utilization utilize utilized utilizing utmost utter utterly vacant vacation vaccine
    vacuum vague vain vale valid validation validity valor valuable valuation value valued valve vampire van
    vanilla vanity vapor var variability variable variance variant variation varied variety various vary varying
    vast vastly vault vectors vegetable vegetarian vegetation vehicle vein velocity vendor vent ventilation
    venture venue verb verbal verdict verification verified verify versa versatile verse version versus vertex
    vertical vertically vessel vest vet veteran veto viable vibe vibrant vibrating vibration vice vicinity
    vicious victim victory vida video vie view viewed viewer viewing vigor village villain ville vine vinegar
    vintage vinyl violate violated violating violation violence violent viral virtual virtually virtue virus vis
    visa visibility visible vision visit visited visiting visitor visual visually vita vital vitamin vitro vivid
    vivo viz vocabulary vocal voice voiced void vol volatile volley volta voltage volume voluntarily voluntary
    volunteer von vote voted voter voting vow vowed vox voyage vulnerability vulnerable wage waist wait waited
    waiting wake waking walk walked walking wall wallet wand wander wandering want wanted wanting war ward
    wardrobe ware warehouse warfare warm warmer warming warmth warn warned warning warp warrant warrior wary
    washed washing wasn waste wasted wasting watch watched watching water wave wavelength wax way weak weaken
    weaker weakness wealth wealthy weapon wear wearing weather web website wedding weed week weekday weekend
    weekly weigh weighed weighing weight weighted weird welcomed welcoming welfare wellness wen weren wet whale
    whatsoever wheat wheel wheelchair whereby wherein whilst whip whisper whispered whistle white whole
    wholesale wholly wicked wide widely wider widespread widow width wife wild wilderness wildlife wildly
    willing willingness win wind winding window wine wing winner winning winter wipe wiped wire wired wireless
    wiring wisdom wise wish wished wishing wit witch withdraw withdrawal withdrawn withstand witness witnessed
    wizard woke wolves woman women won wonder wondered wondering wood wooden wool word wore work worked worker
    workforce working workout workplace workshop world worldwide worm worn worried worry worrying worse worship
    worst worth worthy wouldn wound wounded woven wrap wrapped wrapping wreck wrestling wrist writ write writer
    writing written wrong wrote www yang yard yarn year yearly yeast yelled yelling yellow yen yer yesterday
    yield yielded yoga young younger youngest youth youtube zero zinc zip zombie zone zur
""")

#: Acronyms that are also frequent lowercase tokens but name a technology, not a shouted word.
_TECH_ACRONYMS = _words("http https rest ajax pdf cpu gpu")

#: Lowercase words allowed between the capitalised words of one name.
_CONNECTORS = "of|de|del|della|di|da|du|des|la|le|van|von|der|den|the|al|el|bin|ibn|dos|das"

#: Plurals whose singular is irregular, and words that look plural but are not.
_SINGULAR: dict[str, str] = {
    w: w for w in _words(
        "news series species always perhaps whereas towards afterwards besides sometimes nowadays "
        "lens means thanks yes was has does goes its his hers ours yours theirs "
        "christmas xmas texas vegas dallas kansas arkansas thomas lucas nicholas douglas atlas alias canvas "
        "gas bias pandas james charles jones williams adams roberts agnes frances dolores mercedes wales "
        "athens mars hades olympics macos ios chaos kudos cosmos ethos pathos thermos carlos bios dos los "
        "lagos santos marcos kronos windows kubernetes postgres jenkins rails https keras"
    )
}
_SINGULAR.update({
    "analyses": "analysis", "theses": "thesis", "crises": "crisis", "hypotheses": "hypothesis",
    "diagnoses": "diagnosis", "parentheses": "parenthesis", "synopses": "synopsis", "axes": "axis",
    "indices": "index", "matrices": "matrix", "vertices": "vertex", "appendices": "appendix",
    "buses": "bus", "gases": "gas", "lenses": "lens", "aliases": "alias", "biases": "bias",
    "canvases": "canvas", "atlases": "atlas", "statuses": "status", "viruses": "virus",
    "bonuses": "bonus", "campuses": "campus", "focuses": "focus", "censuses": "census",
    "corpuses": "corpus", "choruses": "chorus", "circuses": "circus", "geniuses": "genius",
    "menus": "menu", "gurus": "guru", "emus": "emu", "haikus": "haiku", "tutus": "tutu",
    "quizzes": "quiz", "knives": "knife", "wives": "wife", "lives": "life", "leaves": "leaf",
    "halves": "half", "shelves": "shelf", "wolves": "wolf", "thieves": "thief", "calves": "calf",
    "selves": "self", "loaves": "loaf", "apis": "api", "uris": "uri", "guis": "gui", "clis": "cli",
    "kpis": "kpi", "skis": "ski", "taxis": "taxi", "kiwis": "kiwi", "wikis": "wiki", "emojis": "emoji",
    "yetis": "yeti", "bikinis": "bikini", "martinis": "martini", "safaris": "safari", "alibis": "alibi",
    "khakis": "khaki", "tsunamis": "tsunami", "salamis": "salami",
})
# Singulars ending in -ie (movie -> movies), -che (cache -> caches), plurals in -oes.
_IE_WORDS = tuple(_words(
    "movie cookie selfie rookie zombie brownie smoothie calorie genie prairie auntie hoodie newbie "
    "sweetie techie freebie birdie goalie hippie pixie junkie foodie veggie indie aussie bookie cutie "
    "bestie barbie yuppie walkie talkie boogie collie lassie magpie pinkie quickie roomie sortie oldie "
    "goodie baddie beanie budgie lingerie menagerie rotisserie reverie camaraderie coterie"
))
_CHE_WORDS = tuple(_words(
    "cache niche ache avalanche moustache mustache quiche cliche tranche psyche creche attache douche "
    "microfiche panache"
))
_OES_WORDS = _words(
    "heroes potatoes tomatoes echoes vetoes torpedoes volcanoes mosquitoes dominoes mangoes tornadoes "
    "embargoes"
)
_USE_WORDS = tuple(_words("abuse excuse accuse fuse muse ruse refuse reuse misuse overuse peruse"))

_NUMBER_WORDS = {
    "two": "2", "three": "3", "four": "4", "five": "5", "six": "6", "seven": "7", "eight": "8",
    "nine": "9", "ten": "10", "eleven": "11", "twelve": "12", "twenty": "20", "thirty": "30",
    "forty": "40", "fifty": "50", "hundred": "100", "dozen": "12",
}
_NUMBER_WORD_SET = frozenset(_NUMBER_WORDS)
_MONTH_NUM = {
    "jan": 1, "feb": 2, "mar": 3, "apr": 4, "may": 5, "jun": 6, "jul": 7, "aug": 8, "sep": 9,
    "oct": 10, "nov": 11, "dec": 12,
}
_MONTH_NAME = ("", "january", "february", "march", "april", "may", "june", "july", "august",
               "september", "october", "november", "december")

_ERRNO = (
    "ECONNREFUSED|ECONNRESET|ECONNABORTED|ETIMEDOUT|ENOENT|EACCES|EPERM|EEXIST|EISDIR|ENOTDIR|"
    "ENOTEMPTY|EADDRINUSE|EADDRNOTAVAIL|EAGAIN|EWOULDBLOCK|EINVAL|EBADF|EMFILE|ENFILE|ENOMEM|ENOSPC|"
    "EPIPE|EHOSTUNREACH|ENETUNREACH|ENETDOWN|ENOTFOUND|EAI_AGAIN|EINTR|EIO|EROFS|EXDEV|ELOOP|"
    "ENAMETOOLONG|ENOTSUP|EOPNOTSUPP|EPROTO|ECANCELED|EBUSY|EDEADLK|ENOSYS|ENOTCONN|ESRCH|ECHILD|"
    "E2BIG|ENOEXEC|ETXTBSY|EFBIG|ESPIPE|EMLINK|ERANGE|EDOM|ENOTTY|EALREADY|EINPROGRESS|EMSGSIZE"
)
# SCREAMING_CASE parts that make an identifier an error code (gRPC, Chrome, POSIX style).
_ERROR_PARTS = _words(
    "ERR ERROR ERRORS FAIL FAILED FAILURE DENIED REFUSED EXCEEDED INVALID "
    "UNAUTHORIZED UNAUTHENTICATED FORBIDDEN UNAVAILABLE ABORTED EXHAUSTED CRASH CRASHED"
)
# Letter prefixes of "ABC1234" tokens that name a standard or product, not an error code.
_NOT_ERROR_PREFIX = _words(
    "SHA ISO RFC PEP UTF AES RSA MD GPT IPV HDMI USB DDR RTX GTX RX ES ECMA IEEE ANSI DIN EN IEC "
    "NVME PCIE LPDDR GDDR H X A B F M"
)
_JS_LIBS = _words(
    "node vue next nuxt react three d3 express chart ember backbone angular deno bun socket alpine "
    "svelte solid preact"
)
_FILE_EXT = (
    "py|pyi|pyc|pyx|ipynb|js|mjs|cjs|jsx|ts|tsx|json|jsonl|ndjson|yaml|yml|toml|ini|cfg|conf|env|txt|md|"
    "rst|csv|tsv|parquet|avro|xml|html|htm|css|scss|sass|less|sql|db|sqlite|sqlite3|log|sh|bash|zsh|"
    "fish|ps1|bat|cmd|exe|dll|so|dylib|c|h|cc|cpp|cxx|hpp|hh|java|kt|kts|scala|go|rs|rb|php|pl|swift|"
    "cs|fs|vb|jl|lua|dart|ex|exs|erl|hs|clj|elm|vue|svelte|lock|gradle|mk|cmake|tf|tfvars|proto|"
    "graphql|gql|pdf|doc|docx|xls|xlsx|ppt|pptx|odt|rtf|png|jpg|jpeg|gif|svg|webp|bmp|ico|tiff|mp3|"
    "mp4|wav|flac|ogg|mov|avi|mkv|webm|zip|tar|gz|tgz|bz2|xz|7z|rar|whl|jar|war|pem|crt|pub|p12|pfx|"
    "bin|iso|img|dmg|apk|ipa|pkl|pickle|pt|pth|onnx|h5|ckpt|safetensors|gguf|npy|npz|bak|tmp|swp|"
    "patch|diff|properties|plist|sln|csproj|vcxproj|service|desktop|epub|mobi|srt|vtt"
)
_DOTFILES = (
    "env|gitignore|gitattributes|gitmodules|bashrc|bash_profile|zshrc|zprofile|profile|vimrc|npmrc|"
    "nvmrc|yarnrc|dockerignore|editorconfig|prettierrc|eslintrc|babelrc|pylintrc|flake8|coveragerc|"
    "python-version|tool-versions|pre-commit-config|ssh|git|github|gitlab-ci|vscode|idea|venv|"
    "cache|config|local|htaccess|netrc|pypirc|condarc|tmux\\.conf"
)
_KNOWN_FILES = (
    "Dockerfile|Containerfile|Makefile|GNUmakefile|Procfile|Jenkinsfile|Vagrantfile|Gemfile|Rakefile|"
    "Pipfile|Brewfile|Justfile|Tiltfile|Caddyfile|Snakefile"
)
_HTTP_REASONS = (
    "Not Found|Bad Request|Unauthorized|Forbidden|Internal Server Error|Bad Gateway|Service Unavailable|"
    "Gateway Timeout|Method Not Allowed|Conflict|Too Many Requests|Request Timeout|Payment Required|"
    "Not Acceptable|Gone|Unprocessable Entity|Not Implemented|Moved Permanently|Precondition Failed|"
    "Payload Too Large|Unsupported Media Type"
)


# --------------------------------------------------------------------------
# Regexes (compiled once). Each starts with a literal or a narrow class so the
# engine can skip ahead in C; left word boundaries are checked in Python
# (``_bounded``) because a leading look-behind would disable that skip.
# --------------------------------------------------------------------------

def _case_class(upper: bool) -> str:
    """Character class body of the cased letters of Latin, Greek and Cyrillic."""
    out = []
    for c in range(0x41, 0x530):
        ch = chr(c)
        if ch.isalpha() and (ch.isupper() if upper else ch.islower()):
            out.append(re.escape(ch) if ch in "\\]^-[" else ch)
    return "".join(out)


_UP = _case_class(True)
_LO = _case_class(False)
# The word ends here and is no contraction ("Don't", "Can't"); a possessive or a closing quote may follow.
_WORD_END = r"(?![\w-])(?!['’](?:t|re|ve|ll|d|m)\b)"
_CAP = rf"[{_UP}](?<![\w-][{_UP}])(?:['’][{_UP}])?[{_LO}]+(?:[{_UP}][{_LO}]+)?(?:-[{_UP}][{_LO}]+)*{_WORD_END}"
_ACR = rf"[{_UP}](?<![\w-][{_UP}])[{_UP}0-9]*[{_UP}][{_UP}0-9]*(?:-\d+(?:\.\d+)?)?s?{_WORD_END}"
_NAME_WORD = rf"(?:{_CAP}|{_ACR})"
_NAME_SEQ_RE = re.compile(rf"{_NAME_WORD}(?:(?:[ \t]+(?:{_CONNECTORS})){{0,2}}[ \t]+{_NAME_WORD})*")
_NAME_TOKEN_RE = re.compile(_NAME_WORD)
_MAX_NAME_WORDS = 6
_SHOUT_RE = re.compile(rf"[{_UP} \t-]+")

_QUOTE_RE = re.compile(
    r"`(?<!``)(?P<bt>[^`\n]{1,200})`(?!`)"
    r'|"(?P<dq>[^"\n]{1,120})"'
    r"|“(?P<cq>[^”\n]{1,120})”"
    r"|「(?P<jq>[^」\n]{1,120})」|『(?P<jq2>[^』\n]{1,120})』"
)
# Single quotes: the opener follows a non-word char, the closer precedes one, and an apostrophe
# inside must sit between two letters, so "don't" and "Caroline's" never open or close a quote.
_SQUOTE_RE = re.compile(
    r"['‘](?<![\w'’]['‘])(?=\S)(?P<sq>(?:[^'‘’\n]|(?<=\w)['’](?=\w)){1,80}?)(?<=\S)['’](?!\w)"
)

_QUOTE_HINT_RE = re.compile("[\"'`“‘「『]")
_DQUOTE_HINT_RE = re.compile("[\"`“「『]")

_URL_RE = re.compile(
    r"(?:https?|ftp|file|s3|gs|ssh|git)://[^\s<>\"'`]+|www\.[\w-]+(?:\.[\w-]+)+[^\s<>\"'`]*"
)
_EMAIL_RE = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
_WIN_RE = re.compile(r"[A-Za-z]:[\\/][^\s\"'<>|*?:]*|\\\\[\w.$-]+\\[^\s\"'<>|*?:]+")
_SLASH_RE = re.compile(r"/[\w.@+%~/-]*")
_FILE_RE = re.compile(rf"\.(?:{_FILE_EXT})(?![\w-]|\.\w)", re.IGNORECASE)
_EXT_RE = re.compile(rf"\.(?:{_FILE_EXT})$", re.IGNORECASE)
_DOTFILE_RE = re.compile(rf"\.(?:{_DOTFILES})(?:\.[\w-]+)*(?![\w-])")
_KNOWN_RE = re.compile(rf"(?:{_KNOWN_FILES})\b")
_DOT_LETTER_RE = re.compile(r"\.[A-Za-z_]")

_HTTP_RE = re.compile(r"HTTPS?(?:/\d(?:\.\d)?)?[ :]?([1-5]\d\d)\b")
_HTTP_REASON_RE = re.compile(rf"[1-5]\d\d[ \t]+(?:{_HTTP_REASONS})\b")
# Run on lowercased text at the position of one of its leading words.
_CODE_RE = re.compile(
    r"(status|error|(?:exit|return|response)(?=[ \t]+code)|errno)((?:[ \t]+code)?[ \t]*([:#]?)[ \t]*)"
    r"(0x[0-9a-f]+|-?\d+)\b"
)
_CODE_WORDS = ("status", "error", "exit", "return", "response", "errno")
_HEX_RE = re.compile(r"0x[0-9A-Fa-f]{4,16}\b")
_CVE_RE = re.compile(r"CVE-\d{4}-\d{4,7}\b")
_ECODE_RE = re.compile(r"[A-Z][A-Z]{0,3}-?\d{3,5}\b")
_EXC_RE = re.compile(r"[A-Z][A-Za-z0-9]*?(?:Error|Exception|Warning|Interrupt|Exit|Fault|Failure|Panic)\b")
_EXC_HINT_RE = re.compile(r"Error|Exception|Warning|Interrupt|Exit|Fault|Failure|Panic")
_ERRNO_RE = re.compile(rf"(?:{_ERRNO})\b|SIG[A-Z]{{2,}}\d?\b")
_MISC_ERR_RE = re.compile(r"segmentation fault|segfault|core dumped|out of memory|oomkilled|null pointer")
_MISC_ERR_WORDS = _words("segmentation segfault dumped memory oomkilled pointer")

# Date regexes run on lowercased text with ``match`` at an anchor (a digit run or a date word),
# never as a scan: a scan of a many-branch pattern tries every branch at every character.
_MON = (r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?"
        r"|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)")
_MON_FULL = "(?:january|february|march|april|may|june|july|august|september|october|november|december)"
_DAY = r"(?:[12]\d|3[01]|0?[1-9])(?:st|nd|rd|th)?"
_YEAR = r"(?:1[89]|20)\d\d"
_WD_ANY = r"(?:mon|tue|tues|wed|thu|thur|thurs|fri|sat|sun)(?:day)?|tuesday|wednesday|thursday|saturday"
_UNIT_T = r"(?:second|minute|hour|day|night|week|weekend|month|year|decade)s?"
_COUNT = (r"(?:\d+|an?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|twenty|thirty"
          r"|a[ \t]+few|few|several|a[ \t]+couple(?:[ \t]+of)?|couple[ \t]+of)")
_DATE_DIGIT_RE = re.compile(
    r"(?P<iso>\d{4}-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12]\d|3[01])(?:[t ](?:[01]\d|2[0-3]):[0-5]\d(?::[0-5]\d)?)?\b)"
    rf"|(?P<dmy>{_DAY}[ \t]+(?:of[ \t]+)?{_MON}\b\.?(?:,?[ \t]+{_YEAR}\b)?)"
    r"|(?P<num>\d{1,2}/\d{1,2}/(?:\d{4}|\d{2})\b|\d{1,2}\.\d{1,2}\.\d{4}\b)"
    r"|(?P<time>(?:[01]?\d|2[0-3])(?::[0-5]\d)?[ \t]?(?:am|pm|a\.m\.|p\.m\.)(?!\w))"
    r"|(?P<dec>(?:1[89]|20)?\d0s\b)"
    rf"|(?P<ago>\d+[ \t]+{_UNIT_T}[ \t]+ago\b)"
)
# Month-led dates with a day or a year ("May 8th, 2023", "May 2023").
_DATE_MON_RE = re.compile(
    rf"{_MON}\.?(?:[ \t]+(?:the[ \t]+)?{_DAY}\b(?![:.]\d)(?:,?[ \t]+{_YEAR}\b)?|,?[ \t]+(?:of[ \t]+)?{_YEAR}\b)"
)
_DATE_REL_RE = re.compile(
    r"(?:the[ \t]+)?day[ \t]+(?:before[ \t]+yesterday|after[ \t]+tomorrow)\b"
    r"|(?:yesterday|today|tonight|tomorrow)\b"
    rf"|(?:last|next|this|past|coming)[ \t]+(?:week(?:end)?|month|year|summer|winter|spring|fall|autumn"
    rf"|night|morning|evening|afternoon|{_WD_ANY}|{_MON_FULL})\b"
    rf"|(?:spring|summer|fall|autumn|winter)[ \t]+(?:of[ \t]+)?{_YEAR}\b"
)
_AGO_BACK_RE = re.compile(rf"(?<![\w.]){_COUNT}[ \t]+{_UNIT_T}[ \t]+$")
_MAY_BACK_RE = re.compile(r"(?<![\w.])(?:in|since|until|till|by|during|through|early|late|mid|of)[ \t-]$")
_YEAR_RE = re.compile(rf"{_YEAR}(?![\w.%-]|,\d)")
_MON_IN_RE = re.compile(_MON, re.IGNORECASE)
_DIGITS_RE = re.compile(r"\d+")
_TIME_PARTS_RE = re.compile(r"(\d+)(?::(\d+))?\s*([ap])", re.IGNORECASE)
_ALPHA_RE = re.compile(r"[a-z]+")

_REL_ALWAYS = _words("yesterday today tonight tomorrow")
_REL_PREFIX = _words("last next this past coming")
_REL_UNIT = _words(
    "week weekend month year summer winter spring fall autumn night morning evening afternoon mon monday tue "
    "tues tuesday wed wednesday thu thur thurs thursday fri friday sat saturday sun sunday january february "
    "march april may june july august september october november december"
)
_SEASONS = _words("spring summer fall autumn winter")
_WEEKDAYS = _words(
    "monday tuesday wednesday thursday friday saturday sunday mondays tuesdays wednesdays thursdays fridays "
    "saturdays sundays"
)
_MONTHS_BARE = _words("january february march april june july august september october november december")
_MONTH_WORDS = _words(
    "jan january feb february mar march apr april may jun june jul july aug august sep sept september oct "
    "october nov november dec december"
)

_DOTTED_RE = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+(?![\w@/\\-]|\.\w)")
_SNAKE_RE = re.compile(r"_*[A-Za-z][A-Za-z0-9]*(?:_+[A-Za-z0-9]+)+_*|_+[A-Za-z][A-Za-z0-9]*_*")
_DUNDER_RE = re.compile(r"__[A-Za-z]\w*?__")
# An inner capital: after a lowercase letter or digit (getUserId), or starting a word after an
# acronym (HTTPServer). Starting on [A-Z] keeps the scan fast (capitals are rare in text).
_CAMEL_ANCHOR_RE = re.compile(r"[A-Z](?:(?<=[a-z0-9][A-Z])|(?<=[A-Z][A-Z])(?=[a-z]))")
_CAMEL_TOKEN_RE = re.compile(r"[A-Za-z][A-Za-z0-9]*")
# Plural acronyms (APIs) and name prefixes (McDonald, LeBron, DiCaprio) are not code identifiers.
_NOT_CAMEL_RE = re.compile(r"[A-Z]{2,}s|(?:Mc|Mac|De|Di|Da|Du|La|Le|Van|Von)[A-Z][a-z]+")

_NUM = r"(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?"
_UNITS = (
    "ms|us|ns|s|sec|secs|min|mins|h|hr|hrs|kb|mb|gb|tb|pb|kib|mib|gib|tib|kg|g|mg|km|m|cm|mm|nm|lb|lbs|"
    "oz|ft|k|x|px|pt|em|rem|fps|hz|khz|mhz|ghz|v|w|kw|kwh|mah|mph|kph|kmh|gbps|mbps|kbps|ml|l|dpi|yo|"
    "yr|yrs|mo|wk|wks|bn|mn|°c|°f"
)
_CURRENCY_HINT_RE = re.compile("[$€£¥₹]")
_CURRENCY_RE = re.compile(
    rf"[$€£¥₹][ \t]?{_NUM}(?:[ \t]?(?:[kKmMbB]|bn|mn|million|billion|thousand|trillion|grand)\b)?"
)
# Matched at a digit run: a number (or range) and what makes it a quantity.
_QTY_RE = re.compile(
    rf"{_NUM}(?:[ \t]?(?:-|–|to)[ \t]?{_NUM})?"
    rf"(?:(?P<pct>[ \t]?(?:%|(?i:percent|per[ \t]?cent)\b))"
    rf"|(?P<hyph>-[A-Za-z]+(?:-[A-Za-z]+)*(?![\w-]))"
    rf"|(?P<att>(?i:{_UNITS})(?!\w))"
    rf"|[ \t]+(?P<unit>[a-z]+|[A-Z]{{1,5}}s?)(?![\w'’-]))"
)
_WORD_QTY_RE = re.compile(
    r"(?:two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|twenty|thirty|forty|fifty|hundred|dozen)"
    r"[ \t]+([a-z]+)(?![\w'’-])"
)
_NUM_UNIT_RE = re.compile(rf"({_NUM}(?:[ \t]?(?:-|–|to)[ \t]?{_NUM})?)[ \t]*(.*)", re.DOTALL)
# Units that may stay singular after a number other than one ("2 hour drive", "5 star hotel").
_SINGULAR_UNITS = _words(
    "second minute hour day night week weekend month year decade century time mile km meter metre foot feet "
    "inch pound kilo gram ounce liter litre gallon cup dollar buck cent euro yen rupee point degree star "
    "percent k m people children men women teeth mice geese sheep fish deer data"
)

_LEAD_STRIP = " \t\r\n\"'`‘’“”«»「」『』()[]{}<>,;:!?¡¿*"
_TRAIL_STRIP = " \t\r\n\"'`‘’“”«»「」『』()[]{}<>,;:!?.…*/\\"
_SENT_END = frozenset(".!?\n\r:;…。！？")
_SENT_SKIP = frozenset(" \t\"'“‘(*-•>#[_")
_ASCII_ALNUM = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
_PATH_CHARS = frozenset(_ASCII_ALNUM + "_.-~@+%")
_FILE_STEM_CHARS = frozenset(_ASCII_ALNUM + "_.-")
_DOTTED_CHARS = frozenset(_ASCII_ALNUM + "_.")
_ALNUM_CHARS = frozenset(_ASCII_ALNUM)


def _is_word_char(ch: str) -> bool:
    return ch.isalnum() or ch == "_"


def _bounded(text: str, i: int, extra: str = "") -> bool:
    """True when position ``i`` starts a word (the char before is no word char nor in ``extra``)."""
    if i == 0:
        return True
    ch = text[i - 1]
    return not (ch.isalnum() or ch == "_" or ch in extra)


def _expand_left(text: str, i: int, chars: frozenset[str]) -> int:
    while i > 0 and text[i - 1] in chars:
        i -= 1
    return i


def _positions(low: str, word: str) -> list[int]:
    """Start positions of ``word`` as a whole word in ``low``."""
    out = []
    n = len(word)
    size = len(low)
    i = low.find(word)
    while i != -1:
        j = i + n
        if (i == 0 or not _is_word_char(low[i - 1])) and (j >= size or not _is_word_char(low[j])):
            out.append(i)
        i = low.find(word, j)
    return out


def _lower_same_length(text: str) -> str:
    """``text.lower()`` with every character kept in place (offsets stay valid)."""
    low = text.lower()
    if len(low) == len(text):
        return low
    return "".join(c if len(c.lower()) != 1 else c.lower() for c in text)  # e.g. 'İ' lowers to 2 chars


# --------------------------------------------------------------------------
# Key folding
# --------------------------------------------------------------------------

def _strip_diacritics(text: str) -> str:
    # Only Latin combining accents go: dakuten and other script marks change meaning.
    decomposed = unicodedata.normalize("NFKD", text)
    kept = "".join(ch for ch in decomposed if not 0x300 <= ord(ch) <= 0x36F)
    return unicodedata.normalize("NFC", kept)


def _singular(w: str, standalone: bool) -> str:
    """Singular of the lowercase word ``w`` (a heuristic good enough for keys)."""
    if len(w) < (4 if standalone else 3) or w[-1] != "s":
        return w
    hit = _SINGULAR.get(w)
    if hit is not None:
        return hit
    if w.endswith(("ss", "us", "is", "'s")):
        return w
    if w.endswith("ies"):
        if len(w) <= 4 or w[:-1].endswith(_IE_WORDS):
            return w[:-1]
        return w[:-3] + "y"
    if w.endswith("ches"):
        return w[:-1] if w[:-1].endswith(_CHE_WORDS) else w[:-2]
    if w.endswith(("sses", "shes", "xes", "zzes")):
        return w[:-2]
    if w.endswith("oes"):
        return w[:-2] if w in _OES_WORDS else w[:-1]
    if w.endswith("yses"):
        return w[:-2] + "is"
    if w.endswith("uses"):
        if w.endswith(("ouses", "auses")) or w == "uses" or w[:-1].endswith(_USE_WORDS):
            return w[:-1]
        return w[:-2]  # prospectuses -> prospectus
    return w[:-1]


def fold_key(text: str) -> str:
    """Fold a surface form into a lookup key.

    Casefolds, strips Latin accents, surrounding quotes/brackets/punctuation
    and a trailing possessive, collapses whitespace and singularises the last
    word, so ``'TriBridConfig'``, ``tribridconfig`` and ``TriBridConfigs``
    share one key. Words that only look plural (``analysis``, ``status``,
    ``bus``, ``glass``, ``news``) are kept.

    Example:
        >>> fold_key("  Libraries ")
        'library'
        >>> fold_key("Caroline's")
        'caroline'
        >>> fold_key("José  García")
        'jose garcia'

    Args:
        text: Any surface form.

    Returns:
        The folded key ('' when nothing is left after stripping).
    """
    if text.isascii():
        if text.isalpha() and text[-1] not in "sS":
            return text.lower()  # fast path: a plain word
    else:
        text = _strip_diacritics(text)
    s = " ".join(text.split()).lstrip(_LEAD_STRIP).rstrip(_TRAIL_STRIP)
    if len(s) > 3 and s[-2] in "'’" and s[-1] in "sS":
        s = s[:-2].rstrip(_TRAIL_STRIP)
    if not s or s[-1] not in "sS":
        return s.casefold()
    # Singularise the trailing run of letters of the last word.
    i = len(s)
    while i > 0 and s[i - 1].isalpha():
        i -= 1
    run = s[i:]
    if len(run) >= 3 and run[-1] == "s" and run[:-1].isupper():
        return (s[:i] + run[:-1]).casefold()  # APIs -> api, GPUs -> gpu
    return s[:i].casefold() + _singular(run.casefold(), i == 0 or s[i - 1] == " ")


# --------------------------------------------------------------------------
# Canonical keys of dates and quantities
# --------------------------------------------------------------------------

def _date_key(kind: str, s: str) -> str:
    if kind in ("dmy", "md"):
        low = s.casefold()
        mm = _MON_IN_RE.search(low)
        if mm is not None:
            month = _MONTH_NUM[mm.group()[:3]]
            nums = _DIGITS_RE.findall(low)
            year = next((n for n in nums if len(n) == 4), None)
            day = next((n for n in nums if len(n) <= 2), None)
            if year and day:
                return f"{year}-{month:02d}-{int(day):02d}"
            if year:
                return f"{year}-{month:02d}"
            if day:
                return f"{_MONTH_NAME[month]} {int(day)}"
    elif kind == "iso":
        return s[:10]
    elif kind == "time":
        t = _TIME_PARTS_RE.match(s)
        if t is not None:
            h = int(t.group(1)) % 12 + (12 if t.group(3).lower() == "p" else 0)
            return f"{h:02d}:{int(t.group(2) or 0):02d}"
    return fold_key(s)


def _qty_key(num_unit: str) -> str:
    m = _NUM_UNIT_RE.match(num_unit)
    if m is None:  # pragma: no cover - only number-led text is handed over
        return fold_key(num_unit)
    num = m.group(1).replace(",", "").replace(" ", "").replace("\t", "").replace("–", "-")
    unit = m.group(2)
    if not unit:
        return num
    if unit[0] == "%" or unit[:3].casefold() == "per":
        return num + "%"
    return f"{num} {fold_key(unit)}"


def _plausible_unit(unit: str, number: str) -> bool:
    """A word after a number counts as its unit when it is plural, a known unit, or follows "1"."""
    low = unit.casefold()
    if low in _SINGULAR_UNITS or number in ("1", "one", "a"):
        return True
    if unit.isupper():  # GB, MB, USD
        return True
    return low.endswith("s") and _singular(low, True) != low


# --------------------------------------------------------------------------
# Extractor
# --------------------------------------------------------------------------

def _sentence_start(text: str, i: int) -> bool:
    """True when position ``i`` begins a sentence (ignoring quotes, bullets, spaces)."""
    j = i - 1
    while j >= 0 and text[j] in _SENT_SKIP:
        j -= 1
    if j < 0:
        return True
    ch = text[j]
    return ch in _SENT_END or (ord(ch) >= 0x2190 and not ch.isalnum())


def _looks_common(lw: str) -> bool:
    """Morphology of a common word (gerund, adverb, abstract noun) for a sentence-initial token."""
    return len(lw) >= 6 and lw.endswith(_COMMON_SUFFIXES)


def _is_common_word(lw: str) -> bool:
    """Whether a capitalised sentence opener is more likely a common word than a name."""
    if lw in _SENTENCE_COMMON or lw in _LEXICON or _looks_common(lw):
        return True
    if lw[-1:] == "s" and len(lw) >= 4:
        single = _singular(lw, True)
        # A plural ("Turtles", "Mentors") or a verb ("Reminds") opening a sentence is no name.
        return single != lw or lw[:-1] in _LEXICON
    return False


def _shouted(lw: str) -> bool:
    """An all-caps token that is a common word written loud ("SO HAPPY", "GAME"), not an acronym."""
    return lw in _SENTENCE_COMMON or (len(lw) >= 4 and lw in _LEXICON and lw not in _TECH_ACRONYMS)


def _after_name(text: str, a: int, stop: frozenset[str]) -> bool:
    """True when the number at ``a`` follows a name or acronym ("Python 3", "PEP 8", "Game 7")."""
    j = a - 1
    if j < 1 or text[j] != " ":
        return False
    k = j
    while k > 0 and text[k - 1].isalpha():
        k -= 1
    w = text[k:j]
    if not w or not w[0].isupper() or w.casefold() in stop:
        return False
    return (len(w) >= 2 and w.isupper()) or not _sentence_start(text, k)


_COMMON_SUFFIXES = (
    "ing", "ally", "ously", "fully", "tely", "ntly", "stly", "ctly", "ably", "ibly", "hly", "rly",
    "able", "ible", "ous", "tion", "sion", "ment", "ness", "ship", "less", "ful",
)


class _Scan:
    """Per-call state: the text, its lowercase twin, and which characters are claimed."""

    __slots__ = ("text", "low", "words", "digits", "found", "mask")

    def __init__(self, text: str) -> None:
        self.text = text
        self.low = _lower_same_length(text)
        self.words = frozenset(_ALPHA_RE.findall(self.low))
        # Digit runs that start a token: the anchors of dates, quantities and years.
        self.digits = [m.start() for m in _DIGITS_RE.finditer(text) if _bounded(text, m.start(), ".")]
        self.found: list[tuple[int, int, str, str, str]] = []  # (start, end, kind, surface, key)
        self.mask = bytearray(len(text))  # 1 = character already claimed by an entity

    def add(self, s: int, e: int, kind: str, key: str | None = None) -> bool:
        """Claim ``text[s:e]`` as an entity unless a higher-priority entity holds part of it."""
        mask = self.mask
        if s >= e or mask.find(1, s, e) != -1:
            return False
        mask[s:e] = b"\x01" * (e - s)
        surface = self.text[s:e]
        self.found.append((s, e, kind, surface, fold_key(surface) if key is None else key))
        return True


class RegexEntityExtractor:
    """Finds names, identifiers, paths, errors, quotes, dates and quantities.

    Implements :class:`~chatrecall.core._protocols.EntityExtractor` without an
    LLM or a model: compiled regexes and word lists only, so it can run on
    every stored turn and every query (tens of microseconds per turn).

    Example:
        >>> ex = RegexEntityExtractor()
        >>> [(e.text, e.kind) for e in ex.extract("Caroline fixed ValueError in src/app/main.py yesterday")]
        [('Caroline', 'name'), ('ValueError', 'error'), ('src/app/main.py', 'path'), ('main.py', 'path'), \
('yesterday', 'date')]
        >>> ex.keys("Hey Mel! I moved to New York City in May 2023 with 3 kids")
        ('mel', 'new york city', '2023-05', '3 kid')

    Args:
        min_len: Entities whose key is shorter than this are dropped.
        stopwords: Casefolded words that are never an entity and never part
            of a name. ``None`` uses :data:`DEFAULT_STOPWORDS`; a given set
            replaces it (pass ``DEFAULT_STOPWORDS | {...}`` to extend it).

    Raises:
        InvalidInputError: ``min_len`` is not an int >= 1 or ``stopwords``
            is not a set of strings.
    """

    __slots__ = ("_min_len", "_stop")

    def __init__(self, *, min_len: int = 2, stopwords: frozenset[str] | None = None) -> None:
        if isinstance(min_len, bool) or not isinstance(min_len, int) or min_len < 1:
            raise InvalidInputError(f"min_len={min_len!r} is invalid: must be an int >= 1")
        if stopwords is None:
            stop = DEFAULT_STOPWORDS
        else:
            if not isinstance(stopwords, (set, frozenset)) or not all(isinstance(w, str) for w in stopwords):
                raise InvalidInputError(f"stopwords={stopwords!r:.80} is invalid: must be a frozenset of str")
            stop = frozenset(w.casefold() for w in stopwords)
        self._min_len = min_len
        self._stop = stop

    def __repr__(self) -> str:
        return f"RegexEntityExtractor(min_len={self._min_len}, stopwords=<{len(self._stop)} words>)"

    def keys(self, text: str) -> tuple[str, ...]:
        """Folded keys of :meth:`extract`, in order of first appearance."""
        return tuple(e.key for e in self.extract(text))

    def extract(self, text: str) -> list[Entity]:
        """Entities of ``text`` in order of first appearance, deduplicated by key.

        Args:
            text: Any text (a chat turn, a query, a document chunk).

        Returns:
            One :class:`Entity` per distinct key, ordered by position.

        Raises:
            InvalidInputError: ``text`` is not a str.
        """
        if not isinstance(text, str):
            raise InvalidInputError(f"text must be a str, got {type(text).__name__}: {text!r:.80}")
        if not text or text.isspace():
            return []
        if not text.isascii() and not unicodedata.is_normalized("NFC", text):
            text = unicodedata.normalize("NFC", text)

        sc = _Scan(text)
        has_dot_letter = "." in text and _DOT_LETTER_RE.search(text) is not None
        if has_dot_letter or "/" in text or "\\" in text or "@" in text or "file" in text:
            self._paths(sc, has_dot_letter)
        self._errors(sc)
        self._dates(sc)
        self._identifiers(sc, has_dot_letter)
        self._quantities(sc)
        for a in sc.digits:  # bare years last: "2000 words" is a quantity, "in 2022" a date
            if sc.mask[a]:
                continue
            m = _YEAR_RE.match(text, a)
            if m is not None and _bounded(text, a, ".$€£,-"):
                sc.add(a, m.end(), "date", m.group())
        self._names(sc)
        if _QUOTE_HINT_RE.search(text) is not None:
            self._quoted(sc)

        found = sc.found
        found.sort(key=lambda t: (t[0], -t[1]))
        out: list[Entity] = []
        seen: set[str] = set()
        stop = self._stop
        min_len = self._min_len
        for _s, _e, kind, surface, key in found:
            if len(key) < min_len or key in seen or key in stop:
                continue
            seen.add(key)
            out.append(Entity(text=surface, kind=kind, key=key))
        return out

    # -- passes ---------------------------------------------------------------

    @staticmethod
    def _add_path(sc: _Scan, s: int, e: int, kind: str = "path") -> None:
        if not sc.add(s, e, kind):
            return
        surface = sc.text[s:e]
        cut = max(surface.rfind("/"), surface.rfind("\\"))
        if kind == "path" and cut >= 0:
            base = surface[cut + 1:]
            if len(base) > 3 and _EXT_RE.search(base):  # src/app/main.py also answers to main.py
                sc.found.append((s + cut + 1, e, "path", base, fold_key(base)))

    def _paths(self, sc: _Scan, has_dot_letter: bool) -> None:
        text = sc.text
        if "://" in text or "www." in text:
            for m in _URL_RE.finditer(text):
                s = m.start()
                if _bounded(text, s):
                    self._add_path(sc, s, s + len(m.group().rstrip(".,;:!?)]}'\"")), "path")
        if "@" in text:
            for m in _EMAIL_RE.finditer(text):
                if _bounded(text, m.start()):
                    sc.add(m.start(), m.end(), "identifier")
        if ":\\" in text or ":/" in text or "\\\\" in text:
            for m in _WIN_RE.finditer(text):
                if _bounded(text, m.start()):
                    self._add_path(sc, m.start(), m.start() + len(m.group().rstrip(".,;:!?)]}'\"")))
        if "/" in text:
            end = 0
            for m in _SLASH_RE.finditer(text):
                if m.start() < end:
                    continue
                s = _expand_left(text, m.start(), _PATH_CHARS)
                surface = text[s:m.end()].rstrip(".,;:!?")
                end = s + len(surface)
                if s > 0 and text[s - 1] in ":\\/":
                    continue  # part of a URL or a Windows path
                body = surface.rstrip("/")
                if not body:
                    continue
                segs = body.split("/")
                if surface[0] in "/~" or surface.startswith(("./", "../")):  # absolute
                    if not (surface.startswith(("~/", "./", "../")) or len(segs) >= 3 or _EXT_RE.search(body)):
                        continue  # "/help", "/s"
                elif not (_EXT_RE.search(segs[-1]) or surface.endswith("/")):
                    continue  # "and/or", "he/him", "24/7"
                elif any(len(seg) < 2 or seg.isdigit() for seg in segs):
                    continue  # "w/", "b/c"
                self._add_path(sc, s, end)
        if has_dot_letter:
            for m in _FILE_RE.finditer(text):
                s = _expand_left(text, m.start(), _FILE_STEM_CHARS)
                while s < m.start() and text[s] == ".":
                    s += 1
                stem = text[s:m.start()]
                if not stem or (s > 0 and text[s - 1] in "/\\@") or not any(c.isalnum() for c in stem):
                    continue
                if len(stem) < 2 and m.end() - m.start() <= 2:
                    continue
                kind = "path"
                if m.group().casefold() == ".js" and stem.casefold() in _JS_LIBS:
                    kind = "identifier"  # Node.js, Vue.js are libraries, not files
                self._add_path(sc, s, m.end(), kind)
            for m in _DOTFILE_RE.finditer(text):
                if _bounded(text, m.start(), "./\\-"):
                    self._add_path(sc, m.start(), m.end())
        if "file" in text:
            for m in _KNOWN_RE.finditer(text):
                if _bounded(text, m.start()):
                    self._add_path(sc, m.start(), m.end())

    @staticmethod
    def _errors(sc: _Scan) -> None:
        text, low = sc.text, sc.low
        if sc.digits:
            if "HTTP" in text:
                for m in _HTTP_RE.finditer(text):
                    if _bounded(text, m.start()):
                        sc.add(m.start(), m.end(), "error", "http " + m.group(1))
            for a in sc.digits:
                hm = _HTTP_REASON_RE.match(text, a)
                if hm is not None:
                    sc.add(a, hm.end(), "error", "http " + text[a:a + 3])
            for word in _CODE_WORDS:
                if word not in sc.words:
                    continue
                for p in _positions(low, word):
                    cm = _CODE_RE.match(low, p)
                    if cm is None:
                        continue
                    cw, sep, num = cm.group(1), cm.group(2), cm.group(4)
                    has_code = "code" in sep
                    if not has_code and not cm.group(3) and len(num) < 3 and cw != "errno":
                        continue  # "an error 2 times" is not an error code
                    if len(num) == 3 and num[0] in "12345" and cw in ("status", "error", "response"):
                        key = "http " + num
                    else:
                        key = f"{cw} code {num}" if has_code else f"{cw} {num}"
                    sc.add(p, cm.end(), "error", key)
            if "0x" in text:
                for m in _HEX_RE.finditer(text):
                    if _bounded(text, m.start()):
                        sc.add(m.start(), m.end(), "error", m.group().casefold())
            if "CVE-" in text:
                for m in _CVE_RE.finditer(text):
                    if _bounded(text, m.start()):
                        sc.add(m.start(), m.end(), "error", m.group().casefold())
            for m in _ECODE_RE.finditer(text):
                if _bounded(text, m.start(), "-"):
                    # SHA256 or ISO-8601 name a standard, not an error code.
                    prefix = m.group().rstrip("0123456789").rstrip("-")
                    kind = "identifier" if prefix in _NOT_ERROR_PREFIX else "error"
                    sc.add(m.start(), m.end(), kind, m.group().casefold())
        if _EXC_HINT_RE.search(text) is not None:
            for m in _EXC_RE.finditer(text):
                s, e = m.span()
                if s > 0 and text[s - 1] == ".":  # requests.exceptions.ConnectionError
                    q = _expand_left(text, s, _DOTTED_CHARS)
                    while q < s and not (text[q].isalpha() or text[q] == "_"):
                        q += 1
                    if _bounded(text, q) and sc.add(q, e, "error", text[q:e].casefold()):
                        sc.found.append((s, e, "error", m.group(), m.group().casefold()))
                elif _bounded(text, s):
                    sc.add(s, e, "error", m.group().casefold())
        if "StopIteration" in text:
            for p in _positions(text, "StopIteration"):
                sc.add(p, p + 13, "error", "stopiteration")
        if "E" in text or "SIG" in text:
            for m in _ERRNO_RE.finditer(text):
                if _bounded(text, m.start()):
                    sc.add(m.start(), m.end(), "error", m.group().casefold())
        if not sc.words.isdisjoint(_MISC_ERR_WORDS):
            for m in _MISC_ERR_RE.finditer(low):
                if _bounded(low, m.start()):
                    sc.add(m.start(), m.end(), "error", m.group())

    @staticmethod
    def _dates(sc: _Scan) -> None:
        text, low, words = sc.text, sc.low, sc.words

        def add(s: int, e: int, kind: str) -> None:
            sc.add(s, e, "date", _date_key(kind, text[s:e]))

        mask = sc.mask
        for a in sc.digits:
            if mask[a]:
                continue
            m = _DATE_DIGIT_RE.match(low, a)
            if m is not None:
                add(a, m.end(), m.lastgroup or "")
        if sc.digits and not words.isdisjoint(_MONTH_WORDS):
            for w in words & _MONTH_WORDS:
                for p in _positions(low, w):
                    m = _DATE_MON_RE.match(low, p)
                    if m is not None and not (w == "may" and text[p] == "m"):  # "you may 2x it": a verb
                        add(p, m.end(), "md")
        if "before yesterday" in low or "after tomorrow" in low:
            for p in _positions(low, "day"):
                q = p - 4 if low[max(0, p - 4):p] == "the " else p
                m = _DATE_REL_RE.match(low, q)
                if m is not None:
                    add(q, m.end(), "rel")
        starts = words & _REL_ALWAYS
        if not words.isdisjoint(_REL_UNIT):
            starts |= words & _REL_PREFIX
            if sc.digits:
                starts |= words & _SEASONS
        for w in starts:
            for p in _positions(low, w):
                m = _DATE_REL_RE.match(low, p)
                if m is not None:
                    add(p, m.end(), "rel")
        if "ago" in words:
            for p in _positions(low, "ago"):
                m = _AGO_BACK_RE.search(low, max(0, p - 40), p)
                if m is not None:
                    add(m.start(), p + 3, "rel")
        for w in words & _WEEKDAYS:
            for p in _positions(low, w):
                add(p, p + len(w), "wd")
        for w in words & _MONTHS_BARE:
            for p in _positions(low, w):
                if text[p].isupper():  # "march" and "august" are also plain words
                    add(p, p + len(w), "month")
        if "May" in text:
            for p in _positions(text, "May"):
                if _MAY_BACK_RE.search(low, max(0, p - 10), p):
                    add(p, p + 3, "month")

    @staticmethod
    def _identifiers(sc: _Scan, has_dot_letter: bool) -> None:
        text = sc.text
        if has_dot_letter:
            end = 0
            for m in _DOT_LETTER_RE.finditer(text):
                if m.start() < end or sc.mask[m.start()]:
                    continue
                s = _expand_left(text, m.start(), _DOTTED_CHARS)
                while s < m.start() and text[s] == ".":
                    s += 1
                d = _DOTTED_RE.match(text, s)
                if d is None:
                    continue
                end = d.end()
                if s > 0 and text[s - 1] in "@/\\-":
                    continue
                if sum(1 for seg in d.group().split(".") if len(seg) >= 2) >= 2:  # not e.g, i.e, U.S
                    sc.add(s, end, "identifier")
        if "_" in text:
            end = 0
            i = text.find("_")
            while i != -1:
                if i >= end:
                    s = i
                    while s > 0 and _is_word_char(text[s - 1]):
                        s -= 1
                    e = i + 1
                    while e < len(text) and _is_word_char(text[e]):
                        e += 1
                    end = e
                    token = text[s:e]
                    if (s == 0 or text[s - 1] not in ".@/\\-") and (
                        _SNAKE_RE.fullmatch(token) or _DUNDER_RE.fullmatch(token)
                    ):
                        core = token.strip("_")
                        errorish = core.isupper() and not _ERROR_PARTS.isdisjoint(core.split("_"))
                        sc.add(s, e, "error" if errorish else "identifier")
                i = text.find("_", i + 1)
        end = 0
        mask = sc.mask
        for m in _CAMEL_ANCHOR_RE.finditer(text):
            if m.start() < end or mask[m.start()]:
                continue
            s = _expand_left(text, m.start(), _ALNUM_CHARS)
            while s < m.start() and text[s].isdigit():
                s += 1
            t = _CAMEL_TOKEN_RE.match(text, s)
            if t is None:
                continue
            end = t.end()
            w = t.group()
            if _bounded(text, s) and (end >= len(text) or not _is_word_char(text[end])) \
                    and not _NOT_CAMEL_RE.fullmatch(w):
                sc.add(s, end, "identifier")
        if "()" in text:
            i = text.find("()")
            while i != -1:
                s = i
                while s > 0 and _is_word_char(text[s - 1]):
                    s -= 1
                if s < i and not text[s].isdigit() and (s == 0 or text[s - 1] != "."):
                    sc.add(s, i, "identifier")
                i = text.find("()", i + 2)

    def _quantities(self, sc: _Scan) -> None:
        text, low, stop = sc.text, sc.low, self._stop
        if _CURRENCY_HINT_RE.search(text) is not None:
            for m in _CURRENCY_RE.finditer(text):
                if _bounded(text, m.start()):
                    key = m.group().replace(" ", "").replace("\t", "").replace(",", "").casefold()
                    sc.add(m.start(), m.end(), "quantity", key)
        mask = sc.mask
        for a in sc.digits:
            if mask[a]:
                continue
            qm = _QTY_RE.match(text, a)
            if qm is None:
                continue
            surface = qm.group()
            unit = qm.group("unit")
            if unit is not None:
                lu = unit.casefold()
                number = surface[: len(surface) - len(unit)].strip()
                if lu in stop or lu in _NUMBER_WORDS or lu in _MONTH_WORDS or not _plausible_unit(unit, number):
                    continue
                if _after_name(text, a, stop):
                    continue  # a version or a number in a title, not a count
                sc.add(a, qm.end(), "quantity", _qty_key(surface))
            elif qm.group("hyph") is not None:
                sc.add(a, qm.end(), "quantity", surface.replace(",", "").casefold())
            else:  # percent or attached unit
                sc.add(a, qm.end(), "quantity", _qty_key(surface))
        for w in sc.words & _NUMBER_WORD_SET:
            for p in _positions(low, w):
                wm = _WORD_QTY_RE.match(low, p)
                if wm is None:
                    continue
                unit = text[wm.start(1):wm.end(1)]
                lu = unit.casefold()
                if lu in stop or lu in _NUMBER_WORDS or not _plausible_unit(unit, w):
                    continue
                sc.add(p, wm.end(), "quantity", f"{_NUMBER_WORDS[w]} {fold_key(lu)}")

    def _names(self, sc: _Scan) -> None:
        text, mask, stop, found = sc.text, sc.mask, self._stop, sc.found
        for seq in _NAME_SEQ_RE.finditer(text):
            ss, se = seq.span()
            w = seq.group()
            if " " not in w and "\t" not in w:  # fast path: one capitalised word
                lw = w.casefold()
                is_acr = w[:-1].isupper()
                if is_acr and lw[-1] == "s" and len(lw) > 2:
                    lw = lw[:-1]
                if lw in stop or mask.find(1, ss, se) != -1 or (is_acr and _shouted(lw)):
                    continue
                if _is_common_word(lw) and _sentence_start(text, ss):
                    continue  # "Painting is fun": a common word capitalised by the sentence
                found.append((ss, se, "name", w, fold_key(w)))
                continue
            # Split the run of capitalised words at stopwords and claimed characters.
            segments: list[list[tuple[int, int, str]]] = [[]]
            prev_acr = False
            for tok in _NAME_TOKEN_RE.finditer(text, ss, se):
                ts, te = tok.span()
                w = tok.group()
                lw = w.casefold()
                is_acr = w[:-1].isupper()
                if is_acr and lw[-1] == "s" and len(lw) > 2:
                    lw = lw[:-1]
                if lw in stop or mask.find(1, ts, te) != -1 or (is_acr and _shouted(lw)):
                    if segments[-1]:
                        segments.append([])
                    continue
                if is_acr and prev_acr and segments[-1]:
                    segments.append([])  # "MP3 GPT-4": two acronyms in a row are two entities
                prev_acr = is_acr
                segments[-1].append((ts, te, lw))
            if not segments[-1]:
                segments.pop()
            if not segments:
                continue
            # A sentence opener is usually a common word that happens to be capitalised.
            if _sentence_start(text, ss):
                first = segments[0]
                while first and first[0][2] in _SENTENCE_COMMON:
                    first.pop(0)
                if len(first) == 1 and _is_common_word(first[0][2]):
                    first.pop(0)
            for seg in segments:
                if not seg:
                    continue
                if len(seg) > _MAX_NAME_WORDS:
                    continue  # a title-cased heading or line, not a name
                ps, pe = seg[0][0], seg[-1][1]
                if len(seg) >= 3 and _SHOUT_RE.fullmatch(text, ps, pe):
                    continue  # an all-caps run of 3+ words is shouting, not a name
                surface = text[ps:pe]
                found.append((ps, pe, "name", surface, fold_key(surface)))

    @staticmethod
    def _quoted(sc: _Scan) -> None:
        text = sc.text
        exact = {(t[0], t[1]) for t in sc.found}
        hits: list[re.Match[str]] = []
        if _DQUOTE_HINT_RE.search(text) is not None:
            hits.extend(_QUOTE_RE.finditer(text))
        if "'" in text or "‘" in text:
            hits.extend(_SQUOTE_RE.finditer(text))
        for m in hits:
            group = m.lastgroup or ""
            inner = m.group(group).strip()
            if not inner or not any(c.isalnum() for c in inner):
                continue
            if m.span(group) in exact:
                continue  # `config.yaml` is already a path; the quote adds nothing
            sc.found.append((m.start(), m.end(), "quoted", inner, fold_key(inner)))
