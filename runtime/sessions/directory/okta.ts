/**
 * Okta's directory (docs/authentication.md "Groups from the directory"), with an API token
 * (`Authorization: SSWS …`) at the origin of `idp_provider_url` (or `api_url`): groups
 * (`GET /api/v1/groups`), each group's users (`GET /api/v1/groups/{id}/users`) and every user
 * (`GET /api/v1/users`), paged with `Link: rel="next"` (`after` cursors). A group matches by its id
 * and its `profile.name`; a user counts as known unless `DEPROVISIONED` or `SUSPENDED`. Rate
 * limits answer 429 with `x-rate-limit-reset` (./http.ts waits it out).
 */
import type { ServiceAccount } from '../../../compiler/plan/service-account.ts';
import { arrayOf, DirectoryError, idOf, mapBounded, nextLink, readPages, type DirectoryCall, type JsonAnswer } from './http.ts';
import { snapshot, type DirectoryClient, type DirectorySnapshot } from './types.ts';

const GONE = new Set(['DEPROVISIONED', 'SUSPENDED']);

export function oktaDirectory(account: ServiceAccount, providerUrl: string | null): DirectoryClient {
  const explicit = account.fields['api_url'];
  if (explicit === undefined && providerUrl === null) throw new DirectoryError('okta: idp_provider_url (or the service account\'s api_url) names no Okta domain');
  const api = `${(explicit ?? new URL(providerUrl!).origin).replace(/\/+$/, '')}/api/v1`;
  const headers = { authorization: `SSWS ${account.fields['api_key']!}` };
  const next = (a: JsonAnswer) => nextLink(a.headers.get('link'), a.url);
  return {
    provider: 'okta',
    async read(call: DirectoryCall): Promise<DirectorySnapshot> {
      const groups = await readPages(call, `${api}/groups?limit=200`, headers, (a) => arrayOf(a), next);
      const read = await mapBounded(groups, 4, async (g) => {
        const id = idOf(g);
        if (id === undefined) return undefined;
        const members = await readPages(call, `${api}/groups/${encodeURIComponent(id)}/users?limit=200`, headers, (a) => arrayOf(a), next);
        const profile = g['profile'] as Record<string, unknown> | undefined;
        const names = typeof profile?.['name'] === 'string' ? [profile['name']] : [];
        return { id, names, members: members.filter((u) => !GONE.has(String(u['status']))).flatMap((u) => idOf(u) ?? []) };
      });
      const users = await readPages(call, `${api}/users?limit=200`, headers, (a) => arrayOf(a), next);
      return snapshot(
        read.filter((g) => g !== undefined),
        users.filter((u) => !GONE.has(String(u['status']))).flatMap((u) => idOf(u) ?? []),
      );
    },
  };
}
