/**
 * The door (runtime/proxy/door.ts), the gate's first step: 505, 431 past `MAX_HEADER_FIELDS`, the
 * canonical request once, 421 for a host the connection's certificate does not cover; in that
 * order, the same for every kind of entry. The gate's answers as a whole are compared with the
 * reference in test/differential/gate.test.ts and test/decide/cases/gate.case.ts.
 */
import type { Socket } from 'node:net';
import type { TLSSocket } from 'node:tls';
import { describe, expect, it } from 'vitest';
import type { RequestHeaders } from '../../../runtime/core/types.ts';
import type { ServedGeneration } from '../../../runtime/generation/generation.ts';
import { buildIndex } from '../../../runtime/plan/index.ts';
import { door, hostOf, MAX_HEADER_FIELDS, refused, type DoorEntry, type Passed } from '../../../runtime/proxy/door.ts';
import { MAX_HEADER_FIELDS as FROM_GATE } from '../../../runtime/proxy/gate.ts';
import type { ListenerTls } from '../../../runtime/tls/material.ts';
import { compileBody, configText } from '../../reference/support.ts';

const body = compileBody(configText([{ from: 'https://app.example.com', to: 'http://app', allow_public_unauthenticated_access: true }]));
const index = buildIndex(body);

/** A generation with only what the door reads: the index, and the listener's TLS (covering `covers`). */
function gen(covers: readonly string[] | null): ServedGeneration {
  const tls = covers === null ? null : ({ servesHost: (_s: TLSSocket, host: string) => covers.includes(host) } as unknown as ListenerTls);
  return { index, tls } as unknown as ServedGeneration;
}

const socket = { remoteAddress: '203.0.113.9' } as unknown as Socket;
/** The door's answer to an entry that must pass. */
function passes(d: ReturnType<typeof door>): Passed {
  if (refused(d)) throw new Error(`refused: ${d.status}`);
  return d;
}

const entry = (over: Partial<DoorEntry> = {}): DoorEntry => ({ kind: 'request', target: '/x', headers: { host: ['app.example.com'] }, httpVersion: '1.1', socket, ...over });

/** `n` header fields besides Host (one value each), and as many HTTP/2 pseudo-headers. */
function headers(n: number): RequestHeaders {
  const h: Record<string, string[]> = { host: ['app.example.com'] };
  for (let i = 0; i < n - 1; i++) h[`x-h${i}`] = ['v'];
  for (let i = 0; i < n; i++) h[`:p${i}`] = ['v'];
  return h;
}

describe('the door', () => {
  it('refuses HTTP/1.0 with 505 before anything else is read', () => {
    for (const kind of ['request', 'upgrade', 'connect'] as const) {
      expect(door(gen(['other.example.net']), entry({ kind, httpVersion: '1.0', headers: headers(MAX_HEADER_FIELDS + 1) }), 'https')).toEqual({ admitted: false, status: 505, problem: 'http-1.0-unsupported' });
    }
  });

  it('refuses more than MAX_HEADER_FIELDS fields with 431 (each value counted, pseudo-headers not)', () => {
    expect(MAX_HEADER_FIELDS).toBe(1000);
    expect(FROM_GATE).toBe(MAX_HEADER_FIELDS);
    expect(refused(door(gen(null), entry({ headers: headers(MAX_HEADER_FIELDS) }), 'http'))).toBe(false);
    expect(door(gen(null), entry({ headers: headers(MAX_HEADER_FIELDS + 1) }), 'http')).toEqual({ admitted: false, status: 431, problem: 'too-many-headers' });
    const repeated = { host: ['app.example.com'], 'x-many': Array.from({ length: MAX_HEADER_FIELDS }, () => 'v') };
    expect(door(gen(null), entry({ headers: repeated }), 'http')).toMatchObject({ status: 431 });
    // Before the 421: a refused count is answered whatever the certificate covers.
    expect(door(gen(['other.example.net']), entry({ headers: headers(MAX_HEADER_FIELDS + 1) }), 'https')).toMatchObject({ status: 431 });
  });

  it('takes the raw pair count only as a bound: at or under the limit it passes, past it the fields are counted', () => {
    // Raw pairs include HTTP/2 pseudo-headers (headers(n) has n of each): more raw pairs than the
    // limit is not a refusal by itself.
    expect(refused(door(gen(null), entry({ headers: headers(MAX_HEADER_FIELDS), rawFields: 2 * MAX_HEADER_FIELDS }), 'http'))).toBe(false);
    expect(door(gen(null), entry({ headers: headers(MAX_HEADER_FIELDS + 1), rawFields: 2 * (MAX_HEADER_FIELDS + 1) }), 'http')).toMatchObject({ status: 431 });
    expect(refused(door(gen(null), entry({ headers: headers(3), rawFields: 6 }), 'http'))).toBe(false);
  });

  it('canonicalizes a request once: the canonical request is what passes', () => {
    const passed = passes(door(gen(null), entry({ target: '/a/../b//c', headers: { host: ['APP.example.com:443'] } }), 'https'));
    expect(passed).toMatchObject({ ok: true, request: { host: 'app.example.com', path: '/b/c' } });
    expect(hostOf(passed)).toBe('app.example.com');
    // A target the canonical request refuses passes the door: the decision core answers its 400.
    const bad = passes(door(gen(null), entry({ target: '/a%2fb' }), 'https'));
    expect(bad).toMatchObject({ ok: false, decision: { status: 400, problem: 'target-forbidden-escape' } });
    expect(hostOf(bad)).toBe('');
  });

  it('passes a CONNECT as its canonical authority ("" when the target is not host:port)', () => {
    expect(door(gen(null), entry({ kind: 'connect', target: 'DB.example.com:05432', headers: {} }), 'https')).toBe('db.example.com:5432');
    expect(door(gen(null), entry({ kind: 'connect', target: '/not-an-authority', headers: {} }), 'https')).toBe('');
  });

  it('refuses with 421 a host the connection’s certificate does not cover, for every kind', () => {
    const covers = gen(['app.example.com', 'db.example.com:5432']);
    expect(refused(door(covers, entry(), 'https'))).toBe(false);
    expect(door(covers, entry({ headers: { host: ['other.example.com'] } }), 'https')).toEqual({ admitted: false, status: 421, problem: 'misdirected-request' });
    expect(door(covers, entry({ kind: 'upgrade', headers: { host: ['other.example.com'] } }), 'https')).toMatchObject({ status: 421 });
    expect(door(covers, entry({ kind: 'connect', target: 'db.example.com:5432', headers: {} }), 'https')).toBe('db.example.com:5432');
    expect(door(covers, entry({ kind: 'connect', target: 'other.example.com:5432', headers: {} }), 'https')).toMatchObject({ status: 421 });
    // No host to check (a refused target): the decision core's 400, never a 421.
    expect(refused(door(covers, entry({ target: '/a%2fb', headers: { host: ['other.example.com'] } }), 'https'))).toBe(false);
    // A plain-HTTP listener has no certificate to cover anything.
    expect(refused(door(gen(null), entry({ headers: { host: ['other.example.com'] } }), 'http'))).toBe(false);
  });
});
