// The agent's model and its other config options beside the mode buttons (issue 30 §1): a
// select for the models the agent offers (control.model.set) and one per ACP session config
// option that is neither the model nor the mode (control.config.set, e.g. a thought level).
// Like the mode buttons, a select shows what the agent's session.capabilities say: a choice
// is sent and the select goes back to the current value until the agent confirms the change.

import { el } from './util.js';

export class AgentChoices {
  constructor(send) {
    this.send = send;
    this.box = document.getElementById('agent-choices');
    this.box.replaceChildren();
    this.box.hidden = true;
  }

  // session.capabilities: `models`/`current_model`, `config_options` [{id, name, category?,
  // current_value, options: [{value, name}]}].
  setCapabilities(p) {
    const selects = [];
    if (Array.isArray(p.models) && p.models.length) {
      const options = p.models.map((m) => ({ value: m.id, name: m.name || m.id }));
      selects.push(this.select('model', 'Model', options, p.current_model,
        (value) => this.send('control.model.set', { model: value })));
    }
    for (const option of Array.isArray(p.config_options) ? p.config_options : []) {
      if (option.category === 'model' || option.category === 'mode') continue; // shown above
      selects.push(this.select(`config-${option.id}`, option.name, option.options || [],
        option.current_value,
        (value) => this.send('control.config.set', { config_id: option.id, value })));
    }
    this.box.replaceChildren(...selects);
    this.box.hidden = !selects.length;
  }

  select(id, label, options, current, choose) {
    const known = options.some((o) => o.value === current);
    const list = known || current == null ? options : [{ value: current, name: current }, ...options];
    const node = el('select', { id, 'aria-label': label, title: label },
      ...(current == null ? [el('option', { value: '' }, `${label}: the agent's own`)] : []),
      ...list.map((o) => el('option', { value: o.value, title: o.description }, o.name)));
    node.value = current == null ? '' : current;
    node.addEventListener('change', () => {
      const value = node.value;
      node.value = current == null ? '' : current; // until the agent says it switched
      if (value) choose(value);
    });
    return node;
  }
}
