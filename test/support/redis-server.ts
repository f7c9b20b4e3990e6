/**
 * Real redis-server processes for tests, on loopback, in a temp dir, without persistence: a
 * standalone server (optionally with a password, or TLS only), a master + replica + sentinel, and a
 * three-node cluster. Every process is killed by `stop()`.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './ports.ts';

/** Ports for redis-server and its neighbours (test/support/ports.ts: safe beside parallel files). */
export { freePort };

export interface RedisProcess {
  readonly port: number;
  readonly dir: string;
  /** Kills the server (SIGKILL: an outage), keeping its port for `restart`. */
  kill(): Promise<void>;
  /** Starts it again on the same port (empty: persistence is off). */
  restart(): Promise<void>;
  stop(): Promise<void>;
}

export interface StandaloneOptions {
  readonly password?: string;
  /** TLS only (`--port 0 --tls-port`): PEM texts written to the temp dir. */
  readonly tls?: { readonly certPem: string; readonly keyPem: string; readonly caPem: string; readonly requireClientCert: boolean };
  readonly extraArgs?: readonly string[];
}

function redisCli(port: number, args: readonly string[], password?: string): string {
  const r = spawnSync('redis-cli', ['-h', '127.0.0.1', '-p', String(port), ...(password ? ['--no-auth-warning', '-a', password] : []), ...args], { encoding: 'utf8', timeout: 30_000 });
  return `${r.stdout ?? ''}${r.stderr ?? ''}`;
}

async function waitFor(check: () => boolean, what: string, timeoutMs = 20_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

function launch(command: string, args: readonly string[], cwd: string): ChildProcess {
  const child = spawn(command, args, { cwd, stdio: ['ignore', 'ignore', 'pipe'] });
  child.stderr?.resume();
  return child;
}

async function killed(child: ChildProcess | undefined): Promise<void> {
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  await new Promise<void>((resolve) => {
    child.once('exit', () => resolve());
    child.kill('SIGKILL');
  });
}

/** Starts one redis-server; resolves once it answers PING (over TLS: once the port accepts). */
export async function startRedis(options: StandaloneOptions = {}): Promise<RedisProcess> {
  const dir = mkdtempSync(join(tmpdir(), 'svc-redis-'));
  const port = await freePort();
  const args = ['--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir, ...(options.extraArgs ?? [])];
  if (options.password) args.push('--requirepass', options.password);
  if (options.tls) {
    writeFileSync(join(dir, 'server.crt'), options.tls.certPem);
    writeFileSync(join(dir, 'server.key'), options.tls.keyPem);
    writeFileSync(join(dir, 'ca.crt'), options.tls.caPem);
    args.push('--port', '0', '--tls-port', String(port), '--tls-cert-file', 'server.crt', '--tls-key-file', 'server.key', '--tls-ca-cert-file', 'ca.crt', '--tls-auth-clients', options.tls.requireClientCert ? 'yes' : 'no');
  } else args.push('--port', String(port));
  let child: ChildProcess | undefined;
  const start = async () => {
    child = launch('redis-server', args, dir);
    if (options.tls) await waitForPort(port);
    else await waitFor(() => redisCli(port, ['PING'], options.password).includes('PONG'), `redis-server on ${port}`);
  };
  await start();
  return {
    port,
    dir,
    kill: () => killed(child),
    restart: start,
    stop: async () => {
      await killed(child);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

async function waitForPort(port: number): Promise<void> {
  const until = Date.now() + 20_000;
  for (;;) {
    const open = await new Promise<boolean>((resolve) => {
      const c = connect(port, '127.0.0.1');
      c.once('connect', () => (c.destroy(), resolve(true)));
      c.once('error', () => resolve(false));
    });
    if (open) return;
    if (Date.now() > until) throw new Error(`timed out waiting for port ${port}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

export interface SentinelSet {
  readonly master: RedisProcess;
  readonly replica: RedisProcess;
  readonly sentinelPort: number;
  readonly masterName: string;
  /** The port of the current master, as the sentinel tells it. */
  currentMasterPort(): number;
  /** `SENTINEL FAILOVER` and waits until the sentinel names the other server. */
  failover(): Promise<number>;
  stop(): Promise<void>;
}

/** A master, a replica of it and one sentinel watching them (quorum 1). */
export async function startSentinelSet(): Promise<SentinelSet> {
  const masterName = 'svcmaster';
  // Each may be the master that a replica syncs from (the replica is one after a failover): at once,
  // not after Redis's default 5 s wait for more replicas to share a diskless sync.
  const syncAtOnce = ['--repl-diskless-sync-delay', '0'];
  const [master, replica] = await Promise.all([startRedis({ extraArgs: syncAtOnce }), startRedis({ extraArgs: [...syncAtOnce, '--replica-announce-ip', '127.0.0.1'] })]);
  redisCli(replica.port, ['REPLICAOF', '127.0.0.1', String(master.port)]);
  await waitFor(() => /master_link_status:up/.test(redisCli(replica.port, ['INFO', 'replication'])), 'replica link');
  const dir = mkdtempSync(join(tmpdir(), 'svc-sentinel-'));
  const sentinelPort = await freePort();
  writeFileSync(
    join(dir, 'sentinel.conf'),
    [`port ${sentinelPort}`, 'bind 127.0.0.1', `dir ${dir}`, `sentinel monitor ${masterName} 127.0.0.1 ${master.port} 1`, `sentinel down-after-milliseconds ${masterName} 1000`, `sentinel failover-timeout ${masterName} 5000`, ''].join('\n'),
  );
  const child = launch('redis-sentinel', [join(dir, 'sentinel.conf')], dir);
  const currentMasterPort = () => Number(redisCli(sentinelPort, ['SENTINEL', 'get-master-addr-by-name', masterName]).split('\n')[1]);
  await waitFor(() => currentMasterPort() === master.port, 'sentinel');
  await waitFor(() => /slaves=1/.test(redisCli(sentinelPort, ['INFO', 'sentinel'])), 'sentinel sees the replica');
  return {
    master,
    replica,
    sentinelPort,
    masterName,
    currentMasterPort,
    failover: async () => {
      const before = currentMasterPort();
      await waitFor(() => redisCli(sentinelPort, ['SENTINEL', 'FAILOVER', masterName]).includes('OK'), 'failover accepted');
      await waitFor(() => currentMasterPort() !== before, 'failover done', 30_000);
      const now = currentMasterPort();
      await waitFor(() => /role:master/.test(redisCli(now, ['INFO', 'replication'])), 'new master');
      return now;
    },
    stop: async () => {
      await killed(child);
      await master.stop();
      await replica.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export interface RedisCluster {
  readonly ports: readonly number[];
  stop(): Promise<void>;
}

/** Three masters, no replicas, made with `redis-cli --cluster create`. */
export async function startCluster(): Promise<RedisCluster> {
  const nodes: RedisProcess[] = [];
  // Each node's cluster bus on a port of ours too (by default its port + 10000, which can fall in the ephemeral range).
  for (let i = 0; i < 3; i++) nodes.push(await startRedis({ extraArgs: ['--cluster-enabled', 'yes', '--cluster-config-file', 'nodes.conf', '--cluster-node-timeout', '2000', '--cluster-port', String(await freePort())] }));
  const ports = nodes.map((n) => n.port);
  const out = redisCli(ports[0]!, ['--cluster', 'create', ...ports.map((p) => `127.0.0.1:${p}`), '--cluster-yes']);
  if (!/All 16384 slots covered/.test(out)) throw new Error(`cluster create failed: ${out}`);
  await waitFor(() => ports.every((p) => /cluster_state:ok/.test(redisCli(p, ['CLUSTER', 'INFO']))), 'cluster state ok');
  return { ports, stop: async () => void (await Promise.all(nodes.map((n) => n.stop()))) };
}

/** Runs `redis-cli` against a server (for tests that look at what svc stored). */
export function cli(port: number, args: readonly string[], password?: string): string {
  return redisCli(port, args, password);
}
