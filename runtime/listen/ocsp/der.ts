/**
 * The little DER (X.690) that OCSP needs (RFC 6960): reading a TLV tree out of a certificate or a
 * response, and writing the SEQUENCE / OCTET STRING / INTEGER / OID of a request. Definite
 * lengths only (DER has no others); anything malformed throws `DerError`, never reads past the
 * input.
 */

export class DerError extends Error {
  constructor(message: string) {
    super(`DER: ${message}`);
    this.name = 'DerError';
  }
}

/** One TLV: its tag byte, its content, and its whole encoding (tag, length and content). */
export interface Tlv {
  readonly tag: number;
  readonly content: Buffer;
  readonly encoded: Buffer;
}

export const TAG = {
  INTEGER: 0x02,
  BIT_STRING: 0x03,
  OCTET_STRING: 0x04,
  NULL: 0x05,
  OID: 0x06,
  ENUMERATED: 0x0a,
  GENERALIZED_TIME: 0x18,
  SEQUENCE: 0x30,
} as const;

/** Context-specific tag `n`, constructed (`[n] EXPLICIT`, or an IMPLICIT constructed type). */
export const ctx = (n: number): number => 0xa0 | n;
/** Context-specific tag `n`, primitive (an IMPLICIT primitive type). */
export const ctxPrimitive = (n: number): number => 0x80 | n;

/** The TLV at `offset` of `buf`, and where the next one starts. Single-byte tags only (all OCSP uses). */
export function readTlv(buf: Buffer, offset = 0): { tlv: Tlv; next: number } {
  if (offset + 2 > buf.length) throw new DerError('truncated header');
  const tag = buf[offset]!;
  if ((tag & 0x1f) === 0x1f) throw new DerError('multi-byte tag');
  let len = buf[offset + 1]!;
  let head = 2;
  if (len & 0x80) {
    const n = len & 0x7f;
    if (n === 0 || n > 4) throw new DerError('unsupported length');
    if (offset + 2 + n > buf.length) throw new DerError('truncated length');
    len = 0;
    for (let i = 0; i < n; i++) len = len * 256 + buf[offset + 2 + i]!;
    head += n;
  }
  const end = offset + head + len;
  if (end > buf.length) throw new DerError('content past the end');
  return { tlv: { tag, content: buf.subarray(offset + head, end), encoded: buf.subarray(offset, end) }, next: end };
}

/** The one TLV `buf` holds (nothing after it). */
export function parseDer(buf: Buffer): Tlv {
  const { tlv, next } = readTlv(buf);
  if (next !== buf.length) throw new DerError('trailing bytes');
  return tlv;
}

/** The TLVs inside a constructed TLV (SEQUENCE, SET, explicit tag). */
export function children(t: Tlv): Tlv[] {
  const out: Tlv[] = [];
  for (let at = 0; at < t.content.length; ) {
    const { tlv, next } = readTlv(t.content, at);
    out.push(tlv);
    at = next;
  }
  return out;
}

/** `t`, checked to carry `tag`. */
export function expectTag(t: Tlv | undefined, tag: number, what: string): Tlv {
  if (!t || t.tag !== tag) throw new DerError(`${what}: expected tag 0x${tag.toString(16)}, got ${t ? `0x${t.tag.toString(16)}` : 'nothing'}`);
  return t;
}

/** Dotted form of an OBJECT IDENTIFIER's content. */
export function oidText(content: Buffer): string {
  if (content.length === 0) throw new DerError('empty OID');
  const parts: number[] = [];
  let v = 0;
  for (const b of content) {
    v = v * 128 + (b & 0x7f);
    if (!(b & 0x80)) {
      parts.push(v);
      v = 0;
    }
  }
  const first = parts.shift()!;
  const a = first < 80 ? Math.floor(first / 40) : 2;
  return [a, first - a * 40, ...parts].join('.');
}

/** The time of a GeneralizedTime (`YYYYMMDDHHMMSS[.fff]Z`), in ms. */
export function generalizedTime(t: Tlv): number {
  expectTag(t, TAG.GENERALIZED_TIME, 'GeneralizedTime');
  const m = /^(\d{4})(\d{2})(\d{2})(\d{2})(\d{2})(\d{2})(?:\.(\d+))?Z$/.exec(t.content.toString('latin1'));
  if (!m) throw new DerError('GeneralizedTime not in UTC');
  const ms = m[7] ? Math.round(Number(`0.${m[7]}`) * 1000) : 0;
  return Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3]), Number(m[4]), Number(m[5]), Number(m[6]), ms);
}

/** Encodes a TLV. */
export function encode(tag: number, ...content: Buffer[]): Buffer {
  const body = Buffer.concat(content);
  const n = body.length;
  let len: Buffer;
  if (n < 0x80) len = Buffer.from([n]);
  else {
    const bytes: number[] = [];
    for (let v = n; v > 0; v = Math.floor(v / 256)) bytes.unshift(v & 0xff);
    len = Buffer.from([0x80 | bytes.length, ...bytes]);
  }
  return Buffer.concat([Buffer.from([tag]), len, body]);
}

/** The content of an OBJECT IDENTIFIER from its dotted form. */
export function oidContent(dotted: string): Buffer {
  const [a, b, ...rest] = dotted.split('.').map(Number);
  const out: number[] = [];
  for (const v of [a! * 40 + b!, ...rest]) {
    const bytes = [v & 0x7f];
    for (let x = Math.floor(v / 128); x > 0; x = Math.floor(x / 128)) bytes.unshift(0x80 | (x & 0x7f));
    out.push(...bytes);
  }
  return Buffer.from(out);
}
