"""Where log lines go while a run plays: every record, third-party ones included, to the run folder's `run.log`
(but the HTTP clients' line for each answered request, one per model call, `routine_request`, which Hydra's job
log leaves out as well); the terminal keeps pos_bench's own records (and the progress bar and printed lines, which
are not logging).

Dependencies log freely (MCP servers' workers, HTTP clients at INFO) and warn about their own deprecations; on a
terminal those lines bury the progress bar and the run's own messages, and they are noise for every reader but
the one debugging that dependency, who finds them in `run.log`. Python warnings become log records
(`logging.captureWarnings`), so they take the same road. Every line written is redacted with the run's
redactor and its URLs scrubbed of credentials (`pos_bench.redact`).

In the driver, `held_logs` covers the whole job: before the run folder exists (importing a benchmark's
dependencies, the pre-flight check starting its servers) and after the run (the report), dependencies' records are
held, not shown; `run_logs` writes the held ones to the run's file first, then changes the logging set-up for the
length of the run and puts it back afterwards. Records held after the run are appended to the same file; a job that
fails before it has a run folder shows them on stderr, since they may explain the failure. A worker process (loky)
has no set-up of its own: `worker_logs` gives it the same file, and a stderr handler for pos_bench's own warnings,
once, for the life of the process, which ends with the run.
"""

from __future__ import annotations

import logging
import re
import sys
import warnings
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from pos_bench.redact import Redactor, scrub_urls

RUN_LOG = "run.log"
OWN = "pos_bench"
"""The logger name (and prefix) of pos_bench's own records."""


FILE_FORMAT = "%(asctime)s %(levelname)s %(name)s [pid %(process)d]: %(message)s"


class RedactingFormatter(logging.Formatter):
    """Formats a record (by default as `time level logger [pid]: message`), then redacts the secrets and URL
    credentials in it."""

    def __init__(self, redactor: Redactor, fmt: str = FILE_FORMAT):
        super().__init__(fmt)
        self.redactor = redactor

    def format(self, record: logging.LogRecord) -> str:
        return scrub_urls(self.redactor.text(super().format(record)))


def own(record: logging.LogRecord) -> bool:
    """Whether the record is one of pos_bench's own."""
    return record.name == OWN or record.name.startswith(OWN + ".")


class OwnRecordsOnly(logging.Filter):
    """Passes pos_bench's own records; put on the terminal's handlers while a run plays."""

    def filter(self, record: logging.LogRecord) -> bool:
        return own(record)


ANSWERED = re.compile(r'HTTP Request: \S+ \S+ "HTTP/[0-9.]+ 2[0-9][0-9]\b')
"""The line the HTTP clients (httpx and its fork httpx2) log at INFO for every request answered with a 2xx."""


def routine_request(record: logging.LogRecord) -> bool:
    """Whether the record is an HTTP client's line for a request answered with a 2xx: one per model call, each in
    the transcript already (a Table 1 sweep on ALFWorld made 6,883 of them per run, all the run's `run.log`
    held). A request answered otherwise (429, 5xx) keeps its line."""
    return record.name.split(".")[0] in ("httpx", "httpx2") and bool(ANSWERED.match(record.getMessage()))


class NoRoutineRequests(logging.Filter):
    """Passes every record but the HTTP clients' routine request lines (`routine_request`)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not routine_request(record)


class RunLogHandler(logging.FileHandler):
    """Appends to one run's `run.log` (its own class, so a reused worker process finds and replaces it), all but
    the HTTP clients' routine request lines (`routine_request`)."""

    def __init__(self, run_dir: Path, redactor: Redactor):
        super().__init__(run_dir / RUN_LOG, mode="a", encoding="utf-8", delay=True)
        self.setFormatter(RedactingFormatter(redactor))
        self.addFilter(NoRoutineRequests())


class OwnWarnings(logging.StreamHandler):
    """pos_bench's own warnings on a worker's stderr, as Python would show them with no logging set up."""

    def __init__(self, redactor: Redactor):
        super().__init__(sys.stderr)
        self.setLevel(logging.WARNING)
        self.addFilter(OwnRecordsOnly())
        self.setFormatter(RedactingFormatter(redactor, "%(message)s"))


def on_terminal(handler: logging.Handler) -> bool:
    """Whether `handler` writes to the process's standard output or error (Hydra's console handler, say)."""
    terminal = {id(s) for s in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__) if s is not None}
    return (
        isinstance(handler, logging.StreamHandler)
        and not isinstance(handler, logging.FileHandler)
        and id(handler.stream) in terminal
    )


class HeldRecords(logging.Handler):
    """Dependencies' records from the parts of a job outside a run (at most `limit`, the newest kept), for the
    run's `run.log` once there is one (`run_dir`), or for stderr when the job fails before."""

    def __init__(self, limit: int = 10_000):
        super().__init__()
        self.addFilter(lambda record: not own(record))  # pos_bench's own are on the terminal already
        self.records: deque[logging.LogRecord] = deque(maxlen=limit)
        self.run_dir: Path | None = None

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)

    def hand_to(self, handler: logging.Handler) -> None:
        while self.records:
            record = self.records.popleft()
            if record.levelno >= handler.level:
                handler.handle(record)


@contextmanager
def quiet_terminal() -> Iterator[None]:
    """For the length of the block: the terminal's handlers pass only pos_bench's own records, the root logger
    passes INFO and above, and warnings are log records."""
    root = logging.getLogger()
    own_only = OwnRecordsOnly()
    terminal = [h for h in root.handlers if on_terminal(h)]
    level, capturing = root.level, getattr(warnings.showwarning, "__module__", None) == "logging"
    for h in terminal:
        h.addFilter(own_only)
    if root.getEffectiveLevel() > logging.INFO:
        root.setLevel(logging.INFO)
    logging.captureWarnings(True)
    try:
        yield
    finally:
        logging.captureWarnings(capturing)  # a surrounding block may still capture
        root.setLevel(level)
        for h in terminal:
            h.removeFilter(own_only)


@contextmanager
def held_logs(redactor: Redactor) -> Iterator[HeldRecords]:
    """For a whole job: dependencies' records and warnings are held (`HeldRecords`), not shown. `run_logs` hands
    them to the run's file; what is held at the end goes to that file too, or to stderr if there is no run."""
    root = logging.getLogger()
    held = HeldRecords()
    root.addHandler(held)
    failed = True
    try:
        with quiet_terminal():
            yield held
        failed = False
    finally:
        root.removeHandler(held)
        if held.run_dir is not None:
            target: logging.Handler = RunLogHandler(held.run_dir, redactor)
        else:
            target = logging.StreamHandler(sys.stderr)
            target.setFormatter(RedactingFormatter(redactor))
        if held.run_dir is not None or failed:
            held.hand_to(target)
        target.close()


@contextmanager
def run_logs(run_dir: Path, redactor: Redactor) -> Iterator[Path]:
    """For the length of the block: every log record and warning reaches `run_dir/run.log` (first the ones a
    surrounding `held_logs` holds), and the terminal's handlers pass only pos_bench's own. Yields the log file's
    path."""
    root = logging.getLogger()
    handler = RunLogHandler(run_dir, redactor)
    held = [h for h in root.handlers if isinstance(h, HeldRecords)]
    for h in held:
        h.hand_to(handler)
        h.run_dir = run_dir
        root.removeHandler(h)  # during the run every record goes to the file directly
    root.addHandler(handler)  # with a handler on the root, Python's last-resort stderr output is never used
    # Hydra's job log (`<job>.log`) gets the records of the episodes played in this process (the threading
    # backend's), so it leaves out the routine request lines as `run.log` does
    job_logs = [h for h in root.handlers if isinstance(h, logging.FileHandler) and h is not handler]
    routine = NoRoutineRequests()
    for h in job_logs:
        h.addFilter(routine)
    try:
        with quiet_terminal():
            yield run_dir / RUN_LOG
    finally:
        for h in job_logs:
            h.removeFilter(routine)
        root.removeHandler(handler)
        handler.close()
        for h in held:
            root.addHandler(h)


def worker_logs(run_dir: Path, redactor: Redactor) -> None:
    """In a worker process: send its log records and warnings to `run_dir/run.log`, and pos_bench's own warnings
    to stderr as well. Once per run; a worker a cluster reuses for another run drops the earlier run's file."""
    root = logging.getLogger()
    target = str((run_dir / RUN_LOG).resolve())
    for h in [h for h in root.handlers if isinstance(h, RunLogHandler)]:
        if h.baseFilename == target:
            return
        root.removeHandler(h)
        h.close()
    root.addHandler(RunLogHandler(run_dir, redactor))
    if not any(isinstance(h, OwnWarnings) for h in root.handlers):
        root.addHandler(OwnWarnings(redactor))
    if root.getEffectiveLevel() > logging.INFO:
        root.setLevel(logging.INFO)
    logging.captureWarnings(True)
