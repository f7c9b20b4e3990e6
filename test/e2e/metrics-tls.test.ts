/**
 * The metrics endpoint over TLS (`metrics_certificate_file`, `metrics_certificate_key_file`) with
 * client certificates (`metrics_client_ca_file`): a client without a certificate, or with one from
 * another CA, gets no TLS session and so no metrics (nor health); a client with a certificate from
 * the CA gets them, and still needs `metrics_basic_auth` when it is set. All keys here are TEST ONLY.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { run, type Running } from '../../runtime/process/run.ts';
import { issue, makeCa, type Issued } from '../runtime/tls/pki.ts';
import { freePort, scrape } from './metrics-support.ts';
import { configDir, echo, startUpstream, type Upstream } from './support.ts';

const CREDENTIAL = 'prometheus:test-only-metrics-password';

describe('metrics over TLS with client certificates', () => {
  let up: Upstream;
  let svc: Running;
  let port = 0;
  let ca: Issued;
  let client: Issued;
  let stranger: Issued;
  const cfg = configDir();

  beforeAll(async () => {
    up = await startUpstream(echo);
    ca = await makeCa('svc metrics test CA (TEST ONLY)');
    const clientCa = await makeCa('svc metrics test client CA (TEST ONLY)');
    const otherCa = await makeCa('svc metrics test unrelated CA (TEST ONLY)');
    const server = await issue(ca, { cn: 'localhost', dns: ['localhost'], usage: 'server' });
    client = await issue(clientCa, { cn: 'prometheus', usage: 'client' });
    stranger = await issue(otherCa, { cn: 'prometheus', usage: 'client' });
    port = await freePort();
    cfg.write(
      {
        address: '127.0.0.1:8443',
        metrics_address: `127.0.0.1:${port}`,
        metrics_certificate_file: cfg.file('metrics.pem', server.certPem),
        metrics_certificate_key_file: cfg.file('metrics.key', server.keyPem),
        metrics_client_ca_file: cfg.file('metrics-ca.pem', clientCa.certPem),
        metrics_basic_auth: Buffer.from(CREDENTIAL).toString('base64'),
      },
      [{ from: 'https://app.example.com', to: up.url, allow_public_unauthenticated_access: true }],
    );
    svc = await run({ configPath: cfg.path, listen: { host: '127.0.0.1', port: 0 }, grpcListen: { host: '127.0.0.1', port: 0 }, watch: false });
  });

  afterAll(async () => {
    await svc?.close();
    await up?.close();
    cfg.remove();
  });

  const trust = () => ({ ca: ca.certPem, servername: 'localhost' });

  it('refuses a client without a certificate: no TLS session, no metrics, no health', async () => {
    await expect(scrape(port, { credential: CREDENTIAL, tls: trust() })).rejects.toThrow();
    await expect(scrape(port, { path: '/healthz', tls: trust() })).rejects.toThrow();
  });

  it('refuses a certificate from another CA', async () => {
    await expect(scrape(port, { credential: CREDENTIAL, tls: { ...trust(), cert: stranger.certPem, key: stranger.keyPem } })).rejects.toThrow();
  });

  it('serves a client with a certificate from metrics_client_ca, which still needs the credential', async () => {
    const tls = { ...trust(), cert: client.certPem, key: client.keyPem };
    const ok = await scrape(port, { credential: CREDENTIAL, tls });
    expect(ok.status).toBe(200);
    expect(ok.body).toContain('svc_build_info{');
    const anonymous = await scrape(port, { tls });
    expect(anonymous.status).toBe(401);
    expect(anonymous.body).not.toContain('svc_');
    expect((await scrape(port, { path: '/readyz', tls })).status).toBe(200);
  });

  it('a plain-HTTP client gets nothing', async () => {
    await expect(scrape(port, { credential: CREDENTIAL })).rejects.toThrow();
  });
});
