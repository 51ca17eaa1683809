// Preloaded with `node --require` so a server that binds every interface (server-everything
// has no host setting) listens on 127.0.0.1 only. Tests never expose a port beyond loopback.
'use strict';
const net = require('net');
const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  const first = args[0];
  if (typeof first === 'number' || (typeof first === 'string' && /^\d+$/.test(first))) {
    const callbacks = args.slice(1).filter((a) => typeof a === 'function');
    return listen.call(this, Number(first), '127.0.0.1', ...callbacks);
  }
  if (first && typeof first === 'object' && !Array.isArray(first) && first.port !== undefined) {
    args[0] = { ...first, host: '127.0.0.1' };
  }
  return listen.apply(this, args);
};
