// Starts Parse Server 9 with LiveQuery for parsemcp's tests, differential
// suite and benchmarks. Run with NODE_PATH pointing at the node_modules that
// install.sh made. Configuration comes from the environment:
//   PARSE_PORT            port to listen on (127.0.0.1), required
//   PARSE_DATABASE_URI    postgres://… (Parse Server creates its tables there), required
//   PARSE_APP_ID          application id, required
//   PARSE_MASTER_KEY      master key, required
//   PARSE_REST_KEY        REST API key (optional; when set, clients must send it)
//   PARSE_JS_KEY          JavaScript key (optional; LiveQuery clients send it)
//   PARSE_LIVEQUERY_CLASSES  comma-separated class names with LiveQuery; each is
//                         a regular expression anchored at both ends, so ".*"
//                         (the default) means every class
//   PARSE_ALLOW_CUSTOM_OBJECT_ID  "1": clients may choose objectIds (parsemcp's
//                         conformance suite and demo data use fixed ids)
//   PARSE_ACCEPT_AUTH_DATA  comma-separated auth providers (e.g. "google,apple")
//                         whose authData is accepted without checking it with
//                         the provider: test and demo data only, never production
//   PARSE_RATE_LIMIT      "PATH COUNT WINDOW_MS": Parse Server's rate limit on one
//                         path (e.g. "/classes/Limited 2 60000"), master key and
//                         local clients included (tests of the 429 answer)
//   PARSE_MAX_LIMIT       the most rows one find answers (Parse Server's maxLimit)
//   PARSE_LOGS_FOLDER     where Parse Server writes its log files (default: a
//                         "logs" folder in the working directory; the Go helper
//                         runs it in a temporary directory)
// Prints "parse-server ready <serverURL>" once it serves /parse/health.
'use strict';

const http = require('http');
const express = require('express');
const { ParseServer } = require('parse-server');

function need(name) {
  const v = process.env[name];
  if (!v) {
    console.error(`server.js: ${name} is required`);
    process.exit(2);
  }
  return v;
}

async function main() {
  const port = Number(need('PARSE_PORT'));
  const serverURL = `http://127.0.0.1:${port}/parse`;
  const classNames = (process.env.PARSE_LIVEQUERY_CLASSES || '.*')
    .split(',')
    .map(s => s.trim())
    .filter(Boolean);
  const config = {
    databaseURI: need('PARSE_DATABASE_URI'),
    appId: need('PARSE_APP_ID'),
    masterKey: need('PARSE_MASTER_KEY'),
    serverURL,
    masterKeyIps: ['0.0.0.0/0', '::/0'],
    liveQuery: { classNames },
    logsFolder: process.env.PARSE_LOGS_FOLDER || './logs',
    verbose: false,
  };
  if (process.env.PARSE_ALLOW_CUSTOM_OBJECT_ID === '1') config.allowCustomObjectId = true;
  if (process.env.PARSE_ACCEPT_AUTH_DATA) {
    const accept = { validateAuthData: () => Promise.resolve(), validateAppId: () => Promise.resolve() };
    config.auth = {};
    for (const p of process.env.PARSE_ACCEPT_AUTH_DATA.split(',').map(s => s.trim()).filter(Boolean)) {
      config.auth[p] = { module: accept };
    }
  }
  if (process.env.PARSE_RATE_LIMIT) {
    const [requestPath, count, windowMs] = process.env.PARSE_RATE_LIMIT.split(' ');
    config.rateLimit = [{ requestPath, requestCount: Number(count), requestTimeWindow: Number(windowMs),
      includeMasterKey: true, includeInternalRequests: true }];
  }
  if (process.env.PARSE_REST_KEY) config.restAPIKey = process.env.PARSE_REST_KEY;
  if (process.env.PARSE_MAX_LIMIT) config.maxLimit = Number(process.env.PARSE_MAX_LIMIT);
  if (process.env.PARSE_JS_KEY) config.javascriptKey = process.env.PARSE_JS_KEY;

  const server = new ParseServer(config);
  await server.start();
  const app = express();
  app.use('/parse', server.app);
  const httpServer = http.createServer(app);
  await new Promise((resolve, reject) => {
    httpServer.once('error', reject);
    httpServer.listen(port, '127.0.0.1', resolve);
  });
  // keyPairs: without them LiveQuery does not recognize the master key
  // (a master-key client would get events filtered by ACL).
  const keyPairs = { masterKey: config.masterKey };
  if (config.javascriptKey) keyPairs.javascriptKey = config.javascriptKey;
  if (config.restAPIKey) keyPairs.restAPIKey = config.restAPIKey;
  await ParseServer.createLiveQueryServer(httpServer, { appId: config.appId, masterKey: config.masterKey, serverURL, keyPairs });
  console.log(`parse-server ready ${serverURL}`);

  const stop = () => {
    httpServer.close(() => process.exit(0));
    // Open WebSocket and keep-alive connections must not hold the exit.
    setTimeout(() => process.exit(0), 2000).unref();
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

main().catch(err => {
  console.error('server.js:', err && err.stack ? err.stack : err);
  process.exit(1);
});
