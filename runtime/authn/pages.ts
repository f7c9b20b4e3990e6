/**
 * svc's own pages for users: the user info page at `/.svc/`, the sign-out confirmation, the 403
 * page of a denied request and the page of a failed sign-in. Everything shown is escaped; raw
 * access, refresh and ID tokens are never shown (docs/security.md S26). Pages carry a strict CSP, no
 * framing and no caching.
 */
import { claimGroups } from '../sessions/directory/record.ts';
import { STATUS_CODES } from 'node:http';
import { statusText } from './write-head.ts';
import type { SessionRecord } from '../core/session-store.ts';
import type { DeviceRecord } from '../core/device-store.ts';
import { escapeHtml, type ErrorAnswer } from './error-page.ts';

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
  'body{font:16px/1.5 system-ui,sans-serif;margin:0;background:#f5f6f8;color:#1d2330}main{max-width:44rem;margin:8vh auto;padding:2rem;background:#fff;border-radius:8px;box-shadow:0 1px 3px #0002}h1{font-size:1.4rem;margin:0 0 1rem}table{border-collapse:collapse;width:100%}th,td{text-align:left;padding:.35rem .5rem;border-bottom:1px solid #e3e6ea;vertical-align:top}th{width:10rem;color:#556}code,pre{font-size:.85rem}pre{margin:0;white-space:pre-wrap;word-break:break-all}button,a.button{font:inherit;padding:.45rem 1.1rem;border:0;border-radius:6px;background:#1d4ed8;color:#fff;cursor:pointer;text-decoration:none;display:inline-block}button.plain{background:#e3e6ea;color:#1d2330}form{display:inline-block;margin:1rem .5rem 0 0}ul{padding-left:1.2rem}footer{margin-top:1.5rem;font-size:.8rem;color:#667}';

function page(title: string, body: string): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${escapeHtml(title)}</title>
<meta name="viewport" content="width=device-width, initial-scale=1"><style>${STYLE}</style></head>
<body><main>${body}<footer>svc</footer></main></body></html>
`;
}

/** The page of one answer with its request id in the footer. */
function answerPage(title: string, body: string, requestId: string): string {
  return page(title, body).replace('<footer>svc</footer>', `<footer>svc · request id <code id="request-id">${escapeHtml(requestId)}</code></footer>`);
}

function answerOf(status: number, requestId: string, html: string, json: Record<string, unknown> | null): ErrorAnswer {
  const common = { 'cache-control': 'no-store', 'x-request-id': requestId, 'x-content-type-options': 'nosniff' };
  if (json !== null) return { status, headers: { ...common, 'content-type': 'application/json' }, body: `${JSON.stringify(json)}\n` };
  return { status, headers: { ...PAGE_HEADERS, 'x-request-id': requestId }, body: html };
}

/** Token-bearing claim names never shown, even when a provider puts them among the claims. */
const HIDDEN_CLAIMS = /token|secret|password/i;

/** The user info page: id, email, groups, claims, session expiry, and a sign-out button. */
export function userInfoPage(record: SessionRecord, csrf: string, devices: readonly DeviceRecord[] | null = null): string {
  const claims: Record<string, unknown> = Object.fromEntries(Object.entries(record.claims).filter(([k]) => !HIDDEN_CLAIMS.test(k)));
  const row = (name: string, value: string) => `<tr><th>${escapeHtml(name)}</th><td>${value}</td></tr>`;
  return page(
    'Signed in · svc',
    `<h1>Signed in</h1>
<table>
${row('User', `<code id="user">${escapeHtml(record.userId)}</code>`)}
${row('Email', `<code id="email">${escapeHtml(record.email ?? '')}</code>`)}
${row('Groups', `<code id="groups">${escapeHtml(record.groups.join(', '))}</code>${groupSources(record)}`)}
${row('Session expires', `<time id="expires" datetime="${new Date(record.expiresAtMs).toISOString()}">${new Date(record.expiresAtMs).toUTCString()}</time>`)}
${row('Claims', `<pre id="claims">${escapeHtml(JSON.stringify(claims, null, 2))}</pre>`)}
${devices === null ? '' : row('Devices', devices.length === 0 ? '<span id="devices">none registered</span>' : `<ul id="devices">${devices.map((d) => `<li class="device" data-id="${escapeHtml(d.credentialId)}"><code>${escapeHtml(d.credentialId.slice(0, 16))}…</code> ${d.type} · ${d.approved ? 'approved' : 'pending approval'}${d.credentialId === record.deviceCredentialId ? ' · in use by this session' : ''}</li>`).join('')}</ul>`)}
</table>
<form method="post" action="/.svc/signout/" style="margin-top:1.5rem"><input type="hidden" name="svc_csrf" value="${escapeHtml(csrf)}"><button type="submit" id="signout">Sign out</button></form>`,
  );
}

/**
 * Where a session's groups came from (docs/authentication.md "What a session's groups are"): the
 * provider's `groups` claim, and the rest from the directory (`idp_service_account`). Empty when
 * every group is the claim's.
 */
function groupSources(record: SessionRecord): string {
  const claimed = new Set(claimGroups(record.claims));
  const fromDirectory = record.groups.filter((g) => !claimed.has(g));
  if (fromDirectory.length === 0) return '';
  const fromClaim = record.groups.filter((g) => claimed.has(g));
  return `<br><small>from the provider's <code>groups</code> claim: <code id="groups-claim">${escapeHtml(fromClaim.join(', '))}</code>; from the directory: <code id="groups-directory">${escapeHtml(fromDirectory.join(', '))}</code></small>`;
}

/** What the device page shows (webauthn.ts). */
export interface DevicePageData {
  readonly devices: readonly DeviceRecord[];
  /** The credential id the session authenticated with, if any. */
  readonly current: string | undefined;
  readonly csrf: string;
  /** The checked URL to go back to once a device is registered or used. */
  readonly redirect: string;
  /** The CSP nonce of the page's one script. */
  readonly nonce: string;
}

/**
 * The device page: the user's devices (type, approved or pending, the one in use), and buttons that
 * run the WebAuthn ceremonies in the browser (runtime/authn/webauthn.ts answers them). Values reach
 * the script only through escaped `data-` attributes.
 */
export function devicePage(d: DevicePageData): string {
  const rows = d.devices
    .map(
      (x) =>
        `<tr class="device" data-id="${escapeHtml(x.credentialId)}"><td><code>${escapeHtml(x.credentialId.slice(0, 16))}…</code></td><td>${x.type === 'enclave_only' ? 'built-in (enclave_only)' : 'security key or other (any)'}</td><td class="state">${x.approved ? 'approved' : 'pending approval'}</td><td>${x.credentialId === d.current ? 'in use by this session' : ''}</td></tr>`,
    )
    .join('');
  const table = d.devices.length === 0 ? '<p id="no-devices">You have no registered device yet.</p>' : `<table id="devices"><tr><th>Device</th><th>Type</th><th>State</th><th></th></tr>${rows}</table>`;
  return page(
    'Devices · svc',
    `<h1>Devices</h1><div id="svc-device" data-csrf="${escapeHtml(d.csrf)}" data-redirect="${escapeHtml(d.redirect)}">
<p>This page needs a registered device. Use one you registered before, or register this one: a new device can be used once an operator approved it.</p>${table}
<p><button type="button" id="authenticate"${d.devices.length === 0 ? ' disabled' : ''}>Use a registered device</button></p>
<p><button type="button" class="plain" id="register-platform">Register this device (built-in authenticator)</button>
<button type="button" class="plain" id="register-key">Register a security key</button></p>
<p id="status" role="status"></p></div>
<script nonce="${escapeHtml(d.nonce)}">${DEVICE_SCRIPT}</script>`,
  );
}

/** The browser half of the ceremonies: base64url in JSON both ways (webauthn.ts reads @simplewebauthn's JSON shapes). */
const DEVICE_SCRIPT = `(() => {
const root = document.getElementById('svc-device');
const status = document.getElementById('status');
const dec = (s) => Uint8Array.from(atob(s.replace(/-/g, '+').replace(/_/g, '/') + '==='.slice((s.length + 3) % 4)), (c) => c.charCodeAt(0));
const enc = (b) => btoa(String.fromCharCode(...new Uint8Array(b))).replace(/[+]/g, '-').replace(/[/]/g, '_').replace(/=+$/, '');
const post = async (path, body) => {
  const r = await fetch(path, { method: 'POST', credentials: 'same-origin', headers: { 'content-type': 'application/json', 'x-svc-csrf': root.dataset.csrf }, body: JSON.stringify(body) });
  return { ok: r.ok, body: await r.json() };
};
const run = async (ceremony, type) => {
  status.textContent = 'Waiting for your authenticator…';
  try {
    const o = await post('/.svc/webauthn/options', { ceremony, type, redirect: root.dataset.redirect });
    if (!o.ok) { status.textContent = 'Refused: ' + o.body.error; return; }
    const opts = o.body.options;
    let response;
    if (ceremony === 'register') {
      const publicKey = { ...opts, challenge: dec(opts.challenge), user: { ...opts.user, id: dec(opts.user.id) }, excludeCredentials: (opts.excludeCredentials || []).map((c) => ({ ...c, id: dec(c.id) })) };
      const c = await navigator.credentials.create({ publicKey });
      response = { id: c.id, rawId: enc(c.rawId), type: c.type, authenticatorAttachment: c.authenticatorAttachment, clientExtensionResults: c.getClientExtensionResults(), response: { clientDataJSON: enc(c.response.clientDataJSON), attestationObject: enc(c.response.attestationObject), transports: c.response.getTransports ? c.response.getTransports() : [] } };
    } else {
      const publicKey = { ...opts, challenge: dec(opts.challenge), allowCredentials: (opts.allowCredentials || []).map((c) => ({ ...c, id: dec(c.id) })) };
      const c = await navigator.credentials.get({ publicKey });
      response = { id: c.id, rawId: enc(c.rawId), type: c.type, authenticatorAttachment: c.authenticatorAttachment, clientExtensionResults: c.getClientExtensionResults(), response: { clientDataJSON: enc(c.response.clientDataJSON), authenticatorData: enc(c.response.authenticatorData), signature: enc(c.response.signature), ...(c.response.userHandle ? { userHandle: enc(c.response.userHandle) } : {}) } };
    }
    const v = await post('/.svc/webauthn/verify', { state: o.body.state, response });
    if (!v.ok) { status.textContent = 'Refused: ' + v.body.error; return; }
    status.textContent = 'Done.';
    location.assign(v.body.redirect);
  } catch (e) {
    status.textContent = 'The authenticator did not answer: ' + e.name;
  }
};
document.getElementById('authenticate').addEventListener('click', () => run('authenticate'));
document.getElementById('register-platform').addEventListener('click', () => run('register', 'enclave_only'));
document.getElementById('register-key').addEventListener('click', () => run('register', 'any'));
})();`;

/** The sign-out confirmation shown for a GET without a valid CSRF token. */
export function signOutPage(csrf: string, redirect: string | null): string {
  return page(
    'Sign out · svc',
    `<h1>Sign out?</h1><p>You are about to end your session.</p>
<form method="post" action="/.svc/signout/"><input type="hidden" name="svc_csrf" value="${escapeHtml(csrf)}">${redirect === null ? '' : `<input type="hidden" name="svc_redirect_uri" value="${escapeHtml(redirect)}">`}<button type="submit" id="signout">Sign out</button></form>`,
  );
}

/** What the 403 (or 450) page of a denied request shows. */
export interface Denial {
  readonly requestId: string;
  /** 450: the session's device does not meet the policy (reason `device-unauthorized`); 403 otherwise. */
  readonly status?: 403 | 450;
  /** The decision's reason ids (docs/decisions.md §4), kept in the JSON answer and on the page. */
  readonly reasons: readonly string[];
  /** Why, in words (runtime/policy/words.ts), in the decision's order. */
  readonly words: readonly string[];
  /** Who is signed in, or null for a request denied without a session. */
  readonly user: { readonly id: string; readonly email?: string; readonly name?: string } | null;
  /** The session's CSRF token for the sign-out and switch-user forms; null: no forms. */
  readonly csrf: string | null;
  /** The denied URL, validated as a redirect target: "switch user" signs in again and comes back here. */
  readonly here: string | null;
}

/**
 * The 403 answer: who is signed in, why in words, the request id, a sign-out button and a
 * "switch user" button (sign-out, then sign-in with the provider asked to prompt for an account;
 * docs/authentication.md). Both post to this host's `/.svc/signout/` with the session's CSRF token.
 * JSON keeps `{status, error, reason, message, request_id}` and adds `reasons` and `explanation`.
 */
export function deniedAnswer(d: Denial, json: boolean): ErrorAnswer {
  const reason = d.reasons.join(',') || 'denied';
  const status = d.status ?? 403;
  const device = status === 450;
  const message = device ? 'You are signed in, but the device you authenticated with does not meet the policy of this route.' : 'You are signed in, but the policy of this route does not allow you here.';
  const title = device ? '450 · Device not authorized' : '403 · Access denied';
  if (json) return answerOf(status, d.requestId, '', { status, error: statusText(status), reason, message, request_id: d.requestId, reasons: d.reasons, explanation: d.words });
  const who =
    d.user === null
      ? '<p id="who">You are not signed in.</p>'
      : `<p id="who">Signed in as <strong>${escapeHtml(d.user.name ?? d.user.id)}</strong>${d.user.email === undefined ? '' : ` · <code id="email">${escapeHtml(d.user.email)}</code>`}</p>`;
  const why = d.words.length === 0 ? '' : `<p>This route does not allow you because:</p><ul id="why">${d.words.map((w) => `<li>${wordsHtml(w)}</li>`).join('')}</ul>`;
  const csrf = d.csrf === null ? '' : `<input type="hidden" name="svc_csrf" value="${escapeHtml(d.csrf)}">`;
  const actions =
    d.csrf === null
      ? ''
      : `<form method="post" action="/.svc/signout/">${csrf}<button type="submit" id="signout">Sign out</button></form>` +
        (d.here === null ? '' : `<form method="post" action="/.svc/signout/">${csrf}<input type="hidden" name="svc_switch_user" value="1"><input type="hidden" name="svc_redirect_uri" value="${escapeHtml(d.here)}"><button type="submit" class="plain" id="switch-user">Switch user</button></form>`);
  // On 450, another registered device may do: the device page, coming back here.
  const other = device && d.here !== null ? `<p><a id="other-device" href="/.svc/webauthn?svc_redirect_uri=${escapeHtml(encodeURIComponent(d.here))}">Use another device</a></p>` : '';
  return answerOf(
    status,
    d.requestId,
    answerPage(`${title} · svc`, `<h1>${title}</h1>${who}<p>${d.user === null ? 'The policy of this route does not allow this request.' : escapeHtml(message)}</p>${why}<p>Reason: <code id="reasons">${escapeHtml(reason)}</code></p>${other}${actions}`, d.requestId),
    null,
  );
}

/** A sentence with `backticked` values shown as code, escaped. */
function wordsHtml(words: string): string {
  return words
    .split('`')
    .map((part, i) => (i % 2 === 1 ? `<code>${escapeHtml(part)}</code>` : escapeHtml(part)))
    .join('');
}

/** Why a sign-in failed, by its stable code (the JSON `reason` and the log line's `reason`). */
export const SIGN_IN_FAILURES = {
  'identity-provider-unavailable': { status: 503, title: 'Sign-in is unavailable', text: 'The identity provider could not be reached or failed to answer, so you could not be signed in. The application itself was not involved. Try again in a moment.' },
  'identity-provider-not-configured': { status: 503, title: 'Sign-in is not configured', text: 'No identity provider is configured for this service, so nobody can sign in. Tell its operator.' },
  'identity-provider-refused': { status: 403, title: 'Sign-in was not completed', text: 'The identity provider did not sign you in: the sign-in was cancelled, or the provider refused it.' },
  'sign-in-failed': { status: 400, title: 'Sign-in could not be completed', text: 'The identity provider’s answer could not be turned into a sign-in: it had already been used or expired, or did not check out.' },
  'sign-in-state-invalid': { status: 400, title: 'This sign-in is stale', text: 'This answer from the identity provider does not belong to a sign-in in progress in this browser: it was already used, is more than 10 minutes old, or was started in another browser.' },
  'sign-in-link-expired': { status: 400, title: 'This sign-in link has expired', text: 'Sign-in links are valid for 10 minutes.' },
  'sign-in-link-signature': { status: 400, title: 'This sign-in link is not valid', text: 'The sign-in link was changed or is incomplete.' },
  'sign-in-link-missing': { status: 400, title: 'This sign-in link is not valid', text: 'The sign-in link was changed or is incomplete.' },
  'sign-in-link-duplicate': { status: 400, title: 'This sign-in link is not valid', text: 'The sign-in link was changed or is incomplete.' },
  'hand-off-invalid': { status: 400, title: 'This sign-in is stale', text: 'The sign-in hand-off to this site is not valid or is more than a minute old.' },
  'hand-off-replayed': { status: 400, title: 'This sign-in is stale', text: 'The sign-in hand-off to this site was already used; each one works once.' },
  'hand-off-unbound': { status: 400, title: 'This sign-in was not started here', text: 'The sign-in hand-off belongs to a sign-in started in another browser, so it does not sign this browser in. Sign in yourself to continue.' },
  'hand-off-wrong-host': { status: 400, title: 'This sign-in is stale', text: 'The sign-in hand-off was made for another site.' },
  'session-ended': { status: 400, title: 'This sign-in is stale', text: 'The session this sign-in started has already ended.' },
} as const satisfies Readonly<Record<string, { readonly status: number; readonly title: string; readonly text: string }>>;

export type SignInFailure = keyof typeof SIGN_IN_FAILURES;

/**
 * The answer of a failed sign-in: what happened in words and a "try again" link to `retry`, which
 * the caller has validated as a redirect target (S01–S04). `detail` is a provider error code
 * (`access_denied`), shown only when it is a plain code. JSON: `{status, error, reason, message,
 * request_id, retry}`.
 */
export function signInFailedAnswer(reason: SignInFailure, requestId: string, retry: string, json: boolean, detail?: string): ErrorAnswer {
  const f = SIGN_IN_FAILURES[reason];
  const code = detail !== undefined && /^[a-z_]{1,64}$/.test(detail) ? detail : undefined;
  if (json) return answerOf(f.status, requestId, '', { status: f.status, error: STATUS_CODES[f.status], reason, message: f.text, request_id: requestId, retry, ...(code !== undefined ? { provider_error: code } : {}) });
  const body = `<h1>${escapeHtml(f.title)}</h1><p id="what">${escapeHtml(f.text)}</p>${code === undefined ? '' : `<p>The provider answered <code id="provider-error">${escapeHtml(code)}</code>.</p>`}<p>Reason: <code id="reason">${escapeHtml(reason)}</code></p><p><a class="button" id="try-again" href="${escapeHtml(retry)}">Try again</a></p>`;
  return answerOf(f.status, requestId, answerPage(`${f.title} · svc`, body, requestId), null);
}
