/**
 * The two back ends of the differential tests side by side: the runtime (`buildIndex` + `decide`,
 * `editResponseHeaders`) and the reference interpreter, over plans compiled once per config text;
 * and the corpus of shrunk counterexamples under fixtures/corpus/.
 */
import { createHash } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { PlanBody } from '../../compiler/plan/types.ts';
import { decide } from '../../runtime/decide/decide.ts';
import type { Decision, DecisionRequest, Identity } from '../../runtime/decide/types.ts';
import { editResponseHeaders } from '../../runtime/http/response-headers.ts';
import { buildIndex, type PlanIndex } from '../../runtime/plan/index.ts';
import { decideReference, responseHeadersReference } from '../reference/interpreter.ts';
import { compileBody } from '../reference/support.ts';

/** fixtures/corpus/, where shrunk counterexamples are kept and replayed. */
export const CORPUS_DIR = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'fixtures', 'corpus');

interface Compiled {
  readonly body: PlanBody;
  readonly index: PlanIndex;
}

const cache = new Map<string, Compiled>();

/** Compiles config text (once per text: shrinking replays the same config many times) and indexes it. */
export function compiled(text: string): Compiled {
  let c = cache.get(text);
  if (c === undefined) {
    const body = compileBody(text);
    c = { body, index: buildIndex(body) };
    cache.set(text, c);
  }
  return c;
}

/** Both decisions for one request. */
export function bothDecisions(text: string, request: DecisionRequest, identity: Identity | null): { runtime: Decision; reference: Decision } {
  const { body, index } = compiled(text);
  return { runtime: decide(index, request, identity), reference: decideReference(body, request, identity) };
}

/** Both response-header edits for one route (inputs are copied: neither side may see the other's changes). */
export function bothResponseHeaders(text: string, routeIndex: number, headers: Record<string, string | string[]>): { runtime: unknown; reference: unknown } {
  const { body } = compiled(text);
  const route = body.routes[routeIndex];
  if (route === undefined) throw new Error(`no route ${routeIndex}`);
  return { runtime: editResponseHeaders(route, structuredClone(headers)), reference: responseHeadersReference(route, structuredClone(headers)) };
}

/** One corpus file: a config, a request and an identity (and optionally response headers) to replay. */
export interface CorpusEntry {
  readonly name: string;
  /** Why it is kept: the disagreement it showed, and the rule-book line that decides it. */
  readonly note: string;
  readonly config: string;
  readonly request: DecisionRequest;
  readonly identity: Identity | null;
  /** For a §8 case: the route (by index) and the upstream's response headers. */
  readonly response?: { readonly routeIndex: number; readonly headers: Record<string, string | string[]> };
}

/** Every corpus entry, sorted by file name. */
export function readCorpus(): { file: string; entry: CorpusEntry }[] {
  let files: string[];
  try {
    files = readdirSync(CORPUS_DIR).filter((f) => f.endsWith('.json')).sort();
  } catch {
    return [];
  }
  return files.map((file) => ({ file, entry: JSON.parse(readFileSync(join(CORPUS_DIR, file), 'utf8')) as CorpusEntry }));
}

/**
 * Saves a counterexample as `fixtures/corpus/<prefix>-<hash>.json` (the hash of its content, so the
 * same counterexample is saved once) and returns the file name.
 */
export function saveCounterexample(prefix: string, entry: Omit<CorpusEntry, 'name'>): string {
  const json = JSON.stringify({ config: entry.config, request: entry.request, identity: entry.identity, response: entry.response });
  const hash = createHash('sha256').update(json).digest('hex').slice(0, 12);
  const name = `${prefix}-${hash}`;
  mkdirSync(CORPUS_DIR, { recursive: true });
  writeFileSync(join(CORPUS_DIR, `${name}.json`), `${JSON.stringify({ name, ...entry }, null, 2)}\n`);
  return `${name}.json`;
}
