// Preloaded into peers started by bench/peers (node --require): every
// server they open listens on 127.0.0.1 whatever host they ask for, so no
// benchmark opens a port beyond loopback.
'use strict';
const net = require('net');
const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  if (typeof args[0] === 'object' && args[0] !== null) {
    args[0] = { ...args[0], host: '127.0.0.1' };
  } else if (typeof args[0] === 'number' || typeof args[0] === 'string') {
    const cb = typeof args[args.length - 1] === 'function' ? args[args.length - 1] : undefined;
    args = cb ? [args[0], '127.0.0.1', cb] : [args[0], '127.0.0.1'];
  }
  return listen.apply(this, args);
};
