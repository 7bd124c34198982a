// Control requests to the daemon (protocol/PROTOCOL.md section 5) and the
// teach panel's message line that reports on them. Each request carries an
// id; its reply (an ack, a sample or an error with the same id) goes to the
// callbacks given with it.

import { send } from './connection.js';
import { $ } from './util.js';

const line = $('t-msg');

let nextId = 1;
const pending = new Map();         // request id -> callback(reply)
const errorHandlers = new Map();   // request id -> callback(error), where the caller handles it
// The error reply to a request that had no error callback goes here.
let defaultErrorHandler = null;

// Shows text on the panel's message line; bad marks it as a problem.
export function say(text, bad) {
  line.textContent = text;
  line.classList.toggle('bad', !!bad);
}

// fn(error) gets the errors of requests sent without an onError; it returns
// true when it dealt with the error (else the line shows it).
export function setDefaultErrorHandler(fn) {
  defaultErrorHandler = fn;
}

// Sends msg with a fresh id; cb(reply) gets its reply, onError(error) its
// error reply (else the default handler or the message line does).
export function request(msg, cb, onError) {
  const id = `t${nextId++}`;
  if (cb) pending.set(id, cb);
  if (onError) errorHandlers.set(id, onError);
  if (!send(Object.assign({ id }, msg))) {
    errorHandlers.delete(id);
    pending.delete(id);
    say('not connected', true);
  }
}

// A message from the daemon that may be a reply to one of our requests.
export function handleReply(msg) {
  if (msg.id === undefined || !(pending.has(msg.id) || errorHandlers.has(msg.id))) return;
  const cb = pending.get(msg.id);
  const onError = errorHandlers.get(msg.id);
  pending.delete(msg.id);
  errorHandlers.delete(msg.id);
  if (msg.type === 'error') {
    if (onError) onError(msg);
    else if (!(defaultErrorHandler && defaultErrorHandler(msg))) say(`${msg.code}: ${msg.message}`, true);
    return;
  }
  if (cb) cb(msg);
}
