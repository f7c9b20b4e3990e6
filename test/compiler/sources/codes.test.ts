/**
 * Every source diagnostic (SVC1xxx) has an input that triggers it, and follows the message style:
 * lower-case, no final period, a help text.
 */
import { describe, expect, it } from 'vitest';
import * as codes from '../../../compiler/diagnostics/codes/sources.ts';
import type { DiagnosticDef } from '../../../compiler/diagnostics/define.ts';
import { Reporter } from '../../../compiler/diagnostics/diagnostic.ts';
import { sourceFile } from '../../../compiler/source/source-file.ts';
import { envLayer, type EnvKeySpec } from '../../../compiler/sources/env.ts';
import { parseConfigText } from '../../../compiler/sources/read.ts';
import { reportReservedKeys } from '../../../compiler/sources/reserved-keys.ts';

const file = (name: string, text: string) => (r: Reporter) => void parseConfigText(sourceFile(name, text), r);
const env = (vars: Record<string, string>, specs: EnvKeySpec[]) => (r: Reporter) => void envLayer(vars, specs, r);

const TRIGGERS: Record<string, (r: Reporter) => void> = {
  SVC1001: file('config.ini', 'a=1'),
  SVC1002: file('c.yaml', '- a'),
  SVC1003: file('c.json', '{"a": 1, "a": 2}'),
  SVC1004: file('c.json', '['.repeat(1000)),
  SVC1005: file('c.toml', 'a = inf'),
  SVC1006: (r) => {
    const tree = parseConfigText(sourceFile('c.yaml', 'a:\n  __proto__: 1\n'), r);
    if (tree) reportReservedKeys(tree, r);
  },
  SVC1010: file('c.yaml', 'a: [1'),
  SVC1011: file('c.yaml', '%YAML 1.3\n---\na: 1\n'),
  SVC1012: file('c.yaml', 'a: !custom x'),
  SVC1013: file('c.yaml', '? [a]\n: 1'),
  SVC1014: file('c.yaml', 'a: &x [*x]'),
  SVC1015: file('c.yaml', `a: &a [${'x,'.repeat(200)}]\nb: &b [${'*a,'.repeat(100)}]\n`),
  SVC1016: file('c.yaml', 'a:\n  <<: 1\n'),
  SVC1020: file('c.json', '{,}'),
  SVC1030: file('c.toml', 'a ='),
  SVC1040: file('c.properties', 'a=\\uZZZZ'),
  SVC1041: file('c.properties', 'a..b=1'),
  SVC1042: file('c.properties', 'a=1\na.b=2'),
  SVC1043: file('c.properties', 'a[1]=1'),
  SVC1050: env({ H: 'novalue' }, [{ key: 'h', kind: 'map' }]),
  SVC1051: env({ L: '{"a": 1}' }, [{ key: 'l', kind: 'list' }]),
  SVC1052: env({ ROUTES: 'garbage' }, [{ key: 'routes', kind: 'document' }]),
};

const defs = Object.values(codes) as DiagnosticDef<never>[];

describe('source diagnostics', () => {
  it.each(defs.map((d) => [d.code, d.name, d] as const))('%s %s is triggered by an input', (code, _name, def) => {
    const trigger = TRIGGERS[code];
    expect(trigger, `add a trigger for ${code}`).toBeDefined();
    const r = new Reporter();
    trigger!(r);
    const d = r.diagnostics.find((x) => x.code === code);
    expect(d, `${code} not reported; got ${r.diagnostics.map((x) => x.code).join(', ')}`).toBeDefined();
    expect(d!.span).toBeDefined();
    expect(d!.severity).toBe(def.severity);
    expect(d!.message).toMatch(/^[^A-Z]/);
    expect(d!.message).not.toMatch(/\.$/);
    expect(d!.help).toBeTruthy();
  });

  it('use codes SVC1001..SVC1999 only', () => {
    for (const d of defs) expect(Number(d.code.slice(3))).toBeGreaterThanOrEqual(1001);
    for (const d of defs) expect(Number(d.code.slice(3))).toBeLessThanOrEqual(1999);
  });
});
