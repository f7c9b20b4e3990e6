/** What a plan says about gRPC: the bind address, local or remote data broker, client TLS, reload refusals. */
import { stringify } from 'yaml';
import { describe, expect, it } from 'vitest';
import type { PlanSettings } from '../../../compiler/plan/types.ts';
import { databrokerCertificateName, databrokerClientTls, grpcBindAddress, planCredentialKey, usesRemoteDatabroker } from '../../../runtime/grpc/plan-options.ts';
import { serviceCredentialKey } from '../../../runtime/grpc/credential.ts';
import { grpcChange } from '../../../runtime/generation/restart-checks.ts';
import { BASE_SETTINGS, compileText, TEST_SECRET } from '../../support/compile-text.ts';

function settings(extra: Record<string, unknown>): PlanSettings {
  const r = compileText(stringify({ ...BASE_SETTINGS, ...extra, routes: [{ from: 'https://a.example.com', to: 'http://127.0.0.1:1', allow_public_unauthenticated_access: true }] }));
  if (!r.plan) throw new Error(JSON.stringify(r.diagnostics));
  return r.plan.body.settings;
}

describe('gRPC settings of a plan', () => {
  it('grpc_address without a host: loopback all-in-one, every interface in another role; an override wins', () => {
    expect(grpcBindAddress(settings({}))).toBe('127.0.0.1:5443');
    expect(grpcBindAddress(settings({ services: 'databroker' }))).toBe('0.0.0.0:443');
    expect(grpcBindAddress(settings({ grpc_address: '10.0.0.1:7443' }))).toBe('10.0.0.1:7443');
    expect(grpcBindAddress(settings({}), { host: '::1', port: 0 })).toBe('[::1]:0');
  });

  it('the data broker is remote when databroker_service_url(s) names another place than the all-in-one default', () => {
    expect(usesRemoteDatabroker(settings({}))).toBe(false);
    expect(usesRemoteDatabroker(settings({ services: 'databroker', databroker_service_url: 'http://db:5443' }))).toBe(false);
    expect(usesRemoteDatabroker(settings({ databroker_service_url: 'http://db:5443' }))).toBe(true);
    expect(usesRemoteDatabroker(settings({ databroker_service_urls: ['http://db1:5443', 'http://db2:5443'] }))).toBe(true);
  });

  it('client TLS: none with grpc_insecure; else the name from override_certificate_name or the internal URL, and the CA', () => {
    expect(databrokerClientTls(settings({ databroker_service_url: 'http://db:5443' }))).toBeNull();
    expect(databrokerClientTls(settings({ databroker_service_url: 'https://db:5443', grpc_insecure: false }))).toEqual({});
    expect(databrokerClientTls(settings({ databroker_service_url: 'https://10.0.0.5:5443', databroker_internal_service_url: 'https://db.internal:5443', grpc_insecure: false }))).toEqual({ serverName: 'db.internal' });
    expect(databrokerClientTls(settings({ databroker_service_url: 'https://10.0.0.5:5443', databroker_internal_service_url: 'https://db.internal:5443', override_certificate_name: 'other.internal', grpc_insecure: false }))).toEqual({ serverName: 'other.internal' });
    expect(databrokerCertificateName(settings({ services: 'databroker', databroker_internal_service_url: 'https://db.internal:5443' }))).toBe('db.internal');
  });

  it('the credential key comes from shared_secret', () => {
    expect(planCredentialKey(settings({}))).toEqual(serviceCredentialKey(Buffer.from(TEST_SECRET, 'base64')));
    expect(planCredentialKey(settings({ shared_secret: Buffer.alloc(32, 5).toString('base64') }))).not.toEqual(serviceCredentialKey(Buffer.from(TEST_SECRET, 'base64')));
  });

  it('a reload that changes the role, the gRPC settings, the data broker URLs or the shared secret is refused', () => {
    const base = settings({ grpc_address: '127.0.0.1:7443' });
    expect(grpcChange(base, settings({ grpc_address: '127.0.0.1:7443', log_level: 'debug' }))).toBeUndefined();
    for (const extra of [{ grpc_address: '127.0.0.1:7444' }, { grpc_address: '127.0.0.1:7443', grpc_client_timeout: '3s' }, { grpc_address: '127.0.0.1:7443', databroker_service_url: 'http://db:5443' }, { grpc_address: '127.0.0.1:7443', shared_secret: Buffer.alloc(32, 5).toString('base64') }]) {
      expect(grpcChange(base, settings(extra)), JSON.stringify(extra)).toMatch(/restart svc/);
    }
  });
});
