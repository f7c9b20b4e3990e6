/**
 * svc's own pages for signed-in users: the user info page at `/.svc/` and the sign-out
 * confirmation. Everything shown is escaped; raw access, refresh and ID tokens are never shown
 * (SECURITY.md S26). Pages carry a strict CSP, no framing and no caching.
 */
import type { SessionRecord } from '../databroker/session-store.ts';
import { escapeHtml } from '../http/error-page.ts';

export const PAGE_HEADERS: Readonly<Record<string, string>> = {
  'content-type': 'text/html; charset=utf-8',
  'cache-control': 'no-store',
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  'referrer-policy': 'no-referrer',
  'cross-origin-resource-policy': 'same-origin',
  // No `form-action`: browsers apply it to every redirect after the sign-out form's POST, which
  // would block the way out through the provider's end-session endpoint.
  'content-security-policy': "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'",
};

const STYLE =
  'body{font:16px/1.5 system-ui,sans-serif;margin:0;background:#f5f6f8;color:#1d2330}main{max-width:44rem;margin:8vh auto;padding:2rem;background:#fff;border-radius:8px;box-shadow:0 1px 3px #0002}h1{font-size:1.4rem;margin:0 0 1rem}table{border-collapse:collapse;width:100%}th,td{text-align:left;padding:.35rem .5rem;border-bottom:1px solid #e3e6ea;vertical-align:top}th{width:10rem;color:#556}code,pre{font-size:.85rem}pre{margin:0;white-space:pre-wrap;word-break:break-all}button{font:inherit;padding:.45rem 1.1rem;border:0;border-radius:6px;background:#1d4ed8;color:#fff;cursor:pointer}footer{margin-top:1.5rem;font-size:.8rem;color:#667}';

function page(title: string, body: string): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${escapeHtml(title)}</title>
<meta name="viewport" content="width=device-width, initial-scale=1"><style>${STYLE}</style></head>
<body><main>${body}<footer>svc</footer></main></body></html>
`;
}

/** Token-bearing claim names never shown, even when a provider puts them among the claims. */
const HIDDEN_CLAIMS = /token|secret|password/i;

/** The user info page: id, email, groups, claims, session expiry, and a sign-out button. */
export function userInfoPage(record: SessionRecord, csrf: string): string {
  const claims: Record<string, unknown> = Object.fromEntries(Object.entries(record.claims).filter(([k]) => !HIDDEN_CLAIMS.test(k)));
  const row = (name: string, value: string) => `<tr><th>${escapeHtml(name)}</th><td>${value}</td></tr>`;
  return page(
    'Signed in · svc',
    `<h1>Signed in</h1>
<table>
${row('User', `<code id="user">${escapeHtml(record.userId)}</code>`)}
${row('Email', `<code id="email">${escapeHtml(record.email ?? '')}</code>`)}
${row('Groups', `<code id="groups">${escapeHtml(record.groups.join(', '))}</code>`)}
${row('Session expires', `<time id="expires" datetime="${new Date(record.expiresAtMs).toISOString()}">${new Date(record.expiresAtMs).toUTCString()}</time>`)}
${row('Claims', `<pre id="claims">${escapeHtml(JSON.stringify(claims, null, 2))}</pre>`)}
</table>
<form method="post" action="/.svc/signout/" style="margin-top:1.5rem"><input type="hidden" name="svc_csrf" value="${escapeHtml(csrf)}"><button type="submit" id="signout">Sign out</button></form>`,
  );
}

/** The sign-out confirmation shown for a GET without a valid CSRF token. */
export function signOutPage(csrf: string, redirect: string | null): string {
  return page(
    'Sign out · svc',
    `<h1>Sign out?</h1><p>You are about to end your session.</p>
<form method="post" action="/.svc/signout/"><input type="hidden" name="svc_csrf" value="${escapeHtml(csrf)}">${redirect === null ? '' : `<input type="hidden" name="svc_redirect_uri" value="${escapeHtml(redirect)}">`}<button type="submit" id="signout">Sign out</button></form>`,
  );
}
