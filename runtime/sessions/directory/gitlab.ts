/**
 * GitLab's directory (docs/authentication.md "Groups from the directory"): the groups the
 * `private_token`'s user belongs to (`GET /api/v4/groups`) and each group's members, inherited
 * ones included (`GET /api/v4/groups/:id/members/all`), paged with `Link: rel="next"` or
 * `x-next-page`. A group matches by its numeric id and its `full_path`. The API cannot list every
 * user to a non-administrator, so this directory knows no users: it never ends a session.
 */
import type { ServiceAccount } from '../../../compiler/plan/service-account.ts';
import { arrayOf, idOf, mapBounded, nextLink, readPages, type DirectoryCall, type JsonAnswer } from './http.ts';
import { snapshot, type DirectoryClient, type DirectorySnapshot } from './types.ts';

/** The API base: `api_url`, else the provider URL's (default https://gitlab.com) + /api/v4. */
export function gitlabApi(account: ServiceAccount, providerUrl: string | null): string {
  const explicit = account.fields['api_url'];
  if (explicit !== undefined) return explicit.replace(/\/+$/, '');
  const base = new URL(providerUrl ?? 'https://gitlab.com');
  return `${base.origin}${base.pathname.replace(/\/+$/, '')}/api/v4`;
}

/** The next page: the `Link` header's `rel="next"`, else `x-next-page` (empty after the last). */
function nextPage(a: JsonAnswer): string | undefined {
  const link = nextLink(a.headers.get('link'), a.url);
  if (link !== undefined) return link;
  const page = a.headers.get('x-next-page')?.trim();
  if (!page || !/^\d+$/.test(page)) return undefined;
  const u = new URL(a.url);
  u.searchParams.set('page', page);
  return u.href;
}

export function gitlabDirectory(account: ServiceAccount, providerUrl: string | null): DirectoryClient {
  const api = gitlabApi(account, providerUrl);
  const headers = { 'private-token': account.fields['private_token']! };
  return {
    provider: 'gitlab',
    async read(call: DirectoryCall): Promise<DirectorySnapshot> {
      const groups = await readPages(call, `${api}/groups?per_page=100`, headers, (a) => arrayOf(a), nextPage);
      const read = await mapBounded(groups, 4, async (g) => {
        const id = idOf(g);
        if (id === undefined) return undefined;
        const members = await readPages(call, `${api}/groups/${encodeURIComponent(id)}/members/all?per_page=100`, headers, (a) => arrayOf(a), nextPage);
        const names = [g['full_path']].filter((n): n is string => typeof n === 'string');
        return { id, names, members: members.filter((m) => m['state'] === undefined || m['state'] === 'active').flatMap((m) => idOf(m) ?? []) };
      });
      return snapshot(read.filter((g) => g !== undefined), null);
    },
  };
}
