/**
 * `tracing_provider: otlp` and `tracing_otlp_endpoint` (docs/tracing.md): the plan holds the endpoint
 * (OpenTelemetry's default when unset), from the file or from `TRACING_OTLP_ENDPOINT` (located as
 * `env:`); an endpoint that is not an http(s) URL is a located error; an unknown provider is still
 * refused; the endpoint with another provider is a warning. The golden case
 * fixtures/cases/invalid-url--tracing-otlp-endpoint/ shows the rendered error.
 */
import { describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { BASE_SETTINGS, compileText } from '../../support/compile-text.ts';

const ROUTES = [{ from: 'https://app.example.com', to: 'http://10.0.0.1:8080', policy: 'allow if email is "alice@example.com"' }];

function compileWith(settings: Record<string, unknown>, env: Record<string, string> = {}) {
  const text = stringify({ ...BASE_SETTINGS, ...settings, routes: ROUTES });
  const result = compileText(text, 'config.yaml', env);
  // BASE_SETTINGS writes its test secrets inline: their `inline-secret` warnings are not about tracing.
  const diagnostics = result.diagnostics.filter((d) => d.name !== 'inline-secret').map((d) => ({ severity: d.severity, name: d.name, text: d.span ? d.span.source.text.slice(d.span.start, d.span.end) : undefined, message: d.message }));
  return { result, diagnostics };
}

describe('tracing_provider: otlp', () => {
  it('compiles with the endpoint given, and with OpenTelemetry’s default endpoint when none is', () => {
    const given = compileWith({ tracing_provider: 'otlp', tracing_otlp_endpoint: 'https://collector.internal:4318/v1/traces', tracing_sample_rate: 1 });
    expect(given.diagnostics).toEqual([]);
    expect(given.result.plan!.body.settings.tracing).toMatchObject({ provider: 'otlp', otlpEndpoint: 'https://collector.internal:4318/v1/traces', sampleRate: 1 });
    const unset = compileWith({ tracing_provider: 'otlp' });
    expect(unset.diagnostics).toEqual([]);
    expect(unset.result.plan!.body.settings.tracing).toMatchObject({ provider: 'otlp', otlpEndpoint: 'http://localhost:4318/v1/traces' });
  });

  it('reads TRACING_OTLP_ENDPOINT, and the source map says so', () => {
    const { result, diagnostics } = compileWith({ tracing_provider: 'otlp' }, { TRACING_OTLP_ENDPOINT: 'http://10.0.0.9:4318/v1/traces' });
    expect(diagnostics).toEqual([]);
    expect(result.plan!.body.settings.tracing.otlpEndpoint).toBe('http://10.0.0.9:4318/v1/traces');
    expect(Object.entries(result.plan!.sourceMap.settings).find(([k]) => k.includes('otlp'))?.[1]).toBe('env:TRACING_OTLP_ENDPOINT');
  });

  it('refuses an endpoint that is not an http(s) URL, at the value, with a code', () => {
    for (const bad of ['grpc://collector.internal:4317', 'collector.internal:4318', 'http://']) {
      const { result, diagnostics } = compileWith({ tracing_provider: 'otlp', tracing_otlp_endpoint: bad });
      expect(result.plan, bad).toBeUndefined();
      expect(diagnostics.map((d) => [d.severity, d.name, d.text]), bad).toContainEqual(['error', 'invalid-url', bad]);
    }
    const env = compileWith({ tracing_provider: 'otlp' }, { TRACING_OTLP_ENDPOINT: 'ftp://collector' });
    expect(env.result.plan).toBeUndefined();
    expect(env.result.diagnostics.map((d) => d.name)).toContain('invalid-url');
  });

  it('an unknown provider is still an error; the endpoint with another provider (or none) is a warning', () => {
    const unknown = compileWith({ tracing_provider: 'otlp-grpc' });
    expect(unknown.result.plan).toBeUndefined();
    expect(unknown.diagnostics.map((d) => [d.severity, d.name, d.text])).toContainEqual(['error', 'invalid-enum-value', 'otlp-grpc']);
    expect(unknown.diagnostics.find((d) => d.name === 'invalid-enum-value')!.message).toContain('`otlp`');
    const other = compileWith({ tracing_provider: 'zipkin', tracing_zipkin_endpoint: 'http://zipkin:9411/api/v2/spans', tracing_otlp_endpoint: 'http://collector:4318/v1/traces' });
    expect(other.diagnostics.map((d) => [d.severity, d.name, d.text])).toEqual([['warning', 'setting-without-effect', 'tracing_otlp_endpoint']]);
    const none = compileWith({ tracing_otlp_endpoint: 'http://collector:4318/v1/traces' });
    expect(none.diagnostics.map((d) => [d.severity, d.name])).toEqual([['warning', 'setting-without-effect']]);
  });
});
