/**
 * Reviewer flags for settings changes that users or other services feel at once: the session cookie
 * (`sign-out`), the secret the services share (`shared-secret`) and the key that signs identity
 * assertions (`signing-key`). Secrets are compared by fingerprint, never read: a secret that only
 * moved (inline → `env:`, same value) raises nothing, and no message holds a secret's value.
 */
import type { PlanSettings, Secret } from '../../compiler/plan/types.ts';
import type { Flag } from './types.ts';

/** Whether a secret's value changed (set, removed, or another fingerprint); its source does not count. */
function valueChanged(a: Secret | null, b: Secret | null): boolean {
  return (a?.fingerprint ?? null) !== (b?.fingerprint ?? null);
}

const quoted = (v: string | null): string => (v === null ? '(unset)' : `\`${v}\``);

/**
 * The settings flags from `a` to `b`, in this order:
 * - `sign-out`: `cookie_secret` (or its file) has another value: no session cookie decrypts, so
 *   everyone is signed out; `cookie_name` changed: svc no longer reads the cookie browsers hold;
 *   `cookie_domain` changed: new cookies are scoped differently while browsers keep the old ones;
 * - `shared-secret`: `shared_secret` has another value: split services (docs/distributed.md) stop
 *   talking to each other until every one has it;
 * - `signing-key`: `signing_key` has another value (or was set or removed): upstreams that verify the
 *   identity assertion must fetch the JWKS again.
 */
export function settingFlags(a: PlanSettings, b: PlanSettings): Flag[] {
  const flags: Flag[] = [];
  const flag = (kind: Flag['kind'], message: string) => flags.push({ kind, route: null, message });

  if (valueChanged(a.cookie.secret, b.cookie.secret)) {
    flag('sign-out', 'cookie_secret changed: existing session cookies no longer decrypt, so everyone is signed out (sign-ins in progress fail too)');
  }
  if (a.cookie.name !== b.cookie.name) {
    flag('sign-out', `cookie_name changed (${quoted(a.cookie.name)} → ${quoted(b.cookie.name)}): svc no longer reads the cookie browsers hold, so everyone is signed out`);
  }
  if (a.cookie.domain !== b.cookie.domain) {
    flag(
      'sign-out',
      `cookie_domain changed (${quoted(a.cookie.domain)} → ${quoted(b.cookie.domain)}): browsers keep the session cookies set for the old scope beside new ones, so users may be signed out, and signing out may leave an old cookie behind`,
    );
  }
  if (valueChanged(a.mode.sharedSecret, b.mode.sharedSecret)) {
    flag('shared-secret', 'shared_secret changed: split services (authenticate, authorize, databroker, proxy) holding different values stop talking to each other; give every service the new value at once');
  }
  if (valueChanged(a.identity.signingKey, b.identity.signingKey)) {
    const what =
      b.identity.signingKey === null
        ? 'signing_key removed: each svc process now signs identity assertions with a key it makes at start (in a split deployment no JWKS publishes it)'
        : a.identity.signingKey === null
          ? 'signing_key set: identity assertions are signed with it from now on'
          : 'signing_key changed: identity assertions are signed with the new key';
    flag('signing-key', `${what}; upstreams that verify them must fetch the JWKS (/.well-known/svc/jwks.json) again`);
  }
  return flags;
}
