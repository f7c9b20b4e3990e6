/** runtime/observe/log/access-line.ts writes the very bytes pino would write for the access line. */
import { Writable } from 'node:stream';
import fc from 'fast-check';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { accessLevel, accessLine, hostOf, pathOf, type AccessEntry } from '../../../../runtime/observe/log/access-line.ts';

/** What `pino({ base: { service } })[level](entry)` writes, as run-log.ts configures it. */
function pinoLine(entry: Record<string, unknown>, level: number, service = 'svc'): string {
  let out = '';
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      out += chunk.toString('utf8');
      done();
    },
  });
  // pino writes synchronously to a plain stream.
  const logger = pino({ base: { service } }, sink);
  if (level === 40) logger.warn(entry);
  else logger.info(entry);
  return out;
}

const timeOf = (line: string) => Number(/"time":(\d+)/.exec(line)![1]);
const text = fc.oneof(fc.string({ unit: 'grapheme' }), fc.string({ unit: 'binary' }));
const opt = <T>(a: fc.Arbitrary<T>) => fc.option(a, { nil: undefined });

const entryArb: fc.Arbitrary<AccessEntry> = fc
  .record({
    msg: fc.constantFrom('request' as const, 'upgrade' as const, 'tunnel' as const),
    event: opt(fc.constantFrom('open' as const, 'close' as const)),
    requestId: fc.oneof(fc.uuid(), text),
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
    user: opt(text),
    email: opt(text),
    decision: text,
    reasons: opt(fc.array(text, { maxLength: 3 })),
    plan: fc.nat(),
    cut: opt(fc.constant(true as const)),
    cutBy: opt(text),
  })
  // Absent fields are undefined (as the request path builds them) or left out: both are omitted, as
  // pino omits undefined values. No reasons are never an empty list.
  .chain((e) => fc.boolean().map((leaveOut) => (leaveOut ? (Object.fromEntries(Object.entries(e).filter(([, v]) => v !== undefined)) as unknown as AccessEntry) : e)))
  .map((e) => (e.reasons !== undefined && e.reasons.length === 0 ? { ...e, reasons: undefined } : e));

describe('accessLine', () => {
  it("equals pino's line for the same entry (its host without userinfo), level and time (property)", () => {
    fc.assert(
      fc.property(entryArb, (entry) => {
        const expected = pinoLine({ ...entry, host: hostOf(entry.host) }, accessLevel(entry));
        expect(accessLine(entry, timeOf(expected))).toBe(expected);
      }),
      { numRuns: 500 },
    );
  });

  it("equals pino's line under each service label (spec 1.9)", () => {
    fc.assert(
      fc.property(entryArb, fc.constantFrom('svc', 'svc-proxy', 'svc-authorize', 'svc-authenticate', 'svc-databroker'), (entry, service) => {
        const expected = pinoLine({ ...entry, host: hostOf(entry.host) }, accessLevel(entry), service);
        expect(accessLine(entry, timeOf(expected), service)).toBe(expected);
      }),
      { numRuns: 100 },
    );
  });

  it('is one JSON object per line', () => {
    const line = accessLine({ msg: 'request', requestId: 'r1', method: 'GE"T\n', host: 'a.example.com', path: '/x', status: 200, ms: 3, decision: 'allow', plan: 1 }, 1);
    expect(line.endsWith('}\n')).toBe(true);
    expect(line.slice(0, -1)).not.toContain('\n');
    expect(JSON.parse(line)).toEqual({ level: 30, time: 1, service: 'svc', msg: 'request', requestId: 'r1', method: 'GE"T\n', host: 'a.example.com', path: '/x', status: 200, ms: 3, decision: 'allow', plan: 1 });
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

  it('keeps only the path of an absolute-form target: no scheme, userinfo, authority or query (issue 23)', () => {
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

describe('hostOf', () => {
  it('is applied to every line: a Host or :authority with userinfo is logged without it (issue 23)', () => {
    const line = JSON.parse(accessLine({ msg: 'request', requestId: 'r', method: 'GET', host: 'alice:PW@app.example.com', path: '/', status: 400, ms: 1, decision: 'bad_request', plan: 1 }, 1)) as Record<string, unknown>;
    expect(line['host']).toBe('app.example.com');
  });


  it('drops userinfo from an authority', () => {
    expect(hostOf('alice:PW@echo.example.com:7000')).toBe('echo.example.com:7000');
    expect(hostOf('app.example.com')).toBe('app.example.com');
  });
});
