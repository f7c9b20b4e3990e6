/**
 * demo/split.ts: the quickstart as four `svc run` processes (proxy, authenticate, authorize, data
 * broker) from one generated config, on free ports: alice signs in through the authenticate
 * service and reaches the app with her signed identity; bob is denied; the docs are public.
 */
import { createServer } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSplitDemo, type SplitDemo } from '../../demo/split.ts';
import { DemoPortError } from '../../demo/start.ts';
import { HttpBrowser } from '../support/http-browser.ts';
import { freePorts } from '../support/ports.ts';

describe('the split demo', () => {
  let demo: SplitDemo;
  beforeAll(async () => {
    // The roles' ports are handed to svc processes (test/support/ports.ts); the IdP and the upstreams listen on port 0.
    const [proxy, authenticate, authorize, databroker] = await freePorts(4);
    demo = await startSplitDemo({ ports: { proxy: proxy!, authenticate: authenticate!, authorize: authorize!, databroker: databroker!, idp: 0, docs: 0, app: 0 } });
  }, 60_000);
  afterAll(async () => demo?.close());

  const browser = () => {
    const proxy = Number(new URL(demo.appUrl).port);
    return new HttpBrowser((url) => (url.hostname.endsWith('.localhost') || url.hostname === '127.0.0.1' ? { port: Number(url.port) || proxy } : undefined));
  };

  it('serves the quickstart through four processes: alice allowed with her assertion, bob denied, docs public', async () => {
    // The four roles start side by side: a role that came up before another finds it within its gRPC
    // reconnect backoff, and until then a sign-in fails closed (503), never open. Waited out.
    let alice = browser();
    let last = (await alice.signIn(demo.appUrl, 'alice@example.com')).at(-1)!;
    for (const started = Date.now(); last.status === 503 && Date.now() - started < 20_000; ) {
      await new Promise((resolve) => setTimeout(resolve, 200));
      alice = browser();
      last = (await alice.signIn(demo.appUrl, 'alice@example.com')).at(-1)!;
    }
    expect(last.status, last.body).toBe(200);
    expect(last.body).toContain('x-svc-jwt-assertion');
    const bob = browser();
    expect((await bob.signIn(demo.appUrl, 'bob@other.example')).at(-1)!.status).toBe(403);
    expect((await browser().request(demo.docsUrl)).status).toBe(200);
    for (const role of ['proxy', 'authenticate', 'authorize', 'databroker'] as const) expect(demo.output(role)).toContain(`"service":"svc-${role}"`);
  }, 60_000);
});

describe('the split demo with a port taken', () => {
  it('names the port and the role that needs it before anything starts', async () => {
    const blocker = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', () => resolve()));
    const port = (blocker.address() as { port: number }).port;
    try {
      const error = await startSplitDemo({ ports: { proxy: 0, authenticate: 0, authorize: port, databroker: 0, idp: 0, docs: 0, app: 0 } }).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(DemoPortError);
      expect((error as Error).message).toBe(`port ${port} on 127.0.0.1 (the authorize role, gRPC, svc run --grpc-listen) is already in use: stop the program using it (another \`npm start\`? \`lsof -i :${port}\` or \`ss -ltnp 'sport = :${port}'\` names it) and try again (the split demo's ports are fixed: SPLIT_PORTS in demo/split.ts)`);
    } finally {
      await new Promise<void>((resolve) => blocker.close(() => resolve()));
    }
  });
});
