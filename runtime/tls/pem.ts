/**
 * Reading the PEM material a plan refers to: public documents (`PemSource`: certificates, CA
 * bundles, CRLs) and private keys (`Secret`).
 *
 * Two modes:
 * - `load` (the plan is being started): keys go through `resolvePem`, which refuses a key whose
 *   fingerprint changed since the plan was compiled (docs/architecture.md §1);
 * - `reload` (a watched TLS file changed on disk, docs/running.md "TLS": "TLS files referenced by the
 *   configuration are reloaded automatically"): `file` sources and `file:` key references are read
 *   as they now are. Rotating a certificate and its key in place is the very change this mode
 *   exists for, so the compile-time fingerprint cannot apply; env and inline values cannot change
 *   without a new plan and still go through `resolvePem`.
 *
 * Relative file names are read relative to the working directory, like the compiler does.
 */
import { readFileSync } from 'node:fs';
import type { PemSource, Secret } from '../../compiler/plan/types.ts';
import { resolvePem } from '../plan/secrets.ts';
import { TlsMaterialError } from './errors.ts';

export type ReadMode = 'load' | 'reload';

/** Reads a public PEM document. Throws `TlsMaterialError` when a file cannot be read. */
export function readPemSource(source: PemSource, what: string): string {
  if ('pem' in source) return source.pem;
  try {
    return readFileSync(source.file, 'utf8');
  } catch (e) {
    throw new TlsMaterialError(what, `cannot read ${source.file}: ${(e as Error).message}`, { cause: e });
  }
}

/** Reads a private key (PEM text). Throws `TlsMaterialError` (wrapping `SecretError` at load). */
export function readKey(secret: Secret, what: string, mode: ReadMode): string {
  if (mode === 'reload' && 'ref' in secret && secret.ref.startsWith('file:')) {
    const path = secret.ref.slice('file:'.length);
    try {
      return readFileSync(path, 'utf8');
    } catch (e) {
      throw new TlsMaterialError(what, `cannot read ${path}: ${(e as Error).message}`, { cause: e });
    }
  }
  try {
    return resolvePem(secret, what);
  } catch (e) {
    throw new TlsMaterialError(what, (e as Error).message, { cause: e });
  }
}

const BLOCK = (label: string): RegExp => new RegExp(`-----BEGIN ${label}-----[\\s\\S]+?-----END ${label}-----`, 'g');

/** Every `label` block of a PEM bundle (`CERTIFICATE`, `X509 CRL`), in order. */
export function pemBlocks(pem: string, label: string): string[] {
  return pem.match(BLOCK(label)) ?? [];
}
