/**
 * A small cookie-keeping HTTP client for end-to-end tests without a real browser.
 *
 * Every connection goes to 127.0.0.1 on the port `route` maps the URL's host to, with the URL's host in the
 * Host header, so tests can use names like `app.example.com` against servers listening on loopback.
 * Cookies are kept per host name (ports ignored, as browsers do).
 */
import * as http from 'node:http';
import * as https from 'node:https';

import { DEV_PASSWORD } from '../../demo/dev-idp.ts';

export interface Hop {
  readonly url: string;
  readonly status: number;
  readonly headers: Record<string, string | string[] | undefined>;
  readonly body: string;
}

export interface BrowserRequestInit {
  readonly method?: string;
  readonly headers?: Record<string, string>;
  readonly body?: string;
}

/** Where a URL's host is served: a loopback port, and the loopback address (default 127.0.0.1). */
export type Route = (url: URL) => { readonly port: number; readonly tls?: boolean; readonly address?: string } | undefined;

interface StoredCookie {
  readonly name: string;
  readonly value: string;
  /** Lower-case host (host-only cookie) or domain (Domain attribute, also sent to subdomains). */
  readonly domain: string;
  readonly hostOnly: boolean;
  readonly path: string;
  /** Epoch milliseconds; undefined: session cookie. */
  readonly expiresAt: number | undefined;
  readonly order: number;
}

const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);
const REQUEST_TIMEOUT_MS = 15_000;

function domainMatches(host: string, domain: string): boolean {
  return host === domain || host.endsWith(`.${domain}`);
}

function pathMatches(requestPath: string, cookiePath: string): boolean {
  if (requestPath === cookiePath) return true;
  if (!requestPath.startsWith(cookiePath)) return false;
  return cookiePath.endsWith('/') || requestPath.charAt(cookiePath.length) === '/';
}

/** RFC 6265 default-path: the directory of the request path. */
function defaultPath(requestPath: string): string {
  if (!requestPath.startsWith('/')) return '/';
  const slash = requestPath.lastIndexOf('/');
  return slash <= 0 ? '/' : requestPath.slice(0, slash);
}

function hostKey(host: string): string {
  // Accept "name", "name:port", "[::1]:port" or a URL host; cookies ignore the port.
  const trimmed = host.trim().toLowerCase();
  if (trimmed.includes('://')) return new URL(trimmed).hostname;
  try {
    return new URL(`http://${trimmed}`).hostname;
  } catch {
    return trimmed;
  }
}

function decodeAttribute(text: string): { readonly name: string; readonly value: string } {
  const eq = text.indexOf('=');
  if (eq === -1) return { name: text.trim().toLowerCase(), value: '' };
  return { name: text.slice(0, eq).trim().toLowerCase(), value: text.slice(eq + 1).trim() };
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

function decodeHtml(text: string): string {
  return text
    .replace(/&quot;/g, '"')
    .replace(/&#39;|&#x27;/g, "'")
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&amp;/g, '&');
}

function attribute(tag: string, name: string): string | undefined {
  const match = new RegExp(`\\s${escapeRegExp(name)}\\s*=\\s*(?:"([^"]*)"|'([^']*)'|([^\\s>]+))`, 'i').exec(tag);
  if (match === null) return undefined;
  return decodeHtml(match[1] ?? match[2] ?? match[3] ?? '');
}

export interface ParsedForm {
  readonly action: string;
  readonly method: string;
  /** Named inputs with a value (hidden fields, prefilled fields), plus the first named submit button. */
  readonly fields: Record<string, string>;
}

/** Parses the first `<form>` (or the one whose `action` contains `actionContains`) of an HTML page. */
export function parseForm(html: string, baseUrl: string, actionContains?: string): ParsedForm | undefined {
  const forms = [...html.matchAll(/<form\b[^>]*>[\s\S]*?<\/form>/gi)];
  for (const [form] of forms) {
    const open = /<form\b[^>]*>/i.exec(form)?.[0] ?? '';
    const action = attribute(open, 'action') ?? baseUrl;
    if (actionContains !== undefined && !action.includes(actionContains)) continue;
    const fields: Record<string, string> = {};
    let submitSeen = false;
    for (const [tag] of form.matchAll(/<(?:input|button)\b[^>]*>/gi)) {
      const name = attribute(tag, 'name');
      if (name === undefined) continue;
      const type = (attribute(tag, 'type') ?? (tag.toLowerCase().startsWith('<button') ? 'submit' : 'text')).toLowerCase();
      if (type === 'submit') {
        if (submitSeen) continue;
        submitSeen = true;
      }
      if ((type === 'checkbox' || type === 'radio') && !/\schecked\b/i.test(tag)) continue;
      fields[name] = attribute(tag, 'value') ?? '';
    }
    return {
      action: new URL(action, baseUrl).href,
      method: (attribute(open, 'method') ?? 'get').toUpperCase(),
      fields,
    };
  }
  return undefined;
}

export class HttpBrowser {
  readonly #route: Route;
  readonly #cookies = new Map<string, StoredCookie>();
  #order = 0;

  /** `route(url)`: the loopback port to connect to for that URL's host (undefined: refuse, throw). Every connection goes to 127.0.0.1 with the URL's host as Host header; https URLs are also sent as plain HTTP to the mapped port unless `tls: true` for that host is returned. */
  constructor(route: Route) {
    this.#route = route;
  }

  /** One request, no redirect following; stores Set-Cookie per host. */
  async request(url: string, init: BrowserRequestInit = {}): Promise<Hop> {
    const target = new URL(url);
    const route = this.#route(target);
    if (route === undefined) {
      throw new Error(`HttpBrowser: no route for ${target.host} (${url})`);
    }
    const method = (init.method ?? 'GET').toUpperCase();
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(init.headers ?? {})) {
      headers[name.toLowerCase()] = value;
    }
    headers['host'] ??= target.host;
    headers['user-agent'] ??= 'svc-test-http-browser';
    // Like a browser navigating: it asks for HTML (svc answers such requests with a sign-in redirect).
    headers['accept'] ??= 'text/html,application/xhtml+xml,*/*;q=0.8';
    const cookie = this.#cookieHeader(target);
    if (cookie !== '' && headers['cookie'] === undefined) {
      headers['cookie'] = cookie;
    }
    let body: Buffer | undefined;
    if (init.body !== undefined) {
      body = Buffer.from(init.body, 'utf8');
      headers['content-type'] ??= 'application/x-www-form-urlencoded';
      headers['content-length'] = String(body.length);
    } else if (method === 'POST' || method === 'PUT' || method === 'PATCH') {
      headers['content-length'] = '0';
    }

    const options: https.RequestOptions = {
      host: route.address ?? '127.0.0.1',
      port: route.port,
      method,
      path: `${target.pathname}${target.search}`,
      headers,
      agent: false,
    };
    if (route.tls === true) {
      options.rejectUnauthorized = false;
      if (!/^[\d.]+$/.test(target.hostname) && !target.hostname.startsWith('[')) {
        options.servername = target.hostname;
      }
    }
    const transport = route.tls === true ? https : http;

    const hop = await new Promise<Hop>((resolve, reject) => {
      const req = transport.request(options, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('error', reject);
        res.on('end', () => {
          resolve({
            url: target.href,
            status: res.statusCode ?? 0,
            headers: { ...res.headers },
            body: Buffer.concat(chunks).toString('utf8'),
          });
        });
      });
      req.setTimeout(REQUEST_TIMEOUT_MS, () => {
        req.destroy(new Error(`HttpBrowser: ${method} ${url} timed out`));
      });
      req.on('error', reject);
      req.end(body);
    });

    this.#storeCookies(target, hop.headers['set-cookie']);
    return hop;
  }

  /** Follows redirects (301/302/303/307/308, relative Location resolved) up to `maxHops` (default 20); returns every hop, the last one being the final answer. A redirect to a URL whose host `route` refuses stops there (the last hop is that redirect) — tests use this to catch redirects to local client callbacks. */
  async navigate(url: string, init: BrowserRequestInit & { readonly maxHops?: number } = {}, maxHops: number = init.maxHops ?? 20): Promise<Hop[]> {
    const hops: Hop[] = [];
    let current = url;
    let request: BrowserRequestInit = {
      ...(init.method === undefined ? {} : { method: init.method }),
      ...(init.headers === undefined ? {} : { headers: init.headers }),
      ...(init.body === undefined ? {} : { body: init.body }),
    };
    for (;;) {
      const hop = await this.request(current, request);
      hops.push(hop);
      const location = hop.headers['location'];
      if (!REDIRECT_STATUSES.has(hop.status) || typeof location !== 'string') {
        return hops;
      }
      const next = new URL(location, hop.url);
      if (this.#route(next) === undefined) {
        return hops;
      }
      if (hops.length >= maxHops) {
        throw new Error(`HttpBrowser: more than ${maxHops} hops starting at ${url}`);
      }
      const method = (request.method ?? 'GET').toUpperCase();
      const keepMethod = hop.status === 307 || hop.status === 308 || (method === 'GET' || method === 'HEAD');
      if (!keepMethod || hop.status === 303) {
        // 301/302 turn POST into GET (as browsers do); 303 always continues with GET.
        const headers = { ...request.headers };
        for (const name of Object.keys(headers)) {
          if (name.toLowerCase() === 'content-type') delete headers[name];
        }
        request = { method: method === 'HEAD' ? 'HEAD' : 'GET', headers };
      }
      current = next.href;
    }
  }

  /** Signs in at the dev IdP: navigates to `url`, and when the chain lands on the dev IdP login form (HTML containing `action="/interaction/`), posts `login`/`password` to it and keeps following until the final answer. Returns all hops. */
  async signIn(url: string, login: string, password: string = DEV_PASSWORD): Promise<Hop[]> {
    const hops = await this.navigate(url);
    const last = hops[hops.length - 1];
    if (last === undefined || !last.body.includes('action="/interaction/')) {
      return hops;
    }
    const form = parseForm(last.body, last.url, '/interaction/');
    if (form === undefined) {
      return hops;
    }
    const more = await this.submit(form, { login, password }, last.url);
    return [...hops, ...more];
  }

  /**
   * Submits the first form of a page (or the one whose action contains `actionContains`) with its prefilled
   * fields, overridden by `fields`, and follows redirects — what a browser does with a self-submitting page
   * (e.g. the dev IdP's sign-out confirmation) or a filled-in form.
   */
  async submitForm(hop: Hop, fields: Record<string, string> = {}, actionContains?: string): Promise<Hop[]> {
    const form = parseForm(hop.body, hop.url, actionContains);
    if (form === undefined) {
      throw new Error(`HttpBrowser: no form found in the answer from ${hop.url}`);
    }
    return this.submit(form, fields, hop.url);
  }

  /** Cookies stored for a host (name → value): those a request to that host (any path) would carry. */
  cookies(host: string): Record<string, string> {
    const key = hostKey(host);
    this.#expire();
    const out: Record<string, string> = {};
    for (const cookie of this.#sorted()) {
      if (cookie.hostOnly ? cookie.domain === key : domainMatches(key, cookie.domain)) {
        out[cookie.name] ??= cookie.value;
      }
    }
    return out;
  }

  /** Stores a host-only session cookie with Path=/. */
  setCookie(host: string, name: string, value: string): void {
    const domain = hostKey(host);
    this.#put({ name, value, domain, hostOnly: true, path: '/', expiresAt: undefined, order: this.#order++ });
  }

  clearCookies(): void {
    this.#cookies.clear();
  }

  async submit(form: ParsedForm, fields: Record<string, string>, referer: string): Promise<Hop[]> {
    const values = new URLSearchParams({ ...form.fields, ...fields }).toString();
    const origin = new URL(referer).origin;
    if (form.method === 'GET') {
      const target = new URL(form.action);
      target.search = values;
      return this.navigate(target.href, { headers: { referer } });
    }
    const target = new URL(form.action);
    if (this.#route(target) === undefined) {
      throw new Error(`HttpBrowser: form posts to unrouted ${target.host}`);
    }
    return this.navigate(form.action, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', origin, referer },
      body: values,
    });
  }

  #key(cookie: Pick<StoredCookie, 'domain' | 'hostOnly' | 'path' | 'name'>): string {
    return `${cookie.hostOnly ? 'h' : 'd'}|${cookie.domain}|${cookie.path}|${cookie.name}`;
  }

  #put(cookie: StoredCookie): void {
    const key = this.#key(cookie);
    // Same name/domain/path, other host-only flag: a browser replaces it too.
    this.#cookies.delete(this.#key({ ...cookie, hostOnly: !cookie.hostOnly }));
    const previous = this.#cookies.get(key);
    this.#cookies.set(key, previous === undefined ? cookie : { ...cookie, order: previous.order });
  }

  #remove(cookie: Pick<StoredCookie, 'domain' | 'path' | 'name'>): void {
    this.#cookies.delete(this.#key({ ...cookie, hostOnly: true }));
    this.#cookies.delete(this.#key({ ...cookie, hostOnly: false }));
  }

  #expire(): void {
    const now = Date.now();
    for (const [key, cookie] of this.#cookies) {
      if (cookie.expiresAt !== undefined && cookie.expiresAt <= now) {
        this.#cookies.delete(key);
      }
    }
  }

  /** Longer paths first, then older cookies first (RFC 6265 5.4). */
  #sorted(): StoredCookie[] {
    return [...this.#cookies.values()].sort((a, b) => b.path.length - a.path.length || a.order - b.order);
  }

  #cookieHeader(url: URL): string {
    this.#expire();
    const host = url.hostname.toLowerCase();
    return this.#sorted()
      .filter((cookie) => (cookie.hostOnly ? cookie.domain === host : domainMatches(host, cookie.domain)))
      .filter((cookie) => pathMatches(url.pathname || '/', cookie.path))
      .map((cookie) => `${cookie.name}=${cookie.value}`)
      .join('; ');
  }

  #storeCookies(url: URL, header: string | string[] | undefined): void {
    if (header === undefined) return;
    const lines = Array.isArray(header) ? header : [header];
    const host = url.hostname.toLowerCase();
    for (const line of lines) {
      const [pair = '', ...attributes] = line.split(';');
      const eq = pair.indexOf('=');
      if (eq <= 0) continue;
      const name = pair.slice(0, eq).trim();
      const value = pair.slice(eq + 1).trim();
      let domain: string | undefined;
      let path: string | undefined;
      let maxAge: number | undefined;
      let expires: number | undefined;
      for (const text of attributes) {
        const attr = decodeAttribute(text);
        switch (attr.name) {
          case 'domain': {
            const d = attr.value.replace(/^\./, '').toLowerCase();
            if (d !== '') domain = d;
            break;
          }
          case 'path':
            if (attr.value.startsWith('/')) path = attr.value;
            break;
          case 'max-age': {
            const n = Number(attr.value);
            if (/^-?\d+$/.test(attr.value) && Number.isFinite(n)) maxAge = n;
            break;
          }
          case 'expires': {
            const t = Date.parse(attr.value);
            if (!Number.isNaN(t)) expires = t;
            break;
          }
          default:
          // Secure, HttpOnly, SameSite, Partitioned...: ignored (everything is loopback).
        }
      }
      if (domain !== undefined && !domainMatches(host, domain)) {
        // A browser rejects cookies for a domain the answering host does not belong to.
        continue;
      }
      const cookiePath = path ?? defaultPath(url.pathname);
      const expiresAt = maxAge !== undefined ? Date.now() + maxAge * 1000 : expires;
      const target = { name, domain: domain ?? host, path: cookiePath };
      if (expiresAt !== undefined && expiresAt <= Date.now()) {
        this.#remove(target);
        continue;
      }
      this.#put({ ...target, value, hostOnly: domain === undefined, expiresAt, order: this.#order++ });
    }
  }
}
