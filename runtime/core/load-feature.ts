/**
 * Loading what only some plans use (docs/architecture.md §5 "Lazy feature loading"): the libraries
 * of tracing (OpenTelemetry), metrics (prom-client), Redis sessions (ioredis), autocert
 * (acme-client) and gRPC (@grpc/grpc-js and protobufjs) are imported when a plan uses the feature, during startup or the
 * preparation of a generation, never by the static imports of a serving process. A library that
 * cannot be loaded (an incomplete installation) is a coded error there, so the plan that needs it is
 * refused at start (or at the reload that brings it), never an unhandled rejection later.
 */
import { SvcError } from './errors.ts';

/** A feature's library could not be loaded. */
export class FeatureUnavailableError extends SvcError<'SVC_ERR_FEATURE_UNAVAILABLE'> {
  constructor(
    /** The feature, as the settings name it (`tracing`, `metrics`, `Redis session storage`, `autocert`, `gRPC`). */
    readonly feature: string,
    cause: unknown,
  ) {
    super('SVC_ERR_FEATURE_UNAVAILABLE', `${feature} needs a library that cannot be loaded (${cause instanceof Error ? cause.message : String(cause)}): svc is installed incompletely, reinstall it`, { cause });
    this.name = 'FeatureUnavailableError';
  }
}

/**
 * Imports a feature's module (`load`: a dynamic `import()`); a failure to load becomes a
 * {@link FeatureUnavailableError}. Node caches modules: a second call costs a promise.
 */
export async function loadFeature<T>(feature: string, load: () => Promise<T>): Promise<T> {
  try {
    return await load();
  } catch (e) {
    throw new FeatureUnavailableError(feature, e);
  }
}
