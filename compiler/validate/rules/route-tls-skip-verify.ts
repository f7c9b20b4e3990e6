import { RouteTlsSkipVerify } from '../../diagnostics/codes/routes.ts';
import type { ValidationRule } from '../rule.ts';
import { fieldPath, fieldSpan } from './helpers.ts';

/** `route-tls-skip-verify` (warning): `tls_skip_verify: true` turns off upstream certificate checks. */
export const routeTlsSkipVerify: ValidationRule = {
  reports: [RouteTlsSkipVerify],
  check(input, r) {
    for (const route of input.routes) {
      if (route.raw['tls_skip_verify'] === true) r.report(RouteTlsSkipVerify, fieldSpan(input, route, 'tls_skip_verify'), {}, fieldPath(route, 'tls_skip_verify'));
    }
  },
};
