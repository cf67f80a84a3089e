"""Tasks that should run until they are stopped, and why one no longer does (liveness)."""

from __future__ import annotations

import asyncio


def ended(what: str, task: asyncio.Task[None]) -> str | None:
    """Why `task`, which should run until stopped, is no longer running; None if it runs."""
    if not task.done():
        return None
    if task.cancelled():
        return f"the {what} was cancelled"
    error = task.exception()
    return f"the {what} stopped: {error!r}" if error else f"the {what} returned"
