"""mini-LOCA (SPEC-BENCH §3.7): the offline stand-in for LOCA-Bench, written from scratch. Not upstream
LOCA-Bench, whose cases need a user's checkout, Node and MCP servers.

Three task families (mail + calendar, inventory alert CSV, course records) are generated per
(family, seed, scale) into a temporary workspace of JSON-DB files; the agent works through in-process tools
with OpenAI function schemas and ends with `claim_done`, upon which a rule-based checker compares the
workspace with the generated answer: reward 1.0 or 0.0 (SPEC-BENCH §3.2, §3.5). `scale` only adds
distractor records, so the text an oracle reads grows with the nominal length while the answer stays put.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

from pos_bench.benchmarks.guards import NOT_A_TOOL_CALL
from pos_bench.benchmarks.loca.catalog import catalog_order, catalog_outline
from pos_bench.benchmarks.loca.mini import course, inventory, mail
from pos_bench.benchmarks.loca.mini.generation import SCALES, SEEDS
from pos_bench.benchmarks.loca.mini.tools import ToolError
from pos_bench.benchmarks.loca.mini.truth import loca_truth
from pos_bench.benchmarks.loca.mini.workspace import (
    CLAIM_DONE,
    VIRTUAL_ROOT,
    Case,
    Family,
    Workspace,
    changes,
)
from pos_bench.protocols import Model
from pos_bench.truth import WorldTruth
from pos_bench.types import Action, Brief, Observation, Score, Task, ToolCall

FAMILIES: Mapping[str, Family] = {f.name: f for f in (mail.FAMILY, inventory.FAMILY, course.FAMILY)}

SYSTEM = """You are an assistant that completes office tasks for a user by calling tools: mail, calendars, \
inventory databases, course records, spreadsheets and files.

How to act:
- Each turn, call exactly one tool from the available list, with arguments that follow its schema. The list is \
complete; no other tool exists.
- The services' data is reachable only through the tools. Treat each tool result as evidence, and read every \
record the task depends on: listings come in pages, so follow next_offset until it is null.
- In the thought, note what the newest result showed (ids, values, paths) and what the task still requires.
- Follow the task's exact names, formats and paths; make only the changes it asks for.
- A tool error costs the turn and changes nothing: fix the arguments and try again.
- Call claim_done only once everything requested is done. It ends the episode and the result is checked then; \
there is no second attempt.

The action is an object {"name": <tool name>, "arguments": {...}}. Reply with a single JSON object and no text \
outside it."""

EXAMPLE = """Example of the reply format only (an invented task, not one of yours):
Task: Save the phone number of the supplier named in message msg-0001 to /workspace/phone.txt.
Observation: {"id": "msg-0001", "from": "orders@example.org", "subject": "New supplier", "body": "Call Mira on 555-0100."}
Available tools: email_read_message, fs_write_file, claim_done
Reply: {"thought": "The message gives the number 555-0100; the file does not exist yet.", "action": {"name": "fs_write_file", "arguments": {"path": "/workspace/phone.txt", "content": "555-0100\\n"}}}"""

OPENING = """The task workspace is ready. The services' records are reachable only through the tools. The agent \
workspace folder is {root}: file paths in the task refer to it, and the fs_ tools work inside it.
Files in {root} now: {files}
Tool catalog (domains with their tool counts, and tool names grouped by role; the full definitions are listed \
with the available tools, in the same order):
{catalog}"""

UNKNOWN_TOOL = "Error: unknown tool {name!r}. The available tools are: {names}. Nothing was done."
EPISODE_OVER = "The episode is over; no further tool calls are carried out."
BUDGET_SPENT = "The tool-use budget ({n} calls) is spent: the episode ends without claim_done (reward 0)."


def task_id(family: str, seed: int, scale: str) -> str:
    return f"{scale}/{family}/seed_{seed}"


FAILED = frozenset({"invalid", "unknown_tool", "error"})
"""Step statuses that count as a tool error in the failure ledger."""


class LocaEnv:
    """One mini-LOCA episode at a time; the workspace lives in a temporary folder removed on close/reset."""

    def __init__(self, *, max_tool_uses: int = 100, truth: bool = False):
        self.max_tool_uses = max_tool_uses
        self.keeps_truth = truth
        """Read the whole workspace for `truth()`; its cost grows with the case's scale (off by default: at
        large scales it costs more than the step)."""
        self._root: Path | None = None

    def reset(self, task: Task) -> Observation:
        self.close()
        meta = task.meta
        self._family = FAMILIES[meta["family"]]
        case: Case = self._family.generate(int(meta["seed"]), meta["scale"])
        self._root = Path(tempfile.mkdtemp(prefix="loca_"))
        self._ws = Workspace(self._root, case)
        self._tools = {t.name: t for t in self._family.tools}
        self._schemas = catalog_order([t.schema() for t in self._family.tools])
        self._goal = case.instruction
        self._uses, self._reward, self._claimed, self._truncated = 0, 0.0, False, False
        self._info = {
            "case_id": task.id,
            "family": case.family,
            "scale": case.scale,
            "env_tokens": case.env_tokens,
        }
        text = OPENING.format(
            root=VIRTUAL_ROOT,
            files=", ".join(sorted(self._ws.snapshot())) or "none",
            catalog=json.dumps(catalog_outline(self._schemas)),
        )
        return self._observe(text, "started")

    @property
    def workspace_dir(self) -> Path | None:
        """Where the current episode's files are on disk (None once closed); never shown to the agent."""
        return self._root

    @property
    def done(self) -> bool:
        return self._claimed or self._truncated

    def _observe(self, text: str, status: str, tool: str = "") -> Observation:
        info = {
            **self._info,
            "tool": tool,
            "status": status,
            "tool_uses": self._uses,
            "workspace": VIRTUAL_ROOT,
        }
        return Observation(
            text=text,
            tools=self._schemas,
            done=self.done,
            goal=self._goal,
            info=info,
            tool_error=status in FAILED,
        )

    def step(self, action: Action) -> Observation:
        if not isinstance(action, ToolCall) or not isinstance(action.arguments, Mapping):
            return self._observe(NOT_A_TOOL_CALL, "invalid")  # malformed: not a tool use (SPEC-BENCH §1.1)
        if self.done:
            return self._observe(EPISODE_OVER, "over", action.name)
        self._uses += 1
        text, status = self._call(action)
        if not self.done and self._uses >= self.max_tool_uses:
            self._truncated = True
            text = f"{text}\n\n{BUDGET_SPENT.format(n=self.max_tool_uses)}"
        return self._observe(text, status, action.name)

    def _call(self, action: ToolCall) -> tuple[str, str]:
        tool = self._tools.get(action.name)
        if tool is None:
            return UNKNOWN_TOOL.format(name=action.name, names=", ".join(sorted(self._tools))), "unknown_tool"
        arguments = {k: v for k, v in action.arguments.items() if v is not None or k in tool.required}
        before = self._ws.snapshot()
        try:
            tool.check(arguments)
            if tool.name == CLAIM_DONE.name:
                return self._claim(), "claimed"
            text = tool.handler(self._ws, arguments)
        except ToolError as error:
            return f"Error: {error}", "error"
        manifest = changes(before, self._ws.snapshot(), tool.name)
        if manifest:  # the changed-files manifest of SPEC-BENCH §3.4
            text = f"{text}\n\nWorkspace changes: {json.dumps(manifest)}"
        return text, "ok"

    def _claim(self) -> str:
        verdict = self._family.check(self._ws)
        self._claimed, self._reward = True, 1.0 if verdict.passed else 0.0
        outcome = "passed" if verdict.passed else "failed"
        return f"Task declared complete. Check {outcome} (reward {self._reward:.1f}): {verdict.reason}."

    def score(self) -> Score:
        return Score(
            success=self.done and self._reward >= 1.0,
            value=self._reward,
            extras={
                "claimed_done": self._claimed,
                "truncated": self._truncated,
                "tool_uses": self._uses,
                "env_tokens": self._info["env_tokens"],
            },
        )

    def truth(self) -> WorldTruth | None:
        """The records and files the checker reads, as they are now; None with `truth=False` or once closed."""
        return loca_truth(self._ws) if self.keeps_truth and self._root is not None else None

    def close(self) -> None:
        if self._root is not None:
            shutil.rmtree(self._root, ignore_errors=True)
            self._root = None


class LocaBenchmark:
    """Cases = scales × families × seeds, in that nesting order, then sliced by start / limit.

    Task meta carries family, seed and scale, so the summary reports success per family and per length.
    """

    def __init__(
        self,
        *,
        families: Sequence[str] = tuple(FAMILIES),
        seeds: Sequence[int] = SEEDS,
        scales: Sequence[str] = ("8k",),
        start: int = 0,
        limit: int | None = None,
        max_turns: int = 100,
        max_tool_uses: int = 100,
        truth: bool = False,
    ):
        for label, values, choices in (("families", families, tuple(FAMILIES)), ("scales", scales, SCALES)):
            unknown = [v for v in values if v not in choices]
            if unknown or not values:
                raise ValueError(
                    f"bench.{label} must be a non-empty list from {', '.join(choices)}; got {list(values)}"
                )
        if start < 0 or (limit is not None and limit < 0) or max_turns < 1 or max_tool_uses < 1 or not seeds:
            raise ValueError(
                f"need start ≥ 0, limit ≥ 0 or null, max_turns ≥ 1, max_tool_uses ≥ 1 and some seeds; got {start}, "
                f"{limit}, {max_turns}, {max_tool_uses}, {list(seeds)}"
            )
        self.families, self.seeds, self.scales = tuple(families), tuple(int(s) for s in seeds), tuple(scales)
        self.start, self.limit = start, limit
        self.max_turns, self.max_tool_uses = max_turns, max_tool_uses
        self.truth = truth
        """Environments report the workspace's records and files per step (`TruthfulEnv`)."""
        self.brief = Brief(system=SYSTEM, example=EXAMPLE, mode="execution", policy_max_tokens=4096)

    def tasks(self) -> list[Task]:
        tasks = [
            Task(
                id=task_id(family, seed, scale),
                source=task_id(family, seed, scale),
                meta={"family": family, "scale": scale, "seed": seed},
            )
            for scale in self.scales
            for family in self.families
            for seed in self.seeds
        ]
        end = None if self.limit is None else self.start + self.limit
        return tasks[self.start : end]

    def make_env(self, model: Model) -> LocaEnv:
        return LocaEnv(max_tool_uses=self.max_tool_uses, truth=self.truth)


def generate(family: str, seed: int, scale: str) -> Case:
    """The case a task plays (for inspection and tests)."""
    if family not in FAMILIES:
        raise ValueError(f"family must be one of {', '.join(FAMILIES)}; got {family!r}")
    return FAMILIES[family].generate(seed, scale)
