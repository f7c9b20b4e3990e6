/**
 * Where each rule of a route's policy is written, for `svc verify`'s counterexamples
 * (docs/verify.md "Output"). The plan's source map locates a route's `policy` field, not its rules;
 * this reads the config file again (YAML, as the compiler does), finds the `policy` value written at
 * that place, lowers it as the compiler does (compiler/policy/lower-document.ts) and, only when that
 * gives exactly the plan's policy, locates each rule: a rule of policy text where its `allow`/`deny`
 * stands, a statement's rule at its `allow`/`deny` key. Anything else (another format, a policy
 * merged with `allowed_*` fields, a file changed since) gives undefined: the caller keeps the
 * field's location.
 */
import { Reporter } from '../diagnostics/diagnostic.ts';
import { canonicalJson } from '../plan/canonical-json.ts';
import type { PolicyIR } from '../plan/types.ts';
import { lowerPolicyNode } from '../policy/lower-document.ts';
import { locator, ruleStartOffsets } from '../policy/parse-text.ts';
import { formatLocation, sourceFile, type Span } from '../source/source-file.ts';
import type { Node } from '../source/tree.ts';
import { parseYaml } from '../sources/yaml.ts';

/** `file:line:col` of each rule of `policy`, written as the value at `line:column` of a YAML file. */
export function policyRuleLocations(name: string, text: string, line: number, column: number, policy: PolicyIR): string[] | undefined {
  if (!/\.ya?ml$/i.test(name)) return undefined;
  const source = sourceFile(name, text);
  const root = parseYaml(source, new Reporter());
  const lines = text.split('\n');
  if (!root || line < 1 || line > lines.length) return undefined;
  const offset = lines.slice(0, line - 1).reduce((n, l) => n + l.length + 1, 0) + column - 1;
  const node = nodeAt(root, offset);
  if (!node) return undefined;
  const lowered = lowerPolicyNode(node, new Reporter(), 'policy');
  if (!lowered || canonicalJson(lowered) !== canonicalJson(policy)) return undefined;
  const out = ruleSpans(node)?.map(formatLocation);
  return out && out.length === policy.rules.length ? out : undefined;
}

/** The node whose span starts at `offset`, the outermost one. */
function nodeAt(n: Node, offset: number): Node | undefined {
  if (n.span.start === offset) return n;
  const children = n.kind === 'map' ? n.entries.map((e) => e.value) : n.kind === 'list' ? n.items : [];
  for (const c of children) {
    if (c.span.start <= offset && offset < Math.max(c.span.end, c.span.start + 1)) return nodeAt(c, offset);
  }
  return undefined;
}

/** The span of each rule a policy value lowers to, in the order lower-document.ts makes them. */
function ruleSpans(n: Node): Span[] | undefined {
  if (n.kind === 'scalar') {
    if (typeof n.value !== 'string') return undefined;
    const starts = ruleStartOffsets(n.value);
    const locate = locator(n.value, n.span);
    return starts?.map((s) => locate(s, s + 1));
  }
  if (n.kind === 'map') return n.entries.filter((e) => e.key === 'allow' || e.key === 'deny').map((e) => e.keySpan);
  const out: Span[] = [];
  for (const item of n.items) {
    const spans = ruleSpans(item);
    if (!spans) return undefined;
    out.push(...spans);
  }
  return out;
}
