/**
 * The WebAuthn relying party id of svc's device page (docs/authentication.md "Devices"): the
 * registrable domain of the authenticate service's host under the public suffix list (tldts, with
 * its private section: `auth.corp.example.co.uk` → `example.co.uk`, `auth.team.github.io` →
 * `team.github.io`), so one registration serves every route host under it, and a credential is
 * never scoped to a suffix shared with strangers.
 *
 * A name under a top-level label the list does not know (`localhost`, `test`, `internal`) follows
 * the list's default rule, as browsers do: its last label is the public suffix
 * (`authenticate.svc.localhost` → `svc.localhost`). A host with no registrable domain (an IP
 * address, `localhost` itself, a bare public suffix) has no relying party id: a route reading
 * `device` is then refused at start (runtime/plan/capabilities.ts), never served a page that
 * cannot work.
 *
 * INVARIANT: a relying party id is the host itself or a dot-separated suffix of it, and never a
 * public suffix (test/runtime/core/relying-party.test.ts, a property).
 */
import { getDomain } from 'tldts';

/** The relying party id for the authenticate host (maybe with a port), or null when it has none (see above). */
export function relyingPartyId(authenticateHost: string | null): string | null {
  if (authenticateHost === null || authenticateHost.startsWith('[')) return null;
  const host = authenticateHost.replace(/:\d+$/, '').toLowerCase().replace(/\.$/, '');
  if (host === '' || host.includes(':')) return null;
  const domain = getDomain(host, { allowPrivateDomains: true });
  // tldts reads a name the way a URL parser would; anything it rewrote is not a name WebAuthn accepts as is.
  if (domain === null || !(host === domain || host.endsWith(`.${domain}`))) return null;
  return domain;
}

/** True when `host` (a canonical route host, maybe with a port) may use the relying party id `rpId`. */
export function underRelyingParty(host: string, rpId: string): boolean {
  const name = host.replace(/:\d+$/, '').toLowerCase();
  return name === rpId || name.endsWith(`.${rpId}`);
}
