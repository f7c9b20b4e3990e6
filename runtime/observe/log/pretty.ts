/**
 * svc's lines as a person reads them (`svc_debug: true`, docs/logging.md): pino-pretty, run by
 * run-log.ts as a pino transport (this module is its target, loaded in pino's worker thread, off
 * the request path). One line per entry: the time, the level, the message first, then the fields
 * an operator looks for (status, host, path, route, user, decision) and the others as `key=value`,
 * never a JSON blob:
 *
 *     [2026-11-28 10:00:00.123 +0000] INFO: request status=200 host=app.example.com path=/ route=app user=alice decision=allow requestId=… method=GET ms=3 …
 *
 * A value with a space, a quote, an `=` or a control character is quoted as JSON, with the
 * characters a terminal would act on (C0 and C1 controls, line and paragraph separators, bidi
 * controls) escaped: a user agent or a path a client sent cannot move the cursor or recolour the
 * screen. Nested objects become dotted keys (`a.b=1`), lists comma-separated values.
 */
import build from 'pino-pretty';

/** The fields shown right after the message, in this order, when the entry has them. */
const FIRST: readonly string[] = ['status', 'host', 'path', 'route', 'user', 'decision'];

/** What the line leaves out: the prefix shows time and level; the service label is the process's. */
const LEFT_OUT = new Set(['level', 'time', 'service', 'pid', 'hostname']);

/** The line after pino-pretty's `[time] LEVEL: ` prefix for entry `log` (its message under `messageKey`). */
export function prettyMessage(log: Record<string, unknown>, messageKey = 'msg'): string {
  const msg = log[messageKey];
  let out = msg === undefined ? '' : escape(String(msg));
  const add = (key: string, value: unknown) => {
    if (value === undefined) return;
    if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
      for (const [k, v] of Object.entries(value)) add(`${key}.${k}`, v);
      return;
    }
    out += `${out === '' ? '' : ' '}${escape(key)}=${valueText(value)}`;
  };
  for (const key of FIRST) add(key, log[key]);
  for (const key of Object.keys(log)) if (key !== messageKey && !LEFT_OUT.has(key) && !FIRST.includes(key)) add(key, log[key]);
  return out;
}

function valueText(value: unknown): string {
  const text = Array.isArray(value) ? value.map((v) => (v !== null && typeof v === 'object' ? JSON.stringify(v) : String(v))).join(',') : String(value);
  return text !== '' && /^[^\s"=\\\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]+$/.test(text) ? text : escape(JSON.stringify(text));
}

/** `text` with what a terminal would act on escaped (JSON.stringify escapes only C0 controls). */
function escape(text: string): string {
  // eslint-disable-next-line no-control-regex
  return text.replace(/[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

export interface PrettyOptions {
  readonly colorize?: boolean;
  /** A file descriptor (standard output by default), or a stream (tests). */
  readonly destination?: number | NodeJS.WritableStream;
}

/** The transport: pino-pretty with svc's message line and no object printed after it. */
export default function prettyTransport(options: PrettyOptions = {}): ReturnType<typeof build> {
  return build({
    colorize: options.colorize ?? false,
    destination: options.destination ?? 1,
    translateTime: 'SYS:standard',
    ignore: 'pid,hostname,service',
    // No object is printed (the message line has every field), so no `singleLine`: with it pino-pretty
    // would end the line only before an object.
    hideObject: true,
    messageFormat: (log, messageKey) => prettyMessage(log, messageKey),
  });
}
