// Prints what trackd finds, from its WebSocket: per frame, the objects found
// and their positions, then each instance of a tracked object (id, position,
// velocity) and each blob of an object that lists blobs, as
// examples/ws_client.py does.
//
//   npm ci --prefix examples/node
//   node examples/node/ws_client.mjs [URL [FRAMES]]
//
// URL defaults to ws://127.0.0.1:8080/ws; FRAMES (default 0 = forever) stops
// after that many frames. Uses the ws package (Node 22 has a built-in
// WebSocket; Debian 12's Node 18 does not). Messages: protocol/PROTOCOL.md.
import WebSocket from 'ws';

const url = process.argv[2] ?? 'ws://127.0.0.1:8080/ws';
const frames = Number(process.argv[3] ?? 0);
let n = 0;

const ws = new WebSocket(url);
// Positions only: no preview JPEGs for this connection.
ws.on('open', () => ws.send(JSON.stringify({ type: 'subscribe', preview: false })));
ws.on('message', (data, isBinary) => {
  if (isBinary) return; // a preview sent before the subscribe
  const msg = JSON.parse(data);
  if (msg.type !== 'frame') return; // hello, stats, status, ...
  const found = msg.objects
    .filter((o) => o.found)
    .map((o) => `${o.name} (${o.cx.toFixed(1)}, ${o.cy.toFixed(1)})`);
  console.log(`frame ${msg.seq}: ${found.join(', ')}`);
  // Instances of tracked objects (id, position, velocity), else blobs.
  for (const o of msg.objects) {
    for (const i of o.instances ?? []) {
      const lost = i.lost ? `, lost for ${i.lost} frames` : '';
      console.log(`  ${o.name} #${i.id} at (${i.cx.toFixed(1)}, ${i.cy.toFixed(1)}) moving ` +
        `(${i.vx.toFixed(2)}, ${i.vy.toFixed(2)}) px/frame${lost}`);
    }
    if (!o.instances) {
      for (const b of o.blobs ?? []) {
        console.log(`  ${o.name} blob at (${b.cx.toFixed(1)}, ${b.cy.toFixed(1)}), ${b.mass} px`);
      }
    }
  }
  if (++n === frames) ws.close();
});
ws.on('error', (err) => {
  console.error(`${url}: ${err.message}`);
  process.exitCode = 69;
});
