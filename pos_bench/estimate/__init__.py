"""`python -m pos_bench.estimate <overrides>`: what a run or a sweep will cost, before it calls a model.

For every combination the overrides (and an experiment's `hydra.sweeper.params`) name, it prints the episodes,
the expected model calls and tokens per episode per role, the hours at the run's concurrency and the cost at the
configured (or given) prices. No model is called and no network is used.

Where the figures come from, per (benchmark, method), in this order:
- `recorded`: finished episodes of the same benchmark and method under `results_root` (any model): their mean
  calls and tokens per role, and their seconds per call;
- `structure`: the method played by the scripted model with the stand-in endpoint's replies (the smallest
  schema-valid ones, tool calls with their smallest arguments: no network) on `--probe-tasks` tasks (5) spread over the benchmark's list, each for its whole
  turn budget, and their mean (the first ALFWorld game alone predicted raw's input tokens at 0.84x). With
  `--probe-turns N` it plays N and 2N turns instead and extrapolates to the budget: calls and output tokens
  scale with the turns, input tokens follow the history a turn carries (fitted on the two probes, so a method
  that resends its history grows quadratically; one that compresses it past a size only shows that late, so
  the fit overshoots it). An upper bound: episodes that end early cost less. Where the benchmark cannot be
  played here (no data, no engine) the probe plays the toy household, and tokens per call come from a recorded
  run of the benchmark with another method when there is one, else from toy (short prompts: a lower bound,
  marked).
"""

from __future__ import annotations

import argparse
import csv
import itertools
import json
import os
import statistics
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
CONF = REPO / "conf"
DEFAULT_SECONDS_PER_CALL = 5.0
"""Assumed seconds per remote call when no recorded run says otherwise (a served 8–70B model at T=0)."""


@dataclass(frozen=True)
class RoleCost:
    """Expected calls and tokens of one role in one episode."""

    calls: float
    input_tokens: float
    output_tokens: float


@dataclass(frozen=True)
class Profile:
    """What one episode of a method on a benchmark costs, and where the figures came from."""

    roles: dict[str, RoleCost]
    source: str
    seconds_per_call: float | None = None


@dataclass(frozen=True)
class Estimate:
    choices: dict[str, str]
    episodes: int
    episodes_source: str
    profile: Profile
    concurrency: int
    seconds_per_call: float
    prices: dict[str, Any] = field(default_factory=dict)

    @property
    def calls(self) -> float:
        return self.episodes * sum(r.calls for r in self.profile.roles.values())

    @property
    def tokens(self) -> tuple[float, float]:
        roles = self.profile.roles.values()
        return (
            self.episodes * sum(r.input_tokens for r in roles),
            self.episodes * sum(r.output_tokens for r in roles),
        )

    @property
    def hours(self) -> float:
        return self.calls * self.seconds_per_call / self.concurrency / 3600

    @property
    def cost(self) -> float | None:
        if not self.prices:
            return None
        total = 0.0
        for role, cost in self.profile.roles.items():
            price = self.prices.get(role) or self.prices.get("default")
            if not price:
                return None
            total += cost.input_tokens * float(price.get("input_per_mtok", 0)) / 1e6
            total += cost.output_tokens * float(price.get("output_per_mtok", 0)) / 1e6
        return total * self.episodes


def combinations(overrides: Sequence[str]) -> Iterator[list[str]]:
    """Expand sweep overrides (`method=raw,pos`) and an experiment's `hydra.sweeper.params` into plain override
    lists, the way Hydra's basic sweeper would (command-line values win over the experiment's)."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    parser = OverridesParser.create()
    fixed, swept = [], {}
    for override in parser.parse_overrides(list(overrides)):
        if override.is_sweep_override():
            swept[override.get_key_element()] = list(override.sweep_string_iterator())
        else:
            fixed.append(override.input_line)
    params = compose(fixed, hydra=True).hydra.sweeper.get("params") or {}
    for key, value in params.items():
        if key not in swept and not any(line.split("=", 1)[0].lstrip("+~") == key for line in fixed):
            (parsed,) = parser.parse_overrides([f"{key}={value}"])
            swept[key] = list(parsed.sweep_string_iterator()) if parsed.is_sweep_override() else [value]
    keys = list(swept)
    for values in itertools.product(*(swept[k] for k in keys)):
        yield fixed + [f"{k}={v}" for k, v in zip(keys, values)]


def compose(overrides: Sequence[str], *, hydra: bool = False) -> Any:
    """The config `overrides` give, composed in the open `configs()` context or in one of its own."""
    from hydra import compose as hydra_compose
    from hydra.core.global_hydra import GlobalHydra

    if GlobalHydra.instance().is_initialized():
        return hydra_compose("config", overrides=list(overrides), return_hydra_config=hydra)
    with configs():
        return hydra_compose("config", overrides=list(overrides), return_hydra_config=hydra)


def configs() -> Any:
    """A context in which every `compose` reuses one Hydra initialisation (half the cost of each compose)."""
    from hydra import initialize_config_dir

    return initialize_config_dir(config_dir=str(CONF), version_base="1.3")


def choices_of(cfg: Any) -> dict[str, str]:
    picked = cfg.hydra.runtime.choices
    return {group: str(picked.get(group)) for group in ("bench", "method", "model")}


def paper_cases(bench: str) -> int | None:
    """The paper's case count for `bench` (SPEC `paper_results.csv` in the shared folder), if it is there."""
    shared = os.environ.get("POS_BENCH_SHARED")
    table = (Path(shared) if shared else REPO.parent / "shared") / "spec" / "paper_results.csv"
    if not table.exists():
        return None
    with table.open(encoding="utf-8") as handle:
        counts = {int(row["n_cases"]) for row in csv.DictReader(handle) if row["benchmark"] == bench}
    return max(counts) if counts else None


def count_episodes(bench_node: Any, bench: str) -> tuple[int, str]:
    """The tasks the benchmark would play (its `limit` applied); the paper's count when its data is absent."""
    from hydra.utils import instantiate

    try:
        return len(instantiate(bench_node, _convert_="all").tasks()), "data"
    except Exception as error:  # noqa: BLE001 - any loader failure means "data absent here"; said in the table
        cases = paper_cases(bench)
        if cases is None:
            raise SystemExit(
                f"estimate: {bench}'s tasks cannot be listed ({error}) and the paper gives no count"
            )
        limit = bench_node.get("limit")
        return (min(cases, int(limit)) if limit else cases), f"paper (data absent: {type(error).__name__})"


def recorded_rows(
    results_root: Path, bench: str, method: str | None, settings: Mapping[str, Any] | None = None
) -> list[dict[str, Any]]:
    """Finished episodes of `bench` (and `method`, if given) under a results root, any model and run; with
    `settings`, only runs whose method config has those values (one strategy of `compaction`)."""
    pattern = f"{bench}/{method or '*'}/*/*/results.jsonl"
    rows = []
    for path in sorted(results_root.glob(pattern)):
        if settings and not method_has(path.parent / "run.json", settings):
            continue
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                row = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(row, dict) and row.get("status") == "done" and row.get("usage"):
                rows.append(row)
    return rows


def method_has(run_json: Path, settings: Mapping[str, Any]) -> bool:
    try:
        method = json.loads(run_json.read_text(encoding="utf-8"))["config"]["method"]
    except (OSError, ValueError, KeyError, TypeError):
        return False
    return all(str(method.get(k)) == str(v) for k, v in settings.items())


def mean_roles(rows: Sequence[dict[str, Any]]) -> dict[str, RoleCost]:
    roles = sorted({role for row in rows for role in row["usage"]})
    out = {}
    for role in roles:
        used = [row["usage"].get(role, {}) for row in rows]
        out[role] = RoleCost(
            calls=statistics.fmean(u.get("calls", 0) for u in used),
            input_tokens=statistics.fmean(u.get("input_tokens", 0) for u in used),
            output_tokens=statistics.fmean(u.get("output_tokens", 0) for u in used),
        )
    return out


def seconds_per_call(rows: Sequence[dict[str, Any]]) -> float | None:
    calls = sum(sum(u.get("calls", 0) for u in row["usage"].values()) for row in rows)
    seconds = sum(float(row.get("seconds") or 0) for row in rows)
    return seconds / calls if calls and seconds else None


def spread(count: int, k: int) -> list[int]:
    """`k` positions spread evenly over `count` tasks, the first always among them."""
    k = max(1, min(k, count))
    return sorted({i * count // k for i in range(k)})


def probe(
    method: str,
    turns: int,
    settings: Mapping[str, Any] | None = None,
    bench: Sequence[str] = ("bench=toy",),
    starts: Sequence[int] = (0,),
) -> tuple[float, dict[str, RoleCost]]:
    """Turns played and calls and tokens per role of an episode of `method` (with its `settings`) on `bench`
    (its choice and settings), `turns` turns at most, played by the scripted model with the stand-in endpoint's
    replies (`standin.replies.prompt_reply`): the mean over one task at each of `starts` (positions
    in the benchmark's task list; a benchmark whose tasks differ, LOCA's families, needs several)."""
    from omegaconf import OmegaConf

    from pos_bench.runner import run

    rows = []
    for start in starts:
        with tempfile.TemporaryDirectory(prefix="pos_bench-estimate-") as tmp:
            overrides = [
                *bench,
                f"method={method}",
                "model=scripted",
                "+model.default={_target_:pos_bench.standin.replies.prompt_reply,_partial_:true}",
                "+model.tokenizer=o200k_base",  # counted as the stand-in counts (docs/fullsize.md)
                f"bench.start={start}",
                "bench.limit=1",
                f"bench.max_turns={turns}",
                f"results_root={tmp}",
                "runner.progress=false",
                "runner.backend=threading",
                "runner.check_endpoints=false",
                "cache.mode=off",
                # `++`: also a key the method's config does not list (`+method.tokenizer=chars4`)
                *(f"++method.{k}={v}" for k, v in (settings or {}).items()),
            ]
            cfg = OmegaConf.to_container(compose(overrides), resolve=True)
            run(cfg, Path(tmp), {"bench": "probe", "method": method, "label": "test"})
            found = [json.loads(line) for line in (Path(tmp) / "results.jsonl").read_text().splitlines()]
        if not found or any(row.get("status") != "done" for row in found):
            raise RuntimeError(f"the probe episode did not finish: {[row.get('error') for row in found]}")
        rows += found
    played = statistics.fmean(max(int(row.get("turns") or 0), 1) for row in rows)
    return played, mean_roles([{**row, "usage": row.get("usage") or {}} for row in rows])


def extrapolated(
    short: tuple[float, dict[str, RoleCost]],
    long: tuple[float, dict[str, RoleCost]],
    turns: int,
    budget: int | None = None,
) -> dict[str, RoleCost]:
    """One episode of `turns` turns from probes of two lengths: calls and output tokens grow with the turns;
    input tokens per turn grow with the history a turn carries (a + b·t), fitted on the two probes, so a
    method that resends its history costs quadratically more, one that bounds it linearly. `budget` is the
    longer probe's turn budget: an episode that ended before it ends there whatever the budget."""
    (t1, first), (t2, second) = short, long
    if t2 <= t1 or t2 < 2 or (budget is not None and t2 < budget):  # the episode ended by itself
        return dict(second)
    out = {}
    for role, cost in second.items():
        before = first.get(role, RoleCost(0, 0, 0))
        # I(T) = a·T + b·T(T+1)/2 through (t1, I1) and (t2, I2)
        s1, s2 = t1 * (t1 + 1) / 2, t2 * (t2 + 1) / 2
        b = (cost.input_tokens * t1 - before.input_tokens * t2) / (s2 * t1 - s1 * t2)
        a = (cost.input_tokens - b * s2) / t2
        if b < 0 or a < 0:  # noisy or shrinking: linear in the turns
            a, b = cost.input_tokens / t2, 0.0
        out[role] = RoleCost(
            cost.calls / t2 * turns,
            a * turns + b * turns * (turns + 1) / 2,
            cost.output_tokens / t2 * turns,
        )
    return out


def profile_for(
    bench: str,
    method: str,
    max_turns: int,
    results_root: Path,
    probe_turns: int | None,
    settings: Mapping[str, Any] | None = None,
    bench_overrides: Sequence[str] = (),
    starts: Sequence[int] = (0,),
) -> Profile:
    """Recorded episodes of the method when there are; else its structure: the method played by the scripted
    model on the benchmark itself (on toy when the benchmark cannot be played here) for `max_turns` turns, or at
    `probe_turns` and twice that, extrapolated to `max_turns`."""
    rows = recorded_rows(results_root, bench, method, settings)
    if rows:
        return Profile(mean_roles(rows), f"recorded ({len(rows)} episodes)", seconds_per_call(rows))
    # the whole budget by default: a method whose history is compressed once it passes a size (ACON's t_hist)
    # shows it only late in an episode, and a short probe's fit then predicted 1.7× its input tokens
    whole = probe_turns is None or max_turns <= probe_turns
    lengths = (max_turns,) if whole else (probe_turns, min(2 * probe_turns, max_turns))
    try:
        probes = [probe(method, n, settings, [f"bench={bench}", *bench_overrides], starts) for n in lengths]
        where, others = bench, []
    except Exception:  # noqa: BLE001 - the benchmark's data or engine is absent here: its structure on toy
        probes = [probe(method, n, settings) for n in lengths]
        where, others = "toy", recorded_rows(results_root, bench, None)
    roles = extrapolated(probes[0], probes[-1], max_turns, lengths[-1])
    tasks = f"{len(starts)} tasks" if where == bench and len(starts) > 1 else "1 task"
    note = f"probed on {tasks} of {where} at {' and '.join(map(str, lengths))} turns"
    if others:  # toy's texts are short: the tokens per call of recorded episodes of this benchmark instead
        per_call = {
            role: (c.input_tokens / c.calls, c.output_tokens / c.calls)
            for role, c in mean_roles(others).items()
            if c.calls
        }
        for role, cost in roles.items():
            tin, tout = per_call.get(role, per_call.get("agent", (0.0, 0.0)))
            if tin or tout:
                roles[role] = RoleCost(cost.calls, cost.calls * tin, cost.calls * tout)
        note += f"; tokens per call from {len(others)} recorded {bench} episodes"
    elif where == "toy":
        note += "; toy tokens: a lower bound"
    return Profile(roles, f"structure (≤ {max_turns} turns; {note})")


def concurrency_of(cfg: Any, given: int | None) -> int:
    if given:
        return given
    jobs = int(cfg.runner.get("n_jobs") or 1)
    cap = cfg.model.get("max_concurrency")
    return max(1, min(jobs, int(cap)) if cap else jobs)


def beyond_the_paper(overrides: Sequence[str]) -> list[list[str]]:
    """The `beyond_the_paper` block of an experiment (methods the paper does not have, e.g. issue 42's
    compaction strategies): one list of overrides per line, the command line's overrides first."""
    experiment = [o for o in overrides if o.lstrip("+~").startswith("experiment=")]
    lines = compose(experiment).get("beyond_the_paper") if experiment else None
    # each line names its own method: the command line's `method=raw,pos` (and method settings) stay out of it
    kept = [o for o in overrides if o.lstrip("+~").split("=", 1)[0].split(".")[0] != "method"]
    return [[*kept, *str(line).split()] for line in (lines or ())]


PROBE_SET = ("bench.limit", "bench.start", "bench.max_turns")
"""Bench settings the probe sets itself."""


def bench_settings(combo: Sequence[str]) -> list[str]:
    """The `bench.<key>=<value>` overrides of a combination, but those the probe sets: how the benchmark is
    configured (its data folder, its lengths)."""
    return [
        o for o in combo if o.lstrip("+~").startswith("bench.") and not o.lstrip("+~").startswith(PROBE_SET)
    ]


def composed_bench_settings(cfg: Any, bench: str) -> list[str]:
    """The bench settings the combination's whole config gives that `bench=<bench>` alone does not: those an
    experiment sets in its own file (ClinDiag's `provider: llm` and `judge: llm`), which the combination's
    overrides do not show. Plain values only; interpolations (read from the roles) are left to resolve."""
    from omegaconf import OmegaConf

    plain = OmegaConf.to_container(compose([f"bench={bench}"]).bench, resolve=False)
    given = OmegaConf.to_container(cfg.bench, resolve=False)
    out = []
    for key, value in given.items():
        scalar = value is None or isinstance(value, bool | int | float | str)
        interpolated = isinstance(value, str) and "${" in value
        if (
            scalar
            and not interpolated
            and plain.get(key) != value
            and not f"bench.{key}".startswith(PROBE_SET)
        ):
            out.append(f"bench.{key}={json.dumps(value)}")
    return out


def role_models(cfg: Any) -> list[str]:
    """Overrides that give each per-role model of the config (a ClinDiag provider or judge) the stand-in's
    replies, counted as the stand-in counts, as the policy's are: those calls are part of an episode's cost."""
    out = []
    for role in sorted(cfg.get("roles") or {}):
        out += [
            f"+model@roles.{role}=scripted",
            f"+roles.{role}.default={{_target_:pos_bench.standin.replies.prompt_reply,_partial_:true}}",
            f"+roles.{role}.tokenizer=o200k_base",
        ]
    return out


def probe_overrides(combo: Sequence[str], cfg: Any, bench: str) -> list[str]:
    """The combination's bench settings, those its experiment sets, and the stand-in's replies for its roles."""
    given = bench_settings(combo)
    named = {o.lstrip("+~").split("=", 1)[0] for o in given}
    extra = [o for o in composed_bench_settings(cfg, bench) if o.split("=", 1)[0] not in named]
    return [*given, *extra, *role_models(cfg)]


def method_settings(combo: Sequence[str]) -> dict[str, str]:
    """The `method.<key>=<value>` overrides of a combination: which variant of the method it plays."""
    pairs = (o.lstrip("+~").split("=", 1) for o in combo if o.lstrip("+~").startswith("method."))
    return {key.removeprefix("method."): value for key, value in pairs}


def estimate(overrides: Sequence[str], args: argparse.Namespace) -> list[Estimate]:
    """The paper's rows the overrides (and their experiment) name."""
    return estimate_combinations(list(combinations(overrides)), args)


def estimate_combinations(combos: Sequence[Sequence[str]], args: argparse.Namespace) -> list[Estimate]:
    from omegaconf import OmegaConf

    out, profiles, counts = [], {}, {}
    for combo in combos:
        cfg = compose(combo, hydra=True)
        picked = choices_of(cfg)
        settings = method_settings(combo)
        if settings:
            picked["method"] += "@" + ",".join(
                f"{k}={v}" if k != "strategy" else v for k, v in settings.items()
            )
        bench_key = json.dumps(OmegaConf.to_container(cfg.bench, resolve=True), sort_keys=True, default=str)
        if bench_key not in counts:
            counts[bench_key] = count_episodes(cfg.bench, picked["bench"])
        episodes, source = counts[bench_key]
        root = Path(args.results or cfg.results_root)
        key = (picked["bench"], picked["method"])
        if key not in profiles:
            profiles[key] = profile_for(
                picked["bench"],
                choices_of(cfg)["method"],
                int(cfg.bench.max_turns),
                root,
                args.probe_turns,
                settings,
                probe_overrides(combo, cfg, picked["bench"]),
                [int(cfg.bench.get("start") or 0) + i for i in spread(episodes, args.probe_tasks)],
            )
        profile = profiles[key]
        prices = OmegaConf.to_container(cfg.prices, resolve=True) or {}
        if args.input_per_mtok is not None or args.output_per_mtok is not None:
            prices = {
                "default": {
                    "input_per_mtok": args.input_per_mtok or 0,
                    "output_per_mtok": args.output_per_mtok or 0,
                }
            }
        speed = getattr(args, "speed", None)
        calls = sum(r.calls for r in profile.roles.values())
        measured = (
            speed.first_token_s
            + sum(r.output_tokens for r in profile.roles.values()) / calls / speed.tokens_per_s
            if speed is not None and calls
            else None
        )  # one call at the measured speed, alone on the server (more in flight share it)
        spc = args.seconds_per_call or measured or profile.seconds_per_call or DEFAULT_SECONDS_PER_CALL
        out.append(
            Estimate(picked, episodes, source, profile, concurrency_of(cfg, args.concurrency), spc, prices)
        )
    return out


def format_estimates(estimates: Sequence[Estimate]) -> str:
    head = f"{'bench':<10} {'method':<22} {'model':<10} {'eps':>5} {'calls/ep':>9} {'Mtok in':>9} {'Mtok out':>9} {'hours':>8} {'cost':>10}  source"
    lines = [head, "-" * len(head)]
    for e in estimates:
        tin, tout = e.tokens
        per_episode = sum(r.calls for r in e.profile.roles.values())
        cost = "-" if e.cost is None else f"{e.cost:,.2f}"
        lines.append(
            f"{e.choices['bench']:<10} {e.choices['method']:<22} {e.choices['model']:<10} {e.episodes:>5} "
            f"{per_episode:>9.1f} {tin / 1e6:>9.2f} {tout / 1e6:>9.2f} {e.hours:>8.1f} {cost:>10}  "
            f"{e.profile.source}; episodes: {e.episodes_source}; {e.seconds_per_call:g} s/call × "
            f"{e.concurrency} in flight"
        )
        roles = ", ".join(
            f"{role} {c.calls:.1f} calls/{c.input_tokens / 1e3:.1f}k in/{c.output_tokens / 1e3:.1f}k out"
            for role, c in e.profile.roles.items()
        )
        lines.append(f"{'':<10} per episode: {roles}")
    total_hours = sum(e.hours for e in estimates)
    costs = [e.cost for e in estimates]
    total_cost = "-" if any(c is None for c in costs) else f"{sum(costs):,.2f}"
    lines.append(
        f"total: {len(estimates)} runs, {sum(e.calls for e in estimates):,.0f} calls, "
        f"{total_hours:,.1f} hours (runs one after another), cost {total_cost}"
    )
    return "\n".join(lines)


def measured_speed(overrides: Sequence[str]) -> Any:
    """The configured model's speed (`models/speed.py`) for the first combination, its warnings printed."""
    from omegaconf import OmegaConf

    from pos_bench.models.speed import speed_warnings

    cfg = OmegaConf.to_container(compose(next(combinations(overrides))), resolve=True)
    speed, lines = speed_warnings(cfg)
    if speed is not None:
        print(
            f"measured: first token {speed.first_token_s:.2f} s, {speed.tokens_per_s:.1f} tokens/s per request "
            "(alone on the server; seconds per call below use it)"
        )
    for line in lines:
        print(f"warning: {line}")
    return speed


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pos_bench.estimate", description=__doc__.split("\n")[0])
    parser.add_argument("overrides", nargs="*", help="Hydra overrides, sweeps included (method=raw,pos)")
    parser.add_argument(
        "--seconds-per-call", type=float, help=f"default: recorded, else {DEFAULT_SECONDS_PER_CALL}"
    )
    parser.add_argument(
        "--concurrency", type=int, help="calls in flight (default: min(n_jobs, max_concurrency))"
    )
    parser.add_argument(
        "--results", help="results root with recorded runs (default: the config's results_root)"
    )
    parser.add_argument("--input-per-mtok", type=float, help="price per million input tokens (all roles)")
    parser.add_argument("--output-per-mtok", type=float, help="price per million output tokens (all roles)")
    parser.add_argument(
        "--probe-turns",
        type=int,
        help="play the structural probe for N and 2N turns and extrapolate to the budget (default: play the "
        "whole turn budget once, exact for episodes that play it out)",
    )
    parser.add_argument(
        "--probe-tasks",
        type=int,
        default=5,
        help="tasks the structural probe plays, spread over the benchmark's list, their mean taken (default 5; "
        "ALFWorld's first game alone predicted 0.84x raw's input tokens, ten games 0.99x); where tasks differ "
        "in kind (LOCA's 15 families) probe one of each",
    )
    parser.add_argument(
        "--measure-speed",
        action="store_true",
        help="time one streamed reply of the configured model (one request; the server must be up): seconds "
        "per call from its speed, and a warning per reply limit that would take minutes",
    )
    args = parser.parse_args(argv)
    from pos_bench.runner.overrides import settable

    args.overrides = settable(args.overrides)  # `model.timeout=2` as `python -m pos_bench` takes it
    with configs():
        args.speed = measured_speed(args.overrides) if args.measure_speed else None
        print(format_estimates(estimate(args.overrides, args)))
        extra = [combo for line in beyond_the_paper(args.overrides) for combo in combinations(line)]
        if extra:
            print("\nbeyond the paper (the experiment's `beyond_the_paper` block):")
            print(format_estimates(estimate_combinations(extra, args)))
    return 0
