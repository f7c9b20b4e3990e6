/** docs/security.md S05: internal redirect/state parameters are HMAC-signed with an expiry. */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { SignedParamsError, signParams, verifyParams } from '../../../runtime/authn/signed-params.ts';

const key = Buffer.alloc(32, 1);
const otherKey = Buffer.alloc(32, 2);
const NOW = 1_700_000_000_000;
const EXP = NOW + 300_000;
const params = { svc_redirect_uri: 'https://app.example.com/x?y=1&z=2', svc_state: 'abc', 'a b': 'é&=%' };

const sign = (p: Record<string, string> = params, k = key, e = EXP) => signParams(p, k, e);
const verify = (q: URLSearchParams | string, k = key, now = NOW) => verifyParams(typeof q === 'string' ? new URLSearchParams(q) : q, k, now);
/** Through the wire: what a browser sends back. */
const wire = (q: URLSearchParams) => new URLSearchParams(q.toString());

describe('signParams / verifyParams', () => {
  it('round-trips through a query string', () => {
    const q = sign();
    expect(q.get('svc_expiry')).toBe(String(EXP));
    expect(q.get('svc_signature')).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(verify(wire(q))).toEqual({ ok: true, params });
    expect(verify(sign({}))).toEqual({ ok: true, params: {} });
  });

  it('parameter order on the wire does not matter', () => {
    const entries = [...sign().entries()].reverse();
    expect(verify(new URLSearchParams(entries))).toEqual({ ok: true, params });
  });

  it('a tampered value → signature', () => {
    const q = wire(sign());
    q.set('svc_redirect_uri', 'https://evil.example/');
    expect(verify(q)).toEqual({ ok: false, reason: 'signature' });
  });

  it('an added unsigned parameter → signature', () => {
    const q = wire(sign());
    q.append('extra', '1');
    expect(verify(q)).toEqual({ ok: false, reason: 'signature' });
    const empty = wire(sign());
    empty.append('', '');
    expect(verify(empty)).toEqual({ ok: false, reason: 'signature' });
  });

  it('a removed parameter → signature', () => {
    const q = wire(sign());
    q.delete('svc_state');
    expect(verify(q)).toEqual({ ok: false, reason: 'signature' });
  });

  it('a value moved between names or split differently → signature', () => {
    const q = sign({ ab: 'c' });
    const moved = new URLSearchParams({ a: 'bc', svc_expiry: q.get('svc_expiry')!, svc_signature: q.get('svc_signature')! });
    expect(verify(moved)).toEqual({ ok: false, reason: 'signature' });
  });

  it('a duplicated parameter → duplicate, even with an identical value', () => {
    for (const name of ['svc_state', 'svc_expiry', 'svc_signature']) {
      const q = wire(sign());
      q.append(name, q.get(name)!);
      expect(verify(q), name).toEqual({ ok: false, reason: 'duplicate' });
    }
  });

  it('no expiry or no signature → missing', () => {
    for (const name of ['svc_expiry', 'svc_signature']) {
      const q = wire(sign());
      q.delete(name);
      expect(verify(q), name).toEqual({ ok: false, reason: 'missing' });
    }
    expect(verify('')).toEqual({ ok: false, reason: 'missing' });
  });

  it('expired when svc_expiry <= now', () => {
    const q = sign();
    expect(verify(q, key, EXP)).toEqual({ ok: false, reason: 'expired' });
    expect(verify(q, key, EXP + 1)).toEqual({ ok: false, reason: 'expired' });
    expect(verify(q, key, EXP - 1).ok).toBe(true);
    expect(verify(q, key, Number.NaN)).toEqual({ ok: false, reason: 'expired' });
  });

  it('a changed expiry (later, or a non-canonical spelling of the same) → signature', () => {
    for (const e of [String(EXP + 1), `0${EXP}`, `${EXP}.0`, ` ${EXP}`, '9'.repeat(20)]) {
      const q = wire(sign());
      q.set('svc_expiry', e);
      expect(verify(q), e).toEqual({ ok: false, reason: 'signature' });
    }
  });

  it('wrong key, or a key too short to verify with → signature', () => {
    expect(verify(sign(), otherKey)).toEqual({ ok: false, reason: 'signature' });
    expect(verify(sign(), Buffer.alloc(0))).toEqual({ ok: false, reason: 'signature' });
  });

  it('a malformed signature → signature, never a throw', () => {
    const sig = sign().get('svc_signature')!;
    for (const s of ['', 'x', sig.slice(0, -1), `${sig}A`, `${sig}=`, sig.replace(/.$/, '+'), '%%%', 'A'.repeat(10_000)]) {
      const q = wire(sign());
      q.set('svc_signature', s);
      expect(verify(q), s).toEqual({ ok: false, reason: 'signature' });
    }
  });

  it('returned params are a prototype-less record, so odd names stay plain data', () => {
    const odd: Record<string, string> = { constructor: 'y' };
    Object.defineProperty(odd, '__proto__', { value: 'x', enumerable: true });
    const r = verify(wire(sign(odd)));
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(Object.getPrototypeOf(r.params)).toBe(null);
    expect(Object.entries(r.params).sort()).toEqual([['__proto__', 'x'], ['constructor', 'y']]);
  });

  it('signing rejects caller bugs with a coded error', () => {
    const bad: Array<() => URLSearchParams> = [
      () => signParams(params, Buffer.alloc(16), EXP),
      () => signParams({ svc_signature: 'x' }, key, EXP),
      () => signParams({ svc_expiry: '1' }, key, EXP),
      () => signParams(params, key, 1.5),
      () => signParams(params, key, -1),
      () => signParams(params, key, Number.POSITIVE_INFINITY),
    ];
    for (const f of bad) {
      expect(f).toThrow(SignedParamsError);
      expect(f).toThrow(expect.objectContaining({ code: 'SVC_ERR_SIGNED_PARAMS_INPUT' }));
    }
  });

  const paramsArb = fc.dictionary(
    fc.string({ unit: 'grapheme', maxLength: 12 }).filter((n) => n !== 'svc_expiry' && n !== 'svc_signature' && n !== '__proto__'),
    fc.string({ unit: 'grapheme', maxLength: 24 }),
    { maxKeys: 6 },
  );

  it('property: any parameters round-trip through the wire', () => {
    fc.assert(
      fc.property(paramsArb, (p) => {
        expect(verify(wire(sign(p)))).toEqual({ ok: true, params: p });
      }),
      { numRuns: 300 },
    );
  });

  it('property: random tampering never verifies', () => {
    type Tamper =
      | { kind: 'set'; at: number; value: string }
      | { kind: 'rename'; at: number; name: string }
      | { kind: 'drop'; at: number }
      | { kind: 'add'; name: string; value: string }
      | { kind: 'char'; at: number; pos: number; ch: string };
    const tamperArb: fc.Arbitrary<Tamper> = fc.oneof(
      fc.record({ kind: fc.constant('set' as const), at: fc.nat(), value: fc.string({ maxLength: 20 }) }),
      fc.record({ kind: fc.constant('rename' as const), at: fc.nat(), name: fc.string({ maxLength: 12 }) }),
      fc.record({ kind: fc.constant('drop' as const), at: fc.nat() }),
      fc.record({ kind: fc.constant('add' as const), name: fc.string({ maxLength: 12 }), value: fc.string({ maxLength: 12 }) }),
      fc.record({ kind: fc.constant('char' as const), at: fc.nat(), pos: fc.nat(), ch: fc.string({ minLength: 1, maxLength: 1 }) }),
    );
    fc.assert(
      fc.property(paramsArb, tamperArb, (p, t) => {
        const original = [...sign(p).entries()];
        const entries = original.map(([n, v]) => [n, v] as [string, string]);
        const i = 'at' in t ? t.at % entries.length : 0;
        const target = entries[i]!;
        if (t.kind === 'set') target[1] = t.value;
        else if (t.kind === 'rename') target[0] = t.name;
        else if (t.kind === 'drop') entries.splice(i, 1);
        else if (t.kind === 'add') entries.push([t.name, t.value]);
        else {
          const v = target[1];
          const pos = v.length === 0 ? 0 : t.pos % v.length;
          target[1] = v.slice(0, pos) + t.ch + v.slice(pos + 1);
        }
        const unchanged = entries.length === original.length && entries.every(([n, v], j) => n === original[j]![0] && v === original[j]![1]);
        fc.pre(!unchanged);
        expect(verify(new URLSearchParams(entries)).ok).toBe(false);
      }),
      { numRuns: 1000 },
    );
  });

  it('property: arbitrary query strings never throw and never verify', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 200 }), (s) => {
        expect(verify(s).ok).toBe(false);
      }),
      { numRuns: 500 },
    );
  });
});
