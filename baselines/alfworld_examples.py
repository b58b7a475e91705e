"""Fictional ALFWorld episodes for the few-shot prompts of StateAct and ReflAct: two per task type, so each
method can show examples of the task's own type (SPEC-BASE §8: "2 same-type few-shot examples"; §9: "1–2
same-type examples"). Written for pos_bench in 2.1.1 text (`put X in/on Y`, "You arrive at loc N."); the
methods patch them to 2.1.2 when the game uses that grammar.

Each turn is (reflection, action, observation). StateAct's state blocks are derived from the actions
(places visited, current place, what is held), with the first reflection as the plan in its `thought`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

Turn = tuple[str, str, str]
"""(reflection, action, observation)."""


@dataclass(frozen=True)
class Episode:
    task_type: str
    opening: str
    task: str
    """The task line as ALFWorld words it (after "Your task is to:")."""
    goal: str
    """The goal in the agent's own words (StateAct's `goal`)."""
    turns: tuple[Turn, ...]


def _room(*things: str) -> str:
    return "You are in the middle of a room. Looking quickly around you, you see " + ", ".join(things) + "."


EPISODES: tuple[Episode, ...] = (
    Episode(
        "pick_and_place",
        _room("a desk 1", "a drawer 1", "a shelf 1"),
        "put a pen on desk.",
        "put a pen on the desk",
        (
            (
                "I hold nothing; plan: look for a pen on the shelf, then carry it to the desk.",
                "go to shelf 1",
                "You arrive at loc 3. On the shelf 1, you see a pen 1, and a vase 1.",
            ),
            (
                "A pen 1 is on shelf 1 and my hands are free, so I take it.",
                "take pen 1 from shelf 1",
                "You pick up the pen 1 from the shelf 1.",
            ),
            (
                "I hold pen 1; the desk is the only step left.",
                "go to desk 1",
                "You arrive at loc 1. On the desk 1, you see a lamp 1.",
            ),
            (
                "I am at desk 1 with pen 1, so placing it finishes the task.",
                "put pen 1 in/on desk 1",
                "You put the pen 1 in/on the desk 1.",
            ),
        ),
    ),
    Episode(
        "pick_and_place",
        _room("a armchair 1", "a coffeetable 1", "a sidetable 1", "a sofa 1"),
        "put some remotecontrol on armchair.",
        "put a remote control on the armchair",
        (
            (
                "I hold nothing; plan: check the tables for a remote control, then bring it to the armchair.",
                "go to coffeetable 1",
                "You arrive at loc 2. On the coffeetable 1, you see a newspaper 1.",
            ),
            (
                "No remote on coffeetable 1; the sidetable is the next likely place.",
                "go to sidetable 1",
                "You arrive at loc 3. On the sidetable 1, you see a remotecontrol 2, and a keychain 1.",
            ),
            (
                "remotecontrol 2 is here and my hands are free.",
                "take remotecontrol 2 from sidetable 1",
                "You pick up the remotecontrol 2 from the sidetable 1.",
            ),
            (
                "I hold remotecontrol 2; now to the armchair.",
                "go to armchair 1",
                "You arrive at loc 1. On the armchair 1, you see a pillow 1.",
            ),
            (
                "I am at armchair 1 with the remote, so putting it down completes the goal.",
                "put remotecontrol 2 in/on armchair 1",
                "You put the remotecontrol 2 in/on the armchair 1.",
            ),
        ),
    ),
    Episode(
        "look_at_obj",
        _room("a bed 1", "a desk 1", "a dresser 1", "a sidetable 1"),
        "look at book under the desklamp.",
        "look at a book under the desklamp",
        (
            (
                "I hold nothing; plan: find a book, take it, then switch on the desklamp beside it.",
                "go to bed 1",
                "You arrive at loc 1. On the bed 1, you see a book 2, and a pillow 1.",
            ),
            (
                "book 2 is on bed 1; I pick it up.",
                "take book 2 from bed 1",
                "You pick up the book 2 from the bed 1.",
            ),
            (
                "I hold book 2; the lamp is probably on the sidetable or the desk.",
                "go to sidetable 1",
                "You arrive at loc 4. On the sidetable 1, you see a desklamp 1, and a pencil 1.",
            ),
            (
                "The desklamp 1 is here and I hold the book, so turning it on completes the goal.",
                "use desklamp 1",
                "You turn on the desklamp 1.",
            ),
        ),
    ),
    Episode(
        "look_at_obj",
        _room("a desk 1", "a drawer 1", "a shelf 1", "a shelf 2"),
        "examine the alarmclock with the desklamp.",
        "examine an alarm clock with the desklamp",
        (
            (
                "I hold nothing; plan: find the alarm clock, carry it to the desklamp, and turn the lamp on.",
                "go to shelf 1",
                "You arrive at loc 2. On the shelf 1, you see a alarmclock 1, and a cd 3.",
            ),
            (
                "alarmclock 1 is on shelf 1; I take it.",
                "take alarmclock 1 from shelf 1",
                "You pick up the alarmclock 1 from the shelf 1.",
            ),
            (
                "I hold the alarm clock; desks usually carry the lamp.",
                "go to desk 1",
                "You arrive at loc 1. On the desk 1, you see a desklamp 1, and a laptop 1.",
            ),
            (
                "The desklamp 1 is within reach while I hold the clock, so I switch it on.",
                "use desklamp 1",
                "You turn on the desklamp 1.",
            ),
        ),
    ),
    Episode(
        "clean",
        _room("a countertop 1", "a drawer 1", "a sinkbasin 1"),
        "put a clean spoon in drawer.",
        "clean a spoon, then put it in the drawer",
        (
            (
                "I hold nothing; plan: find a spoon, clean it at the sinkbasin, then put it in the drawer.",
                "go to countertop 1",
                "You arrive at loc 2. On the countertop 1, you see a spoon 3, and a bowl 1.",
            ),
            (
                "spoon 3 is here, the object my goal needs.",
                "take spoon 3 from countertop 1",
                "You pick up the spoon 3 from the countertop 1.",
            ),
            (
                "I hold spoon 3 but it is not clean yet, so the sinkbasin comes before the drawer.",
                "go to sinkbasin 1",
                "You arrive at loc 5. On the sinkbasin 1, you see nothing.",
            ),
            (
                "At sinkbasin 1 with the unclean spoon, cleaning it settles the first half of the goal.",
                "clean spoon 3 with sinkbasin 1",
                "You clean the spoon 3 using the sinkbasin 1.",
            ),
            (
                "I hold a clean spoon 3; only the drawer remains.",
                "go to drawer 1",
                "You arrive at loc 1. On the drawer 1, you see a fork 2.",
            ),
            (
                "I am at drawer 1 with the clean spoon, so putting it here completes the goal.",
                "put spoon 3 in/on drawer 1",
                "You put the spoon 3 in/on the drawer 1.",
            ),
        ),
    ),
    Episode(
        "clean",
        _room("a cabinet 1", "a diningtable 1", "a sinkbasin 1"),
        "clean some plate and put it in cabinet.",
        "clean a plate, then put it in the cabinet",
        (
            (
                "I hold nothing; plan: take a plate from the table, wash it in the sinkbasin, store it in the cabinet.",
                "go to diningtable 1",
                "You arrive at loc 2. On the diningtable 1, you see a plate 1, and a cup 2.",
            ),
            (
                "plate 1 is on the table; I take it.",
                "take plate 1 from diningtable 1",
                "You pick up the plate 1 from the diningtable 1.",
            ),
            (
                "The plate is not clean yet; the sinkbasin is next.",
                "go to sinkbasin 1",
                "You arrive at loc 3. On the sinkbasin 1, you see nothing.",
            ),
            (
                "I am at the sinkbasin holding the dirty plate.",
                "clean plate 1 with sinkbasin 1",
                "You clean the plate 1 using the sinkbasin 1.",
            ),
            (
                "The plate is clean; the cabinet is left.",
                "go to cabinet 1",
                "You arrive at loc 1. The cabinet 1 is closed.",
            ),
            (
                "cabinet 1 is closed, so I open it first.",
                "open cabinet 1",
                "You open the cabinet 1. The cabinet 1 is open. In it, you see nothing.",
            ),
            (
                "The cabinet is open and I hold the clean plate, so this completes the goal.",
                "put plate 1 in/on cabinet 1",
                "You put the plate 1 in/on the cabinet 1.",
            ),
        ),
    ),
    Episode(
        "heat",
        _room("a countertop 1", "a microwave 1", "a shelf 1", "a stoveburner 1"),
        "heat some mug and put it in shelf.",
        "heat a mug, then put it on the shelf",
        (
            (
                "I hold nothing; plan: find a mug, heat it in the microwave, then place it on the shelf.",
                "go to countertop 1",
                "You arrive at loc 1. On the countertop 1, you see a mug 2, and a bread 1.",
            ),
            (
                "mug 2 is on the countertop; I take it.",
                "take mug 2 from countertop 1",
                "You pick up the mug 2 from the countertop 1.",
            ),
            (
                "I hold a cold mug; the microwave heats it.",
                "go to microwave 1",
                "You arrive at loc 2. The microwave 1 is closed.",
            ),
            (
                "At the microwave with the mug, heating it settles the first part of the goal.",
                "heat mug 2 with microwave 1",
                "You heat the mug 2 using the microwave 1.",
            ),
            (
                "The mug is hot; the shelf is the last stop.",
                "go to shelf 1",
                "You arrive at loc 3. On the shelf 1, you see a bowl 1.",
            ),
            (
                "I am at shelf 1 holding the hot mug, so putting it here finishes the task.",
                "put mug 2 in/on shelf 1",
                "You put the mug 2 in/on the shelf 1.",
            ),
        ),
    ),
    Episode(
        "heat",
        _room("a countertop 1", "a diningtable 1", "a fridge 1", "a microwave 1"),
        "put a hot potato in diningtable.",
        "heat a potato, then put it on the dining table",
        (
            (
                (
                    "I hold nothing; plan: potatoes are often kept cool, so check the fridge, heat one, bring it "
                    "to the table."
                ),
                "go to fridge 1",
                "You arrive at loc 3. The fridge 1 is closed.",
            ),
            (
                "The fridge is closed; I open it to look inside.",
                "open fridge 1",
                "You open the fridge 1. The fridge 1 is open. In it, you see a potato 1, and a lettuce 2.",
            ),
            (
                "potato 1 is in the fridge; I take it.",
                "take potato 1 from fridge 1",
                "You pick up the potato 1 from the fridge 1.",
            ),
            (
                "I hold a cold potato; the microwave is next.",
                "go to microwave 1",
                "You arrive at loc 4. The microwave 1 is closed.",
            ),
            (
                "At the microwave with the potato, I heat it.",
                "heat potato 1 with microwave 1",
                "You heat the potato 1 using the microwave 1.",
            ),
            (
                "The potato is hot; the dining table remains.",
                "go to diningtable 1",
                "You arrive at loc 2. On the diningtable 1, you see a fork 1.",
            ),
            (
                "I am at the table with the hot potato, which completes the goal.",
                "put potato 1 in/on diningtable 1",
                "You put the potato 1 in/on the diningtable 1.",
            ),
        ),
    ),
    Episode(
        "cool",
        _room("a cabinet 1", "a countertop 1", "a fridge 1"),
        "cool some egg and put it in cabinet.",
        "cool an egg, then put it in the cabinet",
        (
            (
                (
                    "I hold nothing; plan: find an egg (countertop first), cool it with the fridge, then store it "
                    "in the cabinet."
                ),
                "go to countertop 1",
                "You arrive at loc 2. On the countertop 1, you see a egg 2, and a knife 1.",
            ),
            (
                "egg 2 is on the countertop; I take it.",
                "take egg 2 from countertop 1",
                "You pick up the egg 2 from the countertop 1.",
            ),
            (
                "The egg is not cool yet; the fridge cools it.",
                "go to fridge 1",
                "You arrive at loc 4. The fridge 1 is closed.",
            ),
            (
                "At the fridge holding the egg, cooling it settles the first part.",
                "cool egg 2 with fridge 1",
                "You cool the egg 2 using the fridge 1.",
            ),
            (
                "The egg is cool; the cabinet is left.",
                "go to cabinet 1",
                "You arrive at loc 1. The cabinet 1 is closed.",
            ),
            (
                "The cabinet is closed, so I open it.",
                "open cabinet 1",
                "You open the cabinet 1. The cabinet 1 is open. In it, you see nothing.",
            ),
            (
                "The cabinet is open and I hold the cool egg, which completes the goal.",
                "put egg 2 in/on cabinet 1",
                "You put the egg 2 in/on the cabinet 1.",
            ),
        ),
    ),
    Episode(
        "cool",
        _room("a countertop 1", "a fridge 1", "a sinkbasin 1", "a stoveburner 1"),
        "put a cool pan in stoveburner.",
        "cool a pan, then put it on the stove burner",
        (
            (
                "I hold nothing; plan: take the pan, chill it in the fridge, then set it on the stove burner.",
                "go to stoveburner 1",
                "You arrive at loc 4. On the stoveburner 1, you see a pan 1.",
            ),
            (
                "pan 1 is on the stove burner; I take it so I can cool it.",
                "take pan 1 from stoveburner 1",
                "You pick up the pan 1 from the stoveburner 1.",
            ),
            (
                "I hold the pan; the fridge cools it.",
                "go to fridge 1",
                "You arrive at loc 2. The fridge 1 is closed.",
            ),
            (
                "At the fridge with the pan, I cool it.",
                "cool pan 1 with fridge 1",
                "You cool the pan 1 using the fridge 1.",
            ),
            (
                "The pan is cool; it goes back to the stove burner.",
                "go to stoveburner 1",
                "You arrive at loc 4. On the stoveburner 1, you see nothing.",
            ),
            (
                "I am at the stove burner holding the cool pan, which completes the goal.",
                "put pan 1 in/on stoveburner 1",
                "You put the pan 1 in/on the stoveburner 1.",
            ),
        ),
    ),
    Episode(
        "pick_two",
        _room("a bed 1", "a drawer 1", "a dresser 1", "a sidetable 1"),
        "put two cellphone in drawer.",
        "put two cell phones in the drawer",
        (
            (
                "I hold nothing; plan: carry one cell phone at a time to the drawer, twice.",
                "go to bed 1",
                "You arrive at loc 1. On the bed 1, you see a cellphone 1, and a pillow 2.",
            ),
            (
                "cellphone 1 is on the bed; I take it.",
                "take cellphone 1 from bed 1",
                "You pick up the cellphone 1 from the bed 1.",
            ),
            (
                "I hold the first phone; to the drawer.",
                "go to drawer 1",
                "You arrive at loc 2. On the drawer 1, you see nothing.",
            ),
            (
                "I am at the drawer with cellphone 1; one of two is placed after this.",
                "put cellphone 1 in/on drawer 1",
                "You put the cellphone 1 in/on the drawer 1.",
            ),
            (
                "One phone is in; I need a second, perhaps on the sidetable.",
                "go to sidetable 1",
                "You arrive at loc 4. On the sidetable 1, you see a cellphone 3, and a keychain 1.",
            ),
            (
                "cellphone 3 is here; I take it.",
                "take cellphone 3 from sidetable 1",
                "You pick up the cellphone 3 from the sidetable 1.",
            ),
            (
                "I hold the second phone; back to the drawer.",
                "go to drawer 1",
                "You arrive at loc 2. On the drawer 1, you see a cellphone 1.",
            ),
            (
                "Putting the second phone beside the first completes the goal.",
                "put cellphone 3 in/on drawer 1",
                "You put the cellphone 3 in/on the drawer 1.",
            ),
        ),
    ),
    Episode(
        "pick_two",
        _room("a cabinet 1", "a countertop 1", "a diningtable 1", "a shelf 1"),
        "find two saltshaker and put them in cabinet.",
        "put two salt shakers in the cabinet",
        (
            (
                "I hold nothing; plan: bring two salt shakers to the cabinet, one per trip.",
                "go to countertop 1",
                "You arrive at loc 2. On the countertop 1, you see a saltshaker 1, and a saltshaker 2.",
            ),
            (
                "Two salt shakers are here; I take the first.",
                "take saltshaker 1 from countertop 1",
                "You pick up the saltshaker 1 from the countertop 1.",
            ),
            (
                "I hold saltshaker 1; the cabinet is next.",
                "go to cabinet 1",
                "You arrive at loc 1. The cabinet 1 is closed.",
            ),
            (
                "The cabinet is closed; I open it.",
                "open cabinet 1",
                "You open the cabinet 1. The cabinet 1 is open. In it, you see nothing.",
            ),
            (
                "The cabinet is open; the first shaker goes in.",
                "put saltshaker 1 in/on cabinet 1",
                "You put the saltshaker 1 in/on the cabinet 1.",
            ),
            (
                "saltshaker 2 is still on the countertop.",
                "go to countertop 1",
                "You arrive at loc 2. On the countertop 1, you see a saltshaker 2.",
            ),
            (
                "I take the second shaker.",
                "take saltshaker 2 from countertop 1",
                "You pick up the saltshaker 2 from the countertop 1.",
            ),
            (
                "I hold the second shaker; back to the cabinet.",
                "go to cabinet 1",
                "You arrive at loc 1. On the cabinet 1, you see a saltshaker 1.",
            ),
            (
                "Putting it next to the first completes the goal.",
                "put saltshaker 2 in/on cabinet 1",
                "You put the saltshaker 2 in/on the cabinet 1.",
            ),
        ),
    ),
)

TASK_TYPES = tuple(dict.fromkeys(e.task_type for e in EPISODES))
DEFAULT_TYPE = "pick_and_place"
"""Used when a task names no type these examples cover (e.g. a benchmark without ALFWorld task types)."""


@dataclass(frozen=True)
class Selection:
    task_type: str
    """The type whose examples are shown."""
    matched: bool
    """False when the task's own type had none and `DEFAULT_TYPE` stood in."""
    episodes: tuple[Episode, ...]


def examples_for(meta: Mapping[str, Any], count: int = 2) -> Selection:
    """The first `count` episodes of the task's `task_type` (task meta), else of `DEFAULT_TYPE`."""
    wanted = meta.get("task_type")
    kind = wanted if wanted in TASK_TYPES else DEFAULT_TYPE
    chosen = tuple(e for e in EPISODES if e.task_type == kind)[:count]
    return Selection(kind, kind == wanted, chosen)


def uses_2_1_2(actions: Sequence[str]) -> bool:
    """Whether admissible commands follow the 2.1.2 grammar (`help` exists, `put` became `move`)."""
    return any(a == "help" or a.startswith("move ") for a in actions)


def to_2_1_2(text: str) -> str:
    """Apply the 2.1.1 → 2.1.2 text patches of SPEC-BASE §2.4 to an example line (StateAct's correction)."""
    text = re.sub(r"^put (.+) in/on (.+)$", r"move \1 to \2", text)
    text = re.sub(r"You put the (.+?) in/on the (.+?)\.", r"You move the \1 to the \2.", text)
    text = re.sub(r"You arrive at loc \d+\. On the ([^,]+),", r"You arrive at \1. On the \1,", text)
    return re.sub(r"You arrive at loc \d+\. The (.+?) is closed", r"You arrive at \1. The \1 is closed", text)


def states(episode: Episode) -> list[dict[str, Any]]:
    """StateAct's state before each turn of `episode`, derived from the actions taken so far."""
    visited: list[str] = []
    place, held = "middle of the room", ""
    out = []
    for index, (reflection, action, _) in enumerate(episode.turns):
        out.append(
            {
                "goal": episode.goal,
                "locations_visited": list(visited),
                "current_location": place,
                "current_inventory": held,
                "thought": reflection if index == 0 else "",
            }
        )
        if action.startswith("go to "):
            place = action.removeprefix("go to ")
            visited += [] if place in visited else [place]
        elif action.startswith("take "):
            held = action.removeprefix("take ").split(" from ")[0]
        elif action.startswith("put "):
            held = ""
    return out
