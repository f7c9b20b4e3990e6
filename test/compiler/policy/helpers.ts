/** Test helpers: run either policy surface on a string and collect IR and diagnostics. */
import { Reporter, type Diagnostic } from '../../../compiler/diagnostics/diagnostic.ts';
import type { PolicyIR } from '../../../compiler/policy/ir.ts';
import { lowerPolicyNode } from '../../../compiler/policy/lower-document.ts';
import { parsePolicyText } from '../../../compiler/policy/parse-text.ts';
import { sourceFile, wholeSpan } from '../../../compiler/source/source-file.ts';
import { yamlTree } from './yaml-tree.ts';

export interface Result {
  readonly ir: PolicyIR | undefined;
  readonly diags: readonly Diagnostic[];
  /** `code` of every diagnostic, in report order. */
  readonly codes: readonly string[];
}

function result(ir: PolicyIR | undefined, r: Reporter): Result {
  return { ir, diags: r.diagnostics, codes: r.diagnostics.map((d) => d.code) };
}

/** Parses policy text as if it were a whole source file `policy.txt`. */
export function text(t: string, path = 'routes[0].policy'): Result {
  const r = new Reporter();
  return result(parsePolicyText(t, wholeSpan(sourceFile('policy.txt', t)), r, path), r);
}

/** Lowers the YAML value of `policy:` (the whole YAML text is the policy value). */
export function doc(yamlText: string, path = 'routes[0].policy'): Result {
  const r = new Reporter();
  const { node } = yamlTree(yamlText);
  return result(lowerPolicyNode(node, r, path), r);
}

/** The text of a diagnostic's span. */
export function underlined(d: Diagnostic): string {
  return d.span ? d.span.source.text.slice(d.span.start, d.span.end) : '';
}
