/**
 * The start/reload side of route-host-without-certificate (SVC3542): the compiler warns of route
 * hosts the certificate names it read leave uncovered; a certificate file replaced afterwards (a
 * rotation a reload picks up, a plan file served later) can leave others uncovered, which only the
 * runtime sees. loadTlsMaterial tells of those, once while they stay uncovered, with the host and
 * the fix, and never repeats what the compiler already said.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PlanBody } from '../../../compiler/plan/types.ts';
import { uncoveredRouteHosts } from '../../../runtime/tls/host-names.ts';
import { loadTlsMaterial, type TlsMaterial } from '../../../runtime/tls/material.ts';
import { issue, makeCa, type Issued } from './pki.ts';
import { compileBody, open, TempFiles } from './plan.ts';

let files: TempFiles;
let both: Issued;
let appOnly: Issued;
let body: PlanBody;

const routes = ['app.example.com', 'api.example.com', 'other.example.com', '10.0.0.5'].map((h) => ({ from: `https://${h}`, to: 'http://127.0.0.1:1', ...open }));

beforeAll(async () => {
  files = new TempFiles();
  const ca = await makeCa('Test CA');
  both = await issue(ca, { cn: 'app.example.com', dns: ['app.example.com', 'api.example.com'] });
  appOnly = await issue(ca, { cn: 'app.example.com', dns: ['app.example.com'] });
  body = compileBody({ certificate_file: files.write('server.crt', both.certPem), certificate_key_file: files.write('server.key', both.keyPem) }, routes, files);
});

afterAll(() => files.remove());

/** Puts `i` in place of the server certificate and key, as a rotation does. */
function rotate(i: Issued): void {
  files.write('server.crt', i.certPem);
  files.write('server.key', i.keyPem);
}

async function load(previous?: TlsMaterial): Promise<{ material: TlsMaterial; warnings: Record<string, unknown>[] }> {
  const warnings: Record<string, unknown>[] = [];
  const material = await loadTlsMaterial(body, { mode: previous ? 'reload' : 'load', ...(previous ? { previous } : {}), warn: (e) => warnings.push(e) });
  return { material, warnings };
}

describe('uncoveredRouteHosts', () => {
  it('lists https route DNS hosts no name covers, once each, IP hosts left out', () => {
    expect(uncoveredRouteHosts(body, ['app.example.com'])).toEqual(['api.example.com', 'other.example.com']);
    expect(uncoveredRouteHosts(body, ['*.example.com'])).toEqual([]);
    expect(uncoveredRouteHosts(body, [])).toEqual(['api.example.com', 'app.example.com', 'other.example.com']);
  });
});

describe('loadTlsMaterial certificate name warnings', () => {
  it('says nothing when the certificates read are the ones compiled (the compiler told of other.example.com)', async () => {
    rotate(both);
    expect((await load()).warnings).toEqual([]);
  });

  it('tells of a host a rotated certificate no longer covers, once while it stays so, and again after a fix is undone', async () => {
    rotate(both);
    const start = await load();
    rotate(appOnly);
    const rotated = await load(start.material);
    expect(rotated.warnings).toEqual([
      {
        level: 'warn',
        msg: 'no certificate as read covers a route host: it is served a generated self-signed certificate',
        host: 'api.example.com',
        certificates: ['app.example.com'],
        help: "install a certificate covering `api.example.com` (the plan's certificate covered it), or enable `autocert`, or set `insecure_server: true` if TLS terminates before svc",
      },
    ]);
    const again = await load(rotated.material);
    expect(again.warnings).toEqual([]);
    rotate(both);
    const fixed = await load(again.material);
    expect(fixed.warnings).toEqual([]);
    rotate(appOnly);
    expect((await load(fixed.material)).warnings.map((w) => w['host'])).toEqual(['api.example.com']);
  });
});
