/**
 * The runtime error registry (runtime/core/errors.ts): each code is written once, is well formed and
 * has a one-line meaning; every code is documented in docs/diagnostics.md; every `SVC_ERR_*` code the
 * sources of runtime/ and cli/ name is in the registry; coded errors carry their code and name.
 * Read from the sources: every error class of runtime/ and cli/ extends `SvcError`, and every
 * `throw new Error(` there is a bug in svc, its message starting `bug:`.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
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


interface Source {
  readonly path: string;
  readonly text: string;
}

function scanned(): Source[] {
  return [...sourcesUnder('runtime'), ...sourcesUnder('cli')]
    .map((file) => ({ path: relative(ROOT, file), text: readFileSync(file, 'utf8') }));
}

const lineOf = (text: string, index: number) => text.slice(0, index).split('\n').length;
const BUILTIN_ERRORS = new Set(['Error', 'RangeError', 'TypeError', 'SyntaxError', 'AggregateError']);

/**
 * The error classes of `sources` (a class whose `extends` chain, followed through the classes of
 * `sources` by name, ends in a built-in error) that do not extend `SvcError` on the way, as
 * `path:line Name`.
 */
function errorClassesOffSvcError(sources: readonly Source[]): string[] {
  const classes = new Map<string, { base: string; at: string }>();
  for (const { path, text } of sources) {
    for (const m of text.matchAll(/\bclass\s+(\w+)([^{]*)\{/g)) {
      // The class header without its type arguments: `<C extends …>` names no base class.
      let header = m[2]!;
      for (let prev = ''; prev !== header; ) [prev, header] = [header, header.replace(/<[^<>]*>/g, '')];
      const base = /\bextends\s+([\w.]+)/.exec(header)?.[1];
      if (base !== undefined) classes.set(m[1]!, { base, at: `${path}:${lineOf(text, m.index)}` });
    }
  }
  const off: string[] = [];
  for (const [name, { at }] of classes) {
    if (name === 'SvcError') continue;
    const chain: string[] = [];
    for (let c: string | undefined = name; c !== undefined && !chain.includes(c); c = classes.get(c)?.base) chain.push(c);
    if (BUILTIN_ERRORS.has(chain[chain.length - 1]!) && !chain.includes('SvcError')) off.push(`${at} ${name}`);
  }
  return off;
}

/**
 * The `throw new Error(…)` of `sources` whose message is not a string starting `bug:`, as
 * `path:line: message start` (what follows the opening quote on that line). Comments are skipped.
 */
function plainThrowsNotBugs(sources: readonly Source[]): string[] {
  const off: string[] = [];
  for (const { path, text } of sources) {
    for (const m of text.matchAll(/\bthrow\s+new\s+Error\(\s*(['"`]?)([^\n]*)/g)) {
      const before = text.slice(text.lastIndexOf('\n', m.index) + 1, m.index);
      if (/^\s*(\*|\/\*|\/\/)|\s\/\/\s/.test(before)) continue;
      if (m[1] === '' || !m[2]!.startsWith('bug:')) off.push(`${path}:${lineOf(text, m.index)}: ${m[2]}`);
    }
  }
  return off;
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

  it('puts every error class of runtime/ and cli/ on SvcError', () => {
    expect(errorClassesOffSvcError(scanned())).toEqual([]);
  });

  it('keeps a plain `throw new Error(` in runtime/ and cli/ for bugs in svc only (`bug:` message)', () => {
    expect(plainThrowsNotBugs(scanned())).toEqual([]);
  });

  it('the source rules can fail: they see a plain error class and a plain throw without `bug:`', () => {
    const sample: Source = {
      path: 'runtime/x/sample.ts',
      text: [
        'export class PlainError extends Error {}',
        'class Coded<C extends string = string> extends SvcError<C> {}',
        'class Narrower extends Coded<\'SVC_ERR_X\'> {}',
        'class Pool<T extends Map<string, number>> extends EventEmitter {}',
        'class Offspring extends PlainError {}',
        "throw new Error('bug: cannot happen');",
        'throw new Error(`no upstream ${i}`);',
        'throw new Error(message);',
        ' * every `throw new Error(` says `bug:`',
        "const x = 1; // throw new Error('in a comment')",
      ].join('\n'),
    };
    expect(errorClassesOffSvcError([sample])).toEqual(['runtime/x/sample.ts:1 PlainError', 'runtime/x/sample.ts:5 Offspring']);
    expect(plainThrowsNotBugs([sample])).toEqual(['runtime/x/sample.ts:7: no upstream ${i}`);', 'runtime/x/sample.ts:8: message);']);
    // The scan reaches the sources: the registry's base class and a subclass of it are there.
    expect(scanned().some((s) => s.path === 'runtime/core/errors.ts' && s.text.includes('class SvcError'))).toBe(true);
  });
});
