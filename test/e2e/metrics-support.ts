/** Helpers for the metrics tests: free ports, requests with a Host header, scrapes, series. */
import { request, type IncomingHttpHeaders } from 'node:http';
import { request as httpsRequest, type RequestOptions } from 'node:https';

/** Ports for metrics_address, which takes no port 0 (test/support/ports.ts: safe beside parallel files). */
export { freePort } from '../support/ports.ts';

/** `GET path` on svc's listener with a Host header; resolves with the status. */
export function hit(port: number, host: string, path = '/', method = 'GET'): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, method, agent: false, headers: { host } }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.setTimeout(5000, () => req.destroy(new Error('no answer in 5 s')));
    req.on('error', reject);
    req.end();
  });
}

export interface Answer {
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  readonly body: string;
}

/** `GET path` on the metrics listener (HTTPS when `tls` is given), optionally with a Basic credential `user:pass`. */
export function scrape(port: number, options: { readonly credential?: string; readonly authorization?: string; readonly path?: string; readonly tls?: RequestOptions } = {}): Promise<Answer> {
  const headers: Record<string, string> = {};
  if (options.credential !== undefined) headers['authorization'] = `Basic ${Buffer.from(options.credential).toString('base64')}`;
  if (options.authorization !== undefined) headers['authorization'] = options.authorization;
  return new Promise((resolve, reject) => {
    const o = { host: '127.0.0.1', port, path: options.path ?? '/metrics', agent: false as const, headers };
    const req = options.tls ? httpsRequest({ ...o, ...options.tls }) : request(o);
    req.on('response', (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
    });
    req.setTimeout(10_000, () => req.destroy(new Error('no answer in 10 s')));
    req.on('error', reject);
    req.end();
  });
}

/** The sample lines of metric `name` (exactly that name, any labels) in an exposition. */
export function series(exposition: string, name: string): string[] {
  return exposition.split('\n').filter((l) => l.startsWith(`${name}{`) || l.startsWith(`${name} `));
}

/** The value of the one sample of `name` whose labels include every `labels` pair; undefined when none. */
export function sample(exposition: string, name: string, labels: Record<string, string> = {}): number | undefined {
  const line = series(exposition, name).find((l) => Object.entries(labels).every(([k, v]) => l.includes(`${k}="${v}"`)));
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(' ') + 1));
}
