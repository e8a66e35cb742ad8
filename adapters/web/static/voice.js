// Voice input (issue 30 §6; docs/web.md, "Voice input"): the microphone button records a clip
// (MediaRecorder, webm or ogg), the web edge transcribes it with the chat's transcription
// service (POST /api/voice) and the transcript is sent as the prompt, shown in its bubble
// with a microphone. Without a service configured the button is not shown (GET /api/voice).
// Press once to record, again to stop and send.

import { api } from './util.js';

const TYPES = ['audio/webm;codecs=opus', 'audio/webm', 'audio/ogg;codecs=opus', 'audio/ogg'];
let configured = null; // GET /api/voice, asked once per page

export async function voiceConfigured() {
  if (configured === null) {
    const res = await api('/api/voice');
    configured = Boolean(res.ok && res.body?.configured);
  }
  return configured;
}

export class VoiceInput {
  constructor(view) {
    this.view = view;
    this.button = document.getElementById('voice');
    this.button.hidden = true;
    this.button.disabled = false;
    this.button.onclick = () => this.press();
    this.recorder = null;
    this.closed = false;
    this.idle();
    voiceConfigured().then((yes) => {
      // A page on plain http (not loopback) gets no microphone: no button there either.
      const recordable = window.MediaRecorder && navigator.mediaDevices?.getUserMedia;
      if (!this.closed) this.button.hidden = !(yes && recordable);
    });
  }

  close() {
    this.closed = true;
    this.stopTracks();
  }

  idle() {
    this.button.textContent = '🎙 Voice';
    this.button.setAttribute('aria-pressed', 'false');
    this.button.dataset.state = 'idle';
    this.button.disabled = false;
  }

  async press() {
    if (this.recorder) { this.recorder.stop(); return; }
    let stream;
    try {
      stream = await navigator.mediaDevices.getUserMedia({ audio: true });
    } catch (exc) {
      this.view.notice(`⚠ The microphone is not available: ${exc.message || exc.name}`, 'error');
      return;
    }
    const mimeType = TYPES.find((t) => MediaRecorder.isTypeSupported(t)) || '';
    const recorder = new MediaRecorder(stream, mimeType ? { mimeType } : {});
    const chunks = [];
    recorder.ondataavailable = (e) => { if (e.data.size) chunks.push(e.data); };
    recorder.onstop = () => this.send(new Blob(chunks, { type: recorder.mimeType || mimeType }));
    this.recorder = recorder;
    this.stream = stream;
    recorder.start();
    this.button.textContent = '⏹ Stop recording';
    this.button.setAttribute('aria-pressed', 'true');
    this.button.dataset.state = 'recording';
  }

  stopTracks() {
    for (const track of this.stream?.getTracks() || []) track.stop();
    this.stream = null;
  }

  async send(blob) {
    this.recorder = null;
    this.stopTracks();
    if (this.closed) return;
    this.button.textContent = 'Transcribing…';
    this.button.dataset.state = 'transcribing';
    this.button.disabled = true;
    const type = (blob.type || 'audio/webm').split(';')[0];
    const res = await api('/api/voice', { method: 'POST', headers: { 'Content-Type': type }, body: blob });
    if (this.closed) return;
    this.idle();
    if (!res.ok) {
      this.view.notice(`⚠ ${res.body?.message || `HTTP ${res.status}`}`, 'error voice-error');
      return;
    }
    const composer = this.view.composer;
    composer.input.value = res.body.text;
    composer.submit(); // sent as a typed prompt is: the same frame, kept for a reload
    const bubbles = this.view.content.querySelectorAll('.bubble.user');
    bubbles[bubbles.length - 1]?.classList.add('voice');
  }
}
