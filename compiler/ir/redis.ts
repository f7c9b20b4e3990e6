/** Redis connection strings: the parser lives with the plan contract, which the runtime reads too. */
export { parseRedisUrl, durationMs, REDIS_URL_PARAMS, type ParsedRedisUrl } from '../plan/redis-url.ts';
