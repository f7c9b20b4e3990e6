/**
 * Key material: secrets (kept as references when they came from env or a file, docs/architecture.md §1),
 * PEM certificates, CA bundles, CRLs and private keys, checked at compile time with node:crypto.
 */
import { createHash, createPrivateKey, X509Certificate, type KeyObject } from 'node:crypto';
import * as D from '../diagnostics/codes/settings.ts';
import type { Span } from '../source/source-file.ts';
import type { PemSource, Secret } from '../plan/types.ts';
import type { LowerCtx } from './lower-ctx.ts';
import { decodeBase64, hasControlChar } from './values.ts';

/** A fingerprint of a secret: changes when the value changes, reveals nothing usable. */
export function fingerprint(value: string | Buffer): string {
  return `sha256:${createHash('sha256').update('svc-secret-fingerprint\0').update(value).digest('hex').slice(0, 16)}`;
}

export function sha256(data: string | Buffer): string {
  return `sha256:${createHash('sha256').update(data).digest('hex')}`;
}

/**
 * A secret given as a setting value. From an env var: a reference the runtime resolves at load.
 * From the config file: inline, with a warning.
 */
export function secretFromValue(value: string, key: string, at: Span | undefined, cx: LowerCtx): Secret {
  if (at?.source.isEnv) return { fingerprint: fingerprint(value), ref: at.source.name };
  if (at && at.source.name.startsWith('env:')) {
    // A secret inside a decoded env document (`ROUTES`): inline in the plan, but from the environment.
    return { fingerprint: fingerprint(value), value };
  }
  cx.r.report(D.InlineSecret, at, { key }, key);
  return { fingerprint: fingerprint(value), value };
}

/** Reads a file named by `key`; reports and returns undefined when it cannot be read. */
export function readNamedFile(file: string, key: string, at: Span | undefined, cx: LowerCtx): Buffer | undefined {
  const res = cx.input.readFile(file);
  if (!res.ok) {
    cx.r.report(D.FileUnreadable, at, { key, file, reason: res.reason }, key);
    return undefined;
  }
  cx.files.add(file);
  return res.data;
}

/**
 * The text of a secret file: its content as UTF-8 with at most one trailing line break (`\n` or
 * `\r\n`) removed, because `echo`, editors and most secret stores end a mounted file with one.
 * Nothing else is trimmed: a secret that really ends in a space keeps it. The runtime applies the
 * same rule when it reads the file (runtime/plan/secrets.ts `resolveSecretText`); the fingerprint is
 * of the file's bytes as they are, newline included, as the runtime checks it.
 */
export function secretFileText(data: Buffer): string {
  return data.toString('utf8').replace(/\r?\n$/, '');
}

/**
 * A secret setting and its `_file` form (`cookie_secret` / `cookie_secret_file`): the inline or env
 * value as `secretFromValue` keeps it, or the file as a reference `{ref: "file:PATH", fingerprint}`
 * (never its content). Both set is an error. A file that cannot be read, is empty, or holds a
 * control character once its trailing line break is removed is reported at the `_file` key
 * (SVC3007, SVC3022).
 * `text` is the secret's text for the caller's own checks (base64 size, URL shape); it never
 * reaches the plan from a file.
 */
export function secretSource(
  inlineKey: string,
  fileKey: string,
  cx: LowerCtx,
  get: (key: string) => { value: string; at: Span | undefined } | undefined,
): { secret: Secret; text: string; at: Span | undefined; name: string } | null {
  const inline = get(inlineKey);
  const file = get(fileKey);
  if (inline && file) {
    cx.r.report(D.MutuallyExclusiveSettings, file.at, { a: inlineKey, b: fileKey }, fileKey);
    return null;
  }
  if (inline) return { secret: secretFromValue(inline.value, inlineKey, inline.at, cx), text: inline.value, at: inline.at, name: inlineKey };
  if (!file) return null;
  const data = readNamedFile(file.value, fileKey, file.at, cx);
  if (!data) return null;
  const text = secretFileText(data);
  const problem =
    text === ''
      ? 'the file is empty'
      : hasControlChar(text)
        ? 'the file holds a control character (a line break inside the secret, or more than one at its end)'
        : undefined;
  if (problem !== undefined) {
    cx.r.report(D.InvalidValue, file.at, { key: fileKey, value: file.value, expected: problem }, fileKey);
    return null;
  }
  return { secret: { fingerprint: fingerprint(data), ref: `file:${file.value}` }, text, at: file.at, name: fileKey };
}

/** Decodes an inline base64 PEM value, reporting bad base64. */
export function decodeInlinePem(value: string, key: string, at: Span | undefined, cx: LowerCtx): string | undefined {
  const buf = decodeBase64(value);
  if (!buf) {
    cx.r.report(D.InvalidBase64, at, { key }, key);
    return undefined;
  }
  return buf.toString('utf8');
}

const CERT_BLOCK = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g;

/** Parses every certificate of a PEM bundle; reports and returns undefined when there is none or one is bad. */
export function parseCertificates(pem: string, key: string, at: Span | undefined, cx: LowerCtx): X509Certificate[] | undefined {
  const blocks = pem.match(CERT_BLOCK);
  if (!blocks) {
    cx.r.report(D.InvalidCertificate, at, { key, reason: 'no `-----BEGIN CERTIFICATE-----` block' }, key);
    return undefined;
  }
  const out: X509Certificate[] = [];
  for (const b of blocks) {
    try {
      out.push(new X509Certificate(b));
    } catch (e) {
      cx.r.report(D.InvalidCertificate, at, { key, reason: (e as Error).message.toLowerCase() }, key);
      return undefined;
    }
  }
  return out;
}

export function parsePrivateKey(pem: string, key: string, at: Span | undefined, cx: LowerCtx): KeyObject | undefined {
  try {
    return createPrivateKey(pem);
  } catch (e) {
    cx.r.report(D.InvalidPrivateKey, at, { key, reason: (e as Error).message.toLowerCase() }, key);
    return undefined;
  }
}

/** The DNS names a certificate serves: subject alternative names, else its common name. */
export function certificateNames(cert: X509Certificate): string[] {
  const san = cert.subjectAltName;
  if (san) {
    const names = san.split(/,\s*/).filter((s) => s.startsWith('DNS:')).map((s) => s.slice(4).toLowerCase());
    if (names.length > 0) return names.sort();
  }
  const cn = /(?:^|\n)CN=([^\n]+)/.exec(cert.subject)?.[1];
  return cn ? [cn.toLowerCase()] : [];
}

export type PemKind = 'certificate' | 'crl';

/**
 * A cert-or-file pair (`client_ca` / `client_ca_file`): checks the PEM and returns where the runtime
 * finds it. Both forms set is an error.
 */
export function pemSource(
  inlineKey: string,
  fileKey: string,
  kind: PemKind,
  cx: LowerCtx,
  get: (key: string) => { value: string; at: Span | undefined } | undefined,
): { source: PemSource; certs: X509Certificate[] } | null {
  const inline = get(inlineKey);
  const file = get(fileKey);
  if (inline && file) {
    cx.r.report(D.MutuallyExclusiveSettings, file.at, { a: inlineKey, b: fileKey }, fileKey);
    return null;
  }
  let pem: string | undefined;
  let source: PemSource | undefined;
  let key = inlineKey;
  let at: Span | undefined;
  if (inline) {
    at = inline.at;
    pem = decodeInlinePem(inline.value, inlineKey, at, cx);
    if (pem !== undefined) source = { pem, sha256: sha256(pem) };
  } else if (file) {
    key = fileKey;
    at = file.at;
    const data = readNamedFile(file.value, fileKey, at, cx);
    if (data) {
      pem = data.toString('utf8');
      source = { file: file.value, sha256: sha256(data) };
    }
  } else {
    return null;
  }
  if (pem === undefined || !source) return null;
  if (kind === 'crl') {
    if (!/-----BEGIN X509 CRL-----/.test(pem)) {
      cx.r.report(D.InvalidCertificate, at, { key, reason: 'no `-----BEGIN X509 CRL-----` block' }, key);
      return null;
    }
    return { source, certs: [] };
  }
  const certs = parseCertificates(pem, key, at, cx);
  return certs ? { source, certs } : null;
}

/**
 * A private key given inline (base64 PEM, a secret) or as a file (a reference). Returns the secret
 * and the parsed key for checks.
 */
export function keySource(
  inlineKey: string,
  fileKey: string | undefined,
  cx: LowerCtx,
  get: (key: string) => { value: string; at: Span | undefined } | undefined,
): { secret: Secret; key: KeyObject | undefined; at: Span | undefined; name: string } | null {
  const inline = get(inlineKey);
  const file = fileKey ? get(fileKey) : undefined;
  if (inline && file && fileKey) {
    cx.r.report(D.MutuallyExclusiveSettings, file.at, { a: inlineKey, b: fileKey }, fileKey);
    return null;
  }
  if (inline) {
    const pem = decodeInlinePem(inline.value, inlineKey, inline.at, cx);
    const secret = secretFromValue(inline.value, inlineKey, inline.at, cx);
    const key = pem === undefined ? undefined : parsePrivateKey(pem, inlineKey, inline.at, cx);
    return { secret, key, at: inline.at, name: inlineKey };
  }
  if (file && fileKey) {
    const data = readNamedFile(file.value, fileKey, file.at, cx);
    if (!data) return null;
    const key = parsePrivateKey(data.toString('utf8'), fileKey, file.at, cx);
    return { secret: { fingerprint: fingerprint(data), ref: `file:${file.value}` }, key, at: file.at, name: fileKey };
  }
  return null;
}
