/**
 * Every malformed redis URL shape (docs/scale-out.md) is a located compile error, SVC3013 at the
 * `databroker_storage_connection_string` key, whose message never shows the password.
 */
import { describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { renderText } from '../../../compiler/index.ts';
import { isSecretPath } from '../../../compiler/settings/secret-paths.ts';
import { BASE_SETTINGS, compileText } from '../../support/compile-text.ts';

const routes = [{ from: 'https://app.example.com', to: 'http://127.0.0.1:9000', allow_any_authenticated_user: true }];
const PASSWORD = 'test-only-hunter2';

describe('malformed redis URLs are located compile errors', () => {
  it.each([
    ['unknown scheme', `http://:${PASSWORD}@cache:6379`],
    ['no host', `redis://:${PASSWORD}@`],
    ['several hosts without sentinel or cluster', `redis://:${PASSWORD}@a:1,b:2`],
    ['database out of range', `rediss://:${PASSWORD}@cache/16`],
    ['port out of range', `redis://:${PASSWORD}@cache:70000`],
    ['sentinel without a master', `redis+sentinel://:${PASSWORD}@s1:26379`],
    ['sentinel with too many segments', `rediss+sentinel://:${PASSWORD}@s1:26379/m/1/2`],
    ['cluster with a database', `redis+cluster://u:${PASSWORD}@n1:7000/2`],
    ['unknown parameter', `redis+cluster://u:${PASSWORD}@n1:7000/?pool_size=10`],
    ['bad duration', `redis://:${PASSWORD}@cache/0?read_timeout=soon`],
    ['bad percent-encoding', `redis://u:${PASSWORD}%zz@cache`],
  ])('%s', (_, url) => {
    const r = compileText(stringify({ ...BASE_SETTINGS, databroker_storage_type: 'redis', databroker_storage_connection_string: url, routes }));
    const errors = r.diagnostics.filter((d) => d.severity === 'error');
    expect(errors.map((d) => d.code)).toEqual(['SVC3013']);
    const text = renderText(errors, isSecretPath);
    expect(text).toMatch(/^config\.yaml:\d+:\d+: error SVC3013/m);
    expect(text).not.toContain(PASSWORD);
    expect(r.plan).toBeUndefined();
  });

  it('every well-formed shape compiles', () => {
    for (const url of [
      `redis://:${PASSWORD}@cache:6379/3`,
      `rediss://user:${PASSWORD}@cache`,
      `redis+sentinel://:${PASSWORD}@s1:26379,s2:26380/mymaster/2?dial_timeout=1s`,
      `rediss+sentinel://s1/mymaster`,
      `redis+cluster://u:${PASSWORD}@n1:7000,n2:7001/?read_timeout=500ms`,
      `rediss+cluster://n1:7000/`,
    ]) {
      const r = compileText(stringify({ ...BASE_SETTINGS, databroker_storage_type: 'redis', databroker_storage_connection_string: url, routes }));
      expect(r.diagnostics.filter((d) => d.severity === 'error')).toEqual([]);
      expect(JSON.stringify(r.plan!.body.settings.databroker.storage.connection)).not.toContain(PASSWORD);
    }
  });
});
