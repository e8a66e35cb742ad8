"""`/rawp …` application commands: hooks, autocomplete within 25 choices, access refusals."""

from __future__ import annotations

import asyncio

import pytest

from tests.adapters.chat_support import RecordingHooks
from tests.adapters.discord_support import running_bot
from tests.fakes.discord_payloads import button_row, command_option
from tests.fakes.discord_server import FakeDiscord
from tests.gateway.support import eventually

EPHEMERAL = 64


async def until(predicate) -> None:
    await eventually(predicate, "the hook call")


def sub(name: str, *options: dict) -> list[dict]:
    """The options of `/rawp <name> …` as Discord sends a subcommand."""
    return [{"type": 1, "name": name, "options": list(options)}]


@pytest.fixture
async def bot_with_hooks():
    async with FakeDiscord() as fake:
        hooks = RecordingHooks()
        async with running_bot(fake, hooks) as bot:
            yield fake, bot, hooks


async def test_the_command_tree_is_synced_with_every_verb(bot_with_hooks):
    fake, _, _ = bot_with_hooks
    sync = await fake.wait_for_call("PUT", f"/applications/{fake.world.application_id}/commands")
    [rawp] = sync.body
    verbs = {o["name"]: o for o in rawp["options"]}
    assert set(verbs) == {
        "start", "prompt", "command", "stop", "end", "pair", "nodes", "sessions", "usage",
        "busy", "mode", "model", "worktree", "resume", "fork", "web", "schedule", "schedules",
    }  # fmt: skip
    [model] = verbs["model"]["options"]  # issue 30 §1: optional, autocompleted
    assert not model.get("required") and model["autocomplete"] is True
    [when] = verbs["schedule"]["options"]  # issue 30 §5: one required text, quotes and all
    assert when.get("required") and when["type"] == 3 and not verbs["schedules"].get("options")
    [action] = verbs["worktree"]["options"]  # issue 30 §3: one required action of three
    assert action.get("required") and [c["value"] for c in action["choices"]] == [
        "diff",
        "merge",
        "discard",
    ]
    start_worktree = {o["name"]: o for o in verbs["start"]["options"]}["worktree"]
    assert not start_worktree.get("required") and start_worktree["type"] == 5  # a boolean
    [agent_mode] = verbs["mode"]["options"]  # issue 30 §1: the three chat names, none required
    assert not agent_mode.get("required")
    assert [c["value"] for c in agent_mode["choices"]] == ["plan", "ask", "accept-edits"]
    [mode] = verbs["busy"]["options"]
    assert not mode.get("required") and [c["value"] for c in mode["choices"]] == [
        "queue",
        "interrupt",
    ]
    prompt_options = {o["name"]: o for o in verbs["prompt"]["options"]}
    assert prompt_options["file"]["autocomplete"] is True
    assert {o["name"] for o in verbs["start"]["options"] if o.get("autocomplete")} == {
        "node",
        "agent",
    }


async def test_start_hands_node_and_agent_to_the_hook_and_answers_privately(bot_with_hooks):
    fake, _, hooks = bot_with_hooks
    interaction = await fake.inject_slash_command(
        "rawp", sub("start", command_option("node", "node-1"), command_option("agent", "demo"))
    )
    deferred = await fake.wait_for_interaction_answer(interaction)
    assert deferred.body["type"] == 5 and deferred.body["data"]["flags"] == EPHEMERAL
    webhook = f"/webhooks/{fake.world.application_id}/{interaction['token']}"
    reply = await fake.wait_for_call("POST", webhook)
    assert reply.body["content"] == "started demo on node-1"
    [(_, invocation, node, agent, worktree)] = hooks.of("start")
    assert (node, agent, worktree) == ("node-1", "demo", False)
    assert invocation.user_id == fake.world.alice["id"]
    assert invocation.conversation.channel_id == fake.world.channel_id
    assert invocation.workspace_id == fake.world.guild_id


async def test_file_autocomplete_offers_at_most_25_choices(bot_with_hooks):
    fake, _, hooks = bot_with_hooks
    interaction = await fake.inject_autocomplete(
        "rawp",
        sub("prompt", command_option("text", "fix"), command_option("file", "mod", focused=True)),
    )
    answer = await fake.wait_for_interaction_answer(interaction)
    assert answer.body["type"] == 8
    choices = answer.body["data"]["choices"]
    assert len(choices) == 25  # the hook found 40
    assert choices[0] == {"name": "src/mod0.py", "value": "src/mod0.py"}
    assert hooks.of("search")[0][2] == "mod"


async def test_node_autocomplete_is_cut_to_25(bot_with_hooks):
    fake, _, _ = bot_with_hooks
    interaction = await fake.inject_autocomplete(
        "rawp", sub("start", command_option("node", "", focused=True))
    )
    answer = await fake.wait_for_interaction_answer(interaction)
    assert len(answer.body["data"]["choices"]) == 25


async def test_prompt_with_a_picked_file_becomes_a_file_token(bot_with_hooks):
    fake, _, hooks = bot_with_hooks
    interaction = await fake.inject_slash_command(
        "rawp",
        sub("prompt", command_option("text", "explain"), command_option("file", "src/mod3.py")),
    )
    shown = await fake.wait_for_interaction_answer(interaction)
    assert shown.body["type"] == 4 and "📎 `src/mod3.py`" in shown.body["data"]["content"]
    await until(lambda: hooks.of("prompt"))
    [(_, invocation, request)] = hooks.of("prompt")
    assert request.prompt_text == "explain <@file:ref_0|src/mod3.py>"
    assert [r.path for r in request.file_references] == ["src/mod3.py"]
    assert invocation.message is not None  # the shown prompt carries the turn's reactions


async def test_agent_command_is_sent_as_a_slash_command(bot_with_hooks):
    fake, _, hooks = bot_with_hooks
    completion = await fake.inject_autocomplete(
        "rawp", sub("command", command_option("name", "co", focused=True))
    )
    choices = (await fake.wait_for_interaction_answer(completion)).body["data"]["choices"]
    assert choices == [{"name": "/compact — Shrink the context", "value": "compact"}]
    run = await fake.inject_slash_command(
        "rawp", sub("command", command_option("name", "compact"), command_option("args", "auth"))
    )
    shown = await fake.wait_for_interaction_answer(run)
    assert shown.body["data"]["content"].endswith("**compact** auth")  # G-CMD-28/30
    await until(lambda: hooks.of("prompt"))
    [(_, _, request)] = hooks.of("prompt")
    assert (request.input_type, request.prompt_text) == ("slash_command", "/compact auth")


async def test_users_without_an_allowed_role_are_refused_privately():
    async with FakeDiscord() as fake:
        hooks = RecordingHooks()
        operators = frozenset({fake.world.operator_role_id})
        async with running_bot(fake, hooks, allowed_roles=operators):
            bob = fake.world.bob
            refused = await fake.inject_slash_command("rawp", sub("nodes"), user_payload=bob)
            answer = await fake.wait_for_interaction_answer(refused)
            assert answer.body["type"] == 4 and answer.body["data"]["flags"] == EPHEMERAL
            assert "not available to you" in answer.body["data"]["content"]
            completion = await fake.inject_autocomplete(
                "rawp", sub("start", command_option("node", "", focused=True)), user_payload=bob
            )
            empty = await fake.wait_for_interaction_answer(completion)
            assert empty.body["data"]["choices"] == []
            allowed = await fake.inject_slash_command("rawp", sub("nodes"))
            await fake.wait_for_interaction_answer(allowed)
            webhook = f"/webhooks/{fake.world.application_id}/{allowed['token']}"
            assert (await fake.wait_for_call("POST", webhook)).body["content"] == "laptop · online"
            assert [c[1].user_id for c in hooks.of("nodes")] == [fake.world.alice["id"]]
            # A prompt button, and a message in a session thread, from bob: refused / ignored.
            thread = await fake.add_thread("session 1")
            button = f"rawp:c:{thread['id']}:perm-9:allow"
            message = fake.world.message(
                thread["id"], "Allow?", extra={"components": [button_row(button, "Allow")]}
            )
            click = await fake.inject_button(button, message=message, user_payload=bob)
            answer = await fake.wait_for_interaction_answer(click)
            assert answer.body["data"]["flags"] == EPHEMERAL
            assert "not available to you" in answer.body["data"]["content"]
            await fake.inject_message("ignored", channel_id=thread["id"], author=bob)
            await fake.inject_message("heard", channel_id=thread["id"])
            await eventually(lambda: hooks.of("prompt"), "alice's prompt")
            assert [c[2].prompt_text for c in hooks.of("prompt")] == ["heard"]
            assert hooks.of("stale") == []


async def test_a_guild_not_allowed_is_refused():
    async with FakeDiscord() as fake, running_bot(fake, allowed_guilds=frozenset({"1"})):
        refused = await fake.inject_slash_command("rawp", sub("pair"))
        answer = await fake.wait_for_interaction_answer(refused)
        assert answer.body["data"]["flags"] == EPHEMERAL


class SlowHooks(RecordingHooks):
    async def search_files(self, invocation, typed):
        await asyncio.Event().wait()  # a master that never answers
        return []


async def test_a_slow_search_still_answers_autocomplete_before_discords_deadline(monkeypatch):
    from adapters.discord import commands

    monkeypatch.setattr(commands, "AUTOCOMPLETE_BUDGET_S", 0.1)
    async with FakeDiscord() as fake, running_bot(fake, SlowHooks()):
        interaction = await fake.inject_autocomplete(
            "rawp",
            sub("prompt", command_option("text", "x"), command_option("file", "m", focused=True)),
        )
        # The fake refuses answers later than Discord's 3 s (404, code 10062).
        answer = await fake.wait_for_interaction_answer(interaction)
        assert answer.body["data"]["choices"] == []


class BrokenHooks(RecordingHooks):
    async def list_nodes(self, invocation):
        raise RuntimeError("the master is down")


async def test_a_failing_hook_answers_with_an_apology_not_silence():
    async with FakeDiscord() as fake, running_bot(fake, BrokenHooks()):
        interaction = await fake.inject_slash_command("rawp", sub("nodes"))
        await fake.wait_for_interaction_answer(interaction)
        webhook = f"/webhooks/{fake.world.application_id}/{interaction['token']}"
        reply = await fake.wait_for_call("POST", webhook)
        assert reply.body["content"].startswith("⚠️ Something went wrong on our side")
        assert reply.body["flags"] == EPHEMERAL


async def test_without_a_conversation_layer_commands_say_so_until_one_is_plugged_in():
    async with FakeDiscord() as fake, running_bot(fake) as bot:
        webhook = f"/webhooks/{fake.world.application_id}"
        first = await fake.inject_slash_command("rawp", sub("nodes"))
        reply = await fake.wait_for_call("POST", f"{webhook}/{first['token']}")
        assert reply.body["content"] == "The gateway is not connected to a master yet."
        bot.platform.use_hooks(RecordingHooks())
        second = await fake.inject_slash_command("rawp", sub("nodes"))
        reply = await fake.wait_for_call("POST", f"{webhook}/{second['token']}")
        assert reply.body["content"] == "laptop · online"


async def test_usage_is_answered_privately(bot_with_hooks):
    """Issue 16 §4: `/rawp usage` goes to the usage hook; the answer is ephemeral."""
    fake, _, hooks = bot_with_hooks
    interaction = await fake.inject_slash_command("rawp", sub("usage"))
    deferred = await fake.wait_for_interaction_answer(interaction)
    assert deferred.body["data"]["flags"] == EPHEMERAL
    webhook = f"/webhooks/{fake.world.application_id}/{interaction['token']}"
    reply = await fake.wait_for_call("POST", webhook)
    assert reply.body["content"] == f"📊 usage for {fake.world.alice['id']}"
    assert reply.body["flags"] == EPHEMERAL
    assert [c[1].user_id for c in hooks.of("usage")] == [fake.world.alice["id"]]
