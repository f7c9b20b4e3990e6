/** The runtime's plan loader refuses anything but an intact plan, with a stable code. */
import { stringify } from 'yaml';
import { describe, expect, it } from 'vitest';
import { prettyJson } from '../../../compiler/plan/canonical-json.ts';
import { PlanLoadError, parsePlan } from '../../../runtime/plan/load.ts';
import { BASE_SETTINGS, compileText } from '../../support/compile-text.ts';

const plan = compileText(stringify({ ...BASE_SETTINGS, routes: [{ from: 'https://a.example.com', to: 'http://up', allow_public_unauthenticated_access: true }] })).plan!;
const text = prettyJson(plan);

function codeOf(t: string): string {
  try {
    parsePlan(t);
    return 'loaded';
  } catch (e) {
    return e instanceof PlanLoadError ? e.code : `unexpected ${String(e)}`;
  }
}

describe('parsePlan', () => {
  it('loads a compiled plan, deeply frozen, with the same checksum', () => {
    const p = parsePlan(text);
    expect(p.checksum).toBe(plan.checksum);
    expect(Object.isFrozen(p.body.routes[0]!.match)).toBe(true);
  });
  it('refuses a plan edited by hand (checksum)', () => {
    expect(codeOf(text.replace('"http://up/"', '"http://evil/"'))).toBe('SVC_ERR_PLAN_CHECKSUM');
  });
  it('refuses another format version, bad JSON, and a schema violation', () => {
    expect(codeOf(text.replace('"formatVersion": 1', '"formatVersion": 2'))).toBe('SVC_ERR_PLAN_VERSION');
    expect(codeOf(text.slice(0, -3))).toBe('SVC_ERR_PLAN_JSON');
    expect(codeOf(text.replace('"public": true', '"public": "yes"'))).toBe('SVC_ERR_PLAN_SCHEMA');
  });
});
