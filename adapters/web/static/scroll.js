// Scroll control for the transcript (U-04…U-08). The browser's own scroll anchoring is turned
// off in CSS (overflow-anchor: none) so that this is the one place deciding scrollTop.
//
// Two modes:
// - following (U-04, U-06): after every layout change the bottom of the content — the line
//   being generated — is put at 75 % of the viewport height, i.e. inside the band 20–30 % from
//   the bottom. The position is computed from the content's bottom, never by adding a height
//   delta to scrollTop (which U-06 discourages and which drifts).
// - paused (U-04, U-05, U-07): the reader scrolled up. The element being read is remembered
//   with its on-screen offset; when anything resizes (a thinking block collapsing above it, a
//   tool result rendering, text growing below) scrollTop is corrected so that element stays
//   where it was on screen.
// Every move is scrollTo({behavior: 'instant'}) (U-08): never smooth while streaming.

const BAND_FROM_TOP = 0.75; // the last line's bottom sits 25 % above the viewport bottom
const RESUME_SLACK = 48; // px: a reader this close to the band is following again

export class ScrollKeeper {
  constructor(container, content, spacer) {
    this.c = container;
    this.content = content;
    this.spacer = spacer;
    this.follow = true;
    this.expected = null;
    this.lastTop = null;
    this.anchor = null;
    // U-07: ResizeObserver reports every height change of the content (insertions, collapses,
    // images) after layout and before paint, so the correction is never visible as a jump.
    this.observer = new ResizeObserver(() => this.onResize());
    this.observer.observe(content);
    this.observer.observe(container);
    // A wheel or key move upwards is the reader's intent even before the scroll event lands.
    this.listeners = [
      ['scroll', () => this.onScroll(), { passive: true }],
      ['wheel', (e) => { if (e.deltaY < 0) this.pause(); }, { passive: true }],
      ['keydown', (e) => { if (['PageUp', 'ArrowUp', 'Home'].includes(e.key)) this.pause(); }],
    ];
    for (const [type, fn, opts] of this.listeners) container.addEventListener(type, fn, opts);
  }

  // The transcript's elements outlive a session view: the next one must be the only keeper.
  close() {
    this.observer.disconnect();
    for (const [type, fn, opts] of this.listeners) this.c.removeEventListener(type, fn, opts);
  }

  reset() {
    this.follow = true;
    this.anchor = null;
    this.pin();
  }

  pause() {
    if (this.follow) {
      this.follow = false;
      this.recordAnchor();
    }
  }

  // Where the content ends, in the container's scroll coordinates.
  contentBottom() {
    const top = this.c.getBoundingClientRect().top;
    return this.content.getBoundingClientRect().bottom - top + this.c.scrollTop;
  }

  scrollToTop(top) {
    this.c.scrollTo({ top, behavior: 'instant' }); // U-08
    this.expected = this.c.scrollTop;
    this.lastTop = this.expected;
  }

  // U-06: put the line being generated in the anchor band.
  pin() {
    this.spacer.style.height = `${Math.round(this.c.clientHeight * (1 - BAND_FROM_TOP))}px`;
    const target = Math.max(0, this.contentBottom() - this.c.clientHeight * BAND_FROM_TOP);
    if (Math.abs(target - this.c.scrollTop) >= 1) this.scrollToTop(target);
  }

  onScroll() {
    const top = this.c.scrollTop;
    const last = this.lastTop ?? top;
    this.lastTop = top;
    if (this.expected !== null && Math.abs(top - this.expected) <= 1) return;
    this.expected = null;
    // The content shrank under a paused reader and the browser clamped the position: not the
    // reader's move. The anchor stays, so that onResize puts the text back where it was.
    if (!this.follow && this.anchor && this.clamped(top, this.anchor.scrollTop)) return;
    // U-04: any move up by the reader pauses following (however small: a slow wheel or a
    // smooth-scroll animation starts with a few pixels); only a move down that reaches the
    // band again resumes it.
    if (top < last - 0.5) {
      this.follow = false;
    } else if (top > last + 0.5) {
      const gap = this.contentBottom() - (top + this.c.clientHeight * BAND_FROM_TOP);
      if (gap <= RESUME_SLACK) this.follow = true;
    }
    this.recordAnchor();
  }

  onResize() {
    if (this.follow) {
      this.pin();
      return;
    }
    // U-05/U-07: keep the text being read at the same on-screen position.
    if (!this.anchor || !this.anchor.node.isConnected) {
      this.recordAnchor();
      return;
    }
    // The reader's scroll may land before its scroll event (threaded scrolling under load):
    // then the anchor is stale, and "compensating" would undo the reader's own move. A clamp
    // is not such a move: when a block above collapses by more than the distance left below
    // the reader in one frame (a busy machine skips the transition's frames), the browser first
    // pulls scrollTop up to the new maximum, and the text must still be put back.
    const moved = Math.abs(this.c.scrollTop - this.anchor.scrollTop) > 0.5;
    if (moved && !this.clamped(this.c.scrollTop, this.anchor.scrollTop)) {
      this.recordAnchor();
      return;
    }
    const now = this.offsetOf(this.anchor.node);
    const delta = now - this.anchor.top;
    if (Math.abs(delta) >= 0.5) {
      this.scrollToTop(this.c.scrollTop + delta);
      this.anchor.scrollTop = this.c.scrollTop;
    }
  }

  // A position the browser imposed because the content got shorter: upwards from where the
  // reader was, and exactly at the largest scrollTop the content now allows. A reader's own
  // upward move ends below that maximum.
  clamped(top, from) {
    const max = this.c.scrollHeight - this.c.clientHeight;
    return top < from - 0.5 && top >= max - 1;
  }

  offsetOf(node) {
    return node.getBoundingClientRect().top - this.c.getBoundingClientRect().top;
  }

  // The element being read: the first block (paragraph level) that starts inside the
  // viewport; failing that, the one spanning its top edge.
  recordAnchor() {
    const blocks = this.content.querySelectorAll(
      ':scope > *, :scope > .bubble > *, :scope > .bubble > .md > *, .tool-card > *');
    let spanning = null;
    for (const node of blocks) {
      const rect = node.getBoundingClientRect();
      if (rect.height === 0) continue;
      const top = this.offsetOf(node);
      const scrollTop = this.c.scrollTop;
      if (top >= 0) {
        this.anchor = { node, top, scrollTop };
        return;
      }
      if (top + rect.height > 0) spanning = { node, top, scrollTop };
    }
    this.anchor = spanning;
  }
}
