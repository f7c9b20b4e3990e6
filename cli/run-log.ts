/**
 * The logs of `svc run`: JSON lines on standard output (pino), following the plan's log settings,
 * applied again on every reload:
 *
 * - `log_level`: the least level of svc's own lines (default `info`). Each line has a level: the
 *   entry's `level` when it names one, else the level of its message in {@link LEVELS}, else info.
 * - `proxy_log_level`: the per-request access lines (cli/access-line.ts) are info lines; they are
 *   written when `proxy_log_level` is `debug` or `info` (default: `log_level`), whatever `log_level` is.
 * - `svc_debug`: human-readable lines instead of JSON (`time LEVEL message key=value …`), colored
 *   when standard output is a terminal and `NO_COLOR` is not set. Formatted here: pino-pretty is
 *   not a dependency.
 */
import { pino } from 'pino';
import type { LogLevel, PlanSettings } from '../compiler/plan/types.ts';
import { isRequestEntry, requestLine } from './access-line.ts';

/** The level of svc's own messages that are not info (runtime/ logs message text, not levels). */
export const LEVELS: Readonly<Record<string, LogLevel>> = {
  'reload failed; keeping the current plan': 'error',
  'worker refused a plan': 'error',
  'endpoint error': 'error',
  'identity assertion failed': 'error',
  'worker died; replacing it': 'warn',
  'session lookup failed; treating the request as signed out': 'warn',
  'session refresh failed; session ended': 'warn',
  'identity provider unavailable': 'warn',
  'identity provider refused the sign-in': 'warn',
  'sign-in failed': 'warn',
  'upstream error': 'warn',
  'proxy protocol refused': 'warn',
  'no signing_key: signing identity assertions with an ephemeral key': 'warn',
};

const LEVEL_VALUES: Readonly<Record<LogLevel, number>> = { debug: 20, info: 30, warn: 40, error: 50 };

/** Where the lines go (pino's destination on standard output). */
export interface Sink {
  write(line: string): unknown;
  flush?(): void;
}

export interface RunLog {
  /** Logs one entry: an access line (`msg: 'request'`) or one of svc's own lines. */
  log(entry: Record<string, unknown>): void;
  /** Logs an info line and flushes at once (startup lines). */
  announce(entry: Record<string, unknown>): void;
  /** Applies a plan's log settings (at start and on every reload). */
  apply(logging: PlanSettings['logging']): void;
}

export function createRunLog(out: Sink, options: { readonly color?: boolean; readonly now?: () => number } = {}): RunLog {
  const now = options.now ?? Date.now;
  let human = false;
  let accessLines = true;
  // Every line goes through here: JSON as pino writes it, or reformatted for people (svc_debug).
  const sink = { write: (line: string) => out.write(human ? humanLine(line, options.color ?? false) : line) };
  const logger = pino({ base: { service: 'svc' }, level: 'info', ...(options.now ? { timestamp: () => `,"time":${now()}` } : {}) }, sink);
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
    log: (entry) => {
      // The per-request line is formatted by hand in pino's format (cli/access-line.ts).
      if (isRequestEntry(entry)) {
        if (accessLines) sink.write(requestLine(entry, now()));
      } else own(entry);
    },
    announce: (entry) => {
      own(entry);
      out.flush?.();
    },
    apply: (logging) => {
      logger.level = logging.level;
      accessLines = LEVEL_VALUES[logging.proxyLevel] <= LEVEL_VALUES.info;
      human = logging.debug;
    },
  };
}

const NAMES: Readonly<Record<number, string>> = { 10: 'TRACE', 20: 'DEBUG', 30: 'INFO', 40: 'WARN', 50: 'ERROR', 60: 'FATAL' };
const COLORS: Readonly<Record<number, string>> = { 20: '\x1b[34m', 30: '\x1b[32m', 40: '\x1b[33m', 50: '\x1b[31m', 60: '\x1b[31m' };
const DIM = '\x1b[2m';
const BOLD = '\x1b[1m';
const RESET = '\x1b[0m';

/**
 * One JSON log line as people read it: `2025-01-02T03:04:05.678Z INFO  listening address=…`.
 * Strings are written bare unless they hold spaces, quotes or `=`; other values as JSON.
 */
export function humanLine(line: string, color: boolean): string {
  let entry: Record<string, unknown>;
  try {
    entry = JSON.parse(line) as Record<string, unknown>;
  } catch {
    return line;
  }
  const { level, time, service: _service, msg, ...rest } = entry;
  const n = typeof level === 'number' ? level : 30;
  const name = (NAMES[n] ?? String(level)).padEnd(5);
  const when = typeof time === 'number' ? new Date(time).toISOString() : '';
  const fields = Object.entries(rest).map(([k, v]) => {
    const text = typeof v === 'string' && /^[^\s"=]*$/.test(v) && v !== '' ? v : JSON.stringify(v);
    return color ? `${DIM}${k}=${RESET}${text}` : `${k}=${text}`;
  });
  const head = color ? `${DIM}${when}${RESET} ${COLORS[n] ?? ''}${name}${RESET} ${BOLD}${String(msg ?? '')}${RESET}` : `${when} ${name} ${String(msg ?? '')}`;
  return `${[head, ...fields].join(' ')}\n`;
}
