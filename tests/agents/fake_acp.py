"""A fake ACP agent that replays a recorded transcript (newline-delimited JSON-RPC on stdio).

    python fake_acp.py TRANSCRIPT.json

The transcript is `{"turns": [...]}`; for each `session/prompt` the next turn is played:
every entry of `updates` is sent as a `session/update` notification, except
`{"ask": {toolCall, options}}`, which is sent as a `session/request_permission` request whose
answer is awaited (and recorded into the next update as `_meta.answer`, so tests can see it);
`{"fs": {method, params}}` sends a client request (`fs/read_text_file`, …) and reports its
answer (`result` or `error`) as an `agent_message_chunk` `[fs: {...}]`;
then the prompt is answered with the turn's `response` (`{stopReason, usage?}`) or `error`.
The prompt's blocks are echoed back in an `agent_thought_chunk` first when `echo` is set.
With `"load_session": true` in the transcript the fake advertises `loadSession`; a
`session/load` replays one old `agent_message_chunk` (history, which a client must not show
as a new answer) and every later turn's answer starts with `[loaded: <sessionId>]`.
With `"list_sessions": [SessionInfo…]` it advertises `sessionCapabilities.list` and answers
`session/list` with them (one per page, `nextCursor` the next index; a `cwd` param filters).
With `"config_options": [...]` (ACP `configOptions`) and/or `"models": {availableModels,
currentModelId}` the `session/new` answer offers them; `session/set_config_option` and
`session/set_model` change them (a value not offered is an error), and every turn's answer
then starts with `[config: id=value, …]` (`model=<id>` for `models`), so tests see what the
agent was set to.
Standard library only.
"""

from __future__ import annotations

import json
import sys

SESSION = "fake-session-1"


def send(message: dict) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def read() -> dict | None:
    line = sys.stdin.readline()
    return json.loads(line) if line else None


def listed(transcript: dict, params: dict) -> dict:
    """One page of `session/list`: one session, the next index as the cursor."""
    wanted = params.get("cwd")
    sessions = [s for s in transcript["list_sessions"] if wanted in (None, s["cwd"])]
    at = int(params.get("cursor") or 0)
    page: dict = {"sessions": sessions[at : at + 1]}
    if at + 1 < len(sessions):
        page["nextCursor"] = str(at + 1)
    return page


def configure(params: dict, options: list | None, models: dict | None) -> dict:
    """`session/set_config_option` or `session/set_model`: the JSON-RPC result or error."""
    if "configId" in params:
        for option in options or []:
            entries = option["options"]
            values = {v["value"] for o in entries for v in o.get("options", [o])}  # groups too
            if option["id"] == params["configId"] and params["value"] in values:
                option["currentValue"] = params["value"]
                return {"result": {"configOptions": options}}
    elif models is not None and params["modelId"] in {
        m["modelId"] for m in models["availableModels"]
    }:
        models["currentModelId"] = params["modelId"]
        return {"result": {}}
    return {"error": {"code": -32602, "message": f"not offered: {params}"}}


def settings(options: list | None, models: dict | None) -> str:
    found = [f"{o['id']}={o['currentValue']}" for o in options or []]
    if models is not None:
        found.append(f"model={models['currentModelId']}")
    return ", ".join(found)


def main() -> int:
    with open(sys.argv[1]) as handle:
        transcript = json.load(handle)
    turns = transcript["turns"]
    asks = 0
    loaded = None
    options = transcript.get("config_options")
    models = transcript.get("models")
    while (message := read()) is not None:
        method, rid = message.get("method"), message.get("id")
        if method == "initialize":
            result: dict = {"protocolVersion": 1}
            if transcript.get("load_session"):
                result["agentCapabilities"] = {"loadSession": True}
            if "list_sessions" in transcript:
                capabilities = result.setdefault("agentCapabilities", {})
                capabilities["sessionCapabilities"] = {"list": {}}
            send({"jsonrpc": "2.0", "id": rid, "result": result})
        elif method == "session/list" and "list_sessions" in transcript:
            send({"jsonrpc": "2.0", "id": rid, "result": listed(transcript, message["params"])})
        elif method == "session/load" and transcript.get("load_session"):
            loaded = message["params"]["sessionId"]
            old = {
                "sessionUpdate": "agent_message_chunk",
                "content": {"type": "text", "text": "old"},
            }
            params = {"sessionId": loaded, "update": old}
            send({"jsonrpc": "2.0", "method": "session/update", "params": params})
            send({"jsonrpc": "2.0", "id": rid, "result": {}})
        elif method == "session/new":
            result = {"sessionId": SESSION}
            if options is not None:
                result["configOptions"] = options
            if models is not None:
                result["models"] = models
            send({"jsonrpc": "2.0", "id": rid, "result": result})
        elif method in ("session/set_config_option", "session/set_model"):
            send({"jsonrpc": "2.0", "id": rid, **configure(message["params"], options, models)})
        elif method == "session/prompt":
            turn = turns.pop(0)
            if loaded is not None:
                note = {
                    "sessionUpdate": "agent_message_chunk",
                    "content": {"type": "text", "text": f"[loaded: {loaded}]"},
                }
                params = {"sessionId": loaded, "update": note}
                send({"jsonrpc": "2.0", "method": "session/update", "params": params})
            if options is not None or models is not None:
                note = {
                    "sessionUpdate": "agent_message_chunk",
                    "content": {"type": "text", "text": f"[config: {settings(options, models)}]"},
                }
                params = {"sessionId": SESSION, "update": note}
                send({"jsonrpc": "2.0", "method": "session/update", "params": params})
            if turn.get("echo"):
                blocks = json.dumps(message["params"]["prompt"])
                update = {
                    "sessionUpdate": "agent_thought_chunk",
                    "content": {"type": "text", "text": blocks},
                }
                send(
                    {
                        "jsonrpc": "2.0",
                        "method": "session/update",
                        "params": {"sessionId": SESSION, "update": update},
                    }
                )
            for update in turn.get("updates", []):
                if "fs" in update:
                    asks += 1
                    params = {"sessionId": SESSION, **update["fs"]["params"]}
                    request = {"id": f"fs-{asks}", "method": update["fs"]["method"]}
                    send({"jsonrpc": "2.0", **request, "params": params})
                    while (answer := read()) is not None and answer.get("id") != f"fs-{asks}":
                        pass
                    reply = {k: v for k, v in (answer or {}).items() if k in ("result", "error")}
                    note = {
                        "sessionUpdate": "agent_message_chunk",
                        "content": {"type": "text", "text": f"[fs: {json.dumps(reply)}]"},
                    }
                    params = {"sessionId": SESSION, "update": note}
                    send({"jsonrpc": "2.0", "method": "session/update", "params": params})
                    continue
                if "ask" in update:
                    asks += 1
                    params = {"sessionId": SESSION, **update["ask"]}
                    send(
                        {
                            "jsonrpc": "2.0",
                            "id": f"ask-{asks}",
                            "method": "session/request_permission",
                            "params": params,
                        }
                    )
                    while (answer := read()) is not None and answer.get("id") != f"ask-{asks}":
                        pass
                    outcome = (answer or {}).get("result", {}).get("outcome", {})
                    note = {
                        "sessionUpdate": "agent_message_chunk",
                        "content": {"type": "text", "text": f"[answer: {json.dumps(outcome)}]"},
                    }
                    send(
                        {
                            "jsonrpc": "2.0",
                            "method": "session/update",
                            "params": {"sessionId": SESSION, "update": note},
                        }
                    )
                    continue
                send(
                    {
                        "jsonrpc": "2.0",
                        "method": "session/update",
                        "params": {"sessionId": SESSION, "update": update},
                    }
                )
            if "error" in turn:
                send({"jsonrpc": "2.0", "id": rid, "error": turn["error"]})
            else:
                send({"jsonrpc": "2.0", "id": rid, "result": turn["response"]})
        elif rid is not None:
            send(
                {
                    "jsonrpc": "2.0",
                    "id": rid,
                    "error": {"code": -32601, "message": "Method not found"},
                }
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
