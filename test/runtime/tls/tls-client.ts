/** Loopback TLS servers and clients for listener tests. */
import type { X509Certificate } from 'node:crypto';
import type net from 'node:net';
import tls from 'node:tls';

/** Listens on 127.0.0.1 with an ephemeral port; resolves with the port. */
export function listen(server: net.Server): Promise<number> {
  return new Promise((resolve) => {
    server.listen(0, '127.0.0.1', () => resolve((server.address() as net.AddressInfo).port));
  });
}

export function closeServer(server: net.Server | undefined): Promise<void> {
  if (!server?.listening) return Promise.resolve();
  return new Promise((resolve) => server.close(() => resolve()));
}

export interface Handshake {
  readonly cert: X509Certificate;
  readonly alpn: string | false;
  /** The first line the server wrote, if it wrote one before closing. */
  readonly line: string;
}

/**
 * Connects with TLS (no verification: the tests inspect the certificate themselves), waits for
 * the server's first line or its close, and resolves with what was seen.
 */
export function handshake(port: number, options: tls.ConnectionOptions = {}): Promise<Handshake> {
  return new Promise((resolve, reject) => {
    const s = tls.connect({ host: '127.0.0.1', port, rejectUnauthorized: false, ...options });
    let cert: X509Certificate | undefined;
    let line = '';
    s.on('secureConnect', () => {
      cert = s.getPeerX509Certificate();
    });
    s.on('data', (d: Buffer) => {
      line += d.toString();
      if (line.includes('\n')) s.end();
    });
    s.on('error', reject);
    s.on('close', () => {
      if (!cert) reject(new Error('no certificate'));
      else resolve({ cert, alpn: s.alpnProtocol ?? false, line: line.trim() });
    });
  });
}
