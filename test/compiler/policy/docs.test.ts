/** docs/policy.md stays in sync with the code: every policy code is documented, examples agree. */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import * as codes from '../../../compiler/diagnostics/codes/policy.ts';
import { CRITERION_NAMES } from '../../../compiler/policy/ir.ts';
import { doc, text } from './helpers.ts';

const md = readFileSync(new URL('../../../docs/policy.md', import.meta.url), 'utf8');
const defs = Object.values(codes);

describe('docs/policy.md', () => {
  it('lists every policy diagnostic with its name', () => {
    for (const d of defs) expect(md).toContain(`| ${d.code} | ${d.name} |`);
  });

  it('documents every criterion', () => {
    for (const n of CRITERION_NAMES) expect(md).toContain(n === 'claim' ? '`claim/<name>`' : `| \`${n}\` |`);
  });

  it('the opening example gives the same IR in both surfaces', () => {
    const t = text('allow if domain is "example.com" or groups has "admins"\ndeny  if http_method in ["DELETE", "PUT"] and not groups has "ops"');
    const d = doc(`
- allow:
    or:
      - domain: {is: example.com}
      - groups: {has: admins}
- deny:
    and:
      - http_method: {in: [DELETE, PUT]}
      - not: [{groups: {has: ops}}]
`);
    expect(t.diags).toEqual([]);
    expect(d.diags).toEqual([]);
    expect(d.ir).toEqual(t.ir);
  });
});

describe('policy diagnostics follow the message style', () => {
  it('codes in SVC4xxx, kebab-case names, help on each', () => {
    for (const d of defs) {
      expect(d.code).toMatch(/^SVC4\d{3}$/);
      expect(d.name).toMatch(/^policy-[a-z0-9-]+$/);
      expect(d.summary.length).toBeGreaterThan(10);
    }
    expect(new Set(defs.map((d) => d.code)).size).toBe(defs.length);
  });

  it('messages are lower-case without a final period, and every reported diagnostic has help', () => {
    const all = [
      ...text('allow if emaill is "a" or email iss "b" or source_ip is "x" or date after "x" or time_of_day after "x" or day_of_week is "x"').diags,
      ...text('allow if').diags,
      ...doc('[{alow: {orr: [{accept: false}]}}]').diags,
    ];
    expect(all.length).toBeGreaterThan(6);
    for (const d of all) {
      expect(d.message).toMatch(/^[a-z`]/);
      expect(d.message).not.toMatch(/\.$/);
      expect(d.help).toBeTruthy();
    }
  });
});
