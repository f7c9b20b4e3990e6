/**
 * The shape of a plan diff (`svc diff`): what changed between two plans, ordered for a security
 * reviewer (access first, then flags, routes, settings). Pure JSON data: `render-json.ts` prints it
 * as is, and docs/diff.md documents it field by field.
 *
 * INVARIANT (no-secret): no field of a `PlanDiff` ever holds a secret's value, an inline PEM
 * document, or a fingerprint. Secrets and PEM documents appear only as `Redacted` markers.
 */
import type { ReplayReport } from './replay/types.ts';

/** Any JSON value. */
export type JsonValue = null | boolean | number | string | readonly JsonValue[] | { readonly [key: string]: JsonValue };

/**
 * What the diff shows in place of a secret (`kind: 'secret'`: a `Secret`, or a string under a key
 * naming a password, secret or token) or a PEM document (`kind: 'pem'`). `source` is where the
 * value comes from: `env:NAME`, `file:path`, or `inline` (written in the config); never the value.
 */
export interface Redacted {
  readonly redacted: 'secret' | 'pem';
  readonly source: string;
}

/**
 * One changed value. `path` is where it is in the plan (`server.timeoutReadMs`,
 * `tls.certificates[0].key`); `key` is the config key it comes from, with the rest of the path
 * (`timeout_read`, `certificates[0].key`; cli/diff/config-keys.ts). Values are in config units: a
 * duration as the config writes it (`30s`), an address as `host:port`.
 */
export interface ValueChange {
  readonly path: string;
  readonly key: string;
  /** `added`/`removed`: a map key or list item that exists on one side only. */
  readonly change: 'added' | 'removed' | 'changed';
  /** True when `old`/`new` are `Redacted` markers: only the fact of the change is shown. */
  readonly redacted: boolean;
  /** The old value (secrets redacted); `null` when `change` is `added`. */
  readonly old: JsonValue;
  /** The new value (secrets redacted); `null` when `change` is `removed`. */
  readonly new: JsonValue;
}

/** How a route is named in the diff. */
export interface RouteRef {
  readonly id: string;
  readonly name: string | null;
  /** Position in its plan's route list (0-based). */
  readonly index: number;
  /** The `from` URL (`https://app.example.com`, with a port when it has one). */
  readonly from: string;
  /** The path matcher: `prefix /api`, `path /x`, `regex ^/a$`, or `any`. */
  readonly match: string;
  /** The name when there is one, else `from` and the matcher (`https://app.example.com prefix /api`). */
  readonly label: string;
}

/** An added or removed route, with what a reviewer needs to judge it. */
export interface RouteSummary {
  readonly route: RouteRef;
  readonly public: boolean;
  /** The policy in canonical text (printPolicy); empty for a policy without rules. */
  readonly policy: string;
  /** Upstream URLs, or `redirect`. */
  readonly target: string;
}

/** One line of a line diff: kept, added or removed. */
export interface LineChange {
  readonly op: 'keep' | 'add' | 'remove';
  readonly text: string;
}

/** A changed policy: old and new canonical text and a line diff between them. */
export interface PolicyChange {
  readonly old: string;
  readonly new: string;
  readonly lines: readonly LineChange[];
}

/** A route present in both plans whose fields, policy or relative position changed. */
export interface RouteChange {
  readonly old: RouteRef;
  readonly new: RouteRef;
  /** How the two were paired: the same `name`, or the same `from` listener and path matcher. */
  readonly matchedBy: 'name' | 'from-and-matcher';
  /**
   * True when the route's order relative to the other paired routes changed (first match wins).
   * An index shift caused only by added or removed routes is not a move.
   */
  readonly moved: boolean;
  /** Field-level changes, except `index` (see `moved`) and `policy` (see `policy`). */
  readonly fields: readonly ValueChange[];
  readonly policy: PolicyChange | null;
}

/** Routes added, removed and changed; `unchanged` counts paired routes with no change. */
export interface RoutesDiff {
  readonly added: readonly RouteSummary[];
  readonly removed: readonly RouteSummary[];
  readonly changed: readonly RouteChange[];
  readonly unchanged: number;
}

/** One identity class whose access changed. */
export interface ClassChange {
  /** The class: `group admins`, `domain example.com`, `email a@b.c`, `user alice`,
   * `claim/dept eng`, `device approved`, `any authenticated user`, `anonymous`, or two joined by ` + `. */
  readonly identity: string;
  /** True when the change holds for every representative request. */
  readonly all: boolean;
  /** The representative requests for which it changed (`DELETE /admin`, `GET / at 2025-…`). */
  readonly requests: readonly string[];
}

/** Who gains and who loses access to one route. */
export interface RouteAccess {
  /** The route (the new one, or the old one when removed). */
  readonly route: RouteRef;
  readonly status: 'added' | 'removed' | 'changed';
  readonly gains: readonly ClassChange[];
  readonly loses: readonly ClassChange[];
}

/** Kinds of reviewer flags. */
export type FlagKind =
  | 'public'
  | 'fail-open'
  | 'shadowed'
  | 'tls-skip-verify'
  | 'pass-identity-headers'
  /** `cookie_secret`, `cookie_name` or `cookie_domain` changed: users are signed out. */
  | 'sign-out'
  /** `shared_secret` changed: split services stop talking until all have it. */
  | 'shared-secret'
  /** `signing_key` changed: upstreams must fetch the JWKS again. */
  | 'signing-key';

/** Something a reviewer must look at. `route` is null for a settings-level flag. */
export interface Flag {
  readonly kind: FlagKind;
  readonly route: RouteRef | null;
  readonly message: string;
}

/** The whole diff between two plans. */
export interface PlanDiff {
  readonly old: { readonly checksum: string };
  readonly new: { readonly checksum: string };
  /** True when the checksums are equal; every list is then empty. */
  readonly equal: boolean;
  readonly access: readonly RouteAccess[];
  readonly flags: readonly Flag[];
  readonly routes: RoutesDiff;
  readonly settings: readonly ValueChange[];
  /** The exact check (cli/diff/exact/), when it ran: `svc diff` runs it unless told not to. */
  readonly exact?: ExactReport;
  /** Recorded requests decided again under both plans (`--replay`, cli/diff/replay/). */
  readonly replay?: ReplayReport;
}

/** A concrete identity and request that separates two plans, confirmed by svc's real programs. */
export interface ExactWitness {
  /** The identity (the runtime's `Identity`: user, email, groups, claims, device), or null: anonymous. */
  readonly identity: JsonValue;
  readonly request: {
    readonly method: string;
    readonly url: string;
    /** The request carries `Origin` and `Access-Control-Request-Method` (a CORS preflight when OPTIONS). */
    readonly corsPreflightHeaders: boolean;
    readonly clientAddress: string;
    readonly clientCertificate: { readonly fingerprint: string; readonly valid: boolean } | null;
    /** The request time, ISO 8601 UTC. */
    readonly time: string;
  };
  /** The real decision under each plan: `allow`, `deny`, `unauthenticated`, or `absent` (no such route). */
  readonly old: string;
  readonly new: string;
}

/** The answer to one exact question. */
export interface ExactAnswer {
  /** `none`: proved that nothing changes; `change`: see `witness`; `not-proved`: see `reason`. */
  readonly result: 'none' | 'change' | 'not-proved';
  readonly witness: ExactWitness | null;
  readonly reason: string | null;
}

/** Who gains and who loses access to one route, decided. */
export interface ExactAccess {
  readonly route: RouteRef;
  readonly status: 'added' | 'removed' | 'changed';
  readonly gains: ExactAnswer;
  readonly loses: ExactAnswer;
}

/** A request the two plans send to routes that are not the same route (`null`: no route). */
export interface RoutingChange {
  readonly url: string;
  readonly old: RouteRef | null;
  readonly new: RouteRef | null;
}

/** The routing of one host whose routes changed, decided. */
export interface ExactRouting {
  readonly host: string;
  /** `change` when `changes` is not empty; `not-proved` may come with the changes found before. */
  readonly answer: ExactAnswer;
  readonly changes: readonly RoutingChange[];
}

/** The exact check's report. */
export interface ExactReport {
  /** True when every question was decided (nothing `not-proved`). */
  readonly complete: boolean;
  /** The time budget it had (ms); the report leaves out the time it took, so equal inputs print equal bytes. */
  readonly budgetMs: number;
  readonly access: readonly ExactAccess[];
  readonly routing: readonly ExactRouting[];
}
