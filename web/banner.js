// The banner under the top bar: a lost source, the end of the input, or an
// error for a few seconds. A lost source outranks an error, which outranks
// an informational status.

import { $, setText } from './util.js';

// Errors stay in the banner this long.
const ERROR_SHOWN_MS = 8000;

const banner = $('banner');
let statusBanner = null;   // {kind, text} from the last "status"
let errorBanner = null;    // {text, until}

// A "status" message: the source is ok, lost or at its end.
export function showStatus(msg) {
  const detail = msg.message ? `: ${msg.message}` : '';
  if (msg.source === 'lost') statusBanner = { kind: 'warn', text: `Source lost${detail}. Waiting for it to come back\u2026` };
  else if (msg.source === 'eof') statusBanner = { kind: 'info', text: `End of input${detail}.` };
  else statusBanner = null;
  render();
}

export function showError(text) {
  errorBanner = { text, until: performance.now() + ERROR_SHOWN_MS };
  render();
}

// Called periodically: an error shown long enough goes away.
export function expireError(now) {
  if (errorBanner && now >= errorBanner.until) {
    errorBanner = null;
    render();
  }
}

// Shows the banner for the current state.
export function render() {
  let kind = null;
  let text = '';
  if (statusBanner && statusBanner.kind === 'warn') ({ kind, text } = statusBanner);
  else if (errorBanner && performance.now() < errorBanner.until) { kind = 'error'; text = errorBanner.text; }
  else if (statusBanner) ({ kind, text } = statusBanner);
  if (!kind) {
    banner.hidden = true;
    return;
  }
  banner.className = `banner banner-${kind}`;
  setText(banner, text);
  banner.hidden = false;
}
