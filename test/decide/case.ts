/**
 * The shape of a shared decision case (`test/decide/cases/*.case.ts`): one config, one request, one
 * identity and the parts of the Decision that matter. cases.test.ts runs every case against both the
 * reference interpreter and the runtime, so a case states the rule book, not either implementation.
 */
import type { DecisionRequest, Identity, InternalEndpoint, RequestProblem, RouteRef } from '../../runtime/decide/types.ts';

/** The parts of a Decision a case asserts (`toMatchObject`: absent fields are not checked). */
export interface ExpectedDecision {
  readonly outcome?: 'bad_request' | 'internal' | 'not_found' | 'allow' | 'redirect' | 'deny' | 'unauthenticated';
  readonly status?: number;
  readonly problem?: RequestProblem;
  readonly reasons?: readonly string[];
  readonly route?: Partial<RouteRef>;
  readonly endpoint?: Partial<InternalEndpoint>;
  readonly location?: string | null;
  readonly upstream?: {
    readonly url?: string;
    readonly host?: string;
    readonly headers?: Readonly<Record<string, string>>;
    readonly assertion?: boolean;
  };
}

/** One shared case. `request` is completed by `makeRequest` (GET / over https from 203.0.113.9). */
export interface DecisionCase {
  readonly name: string;
  /** YAML config text (settings and routes); see `configText`. */
  readonly config: string;
  readonly request: Partial<DecisionRequest> & { readonly host?: string };
  readonly identity: Identity | null;
  readonly expect: ExpectedDecision;
  /** Headers the upstream request must not carry (lower case). */
  readonly absentHeaders?: readonly string[];
}
