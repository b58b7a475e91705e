"""Where the ALFWorld games come from: find the data, unpack the staged tarball once, select the
evaluation games (SPEC-BENCH §2.1) and write 2.1.2-text copies of 2.1.1 games (SPEC-BASE §2.4).

Nothing here imports the engine; the user's data is only ever read.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import tarfile
import tempfile
import zlib
from dataclasses import dataclass
from pathlib import Path

from pos_bench.benchmarks import staging
from pos_bench.extras import MissingExtra, install_hint

SPLITS = ("valid_unseen", "valid_seen", "train")
"""ALFWorld's splits: `valid_unseen` is the paper's evaluation set (134 games), `valid_seen` the in-distribution
set (140), `train` 3,553 (SPEC-BENCH §2.1)."""
DEFAULT_SPLIT = "valid_unseen"
TARBALL = "alfworld_json_2.1.1_valid_unseen_134.tar.gz"
"""The staged tarball beside the repository; it holds `valid_unseen` only."""
TARBALL_ENDINGS = (".tar.gz", ".tgz", ".tar")


def split_dir(split: str) -> Path:
    """The split's directory relative to a data root."""
    if split not in SPLITS:
        raise ValueError(f"bench.split must be one of {', '.join(SPLITS)}; got {split!r}")
    return Path("json_2.1.1") / split


TASK_TYPES = {
    "pick_and_place_simple": "pick_and_place",
    "look_at_obj_in_light": "look_at_obj",
    "pick_clean_then_place_in_recep": "clean",
    "pick_heat_then_place_in_recep": "heat",
    "pick_cool_then_place_in_recep": "cool",
    "pick_two_obj_and_place": "pick_two",
}
"""ALFWorld task types 1–6 → the short names the summary groups by."""

TEXT_VERSIONS = ("2.1.1", "2.1.2")

MISSING_ENGINE = (
    "bench=alfworld needs the `alfworld` extra (the real engine: alfworld==0.4.2, textworld[pddl]==1.7.0): "
    f"install it with {install_hint('alfworld')}."
)

# The three 2.1.1 → 2.1.2 grammar rewrites of upstream's patch script (SPEC-BASE §2.4 items 2–4);
# the fourth item, the `help` action, is added by `_with_help`.
GRAMMAR_REWRITES = (
    ("put {o} in/on {r}", "move {o} to {r}"),
    ("You put the {o.name} in/on the {r.name}.", "You move the {o.name} to the {r.name}."),
    ("You arrive at {lend.name}.", "You arrive at {r.name}."),
)


@dataclass(frozen=True)
class Game:
    """One selected evaluation game."""

    id: str
    """The trial directory relative to the split directory."""
    gamefile: Path
    task_type: str


def cache_root() -> Path:
    return staging.cache_root("alfworld")


def staged_dir() -> Path:
    return staging.staged_dir("alfworld")


SEARCH_DEPTH = 4
"""How many folders deep below a data root, or the root of an unpacked tarball, `json_2.1.1` is looked for
(upstream tarballs hold `data/alfworld/json_2.1.1/…`)."""


def _holding_split(root: Path, split: str, depth: int = SEARCH_DEPTH) -> Path | None:
    """The shallowest folder at most `depth` levels below `root` that holds `json_2.1.1/<split>` (breadth
    first, names sorted, never descending into a `json_2.1.1` tree itself)."""
    wanted = split_dir(split)
    level = [root]
    for _ in range(depth + 1):
        found = next((d for d in level if (d / wanted).is_dir()), None)
        if found is not None:
            return found
        level = [
            child
            for d in level
            for child in sorted(d.iterdir())
            if child.is_dir() and not child.is_symlink() and child.name != wanted.parts[0]
        ]
    return None


def _tarball_holds(tarball: Path, split: str) -> bool:
    """Whether `tarball` has a member under `json_2.1.1/<split>/`, read from its index without extracting."""
    marker = f"{split_dir(split).as_posix()}/"
    try:
        with tarfile.open(tarball) as bundle:
            return any(marker in f"{name}/" for name in bundle.getnames())
    except (tarfile.TarError, OSError, EOFError, zlib.error):
        return False


def _usable(path: Path, split: str) -> Path | None:
    """The data root `path` stands for, unpacking a tarball if needed; None when it holds no `<split>`.

    `path` may be a tree holding `json_2.1.1/<split>` at most SEARCH_DEPTH folders down, a tarball of any name
    with that inside (at any depth up to the same bound), or a folder holding such a tarball (the staged one
    first, then the others in name order; a tarball is unpacked only when its index lists the split)."""
    if path.is_file():
        return _holding_split(unpack(path), split) if path.name.endswith(TARBALL_ENDINGS) else None
    if not path.is_dir():
        return None
    found = _holding_split(path, split)
    if found is not None:
        return found
    tarballs = sorted(p for p in path.iterdir() if p.is_file() and p.name.endswith(TARBALL_ENDINGS))
    tarballs.sort(key=lambda p: p.name != TARBALL)
    for tarball in tarballs:
        if _tarball_holds(tarball, split):
            found = _holding_split(unpack(tarball), split)
            if found is not None:
                return found
    return None


def find_data_root(data_dir: str | Path | None, split: str = DEFAULT_SPLIT) -> Path:
    """The directory holding `json_2.1.1/<split>`.

    An explicit `data_dir` must hold the data. Without one, `$ALFWORLD_DATA`, the alfworld download
    cache and the staged tarball beside the repository are tried in turn. (`$ALFWORLD_DATA` is only a
    candidate: importing alfworld sets it to the download cache, which may be empty.)
    """
    if data_dir is not None:
        candidates = [Path(data_dir).expanduser()]
    else:
        env = os.environ.get("ALFWORLD_DATA")
        candidates = [Path(env).expanduser()] if env else []
        candidates += [Path.home() / ".cache" / "alfworld", staged_dir()]
    for path in candidates:
        found = _usable(path, split)
        if found is not None:
            return found
    looked = ", ".join(str(p) for p in candidates)
    raise FileNotFoundError(
        f"ALFWorld data for split {split} not found (looked in: {looked}); expected a directory with "
        f"{split_dir(split)} at most {SEARCH_DEPTH} folders down, a tarball holding it (any name), or a folder "
        "holding such a tarball. Fix: run `alfworld-download` (needs network), or point bench.data_dir or "
        "ALFWORLD_DATA at a copy of the data"
    )


def unpack(tarball: Path) -> Path:
    """Extract `tarball` once into the cache (see `staging.unpack`); return the extracted root."""
    return staging.unpack(tarball, cache_root())


def select_games(root: Path, split_name: str = DEFAULT_SPLIT) -> list[Game]:
    """The games of a split under `root`, sorted by id (the `AlfredTWEnv` filter of SPEC-BENCH §2.1)."""
    split = root / split_dir(split_name)
    games = []
    for traj in split.rglob("traj_data.json"):
        trial = traj.parent
        rel = trial.relative_to(split).as_posix()
        if "movable" in rel or "Sliced" in rel:
            continue
        trajectory = _game_json(traj, rel)
        kind = TASK_TYPES.get(trajectory.get("task_type"))
        gamefile = trial / "game.tw-pddl"
        if kind is None or not gamefile.is_file():
            continue
        if _game_json(gamefile, rel).get("solvable") is not True:
            continue
        games.append(Game(id=rel, gamefile=gamefile, task_type=kind))
    return sorted(games, key=lambda g: g.id)


def _game_json(path: Path, game: str) -> dict:
    """A game's JSON object; anything else is an error naming the file and the game."""
    try:
        payload = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ValueError(
            f"ALFWorld game {game}: {path} is not UTF-8 JSON ({type(error).__name__}: {error}); restore it from "
            "the original data"
        ) from error
    if not isinstance(payload, dict):
        raise TypeError(
            f"ALFWorld game {game}: {path} should hold a JSON object, got {type(payload).__name__}"
        )
    return payload


def has_help(game: dict) -> bool:
    return "(:action help" in game["pddl_domain"]


def packaged_logic() -> tuple[str, str]:
    """The installed alfworld package's 2.1.2 logic files: the `alfred.pddl` domain and `alfred.twl2` grammar."""
    spec = importlib.util.find_spec("alfworld")  # locate without importing: the import sets env vars
    if spec is None or not spec.submodule_search_locations:
        raise MissingExtra(MISSING_ENGINE)
    data = Path(next(iter(spec.submodule_search_locations))) / "data"
    return (data / "alfred.pddl").read_text(encoding="utf-8"), (data / "alfred.twl2").read_text(
        encoding="utf-8"
    )


def _help_blocks() -> tuple[str, str]:
    """The `help` action's PDDL and grammar, read from the installed alfworld package's 2.1.2 logic files."""
    domain, grammar = packaged_logic()
    start = domain.index("(:action help")
    pddl = domain[start : domain.index("\n)\n", start) + 3]
    return pddl, grammar[grammar.index("\naction help {") :]


def patch_to_2_1_2(game: dict) -> dict:
    """The four-item 2.1.2 text patch; a game that already has `help` is returned unchanged."""
    if has_help(game):
        return game
    help_pddl, help_grammar = _help_blocks()
    before, after = game["pddl_domain"].rsplit(")", 1)
    grammar = game["grammar"]
    for old, new in GRAMMAR_REWRITES:
        grammar = grammar.replace(old, new)
    return {**game, "pddl_domain": f"{before}{help_pddl}){after}", "grammar": grammar + help_grammar}


def playable_gamefile(gamefile: Path, text_version: str) -> Path:
    """The game file to load for `text_version`: the original for 2.1.1 text, else a patched copy in the
    cache (content-addressed, with its `traj_data.json`, which the experts read)."""
    raw = gamefile.read_bytes()
    game = json.loads(raw)
    if text_version == "2.1.1":
        if has_help(game):
            raise ValueError(
                f"{gamefile} already has 2.1.2 text; text_version '2.1.1' needs the 2.1.1 games "
                "(e.g. the staged tarball)"
            )
        return gamefile
    if has_help(game):
        return gamefile
    traj = (gamefile.parent / "traj_data.json").read_bytes()
    folder = cache_root() / f"games-{text_version}" / hashlib.sha256(raw + traj).hexdigest()[:16]
    target = folder / "game.tw-pddl"
    if target.is_file():
        return target
    folder.mkdir(parents=True, exist_ok=True)
    _write_atomic(folder / "traj_data.json", traj)
    _write_atomic(target, json.dumps(patch_to_2_1_2(game)).encode("utf-8"))
    return target


def _write_atomic(path: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}-", dir=path.parent)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.replace(tmp, path)
