"""RCA-100 (SPEC-BENCH §4): find the root cause of a microservice incident with nine read-only query tools over
the case's telemetry, then submit one entity and one fault type; joint accuracy is the metric.

Cases come from the offline synthetic stand-in (default) or the user's copy of the real data set (`rca/data.py`).
The answer key is read only inside `score()`; tool arguments never locate files, and any argument that
mentions the answer key or a path is refused.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pos_bench.benchmarks.guards import NOT_A_TOOL_CALL, UNKNOWN_TOOL, cap, mentions_any
from pos_bench.benchmarks.rca.catalog import FAULT_TYPES, judge, norm_fault_type
from pos_bench.benchmarks.rca.data import SOURCES, Dataset, check, load_answer, load_case, resolve
from pos_bench.benchmarks.rca.tool_specs import SPECS, ArgumentError, schemas
from pos_bench.benchmarks.rca.tools import QueryTools
from pos_bench.benchmarks.rca.truth import rca_truth
from pos_bench.extras import require
from pos_bench.protocols import Model
from pos_bench.truth import WorldTruth
from pos_bench.types import Action, Brief, Observation, Score, Task, ToolCall

SUBMIT = "submit_root_cause"
REFUSED_FRAGMENTS = ("answer_key", "gt.json", "../", "..\\")
NARROWER = "Narrow the query (a keyword, an entity, a smaller limit) to see the rest."

_CATALOG = "\n".join(f"- {name}: {meaning}" for name, meaning in FAULT_TYPES.items())
_HOW_TO_ACT = """You are an on-call site reliability engineer finding the root cause of one incident in a microservice system on
Kubernetes, reasoning step by step and acting through read-only query tools over the incident's telemetry.

How to act:
- {turn_rule}
- In the thought, say what the last results showed and which candidate causes are still open.
- Tool names must match the available list exactly; that list is complete, and no other tool exists.
- The incident's data is reachable only through the tools. Start from the alerting entity and its neighbours in
  the topology, and cross-check metrics, logs, traces and events inside the alert window.
- A tool call is not evidence; the observation it returns is. When a result is cut short, narrow the query
  instead of repeating it.
- The alerting entity is where the symptom surfaced; it is often not the root cause.
- Submit exactly once, with submit_root_cause.

"""

ONE_ACTION_RULE = "Every turn, call exactly one tool from the available list."

MULTI_ACTION_RULE = (
    "Every turn, list 1 to {n} tool calls in order. They run one after another, and each one returns its own\n"
    "  observation. Put in one turn queries that do not depend on each other; leave a query that needs an earlier\n"
    "  result for a later turn. submit_root_cause must be the only call of its turn."
)

SYSTEM_BODY = f"""What to submit (the entity standard):
- root_cause_entity is exactly one service name (topology type apm.service, e.g. cart) or one node name (type
  k8s.node, e.g. cn-hongkong.10.0.1.5), copied verbatim from the tools. Pods, operations, deployments and
  instances are never accepted as the answer: name the service or node they belong to.
- The alerting entity only shows where the symptom surfaced; the root cause is usually further down the call
  chain or on the infrastructure.

Method, in nine steps:
1. Scope the incident: read the alert window, get_data_overview and get_alerts.
2. Map the dependencies with get_topology: who calls whom, which pods run on which node; copy names verbatim and
   treat everything the alerting service depends on as a candidate.
3. Discover metric names (list_metric_names) before querying metrics.
4. Quantify each candidate against its own baseline before the alert, not against other entities.
5. Cross-check a finding with a second kind of evidence (metrics with logs, traces or events).
6. Separate origin from propagation: the origin misbehaves on its own; its callers only inherit errors or delay.
7. Test the infrastructure: node metrics and Kubernetes events; several unrelated pods on one node suffering
   together point to the node.
8. Tell similar fault types apart by their specific signal: CPU, JVM memory and GC, the meaning of the errors
   (429, 5xx, DNS lookups), slow dependencies such as SQL, pods not running or restarting, calls failing between
   otherwise healthy services.
9. Use the remaining budget to confirm the leading hypothesis before submitting.

Fault types (fault_type must be one of these ids):
{_CATALOG}

Submitting:
- One call: submit_root_cause with arguments {{"root_cause_entity": "<service or node name>", "fault_type":
  "<one id above>", "analysis": "<the evidence, briefly>"}}.
- A submission with an empty entity or an unknown fault type is rejected and still costs a step; a valid
  submission is final and closes the case."""


def system_prompt(max_actions_per_turn: int) -> str:
    """The policy system prompt; its turn rule follows the number of tool calls a turn may hold (SPEC-BASE §2.3)."""
    if max_actions_per_turn == 1:
        rule = ONE_ACTION_RULE
    else:
        rule = MULTI_ACTION_RULE.format(n=max_actions_per_turn)
    return _HOW_TO_ACT.format(turn_rule=rule) + SYSTEM_BODY


REASONING_HINT = (
    "Symptoms that rise together are not evidence of a cause by themselves: test the mechanism you suspect with "
    "the tools before you submit."
)

FINAL_TURN_NOTE = (
    "This is your last turn: nothing can follow it. Call submit_root_cause now with the service or node and the "
    "fault type that the evidence so far supports best."
)

OPENING = """An alert fired; the task above describes it. The incident's data (metrics, logs, traces, Kubernetes
events, alerts and the topology) is loaded but not shown here: read it through the query tools. The alerting
entity is only where the symptom surfaced and is often not the root cause. Investigate, then call
submit_root_cause exactly once."""

REFUSED = "Refused: tool arguments may not refer to the answer key or to file paths. Nothing was done."
ARGUMENT_MISMATCH = "Argument mismatch for {name}: {problem}. Nothing was done."
EXECUTION_ERROR = "Execution error in {name}: {problem}"
REJECTED = "Submission rejected ({problems}). The case is still open; this step was used."
SUBMITTED = "Root cause submitted. The case is closed."


def tool_schemas() -> tuple[dict[str, Any], ...]:
    submit = {
        "type": "function",
        "function": {
            "name": SUBMIT,
            "description": "Submit the root cause and close the case; call it once. A valid submission is final.",
            "parameters": {
                "type": "object",
                "properties": {
                    "root_cause_entity": {
                        "type": "string",
                        "description": "One service or node name, verbatim.",
                    },
                    "fault_type": {
                        "type": "string",
                        "enum": list(FAULT_TYPES),
                        "description": "A catalog id.",
                    },
                    "analysis": {"type": "string", "description": "The evidence, briefly."},
                },
                "required": ["root_cause_entity", "fault_type"],
            },
        },
    }
    return (*schemas(), submit)


TOOLS = tool_schemas()
SUBMIT_ARGUMENTS = tuple(TOOLS[-1]["function"]["parameters"]["properties"])


@dataclass(frozen=True)
class Submission:
    entity: str
    fault_type: str
    analysis: str


class RCAEnv:
    def __init__(self, dataset: Dataset, *, obs_cap: int):
        self._dataset, self._obs_cap = dataset, obs_cap

    def reset(self, task: Task) -> Observation:
        self._case_id = task.id
        case = load_case(self._dataset, task.id)
        self._tools = QueryTools(case)
        self._topology = case.topology
        self._truth: WorldTruth | None = None
        self._submission: Submission | None = None
        self._uses = 0
        shown = {k: v for k, v in case.task.items() if k != "prompt_text"}
        self._goal = json.dumps(shown, indent=2, ensure_ascii=False)
        return self._observe(OPENING, "", "started")

    def _observe(self, text: str, tool: str, status: str) -> Observation:
        return Observation(
            text=cap(text, self._obs_cap, hint=NARROWER),
            tools=TOOLS,
            done=self._submission is not None,
            goal=self._goal,
            info={"case_id": self._case_id, "tool": tool, "status": status, "tool_uses": self._uses},
        )

    def step(self, action: Action) -> Observation:
        if not isinstance(action, ToolCall) or not isinstance(action.arguments, Mapping):
            return self._observe(NOT_A_TOOL_CALL, "", "invalid")
        self._uses += 1
        text, status = self._call(action)
        return self._observe(text, action.name, status)

    def _call(self, action: ToolCall) -> tuple[str, str]:
        if mentions_any(action.arguments, REFUSED_FRAGMENTS):
            return REFUSED, "rejected"
        if action.name == SUBMIT:
            return self._submit(action.arguments)
        if action.name not in SPECS:
            return UNKNOWN_TOOL.format(name=action.name, names=", ".join([*SPECS, SUBMIT])), "invalid"
        try:
            return self._tools.call(action.name, action.arguments), "answered"
        except ArgumentError as err:
            return ARGUMENT_MISMATCH.format(name=action.name, problem=err), "invalid"
        except Exception as err:  # noqa: BLE001 — §4.4: a failing tool is an observation, not a crashed episode
            return EXECUTION_ERROR.format(name=action.name, problem=f"{type(err).__name__}: {err}"), "error"

    def _submit(self, arguments: Mapping[str, Any]) -> tuple[str, str]:
        unexpected = sorted(set(arguments) - set(SUBMIT_ARGUMENTS))
        if unexpected:
            problem = f"unexpected arguments {unexpected}; it takes {', '.join(SUBMIT_ARGUMENTS)}"
            return ARGUMENT_MISMATCH.format(name=SUBMIT, problem=problem), "invalid"
        entity, fault_type = arguments.get("root_cause_entity"), arguments.get("fault_type")
        problems = []
        if not isinstance(entity, str) or not entity.strip():
            problems.append("root_cause_entity must be a non-empty service or node name")
        if not isinstance(fault_type, str) or norm_fault_type(fault_type) is None:
            problems.append(f"fault_type {fault_type!r} is not one of the {len(FAULT_TYPES)} catalog ids")
        if problems:
            return REJECTED.format(problems="; ".join(problems)), "rejected"
        self._submission = Submission(entity, fault_type, str(arguments.get("analysis") or ""))
        return SUBMITTED, "submitted"

    def score(self) -> Score:
        if self._submission is None:
            verdict = None
        else:
            key = load_answer(self._dataset, self._case_id)
            verdict = judge(self._submission.entity, self._submission.fault_type, key.entities, key.types)
        joint = verdict is not None and verdict.joint
        return Score(
            success=joint,
            value=float(joint),
            extras={
                "entity_correct": verdict is not None and verdict.entity_correct,
                "type_correct": verdict is not None and verdict.type_correct,
                "joint": joint,
                "no_submission": verdict is None,
                "tool_uses": self._uses,
            },
        )

    def truth(self) -> WorldTruth:
        """The labelled root cause of the case being played. The answer key is opened here (and by `score`)
        only, never by a tool; read once per case."""
        if self._truth is None:
            key = load_answer(self._dataset, self._case_id)
            self._truth = rca_truth(self._topology, key.entities, key.types)
        return self._truth

    def close(self) -> None:
        return None


class RCABenchmark:
    """RCA-100 cases in manifest order, sliced by start / limit.

    `source=synthetic` (default) generates `n_synthetic` cases for `seed` once into the pos_bench cache;
    `source=real` reads `data_dir` / `$RCA100_DATA` and the answer key `answer_key` / `$RCA100_ANSWER_KEY`.
    A turn holds up to `max_actions_per_turn` tool calls (SPEC-BENCH §4.6: 3), each one env step.
    """

    def __init__(
        self,
        source: str = "synthetic",
        data_dir: str | None = None,
        answer_key: str | None = None,
        *,
        n_synthetic: int = 10,
        seed: int = 0,
        start: int = 0,
        limit: int | None = None,
        max_turns: int = 50,
        obs_cap: int = 20000,
        max_actions_per_turn: int = 3,
    ):
        require("rca", "pyarrow", what="RCA-100 (its cases are parquet files)")
        if source not in SOURCES:
            raise ValueError(f"bench.source must be one of {', '.join(SOURCES)}; got {source!r}")
        if n_synthetic < 1 or start < 0 or (limit is not None and limit < 0) or max_turns < 1 or obs_cap < 1:
            raise ValueError(
                "need n_synthetic ≥ 1, start ≥ 0, limit ≥ 0 or null, max_turns ≥ 1, obs_cap ≥ 1; got "
                f"{n_synthetic}, {start}, {limit}, {max_turns}, {obs_cap}"
            )
        self.source, self.data_dir, self.answer_key = source, data_dir, answer_key
        self.n_synthetic, self.seed = n_synthetic, seed
        self.start, self.limit, self.max_turns, self.obs_cap = start, limit, max_turns, obs_cap
        # SPEC-BASE §2.3: a reasoning hint instead of a format example; PoS shows neither (SPEC-POS §9.1)
        self.brief = Brief(
            system=system_prompt(max_actions_per_turn),
            reasoning_hint=REASONING_HINT,
            final_turn_note=FINAL_TURN_NOTE,
            mode="diagnostic",
            policy_max_tokens=4096,
            max_actions_per_turn=max_actions_per_turn,
        )
        self._selected: tuple[Dataset, tuple[str, ...]] | None = None

    def _select(self) -> tuple[Dataset, tuple[str, ...]]:
        if self._selected is None:
            dataset = resolve(
                self.source,
                data_dir=self.data_dir,
                answer_key=self.answer_key,
                n=self.n_synthetic,
                seed=self.seed,
            )
            end = None if self.limit is None else self.start + self.limit
            ids = dataset.ids[self.start : end]
            check(dataset, ids)
            self._selected = (dataset, ids)
        return self._selected

    def tasks(self) -> list[Task]:
        dataset, ids = self._select()
        return [
            Task(id=case_id, source=str(dataset.case_dir(case_id)), meta={"source": dataset.kind})
            for case_id in ids
        ]

    def make_env(self, model: Model) -> RCAEnv:
        return RCAEnv(self._select()[0], obs_cap=self.obs_cap)
