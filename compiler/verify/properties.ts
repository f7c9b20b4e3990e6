/**
 * Reading a properties file of `svc verify` (docs/verify.md "The properties file"): YAML read with
 * the config's reader (compiler/sources/yaml.ts, so every value keeps its span), each property
 * checked key by key, its condition parsed as policy text (compiler/policy/parse-text.ts). Every
 * mistake is a located diagnostic (SVC6xxx, or SVC4xxx inside a condition); nothing is ignored and
 * nothing throws for any input text.
 *
 * Then, against a plan, `bindProperties` checks what only the plan can tell: route names exist, and
 * a host pattern matches some route host.
 */
import { VerifyBadHostPattern, VerifyFileUnreadable, VerifyBadMethod, VerifyBadPath, VerifyConditionNotOne, VerifyDuplicateName, VerifyEmptyList, VerifyFormCount, VerifyMissingKey, VerifyNoProperties, VerifyNotAMap, VerifyScopeMatchesNothing, VerifyUnknownKey, VerifyUnknownRoute, VerifyWrongType } from '../diagnostics/codes/verify.ts';
import { Reporter, type Diagnostic } from '../diagnostics/diagnostic.ts';
import type { PlanEnvelope } from '../plan/types.ts';
import type { Expr } from '../policy/ir.ts';
import { locator, parsePolicyTextAt } from '../policy/parse-text.ts';
import { suggest } from '../schema/suggest.ts';
import { formatLocation, sourceFile, span, type Span } from '../source/source-file.ts';
import { getEntry, type MapNode, type Node } from '../source/tree.ts';
import { describeNode } from '../sources/entries.ts';
import { parseYaml } from '../sources/yaml.ts';

/** What a property claims about the requests svc allows in its scope (docs/verify.md "Forms"). */
export type PropertyForm = 'only' | 'never' | 'always';

/** A set of requests: each given key narrows it; a key left out is "every". */
export interface Scope {
  /** Host patterns, lower-case: `app.example.com` or `*.example.com` (one or more labels before). */
  readonly hosts: readonly { readonly pattern: string; readonly span: Span }[] | null;
  /** Path prefixes (string prefixes of the canonical path, as a route's `prefix`). */
  readonly paths: readonly string[] | null;
  readonly methods: readonly string[] | null;
  /** Route names: the request is routed to one of them. */
  readonly routes: readonly { readonly name: string; readonly span: Span }[] | null;
}

export interface Property {
  readonly name: string;
  /** `file:line:col` of the property (its list item). */
  readonly at: string;
  readonly scope: Scope;
  /** Requests taken out of the scope: each exception removes the requests in all of its keys. */
  readonly except: readonly Scope[];
  readonly form: PropertyForm;
  /** The condition, in the policy IR (what follows `allow if`). */
  readonly condition: Expr;
  /** The condition as written. */
  readonly conditionText: string;
}

export type PropertiesResult = { readonly properties: readonly Property[] | undefined; readonly diagnostics: readonly Diagnostic[] };

const FORMS: readonly PropertyForm[] = ['only', 'never', 'always'];
const SCOPE_KEYS = ['hosts', 'paths', 'methods', 'routes'] as const;
const PROPERTY_KEYS = ['name', ...SCOPE_KEYS, 'except', ...FORMS] as const;
const TOP_KEYS = ['properties'] as const;
/** `allow if ` before a condition: the policy parser reads a condition as a rule's. */
const RULE_PREFIX = 'allow if ';

/** Reads and checks a properties file's text (`name` is how diagnostics name the file). */
export function readProperties(name: string, text: string): PropertiesResult {
  const r = new Reporter();
  const source = sourceFile(name, text);
  const root = parseYaml(source, r);
  if (root === undefined) return { properties: undefined, diagnostics: r.diagnostics };
  const properties = new Reader(r).file(root);
  return { properties: r.errorCount > 0 ? undefined : properties, diagnostics: r.diagnostics };
}

/** The result for a properties file that could not be read (SVC6001). */
export function unreadableProperties(name: string, problem: string): PropertiesResult {
  const r = new Reporter();
  r.report(VerifyFileUnreadable, undefined, { file: name, problem });
  return { properties: undefined, diagnostics: r.diagnostics };
}

class Reader {
  constructor(private readonly r: Reporter) {}

  private keys(node: MapNode, allowed: readonly string[], where: string): void {
    for (const e of node.entries) {
      if (!allowed.includes(e.key)) this.r.report(VerifyUnknownKey, e.keySpan, { key: e.key, where, allowed: allowed.map((k) => `\`${k}\``).join(', '), suggestion: suggest(e.key, allowed) });
    }
  }

  file(root: Node): Property[] {
    if (root.kind !== 'map') {
      this.r.report(VerifyNotAMap, root.span, { what: 'the properties file', got: describeNode(root) });
      return [];
    }
    this.keys(root, TOP_KEYS, 'the properties file');
    const list = getEntry(root, 'properties');
    if (!list) {
      this.r.report(VerifyMissingKey, span(root.span.source, 0, 0), { key: 'properties', where: 'the properties file' });
      return [];
    }
    if (list.value.kind !== 'list') {
      this.r.report(VerifyWrongType, list.value.span, { what: '`properties`', expected: 'a list of properties', got: describeNode(list.value) });
      return [];
    }
    if (list.value.items.length === 0) this.r.report(VerifyNoProperties, list.value.span, {});
    const out: Property[] = [];
    const names = new Map<string, string>();
    list.value.items.forEach((item, i) => {
      const p = this.property(item, i);
      if (!p) return;
      const first = names.get(p.name);
      if (first !== undefined) this.r.report(VerifyDuplicateName, getEntry(item as MapNode, 'name')!.value.span, { name: p.name, first });
      else names.set(p.name, p.at);
      out.push(p);
    });
    return out;
  }

  private property(node: Node, i: number): Property | undefined {
    if (node.kind !== 'map') {
      this.r.report(VerifyNotAMap, node.span, { what: `property ${i + 1}`, got: describeNode(node) });
      return undefined;
    }
    const before = this.r.errorCount;
    this.keys(node, PROPERTY_KEYS, 'a property');
    const at = formatLocation(node.span);
    const nameEntry = getEntry(node, 'name');
    let name: string | undefined;
    if (!nameEntry) this.r.report(VerifyMissingKey, span(node.span.source, node.span.start, node.span.start + 1), { key: 'name', where: `property ${i + 1}` });
    else name = this.string(nameEntry.value, '`name`');
    const scope = this.scope(node, '');
    const except: Scope[] = [];
    const ex = getEntry(node, 'except');
    if (ex) {
      const items = ex.value.kind === 'list' ? ex.value.items : [ex.value];
      if (ex.value.kind === 'list' && items.length === 0) this.r.report(VerifyEmptyList, ex.value.span, { what: '`except`' });
      for (const it of items) {
        if (it.kind !== 'map') {
          this.r.report(VerifyWrongType, it.span, { what: '`except`', expected: 'a scope (a map of `hosts`, `paths`, `methods`, `routes`) or a list of them', got: describeNode(it) });
          continue;
        }
        this.keys(it, SCOPE_KEYS, '`except`');
        if (it.entries.length === 0) this.r.report(VerifyEmptyList, it.span, { what: 'an `except` scope' });
        except.push(this.scope(it, 'except.'));
      }
    }
    const forms = FORMS.flatMap((f) => {
      const e = getEntry(node, f);
      return e ? [{ form: f, entry: e }] : [];
    });
    if (forms.length !== 1) {
      const sp = forms[1]?.entry.keySpan ?? span(node.span.source, node.span.start, node.span.start + 1);
      this.r.report(VerifyFormCount, sp, { found: forms.map((f) => `\`${f.form}\``).join(', ') });
    }
    const form = forms[0];
    const condition = form ? this.condition(form.entry.value, `\`${form.form}\``) : undefined;
    if (this.r.errorCount > before || name === undefined || !form || !condition) return undefined;
    return { name, at, scope, except, form: form.form, condition: condition.expr, conditionText: condition.text };
  }

  private string(node: Node, what: string): string | undefined {
    if (node.kind === 'scalar' && typeof node.value === 'string' && node.value !== '') return node.value;
    this.r.report(VerifyWrongType, node.span, { what, expected: 'a non-empty string', got: describeNode(node) });
    return undefined;
  }

  /** A string or a list of strings, each with its span; undefined when the key is absent. */
  private strings(node: MapNode, key: string, what: string): { value: string; span: Span }[] | undefined {
    const e = getEntry(node, key);
    if (!e) return undefined;
    const items = e.value.kind === 'list' ? e.value.items : [e.value];
    if (e.value.kind === 'list' && items.length === 0) this.r.report(VerifyEmptyList, e.value.span, { what });
    const out: { value: string; span: Span }[] = [];
    for (const it of items) {
      if (it.kind === 'scalar' && typeof it.value === 'string' && it.value !== '') out.push({ value: it.value, span: it.span });
      else this.r.report(VerifyWrongType, it.span, { what: `an entry of ${what}`, expected: 'a non-empty string', got: describeNode(it) });
    }
    return out;
  }

  private scope(node: MapNode, prefix: string): Scope {
    const hosts = this.strings(node, 'hosts', `\`${prefix}hosts\``);
    const paths = this.strings(node, 'paths', `\`${prefix}paths\``);
    const methods = this.strings(node, 'methods', `\`${prefix}methods\``);
    const routes = this.strings(node, 'routes', `\`${prefix}routes\``);
    for (const h of hosts ?? []) {
      const problem = hostProblem(h.value);
      if (problem !== undefined) this.r.report(VerifyBadHostPattern, h.span, { value: h.value, problem });
    }
    for (const p of paths ?? []) if (!/^\/[\x21\x22\x24-\x3e\x40-\x7e]*$/.test(p.value)) this.r.report(VerifyBadPath, p.span, { value: p.value });
    for (const m of methods ?? []) if (!/^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/.test(m.value)) this.r.report(VerifyBadMethod, m.span, { value: m.value });
    return {
      hosts: hosts ? hosts.map((h) => ({ pattern: h.value.toLowerCase(), span: h.span })) : null,
      paths: paths ? paths.map((p) => p.value) : null,
      methods: methods ? methods.map((m) => m.value) : null,
      routes: routes ? routes.map((x) => ({ name: x.value, span: x.span })) : null,
    };
  }

  private condition(node: Node, what: string): { expr: Expr; text: string } | undefined {
    const text = this.string(node, what);
    if (text === undefined) return undefined;
    // Parsed as the condition of a rule, located in the properties file (the prefix is not written).
    const base = locator(text, node.span);
    const n = RULE_PREFIX.length;
    const policy = parsePolicyTextAt(`${RULE_PREFIX}${text}`, (s, e) => base(Math.max(0, s - n), Math.max(0, e - n)), this.r, what);
    if (!policy) return undefined;
    if (policy.rules.length !== 1 || policy.rules[0]!.action !== 'allow') {
      this.r.report(VerifyConditionNotOne, node.span, { count: policy.rules.length });
      return undefined;
    }
    return { expr: policy.rules[0]!.when, text: text.trim() };
  }
}

/** Why `pattern` is not a host pattern, or undefined when it is one. */
function hostProblem(pattern: string): string | undefined {
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(pattern)) return 'a host pattern has no scheme';
  if (pattern.includes('/')) return 'a host pattern has no path';
  if (pattern.includes(':')) return 'a host pattern has no port (it matches the host on every port)';
  const labels = pattern.split('.');
  const rest = labels[0] === '*' ? labels.slice(1) : labels;
  if (labels[0] === '*' && rest.length === 0) return '`*` alone: leave `hosts` out for every host';
  if (rest.some((l) => l.includes('*'))) return '`*` stands only as the whole first label (`*.example.com`)';
  if (rest.some((l) => l === '')) return 'an empty label';
  const bad = rest.find((l) => !/^[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?$/i.test(l));
  if (bad !== undefined) return `label ${JSON.stringify(bad)} holds a character a host name does not`;
  return undefined;
}

/** True when a host pattern (lower-case) takes a host name (lower-case, without port). */
export function hostPatternMatches(pattern: string, host: string): boolean {
  return pattern.startsWith('*.') ? host.endsWith(pattern.slice(1)) && host.length > pattern.length - 1 : host === pattern;
}

/** The host name of a canonical host key (`a.example.com:8443` → `a.example.com`). */
export function hostName(key: string): string {
  return key.replace(/:\d+$/, '');
}

/**
 * Checks properties against a plan: every route name exists (error), and every host pattern matches
 * some HTTP route host (warning: the property would hold with nothing to check).
 */
export function bindProperties(properties: readonly Property[], plan: PlanEnvelope): readonly Diagnostic[] {
  const r = new Reporter();
  const names = new Set(plan.body.routes.flatMap((x) => (x.name === null ? [] : [x.name])));
  const hosts = [...new Set(plan.body.routes.filter((x) => x.from.scheme === 'https').map((x) => x.from.host.toLowerCase()))];
  for (const p of properties) {
    for (const s of [p.scope, ...p.except]) {
      for (const x of s.routes ?? []) if (!names.has(x.name)) r.report(VerifyUnknownRoute, x.span, { name: x.name, suggestion: suggest(x.name, names) });
      for (const h of s.hosts ?? []) if (!hosts.some((host) => hostPatternMatches(h.pattern, host))) r.report(VerifyScopeMatchesNothing, h.span, { what: `host pattern \`${h.pattern}\`` });
    }
  }
  return r.diagnostics;
}
