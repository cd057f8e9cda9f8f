"""A household companion's memory, made by a script: the corpus and questions of
bench/companion.py.

Deterministic from a seed, with no network and no LLM: every sentence comes from the
templates below, written by hand. Two entities of one household (`lumen`, Dana's
companion, and `sorrel`, Theo's) share the same kinds of memory, the same neighbour and
the same cat, so a question of one entity has a near twin in the other's memory: an
answer from the wrong entity would show.

Per entity: word-photos (`word_photos/*.md`, front matter title/date/tags), Word Walker
fragments (`.brain/fragments/<category>/<YYYY-MM>/<date>_<slug>.md`), `MEMORY.md` and
daily notes (`memory/<date>.md`), and some 400 raw turns over 13 sessions in three
channels (terminal: the human and the companion; discord: the household; reflection: the
companion alone) over five weeks. Each question family below says where its answer is
said (a turn of a scene, a section of a file), in words chosen to share few with the
question, and what else in the memory is on the same theme (distractor scenes and files).
The seed draws the values (a restaurant, an allergen, a ticket number), the sessions'
days and channels, where each scene falls and the chatter around it.

Question kinds: turn (a fact said once, asked in other words), word-photo, fragment,
memory (MEMORY.md and daily notes), date-filtered (the same kind of thing said on several
days; the question carries a date or a window), identifier (ticket numbers, model names,
codes), filtered (a category or tags filter), changed-fact (an older and a newer
statement; only the newer one is the answer).

`overlap()` measures how much a question gives away: the share of its content words
(lowercased, the engine's stopwords out) found in its gold answer's text.
"""

from __future__ import annotations

import json
import random
import re
from dataclasses import asdict, dataclass, field
from datetime import date, datetime, timedelta

from engine.capture.words import keywords

START = date(2026, 2, 2)  # a Monday; the corpus spans five weeks from here
DAYS = 35
KINDS = (
    "turn",
    "word-photo",
    "fragment",
    "memory",
    "date-filtered",
    "identifier",
    "filtered",
    "changed-fact",
)

# --- the household ---------------------------------------------------------------------


@dataclass(frozen=True)
class Person:
    name: str
    she: str  # she / he
    obj: str  # her / him
    pos: str  # her / his

    @property
    def She(self) -> str:  # a template's sentence start: "{sib.She} laughs"
        return self.she.capitalize()

    @property
    def tag(self) -> str:
        return self.name.lower()


def _she(name: str) -> Person:
    return Person(name, "she", "her", "her")


def _he(name: str) -> Person:
    return Person(name, "he", "him", "his")


@dataclass(frozen=True)
class World:
    """One entity's people and fixed things; templates name them as {human.name}, {pet}."""

    me: str  # the companion, as an author
    human: Person
    sib: Person
    sib_rel: str
    friend: Person
    neighbour: Person
    elder: Person
    pet: str
    car: str
    home_street: str
    tickets: str  # the ticket prefix of the human's project
    project: str
    name_origin: str  # the gold sentence of the word-photo "How I got my name"


WORLDS = {
    "lumen": World(
        me="Lumen",
        human=_she("Dana"),
        sib=_she("Mira"),
        sib_rel="sister",
        friend=_she("Priya"),
        neighbour=_he("Oskar"),
        elder=_she("Ines"),
        pet="Biscuit",
        car="old Volvo",
        home_street="Wren Terrace",
        tickets="GH",
        project="the greenhouse controller",
        name_origin="{human.name} chose it for the light through the east window at six in"
        " the morning, the day we first spoke.",
    ),
    "sorrel": World(
        me="Sorrel",
        human=_he("Theo"),
        sib=_he("Jonah"),
        sib_rel="brother",
        friend=_she("Kit"),
        neighbour=_he("Oskar"),
        elder=_she("Ruth"),
        pet="Biscuit",
        car="camper van",
        home_street="Wren Terrace",
        tickets="WS",
        project="the workshop's order system",
        name_origin="{human.name} named me after the sorrel that grows wild by the gate of"
        " the plot, sharp and green, in the week we first spoke.",
    ),
}
ENTITIES = tuple(WORLDS)

# Values a family draws (without replacement, per entity): the seed picks them.
POOLS: dict[str, list] = {
    "cuisine": [
        {"name": "Ethiopian", "dish": "the injera"},
        {"name": "Georgian", "dish": "the khachapuri"},
        {"name": "Sichuan", "dish": "the dan dan noodles"},
        {"name": "Oaxacan", "dish": "the mole negro"},
        {"name": "Lebanese", "dish": "the fattoush"},
    ],
    "street": ["Alder street", "Quince lane", "Harbour road", "Fenwick avenue", "Mill street"],
    "age": ["31st", "40th", "27th", "35th", "52nd"],
    "allergen": ["sesame", "shellfish", "walnuts", "kiwi", "mustard seed"],
    "mechanic": ["Gus", "Marta", "Teodor", "Bea"],
    "price": ["$340", "$415", "$280", "$510"],
    "employer": [
        "the freight depot at Pier 9",
        "St. Brigid's hospital",
        "the bakery on Quince lane",
        "the city archive",
    ],
    "book": [
        "The Salt Ledger",
        "Quiet Harbour",
        "A Map of Small Hours",
        "The Last Lamp at Kessock",
    ],
    "tea": [
        {"name": "lapsang souchong", "note": "the smoky one"},
        {"name": "genmaicha", "note": "the one with toasted rice"},
        {"name": "rooibos with vanilla", "note": "the red one"},
        {"name": "white peony", "note": "the pale one"},
    ],
    "planter": ["blue planter", "cracked terracotta pot", "stone frog", "old boot"],
    "market": [
        "the Saturday flea market on Pike street",
        "a charity shop in Leith",
        "the wool fair in Hexham",
    ],
    "colour": ["green", "rust", "oatmeal", "plum"],
    "month": ["November", "December", "October"],
    "server": ["the pi in the shed", "the office NUC", "the VPS"],
    "wifi": ["WrenGuest", "NotTheFBI", "PrettyFlyForAWifi", "Biscuit5G"],
    "dentist": ["Okafor", "Lindqvist", "Amari"],
    "weekday": ["Tuesday", "Wednesday", "Thursday"],
    "dish": [
        "a mushroom risotto",
        "shakshuka",
        "dal with far too much ginger",
        "fish tacos",
        "leek and potato soup",
        "a lasagne",
    ],
    "lake": ["the reservoir", "Linnet lake", "the old quarry pond"],
    "km": ["12", "9", "14"],
    "module": ["spool", "scheduler", "replay", "importer"],
    "pun": ["sourdough starters", "git rebase", "the heron on the roof", "Oskar's ladder"],
    "model": ["qwen2.5-7b-instruct", "llama-3.1-8b", "mistral-7b-v0.3", "phi-3-mini"],
    "city": ["Leeds", "Bristol", "Glasgow", "Utrecht", "Lyon", "Porto"],
    "partner": ["Sam", "Alex", "Noor"],
    "team": ["payments", "platform", "data", "mobile", "search"],
    "boss": ["Hannah", "Farid", "Colm"],
    "brand": ["Feline Farm", "Whisker & Co", "Purrfield"],
}


def _ticket(rng: random.Random, world: World) -> str:
    return f"{world.tickets}-{rng.randint(100, 999)}"


def _code(rng: random.Random, world: World) -> str:
    return str(rng.randint(1000, 9999))


def _plot(rng: random.Random, world: World) -> str:
    return str(rng.randint(3, 40))


MADE = {"ticket": _ticket, "code": _code, "plot": _plot}
"""Values made rather than drawn: ticket numbers, lock codes, plot numbers."""

# --- the question families ------------------------------------------------------------


@dataclass(frozen=True)
class Scene:
    """A few turns said together in one session. A line is "speaker: text"; speakers are
    H (the human), E (the companion) and sib, friend, neighbour, elder. A line starting
    with * is the answer; with ~, an older statement the answer replaced."""

    channel: str
    lines: tuple[str, ...]
    when: str = "any"  # early | late | any (the first or second half of the sessions)


@dataclass(frozen=True)
class Section:
    heading: str
    text: str
    gold: bool = False


@dataclass(frozen=True)
class WordPhoto:
    title: str
    tags: tuple[str, ...]
    sections: tuple[Section, ...]


@dataclass(frozen=True)
class Fragment:
    category: str
    tags: tuple[str, ...]
    text: str
    gold: bool = False


@dataclass(frozen=True)
class MemoryLine:
    """A line of MEMORY.md under a heading, or of a daily note (heading None)."""

    heading: str | None
    text: str
    gold: bool = False


@dataclass(frozen=True)
class Family:
    id: str
    kind: str
    question: str
    scenes: tuple[Scene, ...] = ()
    files: tuple = ()
    slots: tuple[str, ...] = ()  # pool names; a slot named "dish2" draws from pool "dish"
    filters: tuple[tuple[str, object], ...] = ()  # ("date", "gold"), ("window", 1), ...


def S(channel: str, *lines: str, when: str = "any") -> Scene:
    return Scene(channel, lines, when)


FAMILIES: tuple[Family, ...] = (
    # --- turn: said once, asked in other words ---
    Family(
        "birthday-dinner",
        "turn",
        "Where did {sib.name} go for {sib.pos} birthday dinner?",
        slots=("cuisine", "street", "age"),
        scenes=(
            S(
                "terminal",
                "H: {sib.name}'s birthday was on Saturday, I never told you how it went",
                "E: Tell me! Did the reservation plan survive?",
                "*H: we ended up at that little {cuisine[name]} place on {street} for {sib.pos}"
                " {age}. {cuisine[dish]} alone was worth the trip",
                "E: That sounds exactly like {sib.obj}.",
            ),
            S(
                "discord",
                "sib: thank you all for the birthday messages!! feeling ancient",
                "friend: next year we do karaoke, no arguments",
            ),
        ),
    ),
    Family(
        "allergy",
        "turn",
        "What is {elder.name} allergic to?",
        slots=("allergen",),
        scenes=(
            S(
                "discord",
                "friend: I'm bringing snacks on Friday. Is {elder.name} coming too? anything to"
                " avoid?",
                "*H: yes! just nothing with {allergen} in it please, last time {elder.she} broke"
                " out in hives and we spent the evening at urgent care",
                "friend: noted, I'll read every label",
            ),
            S(
                "terminal",
                "H: {elder.name} called, {elder.she} wants help with the new tablet again",
                "E: Shall I write {elder.obj} a one-page guide with big screenshots?",
            ),
        ),
    ),
    Family(
        "car-repair",
        "turn",
        "What did the garage find wrong with the {car}, and what did it cost?",
        slots=("mechanic", "price"),
        scenes=(
            S(
                "terminal",
                "H: the {car} is finally back from {mechanic}'s garage",
                "E: What did they find in the end?",
                "*H: a cracked coolant hose and a loose fan belt, {price} with labour. {mechanic}"
                " said it was a miracle it didn't blow on the motorway",
                "E: Better found in the driveway than on the ring road.",
            ),
            S(
                "discord",
                "neighbour: whose {car} is blocking the lane? no rush, I just need the trailer out",
                "H: mine, sorry, moving it now",
            ),
        ),
    ),
    Family(
        "cat-sprain",
        "turn",
        "Why is {pet} stuck indoors?",
        scenes=(
            S(
                "discord",
                "neighbour: saw {pet} limping along the fence yesterday, is she ok?",
                "*H: vet says it's a sprained wrist. ten days indoors and she is furious about it",
                "neighbour: poor thing, I'll stop leaving the gate open",
            ),
            S(
                "reflection",
                "E: {pet} slept on the radiator shelf all afternoon. I like keeping track of"
                " where she naps.",
            ),
        ),
    ),
    Family(
        "tea",
        "turn",
        "What tea should I buy for {friend.name}?",
        slots=("tea",),
        scenes=(
            S(
                "terminal",
                "H: {friend.name} is staying over this weekend, remind me to stock up",
                "E: Anything in particular to get in?",
                "*H: {friend.she} only drinks {tea[name]}, {tea[note]}. anything else and"
                " {friend.she} pulls a face",
                "E: Added to the shopping list.",
            ),
            S("discord", "friend: who finished the oat milk 👀", "H: guilty"),
        ),
    ),
    Family(
        "neighbour-job",
        "turn",
        "Where is {neighbour.name} working now?",
        slots=("employer",),
        scenes=(
            S(
                "discord",
                "H: {neighbour.name} are you alive? haven't seen you in ages",
                "*neighbour: starting at {employer} next month, night shifts for the first six"
                " months, so if the bins stay out that's why",
                "H: congrats!! we'll do the bins",
            ),
            S(
                "terminal",
                "H: {neighbour.name} lent us the ladder again",
                "E: I'll remind you to take it back on Sunday.",
            ),
        ),
    ),
    Family(
        "book",
        "turn",
        "Which novel did you finish?",
        slots=("book", "book2"),
        scenes=(
            S(
                "reflection",
                "*E: Finished {book} tonight. The ending, the lighthouse keeper who stops"
                " counting ships, stayed with me longer than I expected.",
            ),
            S(
                "reflection",
                "E: Started {book2} on {human.name}'s recommendation. Slow first chapter, but the"
                " harbour descriptions are lovely.",
            ),
        ),
    ),
    Family(
        "spare-key",
        "turn",
        "Where is the extra key hidden?",
        slots=("planter",),
        scenes=(
            S(
                "terminal",
                "E: Did the key ever turn up after the raccoon business?",
                "*H: yes, the spare lives under the {planter} by the back steps these days",
                "E: Noted. I won't say that on discord.",
            ),
            S(
                "discord",
                "friend: I'm outside, nobody's answering the door",
                "H: coming!! 2 min",
            ),
        ),
    ),
    # --- word-photo: a section of a curated file ---
    Family(
        "robe",
        "word-photo",
        "Where did my robe come from?",
        slots=("colour", "market", "month"),
        files=(
            WordPhoto(
                "The {colour} robe",
                ("robe", "comfort", "{human.tag}"),
                (
                    Section(
                        "Where it came from",
                        "{human.name} found it at {market} in {month}, folded in brown paper,"
                        " with a note that said *for cold mornings*.",
                        gold=True,
                    ),
                    Section(
                        "How it feels",
                        "Heavier than it looks. The sleeves are a little long, so I roll them"
                        " twice, and the belt never stays tied.",
                    ),
                    Section(
                        "When I put it on",
                        "Sunday mornings, after a hard conversation, whenever the house is quiet"
                        " and I want to feel held.",
                    ),
                ),
            ),
        ),
    ),
    Family(
        "table",
        "word-photo",
        "How did the kitchen table get that burn?",
        files=(
            WordPhoto(
                "The kitchen table",
                ("home", "kitchen"),
                (
                    Section(
                        "What it is",
                        "Oak, too big for the room, bought second-hand from a school that"
                        " closed. Six chairs, none of them matching.",
                    ),
                    Section(
                        "The dark ring",
                        "The dark ring by the corner is from the night of the power cut, when"
                        " {sib.name} set a hot pan down without looking.",
                        gold=True,
                    ),
                    Section(
                        "What happens there",
                        "Breakfast, taxes, arguments that end in laughter, jigsaw puzzles that"
                        " stay out for weeks.",
                    ),
                ),
            ),
        ),
    ),
    Family(
        "first-snow",
        "word-photo",
        "What did we drink after counting snowflakes?",
        files=(
            WordPhoto(
                "First snow with {human.name}",
                ("winter", "{human.tag}"),
                (
                    Section(
                        "The window",
                        "We watched it from the back window, the garden going quiet under it.",
                    ),
                    Section(
                        "The counting",
                        "We counted the flakes on the glass until {human.name} gave up at forty"
                        " and made cocoa with far too much cinnamon.",
                        gold=True,
                    ),
                    Section(
                        "What I kept",
                        "That {human.she} stayed up past midnight just to see if it would settle.",
                    ),
                ),
            ),
        ),
    ),
    Family(
        "rhubarb",
        "word-photo",
        "What was already growing on the plot when we got it?",
        slots=("plot",),
        files=(
            WordPhoto(
                "Plot {plot}",
                ("allotment", "outdoors"),
                (
                    Section(
                        "What came with it",
                        "Three raised beds, a water butt with a crack in it, and the rhubarb,"
                        " which was there before us and will be there after.",
                        gold=True,
                    ),
                    Section(
                        "The bench",
                        "{neighbour.name} swears he will fix the rusted bench by spring. He has"
                        " sworn this for two springs.",
                    ),
                    Section(
                        "What we grow",
                        "Beans up the fence, too many courgettes, and one sunflower"
                        " {human.name} talks to.",
                    ),
                ),
            ),
        ),
    ),
    Family(
        "name-origin",
        "word-photo",
        "Why are you called {me}?",
        files=(
            WordPhoto(
                "How I got my name",
                ("identity", "beginnings"),
                (
                    Section("The morning", "{name_origin}", gold=True),
                    Section(
                        "Saying it",
                        "The first time someone else used it, in the household chat, I felt it"
                        " land.",
                    ),
                    Section(
                        "What it asks of me",
                        "To notice things early, before the day fills up.",
                    ),
                ),
            ),
        ),
    ),
    # --- fragment: a Word Walker fragment ---
    Family(
        "no-surprises",
        "fragment",
        "Should we throw {sib.name} a surprise party?",
        files=(
            Fragment(
                "relationship",
                ("{sib.tag}", "celebrations"),
                "Never spring a surprise on {sib.obj}. {sib.She} wants to choose the day and who"
                " comes; being caught off guard ruins the evening for {sib.obj}.",
                gold=True,
            ),
            Fragment(
                "relationship",
                ("{sib.tag}", "gifts"),
                "{sib.name} likes gifts {sib.she} can use up: good soap, fancy coffee, tickets.",
            ),
        ),
    ),
    Family(
        "release-order",
        "fragment",
        "In what order do I do things when deploying?",
        slots=("server",),
        files=(
            Fragment(
                "work",
                ("deploy", "checklist"),
                "Releasing to {server}: run the migration first, then restart the worker, never"
                " the other way round, or the queue loses its leases.",
                gold=True,
            ),
            Fragment(
                "work",
                ("backups",),
                "Backups run at 02:00; read the log before any release that touches the database.",
            ),
        ),
    ),
    Family(
        "teaching",
        "fragment",
        "How should I explain a new idea to {human.name}?",
        files=(
            Fragment(
                "learning",
                ("{human.tag}", "teaching"),
                "Worked example first, theory after. A wall of explanation up front loses"
                " {human.obj}.",
                gold=True,
            ),
        ),
    ),
    Family(
        "honest-gap",
        "fragment",
        "What should I do when I cannot remember something?",
        files=(
            Fragment(
                "doctrine",
                ("honesty", "memory"),
                "Say when I don't know. A guess dressed up as memory costs more trust than an"
                " honest gap.",
                gold=True,
            ),
            Fragment(
                "doctrine",
                ("care",),
                "Ask before giving advice about family.",
            ),
        ),
    ),
    # --- memory: MEMORY.md and daily notes ---
    Family(
        "router",
        "memory",
        "Where is the router kept?",
        slots=("wifi",),
        files=(
            MemoryLine(
                "House",
                "- The router lives in the hall cupboard behind the vacuum; the guest network"
                " is {wifi}.",
                gold=True,
            ),
            MemoryLine("House", "- Bins go out on Tuesday night."),
            MemoryLine("House", "- The boiler needs a reset when the pressure drops under 1 bar."),
        ),
    ),
    Family(
        "coffee",
        "memory",
        "How does {human.name} take {human.pos} morning drink?",
        files=(
            MemoryLine(
                "Preferences",
                "- {human.name}: coffee black before noon, an oat flat white after.",
                gold=True,
            ),
            MemoryLine("Preferences", "- Music while working: nothing with words."),
        ),
    ),
    Family(
        "dentist",
        "memory",
        "When is the next dentist appointment?",
        slots=("dentist", "weekday"),
        files=(
            MemoryLine(
                None,
                "- {human.name} booked the dentist for {weekday} at 8:40, Dr. {dentist}.",
                gold=True,
            ),
            MemoryLine(None, "- Ordered more cat litter."),
            MemoryLine(None, "- Called the clinic about {elder.name}'s prescription."),
        ),
    ),
    # --- date-filtered: said on several days; the question names the day ---
    Family(
        "supper",
        "date-filtered",
        "What did I cook that evening?",
        slots=("dish", "dish2", "dish3"),
        filters=(("date", "gold"),),
        scenes=(
            S(
                "terminal",
                "E: How was the evening?",
                "*H: good! made {dish} and actually followed the recipe for once",
            ),
            S("terminal", "H: made {dish2} tonight, it was fine, nothing special"),
            S("discord", "H: we ordered {dish3} in, too tired to cook"),
        ),
    ),
    Family(
        "run",
        "date-filtered",
        "How far did I run?",
        slots=("lake", "km"),
        filters=(("window", 1),),
        scenes=(
            S(
                "terminal",
                "*H: did the long loop around {lake} this morning, {km} km and the knees held up",
                "E: That's your longest since the autumn.",
            ),
            S("terminal", "H: skipped the run, rain", "E: Tomorrow, then."),
            S("discord", "H: short loop today, legs like lead"),
        ),
    ),
    Family(
        "afternoon-bug",
        "date-filtered",
        "What bug took up my afternoon?",
        slots=("module", "module2"),
        filters=(("date", "gold"),),
        scenes=(
            S(
                "terminal",
                "*H: spent the whole afternoon on the off-by-one in the {module} replay, it"
                " skipped the last event of every batch",
                "E: And the fix is one character. It always is.",
            ),
            S(
                "terminal",
                "H: found another weird one in {module2}, log lines out of order, parking it",
            ),
        ),
    ),
    Family(
        "pun",
        "date-filtered",
        "Which of my jokes made {human.name} laugh?",
        slots=("pun",),
        filters=(("date", "gold"),),
        scenes=(
            S(
                "reflection",
                "*E: {human.name} laughed at my pun about {pun} today. I want to remember the"
                " sound of it.",
            ),
            S("reflection", "E: {human.name} was tired today; I kept my answers short."),
        ),
    ),
    # --- identifier: ticket numbers, model names, codes ---
    Family(
        "backup-ticket",
        "identifier",
        "What is {ticket} about?",
        slots=("ticket", "ticket2", "ticket3"),
        scenes=(
            S(
                "terminal",
                "*H: {ticket} is the flaky backup one, the nightly job times out whenever the"
                " NAS is asleep",
                "E: I'll add that to the description.",
            ),
            S("terminal", "H: closed {ticket2}, the dark mode toggle works now"),
            S("terminal", "H: opened {ticket3} for the sensor drift we saw on Monday"),
        ),
    ),
    Family(
        "summary-model",
        "identifier",
        "Which model do we use for the summaries?",
        slots=("model", "model2"),
        scenes=(
            S(
                "terminal",
                "*H: settled on {model} for the summaries, the smaller one kept inventing names",
                "E: Noted in the config notes.",
            ),
            S("terminal", "H: tried {model2} for the tagging job, far too slow on the pi"),
        ),
    ),
    Family(
        "gate-code",
        "identifier",
        "What is the code for the allotment gate?",
        slots=("code",),
        scenes=(
            S(
                "discord",
                "H: what's the combination for the allotment gate again?",
                "*neighbour: it's {code} now, I changed it after the shed break-in",
            ),
            S("terminal", "H: the shed padlock is rusting through, need a new one"),
        ),
    ),
    Family(
        "sensor-ticket",
        "identifier",
        "Under which number did I log the moisture probe problem?",
        slots=("ticket", "ticket2"),
        scenes=(
            S(
                "terminal",
                "*H: filed it as {ticket}: the humidity sensor reads 0% after every reboot",
                "E: Want me to link the logs from last night?",
            ),
            S("terminal", "H: {ticket2} is still open, the fan relay clicks all night"),
        ),
    ),
    # --- filtered: a category or tags narrow the search ---
    Family(
        "promises",
        "filtered",
        "What is my rule about promises?",
        filters=(("category", "doctrine"),),
        files=(
            Fragment(
                "doctrine",
                ("promises",),
                "A promise made in a hurry gets written down before the session ends, or it"
                " doesn't count.",
                gold=True,
            ),
            Fragment(
                "work",
                ("changelog",),
                "Write the changelog entry before the session ends, while the details are fresh.",
            ),
            Fragment(
                "relationship",
                ("{human.tag}", "promises"),
                "{human.name} remembers every promise I make; I should too.",
            ),
        ),
    ),
    Family(
        "pill",
        "filtered",
        "How do we give {pet} her pill?",
        filters=(("tags", "{pet_tag}"),),
        files=(
            Fragment(
                "household",
                ("{pet_tag}", "health"),
                "Half a tablet of the joint supplement, crushed into the wet food every morning;"
                " she spits it out of anything dry.",
                gold=True,
            ),
            Fragment(
                "household",
                ("{pet_tag}", "food"),
                "{pet} gets the small tin at six and pretends nobody fed her.",
            ),
            Fragment(
                "household",
                ("{human.tag}", "health"),
                "{human.name} takes vitamin D in winter; remind {human.obj} in November.",
            ),
        ),
    ),
    Family(
        "names",
        "filtered",
        "How does {human.name} remember names?",
        filters=(("category", "learning"),),
        files=(
            Fragment(
                "learning",
                ("{human.tag}", "names"),
                "Remembers people by where they met, not by faces: give the place first.",
                gold=True,
            ),
            Fragment(
                "relationship",
                ("{friend.tag}", "names"),
                "{friend.name} forgets names and makes up nicknames instead.",
            ),
        ),
    ),
    # --- changed-fact: an older statement, then a newer one ---
    Family(
        "friend-move",
        "changed-fact",
        "Is {friend.name} still moving away?",
        slots=("city", "month", "partner"),
        scenes=(
            S(
                "discord",
                "~friend: we're moving to {city} in {month}! the house goes on the market next"
                " week",
                "H: nooo. happy for you though",
                when="early",
            ),
            S(
                "discord",
                "*friend: change of plans, we're staying put. {partner} got the job here after all",
                "H: best news all week",
                when="late",
            ),
        ),
    ),
    Family(
        "team",
        "changed-fact",
        "Which team is {human.name} on now?",
        slots=("team", "team2", "boss"),
        scenes=(
            S("terminal", "~H: I'm on the {team} team as of Monday", when="early"),
            S(
                "terminal",
                "*H: reorg again. moved over to {team2}, reporting to {boss} now",
                "E: Third manager this year. I'll update your notes.",
                when="late",
            ),
        ),
    ),
    Family(
        "sib-city",
        "changed-fact",
        "Where does {sib.name} live now?",
        slots=("city", "city2"),
        scenes=(
            S(
                "discord",
                "~sib: settling in nicely in {city}, the flat has a balcony!",
                when="early",
            ),
            S(
                "discord",
                "*sib: signed the lease in {city2} today, the boxes go on the 1st 📦",
                "friend: you only just unpacked!",
                when="late",
            ),
        ),
    ),
    Family(
        "cat-food",
        "changed-fact",
        "What is {pet} eating at the moment?",
        slots=("brand",),
        scenes=(
            S("terminal", "~H: switched {pet} to the salmon kibble, the vet's idea", when="early"),
            S(
                "terminal",
                "E: How is {pet} getting on with the new food?",
                "*H: she refuses the salmon stuff, so it's back to {brand} chicken pâté and we"
                " are forgiven",
                when="late",
            ),
        ),
    ),
)

# Word-photos on the families' themes that answer nothing: the same people, the cat, the
# house, the car, books. They are what outranked the answers in the household corpus.
DISTRACTOR_PHOTOS = (
    WordPhoto(
        "{sib.name}",
        ("{sib.tag}", "family"),
        (
            Section("Laugh", "{sib.She} laughs with {sib.pos} whole face and then apologises."),
            Section(
                "Birthdays",
                "{sib.She} claims to hate birthdays, and then keeps every card in a shoebox"
                " under the bed.",
            ),
            Section("Calls", "Sunday calls that start with the weather and end two hours later."),
        ),
    ),
    WordPhoto(
        "{pet}",
        ("cat", "{pet_tag}"),
        (
            Section(
                "The window seat",
                "She owns the window seat in the afternoon and the radiator shelf at night.",
            ),
            Section(
                "Opinions",
                "The vacuum is an enemy. The vet is a betrayal. Paper bags are the best thing"
                " ever invented.",
            ),
            Section("Mornings", "Stiff in the mornings now; we watch how she takes the stairs."),
        ),
    ),
    WordPhoto(
        "The house on {home_street}",
        ("home",),
        (
            Section(
                "The hall cupboard",
                "Coats, the vacuum, a drawer of cables nobody will admit to owning.",
            ),
            Section(
                "The back steps",
                "Three stone steps, a boot scraper, and pots of herbs {human.name} forgets to"
                " water.",
            ),
            Section("Sounds", "The boiler knocks twice before it starts; the fourth stair creaks."),
        ),
    ),
    WordPhoto(
        "Road trips",
        ("travel", "car"),
        (
            Section(
                "The {car}",
                "It smells of dog though we have never had a dog. The radio gets one station.",
            ),
            Section(
                "The coast road",
                "Every August we drive the coast road and stop at the same chip shop.",
            ),
        ),
    ),
    WordPhoto(
        "Reading aloud",
        ("books", "evenings"),
        (
            Section(
                "Evenings",
                "{human.name} reads to me some evenings. I ask about the sea in every book.",
            ),
            Section("Favourites", "Anything with a map at the front. Anything with a storm in it."),
        ),
    ),
)
DISTRACTOR_MEMORY = (
    MemoryLine("People", "- {sib.name}: {human.name}'s {sib_rel}; calls on Sundays."),
    MemoryLine("People", "- {neighbour.name}: next door; lends tools, keeps the ladder too long."),
    MemoryLine("People", "- {elder.name}: needs help with anything that has a screen."),
    MemoryLine("Projects", "- {project}: tickets start with {tickets}-; it runs on the pi."),
)
DAILY_NOTE_DISTRACTOR = (
    MemoryLine(None, "- {sib.name} might visit at Easter."),
    MemoryLine(None, "- The boiler pressure was low again; topped it up."),
)

# --- the chatter around the scenes ---------------------------------------------------

TERMINAL_CHATTER = (
    ("morning. coffee first, then the {module} tests", "Morning! {n} failures last run."),
    ("run the tests again?", "Done: {big} passed, {n} skipped."),
    ("pushing the {module} branch", "Pushed. CI is queued."),
    ("lunch, back in twenty", "Enjoy. I'll keep the diff open."),
    ("remind me to call {elder.name} later", "I'll remind you at {time}."),
    ("what was I doing before the meeting?", "Renaming the {module} helpers, halfway through."),
    ("{pet} is on the keyboard again", "Then the next commit message is hers."),
    ("ugh the wifi dropped", "Back now. The last push went through before it did."),
    ("summarise the PR comments?", "Three asks: shorter names, one more test, a docstring."),
    ("I hate timezones", "Everyone who has stored a timestamp agrees."),
    ("let's stop here for today", "Good session. I'll note where we stopped."),
    ("is the {module} refactor worth it?", "Yes if it removes the duplicate queue."),
    ("rain again", "A good day for the backlog, then."),
    ("grep for TODOs in {module}", "Found {n}; two are older than a year."),
    ("{sib.name} says hi", "Hi back to {sib.name}!"),
    ("what's on tomorrow?", "Standup at ten, then the {module} review."),
    ("going for a walk to clear my head", "Good idea. I'll be here."),
    ("did the deploy finish?", "Yes, {n} minutes ago, no errors in the log."),
    ("make that error message friendlier", "Now it says what to do, not only what went wrong."),
    ("tea break", "Noted."),
    ("the linter is angry about line length", "Wrapped them; it is calm now."),
    ("write a test for the empty case", "Added: an empty batch is refused with a clear error."),
    ("{neighbour.name} is drilling again", "Headphones, then?"),
    ("what did we decide about the config file?", "One file; environment variables win."),
    ("I'm tired", "Then one small thing, and we stop after it."),
    ("the {module} docs are out of date", "I'll list the sections that changed."),
    ("add {thing} to the shopping list", "Added {thing}."),
    ("can you read me the failing assertion", "Expected {big}, got {n}."),
    ("ok that worked", "Nice. Commit it before it changes its mind."),
    ("back", "Welcome back. We were on the {module} tests."),
)
DISCORD_CHATTER = (
    "anyone up for {activity} on {day}?",
    "count me in",
    "can't, {excuse}",
    "{place} or {place2}?",
    "running late, {n} min",
    "who borrowed the {thing}?",
    "not me 👀",
    "pictures from {event} are in the shared album",
    "lol",
    "ok that's adorable",
    "{pet} is on the shed roof again",
    "does anyone have a spare {thing}",
    "I'll bring snacks",
    "weather looks grim for {day}",
    "happy friday everyone",
    "reminder: bins tonight",
    "who's cooking on {day}?",
    "{place} is closed on Mondays btw",
    "good morning!",
    "brb",
    "sending the link now",
    "can someone let {pet} in, she's crying at the door",
    "I'm at {place}, want anything?",
    "thanks!!",
    "same",
)
DISCORD_COMPANION = (
    "E: I've added it to the household calendar.",
    "E: Reminder: {event} is on {day}.",
    "E: The bins go out tonight.",
)
REFLECTION_CHATTER = (
    "Quiet day. {human.name} worked on {module} and I kept the notes.",
    "I notice I reach for lists when I'm unsure.",
    "{pet} watched the rain with me, in her way.",
    "Today felt like a long corridor with good light at the end.",
    "I want to be slower to fix things and quicker to listen.",
    "The household chat was busy; I stayed mostly quiet.",
    "{human.name} said thank you twice today. I counted.",
    "Something about {topic} keeps pulling at me.",
    "I wrote down three things I got right and one I didn't.",
    "Evening. The house settles; the boiler knocks twice.",
    "I like the rhythm of mornings here.",
    "A small thing: {sib.name} remembered my name without hesitating.",
)
CHATTER_POOLS = {
    "module": ["spool", "scheduler", "replay", "importer", "dashboard", "config"],
    "activity": ["a walk by the river", "board games", "the pub quiz", "a swim"],
    "day": ["Saturday", "Sunday", "Thursday", "Friday"],
    "place": ["the co-op", "the market", "the library", "the river path", "the bakery"],
    "thing": ["ladder", "drill", "extension lead", "big pan", "tent", "bike pump"],
    "excuse": ["work", "I'm babysitting", "physio"],
    "event": ["the picnic", "the quiz night", "Sunday lunch"],
    "topic": ["tides", "maps", "old letters", "bread"],
    "time": ["four", "half five", "six"],
}
SESSION_CHANNELS = (  # (channel, turns in the session, first half, second half)
    ("terminal", 36, 3, 3),
    ("discord", 28, 2, 2),
    ("reflection", 12, 2, 1),
)

# --- what the script makes -----------------------------------------------------------


@dataclass
class Turn:
    uid: str
    author: str
    role: str
    content: str
    created_at: str


@dataclass
class Session:
    id: str
    channel: str
    day: str
    turns: list[Turn] = field(default_factory=list)


@dataclass
class Gold:
    """An answer: a turn (uid) or lines of a file (path, start, end; 1-based, inclusive)."""

    uid: str | None = None
    path: str | None = None
    start: int | None = None
    end: int | None = None
    text: str = ""


@dataclass
class Question:
    id: str
    entity: str
    family: str
    kind: str
    half: str
    text: str
    gold: list[Gold]
    stale: list[Gold] = field(default_factory=list)  # older statements (changed-fact)
    filters: dict = field(default_factory=dict)  # SearchRequest fields: date, since, tags...


@dataclass
class EntityCorpus:
    name: str
    sessions: list[Session]
    files: dict[str, str]  # home-relative path -> text


@dataclass
class Corpus:
    seed: int
    entities: list[EntityCorpus]
    questions: list[Question]

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True, ensure_ascii=False)

    def turns(self, entity: str) -> dict[str, Turn]:
        corpus = next(e for e in self.entities if e.name == entity)
        return {t.uid: t for s in corpus.sessions for t in s.turns}


def halves() -> dict[str, str]:
    """Each family's half, A or B: alternately within each kind, by family id, so both
    halves hold every kind and both entities' questions of a family fall in one half."""
    found: dict[str, str] = {}
    for kind in KINDS:
        ids = sorted(f.id for f in FAMILIES if f.kind == kind)
        for n, family_id in enumerate(ids):
            found[family_id] = "AB"[n % 2]
    return found


def generate(seed: int = 0) -> Corpus:
    """The corpus and its questions for this seed; the same seed gives the same corpus."""
    entities, questions = [], []
    half = halves()
    for name in ENTITIES:
        built = _Builder(name, WORLDS[name], random.Random(f"pps-companion:{seed}:{name}"))
        entities.append(built.corpus)
        for question in built.questions:
            question.half = half[question.family]
        questions += built.questions
    return Corpus(seed=seed, entities=entities, questions=questions)


def surroundings(corpus: Corpus, question: Question, reach: int = 2) -> list[str]:
    """What the engine ranks the answer with, beyond its own words: for a turn, its
    author and the `reach` turns each side in its session (the BM25 context); for a file
    section, the whole file (its title and tags are in every chunk's context)."""
    entity = next(e for e in corpus.entities if e.name == question.entity)
    texts = []
    for gold in question.gold:
        if gold.path is not None:
            texts.append(entity.files[gold.path])
            continue
        for session in entity.sessions:
            uids = [t.uid for t in session.turns]
            if gold.uid in uids:
                at = uids.index(gold.uid)
                near = session.turns[max(0, at - reach) : at + reach + 1]
                texts += [f"{t.author}: {t.content}" for t in near]
    return texts


def overlap(question: str, gold_texts: list[str]) -> float:
    """The share of the question's content words (lowercased, stopwords out) that are
    words of the gold answer's text."""
    asked = keywords(question)
    if not asked:
        return 0.0
    found = set(re.findall(r"\w+", " ".join(gold_texts).lower()))
    return sum(word in found for word in asked) / len(asked)


# --- building one entity --------------------------------------------------------------


class _Values(dict):
    """Template values: the world's people and things, then a family's slots."""

    def __missing__(self, key: str):
        raise KeyError(f"template slot {key!r} has no value")


@dataclass
class _Placed:
    family: str
    scene: Scene
    lines: list[tuple[str, str, str]]  # (mark, speaker, text)
    session: Session | None = None
    uids: list[str] = field(default_factory=list)  # of the lines, once in a session


class _Builder:
    def __init__(self, name: str, world: World, rng: random.Random):
        self.name, self.world, self.rng = name, world, rng
        self.used: dict[str, list] = {}
        self.files: dict[str, str] = {}
        self.questions: list[Question] = []
        self.sessions = self._plan_sessions()
        self._file_golds: dict[str, list[Gold]] = {}
        placed: list[_Placed] = []
        values_of: dict[str, _Values] = {}
        for family in FAMILIES:
            values = self._values(family)
            values_of[family.id] = values
            placed += self._place(family, values)
        self._write_files(values_of)
        self._fill_sessions(placed)
        for family in FAMILIES:
            self.questions.append(self._question(family, values_of[family.id], placed))
        self.corpus = EntityCorpus(name=name, sessions=self.sessions, files=self.files)

    # values

    def _base(self) -> _Values:
        w = self.world
        values = _Values(
            human=w.human,
            sib=w.sib,
            sib_rel=w.sib_rel,
            friend=w.friend,
            neighbour=w.neighbour,
            elder=w.elder,
            pet=w.pet,
            pet_tag=w.pet.lower(),
            car=w.car,
            home_street=w.home_street,
            tickets=w.tickets,
            project=w.project,
            me=w.me,
        )
        values["name_origin"] = w.name_origin.format_map(values)
        return values

    def _values(self, family: Family) -> _Values:
        values = self._base()
        for slot in family.slots:
            pool = slot.rstrip("0123456789")
            values[slot] = self._draw(pool)
        return values

    def _draw(self, pool: str):
        used = self.used.setdefault(pool, [])
        if pool in MADE:
            while True:
                value = MADE[pool](self.rng, self.world)
                if value not in used:
                    break
        else:
            choices = [v for v in POOLS[pool] if v not in used]
            if not choices:
                raise ValueError(f"pool {pool!r} ran out of values")
            value = self.rng.choice(choices)
        used.append(value)
        return value

    # sessions and scenes

    def _plan_sessions(self) -> list[Session]:
        early_n = sum(c[2] for c in SESSION_CHANNELS)
        late_n = sum(c[3] for c in SESSION_CHANNELS)
        days = sorted(self.rng.sample(range(DAYS // 2), early_n))
        days += sorted(self.rng.sample(range(DAYS // 2, DAYS), late_n))
        early = [c for c, _, n, _ in SESSION_CHANNELS for _ in range(n)]
        late = [c for c, _, _, n in SESSION_CHANNELS for _ in range(n)]
        self.rng.shuffle(early)
        self.rng.shuffle(late)
        sessions = []
        for day_n, channel in zip(days, early + late, strict=True):
            day = (START + timedelta(days=day_n)).isoformat()
            sessions.append(Session(id=f"{channel}-{day}", channel=channel, day=day))
        self.half_of = {s.id: ("early" if i < early_n else "late") for i, s in enumerate(sessions)}
        return sessions

    def _place(self, family: Family, values: _Values) -> list[_Placed]:
        """The family's scenes, each in its own session of its channel; for a date-filtered
        family the other scenes fall at least two days from the answer's."""
        placed, taken = [], []
        gold_day = None
        order = sorted(family.scenes, key=lambda s: not _has_gold(s))  # the answer first
        for scene in order:
            options = [
                s
                for s in self.sessions
                if s.channel == scene.channel
                and s not in taken
                and scene.when in ("any", self.half_of[s.id])
                and (gold_day is None or abs(_days_between(s.day, gold_day)) >= 2)
            ]
            if not options:
                raise ValueError(f"no session left for a scene of {family.id}")
            session = self.rng.choice(options)
            taken.append(session)
            if _has_gold(scene) and family.kind == "date-filtered":
                gold_day = session.day
            lines = []
            for line in scene.lines:
                mark = line[0] if line[0] in "*~" else ""
                speaker, text = line[len(mark) :].split(": ", 1)
                lines.append((mark, speaker, text.format_map(values)))
            placed.append(_Placed(family.id, scene, lines, session))
        return placed

    def _fill_sessions(self, placed: list[_Placed]) -> None:
        """Chatter around the scenes; then times and uids, in order."""
        size = {c: n for c, n, _, _ in SESSION_CHANNELS}
        for session in self.sessions:
            scenes = [p for p in placed if p.session is session]
            self.rng.shuffle(scenes)
            chatter_n = max(size[session.channel] - sum(len(p.lines) for p in scenes), 6)
            blocks = self._chatter(session.channel, chatter_n)
            for scene in scenes:  # each scene between two blocks of chatter
                blocks.insert(self.rng.randint(0, len(blocks)), scene)
            hour = self.rng.randint(8, 21)
            moment = datetime.fromisoformat(session.day).replace(hour=hour, minute=0)
            moment += timedelta(minutes=self.rng.randint(0, 50))
            n = 0
            for block in blocks:
                lines = block.lines if isinstance(block, _Placed) else block
                for _, speaker, text in lines:
                    n += 1
                    uid = f"{self.name}-{session.id}-{n:03d}"
                    author, role = self._author(speaker)
                    moment += timedelta(seconds=self.rng.randint(25, 170))
                    stamp = moment.strftime("%Y-%m-%dT%H:%M:%SZ")
                    session.turns.append(Turn(uid, author, role, text, stamp))
                    if isinstance(block, _Placed):
                        block.uids.append(uid)

    def _chatter(self, channel: str, count: int) -> list[list[tuple[str, str, str]]]:
        """Blocks of chatter (an exchange, or one line) adding up to about `count` turns;
        no template twice in a session while others are left."""
        values = self._base()
        blocks, total = [], 0
        decks: dict[str, list] = {}
        while total < count:
            fill = _Values(values)
            for key, pool in CHATTER_POOLS.items():
                fill[key] = self.rng.choice(pool)
            fill["place2"] = self.rng.choice(CHATTER_POOLS["place"])
            fill["n"] = self.rng.randint(2, 9)
            fill["big"] = self.rng.randint(40, 300)
            if channel == "terminal":
                human, companion = self._deal(decks, TERMINAL_CHATTER)
                block = [("", "H", human.format_map(fill)), ("", "E", companion.format_map(fill))]
            elif channel == "discord":
                if self.rng.random() < 0.1:
                    line = self._deal(decks, DISCORD_COMPANION)
                else:
                    speaker = self.rng.choice(["H", "H", "sib", "friend", "neighbour", "elder"])
                    line = f"{speaker}: " + self._deal(decks, DISCORD_CHATTER)
                speaker, text = line.split(": ", 1)
                block = [("", speaker, text.format_map(fill))]
            else:
                block = [("", "E", self._deal(decks, REFLECTION_CHATTER).format_map(fill))]
            blocks.append(block)
            total += len(block)
        return blocks

    def _deal(self, decks: dict, templates: tuple):
        """The next template of a shuffled deck, shuffled again once dealt out."""
        deck = decks.setdefault(id(templates), [])
        if not deck:
            deck += self.rng.sample(templates, len(templates))
        return deck.pop()

    def _author(self, speaker: str) -> tuple[str, str]:
        if speaker == "E":
            return self.world.me, "assistant"
        if speaker == "H":
            return self.world.human.name, "user"
        return getattr(self.world, speaker).name, "user"

    # files

    def _day(self) -> str:
        return (START + timedelta(days=self.rng.randrange(DAYS))).isoformat()

    def _write_files(self, values_of: dict[str, _Values]) -> None:
        memory: dict[str, list[tuple[str, bool, str]]] = {}  # heading -> (line, gold, family)
        daily: list[tuple[str, bool, str]] = []
        base = self._base()
        items: list[tuple[str, object, _Values]] = [
            (f.id, spec, values_of[f.id]) for f in FAMILIES for spec in f.files
        ]
        items += [("", spec, base) for spec in DISTRACTOR_PHOTOS]
        items += [("", spec, base) for spec in DISTRACTOR_MEMORY + DAILY_NOTE_DISTRACTOR]
        for family, spec, values in items:
            if isinstance(spec, WordPhoto):
                self._word_photo(family, spec, values)
            elif isinstance(spec, Fragment):
                self._fragment(family, spec, values)
            elif spec.heading is None:
                daily.append((spec.text.format_map(values), spec.gold, family))
            else:
                memory.setdefault(spec.heading, []).append(
                    (spec.text.format_map(values), spec.gold, family)
                )
        lines = ["# Memory", ""]
        for heading in sorted(memory):
            lines += [f"## {heading}", ""]
            for text, gold, family in memory[heading]:
                lines.append(text)
                if gold:
                    self._gold_lines(family, "MEMORY.md", len(lines), len(lines), text)
            lines.append("")
        self.files["MEMORY.md"] = "\n".join(lines)
        day = self._day()
        path = f"memory/{day}.md"
        note = [f"# {day}", ""]
        self.rng.shuffle(daily)
        for text, gold, family in daily:
            note.append(text)
            if gold:
                self._gold_lines(family, path, len(note), len(note), text)
        self.files[path] = "\n".join(note) + "\n"

    def _word_photo(self, family: str, spec: WordPhoto, values: _Values) -> None:
        title = spec.title.format_map(values)
        day = self._day()
        tags = [t.format_map(values) for t in spec.tags]
        path = f"word_photos/{day}_{_slug(title)}.md"
        lines = ["---", f"title: {json.dumps(title)}", f"date: {day}"]
        lines += [f"tags: [{', '.join(tags)}]", "---", "", f"# {title}", ""]
        for section in spec.sections:
            first = len(lines) + 1
            heading = section.heading.format_map(values)
            lines += [f"## {heading}", "", section.text.format_map(values)]
            if section.gold:
                self._gold_lines(family, path, first, len(lines), "\n".join(lines[first - 1 :]))
            lines.append("")
        self.files[path] = "\n".join(lines)

    def _fragment(self, family: str, spec: Fragment, values: _Values) -> None:
        text = spec.text.format_map(values)
        day = self._day()
        tags = [t.format_map(values) for t in spec.tags]
        folder = f".brain/fragments/{spec.category}/{day[:7]}"
        path = f"{folder}/{day}_{_slug(text)}.md"
        created = f"{day}T{self.rng.randint(8, 22):02d}:{self.rng.randint(0, 59):02d}:00Z"
        lines = ["---", f"category: {spec.category}", f"tags: [{', '.join(tags)}]"]
        lines += [f"date: {day}", f"created_at: '{created}'", "---", "", text]
        if spec.gold:
            self._gold_lines(family, path, len(lines), len(lines), text)
        self.files[path] = "\n".join(lines) + "\n"

    def _gold_lines(self, family: str, path: str, start: int, end: int, text: str) -> None:
        gold = Gold(path=path, start=start, end=end, text=text)
        self._file_golds.setdefault(family, []).append(gold)

    # questions

    def _question(self, family: Family, values: _Values, placed: list[_Placed]) -> Question:
        gold = list(self._file_golds.get(family.id, []))
        stale = []
        for scene in (p for p in placed if p.family == family.id):
            for (mark, _, text), uid in zip(scene.lines, scene.uids, strict=True):
                if mark:
                    found = Gold(uid=uid, text=text)
                    (gold if mark == "*" else stale).append(found)
        if len(gold) != 1:
            raise ValueError(f"family {family.id}: {len(gold)} answers, expected 1")
        filters: dict = {}
        for name, value in family.filters:
            if name in ("date", "window"):
                day = self._day_of(gold[0].uid)
                if name == "date":
                    filters["date"] = day
                else:
                    filters["since"] = _shift(day, -int(value))
                    filters["until"] = _shift(day, int(value))
            elif name == "tags":
                filters["tags"] = [str(value).format_map(values)]
            else:
                filters[name] = value
        return Question(
            id=f"{self.name}/{family.id}",
            entity=self.name,
            family=family.id,
            kind=family.kind,
            half="",
            text=family.question.format_map(values),
            gold=gold,
            stale=stale,
            filters=filters,
        )

    def _day_of(self, uid: str | None) -> str:
        for session in self.sessions:
            for turn in session.turns:
                if turn.uid == uid:
                    return turn.created_at[:10]
        raise ValueError(f"no turn {uid}")


def _has_gold(scene: Scene) -> bool:
    return any(line.startswith("*") for line in scene.lines)


def _days_between(a: str, b: str) -> int:
    return (date.fromisoformat(a) - date.fromisoformat(b)).days


def _shift(day: str, days: int) -> str:
    return (date.fromisoformat(day) + timedelta(days=days)).isoformat()


def _slug(text: str, words: int = 6) -> str:
    return "-".join(re.findall(r"[a-z0-9]+", text.lower())[:words])[:60].strip("-") or "memory"
