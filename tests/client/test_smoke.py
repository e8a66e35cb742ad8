from tests.client.harness import frame, recv, recv_until, running_client


async def test_prompt_round_trip(tmp_path):
    async with running_client(tmp_path) as client:
        sid, ws = await client.start_session()
        first = await recv(ws)
        assert first["type"] == "session.capabilities"
        assert (await recv(ws))["type"] == "tool.catalog.publish"
        await ws.send(frame("control.prompt.request", {"prompt_text": "hello"}, sid))
        frames = await recv_until(ws, "session.turn.end")
        for f in frames:
            print(f["type"], str(f["payload"])[:80])
        assert frames[-1]["payload"]["stop_reason"] == "end_turn"
