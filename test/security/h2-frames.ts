/**
 * A raw HTTP/2 client for attack shapes the node:http2 client will not send as written: the
 * connection preface and frames are written by hand over TLS (ALPN `h2`), and the frames svc sends
 * back are read as they come. Headers are encoded as HPACK literals (RFC 7541 §6.2.2), never indexed.
 */
import { connect as tlsConnect, type TLSSocket } from 'node:tls';

export const FRAME = { HEADERS: 0x1, RST_STREAM: 0x3, SETTINGS: 0x4, GOAWAY: 0x7 } as const;
const PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'latin1');

export interface Frame {
  readonly type: number;
  readonly flags: number;
  readonly stream: number;
  readonly payload: Buffer;
}

export function frame(type: number, flags: number, stream: number, payload: Buffer = Buffer.alloc(0)): Buffer {
  const head = Buffer.alloc(9);
  head.writeUIntBE(payload.length, 0, 3);
  head[3] = type;
  head[4] = flags;
  head.writeUInt32BE(stream, 5);
  return Buffer.concat([head, payload]);
}

/** A GET request's HEADERS frame (END_HEADERS | END_STREAM). */
export function getHeaders(stream: number, authority: string, path: string): Buffer {
  const literal = (nameIndex: number, value: string) => Buffer.concat([Buffer.from([nameIndex, value.length]), Buffer.from(value, 'latin1')]);
  // :method GET (static 2), :scheme https (static 7), then :authority (name 1) and :path (name 4) as literals.
  return frame(FRAME.HEADERS, 0x5, stream, Buffer.concat([Buffer.from([0x82, 0x87]), literal(1, authority), literal(4, path)]));
}

export function rstStream(stream: number, code: number): Buffer {
  const payload = Buffer.alloc(4);
  payload.writeUInt32BE(code);
  return frame(FRAME.RST_STREAM, 0, stream, payload);
}

/** SETTINGS parameters of a SETTINGS frame's payload, by identifier. */
export function settingsOf(payload: Buffer): Map<number, number> {
  const m = new Map<number, number>();
  for (let i = 0; i + 6 <= payload.length; i += 6) m.set(payload.readUInt16BE(i), payload.readUInt32BE(i + 2));
  return m;
}

export interface RawH2 {
  readonly socket: TLSSocket;
  /** Every frame read so far. */
  readonly frames: Frame[];
  /** Resolves when the connection closes. */
  readonly closed: Promise<void>;
  /** Writes and resolves once written (false when the connection is gone). */
  write(bytes: Buffer): Promise<boolean>;
}

/** Connects over TLS with ALPN h2, sends the preface and an empty SETTINGS, and acknowledges svc's SETTINGS. */
export function rawH2(port: number, servername: string, ca: string): Promise<RawH2> {
  return new Promise((resolve, reject) => {
    const frames: Frame[] = [];
    let buf = Buffer.alloc(0);
    const socket = tlsConnect({ host: '127.0.0.1', port, servername, ca, ALPNProtocols: ['h2'] }, () => {
      socket.write(Buffer.concat([PREFACE, frame(FRAME.SETTINGS, 0, 0)]));
      resolve({
        socket,
        frames,
        closed,
        write: (bytes) => new Promise((done) => (socket.destroyed ? done(false) : socket.write(bytes, (err) => done(!err)))),
      });
    });
    const closed = new Promise<void>((r) => socket.once('close', () => r()));
    socket.on('error', reject);
    socket.on('data', (chunk: Buffer) => {
      buf = Buffer.concat([buf, chunk]);
      while (buf.length >= 9) {
        const length = buf.readUIntBE(0, 3);
        if (buf.length < 9 + length) break;
        const f: Frame = { type: buf[3]!, flags: buf[4]!, stream: buf.readUInt32BE(5) & 0x7fffffff, payload: buf.subarray(9, 9 + length) };
        buf = buf.subarray(9 + length);
        frames.push(f);
        if (f.type === FRAME.SETTINGS && (f.flags & 0x1) === 0 && !socket.destroyed) socket.write(frame(FRAME.SETTINGS, 0x1, 0));
      }
    });
  });
}
