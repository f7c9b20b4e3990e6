/**
 * runtime/grpc/client.ts `dnsRoundRobin` (`grpc_client_dns_roundrobin`, docs/configuration.md "Settings"), with real gRPC
 * servers on loopback: a URL whose host name resolves to two addresses (a data broker on
 * 127.0.0.1:P and one on 127.0.0.2:P) gets its calls spread over both with round robin, and sent to
 * one only without it; over TLS the certificate is checked against the URL's host name, not the
 * address it resolved to.
 *
 * The name: this machine's `localhost` resolves to 127.0.0.1 only (no `::1` line in /etc/hosts), and
 * no name here resolves to two addresses without editing /etc/hosts. So the system resolver's
 * answer (node:dns `promises.lookup`, which grpc-js's DNS resolver calls) is replaced for one test
 * name, `broker.svc.test`, with both addresses; every other name resolves as usual, and the
 * connections and calls are real.
 */
import dns from 'node:dns';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { MemoryStore } from '../../../runtime/databroker/memory-store.ts';
import { channelTarget, clientChannelOptions, GrpcClient, ROUND_ROBIN_SERVICE_CONFIG, type ClientTls } from '../../../runtime/grpc/client.ts';
import { serviceCredentialKey } from '../../../runtime/grpc/credential.ts';
import { DATABROKER_SERVICE, databrokerService } from '../../../runtime/grpc/proto.ts';
import { generateSelfSigned } from '../../../runtime/tls/self-signed.ts';
import type { GrpcObserver } from '../../../runtime/observe/metrics/grpc.ts';
import type { ServerTls } from '../../../runtime/grpc/server.ts';
import { GRPC_TEST_SECRET, startBroker } from '../databroker/grpc-support.ts';
import { freePort } from '../../support/ports.ts';

const NAME = 'broker.svc.test';
const ADDRESSES = ['127.0.0.1', '127.0.0.2'] as const;

const cleanup: (() => Promise<unknown> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.splice(0).reverse()) await c();
});

// NAME resolves to both loopback addresses; any other name as the system says.
const systemLookup = dns.promises.lookup;
beforeEach(() => {
  const lookup = (async (hostname: string, options?: unknown) => {
    if (hostname === NAME) return ADDRESSES.map((address) => ({ address, family: 4 }));
    return (systemLookup as (h: string, o?: unknown) => Promise<unknown>)(hostname, options);
  }) as typeof dns.promises.lookup;
  dns.promises.lookup = lookup;
  cleanup.push(() => {
    dns.promises.lookup = systemLookup;
  });
});

/** A data broker on each address of NAME at one port; `calls[i]`: the calls the one on ADDRESSES[i] answered. */
async function brokers(tls: ServerTls | null = null): Promise<{ port: number; calls: number[] }> {
  const port = await freePort(); // free on every address, so on both of NAME's
  const calls = ADDRESSES.map(() => 0);
  for (const [i, address] of ADDRESSES.entries()) {
    const store = new MemoryStore();
    const observer: GrpcObserver = { call: (side) => void (side === 'server' && calls[i]!++) };
    const b = await startBroker(store, { address: `${address}:${port}`, observer, tls });
    cleanup.push(() => store.close(), () => b.stop());
  }
  return { port, calls };
}

function client(url: string, dnsRoundRobin: boolean, tls: ClientTls | null = null): GrpcClient {
  const c = new GrpcClient(DATABROKER_SERVICE, databrokerService(), { urls: [url], credentialKey: serviceCredentialKey(GRPC_TEST_SECRET), tls, timeoutMs: 5_000, dnsRoundRobin });
  cleanup.push(() => c.close());
  return c;
}

const isRevoked = (c: GrpcClient) => c.unary<{ id: string }, { value: boolean }>('IsRevoked', { id: 'x' });

/** Calls until both brokers answered one (round robin reaches the second once it is connected), at most `limit`. */
async function callUntilBoth(c: GrpcClient, calls: number[], limit = 200): Promise<void> {
  for (let i = 0; i < limit && calls.some((n) => n === 0); i++) await isRevoked(c);
}

describe('grpc_client_dns_roundrobin', () => {
  it('true: the calls to one URL are spread over every address its host name resolves to', async () => {
    const { port, calls } = await brokers();
    const c = client(`http://${NAME}:${port}`, true);
    await callUntilBoth(c, calls);
    expect(calls.every((n) => n > 0)).toBe(true);
    // Both connected: round robin takes them in turn.
    const before = [...calls];
    for (let i = 0; i < 10; i++) await isRevoked(c);
    expect(calls.map((n, i) => n - before[i]!)).toEqual([5, 5]);
  });

  it('false: every call goes to one address', async () => {
    const { port, calls } = await brokers();
    const c = client(`http://${NAME}:${port}`, false);
    for (let i = 0; i < 40; i++) await isRevoked(c);
    expect([...calls].sort((a, b) => a - b)).toEqual([0, 40]);
  });

  it('over TLS the certificate is checked against the URL host name, not the resolved address', async () => {
    const cert = await generateSelfSigned(NAME);
    const { port, calls } = await brokers({ cert: cert.certPem, key: cert.keyPem });
    const c = client(`https://${NAME}:${port}`, true, { ca: cert.certPem });
    await callUntilBoth(c, calls);
    expect(calls.every((n) => n > 0)).toBe(true);

    // A certificate for another name is refused on either address.
    const other = await generateSelfSigned('other.svc.test');
    const { port: otherPort, calls: otherCalls } = await brokers({ cert: other.certPem, key: other.keyPem });
    const refused = new GrpcClient(DATABROKER_SERVICE, databrokerService(), { urls: [`https://${NAME}:${otherPort}`], credentialKey: serviceCredentialKey(GRPC_TEST_SECRET), tls: { ca: other.certPem }, timeoutMs: 500, dnsRoundRobin: true });
    cleanup.push(() => refused.close());
    await expect(isRevoked(refused)).rejects.toMatchObject({ code: 14 }); // UNAVAILABLE
    expect(otherCalls).toEqual([0, 0]);
  });

  it('channel options: round robin as svc’s own service config, never one from DNS TXT records', () => {
    expect(channelTarget('https://broker.example.com:5443')).toBe('dns:///broker.example.com:5443');
    expect(channelTarget('http://[::1]:5443')).toBe('dns:///[::1]:5443');
    const on = clientChannelOptions({ tls: null, dnsRoundRobin: true });
    expect(JSON.parse(String(on['grpc.service_config']))).toEqual({ loadBalancingConfig: [{ round_robin: {} }] });
    expect(on['grpc.service_config']).toBe(ROUND_ROBIN_SERVICE_CONFIG);
    expect(on['grpc.service_config_disable_resolution']).toBe(1);
    const off = clientChannelOptions({ tls: null, dnsRoundRobin: false });
    expect(off['grpc.service_config']).toBeUndefined();
    expect(off['grpc.service_config_disable_resolution']).toBe(1);
    const named = clientChannelOptions({ tls: { serverName: 'databroker.internal' }, dnsRoundRobin: true });
    expect(named['grpc.ssl_target_name_override']).toBe('databroker.internal');
    expect(named['grpc.default_authority']).toBe('databroker.internal');
  });
});
