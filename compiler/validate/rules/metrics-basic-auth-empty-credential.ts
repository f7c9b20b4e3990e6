import { MetricsBasicAuthEmptyCredential } from '../../diagnostics/codes/settings.ts';
import { secretFileText } from '../../ir/material.ts';
import { decodeBase64, hasControlChar } from '../../ir/values.ts';
import type { ValidationRule } from '../rule.ts';
import { spanOf } from '../rule.ts';
import { strField } from './helpers.ts';

const INLINE = 'metrics_basic_auth';
const FILE = 'metrics_basic_auth_file';

/**
 * `metrics-basic-auth-empty-credential`: `metrics_basic_auth` (inline, from the environment, or the
 * content of `metrics_basic_auth_file`) decodes to `user:password` with an empty side, so
 * `Basic Og==` or `prometheus:` would open `/metrics` (docs/observability.md). Split at the first
 * colon, as RFC 7617 and the runtime do. A value lowering already refused (both forms set, a file
 * that cannot be read or is empty, bad base64, no colon) is left to that report.
 */
export const metricsBasicAuthEmptyCredential: ValidationRule = {
  reports: [MetricsBasicAuthEmptyCredential],
  check(input, r) {
    const inline = strField(input.config, INLINE);
    const file = strField(input.config, FILE);
    if (inline && file) return;
    let key: string;
    let text: string;
    if (inline) {
      key = INLINE;
      text = inline;
    } else if (file && input.readFile) {
      const res = input.readFile(file);
      if (!res.ok) return;
      key = FILE;
      text = secretFileText(res.data);
      if (text === '' || hasControlChar(text)) return;
    } else return;
    const decoded = decodeBase64(text)?.toString('utf8');
    const colon = decoded === undefined ? -1 : decoded.indexOf(':');
    if (decoded === undefined || colon < 0) return;
    const noUser = colon === 0;
    const noPassword = colon === decoded.length - 1;
    if (!noUser && !noPassword) return;
    const empty = noUser && noPassword ? 'user name and password' : noUser ? 'user name' : 'password';
    r.report(MetricsBasicAuthEmptyCredential, spanOf(input, key), { key, empty }, key);
  },
};
