"""The console platform and composer on their own: input from pipes and strings, output text."""

from __future__ import annotations

import io
import os

from adapters.console import ConsoleComposer, ConsolePlatform, LineReader
from gateway.platform import ChoiceOption, InteractionPrompt, PlatformLimits
from gateway.sessions.prompt import CommandCache
from rawp.events import Command, CommandsPublish, FileCandidate
from rawp.fileref import FileToken, parse


def console(typed: str = "") -> tuple[ConsolePlatform, LineReader, io.StringIO]:
    out = io.StringIO()
    lines = LineReader(io.StringIO(typed))
    return ConsolePlatform(out, lines), lines, out


def commands() -> CommandCache:
    cache = CommandCache()
    cache.update(
        CommandsPublish(
            commands=[
                Command(name="compact", description="Shrink the context"),
                Command(name="cost", description="Show the cost"),
            ]
        )
    )
    return cache


async def test_typed_lines_become_escaped_text_prompts_with_the_users_message():
    platform, lines, _ = console("\n   \nwhy does <@file:x|y> fail?\n")
    prompt = await ConsoleComposer(platform, lines).next_prompt()
    assert prompt.request.prompt_text == r"why does \<@file:x|y> fail?"
    assert prompt.request.input_type == "text"
    assert platform.messages[prompt.message.message_id].text == "why does <@file:x|y> fail?"
    assert await ConsoleComposer(platform, lines).next_prompt() is None  # end of input


async def test_slash_commands_list_filter_and_send():
    platform, lines, out = console("/\n/co\n/compact keep tests\n/etc/hosts is odd\n")
    composer = ConsoleComposer(platform, lines, commands=commands)
    prompt = await composer.next_prompt()
    assert prompt.request.input_type == "slash_command"
    assert prompt.request.prompt_text == "/compact keep tests"
    listing = out.getvalue()
    assert "/compact — Shrink the context\n/cost — Show the cost" in listing
    assert listing.count("/cost — Show the cost") == 2  # "/" and "/co" both listed it
    text = await composer.next_prompt()
    assert text.request.input_type == "text"  # not a published command: plain text


async def test_at_mentions_pick_files_by_number_or_stay_text():
    queries = []

    async def search(query: str) -> list[FileCandidate]:
        queries.append(query)
        if query == "nothing":
            return []
        return [
            FileCandidate(path="src/auth.ts", name="auth.ts", directory="src"),
            FileCandidate(path="src/author.ts", name="author.ts", directory="src"),
        ]

    platform, lines, out = console("fix @auth and @nothing, mail a@b.c and @auth\n2\n0\n")
    prompt = await ConsoleComposer(platform, lines, file_search=search).next_prompt()
    assert queries == ["auth", "nothing", "auth"]  # "a@b.c" is not a mention
    request = prompt.request
    parts = parse(request.prompt_text, request.file_references)
    assert parts == [
        "fix ",
        FileToken("ref_0", "src/author.ts"),
        " and @nothing, mail a@b.c and @auth",
    ]
    assert "  [1] src/auth.ts\n  [2] src/author.ts" in out.getvalue()


async def test_interaction_prompt_by_number_label_or_id_and_free_text():
    platform, _, out = console("yes\nDENY\n\nmain\n")
    prompt = InteractionPrompt(
        "i1", "approval", "Go?", (ChoiceOption("allow", "Allow"), ChoiceOption("deny", "Deny"))
    )
    ref = await platform.send_interaction(platform.conversation, prompt)
    choice = await platform.wait_for_choice(ref, None)
    assert choice.option_id == "deny" and choice.user_id == "console"
    assert out.getvalue().count("Please answer with a number from 1 to 2.") == 1  # "yes"
    free = InteractionPrompt("i2", "input", "Branch?")
    ref2 = await platform.send_interaction(platform.conversation, free)
    assert "Type your answer:" in out.getvalue()
    assert (await platform.wait_for_choice(ref2, None)).text == "main"


async def test_answers_are_read_one_line_per_prompt_from_a_pipe():
    read_fd, write_fd = os.pipe()
    with os.fdopen(read_fd) as stdin, os.fdopen(write_fd, "w") as writer:
        lines = LineReader(stdin)
        platform = ConsolePlatform(io.StringIO(), lines)
        prompt = InteractionPrompt("i1", "choice", "Pick", (ChoiceOption("a", "A"),))
        ref = await platform.send_interaction(platform.conversation, prompt)
        writer.write("1\nsecond line\n")
        writer.flush()
        assert (await platform.wait_for_choice(ref, None)).option_id == "a"
        assert await lines.readline() == "second line"  # nothing consumed ahead of its prompt


async def test_a_timed_out_prompt_loses_no_line():
    read_fd, write_fd = os.pipe()
    with os.fdopen(read_fd) as stdin, os.fdopen(write_fd, "w") as writer:
        lines = LineReader(stdin)
        assert await lines.readline(timeout_s=0.01) is None
        writer.write("late\n")
        writer.flush()
        assert await lines.readline() == "late"


async def test_typing_shows_once_per_stretch_and_edits_and_reactions_are_kept():
    platform, _, out = console()
    conv = platform.conversation
    for _ in range(3):
        await platform.trigger_typing(conv)
    ref = await platform.send_message(conv, "hello")
    await platform.trigger_typing(conv)
    await platform.edit_message(ref, "hello again")
    await platform.add_reaction(ref, "✅")
    await platform.add_reaction(ref, "✅")
    await platform.delete_message(ref)
    await platform.edit_message(ref, "ignored")
    assert out.getvalue() == "⋯ typing…\nhello\n⋯ typing…\n✎ hello again\n✅ done\n"
    assert platform.typing_calls == 4
    stored = platform.messages[ref.message_id]
    assert stored.reactions == ["✅"] and stored.deleted and stored.text == "hello again"


async def test_hidden_text_is_a_spoiler_split_at_the_console_limit():
    out = io.StringIO()
    platform = ConsolePlatform(
        out, LineReader(io.StringIO()), limits=PlatformLimits(max_message_length=200)
    )
    await platform.send_hidden(platform.conversation, "💭 Thinking", "word || " * 60)
    sent = [m.text for m in platform.messages.values()]
    assert len(sent) > 1 and all(len(m) <= 200 for m in sent)
    assert sent[0].startswith("💭 Thinking ||") and all(m.endswith("||") for m in sent)
