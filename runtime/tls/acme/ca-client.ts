/**
 * The ACME CA as svc talks to it: acme-client (RFC 8555, JWS, nonces, retries) with the account
 * key from the autocert directory, the contact e-mail, External Account Binding (RFC 8555
 * §7.3.4) and the CA roots of `autocert_trusted_ca`.
 *
 * acme-client sends every request through one shared axios instance (`acme.axios`); the roots of
 * `autocert_trusted_ca` are given per request by an interceptor that matches the CA's origin, so
 * they apply to that CA only and to nothing else in the process. Every 429 answer's `Retry-After`
 * is noted (retry-after.ts).
 */
import { Agent } from 'node:https';
import { linkSync, rmSync, writeFileSync } from 'node:fs';
import acme from 'acme-client';
import type { PlanSettings } from '../../../compiler/plan/types.ts';
import { readPemSource } from '../pem.ts';
import { resolveSecretText } from '../../plan/secrets.ts';
import { classify } from './problems.ts';
import { noteRateLimit } from './retry-after.ts';
import type { AutocertStorage } from './storage.ts';

const agents = new Map<string, Agent>();
let intercepting = false;

/** Makes acme-client trust `caPem` (and only it) for requests to `origin`. */
function trustForOrigin(origin: string, caPem: string): void {
  agents.set(origin, new Agent({ ca: caPem, keepAlive: true }));
  if (intercepting) return;
  intercepting = true;
  acme.axios.interceptors.request.use((config) => {
    if (config.url !== undefined) {
      try {
        const agent = agents.get(new URL(config.url).origin);
        if (agent) config.httpsAgent = agent;
      } catch {
        // A relative URL: acme-client always uses absolute ones from the directory.
      }
    }
    return config;
  });
}

let notingRateLimits = false;

/** Notes the `Retry-After` of every 429 the CA answers (retry-after.ts), once per process. */
function noteRateLimits(): void {
  if (notingRateLimits) return;
  notingRateLimits = true;
  acme.axios.interceptors.response.use((response) => {
    if (response.status === 429 && response.config.url !== undefined) {
      try {
        const header = response.headers['retry-after'] as unknown;
        noteRateLimit(new URL(response.config.url).origin, typeof header === 'string' || typeof header === 'number' ? String(header) : undefined, Date.now());
      } catch {
        // A relative URL: acme-client always uses absolute ones from the directory.
      }
    }
    return response;
  });
}

export interface CaClientSettings {
  readonly directoryUrl: string;
  readonly autocert: PlanSettings['autocert'];
}

/**
 * The account key (PEM) in `storage`, created (ECDSA P-256) when there is none. Two instances
 * creating one at once end with the same key: the file is published with `link`, which fails
 * when another instance published first, and then that one is read.
 */
async function accountKey(storage: AutocertStorage): Promise<string> {
  const existing = storage.read(storage.accountKeyPath);
  if (existing !== undefined) return existing;
  const key = (await acme.crypto.createPrivateEcdsaKey('P-256')).toString();
  const tmp = `${storage.accountKeyPath}.${process.pid}.new`;
  writeFileSync(tmp, key, { mode: 0o600 });
  try {
    linkSync(tmp, storage.accountKeyPath);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
  } finally {
    rmSync(tmp, { force: true });
  }
  return storage.read(storage.accountKeyPath) ?? key;
}

/**
 * A client with a registered account. A restarted svc (or a second instance on the same directory)
 * first asks for the existing account of its key (`onlyReturnExisting`, RFC 8555 §7.3.1), then
 * registers a new one only when there is none: asking `newAccount` again with the terms of service
 * makes acme-client send them as an account update, which a CA may refuse as an empty update
 * (pebble does), and then no certificate could be ordered after a restart. Throws `AcmeFailure`
 * (step `account`).
 */
export async function connectAccount(storage: AutocertStorage, settings: CaClientSettings): Promise<acme.Client> {
  const a = settings.autocert;
  noteRateLimits();
  if (a.trustedCa !== null) trustForOrigin(new URL(settings.directoryUrl).origin, readPemSource(a.trustedCa, 'autocert_trusted_ca'));
  const eab = a.eabKeyId !== null && a.eabMacKey !== null ? { kid: a.eabKeyId, hmacKey: resolveSecretText(a.eabMacKey, 'autocert_eab_mac_key') } : undefined;
  try {
    const client = new acme.Client({
      directoryUrl: settings.directoryUrl,
      accountKey: await accountKey(storage),
      ...(eab ? { externalAccountBinding: eab } : {}),
      backoffAttempts: 10,
      backoffMin: 200,
      backoffMax: 5_000,
    });
    const contact = a.email !== null ? { contact: [`mailto:${a.email}`] } : {};
    if (!(await hasExistingAccount(client))) await client.createAccount({ termsOfServiceAgreed: true, ...contact });
    else if (a.email !== null) await client.updateAccount(contact);
    return client;
  } catch (e) {
    throw classify('(account)', 'account', e, eab !== undefined);
  }
}

/** Whether the CA knows an account for the client's key (and the client now holds its URL). */
async function hasExistingAccount(client: acme.Client): Promise<boolean> {
  try {
    await client.createAccount({ onlyReturnExisting: true });
    return true;
  } catch {
    // `accountDoesNotExist`, or the CA unreachable: registering says which, with the CA's problem.
    return false;
  }
}

