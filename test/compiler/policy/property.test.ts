/**
 * Property tests of the policy language:
 * - round trip: for any IR in normal form, `parsePolicyText(printPolicy(ir))` deep-equals `ir`
 *   (the generators in arbitrary.ts produce normal-form IR; nothing is normalized afterwards);
 * - both surfaces agree: the YAML document of an IR lowers to the same IR;
 * - totality: arbitrary text or trees never make either surface throw.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { Reporter } from '../../../compiler/diagnostics/diagnostic.ts';
import { lowerPolicyNode } from '../../../compiler/policy/lower-document.ts';
import { parsePolicyText } from '../../../compiler/policy/parse-text.ts';
import { printPolicy } from '../../../compiler/policy/print.ts';
import { sourceFile, span, wholeSpan } from '../../../compiler/source/source-file.ts';
import { listNode, mapNode, scalar, type Node } from '../../../compiler/source/tree.ts';
import { policy, toDocument } from './arbitrary.ts';
import { doc, text } from './helpers.ts';

const RUNS = Number(process.env['SVC_FC_RUNS'] ?? 300);

describe('policy properties', () => {
  it('parse(print(ir)) == ir', () => {
    fc.assert(
      fc.property(policy('binary'), (ir) => {
        const printed = printPolicy(ir);
        const res = text(printed);
        expect(res.diags).toEqual([]);
        expect(res.ir).toEqual(ir);
        // printing is canonical: printing the parse gives the same text
        expect(printPolicy(res.ir!)).toBe(printed);
      }),
      { numRuns: RUNS },
    );
  });

  it('the YAML document of an IR lowers to the same IR', () => {
    fc.assert(
      fc.property(policy('grapheme'), (ir) => {
        const res = doc(stringify(toDocument(ir)));
        expect(res.diags).toEqual([]);
        expect(res.ir).toEqual(ir);
      }),
      { numRuns: RUNS },
    );
  });

  it('the IR is JSON-only: it survives JSON round trip unchanged', () => {
    fc.assert(
      fc.property(policy('binary'), (ir) => {
        expect(JSON.parse(JSON.stringify(ir))).toEqual(ir);
      }),
      { numRuns: 100 },
    );
  });

  const VOCAB = [
    'allow', 'deny', 'if', 'and', 'or', 'not', 'true', 'false', '(', ')', '[', ']', ',', ';', '/', '\n', ' ',
    'email', 'groups', 'claim', 'is', 'in', 'has', 'after', 'before', 'timezone', 'approved', 'source_ip', 'date',
    'time_of_day', 'day_of_week', 'device', '"x"', '"10.0.0.0/8"', '"09:00"', '"UTC"', '"mon"', '"', '\\', '#', '@', '\u0000',
  ];

  it('arbitrary text never throws, and a failed parse always reports an error', () => {
    const soup = fc.array(fc.constantFrom(...VOCAB), { maxLength: 30 }).map((ts) => ts.join(' '));
    fc.assert(
      fc.property(fc.oneof(fc.string({ unit: 'binary' }), soup), (t) => {
        const r = new Reporter();
        const ir = parsePolicyText(t, wholeSpan(sourceFile('p', t)), r, 'p');
        expect(ir === undefined).toBe(r.errorCount > 0);
        for (const d of r.diagnostics) {
          expect(d.span!.start).toBeGreaterThanOrEqual(0);
          expect(d.span!.end).toBeLessThanOrEqual(t.length);
        }
      }),
      { numRuns: RUNS * 3 },
    );
  });

  it('arbitrary config trees never make document lowering throw', () => {
    const src = sourceFile('t', 'x'.repeat(10));
    const sp = span(src, 0, 1);
    const keys = fc.constantFrom('allow', 'deny', 'and', 'or', 'not', 'nor', 'email', 'groups', 'claim/x', 'is', 'in', 'has', 'after', 'timezone', 'approved', 'accept', 'source_ip', 'zzz');
    const tree = fc.letrec<{ n: Node }>((tie) => ({
      n: fc.oneof(
        { depthSize: 'small' },
        fc.oneof(fc.string(), fc.boolean(), fc.integer(), fc.constant(null)).map((v) => scalar(v, sp, false)),
        fc.array(tie('n'), { maxLength: 3 }).map((items) => listNode(items, sp)),
        fc.array(fc.tuple(keys, tie('n')), { maxLength: 3 }).map((es) => mapNode(es.map(([key, value]) => ({ key, keySpan: sp, value })), sp)),
      ),
    })).n;
    fc.assert(
      fc.property(tree, (n) => {
        const r = new Reporter();
        const ir = lowerPolicyNode(n, r, 'p');
        expect(ir === undefined).toBe(r.errorCount > 0);
      }),
      { numRuns: RUNS * 3 },
    );
  });
});
