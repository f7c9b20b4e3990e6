/**
 * ID tokens for serverless cloud upstreams (runtime/authn/serverless-token.ts; docs/authentication.md
 * "Serverless upstreams"), against a local token endpoint that speaks Google's documented JWT
 * bearer grant (a JWT signed with the service-account key, `target_audience` set, posted to the
 * key file's `token_uri`; the answer's `id_token`) and a local metadata server (`identity?audience=`
 * with `Metadata-Flavor: Google`). The keys are generated here and are TEST ONLY.
 */
import { generateKeyPairSync } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, importJWK, jwtVerify, SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EXPIRY_MARGIN_MS, REFRESH_MARGIN_MS, ServerlessTokenError, ServerlessTokens, keyFileSource, parseServiceAccountKey, tokenSourceOf } from '../../../runtime/authn/serverless-token.ts';

/** The service account's key pair (TEST ONLY) and the "cloud's" ID-token signing key (TEST ONLY). */
const account = generateKeyPairSync('rsa', { modulusLength: 2048 });
const cloud = generateKeyPairSync('rsa', { modulusLength: 2048 });
const EMAIL = 'svc-test@test-project.iam.example';

/** A local token endpoint: checks the grant and its assertion, answers an ID token for the target audience. */
async function tokenEndpoint(): Promise<{ url: string; calls: string[]; fail: { status: number }; lifetimeS: { value: number }; close(): Promise<void> }> {
  const calls: string[] = [];
  const fail = { status: 0 };
  const lifetimeS = { value: 3600 };
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      void (async () => {
        if (fail.status !== 0) {
          res.writeHead(fail.status, { 'content-type': 'application/json' }).end('{"error":"invalid_grant"}');
          return;
        }
        const form = new URLSearchParams(body);
        if (form.get('grant_type') !== 'urn:ietf:params:oauth:grant-type:jwt-bearer') return void res.writeHead(400).end('{"error":"unsupported_grant_type"}');
        const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/token`;
        try {
          const { payload, protectedHeader } = await jwtVerify(form.get('assertion') ?? '', account.publicKey, { issuer: EMAIL, subject: EMAIL, audience: url });
          if (protectedHeader.kid !== 'test-key-id') throw new Error('kid');
          const audience = String(payload['target_audience']);
          calls.push(audience);
          const now = Math.floor(Date.now() / 1000);
          const idToken = await new SignJWT({ email: EMAIL }).setProtectedHeader({ alg: 'RS256' }).setIssuer('https://cloud.test').setAudience(audience).setIssuedAt(now).setExpirationTime(now + lifetimeS.value).sign(cloud.privateKey);
          res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ id_token: idToken }));
        } catch {
          res.writeHead(400, { 'content-type': 'application/json' }).end('{"error":"invalid_grant"}');
        }
      })();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/token`;
  return { url, calls, fail, lifetimeS, close: () => new Promise((r) => server.close(() => r())) };
}

const keyJson = (tokenUri: string) => JSON.stringify({ type: 'service_account', client_email: EMAIL, private_key: account.privateKey.export({ type: 'pkcs8', format: 'pem' }), private_key_id: 'test-key-id', token_uri: tokenUri });

describe('serverless ID tokens from a service-account key', () => {
  let endpoint: Awaited<ReturnType<typeof tokenEndpoint>>;
  beforeAll(async () => (endpoint = await tokenEndpoint()));
  afterAll(() => endpoint.close());

  it("gets an ID token for the audience from the key file's token_uri, signed by the cloud", async () => {
    const tokens = new ServerlessTokens(keyFileSource(parseServiceAccountKey(keyJson(endpoint.url), 'key')));
    const token = await tokens.token('https://app.run.example');
    const { payload } = await jwtVerify(token, await importJWK(await exportJWK(cloud.publicKey), 'RS256'), { audience: 'https://app.run.example', issuer: 'https://cloud.test' });
    expect(payload['email']).toBe(EMAIL);
  });

  it('reuses a token until shortly before it expires (one call per audience), synchronously', async () => {
    endpoint.calls.length = 0;
    const tokens = new ServerlessTokens(keyFileSource(parseServiceAccountKey(keyJson(endpoint.url), 'key')));
    const first = await tokens.token('https://a.run.example');
    expect(tokens.token('https://a.run.example')).toBe(first);
    expect(tokens.token('https://a.run.example')).toBe(first);
    await tokens.token('https://b.run.example');
    expect(endpoint.calls).toEqual(['https://a.run.example', 'https://b.run.example']);
  });

  it('asks once for concurrent first requests', async () => {
    endpoint.calls.length = 0;
    const tokens = new ServerlessTokens(keyFileSource(parseServiceAccountKey(keyJson(endpoint.url), 'key')));
    const all = await Promise.all([tokens.token('https://c.run.example'), tokens.token('https://c.run.example'), tokens.token('https://c.run.example')]);
    expect(new Set(all).size).toBe(1);
    expect(endpoint.calls).toEqual(['https://c.run.example']);
  });

  it('refreshes in the background near expiry, serving the cached token meanwhile; waits only once it has expired', async () => {
    endpoint.calls.length = 0;
    let now = Date.now();
    const tokens = new ServerlessTokens(keyFileSource(parseServiceAccountKey(keyJson(endpoint.url), 'key')), () => now);
    const first = await tokens.token('https://d.run.example');
    const expiresAt = now + 3600_000;
    now = expiresAt - REFRESH_MARGIN_MS + 1_000; // inside the refresh window
    expect(tokens.token('https://d.run.example')).toBe(first); // served at once
    await new Promise((r) => setTimeout(r, 300));
    expect(endpoint.calls).toHaveLength(2); // refreshed beside it
    now = Date.now() + 3600_000 - EXPIRY_MARGIN_MS + 1_000; // the refreshed one is past its margin too
    const later = tokens.token('https://d.run.example');
    expect(later).toBeInstanceOf(Promise);
    await later;
    expect(endpoint.calls).toHaveLength(3);
  });

  it('fails closed: an endpoint that refuses gives ServerlessTokenError, and nothing is cached', async () => {
    endpoint.fail.status = 503;
    try {
      const tokens = new ServerlessTokens(keyFileSource(parseServiceAccountKey(keyJson(endpoint.url), 'key')));
      await expect(tokens.token('https://e.run.example')).rejects.toThrow(ServerlessTokenError);
      await expect(tokens.token('https://e.run.example')).rejects.toThrow(/answered 503/);
    } finally {
      endpoint.fail.status = 0;
    }
  });

  it('fails closed when the endpoint cannot be reached', async () => {
    const tokens = new ServerlessTokens(keyFileSource(parseServiceAccountKey(keyJson('http://127.0.0.1:1/token'), 'key')));
    await expect(tokens.token('https://f.run.example')).rejects.toThrow(/cannot be reached/);
  });

  it('names the missing field of a key file that cannot be used', () => {
    expect(() => parseServiceAccountKey('{"client_email":"x@y"}', 'the key')).toThrow(/the key has no `private_key`/);
    expect(() => parseServiceAccountKey('not json', 'the key')).toThrow(ServerlessTokenError);
  });
});

describe('serverless ID tokens from ambient credentials', () => {
  let metadata: Server;
  let host: string;
  const asked: { audience: string | null; flavor: string | undefined }[] = [];
  beforeAll(async () => {
    metadata = createServer((req, res) => {
      const url = new URL(req.url ?? '/', 'http://metadata');
      if (url.pathname !== '/computeMetadata/v1/instance/service-accounts/default/identity') return void res.writeHead(404).end();
      asked.push({ audience: url.searchParams.get('audience'), flavor: req.headers['metadata-flavor'] as string | undefined });
      if (req.headers['metadata-flavor'] !== 'Google') return void res.writeHead(403).end();
      const now = Math.floor(Date.now() / 1000);
      void new SignJWT({}).setProtectedHeader({ alg: 'RS256' }).setAudience(url.searchParams.get('audience') ?? '').setExpirationTime(now + 3600).sign(cloud.privateKey).then((t) => res.end(t));
    });
    await new Promise<void>((r) => metadata.listen(0, '127.0.0.1', r));
    host = `127.0.0.1:${(metadata.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((r) => metadata.close(() => r())));

  it('asks the metadata server GCE_METADATA_HOST names, with Metadata-Flavor: Google', async () => {
    const tokens = new ServerlessTokens(tokenSourceOf(null, { GCE_METADATA_HOST: host }));
    const token = await tokens.token('https://g.run.example');
    await jwtVerify(token, cloud.publicKey, { audience: 'https://g.run.example' });
    expect(asked).toEqual([{ audience: 'https://g.run.example', flavor: 'Google' }]);
  });

  it('a key file named by GOOGLE_APPLICATION_CREDENTIALS that cannot be read is an error at once', () => {
    expect(() => tokenSourceOf(null, { GOOGLE_APPLICATION_CREDENTIALS: '/nonexistent/key.json' })).toThrow(/GOOGLE_APPLICATION_CREDENTIALS: cannot read/);
  });
});
