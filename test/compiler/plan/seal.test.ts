/**
 * seal: the body kept is exactly what is checksummed, and every object a sealed plan holds is frozen,
 * whichever path the canonical copy took (the fast one, or the text one for array-index-like keys).
 */
import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { canonicalJson } from '../../../compiler/plan/canonical-json.ts';
import { seal, sealBuilt } from '../../../compiler/plan/seal.ts';
import type { PlanBody } from '../../../compiler/plan/types.ts';

/** Every object and array reachable from `v` (own keys, as deepFreeze walks them). */
function objectsOf(v: unknown, out: object[] = []): object[] {
  if (typeof v !== 'object' || v === null) return out;
  out.push(v);
  for (const key of Reflect.ownKeys(v)) objectsOf((v as Record<PropertyKey, unknown>)[key], out);
  return out;
}

const keyish = fc.oneof(fc.string({ maxLength: 6 }), fc.constantFrom('10', '9', 'routes', 'a', '__proto__'));
const data = fc.letrec((tie) => ({
  value: fc.oneof({ depthSize: 'small' }, fc.jsonValue({ maxDepth: 2 }), fc.array(tie('value'), { maxLength: 4 }), fc.dictionary(keyish, tie('value'), { maxKeys: 5 })),
})).value;

describe('seal', () => {
  it('keeps a frozen body whose canonical JSON is what the checksum covers', () => {
    fc.assert(
      fc.property(fc.dictionary(keyish, data, { maxKeys: 4 }), (raw) => {
        const body = raw as unknown as PlanBody;
        const plan = seal(body, ['b.yaml', 'a.yaml', 'a.yaml'], { routes: [] } as never);
        const text = canonicalJson(body);
        expect(plan.checksum).toBe(`sha256:${createHash('sha256').update(text).digest('hex')}`);
        expect(canonicalJson(plan.body)).toBe(text);
        expect(plan.inputs).toEqual(['a.yaml', 'b.yaml']);
        for (const o of objectsOf(plan)) expect(Object.isFrozen(o)).toBe(true);
      }),
      { numRuns: 300 },
    );
  });

  it('never keeps the caller’s objects: changing the input afterwards changes nothing sealed', () => {
    const body = { routes: [{ id: 'r', policy: { rules: [] } }], settings: { a: 1 } } as unknown as PlanBody;
    const plan = seal(body, [], { routes: [] } as never);
    (body as unknown as { settings: { a: number } }).settings.a = 2;
    expect((plan.body as unknown as { settings: { a: number } }).settings.a).toBe(1);
    expect(Object.isFrozen(body)).toBe(false);
  });

  it('sealBuilt makes the plan seal makes of the same body, keeping what is already canonical data, frozen', () => {
    const loose = fc.letrec((tie) => ({
      value: fc.oneof(
        { depthSize: 'small' },
        data,
        fc.constant(undefined),
        fc.constant(-0),
        fc.sparseArray(tie('value'), { maxLength: 3 }),
        fc.dictionary(keyish, tie('value'), { maxKeys: 4 }),
      ),
    })).value;
    fc.assert(
      fc.property(fc.dictionary(keyish, loose, { maxKeys: 4 }), (raw) => {
        const copied = seal(structuredClone(raw) as unknown as PlanBody, ['a.yaml'], { routes: [] } as never);
        const built = sealBuilt(raw as unknown as PlanBody, ['a.yaml'], { routes: [] } as never);
        expect(built.checksum).toBe(copied.checksum);
        expect(keyOrder(built.body)).toStrictEqual(keyOrder(copied.body));
        for (const o of objectsOf(built)) expect(Object.isFrozen(o)).toBe(true);
      }),
      { numRuns: 300 },
    );
  });

  it('sealBuilt keeps a body that is canonical data as it is, frozen in place', () => {
    const body = JSON.parse('{"routes":[{"id":"r","policy":{"rules":[]}}],"settings":{"a":1}}') as PlanBody;
    const plan = sealBuilt(body, [], { routes: [] } as never);
    expect(plan.body).toBe(body);
    expect(Object.isFrozen(body.routes[0])).toBe(true);
  });
});

/** The value with every object's keys listed in their order, so that toStrictEqual also compares key order. */
function keyOrder(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(keyOrder);
  if (v !== null && typeof v === 'object') return Object.keys(v).map((k) => [k, keyOrder((v as Record<string, unknown>)[k])]);
  return v;
}
