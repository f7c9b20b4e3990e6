/**
 * No secret in the logs: a full sign-in against a real OpenID provider, with every log
 * setting at `debug` and every request traced, writes no configured secret, cookie, token, code or
 * query string, in any line svc writes (its own lines, access lines, the compiler's warnings) or
 * any span it exports; the sign-in callback is a span of its own.
 */
import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import { createTracingSwitch, type TracingSwitch } from '../../runtime/observe/trace/tracing.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRunLog } from '../../runtime/observe/log/run-log.ts';
import { startAuthWorld, type AuthWorld } from './auth-support.ts';

describe('logs of a full sign-in at debug', () => {
  // TEST SECRETS ONLY, random per run so a hit cannot be a coincidence.
  const cookieSecret = randomBytes(32).toString('base64');
  const sharedSecret = randomBytes(32).toString('base64');
  const out: string[] = [];
  const spans: string[] = [];
  let w: AuthWorld;
  let zipkin: Server;
  let tracing: TracingSwitch;

  beforeAll(async () => {
    // A zipkin stand-in that keeps every body it is sent.
    zipkin = createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        spans.push(body);
        res.writeHead(202).end();
      });
    });
    await new Promise<void>((resolve) => zipkin.listen(0, '127.0.0.1', () => resolve()));
    const zipkinUrl = `http://127.0.0.1:${(zipkin.address() as { port: number }).port}/api/v2/spans`;
    const logs = createRunLog({ write: (s: string) => out.push(s) });
    tracing = createTracingSwitch(logs.log);
    w = await startAuthWorld({
      settings: { cookie_secret: cookieSecret, shared_secret: sharedSecret, log_level: 'debug', proxy_log_level: 'debug', tracing_provider: 'zipkin', tracing_zipkin_endpoint: zipkinUrl, tracing_sample_rate: 1 },
      routes: [{ name: 'app', from: 'https://app.localhost:PORT', to: 'UPSTREAM', policy: 'allow if domain is "example.com"', pass_identity_headers: true }],
      run: {
        log: logs.log,
        access: logs.access,
        tracing,
        logSettings: logs,
        onWarnings: (t) => out.push(t),
      },
    });
  }, 60_000);
  afterAll(async () => {
    await w?.close();
    await tracing?.shutdown();
    zipkin?.close();
  });

  it('names the request, never a secret, cookie, token, code or query', async () => {
    const b = w.browser();
    const hops = await b.signIn(`${w.origin('app')}/hello?secret_query=q-${randomBytes(8).toString('hex')}`, 'alice@example.com');
    expect(hops.at(-1)!.status).toBe(200);
    // Sign out too: more endpoints, more chances to leak.
    await b.request(`${w.origin('app')}/.svc/sign_out`);

    const secrets = new Set<string>([cookieSecret, sharedSecret, 'svc-test-secret']);
    for (const hop of hops) {
      const url = new URL(hop.url);
      // Not secrets: svc's own redirect target, the client's id and the issuer (RFC 9207), which the
      // user agent and the referer's origin may well contain.
      for (const [k, v] of url.searchParams) if (v.length >= 8 && k !== 'svc_redirect_uri' && k !== 'client_id' && k !== 'iss') secrets.add(v);
      const setCookie = hop.headers['set-cookie'];
      for (const c of Array.isArray(setCookie) ? setCookie : setCookie ? [setCookie] : []) {
        const value = c.split(';')[0]!.split('=').slice(1).join('=');
        if (value.length >= 8) secrets.add(value);
      }
      const location = hop.headers['location'];
      if (typeof location === 'string') for (const [k, v] of new URL(location, hop.url).searchParams) if (v.length >= 16 && k !== 'iss') secrets.add(v);
    }
    const echoed = JSON.parse(hops.at(-1)!.body) as { headers: Record<string, string> };
    secrets.add(echoed.headers['x-svc-jwt-assertion']!);
    for (const v of Object.values(b.cookies(`app.localhost`))) if (v.length >= 8) secrets.add(v);
    for (const v of Object.values(b.cookies(`authenticate.localhost`))) if (v.length >= 8) secrets.add(v);
    // What was collected is real: the code, the state and the session cookie at least.
    expect(secrets.size).toBeGreaterThan(6);

    const text = out.join('');
    // The sign-in was logged, at debug, with who signed in: the grep below reads real lines.
    expect(text).toContain('"msg":"request"');
    expect(text).toMatch(/"path":"\/oauth2\/callback/);
    expect(text).toMatch(/"user":"alice"/);
    for (const s of secrets) expect(text, `a secret in the logs: ${s.slice(0, 6)}…`).not.toContain(s);
    // Nothing JWT-shaped (tokens from the provider, assertions), no query string in a path.
    expect(text).not.toMatch(/eyJ[A-Za-z0-9_-]{10,}\./);
    expect(text).not.toContain('secret_query');
    expect(text).not.toMatch(/"path":"[^"]*\?/);

    // The spans: the callback has its own, and none holds a secret or a query either.
    await tracing.shutdown();
    const exported = spans.join('\n');
    expect(exported).toContain('"name":"sign-in callback"');
    for (const s of secrets) expect(exported, `a secret in the spans: ${s.slice(0, 6)}…`).not.toContain(s);
    expect(exported).not.toMatch(/eyJ[A-Za-z0-9_-]{10,}\./);
    expect(exported).not.toContain('secret_query');
  });
});
