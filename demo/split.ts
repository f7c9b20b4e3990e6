/**
 * The quickstart as a split deployment (docs/distributed.md "Try it"): the same demo identity
 * provider and upstreams as `npm start`, and svc as four `svc run` processes from one config file,
 * the role of each from `SERVICES`:
 *
 *   proxy         http://app.localhost:8443, http://docs.localhost:8443   (--listen 127.0.0.1:8443)
 *   authenticate  http://authenticate.localhost:8444                       (--listen 127.0.0.1:8444)
 *   authorize     gRPC 127.0.0.1:5443                                      (--grpc-listen)
 *   databroker    gRPC 127.0.0.1:5444                                      (--grpc-listen)
 *
 * Run with `npx tsx demo/split.ts`; Ctrl+C stops everything. The config is the quickstart's with the
 * service URLs of the split roles and a signing key made for this run (so the authenticate
 * service's JWKS publishes the key the proxy signs with), written to a temporary directory.
 *
 * `startSplitDemo()` is also what test/demo/split.test.ts runs, on free ports.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse, stringify } from 'yaml';
import { isMainModule } from './main-module.ts';
import { DEMO_USERS, DEV_PASSWORD, startDevIdp } from './dev-idp.ts';
import { appHandler, DEFAULT_PORTS, DemoPortError, docsHandler, freeingAdvice, QUICKSTART_CONFIG, substitutePorts, unusablePorts, type PortHelp } from './start.ts';

const HOST = '127.0.0.1';
const SVC = join(resolve(dirname(fileURLToPath(import.meta.url)), '..'), 'bin/svc');

export interface SplitPorts {
  readonly proxy: number;
  readonly authenticate: number;
  readonly authorize: number;
  readonly databroker: number;
  readonly idp: number;
  readonly docs: number;
  readonly app: number;
}

/** The ports the split demo uses by default (the quickstart's, plus the three other roles'). */
export const SPLIT_PORTS: SplitPorts = Object.freeze({ proxy: DEFAULT_PORTS.svc, authenticate: 8444, authorize: 5443, databroker: 5444, idp: DEFAULT_PORTS.idp, docs: DEFAULT_PORTS.docs, app: DEFAULT_PORTS.app });

type Role = 'databroker' | 'authorize' | 'authenticate' | 'proxy';
const ROLES: readonly Role[] = ['databroker', 'authorize', 'authenticate', 'proxy'];

/** What each of the split demo's ports is for, in its DemoPortError lines. */
const SPLIT_PORT_USES: Readonly<Record<keyof SplitPorts, string>> = {
  proxy: 'the proxy role, svc run --listen',
  authenticate: 'the authenticate role, svc run --listen',
  authorize: 'the authorize role, gRPC, svc run --grpc-listen',
  databroker: 'the data broker role, gRPC, svc run --grpc-listen',
  idp: 'the dev identity provider',
  docs: 'the demo docs upstream',
  app: 'the demo app upstream',
};

const splitPortHelp: PortHelp = (u) => ({
  use: SPLIT_PORT_USES[u.role as keyof SplitPorts] ?? u.role,
  fix: u.code === 'EADDRINUSE' ? `${freeingAdvice(u)} (the split demo's ports are fixed: SPLIT_PORTS in demo/split.ts)` : freeingAdvice(u),
});

export interface SplitDemo {
  readonly appUrl: string;
  readonly docsUrl: string;
  readonly configPath: string;
  /** Everything each role printed so far. */
  output(role: Role): string;
  close(): Promise<void>;
}

/** A signing key for this run only (EC P-256, base64 of its PKCS #8 PEM, as `signing_key` takes it). */
function runSigningKey(): string {
  const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  return Buffer.from(privateKey.export({ type: 'pkcs8', format: 'pem' }) as string).toString('base64');
}

async function listen(server: Server, port: number): Promise<number> {
  await new Promise<void>((ok, fail) => {
    server.once('error', fail);
    server.listen(port, HOST, () => ok());
  });
  return (server.address() as { port: number }).port;
}

/** A port free right now (listened on and released). */
async function freePort(): Promise<number> {
  const probe = createServer();
  const port = await listen(probe, 0);
  await new Promise((r) => probe.close(r));
  return port;
}

/** Starts `svc run` in `role`; resolves once it says it listens, rejects when it exits first. */
function startRole(role: Role, configPath: string, ports: SplitPorts, print?: (role: Role, line: string) => void): { child: ChildProcess; ready: Promise<void>; output: () => string } {
  const where = role === 'proxy' || role === 'authenticate' ? ['--listen', `${HOST}:${ports[role]}`] : ['--grpc-listen', `${HOST}:${ports[role]}`];
  // No shutdown delay: no load balancer watches the demo's readiness, so Ctrl+C (and a test's close) stops at once.
  const child = spawn(process.execPath, [SVC, 'run', '--shutdown-delay', '0', '-config', configPath, '--workers', '1', ...where], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, SERVICES: role } });
  let out = '';
  const ready = new Promise<void>((ok, fail) => {
    const onData = (c: Buffer) => {
      const text = c.toString();
      out += text;
      for (const line of text.split('\n')) if (line !== '') print?.(role, line);
      if (/"msg":"listening"/.test(out)) ok();
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.once('exit', (code) => fail(new Error(`svc (${role}) exited with ${code}:\n${out}`)));
  });
  return { child, ready, output: () => out };
}

/** Starts the identity provider, the upstreams and the four roles. Stops what it started when a step fails. */
export async function startSplitDemo(options: { readonly ports?: Partial<SplitPorts>; readonly print?: (role: Role, line: string) => void } = {}): Promise<SplitDemo> {
  const wanted = { ...SPLIT_PORTS, ...options.ports };
  const cleanups: (() => Promise<unknown> | void)[] = [];
  const closeAll = async () => {
    for (const c of cleanups.splice(0).reverse()) await Promise.resolve(c()).catch(() => undefined);
  };
  // Every fixed port is checked before anything starts, so that a taken one is named (with its role),
  // not found by a process that exits.
  const unusable = await unusablePorts(wanted);
  if (unusable.length > 0) throw new DemoPortError(unusable, splitPortHelp);
  try {
    // Ports given as 0 are chosen now: the config and the provider's redirect URIs name them.
    const ports = { ...wanted } as { -readonly [K in keyof SplitPorts]: number };
    for (const k of ['proxy', 'authenticate', 'authorize', 'databroker'] as const) if (ports[k] === 0) ports[k] = await freePort();
    const origin = (name: string) => `http://${name}.localhost:${name === 'authenticate' ? ports.authenticate : ports.proxy}`;
    const docsUrl = `${origin('docs')}/`;
    const appUrl = `${origin('app')}/`;
    const idp = await startDevIdp({ host: HOST, port: wanted.idp, clients: [{ clientId: 'svc-quickstart', clientSecret: 'quickstart-client-secret', redirectUris: [`${origin('authenticate')}/oauth2/callback`], postLogoutRedirectUris: [docsUrl] }] });
    cleanups.push(() => idp.close());
    const docs = createServer(docsHandler(appUrl));
    ports.docs = await listen(docs, wanted.docs);
    cleanups.push(() => new Promise((r) => docs.close(r)));
    const app = createServer(appHandler);
    ports.app = await listen(app, wanted.app);
    cleanups.push(() => new Promise((r) => app.close(r)));
    ports.idp = idp.port;

    const quickstart = parse(substitutePorts(readFileSync(QUICKSTART_CONFIG, 'utf8'), { svc: ports.proxy, idp: ports.idp, docs: ports.docs, app: ports.app }, idp.issuer)) as Record<string, unknown>;
    const { address: _address, ...shared } = quickstart;
    const config = {
      ...shared,
      authenticate_service_url: origin('authenticate'),
      authorize_service_url: `http://${HOST}:${ports.authorize}`,
      databroker_service_url: `http://${HOST}:${ports.databroker}`,
      grpc_insecure: true, // loopback only
      signing_key: runSigningKey(),
    };
    const dir = mkdtempSync(join(tmpdir(), 'svc-split-demo-'));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const configPath = join(dir, 'config.yaml');
    writeFileSync(configPath, `# The quickstart as four roles (demo/split.ts). TEST KEYS ONLY.\n${stringify(config)}`, { mode: 0o600 });

    const started = new Map<Role, ReturnType<typeof startRole>>();
    for (const role of ROLES) started.set(role, startRole(role, configPath, ports, options.print));
    // The four roles stop side by side: each one's drain does not wait for another's.
    cleanups.push(() =>
      Promise.all(
        [...started.values()].map(async (s) => {
          if (s.child.exitCode !== null || s.child.signalCode !== null) return;
          const exited = new Promise((r) => s.child.once('exit', r));
          s.child.kill('SIGTERM');
          await exited;
        }),
      ),
    );
    await Promise.all([...started.values()].map((s) => s.ready));
    let closing: Promise<void> | undefined;
    return { appUrl, docsUrl, configPath, output: (role) => started.get(role)!.output(), close: () => (closing ??= closeAll()) };
  } catch (e) {
    await closeAll();
    throw e;
  }
}

async function main(): Promise<void> {
  const demo = await startSplitDemo({ print: (role, line) => console.log(`${role.padEnd(12)} ${line}`) }).catch((e: unknown) => {
    console.error((e as Error).message.split('\n').map((line) => `error: ${line}`).join('\n'));
    // As npm start and svc run: 2 for a listener that cannot be opened.
    process.exit(e instanceof DemoPortError ? 2 : 1);
  });
  const [alice, bob] = DEMO_USERS;
  console.log(
    [
      '',
      `svc is running as four processes. Open ${demo.appUrl} and sign in as ${alice?.email ?? 'alice@example.com'} / ${DEV_PASSWORD} (allowed) or ${bob?.email ?? 'bob@other.example'} / ${DEV_PASSWORD} (denied).`,
      `  public page: ${demo.docsUrl}   config: ${demo.configPath}`,
      '  The identity provider on 127.0.0.1 is a development server for local use only. Press Ctrl+C to stop.',
      '',
    ].join('\n'),
  );
  const stop = () => {
    setTimeout(() => process.exit(1), 10_000).unref();
    void demo.close().then(() => process.exit(0));
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}

if (isMainModule(import.meta.url)) await main();
