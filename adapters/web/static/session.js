// The open session: turns DPS frames into the transcript, the status line and the composer's
// caches. One SessionView per open session; app.js makes and drops them.

import { el, frame } from './util.js';
import { renderMarkdown } from './markdown.js';
import { ScrollKeeper } from './scroll.js';
import { Thinking } from './thinking.js';
import { StatusLine, toolDetail } from './status.js';
import { FileAssembler, ToolCard, closeApproval, renderApproval, renderTasks } from './tools.js';
import { Stream } from './stream.js';
import { Composer } from './composer.js';
import { PromptLog } from './prompts.js';
import { SessionControls } from './controls.js';

const CONTEXT_WARN_PERCENT = 80;

export class SessionView {
  constructor(sessionId) {
    this.sessionId = sessionId;
    this.root = document.getElementById('session');
    this.root.dataset.sessionId = sessionId;
    this.content = document.getElementById('transcript-content');
    this.content.replaceChildren();
    this.scroll = new ScrollKeeper(document.getElementById('transcript'), this.content,
      document.getElementById('transcript-spacer'));
    this.status = new StatusLine(document.getElementById('status-line'));
    this.status.clear();
    this.blocks = new Map(); // `${turn}:${kind}:${content_index}` → renderer
    this.thinkings = [];
    this.tools = new Map();
    this.cancelled = new Set();
    this.approvals = new Map(); // interaction_id → {node, invocationId}, while open
    this.files = new FileAssembler();
    this.turn = null;
    this.contextUse = document.getElementById('context-use'); // issue 30 §4
    this.contextUse.hidden = true;
    this.contextWarned = false;
    this.live = document.getElementById('thinking-live');
    this.cancelButton = document.getElementById('cancel');
    this.cancelButton.disabled = true;
    this.cancelButton.onclick = () => this.cancel();
    this.live.onchange = () => { for (const t of this.thinkings) if (!t.done) t.setLive(this.live.checked); };
    this.composer = new Composer(this);
    this.controls = new SessionControls((type, payload) => this.send(type, payload));
    this.prompts = new PromptLog(sessionId, (node) => this.add(node));
    this.stream = new Stream(sessionId, {
      onFrame: (f, replayed) => this.onFrame(f, replayed),
      onState: (state, reason) => this.connState(state, reason),
    });
    this.scroll.reset();
  }

  close() {
    this.stream.close();
    this.composer.close();
    this.scroll.close();
    for (const t of this.thinkings) t.deactivate();
    this.status.clear();
  }

  send(type, payload, extra) {
    const f = frame(type, this.sessionId, payload, extra);
    this.prompts.own(f.message_id); // a frame of this page's: never a prompt to look up
    this.stream.send(f);
    return f;
  }

  connState(state, reason) {
    const node = document.getElementById('conn-state');
    node.textContent = state === 'ended' ? `ended${reason ? `: ${reason}` : ''}` : state;
    node.dataset.state = state;
    // For the parts that follow the session's state (lineage.js: Resume once it ended).
    document.dispatchEvent(new CustomEvent('rawp:conn', { detail: { sessionId: this.sessionId, state } }));
  }

  add(node) {
    this.content.append(node);
    return node;
  }

  notice(text, cls = '') {
    this.add(el('div', { class: `notice ${cls}` }, text));
  }

  // Frames of a turn the reader cancelled are not rendered any more: the cancel bubble is the
  // turn's boundary (U-35), and nothing may appear below it for that turn.
  isCancelled(f) {
    return f.turn_id && this.cancelled.has(f.turn_id);
  }

  onFrame(f, replaying) {
    const p = f.payload || {};
    // A page opened mid-turn never saw its session.turn.start: any live frame of a turn that
    // has not ended makes it the running turn, so Stop works there too.
    if (f.turn_id && !replaying && f.type !== 'session.turn.end' && !this.cancelled.has(f.turn_id)
      && !this.ended?.has(f.turn_id) && this.turn !== f.turn_id) {
      this.turn = f.turn_id;
      this.cancelButton.disabled = false;
    }
    switch (f.type) {
      case 'session.history':
        // U-31: the frames that follow are a replay (counted by Stream): state changes among
        // them are not shown.
        if (p.dropped > 0) this.notice(`${p.dropped} earlier frames could not be replayed.`, 'gap');
        break;
      case 'session.turn.start':
        this.prompts.place(p.prompt_message_id); // the question above its answer (issue 28)
        this.turn = p.turn_id || f.turn_id;
        this.cancelButton.disabled = false;
        break;
      case 'session.turn.end': this.turnEnd(f, p); break;
      case 'agent.state.changed':
        // U-24/U-25/U-31: never a bubble; only the one status line, and only when live.
        if (!replaying && !this.isCancelled(f)) this.status.show(p.current_state);
        // Leaving awaiting_input means the open prompts were answered (maybe elsewhere).
        if (p.previous_state === 'awaiting_input' && p.current_state !== 'awaiting_input') {
          this.closeApprovals(() => true, 'Answered elsewhere');
        }
        break;
      case 'agent.text.delta': case 'agent.text.done': this.text(f, p); break;
      case 'agent.thinking.delta': this.thinkingDelta(f, p); break;
      case 'agent.thinking.done': this.thinkingBlock(f, p)?.finish(p); break;
      case 'tool.invoke.request': this.toolRequest(f, p); break;
      case 'tool.invoke.stream':
        this.closeApprovals((a) => a.invocationId === p.invocation_id, 'Answered elsewhere');
        if (!this.isCancelled(f)) this.toolCard(f, p).stream(p);
        break;
      case 'tool.invoke.result':
        this.closeApprovals((a) => a.invocationId === p.invocation_id, 'Answered elsewhere');
        this.toolCard(f, p).result(p);
        break;
      case 'agent.file': {
        const card = this.files.add(p);
        if (card) this.add(card);
        break;
      }
      case 'agent.plan.updated': this.plan(f, p); break;
      case 'agent.interaction.request': this.approval(f, p); break;
      case 'agent.commands.publish':
        this.composer.setCommands(p.commands);
        this.controls.setCommands(p.commands);
        break;
      case 'session.capabilities':
        this.composer.setCapabilities(p);
        this.controls.setCapabilities(p);
        break;
      case 'session.file.candidates': this.composer.candidates(f); break;
      case 'agent.error': this.notice(`⚠ ${p.message || p.code}`, `error ${p.severity || ''}`); break;
      case 'session.error':
        this.prompts.place(p.ref_message_id); // a refused prompt: it, then why
        this.notice(`⚠ ${p.code}: ${p.message || ''}`, 'error');
        break;
      case 'session.usage': this.context(p); break;
      case 'session.context.compacted': this.compacted(p); break;
      default: break; // unknown types are ignored (DPS §2)
    }
  }

  key(f, kind, index) {
    return `${f.turn_id || this.turn || '-'}:${kind}:${index}`;
  }

  // U-03: each delta is rendered the moment it arrives, into its content_index's block.
  text(f, p) {
    if (this.isCancelled(f)) return;
    const key = this.key(f, 'text', p.content_index);
    let block = this.blocks.get(key);
    if (!block) {
      const md = el('div', { class: 'md' });
      const node = this.add(el('div', {
        class: 'bubble agent', dataset: { contentIndex: String(p.content_index ?? 0) },
      }, md));
      block = { node, md, text: '' };
      this.blocks.set(key, block);
    }
    block.text = f.type === 'agent.text.done' && typeof p.text === 'string'
      ? p.text : block.text + (p.text || '');
    renderMarkdown(block.text, block.md);
  }

  thinkingBlock(f, p) {
    return this.blocks.get(this.key(f, 'thinking', p.content_index));
  }

  thinkingDelta(f, p) {
    if (this.isCancelled(f)) return;
    let t = this.thinkingBlock(f, p);
    if (!t) {
      // U-23: at most one active indicator: a new block stops any other still pulsing.
      for (const other of this.thinkings) other.deactivate();
      t = new Thinking(p.content_index ?? 0, this.live.checked);
      this.thinkings.push(t);
      this.blocks.set(this.key(f, 'thinking', p.content_index), t);
      this.add(t.node);
    }
    t.append(p.text || '');
  }

  toolCard(f, p) {
    let card = this.tools.get(p.invocation_id);
    if (!card) {
      card = new ToolCard(p.invocation_id, p.tool_name, p.title);
      this.tools.set(p.invocation_id, card);
      this.add(card.node);
    }
    return card;
  }

  toolRequest(f, p) {
    if (this.isCancelled(f)) return;
    this.toolCard(f, p).setRequest(p.tool_name, p.title);
    this.status.setTool(p.tool_name, toolDetail(p)); // U-28
  }

  plan(f, p) {
    const tasks = renderTasks(Array.isArray(p.entries) ? p.entries : []);
    if (this.planNode?.isConnected && this.planTurn === (f.turn_id || this.turn)) {
      this.planNode.replaceWith(tasks); // full replacement (DPS §9)
    } else {
      this.add(tasks);
    }
    this.planNode = tasks;
    this.planTurn = f.turn_id || this.turn;
  }

  // Issue 30 §4: the context in use as a share of the model's window, in the header, updated
  // in place; from 80 % one warning in the transcript, again only after it fell below.
  context(p) {
    if (!Number.isInteger(p.context_tokens) || !(p.context_window > 0)) return;
    const percent = Math.round((100 * p.context_tokens) / p.context_window);
    this.contextUse.hidden = false;
    this.contextUse.textContent = `context ${percent}%`;
    this.contextUse.dataset.level = percent >= CONTEXT_WARN_PERCENT ? 'warn' : 'ok';
    if (percent < CONTEXT_WARN_PERCENT) {
      this.contextWarned = false;
    } else if (!this.contextWarned) {
      this.contextWarned = true;
      this.notice(`⚠ context ${percent}% — compact it or start a new session soon`, 'warning');
    }
  }

  compacted(p) {
    const tokens = (n) => Number(n).toLocaleString('en-US');
    let sizes = '';
    if (Number.isInteger(p.before_tokens) && Number.isInteger(p.after_tokens)) {
      sizes = ` (${tokens(p.before_tokens)} → ${tokens(p.after_tokens)} tokens)`;
    } else if (Number.isInteger(p.before_tokens)) {
      sizes = ` (it held ${tokens(p.before_tokens)} tokens)`;
    }
    this.notice(`Context compacted${sizes}.`, 'meta');
    this.contextUse.hidden = true; // unknown until the agent reports it again
    this.contextWarned = false;
  }

  approval(f, p) {
    if (this.isCancelled(f)) return;
    const node = this.add(renderApproval(f, (type, payload, extra) => {
      this.approvals.delete(p.interaction_id);
      return this.send(type, payload, extra);
    }));
    this.approvals.set(p.interaction_id, { node, invocationId: p.invocation_id });
  }

  closeApprovals(which, why) {
    for (const [id, a] of this.approvals) {
      if (!which(a)) continue;
      closeApproval(a.node, why);
      this.approvals.delete(id);
    }
  }

  turnEnd(f, p) {
    const turnId = p.turn_id || f.turn_id;
    this.closeApprovals(() => true, 'The turn ended');
    for (const t of this.thinkings) t.deactivate();
    this.status.clear(); // U-30
    if (p.stop_reason === 'cancelled' && !this.cancelled.has(turnId)) {
      this.cancelBubble(turnId); // cancelled elsewhere (another edge): the same boundary
    } else if (p.stop_reason && !['end_turn', 'cancelled'].includes(p.stop_reason)) {
      this.notice(`Turn ended: ${p.stop_reason}`, 'meta');
    }
    (this.ended ||= new Set()).add(turnId);
    if (this.turn === turnId) this.turn = null;
    this.cancelButton.disabled = true;
  }

  // U-32…U-36: the reader stops the turn.
  cancel() {
    if (!this.turn) return;
    const turnId = this.turn;
    this.send('control.prompt.cancel', { turn_id: turnId });
    // U-34: the bubble appears right after the cancel is sent, not at session.turn.end.
    this.cancelBubble(turnId);
    this.cancelButton.disabled = true;
  }

  cancelBubble(turnId) {
    this.cancelled.add(turnId);
    for (const t of this.thinkings) t.deactivate();
    // U-35: the partial text stays; U-34: the bubble goes directly below the last output.
    // U-33: a system bubble, centred and light, unlike user and agent bubbles.
    this.add(el('div', { class: 'system-bubble', role: 'note', dataset: { turnId } },
      '⏹ 응답이 중지되었습니다 · response stopped'));
    this.status.clear(); // U-36: the status line goes at once
  }

  userBubble(text, messageId) {
    this.add(el('div', { class: 'bubble user', dataset: { promptId: messageId } }, text));
    this.scroll.reset(); // the reader's own prompt: follow the answer
  }
}
