// The session's controls beside its title (issue 30 §1): one button per mode the agent offers
// (control.mode.set) and "Compact" (control.context.compact). Nothing here changes by itself
// on a click: the pressed mode follows the agent's session.capabilities (`current_mode`), so
// the page shows the mode the agent is in, not the one asked for. Compact is offered only
// while the agent publishes a `compact` command, the one the client runs for it.

import { AgentChoices } from './choices.js';
import { el } from './util.js';

export class SessionControls {
  constructor(send) {
    this.send = send;
    this.modes = document.getElementById('modes');
    this.modes.replaceChildren();
    this.modes.hidden = true;
    this.compactButton = document.getElementById('compact');
    this.compactButton.hidden = true;
    this.compactButton.onclick = () => this.send('control.context.compact', {});
    this.choices = new AgentChoices(send); // the model and config options (choices.js)
  }

  // session.capabilities: the modes offered (`modes`) and the current one (`current_mode`).
  setCapabilities(p) {
    this.choices.setCapabilities(p);
    if (!Array.isArray(p.modes) || !p.modes.length) return; // an agent without modes
    this.modes.replaceChildren(...p.modes.map((mode) => el('button', {
      type: 'button',
      class: 'mode',
      title: mode.description,
      'aria-pressed': mode.id === p.current_mode ? 'true' : 'false',
      dataset: { mode: mode.id },
      onclick: () => this.send('control.mode.set', { mode: mode.id }),
    }, mode.name || mode.id)));
    this.modes.hidden = false;
  }

  // agent.commands.publish: Compact is there while the agent has a `compact` command.
  setCommands(commands) {
    const names = (Array.isArray(commands) ? commands : []).map((c) => c.name);
    this.compactButton.hidden = !names.includes('compact');
  }
}
