// Preloaded with `node --require` so a server that binds every interface (server-everything
// has no host setting) listens on 127.0.0.1 only. Tests never expose a port beyond loopback.
//
// With SWITCHBOARD_PEER_URL_PATH set (e.g. `/mcp`), a server told to listen on port 0 gets a
// port of its own from the kernel, and the first line of stdout is its URL
// (`http://127.0.0.1:PORT/mcp`), written once it listens: nothing can take the port between
// the two, as it could from a port that was free a moment before.
'use strict';
const net = require('net');
const listen = net.Server.prototype.listen;
const reportPath = process.env.SWITCHBOARD_PEER_URL_PATH;

function reportOnce(server) {
  server.once('listening', () => {
    const address = server.address();
    if (address && typeof address === 'object') {
      process.stdout.write(`http://127.0.0.1:${address.port}${reportPath}\n`);
    }
  });
}

net.Server.prototype.listen = function (...args) {
  const first = args[0];
  if (typeof first === 'number' || (typeof first === 'string' && /^\d+$/.test(first))) {
    const port = Number(first);
    if (port === 0 && reportPath !== undefined) {
      reportOnce(this);
    }
    const callbacks = args.slice(1).filter((a) => typeof a === 'function');
    return listen.call(this, port, '127.0.0.1', ...callbacks);
  }
  if (first && typeof first === 'object' && !Array.isArray(first) && first.port !== undefined) {
    if (Number(first.port) === 0 && reportPath !== undefined) {
      reportOnce(this);
    }
    args[0] = { ...first, host: '127.0.0.1' };
  }
  return listen.apply(this, args);
};
