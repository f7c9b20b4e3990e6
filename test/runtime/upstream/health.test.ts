/**
 * Active health checks against real servers on loopback: node:http, node:http2 (h2c), node:net
 * and a @grpc/grpc-js server implementing grpc.health.v1. Servers flip between good and bad;
 * tests poll with a deadline (vi.waitFor) and assert on what happened, never on timings.
 */
import * as grpc from '@grpc/grpc-js';
import http from 'node:http';
import http2 from 'node:http2';
import net from 'node:net';
import { afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import type { HealthCheck } from '../../../compiler/plan/types.ts';
import { healthServiceDefinition, type HealthCheckRequest, type HealthCheckResponse } from '../../../runtime/upstream/health/grpc.ts';
import { statusExpected } from '../../../runtime/upstream/health/http.ts';
import { containsInOrder, decodeHex } from '../../../runtime/upstream/health/tcp.ts';
import { createUpstreamSet, type UpstreamEvent } from '../../../runtime/upstream/index.ts';
import { loadGrpcProber } from '../../../runtime/upstream/health/index.ts';
import { healthCheck, route, upstream } from './fixtures.ts';

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()?.();
});

const WAIT = { timeout: 10_000, interval: 10 };
const hex = (s: string): string => Buffer.from(s).toString('hex');

/** A started set whose events are recorded together with a counter read at event time. */
function startSet(r: Parameters<typeof createUpstreamSet>[0], counter: () => number = () => 0) {
  const events: (UpstreamEvent & { count: number })[] = [];
  const set = createUpstreamSet(r, { onChange: (e) => events.push({ ...e, count: counter() }) });
  cleanups.push(() => set.stop());
  set.start();
  const health = (i = 0): string | undefined => set.snapshot()[i]?.health;
  return { set, events, health };
}

function listen(server: net.Server): Promise<number> {
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as net.AddressInfo).port)));
}

/** An HTTP/1.1 server answering `status`; counts answers by status and records the request. */
async function flipHttp(initial = 200) {
  const state = { status: initial, answered: new Map<number, number>(), host: '', path: '', agent: '' };
  const server = http.createServer((req, res) => {
    state.host = req.headers.host ?? '';
    state.path = req.url ?? '';
    state.agent = req.headers['user-agent'] ?? '';
    state.answered.set(state.status, (state.answered.get(state.status) ?? 0) + 1);
    res.writeHead(state.status).end('ok');
  });
  const port = await listen(server);
  cleanups.push(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  );
  return { state, port, answered: (s: number) => state.answered.get(s) ?? 0 };
}

const httpCheck = (o: Partial<Extract<HealthCheck['check'], { kind: 'http' }>> = {}): HealthCheck['check'] => ({
  kind: 'http',
  host: null,
  path: '/healthz',
  expectedStatuses: [],
  codec: 'HTTP1',
  ...o,
});

/** Flips a server bad then good and checks the thresholds through the recorded events. */
async function flipCycle(
  t: ReturnType<typeof startSet>,
  setGood: (good: boolean) => void,
  goodCount: () => number,
  thresholds: { unhealthy: number; healthy: number },
): Promise<void> {
  await vi.waitFor(() => expect(t.health()).toBe('healthy'), WAIT);
  setGood(false);
  await vi.waitFor(() => expect(t.health()).toBe('unhealthy'), WAIT);
  const down = t.events.find((e) => e.kind === 'health' && !e.healthy);
  expect(down?.count).toBeGreaterThanOrEqual(thresholds.unhealthy);
  expect(t.set.pick({ hashKey: undefined })).toBeUndefined();
  t.events.length = 0;
  const goodBefore = goodCount();
  setGood(true);
  await vi.waitFor(() => expect(t.health()).toBe('healthy'), WAIT);
  const up = t.events.find((e) => e.kind === 'health' && e.healthy);
  expect((up?.count ?? 0) - goodBefore).toBeGreaterThanOrEqual(thresholds.healthy);
  expect(t.set.pick({ hashKey: undefined })?.index).toBe(0);
}

describe('HTTP/1.1 health checks', () => {
  it('goes unhealthy after unhealthy_threshold failures and back after healthy_threshold successes', async () => {
    const srv = await flipHttp();
    let counting: 'bad' | 'good' = 'bad';
    const t = startSet(
      route({ upstreams: [upstream(srv.port)], healthChecks: [healthCheck(httpCheck(), { intervalMs: 20, unhealthyThreshold: 3, healthyThreshold: 2 })] }),
      () => (counting === 'bad' ? srv.answered(500) : srv.answered(200)),
    );
    await flipCycle(
      t,
      (good) => {
        counting = good ? 'good' : 'bad';
        srv.state.status = good ? 200 : 500;
      },
      () => srv.answered(200),
      { unhealthy: 3, healthy: 2 },
    );
    expect(t.set.snapshot()[0]?.lastCheckFailure).toBe('SVC_ERR_HEALTH_CHECK_STATUS');
  });

  it('sends GET <path> with the host override and its own user agent', async () => {
    const srv = await flipHttp();
    const t = startSet(route({ upstreams: [upstream(srv.port)], healthChecks: [healthCheck(httpCheck({ host: 'health.internal', path: '/ready?full=1' }))] }));
    await vi.waitFor(() => expect(t.health()).toBe('healthy'), WAIT);
    expect(srv.state).toMatchObject({ host: 'health.internal', path: '/ready?full=1', agent: 'svc-health-check' });
  });

  it('defaults the Host header to the upstream authority', async () => {
    const srv = await flipHttp();
    const t = startSet(route({ upstreams: [upstream(srv.port)], healthChecks: [healthCheck(httpCheck())] }));
    await vi.waitFor(() => expect(t.health()).toBe('healthy'), WAIT);
    expect(srv.state.host).toBe(`127.0.0.1:${srv.port}`);
  });

  it('honours expected_statuses ranges', async () => {
    const srv = await flipHttp(418);
    const t = startSet(route({ upstreams: [upstream(srv.port)], healthChecks: [healthCheck(httpCheck({ expectedStatuses: [{ start: 418, end: 419 }] }))] }));
    await vi.waitFor(() => expect(t.health()).toBe('healthy'), WAIT);
    expect(statusExpected(200, [])).toBe(true);
    expect(statusExpected(299, [])).toBe(true);
    expect(statusExpected(300, [])).toBe(false);
    expect(statusExpected(204, [{ start: 200, end: 204 }])).toBe(false);
  });

  it('keeps traffic off the unhealthy upstream and on the healthy one', async () => {
    const bad = await flipHttp(503);
    const good = await flipHttp(200);
    const t = startSet(route({ upstreams: [upstream(bad.port), upstream(good.port)], healthChecks: [healthCheck(httpCheck())] }));
    await vi.waitFor(() => expect([t.health(0), t.health(1)]).toEqual(['unhealthy', 'healthy']), WAIT);
    for (let i = 0; i < 50; i++) expect(t.set.pick({ hashKey: undefined })?.index).toBe(1);
  });

  it('fails a check that gets no answer within timeout', async () => {
    const server = http.createServer(() => {
      /* never answers */
    });
    const port = await listen(server);
    cleanups.push(
      () =>
        new Promise<void>((resolve) => {
          server.closeAllConnections();
          server.close(() => resolve());
        }),
    );
    const t = startSet(route({ upstreams: [upstream(port)], healthChecks: [healthCheck(httpCheck(), { timeoutMs: 50 })] }));
    await vi.waitFor(() => expect(t.set.snapshot()[0]).toMatchObject({ health: 'unhealthy', lastCheckFailure: 'SVC_ERR_HEALTH_CHECK_TIMEOUT' }), WAIT);
  });

  it('fails a check that cannot connect', async () => {
    const server = net.createServer();
    const port = await listen(server);
    await new Promise<void>((resolve) => server.close(() => resolve()));
    const t = startSet(route({ upstreams: [upstream(port)], healthChecks: [healthCheck(httpCheck())] }));
    await vi.waitFor(() => expect(t.set.snapshot()[0]).toMatchObject({ health: 'unhealthy', lastCheckFailure: 'SVC_ERR_HEALTH_CHECK_CONNECT' }), WAIT);
  });
});

describe('HTTP/2 health checks', () => {
  it('checks over h2c and follows the server between 200 and 500', async () => {
    const state = { status: 200, bad: 0, good: 0, authority: '' };
    const server = http2.createServer((req, res) => {
      state.authority = req.headers[':authority'] ?? '';
      if (state.status === 200) state.good++;
      else state.bad++;
      res.writeHead(state.status).end();
    });
    const sessions = new Set<http2.ServerHttp2Session>();
    server.on('session', (s) => {
      sessions.add(s);
      s.on('close', () => sessions.delete(s));
    });
    const port = await listen(server);
    cleanups.push(
      () =>
        new Promise<void>((resolve) => {
          for (const s of sessions) s.destroy();
          server.close(() => resolve());
        }),
    );
    let counting: 'bad' | 'good' = 'bad';
    const t = startSet(
      route({ upstreams: [upstream(port)], healthChecks: [healthCheck(httpCheck({ codec: 'HTTP2', host: 'h2.internal' }), { intervalMs: 20, unhealthyThreshold: 2, healthyThreshold: 3 })] }),
      () => (counting === 'bad' ? state.bad : state.good),
    );
    await flipCycle(
      t,
      (good) => {
        counting = good ? 'good' : 'bad';
        state.status = good ? 200 : 500;
      },
      () => state.good,
      { unhealthy: 2, healthy: 3 },
    );
    expect(state.authority).toBe('h2.internal');
  });
});

describe('TCP health checks', () => {
  async function pingServer() {
    const state = { good: true, goodAnswers: 0, badAnswers: 0 };
    const sockets = new Set<net.Socket>();
    const server = net.createServer((socket) => {
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
      socket.on('error', () => {});
      socket.once('data', (data) => {
        if (data.toString() !== 'PING') return void socket.end();
        if (state.good) state.goodAnswers++;
        else state.badAnswers++;
        // The expected payloads arrive in order but not adjacent, and in two writes.
        socket.write(state.good ? 'xxPO' : 'NOPE');
        socket.end(state.good ? 'NG!!' : '!!');
      });
    });
    const port = await listen(server);
    cleanups.push(
      () =>
        new Promise<void>((resolve) => {
          for (const s of sockets) s.destroy();
          server.close(() => resolve());
        }),
    );
    return { state, port };
  }

  it('sends the payload, expects every receive payload in order, and flips with the server', async () => {
    const srv = await pingServer();
    let counting: 'bad' | 'good' = 'bad';
    const t = startSet(
      route({
        upstreams: [upstream(srv.port, 1, '127.0.0.1', 'tcp')],
        healthChecks: [healthCheck({ kind: 'tcp', send: hex('PING'), receive: [hex('PO'), hex('G!')] }, { intervalMs: 20, unhealthyThreshold: 2, healthyThreshold: 2 })],
      }),
      () => (counting === 'bad' ? srv.state.badAnswers : srv.state.goodAnswers),
    );
    await flipCycle(
      t,
      (good) => {
        counting = good ? 'good' : 'bad';
        srv.state.good = good;
      },
      () => srv.state.goodAnswers,
      { unhealthy: 2, healthy: 2 },
    );
    expect(t.events.length).toBeGreaterThan(0);
  });

  it('reports a connection closed before the payloads arrived', async () => {
    const srv = await pingServer();
    srv.state.good = false;
    const t = startSet(route({ upstreams: [upstream(srv.port, 1, '127.0.0.1', 'tcp')], healthChecks: [healthCheck({ kind: 'tcp', send: hex('PING'), receive: [hex('PONG')] })] }));
    await vi.waitFor(() => expect(t.set.snapshot()[0]).toMatchObject({ health: 'unhealthy', lastCheckFailure: 'SVC_ERR_HEALTH_CHECK_RESPONSE' }), WAIT);
  });

  it('without payloads, a completed connect is healthy and a refused one is not', async () => {
    const srv = await pingServer();
    const closed = net.createServer();
    const closedPort = await listen(closed);
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const t = startSet(
      route({ upstreams: [upstream(srv.port, 1, '127.0.0.1', 'tcp'), upstream(closedPort, 1, '127.0.0.1', 'tcp')], healthChecks: [healthCheck({ kind: 'tcp', send: null, receive: [] })] }),
    );
    await vi.waitFor(() => expect([t.health(0), t.health(1)]).toEqual(['healthy', 'unhealthy']), WAIT);
    expect(t.set.snapshot()[1]?.lastCheckFailure).toBe('SVC_ERR_HEALTH_CHECK_CONNECT');
  });

  it('matches payloads in order, not necessarily adjacent (pure)', () => {
    expect(containsInOrder(Buffer.from('xxPONG!'), [Buffer.from('PO'), Buffer.from('G!')])).toBe(true);
    expect(containsInOrder(Buffer.from('G!PO'), [Buffer.from('PO'), Buffer.from('G!')])).toBe(false);
    expect(decodeHex('50 49 4e 47').toString()).toBe('PING');
    expect(() => decodeHex('abc')).toThrow(expect.objectContaining({ code: 'SVC_ERR_UPSTREAM_CONFIG' }));
  });
});

describe('gRPC health checks', () => {
  // The gRPC prober is loaded for a plan with a gRPC health check (the forward provisioner does it).
  beforeAll(loadGrpcProber);
  async function healthServer() {
    const state = { status: 'SERVING' as HealthCheckResponse['status'], serving: 0, notServing: 0, authority: '', services: [] as string[] };
    const server = new grpc.Server();
    server.addService(healthServiceDefinition(), {
      Check: (call: grpc.ServerUnaryCall<HealthCheckRequest, HealthCheckResponse>, callback: grpc.sendUnaryData<HealthCheckResponse>) => {
        state.authority = call.getHost();
        state.services.push(call.request.service);
        if (call.request.service !== 'svc.App') return callback({ code: grpc.status.NOT_FOUND, details: 'unknown service' });
        if (state.status === 'SERVING') state.serving++;
        else state.notServing++;
        callback(null, { status: state.status });
      },
    });
    const port = await new Promise<number>((resolve, reject) =>
      server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p))),
    );
    cleanups.push(() => new Promise<void>((resolve) => server.tryShutdown(() => resolve())));
    return { state, port, server };
  }

  it('expects SERVING for the service name and flips with the server', async () => {
    const srv = await healthServer();
    let counting: 'bad' | 'good' = 'bad';
    const t = startSet(
      route({
        upstreams: [upstream(srv.port)],
        healthChecks: [healthCheck({ kind: 'grpc', serviceName: 'svc.App', authority: 'grpc.internal' }, { intervalMs: 20, unhealthyThreshold: 2, healthyThreshold: 2 })],
      }),
      () => (counting === 'bad' ? srv.state.notServing : srv.state.serving),
    );
    await flipCycle(
      t,
      (good) => {
        counting = good ? 'good' : 'bad';
        srv.state.status = good ? 'SERVING' : 'NOT_SERVING';
      },
      () => srv.state.serving,
      { unhealthy: 2, healthy: 2 },
    );
    expect(srv.state.authority).toBe('grpc.internal');
  });

  it('treats an unknown service as unhealthy', async () => {
    const srv = await healthServer();
    const t = startSet(route({ upstreams: [upstream(srv.port)], healthChecks: [healthCheck({ kind: 'grpc', serviceName: null, authority: null })] }));
    await vi.waitFor(() => expect(t.set.snapshot()[0]).toMatchObject({ health: 'unhealthy', lastCheckFailure: 'SVC_ERR_HEALTH_CHECK_NOT_SERVING' }), WAIT);
    expect(srv.state.services[0]).toBe('');
  });
});
