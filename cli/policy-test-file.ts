/**
 * Reading a policy test file for `svc test`: YAML (with `LineCounter`, so every mistake is reported
 * as `file:line:col`), checked against schemas/policy-tests.schema.json, then each case's request,
 * identity and time turned into what the decision core takes. Never throws for a user mistake.
 */
import { readFileSync } from 'node:fs';
import { dirname, isAbsolute, join } from 'node:path';
import type { ErrorObject } from 'ajv';
import { isMap, isNode, isPair, isScalar, LineCounter, parseDocument, type Document, type Node } from 'yaml';
import type { DecisionRequest, Identity } from '../runtime/core/types.ts';
import type { ExplainOutcome } from './explain-render.ts';
import { buildRequest, checkIdentity, describeSchemaError, parseTime, policyTestsValidator } from './request-input.ts';

/** What a case expects; only `outcome` is required (schemas/policy-tests.schema.json `expect`). */
export interface Expectation {
  readonly outcome: ExplainOutcome;
  readonly status?: number;
  /** The route's name or id; null: no route. */
  readonly route?: string | null;
  /** Exactly these reasons, in this order. */
  readonly reasons?: readonly string[];
  readonly location?: string | null;
  /** null: nothing forwarded. `headers` is a subset (names case-insensitive); a null value: absent. */
  readonly upstream?: { readonly url?: string; readonly host?: string; readonly headers?: Readonly<Record<string, string | null>> } | null;
}

/** One case, ready to run. */
export interface PolicyTestCase {
  readonly name: string;
  /** `file:line:col` of the case in the test file. */
  readonly at: string;
  /** The URL as written (the text trace shows it). */
  readonly url: string;
  readonly request: DecisionRequest;
  readonly identity: Identity | null;
  readonly expect: Expectation;
}

/** A test file, checked. */
export interface PolicyTestFile {
  readonly file: string;
  /** The config (or plan) path: relative to the test file as written, joined to its directory. */
  readonly config: string;
  readonly cases: readonly PolicyTestCase[];
}

/** The file, or every problem found in it (each line `file:line:col: error: message`). */
export type PolicyTestFileResult = { readonly ok: true; readonly value: PolicyTestFile } | { readonly ok: false; readonly messages: readonly string[] };

interface RawCase {
  name: string;
  request: { url: string; method?: string; headers?: Record<string, string | string[]>; peer?: string; time?: string };
  identity?: unknown;
  expect: Expectation;
}

/**
 * Reads and checks a policy test file. `nowMs` is the request time of cases without `time`, so all
 * cases of one run share one clock.
 */
export function readPolicyTestFile(file: string, nowMs: number): PolicyTestFileResult {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    return { ok: false, messages: [`${file}: error: cannot read the test file: ${(e as Error).message}`] };
  }
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, { lineCounter, prettyErrors: false });
  const where = (offset: number): string => {
    const p = lineCounter.linePos(offset);
    return `${file}:${p.line}:${p.col}`;
  };
  if (doc.errors.length) return { ok: false, messages: doc.errors.map((e) => `${where(e.pos[0])}: error: ${e.message.split('\n')[0] ?? e.message}`) };
  let data: unknown;
  try {
    data = doc.toJS();
  } catch (e) {
    // e.g. an alias expanding past yaml's maxAliasCount: the file, not svc, is at fault
    return { ok: false, messages: [`${file}: error: ${(e as Error).message}`] };
  }
  const validate = policyTestsValidator();
  if (!validate(data)) {
    return { ok: false, messages: relevantErrors(validate.errors ?? []).map((e) => `${where(offsetOf(doc, e))}: error: ${describeSchemaError(e)}`) };
  }
  const raw = data as { config: string; cases: RawCase[] };
  const messages: string[] = [];
  const cases: PolicyTestCase[] = [];
  raw.cases.forEach((c, i) => {
    const at = (...path: (string | number)[]): string => where(nodeOffset(doc, ['cases', i, ...path]));
    let time: number | undefined;
    if (c.request.time !== undefined) {
      const t = parseTime(c.request.time);
      if (t.ok) time = t.value;
      else messages.push(`${at('request', 'time')}: error: ${t.message}`);
    }
    const headers = Object.entries(c.request.headers ?? {}).flatMap(([k, v]) => (Array.isArray(v) ? v : [v]).map((x) => [k, x] as const));
    const request = buildRequest({
      url: c.request.url,
      headers,
      nowMs: time ?? nowMs,
      ...(c.request.method !== undefined ? { method: c.request.method } : {}),
      ...(c.request.peer !== undefined ? { peer: c.request.peer } : {}),
    });
    if (!request.ok) messages.push(`${at('request')}: error: ${request.message}`);
    const identity = checkIdentity(c.identity ?? null);
    if (!identity.ok) messages.push(`${at('identity')}: error: identity: ${identity.message}`);
    if (request.ok && identity.ok) cases.push({ name: c.name, at: at(), url: c.request.url, request: request.value, identity: identity.value, expect: c.expect });
  });
  if (messages.length) return { ok: false, messages };
  const config = isAbsolute(raw.config) ? raw.config : join(dirname(file), raw.config);
  return { ok: true, value: { file, config, cases } };
}

/**
 * Ajv reports every branch of an `anyOf` (`identity: null | {...}`); when a more specific error sits
 * under the same value, the generic "must match a schema in anyOf" and "must be null" add nothing.
 */
function relevantErrors(errors: readonly ErrorObject[]): ErrorObject[] {
  const noise = (e: ErrorObject) => e.keyword === 'anyOf' || (e.keyword === 'type' && e.params['type'] === 'null');
  const specific = errors.filter((e) => !noise(e));
  return specific.length ? specific : [...errors];
}

function pathOf(pointer: string): (string | number)[] {
  if (pointer === '') return [];
  return pointer
    .split('/')
    .slice(1)
    .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'))
    .map((s) => (/^\d+$/.test(s) ? Number(s) : s));
}

/** Where an ajv error points: an unknown key at the key itself, anything else at its value. */
function offsetOf(doc: Document, e: ErrorObject): number {
  const path = pathOf(e.instancePath);
  if (e.keyword === 'additionalProperties') {
    const parent = doc.getIn(path, true);
    if (isMap(parent)) {
      const name = String(e.params['additionalProperty']);
      const pair = parent.items.find((p) => isPair(p) && isScalar(p.key) && String(p.key.value) === name);
      if (pair && isNode(pair.key) && pair.key.range) return pair.key.range[0];
    }
  }
  return nodeOffset(doc, path);
}

/** The start of the node at `path`, or of its nearest existing ancestor. */
function nodeOffset(doc: Document, path: readonly (string | number)[]): number {
  for (let n = path.length; n >= 0; n--) {
    const node: unknown = n === 0 ? doc.contents : doc.getIn(path.slice(0, n), true);
    if (isNode(node) && (node as Node).range) return (node as Node).range![0];
  }
  return 0;
}
