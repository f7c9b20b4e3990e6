/**
 * The authorize service's messages (schemas/proto/svc/authorize/v1/authorize.proto) as proto-loader
 * gives and takes them (runtime/grpc/proto.ts: snake_case fields, enums as strings, unset fields
 * absent), and their checked readings.
 */
import type { Verdict } from '../core/types.ts';
import type { RuntimeErrorCode } from '../core/errors.ts';
import type { PolicyAnswer } from './decision-cache.ts';

export interface CheckRequestMessage {
  plan_checksum: string;
  route_index: number;
  route_digest: string;
  session_id?: string;
  method?: string;
  path?: string;
  headers?: Record<string, { values?: string[] }>;
  client_address?: string;
  client_certificate?: { fingerprint?: string; valid?: boolean };
  now_ms?: number;
  /** routes-checksum.ts; absent from an older caller. */
  routes_checksum?: string;
}

export interface CheckResponseMessage {
  verdict?: 'VERDICT_UNSPECIFIED' | 'ALLOW' | 'DENY' | 'UNAUTHENTICATED';
  reasons?: string[];
  plan_checksum?: string;
  routes_checksum?: string;
}

/** The trailer code of a route the authorize service does not have (index and digest). */
export const ROUTE_MISMATCH = 'SVC_ERR_ROUTE_MISMATCH' satisfies RuntimeErrorCode;

const VERDICT_OF: Readonly<Record<string, Verdict>> = { ALLOW: 'allow', DENY: 'deny', UNAUTHENTICATED: 'unauthenticated' };
const MESSAGE_OF: Readonly<Record<Verdict, NonNullable<CheckResponseMessage['verdict']>>> = { allow: 'ALLOW', deny: 'DENY', unauthenticated: 'UNAUTHENTICATED' };

/** The answer in a response, or undefined when it is malformed (the caller fails closed). */
export function answerOfMessage(m: CheckResponseMessage): PolicyAnswer | undefined {
  const v = m.verdict;
  if (v === undefined || !Object.hasOwn(VERDICT_OF, v)) return undefined;
  const reasons = m.reasons ?? [];
  if (!Array.isArray(reasons) || reasons.some((r) => typeof r !== 'string')) return undefined;
  return { verdict: VERDICT_OF[v]!, reasons };
}

export function messageOfAnswer(a: PolicyAnswer, planChecksum: string, routesChecksum: string): CheckResponseMessage {
  return { verdict: MESSAGE_OF[a.verdict], reasons: [...a.reasons], plan_checksum: planChecksum, routes_checksum: routesChecksum };
}

/**
 * Whether two roles run the same configuration: their routes checksums when both sent one, else
 * (an older peer) their plan checksums.
 */
export function sameConfig(mine: { readonly plan: string; readonly routes: string }, theirs: { readonly plan: string; readonly routes: string }): boolean {
  return theirs.routes === '' || mine.routes === '' ? theirs.plan === mine.plan : theirs.routes === mine.routes;
}
