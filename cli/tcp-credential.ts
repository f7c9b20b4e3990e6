/**
 * The token `svc tcp` presents for one route through one proxy: the stored one while it lasts,
 * else a programmatic login (cli/tcp-login.ts) whose token is then stored (cli/token-store.ts).
 * One sign-in at a time: connections that need a token while a sign-in runs wait for it.
 */
import { programmaticLogin, type LoginOptions } from './tcp-login.ts';
import type { TunnelCredential } from './tcp-tunnel.ts';
import { deleteToken, loadToken, saveToken } from './token-store.ts';

export interface CredentialOptions extends Omit<LoginOptions, 'authority'> {
  /** The route, `tcp+https://host:port` (canonical). */
  readonly route: string;
  /** The token directory (cli/token-store.ts `tokenDirectory`). */
  readonly dir: string;
  /** Told when a stored token is used or a new one stored. */
  readonly note?: (message: string) => void;
  readonly now?: () => number;
}

/** A {@link TunnelCredential} backed by the token store and programmatic login. */
export function tunnelCredential(o: CredentialOptions): TunnelCredential {
  const now = o.now ?? Date.now;
  const proxy = o.proxy.origin;
  const authority = o.route.slice('tcp+https://'.length);
  let signingIn: Promise<string> | undefined;
  const signIn = (): Promise<string> =>
    (signingIn ??= programmaticLogin({ ...o, authority })
      .then((r) => {
        saveToken(o.dir, { route: o.route, proxy, token: r.token, expiresAtMs: r.expiresAtMs });
        o.note?.(`signed in; token kept until ${new Date(r.expiresAtMs).toISOString()}`);
        return r.token;
      })
      .finally(() => (signingIn = undefined)));
  return {
    current: async () => {
      if (signingIn) return signingIn;
      return loadToken(o.dir, o.route, proxy, now())?.token ?? signIn();
    },
    refused: async (token) => {
      if (signingIn) return signingIn;
      const stored = loadToken(o.dir, o.route, proxy, now())?.token;
      // Another connection already replaced the refused token: use the new one.
      if (stored !== undefined && stored !== token) return stored;
      deleteToken(o.dir, o.route, proxy);
      o.note?.('svc refused the stored token; signing in again');
      return signIn();
    },
  };
}
