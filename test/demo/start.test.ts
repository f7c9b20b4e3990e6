/**
 * `npm start` (demo/start.ts): the dev identity provider, the demo upstreams and svc serving the quickstart
 * config, run here on free ports (svc's from test/support/ports.ts, since the config names it; every other
 * port 0, gRPC's too: startDemo serves a copy of the config with them substituted and gives svc the gRPC port).
 * A cookie-keeping client signs in as alice and reaches the demo app with a signed identity; bob is denied
 * with svc's 403 page; the docs route is public.
 */
import { spawn } from 'node:child_process';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { banner, decodeJwtForDisplay, DemoPortError, DemoUsageError, formatLogLine, grpcPortFromEnv, listenFailure, startDemo, substitutePorts, DEFAULT_PORTS, type Demo } from '../../demo/start.ts';
import { HttpBrowser, type Hop } from '../support/http-browser.ts';
import { freePort } from '../support/ports.ts';

let demo: Demo;

beforeAll(async () => {
  demo = await startDemo({ ports: { svc: await freePort(), idp: 0, docs: 0, app: 0, grpc: 0 }, watch: false, env: {} });
}, 30_000);

afterAll(async () => {
  await demo?.close();
});

function browser(): HttpBrowser {
  const { svc, idp } = demo.ports;
  return new HttpBrowser((url) => {
    if (url.hostname.endsWith('.localhost') && Number(url.port) === svc) return { port: svc };
    if (url.hostname === '127.0.0.1' && Number(url.port) === idp) return { port: idp };
    return undefined;
  });
}

function last(hops: readonly Hop[]): Hop {
  const hop = hops.at(-1);
  if (hop === undefined) throw new Error('no answer');
  return hop;
}

function decodeHtml(text: string): string {
  return text.replace(/&#(\d+);/g, (_, code: string) => String.fromCharCode(Number(code)));
}

describe('the demo (npm start)', () => {
  it('runs on the chosen ports and prints the URL to open', () => {
    expect(demo.ports.svc).toBeGreaterThan(0);
    // The gRPC data broker listens on the free port it was given, not all-in-one's default 5443.
    expect(demo.svc.grpc?.address).toEqual({ host: '127.0.0.1', port: demo.ports.grpc });
    expect(demo.ports.grpc).not.toBe(DEFAULT_PORTS.grpc);
    expect(Object.values(demo.ports).every((p) => p > 0)).toBe(true);
    expect(demo.appUrl).toBe(`http://app.localhost:${demo.ports.svc}/`);
    expect(banner(demo)).toContain(
      `svc is running. Open http://app.localhost:${demo.ports.svc}/ and sign in as alice@example.com / demo (allowed) or bob@other.example / demo (denied).`,
    );
  });

  it('the docs route is public: 200 without signing in, and no identity headers', async () => {
    const hops = await browser().navigate(demo.docsUrl);
    expect(hops).toHaveLength(1);
    const page = last(hops);
    expect(page.status).toBe(200);
    expect(page.body).toContain('svc demo docs');
    expect(page.body).toContain('svc headers received here: none');
  });

  it('an anonymous browser is sent to the dev identity provider to sign in', async () => {
    const hops = await browser().navigate(demo.appUrl);
    expect(hops[0]?.status).toBe(302);
    expect(String(hops[0]?.headers['location'])).toMatch(new RegExp(`^http://authenticate\\.localhost:${demo.ports.svc}/\\.svc/sign_in\\?`));
    const page = last(hops);
    expect(page.url.startsWith(`http://127.0.0.1:${demo.ports.idp}/interaction/`)).toBe(true);
    expect(page.body).toContain('action="/interaction/');
  });

  it('alice signs in and the demo app shows her email and the signed assertion', async () => {
    const b = browser();
    const hops = await b.signIn(demo.appUrl, 'alice@example.com');
    const page = last(hops);
    expect(page.url).toBe(demo.appUrl);
    expect(page.status).toBe(200);
    expect(page.body).toContain('svc demo app');
    expect(page.body).toContain('Signed in as <strong>alice@example.com</strong>');
    // the claim headers from jwt_claims_headers
    expect(page.body).toMatch(/<td>x-svc-claim-email<\/td><td>alice@example\.com<\/td>/);
    expect(page.body).toMatch(/<td>x-svc-claim-groups<\/td><td>admins,\s*staff<\/td>/);
    // the assertion, decoded for display
    const payload = /<pre id="assertion-payload">([\s\S]*?)<\/pre>/.exec(page.body)?.[1];
    expect(payload).toBeDefined();
    const claims = JSON.parse(decodeHtml(payload!)) as Record<string, unknown>;
    expect(claims['email']).toBe('alice@example.com');
    expect(claims['aud']).toBeDefined();
    // a second visit needs no sign-in
    const again = await b.navigate(demo.appUrl);
    expect(again).toHaveLength(1);
    expect(last(again).status).toBe(200);
  }, 30_000);

  it('bob signs in and gets a clear 403 page', async () => {
    const hops = await browser().signIn(demo.appUrl, 'bob@other.example');
    const page = last(hops);
    expect(page.url).toBe(demo.appUrl);
    expect(page.status).toBe(403);
    expect(page.headers['content-type']).toMatch(/^text\/html/);
    expect(page.body).toContain('403 · Access denied');
    expect(page.body).toContain('the policy of this route does not allow you here');
    expect(page.body).toContain('bob@other.example');
    expect(page.body).not.toContain('svc demo app');
  }, 30_000);
});

describe('demo helpers', () => {
  it('substitutePorts replaces every port of the quickstart config', () => {
    const text = [
      'address: 127.0.0.1:8443',
      'authenticate_service_url: http://authenticate.localhost:8443',
      'idp_provider_url: http://127.0.0.1:9000',
      '    from: https://docs.localhost:8443',
      '    to: http://127.0.0.1:9001',
      '    to: http://127.0.0.1:9002',
    ].join('\n');
    const out = substitutePorts(text, { svc: 18443, idp: 19000, docs: 19001, app: 19002 }, 'http://127.0.0.1:19000');
    expect(out).toBe([
      'address: 127.0.0.1:18443',
      'authenticate_service_url: http://authenticate.localhost:18443',
      'idp_provider_url: http://127.0.0.1:19000',
      '    from: https://docs.localhost:18443',
      '    to: http://127.0.0.1:19001',
      '    to: http://127.0.0.1:19002',
    ].join('\n'));
    expect(() => substitutePorts('address: 127.0.0.1:8443\n', DEFAULT_PORTS, 'http://127.0.0.1:9000')).toThrow(/no longer contains/);
  });

  it('decodeJwtForDisplay decodes header and payload, and refuses what is not a JWT', () => {
    const seg = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');
    expect(decodeJwtForDisplay(`${seg({ alg: 'ES256' })}.${seg({ email: 'a@example.com' })}.sig`)).toEqual({ header: { alg: 'ES256' }, payload: { email: 'a@example.com' } });
    expect(decodeJwtForDisplay('forged')).toBeUndefined();
    expect(decodeJwtForDisplay('a.b!.c')).toBeUndefined();
  });

  it('formatLogLine prints one concise line', () => {
    expect(formatLogLine({ msg: 'signed in', user: 'alice', email: 'alice@example.com' })).toBe('svc: signed in user=alice email=alice@example.com');
    expect(formatLogLine({ msg: 'request', requestId: 'r1', method: 'GET', status: 403, ms: 2, plan: 1 })).toBe('svc: GET 403 2 ms (request r1)');
  });

  it('a taken port fails with a message naming it, before anything starts', async () => {
    const blocker = await occupy();
    const port = portOf(blocker);
    try {
      const error = await startDemo({ ports: { svc: 0, idp: port, docs: 0, app: 0, grpc: 0 }, watch: false, env: {} }).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(DemoPortError);
      expect((error as DemoPortError).ports).toEqual([{ role: 'idp', port, code: 'EADDRINUSE' }]);
      expect((error as Error).message).toBe(`port ${port} on 127.0.0.1 (the dev identity provider) is already in use: stop the program using it (another \`npm start\`? \`lsof -i :${port}\` or \`ss -ltnp 'sport = :${port}'\` names it) and try again (the demo's ports 8443 and 9000-9002 are fixed: fixtures/quickstart/config.yaml names them)`);
    } finally {
      await close(blocker);
    }
  });

  it('a taken gRPC port (GRPC_ADDRESS) is named with how to pick another, and every taken port is listed', async () => {
    const [grpc, app] = [await occupy(), await occupy()];
    try {
      const error = await startDemo({ ports: { svc: 0, idp: 0, docs: 0, app: portOf(app) }, watch: false, env: { GRPC_ADDRESS: `127.0.0.1:${portOf(grpc)}` } }).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(DemoPortError);
      expect((error as DemoPortError).ports.map((u) => u.role)).toEqual(['app', 'grpc']);
      const lines = (error as Error).message.split('\n');
      expect(lines).toHaveLength(2);
      expect(lines[0]).toMatch(new RegExp(`^port ${portOf(app)} on 127\\.0\\.0\\.1 \\(the demo app upstream\\) is already in use: `));
      expect(lines[1]).toBe(`port ${portOf(grpc)} on 127.0.0.1 (svc's data broker over gRPC, grpc_address) is already in use: stop the program using it (another \`npm start\`? \`lsof -i :${portOf(grpc)}\` or \`ss -ltnp 'sport = :${portOf(grpc)}'\` names it) and try again, or give svc another gRPC port: \`GRPC_ADDRESS=127.0.0.1:5543 npm start\``);
    } finally {
      await close(grpc);
      await close(app);
    }
  });

  it('GRPC_ADDRESS must name a port on 127.0.0.1', () => {
    expect(grpcPortFromEnv(undefined)).toBeUndefined();
    expect(grpcPortFromEnv('')).toBeUndefined();
    expect(grpcPortFromEnv('127.0.0.1:5543')).toBe(5543);
    expect(grpcPortFromEnv('localhost:5543')).toBe(5543);
    expect(grpcPortFromEnv(':5543')).toBe(5543);
    for (const bad of ['0.0.0.0:5543', '127.0.0.1', '127.0.0.1:70000', 'example.com:5543']) {
      expect(() => grpcPortFromEnv(bad), bad).toThrow(DemoUsageError);
    }
  });

  it("listenFailure reads Node's listen errors and grpc-js's bind failure text", () => {
    const node = Object.assign(new Error('listen EADDRINUSE: address already in use 127.0.0.1:8443'), { code: 'EADDRINUSE', port: 8443 });
    expect(listenFailure(node)).toEqual({ code: 'EADDRINUSE', port: 8443 });
    const grpcJs = new Error('No address added out of total 1 resolved errors: [listen EADDRINUSE: address already in use 127.0.0.1:5443]');
    expect(listenFailure(new Error('grpc_address: cannot listen for gRPC on 127.0.0.1:5443: …', { cause: grpcJs }))).toEqual({ code: 'EADDRINUSE', port: 5443 });
    expect(listenFailure(new Error('something else'))).toBeUndefined();
  });
});

describe('npm start (demo/start.ts as a program) with its gRPC port taken', () => {
  it('prints one friendly line naming the port, no stack trace, and exits 2', async () => {
    // The demo's gRPC port is the one GRPC_ADDRESS names: a free port this test holds (never 5443,
    // which another svc on this machine may hold). Every port is checked before anything starts,
    // so nothing listens even when the demo's other, fixed ports are free.
    const blocker = await occupy();
    const port = portOf(blocker);
    try {
      const child = spawn(process.execPath, ['--import', 'tsx', join(import.meta.dirname, '../../demo/start.ts')], {
        stdio: ['ignore', 'pipe', 'pipe'],
        env: { PATH: process.env['PATH'] ?? '', GRPC_ADDRESS: `127.0.0.1:${port}` },
      });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
      child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
      const code = await new Promise<number | null>((resolve) => child.once('exit', (c) => resolve(c)));
      expect(code).toBe(2);
      const lines = stderr.trim().split('\n');
      expect(lines).toContain(`error: port ${port} on 127.0.0.1 (svc's data broker over gRPC, grpc_address) is already in use: stop the program using it (another \`npm start\`? \`lsof -i :${port}\` or \`ss -ltnp 'sport = :${port}'\` names it) and try again, or give svc another gRPC port: \`GRPC_ADDRESS=127.0.0.1:5543 npm start\``);
      // Only `error: port …` lines (another of the demo's fixed ports may be taken on this machine too).
      for (const line of lines) expect(line).toMatch(/^error: port \d+ on 127\.0\.0\.1 \(/);
      expect(stderr).not.toMatch(/^\s+at /m);
      expect(stdout).not.toContain('svc is running');
    } finally {
      await close(blocker);
    }
  }, 60_000);
});

async function occupy(): Promise<Server> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  return server;
}

function portOf(server: Server): number {
  return (server.address() as { port: number }).port;
}

function close(server: Server): Promise<void> {
  return new Promise<void>((resolve) => server.close(() => resolve()));
}
