/**
 * Secret resolution at plan load (docs/architecture.md §1): a plan holds `{ref: "env:NAME" | "file:PATH"}` or
 * an inline `{value}`, each with the fingerprint the compiler saw. The runtime reads the value and
 * checks the fingerprint: a secret that changed since the plan was compiled is refused, so a plan
 * never runs with material its review (`svc diff`) did not see.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { Secret } from '../../compiler/plan/types.ts';
import { SvcError } from '../core/errors.ts';

/** A secret the plan refers to that is missing, or changed since the plan was compiled. */
export class SecretError extends SvcError<'SVC_ERR_SECRET_MISSING' | 'SVC_ERR_SECRET_CHANGED'> {
  constructor(code: 'SVC_ERR_SECRET_MISSING' | 'SVC_ERR_SECRET_CHANGED', message: string, options?: { cause?: unknown }) {
    super(code, message, options);
    this.name = 'SecretError';
  }
}

export interface SecretSources {
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly readFile: (path: string) => Buffer;
}

const NODE_SOURCES: SecretSources = { env: process.env, readFile: (p) => readFileSync(p) };

/** The fingerprint the compiler records (compiler/ir/material.ts `fingerprint`). */
function fingerprintOf(value: string | Buffer): string {
  return `sha256:${createHash('sha256').update('svc-secret-fingerprint\0').update(value).digest('hex').slice(0, 16)}`;
}

/**
 * The secret's bytes as written where it lives: the inline or env text (for keys and certificates,
 * base64 of the PEM), or a file's content (the PEM itself). `kind` tells which. Throws `SecretError`.
 */
export function resolveSecret(secret: Secret, what: string, sources: SecretSources = NODE_SOURCES): { readonly data: Buffer; readonly kind: 'text' | 'file' } {
  let data: Buffer;
  let kind: 'text' | 'file' = 'text';
  if ('value' in secret) data = Buffer.from(secret.value);
  else if (secret.ref.startsWith('env:')) {
    const v = sources.env[secret.ref.slice(4)];
    if (v === undefined) throw new SecretError('SVC_ERR_SECRET_MISSING', `${what}: environment variable ${secret.ref.slice(4)} is not set`);
    data = Buffer.from(v);
  } else {
    const path = secret.ref.slice(5);
    try {
      data = sources.readFile(path);
    } catch (e) {
      throw new SecretError('SVC_ERR_SECRET_MISSING', `${what}: cannot read ${path}: ${(e as Error).message}`, { cause: e });
    }
    kind = 'file';
  }
  if (fingerprintOf(data) !== secret.fingerprint) {
    throw new SecretError('SVC_ERR_SECRET_CHANGED', `${what}: the value at ${'ref' in secret ? secret.ref : 'the plan'} changed since the plan was compiled; compile again`);
  }
  return { data, kind };
}

/**
 * A text secret (`cookie_secret`, `idp_client_secret`, ...): inline or env text as is; a file's
 * content with at most one trailing line break (`\n` or `\r\n`) removed, the rule the compiler
 * checked the file with (compiler/ir/material.ts `secretFileText`).
 */
export function resolveSecretText(secret: Secret, what: string, sources: SecretSources = NODE_SOURCES): string {
  const { data, kind } = resolveSecret(secret, what, sources);
  const text = data.toString('utf8');
  return kind === 'file' ? text.replace(/\r?\n$/, '') : text;
}

/** A PEM secret (private key): a file's content as is, inline or env text base64-decoded. */
export function resolvePem(secret: Secret, what: string, sources: SecretSources = NODE_SOURCES): string {
  const { data, kind } = resolveSecret(secret, what, sources);
  return kind === 'file' ? data.toString('utf8') : Buffer.from(data.toString('utf8'), 'base64').toString('utf8');
}
