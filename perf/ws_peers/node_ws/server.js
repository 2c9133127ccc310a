// The Node.js `ws` peer of perf/compare_ws: an echo on /test/ws.
//
//   node server.js PORT      (Node runs JavaScript on one thread)
//
// Every text or binary message is sent back with its type. ws's defaults but
// for: no permessage-deflate (already ws's server default, said for clarity),
// no maxPayload limit below 64 MiB, a listen backlog of 4096 (Node's 511
// would refuse a burst of connects that the other servers take), and
// clientTracking off (the server keeps no Set of its clients, nothing here
// uses one). bufferutil (ws's optional native masking) is installed beside ws.
'use strict';
const http = require('http');
const { WebSocketServer } = require('ws');

const port = Number(process.argv[2] || 8080);
const server = http.createServer((req, res) => {
  res.writeHead(404);
  res.end();
});
const wss = new WebSocketServer({
  server,
  path: '/test/ws',
  perMessageDeflate: false,
  maxPayload: 64 << 20,
  clientTracking: false,
});
wss.on('connection', (ws) => {
  ws.on('message', (data, isBinary) => ws.send(data, { binary: isBinary }));
  ws.on('error', () => {});
});
server.listen(port, '127.0.0.1', 4096, () => {
  let bufferutil = 'no';
  try { require.resolve('bufferutil'); bufferutil = 'yes'; } catch (e) {}
  console.log(`node ${process.version} ws ${require('ws/package.json').version} ` +
              `(bufferutil: ${bufferutil}) echo ready on 127.0.0.1:${port}/test/ws`);
});
