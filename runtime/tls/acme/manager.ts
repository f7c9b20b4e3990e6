/**
 * The autocert manager of one process: for each managed name (names.ts) it keeps the certificate
 * from the autocert directory in service, orders one when there is none or renewal is due
 * (renewal.ts), and retries failures with back-off. The SNI choice reads `get(name)` at each
 * handshake, so an obtained or renewed certificate serves the next handshake: nothing is
 * restarted and open connections keep theirs. Until a name has one, the self-signed fallback of
 * docs/running.md "TLS" serves it (certificates.ts).
 *
 * Several instances sharing the directory: an order runs only under the name's lock (lock.ts);
 * an instance that finds the lock held polls the directory and picks up the result. A stored
 * certificate is used after a restart without asking the CA.
 *
 * Failures are logged once per name and reason (problems.ts), then at debug level only until the
 * reason changes or an order succeeds; nothing is thrown out of the manager.
 */
import { X509Certificate } from 'node:crypto';
import type acme from 'acme-client';
import type { PlanBody, PlanSettings } from '../../../compiler/plan/types.ts';
import { ChallengeResponder } from './challenges.ts';
import { connectAccount } from './ca-client.ts';
import { directoryUrl } from './directory.ts';
import { tryLock, STALE_LOCK_MS } from './lock.ts';
import { managedNames } from './names.ts';
import { orderCertificate } from './order.ts';
import { AcmeFailure, adviceFor, reasonKey, type ChallengeType } from './problems.ts';
import { backoffMs, DEFAULT_BACKOFF, renewalTime, type BackoffPolicy } from './renewal.ts';
import { AutocertStorage } from './storage.ts';
import { rateLimitWaitMs, retryAfterOf } from './retry-after.ts';
import { OcspStapler, type StaplerOptions } from '../ocsp/stapler.ts';

/** A certificate in service for a managed name. A new object on every change. */
export interface ManagedCertificate {
  readonly name: string;
  readonly keyPem: string;
  /** Leaf first, then the chain. */
  readonly chainPem: string;
  readonly notBefore: number;
  readonly notAfter: number;
}

/** What the SNI choice reads (runtime/tls/certificates.ts). */
export interface ManagedCertificateSource {
  get(name: string): ManagedCertificate | undefined;
}

export interface AutocertOptions {
  readonly log?: (entry: Record<string, unknown>) => void;
  /** Whether HTTP-01 can be answered: svc listens on `http_redirect_addr`. */
  readonly http01?: boolean;
  readonly now?: () => number;
  /** When a certificate is due for renewal (default: two thirds of its lifetime). */
  readonly renewalTime?: (notBefore: number, notAfter: number) => number;
  readonly backoff?: BackoffPolicy;
  /** How often the directory is read for certificates other instances stored (default 30 s). */
  readonly pollMs?: number;
  readonly lockStaleMs?: number;
  /** OCSP stapling timing (runtime/tls/ocsp/stapler.ts); `log` is the manager's. */
  readonly ocsp?: Omit<StaplerOptions, 'log'>;
}

interface NameState {
  current: ManagedCertificate | undefined;
  /** The stored file's text the current certificate came from. */
  text: string | undefined;
  timer: NodeJS.Timeout | undefined;
  running: boolean;
  failures: number;
  lastLogged: string | undefined;
  /** The challenge the CA last validated for this name: tried first at the next order. */
  challenge: ChallengeType | undefined;
}

export class AutocertManager implements ManagedCertificateSource {
  readonly storage: AutocertStorage;
  readonly challenges: ChallengeResponder;
  /**
   * OCSP stapling of every certificate the listener serves, managed or configured (docs/autocert.md "OCSP stapling":
   * autocert "also provides OCSP stapling"): the listener's `OCSPRequest` handler.
   */
  readonly ocsp: OcspStapler;
  readonly #autocert: PlanSettings['autocert'];
  readonly #directoryUrl: string;
  readonly #options: AutocertOptions;
  readonly #names = new Map<string, NameState>();
  readonly #waiters = new Map<string, Set<() => void>>();
  #client: Promise<acme.Client> | undefined;
  #closed = false;

  constructor(autocert: PlanSettings['autocert'], options: AutocertOptions = {}) {
    if (!autocert.enabled || autocert.dir === null) throw new Error('bug: AutocertManager without autocert or autocert_dir');
    this.#autocert = autocert;
    this.#directoryUrl = directoryUrl(autocert);
    this.#options = options;
    this.storage = new AutocertStorage(autocert.dir, this.#directoryUrl);
    this.storage.ensureDirs();
    this.challenges = new ChallengeResponder(this.storage);
    this.ocsp = new OcspStapler({ ...options.ocsp, ...(options.log ? { log: options.log } : {}) });
  }

  /**
   * Manages the names of `body` from now on: new names are loaded from the directory or ordered,
   * names no longer used are dropped. Call with the first plan and each plan swapped in.
   */
  update(body: PlanBody): void {
    const wanted = new Set(managedNames(body));
    for (const [name, s] of this.#names) {
      if (wanted.has(name)) continue;
      clearTimeout(s.timer);
      this.#names.delete(name);
    }
    for (const name of wanted) {
      if (this.#names.has(name)) continue;
      const challenge = this.storage.readChallengePreference(name);
      const s: NameState = { current: undefined, text: undefined, timer: undefined, running: false, failures: 0, lastLogged: undefined, challenge };
      this.#names.set(name, s);
      // A stored certificate serves from the first handshake on, before any tick.
      this.#loadStored(name, s);
      this.#schedule(name, 0);
    }
  }

  /** The names managed now. */
  get names(): string[] {
    return [...this.#names.keys()];
  }

  get(name: string): ManagedCertificate | undefined {
    return this.#names.get(name)?.current;
  }

  /** Resolves once `name` has a certificate other than `not` (tests, and `svc` start-up logs). */
  whenIssued(name: string, not?: ManagedCertificate): Promise<ManagedCertificate> {
    const now = this.get(name);
    if (now && now !== not) return Promise.resolve(now);
    return new Promise((resolve) => {
      const set = this.#waiters.get(name) ?? new Set();
      const w = () => {
        const c = this.get(name);
        if (c && c !== not) {
          set.delete(w);
          resolve(c);
        }
      };
      set.add(w);
      this.#waiters.set(name, set);
    });
  }

  close(): void {
    this.#closed = true;
    this.ocsp.close();
    for (const s of this.#names.values()) clearTimeout(s.timer);
  }

  #now(): number {
    return (this.#options.now ?? Date.now)();
  }

  #schedule(name: string, delayMs: number): void {
    const s = this.#names.get(name);
    if (!s || this.#closed) return;
    clearTimeout(s.timer);
    // setTimeout's limit is 2^31-1 ms (24.8 days); a later time is reached by waking up earlier.
    s.timer = setTimeout(() => void this.#tick(name), Math.max(0, Math.min(delayMs, this.#options.pollMs ?? 30_000, 2 ** 31 - 1)));
    s.timer.unref();
  }

  /** Reads the stored certificate of `name` into service when it changed. */
  #loadStored(name: string, s: NameState): void {
    let text: string | undefined;
    try {
      text = this.storage.read(this.storage.certificatePath(name));
    } catch (e) {
      this.#logOnce(name, s, `autocert: cannot read the stored certificate: ${(e as Error).message}`, '', { level: 'warn' });
      return;
    }
    if (text === undefined || text === s.text) return;
    const parsed = parseStored(name, text);
    if (!parsed) return;
    if (s.current && parsed.notAfter <= s.current.notAfter && s.current.chainPem === parsed.chainPem) return;
    s.text = text;
    this.#install(name, s, parsed);
  }

  #install(name: string, s: NameState, cert: ManagedCertificate): void {
    s.current = cert;
    for (const w of [...(this.#waiters.get(name) ?? [])]) w();
  }

  #due(c: ManagedCertificate | undefined): boolean {
    if (!c) return true;
    const at = (this.#options.renewalTime ?? renewalTime)(c.notBefore, c.notAfter);
    return this.#now() >= at;
  }

  async #tick(name: string): Promise<void> {
    const s = this.#names.get(name);
    if (!s || s.running || this.#closed) return;
    s.running = true;
    try {
      this.#loadStored(name, s);
      if (!this.#due(s.current)) {
        const at = (this.#options.renewalTime ?? renewalTime)(s.current!.notBefore, s.current!.notAfter);
        this.#schedule(name, at - this.#now());
        return;
      }
      const lock = tryLock(this.storage.lockPath(name), this.#options.lockStaleMs ?? STALE_LOCK_MS, () => this.#now());
      if (!lock) {
        // Another instance is ordering this name: pick its result up from the directory.
        this.#schedule(name, Math.min(2_000, this.#options.pollMs ?? 2_000));
        return;
      }
      try {
        // It may have finished between our read and the lock.
        this.#loadStored(name, s);
        if (!this.#due(s.current)) {
          this.#schedule(name, 0);
          return;
        }
        await this.#order(name, s);
        s.failures = 0;
        this.#schedule(name, 0);
      } finally {
        lock.release();
      }
    } catch (e) {
      s.failures += 1;
      const failure = e instanceof AcmeFailure ? e : undefined;
      const rateLimited = failure?.kind === 'rate-limited';
      const backoff = backoffMs(this.#options.backoff ?? DEFAULT_BACKOFF, s.failures, rateLimited);
      // A rate limit waits at least as long as the CA's Retry-After said.
      const wait = rateLimited ? rateLimitWaitMs(backoff, retryAfterOf(new URL(this.#directoryUrl).origin, this.#now()), this.#now()) : backoff;
      const reason = failure ? `${failure.kind}: ${failure.message}` : (e as Error).message;
      this.#logOnce(name, s, 'autocert: cannot obtain a certificate', failure ? reasonKey(failure) : reason, {
        level: 'error',
        reason,
        ...(failure ? { kind: failure.kind, help: adviceFor(failure.kind) } : {}),
        ...(failure && failure.problems.length > 0 ? { problems: failure.problems } : {}),
        retryInMs: wait,
        serving: s.current ? 'the previous certificate' : 'a self-signed certificate',
      });
      if (!this.#closed && this.#names.get(name) === s) {
        clearTimeout(s.timer);
        s.timer = setTimeout(() => void this.#tick(name), Math.min(wait, 2 ** 31 - 1));
        s.timer.unref();
      }
    } finally {
      s.running = false;
    }
  }

  async #order(name: string, s: NameState): Promise<void> {
    if (!this.#client) {
      this.#client = connectAccount(this.storage, { directoryUrl: this.#directoryUrl, autocert: this.#autocert });
      this.#client.catch(() => (this.#client = undefined));
    }
    let client: acme.Client;
    try {
      client = await this.#client;
    } catch (e) {
      throw e instanceof AcmeFailure ? new AcmeFailure(e.kind, name, e.message, { cause: e }) : e;
    }
    const issued = await orderCertificate(client, name, this.challenges, {
      mustStaple: this.#autocert.mustStaple,
      http01: this.#options.http01 ?? false,
      eab: this.#autocert.eabKeyId !== null,
      prefer: s.challenge,
    });
    if (issued.challenge && issued.challenge !== s.challenge) {
      s.challenge = issued.challenge;
      // Kept in the directory, so a restart (or another instance) does not try the failing one first.
      this.storage.write(this.storage.challengePreferencePath(name), `${issued.challenge}\n`);
    }
    const text = `${issued.keyPem.trim()}\n${issued.chainPem.trim()}\n`;
    const parsed = parseStored(name, text);
    if (!parsed) throw new AcmeFailure('ca-error', name, `the CA returned a certificate svc cannot read for ${name}`);
    this.storage.write(this.storage.certificatePath(name), text);
    s.text = text;
    this.#install(name, s, parsed);
    s.lastLogged = undefined;
    this.#options.log?.({
      level: 'info',
      msg: 'autocert: certificate obtained',
      name,
      notAfter: new Date(parsed.notAfter).toISOString(),
      ca: this.#directoryUrl,
      ...(issued.challenge ? { challenge: issued.challenge } : {}),
      // Which port the CA could not reach, so an operator can open it (or stop relying on it).
      ...(issued.failedChallenges.length > 0 ? { failedChallenges: issued.failedChallenges } : {}),
    });
  }

  /** Logs `msg` at its level when `reason` differs from the last one logged for `name`, else at debug. */
  #logOnce(name: string, s: NameState, msg: string, reason: string, fields: Record<string, unknown>): void {
    const key = `${msg}|${reason}`;
    if (s.lastLogged === key) {
      this.#options.log?.({ ...fields, level: 'debug', msg, name });
      return;
    }
    s.lastLogged = key;
    this.#options.log?.({ ...fields, msg, name });
  }
}

/** The stored bundle (key, then chain) of `name`, or undefined when it is unusable or not for `name`. */
export function parseStored(name: string, text: string): ManagedCertificate | undefined {
  const key = /-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]+?-----END [A-Z ]*PRIVATE KEY-----/.exec(text)?.[0];
  const certs = text.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g);
  if (!key || !certs || certs.length === 0) return undefined;
  try {
    const leaf = new X509Certificate(certs[0]!);
    if (!leaf.checkHost(name)) return undefined;
    return { name, keyPem: `${key}\n`, chainPem: `${certs.join('\n')}\n`, notBefore: Date.parse(leaf.validFrom), notAfter: Date.parse(leaf.validTo) };
  } catch {
    return undefined;
  }
}
