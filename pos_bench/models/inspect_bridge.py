"""pos_bench's models seen through inspect_ai's model interface, and the message conversions both ways.

inspect_ai code that needs a model object (its compaction strategies, later its tasks and agents) gets an
`inspect_ai.model.Model` whose provider is `PosModelAPI`: every call it makes is a pos_bench `generate` with a
`role`, so the `Recorded` wrapper, the response cache, replay, the budget and the failure ledger see it like any
other call. `to_inspect` / `to_prompt` and `to_output` / `to_reply` turn records into inspect's and back.

inspect is asyncio; pos_bench's loop is not. `Coroutines` runs inspect's coroutines for one episode on one event
loop (and one `contextvars.Context`, so inspect's per-sample store and transcript are the episode's own), closed
with the episode: no loop or thread is made per step.

The other way round (issue 43), pos_bench's loop runs inside inspect: an inspect sample starts the episode in a
worker thread under `calls_to_this_loop()`, and `run_coroutine` sends each inspect coroutine the episode needs
(a model call, a tool call) back to the sample's event loop, in the sample's context (its usage, limits and
connection bounds), while only the worker thread waits. Outside inspect (`python -m pos_bench model=inspect`)
the coroutines run on one background event loop of the process.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import json
import threading
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Self, TypeVar

from inspect_ai.log._transcript import Transcript as InspectTranscript
from inspect_ai.log._transcript import init_transcript
from inspect_ai.model import (
    ChatMessage,
    ChatMessageAssistant,
    ChatMessageSystem,
    ChatMessageTool,
    ChatMessageUser,
    GenerateConfig,
    Model,
    ModelAPI,
    ModelOutput,
    ModelUsage,
    modelapi,
)
from inspect_ai.tool import ToolChoice, ToolInfo
from inspect_ai.util._store import Store, init_subtask_store

from pos_bench.protocols import Model as PosModel
from pos_bench.types import Message, Prompt, Reply, Usage

T = TypeVar("T")

PROVIDER = "pos_bench"
"""The provider name inspect registers `PosModelAPI` under (inspect's registry needs one to name the model)."""


def command_call(action: Any) -> tuple[str, dict[str, Any]]:
    """A pos_bench action as an inspect tool call's (function, arguments): a command string becomes the
    function `command` with one argument, a tool call keeps its name and arguments."""
    if isinstance(action, str):
        return "command", {"command": action}
    if isinstance(action, dict):
        return str(action.get("name", "")), dict(action.get("arguments") or {})
    return str(action.name), dict(action.arguments)


def assistant_text(message: ChatMessageAssistant) -> str:
    """An assistant message as pos_bench's reply contract writes it: its text, or, when it made tool calls, one
    JSON object `{"thought", "action"}` per call (a command call shows as the bare command)."""
    if not message.tool_calls:
        return message.text
    replies = []
    for call in message.tool_calls:
        if call.function == "command" and set(call.arguments) == {"command"}:
            action: Any = call.arguments["command"]
        else:
            action = {"name": call.function, "arguments": call.arguments}
        replies.append(json.dumps({"thought": message.text, "action": action}, ensure_ascii=False))
    return "\n".join(replies)


def to_messages(messages: Sequence[ChatMessage]) -> tuple[Message, ...]:
    """inspect chat messages as pos_bench messages: a tool result becomes a user turn that names its tool, an
    assistant's tool calls become its JSON reply, and consecutive messages of one role are joined (chat
    templates and some providers require roles to alternate)."""
    out: list[Message] = []
    for message in messages:
        if isinstance(message, ChatMessageTool):
            text = f"Observation ({message.function or 'tool'}):\n{message.text}"
            role = "user"
        elif isinstance(message, ChatMessageAssistant):
            text, role = assistant_text(message), "assistant"
        else:
            text, role = message.text, message.role
        if out and out[-1].role == role:
            out[-1] = Message(role, f"{out[-1].content}\n\n{text}")
        else:
            out.append(Message(role, text))
    return tuple(out)


def to_inspect(messages: Sequence[Message]) -> list[ChatMessage]:
    """pos_bench messages as inspect chat messages (the inverse of `to_messages` for plain turns)."""
    kinds = {"system": ChatMessageSystem, "user": ChatMessageUser, "assistant": ChatMessageAssistant}
    return [kinds[m.role](content=m.content) for m in messages]


def to_prompt(messages: Sequence[ChatMessage], config: GenerateConfig, *, trial: int = 0) -> Prompt:
    """The pos_bench request for an inspect `generate`: the messages and the reply budget."""
    return Prompt(messages=to_messages(messages), max_tokens=config.max_tokens, trial=trial)


def to_output(reply: Reply, model: str) -> ModelOutput:
    """A pos_bench reply as inspect's model output, usage included (inspect's `input_tokens` exclude the cached
    ones, which it counts apart)."""
    output = ModelOutput.from_content(model=model, content=reply.text)
    cached, written = reply.usage.cached_input_tokens, reply.usage.cache_write_tokens
    output.usage = ModelUsage(
        input_tokens=reply.usage.input_tokens - cached - written,
        output_tokens=reply.usage.output_tokens,
        total_tokens=reply.usage.input_tokens + reply.usage.output_tokens,
        input_tokens_cache_read=cached or None,
        input_tokens_cache_write=written or None,
    )
    return output


def to_reply(output: ModelOutput) -> Reply:
    """inspect's model output as a pos_bench reply (one call)."""
    usage = output.usage or ModelUsage()
    cached, written = usage.input_tokens_cache_read or 0, usage.input_tokens_cache_write or 0
    return Reply(
        text=output.completion,
        usage=Usage(usage.input_tokens + cached + written, usage.output_tokens, 1, cached, written),
    )


@modelapi(name=PROVIDER)
class PosModelAPI(ModelAPI):
    """inspect's provider interface over a pos_bench model: each `generate` is one pos_bench call with `role`.

    Tokens are counted with `count_text` (the method's tokenizer), so thresholds mean the same as the method's
    own counts and no tokenizer is fetched from the network."""

    def __init__(
        self,
        model_name: str,
        *,
        model: PosModel,
        role: str,
        count_text: Callable[[str], int],
        config: GenerateConfig | None = None,
    ):
        super().__init__(model_name=model_name, config=config or GenerateConfig())
        self.pos_model = model
        self.role = role
        self.count_text = count_text

    async def generate(
        self,
        input: list[ChatMessage],
        tools: list[ToolInfo],
        tool_choice: ToolChoice,
        config: GenerateConfig,
    ) -> ModelOutput:
        if tools:
            raise ValueError(
                f"the pos_bench bridge carries no tools to the model (asked for {[t.name for t in tools]}); "
                "pos_bench offers actions through its own reply contract"
            )
        reply = self.pos_model.generate(to_prompt(input, config), role=self.role)
        return to_output(reply, self.model_name)

    async def count_text_tokens(self, text: str) -> int:
        return self.count_text(text)

    def max_connections(self) -> int:
        return 1  # one episode's calls run one after another, as the loop makes them


def inspect_model(
    model: PosModel, *, role: str, count_text: Callable[[str], int], max_tokens: int | None = None
) -> Model:
    """An inspect `Model` whose calls are `model`'s calls under `role`. inspect retries nothing here
    (`ModelAPI.should_retry` is False): the pos_bench model already retries under the shared policy."""
    config = GenerateConfig(max_tokens=max_tokens)
    api = PosModelAPI(model.name, model=model, role=role, count_text=count_text, config=config)
    return Model(api, config)


class Coroutines:
    """One event loop and one inspect context for one episode: `run` awaits a coroutine there, `close` ends
    both. Use it as a context manager, or call `close` when the episode ends."""

    def __init__(self) -> None:
        self._runner: asyncio.Runner | None = None
        self._context = contextvars.Context()
        # inspect keeps its per-sample store (the memory tool's files) and its event transcript in context
        # variables whose defaults are process-wide: a fresh pair keeps episodes apart
        self._context.run(init_subtask_store, Store())
        self._context.run(init_transcript, InspectTranscript())

    def run(self, coroutine: Awaitable[T]) -> T:
        if self._runner is None:
            self._runner = asyncio.Runner()
        return self._runner.run(coroutine, context=self._context)  # type: ignore[arg-type]

    def close(self) -> None:
        if self._runner is not None:
            self._runner.close()
            self._runner = None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@dataclass(frozen=True)
class Binding:
    """Where the inspect coroutines of pos_bench code running in a worker thread go: the sample's event loop and
    a copy of its context."""

    loop: asyncio.AbstractEventLoop
    context: contextvars.Context


_BINDING: contextvars.ContextVar[Binding | None] = contextvars.ContextVar(
    "pos_bench_inspect_loop", default=None
)


@contextmanager
def calls_to_this_loop() -> Iterator[Binding]:
    """In a coroutine on inspect's loop: worker threads started inside the block (`anyio.to_thread.run_sync`
    copies the context) send their `run_coroutine` calls here, in this context."""
    binding = Binding(asyncio.get_running_loop(), contextvars.copy_context())
    token = _BINDING.set(binding)
    try:
        yield binding
    finally:
        _BINDING.reset(token)


def bound() -> Binding | None:
    """The binding of the calling thread, when it was started from an inspect sample."""
    return _BINDING.get()


_LOOP_LOCK = threading.Lock()
_BACKGROUND: asyncio.AbstractEventLoop | None = None
_PENDING: set[asyncio.Task[Any]] = set()
"""Tasks started from other threads, held until done (the loop keeps only weak references)."""


def background_loop() -> asyncio.AbstractEventLoop:
    """The process's event loop for inspect calls made outside inspect, run by a daemon thread started on first
    use; inspect's clients stay on the loop they were made on, so every episode of the process shares it."""
    global _BACKGROUND
    with _LOOP_LOCK:
        if _BACKGROUND is None or _BACKGROUND.is_closed():
            loop = asyncio.new_event_loop()
            threading.Thread(target=loop.run_forever, name="pos_bench-inspect-loop", daemon=True).start()
            _BACKGROUND = loop
        return _BACKGROUND


def fresh_context(base: contextvars.Context | None = None) -> contextvars.Context:
    """A copy of `base` (or an empty context) whose inspect transcript is a throwaway: inspect records the
    call's own events there, and pos_bench's transcript shows the call once (exported with the episode)."""
    context = base.copy() if base is not None else contextvars.Context()
    context.run(init_transcript, InspectTranscript())
    return context


def run_coroutine(factory: Callable[[], Awaitable[T]]) -> T:
    """Await `factory()` on the bound sample's loop (else the background loop) and return its result; only the
    calling thread blocks. Never call it on the loop's own thread: it would wait for itself."""
    binding = bound()
    loop = binding.loop if binding else background_loop()
    try:
        running = asyncio.get_running_loop()
    except RuntimeError:
        running = None
    if running is loop:
        raise RuntimeError(
            "pos_bench code that calls inspect must run in a worker thread (anyio.to_thread.run_sync), not "
            "on inspect's event loop, which it would block"
        )
    context = fresh_context(binding.context if binding else None)
    future: concurrent.futures.Future[T] = concurrent.futures.Future()

    def settle(task: asyncio.Task[T]) -> None:
        _PENDING.discard(task)
        if task.cancelled():
            future.cancel()
        elif task.exception() is not None:
            future.set_exception(task.exception())  # type: ignore[arg-type]
        else:
            future.set_result(task.result())

    def start() -> None:
        try:
            task = loop.create_task(_awaited(factory), context=context)
        except BaseException as error:  # noqa: BLE001 - handed to the waiting thread
            future.set_exception(error)
            return
        _PENDING.add(task)
        task.add_done_callback(settle)

    loop.call_soon_threadsafe(start)
    return future.result()


async def _awaited(factory: Callable[[], Awaitable[T]]) -> T:
    return await factory()
