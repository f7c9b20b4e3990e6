/**
 * runtime/observe/trace/tracing.ts: the spans' service name is the process's `service` label
 * (docs/tracing.md): `svc` all-in-one, `svc-<service>` in distributed mode, as a zipkin endpoint receives it and
 * as an OTLP/HTTP endpoint receives it (the resource's `service.name`).
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { createTracingSwitch } from '../../../../runtime/observe/trace/tracing.ts';
import { BASE_SETTINGS, compileText } from '../../../support/compile-text.ts';

/** The service names of the spans an endpoint on loopback receives from a switch following `services`, with `provider`. */
async function serviceNames(services: string, provider: 'zipkin' | 'otlp' = 'zipkin'): Promise<string[]> {
  const bodies: string[] = [];
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      bodies.push(body);
      res.writeHead(202).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    const { port } = server.address() as AddressInfo;
    const endpoint = provider === 'zipkin' ? { tracing_zipkin_endpoint: `http://127.0.0.1:${port}/api/v2/spans` } : { tracing_otlp_endpoint: `http://127.0.0.1:${port}/v1/traces` };
    const result = compileText(stringify({ ...BASE_SETTINGS, services, tracing_provider: provider, ...endpoint, tracing_sample_rate: 1 }));
    expect(result.plan, JSON.stringify(result.diagnostics)).toBeDefined();
    const tracing = createTracingSwitch();
    await tracing.prepare(result.plan!.body.settings);
    tracing.apply(result.plan!.body.settings);
    tracing.current!.tracer.startSpan('a span').end();
    await tracing.shutdown(); // flushes
    if (provider === 'zipkin') return bodies.flatMap((b) => (JSON.parse(b) as { localEndpoint: { serviceName: string } }[]).map((s) => s.localEndpoint.serviceName));
    type Attr = { key: string; value: { stringValue?: string } };
    return bodies.flatMap((b) =>
      (JSON.parse(b) as { resourceSpans: { resource: { attributes: Attr[] }; scopeSpans: { spans: unknown[] }[] }[] }).resourceSpans.flatMap((rs) =>
        rs.scopeSpans.flatMap((ss) => ss.spans.map(() => rs.resource.attributes.find((a) => a.key === 'service.name')?.value.stringValue ?? '')),
      ),
    );
  } finally {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
}

describe('tracing service name', () => {
  it('svc in all-in-one mode, svc-databroker for the data broker role', async () => {
    expect(await serviceNames('all')).toEqual(['svc']);
    expect(await serviceNames('databroker')).toEqual(['svc-databroker']);
  });

  it('otlp: the resource of every span names the service the same way', async () => {
    expect(await serviceNames('all', 'otlp')).toEqual(['svc']);
    expect(await serviceNames('databroker', 'otlp')).toEqual(['svc-databroker']);
  });
});

describe('the tracing switch loads OpenTelemetry only for a plan that traces', () => {
  const settings = (extra: Record<string, unknown>) => {
    const result = compileText(stringify({ ...BASE_SETTINGS, ...extra }));
    expect(result.plan, JSON.stringify(result.diagnostics)).toBeDefined();
    return result.plan!.body.settings;
  };

  it('tracing off: prepare loads nothing and apply needs nothing loaded', async () => {
    const tracing = createTracingSwitch();
    await tracing.prepare(settings({}));
    tracing.apply(settings({}));
    expect(tracing.current).toBeNull();
  });

  it('tracing on: apply before prepare is a bug in svc; after prepare the tracer starts', async () => {
    const on = settings({ tracing_provider: 'apm', tracing_apm_address: '127.0.0.1:9' });
    const tracing = createTracingSwitch();
    expect(() => tracing.apply(on)).toThrow(/^bug: tracing applied before prepare/);
    await tracing.prepare(on);
    tracing.apply(on);
    expect(tracing.current?.sampleRate).toBe(on.tracing.sampleRate);
    await tracing.shutdown();
    expect(tracing.current).toBeNull();
  });
});
