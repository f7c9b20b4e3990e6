/**
 * GitHub's directory (docs/authentication.md "Groups from the directory", "GitHub"): the teams of
 * every organization the `personal_access_token`'s user belongs to (`GET /user/orgs`, then
 * `GET /orgs/:org/teams`) and each team's members, those of its child teams included
 * (`GET /orgs/:org/teams/:slug/members`), all paged with `Link: rel="next"`. A team is the group
 * `<organization login>/<team slug>`, lower-case, as GitHub sign-in names it (runtime/sessions/github.ts);
 * a member is keyed by the numeric account id, GitHub sign-in's subject. The token needs `read:org`.
 * The directory knows no user list (an account outside every organization may still sign in), so it
 * never ends a session: a deleted account's token stops working, which ends its sessions at the
 * next user refresh.
 */
import type { ServiceAccount } from '../../../compiler/plan/service-account.ts';
import { arrayOf, idOf, mapBounded, nextLink, readPages, type DirectoryCall, type JsonAnswer } from './http.ts';
import { snapshot, type DirectoryClient, type DirectorySnapshot } from './types.ts';

/** The API base: `api_url`, else api.github.com for github.com (the default), else GitHub Enterprise Server's `https://HOST/api/v3`. */
export function githubApi(account: ServiceAccount, providerUrl: string | null): string {
  const explicit = account.fields['api_url'];
  if (explicit !== undefined) return explicit.replace(/\/+$/, '');
  if (providerUrl === null || new URL(providerUrl).host === 'github.com') return 'https://api.github.com';
  return `${providerUrl.replace(/\/+$/, '')}/api/v3`;
}

const next = (a: JsonAnswer) => nextLink(a.headers.get('link'), a.url);

export function githubDirectory(account: ServiceAccount, providerUrl: string | null): DirectoryClient {
  const api = githubApi(account, providerUrl);
  const headers = { authorization: `Bearer ${account.fields['personal_access_token']!}`, accept: 'application/vnd.github+json', 'x-github-api-version': '2022-11-28' };
  return {
    provider: 'github',
    async read(call: DirectoryCall): Promise<DirectorySnapshot> {
      const orgs = (await readPages(call, `${api}/user/orgs?per_page=100`, headers, (a) => arrayOf(a), next)).flatMap((o) => (typeof o['login'] === 'string' ? [o['login']] : []));
      const teams = (
        await mapBounded(orgs, 4, async (org) => {
          const list = await readPages(call, `${api}/orgs/${encodeURIComponent(org)}/teams?per_page=100`, headers, (a) => arrayOf(a), next);
          return list.flatMap((t) => (typeof t['slug'] === 'string' ? [{ org, slug: t['slug'] }] : []));
        })
      ).flat();
      const groups = await mapBounded(teams, 4, async ({ org, slug }) => {
        const members = await readPages(call, `${api}/orgs/${encodeURIComponent(org)}/teams/${encodeURIComponent(slug)}/members?per_page=100`, headers, (a) => arrayOf(a), next);
        return { id: `${org}/${slug}`.toLowerCase(), names: [], members: members.flatMap((m) => idOf(m) ?? []) };
      });
      return snapshot(groups, null);
    },
  };
}
