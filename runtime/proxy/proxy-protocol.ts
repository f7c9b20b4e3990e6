/**
 * The PROXY protocol, versions 1 and 2 (haproxy.org proxy-protocol.txt), for `use_proxy_protocol`
 * (the PROXY protocol specification, haproxy.org proxy-protocol.txt §2.3: *require* the header on incoming connections). The header is read from the raw TCP
 * socket before TLS or HTTP sees a byte; the bytes after it are pushed back (`unshift`) for the
 * TLS/HTTP server the socket is then handed to.
 *
 * Hand-written: the format is small and fixed, and the work that matters here (incremental
 * reading with a deadline and a size cap, telling "need more bytes" from "invalid", strict
 * rejection, handing the socket on) is connection handling rather than parsing.
 *
 * INVARIANT (required-header): when the protocol is on, a connection without a valid header within
 * the deadline is closed; it never falls back to the TCP peer address, which would let a client
 * that bypasses the load balancer talk to svc directly.
 */
import net from 'node:net';
import tls from 'node:tls';
import { ProxyProtocolError, type ProxyProtocolFailure } from '../tls/errors.ts';

/** What a PROXY header said. `local`: a health check or the proxy's own connection; use the TCP peer. */
export type ProxyInfo =
  | {
      readonly local: false;
      readonly family: 'IPv4' | 'IPv6';
      readonly sourceAddress: string;
      readonly sourcePort: number;
      readonly destAddress: string;
      readonly destPort: number;
    }
  | { readonly local: true };

export type ParseResult =
  | { readonly status: 'incomplete' }
  | { readonly status: 'done'; readonly info: ProxyInfo; readonly length: number }
  | { readonly status: 'failed'; readonly reason: Extract<ProxyProtocolFailure, 'invalid' | 'too-large'>; readonly message: string };

const V1_PREFIX = Buffer.from('PROXY ', 'latin1');
const V2_SIGNATURE = Buffer.from([0x0d, 0x0a, 0x0d, 0x0a, 0x00, 0x0d, 0x0a, 0x51, 0x55, 0x49, 0x54, 0x0a]);
/** A v1 line is at most 107 bytes with its CRLF (proxy-protocol.txt §2.1). */
const V1_MAX = 107;
/** Default cap for a v2 header with its TLVs; the format allows up to 16 + 65535. */
export const DEFAULT_MAX_HEADER_BYTES = 4096;

const INCOMPLETE: ParseResult = { status: 'incomplete' };
const invalid = (message: string): ParseResult => ({ status: 'failed', reason: 'invalid', message });

function startsLike(buf: Buffer, prefix: Buffer): boolean {
  const n = Math.min(buf.length, prefix.length);
  return buf.subarray(0, n).equals(prefix.subarray(0, n));
}

function port(text: string): number | null {
  if (!/^(0|[1-9][0-9]{0,4})$/.test(text)) return null;
  const n = Number(text);
  return n <= 65535 ? n : null;
}

function parseV1(buf: Buffer): ParseResult {
  const end = buf.subarray(0, V1_MAX).indexOf('\r\n', 0, 'latin1');
  if (end < 0) return buf.length >= V1_MAX ? invalid(`v1 header without CRLF in its first ${V1_MAX} bytes`) : INCOMPLETE;
  const line = buf.subarray(0, end).toString('latin1');
  const parts = line.split(' ');
  const length = end + 2;
  if (parts[1] === 'UNKNOWN') return { status: 'done', info: { local: true }, length };
  if (parts.length !== 6) return invalid('v1 header does not have 6 fields');
  const [, proto, src, dst, sp, dp] = parts as [string, string, string, string, string, string];
  const check = proto === 'TCP4' ? net.isIPv4 : proto === 'TCP6' ? net.isIPv6 : null;
  if (!check) return invalid(`v1 protocol \`${proto}\` is not TCP4, TCP6 or UNKNOWN`);
  const sourcePort = port(sp);
  const destPort = port(dp);
  // A zone id (`fe80::1%eth0`) names an interface of the sender's host, meaningless here, and no
  // sender prints one; net.isIPv6 accepts it, so it is refused by hand.
  if (!check(src) || !check(dst) || src.includes('%') || dst.includes('%') || sourcePort === null || destPort === null) return invalid('v1 header has a bad address or port');
  return { status: 'done', info: { local: false, family: proto === 'TCP4' ? 'IPv4' : 'IPv6', sourceAddress: src, sourcePort, destAddress: dst, destPort }, length };
}

/** RFC 5952 text of a 16-byte IPv6 address (IPv4-mapped addresses as `::ffff:a.b.c.d`). */
function ipv6Text(b: Buffer): string {
  if (b.subarray(0, 10).every((x) => x === 0) && b[10] === 0xff && b[11] === 0xff) return `::ffff:${[...b.subarray(12, 16)].join('.')}`;
  const groups: number[] = [];
  for (let i = 0; i < 16; i += 2) groups.push(b.readUInt16BE(i));
  let bestStart = -1;
  let bestLen = 0;
  for (let i = 0; i < 8; ) {
    if (groups[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && groups[j] === 0) j++;
    if (j - i > bestLen && j - i >= 2) {
      bestStart = i;
      bestLen = j - i;
    }
    i = j;
  }
  const hex = groups.map((g) => g.toString(16));
  if (bestStart < 0) return hex.join(':');
  return `${hex.slice(0, bestStart).join(':')}::${hex.slice(bestStart + bestLen).join(':')}`;
}

function parseV2(buf: Buffer, maxBytes: number): ParseResult {
  if (buf.length < 16) return INCOMPLETE;
  const verCmd = buf[12] ?? 0;
  if (verCmd >> 4 !== 2) return invalid(`v2 version ${verCmd >> 4} is not 2`);
  const cmd = verCmd & 0x0f;
  if (cmd > 1) return invalid(`v2 command ${cmd} is neither LOCAL nor PROXY`);
  const famProto = buf[13] ?? 0;
  const len = buf.readUInt16BE(14);
  const length = 16 + len;
  if (length > maxBytes) return { status: 'failed', reason: 'too-large', message: `v2 header of ${length} bytes exceeds the limit of ${maxBytes}` };
  if (buf.length < length) return INCOMPLETE;
  if (cmd === 0) return { status: 'done', info: { local: true }, length };
  const family = famProto >> 4;
  const proto = famProto & 0x0f;
  // UNSPEC and UNIX carry no IP address: the receiver uses the real connection (proxy-protocol.txt §2.2).
  if (family === 0 || family === 3) return { status: 'done', info: { local: true }, length };
  if (proto !== 1) return invalid('v2 transport is not STREAM');
  const a = buf.subarray(16, length);
  if (family === 1) {
    if (a.length < 12) return invalid('v2 IPv4 address block is short');
    return {
      status: 'done',
      info: { local: false, family: 'IPv4', sourceAddress: [...a.subarray(0, 4)].join('.'), destAddress: [...a.subarray(4, 8)].join('.'), sourcePort: a.readUInt16BE(8), destPort: a.readUInt16BE(10) },
      length,
    };
  }
  if (family === 2) {
    if (a.length < 36) return invalid('v2 IPv6 address block is short');
    return {
      status: 'done',
      info: { local: false, family: 'IPv6', sourceAddress: ipv6Text(a.subarray(0, 16)), destAddress: ipv6Text(a.subarray(16, 32)), sourcePort: a.readUInt16BE(32), destPort: a.readUInt16BE(34) },
      length,
    };
  }
  return invalid(`v2 address family ${family} is unknown`);
}

/**
 * Parses a PROXY header at the start of `buf` (v1 or v2, told apart by the first bytes). Never
 * throws; `incomplete` means more bytes are needed, and is returned only while `buf` can still be
 * the start of a valid header within `maxBytes`.
 */
export function parseProxyHeader(buf: Buffer, maxBytes: number = DEFAULT_MAX_HEADER_BYTES): ParseResult {
  if (buf.length === 0) return INCOMPLETE;
  if (startsLike(buf, V2_SIGNATURE)) return buf.length < V2_SIGNATURE.length ? INCOMPLETE : parseV2(buf, maxBytes);
  if (startsLike(buf, V1_PREFIX)) return buf.length < V1_PREFIX.length ? INCOMPLETE : parseV1(buf);
  return invalid('the connection does not start with a PROXY protocol header');
}

export interface AcceptProxyOptions {
  /** Deadline for the whole header, from the call. */
  readonly timeoutMs: number;
  /** Largest v2 header accepted (v1 is capped at 107 bytes by its format). */
  readonly maxHeaderBytes?: number;
}

/**
 * Reads the PROXY header from a fresh socket, pushes any bytes after it back into the socket, and
 * resolves with what it said. On a missing, invalid, oversized or late header, or a connection
 * closed before one arrived, destroys the socket and rejects with `ProxyProtocolError`.
 * The socket must not have been read by anyone else.
 */
export function acceptProxyProtocol(socket: net.Socket, options: AcceptProxyOptions): Promise<ProxyInfo> {
  const maxBytes = options.maxHeaderBytes ?? DEFAULT_MAX_HEADER_BYTES;
  return new Promise<ProxyInfo>((resolve, reject) => {
    let buf: Buffer = Buffer.alloc(0);
    let settled = false;
    const cleanup = (): void => {
      settled = true;
      clearTimeout(timer);
      socket.removeListener('readable', onReadable);
      socket.removeListener('end', onEnd);
      socket.removeListener('close', onEnd);
      socket.removeListener('error', onError);
    };
    const fail = (reason: ProxyProtocolFailure, message: string, cause?: unknown): void => {
      if (settled) return;
      cleanup();
      socket.destroy();
      reject(new ProxyProtocolError(reason, message, cause === undefined ? undefined : { cause }));
    };
    const onReadable = (): void => {
      if (settled) return;
      let chunk: Buffer | null;
      while ((chunk = socket.read() as Buffer | null) !== null) buf = buf.length === 0 ? chunk : Buffer.concat([buf, chunk]);
      const r = parseProxyHeader(buf, maxBytes);
      if (r.status === 'incomplete') {
        // Unreachable with the built-in caps; kept so a future format change cannot buffer forever.
        if (buf.length > Math.max(maxBytes, V1_MAX)) fail('too-large', `no complete header in ${buf.length} bytes`);
        return;
      }
      if (r.status === 'failed') {
        fail(r.reason, r.message);
        return;
      }
      cleanup();
      const rest = buf.subarray(r.length);
      if (rest.length > 0) socket.unshift(rest);
      resolve(r.info);
    };
    const onEnd = (): void => fail('closed', 'the connection closed before a complete PROXY header');
    const onError = (e: Error): void => fail('closed', `the connection failed before a complete PROXY header: ${e.message}`, e);
    const timer = setTimeout(() => fail('timeout', `no complete PROXY header within ${options.timeoutMs} ms`), options.timeoutMs);
    socket.on('readable', onReadable);
    socket.on('end', onEnd);
    socket.on('close', onEnd);
    socket.on('error', onError);
  });
}

const INFO = new WeakMap<net.Socket, ProxyInfo>();

/** What the PROXY header of the connection said: for the raw socket or the TLS socket over it. */
export function proxyInfoOf(socket: net.Socket): ProxyInfo | undefined {
  return INFO.get(socket);
}

/**
 * Records `info` for `socket` and, unless local, makes the socket report the PROXY source as its
 * peer (`remoteAddress`, `remotePort`, `remoteFamily`), so code that reads the peer from the socket
 * (client address, `source_ip` criteria, logs) sees the client, not the load balancer.
 */
function applyInfo(socket: net.Socket, info: ProxyInfo): void {
  INFO.set(socket, info);
  if (info.local) return;
  Object.defineProperty(socket, 'remoteAddress', { value: info.sourceAddress, configurable: true });
  Object.defineProperty(socket, 'remotePort', { value: info.sourcePort, configurable: true });
  Object.defineProperty(socket, 'remoteFamily', { value: info.family, configurable: true });
}

export interface ProxyProtocolServerOptions extends AcceptProxyOptions {
  /** Called for each refused connection (already closed); for logs and metrics. */
  readonly onError?: (error: ProxyProtocolError, socket: net.Socket) => void;
}

/**
 * A TCP server that reads the PROXY header of each connection and then hands the socket to
 * `target` (an http, https, http2 or tls server that is not listening itself) with
 * `target.emit('connection', socket)`. Listen on the returned server; close both.
 *
 * For TLS targets the TLS socket is given the PROXY source as its peer too: a `secureConnection`
 * listener (put first, before the HTTP layer's) finds the header by the real TCP peer address and
 * port, which are unique among open connections.
 */
export function createProxyProtocolServer(target: net.Server, options: ProxyProtocolServerOptions): net.Server {
  const pending = new Map<string, ProxyInfo>();
  const keyOf = (s: net.Socket): string => `${s.remoteAddress ?? ''}|${s.remotePort ?? ''}`;
  if (target instanceof tls.Server) {
    target.prependListener('secureConnection', (tlsSocket: tls.TLSSocket) => {
      const key = keyOf(tlsSocket);
      const info = pending.get(key);
      if (info) applyInfo(tlsSocket, info);
    });
  }
  return net.createServer((socket) => {
    // The real peer, read before `applyInfo` shadows it.
    const key = keyOf(socket);
    acceptProxyProtocol(socket, options).then(
      (info) => {
        if (socket.destroyed) return;
        if (target instanceof tls.Server) {
          pending.set(key, info);
          socket.once('close', () => pending.delete(key));
        }
        applyInfo(socket, info);
        target.emit('connection', socket);
      },
      (e: unknown) => {
        if (e instanceof ProxyProtocolError) options.onError?.(e, socket);
      },
    );
  });
}
