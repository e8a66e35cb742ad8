"""The `openai` kind end to end: the client's WebSocket → the kind → a fake OpenAI server."""

from __future__ import annotations

import asyncio

import pytest

from client.agents import AgentsFileError, load_agents
from tests.agents.fake_openai import FakeOpenAI, Reply, chunk, usage_chunk
from tests.agents.wire import (
    kinds,
    of,
    open_session,
    send_prompt,
    stop_reason,
    turn,
    write_agents_file,
)
from tests.client.harness import frame, recv_until, running_client

AGENTS = """
[agents.llm]
kind = "openai"
base_url = "{base}"
model = "test-model"
api_key_env = "RAWP_TEST_OPENAI_KEY"
system_prompt = "You are terse."
prices = {{ input = 2.0, output = 8.0, cached_input = 0.5 }}

[agents.inline]
kind = "openai"
base_url = "{base}"
model = "test-model"
files = "inline"
"""


@pytest.fixture
async def setup(tmp_path, monkeypatch):
    monkeypatch.setenv("RAWP_TEST_OPENAI_KEY", "sk-test-123")
    async with FakeOpenAI() as fake:
        path = write_agents_file(tmp_path, AGENTS.format(base=fake.base_url))
        async with running_client(tmp_path, agents_file=path) as client:
            yield client, fake


def answer(*texts: str, finish: str = "stop") -> list[dict]:
    return (
        [chunk({"role": "assistant", "content": ""})]
        + [chunk({"content": t}) for t in texts]
        + [chunk({}, finish)]
    )


async def test_plain_answer_usage_cost_and_history(setup):
    client, fake = setup
    fake.script.append(Reply(answer("Hel", "lo"), done=True))
    fake.script[-1].chunks.append(usage_chunk(1000, 500, cached=200))
    fake.script.append(Reply(answer("Again"), done=True))
    sid, ws = await open_session(client, "llm")
    frames = await turn(ws, sid, "hi")
    assert kinds(frames) == [
        "session.turn.start",
        "agent.state.changed",
        "agent.text.delta",
        "agent.text.delta",
        "agent.text.done",
        "session.usage",
        "agent.state.changed",
        "session.turn.end",
    ]
    assert of(frames, "agent.text.done") == [{"content_index": 0, "text": "Hello"}]
    usage = of(frames, "session.usage")[0]
    assert usage["input_tokens"] == 1000 and usage["cache_read_tokens"] == 200
    # 800 fresh × $2 + 200 cached × $0.5 + 500 out × $8, per million tokens
    assert usage["cost_usd"] == pytest.approx((800 * 2 + 200 * 0.5 + 500 * 8) / 1e6)
    assert stop_reason(frames) == "end_turn"
    request = fake.requests[0]
    assert request["stream"] is True and request["stream_options"] == {"include_usage": True}
    assert "tools" not in request  # no tools unless configured
    assert fake.headers[0]["Authorization"] == "Bearer sk-test-123"
    frames = await turn(ws, sid, "once more")
    assert fake.requests[1]["messages"] == [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "Hello"},
        {"role": "user", "content": "once more"},
    ]
    # No usage chunk from this server: the usage is estimated, never missing.
    assert of(frames, "session.usage")[0]["estimated"] is True


@pytest.mark.parametrize(
    "chunks",
    [
        # vLLM / OpenRouter
        [chunk({"reasoning": "Let me "}), chunk({"reasoning": "think."}), chunk({"content": "42"})],
        # DeepSeek / llama.cpp
        [
            chunk({"reasoning_content": "Let me think."}),
            chunk({"content": "4"}),
            chunk({"content": "2"}),
        ],
        # Ollama / R1 distills: the tags inside content, split across chunks
        [
            chunk({"content": "<thi"}),
            chunk({"content": "nk>Let me "}),
            chunk({"content": "think.</th"}),
            chunk({"content": "ink>42"}),
        ],
    ],
    ids=["reasoning", "reasoning_content", "think-tags"],
)
async def test_the_three_reasoning_dialects_become_thinking(setup, chunks):
    client, fake = setup
    fake.script.append(Reply([*chunks, chunk({}, "stop"), usage_chunk(10, 20, reasoning=5)]))
    sid, ws = await open_session(client, "llm")
    frames = await turn(ws, sid, "what is six times seven?")
    assert kinds(frames, drop_deltas=True) == [
        "session.turn.start",
        "agent.state.changed",
        "agent.thinking.done",
        "agent.text.done",
        "session.usage",
        "agent.state.changed",
        "session.turn.end",
    ]
    thought = "".join(p["text"] for p in of(frames, "agent.thinking.delta"))
    assert thought == "Let me think."
    assert {p["content_index"] for p in of(frames, "agent.thinking.delta")} == {0}
    assert of(frames, "agent.thinking.done")[0]["redacted"] is False
    assert of(frames, "agent.text.done") == [{"content_index": 1, "text": "42"}]
    assert of(frames, "session.usage")[0]["reasoning_tokens"] == 5


async def test_length_finish_is_max_tokens(setup):
    client, fake = setup
    fake.script.append(Reply(answer("trunc", finish="length")))
    sid, ws = await open_session(client, "llm")
    assert stop_reason(await turn(ws, sid, "long please")) == "max_tokens"


async def test_a_cut_stream_is_an_error_with_estimated_usage(setup):
    client, fake = setup
    fake.script.append(Reply([chunk({"content": "partial ans"})], cut=True))
    fake.script.append(Reply(answer("fine")))
    sid, ws = await open_session(client, "llm")
    frames = await turn(ws, sid, "go")
    assert kinds(frames, drop_deltas=True) == [
        "session.turn.start",
        "agent.state.changed",
        "agent.text.done",
        "agent.error",
        "session.usage",
        "agent.state.changed",
        "session.turn.end",
    ]
    error = of(frames, "agent.error")[0]
    assert error["code"] == "MODEL_STREAM_CUT" and error["severity"] == "error"
    assert of(frames, "session.usage")[0]["estimated"] is True
    assert of(frames, "agent.state.changed")[-1]["current_state"] == "error"
    assert stop_reason(frames) == "error"
    # The failed exchange is not part of the conversation; the session goes on.
    assert stop_reason(await turn(ws, sid, "retry")) == "end_turn"
    assert [m["content"] for m in fake.requests[1]["messages"]][1:] == ["retry"]


@pytest.mark.parametrize("status,retryable", [(429, True), (500, True), (400, False)])
async def test_http_errors_become_agent_errors(setup, status, retryable):
    client, fake = setup
    fake.script.append(Reply(status=status, error="slow down"))
    sid, ws = await open_session(client, "llm")
    frames = await turn(ws, sid, "go")
    error = of(frames, "agent.error")[0]
    assert error["code"] == f"MODEL_HTTP_{status}" and "slow down" in error["message"]
    assert error["retryable"] is retryable
    assert stop_reason(frames) == "error"


async def test_an_unreachable_server_is_an_error_not_a_hang(tmp_path):
    from tests.support import free_port

    path = write_agents_file(
        tmp_path,
        f'[agents.gone]\nkind = "openai"\nbase_url = "http://127.0.0.1:{free_port()}/v1"\n'
        'model = "m"\n',
    )
    async with running_client(tmp_path, agents_file=path) as client:
        sid, ws = await open_session(client, "gone")
        frames = await turn(ws, sid, "anyone?")
        assert of(frames, "agent.error")[0]["code"] == "MODEL_UNREACHABLE"
        assert stop_reason(frames) == "error"


async def test_cancel_mid_stream_keeps_what_was_shown(setup):
    client, fake = setup
    hold = asyncio.Event()
    fake.script.append(
        Reply([chunk({"content": "Once upon"}), chunk({"content": " never"})], hold=hold)
    )
    fake.script.append(Reply(answer("ok")))
    sid, ws = await open_session(client, "llm")
    await send_prompt(ws, sid, "tell a story")
    await fake.started.wait()
    seen = await recv_until(ws, "agent.text.delta")
    await ws.send(frame("control.prompt.cancel", {}, sid))
    frames = seen + await recv_until(ws, "session.turn.end")
    hold.set()
    assert stop_reason(frames) == "cancelled"
    assert of(frames, "agent.text.done") == [{"content_index": 0, "text": "Once upon"}]
    await turn(ws, sid, "and then?")
    assert fake.requests[1]["messages"][-2:] == [
        {"role": "assistant", "content": "Once upon"},
        {"role": "user", "content": "and then?"},
    ]


async def test_file_references_as_file_markers_or_inlined(setup):
    client, fake = setup
    (client.workspace / "src").mkdir()
    (client.workspace / "src" / "a.py").write_text("print('a')\n")
    refs = [{"ref_id": "ref_0", "path": "src/a.py", "display_path": "src/a.py"}]
    fake.script.extend([Reply(answer("ok")), Reply(answer("ok")), Reply(answer("ok"))])
    sid, ws = await open_session(client, "llm")
    await turn(ws, sid, "explain <@file:ref_0|src/a.py> please", refs)
    assert fake.requests[0]["messages"][-1]["content"] == "explain [File: src/a.py] please"
    # F-ADPT-05: a reference to a file that does not exist stays as its display path.
    gone = [{"ref_id": "ref_1", "path": "src/gone.py", "display_path": "src/gone.py"}]
    await turn(ws, sid, "and <@file:ref_1|src/gone.py>", gone)
    assert fake.requests[1]["messages"][-1]["content"] == "and src/gone.py"
    sid, ws = await open_session(client, "inline")
    await turn(ws, sid, "explain <@file:ref_0|src/a.py>", refs)
    content = fake.requests[2]["messages"][-1]["content"]
    assert content.startswith("explain [File: src/a.py]\n\n[File: src/a.py]\n```\nprint('a')\n")


@pytest.mark.parametrize(
    "line,complaint",
    [
        ('base_url = "http://x/v1"', "model: missing"),
        ('base_url = "ftp://x"\nmodel = "m"', "http://"),
        ('base_url = "http://x/v1"\nmodel = "m"\napi_key = "sk-1"', "api_key_env"),
        (
            'base_url = "http://x/v1"\nmodel = "m"\nfiles = "attach"',
            "files: expected one of reference, inline",
        ),
        (
            'base_url = "http://x/v1"\nmodel = "m"\nprices = { input = -1 }',
            "prices: expected a table of input",
        ),
    ],
)
def test_bad_settings_are_refused_with_the_field_named(tmp_path, line, complaint):
    path = write_agents_file(tmp_path, f'[agents.x]\nkind = "openai"\n{line}\n')
    with pytest.raises(AgentsFileError) as refused:
        load_agents(path)
    assert "[agents.x]" in str(refused.value) and complaint in str(refused.value)
