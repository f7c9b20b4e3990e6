/**
 * Tracing end to end (docs/tracing.md): svc run with each provider sends its spans to a local HTTP receiver
 * standing in for the collector (zipkin JSON v2, jaeger HTTP Thrift, the apm agent's v0.4 JSON, OTLP/HTTP
 * JSON), and
 * the upstream sees the same trace in `traceparent` (and B3 with zipkin), with the upstream
 * exchange's span as its parent. Sampling 0 sends nothing; tracing off adds no header; an incoming
 * trace is continued only from a trusted hop.
 */
import { createServer, request, type IncomingMessage, type Server } from 'node:http';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { run, type Running } from '../../runtime/process/run.ts';
import { createTracingSwitch, type TracingSwitch } from '../../runtime/observe/trace/tracing.ts';
import { configDir, startUpstream, type Upstream } from './support.ts';

interface Received {
  readonly method: string;
  readonly url: string;
  readonly headers: IncomingMessage['headers'];
  readonly body: Buffer;
}

/** A collector stand-in: keeps every request it receives, answers 202. */
async function startReceiver(): Promise<{ server: Server; port: number; received: Received[]; close(): Promise<void> }> {
  const received: Received[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      received.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks) });
      res.writeHead(202).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  return {
    server,
    port: (server.address() as { port: number }).port,
    received,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

function get(port: number, headers: Record<string, string> = {}): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path: '/t?x=1', agent: false, headers: { host: 'app.example.com', ...headers } }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
    req.end();
  });
}

/** A websocket handshake through svc; resolves with the status svc answered (101 once switched). */
function upgradeRequest(port: number, headers: Record<string, string>): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path: '/ws', agent: false, headers: { host: 'app.example.com', connection: 'Upgrade', upgrade: 'websocket', ...headers } });
    req.on('upgrade', (res, socket) => {
      socket.destroy();
      resolve(res.statusCode ?? 0);
    });
    req.on('response', (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('error', reject);
    req.end();
  });
}

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-0([01])$/;

describe('tracing', () => {
  let up: Upstream;
  const seen: IncomingMessage['headers'][] = [];
  const cfg = configDir();
  let svc: Running | undefined;
  let tracing: TracingSwitch | undefined;

  beforeAll(async () => {
    up = await startUpstream((req, res) => {
      seen.push(req.headers);
      res.end('ok');
    });
    // Websocket handshakes: the headers the upstream was sent, then 101 and close.
    up.server.on('upgrade', (req: IncomingMessage, socket: import('node:stream').Duplex) => {
      seen.push(req.headers);
      socket.end('HTTP/1.1 101 Switching Protocols\r\nconnection: Upgrade\r\nupgrade: websocket\r\n\r\n');
    });
  });
  afterEach(async () => {
    await svc?.close();
    await tracing?.shutdown();
    svc = undefined;
    seen.length = 0;
  });
  afterAll(async () => {
    await up?.close();
    cfg.remove();
  });

  /** Serves the test route with `settings`; spans go through a tracing switch like svc run's (its log lines into `log`). */
  async function start(settings: Record<string, unknown>, log?: (entry: Record<string, unknown>) => void): Promise<number> {
    cfg.write({ address: '127.0.0.1:8443', ...settings }, [{ from: 'https://app.example.com', to: up.url, allow_public_unauthenticated_access: true, allow_websockets: true }]);
    const t = createTracingSwitch(log);
    tracing = t;
    svc = await run({ configPath: cfg.path, listen: { host: '127.0.0.1', port: 0 }, grpcListen: { host: '127.0.0.1', port: 0 }, watch: false, tracing: t });
    return svc.listening.address.port;
  }

  /** One request; the trace id and parent span id the upstream saw. */
  async function traced(port: number, headers: Record<string, string> = {}): Promise<{ traceId: string; parentId: string; sampled: boolean }> {
    expect(await get(port, headers)).toBe(200);
    const m = TRACEPARENT.exec(String(seen.at(-1)!['traceparent']));
    expect(m, String(seen.at(-1)!['traceparent'])).not.toBeNull();
    return { traceId: m![1]!, parentId: m![2]!, sampled: m![3] === '1' };
  }

  it('zipkin: spans reach the endpoint with the trace the upstream saw (traceparent and B3)', async () => {
    const zipkin = await startReceiver();
    try {
      const port = await start({ tracing_provider: 'zipkin', tracing_zipkin_endpoint: `http://127.0.0.1:${zipkin.port}/api/v2/spans`, tracing_sample_rate: 1 });
      const t = await traced(port);
      expect(t.sampled).toBe(true);
      expect(seen.at(-1)!['x-b3-traceid']).toBe(t.traceId);
      expect(seen.at(-1)!['x-b3-spanid']).toBe(t.parentId);
      await tracing!.shutdown(); // flushes
      const spans = zipkin.received.flatMap((r) => JSON.parse(r.body.toString()) as { traceId: string; id: string; parentId?: string; name: string; localEndpoint: { serviceName: string } }[]);
      const mine = spans.filter((s) => s.traceId === t.traceId);
      expect(mine.map((s) => s.name).sort()).toEqual(['GET app.example.com', 'route decision', 'session lookup', 'upstream exchange']);
      expect(mine.find((s) => s.name === 'upstream exchange')!.id).toBe(t.parentId);
      expect(new Set(mine.map((s) => s.localEndpoint.serviceName))).toEqual(new Set(['svc']));
      expect(zipkin.received[0]!.url).toBe('/api/v2/spans');
    } finally {
      await zipkin.close();
    }
  });

  it('jaeger: a Thrift batch reaches the collector endpoint, holding the trace the upstream saw', async () => {
    const jaeger = await startReceiver();
    try {
      const port = await start({ tracing_provider: 'jaeger', tracing_jaeger_collector_endpoint: `http://127.0.0.1:${jaeger.port}/api/traces`, tracing_jaeger_agent_endpoint: '127.0.0.1:6831', tracing_sample_rate: 1 });
      const t = await traced(port);
      await tracing!.shutdown();
      expect(jaeger.received.length).toBeGreaterThan(0);
      const r = jaeger.received[0]!;
      expect(r.method).toBe('POST');
      expect(r.url).toBe('/api/traces');
      expect(r.headers['content-type']).toBe('application/x-thrift');
      const body = Buffer.concat(jaeger.received.map((x) => x.body));
      // Span.traceIdLow (field 1, i64) and traceIdHigh (field 2, i64), then the span id (field 3).
      const low = Buffer.concat([Buffer.from([10, 0, 1]), Buffer.from(t.traceId.slice(16), 'hex'), Buffer.from([10, 0, 2]), Buffer.from(t.traceId.slice(0, 16), 'hex')]);
      expect(body.indexOf(low)).toBeGreaterThan(0);
      expect(body.indexOf(Buffer.concat([Buffer.from([10, 0, 3]), Buffer.from(t.parentId, 'hex')]))).toBeGreaterThan(0);
      expect(body.includes('upstream exchange')).toBe(true);
      expect(body.includes('svc')).toBe(true);
    } finally {
      await jaeger.close();
    }
  });

  it('apm: traces reach the agent intake (PUT /v0.4/traces), the trace id as its low 64 bits', async () => {
    const agent = await startReceiver();
    try {
      const port = await start({ tracing_provider: 'apm', tracing_apm_address: `127.0.0.1:${agent.port}`, tracing_sample_rate: 1 });
      const t = await traced(port);
      await tracing!.shutdown();
      expect(agent.received.length).toBeGreaterThan(0);
      const r = agent.received[0]!;
      expect(r.method).toBe('PUT');
      expect(r.url).toBe('/v0.4/traces');
      expect(r.headers['x-datadog-trace-count']).toBe('1');
      // Ids are unsigned 64-bit integers: read them as digits, not through a double.
      const text = r.body.toString();
      const ids = (k: string) => [...text.matchAll(new RegExp(`"${k}":(\\d+)`, 'g'))].map((m) => m[1]!);
      expect(new Set(ids('trace_id'))).toEqual(new Set([BigInt(`0x${t.traceId.slice(16)}`).toString()]));
      expect(ids('span_id')).toContain(BigInt(`0x${t.parentId}`).toString());
      const spans = (JSON.parse(text) as { name: string; service: string; meta: Record<string, string> }[][]).flat();
      expect(spans.map((s) => s.name).sort()).toEqual(['GET app.example.com', 'route decision', 'session lookup', 'upstream exchange']);
      expect(spans.every((s) => s.service === 'svc' && s.meta['_dd.p.tid'] === t.traceId.slice(0, 16))).toBe(true);
    } finally {
      await agent.close();
    }
  });

  it('otlp: an OTLP/HTTP JSON export reaches tracing_otlp_endpoint with the request\'s attributes and svc\'s resource; OTEL_EXPORTER_OTLP_* change nothing', async () => {
    const collector = await startReceiver();
    const elsewhere = await startReceiver();
    // What the SDK would read on its own: another endpoint, a header, a timeout, compression.
    const env = {
      OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${elsewhere.port}`,
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `http://127.0.0.1:${elsewhere.port}/v1/traces`,
      OTEL_EXPORTER_OTLP_HEADERS: 'x-from-env=1',
      OTEL_EXPORTER_OTLP_COMPRESSION: 'gzip',
    };
    Object.assign(process.env, env);
    const logs: Record<string, unknown>[] = [];
    try {
      const port = await start({ tracing_provider: 'otlp', tracing_otlp_endpoint: `http://127.0.0.1:${collector.port}/v1/traces`, tracing_sample_rate: 1 }, (e) => logs.push(e));
      const t = await traced(port);
      const requestId = String(seen.at(-1)!['x-request-id']);
      await tracing!.shutdown(); // flushes
      expect(elsewhere.received).toEqual([]);
      expect(collector.received.length).toBeGreaterThan(0);
      const r = collector.received[0]!;
      expect(r.method).toBe('POST');
      expect(r.url).toBe('/v1/traces');
      expect(r.headers['content-type']).toBe('application/json');
      expect(r.headers['content-encoding']).toBeUndefined();
      expect(r.headers['x-from-env']).toBeUndefined();
      // OTLP's JSON encoding (ExportTraceServiceRequest): ids in hex, attributes as key/value pairs.
      type Attr = { key: string; value: { stringValue?: string; intValue?: number | string } };
      type OtlpSpan = { traceId: string; spanId: string; parentSpanId?: string; name: string; kind: number; attributes: Attr[] };
      const batches = collector.received.map((x) => JSON.parse(x.body.toString()) as { resourceSpans: { resource: { attributes: Attr[] }; scopeSpans: { spans: OtlpSpan[] }[] }[] });
      const resources = batches.flatMap((b) => b.resourceSpans.map((rs) => rs.resource));
      const value = (attrs: Attr[], key: string) => {
        const v = attrs.find((a) => a.key === key)?.value;
        return v?.stringValue ?? (v?.intValue === undefined ? undefined : Number(v.intValue));
      };
      expect(new Set(resources.map((res) => value(res.attributes, 'service.name')))).toEqual(new Set(['svc']));
      const mine = batches.flatMap((b) => b.resourceSpans.flatMap((rs) => rs.scopeSpans.flatMap((ss) => ss.spans))).filter((s) => s.traceId === t.traceId);
      expect(mine.map((s) => s.name).sort()).toEqual(['GET app.example.com', 'route decision', 'session lookup', 'upstream exchange']);
      expect(mine.find((s) => s.name === 'upstream exchange')!.spanId).toBe(t.parentId);
      const server = mine.find((s) => s.name === 'GET app.example.com')!;
      expect(server.kind).toBe(2); // SPAN_KIND_SERVER
      expect(value(server.attributes, 'svc.request_id')).toBe(requestId);
      expect(value(server.attributes, 'svc.route')).toBe(0); // the route's index in the plan
      expect(value(server.attributes, 'http.response.status_code')).toBe(200);
      expect(value(server.attributes, 'url.path')).toBe('/t');
      // svc said which variables it ignored (names only).
      expect(logs.find((e) => String(e['msg']).startsWith('tracing: OTEL_EXPORTER_OTLP_* variables are not read by svc'))).toMatchObject({ level: 'warn', ignored: Object.keys(env).sort() });
    } finally {
      for (const k of Object.keys(env)) delete process.env[k];
      await collector.close();
      await elsewhere.close();
    }
  });

  it('sample rate 0: an unsampled request starts no trace (nothing propagated, nothing sent)', async () => {
    const zipkin = await startReceiver();
    try {
      const port = await start({ tracing_provider: 'zipkin', tracing_zipkin_endpoint: `http://127.0.0.1:${zipkin.port}/api/v2/spans`, tracing_sample_rate: 0 });
      for (let i = 0; i < 5; i++) {
        expect(await get(port)).toBe(200);
        for (const name of ['traceparent', 'tracestate', 'b3', 'x-b3-traceid', 'x-b3-spanid', 'x-b3-sampled']) expect(seen.at(-1)![name], name).toBeUndefined();
      }
      await tracing!.shutdown();
      expect(zipkin.received).toEqual([]);
    } finally {
      await zipkin.close();
    }
  });

  it('a client cannot choose the trace or force sampling: incoming trace headers are dropped (unsampled) or replaced (sampled)', async () => {
    const zipkin = await startReceiver();
    try {
      const forced = '0af7651916cd43dd8448eb211c80319c';
      const headers = { traceparent: `00-${forced}-b7ad6b7169203331-01`, tracestate: 'x=1', 'x-b3-traceid': forced, 'x-b3-sampled': '1' };
      let port = await start({ tracing_provider: 'zipkin', tracing_zipkin_endpoint: `http://127.0.0.1:${zipkin.port}/api/v2/spans`, tracing_sample_rate: 0 });
      expect(await get(port, headers)).toBe(200);
      for (const name of ['traceparent', 'tracestate', 'x-b3-traceid', 'x-b3-sampled']) expect(seen.at(-1)![name], name).toBeUndefined();
      await tracing!.shutdown();
      expect(zipkin.received).toEqual([]);
      await svc?.close();
      port = await start({ tracing_provider: 'zipkin', tracing_zipkin_endpoint: `http://127.0.0.1:${zipkin.port}/api/v2/spans`, tracing_sample_rate: 1 });
      const t = await traced(port, headers);
      expect(t.traceId).not.toBe(forced);
      expect(seen.at(-1)!['tracestate']).toBeUndefined();
      expect(seen.at(-1)!['x-b3-traceid']).toBe(t.traceId);
      await tracing!.shutdown();
      expect(zipkin.received.length).toBeGreaterThan(0);
      expect(zipkin.received.map((r) => r.body.toString()).join('\n')).not.toContain(forced);
    } finally {
      await zipkin.close();
    }
  });

  it('a client cannot hand the upstream a trace or baggage in another format: Jaeger, baggage and apm headers are dropped too (docs/security.md S44)', async () => {
    const theirs = {
      'uber-trace-id': '0af7651916cd43dd:b7ad6b7169203331:0:1',
      'uberctx-role': 'admin',
      'jaeger-debug-id': 'forced',
      baggage: 'role=admin',
      'x-datadog-trace-id': '1234',
      'x-datadog-parent-id': '5678',
      'x-datadog-sampling-priority': '2',
      'x-b3-debug': '1',
    };
    const agent = await startReceiver();
    try {
      // Unsampled (rate 0) and sampled (rate 1): the upstream sees none of them either way.
      for (const rate of [0, 1]) {
        const port = await start({ tracing_provider: 'apm', tracing_apm_address: `127.0.0.1:${agent.port}`, tracing_sample_rate: rate });
        expect(await get(port, { ...theirs, 'x-kept': 'yes' })).toBe(200);
        const got = seen.at(-1)!;
        for (const name of Object.keys(theirs)) expect(got[name], `${name} at rate ${rate}`).toBeUndefined();
        expect(got['x-kept']).toBe('yes');
        await svc?.close();
        await tracing?.shutdown();
        svc = undefined;
      }
    } finally {
      await agent.close();
    }
    // The same for a websocket upgrade, another way in (untraced, but still an untrusted client's headers).
    const agent2 = await startReceiver();
    try {
      const port = await start({ tracing_provider: 'apm', tracing_apm_address: `127.0.0.1:${agent2.port}`, tracing_sample_rate: 1 });
      expect(await upgradeRequest(port, { ...theirs, traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01', 'x-kept': 'yes' })).toBe(101);
      const got = seen.at(-1)!;
      for (const name of [...Object.keys(theirs), 'traceparent']) expect(got[name], `${name} on an upgrade`).toBeUndefined();
      expect(got['x-kept']).toBe('yes');
      await svc?.close();
      await tracing?.shutdown();
      svc = undefined;
    } finally {
      await agent2.close();
    }
    // Tracing off: a client's headers pass through untouched.
    const port = await start({});
    expect(await get(port, theirs)).toBe(200);
    expect(seen.at(-1)!['uber-trace-id']).toBe(theirs['uber-trace-id']);
    expect(seen.at(-1)!['baggage']).toBe(theirs.baggage);
  });

  it('behind a trusted hop (xff_num_trusted_hops), an incoming trace is continued with its sampling', async () => {
    const zipkin = await startReceiver();
    try {
      const port = await start({ tracing_provider: 'zipkin', tracing_zipkin_endpoint: `http://127.0.0.1:${zipkin.port}/api/v2/spans`, tracing_sample_rate: 0, xff_num_trusted_hops: 1 });
      const incoming = '0af7651916cd43dd8448eb211c80319c';
      const t = await traced(port, { traceparent: `00-${incoming}-b7ad6b7169203331-01`, 'x-forwarded-for': '192.0.2.1' });
      expect(t.traceId).toBe(incoming);
      expect(t.sampled).toBe(true);
      await tracing!.shutdown();
      const spans = zipkin.received.flatMap((r) => JSON.parse(r.body.toString()) as { traceId: string; parentId?: string; name: string }[]);
      expect(spans.find((s) => s.name === 'GET app.example.com')).toMatchObject({ traceId: incoming, parentId: 'b7ad6b7169203331' });
    } finally {
      await zipkin.close();
    }
  });

  it('tracing off: no trace header is added, and a client\'s own passes through untouched', async () => {
    const port = await start({});
    expect(await get(port)).toBe(200);
    for (const h of ['traceparent', 'tracestate', 'x-b3-traceid', 'x-b3-spanid', 'x-b3-sampled', 'b3']) expect(seen.at(-1)![h], h).toBeUndefined();
    const theirs = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
    expect(await get(port, { traceparent: theirs })).toBe(200);
    expect(seen.at(-1)!['traceparent']).toBe(theirs);
    expect(tracing!.current).toBeNull();
  });
});
