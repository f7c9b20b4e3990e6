/**
 * The server certificate store: every configured certificate pair of a plan, the SNI choice among
 * them, and self-signed certificates for service URLs none of them covers (docs/running.md "TLS").
 *
 * Choice for an SNI name, first hit wins:
 * 1. a configured certificate with exactly that name (in configured order);
 * 2. a configured certificate with a wildcard name covering it (`*.example.com`, one label);
 * 3. a name autocert manages with a certificate already obtained (runtime/tls/acme/), read at
 *    each handshake, so a renewed certificate serves the next handshake;
 * 4. a name svc serves (a route `from` host, the authenticate service and internal service hosts,
 *    the forward-auth host): a self-signed certificate for that name, generated on first use
 *    (with autocert: until the CA issued one);
 * 5. otherwise the default: the first configured certificate.
 * A connection without SNI gets the default. Without any configured certificate (autocert setups)
 * the default is a self-signed certificate for the first served host (else `localhost`).
 *
 * INVARIANT (bounded-generation): only names from the plan get a generated certificate; an
 * arbitrary SNI name from a client falls back to the default, so clients cannot make svc generate
 * and keep unbounded numbers of certificates.
 */
import { X509Certificate } from 'node:crypto';
import tls from 'node:tls';
import type { PlanBody } from '../../compiler/plan/types.ts';
import { TlsMaterialError } from './errors.ts';
import { bareHost, certificateDnsNames, nameCovers, servedHosts } from './host-names.ts';
import { pemBlocks, readKey, readPemSource, type ReadMode } from './pem.ts';
import { SelfSignedCache } from './self-signed.ts';
import type { ManagedCertificate, ManagedCertificateSource } from './acme/manager.ts';

/** A configured certificate pair, loaded. */
export interface CertificateEntry {
  /** Position in the plan's `settings.tls.certificates`. */
  readonly index: number;
  /** DNS names of the leaf certificate as loaded (SANs, else CN), lower-case. */
  readonly names: readonly string[];
  readonly certPem: string;
  readonly keyPem: string;
  readonly context: tls.SecureContext;
}

/** Which certificate serves a connection, and why. */
export type CertificateChoice =
  | { readonly kind: 'configured'; readonly match: 'exact' | 'wildcard' | 'default'; readonly entry: CertificateEntry }
  | { readonly kind: 'managed'; readonly certificate: ManagedCertificate }
  | { readonly kind: 'self-signed'; readonly match: 'service-url' | 'default'; readonly name: string };

export interface CertificateStoreOptions {
  /** `load` checks key fingerprints against the plan; `reload` reads changed files (see pem.ts). */
  readonly mode?: ReadMode;
  /** Generated certificates, shared across rebuilds; a new cache when absent. */
  readonly selfSigned?: SelfSignedCache;
  /**
   * Client CA certificates (PEM) to name in the certificate request; empty when no client
   * certificate is requested. Each context carries them, since the SNI context replaces the default.
   */
  readonly clientCaPems?: readonly string[];
  /** Certificates autocert obtained (`autocert: true`); configured certificates win over them. */
  readonly managed?: ManagedCertificateSource;
}

/** Secure contexts of managed certificates, per certificate and client-CA bundle. */
const managedContexts = new WeakMap<ManagedCertificate, Map<string, tls.SecureContext>>();

export class CertificateStore {
  readonly #entries: readonly CertificateEntry[];
  readonly #exact = new Map<string, CertificateEntry>();
  readonly #wildcard = new Map<string, CertificateEntry>();
  readonly #served: ReadonlySet<string>;
  readonly #defaultName: string;
  readonly #selfSigned: SelfSignedCache;
  readonly #ca: string | undefined;
  readonly #managed: ManagedCertificateSource | undefined;
  readonly #generated = new Map<string, Promise<tls.SecureContext>>();
  #defaultGenerated: { certPem: string; keyPem: string; context: tls.SecureContext } | null = null;

  private constructor(body: PlanBody, options: CertificateStoreOptions) {
    const mode = options.mode ?? 'load';
    const ca = options.clientCaPems ?? [];
    this.#ca = ca.length > 0 ? ca.join('\n') : undefined;
    this.#selfSigned = options.selfSigned ?? new SelfSignedCache();
    this.#managed = options.managed;
    this.#entries = body.settings.tls.certificates.map((pair, index) => {
      const what = `certificates[${index}]`;
      const certPem = readPemSource(pair.cert, `${what}.cert`);
      const keyPem = readKey(pair.key, `${what}.key`, mode);
      const leafPem = pemBlocks(certPem, 'CERTIFICATE')[0];
      if (leafPem === undefined) throw new TlsMaterialError(`${what}.cert`, 'no `-----BEGIN CERTIFICATE-----` block');
      let leaf: X509Certificate;
      try {
        leaf = new X509Certificate(leafPem);
      } catch (e) {
        throw new TlsMaterialError(`${what}.cert`, `not a certificate: ${(e as Error).message}`, { cause: e });
      }
      const context = this.#context(certPem, keyPem, what);
      return { index, names: certificateDnsNames(leaf.subjectAltName, leaf.subject), certPem, keyPem, context };
    });
    for (const e of this.#entries) {
      for (const n of e.names) {
        const map = n.startsWith('*.') ? this.#wildcard : this.#exact;
        if (!map.has(n)) map.set(n, e);
      }
    }
    this.#served = servedHosts(body);
    this.#defaultName = [...this.#served][0] ?? 'localhost';
  }

  /**
   * Loads every certificate pair of `body`. Throws `TlsMaterialError` for an unreadable file, a
   * changed key (at load), a bad certificate, or a key that does not match its certificate.
   */
  static async create(body: PlanBody, options: CertificateStoreOptions = {}): Promise<CertificateStore> {
    const store = new CertificateStore(body, options);
    if (store.#entries.length === 0) {
      // The default context must exist synchronously for clients without SNI.
      const g = await store.#selfSigned.get(store.#defaultName);
      store.#defaultGenerated = { certPem: g.certPem, keyPem: g.keyPem, context: store.#context(g.certPem, g.keyPem, 'self-signed') };
    }
    return store;
  }

  /** The configured pairs, in plan order. */
  get entries(): readonly CertificateEntry[] {
    return this.#entries;
  }

  /** The certificate for a connection whose SNI name is `servername` (absent: no SNI). Never generates. */
  choose(servername: string | false | null | undefined): CertificateChoice {
    if (servername) {
      const name = bareHost(servername);
      const exact = this.#exact.get(name);
      if (exact) return { kind: 'configured', match: 'exact', entry: exact };
      const dot = name.indexOf('.');
      if (dot > 0) {
        const wild = this.#wildcard.get(`*.${name.slice(dot + 1)}`);
        if (wild) return { kind: 'configured', match: 'wildcard', entry: wild };
      }
      const managed = this.#managed?.get(name);
      if (managed) return { kind: 'managed', certificate: managed };
      if (this.#served.has(name)) return { kind: 'self-signed', match: 'service-url', name };
    }
    const first = this.#entries[0];
    return first ? { kind: 'configured', match: 'default', entry: first } : { kind: 'self-signed', match: 'default', name: this.#defaultName };
  }

  /** The DNS names of the certificate chosen for `servername`. */
  namesFor(servername: string | false | null | undefined): readonly string[] {
    const c = this.choose(servername);
    if (c.kind === 'configured') return c.entry.names;
    return c.kind === 'managed' ? [c.certificate.name] : [c.name];
  }

  /**
   * Whether the certificate chosen for a connection with SNI `servername` covers `host` (a `Host`
   * or `:authority`, port allowed). False means the request came over a connection coalesced for
   * another name (HTTP/2 connection reuse) and is answered 421 Misdirected Request (docs/running.md "TLS").
   */
  servesHost(servername: string | false | null | undefined, host: string): boolean {
    const h = bareHost(host);
    if (h === '') return false;
    return this.namesFor(servername).some((n) => nameCovers(n, h));
  }

  /** The secure context for `servername`, generating its self-signed certificate on first use. */
  selectContext(servername: string | false | null | undefined): Promise<tls.SecureContext> {
    const c = this.choose(servername);
    if (c.kind === 'configured') return Promise.resolve(c.entry.context);
    if (c.kind === 'managed') {
      try {
        return Promise.resolve(this.#managedContext(c.certificate));
      } catch (e) {
        return Promise.reject(e instanceof Error ? e : new Error(String(e)));
      }
    }
    if (c.match === 'default' && this.#defaultGenerated) return Promise.resolve(this.#defaultGenerated.context);
    let p = this.#generated.get(c.name);
    if (!p) {
      p = this.#selfSigned.get(c.name).then((g) => this.#context(g.certPem, g.keyPem, `self-signed ${c.name}`));
      p.catch(() => this.#generated.delete(c.name));
      this.#generated.set(c.name, p);
    }
    return p;
  }

  /** A `tls` `SNICallback` over `selectContext`. */
  readonly sniCallback = (servername: string, cb: (err: Error | null, ctx?: tls.SecureContext) => void): void => {
    this.selectContext(servername).then(
      (ctx) => cb(null, ctx),
      (e: unknown) => cb(e instanceof Error ? e : new Error(String(e))),
    );
  };

  /**
   * Options of the server's default context (connections without SNI): the default certificate,
   * its key, and the client CAs. Give them to the server at creation and to `setSecureContext` on
   * every swap.
   */
  defaultContextOptions(): { cert: string; key: string; ca?: string } {
    const first = this.#entries[0];
    const g = first ?? this.#defaultGenerated;
    if (!g) throw new Error('bug: certificate store without a default certificate');
    return this.#ca === undefined ? { cert: g.certPem, key: g.keyPem } : { cert: g.certPem, key: g.keyPem, ca: this.#ca };
  }

  #managedContext(m: ManagedCertificate): tls.SecureContext {
    let byCa = managedContexts.get(m);
    if (!byCa) managedContexts.set(m, (byCa = new Map()));
    const key = this.#ca ?? '';
    let ctx = byCa.get(key);
    if (!ctx) byCa.set(key, (ctx = this.#context(m.chainPem, m.keyPem, `autocert ${m.name}`)));
    return ctx;
  }

  #context(cert: string, key: string, what: string): tls.SecureContext {
    try {
      return tls.createSecureContext(this.#ca === undefined ? { cert, key } : { cert, key, ca: this.#ca });
    } catch (e) {
      throw new TlsMaterialError(what, `cannot use the certificate and key: ${(e as Error).message}`, { cause: e });
    }
  }
}
