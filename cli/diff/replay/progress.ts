/**
 * Replay's progress on standard error: on a terminal one line rewritten in place (`tty`), with
 * `--progress` elsewhere one line per update (`lines`), and nothing in CI or a pipe unless asked
 * (`none`), so logs and captured output stay clean. Never on standard output, which holds the report.
 */
import type { ReplayProgress } from './replay.ts';

export type ProgressMode = 'tty' | 'lines' | 'none';

/** The mode for a stream: `--progress` forces it; else a terminal outside CI gets it in place. */
export function progressMode(flag: boolean | undefined, stream: { readonly isTTY?: boolean }, env: NodeJS.ProcessEnv): ProgressMode {
  const tty = stream.isTTY === true && (env['CI'] === undefined || env['CI'] === '' || env['CI'] === 'false');
  if (flag === true) return tty ? 'tty' : 'lines';
  return tty && flag !== false ? 'tty' : 'none';
}

/** `update` for replayLogs and `done` to clear the line; both do nothing in mode `none`. */
export function progressPrinter(mode: ProgressMode, err: (s: string) => void): { readonly update: ((p: ReplayProgress) => void) | undefined; readonly done: () => void } {
  if (mode === 'none') return { update: undefined, done: () => undefined };
  let shown = false;
  const text = (p: ReplayProgress) => `replay: ${p.file}: ${p.lines} lines, ${p.requests} requests, ${p.changed} changed`;
  return {
    update: (p) => {
      shown = true;
      err(mode === 'tty' ? `\r\x1b[K${text(p)}` : `${text(p)}\n`);
    },
    done: () => {
      if (mode === 'tty' && shown) err('\r\x1b[K');
      shown = false;
    },
  };
}
