/**
 * The text form of a plan diff (`svc diff`), written for a security reviewer: a header with both
 * checksums, then "Access changes" (the most important), "Flags", "Routes" and "Settings".
 * Markers: `+` added or gained, `-` removed or lost, `~` changed, `!` a flag.
 */
import { describeClassChange } from './access.ts';
import type { ExactAnswer, ExactReport, ExactWitness, Flag, JsonValue, PlanDiff, Redacted, RouteAccess, RouteChange, RouteRef, RouteSummary, ValueChange } from './types.ts';

const I1 = '  ';
const I2 = '      ';
const I3 = '          ';

/** Prints a diff as text, one item per line, ending with a newline. Never prints a secret. */
export function renderDiffText(diff: PlanDiff): string {
  const out: string[] = [
    `svc diff: ${diff.equal ? 'plans are identical' : 'plans differ'}`,
    `--- old ${diff.old.checksum}`,
    `+++ new ${diff.new.checksum}`,
  ];
  if (diff.equal) return `${out.join('\n')}\n`;
  section(out, 'Access changes', diff.access.flatMap(accessLines));
  if (diff.exact) section(out, `Exact check (${diff.exact.complete ? 'every question decided' : 'not every question decided'}; budget ${diff.exact.budgetMs / 1000} s)`, exactLines(diff.exact));
  section(out, 'Flags', diff.flags.map(flagLine));
  const routes = [
    ...diff.routes.added.map((r) => summaryLines('+', r)).flat(),
    ...diff.routes.removed.map((r) => summaryLines('-', r)).flat(),
    ...diff.routes.changed.flatMap(changeLines),
  ];
  if (routes.length && diff.routes.unchanged) routes.push(`${I1}(${diff.routes.unchanged} unchanged)`);
  section(out, 'Routes', routes);
  section(out, 'Settings', diff.settings.map((c) => `${I1}${valueLine(c)}`));
  return `${out.join('\n')}\n`;
}

function section(out: string[], title: string, lines: readonly string[]): void {
  out.push('', title, ...(lines.length ? lines : [`${I1}(none)`]));
}

/** `label (#index)`; a removed route's index is in the old plan: `label (old #index)`. */
function at(r: RouteRef, old = false): string {
  return `${r.label} (${old ? 'old ' : ''}#${r.index})`;
}

function accessLines(a: RouteAccess): string[] {
  const marker = a.status === 'added' ? '+' : a.status === 'removed' ? '-' : '~';
  const status = a.status === 'changed' ? '' : ` [route ${a.status}]`;
  const lines = [`${I1}${marker} ${at(a.route, a.status === 'removed')}${status}`];
  if (a.gains.length) lines.push(`${I2}+ gains access: ${a.gains.map(describeClassChange).join(', ')}`);
  if (a.loses.length) lines.push(`${I2}- loses access: ${a.loses.map(describeClassChange).join(', ')}`);
  return lines;
}

function flagLine(f: Flag): string {
  return `${I1}! ${f.kind}: ${f.route ? `${at(f.route)}: ` : ''}${f.message}`;
}

function summaryLines(marker: '+' | '-', s: RouteSummary): string[] {
  const r = s.route;
  const lines = [`${I1}${marker} ${marker === '+' ? '' : 'old '}#${r.index} ${r.label}${marker === '+' ? ' (added)' : ' (removed)'}`];
  if (r.name !== null) lines.push(`${I2}from: ${r.from}${r.match === 'any' ? '' : ` ${r.match}`}`);
  lines.push(`${I2}to: ${s.target}`);
  if (s.public) lines.push(`${I2}public: no sign-in, no policy`);
  else if (s.policy === '') lines.push(`${I2}policy: (no rules: nobody is allowed)`);
  else lines.push(`${I2}policy:`, ...s.policy.split('\n').map((l) => `${I3}${l}`));
  return lines;
}

function changeLines(c: RouteChange): string[] {
  const index = c.old.index === c.new.index ? `#${c.new.index}` : `#${c.old.index} → #${c.new.index}`;
  const rename = c.old.label === c.new.label ? '' : ` (was ${c.old.label})`;
  const lines = [`${I1}~ ${index} ${c.new.label}${rename}`];
  if (c.moved) lines.push(`${I2}~ moved: its order relative to other routes changed (first match wins)`);
  for (const f of c.fields) lines.push(`${I2}${valueLine(f)}`);
  if (c.policy) {
    lines.push(`${I2}~ policy:`);
    for (const l of c.policy.lines) lines.push(`${I3}${l.op === 'add' ? '+' : l.op === 'remove' ? '-' : ' '} ${l.text}`);
  }
  return lines;
}

function isRedacted(v: JsonValue): v is Redacted & JsonValue {
  return v !== null && typeof v === 'object' && !Array.isArray(v) && 'redacted' in v && 'source' in v;
}

/** One value change by its config key: `~ key: old → new`, `+ key: new`, `- key: old`; secrets only as "changed". */
function valueLine(c: ValueChange): string {
  if (c.change === 'added') return `+ ${c.key}: ${show(c.new)}`;
  if (c.change === 'removed') return `- ${c.key}: ${show(c.old)}`;
  if (c.redacted) {
    const o = isRedacted(c.old) ? c.old : null;
    const n = isRedacted(c.new) ? c.new : null;
    const what = (o ?? n)?.redacted === 'pem' ? 'PEM document' : 'secret';
    if (o && n) return `~ ${c.key}: ${what} changed (${o.source === n.source ? o.source : `${o.source} → ${n.source}`})`;
    if (n) return `~ ${c.key}: ${what} set (${n.source}; was ${show(c.old)})`;
    return `~ ${c.key}: ${what} removed (${o?.source ?? '?'}; now ${show(c.new)})`;
  }
  return `~ ${c.key}: ${show(c.old)} → ${show(c.new)}`;
}

/** A value on one line: strings JSON-quoted, secrets as `<secret env:X>`. */
function show(v: JsonValue): string {
  if (isRedacted(v)) return `<${v.redacted} ${v.source}>`;
  if (Array.isArray(v)) return `[${v.map(show).join(', ')}]`;
  if (v !== null && typeof v === 'object') {
    return `{${Object.entries(v).map(([k, x]) => `${JSON.stringify(k)}: ${show(x)}`).join(', ')}}`;
  }
  return JSON.stringify(v);
}

function exactLines(e: ExactReport): string[] {
  const lines: string[] = [];
  for (const a of e.access) {
    const marker = a.status === 'added' ? '+' : a.status === 'removed' ? '-' : '~';
    const status = a.status === 'changed' ? '' : ` [route ${a.status}]`;
    lines.push(`${I1}${marker} ${at(a.route, a.status === 'removed')}${status}`);
    lines.push(`${I2}+ gains access: ${answerText(a.gains)}`);
    lines.push(`${I2}- loses access: ${answerText(a.loses)}`);
  }
  for (const r of e.routing) {
    const head = `${I1}~ routing of ${r.host}: `;
    if (r.answer.result === 'none') lines.push(`${head}unchanged (proved)`);
    else {
      lines.push(`${head}${r.changes.length ? 'requests move' : ''}${r.answer.result === 'not-proved' ? `${r.changes.length ? '; ' : ''}not proved: ${r.answer.reason}` : ''}`);
      for (const c of r.changes) lines.push(`${I2}~ ${c.url}: ${c.old ? `was ${at(c.old)}` : 'was no route'}, ${c.new ? `now ${at(c.new)}` : 'now no route'}`);
    }
  }
  return lines;
}

function answerText(a: ExactAnswer): string {
  if (a.result === 'none') return 'nobody (proved)';
  if (a.result === 'not-proved') return `not proved (${a.reason})`;
  return a.witness ? witnessText(a.witness) : 'yes';
}

/** `groups ["admins"], PUT https://admin.example.com/ … (deny → allow)`. */
export function witnessText(w: ExactWitness): string {
  const id = w.identity;
  let who = 'anonymous';
  if (id !== null && typeof id === 'object' && !Array.isArray(id)) {
    const o = id as { readonly [k: string]: JsonValue };
    const parts = [`user ${JSON.stringify(o['user'])}`];
    if (o['email'] !== undefined) parts.push(`email ${JSON.stringify(o['email'])}`);
    parts.push(`groups ${JSON.stringify(o['groups'])}`);
    const claims = o['claims'];
    if (claims !== null && typeof claims === 'object' && !Array.isArray(claims)) for (const [k, v] of Object.entries(claims)) parts.push(`claim/${JSON.stringify(k)} ${JSON.stringify(v)}`);
    if (o['device'] !== undefined) parts.push(`device ${JSON.stringify(o['device'])}`);
    who = parts.join(', ');
  }
  const r = w.request;
  const extra = [`from ${r.clientAddress}`, `at ${r.time}`];
  if (r.corsPreflightHeaders) extra.push('with CORS preflight headers');
  if (r.clientCertificate) extra.push(r.clientCertificate.valid ? `with client certificate ${r.clientCertificate.fingerprint}` : 'with an invalid client certificate');
  return `e.g. ${who}; ${r.method} ${r.url} ${extra.join(' ')} (${w.old} → ${w.new})`;
}
