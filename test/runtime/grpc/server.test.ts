/**
 * The gRPC server and client helpers against each other on loopback: calls with a wrong shared
 * secret or none are refused UNAUTHENTICATED and logged on both sides without any secret; TLS with
 * a certificate checked by name; per-method metrics on both sides.
 */
import * as grpc from '@grpc/grpc-js';
import { Registry } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import { MemoryStore } from '../../../runtime/databroker/memory-store.ts';
import { DATABROKER_SERVICE, databrokerService } from '../../../runtime/grpc/proto.ts';
import { serviceCredentialKey } from '../../../runtime/grpc/credential.ts';
import { GrpcClient } from '../../../runtime/grpc/client.ts';
import { generateSelfSigned } from '../../../runtime/tls/self-signed.ts';
import { registerGrpc } from '../../../runtime/observe/metrics/grpc.ts';
import { grpcStore, GRPC_TEST_SECRET, startBroker } from '../databroker/grpc-support.ts';
import { sessionRecord } from '../databroker/records.ts';
import { eventually } from '../databroker/store-contract.ts';

const WRONG_SECRET = Buffer.alloc(32, 3); // test secret only

const cleanup: (() => Promise<unknown> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.splice(0).reverse()) await c();
});

async function broker(over: Parameters<typeof startBroker>[1] = {}) {
  const backing = new MemoryStore();
  const b = await startBroker(backing, over);
  cleanup.push(() => backing.close(), () => b.stop());
  return b;
}

describe('gRPC service credential on the wire', () => {
  it('a client with the wrong shared_secret is refused UNAUTHENTICATED; both sides log it naming no secret; the store fails closed', async () => {
    const serverLog: Record<string, unknown>[] = [];
    const clientLog: Record<string, unknown>[] = [];
    const b = await broker({ log: (e) => serverLog.push(e) });
    const client = await grpcStore([b.url], { credentialKey: serviceCredentialKey(WRONG_SECRET), log: (e) => clientLog.push(e), timeoutMs: 1_000 }, false);
    cleanup.push(() => client.close());
    await expect(client.get('x')).rejects.toMatchObject({ code: 'SVC_ERR_SESSION_STORE_UNAVAILABLE' });
    await expect(client.put(sessionRecord(Date.now()))).rejects.toMatchObject({ code: 'SVC_ERR_SESSION_STORE_UNAVAILABLE' });
    expect(await client.ready(300)).toBe(false);
    await eventually(() => serverLog.length > 0 && clientLog.some((e) => String(e['msg']).includes('UNAUTHENTICATED')));
    expect(serverLog[0]).toMatchObject({ problem: 'bad-signature' });
    expect(String(serverLog[0]!['msg'])).toContain('UNAUTHENTICATED');
    const text = JSON.stringify([serverLog, clientLog]);
    for (const secret of [GRPC_TEST_SECRET, WRONG_SECRET]) {
      expect(text).not.toContain(secret.toString('base64'));
      expect(text).not.toContain(secret.toString('hex'));
    }
    expect(text).not.toContain('Bearer');
    expect(text).not.toMatch(/eyJ[\w-]+\./);
  });

  it('a call without any credential is refused UNAUTHENTICATED (unary and stream)', async () => {
    const b = await broker();
    const Client = grpc.makeGenericClientConstructor(databrokerService(), 'DataBroker');
    const raw = new Client(`127.0.0.1:${b.port}`, grpc.credentials.createInsecure()) as grpc.Client & Record<string, Function>;
    cleanup.push(() => raw.close());
    const err = await new Promise<grpc.ServiceError>((resolve) => raw['Get']!({ id: 'x' }, (e: grpc.ServiceError) => resolve(e)));
    expect(err.code).toBe(grpc.status.UNAUTHENTICATED);
    const stream = raw['Watch']!({ origin: 'o' }) as grpc.ClientReadableStream<unknown>;
    const status = await new Promise<grpc.StatusObject>((resolve) => {
      stream.on('error', () => undefined);
      stream.on('status', resolve);
    });
    expect(status.code).toBe(grpc.status.UNAUTHENTICATED);
  });

  it('an all-wrong client is not retried as "unreachable" (it fails at once, not at grpc_client_timeout)', async () => {
    const b = await broker();
    const client = new GrpcClient(DATABROKER_SERVICE, databrokerService(), { urls: [b.url], credentialKey: serviceCredentialKey(WRONG_SECRET), tls: null, timeoutMs: 60_000, dnsRoundRobin: true });
    cleanup.push(() => client.close());
    await expect(client.unary('Get', { id: 'x' })).rejects.toMatchObject({ code: grpc.status.UNAUTHENTICATED });
  });
});

describe('gRPC over TLS (grpc_insecure: false)', () => {
  it('serves and calls over TLS with the certificate checked against its name; a client expecting another name is refused', async () => {
    const cert = await generateSelfSigned('databroker.svc.test');
    const b = await broker({ tls: { cert: cert.certPem, key: cert.keyPem } });
    const url = `https://127.0.0.1:${b.port}`;
    const good = await grpcStore([url], { tls: { ca: cert.certPem, serverName: 'databroker.svc.test' } });
    cleanup.push(() => good.close());
    const r = sessionRecord(Date.now());
    await good.put(r);
    expect(await good.get(r.id)).toEqual(r);

    const other = await generateSelfSigned('databroker.svc.test');
    const untrusted = await grpcStore([url], { tls: { ca: other.certPem, serverName: 'databroker.svc.test' }, timeoutMs: 500 }, false);
    cleanup.push(() => untrusted.close());
    await expect(untrusted.get(r.id)).rejects.toMatchObject({ code: 'SVC_ERR_SESSION_STORE_UNAVAILABLE' });
    const wrongName = await grpcStore([url], { tls: { ca: cert.certPem, serverName: 'other.svc.test' }, timeoutMs: 500 }, false);
    cleanup.push(() => wrongName.close());
    await expect(wrongName.get(r.id)).rejects.toMatchObject({ code: 'SVC_ERR_SESSION_STORE_UNAVAILABLE' });
    const plaintext = await grpcStore([`http://127.0.0.1:${b.port}`], { timeoutMs: 500 }, false);
    cleanup.push(() => plaintext.close());
    await expect(plaintext.get(r.id)).rejects.toMatchObject({ code: 'SVC_ERR_SESSION_STORE_UNAVAILABLE' });
  });
});

describe('gRPC metrics', () => {
  it('records client and server calls per method and code, with sizes', async () => {
    const registry = new Registry();
    const observer = registerGrpc(registry);
    const b = await broker({ observer });
    const client = await grpcStore([b.url], { observer });
    cleanup.push(() => client.close());
    const r = sessionRecord(Date.now());
    await client.put(r);
    await client.get(r.id);
    await client.get(r.id);
    await expect(client.put({ ...r, id: '' })).rejects.toMatchObject({ code: 'SVC_ERR_SESSION_RECORD_INVALID' });
    await client.delete(r.id);
    await expect(client.put(r)).rejects.toMatchObject({ code: 'SVC_ERR_SESSION_REVOKED' });
    const text = await registry.metrics();
    const line = (side: string, method: string, code: string) => new RegExp(`^svc_grpc_${side}_requests_total\\{grpc_service="svc.databroker.v1.DataBroker",grpc_method="${method}",grpc_code="${code}"\\} (\\d+)$`, 'm').exec(text)?.[1];
    for (const side of ['client', 'server']) {
      expect(line(side, 'Get', 'OK')).toBe('2');
      expect(line(side, 'Put', 'OK')).toBe('1');
      expect(line(side, 'Put', 'FAILED_PRECONDITION')).toBe('1');
      expect(line(side, 'Delete', 'OK')).toBe('1');
    }
    const size = /^svc_grpc_server_request_size_bytes_sum\{grpc_service="svc.databroker.v1.DataBroker",grpc_method="Put",grpc_code="OK"\} (\d+)$/m.exec(text)?.[1];
    expect(Number(size)).toBeGreaterThan(50);
    expect(text).toMatch(/^svc_grpc_client_request_duration_ms_count\{grpc_service="svc.databroker.v1.DataBroker",grpc_method="Get",grpc_code="OK"\} 2$/m);
  });
});
