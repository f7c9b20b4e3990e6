/**
 * Fuzzing the PROXY protocol reader (runtime/proxy/proxy-protocol.ts `parseProxyHeader`): the first
 * bytes of every connection when `use_proxy_protocol` is on, sent by whoever reaches the port. The
 * reader's contract is a result, never an exception: `incomplete`, `done` with a header that says
 * something true about the bytes, or `failed` with reason `invalid` or `too-large` (which
 * acceptProxyProtocol turns into a closed connection and a ProxyProtocolError). Checked here on
 * random bytes, on mutations of valid headers, and on every split of a header into two reads.
 */
import net from 'node:net';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { DEFAULT_MAX_HEADER_BYTES, parseProxyHeader, type ParseResult } from '../../runtime/proxy/proxy-protocol.ts';

const RUNS = 400;
const V2_SIGNATURE = Buffer.from([0x0d, 0x0a, 0x0d, 0x0a, 0x00, 0x0d, 0x0a, 0x51, 0x55, 0x49, 0x54, 0x0a]);
const V1_MAX = 107;

/** The reader's whole contract on one input. */
function checkContract(buf: Buffer, maxBytes: number): ParseResult {
  let r: ParseResult;
  try {
    r = parseProxyHeader(buf, maxBytes);
  } catch (e) {
    throw new Error(`parseProxyHeader threw on ${buf.toString('hex')} (max ${maxBytes}): ${(e as Error).stack}`);
  }
  switch (r.status) {
    case 'incomplete':
      // Only while the bytes can still start a header within the caps.
      expect(buf.length).toBeLessThanOrEqual(Math.max(maxBytes, V1_MAX));
      break;
    case 'failed':
      expect(['invalid', 'too-large']).toContain(r.reason);
      expect(typeof r.message).toBe('string');
      break;
    case 'done': {
      expect(r.length).toBeGreaterThan(0);
      expect(r.length).toBeLessThanOrEqual(buf.length);
      expect(r.length).toBeLessThanOrEqual(Math.max(maxBytes, V1_MAX));
      if (!r.info.local) {
        const version = r.info.family === 'IPv4' ? 4 : 6;
        expect(net.isIP(r.info.sourceAddress)).toBe(version);
        expect(net.isIP(r.info.destAddress)).toBe(version);
        for (const p of [r.info.sourcePort, r.info.destPort]) expect(Number.isInteger(p) && p >= 0 && p <= 65535).toBe(true);
      }
      break;
    }
    default:
      throw new Error(`unknown status ${JSON.stringify(r)}`);
  }
  return r;
}

/** An IPv6 address as senders print it (inet_ntop, RFC 5952): at most 39 characters, so a v1 line fits in 107 bytes. */
const ipV6 = fc.ipV6().map((a) => new URL(`http://[${a}]/`).hostname.slice(1, -1));

// Valid headers, to mutate and split.
const v1 = fc.oneof(
  fc.tuple(fc.ipV4(), fc.ipV4(), fc.nat(65535), fc.nat(65535)).map(([s, d, sp, dp]) => `PROXY TCP4 ${s} ${d} ${sp} ${dp}\r\n`),
  fc.tuple(ipV6, ipV6, fc.nat(65535), fc.nat(65535)).map(([s, d, sp, dp]) => `PROXY TCP6 ${s} ${d} ${sp} ${dp}\r\n`),
  fc.constant('PROXY UNKNOWN\r\n'),
  fc.constant('PROXY UNKNOWN ffff:f...f:ffff ffff:f...f:ffff 65535 65535\r\n'),
).map((s) => Buffer.from(s, 'latin1'));

function v2(cmd: number, fam: number, proto: number, addr: Uint8Array, tlvs: Uint8Array): Buffer {
  const body = Buffer.concat([Buffer.from(addr), Buffer.from(tlvs)]);
  const head = Buffer.alloc(4);
  head[0] = 0x20 | cmd;
  head[1] = (fam << 4) | proto;
  head.writeUInt16BE(body.length, 2);
  return Buffer.concat([V2_SIGNATURE, head, body]);
}
const v2Valid = fc.oneof(
  fc.tuple(fc.uint8Array({ minLength: 12, maxLength: 12 }), fc.uint8Array({ maxLength: 40 })).map(([a, t]) => v2(1, 1, 1, a, t)),
  fc.tuple(fc.uint8Array({ minLength: 36, maxLength: 36 }), fc.uint8Array({ maxLength: 40 })).map(([a, t]) => v2(1, 2, 1, a, t)),
  fc.uint8Array({ maxLength: 40 }).map((t) => v2(0, 0, 0, new Uint8Array(), t)),
  fc.uint8Array({ minLength: 216, maxLength: 216 }).map((a) => v2(1, 3, 1, a, new Uint8Array())),
);
const validHeader = fc.oneof(v1, v2Valid);

/** A valid header with a few bytes overwritten, inserted or cut. */
const mutated = fc
  .tuple(validHeader, fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 }), fc.constantFrom('set', 'insert', 'delete')), { minLength: 1, maxLength: 4 }))
  .map(([h, edits]) => {
    const bytes = [...h];
    for (const [pos, byte, op] of edits) {
      const i = bytes.length === 0 ? 0 : pos % bytes.length;
      if (op === 'set') bytes[i] = byte;
      else if (op === 'insert') bytes.splice(i, 0, byte);
      else bytes.splice(i, 1);
    }
    return Buffer.from(bytes);
  });

const anyInput = fc.oneof(
  fc.uint8Array({ maxLength: 300 }).map((b) => Buffer.from(b)),
  fc.uint8Array({ maxLength: 200 }).map((b) => Buffer.concat([V2_SIGNATURE, Buffer.from(b)])),
  fc.string({ unit: 'binary-ascii', maxLength: 140 }).map((s) => Buffer.from(`PROXY ${s}`, 'latin1')),
  fc.string({ maxLength: 60 }).map((s) => Buffer.from(`PROXY ${s}\r\n`, 'utf8')),
  mutated,
);
const maxBytes = fc.oneof(fc.constant(DEFAULT_MAX_HEADER_BYTES), fc.integer({ min: 0, max: 300 }));

describe('PROXY protocol reader, fuzzed', () => {
  it('returns a result within its contract on any bytes, never throws', () => {
    fc.assert(fc.property(anyInput, maxBytes, (buf, max) => void checkContract(buf, max)), { numRuns: RUNS * 3 });
  });

  it('reads valid headers back exactly, whatever follows them', () => {
    fc.assert(
      fc.property(validHeader, fc.uint8Array({ maxLength: 30 }), (h, tail) => {
        const r = checkContract(Buffer.concat([h, Buffer.from(tail)]), DEFAULT_MAX_HEADER_BYTES);
        expect(r).toMatchObject({ status: 'done', length: h.length });
      }),
      { numRuns: RUNS },
    );
  });

  it('gives v1 and v2 addresses back as sent', () => {
    fc.assert(
      fc.property(fc.ipV4(), ipV6, fc.nat(65535), (a4, a6, p) => {
        expect(checkContract(Buffer.from(`PROXY TCP4 ${a4} ${a4} ${p} ${p}\r\n`), 4096)).toMatchObject({ info: { sourceAddress: a4, sourcePort: p } });
        expect(checkContract(Buffer.from(`PROXY TCP6 ${a6} ${a6} ${p} ${p}\r\n`), 4096)).toMatchObject({ info: { sourceAddress: a6, destPort: p } });
      }),
      { numRuns: RUNS },
    );
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 36, maxLength: 36 }), (a) => {
        const r = checkContract(v2(1, 2, 1, a, new Uint8Array()), 4096);
        if (r.status !== 'done' || r.info.local) throw new Error('not read');
        // Same 16 bytes: the URL parser canonicalizes both spellings of the address alike.
        const groups = (from: number) => [0, 2, 4, 6, 8, 10, 12, 14].map((i) => Buffer.from(a).readUInt16BE(from + i).toString(16)).join(':');
        const canon = (s: string) => new URL(`http://[${s}]/`).hostname;
        expect(canon(r.info.sourceAddress)).toBe(canon(groups(0)));
        expect(canon(r.info.destAddress)).toBe(canon(groups(16)));
      }),
      { numRuns: RUNS },
    );
  });

  it('decides the same whichever way the bytes are split into reads', () => {
    fc.assert(
      fc.property(fc.oneof(validHeader, mutated), fc.uint8Array({ maxLength: 8 }), (h, tail) => {
        const full = Buffer.concat([h, Buffer.from(tail)]);
        const whole = checkContract(full, DEFAULT_MAX_HEADER_BYTES);
        for (let k = 0; k < full.length; k++) {
          const part = checkContract(full.subarray(0, k), DEFAULT_MAX_HEADER_BYTES);
          // A prefix is either "need more" or already the final answer, never another one.
          if (part.status !== 'incomplete') expect(part).toEqual(whole);
        }
      }),
      { numRuns: RUNS / 2 },
    );
  });
});
