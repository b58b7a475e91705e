"""inspect_ai's context compaction as a baseline (issue 42): the policy keeps the whole conversation, and
before each policy call inspect's own compaction handler, with inspect's own strategy (summary, edit, trim,
auto), decides from the strategy's `threshold` whether to compact it and returns what the policy sees.

The summary is written by the episode's model under the role `compactor`, through `pos_bench.models.
inspect_bridge`, so usage, the response cache, replay and the failure ledger count it like any other call.
With `memory_tool` (method `compaction_memory`) inspect's `memory` tool is a meta-action, and inspect's handler
adds its pre-compaction warning to the conversation when the threshold comes near.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from inspect_ai.event._compaction import CompactionEvent
from inspect_ai.log._transcript import transcript
from inspect_ai.model import ChatMessage, ChatMessageUser, CompactionStrategy
from inspect_ai.model import Model as InspectModel
from inspect_ai.model._compaction import Compact, compaction
from inspect_ai.model._compaction.memory import memory_warning_message

from baselines.compaction.conversation import (
    COMMAND_FORM,
    MEMORY,
    call_memory,
    memory_arguments,
    memory_spec,
    memory_tool,
    opening,
    turn,
)
from baselines.compaction.settings import NATIVE_REFUSAL, CompactionConfig
from baselines.meta_actions import MetaOffer, memory_prompt
from baselines.tokens import TokenCounter
from pos_bench import events
from pos_bench.models.inspect_bridge import Coroutines, inspect_model, to_messages
from pos_bench.prompting import closing_request, render_actions
from pos_bench.protocols import ContextLimited, MethodBase, Model
from pos_bench.types import Brief, Message, Observation, Prompt, Step, Task, ToolCall

COMPACTOR_ROLE = "compactor"
INSUFFICIENT = "Compaction insufficient"
"""How inspect's handler words the error it raises when compaction cannot get under the threshold."""
MEMORY_PATTERN = f"^{MEMORY} "
WARNING = memory_warning_message().text
"""inspect's pre-compaction warning, as the handler adds it to the conversation."""


class Compaction(MethodBase):
    def __init__(self, model: Model, **settings: Any):
        self.model = model
        self.config = CompactionConfig(**settings)
        self.tokens = TokenCounter(self.config.tokenizer)
        self.loop = Coroutines()
        self.memory = memory_tool() if self.config.memory_tool else None
        self.conversation: list[ChatMessage] = []
        """The full policy conversation (inspect messages), summaries appended as inspect returns them."""
        self.shown: list[ChatMessage] = []
        """What the policy saw at its last call, before the closing request: the handler's compacted input."""
        self.handler: Compact | None = None
        self.strategy: CompactionStrategy | None = None
        self.target: InspectModel | None = None
        self.handled: tuple[list[ChatMessage], int] = ([], 0)
        """The handler's last good input, and how much of the conversation it had seen then."""
        self.pending: list[events.Compaction] = []
        self.counts = {"compactions": 0, "memory_calls": 0}
        self.warnings: set[str] = set()
        """Ids of inspect's pre-compaction warnings the policy has been shown."""
        self.seen_events = 0

    def __exit__(self, *exc: object) -> None:
        self.loop.close()

    def unsupported(self, first: Observation) -> str | None:
        return NATIVE_REFUSAL if self.config.strategy == "native" else None

    def start(self, task: Task, brief: Brief, first: Observation) -> None:
        self.brief = brief
        offered = (memory_spec(self.memory),) if self.memory is not None and first.tools else ()
        prefix = opening(brief, first, offered)
        self.conversation = list(prefix)
        window = self.model.context_window if isinstance(self.model, ContextLimited) else None
        strategy = self.config.strategy_object(self.config.threshold_tokens(window))
        target = inspect_model(
            self.model,
            role=COMPACTOR_ROLE,
            count_text=self.tokens.count,
            max_tokens=self.config.summary_max_tokens,
        )
        tools = [self.memory] if self.memory is not None else []
        self.handler = compaction(strategy, prefix=prefix, tools=tools, model=target)
        self.strategy, self.target = strategy, target
        self.strategy_name = type(strategy).__name__
        self.handled = (list(prefix), len(prefix))

    def prompt(self, obs: Observation) -> Prompt:
        assert self.handler is not None, "start() must run before prompt()"
        shown, added = self.loop.run(self._compact(self.handler))
        if added is not None:
            self.conversation.append(added)
        self.shown = shown
        return self._policy_prompt(obs, shown)

    async def _compact(self, handler: Compact) -> tuple[list[ChatMessage], ChatMessageUser | None]:
        """inspect's handler on the conversation; the compactions it logged to inspect's transcript become
        pos_bench events (read in the same context, where inspect wrote them)."""
        try:
            shown, added = await handler.compact_input(self.conversation)
        except RuntimeError as error:
            if not str(error).startswith(INSUFFICIENT):
                raise
            return await self._best_effort(str(error)), None
        logged = [e for e in transcript().events if isinstance(e, CompactionEvent)]
        for event in logged[self.seen_events :]:
            self.pending.append(self._event(event, added))
        self.seen_events = len(logged)
        self.handled = (shown, len(self.conversation) + (added is not None))
        self.warnings.update(m.id for m in shown if m.text == WARNING and m.id is not None)
        return shown, added

    async def _best_effort(self, error: str) -> list[ChatMessage]:
        """inspect raises when its strategy cannot bring the conversation under the threshold (edit keeps every
        assistant turn, trim at most four passes): its react agent would end the sample there. pos_bench keeps
        playing, as every method does to its turn budget: the policy sees one more pass of the strategy over
        what the handler would have compacted, and the event says so. The handler's own state is left as it
        was, so the next turn asks it again."""
        assert self.strategy is not None and self.target is not None
        shown, upto = self.handled
        before = [*shown, *self.conversation[upto:]]
        outcome = await self.strategy.compact_outcome(self.target, before, [])
        self.counts["compactions"] += 1
        self.pending.append(
            events.Compaction(
                strategy=self.strategy_name,
                type=self.strategy.type,
                applied=outcome.applied,
                fallback_reason=f"kept playing past inspect's error: {error}",
                tokens_before=self.count(before),
                tokens_after=self.count(outcome.input),
                messages_before=len(before),
                messages_after=len(outcome.input),
                summary=outcome.message.text if outcome.message is not None else None,
            )
        )
        return list(outcome.input)

    def count(self, messages: list[ChatMessage]) -> int:
        return sum(self.tokens.count(m.content) for m in to_messages(messages))

    def _event(self, logged: CompactionEvent, added: ChatMessageUser | None) -> events.Compaction:
        self.counts["compactions"] += 1
        meta = logged.metadata or {}
        return events.Compaction(
            strategy=self.strategy_name,
            type=logged.type,
            applied=str(meta.get("strategy_applied", self.strategy_name)),
            fallback_reason=meta.get("fallback_reason"),
            trigger=str(meta.get("trigger", "threshold")),
            tokens_before=int(logged.tokens_before or 0),
            tokens_after=int(logged.tokens_after or 0),
            messages_before=int(meta.get("messages_before", 0)),
            messages_after=int(meta.get("messages_after", 0)),
            summary=added.text if added is not None else None,
        )

    def events(self, turn: int) -> Sequence[events.Event]:
        out, self.pending = [dataclasses.replace(e, turn=turn) for e in self.pending], []
        return out

    def _policy_prompt(self, obs: Observation, shown: list[ChatMessage]) -> Prompt:
        """The compacted conversation, then one closing user message: loop notes, the command list (tool
        catalogs are in the opening message) and the shared reply contract."""
        offers = []
        if self.memory is not None:
            commands = (f"{MEMORY} view /memories",) if not obs.tools else (MEMORY,)
            offers.append(MetaOffer(MEMORY, commands, "inspect's memory tool", memory_spec(self.memory)))
        contract = memory_prompt(self.brief, obs, [], offers, max_json_retries=self.config.max_json_retries)
        schema = contract.schema
        parts = list(obs.notes)
        if not obs.tools:
            memory = (f"{MEMORY} view /memories", f"{MEMORY} create <path> <text>") if self.memory else ()
            parts.append(render_actions(obs, memory) + (f"\n{COMMAND_FORM}" if memory else ""))
            schema = with_free_memory_command(schema) if self.memory is not None else schema
        parts.append(closing_request(obs, self.brief.max_actions_per_turn))
        closing = Message("user", "\n\n".join(parts))
        return dataclasses.replace(contract, messages=(*to_messages(shown), closing), schema=schema)

    def update(self, step: Step) -> Mapping[str, Any] | None:
        index = len(self.conversation)
        if step.after is not None:
            self.conversation += turn(step.decision.thought, step.decision.action, step.after.text, index)
            return None
        action = step.decision.meta
        if self.memory is None or action is None:
            return None
        arguments = memory_arguments(action)
        result = (
            arguments if isinstance(arguments, str) else self.loop.run(call_memory(self.memory, arguments))
        )
        called = ToolCall(MEMORY, arguments if isinstance(arguments, dict) else {})
        self.conversation += turn(step.decision.thought, called, result, index)
        self.counts["memory_calls"] += 1
        return {"memory_tool": {"arguments": arguments, "result": result}}

    def report(self) -> Mapping[str, Any]:
        return {
            **self.counts,
            "memory_warnings": len(self.warnings),
            "strategy": self.config.strategy,
            "threshold": self.config.threshold,
            "conversation_messages": len(self.conversation),
            "shown_messages": len(self.shown),
        }


def with_free_memory_command(schema: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    """A command benchmark's decision schema whose action may also be any `memory …` command: the memory tool
    takes free text, which an enum of the admissible commands cannot hold."""
    if schema is None or "action" not in schema.get("properties", {}):
        return schema
    properties = dict(schema["properties"])
    properties["action"] = {"anyOf": [properties["action"], {"type": "string", "pattern": MEMORY_PATTERN}]}
    return {**schema, "properties": properties}
