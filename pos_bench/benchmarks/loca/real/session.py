"""A case's MCP servers held open for the whole episode (`bench.servers=episode`).

Upstream's `MCPTool` enters its fastmcp client for every call (`async with self.client`) on a module-wide event
loop that only runs while a call runs. Here the client is entered once, on an event loop of our own that runs in
a thread for the episode, so its session (and every stdio server behind it) stays up between calls while the
model thinks; upstream's own coroutines still do the listing and each call (their `async with self.client` then
re-enters the open session), so tool names, schemas and result texts are upstream's. Upstream's retries, which
build a new client (and new server processes) on a failed call, are off: a call is made once.

Before each call the server that owns the tool is checked (its connection task still running, and a ping
answered); a server found dead, before or after a call, is restarted once and the episode goes on (the result
says so); a second death ends the episode with `ServerDied`, naming the server. `close()` stops every server
process the episode started.

This reaches into fastmcp internals (`MCPConfigTransport._underlying_transports`, `StdioTransport._session` and
`_connect_task`) as pinned by the `loca` extra (fastmcp 2.14.7).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from typing import Any

ERROR_PREFIXES = ("[Tool execution error", "[Tool execution failed")
PING_SECONDS = 10.0
RESTARTED = (
    "[The {server} server stopped during this call and was restarted; what it held only in memory is lost.]"
)


class ServerDied(RuntimeError):
    """A case's MCP server stopped a second time during one episode; the message names it."""


class EpisodeServers:
    """Upstream's tool interface (`execute_tool`, `get_tool_function`, `instruction_string`, `tool_type`) over
    an `MCPTool` whose servers start in `start()` and stay up until `close()`."""

    tool_type = "mcp"

    def __init__(self, upstream: Any, *, label: str, call_timeout: float, restarts: int = 1):
        self._upstream = upstream
        self._upstream.max_retries = 1  # a retry would build a second client and launch every server again
        self._label, self._call_timeout, self._restarts = label, call_timeout, restarts
        transport = upstream.client.transport
        names = list(upstream.normalized_config["mcpServers"])
        # one server: the client's transport is the server's own; several: one per server, in config order
        underlying = getattr(transport, "_underlying_transports", [transport])
        self._transports = dict(zip(names, underlying, strict=True))
        self._deaths = dict.fromkeys(names, 0)
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name=f"loca-servers {label}", daemon=True
        )
        self._open = False

    # -- life cycle --------------------------------------------------------------------------------------
    def start(self) -> list[dict[str, Any]]:
        """Launch every server and list their tools (upstream's format); they stay up until `close()`."""
        self._thread.start()
        tools = self._run(self._start(), timeout=self._call_timeout + 300)
        self._upstream._available_tools, self._upstream._tools_discovered = tools, True
        return tools

    async def _start(self) -> list[dict[str, Any]]:
        await self._upstream.client.__aenter__()
        self._open = True
        return await self._upstream._async_discover_tools()

    def close(self) -> None:
        """Stop every server process of the episode and the event loop's thread."""
        if not self._thread.is_alive():
            return
        try:
            self._run(self._close(), timeout=60)
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=30)
            if not self._thread.is_alive():
                self._loop.close()

    async def _close(self) -> None:
        if self._open:
            self._open = False
            try:
                await self._upstream.client.close()  # force-disconnects, then closes every server's transport
            except Exception:  # noqa: BLE001 (a dead server's pipe breaks the composite close)
                # ... so each server is closed on its own: the living ones stop, the dead ones' errors are
                # the death already reported
                for transport in self._transports.values():
                    try:
                        await asyncio.wait_for(transport.close(), 30)
                    except Exception:  # noqa: BLE001, S112
                        continue

    def _run(self, coroutine: Coroutine[Any, Any, Any], *, timeout: float) -> Any:
        future = asyncio.run_coroutine_threadsafe(coroutine, self._loop)
        try:
            return future.result(timeout=timeout)
        except TimeoutError:
            future.cancel()  # the coroutine stops at its next await instead of running on unseen
            raise

    # -- upstream's tool interface -------------------------------------------------------------------
    def instruction_string(self) -> str:
        return self._upstream.instruction_string()

    def get_tool_function(self) -> list[dict[str, Any]]:
        return self._upstream.get_tool_function()

    def get_available_tools(self) -> list[dict[str, Any]]:
        return self._upstream.get_available_tools()

    def execute_tool(self, tool_name: str, parameters: dict[str, Any], tool_call_id: str) -> tuple:
        """(parsed, error, observation, tool name, call id), as upstream's `MCPTool.execute_tool` returns."""
        if tool_name not in {t["name"] for t in self._upstream.get_available_tools()}:
            return False, True, f"Tool '{tool_name}' not found.", tool_name, tool_call_id
        server = self.server_of(tool_name)
        try:
            response = self._run(self._call(server, tool_name, parameters), timeout=self._call_timeout + 60)
        except TimeoutError:
            response = f"[Tool execution failed: no answer within {self._call_timeout + 60:.0f} s]"
        return True, response.startswith(ERROR_PREFIXES), response, tool_name, tool_call_id

    def server_of(self, tool_name: str) -> str:
        """The server a (prefixed) tool name belongs to: the longest server name it starts with."""
        if len(self._transports) == 1:
            return next(iter(self._transports))
        owners = [n for n in self._transports if tool_name.startswith(f"{n}_")]
        return max(owners, key=len) if owners else ""

    async def _call(self, server: str, tool_name: str, parameters: dict[str, Any]) -> str:
        if server and not await self._alive(server):
            await self._restart(server)
        response = await self._upstream._async_execute_tool(tool_name, parameters)
        if server and response.startswith(ERROR_PREFIXES) and not await self._alive(server):
            await self._restart(server)
            response = f"{response}\n{RESTARTED.format(server=server)}"
        return response

    # -- health --------------------------------------------------------------------------------------
    async def _alive(self, server: str) -> bool:
        transport = self._transports[server]
        task = getattr(transport, "_connect_task", None)
        if task is None:  # not started yet (or just restarted): the next request through it starts it
            return True
        session = getattr(transport, "_session", None)
        if task.done() or session is None:
            return False
        try:
            await asyncio.wait_for(session.send_ping(), PING_SECONDS)
        except Exception:  # noqa: BLE001 (no answer to a ping, for whatever reason, means dead)
            return False
        return True

    async def _restart(self, server: str) -> None:
        self._deaths[server] += 1
        if self._deaths[server] > self._restarts:
            raise ServerDied(
                f"LOCA {self._label}: the MCP server {server!r} stopped {self._deaths[server]} times during "
                f"the episode (restarted {self._restarts} time(s)); the episode cannot go on"
            )
        transport = self._transports[server]
        try:
            await asyncio.wait_for(transport.disconnect(), 30)
        except Exception:  # noqa: BLE001 (the connection task died with the server: start afresh)
            transport._connect_task, transport._session = None, None
            transport._stop_event, transport._ready_event = (
                type(transport._stop_event)(),
                type(transport._ready_event)(),
            )
        await self._upstream.client.list_tools()  # a request through the composite starts it again
