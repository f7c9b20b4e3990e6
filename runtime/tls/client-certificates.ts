/**
 * Client-certificate verification (docs/running.md "TLS": `client_ca`/`client_crl`,
 * `tls_downstream_client_ca`, §5.5). The global `client_ca` applies to every route; a route's
 * `tls_downstream_client_ca` replaces it for that route; `client_crl` revokes certificates of
 * whichever CA signed it.
 *
 * The route is known only once the request has been read, after the handshake, so the listener
 * *requests* a certificate whenever any CA is configured (never requires it at the TLS layer) and
 * the server verifies per route with `ClientCertificatePolicy`; a route that requires a
 * certificate answers 495 when it is missing or invalid.
 *
 * The path is walked here, over node:crypto `X509Certificate` (`checkIssued` + `verify` with the
 * issuer key: OpenSSL checks names, the issuer's key usage `keyCertSign` and signatures), with the
 * extensions read by `@peculiar/x509`: validity dates, basic constraints (cA and
 * pathLenConstraint), extended key usage of the client's certificate. What the walk does not
 * process it refuses (RFC 5280 §6.1): a path through a certificate with name constraints, or with
 * any other critical extension it does not know, is `untrusted`; a configured CA with name
 * constraints is refused at start. Why not a library's path validation: OpenSSL's runs once per
 * connection against one trust store while trust here differs per route, and pkijs'
 * `CertificateChainValidationEngine` (like `@peculiar/x509`'s `X509ChainBuilder`) is Promise-only
 * (WebCrypto), while this check is called synchronously from the decision core
 * (runtime/request/decide.ts `clientCertificate`). CRLs are parsed with `@peculiar/x509` (Node
 * cannot read CRLs); their signatures are checked once, when the trust is built, so verifying a
 * request is synchronous.
 */
import { X509Certificate } from 'node:crypto';
import type { TLSSocket } from 'node:tls';
import type { PlanBody, Route } from '../../compiler/plan/types.ts';
import { loadFeature } from '../core/load-feature.ts';
import { TlsMaterialError } from './errors.ts';
import { pemBlocks, readPemSource } from './pem.ts';
import type { x509 } from './x509.ts';

/** The ASN.1 and X.509 libraries the checks read extensions and CRLs with. */
interface CertificateLibraries {
  readonly asn: typeof import('@peculiar/asn1-schema');
  readonly schemas: typeof import('@peculiar/asn1-x509');
  readonly x509: typeof x509;
}
let libraries: CertificateLibraries | undefined;

/**
 * Loads the libraries (about 200 modules) the first time a CRL is read or a trust is built: a plan
 * without client CAs never loads them. Every path to {@link readFacts} goes through a trust, which
 * awaits this first, so the per-request checks stay synchronous.
 */
async function loadLibraries(): Promise<CertificateLibraries> {
  libraries ??= await loadFeature('client certificates', async () => {
    const [asn, schemas, lib] = await Promise.all([import('@peculiar/asn1-schema'), import('@peculiar/asn1-x509'), import('./x509.ts')]);
    return { asn, schemas, x509: lib.x509 };
  });
  return libraries;
}

function loaded(): CertificateLibraries {
  if (!libraries) throw new Error('bug: client-certificate libraries used before a trust loaded them');
  return libraries;
}

export type ClientCertificateReason =
  /** No certificate was presented. */
  | 'absent'
  /** No chain from the certificate to a configured CA. */
  | 'untrusted'
  | 'expired'
  | 'not-yet-valid'
  /** Listed in a CRL of its issuer. */
  | 'revoked'
  /** The issuer's CRL is past its `nextUpdate`: revocation cannot be checked, so fail closed. */
  | 'crl-expired'
  /** Extended key usage present without `clientAuth`. */
  | 'not-for-client-auth';

/** The outcome of verifying a presented certificate chain against one trust. */
export interface ClientCertificateResult {
  readonly present: boolean;
  readonly valid: boolean;
  /** SHA-256 of the leaf's DER, lower-case hex without colons; null when absent. */
  readonly fingerprint: string | null;
  /** Why the certificate is not valid; null when valid. */
  readonly reason: ClientCertificateReason | null;
}

const CLIENT_AUTH = '1.3.6.1.5.5.7.3.2';
const ANY_EKU = '2.5.29.37.0';
/** Longest chain followed from leaf to anchor (intermediates sent by the client). */
const MAX_DEPTH = 8;

interface Revocations {
  readonly serials: Set<string>;
  /** Latest `nextUpdate` of the issuer's CRLs; null when one of them has none. */
  nextUpdateMs: number | null;
}

interface Anchor {
  readonly cert: X509Certificate;
  readonly issuer: IssuerFacts;
  readonly revocations: Revocations | null;
}

const EXT = {
  basicConstraints: '2.5.29.19',
  keyUsage: '2.5.29.15',
  extKeyUsage: '2.5.29.37',
  subjectAltName: '2.5.29.17',
  certificatePolicies: '2.5.29.32',
  nameConstraints: '2.5.29.30',
} as const;

/**
 * Critical extensions the walk may pass over. Subject alternative names identify nothing here (a
 * client is its fingerprint); certificate policies cannot invalidate a path when svc requires no
 * policy and no certificate of it carries policy constraints, which are critical and so refused.
 */
const HANDLED_CRITICAL: ReadonlySet<string> = new Set([EXT.basicConstraints, EXT.keyUsage, EXT.extKeyUsage, EXT.subjectAltName, EXT.certificatePolicies]);

/** What the walk needs to know of a certificate, beyond what node:crypto reports. */
interface IssuerFacts {
  /** Basic constraints cA (`keyCertSign` is checked by OpenSSL's `checkIssued`). */
  readonly canIssue: boolean;
  /** pathLenConstraint: how many intermediates may follow it; undefined: no limit. */
  readonly pathLength: number | undefined;
  /** Why a path through it cannot be validated here (name constraints, unknown critical extension). */
  readonly unprocessable: string | null;
}

/** Facts by certificate SHA-256: intermediates recur across clients, and reading them costs more than verifying. */
const factsCache = new Map<string, IssuerFacts>();
const FACTS_CACHE_MAX = 1024;

/** Read with the `@peculiar/asn1-x509` schemas (those under `@peculiar/x509`, a third of the time of its wrapper). */
function factsOf(cert: X509Certificate): IssuerFacts {
  const key = cert.fingerprint256;
  let facts = factsCache.get(key);
  if (!facts) {
    facts = readFacts(cert);
    if (factsCache.size >= FACTS_CACHE_MAX) factsCache.delete(factsCache.keys().next().value!);
    factsCache.set(key, facts);
  }
  return facts;
}

function readFacts(cert: X509Certificate): IssuerFacts {
  const { asn: { AsnConvert }, schemas: { BasicConstraints, Certificate } } = loaded();
  const extensions = AsnConvert.parse(cert.raw, Certificate).tbsCertificate.extensions ?? [];
  const bcExt = extensions.find((e) => e.extnID === EXT.basicConstraints);
  const bc = bcExt ? AsnConvert.parse(bcExt.extnValue, BasicConstraints) : undefined;
  const canIssue = bc?.cA === true;
  let unprocessable: string | null = null;
  if (extensions.some((e) => e.extnID === EXT.nameConstraints)) unprocessable = 'name constraints';
  else {
    const unknown = extensions.find((e) => e.critical && !HANDLED_CRITICAL.has(e.extnID));
    if (unknown) unprocessable = `critical extension ${unknown.extnID}`;
  }
  return { canIssue, pathLength: canIssue ? bc?.pathLenConstraint : undefined, unprocessable };
}

/** The SHA-256 fingerprint svc uses for certificates: lower-case hex, no colons. */
function certificateFingerprint(cert: X509Certificate): string {
  return cert.fingerprint256.replaceAll(':', '').toLowerCase();
}

/** A serial number in one canonical form: lower-case hex without leading zeros. */
function canonicalSerial(hex: string): string {
  return hex.toLowerCase().replace(/^0+(?=.)/, '');
}

function parseCertificates(pem: string, what: string): X509Certificate[] {
  const blocks = pemBlocks(pem, 'CERTIFICATE');
  if (blocks.length === 0) throw new TlsMaterialError(what, 'no `-----BEGIN CERTIFICATE-----` block');
  return blocks.map((b) => {
    try {
      return new X509Certificate(b);
    } catch (e) {
      throw new TlsMaterialError(what, `not a certificate: ${(e as Error).message}`, { cause: e });
    }
  });
}

export async function parseCrls(pem: string, what: string): Promise<x509.X509Crl[]> {
  const blocks = pemBlocks(pem, 'X509 CRL');
  if (blocks.length === 0) throw new TlsMaterialError(what, 'no `-----BEGIN X509 CRL-----` block');
  const { x509: lib } = await loadLibraries();
  return blocks.map((b) => {
    try {
      return new lib.X509Crl(b);
    } catch (e) {
      throw new TlsMaterialError(what, `not a CRL: ${(e as Error).message}`, { cause: e });
    }
  });
}

/** Whether `crl` is signed by `ca` (issuer name and signature). */
async function crlSignedBy(crl: x509.X509Crl, ca: X509Certificate): Promise<boolean> {
  const issuer = new (loaded().x509.X509Certificate)(ca.raw);
  if (issuer.subject !== crl.issuer) return false;
  try {
    return await crl.verify({ publicKey: issuer });
  } catch {
    return false;
  }
}

/**
 * A set of trusted client CAs with the revocations that apply to them. Immutable once built.
 */
export class ClientTrust {
  readonly #anchors: readonly Anchor[];
  /** The CA certificates, PEM, for the certificate request's list of acceptable CAs. */
  readonly caPems: readonly string[];
  /** Which of the given CRLs (by position) are signed by one of these CAs. */
  readonly crlsMatched: ReadonlySet<number>;

  private constructor(anchors: Anchor[], matched: Set<number>) {
    this.#anchors = anchors;
    this.caPems = anchors.map((a) => a.cert.toString());
    this.crlsMatched = matched;
  }

  /**
   * Builds a trust from CA certificates and CRLs. A CRL applies to the CA whose name and key
   * signed it; CRLs of other CAs are ignored here (`crlsMatched` tells which applied). Throws
   * `TlsMaterialError` for unparsable material.
   */
  static async create(caPems: readonly string[], crls: readonly x509.X509Crl[], what = 'client_ca'): Promise<ClientTrust> {
    await loadLibraries();
    const certs = caPems.flatMap((p) => parseCertificates(p, what));
    const matched = new Set<number>();
    const anchors: Anchor[] = [];
    for (const cert of certs) {
      const issuer = factsOf(cert);
      if (issuer.unprocessable === 'name constraints') {
        throw new TlsMaterialError(what, `the CA certificate ${cert.subject.replace(/\n/g, ', ')} has name constraints, which svc does not apply to client certificates; configure a CA without them`);
      }
      let revocations: Revocations | null = null;
      for (const [i, crl] of crls.entries()) {
        if (!(await crlSignedBy(crl, cert))) continue;
        matched.add(i);
        revocations ??= { serials: new Set(), nextUpdateMs: -Infinity };
        for (const e of crl.entries) revocations.serials.add(canonicalSerial(e.serialNumber));
        const next = crl.nextUpdate?.getTime() ?? null;
        if (next === null || revocations.nextUpdateMs === null) revocations.nextUpdateMs = null;
        else revocations.nextUpdateMs = Math.max(revocations.nextUpdateMs, next);
      }
      anchors.push({ cert, issuer, revocations });
    }
    return new ClientTrust(anchors, matched);
  }

  /**
   * Verifies a presented chain: `chain[0]` is the client's certificate, the rest are
   * intermediates it sent (untrusted until they chain to a configured CA). Every certificate on the
   * path must be within its validity dates; each issuer must be a CA allowed to sign certificates
   * (`keyCertSign` when it has a key usage) with no more intermediates below it than its
   * pathLenConstraint; a certificate with name constraints or an unknown critical extension ends
   * the path (`untrusted`); a certificate issued by a
   * configured CA with a CRL must not be listed in it, and that CRL must be current. Revocation of
   * certificates issued by client-sent intermediates is not checked (their CRLs are not configured).
   * A configured CA may itself be an intermediate: it is trusted as given (the CA bundle is the
   * trust), which is how intermediates must be configured for TLS clients, see `peerCertificateChain`.
   */
  verify(chain: readonly X509Certificate[], now: Date = new Date()): ClientCertificateResult {
    const leaf = chain[0];
    if (!leaf) return { present: false, valid: false, fingerprint: null, reason: 'absent' };
    const fingerprint = certificateFingerprint(leaf);
    const fail = (reason: ClientCertificateReason): ClientCertificateResult => ({ present: true, valid: false, fingerprint, reason });
    const eku = leaf.keyUsage;
    if (eku && eku.length > 0 && !eku.includes(CLIENT_AUTH) && !eku.includes(ANY_EKU)) return fail('not-for-client-auth');
    if (factsOf(leaf).unprocessable !== null) return fail('untrusted');
    const t = now.getTime();
    let cur = leaf;
    // `depth` is also the number of intermediates below the issuer looked for (pathLenConstraint).
    for (let depth = 0; depth < MAX_DEPTH; depth++) {
      if (t < Date.parse(cur.validFrom)) return fail('not-yet-valid');
      if (t > Date.parse(cur.validTo)) return fail('expired');
      const subject = cur;
      const issues = (f: IssuerFacts) => f.canIssue && (f.pathLength === undefined || depth <= f.pathLength);
      const anchor = this.#anchors.find((a) => issues(a.issuer) && subject.checkIssued(a.cert) && subject.verify(a.cert.publicKey));
      if (anchor) {
        if (t < Date.parse(anchor.cert.validFrom)) return fail('not-yet-valid');
        if (t > Date.parse(anchor.cert.validTo)) return fail('expired');
        const rev = anchor.revocations;
        if (rev) {
          if (rev.serials.has(canonicalSerial(cur.serialNumber))) return fail('revoked');
          if (rev.nextUpdateMs !== null && t > rev.nextUpdateMs) return fail('crl-expired');
        }
        return { present: true, valid: true, fingerprint, reason: null };
      }
      const next = chain.find((c) => c !== subject && c.ca && subject.checkIssued(c) && subject.verify(c.publicKey));
      if (!next) return fail('untrusted');
      const f = factsOf(next);
      if (!issues(f) || f.unprocessable !== null) return fail('untrusted');
      cur = next;
    }
    return fail('untrusted');
  }
}

/**
 * The certificate chain a TLS peer presented: its certificate, then the issuers Node reports.
 * Empty when it presented none. On the server side Node reports the client's certificate only,
 * not the intermediates the client sent, so a client CA that signs through an intermediate must
 * list that intermediate in `client_ca` / `tls_downstream_client_ca` (as docs/configuration.md "Settings" asks for
 * `certificate_authority`).
 */
function peerCertificateChain(socket: TLSSocket): X509Certificate[] {
  const leaf = socket.getPeerX509Certificate();
  if (!leaf) return [];
  const out = [leaf];
  let detail = socket.getPeerCertificate(true);
  for (let i = 0; i < MAX_DEPTH; i++) {
    const up = detail.issuerCertificate as typeof detail | undefined;
    if (!up || up === detail || !up.raw) break;
    out.push(new X509Certificate(up.raw));
    detail = up;
  }
  return out;
}

/** How long a verification result is reused for one connection (validity dates move on). */
const CONNECTION_CACHE_MS = 60_000;

/**
 * The client-certificate rules of one plan: which trust applies to which route. Build it with
 * `create`; it is immutable and swapped as a whole with the rest of the TLS material.
 */
export class ClientCertificatePolicy {
  readonly #global: ClientTrust | null;
  readonly #byRoute: ReadonlyMap<string, ClientTrust>;
  readonly #cache = new WeakMap<object, Map<ClientTrust, { result: ClientCertificateResult; atMs: number }>>();
  /** Every configured CA certificate (global and per route), PEM, deduplicated. */
  readonly caPems: readonly string[];

  private constructor(global: ClientTrust | null, byRoute: Map<string, ClientTrust>) {
    this.#global = global;
    this.#byRoute = byRoute;
    const all = new Set<string>(global?.caPems ?? []);
    for (const t of byRoute.values()) for (const p of t.caPems) all.add(p);
    this.caPems = [...all];
  }

  /**
   * Reads `client_ca`, `client_crl` and every route's `tls_downstream_client_ca`. Throws
   * `TlsMaterialError` for unreadable or unparsable material, and for a CRL signed by none of the
   * configured CAs (a CRL that revokes nothing would silently fail open).
   */
  static async create(body: PlanBody): Promise<ClientCertificatePolicy> {
    const tls = body.settings.tls;
    const crls = tls.clientCrl ? await parseCrls(readPemSource(tls.clientCrl, 'client_crl'), 'client_crl') : [];
    const matched = new Set<number>();
    const global = tls.clientCa ? await ClientTrust.create([readPemSource(tls.clientCa, 'client_ca')], crls, 'client_ca') : null;
    for (const i of global?.crlsMatched ?? []) matched.add(i);
    const byPem = new Map<string, ClientTrust>();
    const byRoute = new Map<string, ClientTrust>();
    for (const r of body.routes) {
      const src = r.tls.downstreamClientCa;
      if (!src) continue;
      const what = `routes[${r.index}].tls_downstream_client_ca`;
      const pem = readPemSource(src, what);
      let trust = byPem.get(pem);
      if (!trust) {
        trust = await ClientTrust.create([pem], crls, what);
        byPem.set(pem, trust);
        for (const i of trust.crlsMatched) matched.add(i);
      }
      byRoute.set(r.id, trust);
    }
    if (crls.length > 0 && matched.size < crls.length) {
      throw new TlsMaterialError('client_crl', 'a CRL is signed by none of the configured client CAs (`client_ca`, `tls_downstream_client_ca`)');
    }
    return new ClientCertificatePolicy(global, byRoute);
  }

  /** Whether the listener must request a client certificate (some CA is configured). */
  get requested(): boolean {
    return this.caPems.length > 0;
  }

  /** The trust that applies to `route` (null: the request is not matched to a route). */
  trustFor(route: Pick<Route, 'id'> | null): ClientTrust | null {
    return (route && this.#byRoute.get(route.id)) ?? this.#global;
  }

  /**
   * Whether `route` requires a valid client certificate: it has `tls_downstream_client_ca`, or
   * `client_ca` is set. A request to it without one gets 495.
   */
  required(route: Pick<Route, 'id'> | null): boolean {
    return this.trustFor(route) !== null;
  }

  /**
   * The presented chain verified for `route`; null when no CA applies to the route. Results are
   * kept per connection (`connection`, e.g. the TLS socket) for up to a minute, since a keep-alive
   * connection carries many requests with the same certificate.
   */
  verify(route: Pick<Route, 'id'> | null, chain: readonly X509Certificate[] | (() => readonly X509Certificate[]), connection?: object, now: Date = new Date()): ClientCertificateResult | null {
    const trust = this.trustFor(route);
    if (!trust) return null;
    const perConn = connection ? this.#cache.get(connection) : undefined;
    const hit = perConn?.get(trust);
    if (hit && now.getTime() - hit.atMs < CONNECTION_CACHE_MS && now.getTime() >= hit.atMs) return hit.result;
    const result = trust.verify(typeof chain === 'function' ? chain() : chain, now);
    if (connection) {
      const m = perConn ?? new Map<ClientTrust, { result: ClientCertificateResult; atMs: number }>();
      m.set(trust, { result, atMs: now.getTime() });
      if (!perConn) this.#cache.set(connection, m);
    }
    return result;
  }

  /** `verify` for a TLS connection: the chain is read from the socket when not cached. */
  verifySocket(route: Pick<Route, 'id'> | null, socket: TLSSocket, now: Date = new Date()): ClientCertificateResult | null {
    return this.verify(route, () => peerCertificateChain(socket), socket, now);
  }

  /**
   * The decision core's `DecisionRequest.clientCertificate` for a request on `socket` routed to
   * `route`: absent (undefined) when no certificate was presented; otherwise its fingerprint, and
   * `valid` per the route's trust (false when no CA applies to the route: nothing vouches for it).
   */
  clientCertificateFor(route: Pick<Route, 'id'> | null, socket: TLSSocket | null, now: Date = new Date()): { readonly fingerprint: string; readonly valid: boolean } | undefined {
    if (!socket) return undefined;
    const r = this.verifySocket(route, socket, now);
    if (r) return r.present && r.fingerprint !== null ? { fingerprint: r.fingerprint, valid: r.valid } : undefined;
    const leaf = socket.getPeerX509Certificate();
    return leaf ? { fingerprint: certificateFingerprint(leaf), valid: false } : undefined;
  }
}
