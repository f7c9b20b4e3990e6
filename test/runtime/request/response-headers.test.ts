/** Response header edits (docs/decisions.md §8): rewrites on the upstream's headers, then set headers. */
import { stringify } from 'yaml';
import { describe, expect, it } from 'vitest';
import { editResponseHeaders, HOP_BY_HOP_RESPONSE, responseDropSet } from '../../../runtime/request/response-headers.ts';
import { BASE_SETTINGS, compileText } from '../../support/compile-text.ts';

function routeWith(route: Record<string, unknown>, settings: Record<string, unknown> = {}) {
  const res = compileText(stringify({ ...BASE_SETTINGS, ...settings, routes: [{ from: 'https://a.example.com', to: 'http://up', allow_public_unauthenticated_access: true, ...route }] }));
  if (!res.plan) throw new Error(res.diagnostics.map((d) => d.message).join('\n'));
  return res.plan.body.routes[0]!;
}

describe('editResponseHeaders', () => {
  it('adds the default security headers and lets the route override them', () => {
    const out = editResponseHeaders(routeWith({ set_response_headers: { 'X-Frame-Options': 'DENY' } }), { 'Content-Type': 'text/plain', 'x-frame-options': 'ALLOWALL' });
    expect(out).toMatchObject({ 'content-type': 'text/plain', 'x-frame-options': 'DENY', 'x-content-type-options': 'nosniff' });
    expect(out['strict-transport-security']).toMatch(/^max-age=31536000/);
  });
  it('drops the defaults with disable', () => {
    const out = editResponseHeaders(routeWith({}, { set_response_headers: { disable: true } }), {});
    expect(out).toEqual({});
  });
  it('rewrites a leading prefix of every value of the named header', () => {
    const route = routeWith({ rewrite_response_headers: [{ header: 'Location', prefix: 'http://up/', value: 'https://a.example.com/' }] }, { set_response_headers: { disable: true } });
    expect(editResponseHeaders(route, { location: 'http://up/x' })).toEqual({ location: 'https://a.example.com/x' });
    expect(editResponseHeaders(route, { Location: ['http://other/x', 'http://up/y'] })).toEqual({ location: ['http://other/x', 'https://a.example.com/y'] });
  });
});

describe('responseDropSet', () => {
  it('drops the hop-by-hop headers and every header the upstream lists in Connection', () => {
    expect(responseDropSet(undefined)).toBe(HOP_BY_HOP_RESPONSE);
    expect(responseDropSet('keep-alive')).toBe(HOP_BY_HOP_RESPONSE);
    expect([...responseDropSet('Keep-Alive, X-Internal-Token')]).toEqual([...HOP_BY_HOP_RESPONSE, 'x-internal-token']);
    expect(responseDropSet(['close', 'x-a , x-b']).has('x-b')).toBe(true);
  });

  it('edits without the dropped names', () => {
    const route = routeWith({}, { set_response_headers: { disable: true } });
    expect(editResponseHeaders(route, { connection: 'x-secret', 'x-secret': '1', 'transfer-encoding': 'chunked', a: 'b' }, responseDropSet('x-secret'))).toEqual({ a: 'b' });
  });
});
