/**
 * The identity manager's figures (the identity-manager metrics of docs/observability.md "Metric reference"), kept by the identity manager
 * (runtime/sessions/) and exported by the observability layer. Times are ms since the epoch; 0 means
 * "never". Counters only grow.
 */
export interface IdentityManagerFigures {
  /** When the last refresh run (sessions, users and groups) ended (`last_refresh_timestamp`). */
  readonly lastRefreshMs: number;
  readonly sessionRefreshSuccess: number;
  readonly sessionRefreshError: number;
  readonly sessionRefreshSuccessMs: number;
  readonly sessionRefreshErrorMs: number;
  readonly userRefreshSuccess: number;
  readonly userRefreshError: number;
  readonly userRefreshSuccessMs: number;
  readonly userRefreshErrorMs: number;
  readonly userGroupRefreshSuccess: number;
  readonly userGroupRefreshError: number;
  readonly userGroupRefreshSuccessMs: number;
  readonly userGroupRefreshErrorMs: number;
}

/** Figures before any refresh. */
export const NO_IDENTITY_FIGURES: IdentityManagerFigures = Object.freeze({
  lastRefreshMs: 0,
  sessionRefreshSuccess: 0,
  sessionRefreshError: 0,
  sessionRefreshSuccessMs: 0,
  sessionRefreshErrorMs: 0,
  userRefreshSuccess: 0,
  userRefreshError: 0,
  userRefreshSuccessMs: 0,
  userRefreshErrorMs: 0,
  userGroupRefreshSuccess: 0,
  userGroupRefreshError: 0,
  userGroupRefreshSuccessMs: 0,
  userGroupRefreshErrorMs: 0,
});
