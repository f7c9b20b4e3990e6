/**
 * The text form of a replay report: the "Replay" section `svc diff --replay` prints after the diff
 * (docs/diff.md "Replaying real traffic"). Markers as in the diff: `-` loses access, `+` gains it,
 * `~` another change, `!` something a reviewer must know about the replay itself.
 */
import type { ReplayChangeKind, ReplayGroup, ReplayReport } from './types.ts';

const I1 = '  ';
const I2 = '      ';

/** What each reason a request was not replayed exactly means, in words. */
export const GAP_WORDS: Readonly<Record<string, string>> = {
  'identity-not-logged': 'the line has no groups, claims or device (written by an svc that did not record them), and a policy reads them',
  'claim-not-logged': 'a policy reads a claim the line did not record (the serving plan read no such claim)',
  'identity-cut': 'the groups or claims were cut on the line (too many to log), and a policy reads them',
  'preflight-not-logged': 'an OPTIONS request whose CORS-preflight shape was not recorded, and a policy reads it',
  'client-certificate-not-logged': 'refused 495 (no valid client certificate), logged without the certificate it may have presented, and a policy reads one',
  'client-ca-changed': 'the client certificate is judged by another CA under NEW: its validity there is unknown',
  'client-address-setting-changed': '`xff_num_trusted_hops` changed and a policy reads `source_ip`: the client address under NEW is unknown',
  'refused-at-door': 'refused before any decision (HTTP/1.0, too many headers, misdirected): nothing to decide again',
  undecided: 'the request ended before svc decided it',
  'line-cut': 'its access line was cut in the middle (the file was copied while svc wrote it)',
  'session-store-unavailable': 'answered 503 while the session store was unreachable: who sent it is unknown',
};

const KIND_WORDS: Readonly<Record<ReplayChangeKind, readonly [string, string]>> = {
  'allowed-to-denied': ['-', 'allowed → denied'],
  'denied-to-allowed': ['+', 'denied → allowed'],
  'outcome-changed': ['~', 'outcome changed'],
  'route-changed': ['~', 'route changed'],
  'upstream-changed': ['~', 'upstream changed'],
};

/** The routes of a group: `app (#3)`, `app (old #2, new #3)`, or `reports (old #1) → reports-v2 (#1)`. */
function routesOf(g: ReplayGroup): string {
  const o = g.old;
  const n = g.new;
  if (o !== null && n !== null && o.id === n.id) return o.index === n.index ? `${n.label} (#${n.index})` : `${n.label} (old #${o.index}, new #${n.index})`;
  return `${o === null ? 'no route' : `${o.label} (old #${o.index})`} → ${n === null ? 'no route' : `${n.label} (#${n.index})`}`;
}

function groupLines(g: ReplayGroup): string[] {
  const [marker, words] = KIND_WORDS[g.change];
  const routes = routesOf(g);
  const reasons = g.reasons.length > 0 ? ` [${g.reasons.join(', ')}]` : '';
  return [`${I1}${marker} ${words}: ${routes}: ${g.from} → ${g.to}${reasons}: ${g.count} request${g.count === 1 ? '' : 's'}`, `${I2}e.g. ${g.examples.join(', ')}`];
}

/** The "Replay" section, starting with an empty line, ending with a newline. */
export function renderReplayText(r: ReplayReport): string {
  const out: string[] = ['', `Replay (${r.files.length} file${r.files.length === 1 ? '' : 's'}, ${r.lines} lines, ${r.requests} requests)`];
  out.push(`${I1}${r.replayed} replayed: ${r.unchanged} unchanged, ${r.changed} changed`);
  for (const g of r.changes) out.push(...groupLines(g));
  const notReplayed = r.requests - r.replayed;
  if (notReplayed > 0) {
    out.push(`${I1}not replayed exactly: ${notReplayed} (counted, never guessed)`);
    for (const gap of r.notReplayable) out.push(`${I2}${gap.reason}: ${gap.count}: ${GAP_WORDS[gap.reason] ?? gap.reason}; e.g. ${gap.examples.join(', ')}`);
  }
  const s = r.skipped;
  if (s.other + s.junk + s.overlong > 0) out.push(`${I1}skipped lines: ${s.other} other lines of svc's, ${s.junk} not access lines or cut, ${s.overlong} too long`);
  if (r.oldDiffers.count > 0) out.push(`${I1}! ${r.oldDiffers.count} replayed request${r.oldDiffers.count === 1 ? ' is' : 's are'} not decided by OLD as recorded (the log may come from another plan, or an outage answered): e.g. ${r.oldDiffers.examples.join(', ')}`);
  for (const f of r.files) if (f.truncated) out.push(`${I1}! ${f.path}: its gzip data ends early (cut while written?): its last lines are missing`);
  return `${out.join('\n')}\n`;
}
