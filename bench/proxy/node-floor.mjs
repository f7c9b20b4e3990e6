// The Node floor for bench/proxy (`node-floor`): the least a reverse proxy on Node's HTTP stack does,
// node:http in front of undici's `dispatch` on a keep-alive pool, no checks, no logs. What svc costs
// beyond it is svc's own. Started by run.ts as `node node-floor.mjs` with BENCH_PORT (listen) and
// BENCH_UPSTREAM (`http://127.0.0.1:PORT`); prints `listening` when ready.
import { createServer } from 'node:http';
import { Pool } from 'undici';

const pool = new Pool(process.env.BENCH_UPSTREAM, { connections: 128, pipelining: 1 });
// Node's fast path for requests without a body, as svc's listeners take it: the floor is the least a
// proxy on Node's HTTP stack does, so it has every option that makes Node itself cheaper.
const server = createServer({ optimizeEmptyRequests: true }, (req, res) => {
  pool.dispatch(
    { method: req.method, path: req.url, headers: req.headers, body: req.method === 'GET' || req.method === 'HEAD' ? null : req },
    {
      onRequestStart() {},
      onResponseStart(_controller, status, headers) {
        res.writeHead(status, headers);
      },
      onResponseData(_controller, chunk) {
        res.write(chunk);
      },
      onResponseEnd() {
        res.end();
      },
      onResponseError(_controller, err) {
        if (!res.headersSent) res.writeHead(502);
        res.end(String(err.message));
      },
    },
  );
});
server.keepAliveTimeout = 60_000;
// A clean exit on the bench's stop, so that `--cpu-prof` writes its profile.
process.on('SIGTERM', () => process.exit(0));
server.listen(Number(process.env.BENCH_PORT), '127.0.0.1', () => console.log('listening'));
