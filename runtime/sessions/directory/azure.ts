/**
 * Microsoft Entra ID's directory (docs/authentication.md "Groups from the directory"): an app-only
 * token by the client-credentials grant from the tenant's token endpoint
 * (`{login_url}/{directory_id}/oauth2/v2.0/token`, scope `{graph}/.default`), then Microsoft Graph:
 * groups (`GET /v1.0/groups`), each group's transitive members (`GET
 * /v1.0/groups/{id}/transitiveMembers`, users only) and every user (`GET /v1.0/users`), paged with
 * `@odata.nextLink`. A group matches by its object id and its `displayName`; users are keyed by
 * their object id (the ID token's `oid`); a user with `accountEnabled: false` is not known.
 * Throttling answers 429 with `Retry-After` (./http.ts waits it out).
 */
import type { ServiceAccount } from '../../../compiler/plan/service-account.ts';
import { arrayOf, DirectoryError, idOf, mapBounded, readPages, requestJson, type DirectoryCall, type JsonAnswer } from './http.ts';
import { snapshot, type DirectoryClient, type DirectorySnapshot } from './types.ts';

const trim = (u: string) => u.replace(/\/+$/, '');

/** The next page: `@odata.nextLink` (an absolute URL on the same Graph host). */
function nextPage(a: JsonAnswer): string | undefined {
  const n = (a.body as Record<string, unknown> | null)?.['@odata.nextLink'];
  return typeof n === 'string' && n !== '' ? new URL(n, a.url).href : undefined;
}

export function azureDirectory(account: ServiceAccount): DirectoryClient {
  const f = account.fields;
  const login = trim(f['login_url'] ?? 'https://login.microsoftonline.com');
  const graph = trim(f['graph_url'] ?? f['api_url'] ?? 'https://graph.microsoft.com');
  const scope = `${new URL(graph).origin}/.default`;
  return {
    provider: 'azure',
    async read(call: DirectoryCall): Promise<DirectorySnapshot> {
      const token = await requestJson(call, `${login}/${encodeURIComponent(f['directory_id']!)}/oauth2/v2.0/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ grant_type: 'client_credentials', client_id: f['client_id']!, client_secret: f['client_secret']!, scope }).toString(),
      });
      const access = (token.body as Record<string, unknown> | null)?.['access_token'];
      if (typeof access !== 'string' || access === '') throw new DirectoryError('azure: the token endpoint answered without an access_token');
      const headers = { authorization: `Bearer ${access}` };
      const groups = await readPages(call, `${graph}/v1.0/groups?$select=id,displayName&$top=999`, headers, (a) => arrayOf(a, 'value'), nextPage);
      const read = await mapBounded(groups, 4, async (g) => {
        const id = idOf(g);
        if (id === undefined) return undefined;
        const members = await readPages(call, `${graph}/v1.0/groups/${encodeURIComponent(id)}/transitiveMembers?$select=id&$top=999`, headers, (a) => arrayOf(a, 'value'), nextPage);
        const names = typeof g['displayName'] === 'string' ? [g['displayName']] : [];
        return { id, names, members: members.filter((m) => m['@odata.type'] === undefined || m['@odata.type'] === '#microsoft.graph.user').flatMap((m) => idOf(m) ?? []) };
      });
      const users = await readPages(call, `${graph}/v1.0/users?$select=id,accountEnabled&$top=999`, headers, (a) => arrayOf(a, 'value'), nextPage);
      return snapshot(
        read.filter((g) => g !== undefined),
        users.filter((u) => u['accountEnabled'] !== false).flatMap((u) => idOf(u) ?? []),
      );
    },
  };
}
