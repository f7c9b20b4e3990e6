/**
 * `svc diff` through the CLI entry point (cli/main.ts) with captured output: exit codes 0 (equal),
 * 1 (different), 2 (a side cannot be loaded or compiled, or bad usage), plan files and config
 * files on either side, text and JSON output, the exact check (on by default), `--budget`, `--no-exact`.
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseBudget } from '../../cli/diff-command.ts';
import type { ExactReport } from '../../cli/diff/types.ts';
import { main } from '../../cli/main.ts';
import { prettyJson } from '../../compiler/plan/canonical-json.ts';
import { compileText } from '../support/compile-text.ts';

const FIX = join(import.meta.dirname, '../../fixtures/diff');

async function run(args: string[]) {
  let out = '';
  let err = '';
  const code = await main(args, { out: (s) => (out += s), err: (s) => (err += s) });
  return { code, out, err };
}

function tmp(): string {
  return mkdtempSync(join(tmpdir(), 'svc-diff-'));
}

describe('svc diff', () => {
  it('exits 0 for equal plans written differently', async () => {
    const r = await run(['diff', join(FIX, 'identical/old.yaml'), join(FIX, 'identical/new.yaml')]);
    expect(r.code).toBe(0);
    expect(r.out).toMatch(/^svc diff: plans are identical$/m);
    expect(r.err).toBe('');
  });

  it('exits 1 and prints the sections in order when the plans differ', async () => {
    const r = await run(['diff', join(FIX, 'policy-widened/old.yaml'), join(FIX, 'policy-widened/new.yaml')]);
    expect(r.code).toBe(1);
    expect(r.out).toContain('+ gains access: group contractors');
    const at = ['Access changes', 'Flags', 'Routes', 'Settings'].map((h) => r.out.indexOf(`\n${h}\n`));
    expect(at.every((i) => i > 0)).toBe(true);
    expect([...at].sort((x, y) => x - y)).toEqual(at);
    for (const secret of ['AgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgI=', 'new-client-secret-value', 'old-client-secret-value']) expect(r.out).not.toContain(secret);
  });

  it('--format json prints the documented object', async () => {
    const r = await run(['diff', join(FIX, 'made-public/old.yaml'), join(FIX, 'made-public/new.yaml'), '--format', 'json']);
    expect(r.code).toBe(1);
    const j = JSON.parse(r.out) as { formatVersion: number; equal: boolean; flags: { kind: string }[] };
    expect(Object.keys(j)).toEqual(['formatVersion', 'equal', 'old', 'new', 'access', 'flags', 'routes', 'settings', 'exact']);
    expect(j.equal).toBe(false);
    expect(j.flags.map((f) => f.kind)).toContain('public');
  });

  it('decides by default: witnesses confirmed, proofs of no change, the same exit code', async () => {
    const r = await run(['diff', join(FIX, 'reordered/old.yaml'), join(FIX, 'reordered/new.yaml'), '--format', 'json', '--budget', '60s']);
    expect(r.code).toBe(1);
    const j = JSON.parse(r.out) as { exact: ExactReport };
    expect(j.exact.complete).toBe(true);
    expect(j.exact.budgetMs).toBe(60_000);
    const admin = j.exact.access.find((a) => a.route.name === 'admin')!;
    // `deny if http_method in ["DELETE", "PUT"]` became `["DELETE"]`: admins gain PUT, nobody loses.
    expect(admin.gains.result).toBe('change');
    expect(admin.gains.witness!.request.method).toBe('PUT');
    expect(admin.gains.witness!.old).toBe('deny');
    expect(admin.gains.witness!.new).toBe('allow');
    expect(admin.loses).toEqual({ result: 'none', witness: null, reason: null });
    const legacy = j.exact.routing.find((x) => x.host === 'legacy.example.com')!;
    expect(legacy.changes).toEqual([{ url: 'https://legacy.example.com/', old: expect.objectContaining({ name: 'legacy' }), new: null }]);
    const text = await run(['diff', join(FIX, 'reordered/old.yaml'), join(FIX, 'reordered/new.yaml')]);
    expect(text.out).toContain('Exact check (every question decided; budget 30 s)');
    expect(text.out).toMatch(/\+ gains access: e\.g\. user "user", groups \["admins"\]; PUT https:\/\/admin\.example\.com\/ .*\(deny → allow\)/);
  });

  it('--no-exact samples only; a --budget that is not a duration is bad usage', async () => {
    const r = await run(['diff', join(FIX, 'made-public/old.yaml'), join(FIX, 'made-public/new.yaml'), '--format', 'json', '--no-exact']);
    expect(r.code).toBe(1);
    expect(Object.keys(JSON.parse(r.out) as object)).not.toContain('exact');
    const bad = await run(['diff', join(FIX, 'made-public/old.yaml'), join(FIX, 'made-public/new.yaml'), '--budget', 'soon']);
    expect(bad.code).toBe(2);
    expect(bad.err).toContain('--budget');
    expect(parseBudget('1m30s')).toBe(90_000);
    expect(parseBudget('250ms')).toBe(250);
    expect(parseBudget('2')).toBe(2000);
    expect(parseBudget('2x')).toBeUndefined();
  });

  it('accepts a plan file on either side', async () => {
    const dir = tmp();
    const config = join(FIX, 'policy-widened/old.yaml');
    const plan = compileText(readFileSync(config, 'utf8')).plan;
    expect(plan).toBeDefined();
    writeFileSync(join(dir, 'plan.json'), prettyJson(plan));
    expect((await run(['diff', join(dir, 'plan.json'), config])).code).toBe(0);
    const r = await run(['diff', join(dir, 'plan.json'), join(FIX, 'policy-widened/new.yaml')]);
    expect(r.code).toBe(1);
    expect(r.out).toContain(`--- old ${plan!.checksum}`);
  });

  it('exits 2 and prints the diagnostics when a side does not compile', async () => {
    const dir = tmp();
    writeFileSync(join(dir, 'bad.yaml'), 'insecure_server: true\nroutes:\n  - from: https://app.example.com/x\n    to: http://127.0.0.1:9000\n');
    const r = await run(['diff', join(FIX, 'identical/old.yaml'), join(dir, 'bad.yaml')]);
    expect(r.code).toBe(2);
    expect(r.out).toBe('');
    expect(r.err).toContain('the new side');
    expect(r.err).toMatch(/error SVC\d{4}/);
  });

  it('exits 2 for a missing file, a broken plan, or bad usage', async () => {
    const dir = tmp();
    writeFileSync(join(dir, 'plan.json'), '{"formatVersion": 1, "body": {}, "checksum": "sha256:00"}');
    expect((await run(['diff', join(dir, 'nope.yaml'), join(FIX, 'identical/old.yaml')])).code).toBe(2);
    expect((await run(['diff', join(dir, 'plan.json'), join(FIX, 'identical/old.yaml')])).code).toBe(2);
    expect((await run(['diff', join(FIX, 'identical/old.yaml')])).code).toBe(2);
    expect((await run(['diff', join(FIX, 'identical/old.yaml'), join(FIX, 'identical/new.yaml'), '--format', 'xml'])).code).toBe(2);
  });
});
