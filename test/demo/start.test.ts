/**
 * `npm start` (demo/start.ts): the dev identity provider, the demo upstreams and svc serving the quickstart
 * config, run here on free ports (every port 0: startDemo serves a copy of the config with them substituted).
 * A cookie-keeping client signs in as alice and reaches the demo app with a signed identity; bob is denied
 * with svc's 403 page; the docs route is public.
 */
import { createServer } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { banner, decodeJwtForDisplay, DemoPortError, formatLogLine, startDemo, substitutePorts, DEFAULT_PORTS, type Demo } from '../../demo/start.ts';
import { HttpBrowser, type Hop } from '../support/http-browser.ts';

let demo: Demo;

beforeAll(async () => {
  demo = await startDemo({ ports: { svc: 0, idp: 0, docs: 0, app: 0 }, watch: false, env: {} });
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
    const blocker = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', () => resolve()));
    const port = (blocker.address() as { port: number }).port;
    try {
      const error = await startDemo({ ports: { svc: 0, idp: port, docs: 0, app: 0 }, watch: false, env: {} }).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(DemoPortError);
      expect((error as Error).message).toBe(`port ${port} on 127.0.0.1 (the dev identity provider) is already in use: stop the program using it (another \`npm start\`?) and try again`);
    } finally {
      await new Promise<void>((resolve) => blocker.close(() => resolve()));
    }
  });
});
