/**
 * `svc devices` (docs/authentication.md "Devices") against a real data broker gRPC server on
 * loopback over a memory store: list (all, one user, JSON and text), approve, revoke, an unknown
 * device, a wrong shared secret, and the usage errors.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { main } from '../../cli/main.ts';
import { databrokerGrpcService } from '../../runtime/databroker/grpc-service.ts';
import { MemoryStore } from '../../runtime/databroker/memory-store.ts';
import { serviceCredentialKey } from '../../runtime/grpc/credential.ts';
import { startGrpcServer, type GrpcServerHandle } from '../../runtime/grpc/server.ts';
import { BASE_SETTINGS, TEST_SECRET } from '../support/compile-text.ts';

async function svc(args: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const code = await main(args, { out: (s) => (out += s), err: (s) => (err += s) });
  return { code, out, err };
}

describe('svc devices', () => {
  const store = new MemoryStore({ sweepIntervalMs: 0 });
  const service = databrokerGrpcService(store);
  let server: GrpcServerHandle;
  let config: string;
  let url: string;

  beforeAll(async () => {
    server = await startGrpcServer({ address: '127.0.0.1:0', credentialKey: serviceCredentialKey(Buffer.from(String(TEST_SECRET), 'base64')), tls: null }, [service]);
    url = `http://127.0.0.1:${server.port}`;
    const dir = mkdtempSync(join(tmpdir(), 'svc-devices-'));
    config = join(dir, 'config.yaml');
    writeFileSync(config, stringify({ ...BASE_SETTINGS, grpc_client_timeout: '2s', routes: [{ from: 'https://app.example.com', to: 'http://127.0.0.1:9' }] }));
    await store.addDevice({ credentialId: 'cred-alice-AAAAAAAAAAAAAAAA', userId: 'alice', type: 'enclave_only', publicKey: 'pQECAyYg', counter: 7, approved: false, transports: ['internal'], createdAtMs: Date.parse('2026-01-02T03:04:05Z') });
    await store.addDevice({ credentialId: 'cred-bob-BBBBBBBBBBBBBBBBBB', userId: 'bob', type: 'any', publicKey: 'pQECAyYg', counter: 0, approved: true, transports: ['usb'], createdAtMs: Date.parse('2026-01-03T03:04:05Z') });
  });
  afterAll(async () => {
    service.close();
    await server?.close(0);
    await store.close();
  });

  it('lists every device, or one user\'s, without public keys', async () => {
    const all = await svc(['devices', 'list', '-config', config, '--databroker', url, '--format', 'json']);
    expect(all.code).toBe(0);
    const listed = JSON.parse(all.out) as { devices: Record<string, unknown>[] };
    expect(listed.devices).toEqual([
      { credentialId: 'cred-alice-AAAAAAAAAAAAAAAA', user: 'alice', type: 'enclave_only', approved: false, counter: 7, transports: ['internal'], createdAt: '2026-01-02T03:04:05.000Z' },
      { credentialId: 'cred-bob-BBBBBBBBBBBBBBBBBB', user: 'bob', type: 'any', approved: true, counter: 0, transports: ['usb'], createdAt: '2026-01-03T03:04:05.000Z' },
    ]);
    expect(all.out).not.toContain('pQECAyYg');
    const bob = await svc(['devices', 'list', '-config', config, '--databroker', url, '--user', 'bob']);
    expect(bob.out).toBe('cred-bob-BBBBBBBBBBBBBBBBBB  bob  any  approved  counter 0  registered 2026-01-03T03:04:05.000Z\n');
  });

  it('approves and revokes; an unknown device is exit 1', async () => {
    expect(await svc(['devices', 'approve', 'cred-alice-AAAAAAAAAAAAAAAA', '-config', config, '--databroker', url])).toEqual({ code: 0, out: 'approved cred-alice-AAAAAAAAAAAAAAAA\n', err: '' });
    expect((await store.getDevice('cred-alice-AAAAAAAAAAAAAAAA'))?.approved).toBe(true);
    expect(await svc(['devices', 'revoke', 'cred-alice-AAAAAAAAAAAAAAAA', '-config', config, '--databroker', url])).toEqual({ code: 0, out: 'revoked cred-alice-AAAAAAAAAAAAAAAA\n', err: '' });
    expect(await store.getDevice('cred-alice-AAAAAAAAAAAAAAAA')).toBeUndefined();
    const again = await svc(['devices', 'revoke', 'cred-alice-AAAAAAAAAAAAAAAA', '-config', config, '--databroker', url]);
    expect(again).toMatchObject({ code: 1, err: 'error: no device `cred-alice-AAAAAAAAAAAAAAAA`\n' });
  });

  it('is refused by a data broker with another shared secret', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-devices-'));
    const other = join(dir, 'config.yaml');
    writeFileSync(other, stringify({ ...BASE_SETTINGS, shared_secret: Buffer.alloc(32, 3).toString('base64'), grpc_client_timeout: '2s', routes: [{ from: 'https://app.example.com', to: 'http://127.0.0.1:9' }] }));
    const r = await svc(['devices', 'list', '-config', other, '--databroker', url]);
    expect(r.code).toBe(2);
    expect(r.err).toMatch(/^error: the data broker did not answer: .*UNAUTHENTICATED/);
  });

  it('usage errors: an unknown action, a missing credential id, no config', async () => {
    expect(await svc(['devices', 'delete', 'x', '-config', config])).toMatchObject({ code: 2, err: 'error: unknown action `delete`: list, approve or revoke\n' });
    expect((await svc(['devices', 'approve', '-config', config])).code).toBe(2);
    expect((await svc(['devices', 'list'])).err).toContain('-config <file> is required');
  });
});
