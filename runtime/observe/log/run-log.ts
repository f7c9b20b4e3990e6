/**
 * The logs of `svc run`: JSON lines on standard output (pino), following the plan's log settings,
 * applied again on every reload:
 *
 * - `log_level`: the least level of svc's own lines (default `info`, docs/architecture.md §3). Each line has a
 *   level: the entry's `level` when it names one, else the level of its message in {@link LEVELS},
 *   else info.
 * - `proxy_log_level`: the least level of the access lines (access-line.ts: info, or warn for a 5xx
 *   answer or a cut response), whatever `log_level` is (default: `log_level`).
 * - `services`: every line carries the `service` label of the process (docs/logging.md, service-label.ts):
 *   `svc` in all-in-one mode, `svc-<service>` in distributed mode; `svc` until the first plan.
 * - `svc_debug`: colored human-readable lines instead of JSON, by pino-pretty as a pino transport
 *   (pretty.ts: one line per entry, the message first, then `key=value`): the formatting runs in a
 *   worker thread, off the request path. The transport is started the first time a plan asks for
 *   it and kept (a reload back to JSON stops writing to it).
 */
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { pino } from 'pino';
import type { LogLevel, PlanSettings } from '../../../compiler/plan/types.ts';
import { serviceLabel } from '../service-label.ts';
import { accessLevel, accessLine, isoTime, type AccessEntry } from './access-line.ts';

/** The level of svc's own messages that are not info (runtime/ logs message text, not levels). */
export const LEVELS: Readonly<Record<string, LogLevel>> = {
  'reload failed; keeping the current plan': 'error',
  'worker refused a plan': 'error',
  'worker refused its first plan': 'error',
  'endpoint error': 'error',
  'identity assertion failed': 'error',
  // Once per outage (runtime/databroker/redis-store.ts); `reachable again` is info.
  'session store (redis) unreachable': 'error',
  'session store (redis) unreachable at start': 'error',
  'worker died; replacing it': 'warn',
  'session lookup failed; treating the request as signed out': 'warn',
  'session refresh failed; session ended': 'warn',
  'identity provider unavailable': 'warn',
  'identity provider refused the sign-in': 'warn',
  'sign-in failed': 'warn',
  'upstream error': 'warn',
  'proxy protocol refused': 'warn',
  'no signing_key: signing identity assertions with an ephemeral key': 'warn',
  'trace export failed': 'warn',
  'drain deadline reached; cutting what is still running': 'warn',
};

const LEVEL_VALUES: Readonly<Record<LogLevel, number>> = { debug: 20, info: 30, warn: 40, error: 50 };

/** `"level":"info"` rather than pino's `"level":30`, as most JSON loggers write it. */
const FORMATTERS = { level: (label: string) => ({ level: label }) };

/** Where the lines go (pino's destination on standard output, or the pretty transport). */
export interface Sink {
  write(line: string): unknown;
  flush?(): void;
  flushSync?(): void;
}

export interface RunLog {
  /** Logs one of svc's own lines. */
  log(entry: Record<string, unknown>): void;
  /** Logs an access line (filtered by `proxy_log_level`). */
  access(entry: AccessEntry): void;
  /** Logs an info line and flushes at once (startup lines). */
  announce(entry: Record<string, unknown>): void;
  /** Applies a plan's log settings and `service` label (at start and on every reload). */
  apply(settings: Pick<PlanSettings, 'logging' | 'mode'>): void;
  /** Writes out whatever is buffered (svc stopping). */
  flushSync(): void;
}

export interface RunLogOptions {
  readonly now?: () => number;
  /** Where `svc_debug` lines go; default a pino-pretty transport on standard output (colored when `color`). */
  readonly pretty?: () => Sink;
  readonly color?: boolean;
}

export function createRunLog(out: Sink, options: RunLogOptions = {}): RunLog {
  const now = options.now ?? Date.now;
  let pretty: Sink | undefined;
  let target: Sink = out;
  let proxyLevel = LEVEL_VALUES.info;
  // Every line goes through here: to standard output as JSON, or to the pretty transport (svc_debug).
  const sink = { write: (line: string) => target.write(line) };
  // pino writes its `base` once into every line's prefix; another label needs another logger. Levels
  // by name and times in RFC 3339 (docs/logging.md), as the access lines (access-line.ts).
  const loggerFor = (service: string, level: string) => pino({ base: { service }, level, formatters: FORMATTERS, timestamp: () => `,"time":"${isoTime(now())}"` }, sink);
  let service = 'svc';
  let logger = loggerFor(service, 'info');
  const own = (entry: Record<string, unknown>) => {
    const named = entry['level'];
    const level = typeof named === 'string' && Object.hasOwn(LEVEL_VALUES, named) ? (named as LogLevel) : (LEVELS[String(entry['msg'])] ?? 'info');
    if (!logger.isLevelEnabled(level)) return;
    if (named === undefined) logger[level](entry);
    else {
      const { level: _, ...rest } = entry;
      logger[level](rest);
    }
  };
  return {
    log: own,
    access: (entry) => {
      if (accessLevel(entry) >= proxyLevel) target.write(accessLine(entry, now(), service));
    },
    announce: (entry) => {
      own(entry);
      target.flush?.();
    },
    apply: (settings) => {
      const logging = settings.logging;
      const label = serviceLabel(settings);
      if (label !== service) {
        service = label;
        logger = loggerFor(service, logging.level);
      } else logger.level = logging.level;
      proxyLevel = LEVEL_VALUES[logging.proxyLevel];
      if (logging.debug) {
        pretty ??= (options.pretty ?? (() => prettyTransport(options.color ?? false)))();
        target = pretty;
      } else target = out;
    },
    flushSync: () => {
      out.flushSync?.();
      pretty?.flushSync?.();
    },
  };
}

/**
 * pino-pretty in a worker thread, writing to standard output, through pretty.ts (svc's one line per
 * entry). pino loads the target in the worker: from dist/ the compiled pretty.js; from the sources
 * (bin/svc without a fresh build) pretty.ts, which pino `require`s, so the worker gets tsx's
 * require hook (Node 20's module hooks do not reach worker threads).
 */
function prettyTransport(colorize: boolean): Sink {
  const fromSource = import.meta.url.endsWith('.ts');
  const target = fileURLToPath(new URL(fromSource ? './pretty.ts' : './pretty.js', import.meta.url));
  const worker = fromSource ? { execArgv: [...process.execArgv, '--require', createRequire(import.meta.url).resolve('tsx/cjs')] } : {};
  // As `targets` (one): pino's own worker then loads it, and `require`s a .ts target (a lone `target`
  // is `import`ed, which no hook reaches in the worker).
  return pino.transport({ targets: [{ target, options: { colorize, destination: 1 } }], worker }) as unknown as Sink;
}
