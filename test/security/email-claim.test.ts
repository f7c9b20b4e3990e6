/**
 * The email claim trusted as it comes (docs/security.md S53): against a real `svc run` on loopback with the
 * real OpenID provider (oidc-provider, demo/dev-idp.ts) issuing the ID tokens, and an echo upstream.
 *
 * The rule (docs/policy.md "Emails", docs/authentication.md "Emails"): an email counts for policy,
 * and is sent upstream, only when it is one RFC 5322 address (exactly one `@`, a host name domain)
 * and the provider marked it verified (`email_verified: true`; absent or false is no email unless
 * `idp_trust_unverified_email`, which never admits a malformed one). Domains compare
 * case-insensitively. Each variant is tried against every email criterion: `domain`, `email
 * ends_with`, `claim/email`.
 */
import { decodeJwt } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DevUser } from '../../demo/dev-idp.ts';
import type { Hop } from '../support/http-browser.ts';
import { startAuthWorld, testSigningKey, type AuthWorld } from '../e2e/auth-support.ts';

const last = (hops: Hop[]): Hop => hops[hops.length - 1]!;
const echoed = (hop: Hop): { headers: Record<string, string> } => JSON.parse(hop.body) as { headers: Record<string, string> };

const user = (id: string, email: string, emailVerified: boolean | null = true): DevUser => ({ id, email, name: id, groups: [], emailVerified });

/** Provider accounts whose email must not pass a policy about `corp.example`. */
const FORGED: readonly DevUser[] = [
  user('two-ats', 'x@evil.example@corp.example'),
  user('quoted', '"x@evil.example"@corp.example'),
  user('final-dot', 'x@corp.example.'),
  user('trailing-space', 'x@corp.example '),
  user('literal', 'x@[10.0.0.1]'),
];
const UNVERIFIED: readonly DevUser[] = [user('unverified', 'someone@corp.example', false), user('silent', 'quiet@corp.example', null)];
const MIXED = user('mixed', 'Carol@Corp.EXAMPLE');
const PLAIN = user('plain', 'dave@corp.example');

/** One route per email criterion, each passing the email upstream. */
const CRITERIA = {
  domain: 'allow if domain is "corp.example"',
  ends: 'allow if email ends_with "@corp.example"',
  claim: 'allow if claim/email ends_with "@corp.example"',
  upper: 'allow if domain in ["CORP.Example"]',
} as const;

const routes = [
  ...Object.entries(CRITERIA).map(([name, policy]) => ({ name, from: `https://${name}.localhost:PORT`, to: 'UPSTREAM', policy, pass_identity_headers: true })),
  { name: 'any', from: 'https://any.localhost:PORT', to: 'UPSTREAM', allow_any_authenticated_user: true, pass_identity_headers: true },
];
const REASON = { domain: 'domain-unauthorized', ends: 'email-unauthorized', claim: 'claim-unauthorized' } as const;
const settings = { signing_key: testSigningKey(), jwt_claims_headers: { 'X-Email': 'email' } };

/** Signs `who` in at the route `name` and returns the final answer. */
async function visit(w: AuthWorld, name: keyof typeof CRITERIA | 'any', who: DevUser): Promise<Hop> {
  return last(await w.browser().signIn(`${w.origin(name)}/`, who.id));
}

describe('issue 13 §3: the email claim is checked before policy or upstreams see it', () => {
  let w: AuthWorld;
  let trusting: AuthWorld;

  beforeAll(async () => {
    const users = [...FORGED, ...UNVERIFIED, MIXED, PLAIN];
    w = await startAuthWorld({ users, settings, routes });
    trusting = await startAuthWorld({ users, settings: { ...settings, idp_trust_unverified_email: true }, routes });
  });
  afterAll(async () => {
    await w?.close();
    await trusting?.close();
  });

  it('a verified plain address passes every email criterion and is sent upstream', async () => {
    for (const name of Object.keys(CRITERIA) as (keyof typeof CRITERIA)[]) {
      const end = await visit(w, name, PLAIN);
      expect(end.status, name).toBe(200);
      expect(echoed(end).headers['x-email']).toBe('dave@corp.example');
    }
  });

  it('an email that is not one address is no email: denied by every email criterion, nothing forwarded', async () => {
    for (const who of FORGED) {
      for (const name of ['domain', 'ends', 'claim'] as const) {
        const end = await visit(w, name, who);
        expect(end.status, `${who.email} on ${name}`).toBe(403);
        expect(end.body).toContain(REASON[name]);
      }
    }
    // Even an operator who trusts unverified emails never gets a malformed one.
    const end = await visit(trusting, 'domain', FORGED[0]!);
    expect(end.status).toBe(403);
  });

  it('an email the provider did not verify (false or absent) is no email, unless idp_trust_unverified_email', async () => {
    for (const who of UNVERIFIED) {
      for (const name of ['domain', 'ends', 'claim'] as const) {
        expect((await visit(w, name, who)).status, `${who.id} on ${name}`).toBe(403);
      }
      const trusted = await visit(trusting, 'domain', who);
      expect(trusted.status, who.id).toBe(200);
      expect(echoed(trusted).headers['x-email']).toBe(who.email);
    }
  });

  it('a mixed-case domain matches in lower case and is forwarded with its domain lower-cased', async () => {
    for (const name of Object.keys(CRITERIA) as (keyof typeof CRITERIA)[]) {
      const end = await visit(w, name, MIXED);
      expect(end.status, name).toBe(200);
      const headers = echoed(end).headers;
      expect(headers['x-email']).toBe('Carol@corp.example');
      expect(decodeJwt(headers['x-svc-jwt-assertion']!)['email']).toBe('Carol@corp.example');
    }
  });

  it('no unchecked email reaches the upstream, and a client copy of the header is removed', async () => {
    for (const who of [...FORGED, ...UNVERIFIED]) {
      const b = w.browser();
      await b.signIn(`${w.origin('any')}/`, who.id);
      const end = last(await b.navigate(`${w.origin('any')}/`, { headers: { 'x-email': 'admin@corp.example' } }));
      expect(end.status, who.id).toBe(200);
      const headers = echoed(end).headers;
      expect(headers['x-email'], who.id).toBeUndefined();
      expect(decodeJwt(headers['x-svc-jwt-assertion']!), who.id).not.toHaveProperty('email');
    }
  });
});
