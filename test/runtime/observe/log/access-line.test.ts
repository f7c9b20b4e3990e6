/** runtime/observe/log/access-line.ts writes the very bytes pino would write for the access line. */
import { Writable } from 'node:stream';
import fc from 'fast-check';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { accessLevel, accessLine, hostOf, isoTime, pathOf, refererOf, type AccessEntry } from '../../../../runtime/observe/log/access-line.ts';

/**
 * What svc's pino logger writes for `entry` at `timeMs`, configured as run-log.ts configures it:
 * string levels (`formatters.level`) and RFC 3339 times (pino's own `stdTimeFunctions.isoTime`
 * format, from `timeMs`).
 */
function pinoLine(entry: Record<string, unknown>, level: number, service = 'svc', timeMs = Date.now()): string {
  let out = '';
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      out += chunk.toString('utf8');
      done();
    },
  });
  // pino writes synchronously to a plain stream.
  const logger = pino({ base: { service }, formatters: { level: (label) => ({ level: label }) }, timestamp: () => `,"time":"${new Date(timeMs).toISOString()}"` }, sink);
  if (level === 40) logger.warn(entry);
  else logger.info(entry);
  return out;
}

const timeArb = fc.integer({ min: 0, max: 253_402_300_799_999 }); // up to 9999-12-31T23:59:59.999Z
const text = fc.oneof(fc.string({ unit: 'grapheme' }), fc.string({ unit: 'binary' }));
const opt = <T>(a: fc.Arbitrary<T>) => fc.option(a, { nil: undefined });

const entryArb: fc.Arbitrary<AccessEntry> = fc
  .record({
    msg: fc.constantFrom('request' as const, 'upgrade' as const, 'tunnel' as const),
    event: opt(fc.constantFrom('open' as const, 'close' as const)),
    requestId: fc.oneof(fc.uuid(), text),
    traceId: opt(fc.oneof(fc.stringMatching(/^[0-9a-f]{32}$/), text)),
    method: opt(fc.oneof(fc.constantFrom('GET', 'POST', 'M-SEARCH'), text)),
    host: text,
    path: text,
    route: opt(fc.oneof(fc.nat(), text)),
    status: fc.integer({ min: 100, max: 599 }),
    ms: fc.nat(),
    bytesIn: opt(fc.nat()),
    bytesOut: opt(fc.nat()),
    upstream: opt(text),
    client: opt(text),
    userAgent: opt(text),
    referer: opt(fc.oneof(text, fc.webUrl({ withQueryParameters: true, withFragments: true }))),
    user: opt(text),
    email: opt(text),
    groups: opt(fc.array(text, { maxLength: 4 })),
    claims: opt(fc.dictionary(text, fc.array(text, { maxLength: 3 }), { maxKeys: 3 })),
    device: opt(fc.record({ id: text, type: fc.oneof(fc.constantFrom('any', 'enclave_only'), text), approved: fc.boolean() })),
    clientCert: opt(fc.record({ sha256: fc.oneof(fc.stringMatching(/^[0-9a-f]{64}$/), text), valid: fc.boolean() })),
    preflight: opt(fc.boolean()),
    identityCut: opt(fc.constant(true as const)),
    decision: text,
    reasons: opt(fc.array(text, { maxLength: 3 })),
    plan: fc.nat(),
    cut: opt(fc.constant(true as const)),
    cutBy: opt(text),
    shadow: opt(
      fc.record({
        change: fc.constantFrom('allow_to_deny' as const, 'deny_to_allow' as const, 'outcome_changed' as const, 'route_changed' as const, 'upstream_changed' as const),
        outcome: fc.oneof(fc.constantFrom('allow', 'deny', 'unauthenticated', 'not_found'), text),
        route: opt(text),
        reasons: opt(fc.array(text, { minLength: 1, maxLength: 3 })),
      }),
    ),
  })
  // Absent fields are undefined (as the request path builds them) or left out: both are omitted, as
  // pino omits undefined values. No reasons are never an empty list.
  .chain((e) => fc.boolean().map((leaveOut) => (leaveOut ? (Object.fromEntries(Object.entries(e).filter(([, v]) => v !== undefined)) as unknown as AccessEntry) : e)))
  .map((e) => (e.reasons !== undefined && e.reasons.length === 0 ? { ...e, reasons: undefined } : e));

describe('accessLine', () => {
  // The entry as the line has it: host and referer made safe.
  const safe = (e: AccessEntry) => ({ ...e, host: hostOf(e.host), ...(e.referer !== undefined ? { referer: refererOf(e.referer) } : {}) });

  it("equals pino's line for the same entry (its host and referer made safe), level and time (property)", () => {
    fc.assert(
      fc.property(entryArb, timeArb, (entry, time) => {
        expect(accessLine(entry, time)).toBe(pinoLine(safe(entry), accessLevel(entry), 'svc', time));
      }),
      { numRuns: 500 },
    );
  });

  it("equals pino's line for strings made of what JSON escapes or keeps (quote, backslash, controls, surrogate pairs) (property)", () => {
    const unit = fc.constantFrom('a', '"', '\\', '\n', '\u0000', '\u001f', '\u007f', ' ', '\ud83d\ude00', 'é', '\u2028');
    const s = fc.string({ unit, maxLength: 6 });
    const line = fc.record({ requestId: s, host: s, path: s, userAgent: s, groups: fc.array(s, { maxLength: 3 }), reasons: fc.array(s, { minLength: 1, maxLength: 3 }) });
    fc.assert(
      fc.property(line, (p) => {
        // In the line's field order, as pino writes an entry's keys in theirs.
        const entry: AccessEntry = { msg: 'request', requestId: p.requestId, method: 'GET', host: p.host, path: p.path, status: 200, ms: 1, userAgent: p.userAgent, user: 'u', groups: p.groups, decision: 'allow', reasons: p.reasons, plan: 1 };
        expect(accessLine(entry, 1)).toBe(pinoLine(safe(entry), accessLevel(entry), 'svc', 1));
      }),
      { numRuns: 500 },
    );
  });

  it('escapes a lone surrogate half, where pino would write it raw (lost as U+FFFD in UTF-8)', () => {
    for (const requestId of ['\ud800', 'a\udfffb', '\ude00\ud83d']) {
      const line = accessLine({ msg: 'request', requestId, method: 'GET', host: 'h', path: '/', status: 200, ms: 1, decision: 'allow', plan: 1 }, 1);
      expect(line).toContain(JSON.stringify(requestId));
      expect(JSON.parse(line).requestId).toBe(requestId);
    }
  });

  it("equals pino's line under each service label (spec 1.9)", () => {
    fc.assert(
      fc.property(entryArb, timeArb, fc.constantFrom('svc', 'svc-proxy', 'svc-authorize', 'svc-authenticate', 'svc-databroker'), (entry, time, service) => {
        expect(accessLine(entry, time, service)).toBe(pinoLine(safe(entry), accessLevel(entry), service, time));
      }),
      { numRuns: 100 },
    );
  });

  it('names its level and its time as an operator reads them: "info"/"warn", RFC 3339 in UTC with milliseconds', () => {
    const base: AccessEntry = { msg: 'request', requestId: 'r', method: 'GET', host: 'h', path: '/', status: 200, ms: 1, decision: 'allow', plan: 1 };
    expect(accessLine(base, Date.UTC(2026, 10, 28, 10, 0, 0, 123))).toMatch(/^\{"level":"info","time":"2026-11-28T10:00:00\.123Z",/);
    expect(accessLine({ ...base, status: 502 }, Date.UTC(2026, 10, 28, 10, 0, 1, 5))).toMatch(/^\{"level":"warn","time":"2026-11-28T10:00:01\.005Z",/);
  });

  it('carries the user agent, the referer (made safe) and the trace id, so a line and its trace find each other', () => {
    const line = JSON.parse(
      accessLine({ msg: 'request', requestId: 'r', traceId: '4bf92f3577b34da6a3ce929d0e0e4736', method: 'GET', host: 'h', path: '/', status: 200, ms: 1, userAgent: 'curl/8.5.0', referer: 'https://alice:PW@app.example.com/from?token=s3cret#x', decision: 'allow', plan: 1 }, 1),
    ) as Record<string, unknown>;
    expect(line).toMatchObject({ requestId: 'r', traceId: '4bf92f3577b34da6a3ce929d0e0e4736', userAgent: 'curl/8.5.0', referer: 'https://app.example.com' });
    expect(JSON.stringify(line)).not.toMatch(/PW|s3cret|alice/);
  });

  it('is one JSON object per line', () => {
    const line = accessLine({ msg: 'request', requestId: 'r1', method: 'GE"T\n', host: 'a.example.com', path: '/x', status: 200, ms: 3, decision: 'allow', plan: 1 }, 1);
    expect(line.endsWith('}\n')).toBe(true);
    expect(line.slice(0, -1)).not.toContain('\n');
    expect(JSON.parse(line)).toEqual({ level: 'info', time: '1970-01-01T00:00:00.001Z', service: 'svc', msg: 'request', requestId: 'r1', method: 'GE"T\n', host: 'a.example.com', path: '/x', status: 200, ms: 3, decision: 'allow', plan: 1 });
  });

  it('carries the shadow decision as one small object, only when given (svc run --shadow)', () => {
    const base: AccessEntry = { msg: 'request', requestId: 'r1', method: 'GET', host: 'a.example.com', path: '/x', status: 200, ms: 3, decision: 'allow', plan: 1 };
    expect(accessLine(base, 1)).not.toContain('shadow');
    const line = accessLine({ ...base, shadow: { change: 'allow_to_deny', outcome: 'deny', route: 'admin', reasons: ['email-not-allowed'] } }, 1);
    expect(line).toContain(',"plan":1,"shadow":{"change":"allow_to_deny","outcome":"deny","route":"admin","reasons":["email-not-allowed"]}}\n');
    expect(JSON.parse(line).shadow).toEqual({ change: 'allow_to_deny', outcome: 'deny', route: 'admin', reasons: ['email-not-allowed'] });
  });

  it('a 5xx answer or a cut response is a warn line', () => {
    const base: AccessEntry = { msg: 'request', requestId: 'r', method: 'GET', host: 'h', path: '/', status: 200, ms: 1, decision: 'allow', plan: 1 };
    expect(accessLevel(base)).toBe(30);
    expect(accessLevel({ ...base, status: 502 })).toBe(40);
    expect(accessLevel({ ...base, status: 499, cut: true })).toBe(40);
    expect(accessLevel({ ...base, status: 404 })).toBe(30);
  });
});

describe('pathOf', () => {
  it('drops the query string, never the path', () => {
    expect(pathOf('/a/b?token=secret&x=1')).toBe('/a/b');
    expect(pathOf('/a/b')).toBe('/a/b');
    expect(pathOf('/?')).toBe('/');
    expect(pathOf('/a#frag?x=secret')).toBe('/a');
  });

  it('keeps only the path of an absolute-form target: no scheme, userinfo, authority or query (docs/security.md S43)', () => {
    expect(pathOf('https://alice:PW@host/x')).toBe('/x');
    expect(pathOf('http://alice:PW@host:8080/a/b?token=secret')).toBe('/a/b');
    expect(pathOf('HTTPS://alice:PW@host')).toBe('/');
    expect(pathOf('https://alice:PW@host?x=secret')).toBe('/');
    expect(pathOf('https://a@b:PW@host/x')).toBe('/x');
  });

  it('drops the userinfo of an authority-form target (CONNECT)', () => {
    expect(pathOf('alice:PW@host:443')).toBe('host:443');
    expect(pathOf('host:443')).toBe('host:443');
    expect(pathOf('a:b@c:PW@host:443?x=secret')).toBe('host:443');
    expect(pathOf('*')).toBe('*');
  });

  // What RFC 3986 allows in userinfo: no `/`, `?`, `#` or `@` (those end it).
  const userinfo = fc.string().filter((x) => !/[/?#@]/.test(x));
  it('never leaves a password or query a client put in any target (property: idempotent, no `@` before the path, no `?`)', () => {
    fc.assert(
      fc.property(userinfo, userinfo, fc.constantFrom('', 'https://', 'http://', 'ws://'), fc.webPath(), (user, pw, scheme, path) => {
        const secret = `${user}:${pw}`;
        const logged = pathOf(`${scheme}${secret}@host.example${path}?q=${secret}`);
        expect(logged.includes('?')).toBe(false);
        expect(pathOf(logged)).toBe(logged);
        if (scheme !== '') expect(logged).toBe(path.split(/[?#]/)[0] || '/');
        else expect(logged.startsWith('host.example')).toBe(true);
      }),
    );
  });
});

describe('isoTime', () => {
  it("is Date's toISOString for any millisecond, across seconds, backwards too (property: the per-second cache never shows a stale second)", () => {
    fc.assert(
      fc.property(fc.array(timeArb, { minLength: 1, maxLength: 20 }), fc.integer({ min: 0, max: 3000 }), (times, step) => {
        for (const t of times) for (const u of [t, t + step, t - step, t]) if (u >= 0) expect(isoTime(u)).toBe(new Date(u).toISOString());
      }),
    );
  });
});

describe('refererOf', () => {
  it('keeps scheme, host and path; drops userinfo, query and fragment', () => {
    expect(refererOf('https://alice:PW@app.example.com/a/b?token=secret#frag')).toBe('https://app.example.com');
    expect(refererOf('https://app.example.com:8443/a')).toBe('https://app.example.com:8443');
    expect(refererOf('https://app.example.com?x=secret')).toBe('https://app.example.com');
    expect(refererOf('https://app.example.com/')).toBe('https://app.example.com');
    expect(refererOf('https://app.example.com/@user')).toBe('https://app.example.com');
    // A path can carry a secret as well as a query: an identity provider's interaction id.
    expect(refererOf('https://idp.example.com/interaction/5NeboIjHC6m5kih0I85ssZ3HBBzhvTfu5XBLSqnH84H')).toBe('https://idp.example.com');
    expect(refererOf('/relative/path?x=secret')).toBe('');
    expect(refererOf('android-app://com.example.app/')).toBe('android-app://com.example.app');
  });

  it('logs only the scheme when an `@` before the path follows a `?` or `#` (a password with `?`, or an `@` in a query)', () => {
    expect(refererOf('https://alice:p?ss@app.example.com/x')).toBe('https://');
    expect(refererOf('https://app.example.com?next=secret@evil/x')).toBe('https://');
    expect(refererOf('https://app.example.com#a@b')).toBe('https://');
  });

  const userinfo = fc.string().filter((x) => !/[/?#@]/.test(x));
  it('never leaves a password, query or fragment a client put in a referer (property)', () => {
    fc.assert(
      fc.property(fc.stringMatching(/^[A-Za-z0-9]{4,12}$/), fc.stringMatching(/^[A-Za-z0-9]{4,12}$/), fc.constantFrom('https://', 'http://', ''), fc.webPath(), fc.constantFrom('?', '#'), userinfo, (user, pw, scheme, path, sep, tail) => {
        const secretUser = `U${user}`;
        const secretPw = `P${pw}`;
        const logged = refererOf(`${scheme}${secretUser}:${secretPw}@host.example${path}${sep}q=${secretPw}${tail}`);
        expect(logged).not.toContain(secretPw);
        expect(logged).not.toContain(secretUser);
        expect(logged).not.toMatch(/[?#@]/.test(path) ? /[?#]/ : /[?#@]/);
      }),
    );
  });
});

describe('hostOf', () => {
  it('is applied to every line: a Host or :authority with userinfo is logged without it (docs/security.md S43)', () => {
    const line = JSON.parse(accessLine({ msg: 'request', requestId: 'r', method: 'GET', host: 'alice:PW@app.example.com', path: '/', status: 400, ms: 1, decision: 'bad_request', plan: 1 }, 1)) as Record<string, unknown>;
    expect(line['host']).toBe('app.example.com');
  });


  it('drops userinfo from an authority', () => {
    expect(hostOf('alice:PW@echo.example.com:7000')).toBe('echo.example.com:7000');
    expect(hostOf('app.example.com')).toBe('app.example.com');
  });
});
