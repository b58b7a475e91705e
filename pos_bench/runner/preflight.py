"""Config checks that run before the first episode: a setting that would fail every episode stops the run at
once, with one message per problem naming the key and what was expected, and no Python traceback.

Every `_target_` node is checked against its class's constructor: an unknown key is reported with the valid
ones, and each value is validated (pydantic) against the parameter's annotation. The plain records (`runner`,
`retry`, `cache`, `prices`) are checked the same way against their dataclasses, then built so their own range
checks run. A model whose key variable is unset or empty is reported too. Then the benchmark, model and method
are built once, and the method is asked whether it supports the benchmark's first observation.
"""

from __future__ import annotations

import inspect
import math
import os
import re
import sys
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from hydra.errors import InstantiationException
from hydra.utils import get_object
from pydantic import ConfigDict, TypeAdapter, ValidationError

from pos_bench.build import build
from pos_bench.loop import RetryBudget
from pos_bench.models.cache import CacheConfig, ResponseStore
from pos_bench.models.retry import RetryPolicy
from pos_bench.models.roles import build_model
from pos_bench.protocols import Benchmark, ExpertBenchmark, LabelledBenchmark, Model, SourcedBenchmark
from pos_bench.redact import env_setting_problems, escaped, key_variables
from pos_bench.runner.context_fit import context_problem
from pos_bench.runner.endpoints import endpoint_problems
from pos_bench.runner.episode import no_expert
from pos_bench.runner.pool import Placement
from pos_bench.runner.summary import Price
from pos_bench.transcript import folder_name
from pos_bench.types import Observation, Task, to_jsonable

HYDRA_KEYS = frozenset({"_target_", "_partial_", "_convert_", "_recursive_", "_args_"})
LAX = ConfigDict(arbitrary_types_allowed=True)


class ConfigError(ValueError):
    """The run's config cannot work; the message lists every problem found, one per line."""


@dataclass(frozen=True)
class RunnerConfig:
    n_jobs: int = 1
    """Episodes in flight at once."""
    backend: str = "loky"
    """`loky` (one worker process per slot, for CPU-bound engines and local models), `threading` (for remote
    endpoints, where episodes mostly wait on the network) or `ray` (processes on a Ray cluster); see
    `runner/pool/`."""
    workers: int | None = None
    """Ray: worker processes sharing the `n_jobs` episodes in flight (default: one per episode)."""
    ray_address: str | None = None
    """Ray: the cluster to join; default `$RAY_ADDRESS`, else a local instance on loopback."""
    retry_errors: bool = True
    """On resume, play again the episodes that ended in an error (their old rows are dropped); false keeps
    them as finished."""
    max_meta_per_turn: int = 3
    """Meta-actions (glimpse, retrieve…) allowed in one turn before the turn counts as spent."""
    progress: bool = True
    episode_timeout: float = 7200.0
    """Seconds one episode may run (2 h); past it the episode is an `EpisodeTimeout` error row, its worker
    is replaced and the run goes on (thread and process slots)."""
    check_endpoints: bool = True
    """Before the first episode, ask every remote endpoint (per role) for its models (`runner/endpoints.py`):
    unreachable, a model it does not serve or a refused key stops the run with exit 2."""
    trials: int = 1
    """K: each task is played K times in one run, one row per (task, trial). Not part of the fingerprint, so
    raising it continues a run (only the new trials are played)."""
    measure_speed: bool = False
    """Before the first episode, time one streamed reply of the configured model (`models/speed.py`) and warn
    when a reply the run may ask for (`model.max_tokens`, the method's `…max_tokens`) would take minutes."""
    env_slots: int | None = None
    """Environment steps computing at once on a host, across all episodes in flight (`runner/env_slots.py`):
    null gives a compute-bound benchmark's environments (ALFWorld) the host's cores and any other no limit;
    a number sets it for any benchmark; 0 is no limit."""
    allow_code_change: bool = False
    """Resume a run folder whose episodes ran on other code (`runner/code.py`); which episodes ran on which
    code is kept in `run.json`'s `code_history`."""

    def __post_init__(self) -> None:
        if self.trials < 1:
            raise ValueError(f"runner.trials must be ≥ 1 (plays per task), got {self.trials}")
        if self.episode_timeout <= 0:
            raise ValueError(f"runner.episode_timeout must be > 0 seconds, got {self.episode_timeout}")
        if self.n_jobs == 0 or self.n_jobs < -1:
            raise ValueError(f"runner.n_jobs must be a positive number or -1 (all cores), got {self.n_jobs}")
        self.placement()
        if self.env_slots is not None and self.env_slots < 0:
            raise ValueError(f"runner.env_slots must be ≥ 0 (0: no limit) or null, got {self.env_slots}")
        if self.max_meta_per_turn < 0:
            raise ValueError(f"runner.max_meta_per_turn must be ≥ 0, got {self.max_meta_per_turn}")

    def placement(self) -> Placement:
        return Placement(self.backend, self.n_jobs, self.workers, self.ray_address, self.episode_timeout)


RECORDS = {
    "runner": RunnerConfig,
    "retry": RetryPolicy,
    "cache": CacheConfig,
    "prices": Price,
    "loop": RetryBudget,
}
"""The plain config nodes and the records that validate them."""


def _annotations(function: Callable[..., Any]) -> dict[str, Any]:
    try:
        return typing.get_type_hints(function)
    except Exception:  # noqa: BLE001 - an annotation that does not resolve is simply not checked
        return {}


def _parameters(target: Any) -> tuple[dict[str, inspect.Parameter], dict[str, Any], bool]:
    function = target.__init__ if inspect.isclass(target) else target
    parameters = dict(inspect.signature(function).parameters)
    parameters.pop("self", None)
    open_ended = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values())
    return parameters, _annotations(function), open_ended


def _value_problem(key: str, value: Any, annotation: Any) -> str | None:
    if annotation is inspect.Parameter.empty or annotation is Any:
        return None
    try:
        adapter = TypeAdapter(annotation, config=LAX)
    except Exception:  # noqa: BLE001 - a type pydantic cannot express (a Protocol, a callable) is not checked
        return None
    try:
        adapter.validate_python(value)
    except ValidationError as error:
        first = error.errors()[0]["msg"]
        expected = getattr(annotation, "__name__", None) or str(annotation).replace("typing.", "")
        return f"{key}={value!r}: {first} (expected {expected})"
    return None


def signature_problems(
    path: str, target: Any, values: Mapping[str, Any], *, supplied: tuple[str, ...] = ()
) -> list[str]:
    """Problems of `values` as keyword arguments of `target` (unknown keys, wrong types)."""
    parameters, hints, open_ended = _parameters(target)
    settable = sorted(k for k, p in parameters.items() if p.kind is not p.VAR_KEYWORD and k not in supplied)
    name = getattr(target, "__qualname__", str(target))
    problems = []
    for key, value in values.items():
        if key in HYDRA_KEYS:
            continue
        full = f"{path}.{key}"
        if key not in parameters or parameters[key].kind is inspect.Parameter.VAR_KEYWORD:
            if not open_ended:
                problems.append(f"{full}: not a setting of {name} (its settings: {', '.join(settable)})")
            continue
        if isinstance(value, Mapping) and "_target_" in value:
            problems.extend(node_problems(full, value))
            continue
        problem = _value_problem(full, value, hints.get(key, parameters[key].annotation))
        if problem:
            problems.append(problem)
    return problems


def node_problems(path: str, node: Any, *, supplied: tuple[str, ...] = ()) -> list[str]:
    """Problems of one `_target_` node; `supplied` names the arguments the runner passes itself."""
    if not isinstance(node, Mapping) or not isinstance(node.get("_target_"), str):
        return [f"{path}: expected a config node with a _target_, got {node!r}"]
    try:
        target = get_object(node["_target_"])
    except Exception as error:  # noqa: BLE001 - any import failure is this node's problem
        return [f"{path}._target_={node['_target_']!r} cannot be loaded: {type(error).__name__}: {error}"]
    return signature_problems(path, target, node, supplied=supplied)


def record_problems(path: str, record: type, values: Any) -> list[str]:
    """Problems of a plain record node (`runner`, `retry`, `cache`): keys, types, then its own checks."""
    if values is None:
        return []
    if not isinstance(values, Mapping):
        return [f"{path}: expected a mapping of settings, got {values!r}"]
    problems = signature_problems(path, record, values)
    if not problems:
        try:
            record(**values)
        except (TypeError, ValueError) as error:
            problems.append(f"{path}: {error}")
    return problems


def missing_keys(path: str, node: Mapping[str, Any], environ: Mapping[str, str]) -> list[str]:
    return [
        f"{path}.api_key_env: the environment variable {name} is unset or empty; export {name}=… (or set "
        f"{path}.api_key_env to the variable holding the key, or null for a server that takes no key)"
        for name in dict.fromkeys(key_variables({k: v for k, v in node.items() if k != "roles"}))
        if not environ.get(name, "").strip()
    ]


PATH_KEY = re.compile(r"(^|_)(path|dir|root)$|^results_root$")
"""Setting names that hold a file or folder: an empty one would mean the current or root folder by accident."""


def value_problems(value: Any, path: str = "") -> list[str]:
    """Non-finite numbers anywhere in the config (no setting means NaN or infinity: every comparison with NaN
    is false, so range checks would pass it) and path settings given as an empty string."""
    if isinstance(value, float) and not math.isfinite(value):
        return [f"{path}={value}: not a finite number"]
    if isinstance(value, str) and not value.strip() and PATH_KEY.search(path.rpartition(".")[2]):
        return [f"{path}: an empty path; give a file or folder (or null where the setting allows none)"]
    if isinstance(value, Mapping):
        return [p for k, v in value.items() for p in value_problems(v, f"{path}.{k}" if path else str(k))]
    if isinstance(value, list | tuple):
        return [p for i, v in enumerate(value) for p in value_problems(v, f"{path}[{i}]")]
    return []


def config_problems(
    cfg: Mapping[str, Any], records: Mapping[str, type], environ: Mapping[str, str] | None = None
) -> list[str]:
    """Every problem of a resolved run config. `records` maps the plain nodes to their record types."""
    environ = os.environ if environ is None else environ
    problems = (
        value_problems(dict(cfg)) + env_setting_problems(cfg) + node_problems("bench", cfg.get("bench"))
    )
    problems += node_problems("method", cfg.get("method"), supplied=("model",))
    models = {"model": cfg.get("model"), **{f"roles.{r}": n for r, n in (cfg.get("roles") or {}).items()}}
    offline = (cfg.get("cache") or {}).get("mode") == "replay"  # nothing reaches a provider: no key needed
    for path, node in models.items():
        found = node_problems(path, node)
        problems += found
        if not found and not offline:
            problems += missing_keys(path, node, environ)
    for path, record in records.items():
        if path == "prices":
            for role, price in (cfg.get("prices") or {}).items():
                problems += record_problems(f"prices.{role}", record, price)
        else:
            problems += record_problems(path, record, cfg.get(path))
    return problems


def check_config(cfg: Mapping[str, Any], records: Mapping[str, type]) -> None:
    problems = config_problems(cfg, records)
    if problems:
        raise ConfigError("the config has problems; nothing was run:\n  " + "\n  ".join(problems))


@dataclass(frozen=True)
class Prepared:
    """What the pre-flight checks built: the task list and the model's identity."""

    tasks: list[Task]
    description: Mapping[str, Any]
    """The model's `describe()`; empty for a run that calls no model (the expert's), so none is recorded."""
    labels: Mapping[str, str] = field(default_factory=dict)
    """Labels the run's choices cannot give, added to the run's: the benchmark's own (e.g. `judge`), and
    `model: none` for a run that calls no model."""
    upstream: Mapping[str, Any] | None = None
    """The benchmark's outside code (`SourcedBenchmark.upstream()`), for run.json and the fingerprint."""


def preflight(cfg: Mapping[str, Any]) -> Prepared:
    """Find, before the first episode, the config errors that would fail every episode (`ConfigError`)."""
    check_config(cfg, RECORDS)
    benchmark, tasks = built_benchmark(cfg)
    problem = id_problem(tasks)
    if problem:
        raise ConfigError(problem)
    expert = bool(cfg.get("expert", False))
    if expert and not isinstance(benchmark, ExpertBenchmark):
        raise ConfigError(no_expert(benchmark))
    labels = dict(benchmark.labels) if isinstance(benchmark, LabelledBenchmark) else {}
    if expert:
        labels["model"] = "none"  # the benchmark's planner plays; the configured model is never called
    try:
        model = build_model(cfg)
        description = {} if expert else dict(model.describe())
        method = build(cfg["method"])(model=model)
    except Exception as error:
        raise ConfigError(f"the model or method cannot be built: {type(error).__name__}: {error}") from error
    first = first_observation(benchmark, model, tasks) if tasks else None
    problem = method.unsupported(first) if first else None
    problem = problem or (context_problem(cfg, benchmark.brief, first) if first and not expert else None)
    if problem:
        raise ConfigError(problem)
    if RunnerConfig(**(cfg.get("runner") or {})).check_endpoints and cache_may_call(cfg):
        problems = list(endpoint_problems(cfg))
        if problems:
            raise ConfigError(
                "an endpoint cannot serve this run; nothing was run (runner.check_endpoints=false skips this "
                "check):\n  " + "\n  ".join(problems)
            )
    if RunnerConfig(**(cfg.get("runner") or {})).measure_speed and cache_may_call(cfg) and not expert:
        warn_slow_replies(cfg)
    cache = CacheConfig(**(cfg.get("cache") or {}))
    if cache.mode != "off":
        ResponseStore(cache.path, timeout=5.0).check()
    upstream = to_jsonable(benchmark.upstream()) if isinstance(benchmark, SourcedBenchmark) else None
    return Prepared(tasks, description, labels, upstream)


def warn_slow_replies(cfg: Mapping[str, Any]) -> None:
    """`runner.measure_speed`: the model's measured speed on stderr, and a warning per slow reply limit."""
    from pos_bench.models.speed import speed_warnings

    try:
        speed, lines = speed_warnings(cfg)
    except Exception as error:  # noqa: BLE001 - a failed probe is a warning; the endpoint check has passed
        speed, lines = None, [f"speed not measured: {type(error).__name__}: {escaped(str(error))[:300]}"]
    if speed is not None:
        print(
            f"model speed: first token {speed.first_token_s:.2f} s, {speed.tokens_per_s:.1f} tokens/s per request",
            file=sys.stderr,
        )
    for line in lines:
        print(f"warning: {line}", file=sys.stderr)


def cache_may_call(cfg: Mapping[str, Any]) -> bool:
    """Whether the run may call a model at all: a `replay` cache answers from its file alone."""
    return (cfg.get("cache") or {}).get("mode") != "replay"


def built_benchmark(cfg: Mapping[str, Any]) -> tuple[Benchmark, list[Task]]:
    """The configured benchmark and its task list; any failure here would fail every episode, so it is
    reported once, with its cause."""
    try:
        benchmark = build(cfg["bench"])
        return benchmark, list(benchmark.tasks())
    except Exception as error:
        cause = error.__cause__ if isinstance(error, InstantiationException) and error.__cause__ else error
        raise ConfigError(f"bench cannot be built: {type(cause).__name__}: {cause}") from error


def id_problem(tasks: list[Task]) -> str | None:
    """Two tasks whose ids would share a results key or an episode folder (the same id twice, or folder
    names equal once case is ignored), named both; None when every id has its own."""
    seen: dict[str, str] = {}
    for task in tasks:
        if not isinstance(task.id, str) or not task.id:
            return f"the benchmark gave a task with an empty or non-text id ({task.id!r}); nothing was run."
        key = folder_name(task.id).casefold()
        if key in seen:
            return f"two tasks share an episode folder: {seen[key]!r} and {task.id!r}; nothing was run."
        seen[key] = task.id
    return None


def first_observation(benchmark: Benchmark, model: Model, tasks: list[Task]) -> Observation:
    """The opening observation of the first task, for the method's `unsupported` check (no action taken)."""
    env = benchmark.make_env(model)
    try:
        return env.reset(tasks[0])
    finally:
        env.close()
