/**
 * The shape of a shared decision case (`test/decide/cases/*.case.ts`): one config, one request, one
 * identity and the parts of the Decision that matter. cases.test.ts runs every case against both the
 * reference interpreter and the runtime, so a case states the rule book, not either implementation.
 */
import type { DecisionRequest, Identity, InternalEndpoint, RequestProblem, RouteRef } from '../../runtime/core/types.ts';
import type { EntryKind, GateConnectionData, GateRefusal } from '../reference/gate.ts';

/**
 * The parts of a Decision a case asserts (`toMatchObject`: absent fields are not checked); for a
 * case with an `entry`, a refusal at the door is `{refused, problem}` (rule book §9).
 */
export interface ExpectedDecision {
  readonly outcome?: 'bad_request' | 'internal' | 'not_found' | 'allow' | 'redirect' | 'deny' | 'unauthenticated';
  readonly status?: number;
  readonly refused?: GateRefusal['refused'];
  readonly problem?: RequestProblem | GateRefusal['problem'];
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
  /**
   * Rule book §9: the case goes through both gates (reference and runtime `admit`) as this kind of
   * entry (HTTP/1.1 unless said), instead of through the decision cores alone. A CONNECT's
   * `request.target` is its authority; `request.scheme` must be `http` exactly on a plain-HTTP
   * connection.
   */
  readonly entry?: { readonly kind: EntryKind; readonly httpVersion?: '1.0' | '1.1' | '2.0' };
  /** The connection of an `entry` case; default `GATE_CONNECTION`. */
  readonly connection?: GateConnectionData;
}

/** A TLS connection served a `*.example.com` certificate, no client certificate, none required. */
export const GATE_CONNECTION: GateConnectionData = { tls: { covers: ['*.example.com'], requires: [] } };
