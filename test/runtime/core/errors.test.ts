/**
 * The runtime error registry (runtime/core/errors.ts): each code is written once, is well formed and
 * has a one-line meaning; every code is documented in docs/diagnostics.md; every `SVC_ERR_*` code the
 * sources of runtime/ and cli/ name is in the registry; coded errors carry their code and name.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { RUNTIME_ERRORS, SvcError } from '../../../runtime/core/errors.ts';
import { PlanLoadError } from '../../../runtime/plan/load.ts';
import { SessionStoreError } from '../../../runtime/core/session-store.ts';

const ROOT = join(import.meta.dirname, '../../..');
const CODES = Object.keys(RUNTIME_ERRORS);

function sourcesUnder(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile() && e.name.endsWith('.ts'))
    .map((e) => join(e.parentPath, e.name));
}

describe('runtime error registry', () => {
  it('writes each code once, in the SVC_ERR_ form, with a one-line meaning', () => {
    const text = readFileSync(join(ROOT, 'runtime/core/errors.ts'), 'utf8');
    const written = [...text.matchAll(/^\s+(SVC_ERR_[A-Z0-9_]+):/gm)].map((m) => m[1]);
    expect(written.length).toBeGreaterThan(40);
    expect(new Set(written).size).toBe(written.length);
    expect([...written].sort()).toEqual([...CODES].sort());
    for (const [code, meaning] of Object.entries(RUNTIME_ERRORS)) {
      expect(code).toMatch(/^SVC_ERR_[A-Z][A-Z0-9_]*[A-Z0-9]$/);
      expect(meaning.length, code).toBeGreaterThan(10);
      expect(meaning, code).not.toMatch(/\n/);
    }
  });

  it('documents every code in docs/diagnostics.md, once', () => {
    const doc = readFileSync(join(ROOT, 'docs/diagnostics.md'), 'utf8');
    for (const code of CODES) {
      expect(doc.split(`| \`${code}\` |`).length - 1, code).toBe(1);
    }
  });

  it('holds every SVC_ERR_ code the runtime and the CLI name', () => {
    const named = new Set<string>();
    for (const file of [...sourcesUnder('runtime'), ...sourcesUnder('cli')]) {
      for (const m of readFileSync(file, 'utf8').matchAll(/\bSVC_ERR_[A-Z0-9_]*[A-Z0-9]\b/g)) named.add(m[0]);
    }
    expect(named.size).toBeGreaterThan(40);
    expect([...named].filter((c) => !(c in RUNTIME_ERRORS))).toEqual([]);
  });

  it('gives a coded error its code, its class name and its cause', () => {
    const cause = new Error('underneath');
    const e = new PlanLoadError('SVC_ERR_PLAN_JSON', 'plan: not JSON', { cause });
    expect(e).toBeInstanceOf(SvcError);
    expect(e).toMatchObject({ code: 'SVC_ERR_PLAN_JSON', name: 'PlanLoadError', message: 'plan: not JSON', cause });
    expect(new SessionStoreError('SVC_ERR_SESSION_REVOKED', 'session was revoked')).toMatchObject({ code: 'SVC_ERR_SESSION_REVOKED', name: 'SessionStoreError' });
    expect(new SvcError('SVC_ERR_GRPC_CONFIG', 'x')).toMatchObject({ code: 'SVC_ERR_GRPC_CONFIG', name: 'SvcError' });
  });
});
