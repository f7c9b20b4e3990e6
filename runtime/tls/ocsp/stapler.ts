/**
 * OCSP stapling (docs/autocert.md "OCSP stapling"; RFC 6066 §8, RFC 6960,
 * RFC 7633) for every certificate the HTTPS listener serves, configured or managed, that names an
 * OCSP responder in its Authority Information Access. Node asks through the server's
 * `OCSPRequest` event, only for clients that request a status; `handle` answers it.
 *
 * - A certificate is taken on at the first handshake that asks for its status: the response is
 *   fetched then (that handshake waits for it at most `firstFetchWaitMs`), cached, and refreshed
 *   at half its validity (`thisUpdate` to `nextUpdate`; a response without `nextUpdate` counts as
 *   valid for a day). A failed fetch is retried with back-off and logged once per reason; the last
 *   valid response keeps being stapled until its `nextUpdate`.
 * - Only checked responses are stapled (response.ts): signed by the issuer or its delegated
 *   responder, naming the certificate, `good`, not expired. A `revoked` answer drops the staple
 *   and is logged as an error.
 * - Must-staple (RFC 7633): once a valid response has been fetched for a must-staple certificate,
 *   a handshake that asks for its status is refused (the TLS connection is closed, logged at
 *   error) whenever svc holds no valid response for it: a client enforcing must-staple would
 *   refuse the certificate anyway, and svc never serves it in a state the certificate forbids.
 *   Before the first response was ever fetched (CA's responder down at start), it is served
 *   without a staple, as without stapling.
 * - A certificate no handshake asked about for two days is forgotten (bounded by what svc serves:
 *   Node passes only certificates of svc's own contexts).
 */
import { createHash } from 'node:crypto';
import { OcspResponseError } from '../errors.ts';
import { checkResponse, type CheckedResponse } from './response.ts';
import { ocspSubject, type OcspSubject } from './request.ts';

export interface StaplerOptions {
  readonly log?: (entry: Record<string, unknown>) => void;
  readonly now?: () => number;
  /** When to fetch a fresh response, given the current one's validity (default: halfway). */
  readonly refreshTime?: (thisUpdate: number, expiresAt: number) => number;
  /** Earliest refresh after a fetch (default one minute), so a responder's cached answers cannot make svc loop. */
  readonly minRefreshMs?: number;
  /** First retry after a failed fetch, doubled per failure up to an hour (default one minute). */
  readonly retryMs?: number;
  /** How long the first handshake asking for a certificate's status waits for its first response (default 3 s). */
  readonly firstFetchWaitMs?: number;
  /** Limit of one fetch (default 10 s). */
  readonly fetchTimeoutMs?: number;
}

/** Validity assumed for a response without `nextUpdate`. */
const NO_NEXT_UPDATE_VALIDITY_MS = 24 * 3_600_000;
const FORGET_AFTER_MS = 2 * 24 * 3_600_000;
const MAX_RETRY_MS = 3_600_000;
const MAX_RESPONSE_BYTES = 64 * 1024;

interface Entry {
  readonly subject: OcspSubject;
  staple: (CheckedResponse & { readonly expiresAt: number }) | undefined;
  /** Whether a valid response was ever fetched (the must-staple rule applies from then on). */
  everStapled: boolean;
  first: Promise<void>;
  timer: NodeJS.Timeout | undefined;
  failures: number;
  lastAsked: number;
  lastLogged: string | undefined;
}

type OcspCallback = (err: Error | null, response?: Buffer) => void;

export class OcspStapler {
  readonly #options: StaplerOptions;
  /** By SHA-256 of the leaf's DER; null: the certificate has nothing to staple. */
  readonly #entries = new Map<string, Entry | null>();
  #closed = false;

  constructor(options: StaplerOptions = {}) {
    this.#options = options;
  }

  /** The `OCSPRequest` listener of a TLS server: `server.on('OCSPRequest', stapler.handle)`. */
  readonly handle = (cert: Buffer, issuer: Buffer | null, cb: OcspCallback): void => {
    const key = createHash('sha256').update(cert).digest('hex');
    let entry = this.#entries.get(key);
    if (entry === undefined) {
      entry = this.#track(key, cert, issuer);
      if (entry) {
        const e = entry;
        const wait = new Promise<void>((resolve) => setTimeout(resolve, this.#options.firstFetchWaitMs ?? 3_000).unref());
        void Promise.race([e.first, wait]).then(() => this.#answer(e, cb));
        return;
      }
    }
    if (entry === null) return cb(null);
    this.#answer(entry, cb);
  };

  /** The response stapled now for the certificate `certDer`, if any (tests, diagnostics). */
  stapleFor(certDer: Buffer): Buffer | undefined {
    const e = this.#entries.get(createHash('sha256').update(certDer).digest('hex'));
    return e?.staple && this.#valid(e) ? e.staple.der : undefined;
  }

  close(): void {
    this.#closed = true;
    for (const e of this.#entries.values()) clearTimeout(e?.timer);
  }

  #now(): number {
    return (this.#options.now ?? Date.now)();
  }

  #valid(e: Entry): boolean {
    return e.staple !== undefined && e.staple.expiresAt > this.#now();
  }

  #answer(e: Entry, cb: OcspCallback): void {
    e.lastAsked = this.#now();
    if (this.#valid(e)) return cb(null, e.staple!.der);
    if (e.subject.mustStaple && e.everStapled) {
      this.#options.log?.({
        level: 'error',
        msg: 'ocsp: handshake refused: must-staple certificate without a valid OCSP response',
        subject: e.subject.leaf.subject.replace(/\n/g, ', '),
        responder: e.subject.url,
        help: 'the OCSP responder has not answered since the last response expired; svc keeps retrying. Check that it is reachable from svc',
      });
      return cb(new Error('must-staple certificate without a valid OCSP response'));
    }
    cb(null);
  }

  #track(key: string, cert: Buffer, issuer: Buffer | null): Entry | null {
    let subject: OcspSubject | undefined;
    try {
      subject = issuer ? ocspSubject(cert, issuer) : undefined;
    } catch (e) {
      this.#options.log?.({ level: 'warn', msg: 'ocsp: cannot staple a certificate', reason: (e as Error).message });
    }
    if (!subject) {
      // Without a responder URL or an issuer in the chain, there is nothing to staple, ever.
      this.#entries.set(key, null);
      return null;
    }
    const e: Entry = { subject, staple: undefined, everStapled: false, first: Promise.resolve(), timer: undefined, failures: 0, lastAsked: this.#now(), lastLogged: undefined };
    this.#entries.set(key, e);
    e.first = this.#refresh(key, e);
    return e;
  }

  async #refresh(key: string, e: Entry): Promise<void> {
    if (this.#closed || this.#entries.get(key) !== e) return;
    if (this.#now() - e.lastAsked > FORGET_AFTER_MS) {
      this.#entries.delete(key);
      return;
    }
    let delay: number;
    try {
      const checked = checkResponse(await this.#fetch(e.subject), e.subject, this.#now());
      const expiresAt = checked.nextUpdate ?? checked.thisUpdate + NO_NEXT_UPDATE_VALIDITY_MS;
      e.staple = { ...checked, expiresAt };
      e.everStapled = true;
      e.failures = 0;
      if (e.lastLogged !== undefined) this.#options.log?.({ level: 'info', msg: 'ocsp: response fetched again', responder: e.subject.url });
      e.lastLogged = undefined;
      const at = (this.#options.refreshTime ?? halfway)(checked.thisUpdate, expiresAt);
      delay = Math.max(at - this.#now(), this.#options.minRefreshMs ?? 60_000);
    } catch (err) {
      e.failures += 1;
      const revoked = err instanceof OcspResponseError && err.revoked;
      if (revoked) e.staple = undefined;
      delay = Math.min((this.#options.retryMs ?? 60_000) * 2 ** (e.failures - 1), MAX_RETRY_MS);
      const reason = (err as Error).message;
      const fields = {
        level: revoked ? 'error' : e.lastLogged === reason ? 'debug' : 'warn',
        msg: 'ocsp: cannot refresh the OCSP response',
        reason,
        responder: e.subject.url,
        subject: e.subject.leaf.subject.replace(/\n/g, ', '),
        stapling: this.#valid(e) ? `the previous response, until ${new Date(e.staple!.expiresAt).toISOString()}` : 'nothing',
        retryInMs: delay,
      };
      e.lastLogged = reason;
      this.#options.log?.(fields);
    }
    if (this.#closed || this.#entries.get(key) !== e) return;
    clearTimeout(e.timer);
    e.timer = setTimeout(() => void this.#refresh(key, e), Math.min(delay, 2 ** 31 - 1));
    e.timer.unref();
  }

  async #fetch(subject: OcspSubject): Promise<Buffer> {
    const res = await fetch(subject.url, {
      method: 'POST',
      headers: { 'content-type': 'application/ocsp-request', accept: 'application/ocsp-response' },
      body: subject.request,
      signal: AbortSignal.timeout(this.#options.fetchTimeoutMs ?? 10_000),
    });
    if (res.status !== 200) throw new OcspResponseError(`the responder answered HTTP ${res.status}`);
    const body = Buffer.from(await res.arrayBuffer());
    if (body.length > MAX_RESPONSE_BYTES) throw new OcspResponseError('the response is too large');
    return body;
  }
}

/** Default refresh time: halfway through the response's validity. */
function halfway(thisUpdate: number, expiresAt: number): number {
  return thisUpdate + (expiresAt - thisUpdate) / 2;
}
