/**
 * `/.well-known/svc/jwks.json` on every host svc serves: the public key upstreams verify
 * `x-svc-jwt-assertion` with (docs/authentication.md), cacheable for five minutes.
 */
import type { AuthState } from './auth-state.ts';
import { sendPage, type Res } from './endpoint-context.ts';
import { jwksDocument } from './signing-key.ts';

export function jwks(state: AuthState, res: Res): void {
  sendPage(res, 200, { 'content-type': 'application/json', 'cache-control': 'public, max-age=300' }, `${JSON.stringify(jwksDocument(state.signingKey))}\n`);
}
