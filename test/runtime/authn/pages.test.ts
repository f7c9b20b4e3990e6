/** pages.ts: the user info page shows claims as data and never shows token-bearing ones (S26). */
import { describe, expect, it } from 'vitest';
import { userInfoPage } from '../../../runtime/authn/pages.ts';
import type { SessionRecord } from '../../../runtime/databroker/session-store.ts';

function record(claims: Record<string, unknown>): SessionRecord {
  return { id: 'h', userId: 'alice', email: 'alice@example.com', groups: ['eng'], claims, expiresAtMs: Date.UTC(2030, 0, 1), createdAtMs: 0 };
}

function shownClaims(html: string): unknown {
  const m = /<pre id="claims">([^<]*)<\/pre>/.exec(html);
  if (!m) throw new Error('no claims block');
  return JSON.parse(m[1]!.replace(/&#(\d+);/g, (_, code: string) => String.fromCharCode(Number(code))));
}

describe('userInfoPage', () => {
  it('a claim named __proto__ (JSON from a provider) is shown as data, not swallowed as a prototype', () => {
    const claims = JSON.parse('{"__proto__": {"role": "x"}, "name": "Alice"}') as Record<string, unknown>;
    expect(shownClaims(userInfoPage(record(claims), 'csrf'))).toEqual(JSON.parse('{"__proto__": {"role": "x"}, "name": "Alice"}'));
  });

  it('hides claims whose names carry tokens, secrets or passwords', () => {
    const html = userInfoPage(record({ name: 'Alice', refresh_token: 'r', client_secret: 's', Password: 'p' }), 'csrf');
    expect(shownClaims(html)).toEqual({ name: 'Alice' });
    expect(html).not.toMatch(/refresh_token|client_secret|Password/);
  });
});
