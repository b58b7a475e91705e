"""`python -m pos_bench bench=… method=… model=…`: compose the config, check it, pick the run folder of its
fingerprint, run, print the summary table and the errors' causes.

Exit codes: 0 done; 1 every episode errored; 2 nothing was run (a config error, another process on the run
folder, a bad results or cache file, other episode code); 3 the disk is full (free space, rerun to resume); 130
interrupted (rerun the same command to resume).
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import hydra
from hydra.core.hydra_config import HydraConfig
from hydra.core.utils import JobStatus
from hydra.experimental.callback import Callback
from hydra.types import RunMode
from omegaconf import DictConfig, OmegaConf

from pos_bench.redact import escaped
from pos_bench.types import to_jsonable

if TYPE_CHECKING:
    from pos_bench.runner.summary import Summary

# The runner, the models and the summary (pandas, joblib/loky, SDKs) are imported inside the functions that use
# them, so `--help`, `--cfg job` and a config error cost little more than Hydra (tests/test_startup.py guards it;
# scripts/bench_startup.py measures it).


def refusals() -> tuple[type[BaseException], ...]:
    """Errors that stop a run before (or instead of) playing: one message, exit code 2."""
    from pos_bench.models.cache import CacheError
    from pos_bench.runner import RunLocked
    from pos_bench.runner.identity import RunMismatch
    from pos_bench.runner.preflight import ConfigError
    from pos_bench.runner.results import ResultsError

    return (ConfigError, RunMismatch, RunLocked, ResultsError, CacheError)


def run_labels(cfg: dict[str, Any], description: dict[str, Any]) -> dict[str, Any]:
    """Labels come from the Hydra choices; a run on a smoke-test model (SmolLM2) is labelled `smoke`, one on
    the scripted test double `test`."""
    choices = HydraConfig.get().runtime.choices
    label = "smoke" if description.get("smoke") else "test" if description.get("test") else "full"
    return {
        "bench": choices.get("bench"),
        "method": choices.get("method"),
        "model": choices.get("model"),
        "label": label,
    }


@dataclass(frozen=True)
class JobOutcome:
    """What one job leaves for a sweep's table: its labels, its summary and run folder when it ran, else the
    one-line cause it failed with, and the exit code it would have had alone (0, 1 or 2)."""

    labels: dict[str, Any]
    summary: Summary | None = None
    run_dir: str | None = None
    failure: str | None = None
    code: int = 0


def run_command(cfg: DictConfig) -> JobOutcome:
    from pos_bench.redact import redactor_for
    from pos_bench.runner import preflight, run
    from pos_bench.runner.identity import RunIndex, run_identity
    from pos_bench.runner.logs import held_logs
    from pos_bench.runner.summary import format_errors, format_notes, format_table

    plain = OmegaConf.to_container(cfg, resolve=True)
    redactor = redactor_for(plain)
    # dependencies' log lines (a benchmark's imports, servers the pre-flight check starts): run.log, not the terminal
    with held_logs(redactor):
        prepared = preflight(plain)
        identity = run_identity(plain, prepared.description, prepared.upstream)
        hydra_cfg = HydraConfig.get()
        runs = RunIndex(Path(hydra_cfg.runtime.output_dir))
        run_dir = runs.folder_for(identity, list(hydra_cfg.overrides.task))
        print(f"run folder: {run_dir} (fingerprint {identity.short}; runs here: {runs.path})", flush=True)
        labels = run_labels(plain, dict(prepared.description))
        overrides = list(hydra_cfg.overrides.task)
        summary = run(plain, run_dir, labels, prepared=prepared, identity=identity, overrides=overrides)
        print(redactor.text(format_table([summary])))
        for extra in (format_notes(summary), format_errors(summary, run_dir)):
            if extra:
                print(redactor.text(extra))
    print(f"results: {run_dir}")
    if summary.episodes and summary.errors + summary.refused + summary.overflow == summary.episodes:
        # nothing was played: every episode errored, or the server refused (or overflowed on) its first request
        cause = summary.error_causes[0].cause if summary.error_causes else "refused by the server, see above"
        return JobOutcome(dict(labels), summary, str(run_dir), f"every episode errored ({cause})", 1)
    return JobOutcome(dict(labels), summary, str(run_dir))


def chosen_labels() -> dict[str, Any]:
    choices = HydraConfig.get().runtime.choices
    return {key: choices.get(key) for key in ("bench", "method", "model")}


@hydra.main(version_base="1.3", config_path="../conf", config_name="config")
def main(cfg: DictConfig) -> JobOutcome:
    """One job. Alone it exits 2 on a refusal and 1 when every episode errored; inside a `-m` sweep it returns
    the failure instead, so the other jobs run and the sweep's table lists this one with its cause."""
    from pos_bench.runner import DiskFull, RunInterrupted, stop

    stop.listen()
    in_sweep = HydraConfig.get().mode == RunMode.MULTIRUN
    try:
        outcome = run_command(cfg)
    except refusals() as error:
        print(f"error: {escaped(str(error))}", file=sys.stderr, flush=True)
        drop_unused_job_folder(cfg.get("results_root"))
        if in_sweep:
            return JobOutcome(chosen_labels(), failure=first_line(error), code=2)
        raise SystemExit(2) from None
    except DiskFull as error:
        print(f"error: {escaped(str(error))}", file=sys.stderr, flush=True)
        raise SystemExit(3) from None
    except (RunInterrupted, KeyboardInterrupt) as error:
        print(str(error) or "interrupted; run the same command again to resume.", file=sys.stderr, flush=True)
        sys.stdout.flush()
        stop.release_before_fast_exit()
        # threads still playing an episode must not hold the exit; saved rows are on disk
        os._exit(stop.exit_code())
    except Exception as error:
        if not in_sweep:
            raise
        print(f"error: {type(error).__name__}: {escaped(str(error))}", file=sys.stderr, flush=True)
        return JobOutcome(chosen_labels(), failure=f"{type(error).__name__}: {first_line(error)}", code=1)
    if outcome.code == 1:
        print("error: every episode errored (causes above)", file=sys.stderr, flush=True)
        if not in_sweep:
            raise SystemExit(1)
    if not in_sweep and cfg.get("report") and outcome.run_dir:
        write_report([outcome.run_dir], Path(cfg.report))
    return outcome


def drop_unused_job_folder(results_root: Any) -> None:
    """Hydra makes a job's folder (`<bench>/<method>/<model>`) and an empty job log in it before the job runs;
    a job refused before it wrote anything there takes them away again, with the parents it leaves empty up to
    `results_root`, so a mistyped setting leaves no folder behind. A folder holding anything else is left."""
    hydra = HydraConfig.get()
    folder = Path(hydra.runtime.output_dir).resolve()
    log = folder / f"{hydra.job.name}.log"
    try:
        root = Path(str(results_root)).resolve()
        if [p.name for p in folder.iterdir()] != [log.name] or log.stat().st_size:
            return
        log.unlink()
        while root in folder.parents and not any(folder.iterdir()):
            folder.rmdir()
            folder = folder.parent
    except OSError:  # gone meanwhile, or another job writing beside it: leave it
        return


def first_line(error: BaseException) -> str:
    return (str(error).strip().splitlines() or [type(error).__name__])[0][:300]


def write_report(run_dirs: list[str], path: Path) -> None:
    """The HTML report of `run_dirs` at `path` (`report=` in the config; the quick start sets it)."""
    from pos_bench.report.page import render  # pandas and matplotlib: only when a report is asked for

    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render([Path(d) for d in run_dirs], spec=None), encoding="utf-8")
    print(f"report: {path.resolve()} (open it in a browser)", flush=True)


def is_outcome(value: Any) -> bool:
    """A `JobOutcome`, whether made by this module run as `__main__` or imported as `pos_bench.__main__` (the
    callback's module): the two are different classes of one shape."""
    return dataclasses.is_dataclass(value) and type(value).__name__ == JobOutcome.__name__


SWEEP_LOG = "POS_BENCH_SWEEP_LOG"
"""Environment variable naming the file where a sweep's jobs list their outcomes."""


class SweepTable(Callback):
    """After a `-m` sweep, print one table with a row per job that ran and one line per job that failed (with its
    cause), write the HTML report of the sweep's runs when the config names one (`report=`), and exit with the
    worst job's code.

    With a launcher that runs jobs in other processes or on other hosts (submitit), `on_job_end` runs
    there and `on_multirun_end` here, so each job appends its outcome to a file in the sweep directory
    (named by an environment variable the jobs inherit) and the table is read back from it.
    """

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        log = Path(config.hydra.sweep.dir).resolve() / f".sweep-{os.getpid()}-{time.time_ns()}.jsonl"
        log.parent.mkdir(parents=True, exist_ok=True)
        log.write_text("")
        os.environ[SWEEP_LOG] = str(log)

    def on_job_end(self, config: DictConfig, job_return: Any, **kwargs: Any) -> None:
        log = os.environ.get(SWEEP_LOG)
        if not log:
            return
        num = job_return.hydra_cfg.hydra.job.num
        if job_return.status == JobStatus.COMPLETED and is_outcome(job_return.return_value):
            row = {"num": num, **to_jsonable(job_return.return_value)}
        else:  # a failure the job could not turn into an outcome
            error = job_return._return_value
            choices = job_return.hydra_cfg.hydra.runtime.choices
            labels = {key: choices.get(key) for key in ("bench", "method", "model")}
            row = {"num": num, "labels": labels, "failure": f"{type(error).__name__}: {error}", "code": 1}
        with open(log, "a", encoding="utf-8") as f:  # one short line per job: appends do not interleave
            f.write(json.dumps(row, ensure_ascii=False, default=str) + "\n")

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        log = Path(os.environ.pop(SWEEP_LOG, "") or "/nonexistent")
        if not log.is_file():
            return
        rows = sorted((json.loads(line) for line in log.read_text().splitlines()), key=lambda r: r["num"])
        log.unlink()
        if not rows:
            return
        print("\n== sweep ==")
        from pos_bench.runner.summary import format_table

        summaries = [row["summary"] for row in rows if row.get("summary")]
        if summaries:
            print(format_table(summaries))
        for row in rows:
            if row.get("failure"):
                name = "/".join(str(row["labels"].get(k)) for k in ("bench", "method", "model"))
                print(f"job #{row['num']} {name} failed: {escaped(str(row['failure']))}")
        folders = [row["run_dir"] for row in rows if row.get("run_dir")]
        if config.get("report") and folders:
            write_report(folders, Path(config.report))
        code = max(int(row.get("code") or 0) for row in rows)
        if code:
            sys.stdout.flush()
            raise SystemExit(code)


CONF = Path(__file__).resolve().parent.parent / "conf"


def bad_choice(arguments: list[str], conf: Path = CONF) -> str | None:
    """The one-line error for a group choice with no config file (`method=nope`, `+experiment=nope`, or one
    value of a sweep `method=raw,nope`), naming the options; None when every choice exists. Checked before
    Hydra starts, so a typo costs milliseconds and exits 2 like every other config problem."""
    for arg in arguments:
        key, sep, value = arg.lstrip("+~").partition("=")
        if not sep or "." in key or "/" in key or key.startswith("hydra") or not (conf / key).is_dir():
            continue
        options = sorted(p.stem for p in (conf / key).glob("*.yaml"))
        for choice in value.split(","):
            if choice and choice != "null" and not (conf / key / f"{choice.strip()}.yaml").is_file():
                return f"error: {key}={choice}: no such choice; the options are: {', '.join(options)}"
    return None


def sweep_configs(arguments: list[str]) -> str | None:
    """The composed config of every job of a `-m` sweep asked for with `--cfg job|hydra|all`, as YAML, one
    block per job headed by its overrides; None when the arguments do not ask for that. Hydra itself refuses
    `--cfg` together with `--multirun`, so the sweep is expanded here the way its basic sweeper would."""
    multirun = {"-m", "--multirun"} & set(arguments)
    part, rest, skip = None, [], False
    for i, arg in enumerate(arguments):
        if skip:
            skip = False
        elif arg in ("--cfg", "-c") and i + 1 < len(arguments):
            part, skip = arguments[i + 1], True
        elif arg.startswith("--cfg="):
            part = arg.partition("=")[2]
        elif arg not in multirun:
            rest.append(arg)
    if not multirun or part not in ("job", "hydra", "all"):
        return None
    from pos_bench.estimate import combinations, compose, configs
    from pos_bench.runner.overrides import settable

    blocks = []
    with configs():
        for number, overrides in enumerate(combinations(settable(rest))):
            cfg = compose(overrides, hydra=part != "job")
            if part == "hydra":
                cfg = OmegaConf.masked_copy(cfg, ["hydra"])
            text = OmegaConf.to_yaml(cfg)
            blocks.append(f"# job {number}: {' '.join(overrides)}\n{text}")
    return "\n".join(blocks)


if __name__ == "__main__":
    from pos_bench.redact import ScrubbedStream
    from pos_bench.runner.overrides import empty_path, settable, unknown_top_key

    problem = bad_choice(sys.argv[1:]) or unknown_top_key(sys.argv[1:]) or empty_path(sys.argv[1:])
    if problem:
        print(problem, file=sys.stderr)
        raise SystemExit(2)
    sys.stderr = ScrubbedStream(sys.stderr)  # Hydra prints a failed job's overrides there, base_url included
    configs_text = sweep_configs(sys.argv[1:])
    if configs_text is not None:
        print(configs_text, end="")
        raise SystemExit(0)
    sys.argv = [sys.argv[0], *settable(sys.argv[1:])]
    main()
