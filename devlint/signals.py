"""Holding Ctrl-C (SIGINT) and SIGTERM back while a step that must not be cut short runs."""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator


@contextlib.contextmanager
def interrupts_deferred() -> Iterator[None]:
    """Hold SIGINT and SIGTERM until the block is done; a signal that arrived meanwhile is
    raised again on exit (KeyboardInterrupt, or the default SIGTERM exit).

    Python runs signal handlers in the main thread only, so replacing them there holds the
    signal whichever thread the kernel delivered it to. Elsewhere this does nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    pending: list[int] = []
    previous: dict[int, object] = {}
    for signum in (signal.SIGINT, signal.SIGTERM):
        if signal.getsignal(signum) is not None:
            previous[signum] = signal.signal(signum, lambda number, frame: pending.append(number))
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)  # type: ignore[arg-type]
        for signum in dict.fromkeys(pending):
            signal.raise_signal(signum)
