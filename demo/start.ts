/**
 * `npm start`: the svc demo, on one machine, with no internet and no certificates.
 *
 * Starts, all on 127.0.0.1:
 * - the local development identity provider (demo/dev-idp.ts, FOR LOCAL USE ONLY) on port 9000, with the
 *   demo users alice@example.com and bob@other.example (password `demo`);
 * - a public "docs" upstream on port 9001 (a small HTML page);
 * - a demo "app" upstream on port 9002 that shows every request header it received, with svc's signed
 *   identity assertion (`x-svc-jwt-assertion`) decoded and the claim headers (`x-svc-claim-*`) picked out;
 * - svc itself, all-in-one with in-memory sessions, serving fixtures/quickstart/config.yaml on port 8443
 *   (and reloading it when the file changes), and its data broker over gRPC on port 5443 (all-in-one's
 *   `grpc_address`; `GRPC_ADDRESS=127.0.0.1:PORT npm start` picks another port).
 *
 * Every port is checked before anything starts: a taken one ends the demo with one line per taken port
 * (which port, what it is for, how to find the program holding it or give svc another gRPC port) and
 * exit code 2, as `svc run` exits for a listener it cannot open; never with a stack trace.
 *
 * The host names `app.localhost`, `docs.localhost` and `authenticate.localhost` need no setup: browsers
 * resolve every `*.localhost` name to the loopback address.
 *
 * `startDemo()` is also what test/demo/start.test.ts runs, on free ports: any port given as 0 is chosen
 * by the system, and svc then serves a copy of the quickstart config with the ports substituted.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer as createHttpServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createNetServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { escapeHtml } from '../runtime/authn/error-page.ts';
import { run, type Running } from '../runtime/process/run.ts';
import { RunError } from '../runtime/process/load-plan.ts';
import { isMainModule } from './main-module.ts';
import { DEMO_USERS, DEV_PASSWORD, startDevIdp, type DevIdp } from './dev-idp.ts';

const HOST = '127.0.0.1';
const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
/** The quickstart config; it names the default ports below. */
export const QUICKSTART_CONFIG = join(ROOT, 'fixtures/quickstart/config.yaml');

export interface DemoPorts {
  /** svc (every `*.localhost` name). */
  readonly svc: number;
  /** The dev identity provider. */
  readonly idp: number;
  /** The public docs upstream. */
  readonly docs: number;
  /** The demo app upstream (shows the headers it received). */
  readonly app: number;
  /** svc's data broker over gRPC (`grpc_address`; not in the config: the demo passes it to svc). */
  readonly grpc: number;
}

/** The ports the quickstart config names, and all-in-one's default gRPC port. */
export const DEFAULT_PORTS: DemoPorts = Object.freeze({ svc: 8443, idp: 9000, docs: 9001, app: 9002, grpc: 5443 });

/** The ports fixtures/quickstart/config.yaml itself names (every one but gRPC's). */
export type ConfigPorts = Omit<DemoPorts, 'grpc'>;

/** The OpenID client the quickstart config uses (TEST ONLY: the secret is published). */
const CLIENT_ID = 'svc-quickstart';
const CLIENT_SECRET = 'quickstart-client-secret';

export interface DemoOptions {
  /** Ports to use instead of the defaults; 0 means any free port. */
  readonly ports?: Partial<DemoPorts>;
  /** svc's structured log entries (default: dropped). */
  readonly log?: (entry: Record<string, unknown>) => void;
  /** Reload when the config file changes (default true). */
  readonly watch?: boolean;
  /**
   * Environment for svc's configuration (default process.env, as for `svc run`). Its `GRPC_ADDRESS`
   * (`127.0.0.1:PORT`, `localhost:PORT` or `:PORT`) is the gRPC port when `ports.grpc` is not given.
   */
  readonly env?: NodeJS.ProcessEnv;
}

export interface Demo {
  readonly ports: DemoPorts;
  /** `http://app.localhost:<svc port>/`: where to start. */
  readonly appUrl: string;
  /** `http://docs.localhost:<svc port>/`: the public route. */
  readonly docsUrl: string;
  /** The config file svc serves (the quickstart itself, or a copy with other ports). */
  readonly configPath: string;
  readonly idp: DevIdp;
  readonly svc: Running;
  /** Stops svc, the upstreams and the identity provider, and removes a temporary config copy. */
  close(): Promise<void>;
}

const PORT_ROLES: Readonly<Record<keyof DemoPorts, string>> = {
  svc: 'svc',
  idp: 'the dev identity provider',
  docs: 'the demo docs upstream',
  app: 'the demo app upstream',
  grpc: "svc's data broker over gRPC, grpc_address",
};

/** A port a demo could not listen on (`role` names its use in that demo), and why (`EADDRINUSE`, `EACCES`, `EADDRNOTAVAIL`). */
export interface UnusablePort {
  readonly role: string;
  readonly port: number;
  readonly code: string;
}

/** What an unusable port is for, and what to do about it: the two halves of its DemoPortError line. */
export type PortHelp = (unusable: UnusablePort) => { readonly use: string; readonly fix: string };

/** How to free a port in use, or why a port cannot be used at all: the start of every fix. */
export function freeingAdvice({ port, code }: UnusablePort): string {
  return code === 'EADDRINUSE'
    ? `stop the program using it (another \`npm start\`? \`lsof -i :${port}\` or \`ss -ltnp 'sport = :${port}'\` names it) and try again`
    : 'the demo listens on 127.0.0.1 only; check that the loopback interface is up and the port is one you may use';
}

/** npm start's ports: the gRPC one moves with GRPC_ADDRESS, the others are the quickstart config's. */
const quickstartPortHelp: PortHelp = (u) => ({
  use: PORT_ROLES[u.role as keyof DemoPorts] ?? u.role,
  fix: u.code !== 'EADDRINUSE'
    ? freeingAdvice(u)
    : u.role === 'grpc'
      ? `${freeingAdvice(u)}, or give svc another gRPC port: \`GRPC_ADDRESS=127.0.0.1:${u.port === 5543 ? 5553 : 5543} npm start\``
      : `${freeingAdvice(u)} (the demo's ports ${DEFAULT_PORTS.svc} and ${DEFAULT_PORTS.idp}-${DEFAULT_PORTS.app} are fixed: fixtures/quickstart/config.yaml names them)`,
});

/** Ports a demo needs are taken (or cannot be used): one line per port, naming it, its use and the fix. */
export class DemoPortError extends Error {
  constructor(readonly ports: readonly UnusablePort[], help: PortHelp = quickstartPortHelp) {
    super(ports.map((u) => {
      const why = u.code === 'EADDRINUSE' ? 'is already in use' : `cannot be used (${u.code})`;
      const { use, fix } = help(u);
      return `port ${u.port} on ${HOST} (${use}) ${why}: ${fix}`;
    }).join('\n'));
    this.name = 'DemoPortError';
  }
}

/** The ports of `wanted` (0: any, not checked) that cannot be listened on now, in `wanted`'s order. */
export async function unusablePorts<Role extends string>(wanted: Readonly<Record<Role, number>>): Promise<UnusablePort[]> {
  const unusable: UnusablePort[] = [];
  for (const [role, port] of Object.entries(wanted) as [Role, number][]) {
    if (port === 0) continue;
    try {
      await probePort(port);
    } catch (e) {
      const failure = listenFailure(e);
      if (failure === undefined) throw e;
      unusable.push({ role, port, code: failure.code });
    }
  }
  return unusable;
}

const LISTEN_CODES: ReadonlySet<string> = new Set(['EADDRINUSE', 'EACCES', 'EADDRNOTAVAIL']);

/**
 * The listen failure behind `e` (itself or a cause), with the port it names when it names one. Node's
 * listen errors carry `code` and `port`; grpc-js reports a bind failure as text only (`… [listen
 * EADDRINUSE: address already in use 127.0.0.1:5443]`), so its message is read too.
 */
export function listenFailure(e: unknown): { readonly code: string; readonly port?: number } | undefined {
  let x: unknown = e;
  for (let depth = 0; x instanceof Error && depth < 5; depth++, x = x.cause) {
    const { code, port } = x as NodeJS.ErrnoException & { port?: unknown };
    if (typeof code === 'string' && LISTEN_CODES.has(code)) return { code, ...(typeof port === 'number' ? { port } : {}) };
    const m = /\blisten (EADDRINUSE|EACCES|EADDRNOTAVAIL):[^\]]*:(\d+)\]/.exec(x.message);
    if (m?.[1] !== undefined) return { code: m[1], port: Number(m[2]) };
  }
  return undefined;
}

/** Listens on a port and releases it: the port's number when it is free (0: a free one). */
async function probePort(port: number): Promise<number> {
  const server = createNetServer();
  await new Promise<void>((resolvePromise, reject) => {
    server.once('error', reject);
    server.listen({ port, host: HOST, exclusive: true }, () => resolvePromise());
  });
  const actual = (server.address() as { port: number }).port;
  await new Promise<void>((resolvePromise) => server.close(() => resolvePromise()));
  return actual;
}

/** `e` as a DemoPortError naming `role`'s port when it is a listen failure, else `e` itself. */
function asPortError(e: unknown, role: keyof DemoPorts, port: number): unknown {
  const failure = listenFailure(e);
  return failure === undefined ? e : new DemoPortError([{ role, port: failure.port ?? port, code: failure.code }]);
}

/** The demo was asked for something it does not do (an environment value it cannot use). */
export class DemoUsageError extends Error {
  override readonly name = 'DemoUsageError';
}

/** The gRPC port `GRPC_ADDRESS` names for the demo (on 127.0.0.1), undefined when it is not set. */
export function grpcPortFromEnv(value: string | undefined): number | undefined {
  if (value === undefined || value === '') return undefined;
  const m = /^(?:127\.0\.0\.1|localhost)?:(\d{1,5})$/.exec(value);
  const port = Number(m?.[1]);
  if (m === null || port > 65535) {
    throw new DemoUsageError(`GRPC_ADDRESS \`${value}\` is not a port on 127.0.0.1: the demo serves on 127.0.0.1 only (GRPC_ADDRESS=127.0.0.1:5543)`);
  }
  return port;
}

interface PlainServer {
  readonly port: number;
  close(): Promise<void>;
}

async function startServer(port: number, role: keyof DemoPorts, handler: (req: IncomingMessage, res: ServerResponse) => void): Promise<PlainServer> {
  const server: Server = createHttpServer(handler);
  try {
    await new Promise<void>((resolvePromise, reject) => {
      server.once('error', reject);
      server.listen(port, HOST, () => {
        server.off('error', reject);
        resolvePromise();
      });
    });
  } catch (e) {
    throw asPortError(e, role, port);
  }
  return {
    port: (server.address() as { port: number }).port,
    close: () =>
      new Promise<void>((resolvePromise) => {
        server.close(() => resolvePromise());
        server.closeAllConnections();
      }),
  };
}

// ---------------------------------------------------------------------------------------------------------------
// The demo upstreams

const STYLE = `body{font:16px/1.5 system-ui,sans-serif;margin:0;background:#f5f6f8;color:#1d2330}
main{max-width:52rem;margin:2rem auto;padding:1.5rem 2rem;background:#fff;border-radius:8px;box-shadow:0 1px 3px #0002}
h1{font-size:1.5rem;margin:0 0 .5rem}h2{font-size:1.1rem;margin:1.5rem 0 .5rem}
table{border-collapse:collapse;width:100%;font-size:.85rem}td,th{text-align:left;vertical-align:top;padding:.25rem .5rem;border-bottom:1px solid #e3e5ea}
td:first-child{white-space:nowrap;font-family:ui-monospace,monospace}td:last-child{word-break:break-all;font-family:ui-monospace,monospace}
tr.svc{background:#fff7d6}pre{background:#f0f2f5;padding:.75rem;border-radius:6px;overflow-x:auto;font-size:.85rem}
.note{color:#556;font-size:.9rem}.who{font-size:1.1rem}nav a{margin-right:1rem}`;

function page(title: string, body: string): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${escapeHtml(title)}</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>${STYLE}</style>
</head><body><main>
${body}
</main></body></html>
`;
}

function sendHtml(req: IncomingMessage, res: ServerResponse, status: number, html: string): void {
  const body = Buffer.from(html, 'utf8');
  res.writeHead(status, {
    'content-type': 'text/html; charset=utf-8',
    'content-length': String(body.length),
    'cache-control': 'no-store',
    'x-content-type-options': 'nosniff',
    'content-security-policy': "default-src 'none'; style-src 'unsafe-inline'",
  });
  res.end(req.method === 'HEAD' ? undefined : body);
}

function headerValue(value: string | string[] | undefined): string {
  return Array.isArray(value) ? value.join(', ') : (value ?? '');
}

/** Decodes one base64url JWT segment as JSON, for display only (no verification). */
function decodeSegment(segment: string | undefined): unknown {
  if (segment === undefined || !/^[A-Za-z0-9_-]+$/.test(segment)) return undefined;
  try {
    return JSON.parse(Buffer.from(segment, 'base64url').toString('utf8')) as unknown;
  } catch {
    return undefined;
  }
}

/** The header and payload of a compact JWS, decoded for display (NOT verified). */
export function decodeJwtForDisplay(token: string): { readonly header: unknown; readonly payload: unknown } | undefined {
  const parts = token.split('.');
  if (parts.length !== 3) return undefined;
  const header = decodeSegment(parts[0]);
  const payload = decodeSegment(parts[1]);
  return header === undefined || payload === undefined ? undefined : { header, payload };
}

const ASSERTION = 'x-svc-jwt-assertion';
const CLAIM_PREFIX = 'x-svc-claim-';

/** The demo app: an HTML page of the request headers it received from svc. */
export function appHandler(req: IncomingMessage, res: ServerResponse): void {
  const path = (req.url ?? '/').split('?')[0] ?? '/';
  if (path === '/favicon.ico') {
    res.writeHead(404, { 'content-length': '0' }).end();
    return;
  }
  const headers = Object.entries(req.headers).sort(([a], [b]) => a.localeCompare(b));
  const claims = headers.filter(([name]) => name.startsWith(CLAIM_PREFIX));
  const assertion = headerValue(req.headers[ASSERTION]);
  const decoded = assertion === '' ? undefined : decodeJwtForDisplay(assertion);
  const payload = (decoded?.payload ?? {}) as Record<string, unknown>;
  const email = headerValue(req.headers[`${CLAIM_PREFIX}email`]) || (typeof payload['email'] === 'string' ? payload['email'] : '');

  const who = email === ''
    ? '<p class="who">svc sent no identity: this request was not signed in.</p>'
    : `<p class="who">Signed in as <strong>${escapeHtml(email)}</strong>. svc checked the route's policy and forwarded the request with a signed identity.</p>`;
  const assertionSection = assertion === ''
    ? `<h2>Identity assertion (<code>${ASSERTION}</code>)</h2><p>None received.</p>`
    : `<h2>Identity assertion (<code>${ASSERTION}</code>)</h2>
<p class="note">A JWT signed by svc. Shown decoded for display only, <em>not verified</em>: a real application verifies it
with svc's public keys at <code>/.well-known/svc/jwks.json</code> before trusting it.</p>
${decoded === undefined
    ? '<p>The header value is not a decodable JWT.</p>'
    : `<p>Header</p><pre id="assertion-header">${escapeHtml(JSON.stringify(decoded.header, null, 2))}</pre>
<p>Payload</p><pre id="assertion-payload">${escapeHtml(JSON.stringify(decoded.payload, null, 2))}</pre>`}`;
  const claimSection = `<h2>Claim headers (<code>${CLAIM_PREFIX}*</code>, from <code>jwt_claims_headers</code>)</h2>
${claims.length === 0
    ? '<p>None received.</p>'
    : `<table id="claims">${claims.map(([name, value]) => `<tr><td>${escapeHtml(name)}</td><td>${escapeHtml(headerValue(value))}</td></tr>`).join('')}</table>`}`;
  const rows = headers.map(([name, value]) => {
    let shown = headerValue(value);
    // The raw assertion is a credential for this upstream: show its start, the decoded form is above.
    if (name === ASSERTION && shown.length > 40) shown = `${shown.slice(0, 40)}… (${shown.length} characters)`;
    return `<tr${name.startsWith('x-svc-') ? ' class="svc"' : ''}><td>${escapeHtml(name)}</td><td>${escapeHtml(shown)}</td></tr>`;
  });

  sendHtml(req, res, 200, page('svc demo app', `<h1>svc demo app</h1>
<nav><a href="/.svc/">Your session at svc</a><a href="/.svc/signout">Sign out</a></nav>
${who}
${assertionSection}
${claimSection}
<h2>Every request header this upstream received</h2>
<p class="note">${escapeHtml(`${req.method ?? 'GET'} ${req.url ?? '/'}`)}: svc's own headers are highlighted. A client cannot forge them: svc removes any it sends.</p>
<table id="headers">${rows.join('')}</table>`));
}

/** The public docs upstream: a small page that needs no sign-in. */
export function docsHandler(appUrl: string): (req: IncomingMessage, res: ServerResponse) => void {
  return (req, res) => {
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    if (path === '/favicon.ico') {
      res.writeHead(404, { 'content-length': '0' }).end();
      return;
    }
    const svcHeaders = Object.keys(req.headers).filter((name) => name.startsWith('x-svc-'));
    const users = DEMO_USERS.map((u) => `<li><code>${escapeHtml(u.email)}</code> (groups: ${escapeHtml(u.groups.join(', '))})</li>`).join('');
    sendHtml(req, res, 200, page('svc demo docs', `<h1>svc demo docs</h1>
<p>This route is public (<code>allow_public_unauthenticated_access: true</code>): anyone reaches it without signing in,
and svc passes no identity to it (svc headers received here: ${svcHeaders.length === 0 ? 'none' : escapeHtml(svcHeaders.join(', '))}).</p>
<p>The protected demo app is at <a href="${escapeHtml(appUrl)}">${escapeHtml(appUrl)}</a>. Sign in there with password
<code>${escapeHtml(DEV_PASSWORD)}</code> as one of the demo users:</p>
<ul>${users}</ul>
<p>alice is allowed (domain example.com, group admins); bob is denied with a 403 page. The policy is in
<code>fixtures/quickstart/config.yaml</code>; edit it while the demo runs and svc reloads it.</p>
<p class="note">The identity provider of this demo is a development server for local use only.</p>`));
  };
}

// ---------------------------------------------------------------------------------------------------------------

/** The quickstart config text with its ports replaced; throws if the config no longer names them. */
export function substitutePorts(text: string, ports: ConfigPorts, idpIssuer: string): string {
  const d = DEFAULT_PORTS;
  const replacements: readonly [RegExp, string][] = [
    [new RegExp(`\\b127\\.0\\.0\\.1:${d.svc}\\b`, 'g'), `127.0.0.1:${ports.svc}`],
    [new RegExp(`\\.localhost:${d.svc}\\b`, 'g'), `.localhost:${ports.svc}`],
    [new RegExp(`http://127\\.0\\.0\\.1:${d.idp}\\b`, 'g'), idpIssuer],
    [new RegExp(`http://127\\.0\\.0\\.1:${d.docs}\\b`, 'g'), `http://127.0.0.1:${ports.docs}`],
    [new RegExp(`http://127\\.0\\.0\\.1:${d.app}\\b`, 'g'), `http://127.0.0.1:${ports.app}`],
  ];
  let out = text;
  for (const [pattern, value] of replacements) {
    if (!pattern.test(out)) throw new Error(`demo: the quickstart config no longer contains ${pattern.source}; update demo/start.ts`);
    out = out.replace(pattern, value);
  }
  return out;
}

/** Starts the identity provider, both upstreams and svc. Stops what it started when a step fails. */
export async function startDemo(options: DemoOptions = {}): Promise<Demo> {
  const env = options.env ?? process.env;
  const wanted: DemoPorts = { ...DEFAULT_PORTS, grpc: grpcPortFromEnv(env['GRPC_ADDRESS']) ?? DEFAULT_PORTS.grpc, ...options.ports };
  // Check every fixed port first, so that every taken port is reported, and before anything starts.
  const unusable = await unusablePorts(wanted);
  if (unusable.length > 0) throw new DemoPortError(unusable);
  // svc's port is in the config (and the IdP's redirect URIs), so it is fixed before anything starts.
  const svcPort = wanted.svc === 0 ? await probePort(0) : wanted.svc;
  const origin = (name: string) => `http://${name}.localhost:${svcPort}`;
  const appUrl = `${origin('app')}/`;
  const docsUrl = `${origin('docs')}/`;

  const cleanups: (() => Promise<void> | void)[] = [];
  const closeAll = async () => {
    for (const cleanup of cleanups.splice(0).reverse()) {
      try {
        await cleanup();
      } catch {
        // keep closing the rest
      }
    }
  };
  try {
    let idp: DevIdp;
    try {
      idp = await startDevIdp({
        host: HOST,
        port: wanted.idp,
        clients: [{
          clientId: CLIENT_ID,
          clientSecret: CLIENT_SECRET,
          redirectUris: [`${origin('authenticate')}/oauth2/callback`],
          postLogoutRedirectUris: [docsUrl],
        }],
        ...(options.log ? { log: (line: string) => options.log?.({ msg: line, component: 'dev-idp' }) } : {}),
      });
    } catch (e) {
      throw asPortError(e, 'idp', wanted.idp);
    }
    cleanups.push(() => idp.close());
    const docs = await startServer(wanted.docs, 'docs', docsHandler(appUrl));
    cleanups.push(() => docs.close());
    const app = await startServer(wanted.app, 'app', appHandler);
    cleanups.push(() => app.close());

    const configPorts: ConfigPorts = { svc: svcPort, idp: idp.port, docs: docs.port, app: app.port };
    let configPath = QUICKSTART_CONFIG;
    if ((Object.keys(configPorts) as (keyof ConfigPorts)[]).some((k) => configPorts[k] !== DEFAULT_PORTS[k])) {
      const dir = mkdtempSync(join(tmpdir(), 'svc-demo-'));
      cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
      configPath = join(dir, 'config.yaml');
      writeFileSync(configPath, substitutePorts(readFileSync(QUICKSTART_CONFIG, 'utf8'), configPorts, idp.issuer), { mode: 0o600 });
    }

    let svc: Running;
    try {
      svc = await run({
        configPath,
        watch: options.watch ?? true,
        env,
        grpcListen: { host: HOST, port: wanted.grpc },
        ...(options.log ? { log: options.log } : {}),
      });
    } catch (e) {
      // The HTTP listener's error names its port; grpc-js's names the gRPC port.
      const failure = listenFailure(e);
      throw failure === undefined ? e : new DemoPortError([{ role: failure.port === svcPort ? 'svc' : 'grpc', port: failure.port ?? svcPort, code: failure.code }]);
    }
    cleanups.push(() => svc.close());
    const ports: DemoPorts = { ...configPorts, grpc: svc.grpc?.address.port ?? wanted.grpc };

    let closing: Promise<void> | undefined;
    return {
      ports,
      appUrl,
      docsUrl,
      configPath,
      idp,
      svc,
      close: () => (closing ??= closeAll()),
    };
  } catch (e) {
    await closeAll();
    throw e;
  }
}

/** What `npm start` prints once everything listens. */
export function banner(demo: Pick<Demo, 'appUrl' | 'docsUrl' | 'configPath'>): string {
  const [alice, bob] = DEMO_USERS;
  return [
    '',
    `svc is running. Open ${demo.appUrl} and sign in as ${alice?.email ?? 'alice@example.com'} / ${DEV_PASSWORD} (allowed) or ${bob?.email ?? 'bob@other.example'} / ${DEV_PASSWORD} (denied).`,
    '',
    `  public page, no sign-in:  ${demo.docsUrl}`,
    `  config (reloads on save): ${demo.configPath}`,
    '  The identity provider on 127.0.0.1 is a development server for local use only.',
    '  Press Ctrl+C to stop.',
    '',
  ].join('\n');
}

/** One concise console line for a log entry: `svc: <msg> key=value ...`. */
export function formatLogLine(entry: Record<string, unknown>): string {
  const { msg, component, ...rest } = entry;
  if (msg === 'request') {
    return `svc: ${String(rest['method'])} ${String(rest['status'])} ${String(rest['ms'])} ms (request ${String(rest['requestId'])})`;
  }
  const fields = Object.entries(rest)
    .filter(([, value]) => value !== undefined)
    .map(([key, value]) => `${key}=${typeof value === 'string' ? value : JSON.stringify(value)}`);
  return [`${typeof component === 'string' ? component : 'svc'}:`, String(msg ?? ''), ...fields].join(' ');
}

async function main(): Promise<void> {
  const log = (entry: Record<string, unknown>) => {
    // oidc-provider's notice about the runtime it prefers: svc runs on the Node its package pins.
    if (entry['component'] === 'dev-idp' && /unsupported runtime/i.test(String(entry['msg']))) return;
    console.log(formatLogLine(entry));
  };
  let demo: Demo;
  try {
    demo = await startDemo({ log });
  } catch (e) {
    // A port in use or an unusable setting is the user's to fix: a message, never a stack trace. Exit
    // codes as `svc run`'s: 2 for a listener it cannot open (or a bad environment value), 1 for the config.
    if (e instanceof DemoPortError || e instanceof DemoUsageError) {
      console.error(e.message.split('\n').map((line) => `error: ${line}`).join('\n'));
      process.exit(2);
    }
    if (e instanceof RunError) console.error(`${e.message}\nerror ${e.code}: svc cannot start`);
    else console.error(`error: ${(e as Error).stack ?? String(e)}`);
    process.exit(1);
  }
  console.log(banner(demo));
  let stopping = false;
  const stop = (signal: NodeJS.Signals) => {
    if (stopping) {
      // A second Ctrl+C: do not wait.
      process.exit(130);
    }
    stopping = true;
    console.log(`\n${signal}: stopping svc, the demo upstreams and the identity provider`);
    // Whatever happens, do not hang on the way out.
    setTimeout(() => process.exit(1), 5_000).unref();
    demo.close().then(
      () => process.exit(0),
      (e: unknown) => {
        console.error(`error while stopping: ${(e as Error).message}`);
        process.exit(1);
      },
    );
  };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
}

if (isMainModule(import.meta.url)) await main();
