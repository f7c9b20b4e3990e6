/**
 * SVC3541 route-restricted-prefix-variants: a restricted path or prefix followed by a
 * public route on the same host that answers its case or `;` variants.
 */
import { stringify } from 'yaml';
import { describe, expect, it } from 'vitest';
import { RouteRestrictedPrefixVariants } from '../../../../compiler/diagnostics/codes/routes.ts';
import { BASE_SETTINGS, compileText } from '../../../support/compile-text.ts';

const restricted = (extra: Record<string, unknown> = {}) => ({ from: 'https://app.example.com', prefix: '/admin/', to: 'http://10.0.0.1:8080', policy: 'allow if groups has "admins"', ...extra });
const open = (extra: Record<string, unknown> = {}) => ({ from: 'https://app.example.com', to: 'http://10.0.0.1:8080', allow_public_unauthenticated_access: true, ...extra });

function warnings(routes: unknown[]): string[] {
  const r = compileText(stringify({ ...BASE_SETTINGS, routes }));
  return r.diagnostics.filter((d) => d.code === RouteRestrictedPrefixVariants.code).map((d) => d.message);
}

describe('route-restricted-prefix-variants', () => {
  it('warns when a public catch-all after a case-sensitive restricted prefix answers its upper-case form', () => {
    expect(warnings([restricted(), open()])).toEqual(['restricted prefix `/admin/` is followed by public route 1 (config.yaml:15:11), which answers its variant `/ADMIN/`']);
  });

  it('says nothing when the restricted route folds case, the public route comes first, or is on another host', () => {
    expect(warnings([restricted({ path_case: 'insensitive' }), open()])).toEqual([]);
    expect(warnings([open({ prefix: '/docs/' }), restricted()])).toEqual([]);
    expect(warnings([restricted(), open({ from: 'https://other.example.com' })])).toEqual([]);
  });

  it('warns for the `;` variant only when the public route opts into path parameters', () => {
    expect(warnings([restricted({ path_case: 'insensitive' }), open({ allow_path_parameters: true })])).toHaveLength(1);
    expect(warnings([restricted({ path_case: 'insensitive' }), open({ prefix: '/ADMIN/', path_case: 'insensitive' })])).toEqual([]);
  });

  it('sees a public route that folds case answering the restricted path itself', () => {
    expect(warnings([restricted(), open({ prefix: '/ADMIN', path_case: 'insensitive' })])).toHaveLength(1);
  });

  it('leaves public routes and regex matchers alone', () => {
    expect(warnings([open({ prefix: '/admin/' }), open()])).toEqual([]);
    expect(warnings([restricted({ prefix: undefined, regex: '/admin/.*' }), open()])).toEqual([]);
  });
});
