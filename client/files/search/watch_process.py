"""The file watcher's child process: `python watch_process.py ROOT`.

Why a process: setting up a recursive inotify watch walks the whole tree inside watchfiles'
Rust constructor while holding the GIL — 1.5–4 s on a 100,000-file tree, during which a watcher
thread would freeze the client's event loop. In a child process it costs the client nothing.

Protocol on stdout, one JSON array per line:
  ["ready"]                          the watch is in place; later changes will be reported
  ["change", KIND, ABSOLUTE_PATH]    KIND: "added", "modified" or "deleted"
  ["batch"]                          end of one debounced batch
  ["error", MESSAGE]                 the watch failed; the process exits
The process exits when its stdin closes (the client went away) or on SIGTERM.
"""

from __future__ import annotations

import json
import sys
import threading


def _emit(*fields: str) -> None:
    sys.stdout.write(json.dumps(fields) + "\n")


def main(root: str) -> int:
    import watchfiles

    stop = threading.Event()

    def wait_for_parent() -> None:
        sys.stdin.read()  # returns at EOF: the parent closed the pipe or died
        stop.set()

    threading.Thread(target=wait_for_parent, daemon=True).start()
    ready = False
    try:
        # yield_on_timeout: the first (possibly empty) batch proves the watch is in place.
        for changes in watchfiles.watch(
            root,
            watch_filter=None,
            debounce=1600,
            step=50,
            rust_timeout=200,
            yield_on_timeout=True,
            stop_event=stop,
            ignore_permission_denied=True,
        ):
            if not ready:
                ready = True
                _emit("ready")
            for change, path in changes:
                _emit("change", change.name, path)
            if changes:
                _emit("batch")
            sys.stdout.flush()
    except Exception as exc:  # the parent logs it and falls back to periodic re-walks
        _emit("error", f"{type(exc).__name__}: {exc}")
        sys.stdout.flush()
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
