/** settings.ts: changed settings by path; secrets only ever as "changed". */
import { describe, expect, it } from 'vitest';
import { diffPlans } from '../../../cli/diff/diff.ts';
import { renderDiffJson } from '../../../cli/diff/render-json.ts';
import { renderDiffText } from '../../../cli/diff/render-text.ts';
import { diffSettings } from '../../../cli/diff/settings.ts';
import { BASE_SETTINGS, TEST_SECRET } from '../../support/compile-text.ts';
import { planOf, route } from './helpers.ts';

const routes = [route('app.example.com', { allow_any_authenticated_user: true })];
const OTHER_SECRET = Buffer.alloc(32, 7).toString('base64');

describe('diffSettings', () => {
  it('lists a changed duration by its config key, in config units', () => {
    const a = planOf(routes, { timeout_read: '30s' });
    const b = planOf(routes, { timeout_read: '1m30s' });
    expect(diffSettings(a.body.settings, b.body.settings)).toEqual([
      { path: 'server.timeoutReadMs', key: 'timeout_read', change: 'changed', redacted: false, old: '30s', new: '1m30s' },
    ]);
    expect(renderDiffText(diffPlans(a, b))).toContain('~ timeout_read: "30s" → "1m30s"');
  });

  it('is empty for equal settings', () => {
    const a = planOf(routes);
    expect(diffSettings(a.body.settings, planOf(routes).body.settings)).toEqual([]);
  });

  it('shows a changed inline secret as changed and never prints either value', () => {
    const a = planOf(routes);
    const b = planOf(routes, { cookie_secret: OTHER_SECRET, idp_client_secret: 'a-new-client-secret' });
    const d = diffPlans(a, b);
    expect(d.settings.map((c) => [c.key, c.redacted])).toEqual([
      ['cookie_secret', true],
      ['idp_client_secret', true],
    ]);
    const text = renderDiffText(d);
    const json = renderDiffJson(d);
    expect(text).toContain('~ cookie_secret: secret changed (inline)');
    for (const out of [text, json]) {
      for (const secret of [TEST_SECRET, OTHER_SECRET, 'client-secret', 'a-new-client-secret']) expect(out).not.toContain(secret);
      expect(out).not.toMatch(/fingerprint/);
    }
  });

  it('names the new source when a secret moves from the file to the environment', () => {
    const { cookie_secret: _, ...noCookie } = BASE_SETTINGS;
    const a = planOf(routes);
    const b = planOf(routes, { ...noCookie, cookie_secret: undefined }, { COOKIE_SECRET: OTHER_SECRET });
    const d = diffPlans(a, b);
    const change = d.settings.find((c) => c.path === 'cookie.secret');
    expect(change?.new).toEqual({ redacted: 'secret', source: 'env:COOKIE_SECRET' });
    const text = renderDiffText(d);
    expect(text).toContain('~ cookie_secret: secret changed (inline → env:COOKIE_SECRET)');
    expect(text).not.toContain(OTHER_SECRET);
    expect(renderDiffJson(d)).not.toContain(OTHER_SECRET);
  });
});
