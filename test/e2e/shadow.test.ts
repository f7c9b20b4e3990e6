/**
 * `svc run --shadow` end to end, with real `svc run` processes (docs/running.md "Shadow plans"):
 *
 * - one process over TLS (`codec_type: auto`), a config compiled and a candidate config compiled:
 *   an HTTP/1.1 request, an HTTP/2 request, a websocket upgrade and a CONNECT tunnel are each served
 *   by the enforced plan, and each access line names the candidate's differing decision; the metric
 *   counts them; a request the candidate decides alike has no `shadow` field. Rewriting the
 *   candidate reloads it (the file watcher); a broken candidate and one whose settings differ are
 *   logged with their codes and change nothing served (docs/security.md S70, S71);
 * - `--workers 2`, plan files (`svc run plan.json --shadow candidate.json`), a signed-in user: each
 *   worker decides with the candidate, a forward-auth check too, the aggregated `/metrics` says so,
 *   and a rewritten candidate reaches every worker through the primary.
 */
import { connect as h2connect } from 'node:http2';
import { readFileSync } from 'node:fs';
import { request } from 'node:http';
import { createServer as createTcpServer, type Server as TcpServer } from 'node:net';
import { stringify } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocket, WebSocketServer } from 'ws';
import { prettyJson } from '../../compiler/plan/canonical-json.ts';
import type { DevIdp } from '../../demo/dev-idp.ts';
import { issue, makeCa } from '../runtime/tls/pki.ts';
import { BASE_SETTINGS, compileText } from '../support/compile-text.ts';
import { HttpBrowser } from '../support/http-browser.ts';
import { localhostSignInSettings, startLocalhostIdp } from './auth-support.ts';
import { freePort, sample, scrape } from './metrics-support.ts';
import { spawnSvc, type SignalledSvc } from './svc-process.ts';
import { configDir, echo, startUpstream, tlsExchange, until, type Upstream } from './support.ts';

/** The access lines (parsed) of `out` with `msg` (and `event`, when given) for `path`. */
function lines(out: string, msg: string, path: string, event?: string): Record<string, unknown>[] {
  return out
    .split('\n')
    .filter((l) => l.startsWith('{') && l.includes(`"msg":"${msg}"`))
    .map((l) => JSON.parse(l) as Record<string, unknown>)
    .filter((l) => l['path'] === path && (event === undefined || l['event'] === event));
}

async function stop(svc: SignalledSvc | undefined): Promise<void> {
  if (svc && svc.child.exitCode === null && svc.child.signalCode === null) {
    svc.child.kill('SIGTERM');
    await svc.exited;
  }
}

describe('svc run -config --shadow: every way in, reload, a broken candidate', () => {
  const cfg = configDir();
  let up: Upstream;
  let wss: WebSocketServer;
  let tcp: TcpServer;
  let svc: SignalledSvc;
  let metricsPort = 0;
  let settings: Record<string, unknown> = {};
  let candidatePath = '';

  const ENFORCED = (tcpPort: number, upstream: string) => [
    { name: 'app', from: 'https://app.example.com', to: upstream, allow_public_unauthenticated_access: true, allow_websockets: true },
    { name: 'echo', from: 'tcp+https://echo.example.com:7000', to: `tcp://127.0.0.1:${tcpPort}`, allow_public_unauthenticated_access: true },
    { name: 'admin', from: 'https://admin.example.com', to: upstream, policy: 'allow if authenticated_user' },
  ];
  /** The candidate: app and echo need a signed-in user, admin is public. */
  const CANDIDATE = (tcpPort: number, upstream: string) => [
    { name: 'app', from: 'https://app.example.com', to: upstream, policy: 'allow if authenticated_user', allow_websockets: true },
    { name: 'echo', from: 'tcp+https://echo.example.com:7000', to: `tcp://127.0.0.1:${tcpPort}`, policy: 'allow if authenticated_user' },
    { name: 'admin', from: 'https://admin.example.com', to: upstream, allow_public_unauthenticated_access: true },
  ];
  const tcpPort = () => (tcp.address() as { port: number }).port;
  const writeCandidate = (routes: unknown[], extra: Record<string, unknown> = {}) => cfg.file('candidate.yaml', stringify({ ...settings, ...extra, routes }));

  const raw = (head: string, then?: string) => tlsExchange(svc.port, head, then);
  const get = (host: string, path: string) => raw(`GET ${path} HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`);
  const shadowCount = async (labels: Record<string, string>) => sample((await scrape(metricsPort)).body, 'svc_shadow_decisions_total', labels) ?? 0;
  const gauge = async (name: string) => sample((await scrape(metricsPort)).body, name);

  beforeAll(async () => {
    up = await startUpstream((req, res) => {
      req.resume();
      res.end('ok');
    });
    wss = new WebSocketServer({ server: up.server });
    wss.on('connection', (ws) => ws.on('message', (m) => ws.send(`echo ${m.toString()}`)));
    tcp = createTcpServer((socket) => socket.pipe(socket));
    await new Promise<void>((resolve) => tcp.listen(0, '127.0.0.1', resolve));
    metricsPort = await freePort();
    const ca = await makeCa('svc test CA (TEST ONLY)');
    const cert = await issue(ca, { cn: 'app.example.com', dns: ['app.example.com', 'admin.example.com', 'echo.example.com'], usage: 'server' });
    const { insecure_server: _insecure, ...base } = BASE_SETTINGS;
    settings = { ...base, address: '127.0.0.1:8443', certificate_file: cfg.file('server.pem', cert.certPem), certificate_key_file: cfg.file('server.key', cert.keyPem), codec_type: 'auto', metrics_address: `127.0.0.1:${metricsPort}` };
    cfg.writeRaw(stringify({ ...settings, routes: ENFORCED(tcpPort(), up.url) }));
    candidatePath = writeCandidate(CANDIDATE(tcpPort(), up.url));
    svc = await spawnSvc(cfg.path, ['--workers', '1', '--shutdown-delay', '0', '--shadow', candidatePath]);
  }, 60_000);

  afterAll(async () => {
    await stop(svc);
    wss?.close();
    await up?.close();
    tcp?.close();
    cfg.remove();
  });

  it('loads the candidate: logged with its checksum, svc_shadow_plan_loaded 1', async () => {
    await until('shadow plan loaded', () => svc.out().includes('"msg":"shadow plan loaded"'));
    expect(await gauge('svc_shadow_plan_loaded')).toBe(1);
    expect(await gauge('svc_shadow_last_load_success')).toBe(1);
  });

  it('HTTP/1.1: served by the enforced plan; the access line names the candidate\'s refusal (S70)', async () => {
    expect(await get('app.example.com', '/h1')).toMatch(/^HTTP\/1\.1 200 /);
    await until('the access line', () => lines(svc.out(), 'request', '/h1').length === 1);
    expect(lines(svc.out(), 'request', '/h1')[0]).toMatchObject({ status: 200, decision: 'allow', shadow: { change: 'allow_to_deny', outcome: 'unauthenticated', route: 'app' } });
    // Refused by the enforced plan, allowed by the candidate: still 401.
    expect(await get('admin.example.com', '/admin')).toMatch(/^HTTP\/1\.1 401 /);
    await until('the access line', () => lines(svc.out(), 'request', '/admin').length === 1);
    expect(lines(svc.out(), 'request', '/admin')[0]).toMatchObject({ status: 401, decision: 'unauthenticated', shadow: { change: 'deny_to_allow', outcome: 'allow', route: 'admin' } });
    await expect.poll(() => shadowCount({ route: 'admin', outcome: 'deny_to_allow' }), { timeout: 10_000 }).toBe(1);
  });

  it('HTTP/2: the same', async () => {
    const status = await new Promise<number>((resolve) => {
      const session = h2connect(`https://127.0.0.1:${svc.port}`, { servername: 'app.example.com', rejectUnauthorized: false });
      const stream = session.request({ ':method': 'GET', ':scheme': 'https', ':authority': 'app.example.com', ':path': '/h2' }, { endStream: true });
      let s = 0;
      stream.on('response', (h) => (s = Number(h[':status'])));
      stream.resume();
      stream.on('close', () => {
        session.close();
        resolve(s);
      });
      session.on('error', () => resolve(0));
    });
    expect(status).toBe(200);
    await until('the access line', () => lines(svc.out(), 'request', '/h2').length === 1);
    expect(lines(svc.out(), 'request', '/h2')[0]).toMatchObject({ status: 200, shadow: { change: 'allow_to_deny', route: 'app' } });
  });

  it('a websocket upgrade: opened and echoed; its open and close lines name the difference', async () => {
    const sni: object = { servername: 'app.example.com' };
    const ws = new WebSocket(`wss://127.0.0.1:${svc.port}/ws`, { headers: { host: 'app.example.com' }, rejectUnauthorized: false, ...sni });
    const echoed = await new Promise<string>((resolve, reject) => {
      ws.on('open', () => ws.send('hello'));
      ws.on('message', (m) => resolve(m.toString()));
      ws.on('error', reject);
    });
    ws.close();
    expect(echoed).toBe('echo hello');
    await until('the close line', () => lines(svc.out(), 'upgrade', '/ws', 'close').length === 1);
    for (const event of ['open', 'close']) expect(lines(svc.out(), 'upgrade', '/ws', event)[0]).toMatchObject({ status: 101, shadow: { change: 'allow_to_deny', route: 'app' } });
  });

  it('a CONNECT tunnel: tunnelled; its lines name the difference', async () => {
    const answer = await raw('CONNECT echo.example.com:7000 HTTP/1.1\r\nHost: echo.example.com:7000\r\n\r\n', 'ping-through-the-tunnel');
    expect(answer).toMatch(/^HTTP\/1\.1 200 /);
    expect(answer).toContain('ping-through-the-tunnel');
    await until('the close line', () => lines(svc.out(), 'tunnel', 'echo.example.com:7000', 'close').length === 1);
    expect(lines(svc.out(), 'tunnel', 'echo.example.com:7000', 'open')[0]).toMatchObject({ status: 200, shadow: { change: 'allow_to_deny', outcome: 'unauthenticated', route: 'echo' } });
    await expect.poll(() => shadowCount({ route: 'echo', outcome: 'allow_to_deny' }), { timeout: 10_000 }).toBe(1);
    // app: HTTP/1.1, HTTP/2 and the upgrade.
    await expect.poll(() => shadowCount({ route: 'app', outcome: 'allow_to_deny' }), { timeout: 10_000 }).toBe(3);
  });

  it('a rewritten candidate is reloaded by the file watcher; one deciding alike adds no field', async () => {
    const loaded = (svc.out().match(/"msg":"shadow plan loaded"/g) ?? []).length;
    writeCandidate(ENFORCED(tcpPort(), up.url));
    await until('the candidate reloaded', () => (svc.out().match(/"msg":"shadow plan loaded"/g) ?? []).length === loaded + 1);
    expect(await get('app.example.com', '/alike')).toMatch(/^HTTP\/1\.1 200 /);
    await until('the access line', () => lines(svc.out(), 'request', '/alike').length === 1);
    expect(lines(svc.out(), 'request', '/alike')[0]!['shadow']).toBeUndefined();
  });

  it('S71: a broken candidate and one whose settings differ are logged with their codes; the enforced plan and the last good candidate keep serving', async () => {
    const checksum = JSON.parse(svc.out().split('\n').filter((l) => l.includes('"msg":"shadow plan loaded"')).pop()!)['checksum'] as string;
    writeCandidate([{ from: 'not a url', to: 'nowhere' }]);
    await until('the broken candidate logged', () => svc.out().includes('"code":"SVC_ERR_SHADOW_INVALID"'));
    const broken = svc.out().split('\n').find((l) => l.includes('"code":"SVC_ERR_SHADOW_INVALID"'))!;
    expect(JSON.parse(broken)).toMatchObject({ level: 'error', msg: 'shadow plan not loaded; keeping the last good shadow plan', checksum });
    expect(await gauge('svc_shadow_last_load_success')).toBe(0);
    expect(await gauge('svc_shadow_plan_loaded')).toBe(1);
    expect(await get('app.example.com', '/after-broken')).toMatch(/^HTTP\/1\.1 200 /);

    // A listener setting differs: refused, located, the enforced plan untouched.
    writeCandidate(CANDIDATE(tcpPort(), up.url), { address: '127.0.0.1:9443' });
    await until('the differing candidate logged', () => svc.out().includes('"code":"SVC_ERR_SHADOW_SETTINGS"'));
    const differing = JSON.parse(svc.out().split('\n').find((l) => l.includes('"code":"SVC_ERR_SHADOW_SETTINGS"'))!) as Record<string, unknown>;
    expect(String(differing['error'])).toContain('settings.server.address');
    expect(String(differing['error'])).toMatch(/candidate\.yaml:\d+:\d+: /);
    expect(await get('app.example.com', '/after-settings')).toMatch(/^HTTP\/1\.1 200 /);
    await until('the access line', () => lines(svc.out(), 'request', '/after-settings').length === 1);
    // The last good candidate (deciding alike) is still the one in service: no field.
    expect(lines(svc.out(), 'request', '/after-settings')[0]!['shadow']).toBeUndefined();
    expect(svc.child.exitCode).toBeNull();
  });
});

describe('svc run plan.json --shadow candidate.json --workers 2: a signed-in user, forward-auth', () => {
  const cfg = configDir();
  let idp: DevIdp;
  let up: Upstream;
  let svc: SignalledSvc | undefined;
  let port = 0;
  let metricsPort = 0;
  let candidatePath = '';
  let planOf: (policy: string, name: string) => string = () => '';

  beforeAll(async () => {
    port = await freePort();
    metricsPort = await freePort();
    idp = await startLocalhostIdp(port);
    up = await startUpstream(echo);
    const settings = { ...BASE_SETTINGS, address: `127.0.0.1:${port}`, metrics_address: `127.0.0.1:${metricsPort}`, ...localhostSignInSettings(port, idp), forward_auth_url: `http://fwd.localhost:${port}` };
    planOf = (policy: string, name: string) => {
      const r = compileText(stringify({ ...settings, routes: [{ name: 'app', from: `https://app.localhost:${port}`, to: up.url, policy }] }), cfg.file(`${name}.yaml`, ''));
      if (!r.plan) throw new Error(JSON.stringify(r.diagnostics));
      return cfg.file(`${name}.json`, prettyJson(r.plan));
    };
    const planPath = planOf('allow if domain is "example.com"', 'plan');
    candidatePath = planOf('allow if email is "bob@other.example"', 'candidate');
    svc = await spawnSvc(planPath, ['--listen', `127.0.0.1:${port}`, '--workers', '2', '--shutdown-delay', '0', '--expose-checksum', '--shadow', candidatePath], { plan: true });
  }, 60_000);

  afterAll(async () => {
    await stop(svc);
    await up?.close();
    await idp?.close();
    cfg.remove();
  });

  it('every worker decides with the candidate: alice is served, each line says she would be refused; forward-auth too', async () => {
    const b = new HttpBrowser((url) => (url.hostname.endsWith('.localhost') ? { port } : url.port === String(idp.port) ? { port: idp.port } : undefined));
    const hops = await b.signIn(`http://app.localhost:${port}/`, 'alice@example.com');
    expect(hops[hops.length - 1]!.status).toBe(200);
    const cookie = `_svc=${b.cookies('app.localhost')['_svc']}`;
    const get = (host: string, path: string) =>
      new Promise<{ status: number; worker: string }>((resolve, reject) => {
        const req = request({ host: '127.0.0.1', port, path, agent: false, headers: { host, cookie } }, (res) => {
          res.resume();
          res.on('end', () => resolve({ status: res.statusCode ?? 0, worker: String(res.headers['x-svc-worker']) }));
        });
        req.on('error', reject);
        req.end();
      });
    const workers = new Set<string>();
    for (let i = 0; i < 40 && (workers.size < 2 || i < 6); i++) {
      const r = await get(`app.localhost:${port}`, `/w${i}`);
      expect(r.status).toBe(200);
      workers.add(r.worker);
    }
    expect(workers.size).toBe(2);
    await until('the access lines', () => lines(svc!.out(), 'request', '/w0').length === 1);
    expect(lines(svc!.out(), 'request', '/w0')[0]).toMatchObject({ status: 200, decision: 'allow', email: 'alice@example.com', shadow: { change: 'allow_to_deny', outcome: 'deny', route: 'app' } });

    // A forward-auth check of the same request: 200 by the enforced plan, the candidate's refusal on its line.
    const check = await get(`fwd.localhost:${port}`, `/verify?uri=${encodeURIComponent(`http://app.localhost:${port}/checked`)}`);
    expect(check.status).toBe(200);
    await until('the check line', () => lines(svc!.out(), 'request', '/verify').length === 1);
    expect(lines(svc!.out(), 'request', '/verify')[0]).toMatchObject({ status: 200, decision: 'internal', shadow: { change: 'allow_to_deny', outcome: 'deny', route: 'app' } });

    // The aggregated scrape: both workers' counts, and the shadow loaded in every process.
    const body = (await scrape(metricsPort)).body;
    expect(sample(body, 'svc_shadow_decisions_total', { route: 'app', outcome: 'allow_to_deny' })).toBeGreaterThanOrEqual(workers.size > 1 ? 7 : 1);
    expect(sample(body, 'svc_shadow_plan_loaded')).toBe(1);

    // The candidate rewritten (deciding alike): the primary reloads it and every worker takes it.
    const loaded = () => (svc!.out().match(/"msg":"shadow plan loaded"/g) ?? []).length;
    const before = loaded();
    const alike = planOf('allow if domain is "example.com"', 'alike');
    cfg.file('candidate.json', readFileSync(alike, 'utf8'));
    await until('both workers took the new candidate', () => loaded() >= before + 2);
    // Loaded is not yet in service: a worker swaps when the primary commits. Probe until each worker
    // has answered once with the new candidate (a worker never goes back to an older one).
    const fresh = new Set<string>();
    let probe = 0;
    await until('each worker decides with the new candidate', async () => {
      const path = `/probe${probe++}`;
      const r = await get(`app.localhost:${port}`, path);
      await until('the probe line', () => lines(svc!.out(), 'request', path).length === 1);
      if (lines(svc!.out(), 'request', path)[0]!['shadow'] === undefined) fresh.add(r.worker);
      return fresh.size === 2;
    });
    for (let i = 0; i < 6; i++) expect((await get(`app.localhost:${port}`, `/after${i}`)).status).toBe(200);
    // Two workers write their own lines: /after5's may come before /after3's, so wait for all six.
    await until('the access lines', () => [0, 1, 2, 3, 4, 5].every((i) => lines(svc!.out(), 'request', `/after${i}`).length === 1));
    for (let i = 0; i < 6; i++) expect(lines(svc!.out(), 'request', `/after${i}`)[0]!['shadow']).toBeUndefined();
  });
});
