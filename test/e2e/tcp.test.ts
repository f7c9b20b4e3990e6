/**
 * `tcp+https` routes end to end with a real Redis: `svc tcp` opens a local port, each connection
 * goes through svc with CONNECT to the route's tcp:// upstream, and Redis answers. Routes without
 * access refuse the tunnel before any byte reaches Redis.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { connect, type Server } from 'node:net';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startTunnel } from '../../cli/tcp-tunnel.ts';
import { run, type Running } from '../../runtime/process/run.ts';
import { sendResp } from '../support/resp.ts';
import { describeWithCommands } from '../support/system.ts';
import { configDir } from './support.ts';

describeWithCommands(['redis-server'], 'tcp+https routes with a real Redis', () => {
  let redisProcess: ChildProcess;
  let redisPort = 0;
  let svc: Running;
  let open: Server;
  let closed: Server;
  const cfg = configDir();

  beforeAll(async () => {
    redisPort = 20000 + Math.floor(Math.random() * 20000);
    redisProcess = spawn('redis-server', ['--port', String(redisPort), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
    for (let i = 0; i < 100 && (await sendResp(redisPort, 'PING\r\n')) !== '+PONG\r\n'; i++) await new Promise((r) => setTimeout(r, 100));
    cfg.write({ address: '127.0.0.1:8443' }, [
      { from: 'tcp+https://redis.example.com:6379', to: `tcp://127.0.0.1:${redisPort}`, allow_public_unauthenticated_access: true },
      { from: 'tcp+https://private.example.com:6379', to: `tcp://127.0.0.1:${redisPort}`, policy: 'allow if groups has "ops"' },
    ]);
    svc = await run({ configPath: cfg.path, listen: { host: '127.0.0.1', port: 0 }, grpcListen: { host: '127.0.0.1', port: 0 }, watch: false });
    const proxy = `http://127.0.0.1:${svc.listening.address.port}`;
    open = await startTunnel({ route: 'tcp+https://redis.example.com:6379', proxy, listen: { host: '127.0.0.1', port: 0 } });
    closed = await startTunnel({ route: 'tcp+https://private.example.com:6379', proxy, listen: { host: '127.0.0.1', port: 0 } });
  });

  afterAll(async () => {
    open?.close();
    closed?.close();
    await svc?.close();
    redisProcess?.kill();
    cfg.remove();
  });

  const portOf = (s: Server) => (s.address() as { port: number }).port;

  it('carries a Redis session through svc', async () => {
    expect(await sendResp(portOf(open), 'SET svc-key tunnelled\r\nGET svc-key\r\n')).toBe('+OK\r\n$9\r\ntunnelled\r\n');
  });

  it('refuses the tunnel when the route policy needs a user', async () => {
    expect(await sendResp(portOf(closed), 'PING\r\n')).not.toContain('PONG');
  });

  it('answers CONNECT for an unknown route with 404', async () => {
    const answer = await new Promise<string>((resolve) => {
      const s = connect(svc.listening.address.port, '127.0.0.1', () => s.write('CONNECT nowhere.example.com:6379 HTTP/1.1\r\nHost: nowhere.example.com:6379\r\n\r\n'));
      let out = '';
      s.on('data', (c) => (out += c.toString()));
      s.on('close', () => resolve(out));
    });
    expect(answer).toMatch(/^HTTP\/1\.1 404 /);
  });
});
