"""The model select and config option selects in Chromium (issue 30 §1): a select of the models
the agent's capabilities offer, showing the agent's `current_model` (not the choice until the
agent confirms it); choosing sends `control.model.set` with the model's id; an ACP config
option other than the model or mode (a thought level) is a select that sends
`control.config.set`; an agent without models shows none."""

from tests.web.spa_server import dps

MODELS = [{"id": "sonnet", "name": "Sonnet"}, {"id": "opus", "name": "Opus"}]
THOUGHT = {
    "id": "thought_level",
    "name": "Thinking",
    "category": "thought_level",
    "current_value": "low",
    "options": [{"value": "low", "name": "Low"}, {"value": "high", "name": "High"}],
}
MODEL_OPTION = {**THOUGHT, "id": "model", "name": "Model", "category": "model"}


def value(page, selector: str) -> str:
    return page.eval_on_selector(selector, "node => node.value")


def test_the_model_select_follows_the_agent_and_sends_control_model_set(session_page, spa_server):
    page = session_page
    assert page.locator("#agent-choices").is_hidden()  # nothing offered yet
    caps = {"models": MODELS, "current_model": "sonnet"}
    spa_server.send(dps("session.capabilities", caps))
    page.locator("#model").wait_for()
    assert page.locator("#model option").all_inner_texts() == ["Sonnet", "Opus"]
    assert value(page, "#model") == "sonnet"

    page.select_option("#model", "opus")
    frame = spa_server.wait_frame("control.model.set")
    assert frame["payload"] == {"model": "opus"}
    assert value(page, "#model") == "sonnet"  # until the agent says it switched
    spa_server.send(dps("session.capabilities", {**caps, "current_model": "opus"}))
    page.wait_for_function("() => document.querySelector('#model').value === 'opus'")


def test_config_options_are_selects_that_send_control_config_set(session_page, spa_server):
    page = session_page
    caps = {"config_options": [THOUGHT, MODEL_OPTION]}  # the model option is not shown twice
    spa_server.send(dps("session.capabilities", caps))
    page.locator("#config-thought_level").wait_for()
    assert page.locator("#agent-choices select").count() == 1
    page.select_option("#config-thought_level", "high")
    frame = spa_server.wait_frame("control.config.set")
    assert frame["payload"] == {"config_id": "thought_level", "value": "high"}
    spa_server.send(dps("session.capabilities", {}))  # an agent without any: none shown
    page.locator("#agent-choices").wait_for(state="hidden")
