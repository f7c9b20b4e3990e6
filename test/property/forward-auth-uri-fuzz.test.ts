/**
 * Fuzzing the forward-auth `uri` (runtime/authn/forward-auth.ts): the query a third-party proxy
 * sends to `forward_auth_url`, which carries the client's request line (`?uri=<scheme>://<host>
 * <request_uri>`, raw or percent-encoded), plus the `X-Forwarded-Method`, cookies and bearer token
 * it passes along. `forwardAuthUri` is the pure reader of the query; `forwardAuth` the exported
 * entry, driven here with a fake request and response on a compiled plan. The contract: exactly one
 * answer, 200 only for a `uri` that reads as one request on a route that allows it, a clean 400
 * (`forward-auth-uri-invalid`, `forward-auth-method-invalid`, a canonical-request problem) for what
 * cannot be read, never an exception and never a 500.
 */
import fc from 'fast-check';
import { stringify } from 'yaml';
import { afterAll, describe, expect, it } from 'vitest';
import { buildAuthState } from '../../runtime/authn/auth-state.ts';
import { forwardAuth, forwardAuthUri } from '../../runtime/authn/forward-auth.ts';
import { Authn } from '../../runtime/authn/service.ts';
import { ephemeralSigningKey } from '../../runtime/authn/signing-key.ts';
import { MemoryStore } from '../../runtime/databroker/memory-store.ts';
import { buildIndex } from '../../runtime/plan/index.ts';
import { BASE_SETTINGS, compileText } from '../support/compile-text.ts';

const RUNS = 300;

const plan = compileText(
  stringify({
    ...BASE_SETTINGS,
    forward_auth_url: 'https://fa.example.com',
    routes: [
      { from: 'https://public.example.com', to: 'http://10.0.0.1', allow_public_unauthenticated_access: true, pass_identity_headers: true },
      { from: 'https://app.example.com', to: 'http://10.0.0.2', prefix: '/admin', policy: 'allow if email is "alice@example.com"' },
      { from: 'https://app.example.com:8443', to: 'http://10.0.0.3', allow_any_authenticated_user: true },
    ],
  }),
).plan!;
const index = buildIndex(plan.body);
const key = ephemeralSigningKey();
const state = buildAuthState(plan.body, 'http', undefined, () => key);
const store = new MemoryStore({ sweepIntervalMs: 0 });
const authn = new Authn(store, { scheme: 'http' });
afterAll(() => {
  authn.close();
  void store.close();
});

const hostPiece = fc.oneof(
  { arbitrary: fc.constantFrom('public.example.com', 'app.example.com', 'APP.example.com', 'app.example.com:8443', 'app.example.com:443', 'fa.example.com', 'auth.example.com'), weight: 3 },
  { arbitrary: fc.constantFrom('[::1]', '127.0.0.1', '', ':', '@', 'user@app.example.com', 'app.example.com.', 'x', 'public.example.com:0', 'public.example.com:99999'), weight: 1 },
);
const pathPiece = fc.constantFrom('/', '/admin', '/admin/', '/public', '/.svc/', '/.svc/sign_in', '..', '.', '/..', '%2e%2e', '%2f', '%2F', '%3F', '%3f', '%23', '%00', '%', '%zz', '?', '#', '&', '=', '+', ';', '\\', ' ', '\t', 'é', '\ud800', 'uri=', 'a', '//');
const plainPiece = fc.constantFrom('/', '/admin', '/admin/', '/public', '/x', '?a=1', '&b=2');
const requestUri = fc.array(fc.oneof({ arbitrary: plainPiece, weight: 3 }, { arbitrary: pathPiece, weight: 1 }), { maxLength: 6 }).map((ps) => (ps.length === 0 || ps[0]!.startsWith('/') ? ps.join('') : `/${ps.join('')}`));
const scheme = fc.oneof({ arbitrary: fc.constantFrom('http://', 'https://'), weight: 4 }, { arbitrary: fc.constantFrom('HTTPS://', 'ftp://', 'https:/', ''), weight: 1 });
const uri = fc.tuple(scheme, hostPiece, requestUri).map(([s, h, r]) => `${s}${h}${r}`);
/** Percent-encodes as a proxy would (UTF-8; a lone surrogate becomes U+FFFD, as on the wire). */
const enc = (s: string) => encodeURIComponent(Buffer.from(s).toString('utf8'));
const query = fc.oneof(
  { arbitrary: uri.map((u) => `uri=${u}`), weight: 3 }, // raw (nginx)
  { arbitrary: uri.map((u) => `uri=${enc(u)}`), weight: 3 }, // encoded (Caddy)
  fc.tuple(uri, uri).map(([a, b]) => `uri=${enc(a)}&uri=${enc(b)}`),
  fc.tuple(fc.string({ maxLength: 8 }), uri).map(([p, u]) => `${p}&uri=${enc(u)}`),
  fc.string({ maxLength: 40 }),
  fc.string({ unit: 'binary', maxLength: 30 }).map((s) => `uri=${s}`),
);
const headerValue = fc.oneof(fc.string({ maxLength: 20 }), fc.constantFrom('GET', 'POST', 'delete', 'GET, POST', '', 'X'.repeat(40)));
const headers = fc.record(
  {
    'x-forwarded-method': fc.oneof({ arbitrary: fc.constantFrom('GET', 'POST', 'DELETE', 'OPTIONS'), weight: 4 }, { arbitrary: headerValue, weight: 1 }, { arbitrary: fc.array(fc.constantFrom('GET', 'POST'), { maxLength: 2 }), weight: 1 }),
    cookie: fc.oneof(fc.string({ maxLength: 40 }), fc.constantFrom('_svc=', '_svc=x', '_svc="abc"', '__Host-_svc=abc; _svc=def')),
    authorization: fc.oneof(fc.string({ maxLength: 30 }), fc.constantFrom('Bearer svc1.', 'Bearer svc1.abc.def', 'Bearer ', 'Basic Og==')),
    accept: fc.constantFrom('text/html', 'application/json', '*/*'),
  },
  { requiredKeys: [] },
);
const endpoint = fc.constantFrom('/', '/verify');

interface Answer {
  status: number;
  headers: Record<string, unknown>;
  ends: number;
}

async function ask(path: string, q: string, h: Record<string, string | string[]>): Promise<Answer> {
  const answer: Answer = { status: 0, headers: {}, ends: 0 };
  const res = {
    writeHead(status: number, hs: Record<string, unknown> = {}) {
      if (answer.status !== 0) throw new Error('writeHead twice');
      answer.status = status;
      answer.headers = hs;
      return res;
    },
    end() {
      answer.ends++;
      return res;
    },
  };
  const req = { headers: { host: 'fa.example.com', ...h }, method: 'GET', url: `${path}?${q}` };
  try {
    // The fake objects stand in for node's request and response: forwardAuth reads `headers` and writes `writeHead`/`end`.
    await forwardAuth(authn, state, index, path, q, req as never, res as never, 'req-1', '127.0.0.1');
  } catch (e) {
    throw new Error(`forwardAuth threw on ${JSON.stringify([path, q, h])}: ${(e as Error).stack}`);
  }
  return answer;
}

describe('forward-auth uri, fuzzed', () => {
  it('forwardAuthUri returns one string or undefined, never throws; the raw form is the rest of the query as is', () => {
    fc.assert(
      fc.property(query, (q) => {
        const u = forwardAuthUri(q);
        expect(u === undefined || typeof u === 'string').toBe(true);
        if (/^uri=https?:\/\//.test(q)) expect(u).toBe(q.slice(4));
      }),
      { numRuns: RUNS * 4 },
    );
  });

  it('forwardAuth answers exactly once with a documented status, never throws, never 500', async () => {
    await fc.assert(
      fc.asyncProperty(endpoint, query, headers, async (path, q, h) => {
        const a = await ask(path, q, h);
        expect([200, 302, 400, 401, 403, 503]).toContain(a.status);
        expect(a.ends).toBe(1);
        const u = forwardAuthUri(q);
        if (u === undefined || !/^https?:\/\/[A-Za-z0-9.\-[\]:]+(\/[^#\s]*)?$/i.test(u)) expect(a.status).toBe(400);
        // A 200 only for the public route's host (nobody here has a session).
        if (a.status === 200) expect(a.headers['x-svc-route-host'] ?? 'public.example.com').toBe('public.example.com');
        // `/verify` never redirects.
        if (path === '/verify') expect(a.status).not.toBe(302);
      }),
      { numRuns: RUNS },
    );
  });
});
