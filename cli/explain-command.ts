/**
 * `svc explain`: what svc would decide for one request, from the config (or plan) alone, without
 * running a server: the route chosen, every policy rule and leaf, the verdict and its reasons, and
 * the upstream request (URL, Host, headers) or the redirect. docs/explain-and-test.md.
 *
 * Exit status: 0 when the request is explained, whatever the outcome; 1 when the config has errors;
 * 2 on a usage error (bad URL, header, identity or time) or an unreadable file or plan.
 */
import { withClaimHeaders } from './with-claim-headers.ts';
import { buildIndex } from '../runtime/plan/index.ts';
import { explainConnect, explainDecision } from '../runtime/request/decide.ts';
import { explainJson, renderExplainText } from './explain-render.ts';
import { loadPlanInput } from './plan-input.ts';
import { buildRequest, parseHeaderFlag, parseTime, readIdentityFlag } from './request-input.ts';

/** The options of `svc explain`, as commander gives them. */
export interface ExplainOptions {
  readonly config?: string;
  readonly url?: string;
  readonly method?: string;
  readonly header?: readonly string[];
  /** Inline JSON or `@file.json`. */
  readonly identity?: string;
  readonly peer?: string;
  /** ISO 8601; default now. */
  readonly time?: string;
  readonly format: 'text' | 'json';
}

/** Output sinks, as `main` passes them. */
export interface CommandIo {
  readonly out: (s: string) => void;
  readonly err: (s: string) => void;
}

/** Runs `svc explain` and returns its exit status. Never throws for a user mistake. */
export function explainCommand(planArg: string | undefined, opts: ExplainOptions, io: CommandIo): number {
  const usage = (message: string): number => {
    io.err(`error: ${message}\n`);
    return 2;
  };
  if (planArg !== undefined && opts.config !== undefined) return usage('give the config either with -config or as an argument, not both');
  const source = opts.config ?? planArg;
  if (source === undefined) return usage('no config: svc explain -config FILE --url URL (or svc explain PLAN --url URL)');
  if (opts.url === undefined) return usage('no request: --url URL is required');

  const headers: (readonly [string, string])[] = [];
  for (const h of opts.header ?? []) {
    const parsed = parseHeaderFlag(h);
    if (!parsed.ok) return usage(parsed.message);
    headers.push(parsed.value);
  }
  let nowMs: number | undefined;
  if (opts.time !== undefined) {
    const t = parseTime(opts.time);
    if (!t.ok) return usage(`--time: ${t.message}`);
    nowMs = t.value;
  }
  const identity = readIdentityFlag(opts.identity);
  if (!identity.ok) return usage(identity.message);
  const request = buildRequest({
    url: opts.url,
    headers,
    ...(opts.method !== undefined ? { method: opts.method } : {}),
    ...(opts.peer !== undefined ? { peer: opts.peer } : {}),
    ...(nowMs !== undefined ? { nowMs } : {}),
  });
  if (!request.ok) return usage(request.message);

  const input = loadPlanInput(source);
  if (!input.ok) {
    io.err(input.message);
    return input.status;
  }
  // CONNECT is decided as the listener's CONNECT handler does: the tcp+https route of `host:port`.
  const explain = request.value.method === 'CONNECT' ? explainConnect : explainDecision;
  const index = buildIndex(input.plan.body);
  const x = withClaimHeaders(index, explain(index, request.value, identity.value), identity.value);
  if (opts.format === 'json') io.out(`${JSON.stringify(explainJson(x), null, 2)}\n`);
  else io.out(renderExplainText(x, { plan: input.plan, request: request.value, url: opts.url, identity: identity.value }));
  return 0;
}
