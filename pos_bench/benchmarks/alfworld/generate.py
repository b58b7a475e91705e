"""Small generated ALFWorld games (SPEC-BENCH §2.7 item 2): a `game.tw-pddl` built from the installed alfworld
package's `alfred.pddl` domain and `alfred.twl2` grammar with a generated problem, plus a minimal
`traj_data.json`, written in the data-tree layout `data.select_games` reads. They let the loader, the text patch
and the planner expert be checked on games other than the 134 staged ones.

Games are written in 2.1.1 text (the packaged 2.1.2 logic without the `help` action and with the three grammar
rewrites undone), so `bench.text_version=2.1.1` plays them as written and `2.1.2` through the loader's patch;
`text_version="2.1.2"` writes the packaged logic unchanged.

    python -m pos_bench.benchmarks.alfworld.generate /tmp/games [split]   # one game of each task type
"""

from __future__ import annotations

import json
import random
import sys
from dataclasses import dataclass
from pathlib import Path

from pos_bench.benchmarks.alfworld.data import (
    DEFAULT_SPLIT,
    GRAMMAR_REWRITES,
    TASK_TYPES,
    TEXT_VERSIONS,
    packaged_logic,
    split_dir,
)

GOAL_PLACEHOLDER = "UNKNOWN GOAL"
OPENABLE = ("Cabinet", "Drawer", "Fridge", "Microwave", "Safe")
PLAIN = ("CounterTop", "Shelf", "Desk", "SideTable", "DiningTable", "GarbageCan")
PLACES = (
    "Cabinet",
    "Drawer",
    "CounterTop",
    "Shelf",
    "Desk",
    "SideTable",
    "DiningTable",
    "Safe",
    "GarbageCan",
)
"""Receptacle types a target or filler may be (the appliances are added only where a task needs one)."""
FOOD = ("Apple", "Potato", "Tomato", "Egg", "Bread")
DISHES = ("Mug", "Bowl", "Cup", "Plate")
THINGS = ("Book", "CD", "Pen", "KeyChain", "CellPhone", "AlarmClock", "CreditCard")
CLEANABLE = frozenset(FOOD + DISHES) - {"Bread"}
HEATABLE = frozenset(FOOD + DISHES)
COOLABLE = frozenset(FOOD + DISHES)
APPLIANCE = {
    "pick_clean_then_place_in_recep": "SinkBasin",
    "pick_heat_then_place_in_recep": "Microwave",
    "pick_cool_then_place_in_recep": "Fridge",
}
TARGETS = {
    "pick_and_place_simple": THINGS + DISHES,
    "look_at_obj_in_light": THINGS,
    "pick_clean_then_place_in_recep": tuple(sorted(CLEANABLE)),
    "pick_heat_then_place_in_recep": tuple(sorted(HEATABLE)),
    "pick_cool_then_place_in_recep": tuple(sorted(COOLABLE)),
    "pick_two_obj_and_place": THINGS + DISHES,
}
GOAL_TEXT = {
    "pick_and_place_simple": "put a {o} in {r}",
    "look_at_obj_in_light": "examine the {o} with the desklamp",
    "pick_clean_then_place_in_recep": "clean some {o} and put it in {r}",
    "pick_heat_then_place_in_recep": "heat some {o} and put it in {r}",
    "pick_cool_then_place_in_recep": "cool some {o} and put it in {r}",
    "pick_two_obj_and_place": "put two {o} in {r}",
}
STATE_GOAL = {
    "pick_clean_then_place_in_recep": "(cleanable ?o) (isClean ?o) ",
    "pick_heat_then_place_in_recep": "(heatable ?o) (isHot ?o) ",
    "pick_cool_then_place_in_recep": "(coolable ?o) (isCool ?o) ",
}


@dataclass(frozen=True)
class GameSpec:
    """What to generate: one of ALFWorld's six task types (`data.TASK_TYPES`), room size and seed."""

    task_type: str
    receptacles: int = 5
    """Receptacles in the room, the task's target and appliance included."""
    objects: int = 4
    """Pickupable objects, the task's targets included."""
    seed: int = 0

    def __post_init__(self) -> None:
        if self.task_type not in TASK_TYPES:
            raise ValueError(f"task_type must be one of {', '.join(TASK_TYPES)}; got {self.task_type!r}")
        if self.receptacles < 3 or self.objects < 2:
            raise ValueError(f"need ≥ 3 receptacles and ≥ 2 objects; got {self.receptacles}, {self.objects}")


@dataclass(frozen=True)
class Room:
    """The generated facts: receptacle id → type, object id → (type, receptacle id), the goal's types."""

    receptacles: dict[str, str]
    objects: dict[str, tuple[str, str]]
    target: str
    parent: str
    goal: str


def _receptacle_id(kind: str, number: int) -> str:
    # The demangler renders `Type_bar_n` as "type n" and appends "basin" to ids that contain it.
    return f"Sink_bar_{number}_bar_SinkBasin" if kind == "SinkBasin" else f"{kind}_bar_{number}"


def plan_room(spec: GameSpec) -> Room:
    """The room of `spec`: a target receptacle, the task's appliance or lamp, fillers, and the objects placed in
    receptacles other than the target (so the task always needs work)."""
    rng = random.Random(f"{spec.task_type}/{spec.receptacles}/{spec.objects}/{spec.seed}")
    target = rng.choice(TARGETS[spec.task_type])
    parent = rng.choice(PLACES if spec.task_type != "look_at_obj_in_light" else ("Desk", "SideTable"))
    kinds = [parent, *([APPLIANCE[spec.task_type]] if spec.task_type in APPLIANCE else [])]
    fillers = [kind for kind in PLACES if kind != parent]  # one receptacle of the target type: no early win
    kinds += [rng.choice(fillers) for _ in range(spec.receptacles - len(kinds))]
    counts: dict[str, int] = {}
    receptacles = {}
    for kind in kinds:
        counts[kind] = counts.get(kind, 0) + 1
        receptacles[_receptacle_id(kind, counts[kind])] = kind
    parent_id = next(iter(receptacles))
    holders = [r for r in receptacles if r != parent_id] or [parent_id]
    wanted = 2 if spec.task_type == "pick_two_obj_and_place" else 1
    kinds = [target] * wanted + [rng.choice(THINGS + DISHES + FOOD) for _ in range(spec.objects - wanted)]
    objects: dict[str, tuple[str, str]] = {}
    for kind in kinds:
        counts[kind] = counts.get(kind, 0) + 1
        objects[f"{kind}_bar_{counts[kind]}"] = (kind, rng.choice(holders))
    if spec.task_type == "look_at_obj_in_light":
        objects["DeskLamp_bar_1"] = ("DeskLamp", parent_id)
    goal = GOAL_TEXT[spec.task_type].format(o=target.lower(), r=parent.lower())
    return Room(receptacles, objects, target, parent, goal)


def _goal(task_type: str, target: str, parent: str) -> str:
    o, r = f"{target}Type", f"{parent}Type"
    if task_type == "look_at_obj_in_light":
        return (
            "(and (exists (?ot - object ?r - receptacle ?a - agent ?l - location) (and (objectType ?ot DeskLampType)"
            " (toggleable ?ot) (isToggled ?ot) (receptacleAtLocation ?r ?l) (atLocation ?a ?l) (inReceptacle ?ot ?r)))"
            f" (exists (?o - object ?a - agent) (and (objectType ?o {o}) (holds ?a ?o))))"
        )
    if task_type == "pick_two_obj_and_place":
        return (
            f"(exists (?r - receptacle) (exists (?o1 - object) (and (objectType ?o1 {o}) (receptacleType ?r {r})"
            f" (inReceptacle ?o1 ?r) (exists (?o2 - object) (and (not (= ?o1 ?o2)) (objectType ?o2 {o})"
            " (inReceptacle ?o2 ?r))))))"
        )
    state = STATE_GOAL.get(task_type, "")
    return (
        f"(exists (?r - receptacle) (exists (?o - object) (and {state}(objectType ?o {o}) (receptacleType ?r {r})"
        " (inReceptacle ?o ?r))))"
    )


def problem(spec: GameSpec, room: Room) -> str:
    """The PDDL problem of `room`: one location per receptacle, the agent at a location of its own."""
    where = {r: f"loc_bar_{i + 1}" for i, r in enumerate(room.receptacles)}
    otypes = sorted({kind for kind, _ in room.objects.values()})
    rtypes = sorted(set(room.receptacles.values()))
    facts = ["(atLocation agent1 loc_bar_0)"]
    for r, kind in room.receptacles.items():
        facts += [f"(receptacleType {r} {kind}Type)", f"(receptacleAtLocation {r} {where[r]})"]
        if kind in OPENABLE:
            facts.append(f"(openable {r})")
    facts += [f"(canContain {r}Type {o}Type)" for r in rtypes for o in otypes if o != "DeskLamp"]
    for o, (kind, r) in room.objects.items():
        facts += [
            f"(objectType {o} {kind}Type)",
            f"(inReceptacle {o} {r})",
            f"(objectAtLocation {o} {where[r]})",
        ]
        if kind == "DeskLamp":
            facts.append(f"(toggleable {o})")
            continue
        facts.append(f"(pickupable {o})")
        facts += [
            f"({p} {o})"
            for p, kinds in (("cleanable", CLEANABLE), ("heatable", HEATABLE), ("coolable", COOLABLE))
            if kind in kinds
        ]
    declared = (
        ["agent1 - agent"]
        + [f"{loc} - location" for loc in ["loc_bar_0", *where.values()]]
        + [f"{r} - receptacle" for r in room.receptacles]
        + [f"{o} - object" for o in room.objects]
        + [f"{kind}Type - otype" for kind in otypes]
        + [f"{kind}Type - rtype" for kind in rtypes]
    )
    return "\n".join(
        [
            f"(define (problem gen_{spec.task_type}_{spec.seed})",
            "(:domain alfred)",
            "(:objects",
            *(f"  {d}" for d in declared),
            ")",
            "(:init",
            *(f"  {f}" for f in facts),
            ")",
            f"(:goal {_goal(spec.task_type, room.target, room.parent)})",
            ")",
        ]
    )


def logic(text_version: str) -> tuple[str, str]:
    """The domain and grammar in `text_version` text: packaged for 2.1.2; without `help`, rewrites undone, for 2.1.1."""
    if text_version not in TEXT_VERSIONS:
        raise ValueError(f"text_version must be one of {', '.join(TEXT_VERSIONS)}; got {text_version!r}")
    domain, grammar = packaged_logic()
    if text_version == "2.1.2":
        return domain, grammar
    start = domain.index("(:action help")
    domain = domain[:start] + domain[domain.index("\n)\n", start) + 3 :]
    grammar = grammar[: grammar.index("\naction help {")]
    for old, new in GRAMMAR_REWRITES:
        grammar = grammar.replace(new, old)
    return domain, grammar


def write_game(
    root: Path, spec: GameSpec, *, text_version: str = "2.1.1", split: str = DEFAULT_SPLIT
) -> Path:
    """Write one game under `root/json_2.1.1/<split>` in the data-tree layout; return its trial directory."""
    room = plan_room(spec)
    domain, grammar = logic(text_version)
    if GOAL_PLACEHOLDER not in grammar:
        raise ValueError(
            f"the packaged alfred.twl2 has no {GOAL_PLACEHOLDER!r} placeholder to put the goal in"
        )
    name = f"{spec.task_type}-{room.target}-None-{room.parent}-{spec.seed}"
    trial = root / split_dir(split) / name / f"trial_gen_{spec.receptacles}_{spec.objects}_{spec.seed}"
    trial.mkdir(parents=True, exist_ok=True)
    game = {
        "pddl_domain": domain,
        "grammar": grammar.replace(GOAL_PLACEHOLDER, room.goal),
        "pddl_problem": problem(spec, room),
        "solvable": True,
    }
    traj = {
        "task_id": trial.name,
        "task_type": spec.task_type,
        "pddl_params": {
            "object_target": room.target,
            "parent_target": "" if spec.task_type == "look_at_obj_in_light" else room.parent,
            "toggle_target": "DeskLamp" if spec.task_type == "look_at_obj_in_light" else "",
            "mrecep_target": "",
            "object_sliced": False,
        },
        "turk_annotations": {"anns": [{"task_desc": f"{room.goal[0].upper()}{room.goal[1:]}."}]},
    }
    (trial / "game.tw-pddl").write_text(json.dumps(game), encoding="utf-8")
    (trial / "traj_data.json").write_text(json.dumps(traj, indent=1), encoding="utf-8")
    return trial


def write_tree(
    root: Path, specs: list[GameSpec], *, text_version: str = "2.1.1", split: str = DEFAULT_SPLIT
) -> Path:
    """Write every game of `specs` under `root` in `split`; `root` is then a `bench.data_dir` for
    bench=alfworld with that `bench.split`."""
    for spec in specs:
        write_game(root, spec, text_version=text_version, split=split)
    return root


def one_of_each(*, receptacles: int = 5, objects: int = 4, seed: int = 0) -> list[GameSpec]:
    return [GameSpec(kind, receptacles, objects, seed) for kind in TASK_TYPES]


if __name__ == "__main__":
    target = Path(sys.argv[1] if len(sys.argv) > 1 else "generated_alfworld")
    print(write_tree(target, one_of_each(), split=sys.argv[2] if len(sys.argv) > 2 else DEFAULT_SPLIT))
