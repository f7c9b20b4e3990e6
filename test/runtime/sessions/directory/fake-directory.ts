/**
 * A fake directory on loopback HTTPS (a certificate from a test CA, issued for `localhost`) speaking
 * each vendor's documented REST shapes over one model: GitLab (`/api/v4`, `PRIVATE-TOKEN`,
 * `x-next-page` and `Link`), Okta (`/api/v1`, `SSWS`, `Link: rel="next"` with `after`), Microsoft
 * Entra ID (token endpoint, Graph `/v1.0` with `@odata.nextLink`), Google (JWT bearer grant at
 * `/token`, checked with the key's public half; Admin SDK `/admin/directory/v1` with `pageToken`) and
 * GitHub Enterprise Server (OAuth at `/login/oauth/…` with PKCE, REST at `/api/v3` with `Link:
 * rel="next"`; every group is a team of the organization `acme`, its slug the group's name; the
 * authorize endpoint signs in `githubUser` at once, as GitHub does for a user who approved the app).
 * `httpUrl` serves the same on plain HTTP, for svc's sign-in (which trusts only the system's CAs).
 * Every list answers one item per page, so every client pages. `inject` queues answers (rate
 * limits, errors) served before the model's.
 */
import { createServer, type Server } from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createHash, createVerify, generateKeyPairSync } from 'node:crypto';
import { Agent } from 'undici';
import { issue, makeCa } from '../../tls/pki.ts';

export interface FakeGroup {
  readonly id: string;
  readonly name: string;
}
export interface FakeModel {
  groups: FakeGroup[];
  /** group id → user ids */
  members: Record<string, string[]>;
  /** user id → disabled */
  users: Record<string, { disabled?: boolean }>;
}

export interface Injected {
  readonly status: number;
  readonly headers?: Record<string, string>;
  readonly body?: unknown;
  /** Only requests whose path starts with this (default: any). */
  readonly path?: string;
}

export const SECRETS = { gitlab: 'glpat-test-only', okta: 'okta-test-only', azureClient: 'azure-client', azureSecret: 'azure-secret-test-only', tenant: 'tenant-1', github: 'ghp-test-only', githubClient: 'gh-client', githubSecret: 'gh-secret-test-only' };

export class FakeDirectory {
  model: FakeModel;
  readonly requests: { method: string; path: string; at: number }[] = [];
  readonly #injected: Injected[] = [];
  /** Every request answers 500 while true. */
  down = false;
  readonly google = generateKeyPairSync('rsa', { modulusLength: 2048 });
  readonly googleEmail = 'svc-directory@test-only.iam.gserviceaccount.com';
  readonly googleAdmin = 'admin@corp.example';
  #server!: Server;
  #plain!: import('node:http').Server;
  url = '';
  httpUrl = '';
  /** The GitHub user the authorize endpoint signs in (a user id of the model). */
  githubUser = '1';
  /** Users who are also in a team `admins` of another organization, `other-org` (GitHub's `/user/teams`). */
  githubOtherOrgAdmins: string[] = [];
  /** GitHub OAuth: code → its user and PKCE challenge; access token → user. */
  readonly #githubCodes = new Map<string, { user: string; challenge: string; redirectUri: string }>();
  readonly githubTokens = new Map<string, string>();
  dispatcher!: Agent;
  ca = '';

  constructor(model: FakeModel) {
    this.model = model;
  }

  static async start(model: FakeModel): Promise<FakeDirectory> {
    const f = new FakeDirectory(model);
    const ca = await makeCa('fake directory CA');
    const leaf = await issue(ca, { cn: 'localhost', dns: ['localhost'] });
    f.ca = ca.certPem;
    f.#server = createServer({ cert: leaf.certPem, key: leaf.keyPem }, (req, res) => void f.#handle(req, res));
    await new Promise<void>((resolve) => f.#server.listen(0, '127.0.0.1', resolve));
    const port = (f.#server.address() as { port: number }).port;
    f.url = `https://localhost:${port}`;
    f.#plain = (await import('node:http')).createServer((req, res) => void f.#handle(req, res));
    await new Promise<void>((resolve) => f.#plain.listen(0, '127.0.0.1', resolve));
    f.httpUrl = `http://127.0.0.1:${(f.#plain.address() as { port: number }).port}`;
    f.dispatcher = new Agent({ connect: { ca: ca.certPem } });
    return f;
  }

  inject(...answers: Injected[]): void {
    this.#injected.push(...answers);
  }

  googleKey(): string {
    return this.google.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
  }

  /** Service accounts pointing at this server, base64 of their JSON as `idp_service_account` takes them. */
  account(provider: 'gitlab' | 'okta' | 'azure' | 'google' | 'github'): string {
    const json =
      provider === 'github'
        ? { username: 'svc-directory', personal_access_token: SECRETS.github, api_url: `${this.url}/api/v3` }
        : provider === 'gitlab'
        ? { private_token: SECRETS.gitlab, api_url: `${this.url}/api/v4` }
        : provider === 'okta'
          ? { api_key: SECRETS.okta, api_url: this.url }
          : provider === 'azure'
            ? { client_id: SECRETS.azureClient, client_secret: SECRETS.azureSecret, directory_id: SECRETS.tenant, login_url: this.url, graph_url: this.url }
            : { type: 'service_account', client_email: this.googleEmail, private_key: this.googleKey(), token_uri: `${this.url}/token`, impersonate_user: this.googleAdmin, api_url: this.url };
    return Buffer.from(JSON.stringify(json)).toString('base64');
  }

  async close(): Promise<void> {
    this.#plain.closeAllConnections();
    await new Promise<void>((resolve) => this.#plain.close(() => resolve()));
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
    this.#server.closeAllConnections();
    await this.dispatcher.close();
  }

  async #handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const body = Buffer.concat(chunks).toString('utf8');
    const url = new URL(req.url ?? '/', this.url);
    this.requests.push({ method: req.method ?? '', path: url.pathname, at: Date.now() });
    const send = (status: number, json: unknown, headers: Record<string, string> = {}) => {
      res.writeHead(status, { 'content-type': 'application/json', ...headers });
      res.end(json === undefined ? '' : JSON.stringify(json));
    };
    const i = this.#injected.findIndex((a) => a.path === undefined || url.pathname.startsWith(a.path));
    if (i >= 0) {
      const a = this.#injected.splice(i, 1)[0]!;
      return send(a.status, a.body ?? { error: { code: a.status, message: 'injected' } }, a.headers);
    }
    if (this.down) return send(500, { error: { code: 500, message: 'backend error' } });
    try {
      const answer = this.#route(req, url, body);
      if (answer === undefined) return send(404, { message: '404 Not Found' });
      return send(answer.status ?? 200, answer.body, answer.headers);
    } catch (e) {
      return send(401, { message: (e as Error).message });
    }
  }

  #route(req: IncomingMessage, url: URL, body: string): { status?: number; body: unknown; headers?: Record<string, string> } | undefined {
    const p = url.pathname;
    const h = req.headers;
    const m = this.model;
    const userIds = Object.keys(m.users);
    const activeMembers = (g: string) => (m.members[g] ?? []).filter((u) => Object.hasOwn(m.users, u));
    // One item per page, the cursor being the index.
    const page = <T>(items: T[], cursor: string | null) => {
      const at = cursor === null ? 0 : Number(cursor);
      return { item: items.slice(at, at + 1), next: at + 1 < items.length ? String(at + 1) : undefined };
    };
    // GitHub: OAuth (authorize, token with PKCE) and the REST API
    if (p === '/login/oauth/authorize') {
      const q = url.searchParams;
      if (q.get('client_id') !== SECRETS.githubClient || q.get('code_challenge_method') !== 'S256') return { status: 400, body: { message: 'bad authorize request' } };
      const code = `code-${this.#githubCodes.size + 1}-${this.githubUser}`;
      this.#githubCodes.set(code, { user: this.githubUser, challenge: q.get('code_challenge') ?? '', redirectUri: q.get('redirect_uri') ?? '' });
      const back = new URL(q.get('redirect_uri') ?? '');
      back.searchParams.set('code', code);
      back.searchParams.set('state', q.get('state') ?? '');
      return { status: 302, body: undefined, headers: { location: back.href } };
    }
    if (p === '/login/oauth/access_token') {
      const f = new URLSearchParams(body);
      // GitHub answers an OAuth error with 200 and an `error` field.
      if (f.get('client_id') !== SECRETS.githubClient || f.get('client_secret') !== SECRETS.githubSecret) return { body: { error: 'incorrect_client_credentials' } };
      const grant = this.#githubCodes.get(f.get('code') ?? '');
      this.#githubCodes.delete(f.get('code') ?? '');
      const verifier = f.get('code_verifier') ?? '';
      const challenge = createHash('sha256').update(verifier).digest('base64url');
      if (grant === undefined || grant.redirectUri !== f.get('redirect_uri') || grant.challenge !== challenge) return { body: { error: 'bad_verification_code' } };
      const token = `gho_test_${this.githubTokens.size + 1}`;
      this.githubTokens.set(token, grant.user);
      return { body: { access_token: token, token_type: 'bearer', scope: 'read:org,read:user,user:email' } };
    }
    if (p.startsWith('/api/v3/')) {
      const bearer = (h['authorization'] ?? '').replace(/^Bearer /, '');
      const orgTeams = m.groups.map((g) => ({ id: Number(g.id), slug: g.name, name: g.name, organization: { login: 'acme' } }));
      // Next pages on the server the request came to (the HTTPS one, or its plain-HTTP twin).
      const base = 'encrypted' in req.socket && req.socket.encrypted ? this.url : this.httpUrl;
      const linked = <T>(items: T[], map: (t: T) => unknown) => {
        const { item, next } = page(items, url.searchParams.get('page') === null ? null : String(Number(url.searchParams.get('page')) - 1));
        return { body: item.map(map), headers: next === undefined ? {} : { link: `<${base}${p}?per_page=100&page=${Number(next) + 1}>; rel="next", <${base}${p}?per_page=100&page=${items.length}>; rel="last"` } };
      };
      if (bearer === SECRETS.github) {
        if (p === '/api/v3/user/orgs') return linked([{ login: 'acme' }], (o) => o);
        if (p === '/api/v3/orgs/acme/teams') return linked(orgTeams, (t) => ({ id: t.id, slug: t.slug, name: t.name }));
        const mm = /^\/api\/v3\/orgs\/acme\/teams\/([^/]+)\/members$/.exec(p);
        if (mm) {
          const team = m.groups.find((g) => g.name === decodeURIComponent(mm[1]!));
          if (team === undefined) return { status: 404, body: { message: 'Not Found' } };
          return linked(activeMembers(team.id).filter((u) => !m.users[u]?.disabled), (u) => ({ id: Number(u), login: `user${u}` }));
        }
        return undefined;
      }
      const user = this.githubTokens.get(bearer);
      if (user === undefined || !Object.hasOwn(m.users, user)) return { status: 401, body: { message: 'Bad credentials' } };
      if (p === '/api/v3/user') return { body: { id: Number(user), login: `user${user}`, name: `User ${user}`, avatar_url: `${this.url}/avatars/${user}` } };
      if (p === '/api/v3/user/emails') return { body: [{ email: `unverified${user}@elsewhere.example`, primary: false, verified: false }, { email: `user${user}@corp.example`, primary: true, verified: true }] };
      if (p === '/api/v3/user/teams') {
        const foreign = this.githubOtherOrgAdmins.includes(user) ? [{ id: 999, slug: 'admins', name: 'admins', organization: { login: 'other-org' } }] : [];
        return linked([...orgTeams.filter((t) => (m.members[String(t.id)] ?? []).includes(user)), ...foreign], (t) => t);
      }
      return undefined;
    }
    // GitLab
    if (p.startsWith('/api/v4/')) {
      if (h['private-token'] !== SECRETS.gitlab) return { status: 401, body: { message: '401 Unauthorized' } };
      const pg = url.searchParams.get('page') === null ? null : String(Number(url.searchParams.get('page')) - 1);
      if (p === '/api/v4/groups') {
        const { item, next } = page(m.groups, pg);
        return { body: item.map((g) => ({ id: Number(g.id), name: g.name.split('/').pop(), full_path: g.name })), headers: { 'x-next-page': next === undefined ? '' : String(Number(next) + 1) } };
      }
      const mm = /^\/api\/v4\/groups\/(\d+)\/members\/all$/.exec(p);
      if (mm) {
        const users = activeMembers(mm[1]!);
        const { item, next } = page(users, pg);
        const link = next === undefined ? {} : { link: `<${this.url}${p}?per_page=100&page=${Number(next) + 1}>; rel="next"` };
        return { body: item.map((u) => ({ id: Number(u), username: `user${u}`, state: m.users[u]?.disabled ? 'blocked' : 'active' })), headers: link };
      }
      return undefined;
    }
    // Okta
    if (p.startsWith('/api/v1/')) {
      if (h['authorization'] !== `SSWS ${SECRETS.okta}`) return { status: 401, body: { errorCode: 'E0000011', errorSummary: 'Invalid token provided' } };
      const after = url.searchParams.get('after');
      const link = (next: string | undefined) => (next === undefined ? {} : { link: `<${this.url}${p}?limit=200>; rel="self", <${this.url}${p}?after=${next}&limit=200>; rel="next"` });
      if (p === '/api/v1/groups') {
        const { item, next } = page(m.groups, after);
        return { body: item.map((g) => ({ id: g.id, type: 'OKTA_GROUP', profile: { name: g.name } })), headers: link(next) };
      }
      const mm = /^\/api\/v1\/groups\/([^/]+)\/users$/.exec(p);
      if (mm) {
        const { item, next } = page(activeMembers(decodeURIComponent(mm[1]!)), after);
        return { body: item.map((u) => ({ id: u, status: m.users[u]?.disabled ? 'SUSPENDED' : 'ACTIVE' })), headers: link(next) };
      }
      if (p === '/api/v1/users') {
        const { item, next } = page(userIds, after);
        return { body: item.map((u) => ({ id: u, status: m.users[u]?.disabled ? 'DEPROVISIONED' : 'ACTIVE' })), headers: link(next) };
      }
      return undefined;
    }
    // Entra ID: token endpoint and Graph
    if (p === `/${SECRETS.tenant}/oauth2/v2.0/token`) {
      const f = new URLSearchParams(body);
      if (req.method !== 'POST' || f.get('grant_type') !== 'client_credentials' || f.get('client_id') !== SECRETS.azureClient || f.get('client_secret') !== SECRETS.azureSecret || f.get('scope') !== `${this.url}/.default`) {
        return { status: 401, body: { error: 'invalid_client', error_description: 'AADSTS7000215: Invalid client secret provided.' } };
      }
      return { body: { token_type: 'Bearer', expires_in: 3599, access_token: 'graph-token' } };
    }
    if (p.startsWith('/v1.0/')) {
      if (h['authorization'] !== 'Bearer graph-token') return { status: 401, body: { error: { code: 'InvalidAuthenticationToken', message: 'Access token is empty.' } } };
      const skip = url.searchParams.get('$skiptoken');
      const paged = <T>(items: T[], map: (t: T) => unknown) => {
        const { item, next } = page(items, skip);
        const nextLink = next === undefined ? {} : { '@odata.nextLink': `${this.url}${p}?$select=id&$top=999&$skiptoken=${next}` };
        return { body: { '@odata.context': 'https://graph.microsoft.com/v1.0/$metadata', value: item.map(map), ...nextLink } };
      };
      if (p === '/v1.0/groups') return paged(m.groups, (g) => ({ id: g.id, displayName: g.name }));
      const mm = /^\/v1\.0\/groups\/([^/]+)\/transitiveMembers$/.exec(p);
      if (mm) return paged([...activeMembers(decodeURIComponent(mm[1]!)), `device-${mm[1]}`], (u) => ({ '@odata.type': u.startsWith('device-') ? '#microsoft.graph.device' : '#microsoft.graph.user', id: u }));
      if (p === '/v1.0/users') return paged(userIds, (u) => ({ id: u, accountEnabled: !m.users[u]?.disabled }));
      return undefined;
    }
    // Google: token endpoint (JWT bearer grant) and the Admin SDK Directory API
    if (p === '/token') {
      const f = new URLSearchParams(body);
      const problem = this.#checkAssertion(f);
      if (problem !== undefined) return { status: 400, body: { error: 'invalid_grant', error_description: problem } };
      return { body: { access_token: 'google-token', expires_in: 3599, token_type: 'Bearer' } };
    }
    if (p.startsWith('/admin/directory/v1/')) {
      if (h['authorization'] !== 'Bearer google-token') return { status: 401, body: { error: { code: 401, message: 'Request had invalid authentication credentials.', status: 'UNAUTHENTICATED' } } };
      const token = url.searchParams.get('pageToken');
      const paged = <T>(field: string, items: T[], map: (t: T) => unknown) => {
        const { item, next } = page(items, token);
        return { body: { kind: 'admin#directory#list', [field]: item.map(map), ...(next === undefined ? {} : { nextPageToken: next }) } };
      };
      if (p === '/admin/directory/v1/groups') {
        if (url.searchParams.get('customer') !== 'my_customer') return { status: 400, body: { error: { code: 400, message: 'Bad Request' } } };
        return paged('groups', m.groups, (g) => ({ id: g.id, email: `${g.name}@corp.example`, name: g.name }));
      }
      const mm = /^\/admin\/directory\/v1\/groups\/([^/]+)\/members$/.exec(p);
      if (mm) return paged('members', [...activeMembers(decodeURIComponent(mm[1]!)), 'nested-group'], (u) => (u === 'nested-group' ? { id: 'g-nested', type: 'GROUP', status: 'ACTIVE' } : { id: u, type: 'USER', status: 'ACTIVE' }));
      if (p === '/admin/directory/v1/users') return paged('users', userIds, (u) => ({ id: u, primaryEmail: `${u}@corp.example`, suspended: m.users[u]?.disabled === true }));
      return undefined;
    }
    return undefined;
  }

  /** The bearer grant's assertion: RS256 by the key, from the service account, for the admin, to this token URI. */
  #checkAssertion(f: URLSearchParams): string | undefined {
    if (f.get('grant_type') !== 'urn:ietf:params:oauth:grant-type:jwt-bearer') return 'unsupported grant_type';
    const parts = (f.get('assertion') ?? '').split('.');
    if (parts.length !== 3) return 'malformed assertion';
    const ok = createVerify('RSA-SHA256').update(`${parts[0]}.${parts[1]}`).verify(this.google.publicKey, Buffer.from(parts[2]!, 'base64url'));
    if (!ok) return 'Invalid JWT Signature.';
    const claims = JSON.parse(Buffer.from(parts[1]!, 'base64url').toString('utf8')) as Record<string, unknown>;
    if (claims['iss'] !== this.googleEmail || claims['sub'] !== this.googleAdmin || claims['aud'] !== `${this.url}/token`) return 'Invalid JWT: wrong iss, sub or aud';
    if (!String(claims['scope']).includes('admin.directory.group.readonly')) return 'missing scope';
    return undefined;
  }
}

/** The model most tests start from: two groups, three users (one disabled). */
export function baseModel(): FakeModel {
  return {
    groups: [
      { id: '101', name: 'engineering' },
      { id: '102', name: 'admins' },
    ],
    members: { '101': ['1', '2'], '102': ['1', '3'] },
    users: { '1': {}, '2': {}, '3': { disabled: true } },
  };
}
