/** Helpers for end-to-end tests: real upstream servers on loopback, temp config dirs. */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, request, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect as tlsConnect } from 'node:tls';
import { stringify } from 'yaml';
import { BASE_SETTINGS } from '../support/compile-text.ts';

export interface Upstream {
  readonly server: Server;
  readonly url: string;
  readonly port: number;
  close(): Promise<void>;
}

/** Starts a real HTTP server on a random loopback port. */
export async function startUpstream(handler: (req: IncomingMessage, res: ServerResponse) => void): Promise<Upstream> {
  const server = createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const port = (server.address() as { port: number }).port;
  return {
    server,
    port,
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** An upstream that answers with what it received: method, url, headers (JSON). */
export function echo(req: IncomingMessage, res: ServerResponse): void {
  res.setHeader('content-type', 'application/json');
  res.end(JSON.stringify({ method: req.method, url: req.url, headers: req.headers }));
}

/**
 * A temp directory with a config file. `write` replaces it with the test settings (plain HTTP) and
 * `routes`; `writeTls` with a TLS listener serving `server`'s certificate (written beside it);
 * `file` writes another file there and returns its path.
 */
export function configDir(): {
  readonly dir: string;
  readonly path: string;
  write(settings: Record<string, unknown>, routes: unknown[]): void;
  writeTls(server: { readonly certPem: string; readonly keyPem: string }, settings: Record<string, unknown>, routes: unknown[]): void;
  writeRaw(text: string): void;
  file(name: string, text: string): string;
  remove(): void;
} {
  const dir = mkdtempSync(join(tmpdir(), 'svc-e2e-'));
  const path = join(dir, 'config.yaml');
  const file = (name: string, text: string) => {
    writeFileSync(join(dir, name), text);
    return join(dir, name);
  };
  return {
    dir,
    path,
    write: (settings, routes) => writeFileSync(path, stringify({ ...BASE_SETTINGS, ...settings, routes })),
    writeTls: (server, settings, routes) => {
      const { insecure_server: _insecure, ...base } = BASE_SETTINGS;
      writeFileSync(path, stringify({ ...base, address: '127.0.0.1:8443', certificate_file: file('server.pem', server.certPem), certificate_key_file: file('server.key', server.keyPem), ...settings, routes }));
    },
    writeRaw: (text) => writeFileSync(path, text),
    file,
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}

/**
 * GET `path` from svc at `address:port` with a `Host` and a `Cookie` (a browser's page request, over
 * a new connection); resolves with the status, body and headers, rejects after 10 s without an answer.
 */
export function getAt(address: string, port: number, host: string, cookie: string, path = '/'): Promise<{ status: number; body: string; headers: import('node:http').IncomingHttpHeaders }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: address, port, path, agent: false, headers: { host, cookie, accept: 'text/html' } }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body, headers: res.headers }));
    });
    req.setTimeout(10_000, () => req.destroy(new Error('no answer in 10 s')));
    req.on('error', reject);
    req.end();
  });
}

/** Waits until `check` holds (polled every 50 ms); throws naming `what` after `timeoutMs`. */
export async function until(what: string, check: () => boolean | Promise<boolean>, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * Writes `head` on a TLS connection to svc (SNI `app.example.com`, HTTP/1.1, any certificate), then
 * `then` once svc answered 200 (a tunnel or an upgrade), ending the connection once `then` came
 * back; resolves with all svc answered when the connection closes.
 */
export function tlsExchange(port: number, head: string, then?: string): Promise<string> {
  return new Promise<string>((resolve, reject) => {
    let text = '';
    const s = tlsConnect({ host: '127.0.0.1', port, servername: 'app.example.com', rejectUnauthorized: false, ALPNProtocols: ['http/1.1'] }, () => s.write(head));
    s.setEncoding('utf8');
    s.on('data', (c: string) => {
      const first = text === '';
      text += c;
      if (first && then !== undefined && text.startsWith('HTTP/1.1 200')) s.write(then);
      else if (then !== undefined && text.includes(then)) s.end();
    });
    s.on('end', () => s.end());
    s.on('close', () => resolve(text));
    s.on('error', reject);
  });
}
