/**
 * Google Workspace's directory (docs/authentication.md "Groups from the directory"): a service
 * account with domain-wide delegation, acting as `impersonate_user` (a Workspace admin). Its access
 * token comes from the key file's `token_uri` by the JWT bearer grant (RFC 7523), the assertion
 * signed here with node:crypto (RS256) so that a custom `token_uri` is honoured. Then the Admin SDK
 * Directory API: groups (`GET /admin/directory/v1/groups?customer=my_customer`), each group's
 * members with nested groups resolved (`…/groups/{id}/members?includeDerivedMembership=true`, users
 * only) and every user (`…/users?customer=my_customer`), paged with `pageToken`. A group matches
 * by its id and its email; users are keyed by their id (the ID token's `sub`); a suspended user is
 * not known. Quota errors answer 429 (or 403 `rateLimitExceeded`): ./http.ts waits them out.
 */
import { createSign } from 'node:crypto';
import type { ServiceAccount } from '../../../compiler/plan/service-account.ts';
import { arrayOf, DirectoryError, idOf, mapBounded, readPages, requestJson, type DirectoryCall, type JsonAnswer } from './http.ts';
import { snapshot, type DirectoryClient, type DirectorySnapshot } from './types.ts';

export const GOOGLE_SCOPES = ['https://www.googleapis.com/auth/admin.directory.group.readonly', 'https://www.googleapis.com/auth/admin.directory.user.readonly'];

const b64url = (v: string | Buffer) => Buffer.from(v).toString('base64url');

/** The signed JWT assertion of the bearer grant: the service account acting as `impersonate_user`. */
export function googleAssertion(account: ServiceAccount, tokenUri: string, nowMs: number): string {
  const f = account.fields;
  const iat = Math.floor(nowMs / 1000);
  const header = { alg: 'RS256', typ: 'JWT', ...(f['private_key_id'] ? { kid: f['private_key_id'] } : {}) };
  const claims = { iss: f['client_email'], sub: f['impersonate_user'], scope: GOOGLE_SCOPES.join(' '), aud: tokenUri, iat, exp: iat + 3600 };
  const input = `${b64url(JSON.stringify(header))}.${b64url(JSON.stringify(claims))}`;
  let signature: Buffer;
  try {
    signature = createSign('RSA-SHA256').update(input).sign(f['private_key']!);
  } catch (e) {
    throw new DirectoryError('google: the service account\'s private_key cannot sign', { cause: e });
  }
  return `${input}.${b64url(signature)}`;
}

/** The next page: the same URL with `pageToken` set to the answer's `nextPageToken`. */
function nextPage(a: JsonAnswer): string | undefined {
  const t = (a.body as Record<string, unknown> | null)?.['nextPageToken'];
  if (typeof t !== 'string' || t === '') return undefined;
  const u = new URL(a.url);
  u.searchParams.set('pageToken', t);
  return u.href;
}

export function googleDirectory(account: ServiceAccount): DirectoryClient {
  const f = account.fields;
  const tokenUri = f['token_uri'] ?? 'https://oauth2.googleapis.com/token';
  const api = `${(f['api_url'] ?? 'https://admin.googleapis.com').replace(/\/+$/, '')}/admin/directory/v1`;
  return {
    provider: 'google',
    async read(call: DirectoryCall): Promise<DirectorySnapshot> {
      const token = await requestJson(call, tokenUri, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ grant_type: 'urn:ietf:params:oauth:grant-type:jwt-bearer', assertion: googleAssertion(account, tokenUri, (call.now ?? Date.now)()) }).toString(),
      });
      const access = (token.body as Record<string, unknown> | null)?.['access_token'];
      if (typeof access !== 'string' || access === '') throw new DirectoryError('google: the token endpoint answered without an access_token');
      const headers = { authorization: `Bearer ${access}` };
      const groups = await readPages(call, `${api}/groups?customer=my_customer&maxResults=200`, headers, (a) => arrayOf(a, 'groups'), nextPage);
      const read = await mapBounded(groups, 4, async (g) => {
        const id = idOf(g);
        if (id === undefined) return undefined;
        const members = await readPages(call, `${api}/groups/${encodeURIComponent(id)}/members?includeDerivedMembership=true&maxResults=200`, headers, (a) => arrayOf(a, 'members'), nextPage);
        const names = typeof g['email'] === 'string' ? [g['email']] : [];
        return { id, names, members: members.filter((m) => (m['type'] === undefined || m['type'] === 'USER') && (m['status'] === undefined || m['status'] === 'ACTIVE')).flatMap((m) => idOf(m) ?? []) };
      });
      const users = await readPages(call, `${api}/users?customer=my_customer&maxResults=500`, headers, (a) => arrayOf(a, 'users'), nextPage);
      return snapshot(
        read.filter((g) => g !== undefined),
        users.filter((u) => u['suspended'] !== true && u['archived'] !== true).flatMap((u) => idOf(u) ?? []),
      );
    },
  };
}
