// Issue 30's parts of the open session, made and dropped with it (app.js route): the worktree
// buttons (worktree.js), Resume and Fork (lineage.js), the microphone (voice.js), and the
// transcript a resumed or forked session keeps above its own.

import { WorktreeControls } from './worktree.js';
import { LineageButtons, earlierTranscript } from './lineage.js';
import { VoiceInput } from './voice.js';

export function openExtras(view, info, act, earlier) {
  if (earlier) {
    const holder = document.createElement('div');
    holder.append(...earlier.nodes);
    view.content.prepend(...earlierTranscript(holder, earlier.from, earlier.fork));
  }
  const parts = [new WorktreeControls(view.sessionId), new LineageButtons(view, info, act),
    new VoiceInput(view)];
  return { close: () => { for (const part of parts) part.close(); } };
}
