// Access control (protocol/PROTOCOL.md "Access control"): where the daemon
// wants its control token (hello.control_auth), edits wait until this
// connection has given it. The token comes from the page's ?token= (also on
// the WebSocket URL) or is typed into the form the panel shows.

import { request, say, setDefaultErrorHandler } from './control.js';
import { $ } from './util.js';

const form = $('t-auth');
const input = $('t-token');

let authed = true;      // this connection may edit (no token needed, or given)
let token = new URLSearchParams(location.search).get('token') || null;
let afterAuth = null;   // the action that waits for the token

export const isAuthed = () => authed;

// A new connection: hello.control_auth says whether edits need the token.
// Authentication is per connection, so a known token is sent again each
// time; its ack also proves a ?token= from the address right.
export function onHello(msg) {
  authed = !msg.control_auth;
  if (authed) {
    form.hidden = true;
    if (afterAuth) runAfterAuth();
  } else if (token) sendAuth();
}

// Runs fn at once where edits are allowed, else asks for the token first.
export function withControl(fn) {
  if (authed) return fn();
  afterAuth = fn;
  if (token) sendAuth();
  else askToken('enter the control token to teach or edit');
}

function askToken(text, bad) {
  form.hidden = false;
  say(text, bad);
  input.focus();
}

function sendAuth() {
  const tried = token;
  request({ type: 'auth', token: tried }, () => {
    authed = true;
    form.hidden = true;
    input.value = '';
    say('editing unlocked');
    runAfterAuth();
  }, (err) => {
    if (token === tried) token = null;
    if (err.code === 'unauthorized') askToken('wrong control token', true);
    else say(`${err.code}: ${err.message}`, true);
  });
}

function runAfterAuth() {
  const fn = afterAuth;
  afterAuth = null;
  if (fn) fn();
}

form.addEventListener('submit', (ev) => {
  ev.preventDefault();
  const t = input.value.trim();
  if (!t) return;
  token = t;
  sendAuth();
});

// An older daemon that does not announce control_auth, or a token that
// stopped working: an edit refused as unauthorized asks for the token now.
setDefaultErrorHandler((err) => {
  if (err.code !== 'unauthorized') return false;
  authed = false;
  askToken('editing needs the control token');
  return true;
});
