/** docs/architecture.md §3, docs/security.md S22: the AEAD session cookie opens only intact, for its name, in time. */
import { randomBytes } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  MAX_SESSION_COOKIE_CHARS,
  SessionCookieError,
  openSessionCookie,
  sealSessionCookie,
} from '../../../runtime/authn/session-cookie.ts';

const key = Buffer.alloc(32, 7);
const otherKey = Buffer.alloc(32, 8);
const NAME = '_svc';
const NOW = 1_700_000_000_000;
const payload = { handle: 'aGFuZGxlLWZvci10ZXN0cw', expiresAtMs: NOW + 60_000 };

const seal = (p = payload, k = key, n = NAME) => sealSessionCookie(p, k, n);
const open = (v: string, k = key, n = NAME, now = NOW) => openSessionCookie(v, k, n, now);
const bytesOf = (v: string) => Buffer.from(v, 'base64url');

describe('sealSessionCookie / openSessionCookie', () => {
  it('round-trips the handle and expiry', () => {
    expect(open(seal())).toEqual({ ok: true, handle: payload.handle, expiresAtMs: payload.expiresAtMs });
    const unicode = { handle: 'h\u00e9\u{1F600}"\\', expiresAtMs: NOW + 1 };
    expect(open(seal(unicode))).toEqual({ ok: true, ...unicode });
  });

  it('writes version | 12-byte nonce | ciphertext | 16-byte tag in canonical base64url', () => {
    const value = seal();
    expect(value).toMatch(/^[A-Za-z0-9_-]+$/);
    const raw = bytesOf(value);
    expect(raw[0]).toBe(1);
    const plaintextLength = Buffer.byteLength(JSON.stringify({ h: payload.handle, e: payload.expiresAtMs }));
    expect(raw.length).toBe(1 + 12 + plaintextLength + 16);
  });

  it('two seals of the same payload differ (random nonce) and both open', () => {
    const a = seal();
    const b = seal();
    expect(a).not.toBe(b);
    expect(bytesOf(a).subarray(1, 13).equals(bytesOf(b).subarray(1, 13))).toBe(false);
    expect(open(a).ok && open(b).ok).toBe(true);
  });

  it('wrong key → auth', () => {
    expect(open(seal(), otherKey)).toEqual({ ok: false, reason: 'auth' });
  });

  it('the same value under another cookie name → auth', () => {
    expect(open(seal(), key, '_svc_csrf')).toEqual({ ok: false, reason: 'auth' });
    expect(open(seal(), key, '_SVC')).toEqual({ ok: false, reason: 'auth' });
  });

  it('uses an HKDF-derived key, not cookie_secret raw', async () => {
    const { createDecipheriv } = await import('node:crypto');
    const raw = bytesOf(seal());
    const decipher = createDecipheriv('aes-256-gcm', key, raw.subarray(1, 13));
    decipher.setAAD(Buffer.concat([Buffer.of(1), Buffer.from(NAME)]));
    decipher.setAuthTag(raw.subarray(raw.length - 16));
    decipher.update(raw.subarray(13, raw.length - 16));
    expect(() => decipher.final()).toThrow();
  });

  it('a flipped bit anywhere fails (version byte → version, anything else → auth)', () => {
    const raw = bytesOf(seal());
    for (let i = 0; i < raw.length; i++) {
      for (let bit = 0; bit < 8; bit++) {
        const t = Buffer.from(raw);
        t[i] = t[i]! ^ (1 << bit);
        expect(open(t.toString('base64url')), `byte ${i} bit ${bit}`).toEqual({ ok: false, reason: i === 0 ? 'version' : 'auth' });
      }
    }
  });

  it('truncated values fail; too short to hold nonce and tag → malformed', () => {
    const raw = bytesOf(seal());
    for (let len = 0; len < raw.length; len++) {
      const r = open(raw.subarray(0, len).toString('base64url'));
      expect(r.ok, `length ${len}`).toBe(false);
      if (len < 1 + 12 + 1 + 16) expect(r, `length ${len}`).toEqual({ ok: false, reason: 'malformed' });
      else expect(r, `length ${len}`).toEqual({ ok: false, reason: 'auth' });
    }
    const value = seal();
    expect(open(value.slice(0, -1)).ok).toBe(false);
  });

  it('empty, garbage, padded and non-canonical values → malformed', () => {
    for (const v of ['', '!!!!', 'a b', 'abc=', `${seal()}=`, 'é', '\u0000', 'A', '%41%42']) {
      expect(open(v), JSON.stringify(v)).toEqual({ ok: false, reason: 'malformed' });
    }
    // Same bytes, different spelling: the last character's unused low bits set.
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
    const handle = ['a', 'aa', 'aaa'].find((h) => bytesOf(seal({ handle: h, expiresAtMs: NOW + 1 })).length % 3 !== 0)!;
    const value = seal({ handle, expiresAtMs: NOW + 1 });
    const alias = value.slice(0, -1) + alphabet[alphabet.indexOf(value.at(-1)!) + 1]!;
    expect(bytesOf(alias).equals(bytesOf(value))).toBe(true);
    expect(open(value).ok).toBe(true);
    expect(open(alias)).toEqual({ ok: false, reason: 'malformed' });
  });

  it('refuses values longer than the cap without decoding them', () => {
    expect(open('A'.repeat(MAX_SESSION_COOKIE_CHARS + 1))).toEqual({ ok: false, reason: 'malformed' });
    expect(open('A'.repeat(1_000_000))).toEqual({ ok: false, reason: 'malformed' });
  });

  it('another version byte → version', () => {
    const raw = bytesOf(seal());
    for (const v of [0, 2, 255]) {
      const t = Buffer.from(raw);
      t[0] = v;
      expect(open(t.toString('base64url'))).toEqual({ ok: false, reason: 'version' });
    }
  });

  it('expired when expiresAtMs <= now', () => {
    const value = seal();
    expect(open(value, key, NAME, payload.expiresAtMs)).toEqual({ ok: false, reason: 'expired' });
    expect(open(value, key, NAME, payload.expiresAtMs + 1)).toEqual({ ok: false, reason: 'expired' });
    expect(open(value, key, NAME, payload.expiresAtMs - 1).ok).toBe(true);
    expect(open(value, key, NAME, Number.NaN)).toEqual({ ok: false, reason: 'expired' });
  });

  it('a wrong-length key when opening → auth, never a throw', () => {
    for (const k of [Buffer.alloc(0), Buffer.alloc(16), Buffer.alloc(64)]) expect(open(seal(), k)).toEqual({ ok: false, reason: 'auth' });
  });

  it('sealing rejects caller bugs with a coded error', () => {
    const bad: Array<() => string> = [
      () => sealSessionCookie(payload, Buffer.alloc(31), NAME),
      () => sealSessionCookie({ handle: '', expiresAtMs: NOW }, key, NAME),
      () => sealSessionCookie({ handle: 'x'.repeat(1025), expiresAtMs: NOW }, key, NAME),
      () => sealSessionCookie({ handle: 'x', expiresAtMs: Number.NaN }, key, NAME),
      () => sealSessionCookie({ handle: 'x', expiresAtMs: 1.5 }, key, NAME),
    ];
    for (const f of bad) {
      expect(f).toThrow(SessionCookieError);
      expect(f).toThrow(expect.objectContaining({ code: 'SVC_ERR_SESSION_COOKIE_INPUT' }));
    }
  });

  it('a sealed cookie with the longest handle stays under the length cap', () => {
    expect(seal({ handle: '\u{1F600}'.repeat(512), expiresAtMs: NOW + 1 }).length).toBeLessThanOrEqual(MAX_SESSION_COOKIE_CHARS);
  });

  it('property: arbitrary strings never throw and never open', () => {
    fc.assert(
      fc.property(fc.oneof(fc.string({ unit: 'binary', maxLength: 300 }), fc.base64String({ maxLength: 300 }), fc.stringMatching(/^[A-Za-z0-9_-]{0,200}$/)), (s) => {
        expect(open(s).ok).toBe(false);
      }),
      { numRuns: 500 },
    );
  });

  it('property: random bytes of any length never open', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 200 }), (bytes) => {
        expect(open(Buffer.from(bytes).toString('base64url')).ok).toBe(false);
      }),
      { numRuns: 300 },
    );
  });

  it('property: any single byte changed never opens', () => {
    fc.assert(
      fc.property(
        fc.string({ minLength: 1, maxLength: 64 }),
        fc.nat({ max: 1e13 }),
        fc.nat(),
        fc.integer({ min: 1, max: 255 }),
        (handle, expiresAtMs, at, delta) => {
          const raw = bytesOf(seal({ handle, expiresAtMs: NOW + 1 + expiresAtMs }));
          const i = at % raw.length;
          raw[i] = (raw[i]! + delta) & 0xff;
          expect(open(raw.toString('base64url')).ok).toBe(false);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('property: round trip for any handle, expiry and cookie name', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', minLength: 1, maxLength: 200 }), fc.nat({ max: 1e13 }), fc.string({ unit: 'binary', maxLength: 40 }), (handle, e, name) => {
        const k = randomBytes(32);
        const p = { handle, expiresAtMs: NOW + 1 + e };
        expect(openSessionCookie(sealSessionCookie(p, k, name), k, name, NOW)).toEqual({ ok: true, ...p });
      }),
      { numRuns: 200 },
    );
  });
});
